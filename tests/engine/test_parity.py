"""Both stacks, same weights, same numbers (float32): for each family and modality the
saved tiny checkpoint runs through transformers and through vLLM's engine.

- the prompt ids are equal (chat template, raw prompt, per-request mm_processor_kwargs);
- greedy generation gives the same 8 tokens;
- the embeddings vLLM's runner scatters into the placeholders (``embed_multimodal``,
  captured inside the engine) equal the rows transformers' model puts at the same
  placeholders of ``inputs_embeds`` (captured at its language model's input).

Where the stacks differ by design, the test asserts the difference and names it.
"""

from __future__ import annotations

import pytest
import torch

import gemma_explore as ge

from .conftest import ENGINE_OF, HF_OF
from .parity import ATOL, CASES, clip, image, media_for, run_both, same_everything


@pytest.mark.parametrize(("family", "modality"), CASES)
def test_template_prompt_same_ids_tokens_and_embeddings(family, modality, request):
    engine = request.getfixturevalue(ENGINE_OF[family])
    hf = request.getfixturevalue(HF_OF[family])
    same_everything(run_both(engine, hf, "What is this?", **media_for(modality)))


@pytest.mark.parametrize("family", ["gemma4", "gemma4_unified"])
def test_per_request_budget_same_ids_tokens_and_embeddings(family, request):
    """mm_processor_kwargs on the request (max_soft_tokens=140 on an engine started at
    280): vLLM's processor and transformers' count the same, and the towers agree."""
    engine = request.getfixturevalue(ENGINE_OF[family])
    hf = request.getfixturevalue(HF_OF[family])
    run = run_both(engine, hf, "What is this?", images=[image(2)], max_soft_tokens=140)
    plan = ge.planimage(image(2), family=family, max_soft_tokens=140)
    assert hf.spec.count_placeholders(run.vllm_ids) == plan.num_soft_tokens
    same_everything(run)


@pytest.mark.parametrize("family", ["gemma4", "gemma4_unified"])
def test_raw_prompt_same_ids_and_tokens(family, request):
    engine = request.getfixturevalue(ENGINE_OF[family])
    hf = request.getfixturevalue(HF_OF[family])
    spec = hf.spec
    # Unified audio is counted another way by vLLM (the named difference below): image only.
    clip = spec.vllm_audio_rule is None
    audio = f" and {spec.audio_token}" if clip else ""
    text = (f"{spec.turn_start}user\nLook: {spec.image_token}{audio}"
            f"{spec.turn_end}\n{spec.turn_start}model\n")  # fmt: skip
    media = {"images": [image(3)], "audios": [(clip(1.0, 3), 16_000)] if clip else []}
    same_everything(run_both(engine, hf, text, template=False, **media))


def test_gemma3n_raw_prompt_gets_two_bos_by_design(engine3n, tiny3n):
    """Named difference: vLLM prepends <bos> to Gemma 3n text prompts, so a raw prompt that
    starts with '<bos>' (as the chat template writes it) reaches the model with two; our
    raw-prompt tokenization does the same, and the layout warns."""
    spec = tiny3n.spec
    text = f"<bos>{spec.turn_start}user\nLook: {spec.image_token} please{spec.turn_end}\n"
    run = run_both(engine3n, tiny3n, text, template=False, images=[image(4)])
    bos = spec.id_of(spec.bos_token)
    assert run.vllm_ids[:2] == [bos, bos] and run.vllm_ids[2] != bos
    layout = ge.layout_prompt(text, bundle=tiny3n, images=[image(4)], template=False)
    assert any("two <bos>" in w for w in layout.warnings)
    same_everything(run)  # both stacks ran the same (double-<bos>) prompt


def test_gemma3n_template_prompt_has_one_bos(engine3n, tiny3n):
    """The chat-template path drops the template's <bos> from the text vLLM tokenizes."""
    run = run_both(engine3n, tiny3n, "Hi", images=[image(5)])
    bos = tiny3n.spec.id_of(tiny3n.spec.bos_token)
    assert run.vllm_ids[0] == bos and run.vllm_ids[1] != bos


def test_unified_audio_vllm_drops_embedder_rows_by_design(engineu, tinyu):
    """Named difference: vLLM counts Unified audio with Gemma 4's mel rule, so its prompt
    has fewer placeholders than the embedder has rows; the runner keeps the first rows
    and drops the rest. check_audio_parity names the dropped rows; the engine shows them."""
    samples = 3201  # 5.0 frames of 640: 6 embedder rows, 5 vLLM placeholders
    wave = clip(samples / 16_000, 6)[:samples]
    run = run_both(engineu, tinyu, "What is this?", audios=[(wave, 16_000)])
    report = ge.check_audio_parity((wave, 16_000), bundle=tinyu)
    spec = tinyu.spec
    n_vllm = spec.count_placeholders(run.vllm_ids)
    n_hf = spec.count_placeholders(run.prepared.input_ids)
    assert n_hf - n_vllm == len(report.vllm_dropped_rows) > 0
    assert report.vllm_dropped_rows == tuple(range(n_vllm, n_hf))
    # The engine's embedder made every row; the prompt holds the first n_vllm of them.
    assert run.vllm_rows is not None and run.vllm_rows.shape[0] == n_hf
    torch.testing.assert_close(run.vllm_rows, run.hf_rows, atol=ATOL, rtol=1e-3)
    assert run.vllm_ids != run.prepared.input_ids
