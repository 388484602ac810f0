"""The demo's Serving tab: engine arguments, a GPU and a vLLM release in, what vLLM
reserves out (pure handler).

The "vLLM release" box (:data:`VLLM_CHOICES`, default :data:`VLLM_DEFAULT`: the installed
vLLM's, else the newest supported) picks the release whose rules plan the engine; the
table's first row names it, and the memory bar, the KV estimate and the levers follow it.
The ``gpu_memory_utilization`` slider starts at what the release uses when the flag is
unset (:func:`utilization_default`): its fixed share of the GPU, or 1.0 where the
extensible KV cache sizes the pool from memory measured after warm-up. At that value the
table says "unset"; any other value is yours, as ``--gpu-memory-utilization`` would be.
``max_num_batched_tokens`` likewise: at the value ``vllm serve`` picks unset on this GPU,
the notes give vLLM's default and why; another value is yours.

Every control is described once, in :data:`CONTROLS` (its label, range and default):
the page builds its sliders from it and the handler checks each value against it, so a
bad value is refused in one place, in the control's own words, and the plot and the table
are cleared together (never one stale and one new). The handler returns a
:class:`~gemma_explore.app.outputs.ServingResult` (figure, table, verdict, plan, error);
it never raises.

>>> out = serving_tab("tiny-gemma4", max_model_len=4096, image_limit=2)
>>> out.plan.encoder_cache_size
8192
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

from gemma_explore.app.outputs import ServingResult, md
from gemma_explore.facts.families import FamilySpec, family_from_name, get_family
from gemma_explore.facts.released import RELEASED_IDS
from gemma_explore.serving.plan import ServingPlan, plan_serving
from gemma_explore.viz.serving import show_serving
from gemma_explore.vllm_versions import SUPPORTED, VllmProfile, installed_vllm, vllm_profile

__all__ = [
    "CONTROLS",
    "LOADED_MODEL",
    "SERVING_CHOICES",
    "SERVING_DEFAULT",
    "VLLM_CHOICES",
    "VLLM_DEFAULT",
    "VLLM_LABEL",
    "Control",
    "ProbeView",
    "gpu_assumption",
    "limit_states",
    "page_words",
    "probe_tab",
    "serving_family",
    "serving_tab",
    "utilization_default",
    "verdict",
]

# The tab plans a released checkpoint by default (the E4B: image, audio and video, so every
# slider means something); the last choice plans whatever the Model box has loaded.
LOADED_MODEL = "the model loaded above"
SERVING_DEFAULT = "google/gemma-4-E4B-it"
SERVING_CHOICES = (*RELEASED_IDS, LOADED_MODEL)
_GIB = 2**30

# The "vLLM release" box: every supported release; the installed one (else the newest) is
# chosen at first. A release newer than the newest profile is planned by the newest's rules.
VLLM_LABEL = "vLLM release"
VLLM_CHOICES: tuple[str, ...] = SUPPORTED
VLLM_DEFAULT: str = vllm_profile(None).version


def utilization_default(vllm_version: str | None = None) -> float:
    """The ``gpu_memory_utilization`` a release uses when the flag is unset: its default
    share of the GPU, or 1.0 where the extensible KV cache sizes the pool from measured
    memory (``resolved_gpu_memory_utilization`` on CUDA). The slider starts here, and
    moves here when the release box changes.

    >>> from gemma_explore.vllm_versions import SUPPORTED
    >>> utilization_default(SUPPORTED[-1])
    1.0
    """
    p = vllm_profile(vllm_version)
    if p.kv_sizing == "extensible" or p.gpu_memory_utilization is None:
        return 1.0
    return float(p.gpu_memory_utilization)


@dataclass(frozen=True)
class Control:
    """One of the tab's number controls: its label (vLLM's name), range and default."""

    key: str  # serving_tab's argument
    label: str  # what the page calls it, and what a refusal names
    low: float
    high: float
    default: float
    step: float = 1
    kind: str = "slider"  # the page's control: "slider", or "box" (a number box)

    def check(self, value: Any) -> float:
        """``value`` as a number in range, or a ValueError naming this control, in the
        words of the control the page has (a slider, or a number box).

        >>> _BY_KEY["gpu_memory_gib"].check(0)
        Traceback (most recent call last):
        ...
        ValueError: GPU memory (GiB) must be between 1 and 1024 (got 0): type a number from 1 to 1024 in its box.
        """
        try:
            n = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{self.label} must be a number, got {value!r}.") from None
        if n != n or not self.low <= n <= self.high:  # NaN, or out of range
            span = f"{self.low:g} to {self.high:g}"
            how = (
                f"type a number from {span} in its box"
                if self.kind == "box"
                else f"drag the slider, or type a number from {span} in its box"
            )
            raise ValueError(
                f"{self.label} must be between {self.low:g} and {self.high:g} (got {n:g}): {how}."
            )
        if self.step >= 1 and n != int(n):
            raise ValueError(f"{self.label} must be a whole number, got {n:g}.")
        return n


CONTROLS: tuple[Control, ...] = (
    Control("max_model_len", "max_model_len", 16, 131072, 8192, 16),
    Control("image_limit", "limit_mm_per_prompt: image", 0, 16, 4),
    Control("audio_limit", "limit_mm_per_prompt: audio", 0, 4, 1),
    Control("video_limit", "limit_mm_per_prompt: video", 0, 4, 1),
    Control("max_num_batched_tokens", "max_num_batched_tokens", 16, 131072, 8192, 16),
    Control("gpu_memory_gib", "GPU memory (GiB)", 1, 1024, 80, 1, kind="box"),
    Control(
        "gpu_memory_utilization",
        "gpu_memory_utilization",
        0.05,
        1.0,
        utilization_default(VLLM_DEFAULT),
        0.01,
    ),
)
_BY_KEY = {c.key: c for c in CONTROLS}


def _release(vllm_version: Any) -> VllmProfile:
    """The release box's value as a profile (empty: the installed vLLM, else the newest),
    or a ValueError in the box's words."""
    chosen = None if vllm_version in (None, "") else str(vllm_version)
    try:
        return vllm_profile(chosen)
    except ValueError:
        raise ValueError(
            f"{VLLM_LABEL} must be one of {', '.join(VLLM_CHOICES)}, got {vllm_version!r}."
        ) from None


