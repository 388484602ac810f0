"""What ``vllm serve`` needs for a checkpoint: its engine arguments, the command line, and
production advice (library logic behind ``gemma-explore serve-args``; no printing here).

Every function takes ``vllm_version`` (None: the installed vLLM, else the newest supported
release; :func:`~gemma_explore.vllm_versions.vllm_profile`): the release whose defaults
size the KV pool and whose name the printed line carries.

>>> serve_command({"model": "m", "max_model_len": 8192})
'vllm serve m --max-model-len 8192'
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gemma_explore.facts.families import get_family
from gemma_explore.vllm_versions import VllmProfile, vllm_profile

if TYPE_CHECKING:
    from gemma_explore.serving.recipe import Workload

__all__ = [
    "CPU_KV_CACHE_BYTES",
    "ServeFit",
    "engine_args",
    "fit_warnings",
    "lever_lines",
    "serve_command",
    "serve_fit",
    "serving_advice",
    "serving_plan_for",
    "starts",
    "utilization_reason",
]


# vLLM's CPU engine's KV cache: 256 MiB holds ~500k tokens of a tiny model and a few thousand
# of a real E2B/E4B; vLLM's CPU default (a share of RAM) would reserve gigabytes.
CPU_KV_CACHE_BYTES = 256 << 20


def _family_and_audio(model: str, family: str | None) -> tuple[str, bool]:
    """A checkpoint's family and whether it has an audio tower (Gemma 4 26B/31B: none),
    from its config: a local folder's, the local HF cache copy or the built-in facts."""
    from gemma_explore.facts.released import is_released
    from gemma_explore.models.checkpoints import (
        cached_file_of,
        config_for,
        family_from_config,
        guess_family,
        modalities_of,
    )
    from gemma_explore.models.tiny import TINY_NAMES

    config = None
    if Path(model).is_dir():  # a local checkpoint: its config says the family and towers
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(model)
    elif is_released(model) and cached_file_of(model, "config.json") is not None:
        config = config_for(model)[0]  # the local HF cache copy; else the facts (no config
        # object: building one imports transformers' model code, seconds for a lookup)
    if family is None:
        family = TINY_NAMES.get(model) or (
            family_from_config(config, model) if config is not None else guess_family(model)
        )
    fam = get_family(family).name
    return fam, "audio" in modalities_of(fam, config, model)


