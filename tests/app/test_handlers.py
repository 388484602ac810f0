"""The demo's handlers, called directly: results for good input, messages for bad."""

import numpy as np
import pytest
import soundfile as sf

from gemma_explore.plans.image import plan_image
from gemma_explore.samples import SAMPLES_DIR
from tests.app import handlers as h

PHOTO = str(SAMPLES_DIR / "photo.jpg")
SPEECH = str(SAMPLES_DIR / "speech.wav")
VIDEO = str(SAMPLES_DIR / "video.mp4")


@pytest.mark.parametrize("model", ["tiny-gemma4", "tiny-gemma3n"])
def test_image_tab(model):
    r = h.image_tab(model, PHOTO, 280)
    assert r.error is None and r.patch_figure is not None and r.pooled_figure is not None
    assert f"| soft tokens | {r.plan.num_soft_tokens} |" in r.counts
    assert r.parity.startswith("✓") and "random weights" in r.notice
    assert "vision tower" in r.timings
    assert f"| {r.plan.patch_size} px patches |" in r.counts
    assert any(hub in r.notice for hub in h.get_bundle(model).spec.hub_ids)


def test_image_tab_recommends_the_auto_budget():
    """The counts name the budget max_soft_tokens="auto" picks, and what the chosen one does."""
    r = h.image_tab("tiny-gemma4", PHOTO, 70)
    auto = plan_image(PHOTO, family="gemma4", max_soft_tokens="auto")
    assert f"| recommended budget | {auto.max_soft_tokens}: " in r.counts
    assert r.plan.scale < 1  # the photo at 70: shrunk, and the row says by how much
    assert f"The chosen budget, 70, shrinks it to {r.plan.scale:.2f}× its size" in r.counts
    assert "recommended budget" not in h.image_tab("tiny-gemma3n", PHOTO, None).counts


def test_unified_speaks_of_blocks_and_names_its_own_checkpoint():
    """Unified has no tower and no pooler: its table counts 48 px blocks, as its figure
    does, and the notice names a Unified checkpoint."""
    r = h.image_tab("tiny-gemma4-unified", PHOTO, 280)
    plan = r.plan
    # One figure, once: the patch grid is Unified's blocks, and there is no pooler to draw.
    assert r.error is None and r.patch_figure is not None and r.pooled_figure is None
    text = " ".join(str(getattr(r, k)) for k in ("counts", "parity", "timings", "notice")).lower()
    assert "tower" not in text and "pooler" not in text
    per = plan.pooling_kernel**2
    blocks = f"| 48 px blocks | {plan.num_patches // per} of {plan.max_patches // per} "
    assert blocks in r.counts and plan.num_patches // per == plan.num_soft_tokens
    spec = h.get_bundle("tiny-gemma4-unified").spec
    assert any(hub in r.notice for hub in spec.hub_ids)
    assert "gemma-4-E4B" not in r.notice


@pytest.mark.parametrize("model", ["tiny-gemma3n", "tiny-gemma4", "tiny-gemma4-unified"])
def test_raw_prompt_messages_keep_their_token_names(model):
    """The real placeholder strings of each family reach the page escaped (a browser
    would drop ``<image_soft_token>`` as an unknown tag), and the message names the tab's
    own control, not the library's ``template=True``."""
    import html

    token = h.get_bundle(model).spec.placeholder_tokens["image"]
    r = h.layout_tab(model, "Describe this.", PHOTO, None, 280, True)
    assert r.error and "untick" in r.error and "template=True" not in r.error
    assert html.escape(token, quote=False) in r.error and token not in r.error
    assert html.unescape(r.error).count(token) == 2
    ok = h.layout_tab(model, f"<bos>Look {token} here", PHOTO, None, 280, True)
    assert ok.error is None and "<bos>" not in ok.parity + ok.counts
    assert token not in ok.layout_html and "<bos>" not in ok.layout_html