def _why(p: VllmProfile, chosen: bool) -> str:
    """Why this release answers, in the tab's words."""
    if not chosen:
        return p.chosen_because
    found = installed_vllm()
    return f"chosen in the {VLLM_LABEL} box" + (f"; installed here: vLLM {found}" if found else "")


def _utilization_words(p: VllmProfile, util: float, unset: bool) -> str:
    """What the slider's value means under this release: unset (its own sizing) or yours."""
    if p.kv_sizing == "extensible":
        sizing = (
            f"{p.label} sizes the KV pool with the extensible KV cache: it measures the free "
            f"memory after warm-up and keeps {_margin_words()} and the peak "
            "free, so the KV row is the plan's estimate of what vLLM measures"
        )
        if unset:
            return f"unset (extensible KV cache, so {util:g}): {sizing}"
        return f"{util:g}, yours: it caps this server at {util:g} of the GPU; {sizing}"
    default = f"{p.label}'s default {utilization_default(p.version):g}"
    if unset:
        return (
            f"unset: {default}; the KV pool is what is left of that share after the weights "
            "and the peak vLLM profiles"
        )
    return f"{util:g}, yours, in place of {default}"


def _margin_words() -> str:
    """The extensible KV cache's margin in words, from the constants the KV estimate uses."""
    from gemma_explore.serving.kv import EXTENSIBLE_MARGIN_FLOOR_BYTES, EXTENSIBLE_MARGIN_FRACTION

    floor = EXTENSIBLE_MARGIN_FLOOR_BYTES / _GIB
    return f"max({floor:g} GiB, {EXTENSIBLE_MARGIN_FRACTION:g} × the transient peak)"


