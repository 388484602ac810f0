"""plan_serving speed against constructing vLLM's MultiModalBudget for the same arguments.

Target (issue 13): after the config is read, plan_serving is pure arithmetic, ≥ 100×
faster than ``MultiModalBudget(...)`` (warm: vLLM imported, configs and processor
cached). Both are measured in this run, on the same saved tiny checkpoints.

    .venv/bin/python benchmarks/bench_serving.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from timing import median_seconds  # noqa: E402

import gemma_explore as ge  # noqa: E402
from gemma_explore.models.tiny import tiny_name
from gemma_explore.serving.plan import plan_serving, serving_model  # noqa: E402

ARGS = dict(
    max_model_len=4096, limit_mm_per_prompt={"image": 2, "audio": 1}, max_num_batched_tokens=2048
)


def _budget(folder: str):
    from vllm.config import DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig
    from vllm.multimodal import MULTIMODAL_REGISTRY
    from vllm.multimodal.encoder_budget import MultiModalBudget

    mc = ModelConfig(
        model=folder,
        tokenizer=folder,
        dtype="float32",
        max_model_len=4096,
        limit_mm_per_prompt=ARGS["limit_mm_per_prompt"],
    )
    sc = SchedulerConfig(
        max_model_len=4096,
        is_encoder_decoder=False,
        max_num_batched_tokens=2048,
        max_num_seqs=128,
        enable_chunked_prefill=True,
    )
    vc = VllmConfig(model_config=mc, scheduler_config=sc, device_config=DeviceConfig(device="cpu"))
    return MultiModalBudget(vc, MULTIMODAL_REGISTRY)


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        for family in ("gemma4", "gemma3n", "gemma4_unified"):
            folder = str(ge.load(tiny_name(family)).save_pretrained(Path(root) / family))
            model = serving_model(folder)  # reading the config: done once, like vLLM's
            _budget(folder)  # warm vLLM: imports, config parsing, processor
            ours = median_seconds(lambda m=model: plan_serving(m, max_num_seqs=128, **ARGS), 200)
            theirs = median_seconds(lambda f=folder: _budget(f), 7)
            plan, b = plan_serving(model, max_num_seqs=128, **ARGS), _budget(folder)
            assert plan.max_items_per_batch == dict(b.mm_max_items_per_batch)
            ratio = theirs / ours
            print(
                f"{family:8s} plan_serving {ours * 1e6:8.1f} µs | MultiModalBudget "
                f"{theirs * 1e3:8.2f} ms | {ratio:8.0f}× {'✓' if ratio >= 100 else '✗ (< 100×)'}"
            )


if __name__ == "__main__":
    main()
