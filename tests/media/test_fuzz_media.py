"""Bad files, fuzzed: mutations of the bundled samples through every media entry point.

Each mutated file (truncated, bit-flipped, zeroed spans, the wrong extension, empty, a
lying header, or an odd but valid variant: a 1×N strip, CMYK, 16-bit, palette, 8
channels, 192 kHz) goes through the loaders, the header readers, the plans and the
command line's ``plan``. Each either plans, or raises :class:`MediaError` with one line
that names the file's problem and no temporary path. Nothing else is allowed: no other
exception type, nothing written to stderr (FFmpeg's own lines included), no step over
10 s, no peak memory over 2.5 GB.

The CI profile (``CI=true``) is derandomized, so CI tries the same 300+ files every run;
locally the dev profile draws fresh ones.
"""

from __future__ import annotations

import contextlib
import io
import os
import resource
import struct
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from gemma_explore.errors import MediaError
from gemma_explore.media.headers import audio_header, image_header, video_header
from gemma_explore.media.loaders import image_size, load_audio, load_image, load_video
from gemma_explore.plans.audio import plan_audio
from gemma_explore.plans.image import plan_image
from gemma_explore.plans.video import plan_video
from gemma_explore.samples import SAMPLES_DIR
from tests.conftest import examples

STEP_LIMIT_S = 10.0
PEAK_LIMIT = int(2.5 * 1024**3)
SAMPLES = {
    "image": (SAMPLES_DIR / "photo.jpg").read_bytes(),
    "audio": (SAMPLES_DIR / "speech.wav").read_bytes(),
    "video": (SAMPLES_DIR / "video.mp4").read_bytes(),
}
SUFFIX = {"image": ".jpg", "audio": ".wav", "video": ".mp4"}


def _png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _variants() -> dict[str, tuple[str, bytes]]:
    """Valid but unusual files made from the samples: name → (suffix, bytes)."""
    import soundfile as sf

    photo = Image.open(SAMPLES_DIR / "photo.jpg").convert("RGB")
    out: dict[str, tuple[str, bytes]] = {"photo.png": (".png", _png(photo))}
    out["strip_1xN.png"] = (".png", _png(photo.resize((1, 900))))
    out["strip_Nx1.png"] = (".png", _png(photo.resize((900, 1))))
    cmyk = io.BytesIO()
    photo.convert("CMYK").save(cmyk, format="JPEG")
    out["cmyk.jpg"] = (".jpg", cmyk.getvalue())
    grey16 = np.asarray(photo.convert("L"), dtype=np.uint16) * 257
    out["grey16.png"] = (".png", _png(Image.fromarray(grey16)))
    out["palette.png"] = (".png", _png(photo.convert("P", palette=Image.Palette.ADAPTIVE)))
    wave, rate = sf.read(SAMPLES_DIR / "speech.wav", dtype="float32")
    for name, data, sr in [
        ("eight_channels.wav", np.tile(wave[:, None], (1, 8)), rate),
        ("hi_rate_192k.wav", np.repeat(wave, 12), 192_000),
    ]:
        buf = io.BytesIO()
        sf.write(buf, data, sr, format="WAV")
        out[name] = (".wav", buf.getvalue())
    return out


VARIANTS = _variants()


def _lying_wav(data: bytes) -> bytes:
    """The speech sample with RIFF and data sizes claiming 2 GB."""
    b = bytearray(data)
    pos = b.find(b"data")
    b[4:8] = struct.pack("<I", 2_000_000_000)
    b[pos + 4 : pos + 8] = struct.pack("<I", 2_000_000_000)
    return bytes(b)


def _lying_png(data: bytes) -> bytes:
    """A PNG whose IHDR claims 30 000 × 30 000 pixels (CRC left as it was)."""
    b = bytearray(data)
    b[16:24] = struct.pack(">II", 30_000, 30_000)
    return bytes(b)


@st.composite
def mutated_files(draw) -> tuple[str, str, bytes]:
    """(description, suffix, bytes) of one mutated file."""
    source = draw(st.sampled_from(sorted([*SAMPLES, *VARIANTS])))
    if source in SAMPLES:
        suffix, data = SUFFIX[source], SAMPLES[source]
    else:
        suffix, data = VARIANTS[source]
    how = draw(
        st.sampled_from(
            ["as is", "truncate", "flip bits", "zero span", "wrong extension", "empty", "lie"]
        )
    )
    if how == "truncate":
        data = data[: draw(st.integers(1, len(data) - 1))]
    elif how == "flip bits":
        b = bytearray(data)
        for _ in range(draw(st.integers(1, 16))):
            i = draw(st.integers(0, len(b) - 1))
            b[i] ^= 1 << draw(st.integers(0, 7))
        data = bytes(b)
    elif how == "zero span":
        start = draw(st.integers(0, len(data) - 1))
        end = draw(st.integers(start + 1, min(len(data), start + 4096)))
        data = data[:start] + bytes(end - start) + data[end:]
    elif how == "wrong extension":
        suffix = draw(st.sampled_from(sorted({".jpg", ".png", ".wav", ".mp4"} - {suffix})))
    elif how == "empty":
        data = b""
    elif how == "lie":
        if data[:4] == b"RIFF":
            data = _lying_wav(data)
        elif data[:8] == b"\x89PNG\r\n\x1a\n":
            data = _lying_png(data)
        else:  # a container claiming an absurd size: its first box says 4 GB
            data = b"\xff\xff\xff\xff" + data[4:]
    return f"{source}, {how}", suffix, data