def gpu_assumption(gpu_memory_gib: float, util: float, p: VllmProfile, unset: bool) -> str:
    """What the memory bar assumes, in words: the GPU, the utilization and the release.

    >>> from gemma_explore.vllm_versions import vllm_profile
    >>> gpu_assumption(80, 0.5, vllm_profile(None), unset=False)[:72]
    'The memory bar assumes **one GPU of 80 GiB at gpu_memory_utilization 0.5'
    """
    what = "unset: the release's own sizing" if unset else "yours"
    return (
        f"The memory bar assumes **one GPU of {gpu_memory_gib:g} GiB at "
        f"gpu_memory_utilization {util:g}** ({what}) by **{p.label}**'s rules (the "
        "defaults: 80 GiB, an A100/H100, and what the release uses when the flag is unset); "
        "change them above."
    )


def _whole(key: str, value: Any) -> int:
    return int(_BY_KEY[key].check(value))


def serving_family(chosen: str, loaded_model: str) -> FamilySpec | None:
    """The family of the checkpoint the tab plans (its own box, or the model loaded
    above): what its image-budget box offers."""
    name = loaded_model if chosen == LOADED_MODEL else chosen
    spec = family_from_name(name)
    if spec is None:
        try:
            from gemma_explore.app.bundles import analysis_bundle

            spec = analysis_bundle(name).spec
        except Exception:  # noqa: BLE001 - the table says why the plan failed
            return None
    return spec


def _budget(value: Any) -> int | None:
    """The budget box's value: a number, or None (the family's own: "default", empty, or
    the "fixed …" a family without budgets shows)."""
    if value in (None, "", "default") or (isinstance(value, str) and not value.isdigit()):
        return None
    return int(value)


def verdict(plan: ServingPlan, gpu_memory_gib: float, utilization: float) -> tuple[bool, str]:
    """(fits, why): the plan's :meth:`~ServingPlan.memory_fit` on this GPU, in words (the
    serving chart draws the same value)."""
    fit = plan.memory_fit(gpu_memory_gib, utilization)
    sums = (
        f"weights {fit.weights_bytes / _GIB:,.2f} + KV {fit.kv_bytes / _GIB:,.2f}"
        f" + encoder cache {fit.encoder_cache_bytes / _GIB:,.2f} = {fit.need_bytes / _GIB:,.2f} GiB"
    )
    of = f"{gpu_memory_gib:g} GiB × {utilization:g} = {fit.room_bytes / _GIB:,.2f} GiB"
    if fit.fits:
        return True, f"✓ fits: {sums} of {of} ({fit.left_gib:,.2f} GiB left)"
    return False, (
        f"✗ does not fit: {sums}, more than {of}. Raise GPU memory or "
        "gpu_memory_utilization, lower max_model_len, or split the model over GPUs "
        "(--tensor-parallel-size)."
    )


def _warnings(plan: ServingPlan) -> list[str]:
    """No request of some kind fits in max_model_len: said, not left for vLLM to refuse
    (the plan's :meth:`~ServingPlan.items_too_long`, as ``serve-args`` warns)."""
    out = [
        f"⚠ No request with one {modality} fits: its largest takes {tokens} tokens with its "
        f"markers, max_model_len is {plan.max_model_len}. Raise max_model_len, or set "
        f"limit_mm_per_prompt: {modality} to 0."
        for modality, tokens in plan.items_too_long().items()
    ]
    fit = plan.images_that_fit((1080, 1920))
    if plan.limits.get("image", 0) and fit.fits == 0 and not out:
        out.append(
            f"⚠ Not even one 1920×1080 px (W×H) photo fits: it costs {fit.tokens_per_image} "
            f"tokens, max_model_len is {plan.max_model_len}. Raise max_model_len."
        )
    return out


