"""vLLM's multimodal processor cache (``--mm-processor-cache-gb``): what one item costs
in it, how many fit, and whether the profiling dummy fits at all.

vLLM keeps each processed item (``vllm/multimodal/cache/base.py``) in an LRU cache of
``mm_processor_cache_gb`` GiB (``config/multimodal.py``: 4 by default; 0 turns it off),
keyed by the item's hash, so a repeated image or clip is not processed again. An item's
size is ``MultiModalCache.get_item_size``: the ``nbytes`` of every tensor the model file's
``_get_mm_fields_config`` keeps for it, plus ``sys.getsizeof`` of every other leaf (the
video's per-frame timestamps and token counts). The prompt updates are not counted.
Floating tensors are cast to the model's dtype first (``call_hf_processor``:
``tensor.to(dtype=model_config.dtype)``), so a bfloat16 checkpoint's items are half their
float32 size. Where the release normalizes a model's images on the device
(``mm_device_do_normalize``: on by default for a model class that declares
``supports_mm_device_do_normalize``), vLLM calls the processor with ``do_rescale=False``
and ``do_normalize=False`` (``MultiModalConfig.merge_mm_processor_kwargs``): the image and
video pixel values stay raw uint8, 1 B each, and are not cast (the profile's
``mm_device_do_normalize`` names those classes; the steps say so). What each family's
processor hands the cache:

* **Gemma 3n image**: ``pixel_values`` (3, 768, 768), whatever the image;
* **Gemma 4 image**: ``pixel_values`` (9·B, 768) and ``pixel_position_ids`` (9·B, 2)
  int64, padded to the budget B's patches whatever the image (the pixels uint8 where the
  release normalizes Gemma 4 on the device);
  **Unified**: (B, 6912) raw 48 px blocks and (B, 2) positions;
* **audio**: ``input_features_padded`` (frames, 128 mel bins; Unified: rows of 640 raw
  samples) and ``input_features_mask`` (frames,) bool, unpadded per item. Gemma 3n's
  extractor keeps 30 s; for Gemma 4 and Unified vLLM calls the processor with
  ``truncation=False`` (``multimodal/processing/processor.py``), so every frame of the
  clip is cached, past 30 s too;
* **video** (Gemma 4, Unified): each frame as a 70-token image, plus a 0-d int64 frame
  count and one Python float (timestamp, 24 B) and int (tokens, 28 B) per frame.

At start-up vLLM runs its profiling dummy (:func:`~gemma_explore.serving.dummy_inputs.
vllm_dummy_inputs`) through this cache (``renderers/base.py`` ``_warmup_mm_processor``,
``multimodal/encoder_budget.py``). Before vllm-project/vllm#53016 an item larger than the
cache made cachetools raise ``ValueError("value too large")`` and the engine failed to
start (vllm-project/vllm#52835); since, vLLM serves it uncached with one warning
(``BaseMultiModalCache.cache_if_fits``), quoted in
:mod:`~gemma_explore.serving.vllm_errors` as ``processor-cache-item-too-large``.

Eviction is least recently used, and one request's items can overflow the cache on their
own: vLLM touches the request's cached items, then inserts its new ones. Where the release
keeps a request's own cached items first (``_merge_mm_kwargs`` reads their payloads before
inserting), the API process's own cache (``MultiModalProcessorOnlyCache``: several API
processes, or data parallelism) no longer evicts them mid-request; otherwise inserting can
evict a cached item before vLLM reads it back. The steps say which, for the plan's release.

>>> from gemma_explore.vllm_versions import SUPPORTED
>>> c = processor_cache("gemma4", mm_processor_cache_gb=4, vllm_version=SUPPORTED[0])
>>> c.item("image", budget=280).bytes, c.item("image", budget=280).items_per_gib
(3911040, 274)
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field, replace
from typing import Any

from gemma_explore.facts.families import FamilySpec, get_family
from gemma_explore.plans.audio import plan_audio
from gemma_explore.vllm_versions import VllmProfile, profile_of, vllm_profile

__all__ = [
    "CachedItem",
    "DEFAULT_MM_PROCESSOR_CACHE_GB",
    "FLOAT_BYTES",
    "GIB",
    "ProcessorCache",
    "cached_item",
    "processor_cache",
    "processor_cache_table",
    "raw_pixels",
]

GIB = 1 << 30  # vLLM's GiB_bytes: the cache holds mm_processor_cache_gb × GIB bytes
DEFAULT_MM_PROCESSOR_CACHE_GB = 4  # MultiModalConfig.mm_processor_cache_gb's default
FLOAT_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}  # floating tensors, cast
_INT64, _BOOL, _UINT8 = 8, 1, 1
# sys.getsizeof of the video's non-tensor leaves (CPython 3.11, 64-bit): a float, and an
# int from 1 to 2**30 − 1 (a frame's soft tokens).
_PY_FLOAT, _PY_INT = sys.getsizeof(0.5), sys.getsizeof(64)
VIDEO_FRAMES = 32  # gemma4_mm.py _VIDEO_MAX_FRAMES: the dummy video's frames


@dataclass(frozen=True)
class CachedItem:
    """One processed item as vLLM's processor cache holds and measures it."""

    modality: str
    what: str  # the item in words ("image at budget 280", "30 s clip", …)
    tensors: tuple[tuple[str, tuple[int, ...], int], ...]  # (field, shape, bytes per element)
    other_bytes: int  # sys.getsizeof of the non-tensor leaves (video metadata)
    bytes: int  # MultiModalCache.get_item_size
    items_per_gib: int  # how many such items one GiB of cache holds
    fits: bool  # bytes ≤ the cache's capacity (else served uncached, with a warning)
    dummy: bool = False  # vLLM's profiling dummy for this modality

    def __str__(self) -> str:
        parts = ", ".join(f"{n} {tuple(s)}×{b} B" for n, s, b in self.tensors)
        extra = f" + {self.other_bytes} B of metadata" if self.other_bytes else ""
        return f"{self.what}: {parts}{extra} = {self.bytes:,} B ({self.items_per_gib:,} per GiB)"