@pytest.mark.parametrize("model", ["tiny-gemma4", "tiny-gemma3n"])
def test_a_raw_prompt_names_every_missing_placeholder_at_once(model):
    """Issue 46: an image and a clip attached, no placeholder typed: one message names
    both (it used to name the image, and the clip only after the image was fixed); the
    library's own check (prepare_inputs, template=False) does the same."""
    import html

    from gemma_explore.processing.inputs import prepare_inputs

    spec = h.get_bundle(model).spec
    image, audio = spec.placeholder_tokens["image"], spec.placeholder_tokens["audio"]
    r = h.layout_tab(model, "Describe.", PHOTO, SPEECH, None, True)
    said = html.unescape(r.error)
    assert f"0 {image} for 1 image attachment(s) and 0 {audio} for 1 audio" in said, said
    assert f"type one {image} where the image goes" in said
    assert f"one {audio} where the audio goes" in said and 'untick "Raw prompt"' in said
    # One typed, one extra: both named, each with its own fix.
    r = h.layout_tab(model, f"Describe {image} and {audio}.", PHOTO, None, None, True)
    said = html.unescape(r.error)
    assert "1 " + audio + " but no audio is attached" in said and image not in said
    with pytest.raises(ValueError) as refused:
        prepare_inputs(
            "Describe.", images=[PHOTO], audios=[SPEECH], bundle=h.get_bundle(model), template=False
        )
    assert f"0 {image} placeholder(s) for 1 image" in str(refused.value)
    assert f"0 {audio} placeholder(s) for 1 audio" in str(refused.value)


def test_image_tab_parity_badge_names_the_difference():
    """A 3×900 strip: every side counts 280 tokens, but vLLM's assumed resize differs.
    The badge says the counts agree (no ⚠) and names where they part before that."""
    r = h.image_tab("tiny-gemma4", np.zeros((3, 900, 3), np.uint8), 280)
    assert r.parity.startswith("✓") and "token counts" in r.parity
    assert "soft tokens 280" in r.parity and "resized size" in r.parity


def test_the_parity_badge_warns_only_when_the_token_counts_disagree():
    from gemma_explore.facts.families import get_family
    from gemma_explore.parity.checks import ParityReport, ParityRow

    rows = (ParityRow("resized size", "a", "a", "b"), ParityRow("soft tokens", 280, 280, 289))
    report = ParityReport("image", get_family("gemma4"), "x", rows, "transformers")
    assert h.results.parity_badge(report).startswith("⚠")


@pytest.mark.parametrize("model", ["tiny-gemma4", "tiny-gemma3n"])
def test_audio_tab(model):
    r = h.audio_tab(model, SPEECH)
    assert r.error is None and r.mel_figure is not None
    assert f"| soft tokens | {r.plan.num_soft_tokens} |" in r.counts


def test_audio_tab_shows_the_windows_of_a_long_clip():
    """Past 30 s the counts name plan_long_audio's windows and the tab draws them over
    the clip (one band per window); a clip heard whole gets neither."""
    from gemma_explore.app.tabs import long_audio_figure
    from gemma_explore.plans.long_audio import plan_long_audio

    wave = (0.3 * np.random.default_rng(0).standard_normal(70 * 16_000)).astype(np.float32)
    wave[27 * 16_000 : 28 * 16_000] *= 0.001
    r = h.audio_tab("tiny-gemma3n", (wave, 16_000))
    plan = plan_long_audio((wave, 16_000), family="gemma3n")
    assert r.error is None and f"| windows | {len(plan.windows)} of ≤ 30 s" in r.counts
    assert f"{plan.windows[0].end_s:.1f} s" in r.counts
    fig = long_audio_figure(r.plan)
    bands = [p for p in fig.axes[0].patches if p.get_gid() == "window"]
    assert len(bands) == len(plan.windows)
    short = h.audio_tab("tiny-gemma3n", SPEECH)
    assert long_audio_figure(short.plan) is None and "| windows |" not in short.counts


def test_audio_tab_stereo_44k(tmp_path):
    t = np.arange(44_100) / 44_100
    path = tmp_path / "stereo.wav"
    sf.write(
        path, np.stack([np.sin(2 * np.pi * 300 * t), np.sin(2 * np.pi * 500 * t)], 1) * 0.2, 44_100
    )
    r = h.audio_tab("tiny-gemma4", str(path))
    assert "2 averaged to mono" in r.counts and "44100 Hz" in r.counts


