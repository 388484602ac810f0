"""The token bill, measured in one run: headers against the processor, throughput, memory.

1. Tokens per file from headers (``bill_file``: PIL's lazy open + the plans' arithmetic)
   against running the real transformers Gemma 4 image processor on the same files
   (decode, resize, patchify): the same counts, and how much faster (target ≥ 200×).
2. Image files per second for ``bill`` over a folder with 2 worker processes
   (target ≥ 2 000 files/s on 2 cores).
3. Peak RSS of a fresh process billing 5 000 and then 20 000 small generated images
   (the main process and its largest worker): flat, because rows are tallied as they
   arrive and never kept.

    .venv/bin/python benchmarks/bench_bill.py [--small 5000 --large 20000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Peak RSS of the main process from VmHWM (ru_maxrss would carry over the high-water mark
# of the benchmark process that forked it, across exec); workers from RUSAGE_CHILDREN.
PROBE = """
import json, resource, sys, time
from gemma_explore.bill.walk import bill
def cpu(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime
start, cpu0 = time.perf_counter(), cpu(resource.RUSAGE_SELF)
result = bill(sys.argv[1], family="gemma4", budgets=[70, 280, 1120], workers=2)
elapsed = time.perf_counter() - start
busy = cpu(resource.RUSAGE_SELF) - cpu0 + cpu(resource.RUSAGE_CHILDREN)
status = open("/proc/self/status").read().split("VmHWM:")[1].split()[0]
me = int(status) / 1024
workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"files": result.files, "billed": result.billed_files, "s": elapsed,
                  "cpu_s": busy, "main_mb": me, "worker_mb": workers, "totals": result.totals}))
"""


def make_images(folder: Path, count: int, *, seed: int = 0) -> Path:
    """``count`` small PNGs of varied sizes and aspect ratios (8–96 px a side)."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    sides = rng.integers(8, 97, size=(count, 2))
    for i, (h, w) in enumerate(sides):
        Image.new("RGB", (int(w), int(h)), (i % 256, 80, 160)).save(folder / f"img{i:05d}.png")
    return folder


def make_photos(folder: Path, count: int) -> list[Path]:
    """Realistic JPEGs (phone-photo sizes) for the header-versus-processor comparison."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    sizes = [(480, 640), (1080, 1920), (1536, 2048), (3000, 4000), (900, 1600), (768, 1024)]
    paths = []
    for i in range(count):
        h, w = sizes[i % len(sizes)]
        small = rng.integers(0, 255, (h // 16, w // 16, 3), dtype=np.uint8)
        img = Image.fromarray(small).resize((w, h), Image.BILINEAR)
        path = folder / f"photo{i:03d}.jpg"
        img.save(path, quality=85)
        paths.append(path)
    return paths


def headers_vs_processor(paths: list[Path]) -> dict:
    from gemma_explore.bill.walk import bill_file
    from gemma_explore.media.loaders import load_image
    from gemma_explore.models.checkpoints import load_processor

    image_processor = load_processor("tiny-gemma4").image_processor
    start = time.perf_counter()
    ours = [bill_file(p, family="gemma4", budgets=(280,)).tokens[0] - 2 for p in paths]
    header_s = (time.perf_counter() - start) / len(paths)
    start = time.perf_counter()
    theirs = []
    for p in paths:
        out = image_processor(images=[load_image(p)], max_soft_tokens=280, return_tensors="pt")
        theirs.append(int(out["num_soft_tokens_per_image"][0]))
    processor_s = (time.perf_counter() - start) / len(paths)
    assert ours == theirs, "header counts differ from the processor's"
    return {
        "files": len(paths),
        "header_ms": header_s * 1000,
        "processor_ms": processor_s * 1000,
        "ratio": processor_s / header_s,
    }


def run_probe(folder: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(folder)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=5_000)
    parser.add_argument("--large", type=int, default=20_000)
    parser.add_argument("--photos", type=int, default=48)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_bill_") as tmp:
        tmp = Path(tmp)
        speed = headers_vs_processor(make_photos(tmp / "photos", args.photos))
        print(
            f"tokens per file: headers {speed['header_ms']:.3f} ms, transformers processor "
            f"{speed['processor_ms']:.1f} ms over {speed['files']} photos (480×640 … 3000×4000): "
            f"{speed['ratio']:.0f}× faster (target ≥ 200×); counts identical"
        )
        start = time.perf_counter()
        make_images(tmp / "small", args.small)
        large = make_images(tmp / "large", args.large, seed=1)
        print(f"(generated {args.small + args.large} PNGs in {time.perf_counter() - start:.1f} s)")
        small_run = run_probe(tmp / "small")
        large_run = run_probe(large)
        for r in (small_run, large_run):
            rate = r["files"] / r["s"]
            per_cpu = r["files"] / r["cpu_s"]  # what two idle cores would do: ×2
            print(
                f"bill {r['files']:>6} images, 2 workers: {r['s']:.2f} s wall = {rate:,.0f} files/s "
                f"(target ≥ 2,000); {per_cpu:,.0f} files per CPU-second, so {2 * per_cpu:,.0f}/s "
                f"on 2 idle cores; peak RSS main {r['main_mb']:.0f} MB, largest worker "
                f"{r['worker_mb']:.0f} MB"
            )
        growth = large_run["main_mb"] / small_run["main_mb"]
        worker_growth = large_run["worker_mb"] / small_run["worker_mb"]
        print(
            f"peak RSS at {large_run['files']} vs {small_run['files']} files: main ×{growth:.2f}, "
            f"worker ×{worker_growth:.2f} (flat ≈ 1)"
        )


if __name__ == "__main__":
    main()
