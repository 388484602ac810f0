"""Loading a checkpoint (issue 22, item 8): vLLM's own classes run on the tiny bundles'
weight names. The engine check (every kept name is a loaded parameter) lives in
tests/plans/test_sentences.py, which shares one engine."""

from __future__ import annotations

import inspect

import pytest

from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.serving.weights import (
    ANY_SIZE_METHODS,
    _run_loader_setup,
    loading_plan,
    tower_quantized,
    vllm_model_class,
)

pytestmark = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")


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


def test_the_tower_rule_is_vllms():
    src = inspect.getsource(vllm_model_class("Gemma4ForConditionalGeneration").__init__)
    assert all(f'"{m}"' in src for m in ANY_SIZE_METHODS)
    assert "hidden_size % 64 == 0" in src and "intermediate_size % 64 == 0" in src
    from transformers import Gemma4VisionConfig

    default = Gemma4VisionConfig()  # transformers' defaults: the E-models' vision tower
    assert tower_quantized("fp8", default.hidden_size, default.intermediate_size) is (
        default.hidden_size % 64 == 0 and default.intermediate_size % 64 == 0
    )
    assert not tower_quantized("fp8", 1152, 4304)  # a SigLIP-400M-sized tower (26B, 31B)
    assert all(tower_quantized(m, 1152, 4304) for m in ANY_SIZE_METHODS)


def test_gemma3n_mm_mapping_names_a_missing_connector(tiny3n):
    plan = loading_plan(tiny3n)
    modules = {n for n, _ in tiny3n.model.model.named_modules()}
    assert "multi_modal_projector" not in modules
    assert all(r.part != "connector" for r in plan.rows)
    assert plan.towers_quantized is None


def test_the_table_renders(tiny4):
    plan = loading_plan(tiny4)
    text = plan.table().text()
    assert "qkv_proj" in text and "released name" in text
