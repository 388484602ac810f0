"""What vLLM's engine refuses, in its own words, next to what the package says first."""

from __future__ import annotations

import numpy as np
import pytest

import gemma_explore as ge
from gemma_explore.engines.vllm import vllm_request
from gemma_explore.errors import EngineError

from .conftest import LIMITS, MAX_MODEL_LEN


def _image(seed: int, size=(200, 300)):
    from PIL import Image

    return Image.fromarray(np.random.RandomState(seed).randint(0, 255, (*size, 3), np.uint8))


def test_too_many_images_for_limit_mm_per_prompt(engine4):
    limit = LIMITS["gemma4"]["image"]
    images = [_image(i) for i in range(limit + 1)]
    with pytest.raises(EngineError) as info:
        engine4.bundle.generate("Compare.", images=images, max_new_tokens=2)
    said = str(info.value)
    # vLLM's words (multimodal/processing/context.py), with the limit the engine holds.
    assert engine4.facts().limits["image"] == limit
    assert f"At most {limit} image(s) may be provided in one prompt." in said, said


def test_prompt_over_max_model_len(engine4):
    text = "word " * MAX_MODEL_LEN
    prepared = ge.prepare_inputs(text, bundle=engine4.bundle)
    assert len(prepared.input_ids) > MAX_MODEL_LEN
    with pytest.raises(EngineError) as info:
        engine4.bundle.engine.generate(prepared, max_new_tokens=2)
    said = str(info.value)
    # vLLM's words: its renderer tokenizes at most max_model_len + 1 tokens, then refuses.
    assert (
        f"This model's maximum context length is {MAX_MODEL_LEN} tokens. However, your prompt "
        f"contains at least {MAX_MODEL_LEN + 1} input tokens" in said
    ), said


def test_unsupported_budget_is_refused_by_both(engine4):
    """A per-request budget outside the list: vLLM's processor refuses it; ours refuses it
    first, naming the budgets."""
    allowed = list(engine4.bundle.spec.image.budgets)
    with pytest.raises(ValueError, match=str(allowed[-1])):
        ge.prepare_inputs("Hi", bundle=engine4.bundle, images=[_image(9)], max_soft_tokens=333)
    request = vllm_request(ge.prepare_inputs("Hi", bundle=engine4.bundle, images=[_image(9)]))
    request["mm_processor_kwargs"] = {"max_soft_tokens": 333}
    from vllm import SamplingParams

    with pytest.raises(Exception) as info:  # noqa: PT011 - vLLM's own type is the point
        engine4.llm.generate([request], SamplingParams(max_tokens=2), use_tqdm=False)
    assert "333" in str(info.value), str(info.value)


def test_bigger_budget_than_startup_is_accepted(engine4):
    """An engine started at 280 takes a request at 1120: the image gets plan_image's count
    at 1120 (1089 for 1000×1000); vLLM refuses only an item over the encoder cache or a
    prompt over max_model_len."""
    image = _image(10, size=(1000, 1000))
    assert engine4.bundle.engine.startup_budget == 280
    plan = ge.plan_image(image, family="gemma4", max_soft_tokens=1120)
    assert plan.num_soft_tokens == 1089
    facts = engine4.facts()
    assert plan.num_soft_tokens <= facts.encoder_cache_size
    gen = engine4.bundle.generate("What?", images=[image], max_soft_tokens=1120, max_new_tokens=2)
    assert gen.multimodal_tokens == plan.num_soft_tokens


def test_gemma3n_lone_newline_after_placeholder_fails_as_the_layout_says(engine3n, tiny3n):
    text = "<bos>Look\n<image_soft_token>\nWhat?"
    image = _image(11)
    layout = ge.layout_prompt(text, bundle=tiny3n, images=[image], template=False)
    errors = [d.error for d in layout.divergences if d.error]
    assert errors, layout.divergences
    with pytest.raises(EngineError) as info:
        engine3n.bundle.generate(text, images=[image], template=False, max_new_tokens=2)
    assert errors[0] in str(info.value), (errors[0], str(info.value))


@pytest.fixture(scope="module")
def no_audio_engine(tiny4, tmp_path_factory):
    """A Gemma 4 checkpoint without an audio tower (its config has no audio_config, like
    26B/31B), started at budget 70 with a small step (max_num_batched_tokens=512), so
    its encoder cache is 512 tokens. Its generation_config.json lists the placeholder
    ids in suppress_tokens."""
    import json

    folder = tiny4.save_pretrained(tmp_path_factory.mktemp("no_audio") / "tiny-gemma4")
    config = json.loads((folder / "config.json").read_text())
    config["audio_config"] = None
    (folder / "config.json").write_text(json.dumps(config))
    # and a generation config that suppresses the three placeholders (test_suppressed_…)
    gen = json.loads((folder / "generation_config.json").read_text())
    gen["suppress_tokens"] = [tiny4.spec.id_of(t) for t in tiny4.spec.placeholder_tokens.values()]
    (folder / "generation_config.json").write_text(json.dumps(gen))
    bundle = ge.load(
        str(folder),
        engine="vllm",
        max_model_len=2048,
        max_soft_tokens=70,
        limit_mm_per_prompt={"image": 1, "video": 0},
        max_num_batched_tokens=512,
    )
    yield bundle
    bundle.engine.close()