def engine_args(
    model: str,
    *,
    family: str | None = None,
    workload: Workload | None = None,
    max_soft_tokens: int | None = None,
    max_model_len: int | None = None,
    limit_mm_per_prompt: dict[str, int] | None = None,
    has_audio: bool | None = None,
    workshop: bool = True,
    device: str = "cuda",
    gpu: str | None = None,
    gpu_memory_gib: float | None = None,
    vllm_version: str | None = None,
    reasons: dict[str, str] | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """vLLM's start-up arguments for a Gemma 3n / Gemma 4 checkpoint (``vllm.LLM(**args)``;
    :func:`serve_command` writes them as ``vllm serve``): the one function for them, which
    ``ge.load(..., engine="vllm")``, ``serve-args`` and the course call. The defaults:

    - ``max_model_len`` 8192: room for a few images at the largest budget plus a clip,
      without reserving the full 32k–128k context's KV cache.
    - ``limit_mm_per_prompt``: 4 images and 1 clip (and 1 video for Gemma 4); vLLM
      profiles memory for these counts at start-up.
    - ``mm_processor_kwargs``: Gemma 4's start-up image budget: the default for requests
      that name none, and what vLLM's profiler assumes for images. Requests may ask for
      another budget with their own ``mm_processor_kwargs``.
    - ``has_audio=False`` (Gemma 4 26B/31B: no ``audio_config``): audio stays out of the
      limits. vLLM starts either way, then fails each clip in its processor: one that
      comes with its rate (``(wave, rate)``, as every served request's clip does) while
      it is parsed, with "Audio resampling is not supported when `target_sr` is not
      provided" (the data parser of a model without audio has no target rate), before
      any count check; a bare array (what :class:`VllmEngine` sends) at the count check,
      with "does not have an audio tower".
    - ``workload=Workload(images=4, max_soft_tokens=560, audio_clips=1)``: the serving
      plan's ``max_model_len``, ``limit_mm_per_prompt``, ``mm_processor_kwargs`` and
      ``max_num_batched_tokens`` for it (on ``gpu`` / ``gpu_memory_gib``'s ``vllm serve``
      defaults, else 80 GiB); values you give win, and ``reasons`` (argument → why) says so.
    - ``device="cpu"`` (vLLM's CPU build): the KV cache gets :data:`CPU_KV_CACHE_BYTES`
      (``kv_cache_memory_bytes``; on CPU ``gpu_memory_utilization`` would be a share of
      RAM) and the weights float32 (bfloat16 matmuls need AVX512-BF16 on CPU).

    ``workshop=True`` (``ge.load``'s): ``enforce_eager`` and ``gpu_memory_utilization`` 0.85
    (room for a notebook beside the engine); ``False`` is production: CUDA graphs, and the
    utilization unset, so ``vllm_version``'s release sizes the pool its own way (``reasons``
    says how). ``family`` / ``has_audio`` left out are read from the checkpoint's config
    (its folder, the local HF cache or the built-in facts; never the network). Unset values
    are left out; ``overrides`` win over everything.

    >>> engine_args("google/gemma-4-E4B-it", family="gemma4", max_soft_tokens=560)["mm_processor_kwargs"]
    {'max_soft_tokens': 560}
    """
    family, has_audio = _checkpoint(model, family, has_audio, workload)
    profile = vllm_profile(vllm_version)
    args = _default_args(
        model, family, has_audio, max_soft_tokens, max_model_len, limit_mm_per_prompt
    )
    _set_mode(args, workshop, device)
    why: dict[str, str] = {}
    if workload is not None:
        from gemma_explore.serving.recipe import _recipe

        recipe = _recipe(
            model,
            workload=workload,
            family=family,
            has_audio=has_audio,
            gpu=gpu,
            gpu_memory_gib=gpu_memory_gib,
            vllm_version=profile.version,
        )
        yours = (max_model_len, limit_mm_per_prompt, max_soft_tokens)
        why = _take_recipe(args, recipe, dict(zip(_EXPLICIT, yours, strict=True)))
    args.update(overrides)
    args = {k: v for k, v in args.items() if v is not None}
    if reasons is not None:
        reasons.update(why)
        reasons["gpu_memory_utilization"] = utilization_reason(args, profile, workshop)
    return args


def _set_mode(args: dict[str, Any], workshop: bool, device: str) -> None:
    """Workshop or production, CUDA or vLLM's CPU build, into ``args``."""
    args["enforce_eager"] = workshop
    if not workshop:  # unset: the release's own sizing (utilization_reason says which)
        args["gpu_memory_utilization"] = None
    if device == "cpu":
        args.pop("gpu_memory_utilization", None)
        args.update(kv_cache_memory_bytes=CPU_KV_CACHE_BYTES, dtype="float32")


_EXPLICIT = ("max_model_len", "limit_mm_per_prompt", "mm_processor_kwargs")  # yours win


def _checkpoint(
    model: str, family: str | None, has_audio: bool | None, workload: Workload | None
) -> tuple[str, bool]:
    """(family, has_audio): as given, else read from the checkpoint's config; a workload
    with clips for a checkpoint without an audio tower is refused."""
    if family is None or has_audio is None:
        fam, audio = _family_and_audio(model, family)
        family = fam if family is None else family
        has_audio = audio if has_audio is None else has_audio
    if workload is not None and workload.audio_clips and not has_audio:
        raise ValueError(
            f"{model} has no audio tower (its config has no audio_config): drop --audios, or "
            "use an E2B/E4B or 12B checkpoint."
        )
    return family, has_audio


def _default_args(
    model: str,
    family: str,
    has_audio: bool,
    max_soft_tokens: int | None,
    max_model_len: int | None,
    limit_mm_per_prompt: dict[str, int] | None,
) -> dict[str, Any]:
    """The engine defaults (a workload's proposal replaces some of them)."""
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
        "enforce_eager": True,
        "dtype": "bfloat16",
        "gpu_memory_utilization": 0.85,
        "trust_remote_code": False,
    }
    if spec.image.budgets or max_soft_tokens is not None:
        from gemma_explore.plans.rules import require_budget  # the one budget check

        budget = require_budget(max_soft_tokens, family=spec)
        args["mm_processor_kwargs"] = {"max_soft_tokens": budget}
    return args


