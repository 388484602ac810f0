"""Both stacks on one prompt: transformers and vLLM's engine, same saved weights.

Used by ``test_parity.py`` and ``benchmarks/gpu_check.py --vllm`` (which prints the same
checks on CUDA).

vLLM 0.32's language models treat a multimodal prompt otherwise than transformers 5.19 in
two places (``test_divergence.py`` shows each against both libraries' own code):

- :data:`HARD_TOKENS` (Gemma 3n): ``<end_of_image>`` (262144) and ``<end_of_audio>``
  (262272) are embedded by ``embed_vision`` / ``embed_audio``'s hard-token table in
  transformers (``modeling_gemma3n.py`` ``Gemma3nModel.forward``, "Handle vision tokens"),
  but from the text table in vLLM (``gemma3n.py`` ``Gemma3nSelfDecoder.embed_input_ids``:
  ``embed_tokens(input_ids) * embed_scale`` for every id that is not a placeholder);
- :data:`CAUSAL_SPANS` (``use_bidirectional_attention="vision"``: Unified, and the released
  26B-A4B and 31B, which the tiny Gemma 4 does not copy): vLLM asks
  for bidirectional image spans (``is_mm_prefix_lm``) but the CPU attention backend has no
  ``supports_mm_prefix`` and never reads the ranges, so every layer stays causal, while
  transformers' ``Gemma4UnifiedModel.forward`` opens each span on every layer, past the
  window. Where the backend has them (CUDA), vLLM opens spans on sliding layers only,
  inside the window (:data:`SLIDING_SPANS`: transformers' own
  ``create_masks_for_generate`` override, the Gemma 4 rule).

``transformers_as_vllm`` applies the rules that hold for an engine to transformers, so the
greedy tokens can be compared token for token.

>>> run = run_both(engine, tiny4, "What is this?", images=[image(1)])   # doctest: +SKIP
>>> [c.name for c in checks(run)]                                       # doctest: +SKIP
['prompt ids', 'greedy 8 tokens', 'embeddings']
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

import gemma_explore as ge
from gemma_explore.engines.hf import encoder_free_video_inputs
from gemma_explore.engines.vllm import vllm_request

from .facts import capture_mm_embeddings, fresh

STEPS = 8
ATOL = 1e-4  # float32 on both sides; the towers differ only in kernel order


def image(seed: int, size=(240, 320)):
    from PIL import Image

    rng = np.random.RandomState(seed)
    return Image.fromarray(rng.randint(0, 255, (*size, 3), np.uint8))


def clip(seconds: float, seed: int) -> np.ndarray:
    t = np.arange(int(16_000 * seconds)) / 16_000
    noise = np.random.RandomState(seed).randn(t.size) * 0.05
    return (0.3 * np.sin(2 * np.pi * 330 * t) + noise).astype(np.float32)


def video(seed: int):
    frames = np.random.RandomState(seed).randint(0, 255, (16, 96, 128, 3), np.uint8)
    return (frames, 4.0)


# (family, modality): every modality a family serves; Unified audio differs by design
# (test_unified_audio_vllm_drops_embedder_rows_by_design), so it is checked apart.
CASES = [
    ("gemma3n", "image"),
    ("gemma3n", "audio"),
    ("gemma4", "image"),
    ("gemma4", "audio"),
    ("gemma4", "video"),
    ("gemma4_unified", "image"),
    ("gemma4_unified", "video"),
]


def media_for(modality: str, seed: int = 1) -> dict[str, Any]:
    """One item of ``modality`` as prepare_inputs takes it."""
    return {
        "image": {"images": [image(seed)]},
        "audio": {"audios": [(clip(2.0, seed), 16_000)]},
        "video": {"videos": [video(seed)]},
    }[modality]


@dataclass
class Run:
    """One prompt through both stacks."""

    prepared: Any  # gemma_explore PreparedInputs (transformers' processor)
    vllm_ids: list[int]  # the prompt vLLM's engine ran
    vllm_tokens: list[int]  # its greedy answer
    vllm_rows: torch.Tensor | None  # (placeholders, hidden) embed_multimodal, items in order
    hf_tokens: list[int]
    hf_rows: torch.Tensor  # (placeholders, hidden) transformers' inputs_embeds there
    rules: tuple[str, ...] = ()  # the named differences that hold for this engine and model
    hf_tokens_as_vllm: list[int] | None = None  # transformers with ``rules`` applied


# The named differences (module docstring); test_divergence.py shows each.
HARD_TOKENS = "Gemma 3n: vLLM embeds <end_of_image>/<end_of_audio> from the text table"
CAUSAL_SPANS = "vLLM's CPU attention: image spans stay causal (no mm_prefix)"
SLIDING_SPANS = "vLLM: image spans open on sliding layers only, inside the window"


def has_hard_token_table(model: Any) -> bool:
    """Whether a transformers model embeds ids above the text pieces with its tower
    embedders' own tables (Gemma 3n's ``embed_vision`` / ``embed_audio`` have a
    ``vocab_offset``; Gemma 4's embedders take soft tokens only)."""
    return hasattr(getattr(model.model, "embed_vision", None), "vocab_offset")


