"""``serve-args`` and ``capacity()`` give one answer: the advice quotes the start-up KV line
of the same plan (the GPU's ``vllm serve`` defaults), and that line is vLLM's own."""

from __future__ import annotations

import pytest

from gemma_explore.engines.serve_args import (
    engine_args,
    serve_command,
    serving_advice,
    serving_plan_for,
)
from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.serving.kv import capacity, kv_memory_estimate
from gemma_explore.serving.recipe import Workload
from gemma_explore.vllm_versions import SUPPORTED
from tests.serving.test_kv import (  # noqa: F401 (the fixture)
    released_text_config,
    vllm_capacity,
    vllm_config,
    vllm_specs,
)

pytestmark = pytest.mark.skipif(not vllm_available(), reason="needs vLLM")


@pytest.mark.parametrize(
    "model,gpu,workload",
    [
        ("google/gemma-4-31B-it", "H100 80GB", {}),
        ("google/gemma-4-E2B-it", "L4", {"workload": Workload(images=1), "max_model_len": 8192}),
    ],
)
def test_serve_args_quotes_capacity_and_vllm_agrees(vllm_config, model, gpu, workload):  # noqa: F811
    reasons: dict[str, str] = {}
    args = engine_args(model, reasons=reasons, gpu=gpu, workshop=False, **workload)
    plan = serving_plan_for(args, gpu=gpu)
    assert plan.max_model_len == args["max_model_len"]
    assert plan.max_num_batched_tokens == args.get(
        "max_num_batched_tokens", plan.max_num_batched_tokens
    )
    memory = kv_memory_estimate(plan, gpu_memory_bytes=plan.gpu_memory_bytes).kv_cache_memory_bytes
    ours = capacity(plan, kv_cache_memory_bytes=memory)
    advice = serving_advice(args, plan=plan)
    assert ours.log_line() in advice["--max-num-seqs"]
    assert f"{ours.max_concurrency:.2f} requests" in advice["--max-num-seqs"]
    _, conc, _, _ = vllm_capacity(
        vllm_config,
        vllm_specs(released_text_config(model), tp=1, block_size=16),
        memory=memory,
        tp=1,
        max_model_len=plan.max_model_len,
        mnbt=plan.max_num_batched_tokens,
        hybrid=True,
        async_sched=True,
        layout="LBNHC",
    )
    assert ours.max_concurrency == conc
    if "max_model_len" in workload:  # a value you give wins, and its reason says so
        assert reasons["max_model_len"].startswith(f"{workload['max_model_len']}: yours")


@pytest.mark.parametrize("version", SUPPORTED)
def test_serve_args_plans_by_the_release_asked_for(version):
    """vllm_version reaches the plan, and the advice quotes that release's KV estimate (a
    share of the GPU, or the extensible KV cache's measured pool); no utilization is
    proposed, so the release's own sizing applies."""
    args = engine_args(
        "google/gemma-4-E4B-it",
        workload=Workload(images=1),
        workshop=False,
        gpu="H100 80GB",
        vllm_version=version,
    )
    assert "gpu_memory_utilization" not in args
    plan = serving_plan_for(args, gpu="H100 80GB", vllm_version=version)
    assert plan.vllm_version == version
    est = kv_memory_estimate(plan, gpu_memory_bytes=plan.gpu_memory_bytes)
    assert est.vllm_version == version
    advice = serving_advice(args, plan=plan)
    assert f"~{est.kv_cache_memory_bytes / 2**30:.2f} GiB of KV memory" in advice["--max-num-seqs"]
    assert "#" not in serve_command(args)  # runs as printed, through a shell or shlex
