"""Odd images, clips and videos become clean inputs or clear messages."""

import io

import numpy as np
import pytest
import soundfile as sf
from PIL import Image

import gemma_explore as ge
from gemma_explore.app import handlers as h


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
        (b"GIF89a broken", "PNG or JPEG"),
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
    from gemma_explore import media

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
    assert (
        r["error"] is None
        and "(cut to 30 s)" in r["counts"]
        and "| placeholders | 750 |" in r["counts"]
    )


def test_odd_images_through_the_demo():
    for img in (
        Image.new("CMYK", (300, 200)),
        Image.new("I;16", (64, 2000)),
        Image.new("RGB", (1, 1)),
    ):
        r = h.image_tab("tiny-gemma4", _png(img, "TIFF" if img.mode == "CMYK" else "PNG"))
        assert r["error"] is None, r["error"]


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
