"""Loading a checkpoint (issue 22, item 8): vLLM's own classes run on the tiny bundles'
weight names. The engine check (every kept name is a loaded parameter) lives in
tests/plans/test_sentences.py, which shares one engine."""

from __future__ import annotations

import types

import pytest

from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.facts.released import RELEASED_IDS, released_config
from gemma_explore.serving.weights import (
    ANY_SIZE_METHODS,
    _run_loader_setup,
    loading_plan,
    seed_tower_quantized,
    vllm_model_class,
    vllm_quantized_modules,
    vllm_tower_quantized,
)
from tests.seeds import load_seed

pytestmark = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")

METHODS = (None, "fp8", "gptq_marlin", "awq", *ANY_SIZE_METHODS)
# (vision hidden, vision intermediate, audio hidden or None): the released sizes, and two
# where the towers disagree about multiples of 64.
SIZES = ((768, 3072, 1024), (1152, 4304, None), (1152, 4304, 1024), (768, 3072, 1000))
TOWERS = {"vision_tower": "vision_config", "embed_vision": "vision_config"}
TOWERS |= {"audio_tower": "audio_config", "embed_audio": "audio_config"}


def _config(vision_hidden: int, vision_intermediate: int, audio_hidden: int | None):
    from transformers import Gemma4AudioConfig, Gemma4Config, Gemma4VisionConfig

    vision = Gemma4VisionConfig(hidden_size=vision_hidden, intermediate_size=vision_intermediate)
    audio = None if audio_hidden is None else Gemma4AudioConfig(hidden_size=audio_hidden)
    return Gemma4Config(vision_config=vision.to_dict(), audio_config=audio and audio.to_dict())


@pytest.fixture(scope="module")
def seed_gemma4():
    return load_seed("gemma4_mm")


def test_every_name_is_mapped_as_vllms_mapper_maps_it(tiny4, tiny3n, tinyu):
    for bundle in (tiny4, tiny3n, tinyu):
        plan = loading_plan(bundle)
        cls = vllm_model_class(plan.architecture)
        for row in plan.rows:
            base = cls.hf_to_vllm_mapper._map_name(row.released)
            if row.shard:  # the fused name replaces exactly the shard's module name
                assert row.vllm == base.replace(f".{row.shard}.", ".qkv_proj.") or (
                    row.vllm == base.replace(f".{row.shard}.", ".gate_up_proj.")
                )
            elif not row.ignored:
                assert row.vllm == base
        assert not any(r.released.startswith("model.vision_tower") and r.shard for r in plan.rows)


def test_audio_less_checkpoints_skip_every_audio_weight():
    """vLLM's own load_weights, run with and without an audio tower."""
    gemma4 = vllm_model_class("Gemma4ForConditionalGeneration")
    with_audio = _run_loader_setup(gemma4, has_audio=True)
    without = _run_loader_setup(gemma4, has_audio=False)
    assert with_audio == ("embed_vision.embedding.", "embed_audio.embedding.")
    assert set(without) - set(with_audio) == {"audio_tower.", "embed_audio."}
    unified = vllm_model_class("Gemma4UnifiedForConditionalGeneration")
    assert set(_run_loader_setup(unified, has_audio=False)) - set(with_audio) == {"embed_audio."}
    assert _run_loader_setup(vllm_model_class("Gemma3nForConditionalGeneration"), True) == ()


def test_vllm_tower_quantized_is_what_vllms_init_hands_each_tower():
    """vLLM 0.32's own __init__ decides every tower and embedder from the vision sizes."""
    gemma4 = vllm_model_class("Gemma4ForConditionalGeneration")
    for sizes in SIZES:
        config = _config(*sizes)
        for method in METHODS:
            modules = vllm_quantized_modules(gemma4, config, method)
            assert set(modules) == {m for m, c in TOWERS.items() if getattr(config, c)}
            want = vllm_tower_quantized(method, config.vision_config)
            assert modules == dict.fromkeys(modules, want), (sizes, method)


def test_seed_tower_quantized_is_the_seeds_own_rule(seed_gemma4):
    """The seed's _get_tower_quant_config, called directly and through the seed's __init__:
    each tower is judged by its own config."""
    for sizes in SIZES:
        config = _config(*sizes)
        for method in METHODS:
            quant = method and types.SimpleNamespace(get_name=lambda m=method: m)
            modules = vllm_quantized_modules(
                seed_gemma4.Gemma4ForConditionalGeneration, config, method
            )
            for module, part in TOWERS.items():
                tower = getattr(config, part)
                if tower is None:
                    continue
                seeds = seed_gemma4._get_tower_quant_config(tower, quant) is not None
                assert seed_tower_quantized(method, tower) is seeds, (sizes, method, module)
                assert modules[module] is seeds, (sizes, method, module)