def serving_tab(
    model_name: str,
    max_model_len: Any = 8192,
    image_limit: Any = 4,
    audio_limit: Any = 1,
    video_limit: Any = 1,
    max_num_batched_tokens: Any = 8192,
    max_soft_tokens: Any = None,
    gpu_memory_gib: Any = 80,
    gpu_memory_utilization: Any = None,
    video_frames: Any = 32,
    vllm_version: Any = None,
) -> ServingResult:
    """Plan serving for these engine arguments on this GPU by ``vllm_version``'s release
    (None: the installed vLLM's, else the newest): ``figure`` (:func:`show_serving`),
    ``table`` (markdown, vLLM's names: the release first, then the verdict), ``plan``,
    ``fits`` and ``error`` (None when all went well). ``gpu_memory_utilization`` None, or
    the release's :func:`utilization_default`, is the flag left unset."""
    try:
        release = _release(vllm_version)
        videos = _whole("video_limit", video_limit)
        limits: dict[str, Any] = {
            "image": _whole("image_limit", image_limit),
            "audio": _whole("audio_limit", audio_limit),
            "video": {"count": videos, "num_frames": max(int(video_frames or 32), 1)},
        }
        gpu = _BY_KEY["gpu_memory_gib"].check(gpu_memory_gib)
        default = utilization_default(release.version)
        util = (
            default
            if gpu_memory_utilization in (None, "")
            else _BY_KEY["gpu_memory_utilization"].check(gpu_memory_utilization)
        )
        unset = util == default  # the same budget as the flag left unset, in vLLM too
        asked_batch = _whole("max_num_batched_tokens", max_num_batched_tokens)
        options: dict[str, Any] = {  # vllm serve on this GPU: its defaults fill the rest
            "gpu_memory_gib": gpu,
            "entry_point": "serve",
            "max_model_len": _whole("max_model_len", max_model_len),
            "limit_mm_per_prompt": limits,
            "max_soft_tokens": _budget(max_soft_tokens),  # Gemma 3n ignores it, as vLLM does
            "vllm_version": release.version,
        }
        # max_num_batched_tokens at vllm serve's own value is the flag left unset (the
        # notes say vLLM's default and why); another value is yours.
        plan = plan_serving(model_name, **options)
        if plan.max_num_batched_tokens != asked_batch:
            plan = plan_serving(model_name, max_num_batched_tokens=asked_batch, **options)
        _MODALITIES[model_name] = plan.model.modalities
        fits, why = verdict(plan, gpu, util)
        asked = None if unset else util  # None: the release's own sizing
        fig = show_serving(plan, gpu_memory_gib=gpu, gpu_memory_utilization=asked)
        warnings = "\n\n".join(_warnings(plan))
        chosen = vllm_version not in (None, "")
        head = [
            (VLLM_LABEL, f"{release.label} ({_why(release, chosen)})"),
            ("gpu_memory_utilization", _utilization_words(release, util, unset)),
            _kv_row(plan, gpu, asked),
        ]
        return ServingResult(
            figure=fig,
            table=_table(plan, why, asked, head),
            plan=plan,
            fits=fits,
            warnings=warnings,
            assumption=gpu_assumption(gpu, util, release, unset),
        )
    except Exception as exc:  # noqa: BLE001 - the demo shows every failure as a line
        kind = "" if isinstance(exc, ValueError | TypeError) else f"{type(exc).__name__}: "
        return ServingResult.failed(f"✗ {kind}{md(exc)}")


@functools.lru_cache(maxsize=8)
def _sample_video(family: str, frames: int) -> Any:
    """The bundled sample video's plan at ``frames`` sampled frames (decoded once)."""
    from gemma_explore.plans.video import plan_video
    from gemma_explore.samples import SAMPLES_DIR

    return plan_video(SAMPLES_DIR / "video.mp4", family=family, max_frames=frames)


def _video_row(plan: ServingPlan) -> tuple[str, str] | None:
    """The sample video's prompt cost from its plan (the Video tab's numbers), beside
    the worst case vLLM reserves per video."""
    spec = get_family(plan.model.spec)
    if "video" not in plan.model.modalities or not plan.limits.get("video"):
        return None
    v = _sample_video(spec.name, plan.num_frames or spec.image.max_video_frames)
    reserved = plan.max_tokens_per_item.get("video")
    return (
        f"sample video ({len(v.frame_indices)} frames): prompt tokens",
        f"{v.num_soft_tokens} soft + {v.num_markers} markers + {v.num_timestamp_tokens} "
        f"timestamps = {v.total_tokens}"
        + (f" (vLLM reserves {reserved} per video)" if reserved else ""),
    )


