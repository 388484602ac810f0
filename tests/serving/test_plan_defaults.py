"""A plan that names its GPU and entry point takes vLLM's own start-up defaults: the seven
released checkpoints on an H100, an A100 40GB and an L4, with ``vllm serve`` and
``LLM(...)``, held to vLLM's ``EngineArgs`` with the device's name and memory faked."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.facts.released import RELEASED_IDS
from gemma_explore.serving.kv import GPUS, capacity, kv_memory_estimate
from gemma_explore.serving.plan import plan_serving
from tests.serving.fake_gpu import FakeGpu

from .test_kv import config_only_folder, vllm_config  # noqa: F401 (fixture)

pytestmark = pytest.mark.skipif(not vllm_available(), reason="needs vLLM")

GPU_NAMES = ("H100 80GB", "A100 40GB", "L4")


def _folder(root: Path, model_id: str) -> Path:
    """A config-only checkpoint folder vLLM's ModelConfig reads: the released text shapes,
    the family's tiny towers (no audio where the checkpoint has none), the tiny processor."""
    if "gemma-4" in model_id and "12B" not in model_id:
        return config_only_folder(root, model_id)
    from gemma_explore.facts.released import released_config
    from gemma_explore.models.tiny import build_tiny_processor, tiny_config

    real = released_config(model_id)
    config = tiny_config(real.model_type)
    config.text_config = real.text_config
    if getattr(real, "audio_config", None) is None:
        config.audio_config = None
    config.architectures = real.architectures
    config.save_pretrained(root)
    build_tiny_processor(real.model_type).save_pretrained(root)
    return root


@pytest.mark.vllm_version  # also run against the newest release's EngineArgs
@pytest.mark.parametrize("model_id", RELEASED_IDS)
def test_plan_defaults_equal_vllms_engine_args(monkeypatch, tmp_path, model_id):
    from vllm.config import ModelConfig, ParallelConfig
    from vllm.engine import arg_utils
    from vllm.engine.arg_utils import EngineArgs
    from vllm.usage.usage_lib import UsageContext

    folder = _folder(tmp_path, model_id)
    mc = ModelConfig(model=str(folder), tokenizer=str(folder))  # no max_model_len: derived
    usage = {"serve": UsageContext.OPENAI_API_SERVER, "LLM": UsageContext.LLM_CLASS}
    for gpu in GPU_NAMES:
        g = GPUS[gpu]
        monkeypatch.setattr(
            arg_utils, "current_platform", FakeGpu(g.memory_bytes, g.device_name, g.capability)
        )
        for entry, context in usage.items():
            args = EngineArgs(model=str(folder))
            args._set_default_chunked_prefill_and_prefix_caching_args(mc)
            args._set_default_max_num_seqs_and_batched_tokens_args(context, mc, ParallelConfig())
            plan = plan_serving(str(folder), gpu=gpu, entry_point=entry)
            assert (plan.max_model_len, plan.max_num_batched_tokens, plan.max_num_seqs) == (
                mc.max_model_len,
                args.max_num_batched_tokens,
                args.max_num_seqs,
            ), (model_id, gpu, entry)
            # CUDA forces whole items for prefix-LM models (platforms/cuda.py).
            assert plan.disable_chunked_mm_input == mc.is_mm_prefix_lm, (model_id, gpu)
            assert plan.entry_point == entry and plan.gpu == g.device_name


def test_values_given_win_and_each_default_is_a_step():
    plan = plan_serving("google/gemma-4-E4B-it", gpu="L4", max_model_len=16384, max_num_seqs=64)
    assert (plan.max_model_len, plan.max_num_seqs, plan.max_num_batched_tokens) == (
        16384,
        64,
        2048,
    )
    text = "\n".join(plan.steps)
    assert "vllm serve defaults to 2048" in text and "max_num_seqs=64: yours" in text
    # No max_model_len: vLLM's derived maximum, said in a step.
    full = plan_serving("google/gemma-4-31B-it", gpu="H100 80GB")
    assert full.max_model_len == 262144 and "model's maximum" in "\n".join(full.steps)
    with pytest.raises(ValueError, match="Unknown gpu 'T4'"):
        plan_serving("google/gemma-4-E4B-it", gpu="T4")


def test_the_l4_plan_is_what_vllm_sizes_on_an_l4(vllm_config):  # noqa: F811
    """The issue's case: E2B, 16k, 10 GiB on an L4. vllm serve's 2048-token batch (not the
    8192 of a plan with no GPU) decides the sliding layers' blocks; both held to vLLM."""
    from .test_kv import released_text_config, vllm_capacity, vllm_specs

    memory = 10 << 30
    for gpu, mnbt in (("L4", 2048), ("H100 80GB", 8192)):
        plan = plan_serving("google/gemma-4-E2B-it", gpu=gpu, max_model_len=16384)
        assert plan.max_num_batched_tokens == mnbt
        ours = capacity(plan, kv_cache_memory_bytes=memory)
        theirs = vllm_capacity(
            vllm_config,
            vllm_specs(released_text_config("google/gemma-4-E2B-it"), tp=1, block_size=16),
            memory=memory,
            tp=1,
            max_model_len=16384,
            mnbt=mnbt,
            hybrid=True,
            async_sched=plan.async_scheduling,
            layout="LBNHC",
        )
        assert (ours.num_tokens, ours.max_concurrency) == theirs[:2], gpu
    assert kv_memory_estimate(plan, gpu_memory_bytes=plan.gpu_memory_bytes).kv_cache_memory_bytes


@pytest.mark.vllm_version
def test_the_memory_share_is_vllms_default():
    """The installed vLLM's default share of the GPU is the profile's (None where the
    extensible KV cache resolves it at start-up), and the estimate starts from it as
    vLLM's request_memory does: ceil(total × share)."""
    import math

    from vllm.engine.arg_utils import EngineArgs

    plan = plan_serving("tiny-gemma4", gpu="L4")
    share = plan.vllm.gpu_memory_utilization
    assert EngineArgs.gpu_memory_utilization == share  # the field's default
    est = kv_memory_estimate(plan, gpu_memory_bytes=GPUS["L4"].memory_bytes)
    assert est.requested_bytes == math.ceil(GPUS["L4"].memory_bytes * (share or 1.0))