def test_the_two_rules_part_where_only_one_towers_sizes_divide(seed_gemma4):
    vllm, seed = vllm_model_class("Gemma4ForConditionalGeneration"), seed_gemma4
    big_vision = _config(1152, 4304, 1024)  # 4304 is no multiple of 64; audio 1024 is
    assert not vllm_quantized_modules(vllm, big_vision, "fp8")["audio_tower"]
    assert vllm_quantized_modules(seed.Gemma4ForConditionalGeneration, big_vision, "fp8")[
        "audio_tower"
    ]
    odd_audio = _config(768, 3072, 1000)
    assert vllm_quantized_modules(vllm, odd_audio, "fp8")["audio_tower"]
    assert not vllm_quantized_modules(seed.Gemma4ForConditionalGeneration, odd_audio, "fp8")[
        "audio_tower"
    ]


def test_released_checkpoints_get_one_answer_from_both_rules(seed_gemma4):
    for rid in RELEASED_IDS:
        config = released_config(rid)
        arch = config.architectures[0]
        if arch != "Gemma4ForConditionalGeneration":
            continue
        ours = vllm_quantized_modules(vllm_model_class(arch), config, "fp8")
        seeds = vllm_quantized_modules(seed_gemma4.Gemma4ForConditionalGeneration, config, "fp8")
        assert ours == seeds, rid


def test_unified_and_gemma3n_classes_quantize_what_their_init_says(tiny3n, tinyu):
    """Unified hands the config to its encoder-free vision_embedder only; Gemma 3n to no
    tower or embedder. The plan's tower rows follow vLLM's __init__."""
    for bundle in (tiny3n, tinyu):
        plan = loading_plan(bundle, quant_method="fp8")
        cls = vllm_model_class(plan.architecture)
        assert plan.modules_quantized == vllm_quantized_modules(cls, bundle.model.config, "fp8")
        for row in plan.rows:
            top = (row.vllm or "").split(".")[0]
            if top in plan.modules_quantized and row.quantized:
                assert plan.modules_quantized[top], row
    assert not any(loading_plan(tiny3n).modules_quantized.values())
    unified = loading_plan(tinyu).modules_quantized
    assert unified == {"vision_embedder": True, "embed_vision": False, "embed_audio": False}


def test_gemma3n_mm_mapping_names_a_missing_connector(tiny3n):
    plan = loading_plan(tiny3n)
    modules = {n for n, _ in tiny3n.model.model.named_modules()}
    assert "multi_modal_projector" not in modules
    assert all(r.part != "connector" for r in plan.rows)
    assert not any(plan.modules_quantized.values())


def test_the_table_renders(tiny4):
    plan = loading_plan(tiny4)
    text = plan.table().text()
    assert "qkv_proj" in text and "released name" in text


# --- The weights vLLM loads (issue 37, item 2): held to vLLM's own model on the meta device.

ALL_ZERO = {"image": 0, "audio": 0, "video": 0}
# (quantization, limits) per released checkpoint: bf16 as served, bf16 text-only, and FP8
# (online, from the bf16 checkpoint) without audio.
CASES = ((None, None), (None, ALL_ZERO), ("fp8", {"audio": 0}))