def _layout_video_tokens(model: str, video) -> int:
    """The tokens ``video`` adds to a real prompt, as layout_prompt counts them: the
    prompt with the video less the same prompt without it."""
    from gemma_explore.media.loaders import load_video
    from gemma_explore.processing.layout import layout_prompt

    bundle = h.analysis_bundle(model)
    with_video = layout_prompt("", bundle=bundle, videos=[load_video(video)])
    return with_video.num_tokens - layout_prompt("", bundle=bundle).num_tokens


@pytest.mark.parametrize("model", ["tiny-gemma4", "tiny-gemma4-unified"])
def test_one_video_has_one_cost_on_every_tab_and_it_is_layout_prompts(model):
    """The Video tab, the Serving tab and Chat show the sample video's prompt cost as
    soft tokens + markers + timestamps = total, and the total is layout_prompt's."""
    from gemma_explore.app.serving_tab import serving_tab

    expected = _layout_video_tokens(model, VIDEO)
    r = h.video_tab(model, VIDEO)
    p = r.plan
    assert p.num_soft_tokens + p.num_markers + p.num_timestamp_tokens == p.total_tokens == expected
    assert f"| soft tokens | {p.num_soft_tokens} |" in r.counts
    assert f"| markers (BOI + EOI per frame) | {p.num_markers} |" in r.counts
    assert f"| {p.num_timestamp_tokens} |" in r.counts
    sums = f"{p.total_tokens} = {p.num_soft_tokens} + {p.num_markers} + {p.num_timestamp_tokens}"
    assert f"| prompt tokens | {sums} |" in r.counts
    served = serving_tab("google/gemma-4-E4B-it", 8192, 1, 1, 1, 8192)
    row = (
        f"{p.num_soft_tokens} soft + {p.num_markers} markers + {p.num_timestamp_tokens} "
        f"timestamps = {expected}"
    )
    assert row in served.table
    *_, (_hist, counts) = h.chat_stream(model, {"text": "", "files": [VIDEO]}, [], 1)
    assert f"video {row}" in counts
    preview = h.chat_preview(model, {"text": "", "files": [VIDEO]})
    assert f"video {row}" in preview


def test_chat_counts_add_up_to_layout_prompts_and_name_the_vocabulary():
    from gemma_explore.processing.layout import layout_prompt

    bundle = h.get_bundle("tiny-gemma4")
    message = {"text": "What is this?", "files": [PHOTO]}
    line = h.chat_preview("tiny-gemma4", message, 280)
    turn = [
        {
            "role": "user",
            "content": [
                {"type": "image", "image": PHOTO},
                {"type": "text", "text": "What is this?"},
            ],
        }
    ]
    total = layout_prompt(turn, bundle=bundle, max_soft_tokens=280).num_tokens
    assert f"{total} prompt tokens" in line and f"your words; {bundle.vocabulary})" in line


@pytest.mark.parametrize("model", ["tiny-gemma4", "tiny-gemma3n", "tiny-gemma4-unified"])
def test_chat_counts_an_image_and_a_clip_as_their_tabs_and_the_layout_do(model):
    """Issue 46: Chat showed the photo as 260 placeholders with its markers counted as
    text, where the Image tab said 262. Now each attachment shows as its tab's soft
    tokens + markers = prompt tokens, the Prompt layout tab's segments for the same turn
    add up to the same numbers, and the text is what is left."""
    budget = 280 if h.get_bundle(model).spec.image.budgets else None
    image = h.image_tab(model, PHOTO, budget)
    audio = h.audio_tab(model, SPEECH)
    layout = h.layout_tab(model, "What is this?", PHOTO, SPEECH, budget)
    line = h.chat_preview(model, {"text": "What is this?", "files": [PHOTO, SPEECH]}, budget)
    ip, ap = image.plan, audio.plan
    assert f"| prompt tokens (with markers) | {ip.total_tokens} |" in image.counts
    assert f"image {ip.num_soft_tokens} soft + " in line and f" = {ip.total_tokens} · " in line
    assert f"audio {ap.num_soft_tokens} soft + " in line and line.endswith(f"= {ap.total_tokens})")
    counts = layout.layout.counts()
    assert counts["image_soft"] == ip.num_soft_tokens and counts["audio_soft"] == ap.num_soft_tokens
    # The layout's own segments: each attachment's markers (and 3n's newline wrappers).
    items = ip.total_tokens + ap.total_tokens
    total = layout.layout.num_tokens
    assert f"**Waiting to be asked** (press Enter): {total} prompt tokens" in line
    assert f"(text {total - items} (the chat template and your words;" in line
    around = sum(v for k, v in counts.items() if k in ("boi", "eoi", "boa", "eoa"))
    assert around == 4  # BOI, EOI, BOA, EOA: the markers the line counts with each item


