"""Both stacks on one prompt: transformers and vLLM's engine, same saved weights.

Used by ``test_parity.py`` and ``benchmarks/gpu_check.py --vllm`` (which prints the same
checks on CUDA).

>>> run = run_both(engine, tiny4, "What is this?", images=[image(1)])   # doctest: +SKIP
>>> [c.name for c in checks(run)]                                       # doctest: +SKIP
['prompt ids', 'greedy 8 tokens', 'embeddings']
"""

from __future__ import annotations

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


def _hf(model: Any, prepared: Any, spec: Any) -> tuple[list[int], torch.Tensor]:
    """transformers: plain greedy tokens, and inputs_embeds at the placeholders."""
    inputs = encoder_free_video_inputs(model, prepared.to_model(model))
    seen: list[torch.Tensor] = []
    hook = model.model.language_model.register_forward_pre_hook(
        lambda _m, _a, kw: seen.append(kw["inputs_embeds"].detach().clone()), with_kwargs=True
    )
    try:
        with torch.inference_mode():
            out = model.generate(
                **inputs,
                max_new_tokens=STEPS,
                do_sample=False,
                top_p=None,
                top_k=None,
                pad_token_id=0,
            )
    finally:
        hook.remove()
    ids = torch.tensor(prepared.input_ids)
    mm = torch.tensor([spec.id_of(t) for t in spec.placeholder_tokens.values()])
    rows = seen[0][0].cpu()[torch.isin(ids, mm)]  # (placeholders, hidden), prompt order
    return out[0, len(prepared.input_ids) :].tolist(), rows.float()


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
    return Run(
        prepared,
        list(out.prompt_token_ids),
        list(out.outputs[0].token_ids),
        rows,
        hf_tokens,
        hf_rows,
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
    tok_ok = run.vllm_tokens == run.hf_tokens
    out.append(
        Check(
            f"greedy {STEPS} tokens",
            tok_ok,
            "" if tok_ok else f"vLLM {run.vllm_tokens} vs transformers {run.hf_tokens}",
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