def utilization_reason(
    args: dict[str, Any], profile: VllmProfile | str | None = None, workshop: bool = False
) -> str:
    """Why ``gpu_memory_utilization`` is set or left unset, by the release's rule: a fixed
    share of the GPU (the release's default when unset), or the extensible KV cache, which
    takes an unset value as 1.0 and sizes the pool from the memory measured free after
    warm-up (a value you give only caps it). ``profile``: a profile or a ``vllm_version``.

    >>> from gemma_explore.vllm_versions import PROFILES
    >>> ["extensible KV cache" in utilization_reason({}, p) for p in PROFILES.values()]
    [False, False, True]
    """
    p = profile if isinstance(profile, VllmProfile) else vllm_profile(profile)
    util = args.get("gpu_memory_utilization")
    who = "the workshop's (room for a notebook beside the server)" if workshop else "yours"
    if p.kv_sizing == "extensible":
        sizing = (
            f"{p.label} sizes the KV pool with the extensible KV cache on CUDA and ROCm: it "
            "measures the memory free after warm-up and CUDA-graph capture and keeps a margin "
            f"({_margin_words()}) and the peak free"
        )
        if util is None:
            return (
                f"unset: {sizing}, so an unset value means the whole GPU (1.0) and the pool is "
                "what is measured, not a share; set it only to cap this server (another "
                "process on the GPU)"
            )
        return f"{util:g}, {who}: it caps this server at {util:g} of the GPU; {sizing}"
    default = f"{p.label}'s default {p.gpu_memory_utilization:g}"
    if util is None:
        return (
            f"unset: {default} of the GPU is vLLM's budget, and the KV pool is what is left of "
            "it after the weights and the profiled activation peak"
        )
    return f"{util:g}, {who}, in place of {default}"


def _take_recipe(args: dict[str, Any], recipe: Any, explicit: dict[str, Any]) -> dict[str, str]:
    """The workload's proposal into ``args`` where you gave no value (a value you gave
    wins, and for ``max_model_len`` its reason says so); the reasons, argument → why."""
    why = dict(recipe.reasons)
    for key, value in recipe.args.items():
        yours = explicit.get(key)
        if yours is None:
            args[key] = value
        elif key == "max_model_len" and yours != value:
            why[key] = f"{yours}: yours (the workload alone needs {value}: {why[key]})"
    return why


def _margin_words() -> str:
    """The extensible KV cache's margin in words, from the constants the KV estimate uses."""
    from gemma_explore.serving.kv import EXTENSIBLE_MARGIN_FLOOR_BYTES, EXTENSIBLE_MARGIN_FRACTION

    floor = EXTENSIBLE_MARGIN_FLOOR_BYTES / 2**30
    return f"max({floor:g} GiB, {EXTENSIBLE_MARGIN_FRACTION:g} × the transient peak)"


def serve_command(args: dict[str, Any]) -> str:
    """Engine arguments as a ``vllm serve`` command line (vLLM's flags: dashes, JSON dicts),
    one a shell or ``shlex.split`` runs as it is (``gemma-explore serve-args`` names the
    release it was made for on the next line).

    >>> serve_command({"model": "m", "max_model_len": 8192, "enforce_eager": True,
    ...                "trust_remote_code": False, "limit_mm_per_prompt": {"image": 4}})
    'vllm serve m --max-model-len 8192 --enforce-eager --limit-mm-per-prompt \\'{"image": 4}\\''
    """
    parts = ["vllm", "serve", shlex.quote(str(args["model"]))]
    for key, value in args.items():
        if key == "model" or value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            parts.append(flag)
        elif isinstance(value, dict | list):
            parts += [flag, shlex.quote(json.dumps(value))]
        else:
            parts += [flag, shlex.quote(str(value))]
    return " ".join(parts)


