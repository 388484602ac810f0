"""Small bundled inputs for lessons and the demo (how each was made: scripts/make_samples.py).

- ``photo.jpg`` — a real photograph (Grace Hopper, public domain; from matplotlib's sample data)
- ``speech.wav`` — 5.3 s of speech from espeak-ng, 16 kHz mono
- ``video.mp4`` — 4 s at 12 fps, 320×180, a bouncing ball

>>> from gemma_explore.samples import sample_photo
>>> sample_photo().size
(512, 600)
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SAMPLES_DIR", "sample_photo", "sample_speech", "sample_video"]

SAMPLES_DIR = Path(__file__).parent
SPEECH_TEXT = "Gemma turns sound into tokens. One token every forty milliseconds."


def sample_photo():
    """The bundled photograph as an RGB PIL image."""
    from gemma_explore.media.loaders import load_image

    return load_image(SAMPLES_DIR / "photo.jpg")


def sample_speech():
    """``(waveform, 16000)``: the bundled speech clip."""
    from gemma_explore.media.loaders import load_audio

    wave, _ = load_audio(SAMPLES_DIR / "speech.wav")
    return wave, 16_000


def sample_video():
    """The bundled video as a :class:`gemma_explore.media.loaders.Video` (frames and fps)."""
    from gemma_explore.media.loaders import load_video

    return load_video(SAMPLES_DIR / "video.mp4")
