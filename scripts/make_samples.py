"""Rebuild the bundled sample inputs in gemma_explore/samples/ (run once; outputs are committed).

- photo.jpg  — matplotlib's sample photograph of Grace Hopper (public domain, US Navy),
               copied from matplotlib's mpl-data/sample_data.
- speech.wav — "Gemma turns sound into tokens. One token every forty milliseconds."
               spoken by espeak-ng (Debian package), 16 kHz mono 16-bit:
               espeak-ng -v en-us -s 150 -w speech_22k.wav "<text>", then resampled
               to 16 kHz here with librosa.
- video.mp4  — 4 s, 12 fps, 320×180: a ball bouncing across a gradient, drawn with
               numpy and written with OpenCV's mp4v codec.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "gemma_explore" / "samples"
TEXT = "Gemma turns sound into tokens. One token every forty milliseconds."


def photo() -> None:
    import matplotlib.cbook as cbook

    shutil.copy(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False), OUT / "photo.jpg")


def speech() -> None:
    import librosa
    import soundfile as sf

    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "speech_22k.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-s", "150", "-w", str(raw), TEXT], check=True)
        wave, rate = librosa.load(raw, sr=16_000, mono=True)
    sf.write(OUT / "speech.wav", wave, 16_000, subtype="PCM_16")


def video() -> None:
    import cv2

    w, h, fps, seconds = 320, 180, 12, 4
    writer = cv2.VideoWriter(str(OUT / "video.mp4"), cv2.VideoWriter_fourcc(*"mp4v"), fps, (w, h))
    yy, xx = np.mgrid[0:h, 0:w]
    for i in range(fps * seconds):
        t = i / fps
        frame = np.stack(
            [
                (xx / w * 200).astype(np.uint8),
                (yy / h * 120).astype(np.uint8),
                np.full((h, w), 60, np.uint8),
            ],
            axis=-1,
        )
        cx = int(30 + (w - 60) * (t / seconds))
        cy = int(h - 30 - abs(np.sin(t * np.pi * 1.5)) * (h - 60))
        frame[(xx - cx) ** 2 + (yy - cy) ** 2 < 22**2] = (255, 220, 0)
        writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    writer.release()


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    photo()
    speech()
    video()
    for p in sorted(OUT.iterdir()):
        print(p.name, p.stat().st_size, "bytes")