def serving_plan_for(
    args: dict[str, Any],
    *,
    gpu: str | None = None,
    gpu_memory_gib: float | None = None,
    vllm_version: str | None = None,
) -> Any:
    """The serving plan of :func:`engine_args`' arguments as ``vllm serve`` runs them on
    this GPU (``gpu``, a name of ``kv.GPUS``, or ``gpu_memory_gib``, default 80: its
    defaults fill what the arguments leave out) under ``vllm_version``'s release, or None
    when no config of the checkpoint is on this machine."""
    from gemma_explore.serving.plan import plan_serving
    from gemma_explore.serving.recipe import _model_for

    try:
        model = _model_for(str(args["model"]))
    except (OSError, ValueError):  # a folder with a config but no processor files
        return None
    if model is None:
        return None
    return plan_serving(
        model,
        gpu=gpu,
        gpu_memory_gib=gpu_memory_gib if gpu is not None or gpu_memory_gib else 80.0,
        entry_point="serve",
        max_model_len=args.get("max_model_len"),
        limit_mm_per_prompt=args.get("limit_mm_per_prompt"),
        max_soft_tokens=(args.get("mm_processor_kwargs") or {}).get("max_soft_tokens"),
        max_num_batched_tokens=args.get("max_num_batched_tokens"),
        max_num_seqs=args.get("max_num_seqs"),
        kv_cache_dtype=args.get("kv_cache_dtype"),
        vllm_version=vllm_version,
    )


def serving_advice(
    args: dict[str, Any],
    *,
    gpu_memory_gib: float | None = None,
    plan: Any = None,
    gpu: str | None = None,
    vllm_version: str | None = None,
) -> dict[str, str]:
    """Production advice for :func:`engine_args`' arguments, on a checkpoint whose
    config is on this machine (else none): flag → why, the levers that raise the
    concurrency first (each gain computed), then the start-up KV line the plan's
    capacity predicts. ``plan``: their serving plan (:func:`serving_plan_for`), when the caller has
    it already; it knows its GPU and its vLLM release (else ``vllm_version``'s). An unset
    ``gpu_memory_utilization`` is the release's own sizing.

    >>> args = engine_args("google/gemma-4-31B-it")
    >>> next(iter(serving_advice(args, gpu_memory_gib=40)))  # the most useful first
    '--tensor-parallel-size 4'
    """
    from gemma_explore.serving.recipe import _advice

    if plan is None:
        plan = serving_plan_for(
            args, gpu=gpu, gpu_memory_gib=gpu_memory_gib, vllm_version=vllm_version
        )
    if plan is None:
        return {}
    # Unset (None): the plan's release sizes the pool its own way.
    util = args.get("gpu_memory_utilization")
    return _advice(plan, gpu_memory_gib=gpu_memory_gib, gpu_memory_utilization=util)


def fit_warnings(
    args: dict[str, Any], *, plan: Any = None, vllm_version: str | None = None
) -> list[str]:
    """What no request can hold under these arguments, one line per modality: an item
    whose worst case (with its markers) is longer than ``max_model_len``. vLLM still
    starts (its budget keeps at least one item per prompt) and then refuses each such
    request, so the command would look runnable and serve nothing of that kind.

    >>> fit_warnings({"model": "google/gemma-4-E4B-it", "max_model_len": 100})[0][:43]
    'an image at the start-up budget takes 282 t'
    """
    plan = plan if plan is not None else serving_plan_for(args, vllm_version=vllm_version)
    if plan is None:
        return []
    what = {"image": "an image at the start-up budget", "audio": "the longest clip"}
    return [
        f"{what.get(modality, 'the largest video')} takes {need} tokens with its markers, "
        f"more than --max-model-len {plan.max_model_len}: vLLM starts, then refuses every "
        f"prompt with one. Raise --max-model-len above {need}, or set --{modality}s 0."
        for modality, need in plan.items_too_long().items()
    ]


