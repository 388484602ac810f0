"""The engine confirms what the package says about start-up: the KV line, the encoder
budget and cache, the per-item maxima and the dummy inputs vLLM profiled with, each read
from the running engine (``engine_startup_facts``) and held to ``plan_serving``."""

from __future__ import annotations

import pytest

import gemma_explore as ge

from .conftest import ENGINE_OF, FAMILIES, LIMITS
from .facts import KV_LINE, kv_line_of


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
    assert facts.device == "cpu"
    line = kv_line_of(facts)
    if facts.kv_line is not None:  # logged once per process: the first engine's start-up
        assert KV_LINE.search(facts.kv_line)[0] == KV_LINE.search(line)[0]
    m = KV_LINE.search(line)
    assert m["pool"] == "CPU" and int(m["len"].replace(",", "")) == facts.max_model_len
    # What the line means: concurrency × max_model_len tokens, in blocks the engine holds.
    assert facts.kv_cache_tokens == int(facts.max_concurrency * facts.max_model_len)
    assert facts.num_blocks * facts.block_size >= facts.kv_cache_tokens


@pytest.mark.parametrize("family", FAMILIES)
def test_kv_bytes_per_token_equal_plan_serving(family, request):
    engine = request.getfixturevalue(ENGINE_OF[family])
    facts = engine.facts()
    plan = _plan(engine, facts)
    # vLLM 0.32's CPU platform supports the hybrid manager (support_hybrid_kv_cache).
    from vllm.platforms import current_platform

    assert facts.hybrid_kv_cache_manager == current_platform.support_hybrid_kv_cache()
    if facts.hybrid_kv_cache_manager:  # sliding layers in a group of their own
        assert facts.kv_bytes_per_token == {
            "full": plan.kv_bytes_per_token_full,
            "sliding": plan.kv_bytes_per_token_sliding,
        }
    else:  # every layer gets full-attention blocks
        assert facts.kv_bytes_per_token == {
            "full": plan.kv_bytes_per_token_full + plan.kv_bytes_per_token_sliding
        }
    assert facts.kv_cache_memory_bytes is not None
    assert facts.num_blocks * facts.block_size * max(facts.kv_bytes_per_token.values()) <= (
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
    assert plan.dummy_inputs.image_size == (h, w)
    assert plan.dummy_inputs.audio_samples == n == spec.audio.fft_length
    assert image["placeholders"] == plan.max_tokens_per_item["image"]
    assert audio["placeholders"] == plan.max_tokens_per_item["audio"]


@pytest.mark.parametrize("family", ["gemma4", "gemma4_unified"])
def test_gemma4_dummy_inputs_reach_the_stated_maxima(family, request):
    """Gemma 4 states its maxima (get_mm_max_tokens_per_item); the dummy image it profiles
    with is counted as plan_image counts it."""
    engine = request.getfixturevalue(ENGINE_OF[family])
    facts = engine.facts()
    plan = _plan(engine, facts)
    (w, h) = facts.dummy_inputs["image"]["images"][0]
    assert plan.dummy_inputs.image_size == (h, w)  # the image vLLM's builder made
    # vLLM profiles with a smaller image than the stated maximum: its count is plan_image's
    # for that size, while the budget uses the stated maximum.
    dummy = facts.dummy_inputs["image"]
    budget = engine.bundle.engine.startup_budget
    count = ge.plan_image((h, w), family=family, max_soft_tokens=budget).num_soft_tokens
    assert dummy["placeholders"] == count <= plan.max_tokens_per_item["image"]
    assert facts.max_tokens_per_item["image"] == plan.max_tokens_per_item["image"]


@pytest.mark.parametrize("family", FAMILIES)
def test_capacity_reproduces_the_engines_kv_line(family, request):
    """``ServingPlan.capacity`` (vLLM's start-up arithmetic in our words) gives the line the
    running engine holds, with the CPU engine's settings: the hybrid manager on (vLLM 0.32's
    CPU platform supports it), async scheduling off (one batch in flight) and the engine's
    own block size; with the manager off, the figure would differ."""
    engine = request.getfixturevalue(ENGINE_OF[family])
    facts = engine.facts()
    plan = _plan(engine, facts)
    cpu = dict(
        kv_cache_memory_bytes=facts.kv_cache_memory_bytes,
        async_scheduling=engine.llm.llm_engine.vllm_config.scheduler_config.async_scheduling,
        block_size=facts.block_size,
        device="CPU",
        hybrid_kv_cache_manager=facts.hybrid_kv_cache_manager,
    )
    fits = plan.capacity(**cpu)
    assert fits.log_line() == kv_line_of(facts)
    assert (fits.num_tokens, round(fits.max_concurrency, 2)) == (
        facts.kv_cache_tokens,
        round(facts.max_concurrency, 2),
    )
    if facts.hybrid_kv_cache_manager and plan.kv_bytes_per_token_sliding:
        other = plan.capacity(**{**cpu, "hybrid_kv_cache_manager": False})
        assert other.num_tokens != fits.num_tokens
