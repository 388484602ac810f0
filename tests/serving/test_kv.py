"""capacity() equals vLLM 0.32's own get_kv_cache_configs + get_kv_cache_capacity, for the
released checkpoints' shapes and the tiny bundles, with the hybrid KV cache manager on (as
on CUDA) and off, async scheduling on and off, tensor parallelism 1 and 2; its refusal is
vLLM's, word for word. vLLM's KVCacheSpecs are built here from the config, the way vLLM's
model files build them (gemma4.py / gemma3n.py: per-layer KV heads and head dim, the
sliding window, no spec for a KV-shared layer, heads split across TP ranks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.facts.released import RELEASED_IDS
from gemma_explore.serving.kv import capacity, kv_memory_estimate
from gemma_explore.serving.plan import ServingModel, kv_layers, plan_serving

CHECKPOINTS = list(RELEASED_IDS)  # the seven instruction-tuned checkpoints
GiB = 1 << 30
_TEXT_KEYS = (
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "num_global_key_value_heads",
    "head_dim",
    "global_head_dim",
    "sliding_window",
    "num_kv_shared_layers",
    "attention_k_eq_v",
    "use_bidirectional_attention",
    "hidden_size_per_layer_input",
    "vocab_size",
    "num_experts",
    "top_k_experts",
    "moe_intermediate_size",
    "enable_moe_block",
)


def released_text_config(model_id: str):
    """The released checkpoint's text config, from the package's cited facts
    (``gemma_explore.facts.released``: built offline, no hub)."""
    from gemma_explore.facts.released import released_config

    return released_config(model_id).text_config


_FAMILY = {
    "gemma3n_text": "gemma3n",
    "gemma4_text": "gemma4",
    "gemma4_unified_text": "gemma4_unified",
}


def text_plan(
    text, *, max_model_len: int, max_num_batched_tokens: int = 8192, block_size: int = 16
):
    """A serving plan whose KV side is this text config (the KV arithmetic reads nothing else)."""
    model = ServingModel(
        name=getattr(text, "_name_or_path", "") or text.model_type,
        family=_FAMILY[text.model_type],
        modalities=("image",),
        default_budget=280,
        audio_seq_length=None,
        image_seq_length=256,
        hidden_size=text.hidden_size,
        layers=kv_layers(text),
        num_parameters=0,
        num_parameters_by_part={},
        use_bidirectional_attention=getattr(text, "use_bidirectional_attention", None),
    )
    return plan_serving(
        model,
        max_model_len=max_model_len,
        max_num_batched_tokens=max_num_batched_tokens,
        block_size=block_size,
    )


# ----------------------------------------------------------------------- vLLM's side


def vllm_specs(text, *, tp: int, block_size: int):
    """vLLM's KVCacheSpec per attention layer, built as its Gemma model files build them."""
    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec, SlidingWindowSpec

    n = text.num_hidden_layers
    first_shared = n - (getattr(text, "num_kv_shared_layers", 0) or 0)
    specs = {}
    for i, kind in enumerate(text.layer_types):
        if i >= first_shared:  # kv_sharing_target_layer_name is set: the layer has no cache
            continue
        layer = text.per_layer_config[i]  # gemma4.py: per-layer heads and head dim
        heads = max(1, layer.num_key_value_heads // tp)
        common = dict(
            block_size=block_size,
            num_kv_heads=heads,
            head_size=layer.head_dim,
            dtype=torch.bfloat16,
        )
        name = f"language_model.model.layers.{i}.self_attn.attn"
        if kind == "sliding_attention":
            specs[name] = SlidingWindowSpec(**common, sliding_window=text.sliding_window)
        else:
            specs[name] = FullAttentionSpec(**common)
    return specs


@pytest.fixture(scope="module")
def vllm_config(tmp_path_factory):
    """One VllmConfig (CPU) from a config-only folder: the 31B's config.json and the tiny
    processor files, no weights. get_kv_cache_configs reads max_model_len, the scheduler
    and cache settings from it; the specs come from each checkpoint's own config."""
    if not vllm_available():
        pytest.skip("vllm is not installed")
    from vllm.config import DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig

    folder = config_only_folder(tmp_path_factory.mktemp("g31"), "google/gemma-4-31B-it")
    mc = ModelConfig(model=str(folder), tokenizer=str(folder), dtype="bfloat16", max_model_len=4096)
    sc = SchedulerConfig(max_model_len=4096, is_encoder_decoder=False, max_num_batched_tokens=8192)
    vc = VllmConfig(model_config=mc, scheduler_config=sc, device_config=DeviceConfig(device="cpu"))
    return vc


def config_only_folder(root: Path, model_id: str) -> Path:
    """config.json of a released Gemma 4 checkpoint (text from the facts, the tiny vision
    settings, no audio when the checkpoint has none) and the tiny processor files."""
    from gemma_explore.facts.released import released_config
    from gemma_explore.models.tiny import build_tiny_processor, tiny_config

    real = released_config(model_id)
    config = tiny_config("gemma4")
    config.text_config = real.text_config
    if real.audio_config is None:
        config.audio_config = None
    config.vision_config.default_output_length = real.vision_config.default_output_length
    config.architectures = ["Gemma4ForConditionalGeneration"]
    config.save_pretrained(root)
    build_tiny_processor("gemma4").save_pretrained(root)
    return root


def vllm_capacity(vc, specs, *, memory, tp, max_model_len, mnbt, hybrid, async_sched, layout):
    """(num_tokens, concurrency, num_blocks, groups) from vLLM, or the ValueError it raises."""
    from vllm.v1.core.kv_cache_utils import (
        generate_scheduler_kv_cache_config,
        get_kv_cache_capacity,
        get_kv_cache_configs,
    )

    vc.model_config.max_model_len = max_model_len
    vc.scheduler_config.max_num_batched_tokens = mnbt
    vc.scheduler_config.disable_hybrid_kv_cache_manager = not hybrid  # False: as on CUDA
    vc.scheduler_config.async_scheduling = async_sched
    vc.cache_config.kv_cache_layout = layout  # what resolve_kv_cache_layout picks
    # One spec dict and one memory figure per TP rank, as the engine core collects them.
    configs = get_kv_cache_configs(vc, [dict(specs) for _ in range(tp)], [memory] * tp)
    tokens, conc = get_kv_cache_capacity(vc, generate_scheduler_kv_cache_config(configs))
    groups = [
        (
            tuple(int(n.split(".layers.")[1].split(".")[0]) for n in g.layer_names),
            g.kv_cache_spec.block_size,
        )
        for g in configs[0].kv_cache_groups
    ]
    return tokens, conc, configs[0].num_blocks, groups


def _check(
    vc,
    text,
    *,
    memory,
    tp,
    mml,
    mnbt=8192,
    hybrid=True,
    async_sched=True,
    block_size=16,
    layout="LBNHC",
):
    plan = text_plan(text, max_model_len=mml, max_num_batched_tokens=mnbt, block_size=block_size)
    ours = capacity(
        plan,
        kv_cache_memory_bytes=memory,
        tensor_parallel_size=tp,
        hybrid_kv_cache_manager=hybrid,
        async_scheduling=async_sched,
    )
    specs = vllm_specs(text, tp=tp, block_size=block_size)
    try:
        tokens, conc, blocks, groups = vllm_capacity(
            vc,
            specs,
            memory=memory,
            tp=tp,
            max_model_len=mml,
            mnbt=mnbt,
            hybrid=hybrid,
            async_sched=async_sched,
            layout=layout,
        )
    except ValueError as exc:
        assert ours.refusal == str(exc), (text.model_type, memory, tp, mml)
        assert f"maximum model length is {ours.estimated_max_model_len}." in str(exc) or (
            ours.estimated_max_model_len == 0
        )
        return "refused"
    case = (text.model_type, text.num_hidden_layers, memory, tp, mml, hybrid, async_sched)
    assert ours.fits, case
    assert (ours.num_tokens, ours.max_concurrency, ours.num_blocks) == (tokens, conc, blocks), case
    assert [(g.layers, g.block_size) for g in ours.groups] == groups, case
    return "fits"


@pytest.mark.vllm
@pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
@pytest.mark.parametrize("model_id", CHECKPOINTS)
def test_capacity_equals_vllms_start_up_arithmetic(vllm_config, model_id):
    """7 checkpoints × 3 max_model_len × 2 KV memory sizes × TP 1 and 2, as on CUDA."""
    text = released_text_config(model_id)
    outcomes = set()
    for mml in (4096, 32768, 131072):
        for memory in (GiB // 2, 40 * GiB):
            for tp in (1, 2):
                outcomes.add(_check(vllm_config, text, memory=memory, tp=tp, mml=mml))
    assert outcomes == {"fits", "refused"}, model_id  # both of vLLM's answers were held to ours


@pytest.mark.vllm
@pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
@pytest.mark.parametrize("model_id", CHECKPOINTS)
def test_hybrid_manager_off_and_the_cpu_engine(vllm_config, model_id):
    """--disable-hybrid-kv-cache-manager (every sliding layer allocated as a full one), and
    the CPU engine's settings: manager on, async scheduling off, 128-token blocks, LBHNC."""
    text = released_text_config(model_id)
    outcomes = set()
    for mml in (4096, 32768):
        for memory in (3 * GiB, 40 * GiB):
            outcomes.add(_check(vllm_config, text, memory=memory, tp=1, mml=mml, hybrid=False))
            outcomes.add(
                _check(
                    vllm_config,
                    text,
                    memory=memory,
                    tp=1,
                    mml=mml,
                    async_sched=False,
                    block_size=128,
                    layout="LBHNC",
                )
            )
    assert "fits" in outcomes


@pytest.mark.vllm
@pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
@pytest.mark.parametrize("family", ["gemma3n", "gemma4", "gemma4_unified"])
def test_tiny_bundles_equal_vllm(vllm_config, family):
    from gemma_explore.models.tiny import tiny_config

    text = tiny_config(family).get_text_config()
    for memory in (64 * 2**10, 256 * 2**20):  # too small for 8192 tokens, then plenty
        for mml in (512, 8192):
            _check(vllm_config, text, memory=memory, tp=1, mml=mml, mnbt=256)
            _check(vllm_config, text, memory=memory, tp=1, mml=mml, mnbt=256, hybrid=False)


def test_steps_explain_grouping_and_tp():
    text = released_text_config("google/gemma-4-31B-it")
    plan = text_plan(text, max_model_len=32768)
    one = capacity(plan, kv_cache_memory_bytes=20 * GiB)
    two = capacity(plan, kv_cache_memory_bytes=20 * GiB, tensor_parallel_size=2)
    text_steps = "\n".join(two.steps)
    assert "(16 ÷ TP 2)" in text_steps and "(4 ÷ TP 2)" in text_steps
    assert any("32-token blocks" in s for s in one.steps)  # full pages unified with sliding ones
    assert [len(g.layers) for g in one.groups] == [10] * 6
    # half the heads per rank: half the bytes per block, twice the blocks in the same memory
    assert two.bytes_per_block * 2 == one.bytes_per_block and two.num_blocks == 2 * one.num_blocks
    # async scheduling holds two batches on sliding layers: more blocks per request
    sync = capacity(plan, kv_cache_memory_bytes=20 * GiB, async_scheduling=False)
    assert sync.blocks_per_request < one.blocks_per_request
    assert one.log_line().startswith("GPU KV cache size: ")


def test_kv_shared_layers_store_nothing():
    text = released_text_config("google/gemma-4-E2B-it")  # 35 layers, the last 20 share KV
    cap = capacity(text_plan(text, max_model_len=8192), kv_cache_memory_bytes=GiB)
    stored = {i for g in cap.groups for i in g.layers}
    assert stored == set(range(15))
    assert "15 of 35 layers store KV" in cap.steps[0]


def test_bad_tensor_parallel_size_says_what_to_do():
    plan = text_plan(released_text_config("google/gemma-4-31B-it"), max_model_len=4096)
    with pytest.raises(ValueError, match="use a divisor of 16"):
        capacity(plan, kv_cache_memory_bytes=GiB, tensor_parallel_size=3)


def test_memory_estimate_is_labelled_and_adds_up():
    plan = plan_serving("tiny-gemma4", max_model_len=4096)
    est = kv_memory_estimate(plan, gpu_memory_bytes=8 * GiB, gpu_memory_utilization=0.5)
    assert est.requested_bytes == 4 * GiB
    assert est.kv_cache_memory_bytes == (
        est.requested_bytes - plan.weights_bytes - plan.encoder_cache_bytes - est.activation_bytes
    )
    assert "estimate" in est.steps[-1] and "guess" in est.steps[-2]
    with pytest.raises(ValueError, match="gpu_memory_utilization must be in"):
        kv_memory_estimate(plan, gpu_memory_bytes=GiB, gpu_memory_utilization=1.5)


@pytest.mark.vllm
@pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
@pytest.mark.parametrize("pattern", ["sfsfsff", "ssfsfsf", "sssssff"])
def test_uneven_layer_counts_group_and_pad_like_vllm(vllm_config, pattern):
    """Layer counts within 1.5× of each other take the larger count as the group size (the
    smaller kind gets a padding slot); further apart, the smaller count (the larger kind is
    split, with padding when it does not divide)."""
    from gemma_explore.models.tiny import tiny_config

    tiny = tiny_config("gemma4").get_text_config()
    fields = {
        k: v
        for k, v in tiny.to_dict().items()
        if k not in ("model_type", "transformers_version", "per_layer_config")
    }
    kinds = {"s": "sliding_attention", "f": "full_attention"}
    fields.update(num_hidden_layers=len(pattern), layer_types=[kinds[c] for c in pattern])
    text = type(tiny)(**fields)
    for memory in (256 * 2**10, 64 * 2**20):
        _check(vllm_config, text, memory=memory, tp=1, mml=2048, mnbt=256)


# The real CPU engine's line: tests/vllm_engine/test_startup.py holds capacity() to each of the
# session's three shared engines (test_capacity_reproduces_the_engines_kv_line), and the
# first engine's logged line to the numbers it stores (test_kv_line_is_the_engines_own_numbers).
