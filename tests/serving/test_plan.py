"""plan_serving equals vLLM's own MultiModalBudget on the saved tiny checkpoints, its KV
bytes equal what transformers' DynamicCache holds, and its weights equal the loaded
model's parameters."""

from __future__ import annotations

import pytest

import gemma_explore as ge
from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.plans.vllm import vllm_audio_tokens, vllm_image_tokens
from gemma_explore.serving.plan import plan_serving, serving_model

# (max_model_len, limit_mm_per_prompt, max_num_batched_tokens, max_soft_tokens, extra).
# Two budgets only: each new mm_processor_kwargs makes vLLM build its processor again (~6 s).
COMBOS = [
    (8192, None, 8192, None, {}),
    (1024, None, 2048, None, {}),
    (4096, {"image": 2, "audio": 1, "video": 0}, 4096, None, {}),  # video off
    (8192, {"image": 0}, 8192, 1120, {}),  # a modality set to 0
    (8192, {"image": 0, "audio": 0, "video": 0}, 8192, None, {}),  # nothing: no encoder cache
    (8192, None, 1024, 1120, {}),
    (8192, {"video": {"count": 1, "num_frames": 8}}, 512, 1120, {}),  # video on, 8 frames
    (2048, {"image": 3}, 2048, None, {"enable_chunked_prefill": False}),
    (100, None, 200, 1120, {"max_num_seqs": 2}),
]


def _vllm_budget(folder, mml, limits, mnbt, mst, extra):
    from vllm.config import DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig
    from vllm.multimodal import MULTIMODAL_REGISTRY
    from vllm.multimodal.encoder_budget import MultiModalBudget

    kwargs = {"max_soft_tokens": mst} if mst is not None else None
    mc = ModelConfig(
        model=str(folder),
        tokenizer=str(folder),
        dtype="float32",
        max_model_len=mml,
        limit_mm_per_prompt=limits,
        mm_processor_kwargs=kwargs,
    )
    sc = SchedulerConfig(
        max_model_len=mml,
        is_encoder_decoder=False,
        max_num_batched_tokens=mnbt,
        enable_chunked_prefill=extra.get("enable_chunked_prefill", True),
        max_num_seqs=extra.get("max_num_seqs", 128),
    )
    vc = VllmConfig(model_config=mc, scheduler_config=sc, device_config=DeviceConfig(device="cpu"))
    return MultiModalBudget(vc, MULTIMODAL_REGISTRY)


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
@pytest.mark.parametrize("family", ["gemma3n", "gemma4", "gemma4_unified"])
def test_plan_equals_vllms_multimodal_budget(saved_dirs, family):
    folder = saved_dirs[family]
    model = serving_model(folder)
    for mml, limits, mnbt, mst, extra in COMBOS:
        b = _vllm_budget(folder, mml, limits, mnbt, mst, extra)
        plan = plan_serving(
            model,
            max_model_len=mml,
            limit_mm_per_prompt=limits,
            max_num_batched_tokens=mnbt,
            max_soft_tokens=mst if family != "gemma3n" else None,
            max_num_seqs=extra.get("max_num_seqs", 128),
            enable_chunked_prefill=extra.get("enable_chunked_prefill", True),
        )
        case = (family, mml, limits, mnbt, mst, extra)
        assert plan.max_tokens_per_item == dict(b.mm_max_toks_per_item), case
        assert plan.max_items_per_prompt == dict(b.mm_max_items_per_prompt), case
        assert plan.max_items_per_batch == dict(b.mm_max_items_per_batch), case
        assert plan.encoder_compute_budget == b.encoder_compute_budget, case
        assert plan.encoder_cache_size == b.encoder_cache_size, case


@pytest.mark.vllm
@pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
def test_disabled_chunked_mm_input_refuses_like_vllm(saved_dirs):
    from vllm.config import SchedulerConfig

    from gemma_explore.serving.plan import serving_model

    model = serving_model(saved_dirs["gemma4"])
    with pytest.raises(ValueError, match=r"max_tokens_per_mm_item \(2496\)") as ours:
        plan_serving(model, max_num_batched_tokens=2048, disable_chunked_mm_input=True)
    from vllm.v1.core.encoder_cache_manager import compute_mm_encoder_budget

    sc = SchedulerConfig(
        max_model_len=8192,
        is_encoder_decoder=False,
        max_num_batched_tokens=2048,
        disable_chunked_mm_input=True,
        enable_chunked_prefill=True,
    )
    with pytest.raises(ValueError) as theirs:
        compute_mm_encoder_budget(sc, {"image": 280, "video": 2496})
    assert str(ours.value) == str(theirs.value)


