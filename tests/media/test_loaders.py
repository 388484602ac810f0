"""Odd images, clips and videos become clean inputs or clear messages."""

import io

import numpy as np
import pytest
import soundfile as sf
from PIL import Image

import gemma_explore as ge
from gemma_explore.errors import MediaError
from tests.app import handlers as h


def _png(img: Image.Image, fmt="PNG") -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt)
    return buf.getvalue()


@pytest.mark.parametrize(
    "image",
    [
        Image.new("CMYK", (40, 30), (0, 50, 100, 0)),
        Image.new("I;16", (40, 30)),
        Image.new("F", (40, 30)),
        Image.new("L", (40, 30), 200),
        Image.new("1", (40, 30)),
        Image.new("LA", (40, 30), (10, 0)),
        Image.new("RGBA", (40, 30), (255, 0, 0, 0)),
        Image.new("P", (40, 30)),
        Image.new("RGB", (1, 1)),
    ],
    ids=lambda im: f"{im.mode}-{im.size}",
)
def test_odd_image_modes_become_rgb(image):
    out = ge.load_image(image)
    assert out.mode == "RGB" and out.size == image.size
    if image.mode == "RGBA":
        assert out.getpixel((0, 0)) == (255, 255, 255)  # transparent → white, not black


@pytest.mark.parametrize(
    "array",
    [
        np.zeros((30, 40), np.uint8),
        np.ones((30, 40, 3), np.float32),
        np.zeros((3, 30, 40), np.uint8),
        np.zeros((30, 40, 4), np.uint8),
    ],
    ids=["grey", "float", "channels-first", "rgba"],
)
def test_arrays(array):
    assert ge.load_image(array).size == (40, 30)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (b"", "empty"),
        (b"GIF89a broken", "no image format"),
        (np.zeros((0, 5)), "empty"),
        (np.full((4, 4), np.nan), "NaN"),
        (np.zeros((2, 2, 2, 2)), "shape"),
        (42, "Expected"),
    ],
)
def test_bad_images(bad, message):
    with pytest.raises(ge.MediaError, match=message):
        ge.load_image(bad)


def test_decompression_bombs_are_refused(monkeypatch):
    from gemma_explore.media import loaders as media

    monkeypatch.setattr(media, "MAX_IMAGE_PIXELS", 100)
    with pytest.raises(ge.MediaError, match="MP"):
        ge.load_image(Image.new("RGB", (20, 20)))


def _wav(wave, rate, subtype="PCM_16", fmt="WAV") -> bytes:
    buf = io.BytesIO()
    sf.write(buf, wave, rate, subtype=subtype, format=fmt)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("data", "rate", "channels"),
    [
        (_wav(np.zeros(8000), 8000, "PCM_U8"), 8000, None),
        (_wav(np.random.RandomState(0).uniform(-0.1, 0.1, (22050, 5)), 22050), 22050, 5),
        (
            _wav(
                np.random.RandomState(1).uniform(-0.1, 0.1, 48000),
                48000,
                fmt="FLAC",
                subtype="PCM_24",
            ),
            48000,
            None,
        ),
    ],
    ids=["8bit-8k", "5ch-22k", "flac-48k"],
)
def test_odd_audio_is_resampled_and_mixed(data, rate, channels):
    wave, notes = ge.load_audio(data)
    assert wave.dtype == np.float32 and wave.ndim == 1
    assert notes["resampled_from"] == rate and notes["downmixed"] == channels
    assert abs(len(wave) - 16_000 * (1 if rate != 22050 else 1)) <= 1


def test_integer_pcm_arrays_are_scaled():
    wave, _ = ge.load_audio((np.full(1600, 16384, np.int16), 16_000))
    assert np.allclose(wave, 0.5, atol=1e-3)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (b"", "empty"),
        (b"not audio at all", "WAV or FLAC"),
        (np.zeros(10), "sampling rate"),
        ((np.zeros((2, 2, 2)), 16000), "1-D"),
    ],
)
def test_bad_audio(bad, message):
    with pytest.raises(ge.MediaError, match=message):
        ge.load_audio(bad)