def hard_token_rows(model: Any, input_ids: torch.Tensor) -> torch.Tensor:
    """Where transformers' Gemma 3n embeds an id with a tower embedder's hard-token table
    (ids from ``embed_vision.vocab_offset`` up, placeholders aside): a bool mask like
    ``input_ids``. All False for models without those embedders."""
    if not has_hard_token_table(model):
        return torch.zeros_like(input_ids, dtype=torch.bool)
    vision = model.model.embed_vision
    placeholders = torch.tensor(
        [model.config.image_token_id, model.config.audio_token_id], device=input_ids.device
    )
    return (input_ids >= vision.vocab_offset) & ~torch.isin(input_ids, placeholders)


def engine_drops_image_spans(llm: Any) -> bool:
    """True when vLLM's engine asks its attention layers for bidirectional image spans
    (``Attention.use_mm_prefix``, from ``model_config.is_mm_prefix_lm``) and their backend
    cannot give them (``supports_mm_prefix()`` False: the CPU backend)."""

    def probe(model: Any) -> bool:
        from vllm.model_executor.layers.attention import Attention

        return any(
            m.use_mm_prefix and not m.attn_backend.supports_mm_prefix()
            for m in model.modules()
            if isinstance(m, Attention)
        )

    return any(llm.apply_model(probe))


def vllm_rules(llm: Any, model: Any) -> tuple[str, ...]:
    """The named differences that hold between this vLLM engine and this transformers
    model (a subset of :data:`HARD_TOKENS`, :data:`CAUSAL_SPANS`, :data:`SLIDING_SPANS`)."""
    rules = []
    if has_hard_token_table(model):
        rules.append(HARD_TOKENS)
    text = model.config.get_text_config()
    if getattr(text, "use_bidirectional_attention", None) == "vision":
        rules.append(CAUSAL_SPANS if engine_drops_image_spans(llm) else SLIDING_SPANS)
    return tuple(rules)


@contextmanager
def transformers_as_vllm(model: Any, rules: tuple[str, ...]) -> Iterator[None]:
    """Inside, ``model`` (transformers) follows vLLM's ``rules`` at every forward: the
    hard-token rows of ``inputs_embeds`` from the text table, and the image spans as vLLM's
    attention opens them."""
    inner = model.model
    ids: dict[str, torch.Tensor] = {}
    hooks = []

    def outer(_m, args, kw):
        input_ids = kw.get("input_ids", args[0] if args else None)
        ids["now"] = input_ids
        if CAUSAL_SPANS in rules:
            kw["mm_token_type_ids"] = None  # no spans: transformers' causal masks
        elif SLIDING_SPANS in rules and kw.get("mm_token_type_ids") is not None:
            kw["attention_mask"] = model.create_masks_for_generate(
                config=model.config,
                inputs_embeds=torch.empty((*input_ids.shape, 0), dtype=model.dtype),
                attention_mask=kw.get("attention_mask"),
                past_key_values=kw.get("past_key_values"),
                position_ids=kw.get("position_ids"),
                mm_token_type_ids=kw["mm_token_type_ids"],
                is_first_iteration=True,
            )
        return args, kw

    def lm(_m, args, kw):
        embeds, input_ids = kw.get("inputs_embeds"), ids.get("now")
        if HARD_TOKENS in rules and embeds is not None and input_ids is not None:
            rows = hard_token_rows(model, input_ids)
            if rows.any():
                text = inner.language_model.embed_tokens(input_ids).to(embeds.dtype)
                kw["inputs_embeds"] = torch.where(rows[..., None], text, embeds)
        return args, kw

    hooks.append(inner.register_forward_pre_hook(outer, with_kwargs=True))
    hooks.append(inner.language_model.register_forward_pre_hook(lm, with_kwargs=True))
    try:
        yield
    finally:
        for h in hooks:
            h.remove()


def _greedy(model: Any, inputs: dict[str, Any]) -> list[int]:
    with torch.inference_mode():
        out = model.generate(
            **inputs, max_new_tokens=STEPS, do_sample=False, top_p=None, top_k=None, pad_token_id=0
        )
    return out[0, inputs["input_ids"].shape[1] :].tolist()