def test_text_counts_say_which_vocabulary_counted_them():
    bundle = h.analysis_bundle("tiny-gemma4")
    r = h.layout_tab("tiny-gemma4", "Describe this.", PHOTO, None, 280)
    assert f"| text ({bundle.vocabulary}) |" in r.counts


def test_a_long_clip_in_chat_says_it_is_cut(tmp_path):
    path = tmp_path / "long.wav"
    sf.write(path, np.zeros(45 * 16_000, np.float32), 16_000)
    line = h.chat_preview("tiny-gemma4", {"text": "Hi", "files": [str(path)]})
    assert "long.wav is 45.0 s" in line and "first 30 s" in line


def test_a_file_on_the_wrong_tab_is_sent_to_the_right_one(tmp_path):
    r = h.audio_tab("tiny-gemma4", VIDEO)
    assert r.error == "✗ video.mp4 is a video file: open it on the Video tab."
    assert "Image tab" in h.video_tab("tiny-gemma4", PHOTO).error
    assert "Audio tab" in h.image_tab("tiny-gemma4", SPEECH).error
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    message = h.image_tab("tiny-gemma4", str(empty)).error
    assert message.count("empty.png") == 1 and str(tmp_path) not in message
    notes = tmp_path / "notes.png"
    notes.write_text("shopping list")
    message = h.image_tab("tiny-gemma4", str(notes)).error
    assert message.startswith("✗ notes.png ") and message.count("notes.png") == 1


def test_video_tab():
    r = h.video_tab("tiny-gemma4", VIDEO)
    assert r.error is None and "| sampled | 32 |" in r.counts
    assert f"| prompt tokens | {r.plan.total_tokens} = " in r.counts
    r = h.video_tab("tiny-gemma4", PHOTO)  # a JPEG is not a one-frame video
    assert r.error.startswith("✗") and "Image tab" in r.error
    r = h.video_tab("tiny-gemma3n", VIDEO)
    assert r.error.startswith("✗") and "no video" in r.error


def test_layout_tab():
    r = h.layout_tab("tiny-gemma3n", "Describe.", PHOTO, SPEECH)
    assert r.error is None and "✓ image #0" in r.parity and "newline merge" in r.parity
    assert "<span" in r.layout_html


def test_chat_streams_and_says_the_weights_are_random():
    message = {"text": "What is this?", "files": [PHOTO]}
    updates = [hist for hist, _ in h.chat_stream("tiny-gemma4", message, [], 6)]
    assert len(updates) >= 3  # several partial answers, then the final one
    final = updates[-1]
    assert final[0]["role"] == "user" and "photo.jpg" in final[0]["content"]
    assert "random weights" in final[-1]["content"]


@pytest.mark.parametrize(
    ("tab", "args", "message"),
    [
        (h.image_tab, ("tiny-gemma4", None), "Upload an image"),
        (h.image_tab, ("tiny-gemma4", b"\x89PNG\r\n broken"), "no image format"),
        (h.image_tab, ("tiny-gemma4", PHOTO, 300), "70, 140, 280, 560, 1120"),
        (h.audio_tab, ("tiny-gemma4", b""), "empty"),
        (h.audio_tab, ("tiny-gemma4", b"RIFF....garbage"), "WAV or FLAC"),
        (h.audio_tab, ("tiny-gemma4", (np.full(800, np.nan, np.float32), 16_000)), "NaN"),
        (h.video_tab, ("tiny-gemma4", b"not a video"), "codec"),
        (h.image_tab, ("tiny-gemma9", PHOTO), "tiny-gemma4"),
    ],
)
def test_bad_input_is_a_message_and_the_next_request_works(tab, args, message):
    r = tab(*args)
    assert r.error.startswith("✗") and message in r.error
    assert h.image_tab("tiny-gemma4", PHOTO).error is None


