"""Peak memory and time to read a video for a model: a ten-minute 640×360 clip against a
30-second one, each in a fresh process (peak RSS from the OS).

The reader seeks to the 32 frames a model samples, so memory is bounded by those frames,
not by the clip's length. Targets (issue 16): under 400 MB and under 3 s for ten minutes.

    .venv/bin/python benchmarks/bench_video_memory.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import json, resource, sys, time
start = time.perf_counter()
import gemma_explore as ge
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
video = ge.load_video(sys.argv[1])
plan = ge.plan_video(video)
elapsed = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"s": elapsed, "peak_mb": peak / 1024, "import_mb": base / 1024,
                  "kept": int(video.frames.shape[0]), "frames": video.num_frames}))
"""


def _clip(path: Path, seconds: int, fps: int = 30, size=(360, 640)) -> Path:
    import cv2
    import numpy as np

    h, w = size
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, (w, h))
    frame = np.zeros((h, w, 3), np.uint8)
    for i in range(seconds * fps):
        frame[:] = (i % 200, (i // 7) % 200, 90)
        frame[(i * 3) % h, :, :] = 255
        writer.write(frame)
    writer.release()
    return path


def _measure(path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        short = _measure(_clip(Path(tmp) / "short.mp4", 30))
        long = _measure(_clip(Path(tmp) / "long.mp4", 600))
        for label, r in (("30 s clip (baseline)", short), ("10 min clip", long)):
            print(
                f"{label:22s} {r['frames']:6d} frames, kept {r['kept']}: {r['s']:.2f} s, peak RSS "
                f"{r['peak_mb']:.0f} MB ({r['peak_mb'] - r['import_mb']:.0f} MB above the import)"
            )
        print(
            f"10 min vs 30 s: {long['s'] / short['s']:.1f}× the time, "
            f"{long['peak_mb'] / short['peak_mb']:.2f}× the peak RSS; targets 3 s "
            f"({long['s'] / 3:.2f}× target) and 400 MB ({long['peak_mb'] / 400:.2f}× target)"
        )


if __name__ == "__main__":
    main()
