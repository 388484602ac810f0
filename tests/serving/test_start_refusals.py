"""Settings vLLM 0.32 refuses (or fills in) at start-up, held to vLLM's own config
classes and default rules on CPU: a batch or max_num_seqs below 1, a block size its
attention backends do not take, a --kv-cache-dtype outside CacheDType, and the defaults
EngineArgs applies on every platform (an unset max_num_seqs never exceeds the batch; with
chunked prefill off an unset batch grows to max_model_len)."""

from __future__ import annotations

import typing

import pytest

from gemma_explore.serving.plan import KV_CACHE_DTYPES, plan_serving

vllm = pytest.importorskip("vllm")


@pytest.mark.parametrize("name", ["max_num_batched_tokens", "max_num_seqs"])
def test_a_batch_or_seqs_below_one_is_refused_as_scheduler_config_does(name):
    from vllm.config import SchedulerConfig

    with pytest.raises(Exception, match="greater than or equal to 1"):
        SchedulerConfig(**{name: 0, "max_model_len": 4096, "is_encoder_decoder": False})
    with pytest.raises(ValueError, match=f"{name}=0: vLLM's SchedulerConfig refuses it"):
        plan_serving("tiny-gemma4", max_model_len=4096, **{name: 0})


@pytest.mark.parametrize("block_size", [8, 24, 0])
def test_a_block_size_the_backends_do_not_take_is_refused(block_size):
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend

    if block_size > 0:
        assert not FlashAttentionBackend.supports_block_size(block_size)
    assert FlashAttentionBackend.supports_block_size(32)
    with pytest.raises(ValueError, match=f"block_size={block_size}: vLLM's attention backends"):
        plan_serving("tiny-gemma4", max_model_len=4096, block_size=block_size)
    assert plan_serving("tiny-gemma4", max_model_len=4096, block_size=32).block_size == 32


def test_the_kv_dtypes_taken_are_vllms():
    from vllm.config.cache import CacheDType

    assert set(KV_CACHE_DTYPES) <= set(typing.get_args(CacheDType))
    assert "float32" not in typing.get_args(CacheDType)
    with pytest.raises(ValueError, match="kv_cache_dtype='float32': vLLM's --kv-cache-dtype"):
        plan_serving("tiny-gemma4", max_model_len=4096, kv_cache_dtype="float32")
    auto = plan_serving("tiny-gemma4", max_model_len=4096, kv_cache_dtype="auto")
    assert auto.kv_dtype_bytes == plan_serving("tiny-gemma4", max_model_len=4096).kv_dtype_bytes


@pytest.fixture(scope="module")
def folder(tiny4, tmp_path_factory) -> str:
    """A saved checkpoint folder, so EngineArgs reads nothing from the hub."""
    return str(tiny4.save_pretrained(tmp_path_factory.mktemp("tiny4")))


def _vllms_defaults(folder: str, max_model_len: int, **given) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) after EngineArgs' own default rules, with no
    usage context (so SchedulerConfig's class defaults, before the two rules)."""
    from types import SimpleNamespace

    from vllm.config import ParallelConfig
    from vllm.engine.arg_utils import EngineArgs

    args = EngineArgs(model=folder, **given)
    args.get_batch_defaults = lambda world_size: ({}, {})  # the platform's tables: none
    mc = SimpleNamespace(max_model_len=max_model_len, is_multimodal_model=False)
    args._set_default_max_num_seqs_and_batched_tokens_args(None, mc, ParallelConfig())
    return args.max_num_batched_tokens, args.max_num_seqs


def test_an_unset_max_num_seqs_follows_a_small_batch_as_vllm_does(folder):
    mnbt, seqs = _vllms_defaults(folder, 4096, max_num_batched_tokens=128)
    assert seqs <= mnbt == 128  # vLLM starts: no "batch below max_num_seqs" refusal
    plan = plan_serving("tiny-gemma4", max_model_len=4096, max_num_batched_tokens=128)
    assert plan.max_num_batched_tokens == 128 and plan.max_num_seqs <= 128


def test_without_chunked_prefill_an_unset_batch_grows_to_max_model_len_as_vllm_does(tmp_path):
    from .test_kv import config_only_folder

    e2b = str(config_only_folder(tmp_path, "google/gemma-4-E2B-it"))
    mnbt, _ = _vllms_defaults(e2b, 32768, enable_chunked_prefill=False)
    assert mnbt == 32768  # grown past the default, so no "batch below max_model_len"
    plan = plan_serving("google/gemma-4-E2B-it", max_model_len=32768, enable_chunked_prefill=False)
    assert plan.max_num_batched_tokens == mnbt