@dataclass(frozen=True)
class ProcessorCache:
    """What ``--mm-processor-cache-gb`` holds for one checkpoint: items and the dummy."""

    spec: FamilySpec = field(repr=False)
    model: str
    dtype: str  # the model dtype floating tensors are cast to
    mm_processor_cache_gb: float
    capacity_bytes: int  # int(GIB × mm_processor_cache_gb): cachetools' maxsize
    items: tuple[CachedItem, ...]  # every modality and budget, the dummies last
    dummy_fits: bool  # every profiling-dummy item fits the cache
    message: str | None  # vLLM's warning at start-up when a dummy item does not fit
    steps: tuple[str, ...] = field(default=(), compare=False)
    vllm_version: str = ""  # the release whose cache this follows (its message, its eviction)
    # The image and video pixel values are raw uint8, 1 B each: the release normalizes
    # this model class's images on the device (mm_device_do_normalize).
    raw_pixels: bool = False

    def item(self, modality: str, *, budget: int | None = None, dummy: bool = False) -> CachedItem:
        """The item of ``modality`` (at image ``budget``; or the profiling ``dummy``)."""
        for it in self.items:
            if it.modality == modality and it.dummy == dummy:
                if budget is None or it.what.endswith(f"budget {budget}"):
                    return it
        raise KeyError(f"no {modality} item{f' at budget {budget}' if budget else ''}")

    def __repr__(self) -> str:
        return "\n".join(self.steps)


def _item(
    spec: FamilySpec,
    modality: str,
    what: str,
    tensors: list[tuple[str, tuple[int, ...], int]],
    other: int,
    capacity: int,
    dummy: bool,
) -> CachedItem:
    total = sum(math.prod(s) * b for _, s, b in tensors) + other
    return CachedItem(
        modality, what, tuple(tensors), other, total, GIB // total, total <= capacity, dummy
    )


