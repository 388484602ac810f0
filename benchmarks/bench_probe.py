"""The probe's cost: requests and seconds per case, each as a ratio against one
transformers processor call measured in the same run.

The server is tests/conformance/faulty_server.py's honest one (it counts with the tiny
bundle's real processor), so a case's seconds are the probe's own work (planning the
reference, encoding the media, HTTP) plus the server's processor call; the reference
alone (``plan_probe``, pure arithmetic) is printed beside it. A real ``vllm serve`` adds
its prefill of one token per request.

    .venv/bin/python benchmarks/bench_probe.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1]))

from timing import median_seconds  # noqa: E402

import gemma_explore as ge  # noqa: E402
from gemma_explore.conformance.probe import plan_probe, probe  # noqa: E402
from gemma_explore.processing.inputs import prepare_inputs  # noqa: E402
from tests.conformance.faulty_server import faulty_server  # noqa: E402

PHOTO = [
    {
        "role": "user",
        "content": [{"type": "image", "image": (480, 640)}, {"type": "text", "text": "Hi"}],
    }
]


def main() -> None:
    for name in ("tiny-gemma3n", "tiny-gemma4", "tiny-gemma4-unified"):
        bundle = ge.load(name, device="cpu")
        processor_s = median_seconds(lambda b=bundle: prepare_inputs(PHOTO, bundle=b), 5)
        plan_s = median_seconds(lambda b=bundle: plan_probe(b.spec), 5)
        with faulty_server(bundle) as (url, seen):
            result = probe(url, model="served-gemma", family=bundle.spec)
        cases = len(result.cases)
        print(
            f"{name}: {result.requests} requests for {cases} cases "
            f"({result.requests / cases:.2f} per case), {result.seconds:.2f} s in all; one "
            f"processor call (a 640×480 px (W×H) image) {processor_s * 1e3:.1f} ms; the "
            f"reference for every case {plan_s * 1e3:.1f} ms "
            f"({plan_s / cases / processor_s:.2f}× a processor call per case)"
        )
        for c in result.cases:
            ratio = c.seconds / processor_s
            print(f"  {c.name:44s} 1 request {c.seconds * 1e3:8.1f} ms  {ratio:6.1f}×  {c.words}")
        assert len(seen) == result.requests - 1


if __name__ == "__main__":
    main()
