"""Bills of parquet datasets, measured in one run: rows per second, the processor, Ray, memory.

1. Rows per second for ``bill`` on parquet shards whose image column holds PNG and JPEG
   bytes (a Hugging Face ``Image`` struct), header-only, local runner, 2 workers
   (target ≥ 5 000 rows/s on 2 cores), against running the real transformers Gemma 4
   image processor on a sample of the same rows (decode, resize, patchify; target ≥ 100×).
   The counts of both agree row by row.
2. ``--runner ray`` on a local cluster: its start-up, and its rows per second with 1 and 2
   workers, as ratios to the local runner on the same shards (both after a warm-up run in
   this process; the figure in 1. is a fresh process, pool start and imports included).
3. Peak RSS of a fresh process billing 10 000 and then 100 000 rows (main process and its
   largest worker): flat, because rows stream through the tally and are never kept.

    .venv/bin/python benchmarks/bench_bill_datasets.py [--rows 40000 --large 100000]
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The same fresh-process probe as bench_bill.py (a shard folder bills like a file folder).
from bench_bill import run_probe  # noqa: E402


def encoded_images(count: int, seed: int = 0) -> list[tuple[bytes, str]]:
    """``count`` distinct small PNG and JPEG files (8–160 px a side), encoded once."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    out = []
    for i, (h, w) in enumerate(rng.integers(8, 161, size=(count, 2))):
        fmt = "PNG" if i % 2 else "JPEG"
        buf = io.BytesIO()
        Image.new("RGB", (int(w), int(h)), (i % 256, 90, 200)).save(buf, fmt)
        out.append((buf.getvalue(), f"img{i}.{fmt.lower()}"))
    return out


def write_shards(
    folder: Path,
    rows: int,
    images: list[tuple[bytes, str]],
    *,
    shard_rows: int = 10_000,
    row_group: int = 2048,
) -> Path:
    """Parquet shards in the Hugging Face layout (an ``Image`` struct and a caption), of
    ``shard_rows`` rows each: the same shards at every size, so only their number grows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    struct = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    meta = {
        b"huggingface": json.dumps(
            {"info": {"features": {"image": {"_type": "Image"}, "text": {"_type": "Value"}}}}
        ).encode()
    }
    shards = -(-rows // shard_rows)
    per = shard_rows
    for s in range(shards):
        lo, hi = s * per, min(rows, (s + 1) * per)
        if lo >= hi:
            break
        picked = [images[i % len(images)] for i in range(lo, hi)]
        table = pa.table(
            {
                "image": pa.array([{"bytes": b, "path": p} for b, p in picked], struct),
                "text": pa.array([f"caption {i}" for i in range(lo, hi)], pa.string()),
            }
        ).replace_schema_metadata(meta)
        pq.write_table(
            table, folder / f"train-{s:05d}-of-{shards:05d}.parquet", row_group_size=row_group
        )
    return folder


def processor_rate(images: list[tuple[bytes, str]], n: int) -> tuple[float, list[int], list[int]]:
    """Seconds per row for the transformers processor on ``n`` rows, and both counts."""
    from gemma_explore.bill.core import Item, Sample, bill_sample
    from gemma_explore.media.loaders import load_image
    from gemma_explore.models.checkpoints import load_processor

    image_processor = load_processor("tiny-gemma4").image_processor
    rows = images[:n]
    ours = [
        bill_sample(
            Sample(p, (Item("image", data=b, path=p, kind="image"),)),
            family="gemma4",
            budgets=(280,),
        ).tokens[0]
        - 2
        for b, p in rows
    ]
    start = time.perf_counter()
    theirs = []
    for b, _ in rows:
        out = image_processor(images=[load_image(b)], max_soft_tokens=280, return_tensors="pt")
        theirs.append(int(out["num_soft_tokens_per_image"][0]))
    return (time.perf_counter() - start) / n, ours, theirs


def ray_figures(folder: Path, rows: int) -> dict:
    """Ray's start-up, then rows/s with 1 and 2 workers (each run after a warm-up)."""
    import ray

    from gemma_explore.bill.walk import bill

    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    startup = time.perf_counter() - start
    try:
        bill(folder, budgets=[280], runner="ray", workers=2)  # warm: workers, imports
        out = {"startup_s": startup}
        bill(folder, budgets=[280], workers=2)  # the local runner, timed the same way
        start = time.perf_counter()
        bill(folder, budgets=[280], workers=2)
        out["local_s"] = time.perf_counter() - start
        for workers in (1, 2):
            start = time.perf_counter()
            result = bill(folder, budgets=[280], runner="ray", workers=workers)
            assert result.billed_files == rows
            out[f"ray{workers}_s"] = time.perf_counter() - start
    finally:
        ray.shutdown()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=40_000)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--processor-rows", type=int, default=200)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_bill_datasets_") as tmp:
        tmp = Path(tmp)
        start = time.perf_counter()
        images = encoded_images(2_000)
        shards = write_shards(tmp / "rows", args.rows, images)
        print(
            f"(generated {args.rows:,} rows of PNG/JPEG bytes in "
            f"{time.perf_counter() - start:.1f} s)"
        )
        local = run_probe(shards)
        rate = local["files"] / local["s"]
        per_cpu = local["files"] / local["cpu_s"]
        per_row, ours, theirs = processor_rate(images, args.processor_rows)
        assert ours == theirs, "header counts differ from the processor's"
        print(
            f"parquet bytes, header-only, local runner, 2 workers: {local['rows']:,} rows in "
            f"{local['s']:.2f} s = {rate:,.0f} rows/s (target ≥ 5,000; {per_cpu:,.0f} rows per "
            f"CPU-second, so {2 * per_cpu:,.0f}/s on 2 idle cores)"
        )
        print(
            f"transformers processor on {args.processor_rows} of the same rows: "
            f"{per_row * 1000:.2f} ms/row = {1 / per_row:,.0f} rows/s in one process; the bill "
            f"(2 workers) is {rate * per_row:,.0f}× faster (target ≥ 100×), "
            f"{per_cpu * per_row:,.0f}× per CPU-second; counts identical"
        )
        if not args.no_ray:
            r = ray_figures(shards, args.rows)
            local_s = r["local_s"]
            print(
                f"ray runner (local cluster, 2 CPUs): start-up {r['startup_s']:.1f} s; "
                f"1 worker {args.rows / r['ray1_s']:,.0f} rows/s, 2 workers "
                f"{args.rows / r['ray2_s']:,.0f} rows/s (×{r['ray1_s'] / r['ray2_s']:.2f} from 1→2); "
                f"ray with 2 workers takes ×{r['ray2_s'] / local_s:.2f} the local runner's time "
                f"(both timed after a warm-up run in this process; Ray's start-up apart)"
            )
        small = run_probe(write_shards(tmp / "small", args.small, images))
        large = run_probe(write_shards(tmp / "large", args.large, images))
        for r in (small, large):
            print(
                f"  {r['rows']:>7,} rows: peak RSS main {r['main_mb']:.0f} MB, largest worker "
                f"{r['worker_mb']:.0f} MB, {r['rows'] / r['s']:,.0f} rows/s"
            )
        print(
            f"peak RSS at {large['rows']:,} vs {small['rows']:,} rows: main "
            f"×{large['main_mb'] / small['main_mb']:.2f}, worker "
            f"×{large['worker_mb'] / small['worker_mb']:.2f} (flat ≈ 1)"
        )


if __name__ == "__main__":
    main()