def test_gemma3n_shows_the_dummy_inputs():
    plan = plan_serving("tiny-gemma3n", max_soft_tokens=560)
    assert plan.max_tokens_per_item == {"image": 256, "audio": 188}
    processor = plan.model.processor
    size = processor.image_processor.size
    assert plan.dummy_inputs.image_size == (size["height"], size["width"])
    assert plan.dummy_inputs.audio_samples == processor.feature_extractor.fft_length
    assert any("ignored" in s for s in plan.steps)


@pytest.mark.vllm
@pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
@pytest.mark.parametrize("name", ["tiny4", "tiny3n", "tinyu"])
def test_dummy_inputs_are_what_vllms_builder_makes(name, request):
    """Issue 22, item 3: every family's plan carries the profiling request, equal to vLLM's
    own get_dummy_text / get_dummy_mm_data for one item of each modality served."""
    import numpy as np

    from gemma_explore.engines.vllm_processor import VLLM_PROCESSORS

    bundle = request.getfixturevalue(name)
    plan = plan_serving(bundle, max_model_len=4096)
    ours = plan.dummy_inputs
    counts = dict.fromkeys(plan.model.modalities, 1)
    assert ours.counts == counts
    builder = VLLM_PROCESSORS.get(bundle).dummy_inputs
    assert builder.get_dummy_text(counts) == ours.text
    data = builder.get_dummy_mm_data(4096, counts, {})
    assert [(im.height, im.width) for im in data["image"]] == [ours.image_size]
    assert [len(np.asarray(clip)) for clip in data["audio"]] == [ours.audio_samples]
    for video, meta in data.get("video") or []:
        assert (video.shape[0], video.shape[1:3]) == (ours.video_frames, ours.image_size)
        assert (meta["fps"], meta["do_sample_frames"]) == (ours.video_fps, ours.video_sampled)
    assert ("video" in data) == ("video" in counts)


def test_a_config_alone_has_no_dummy_inputs():
    """Without a processor there is nothing to read the dummy request from: None, and a
    step that says so."""
    from gemma_explore.models.tiny import tiny_config

    plan = plan_serving(tiny_config("gemma4"))
    assert plan.dummy_inputs is None and any("no processor" in s for s in plan.steps)


def test_bad_budget_says_which_are_allowed():
    with pytest.raises(ValueError, match=r"one of \[70, 140, 280, 560, 1120\]"):
        plan_serving("tiny-gemma4", max_soft_tokens=100)


# ------------------------------------------------------------------ KV bytes


def _cache_bytes(cache) -> int:
    return sum(
        layer.keys.numel() * layer.keys.element_size()
        + layer.values.numel() * layer.values.element_size()
        for layer in cache.layers
        if getattr(layer, "keys", None) is not None and layer.keys.numel()
    )


@pytest.mark.parametrize("family", ["gemma3n", "gemma4", "gemma4_unified"])
def test_kv_bytes_equal_a_real_dynamic_cache(tiny3n, tiny4, tinyu, family):
    import torch

    bundle = {"gemma3n": tiny3n, "gemma4": tiny4, "gemma4_unified": tinyu}[family]
    plan = plan_serving(bundle, dtype="float32")
    for n in (10, 63, 64, 100):
        ids = torch.randint(5, 1000, (1, n))
        with torch.no_grad():
            out = bundle.model(input_ids=ids, use_cache=True)
        assert plan.kv_bytes(n) == _cache_bytes(out.past_key_values), (family, n)