def test_a_failed_turn_names_each_bad_attachment_once_in_one_message(tmp_path):
    notes, broken = tmp_path / "notes.txt", tmp_path / "broken.png"
    notes.write_text("hello")
    broken.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(40))
    outcome: dict = {}
    message = {"text": "hi", "files": [str(notes), PHOTO, str(broken)]}
    (final,) = [hist for hist, _ in h.chat_stream("tiny-gemma4", message, [], 2, outcome=outcome)]
    assert outcome["failed"] and [m["role"] for m in final] == ["user", "assistant"]
    assert all(n in final[0]["content"] for n in ("hi", "notes.txt", "photo.jpg", "broken.png"))
    refusal = final[1]["content"]
    problems = refusal.split("\n\n")
    assert "notes.txt" in problems[0] and "file type" in problems[0]
    assert "broken.png" in problems[1] and "image" in problems[1]
    assert problems[0].count("notes.txt") == problems[1].count("broken.png") == 1
    assert "notes.txt, broken.png were taken out" in problems[2]
    assert str(tmp_path) not in refusal
    assert outcome["box"] == {"text": "hi", "files": [PHOTO]}  # the good photo stays


def _turns(history: list[dict]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in history]


def test_a_bad_attachment_is_refused_once_and_the_next_send_answers(tmp_path):
    """Issue 46: a text file named .png. The turn is refused before the model runs, its
    own message after the user's turn (the last answer untouched), the file taken out of
    the box (the page's box gets ``outcome["box"]``); the next send, plain text, answers."""
    bad = tmp_path / "notes.png"
    bad.write_text("shopping list: eggs, milk")
    before = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]
    outcome: dict = {}
    steps = []
    bundle = h.get_bundle("tiny-gemma4")
    hook = bundle.model.register_forward_hook(lambda *_: steps.append(1))
    try:
        updates = list(
            h.chat_stream(
                "tiny-gemma4", {"text": "", "files": [str(bad)]}, before, 4, outcome=outcome
            )
        )
    finally:
        hook.remove()
    assert steps == [], "the model ran for a refused turn"
    ((history, counts),) = updates  # one update: the refusal, once
    assert counts == ""
    assert _turns(history[:2]) == _turns(before)  # the last answer is untouched
    assert history[2] == {"role": "user", "content": "[notes.png]"}
    refusal = history[3]
    assert refusal["role"] == "assistant" and refusal["content"].startswith("✗ notes.png ")
    assert "taken out of the message box" in refusal["content"] and len(history) == 4
    assert outcome["failed"] and outcome["box"] is None  # nothing left: the box empties

    # The next send: plain text, and the history as the page holds it now.
    outcome = {}
    *_, (history, counts) = h.chat_stream("tiny-gemma4", "What now?", history, 3, outcome=outcome)
    assert not outcome["failed"] and outcome["box"] is None
    assert [m["role"] for m in history] == ["user", "assistant"] * 3
    assert history[4]["content"] == "What now?" and "notes.png" not in history[5]["content"]
    assert "random weights" in history[5]["content"] and "prompt tokens" in counts


def test_the_page_gives_the_box_back_without_the_refused_file(tmp_path):
    """ui._respond, the Chat tab's handler: its second output is the message box. A
    refused file leaves it (the typed text and the good file stay); a sent turn empties it."""
    from gemma_explore.app import ui

    bad = tmp_path / "notes.png"
    bad.write_text("shopping list")
    message = {"text": "And this?", "files": [str(bad), PHOTO]}
    updates = list(ui._respond("tiny-gemma4", message, [], 2, None))
    (hist, box, _counts) = updates[-1]
    assert box == {"text": "And this?", "files": [PHOTO]}
    assert [m["role"] for m in hist] == ["user", "assistant"] and "✗" in hist[1]["content"]
    assert "press Enter to send it without it" in hist[1]["content"]
    *_, (hist, box, counts) = ui._respond("tiny-gemma4", box, hist, 2, None)
    assert box is None and [m["role"] for m in hist] == ["user", "assistant"] * 2
    assert "✗" not in hist[-1]["content"] and "image 270 soft" in counts


def test_the_waiting_box_says_to_take_a_bad_file_out(tmp_path):
    bad = tmp_path / "notes.png"
    bad.write_text("shopping list")
    line = h.chat_preview("tiny-gemma4", {"text": "And this?", "files": [str(bad)]})
    assert line.startswith("✗ notes.png ") and "×" in line and "refused" in line


