"""The token bill: header-only counts equal the plans made from the decoded files.

A mixed dataset is generated in a temporary folder: images of many sizes, modes and
formats (EXIF-rotated photos included), clips at several rates and channel counts,
videos, corrupt, truncated and empty files, an unsupported file, a broken link and a
symlink loop. ``bill`` reads headers only; the reference is ``plan_*`` on each path,
which loads the clip (resampling it) and decodes the video's sampled frames.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import cv2
import numpy as np
import pytest
import soundfile as sf
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from gemma_explore.bill.walk import bill, bill_file, resolve_budgets, walk_files
from gemma_explore.bill.writers import BillWriter
from gemma_explore.errors import MediaError
from gemma_explore.media.headers import audio_header, image_header, kind_of, video_header
from gemma_explore.media.loaders import image_size
from gemma_explore.plans.audio import plan_audio
from gemma_explore.plans.image import plan_image
from gemma_explore.plans.video import plan_video
from tests.conftest import examples

BUDGETS = (70, 280, 1120, "auto")  # "auto": each image at the smallest budget that keeps it whole

IMAGE_SIZES = [(1, 1), (3, 900), (900, 3), (37, 41), (300, 500), (768, 768), (1080, 1920)]
MODES = ["RGB", "L", "RGBA", "P", "I;16", "1", "CMYK", "LA", "F"]


def _image(mode: str, size: tuple[int, int]) -> Image.Image:
    h, w = size
    rng = np.random.default_rng(h * 7919 + w)
    rgb = Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8))
    if mode == "I;16":
        return Image.fromarray((rng.integers(0, 65535, (h, w))).astype(np.uint16))
    if mode == "F":
        return Image.fromarray(rng.random((h, w), dtype=np.float32))
    return rgb.convert(mode)


def _exif_jpeg(path: Path, size: tuple[int, int], orientation: int) -> None:
    img = _image("RGB", size)
    exif = Image.Exif()
    exif[0x0112] = orientation
    img.save(path, exif=exif.tobytes())


def _video(path: Path, frames: int, fps: float, size: tuple[int, int], fourcc: str) -> None:
    h, w = size
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), fps, (w, h))
    for i in range(frames):
        writer.write(np.full((h, w, 3), (i * 9) % 255, np.uint8))
    writer.release()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("dataset")
    images, clips, videos, bad = (root / d for d in ("images", "clips", "videos", "bad"))
    for d in (images, clips, videos, bad, images / "nested" / "deeper"):
        d.mkdir(parents=True, exist_ok=True)
    # Images: every size in PNG; every mode in a format that stores it.
    for h, w in IMAGE_SIZES:
        _image("RGB", (h, w)).save(images / f"rgb_{h}x{w}.png")
    formats = {"CMYK": "jpg", "F": "tiff", "I;16": "png", "1": "bmp", "LA": "png"}
    for i, mode in enumerate(MODES):
        size = IMAGE_SIZES[i % len(IMAGE_SIZES)]
        size = (min(size[0], 400), min(size[1], 400))
        _image(mode, size).save(images / f"mode_{mode.replace(';', '')}.{formats.get(mode, 'png')}")
    _image("RGB", (120, 200)).save(images / "nested" / "photo.webp")
    _image("P", (64, 48)).save(images / "nested" / "deeper" / "anim.gif")
    _image("RGB", (96, 160)).save(images / "nested" / "photo.JPEG")
    for orientation in (3, 6, 8):  # upside down, 90° and 270°: sides swap for 6 and 8
        _exif_jpeg(images / f"exif_{orientation}.jpg", (240, 320), orientation)
    # Clips: rates, channels, formats, one longer than 30 s.
    rng = np.random.default_rng(0)
    sf.write(
        clips / "mono16k.wav", rng.standard_normal(16_000 * 3).astype(np.float32) * 0.1, 16_000
    )
    sf.write(clips / "stereo44k.wav", rng.standard_normal((44_100 * 2 + 17, 2)) * 0.1, 44_100)
    sf.write(clips / "phone8k.flac", rng.standard_normal(8_000 * 5 + 3) * 0.1, 8_000)
    sf.write(clips / "long48k.ogg", rng.standard_normal(48_000 * 31) * 0.1, 48_000)
    sf.write(clips / "short.wav", np.zeros(100, np.float32), 16_000)
    sf.write(clips / "song22k.mp3", rng.standard_normal(22_050 * 2) * 0.1, 22_050)
    # Videos.
    _video(videos / "clip.mp4", 48, 12.0, (90, 160), "mp4v")
    _video(videos / "long.mp4", 300, 25.0, (72, 128), "mp4v")
    _video(videos / "motion.avi", 20, 10.0, (64, 64), "MJPG")
    # Failures: empty, garbage, truncated, unsupported, a broken link.
    for name in ("empty.png", "empty.wav", "empty.mp4"):
        (bad / name).write_bytes(b"")
    (bad / "garbage.jpg").write_bytes(b"not an image at all" * 10)
    (bad / "garbage.wav").write_bytes(b"RIFF\x00\x00garbage" * 20)
    (bad / "garbage.mp3").write_bytes(b"\x00\x01\x02garbage" * 20)
    (bad / "garbage.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 64)
    (bad / "notes.txt").write_text("not media")
    os.symlink(bad / "missing.png", bad / "broken_link.png")
    # A symlink loop, and a folder we may not read.
    os.symlink(root, images / "nested" / "loop")
    locked = root / "locked"
    locked.mkdir()
    _image("RGB", (10, 10)).save(locked / "hidden.png")
    locked.chmod(0)
    yield root
    locked.chmod(0o755)


def _reference_tokens(path: str) -> tuple[int, ...] | None:
    """Tokens from the plans on the path itself (audio loaded, video frames decoded)."""
    kind = kind_of(path)
    try:
        if kind == "image":
            return tuple(
                plan_image(path, family="gemma4", max_soft_tokens=b).total_tokens for b in BUDGETS
            )
        if kind == "audio":
            return (plan_audio(path, family="gemma4").total_tokens,) * len(BUDGETS)
        if kind == "video":
            return (plan_video(path, family="gemma4").total_tokens,) * len(BUDGETS)
    except ValueError:
        return None
    return None


def test_bill_totals_equal_the_sum_of_the_plans(dataset):
    rows = []
    result = bill(
        dataset, family="gemma4", budgets=BUDGETS, recursive=True, workers=2, on_row=rows.append
    )
    expected = [0] * len(BUDGETS)
    billed = 0
    for row in rows:
        want = _reference_tokens(row.path)
        if want is None:
            assert row.error, f"{row.path} should fail: the plans refuse it"
            continue
        assert row.error is None, f"{row.path}: {row.error}"
        assert row.tokens == want, row.path
        billed += 1
        expected = [e + w for e, w in zip(expected, want, strict=True)]
    assert result.totals == tuple(expected)
    assert result.billed_files == billed
    locked = 1 if os.geteuid() == 0 else 0  # root reads the locked folder's one image
    assert result.billed == {"image": 22 + locked, "audio": 6, "video": 3}
    assert result.files == len(rows)
    # The totals per kind add up to the totals.
    summed = np.sum([v for v in result.totals_by_kind.values()], axis=0)
    assert tuple(int(x) for x in summed) == result.totals
    # The histogram counts every billed file once, at every budget.
    for hist, total in zip(result.histograms, result.totals, strict=True):
        assert sum(hist.values()) == billed
        assert sum(k * n for k, n in hist.items()) == total


def test_failures_and_walk_problems_have_reasons(dataset):
    result = bill(dataset, family="gemma4", budgets=BUDGETS, recursive=True, workers=1)
    failed = {Path(p).name: reason for p, reason in result.failures}
    assert set(failed) == {
        "empty.png",
        "empty.wav",
        "empty.mp4",
        "garbage.jpg",
        "garbage.wav",
        "garbage.mp3",
        "garbage.mp4",
        "notes.txt",
    }
    assert "empty" in failed["empty.png"] and "0 bytes" in failed["empty.wav"]
    assert failed["notes.txt"].startswith("unsupported file type .txt")
    assert all(reason and "\n" not in reason for reason in failed.values())
    problems = {Path(p).name: reason for p, reason in result.walk_problems}
    assert problems["broken_link.png"] == "broken symbolic link"
    assert problems["loop"].startswith("symlink loop")
    if os.geteuid() != 0:  # root reads any folder
        assert problems["locked"].startswith("unreadable folder")
    text = result.text()
    for needle in (
        "budget 70",
        "budget 1120",
        "Files that fail (8)",
        "symlink loop",
        "Slowest part:",
        "Tokens per file (budget 70)",
        "█",
    ):
        assert needle in text


def test_parallel_and_serial_bills_agree(dataset):
    one = bill(dataset, budgets=BUDGETS, recursive=True, workers=1)
    two = bill(dataset, budgets=BUDGETS, recursive=True, workers=2)
    assert (one.totals, one.billed, one.failures) == (two.totals, two.billed, two.failures)
    assert one.histograms == two.histograms


def test_not_recursive_bills_the_top_folder_only(dataset):
    result = bill(dataset / "images", budgets=(280,), recursive=False, workers=1)
    assert result.files == len(list((dataset / "images").glob("*.*")))
    assert result.walk_problems == ()


def test_header_readers_agree_with_the_loaders(dataset):
    for path in sorted((dataset / "images").rglob("*")):
        if path.is_file() and "loop" not in path.parts:
            assert image_header(path) == image_size(path), path.name
    assert image_header(dataset / "images" / "exif_6.jpg") == (320, 240)  # upright
    assert image_header(dataset / "images" / "exif_3.jpg") == (240, 320)
    a = audio_header(dataset / "clips" / "stereo44k.wav")
    assert (a.frames, a.sampling_rate, a.channels) == (44_100 * 2 + 17, 44_100, 2)
    v = video_header(dataset / "videos" / "clip.mp4")
    assert (v.frames, v.fps, v.size) == (48, 12.0, (90, 160))
    with pytest.raises(MediaError, match="empty"):
        video_header(dataset / "bad" / "empty.mp4")


def test_gemma3n_has_one_fixed_column(dataset):
    assert resolve_budgets("gemma3n") == (None,)
    with pytest.raises(ValueError, match="no image budget"):
        resolve_budgets("gemma3n", [280])
    with pytest.raises(ValueError, match="Choose one of"):
        resolve_budgets("gemma4", [71])
    row = bill_file(dataset / "images" / "rgb_37x41.png", family="gemma3n", budgets=(None,))
    assert row.tokens == (plan_image((37, 41), family="gemma3n").total_tokens,) == (260,)
    row = bill_file(dataset / "videos" / "clip.mp4", family="gemma3n", budgets=(None,))
    assert row.error and "no video input" in row.error
    row = bill_file(dataset / "clips" / "phone8k.flac", family="gemma3n", budgets=(None,))
    assert row.tokens == (
        plan_audio(dataset / "clips" / "phone8k.flac", family="gemma3n").total_tokens,
    )


def test_walker_survives_a_self_link(tmp_path):
    (tmp_path / "a").mkdir()
    os.symlink(tmp_path / "a" / "self", tmp_path / "a" / "self")  # points at itself
    os.symlink(tmp_path, tmp_path / "a" / "up")
    walk = walk_files(tmp_path)
    assert list(walk) == []
    reasons = dict((Path(p).name, r) for p, r in walk.problems)
    assert reasons["up"].startswith("symlink loop")
    assert "self" in reasons


def test_csv_rows_stream_to_disk(dataset, tmp_path):
    out = tmp_path / "bill.csv"
    with BillWriter(out, BUDGETS) as writer:
        result = bill(dataset / "clips", budgets=BUDGETS, workers=1, on_row=writer.write)
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == result.files
    assert sum(int(r["tokens@280"]) for r in rows if r["tokens@280"]) == result.totals[1]


@pytest.mark.parametrize("family", ["gemma4", "gemma3n", "gemma4_unified"])
def test_a_clip_over_30_s_is_billed_at_what_the_model_hears_with_a_note(tmp_path, family):
    """Gemma 3n and Gemma 4 hear a clip's first 30 s: the row and the bill say so, with the
    seconds past the cut; Unified keeps every sample, so nothing is cut or noted."""
    rng = np.random.default_rng(1)
    sf.write(tmp_path / "long.wav", rng.standard_normal(16_000 * 45) * 0.1, 16_000)
    sf.write(tmp_path / "long.flac", rng.standard_normal(44_100 * 40) * 0.1, 44_100)
    sf.write(tmp_path / "short.wav", rng.standard_normal(16_000 * 5) * 0.1, 16_000)
    out = tmp_path / "bill.csv"
    with BillWriter(out, (None,) if family == "gemma3n" else (280,)) as writer:
        result = bill(tmp_path, family=family, workers=1, on_row=writer.write)
    by_name = {Path(r["path"]).name: r for r in csv.DictReader(out.open())}
    column = "tokens" if family == "gemma3n" else "tokens@280"
    cut_s = {}
    for name in ("long.wav", "long.flac", "short.wav"):
        plan = plan_audio(tmp_path / name, family=family)  # the clip loaded and resampled
        cut_s[name] = (plan.num_samples - plan.samples_used) / 16_000
        assert float(by_name[name]["cut_s"]) == pytest.approx(cut_s[name], abs=1e-3), name
        assert int(by_name[name][column]) == plan.total_tokens, name
    assert result.cut_s == pytest.approx(sum(cut_s.values()), abs=1e-3)
    note = result.cut_note()
    if family == "gemma4_unified":
        assert cut_s == {"long.wav": 0, "long.flac": 0, "short.wav": 0}
        assert (result.cut_samples, note) == (0, None)
        assert "Note:" not in result.text()
        return
    assert cut_s["long.wav"] == pytest.approx(15.0) and cut_s["long.flac"] == pytest.approx(10.0)
    heard = plan_audio(tmp_path / "long.wav", family=family)
    assert result.cut_samples == 2
    assert note.startswith(f"2 files hold a clip over {heard.samples_used / 16_000:g} s: ")
    assert f"hears the first {heard.samples_used / 16_000:g} s of a clip" in note
    assert f"{heard.total_tokens:,} tokens, and the bill prices those" in note
    assert f"{sum(cut_s.values()):,.1f} s of audio past the cut is never heard" in note
    assert f"Note: {note}" in result.text().splitlines()


def test_parquet_needs_pyarrow(tmp_path):
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="pip install pyarrow"):
            BillWriter.check(tmp_path / "bill.parquet")
    else:
        assert BillWriter.check(tmp_path / "bill.parquet") == "parquet"
    with pytest.raises(ValueError, match=r"\.csv or \.parquet"):
        BillWriter.check("bill.xlsx")


def test_bill_file_maps_unchanged_under_any_executor(dataset):
    """The README's Dask/Ray claim, with the standard library's executor: no custom code."""
    import functools
    import pickle
    from concurrent.futures import ProcessPoolExecutor

    paths = sorted(str(p) for p in (dataset / "images").glob("*.png"))
    task = functools.partial(bill_file, family="gemma4", budgets=BUDGETS)
    with ProcessPoolExecutor(2) as pool:
        rows = list(pool.map(task, paths))
    again = [pickle.loads(pickle.dumps(task(p))) for p in paths]  # rows travel by pickle
    assert [(r.path, r.tokens, r.error) for r in rows] == [
        (r.path, r.tokens, r.error) for r in again
    ]
    direct = bill(dataset / "images", budgets=BUDGETS, recursive=False, workers=1)
    others = [p for p in (dataset / "images").iterdir() if p.is_file() and p.suffix != ".png"]
    expected = direct.totals_by_kind["image"][1] - sum(task(str(p)).tokens[1] for p in others)
    assert sum(r.tokens[1] for r in rows) == expected


@settings(max_examples=examples(0.2))
@given(
    h=st.integers(1, 1500),
    w=st.integers(1, 1500),
    orientation=st.integers(1, 8),
    fmt=st.sampled_from(["jpg", "png", "webp"]),
    budget=st.sampled_from([70, 140, 280, 560, 1120]),
)
def test_header_tokens_equal_the_loaded_image_plan(h, w, orientation, fmt, budget):
    """Any size, any EXIF orientation: the header's tokens are the decoded image's."""
    import tempfile

    from gemma_explore.media.loaders import load_image

    if fmt == "webp" and max(h, w) > 1000:
        w, h = min(w, 1000), min(h, 1000)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"img.{fmt}"
        exif = Image.Exif()
        exif[0x0112] = orientation
        Image.new("RGB", (w, h), (90, 30, 200)).save(path, exif=exif.tobytes())
        row = bill_file(path, family="gemma4", budgets=(budget,))
        upright = load_image(path)  # decoded, EXIF applied, as the processors see it
        want = plan_image(upright, family="gemma4", max_soft_tokens=budget).total_tokens
        assert row.error is None and (row.height, row.width) == (upright.height, upright.width)
        assert row.tokens == (want,)


def test_the_encoder_free_family_bills_raw_audio_frames_and_gemma4_images(tmp_path):
    """Unified: images cost what Gemma 4's do (the same resize and budgets); a clip costs
    ceil(samples / 640) + 2, the transformers count (vLLM's prompt may hold one fewer:
    see check_audio_parity)."""
    import math

    import gemma_explore as ge
    from gemma_explore.bill.walk import bill_file

    photo, clip = tmp_path / "p.png", tmp_path / "c.wav"
    Image.new("RGB", (640, 480), (1, 2, 3)).save(photo)
    sf.write(clip, np.full(38_560, 0.05, np.float32), 16_000)
    for b in (70, 280):
        u = bill_file(photo, family="gemma4_unified", budgets=(b,))
        g = bill_file(photo, family="gemma4", budgets=(b,))
        assert (
            u.tokens
            == g.tokens
            == (ge.plan_image((480, 640), family="gemma4", max_soft_tokens=b).total_tokens,)
        )
    row = bill_file(clip, family="gemma4_unified", budgets=(280,))
    assert row.tokens == (math.ceil(38_560 / 640) + 2,)
    assert row.tokens == (ge.plan_audio(clip, family="gemma4_unified").total_tokens,)


def test_summarize_defaults_to_the_default_familys_tiny_checkpoint():
    from gemma_explore.bill.cost import summarize
    from gemma_explore.bill.totals import Bill
    from gemma_explore.facts.families import DEFAULT_FAMILY
    from gemma_explore.models.tiny import tiny_name

    b = Bill(
        "gemma4",
        (280,),
        1,
        {"image": 1},
        (282,),
        {"image": (282,)},
        (),
        (),
        (),
        {},
        ({282: 1},),
        0.0,
    )
    default, named = summarize(b), summarize(b, tiny_name(DEFAULT_FAMILY.name))
    assert default.checkpoint == named.checkpoint and default.lines == named.lines
    assert default.lines[0].kv_bytes_total > 0


def test_captions_are_counted_with_the_fetched_vocabulary_when_present(monkeypatch, tmp_path):
    """Text tokens: Google's vocabulary once fetched (4 pieces for the README's prompt),
    else the stand-in's 20 characters; the label says which."""
    from gemma_explore.bill.cost import FETCHED, STAND_IN, text_counter
    from gemma_explore.models.vocabulary import (
        CACHE_ENV,
        LABEL_FETCHED,
        LABEL_STAND_IN,
        fetched_vocabulary,
    )

    empty_hub = str(tmp_path / "no-hub")  # no released checkpoint cached: it would win
    if fetched_vocabulary() is not None:
        counter = text_counter("gemma4", cache_dir=empty_hub)
        assert (counter.source, counter.label, counter.vocabulary) == (
            FETCHED,
            LABEL_FETCHED,
            LABEL_FETCHED,
        )
        assert counter("Describe this image.") == 4
        assert text_counter("gemma3n", cache_dir=empty_hub)("Describe this image.") == 4
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "nothing-fetched"))
    counter = text_counter("gemma4", cache_dir=empty_hub)
    assert counter.source == STAND_IN and counter.vocabulary == LABEL_STAND_IN
    assert counter.label.startswith(LABEL_STAND_IN) and "tokenizer fetch" in counter.label
    assert counter("Describe this image.") == 20
