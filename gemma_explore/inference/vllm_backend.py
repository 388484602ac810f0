"""The vLLM backend: engine arguments, requests, and generation through ``vllm.LLM``.

vLLM's engine needs Linux and a CUDA GPU. Everything around it — the engine arguments,
the request dict (a ``vllm.inputs.TextPrompt``), and vLLM's multimodal processor on a
local checkpoint — runs on CPU and is tested there.

>>> engine_args("google/gemma-4-E4B-it", family="gemma4", max_soft_tokens=560)["mm_processor_kwargs"]
{'max_soft_tokens': 560}
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import BackendError
from ..families import get_family
from ..prompting import PreparedInputs
from ..results import Generation
from ..vllm_rules import vllm_adds_bos
from .vllm_processor import vllm_mm_data
from .vllm_recipe import Workload, engine_recipe

__all__ = [
    "VLLM_MISSING",
    "VllmEngine",
    "engine_args",
    "start_vllm",
    "vllm_prompt_text",
    "vllm_request",
]

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
    has_audio: bool = True,
    for_workload: Workload | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """Sensible ``vllm.LLM`` arguments for a Gemma 3n / Gemma 4 checkpoint.

    - ``max_model_len`` 8192: room for a few images at the largest budget plus a clip,
      without reserving the full 32k–128k context's KV cache.
    - ``limit_mm_per_prompt``: 4 images and 1 clip (and 1 video for Gemma 4); vLLM
      profiles memory for these counts at start-up.
    - ``mm_processor_kwargs``: Gemma 4's start-up image budget: the default for requests
      that name none, and what vLLM's profiler assumes for images. Requests may ask for
      another budget with their own ``mm_processor_kwargs``.
    - ``enforce_eager``: skip CUDA-graph capture; a workshop box starts faster.
    - ``has_audio=False`` (Gemma 4 26B/31B: no ``audio_config``): audio stays out of the
      limits. vLLM would ignore it silently there and then refuse every clip with
      "does not have an audio tower".
    - ``for_workload=Workload(images=4, max_soft_tokens=560, audio_clips=1)``: propose
      ``max_model_len``, ``limit_mm_per_prompt``, ``mm_processor_kwargs`` and
      ``max_num_batched_tokens`` for that workload instead of the defaults above
      (arguments given explicitly still win); ``engine_recipe`` gives the reasons.
    """
    spec = get_family(family)
    limits = {"image": 4, "audio": 1} if has_audio else {"image": 4}
    if spec.has_video:
        limits["video"] = 1
    if not has_audio and limit_mm_per_prompt and limit_mm_per_prompt.get("audio"):
        raise ValueError(
            f"{model} has no audio tower (its config has no audio_config), so vLLM serves no "
            "audio: drop 'audio' from limit_mm_per_prompt, or use an E2B/E4B checkpoint."
        )
    args: dict[str, Any] = {
        "model": model,
        "max_model_len": max_model_len or 8192,
        "limit_mm_per_prompt": dict(limit_mm_per_prompt or limits),
        "enforce_eager": enforce_eager,
        "dtype": "bfloat16",
        "gpu_memory_utilization": 0.85,
        "trust_remote_code": False,
    }
    if spec.image.budgets:
        budget = max_soft_tokens or spec.image.default_budget
        if budget not in spec.image.budgets:
            raise ValueError(f"max_soft_tokens must be one of {list(spec.image.budgets)}.")
        args["mm_processor_kwargs"] = {"max_soft_tokens": budget}
    elif max_soft_tokens is not None:
        raise ValueError(f"{spec.display_name} has no image budget; drop max_soft_tokens.")
    if for_workload is not None:
        recipe = engine_recipe(model, workload=for_workload, family=family, has_audio=has_audio)
        explicit = {"max_model_len": max_model_len, "limit_mm_per_prompt": limit_mm_per_prompt,
                    "mm_processor_kwargs": max_soft_tokens}  # fmt: skip
        args.update({k: v for k, v in recipe.args.items() if explicit.get(k) is None})
    args.update(overrides)
    return args


def vllm_prompt_text(prepared: PreparedInputs) -> str:
    """The text to send ``LLM.generate`` so that vLLM's own tokenization yields one <bos>.

    A chat template writes ``<bos>`` itself. vLLM adds another for Gemma 3n text prompts
    (its default ``add_special_tokens=True``; only Gemma 4 turns it off), so for those the
    template's ``<bos>`` is dropped from the text. A raw prompt is sent as written.
    """
    spec = get_family(prepared.family)
    text = prepared.text
    if prepared.template and vllm_adds_bos(spec) and text.startswith(spec.bos_token):
        return text[len(spec.bos_token) :]
    return text


def vllm_request(prepared: PreparedInputs) -> dict[str, Any]:
    """A ``vllm.inputs.TextPrompt`` for a prepared turn: the prompt text (see
    :func:`vllm_prompt_text`), the media as ``multi_modal_data``, and the budget the caller
    asked for on this request."""
    request: dict[str, Any] = {"prompt": vllm_prompt_text(prepared)}
    data = vllm_mm_data(prepared)
    if data:
        request["multi_modal_data"] = data
    if prepared.request_kwargs:
        request["mm_processor_kwargs"] = dict(prepared.request_kwargs)
    return request


def start_vllm(model: str, *, family: str, **engine_overrides: Any) -> Any:
    """Start ``vllm.LLM`` with :func:`engine_args` (needs vllm and a CUDA GPU)."""
    try:
        import vllm
    except ImportError as exc:
        raise ImportError(VLLM_MISSING) from exc
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError(
            "vLLM's engine needs a CUDA GPU and none is visible. On this machine use "
            "backend='hf'; vLLM's placeholder logic can still be checked with "
            "check_image_parity / check_audio_parity / check_video_parity and "
            "layout_prompt(…, template=False)."
        )
    return vllm.LLM(**engine_args(model, family=family, **engine_overrides))


@dataclass
class VllmEngine:
    """Answers prepared turns with ``vllm.LLM.generate`` (greedy)."""

    llm: Any  # vllm.LLM, or anything with its generate(requests, params, use_tqdm=)
    family: str
    is_random_weights: bool = False
    backend: str = "vllm"
    keep_alive: Any = None  # e.g. the temporary folder a tiny checkpoint was saved to
    startup_budget: int | None = None  # mm_processor_kwargs' max_soft_tokens at start-up

    def _refused(self, prepared: PreparedInputs, exc: Exception) -> BackendError:
        """vLLM's own words, and where to look."""
        hints = [
            "Lay the prompt out with ge.layout_prompt(…, template=False) to see where vLLM "
            "and transformers part (Gemma 3n's newline rules)."
            if not prepared.template
            else ""
        ]
        asked = prepared.request_kwargs.get("max_soft_tokens")
        if asked and self.startup_budget and asked > self.startup_budget:
            hints.append(
                f"This request asks for budget {asked}, above the start-up budget "
                f"{self.startup_budget}: vLLM sized its encoder cache at start-up, so start it "
                "with the largest budget you will ask for (engine_args(max_soft_tokens=…))."
            )
        hint = " ".join(h for h in hints if h)
        return BackendError(f"vLLM refused the request: {type(exc).__name__}: {exc}. {hint}")

    def generate(self, prepared: PreparedInputs, *, max_new_tokens: int = 32) -> Generation:
        from vllm import SamplingParams

        request = vllm_request(prepared)
        params = SamplingParams(max_tokens=max_new_tokens, temperature=0.0)
        start = time.perf_counter()
        try:
            (out,) = self.llm.generate([request], params, use_tqdm=False)
        except (ValueError, RuntimeError, AssertionError) as exc:
            raise self._refused(prepared, exc) from exc
        elapsed = time.perf_counter() - start
        completion = out.outputs[0]
        metrics = getattr(out, "metrics", None)
        first = getattr(metrics, "first_token_latency", None) if metrics is not None else None
        n_new = len(completion.token_ids)
        prefill = float(first) if first else None
        decode = elapsed - prefill if prefill is not None else None
        prompt_ids = list(out.prompt_token_ids or [])
        return Generation(
            text=completion.text,
            prompt_tokens=len(prompt_ids),
            multimodal_tokens=get_family(self.family).count_placeholders(prompt_ids),
            generated_tokens=n_new,
            preprocess_s=prepared.preprocess_s,
            encoder_s=None,  # inside vLLM's step; not separable from outside
            prefill_s=prefill,
            decode_tokens_per_s=(n_new - 1) / decode if n_new > 1 and decode else None,
            is_random_weights=self.is_random_weights,
            timings={"total_s": elapsed},
        )

    def stream(
        self, prepared: PreparedInputs, *, max_new_tokens: int = 32, stop: Any = None
    ) -> Iterator[str]:
        """``vllm.LLM`` answers whole: one piece (``stop`` cannot cut it short)."""
        yield self.generate(prepared, max_new_tokens=max_new_tokens).text