def _image_tensors(spec: FamilySpec, budget: int | None, pb: int) -> list:
    """An image's tensors, its pixels at ``pb`` bytes each (the model dtype's, or 1 for
    raw uint8 where the release normalizes on the device)."""
    im = spec.image
    if im.fixed_size is not None:  # Gemma 3n: every image squashed to 768×768
        return [("pixel_values", (3, *im.fixed_size), pb)]
    if spec.encoder_free:  # Unified: one raw 48 px block per soft token
        rows, width = budget, im.cell_px**2 * 3
    else:  # Gemma 4: 3×3 patches of 16 px per soft token
        rows, width = budget * im.patches_per_token, im.patch_size**2 * 3
    return [("pixel_values", (rows, width), pb), ("pixel_position_ids", (rows, 2), _INT64)]


def raw_pixels(spec: FamilySpec, p: VllmProfile) -> bool:
    """Does release ``p`` hand the cache this family's pixels as raw uint8 (its model
    class normalizes on the device by default)?

    >>> from gemma_explore.vllm_versions import SUPPORTED
    >>> raw_pixels(get_family("gemma3n"), vllm_profile(SUPPORTED[-1]))
    False
    """
    return spec.classes.model in p.mm_device_do_normalize


def _audio_frames(spec: FamilySpec, samples: int) -> int:
    """Frames vLLM caches for a clip: the extractor's mask-True frames, over the whole
    clip for Gemma 4 and Unified (vLLM passes truncation=False), 30 s for Gemma 3n."""
    cut = spec if spec.audio.fixed_placeholders is not None else None
    plan = plan_audio(
        samples, family=cut or replace(spec, audio=replace(spec.audio, max_samples=None))
    )
    return plan.num_valid_frames


def cached_item(
    family: str | FamilySpec | Any,
    modality: str,
    *,
    budget: int | None = None,
    samples: int | None = None,
    frames: int = VIDEO_FRAMES,
    dtype: str = "bfloat16",
    capacity_bytes: int = DEFAULT_MM_PROCESSOR_CACHE_GB * GIB,
    dummy: bool = False,
    vllm_version: str | None = None,
) -> CachedItem:
    """One item's bytes in vLLM's processor cache: an image at ``budget``, a clip of
    ``samples`` (16 kHz), or a video of ``frames`` frames, as release ``vllm_version``
    (None: the installed vLLM's, else the newest) processes it.

    >>> cached_item("gemma3n", "image", dtype="float32").bytes
    7077888
    >>> from gemma_explore.vllm_versions import SUPPORTED
    >>> cached_item("gemma4", "image", budget=280, vllm_version=SUPPORTED[0]).tensors[0]
    ('pixel_values', (2520, 768), 2)
    >>> cached_item("gemma4", "image", budget=280, vllm_version=SUPPORTED[-1]).tensors[0]
    ('pixel_values', (2520, 768), 1)
    """
    spec = get_family(family)
    if dtype not in FLOAT_BYTES:
        raise ValueError(f"Unknown dtype {dtype!r}: one of {', '.join(FLOAT_BYTES)}.")
    fb = FLOAT_BYTES[dtype]
    pb = _UINT8 if raw_pixels(spec, vllm_profile(vllm_version)) else fb  # pixel values
    budget = budget or spec.image.default_budget
    if modality == "image":
        what = "image" + (f" at budget {budget}" if spec.image.budgets else " (768×768 px)")
        return _item(
            spec, modality, what, _image_tensors(spec, budget, pb), 0, capacity_bytes, dummy
        )
    if modality == "audio":
        if samples is None:
            raise ValueError("Give samples= (16 kHz) for an audio item.")
        n = _audio_frames(spec, samples)
        width = spec.audio.samples_per_token or spec.audio.mel_bins
        tensors = [("input_features_padded", (n, width), fb), ("input_features_mask", (n,), _BOOL)]
        what = f"{samples / spec.audio.sampling_rate:g} s clip"
        return _item(spec, modality, what, tensors, 0, capacity_bytes, dummy)
    if modality == "video" and spec.has_video:
        frame = _image_tensors(spec, spec.image.video_budget, pb)
        tensors = [(f"{name}_videos", (frames, *shape), b) for name, shape, b in frame]
        tensors.append(("video_frame_counts", (), _INT64))
        other = frames * (_PY_FLOAT + _PY_INT)  # video_timestamps, video_num_soft_tokens
        return _item(
            spec, modality, f"video of {frames} frames", tensors, other, capacity_bytes, dummy
        )
    raise ValueError(f"{spec.display_name} takes no {modality!r} items.")


