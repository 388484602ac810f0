"""The engine confirms what the package says about start-up: the KV line, the encoder
budget and cache, the per-item maxima and the dummy inputs vLLM profiled with, each read
from the running engine (``engine_startup_facts``) and held to ``plan_serving``."""

from __future__ import annotations

import pytest

import gemma_explore as ge
from gemma_explore.sizes import size_label

from .conftest import ENGINE_OF, FAMILIES, LIMITS
from .facts import KV_LINE


def _plan(engine, facts):
    return ge.plan_serving(
        engine.folder,
        max_model_len=facts.max_model_len,
        limit_mm_per_prompt=LIMITS[engine.family],
        max_num_batched_tokens=facts.max_num_batched_tokens,
        max_num_seqs=facts.max_num_seqs,
        max_soft_tokens=engine.bundle.engine.startup_budget
        if engine.bundle.spec.image.budgets
        else None,
        dtype="float32",
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_kv_line_is_the_engines_own_numbers(family, request):
    facts = request.getfixturevalue(ENGINE_OF[family]).facts()
    assert facts.device == "cpu" and facts.kv_line is not None, facts
    m = KV_LINE.search(facts.kv_line)
    assert m["pool"] == "CPU"
    assert int(m["tokens"].replace(",", "")) == facts.kv_cache_tokens
    assert int(m["len"].replace(",", "")) == facts.max_model_len
    assert float(m["conc"]) == pytest.approx(facts.max_concurrency, abs=0.005)
    # What the line means: concurrency × max_model_len tokens, in blocks the engine holds.
    assert facts.kv_cache_tokens == int(facts.max_concurrency * facts.max_model_len)
    assert facts.num_blocks * facts.block_size >= facts.kv_cache_tokens


@pytest.mark.parametrize("family", FAMILIES)
def test_kv_bytes_per_token_equal_plan_serving(family, request):
    engine = request.getfixturevalue(ENGINE_OF[family])
    facts = engine.facts()
    plan = _plan(engine, facts)
    # On CPU vLLM turns the hybrid KV manager off: sliding layers get full-attention
    # blocks, so every layer's bytes count per token.
    assert not facts.hybrid_kv_cache_manager
    assert sum(facts.kv_bytes_per_token.values()) == (
        plan.kv_bytes_per_token_full + plan.kv_bytes_per_token_sliding
    )
    assert facts.kv_cache_memory_bytes is not None
    assert facts.num_blocks * facts.block_size * sum(facts.kv_bytes_per_token.values()) <= (
        facts.kv_cache_memory_bytes
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_encoder_budget_and_items_equal_plan_serving(family, request):
    engine = request.getfixturevalue(ENGINE_OF[family])
    facts = engine.facts()
    plan = _plan(engine, facts)
    assert facts.limits == plan.limits
    assert facts.max_tokens_per_item == plan.max_tokens_per_item
    assert facts.encoder_compute_budget == plan.encoder_compute_budget
    assert facts.encoder_cache_size == plan.encoder_cache_size
    assert facts.max_items_per_prompt == plan.max_items_per_prompt
    assert facts.max_items_per_batch == plan.max_items_per_batch


def test_gemma3n_dummy_inputs_equal_serving_plan(engine3n):
    facts = engine3n.facts()
    plan = _plan(engine3n, facts)
    spec = engine3n.bundle.spec
    image, audio = facts.dummy_inputs["image"], facts.dummy_inputs["audio"]
    (w, h), n = image["images"][0], audio["audio_samples"][0]
    assert size_label((h, w)) in plan.dummy_inputs["image"]
    assert f"{image['placeholders']} tokens" in plan.dummy_inputs["image"]
    assert f"{n} samples" in plan.dummy_inputs["audio"] and n == spec.audio.fft_length
    assert f"{audio['placeholders']} tokens" in plan.dummy_inputs["audio"]


@pytest.mark.parametrize("family", ["gemma4", "gemma4_unified"])
def test_gemma4_dummy_inputs_reach_the_stated_maxima(family, request):
    """Gemma 4 states its maxima (get_mm_max_tokens_per_item); its dummy items, built
    from the start-up budget, have exactly that many placeholders (video: per frame)."""
    engine = request.getfixturevalue(ENGINE_OF[family])
    facts = engine.facts()
    plan = _plan(engine, facts)
    assert plan.dummy_inputs == {}  # nothing to build: the maxima are stated
    assert facts.dummy_inputs["image"]["placeholders"] == plan.max_tokens_per_item["image"]