def lever_lines(
    args: dict[str, Any], *, plan: Any = None, vllm_version: str | None = None
) -> list[str]:
    """The settings that raise the maximum concurrency of :func:`engine_args`'
    arguments on the plan's GPU, the most useful first, each gain computed by re-planning
    (:func:`~gemma_explore.serving.levers.levers`) under the plan's vLLM release (else
    ``vllm_version``'s); none when the config is not here.

    >>> lever_lines({"model": "google/gemma-4-31B-it", "max_model_len": 8192})[0][:28]
    '--kv-cache-dtype fp8: 1.84x '
    """
    from gemma_explore.serving.levers import levers

    plan = plan if plan is not None else serving_plan_for(args, vllm_version=vllm_version)
    if plan is None:
        return []
    util = args.get("gpu_memory_utilization")  # None: the plan's release's own sizing
    return [x.line() for x in levers(plan, gpu_memory_utilization=util)]


# What serve-args' exit code says (docs/cli.md): the command fits as asked, fits with one
# lever the output names, or nothing in reach fits (bad input's code: change the GPU).
EXIT_FITS, EXIT_NONE_FITS, EXIT_LEVER = 0, 2, 3


@dataclass(frozen=True)
class ServeFit:
    """Whether ``vllm serve`` starts with these arguments on this GPU, by the plan's own
    start-up arithmetic (:meth:`~gemma_explore.serving.plan.ServingPlan.kv_memory` and
    :meth:`~gemma_explore.serving.plan.ServingPlan.capacity`), and the arguments to print:
    as asked, with the first lever that fits (:func:`~gemma_explore.serving.levers.levers`,
    each re-planned from the printed arguments), or none."""

    fits: bool  # the arguments as asked start
    args: dict[str, Any] | None  # what to print: None when nothing in reach fits
    headline: str  # "" when it fits as asked; else "does not fit: …" with the numbers
    lever: str | None = None  # the flags added, e.g. "--tensor-parallel-size 2"
    why: str = ""  # the lever's reason and its start-up line, re-planned
    smallest_gpu: str | None = None  # when nothing fits: the smallest of kv.GPUS that would
    tried: tuple[str, ...] = ()  # the levers re-planned that still did not fit

    @property
    def exit_code(self) -> int:
        """0: fits as asked; 3: fits with the lever; 2: none fits (docs/cli.md)."""
        if self.fits:
            return EXIT_FITS
        return EXIT_LEVER if self.args is not None else EXIT_NONE_FITS


def starts(
    plan: Any, *, tensor_parallel_size: int = 1, gpu_memory_utilization: float | None = None
) -> Any:
    """(KV capacity, KV memory estimate) of ``plan`` on its GPU at this tensor parallel
    size: the capacity refuses (``fits`` False) where vLLM would refuse to start."""
    est = plan.kv_memory(
        gpu_memory_utilization=gpu_memory_utilization, tensor_parallel_size=tensor_parallel_size
    )
    cap = plan.capacity(
        kv_cache_memory_bytes=est.kv_cache_memory_bytes, tensor_parallel_size=tensor_parallel_size
    )
    return cap, est


def _gpu_words(plan: Any) -> str:
    """ "one L4 (22.5 GiB)": the GPU by the name --gpu takes (kv.GPUS), and its memory."""
    from gemma_explore.serving.kv import GPUS

    gib = (plan.gpu_memory_bytes or 80 * 2**30) / 2**30
    names = [short for short, card in GPUS.items() if card.device_name == plan.gpu]
    name = names[0] if names else "GPU"
    return f"one {name} ({gib:.1f} GiB)"


def fit_headline(plan: Any, cap: Any, est: Any) -> str:
    """ "does not fit: …" with the numbers: the weights, KV for one max-length request,
    what else vLLM keeps, and the GPU's memory it may use (the Serving tab's sum, with the
    activation estimate the start-up arithmetic takes off too)."""
    gib = 2**30
    kv = cap.bytes_per_block * cap.blocks_per_request
    parts = [
        f"weights {est.weights_bytes / gib:,.2f}",
        f"KV for one {plan.max_model_len:,}-token request {kv / gib:,.2f}",
    ]
    if est.encoder_cache_bytes:
        parts.append(f"encoder cache {est.encoder_cache_bytes / gib:,.2f}")
    parts.append(f"activations ~{est.activation_bytes / gib:,.2f} (estimated)")
    if est.margin_bytes:
        parts.append(f"margin {est.margin_bytes / gib:,.2f}")
    need = est.weights_bytes + kv + est.encoder_cache_bytes + est.activation_bytes
    need += est.margin_bytes
    gpu_gib = est.gpu_memory_bytes / gib
    return (
        f"does not fit: {plan.model.name} on {_gpu_words(plan)} under {plan.vllm.label}: "
        f"{' + '.join(parts)} = {need / gib:,.2f} GiB, more than the "
        f"{est.requested_bytes / gib:,.2f} GiB vLLM may use ({gpu_gib:.1f} GiB × "
        f"{est.gpu_memory_utilization:g}); vLLM would refuse to start"
    )