def _source(plan_or_model: Any) -> tuple[FamilySpec, str, str, Any, tuple[str, ...], dict]:
    """(spec, model name, dtype, the serving model or None, modalities, dummy settings)."""
    model = getattr(plan_or_model, "model", None)
    if model is not None and hasattr(plan_or_model, "dtype_bytes"):  # a ServingPlan
        dtype = {4: "float32", 2: "bfloat16"}.get(plan_or_model.dtype_bytes, "bfloat16")
        d = plan_or_model.dummy_inputs
        dummy = {
            "samples": getattr(d, "audio_samples", None),
            "frames": getattr(d, "video_frames", None),
            "budget": plan_or_model.max_soft_tokens,
        }
        return get_family(model.family), model.name, dtype, model, model.modalities, dummy
    if hasattr(plan_or_model, "layers") and hasattr(plan_or_model, "modalities"):
        spec = get_family(plan_or_model.family)
        return spec, plan_or_model.name, "bfloat16", plan_or_model, plan_or_model.modalities, {}
    spec = get_family(plan_or_model)
    mods = ("image", "audio", "video") if spec.has_video else ("image", "audio")
    return spec, spec.display_name, "bfloat16", None, mods, {}


def _dummy_samples(spec: FamilySpec) -> int:
    """The dummy clip: the extractor's fft_length, else (Unified) audio_seq_length × ms."""
    a = spec.audio
    if a.has_mel:
        return a.fft_length
    return a.max_tokens * a.ms_per_token * a.sampling_rate // 1000


def processor_cache(
    plan_or_model: Any,
    *,
    mm_processor_cache_gb: float = DEFAULT_MM_PROCESSOR_CACHE_GB,
    dtype: str | None = None,
    audio_s: float = 30.0,
    vllm_version: str | None = None,
) -> ProcessorCache:
    """What ``--mm-processor-cache-gb`` holds for a serving plan, a serving model, a
    family name or a bundle: every budget's image, an ``audio_s`` clip, a 32-frame video,
    and vLLM's profiling dummy per modality, each with its bytes and items per GiB.

    ``dtype`` defaults to the plan's (bfloat16 for a name: the released checkpoints').
    ``vllm_version`` names the release whose pixel values, message and eviction these
    follow (by default a plan's own, ``plan.vllm``; else the installed vLLM's, else the
    newest).

    >>> processor_cache("gemma3n", mm_processor_cache_gb=0.003).dummy_fits
    False
    """
    spec, name, plan_dtype, _, modalities, dummy = _source(plan_or_model)
    p = profile_of(plan_or_model, vllm_version)
    raw = raw_pixels(spec, p)
    dtype = dtype or plan_dtype
    if mm_processor_cache_gb < 0:
        raise ValueError("mm_processor_cache_gb must be 0 or more (vLLM's ge=0).")
    cap = int(GIB * mm_processor_cache_gb)
    kw = {"dtype": dtype, "capacity_bytes": cap, "vllm_version": p.version}
    items: list[CachedItem] = []
    if "image" in modalities:
        for b in spec.image.budgets or (None,):
            items.append(cached_item(spec, "image", budget=b, **kw))
    if "audio" in modalities:
        items.append(
            cached_item(spec, "audio", samples=int(audio_s * spec.audio.sampling_rate), **kw)
        )
    if "video" in modalities:
        items.append(cached_item(spec, "video", **kw))
    dummies = [
        cached_item(
            spec,
            m,
            budget=dummy.get("budget"),
            samples=dummy.get("samples") or _dummy_samples(spec),
            frames=dummy.get("frames") or VIDEO_FRAMES,
            dummy=True,
            **kw,
        )
        for m in modalities
    ]
    too_big = [d for d in dummies if not d.fits]
    message = _too_large_message(too_big, cap, p) if too_big and cap > 0 else None
    steps = [
        f"{name}: mm_processor_cache_gb {mm_processor_cache_gb:g} → {cap:,} B (vLLM's LRU "
        f"maxsize); floating tensors at {dtype} ({FLOAT_BYTES[dtype]} B)."
        + (" The cache is off (0): every item is processed each time." if cap == 0 else ""),
        *([_device_normalize_step(spec, p)] if raw else []),
        *(f"{it} {'fits' if it.fits else 'does NOT fit'}." for it in items),
        *(f"profiling dummy, {d}: {'fits' if d.fits else 'does NOT fit'}." for d in dummies),
        "Each API process and the engine core hold their own copy: mm_processor_cache_gb × "
        "(api_server_count + data_parallel_size) of memory.",
        _eviction_step(p),
    ]
    if message:
        steps.append(f"At start-up {p.label} logs (and serves the item uncached): {message}")
    return ProcessorCache(
        spec=spec,
        model=name,
        dtype=dtype,
        mm_processor_cache_gb=float(mm_processor_cache_gb),
        capacity_bytes=cap,
        items=tuple(items + dummies),
        dummy_fits=not too_big,
        message=message,
        steps=tuple(steps),
        vllm_version=p.version,
        raw_pixels=raw,
    )