@pytest.fixture(scope="module")
def vllm_meta(tmp_path_factory):
    """``build(id, quantization, limits)`` → what vLLM's own model class allocates, built on
    the meta device under a CPU VllmConfig (one per case, cached): parameters per top-level
    module, parameters of the layers its quant config quantizes, and the buffers."""
    import torch
    import vllm.model_executor.layers.activation as activation
    from vllm.config import (
        DeviceConfig,
        LoadConfig,
        ModelConfig,
        VllmConfig,
        set_current_vllm_config,
    )
    from vllm.distributed import parallel_state
    from vllm.model_executor.model_loader.utils import initialize_model
    from vllm.utils.torch_utils import set_default_torch_dtype

    from gemma_explore.models.checkpoints import family_from_config
    from gemma_explore.models.tiny import build_tiny_processor

    # Gemma 3n's GeluAndMulSparse computes a scalar with .item() in __init__ (it holds no
    # weights): let that one run on the CPU.
    sparse_init = activation.GeluAndMulSparse.__init__

    def on_cpu(self, *args, **kwargs):
        with torch.device("cpu"):
            sparse_init(self, *args, **kwargs)

    activation.GeluAndMulSparse.__init__ = on_cpu
    built: dict = {}
    started = []

    def build(rid, quantization, limits):
        key = (rid, quantization, str(limits))
        if key in built:
            return built[key]
        folder = tmp_path_factory.getbasetemp() / rid.replace("/", "_")
        if not folder.exists():
            config = released_config(rid)
            config.save_pretrained(folder)
            build_tiny_processor(family_from_config(config, rid)).save_pretrained(folder)
        mc = ModelConfig(
            model=str(folder),
            tokenizer=str(folder),
            dtype="bfloat16",
            max_model_len=2048,
            quantization=quantization,
            limit_mm_per_prompt=limits,
        )
        vc = VllmConfig(
            model_config=mc,
            device_config=DeviceConfig(device="cpu"),
            load_config=LoadConfig(load_format="dummy"),
        )
        with set_current_vllm_config(vc):
            if not started:
                parallel_state.init_distributed_environment(
                    world_size=1,
                    rank=0,
                    local_rank=0,
                    distributed_init_method=f"file://{tmp_path_factory.mktemp('dist')}/init",
                    backend="gloo",
                )
                parallel_state.ensure_model_parallel_initialized(1, 1)
                started.append(True)
            with set_default_torch_dtype(torch.bfloat16), torch.device("meta"):
                model = initialize_model(vllm_config=vc)
        built[key] = _summary(model, vc)
        return built[key]

    yield build
    activation.GeluAndMulSparse.__init__ = sparse_init
    if started:
        parallel_state.destroy_model_parallel()
        parallel_state.destroy_distributed_environment()


def _summary(model, vc) -> dict:
    """Parameters per top-level module; quantized: the weights of every layer whose quant
    method is a quantizing one (vLLM's get_quant_method decided); bytes: those at 1 B
    (float8_e4m3fn), the rest at their dtype; buffers: RoPE caches and tensor attributes."""
    import torch

    parts: dict[str, int] = {}
    for name, p in model.named_parameters():
        parts[name.split(".")[0]] = parts.get(name.split(".")[0], 0) + p.numel()
    quantized, quantized_bytes_saved = 0, 0
    for _name, module in model.named_modules():
        method = type(getattr(module, "quant_method", None)).__name__
        if method == "NoneType" or "Unquantized" in method or "KVCache" in method:
            continue
        for pname, p in module.named_parameters(recurse=False):
            if "weight" in pname and "scale" not in pname:
                quantized += p.numel()
                quantized_bytes_saved += p.numel() * (p.element_size() - 1)
    total_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    rope = sum(
        b.numel() * b.element_size()
        for n, b in model.named_buffers()
        if n.endswith("cos_sin_cache")
    )
    attrs = sum(
        v.numel() * v.element_size() for v in vars(model).values() if isinstance(v, torch.Tensor)
    )
    return {
        "parts": parts,
        "quantized": quantized,
        "bytes": total_bytes - quantized_bytes_saved,
        "buffers": rope + attrs,
        "mnbt": vc.scheduler_config.max_num_batched_tokens,
    }


@pytest.mark.parametrize("rid", RELEASED_IDS)
def test_loaded_weights_equal_vllms_meta_device_model(rid, vllm_meta):
    """bf16 as served, bf16 with every limit 0, FP8 without audio: parameters per part,
    skipped towers, the extra V projections, quantized parameters, bytes and buffers."""
    from gemma_explore.serving.model import serving_model
    from gemma_explore.serving.weights import vllm_loaded_weights

    model = serving_model(rid)
    for quantization, limits in CASES:
        theirs = vllm_meta(rid, quantization, limits)
        ours = vllm_loaded_weights(
            model,
            limit_mm_per_prompt=limits,
            quantization=quantization,
            max_num_batched_tokens=theirs["mnbt"],
        )
        case = (rid, quantization, limits)
        assert ours.parameters == sum(theirs["parts"].values()), case
        assert ours.parameters_by_part == theirs["parts"], case
        assert ours.quantized_parameters == theirs["quantized"], case
        assert ours.bytes - ours.buffer_bytes == theirs["bytes"], case
        assert ours.buffer_bytes == theirs["buffers"], case
        assert ours.parameters + sum(ours.skipped.values()) == (
            model.num_parameters + ours.extra_value_parameters
        ), case


def test_loaded_weights_refuse_a_method_they_cannot_count():
    from gemma_explore.serving.model import serving_model
    from gemma_explore.serving.weights import vllm_loaded_weights

    with pytest.raises(ValueError, match="quantization='awq'"):
        vllm_loaded_weights(serving_model("tiny-gemma4"), quantization="awq")