def _with_lever(args: dict[str, Any], lever: Any) -> dict[str, Any]:
    """The engine arguments with a lever's settings, as ``vllm serve`` takes them."""
    out = dict(args)
    for key, value in lever.settings.items():
        if key == "max_soft_tokens":
            out["mm_processor_kwargs"] = {**(args.get("mm_processor_kwargs") or {}), key: value}
        elif key == "limit_mm_per_prompt":  # the lever's modality at 0, the rest as asked
            zeroed = {m for m, n in value.items() if n == 0}
            out[key] = {**(args.get(key) or {}), **dict.fromkeys(zeroed, 0)}
        else:
            out[key] = value
    if lever.tensor_parallel_size > 1:
        out["tensor_parallel_size"] = lever.tensor_parallel_size
    return out


def serve_fit(
    args: dict[str, Any],
    *,
    plan: Any = None,
    gpu: str | None = None,
    gpu_memory_gib: float | None = None,
    vllm_version: str | None = None,
) -> ServeFit | None:
    """Whether :func:`serve_command`'s line for ``args`` starts on this GPU (``gpu``, a
    name of ``kv.GPUS``, or ``gpu_memory_gib``, default 80), and if not, the first lever
    of :func:`~gemma_explore.serving.levers.levers` whose arguments, re-planned as
    printed, do (the same GPU first, then two of it), else the smallest GPU of
    ``kv.GPUS`` on which the arguments as asked start. None when no config of the
    checkpoint is here (nothing to plan).

    >>> fit = serve_fit(engine_args("google/gemma-4-31B-it"), gpu="L4")
    >>> fit.exit_code, fit.smallest_gpu
    (2, 'A100 80GB')
    """
    from gemma_explore.serving.kv import GPUS
    from gemma_explore.serving.levers import levers

    where = dict(gpu=gpu, gpu_memory_gib=gpu_memory_gib, vllm_version=vllm_version)
    plan = plan if plan is not None else serving_plan_for(args, **where)
    if plan is None:
        return None
    util = args.get("gpu_memory_utilization")
    cap, est = starts(plan, gpu_memory_utilization=util)
    if cap.fits:
        return ServeFit(True, args, "")
    headline = fit_headline(plan, cap, est)
    tried = []
    for lever in levers(plan, gpu_memory_utilization=util):
        if lever.after <= 0:
            tried.append(lever.flag)
            continue
        printed = _with_lever(args, lever)
        again = serving_plan_for(printed, **where)  # re-planned from what is printed
        tp = int(printed.get("tensor_parallel_size", 1))
        new_cap, _ = starts(again, tensor_parallel_size=tp, gpu_memory_utilization=util)
        if not new_cap.fits:
            tried.append(lever.flag)
            continue
        why = f"{lever.why}; re-planned, vLLM would log: {new_cap.log_line()}"
        return ServeFit(False, printed, headline, lever.flag, why, tried=tuple(tried))
    here = plan.gpu_memory_bytes or 80 * 2**30
    for name, card in sorted(GPUS.items(), key=lambda kv: kv[1].memory_mib):
        if card.memory_bytes <= here:
            continue
        other = serving_plan_for(args, gpu=name, vllm_version=plan.vllm_version)
        if other is not None and starts(other, gpu_memory_utilization=util)[0].fits:
            return ServeFit(False, None, headline, smallest_gpu=name, tried=tuple(tried))
    return ServeFit(False, None, headline, tried=tuple(tried))
