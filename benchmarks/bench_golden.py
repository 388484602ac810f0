"""The golden set's generation time (issue 35), as a ratio against one processor call
measured in the same run.

The baseline is one call of tiny-gemma4's real processor on a 640×480 px (W×H) image at
the default budget (median of 5). Generation runs every case through transformers'
processor and our plans (and vLLM's processor with ``--vllm``); the ratio says how many
such calls the whole set costs.

    .venv/bin/python benchmarks/bench_golden.py [--vllm]
"""

from __future__ import annotations

import sys
import tempfile
import time

from PIL import Image
from timing import median_seconds  # benchmarks/ is on sys.path when these scripts run

from gemma_explore.conformance.generate import write_golden
from gemma_explore.conformance.golden import rule_pixels
from gemma_explore.engines.load import load


def main() -> None:
    use_vllm = "--vllm" in sys.argv
    bundle = load("tiny-gemma4")
    p = bundle.processor
    photo = Image.fromarray(rule_pixels(640, 480))
    prompt = f"{bundle.spec.bos_token}{p.image_token}"
    call_s = median_seconds(lambda: p(text=[prompt], images=[[photo]], add_special_tokens=False))
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        written = write_golden(out, use_vllm=use_vllm)
        gen_s = time.perf_counter() - start
    n = written.total
    side = (
        "transformers + vLLM's processor" if use_vllm else "transformers (vLLM's side re-derived)"
    )
    print(f"golden set: {n} cases ({', '.join(f'{f} {c}' for f, c in written.counts.items())})")
    print(f"one processor call (tiny-gemma4, 640×480 px (W×H), budget 280): {call_s * 1e3:.1f} ms")
    print(
        f"generation, {side}: {gen_s:.1f} s = {gen_s / call_s:,.0f}× one processor call; "
        f"{gen_s / n * 1e3:.1f} ms per case = {gen_s / n / call_s:.1f}× one call"
    )
    sizes = ", ".join(
        f"{name} {info['bytes'] / 1024:.0f} KiB" for name, info in written.files.items()
    )
    print(f"files: {sizes}")


if __name__ == "__main__":
    main()