def _hf(model: Any, prepared: Any, spec: Any) -> tuple[list[int], torch.Tensor]:
    """transformers: plain greedy tokens, and inputs_embeds at the placeholders."""
    inputs = encoder_free_video_inputs(model, prepared.to_model(model))
    seen: list[torch.Tensor] = []
    hook = model.model.language_model.register_forward_pre_hook(
        lambda _m, _a, kw: seen.append(kw["inputs_embeds"].detach().clone()), with_kwargs=True
    )
    try:
        tokens = _greedy(model, inputs)
    finally:
        hook.remove()
    ids = torch.tensor(prepared.input_ids)
    mm = torch.tensor([spec.id_of(t) for t in spec.placeholder_tokens.values()])
    rows = seen[0][0].cpu()[torch.isin(ids, mm)]  # (placeholders, hidden), prompt order
    return tokens, rows.float()


def run_both(engine, hf_bundle, text, **media) -> Run:
    from vllm import SamplingParams

    prepared = ge.prepare_inputs(text, **media, bundle=hf_bundle)
    request = vllm_request(ge.prepare_inputs(text, **media, bundle=engine.bundle))
    fresh(engine.llm)
    calls = capture_mm_embeddings(engine.llm)
    params = SamplingParams(max_tokens=STEPS, temperature=0.0)
    try:
        (out,) = engine.llm.generate([request], params, use_tqdm=False)
    except BaseException:
        engine.bundle.engine._drain()  # a failed step must not hang the next test
        raise
    rows = torch.cat([t for call in calls for t in call]) if calls else None
    hf_tokens, hf_rows = _hf(hf_bundle.model, prepared, hf_bundle.spec)
    rules = vllm_rules(engine.llm, hf_bundle.model)
    as_vllm = hf_tokens
    if rules:
        model = hf_bundle.model
        with transformers_as_vllm(model, rules):
            as_vllm = _greedy(model, encoder_free_video_inputs(model, prepared.to_model(model)))
    return Run(
        prepared,
        list(out.prompt_token_ids),
        list(out.outputs[0].token_ids),
        rows,
        hf_tokens,
        hf_rows,
        rules,
        as_vllm,
    )


@dataclass(frozen=True)
class Check:
    """One comparison of a run."""

    name: str  # "prompt ids", "greedy 8 tokens", "embeddings"
    ok: bool
    detail: str  # what differed (empty when equal)


def checks(run: Run) -> list[Check]:
    """The three comparisons, each with what differed."""
    ids_ok = run.vllm_ids == run.prepared.input_ids
    first = next(
        (
            i
            for i, (a, b) in enumerate(zip(run.vllm_ids, run.prepared.input_ids, strict=False))
            if a != b
        ),
        min(len(run.vllm_ids), len(run.prepared.input_ids)),
    )
    out = [
        Check(
            "prompt ids",
            ids_ok,
            ""
            if ids_ok
            else f"{len(run.vllm_ids)} vs {len(run.prepared.input_ids)} ids, first "
            f"difference at {first}",
        )
    ]
    # With the named differences applied to transformers (none for most engines).
    theirs = run.hf_tokens if run.hf_tokens_as_vllm is None else run.hf_tokens_as_vllm
    tok_ok = run.vllm_tokens == theirs
    named = f" (transformers with: {'; '.join(run.rules)})" if run.rules else ""
    out.append(
        Check(
            f"greedy {STEPS} tokens",
            tok_ok,
            (f"equal{named}" if run.rules else "")
            if tok_ok
            else f"vLLM {run.vllm_tokens} vs transformers {theirs}{named}",
        )
    )
    if run.vllm_rows is None or run.vllm_rows.shape != run.hf_rows.shape:
        shape = None if run.vllm_rows is None else tuple(run.vllm_rows.shape)
        out.append(
            Check("embeddings", False, f"vLLM {shape} vs transformers {tuple(run.hf_rows.shape)}")
        )
    else:
        diff = float((run.vllm_rows - run.hf_rows).abs().max())
        scale = float(run.hf_rows.abs().max())
        ok = diff <= ATOL + 1e-3 * scale
        out.append(Check("embeddings", ok, f"max |Δ| {diff:.2e} (max |x| {scale:.2e})"))
    return out


def same_everything(run: Run, *, tokens: bool = True) -> None:
    """Every check equal (``tokens=False``: all but the greedy tokens)."""
    bad = [c for c in checks(run) if not c.ok and (tokens or not c.name.startswith("greedy"))]
    assert not bad, bad