def test_a_ten_minute_clip_in_the_demo_is_cut_to_30_s():
    long = _wav(
        np.random.RandomState(2).uniform(-0.1, 0.1, 16_000 * 600).astype(np.float32), 16_000
    )
    r = h.audio_tab("tiny-gemma4", long)
    assert r.error is None and "(cut to 30 s)" in r.counts and "| soft tokens | 750 |" in r.counts


def test_odd_images_through_the_demo():
    for img in (
        Image.new("CMYK", (300, 200)),
        Image.new("I;16", (64, 2000)),
        Image.new("RGB", (1, 1)),
    ):
        r = h.image_tab("tiny-gemma4", _png(img, "TIFF" if img.mode == "CMYK" else "PNG"))
        assert r.error is None, r.error


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (np.zeros((0, 8, 8, 3), np.uint8), "no frames"),
        (np.zeros((4, 8, 8), np.uint8), "shape"),
        (b"", "empty"),
    ],
)
def test_bad_videos(bad, message):
    with pytest.raises(ge.MediaError, match=message):
        ge.load_video(bad, fps=10)


def _write_clip(path, frames: int, size=(48, 64), fps=25.0):
    import cv2

    h, w = size
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, (w, h))
    for i in range(frames):
        frame = np.zeros((h, w, 3), np.uint8)
        frame[:, :, 0] = i % 256  # every frame differs, so a wrong seek shows
        frame[:, :, 1] = (i // 256) * 40
        frame[: (i % h) + 1, : (i % w) + 1, 2] = 255
        writer.write(frame)
    writer.release()


def test_a_long_video_file_keeps_only_its_sampled_frames(tmp_path):
    """Memory is bounded by the 32 kept frames, and they are the frames a full decode
    would give at the sampled indices (seeking lands exactly)."""
    import cv2

    from gemma_explore.media.loaders import sample_frame_indices

    path = tmp_path / "long.mp4"
    _write_clip(path, 1500)
    video = ge.load_video(path)
    assert video.num_frames == 1500 and video.frames.shape[0] == 32 and video.fps == 25.0
    wanted = sample_frame_indices(1500, max_frames=32)
    assert list(video.kept) == wanted
    cap, every = cv2.VideoCapture(str(path)), []
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        every.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
    assert np.array_equal(video.frames_at(wanted), np.stack(every)[wanted])
    with pytest.raises(ge.MediaError, match="keeps only its 32 sampled frames"):
        video.frames_at([1])
    # The plan of the file equals the plan of every frame in memory.
    whole = ge.plan_video(np.stack(every), fps=25.0)
    from_file = ge.plan_video(path)
    assert (from_file.timestamps, from_file.total_tokens) == (whole.timestamps, whole.total_tokens)
    assert np.array_equal(from_file.frames, whole.frames)
    # Bytes and file objects take the same way in.
    assert ge.load_video(path.read_bytes()).kept == video.kept
    with open(path, "rb") as fh:
        assert ge.plan_video(fh).timestamps == whole.timestamps


def test_an_over_counted_container_is_sampled_over_the_frames_that_decode(tmp_path):
    """A truncated AVI still claims its full frame count; the kept frames are sampled again
    over the frames that really decode, exactly as a full decode would sample them."""
    import cv2

    from gemma_explore.media.loaders import sample_frame_indices

    whole = tmp_path / "whole.avi"
    writer = cv2.VideoWriter(str(whole), cv2.VideoWriter_fourcc(*"MJPG"), 10, (64, 48))
    for i in range(100):
        writer.write(np.full((48, 64, 3), (i * 2, 255 - i * 2, 90), np.uint8))
    writer.release()
    cut = tmp_path / "cut.avi"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    cap = cv2.VideoCapture(str(cut))
    claimed, every = int(cap.get(cv2.CAP_PROP_FRAME_COUNT)), []
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        every.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
    cap.release()
    assert claimed == 100 and 10 < len(every) < 100  # the header over-states the count
    video = ge.load_video(cut)
    wanted = sample_frame_indices(len(every), max_frames=32)
    assert video.num_frames == len(every) and list(video.kept) == wanted
    assert np.array_equal(video.frames_at(wanted), np.stack(every)[wanted])
    plan = ge.plan_video(cut)
    assert plan.num_frames == len(every) and plan.frame_indices == tuple(wanted)


def _png_bytes() -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (64, 48), (10, 200, 30)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # truncated in the pixel data
        lambda b: b[:33] + bytes(len(b) - 33),  # every chunk after IHDR zeroed
        lambda b: b[:40] + bytes([b[40] ^ 0xFF]) + b[41:],  # a flipped byte in IDAT
        lambda b: b[:16] + (30_000).to_bytes(4, "big") * 2 + b[24:],  # IHDR lies: 30000²
    ],
    ids=["truncated", "zeroed chunks", "bit flip", "lying size"],
)
def test_a_damaged_png_is_a_media_error_for_every_reader(tmp_path, damage):
    """PIL raises OSError, SyntaxError, ValueError or DecompressionBombError for these;
    every reader turns them into one MediaError line with the file's own name."""
    from gemma_explore.media.headers import image_header
    from gemma_explore.media.loaders import image_size, load_image
    from gemma_explore.plans.image import plan_image

    path = tmp_path / "damaged.png"
    path.write_bytes(damage(_png_bytes()))
    for read in (load_image, lambda p: plan_image(load_image(p), family="gemma4")):
        with pytest.raises(MediaError) as err:
            read(path)
        assert "\n" not in str(err.value) and str(tmp_path) not in str(err.value)
    for header in (image_header, image_size):  # header-only: may plan, or say why
        try:
            header(path)
        except MediaError as exc:
            assert str(tmp_path) not in str(exc)