def _kv_row(plan: ServingPlan, gpu: float, util: float | None) -> tuple[str, str]:
    """The KV pool the plan's release would size on this GPU: an estimate, by its rule
    (:func:`~gemma_explore.serving.kv.kv_memory_estimate`; its last step says what vLLM
    measures instead)."""
    from gemma_explore.serving.kv import kv_memory_estimate

    est = kv_memory_estimate(plan, gpu_memory_bytes=int(gpu * _GIB), gpu_memory_utilization=util)
    return ("KV pool (the plan's estimate)", est.steps[-1])  # "KV cache ≈ … GiB = …"


def _lever_rows(plan: ServingPlan, util: float | None) -> list[tuple[str, str]]:
    """The settings that raise the concurrency, the most useful first, each gain computed
    (:func:`~gemma_explore.serving.levers.levers`) by the plan's release (``util`` None:
    its own sizing)."""
    from gemma_explore.serving.levers import levers

    return [
        (f"lever: {x.flag}", f"{x.before:.2f}x → {x.after:.2f}x concurrency; {x.why}")
        for x in levers(plan, gpu_memory_utilization=util)
    ]


# The inputs each checkpoint the tab planned takes (its plan's model.modalities): what the
# limit sliders read once its plan is on screen. One entry per name planned.
_MODALITIES: dict[str, tuple[str, ...]] = {}


def limit_states(planned: ServingPlan | str | None) -> tuple[tuple[bool, str], ...] | None:
    """(enabled, reason) of the image, audio and video limit sliders for a plan's
    checkpoint (a plan, or the name of one this tab has planned): a modality it takes no
    input for is disabled, and the reason says so. None when there is no plan (a
    refused value leaves the sliders as they are).

    >>> limit_states(serving_tab("google/gemma-4-31B-it").plan)[1]
    (False, 'google/gemma-4-31B-it takes no audio: vLLM ignores this limit.')
    """
    if isinstance(planned, str):
        name, modalities = planned, _MODALITIES.get(planned)
    elif planned is not None:
        name, modalities = planned.model.name, planned.model.modalities
    else:
        name, modalities = "", None
    if modalities is None:
        return None
    return tuple(
        (True, "")
        if modality in modalities
        else (False, f"{name} takes no {modality}: vLLM ignores this limit.")
        for modality in ("image", "audio", "video")
    )


# The plan's notes are written for a notebook (its Python calls, its source files); on the
# page each becomes what a user of the page has: a box, a row, a tab, a vllm serve flag.
_PAGE_WORDS: tuple[tuple[str, str], ...] = (
    (
        r"built-in facts \(gemma_explore/facts/released\.py\)",
        "the released checkpoint's config, built in (no download)",
    ),
    (r"\(vllm_version=[\w.]+\)", "(chosen in the vLLM release box)"),
    (
        r"plan\.kv_memory\(\) guesses it; plan\.capacity\(kv_cache_memory_bytes=…\) sizes a "
        r"pool of memory you give",
        "the KV pool row above is that estimate",
    ),
    (r"plan\.kv_memory\(\) guesses them", "the KV pool row above estimates them"),
    (r"plan_video counts them", "the Video tab counts them"),
    (r"pass block_size=(\w+)", r"pass --block-size \1"),
    (
        r"max_num_batched_tokens=(\d+): yours \(no default applied\)",
        r"max_num_batched_tokens \1: yours, from its slider (vLLM's default is not used)",
    ),
    (r" ?\([\w/]+\.py\)", ""),  # any other source file: the page has no use for it
)


def page_words(note: str) -> str:
    """A plan's note in the page's words (:data:`_PAGE_WORDS`): no source files, no
    Python calls.

    >>> page_words("config: built-in facts (gemma_explore/facts/released.py)")
    "config: the released checkpoint's config, built in (no download)"
    """
    import re

    for pattern, words in _PAGE_WORDS:
        note = re.sub(pattern, words, note)
    return note


