"""gradio_client against a launched app: every endpoint, and 8 concurrent requests."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from gradio_client import Client, handle_file

from gemma_explore.samples import SAMPLES_DIR

PHOTO = str(SAMPLES_DIR / "photo.jpg")
SPEECH = str(SAMPLES_DIR / "speech.wav")
VIDEO = str(SAMPLES_DIR / "video.mp4")


@pytest.fixture(scope="module")
def client(app_url):
    return Client(app_url, verbose=False)


def test_every_endpoint_is_exposed(client):
    api = client.view_api(print_info=False, return_format="dict")
    names = set(api["named_endpoints"])
    assert {"/image", "/audio", "/video", "/layout", "/chat", "/model"} <= names


def test_image_endpoint(client):
    patch, pooled, counts, parity, timings, error = client.predict(
        "tiny-gemma4", handle_file(PHOTO), 280, api_name="/image"
    )
    assert error == ""
    assert patch and pooled and "| soft tokens | 270 |" in counts
    assert counts.startswith("| quantity | value |")  # tables have headers
    assert parity.startswith("✓") and "ms" in timings


def test_audio_endpoint(client):
    mel, counts, parity, _t, _e, windows = client.predict(
        "tiny-gemma3n", handle_file(SPEECH), api_name="/audio"
    )
    assert windows is None  # the sample clip is heard whole: no windows figure
    assert mel and "| soft tokens | 188 |" in counts and parity.startswith("✓")


def test_video_endpoint(client):
    frames, counts, parity, _t, _e = client.predict(
        "tiny-gemma4", handle_file(VIDEO), api_name="/video"
    )
    assert frames and "| sampled | 32 |" in counts and parity.startswith("✓")


def test_layout_endpoint(client):
    fig, page, counts, checks, _t, _e = client.predict(
        "tiny-gemma4", "Describe.", handle_file(PHOTO), None, 70, False, api_name="/layout"
    )
    assert fig and "<span" in page and "✓ image #0" in checks


def test_layout_endpoint_takes_a_raw_prompt(client):
    raw = "<start_of_turn>user\n<image_soft_token>\nDescribe.<end_of_turn>\n"
    _fig, page, _c, checks, _t, _e = client.predict(
        "tiny-gemma3n", raw, handle_file(PHOTO), None, 70, True, api_name="/layout"
    )
    # A "\n" right after the placeholder: vLLM cannot find the image again and raises.
    assert (
        "vLLM ≠ transformers" in checks and "Expected there to be 1 prompt placeholders" in checks
    )
    assert "raw prompt" in page


def test_chat_endpoint_streams(client):
    job = client.submit(
        "tiny-gemma4", {"text": "Hi", "files": [handle_file(PHOTO)]}, [], 5, 280, api_name="/chat"
    )
    outputs = list(job)
    history, _box, counts = job.result()
    assert len(outputs) >= 2
    assert history[-1]["role"] == "assistant" and "random weights" in str(history[-1]["content"])
    assert "prompt tokens" in counts and "image 270" in counts and "5 generated" in counts


def test_model_switch_endpoint(client):
    assert "random weights" in client.predict("tiny-gemma3n", api_name="/model")


def test_a_corrupt_upload_is_our_message_and_the_app_keeps_serving(client, tmp_path):
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n not really")
    patch, pooled, counts, parity, timings, error = client.predict(
        "tiny-gemma4", handle_file(str(bad)), 280, api_name="/image"
    )  # the file reaches our handler: our one-line message, every other output cleared
    assert error.startswith("✗") and "PNG, JPEG" in error and "\n" not in error.strip()
    assert error.count("broken.png") == 1
    assert (patch, pooled, counts, parity, timings) == (None, None, "", "", "")
    _p, _q, counts, *_ = client.predict("tiny-gemma4", handle_file(PHOTO), 280, api_name="/image")
    assert "| soft tokens | 270 |" in counts


def test_eight_concurrent_requests_are_all_answered(app_url):
    budgets = [70, 140, 280, 560, 1120, 70, 280, 560]

    def one(budget):
        c = Client(app_url, verbose=False)
        return budget, c.predict("tiny-gemma4", handle_file(PHOTO), budget, api_name="/image")[2]

    import gemma_explore as ge

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, budgets))
    assert len(results) == 8
    for budget, counts in results:
        n = ge.plan_image(
            ge.sample_photo(), family="gemma4", max_soft_tokens=budget
        ).num_soft_tokens
        assert f"| soft tokens | {n} |" in counts


def test_uploads_over_the_limit_are_refused_and_the_app_keeps_serving(client, tmp_path):
    from gradio_client.exceptions import AppError

    big = tmp_path / "big.png"
    big.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * (21 * 1024 * 1024))
    with pytest.raises((AppError, ValueError, Exception), match="(?i)size|large|limit|413"):
        client.predict("tiny-gemma4", handle_file(str(big)), 280, api_name="/image")
    _p, _q, counts, *_ = client.predict("tiny-gemma4", handle_file(PHOTO), 280, api_name="/image")
    assert "| soft tokens | 270 |" in counts


def test_launch_defaults_are_safe(monkeypatch):
    from gemma_explore.app.demo import parse_args
    from gemma_explore.app.ui import MAX_UPLOAD

    monkeypatch.delenv("GEMMA_EXPLORE_HOST", raising=False)
    monkeypatch.delenv("GEMMA_EXPLORE_PORT", raising=False)
    args = parse_args([])
    assert (args.host, args.port, args.model, args.engine) == (
        "127.0.0.1",
        7860,
        "tiny-gemma4",
        "hf",
    )
    monkeypatch.setenv("GEMMA_EXPLORE_HOST", "0.0.0.0")
    monkeypatch.setenv("GEMMA_EXPLORE_PORT", "9999")
    args = parse_args(["--model", "tiny-gemma3n"])
    assert (args.host, args.port, args.model) == ("0.0.0.0", 9999, "tiny-gemma3n")
    assert MAX_UPLOAD == "20mb"