@contextlib.contextmanager
def _stderr_captured():
    """Everything written to fd 2 (C libraries included) while inside."""
    import sys

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        captured: list[str] = []
        try:
            yield captured
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            captured.append(sink.read().decode("utf-8", "replace"))


def _entry_points(kind: str):
    """Every public way in for this kind of file: (name, function of a path)."""
    if kind == "image":
        return [
            ("load_image", load_image),
            ("image_size", image_size),
            ("image_header", image_header),
            ("plan_image", lambda p: plan_image(p, family="gemma4")),
            ("plan_image gemma3n", lambda p: plan_image(load_image(p), family="gemma3n")),
        ]
    if kind == "audio":
        return [
            ("load_audio", load_audio),
            ("audio_header", audio_header),
            ("plan_audio", lambda p: plan_audio(p, family="gemma4")),
            ("plan_audio unified", lambda p: plan_audio(p, family="gemma4_unified")),
        ]
    return [
        ("load_video", load_video),
        ("video_header", video_header),
        ("plan_video", lambda p: plan_video(p, family="gemma4")),
    ]


def _check_message(what: str, message: str, folder: str) -> None:
    assert message.strip(), f"{what}: an empty message"
    assert "\n" not in message.strip(), f"{what}: more than one line: {message!r}"
    assert folder not in message and tempfile.gettempdir() + "/" not in message, (
        f"{what}: the message names a temporary path: {message!r}"
    )
    assert "Error" not in message.split(":")[0] and "Traceback" not in message, (
        f"{what}: Python's words, not ours: {message!r}"
    )


def _cli_plan(path: Path) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    from gemma_explore.cli import app

    result = CliRunner().invoke(app, ["plan", str(path)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def baseline_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_mutated_samples_plan_or_say_why(baseline_rss, tmp_path_factory):
    from gemma_explore.media.headers import kind_of

    folder = tmp_path_factory.mktemp("fuzz")
    wanted = examples(1.0, at_least=300 if os.environ.get("CI") else 10)
    tried: list[str] = []

    @settings(max_examples=wanted)
    @given(mutated_files())
    def check(case: tuple[str, str, bytes]) -> None:
        description, suffix, data = case
        tried.append(description)
        path = folder / f"upload{suffix}"
        path.write_bytes(data)
        for name, entry in _entry_points(kind_of(path)):
            what = f"{name} on {description} ({suffix}, {len(data)} bytes)"
            start = time.perf_counter()
            with _stderr_captured() as err:
                try:
                    entry(path)
                except MediaError as exc:
                    _check_message(what, str(exc), str(folder))
            elapsed = time.perf_counter() - start
            assert err[0] == "", f"{what}: wrote to stderr: {err[0][:300]!r}"
            if elapsed > STEP_LIMIT_S:  # timings are not asserted in tests: say, don't fail
                warnings.warn(f"{what}: took {elapsed:.1f} s (over {STEP_LIMIT_S} s)", stacklevel=1)
        with _stderr_captured() as err:
            code, _out, stderr = _cli_plan(path)
        assert err[0] == "", f"plan on {description}: wrote to stderr: {err[0][:300]!r}"
        assert code in (0, 2), f"plan on {description}: exit {code}"
        if code == 2:
            lines = stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("gemma-explore: error: ")
            # The line leads with the path the user typed ("PATH: …" or "PATH is …"): the
            # message after it is what must name no temporary folder.
            said = lines[0].removeprefix("gemma-explore: error: ").removeprefix(str(path))
            _check_message(f"plan on {description}", said.removeprefix(": "), str(folder))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        assert peak - baseline_rss < PEAK_LIMIT, f"{description}: peak {peak / 1e9:.1f} GB"

    check()
    print(f"{len(tried)} mutated files tried")
    assert len(set(tried)) > 20  # every kind of mutation met several sources


def test_a_truncated_jpeg_is_refused_by_plan_as_by_the_demo(tmp_path):
    """One policy: the command line's ``plan`` decodes, as the demo does."""
    from tests.app.handlers import image_tab

    path = tmp_path / "cut.jpg"
    path.write_bytes(SAMPLES["image"][: len(SAMPLES["image"]) // 3])
    code, _out, stderr = _cli_plan(path)
    demo = image_tab("tiny-gemma4", str(path)).error
    assert code == 2 and "truncated or corrupt" in stderr
    assert demo is not None and "truncated or corrupt" in demo


def test_a_truncated_wav_says_how_much_is_missing(tmp_path):
    import soundfile as sf

    path = tmp_path / "cut.wav"
    path.write_bytes(SAMPLES["audio"][:8000])
    full = sf.info(SAMPLES_DIR / "speech.wav").duration
    for read in (load_audio, audio_header):
        with pytest.raises(MediaError, match=f"promises {full:.2f} s") as err:
            read(path)
        assert "cut short" in str(err.value)
