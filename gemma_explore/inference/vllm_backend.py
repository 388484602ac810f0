"""The vLLM backend: engine arguments, requests, and generation through ``vllm.LLM``.

vLLM's engine needs Linux and a CUDA GPU. Everything around it — the engine arguments,
the request dict (a ``vllm.inputs.TextPrompt``), and vLLM's multimodal processor on a
local checkpoint — runs on CPU and is tested there.

>>> engine_args("google/gemma-4-E4B-it", family="gemma4", max_soft_tokens=560)["mm_processor_kwargs"]
{'max_soft_tokens': 560}
"""

from __future__ import annotations

import time
from typing import Any

from ..families import get_family
from ..prompting import PreparedInputs, prepare_inputs

__all__ = ["engine_args", "generate_vllm", "load_vllm", "vllm_request", "VLLM_MISSING"]

VLLM_MISSING = (
    "backend='vllm' needs the vllm package: pip install -e '.[vllm]' (Linux + CUDA GPU). "
    "Without it, use backend='hf', or backend='openai' against a running `vllm serve`."
)


def engine_args(
    model: str,
    *,
    family: str,
    max_soft_tokens: int | None = None,
    max_model_len: int | None = None,
    limit_mm_per_prompt: dict[str, int] | None = None,
    enforce_eager: bool = True,
    **overrides: Any,
) -> dict[str, Any]:
    """Sensible ``vllm.LLM`` arguments for a Gemma 3n / Gemma 4 checkpoint.

    - ``max_model_len`` 8192: room for a few images at the largest budget plus a clip,
      without reserving the full 32k–128k context's KV cache.
    - ``limit_mm_per_prompt``: 4 images and 1 clip (and 1 video for Gemma 4); vLLM
      profiles memory for these counts at start-up.
    - ``mm_processor_kwargs``: Gemma 4's image budget. Give the *largest* budget any
      request will use — vLLM sizes its encoder cache from it — and lower budgets per
      request with ``mm_processor_kwargs`` on the request.
    - ``enforce_eager``: skip CUDA-graph capture; a workshop box starts faster.
    """
    spec = get_family(family)
    limits = {"image": 4, "audio": 1}
    if spec.has_video:
        limits["video"] = 1
    args: dict[str, Any] = {
        "model": model,
        "max_model_len": max_model_len or 8192,
        "limit_mm_per_prompt": dict(limit_mm_per_prompt or limits),
        "enforce_eager": enforce_eager,
        "dtype": "bfloat16",
        "gpu_memory_utilization": 0.85,
        "trust_remote_code": False,
    }
    if spec.name == "gemma4":
        budget = max_soft_tokens or spec.image.default_budget
        if budget not in spec.image.budgets:
            raise ValueError(f"max_soft_tokens must be one of {list(spec.image.budgets)}.")
        args["mm_processor_kwargs"] = {"max_soft_tokens": budget}
    elif max_soft_tokens is not None:
        raise ValueError("Gemma 3n has no image budget; drop max_soft_tokens.")
    args.update(overrides)
    return args


def vllm_request(prepared: PreparedInputs) -> dict[str, Any]:
    """A ``vllm.inputs.TextPrompt`` for a prepared turn: the chat-template text, the
    media as ``multi_modal_data``, and the per-request ``mm_processor_kwargs``."""
    from ..parity import vllm_mm_data

    request: dict[str, Any] = {"prompt": prepared.text}
    data = vllm_mm_data(prepared)
    if data:
        request["multi_modal_data"] = data
    if prepared.family == "gemma4" and prepared.max_soft_tokens:
        request["mm_processor_kwargs"] = {"max_soft_tokens": prepared.max_soft_tokens}
    return request


def load_vllm(model: str, *, family: str, **engine_overrides: Any):
    """Start ``vllm.LLM`` with :func:`engine_args`; returns (llm, processor)."""
    try:
        import vllm
    except ImportError as exc:
        raise ImportError(VLLM_MISSING) from exc
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError(
            "vLLM's engine needs a CUDA GPU and none is visible. On this machine use "
            "backend='hf'; vLLM's placeholder logic can still be checked with check_parity()."
        )
    from transformers import AutoProcessor

    llm = vllm.LLM(**engine_args(model, family=family, **engine_overrides))
    processor = AutoProcessor.from_pretrained(model, trust_remote_code=False)
    return llm, processor


def generate_vllm(
    bundle: Any,
    messages: Any,
    *,
    max_new_tokens: int = 32,
    max_soft_tokens: int | None = None,
    **processor_kwargs: Any,
):
    """One chat turn through ``vllm.LLM.generate`` (greedy)."""
    from vllm import SamplingParams

    from ..models.bundle import Generation

    prepared = prepare_inputs(bundle, messages, max_soft_tokens=max_soft_tokens, **processor_kwargs)
    request = vllm_request(prepared)
    params = SamplingParams(max_tokens=max_new_tokens, temperature=0.0)
    start = time.perf_counter()
    (out,) = bundle.model.generate([request], params, use_tqdm=False)
    elapsed = time.perf_counter() - start
    completion = out.outputs[0]
    metrics = getattr(out, "metrics", None)
    first = getattr(metrics, "first_token_latency", None) if metrics is not None else None
    n_new = len(completion.token_ids)
    prefill = float(first) if first else elapsed
    decode = elapsed - prefill
    spec = bundle.spec
    mm_ids = {spec.id_of(spec.image_token), spec.id_of(spec.audio_token)}
    if spec.video_token:
        mm_ids.add(spec.id_of(spec.video_token))
    prompt_ids = list(out.prompt_token_ids or [])
    return Generation(
        text=completion.text,
        prompt_tokens=len(prompt_ids),
        multimodal_tokens=sum(1 for i in prompt_ids if i in mm_ids),
        generated_tokens=n_new,
        preprocess_s=prepared.preprocess_s,
        encoder_s=0.0,  # inside vLLM's step; not separable from outside
        prefill_s=prefill,
        decode_tokens_per_s=(n_new - 1) / decode if n_new > 1 and decode > 0 else 0.0,
        is_random_weights=bundle.is_random_weights,
        timings={"total_s": elapsed},
    )
