"""Google's fetched Gemma vocabulary against the stand-in, measured in one run.

1. Loading: a fresh process builds the Gemma 4 tokenizer from the fetched file (target
   about 1–2 s and 200–265 MiB; once per process), and the stand-in, for comparison.
2. The bill's text counting: captions per second through ``TextCounter`` (what each bill
   worker calls per caption) with the real vocabulary, as a ratio against the stand-in's
   rate on the same captions, and the tokens each counts (the stand-in over-counts).

Needs ``gemma-explore tokenizer fetch`` first; without it, it says so and stops.

    .venv/bin/python benchmarks/bench_vocabulary.py [--captions 2000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from timing import median_seconds  # benchmarks/ is on sys.path when these scripts run

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Seconds and peak memory of building one tokenizer in a fresh process (after the imports).
PROBE = """
import json, sys, time
import transformers  # imported first: its import is not the tokenizer's cost
from gemma_explore.models import vocabulary
from gemma_explore.models.tokenizer import build_stand_in_tokenizer
def rss():
    return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) / 1024
before, start = rss(), time.perf_counter()
if sys.argv[1] == "fetched":
    tok = vocabulary.fetched_tokenizer("gemma4")
else:
    tok = build_stand_in_tokenizer("gemma4")
print(json.dumps({"s": time.perf_counter() - start, "mib": rss() - before, "size": len(tok)}))
"""

SENTENCES = [
    "A cat sleeps on a sunny windowsill next to a potted plant.",
    "Zwei Radfahrer überqueren die Brücke im Morgennebel.",
    "一只小狗在公园的草地上追逐红色的球。",
    "서울의 야경이 한강 위로 반짝이고 있다.",
    "def area(r):\n    return 3.14159 * r ** 2  # circle",
    "Le marché du samedi vend des fromages, du pain et des fleurs.",
    "Three people hike up a rocky trail at sunset 🌄, carrying 2 backpacks.",
]


def captions(count: int) -> list[str]:
    """``count`` captions of mixed scripts and lengths (1–3 sentences each)."""
    return [
        " ".join(SENTENCES[(i + k) % len(SENTENCES)] for k in range(1 + i % 3))
        for i in range(count)
    ]


def load_probe(which: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, which],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--captions", type=int, default=2_000)
    args = parser.parse_args()
    from gemma_explore.bill.cost import FETCHED, STAND_IN, TextCounter
    from gemma_explore.models.vocabulary import fetched_vocabulary

    if fetched_vocabulary() is None:
        print("Google's vocabulary is not fetched: run `gemma-explore tokenizer fetch` first.")
        return
    real_load, stand_in_load = load_probe("fetched"), load_probe("stand-in")
    print(
        f"load (fresh process): fetched Gemma 4 vocabulary {real_load['s']:.2f} s, "
        f"+{real_load['mib']:.0f} MiB ({real_load['size']:,} tokens; target about 1–2 s, "
        f"200–265 MiB); stand-in {stand_in_load['s']:.2f} s, +{stand_in_load['mib']:.0f} MiB"
    )
    texts = captions(args.captions)
    real = TextCounter("gemma4", FETCHED, "fetched")
    stand_in = TextCounter("gemma4", STAND_IN, "stand-in")
    real(texts[0]), stand_in(texts[0])  # loaded once per process, as in a bill worker
    real_s = median_seconds(lambda: [real(t) for t in texts], repeat=3)
    stand_in_s = median_seconds(lambda: [stand_in(t) for t in texts], repeat=3)
    real_tokens = sum(real(t) for t in texts)
    stand_in_tokens = sum(stand_in(t) for t in texts)
    print(
        f"bill text counting over {len(texts):,} captions: fetched vocabulary "
        f"{len(texts) / real_s:,.0f} captions/s, stand-in {len(texts) / stand_in_s:,.0f}/s: "
        f"ratio {stand_in_s / real_s:.2f} (real rate ÷ stand-in rate, same run); tokens "
        f"{real_tokens:,} real against {stand_in_tokens:,} stand-in "
        f"(the stand-in over-counts ×{stand_in_tokens / real_tokens:.1f})"
    )


if __name__ == "__main__":
    main()