def test_an_error_after_the_turn_is_sent_is_its_own_message():
    """A server that does not answer: the user's turn shows, the error follows it as its
    own message, and the question goes back in the box to resend."""
    name = "google/gemma-4-E4B-it"
    h.configure(name, engine="openai", base_url="http://127.0.0.1:9/v1")
    before = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]
    try:
        outcome: dict = {}
        *_, (final, _) = h.chat_stream(name, "Still there?", before, 2, outcome=outcome)
    finally:
        h.bundles.forget(name)
    assert _turns(final[:2]) == _turns(before)
    assert final[2] == {"role": "user", "content": "Still there?"}
    assert final[3]["role"] == "assistant" and final[3]["content"].startswith("✗")
    assert len(final) == 4 and outcome["box"] == {"text": "Still there?", "files": []}


def test_a_finished_answer_says_nothing_about_stopping():
    outcome: dict = {}
    *_, (history, _) = h.chat_stream("tiny-gemma4", "Hi", [], 3, outcome=outcome)
    assert not outcome["failed"] and not outcome["stopped"]
    assert "stopped" not in history[-1]["content"] and "ms" in history[-1]["content"]


def test_a_served_model_uses_the_tiny_processor_for_analysis_and_reports_a_dead_server():
    name = "google/gemma-4-E4B-it"
    h.configure(name, engine="openai", base_url="http://127.0.0.1:9/v1")
    try:
        r = h.image_tab(name, PHOTO, 280)
        assert r.error is None and "| soft tokens | 270 |" in r.counts
        (final,) = [hist for hist, _ in h.chat_stream(name, "Hi", [], 2)]
        assert final[-1]["content"].startswith("✗") and "vllm serve" in final[-1]["content"]
    finally:
        h.bundles.forget(name)


def _generating() -> int:
    import threading

    return sum(t.name == "gemma_explore generate" for t in threading.enumerate())


def _wait_idle(seconds: float) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while _generating() and time.monotonic() < deadline:
        time.sleep(0.02)
    return not _generating()


def test_stop_ends_generation_at_the_next_token_and_counts_the_turn():
    import threading

    stop = threading.Event()
    seen, counts = [], ""
    for history, line in h.chat_stream(
        "tiny-gemma4", {"text": "Describe it.", "files": [PHOTO]}, [], 200, stop=stop
    ):
        seen.append(history[-1]["content"])
        counts = line
        if len(seen) == 3:
            stop.set()
    assert "stopped by you" in seen[-1] and len(seen) < 10  # not the 200 tokens asked for
    assert "image 270" in counts and "text" in counts and "generated" in counts
    assert _wait_idle(1.0), "the generation thread outlived Stop"


def test_an_abandoned_stream_stops_generating():
    """A reader that goes away (a closed browser tab): closing the stream ends generate()
    at its next token instead of running on to max_new_tokens in the background."""
    bundle = h.get_bundle("tiny-gemma4")
    steps = []
    hook = bundle.model.register_forward_hook(lambda *_: steps.append(1))  # one per token
    try:
        pieces = bundle.generate("Tell me a story.", stream=True, max_new_tokens=256)
        next(pieces)
        pieces.close()
        assert _wait_idle(5.0), "the generation thread outlived its reader"
    finally:
        hook.remove()
    assert len(steps) < 20, f"{len(steps)} forward passes after the reader left"


def test_turn_counts_split_text_from_placeholders():
    from gemma_explore.processing.inputs import prepare_inputs

    bundle = h.get_bundle("tiny-gemma4")
    turn = [
        {
            "role": "user",
            "content": [{"type": "image", "image": PHOTO}, {"type": "text", "text": "Hi"}],
        }
    ]
    ids = prepare_inputs(turn, max_soft_tokens=280, bundle=bundle).input_ids
    counts = h.turn_counts(bundle, ids)
    assert counts["image"] == 270 and counts["audio"] == counts["video"] == 0
    assert sum(counts.values()) == len(ids) and counts["text"] > 0