def test_a_damaged_video_writes_nothing_to_stderr(tmp_path, capfd):
    from gemma_explore.media.headers import video_header
    from gemma_explore.media.loaders import load_video
    from gemma_explore.samples import SAMPLES_DIR

    path = tmp_path / "cut.mp4"
    path.write_bytes((SAMPLES_DIR / "video.mp4").read_bytes()[:3000])  # no moov atom
    for read in (load_video, video_header):
        with pytest.raises(MediaError):
            read(path)
    assert capfd.readouterr().err == ""  # FFmpeg's "moov atom not found" stays quiet


def _reader_messages(tmp_path, name: str, data: bytes) -> list[str]:
    """What every reader of a file says about it: the loader (the demo's tabs and chat)
    and the header reader (`gemma-explore plan` and `bill`)."""
    from gemma_explore.media.headers import audio_header, image_header, kind_of

    path = tmp_path / name
    path.write_bytes(data)
    kind = kind_of(path)
    readers = {
        "image": (ge.load_image, image_header),
        "audio": (ge.load_audio, audio_header),
        "video": (ge.load_video, None),
    }[kind]
    out = []
    for read in filter(None, readers):
        with pytest.raises(ge.MediaError) as refused:
            read(str(path))
        out.append(str(refused.value))
    return out


@pytest.mark.parametrize("name", ["notes.png", "notes.jpg", "notes.wav", "notes.flac"])
def test_a_file_under_another_kinds_name_gets_advice_that_fits_its_name(tmp_path, name):
    """A text file named .png: no library name (PIL, soundfile, librosa) and no "save it
    as PNG" (it already is named so): the message says what the file is not, and to
    attach the real one."""
    for message in _reader_messages(tmp_path, name, b"shopping list: eggs, milk"):
        assert "PIL" not in message and "soundfile" not in message and "librosa" not in message
        suffix = name.rsplit(".", 1)[1].upper()
        assert f"save it as {suffix}" not in message.lower(), message
        assert f"save it again as {suffix}" not in message.lower(), message
        assert "not an image" in message or "not audio" in message, message
        assert "itself" in message, message  # the advice: the real picture or recording


@pytest.mark.parametrize("name", ["empty.png", "empty.wav", "empty.mp4"])
def test_an_empty_file_is_named_once_and_not_told_to_upload_again(tmp_path, name):
    """Uploading the same 0-byte file again gives the same 0 bytes: the advice is to
    choose the file that holds the picture, clip or video."""
    for message in _reader_messages(tmp_path, name, b""):
        assert message.count(name) == 1, message
        assert "again" not in message.lower(), message
        assert "empty (0 bytes)" in message and "Choose the file" in message