def _shared_config(family: str):
    """The tiny config with 6 (4) or 5 (3n) layers, half of them sharing KV, more KV heads
    and Gemma 4's wider full-layer head: every rule of the formula at work."""
    from gemma_explore.models import tiny

    config = tiny.tiny_config(family)
    sizes = dict(tiny._tiny_text_sizes(ge.get_family(family)), num_key_value_heads=2, head_dim=16)
    if family == "gemma4":
        from transformers import Gemma4TextConfig

        sizes.update(
            num_hidden_layers=6,
            sliding_window=32,
            num_kv_shared_layers=3,
            layer_types=["sliding_attention", "sliding_attention", "full_attention"] * 2,
        )
        config.text_config = Gemma4TextConfig(**sizes, global_head_dim=48)
    else:
        from transformers import Gemma3nTextConfig

        sizes.update(
            num_hidden_layers=5,
            sliding_window=32,
            num_kv_shared_layers=2,
            layer_types=[
                "sliding_attention",
                "full_attention",
                "sliding_attention",
                "full_attention",
                "full_attention",
            ],
        )
        config.text_config = Gemma3nTextConfig(
            **sizes, laurel_rank=8, altup_num_inputs=2, activation_sparsity_pattern=[0.0] * 5
        )
    return config


@pytest.mark.slow
@pytest.mark.parametrize("family", ["gemma3n", "gemma4"])
def test_kv_bytes_with_shared_layers_equal_a_real_dynamic_cache(family):
    import torch
    from transformers import AutoModelForImageTextToText

    config = _shared_config(family)
    torch.manual_seed(0)
    model = AutoModelForImageTextToText.from_config(config).eval()
    plan = plan_serving(serving_model(config), dtype="float32")
    stored = [la for la in plan.layers if la.stores_kv]
    assert len(stored) == len(plan.layers) - config.text_config.num_kv_shared_layers
    for n in (20, 31, 32, 80):
        with torch.no_grad():
            out = model(input_ids=torch.randint(5, 1000, (1, n)), use_cache=True)
        assert plan.kv_bytes(n) == _cache_bytes(out.past_key_values), (family, n)


def _real_text_config(name: str):
    from transformers import Gemma3nTextConfig, Gemma4TextConfig

    if name == "3n-E4B":
        return Gemma3nTextConfig()  # transformers' defaults are E4B's shapes
    pattern, layers, shared, kv = {"4-E2B": (5, 35, 20, 1), "4-E4B": (6, 42, 18, 2)}[name]
    types = [
        "full_attention" if (i + 1) % pattern == 0 else "sliding_attention" for i in range(layers)
    ]
    return Gemma4TextConfig(
        num_hidden_layers=layers,
        num_kv_shared_layers=shared,
        num_key_value_heads=kv,
        head_dim=256,
        global_head_dim=512,
        sliding_window=512,
        layer_types=types,
    )


@pytest.mark.parametrize(
    ("name", "full", "sliding", "at_8192"),
    [
        ("3n-E4B", 4 * 2 * 2 * 256 * 2, 16 * 2 * 2 * 256 * 2, 83_853_312),
        ("4-E2B", 3 * 2 * 1 * 512 * 2, 12 * 2 * 1 * 256 * 2, 6144 * 8192 + 12288 * 511),
        ("4-E4B", 4 * 2 * 2 * 512 * 2, 20 * 2 * 2 * 256 * 2, 16384 * 8192 + 40960 * 511),
    ],
)
def test_kv_arithmetic_scales_to_real_configs(name, full, sliding, at_8192):
    """The real shapes in bfloat16: our bytes equal a DynamicCache for that config, filled
    with meta tensors (shapes only) for 8192 tokens."""
    import torch
    from transformers import DynamicCache

    from gemma_explore.serving.plan import kv_layers

    text = _real_text_config(name)
    layers = kv_layers(text)
    assert sum(la.bytes_per_token(2) for la in layers if la.window is None) == full
    assert sum(la.bytes_per_token(2) for la in layers if la.window is not None) == sliding
    cache = DynamicCache(config=text)
    for la in layers:
        if la.stores_kv:
            kv = torch.empty(1, la.kv_heads, 8192, la.head_dim, dtype=torch.bfloat16, device="meta")
            cache.update(kv, kv, la.index)
    ours = sum(
        la.bytes_per_token(2) * (8192 if la.window is None else la.window - 1) for la in layers
    )
    assert ours == _cache_bytes(cache) == at_8192


