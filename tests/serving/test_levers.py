"""Each lever's gain, held to vLLM's own KV arithmetic (``get_kv_cache_configs`` on the
specs vLLM's Gemma model files build): the issue's 31B on an H100 at 8k, text only."""

from __future__ import annotations

import dataclasses

import pytest

from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.serving.kv import kv_memory_estimate
from gemma_explore.serving.levers import levers
from gemma_explore.serving.plan import plan_serving

from .test_kv import released_text_config, vllm_capacity, vllm_config, vllm_specs  # noqa: F401

pytestmark = pytest.mark.skipif(not vllm_available(), reason="needs vLLM")
MODEL = "google/gemma-4-31B-it"


def test_lever_gains_equal_vllms_kv_arithmetic(vllm_config):  # noqa: F811
    import torch

    plan = plan_serving(
        MODEL, gpu="H100 80GB", max_model_len=8192, limit_mm_per_prompt={"image": 0, "video": 0}
    )
    found = levers(plan)
    by_flag = {lever.flag.split()[0]: lever for lever in found}
    assert {"--max-num-batched-tokens", "--kv-cache-dtype", "--tensor-parallel-size"} <= set(
        by_flag
    )
    one_gpu = [x.after for x in found if x.tensor_parallel_size == 1]
    assert one_gpu == sorted(one_gpu, reverse=True) and found[-1].tensor_parallel_size == 2
    text = released_text_config(MODEL)

    def theirs(lever, *, tp=1, mnbt=plan.max_num_batched_tokens, fp8=False):
        specs = vllm_specs(text, tp=tp, block_size=16)
        if fp8:  # --kv-cache-dtype fp8: vLLM's specs hold uint8 pages
            specs = {k: dataclasses.replace(s, dtype=torch.uint8) for k, s in specs.items()}
        memory = kv_memory_estimate(
            lever.plan, gpu_memory_bytes=plan.gpu_memory_bytes, tensor_parallel_size=tp
        ).kv_cache_memory_bytes
        return vllm_capacity(
            vllm_config,
            specs,
            memory=memory,
            tp=tp,
            max_model_len=8192,
            mnbt=mnbt,
            hybrid=True,
            async_sched=True,
            layout="LBNHC",
        )[1]

    batch = by_flag["--max-num-batched-tokens"]
    assert batch.settings["max_num_batched_tokens"] == 2048
    assert batch.before == theirs(batch, mnbt=8192)  # serve's H100 default
    assert batch.after == theirs(batch, mnbt=2048) > batch.before
    assert by_flag["--kv-cache-dtype"].after == theirs(by_flag["--kv-cache-dtype"], fp8=True)
    assert by_flag["--tensor-parallel-size"].after == theirs(
        by_flag["--tensor-parallel-size"], tp=2
    )


def test_no_lever_that_vllm_would_refuse():
    """Gemma 4's images cannot be chunked on CUDA: a batch below the largest image (its
    budget 1120) is no lever."""
    plan = plan_serving(MODEL, gpu="L4", max_model_len=8192, max_soft_tokens=1120)
    assert plan.disable_chunked_mm_input
    for lever in levers(plan, kv_cache_memory_bytes=4 << 30):
        assert lever.settings.get("max_num_batched_tokens", 10**9) >= 1120