def test_every_tab_works_with_the_encoder_free_model():
    """tiny-gemma4-unified in the demo: each tab answers, with Unified's own figures."""
    from gemma_explore.app.serving_tab import serving_tab
    from gemma_explore.app.transcribe_tab import transcribe_tab

    m = "tiny-gemma4-unified"
    image = h.image_tab(m, PHOTO, 280)
    assert image.error is None and image.parity.startswith("✓")
    assert "6912 raw values" in image.patch_figure.axes[1].get_title()  # no tower
    audio = h.audio_tab(m, SPEECH)
    assert audio.error is None and "no mel" in audio.mel_figure.axes[0].get_title()
    assert f"| soft tokens | {audio.plan.num_soft_tokens} |" in audio.counts
    video = h.video_tab(m, VIDEO)
    assert video.error is None and "| sampled | 32 |" in video.counts
    layout = h.layout_tab(m, "Describe.", PHOTO, SPEECH)
    assert layout.error is None and "<span" in layout.layout_html
    serving = serving_tab(m, 8192, 2, 1, 1, 8192)
    assert serving.error is None and serving.figure is not None
    *_, (history, counts) = h.chat_stream(m, {"text": "What is this?", "files": [PHOTO]}, [], 4)
    assert "random weights" in history[-1]["content"]
    assert "image 270" in counts  # the photo's image placeholders at budget 280
    stt = transcribe_tab(m, SPEECH)
    assert stt.error and "Gemma 3n" in stt.error  # no transcription prompt for Gemma 4


def test_the_budget_dropdown_is_enabled_only_where_the_family_has_budgets():
    from gemma_explore.app.ui import budget_choices, budget_enabled

    for name in ("tiny-gemma3n", "tiny-gemma4", "tiny-gemma4-unified"):
        assert budget_enabled(name) == bool(h.get_bundle(name).spec.image.budgets)
    assert not budget_enabled("tiny-gemma3n")
    # Gemma 3n shows what it uses, not the last family's budget greyed out.
    choices, value, on = budget_choices(h.get_bundle("tiny-gemma3n").spec, 560)
    assert value == "fixed: 256 tokens per image" and choices == [value] and not on
    assert h.image_tab("tiny-gemma3n", PHOTO, value).error is None


def test_each_tab_result_is_a_frozen_dataclass_read_by_attribute():
    """One frozen dataclass per tab, read by its fields: the Image tab's are its outputs
    (the message, the counts, the badge, the timings, the notice, two figures and the
    plan they read), in that order."""
    import dataclasses

    from gemma_explore.app import outputs as results

    r = h.image_tab("tiny-gemma4", None)
    assert isinstance(r, results.ImageResult) and isinstance(r, h.TabResult)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.error = None
    assert r.counts == r.error and r.error.startswith("✗")  # the message, where the counts go
    assert [f.name for f in dataclasses.fields(r)] == [
        "error",
        "counts",
        "parity",
        "timings",
        "notice",
        "patch_figure",
        "pooled_figure",
        "plan",
    ]
    blank = results.AudioResult.blank()
    assert blank.mel_figure is None and blank.counts == "" and blank.error is None


def test_the_chat_reads_the_suffixes_headers_knows(tmp_path):
    """One suffix list (headers.py): the chat box takes every suffix the command line's
    plan takes, and its refusal lists them."""
    from gemma_explore.app.attachments import attachment
    from gemma_explore.media.headers import AUDIO_SUFFIXES, IMAGE_SUFFIXES, VIDEO_SUFFIXES

    other = tmp_path / "photo.ppm"  # in headers' list, not in the chat's old one
    from PIL import Image

    Image.new("RGB", (8, 6)).save(other)
    assert attachment(str(other))["type"] == "image"
    with pytest.raises(ValueError) as refused:
        attachment(str(tmp_path / "notes.txt"))
    for suffix in (*IMAGE_SUFFIXES, *AUDIO_SUFFIXES, *VIDEO_SUFFIXES):
        assert suffix in str(refused.value)


def test_the_page_builders_build():
    from gemma_explore.app import tabs, ui

    assert [t.__name__ for t in ui.TABS][0] == "build_image_tab"
    assert {t.__name__ for t in ui.TABS} <= set(ui.__all__)  # ui: the builders and the page
    assert tabs.image_tab.__module__ == "gemma_explore.app.tabs"  # the Image tab's handler
    import gradio as gr

    with gr.Blocks():
        ui.build_serving_tab(ui.Context(model=gr.Dropdown(["tiny-gemma4"]), samples={}))
