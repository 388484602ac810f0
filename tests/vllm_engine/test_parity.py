"""Both stacks, same weights, same numbers (float32): for each family and modality the
saved tiny checkpoint runs through transformers and through vLLM's engine.

- the prompt ids are equal (chat template, raw prompt, per-request mm_processor_kwargs);
- greedy generation gives the same 8 tokens, once transformers follows the two rules in
  which vLLM 0.32 treats a multimodal prompt otherwise (``parity.vllm_rules``: Gemma 3n's
  ``<end_of_image>``/``<end_of_audio>`` embedded from the text table; with
  ``use_bidirectional_attention="vision"``, image spans left causal by vLLM's CPU attention);
  ``test_divergence.py`` shows both against the libraries' own code;
- the embeddings vLLM's runner scatters into the placeholders (``embed_multimodal``,
  captured inside the engine) equal the rows transformers' model puts at the same
  placeholders of ``inputs_embeds`` (captured at its language model's input).

Where the stacks differ by design, the test asserts the difference and names it.
"""

from __future__ import annotations

import pytest
import torch

import gemma_explore as ge
from tests.vllm_cpu_linear import gemma4_audio_linear

from .conftest import ENGINE_OF, HF_OF
from .parity import (
    ATOL,
    CASES,
    CAUSAL_SPANS,
    HARD_TOKENS,
    Run,
    clip,
    image,
    media_for,
    run_both,
    same_everything,
)

_RUNS: dict[tuple[str, str], Run] = {}  # one run per case, shared by the checks below


def _run(family: str, modality: str, request) -> Run:
    if (family, modality) not in _RUNS:
        engine = request.getfixturevalue(ENGINE_OF[family])
        hf = request.getfixturevalue(HF_OF[family])
        _RUNS[family, modality] = run_both(engine, hf, "What is this?", **media_for(modality))
    return _RUNS[family, modality]


def _cpu() -> bool:
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


# Found by these tests, not by design (the README's table names them). Gemma 4's audio
# tower hands linear_end a tensor whose last dimension is strided; whether the engine
# dies on it is the kernel vLLM's CPU build chose here (tests/vllm_cpu_linear.py asks
# vLLM's own dispatch, in the engine's float32): oneDNN and the AMX kernel refuse it,
# torch's linear takes it, CUDA takes any strides.
_AUDIO_LINEAR = gemma4_audio_linear(torch.float32)
GEMMA4_AUDIO_ON_CPU = pytest.mark.xfail(
    condition=_AUDIO_LINEAR is not None and not _AUDIO_LINEAR.takes_strided_input,
    strict=True,
    raises=RuntimeError,
    reason=f"Gemma 4's audio tower hands a strided tensor to vLLM's CPU linear kernel, "
    f"here {_AUDIO_LINEAR.kernel if _AUDIO_LINEAR else '-'}: "
    f"{(_AUDIO_LINEAR.error or '')[:40] if _AUDIO_LINEAR else ''}",
)
# The named differences each family's prompts meet on vLLM's CPU engine (parity.vllm_rules
# reads them off the engine and the model; test_divergence.py explains them).
RULES_ON_CPU = {
    "gemma3n": (HARD_TOKENS,),
    "gemma4": (),
    "gemma4_unified": (CAUSAL_SPANS,),
}


def _marks(family: str, modality: str) -> list:
    return [GEMMA4_AUDIO_ON_CPU] if (family, modality) == ("gemma4", "audio") else []


@pytest.mark.parametrize(
    ("family", "modality"),
    [pytest.param(f, m, marks=_marks(f, m)) for f, m in CASES],
)
def test_same_prompt_ids_and_embeddings(family, modality, request):
    run = _run(family, modality, request)
    same_everything(run, tokens=False)


@pytest.mark.parametrize(
    ("family", "modality"),
    [pytest.param(f, m, marks=_marks(f, m)) for f, m in CASES],
)
def test_same_greedy_tokens(family, modality, request):
    """vLLM's tokens are transformers' once it follows the rules named for the engine; a
    family that meets none (Gemma 4) agrees with plain transformers."""
    run = _run(family, modality, request)
    if _cpu():
        assert run.rules == RULES_ON_CPU[family]
    assert run.vllm_tokens == run.hf_tokens_as_vllm
    if not run.rules:
        assert run.vllm_tokens == run.hf_tokens


@pytest.mark.parametrize("family", ["gemma4", "gemma4_unified"])
def test_per_request_budget_same_ids_and_embeddings(family, request):
    """mm_processor_kwargs on the request (max_soft_tokens=140 on an engine started at
    280): vLLM's processor and transformers' count the same, and the towers agree."""
    engine = request.getfixturevalue(ENGINE_OF[family])
    hf = request.getfixturevalue(HF_OF[family])
    run = run_both(engine, hf, "What is this?", images=[image(2)], max_soft_tokens=140)
    plan = ge.plan_image(image(2), family=family, max_soft_tokens=140)
    assert hf.spec.count_placeholders(run.vllm_ids) == plan.num_soft_tokens
    same_everything(run)


@pytest.mark.parametrize("family", ["gemma4", "gemma4_unified"])
def test_raw_prompt_same_ids_and_embeddings(family, request):
    engine = request.getfixturevalue(ENGINE_OF[family])
    hf = request.getfixturevalue(HF_OF[family])
    spec = hf.spec
    text = (
        f"{spec.turn_start}user\nLook: {spec.image_token} please"
        f"{spec.turn_end}\n{spec.turn_start}model\n"
    )
    media = {"images": [image(3)]}
    run = run_both(engine, hf, text, template=False, **media)
    same_everything(run)


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
    # Both stacks ran the same (double-<bos>) prompt, to the same tokens once transformers
    # embeds <end_of_image> as vLLM does (parity.HARD_TOKENS).
    same_everything(run)


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