def _too_large_message(too_big: list[CachedItem], cap: int, p: VllmProfile) -> str:
    """vLLM's warning for the largest dummy item that does not fit the cache."""
    from gemma_explore.serving.vllm_errors import error_named

    worst = max(too_big, key=lambda d: d.bytes)
    # vLLM formats both sizes with format_gib: str(round(bytes / GiB, 2)).
    template = error_named("processor-cache-item-too-large", vllm_version=p.version).template
    return template % (round(worst.bytes / GIB, 2), round(cap / GIB, 2))


def _device_normalize_step(spec: FamilySpec, p: VllmProfile) -> str:
    """Why this release caches the family's pixel values as raw uint8."""
    video = " and video" if spec.has_video else ""
    return (
        f"{p.label} normalizes {spec.classes.model}'s images{video} on the device "
        "(mm_device_do_normalize, on by default for this model class): the processor runs "
        f"with do_rescale=False and do_normalize=False, so the image{video} pixel values "
        "stay raw uint8, 1 B each, not cast to the model dtype (--no-mm-device-do-normalize, "
        "or VLLM_USE_RUST_FRONTEND, turns it off: then they are floating, at the model "
        "dtype)."
    )


def _eviction_step(p: VllmProfile) -> str:
    """What the release does when one request's items overflow the cache."""
    if p.processor_cache_keeps_request_hits:
        return (
            f"{p.label}: a request whose items overflow the cache keeps its own cached items "
            "while it inserts its new ones, in the API process's own cache "
            "(MultiModalProcessorOnlyCache: several API processes, or data parallelism); the "
            "single-process caches (--mm-processor-cache-type lru, shm) hold only metadata "
            "there, and inserting can still evict a request's own cached item."
        )
    return (
        f"{p.label}: a request whose items overflow the cache can evict its own cached items "
        "while it inserts its new ones, before vLLM reads them back (get_and_update_item: "
        "'Expected a cached item'): keep one request's items under the cache's size."
    )


def processor_cache_table(
    plan_or_model: Any, *, dtype: str | None = None, vllm_version: str | None = None
) -> str:
    """The items-per-GiB table as text (the CLI's ``processor-cache``): one line per item,
    by release ``vllm_version`` (as :func:`processor_cache`).

    >>> print(processor_cache_table("gemma3n").splitlines()[1])
    image (768×768 px)                     3,538,944       303
    """
    c = processor_cache(plan_or_model, dtype=dtype, vllm_version=vllm_version)
    lines = [f"{'item':<36} {'bytes':>11} {'per GiB':>9}"]
    for it in c.items:
        label = ("profiling dummy: " if it.dummy else "") + it.what
        lines.append(f"{label:<36} {it.bytes:>11,} {it.items_per_gib:>9,}")
    raw = "; pixel values raw uint8" if c.raw_pixels else ""
    lines.append(f"({c.model}; floating tensors at {c.dtype}{raw})")
    return "\n".join(lines)