def test_audio_on_a_checkpoint_without_an_audio_tower(no_audio_engine, tiny4, tone):
    from vllm import SamplingParams

    assert "audio" not in no_audio_engine.modalities
    with pytest.raises(Exception, match="does not have an audio tower") as ours:  # noqa: PT011
        no_audio_engine.generate("Hear this.", audios=[(tone, 16_000)], max_new_tokens=2)
    request = vllm_request(ge.prepare_inputs("Hear this.", audios=[(tone, 16_000)], bundle=tiny4))
    with pytest.raises(ValueError) as theirs:
        no_audio_engine.engine.llm.generate([request], SamplingParams(max_tokens=2), use_tqdm=False)
    assert "does not have an audio tower" in str(theirs.value)
    assert "no audio tower" in str(ours.value)


def test_an_item_over_the_encoder_cache(no_audio_engine):
    image = _image(12, size=(1000, 1000))
    plan = ge.plan_serving(
        no_audio_engine.name,
        max_model_len=2048,
        max_soft_tokens=70,
        limit_mm_per_prompt={"image": 1, "video": 0},
        max_num_batched_tokens=512,
        dtype="float32",
    )
    count = ge.plan_image(image, family="gemma4", max_soft_tokens=1120).num_soft_tokens
    assert plan.encoder_cache_size == 512 < count
    with pytest.raises(EngineError) as info:
        no_audio_engine.generate("What?", images=[image], max_soft_tokens=1120, max_new_tokens=2)
    said = str(info.value)
    assert (
        f"contains a(n) image item with {count} embedding tokens, which exceeds the "
        f"pre-allocated encoder cache size {plan.encoder_cache_size}" in said
    ), said
    assert "above the start-up budget 70" in said  # our hint


def test_suppressed_ids_are_never_generated(no_audio_engine, engine4, tiny4):
    """vLLM's Gemma 4 class reads suppress_tokens from the checkpoint folder and its
    compute_logits sets them to −inf: pushed with a +100 logit bias, <|image|> comes out
    of the engine without the list (engine4) and never out of the one with it."""
    from vllm import SamplingParams

    from gemma_explore.inside.logits import suppressed_tokens

    soft = [tiny4.spec.id_of(t) for t in tiny4.spec.placeholder_tokens.values()]
    llm = no_audio_engine.engine.llm
    (read,) = llm.apply_model(lambda model: list(model._suppress_token_ids or ()))
    assert read == soft  # what __init__ read from generation_config.json
    image = tiny4.spec.id_of(tiny4.spec.image_token)
    params = SamplingParams(max_tokens=3, temperature=0.0, logit_bias={image: 100.0})
    request = vllm_request(ge.prepare_inputs("Hi", bundle=tiny4))
    (free,) = engine4.llm.generate([request], params, use_tqdm=False)
    assert image in free.outputs[0].token_ids  # the bias wins where nothing is suppressed
    (held,) = llm.generate([request], params, use_tqdm=False)
    assert not set(held.outputs[0].token_ids) & set(soft)
    report = suppressed_tokens(ge.load(no_audio_engine.name))  # transformers, same folder
    assert report.suppressed == tuple(soft) and all(report.blocked_in_vllm.values())


def test_accepted_requests_always_fit_the_pool(engine4):
    """vllm-project/vllm#39734 ("accepted but never scheduled") cannot happen in vLLM 0.32:
    the engine refuses to start unless one max_model_len request fits the pool less its
    null block (check_enough_kv_cache_memory), and a shorter request takes no more blocks.
    admit() sets the longest admitted request's blocks against the running engine's pool,
    and with one block too little of memory says what vLLM's own start-up check says."""
    from gemma_explore.serving.admission import admit
    from tests.serving.test_vllm_errors import installed_function

    # Where the installed release keeps it (the profile's locations: KV planning moved).
    check_enough_kv_cache_memory = installed_function("check_enough_kv_cache_memory")

    from .facts import engine_core, model_runner
    from .test_startup import _plan

    facts = engine4.facts()
    plan = _plan(engine4, facts)
    vc = engine4.llm.llm_engine.vllm_config
    cpu = dict(
        async_scheduling=vc.scheduler_config.async_scheduling,
        block_size=facts.block_size,
        device="CPU",
        hybrid_kv_cache_manager=facts.hybrid_kv_cache_manager,
    )
    memory = facts.kv_cache_memory_bytes
    longest = admit(
        plan,
        text_tokens=MAX_MODEL_LEN - 1,
        max_tokens=1,
        kv_cache_memory_bytes=memory,
        capacity_options=cpu,
    )
    pool = engine_core(engine4.llm).scheduler.kv_cache_manager.block_pool
    assert longest.verdict == "accepted" and longest.schedulable
    assert longest.blocks_in_pool == pool.get_num_free_blocks()  # the idle pool, null block out
    assert longest.blocks_needed <= longest.blocks_in_pool
    # One block's memory short of one max_model_len request: vLLM's check refuses to start.
    cap = plan.capacity(kv_cache_memory_bytes=memory, **cpu)
    short = (cap.blocks_per_request + 1) * cap.bytes_per_block - 1
    specs = model_runner(engine4.llm).get_kv_cache_spec()
    with pytest.raises(ValueError) as theirs:
        check_enough_kv_cache_memory(vc, specs, short)
    ours = admit(
        plan, text_tokens=10, max_tokens=1, kv_cache_memory_bytes=short, capacity_options=cpu
    )
    assert ours.verdict == "engine refuses to start" and ours.message == str(theirs.value)
    check_enough_kv_cache_memory(vc, specs, short + 1)  # one byte more: vLLM starts
    assert admit(
        plan, text_tokens=10, kv_cache_memory_bytes=short + 1, capacity_options=cpu
    ).schedulable