def _table(
    plan: ServingPlan,
    why: str,
    util: float | None = None,
    head: list[tuple[str, str]] | None = None,
) -> str:
    """The release and the GPU's budget (``head``), the verdict, the levers that help, the
    plan's own table, and the questions people ask first: how many photos fit, what a
    video costs."""
    table = plan.table()
    fit = plan.images_that_fit((1080, 1920))
    rows = [
        *(head or []),
        ("verdict", why),
        *_lever_rows(plan, util),
        *table.rows,
        (
            "1920×1080 px (W×H) photos that fit",
            f"{fit.fits} ({fit.tokens_per_image} tokens each, {fit.limited_by})",
        ),
    ]
    video = _video_row(plan)
    if video is not None:
        rows.append(video)
    rows.append(_processor_cache_row(plan))
    notes = tuple(page_words(n) for n in table.notes)
    return dataclasses.replace(table, rows=tuple(rows), notes=notes).markdown()


def _processor_cache_row(plan: ServingPlan) -> tuple[str, str]:
    """vLLM's multimodal processor cache at its default size: how many of this plan's
    largest items it holds, and whether the profiling dummy fits."""
    pc = plan.processor_cache()
    real = [it for it in pc.items if not it.dummy] or list(pc.items)
    worst = max(real, key=lambda it: it.bytes)
    dummy = "the profiling dummy fits" if pc.dummy_fits else f"vLLM logs: {pc.message}"
    return (
        f"processor cache (--mm-processor-cache-gb {pc.mm_processor_cache_gb:g})",
        f"{int(pc.capacity_bytes // max(worst.bytes, 1)):,} of the largest item "
        f"({worst.what}, {worst.bytes / 2**20:.1f} MiB); {dummy}",
    )


@dataclass(frozen=True)
class ProbeView:
    """What the tab's "Probe a running server" row shows: the probe's figure and its table
    (markdown), or one line where the figure would be (the figure None, the table empty):
    a refusal in the box's words, or what the server did and what to check."""

    figure: Any  # show_probe's Figure, or None when there is nothing to draw
    table: str  # the verdict per case, as markdown
    error: str | None  # the one line; None when the probe counted something


def probe_tab(
    url: Any,
    model: Any,
    timeout: float = 30.0,
    vllm_version: Any = None,
    deadline: float = 90.0,
) -> ProbeView:
    """Probe the OpenAI-compatible server at ``url`` serving ``model`` against the
    reference and ``vllm_version``'s arithmetic (the release box; None: the installed
    vLLM's, else the newest), never raising: each request ends within ``timeout`` seconds
    and the whole probe within ``deadline``. A server that gave no count at all (nothing
    listens, a banner, an HTML page, a model not served…) is one line, where the figure
    would be.

    >>> probe_tab("ftp://x", "m").error
    '✗ Server URL must start with http:// or https:// (e.g. http://127.0.0.1:8000/v1).'
    """
    from gemma_explore.conformance.probe import probe, probe_table
    from gemma_explore.viz.probe import show_probe

    url, model = str(url or "").strip(), str(model or "").strip()
    if not url.startswith(("http://", "https://")):
        return ProbeView(
            None,
            "",
            "✗ Server URL must start with http:// or https:// (e.g. http://127.0.0.1:8000/v1).",
        )
    if not model:
        return ProbeView(None, "", "✗ Served model is empty: give the name GET /v1/models lists.")
    try:
        release = _release(vllm_version)
    except ValueError as exc:
        return ProbeView(None, "", f"✗ {exc}")
    try:
        result = probe(
            url, model=model, timeout=timeout, deadline=deadline, vllm_version=release.version
        )
    except ValueError as exc:  # a model name whose family cannot be read
        return ProbeView(None, "", f"✗ Served model: {exc}")
    if result.stopped:
        return ProbeView(None, "", f"✗ {result.failure}")
    return ProbeView(show_probe(result), probe_table(result).markdown(), None)
