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
