"""How soon the Chat tab's Stop ends a streaming answer, in tokens rather than seconds.

The browser test checks the behaviour (the turn says "stopped by you" and stops growing);
the timing lives here. Baseline, measured in the same run: the median gap between two
streamed tokens of a turn nobody stops. Measured: from setting the Stop event to the
turn's last update. Printed as a ratio: about 1 means Stop ends the answer at the next
token, as the transformers StoppingCriteria promises.

    .venv/bin/python benchmarks/bench_stop.py
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_TOKENS = 2.0  # Stop may finish the token being generated, then ends
MODEL = "tiny-gemma4"


def _token_gaps(chat_stream, message: dict) -> list[float]:
    """Seconds between consecutive streamed updates of a turn nobody stops."""
    stamps = [time.perf_counter() for _ in chat_stream(MODEL, message, [], 48)]
    tokens = stamps[1:-1]  # the first update is the counts, the last the closing line
    return [b - a for a, b in zip(tokens, tokens[1:], strict=False)]


def _stop_latency(chat_stream, message: dict, after: int = 5) -> float:
    """Seconds from setting Stop (after ``after`` tokens) to the turn's last update."""
    stop = threading.Event()
    outcome: dict = {}
    set_at, last = None, None
    for seen, _update in enumerate(
        chat_stream(MODEL, message, [], 256, stop=stop, outcome=outcome)
    ):
        last = time.perf_counter()
        if seen == after:
            stop.set()
            set_at = time.perf_counter()
    assert outcome["stopped"] and set_at is not None, "the turn ended before Stop was pressed"
    return last - set_at


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from gemma_explore.app.chat import chat_stream
    from gemma_explore.samples import SAMPLES_DIR

    message = {"text": "Describe it.", "files": [str(SAMPLES_DIR / "photo.jpg")]}
    list(chat_stream(MODEL, message, [], 4))  # warm: load the model, first forward passes
    per_token = statistics.median(_token_gaps(chat_stream, message))
    latency = statistics.median(_stop_latency(chat_stream, message) for _ in range(5))
    ratio = latency / per_token
    print(f"per streamed token (baseline): {per_token * 1000:.1f} ms")
    print(f"Stop → last update:            {latency * 1000:.1f} ms")
    verdict = "ok" if ratio <= TARGET_TOKENS else "SLOW"
    print(f"ratio: {ratio:.2f} tokens (target ≤ {TARGET_TOKENS:g}) {verdict}")


if __name__ == "__main__":
    main()