@pytest.mark.vllm
@pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
def test_vllm_kv_reservation_equals_its_specs(tiny4):
    """Per request, vLLM reserves cdiv(len, block) pages on full layers and the window plus
    the in-flight tokens on sliding layers: our figure equals its KV specs'."""
    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec, SlidingWindowSpec

    plan = plan_serving(tiny4, max_model_len=4096, max_num_batched_tokens=512)

    class _Cfg:  # what max_memory_usage_bytes reads
        class model_config:  # noqa: N801
            max_model_len = 4096

        class parallel_config:  # noqa: N801
            decode_context_parallel_size = 1
            prefill_context_parallel_size = 1

        max_in_flight_tokens = 2 * 512  # async scheduling (CUDA's default): two batches

    total = 0
    for la in plan.layers:
        common = dict(
            block_size=16, num_kv_heads=la.kv_heads, head_size=la.head_dim, dtype=torch.bfloat16
        )
        spec = (
            FullAttentionSpec(**common)
            if la.window is None
            else SlidingWindowSpec(**common, sliding_window=la.window)
        )
        total += spec.max_memory_usage_bytes(_Cfg)
    assert plan.vllm_kv_bytes_per_request == total


# ------------------------------------------------------------------ weights and answers


@pytest.mark.parametrize("name", ["tiny-gemma3n", "tiny-gemma4", "tiny-gemma4-unified"])
def test_weights_from_config_shapes_equal_the_loaded_model(tiny3n, tiny4, tinyu, name):
    bundle = {"tiny-gemma3n": tiny3n, "tiny-gemma4": tiny4, "tiny-gemma4-unified": tinyu}[name]
    from gemma_explore.serving.weights import vllm_loaded_weights

    plan = plan_serving(name)
    assert plan.model.num_parameters == sum(p.numel() for p in bundle.model.parameters())
    # The plan's bytes are what vLLM allocates (tests/serving/test_weights.py holds that count
    # to vLLM's own model classes on the meta device), for the plan's limits and batch.
    loaded = vllm_loaded_weights(
        plan.model,
        limit_mm_per_prompt=plan.limits,
        max_num_batched_tokens=plan.max_num_batched_tokens,
        vllm_version=plan.vllm_version,
    )
    assert plan.weights_bytes == loaded.bytes


def test_images_that_fit_counts_vllms_tokens():
    plan = plan_serving("tiny-gemma4", max_model_len=2048, max_soft_tokens=560)
    fit = plan.images_that_fit((1080, 1920), text_tokens=48)
    per = vllm_image_tokens(1080, 1920, max_soft_tokens=560) + 2
    assert fit.tokens_per_image == per and fit.fits == (2048 - 48) // per
    capped = plan_serving("tiny-gemma4", max_model_len=8192, limit_mm_per_prompt={"image": 2})
    assert capped.images_that_fit((1080, 1920)).limited_by == "limit_mm_per_prompt"


def test_request_memory_adds_kv_and_encoder_outputs():
    plan = plan_serving("tiny-gemma4", dtype="float32")
    mem = plan.request_memory(images=[(480, 640)], audio_seconds=[2.0], text_tokens=10)
    img = vllm_image_tokens(480, 640, max_soft_tokens=280)
    aud = vllm_audio_tokens(32_000)
    assert mem.encoder_tokens == img + aud
    assert mem.prompt_tokens == 10 + img + aud + 4
    assert mem.kv_bytes == plan.kv_bytes(mem.prompt_tokens)
    assert mem.encoder_cache_bytes == (img + aud) * 64 * 4
    with pytest.raises(ValueError, match="no video"):
        plan_serving("tiny-gemma3n").request_memory(video_frames=[8])


def test_weights_from_a_real_config_agree_with_the_hand_kept_table():
    """transformers' Gemma3nConfig() defaults are E4B's shapes: the meta-device count
    (7.82 B) agrees with the model card's rounded 7.9 B in models/memory.py."""
    from transformers import Gemma3nConfig

    from gemma_explore.models.memory import CHECKPOINT_PARAMS_B

    plan = plan_serving(serving_model(Gemma3nConfig()))
    table = CHECKPOINT_PARAMS_B["google/gemma-3n-e4b-it"] * 1e9
    assert abs(plan.model.num_parameters - table) / table < 0.02
    assert plan.weights_bytes == plan.model.num_parameters * 2  # bfloat16
