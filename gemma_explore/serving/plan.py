"""The serving view: what vLLM reserves for a checkpoint before the first request.

At start-up vLLM asks three questions of a multimodal model, and this module answers
them in plain arithmetic, named the way vLLM names them so a start-up log can be read
line by line (``vllm/multimodal/encoder_budget.py``, ``MultiModalBudget``):

1. **max_tokens_per_item**: the worst-case embeddings of one image, clip or video. Gemma
   4's model file states them (``get_mm_max_tokens_per_item``); Gemma 3n's names its
   method ``get_max_tokens_per_item``, which is not the hook, so vLLM builds dummy inputs
   and counts their placeholders instead.
2. **encoder_compute_budget / encoder_cache_size**: both
   ``max(max_num_batched_tokens, largest item)`` (``compute_mm_encoder_budget``). This is
   why the encoder cache reads 16384 on an H100: ``LLM(...)`` defaults
   ``max_num_batched_tokens`` to 16384 there.
3. **max_items_per_prompt / max_items_per_batch**: how many items the profiler runs.

Then the memory: KV-cache bytes per token from the text config (full and sliding layers,
KV heads, head dims, layers that share KV), the weights from the config's parameter
shapes (a meta-device build, no weights read), and the encoder cache's bytes.

:func:`~gemma_explore.serving.model.serving_model` reads a checkpoint's config once (the
slow part, cached in :mod:`~gemma_explore.serving.caches`); :func:`plan_serving` is pure
arithmetic on it.

>>> import gemma_explore as ge
>>> plan = ge.plan_serving("tiny-gemma4", max_model_len=4096,
...                        limit_mm_per_prompt={"image": 2, "audio": 1, "video": 0})
>>> plan.max_tokens_per_item, plan.encoder_cache_size
({'image': 280, 'audio': 750}, 8192)
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gemma_explore.plans.rules import Rule, require_budget
from gemma_explore.plans.video import timestamp_tokens
from gemma_explore.plans.vllm import (
    vllm_audio_tokens,
    vllm_image_tokens,
    vllm_video_tokens,
)
from gemma_explore.serving.caches import SERVING_MODELS
from gemma_explore.serving.dummy_inputs import DummyInputs, vllm_dummy_inputs
from gemma_explore.serving.model import KVLayer, ServingModel, kv_layers, serving_model
from gemma_explore.serving.vllm_errors import error_named
from gemma_explore.sizes import size_label
from gemma_explore.tables import Table
from gemma_explore.vllm_versions import VllmProfile, vllm_profile

if TYPE_CHECKING:
    from gemma_explore.models.bundle import Bundle
    from gemma_explore.serving.admission import AdmitResult, Request
    from gemma_explore.serving.kv import KVCapacity, KVMemoryEstimate
    from gemma_explore.serving.processor_cache import ProcessorCache

__all__ = [
    "DEFAULT_LIMIT",
    "ImagesFit",
    "MemoryFit",
    "KVLayer",
    "kv_layers",
    "RequestMemory",
    "ServingModel",
    "ServingPlan",
    "plan_serving",
    "serving_model",
]

DEFAULT_LIMIT = 999  # vLLM's count for a modality limit_mm_per_prompt leaves out
DEFAULT_MAX_NUM_BATCHED_TOKENS = (
    8192  # vLLM's LLM(...) default on GPUs under 70 GiB (16384 on H100)
)
DEFAULT_MAX_NUM_SEQS = 256  # vLLM's default on GPUs under 70 GiB (1024 on H100/H200)
# The --kv-cache-dtype values of vLLM's CacheDType this plan can size ("auto": the model's).
KV_CACHE_DTYPES = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2")
_DTYPE_BYTES = {
    "float32": 4,
    "fp32": 4,
    "bfloat16": 2,
    "bf16": 2,
    "float16": 2,
    "fp16": 2,
    "half": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
}


# ----------------------------------------------------------------------- results


@dataclass(frozen=True)
class ImagesFit:
    """How many images of one size fit in one prompt."""

    image_size: tuple[int, int]  # (height, width)
    max_soft_tokens: int | None
    tokens_per_image: int  # soft tokens + markers, as vLLM counts this size
    fits: int  # images that fit
    limited_by: str  # "max_model_len" or "limit_mm_per_prompt"
    steps: tuple[str, ...] = field(default=(), compare=False)


_GIB = 1024**3


@dataclass(frozen=True)
class MemoryFit:
    """One engine's memory against one GPU: what vLLM needs at start-up (the weights, KV
    for one ``max_model_len`` request, the encoder cache) and the share of the GPU it may
    use. An estimate: vLLM also takes off the activation peak it profiles on the device.

    >>> MemoryFit(80.0, 0.9, 10 * _GIB, 2 * _GIB, _GIB).left_gib
    59.0
    """

    gpu_memory_gib: float  # the GPU's memory: the question the page asks of the user
    gpu_memory_utilization: float  # vLLM's share of it (the release's default: plan.vllm)
    weights_bytes: int  # loaded once per engine
    kv_bytes: int  # one max_model_len request: vLLM refuses to start without room for it
    encoder_cache_bytes: int  # the multimodal embeddings' cache, reserved at start-up

    @property
    def room_bytes(self) -> float:
        return self.gpu_memory_gib * _GIB * self.gpu_memory_utilization

    @property
    def need_bytes(self) -> int:
        return self.weights_bytes + self.kv_bytes + self.encoder_cache_bytes

    @property
    def left_gib(self) -> float:
        """GiB left for activations and more requests' KV (negative: it does not fit)."""
        return (self.room_bytes - self.need_bytes) / _GIB

    @property
    def fits(self) -> bool:
        return self.need_bytes <= self.room_bytes


@dataclass(frozen=True)
class RequestMemory:
    """GPU memory one request holds while it is served."""

    prompt_tokens: int  # text + every item's placeholders and markers
    encoder_tokens: int  # embeddings the encoder cache holds for its items
    kv_bytes: int  # K and V for the prompt (sliding layers keep their window only)
    encoder_cache_bytes: int  # the items' embeddings at the text width
    steps: tuple[str, ...] = field(default=(), compare=False)

    @property
    def total_bytes(self) -> int:
        return self.kv_bytes + self.encoder_cache_bytes


@dataclass(frozen=True)
class ServingPlan:
    """What vLLM reserves at start-up for one checkpoint and one set of engine arguments.

    Field names follow vLLM's ``MultiModalBudget`` (``mm_max_toks_per_item`` →
    ``max_tokens_per_item`` and so on) so each can be held against the start-up log.
    """

    model: ServingModel = field(repr=False)
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    limits: dict[str, int]  # items per prompt as vLLM reads limit_mm_per_prompt (999 if unset)
    max_soft_tokens: int | None  # Gemma 4's start-up image budget (mm_processor_kwargs)
    num_frames: int | None  # limit_mm_per_prompt["video"]["num_frames"]
    max_tokens_per_item: dict[str, int]  # worst-case embeddings of one item, per modality
    max_items_per_prompt: dict[str, int]
    max_items_per_batch: dict[str, int]
    encoder_compute_budget: int  # encoder tokens one engine step may run
    encoder_cache_size: int  # encoder outputs (tokens) the cache holds
    # The request vLLM's dummy builder makes to profile memory, one item per active
    # modality (dummy_inputs.vllm_dummy_inputs); None when no processor could be read.
    dummy_inputs: DummyInputs | None
    dtype_bytes: int  # bytes per weight
    kv_dtype_bytes: int  # bytes per KV element
    block_size: int  # vLLM's KV block, tokens
    kv_bytes_per_token_full: int  # all full-attention layers that store KV
    kv_bytes_per_token_sliding: int  # all sliding layers that store KV (until the window fills)
    weights_bytes: int
    # The GPU and entry point the defaults came from (None: none given, no vLLM default
    # applied; see the steps).
    gpu: str | None = None  # vLLM's device name (get_device_name), "" for a bare memory size
    gpu_memory_bytes: int | None = None  # get_device_total_memory
    entry_point: str | None = None  # "serve" (vllm serve) or "LLM" (LLM(...))
    async_scheduling: bool = True  # two batches in flight (VllmConfig's default on CUDA)
    disable_chunked_mm_input: bool = False  # forced on CUDA for prefix-LM (Gemma 4) models
    enable_chunked_prefill: bool = True
    # The vLLM release whose rules the plan follows (vllm_profile: the installed one, the
    # one asked for, else the newest), with why in its chosen_because.
    vllm: VllmProfile = field(default_factory=lambda: vllm_profile(None), compare=False, repr=False)
    steps: tuple[str, ...] = field(default=(), compare=False)

    @property
    def vllm_version(self) -> str:
        """The release whose rules answered (a key of ``vllm_versions.PROFILES``)."""
        return self.vllm.version

    # -- KV --------------------------------------------------------------------------
    @property
    def layers(self) -> tuple[KVLayer, ...]:
        return self.model.layers

    @property
    def kv_bytes_per_token(self) -> int:
        """Bytes one more token adds while every window still grows (T < window)."""
        return self.kv_bytes_per_token_full + self.kv_bytes_per_token_sliding

    def kv_bytes(self, num_tokens: int, *, batch: int = 1) -> int:
        """Bytes of K and V after ``num_tokens`` tokens, as transformers' ``DynamicCache``
        holds them: full layers keep every token, sliding layers the last window − 1,
        KV-shared layers nothing."""
        total = 0
        for layer in self.layers:
            if not layer.stores_kv:
                continue
            kept = num_tokens if layer.window is None else min(num_tokens, layer.window - 1)
            total += layer.bytes_per_token(self.kv_dtype_bytes) * kept
        return total * batch

    @property
    def vllm_kv_bytes_per_request(self) -> int:
        """What vLLM's KV pool needs to admit one request of ``max_model_len`` tokens on a
        GPU: full layers ``cdiv(max_model_len, block)`` pages; sliding layers
        ``cdiv(min(window − 1 + in_flight, max_model_len), block) + 1``
        (``kv_cache_interface.py``, ``max_memory_usage_bytes``), where ``in_flight`` is
        vLLM's ``max_in_flight_tokens``: 2 × ``max_num_batched_tokens`` with async
        scheduling (on by default on CUDA: two batches in flight), 1 × without. vLLM's CPU
        engine schedules synchronously; :meth:`capacity` adds the hybrid manager's page
        unification on top."""
        batches = 2 if self.async_scheduling else 1  # config/vllm.py max_in_flight_tokens
        in_flight = batches * self.max_num_batched_tokens
        total = 0
        for layer in self.layers:
            if not layer.stores_kv:
                continue
            page = layer.bytes_per_token(self.kv_dtype_bytes) * self.block_size
            if layer.window is None:
                blocks = math.ceil(self.max_model_len / self.block_size)
            else:
                held = min(layer.window - 1 + in_flight, self.max_model_len)
                blocks = math.ceil(held / self.block_size) + 1
            total += blocks * page
        return total

    @property
    def encoder_cache_bytes(self) -> int:
        """The encoder cache: ``encoder_cache_size`` embeddings at the text model's width."""
        return self.encoder_cache_size * self.model.hidden_size * self.dtype_bytes

    def memory_fit(
        self,
        gpu_memory_gib: float | None = None,
        gpu_memory_utilization: float | None = None,
    ) -> MemoryFit:
        """This engine's start-up memory against a GPU (the serving chart and the demo's
        verdict read this one value). ``gpu_memory_gib`` defaults to the plan's GPU (80
        when the plan names none); ``gpu_memory_utilization`` to the release's default
        (1.0 where the extensible KV cache sizes the pool from measured memory).

        >>> plan = plan_serving("tiny-gemma4")
        >>> plan.memory_fit(24, 0.9).fits
        True
        """
        if gpu_memory_gib is None:
            gpu_memory_gib = (self.gpu_memory_bytes or 80 * _GIB) / _GIB
        if gpu_memory_utilization is None:
            gpu_memory_utilization = self.vllm.gpu_memory_utilization or 1.0
        return MemoryFit(
            float(gpu_memory_gib),
            float(gpu_memory_utilization),
            self.weights_bytes,
            self.vllm_kv_bytes_per_request,
            self.encoder_cache_bytes,
        )

    def items_too_long(self) -> dict[str, int]:
        """Modality → prompt tokens of its largest item, for each modality whose largest
        item (with its markers; a video's frames with their timestamps too) is longer than
        ``max_model_len``. vLLM still starts, then refuses every request with such an item.

        >>> plan_serving("tiny-gemma4", max_model_len=300).items_too_long()
        {'audio': 752, 'video': 2527}
        """
        spec, out = self.model.spec, {}
        for modality, n in self.max_tokens_per_item.items():
            if self.limits.get(modality, 0) <= 0:
                continue
            need = n + spec.markers_per_item  # the worst case counts embeddings only
            if modality == "video":  # frames at the video budget, markers, "mm:ss " text
                frames = min(spec.image.max_video_frames, self.num_frames or 10**6)
                need = frames * (spec.image.video_budget + spec.markers_per_item)
                need += timestamp_tokens(("00:00",) * frames)
            if need > self.max_model_len:
                out[modality] = need
        return out

    # -- vLLM's start-up KV arithmetic and admission (kv_capacity.py) ----------------
    def capacity(self, *, kv_cache_memory_bytes: int, **kwargs: Any) -> KVCapacity:
        """vLLM's start-up "KV cache size: N tokens, Maximum concurrency … X x" for this plan
        (:func:`gemma_explore.serving.kv.capacity`: ``tensor_parallel_size``,
        ``hybrid_kv_cache_manager``, ``async_scheduling``, ``block_size``, …).

        >>> plan = plan_serving("tiny-gemma4")
        >>> round(plan.capacity(kv_cache_memory_bytes=20 * 2**30).max_concurrency)
        10230
        """
        from gemma_explore.serving.kv import capacity

        return capacity(self, kv_cache_memory_bytes=kv_cache_memory_bytes, **kwargs)

    def kv_memory(self, **kwargs: Any) -> KVMemoryEstimate:
        """The KV memory this plan's release will find on the plan's GPU (80 GiB when it
        names none), estimated by that release's rule
        (:func:`gemma_explore.serving.kv.kv_memory_estimate`: ``gpu_memory_utilization``,
        ``tensor_parallel_size``, ``activation_bytes``).

        >>> from gemma_explore.vllm_versions import SUPPORTED  # oldest and newest release
        >>> a, b = (plan_serving("tiny-gemma4", gpu="H100 80GB", vllm_version=v).kv_memory()
        ...         for v in (SUPPORTED[0], SUPPORTED[-1]))
        >>> a.sizing, b.sizing, b.kv_cache_memory_bytes > a.kv_cache_memory_bytes
        ('utilization', 'extensible', True)
        """
        from gemma_explore.serving.kv import kv_memory_estimate

        memory = self.gpu_memory_bytes or 80 * _GIB
        return kv_memory_estimate(self, gpu_memory_bytes=memory, **kwargs)

    def processor_cache(self, mm_processor_cache_gb: float = 4.0) -> ProcessorCache:
        """What vLLM's ``--mm-processor-cache-gb`` (default 4) holds for this plan's items,
        and whether the profiling dummy fits
        (:func:`gemma_explore.serving.processor_cache.processor_cache`).

        >>> plan = plan_serving("tiny-gemma4")
        >>> plan.processor_cache().dummy_fits
        True
        """
        from gemma_explore.serving.processor_cache import processor_cache

        return processor_cache(self, mm_processor_cache_gb=mm_processor_cache_gb)

    def admit(self, request: Request | None = None, **items: Any) -> AdmitResult:
        """Whether vLLM accepts one request on this engine, with vLLM's message if not
        (:func:`gemma_explore.serving.admission.admit`).

        >>> plan = plan_serving("tiny-gemma4")
        >>> plan.admit(images=[(1080, 1920)], max_soft_tokens=1120).accepted
        True
        """
        from gemma_explore.serving.admission import admit

        return admit(self, request, **items)

    # -- answers ---------------------------------------------------------------------
    def _image_tokens(self, height: int, width: int) -> int:
        spec = self.model.spec
        if spec.image.fixed_soft_tokens is not None:
            return self.model.image_seq_length + spec.markers_per_item
        budget = self.max_soft_tokens or self.model.default_budget
        budgeted = vllm_image_tokens(height, width, max_soft_tokens=budget, family=spec)
        return budgeted + spec.markers_per_item

    def images_that_fit(
        self, image_size: tuple[int, int] = (1080, 1920), *, text_tokens: int = 32
    ) -> ImagesFit:
        """How many ``(height, width)`` images at this plan's budget fit in ``max_model_len``
        next to ``text_tokens`` of text (and within ``limit_mm_per_prompt``).

        >>> plan = plan_serving("tiny-gemma4")
        >>> plan.images_that_fit((1080, 1920)).fits
        30
        """
        h, w = image_size
        per = self._image_tokens(h, w)
        room = max(self.max_model_len - text_tokens, 0)
        by_len = room // per
        limit = self.limits.get("image", 0)
        fits, why = (by_len, "max_model_len") if by_len <= limit else (limit, "limit_mm_per_prompt")
        steps = (
            f"one {size_label((h, w))} image costs {per} tokens (soft tokens + markers, vLLM's count at "
            f"budget {self.max_soft_tokens or self.model.default_budget})",
            f"{self.max_model_len} − {text_tokens} text tokens = {room}; {room} // {per} = {by_len}",
            f"limit_mm_per_prompt allows {limit} → {fits} fit (limited by {why})",
        )
        return ImagesFit((h, w), self.max_soft_tokens, per, fits, why, steps)

    def request_memory(
        self,
        *,
        images: tuple[tuple[int, int], ...] | list[tuple[int, int]] = (),
        audio_seconds: tuple[float, ...] | list[float] = (),
        video_frames: tuple[int, ...] | list[int] = (),
        text_tokens: int = 32,
    ) -> RequestMemory:
        """GPU memory a request with these items holds: KV for its prompt and its items'
        embeddings in the encoder cache. ``images`` are (height, width) sizes, ``audio_seconds``
        clip lengths, ``video_frames`` sampled frames per video (worst case per frame).
        """
        spec = self.model.spec
        enc = 0
        prompt = text_tokens
        steps = [f"text: {text_tokens} tokens"]
        for h, w in images:
            t = self._image_tokens(h, w)
            enc += t - spec.markers_per_item
            prompt += t
            steps.append(
                f"image {size_label((h, w))}: {t - spec.markers_per_item} soft + {spec.markers_per_item} markers"
            )
        for s in audio_seconds:
            if "audio" not in self.model.modalities:
                raise ValueError(f"{self.model.name} has no audio tower: drop audio_seconds.")
            n = vllm_audio_tokens(int(round(s * spec.audio.sampling_rate)), family=spec)
            enc += n
            prompt += n + spec.markers_per_item
            steps.append(f"audio {s:g} s: {n} soft + {spec.markers_per_item} markers")
        for f in video_frames:
            if "video" not in self.model.modalities:
                raise ValueError(f"{spec.display_name} serves no video: drop video_frames.")
            # The worst case of a real prompt, counted as plan_video counts one: each frame
            # at the video budget, its two markers, and its "mm:ss " text (7 tokens a frame
            # after the first, which also writes the joining space; vLLM's estimate says 6).
            soft, markers = f * spec.image.video_budget, f * spec.markers_per_item
            stamps = timestamp_tokens(("00:00",) * f)
            enc += soft
            prompt += soft + markers + stamps
            steps.append(
                f"video of {f} frames: ≤ {soft} soft + {markers} markers + {stamps} timestamps"
            )
        kv = self.kv_bytes(prompt)
        cache = enc * self.model.hidden_size * self.dtype_bytes
        steps.append(
            f"KV for {prompt} tokens: {kv:,} B; encoder outputs {enc} × {self.model.hidden_size} × {self.dtype_bytes} B = {cache:,} B"
        )
        return RequestMemory(prompt, enc, kv, cache, tuple(steps))

    # -- display ---------------------------------------------------------------------
    def table(self) -> Table:
        where = "no GPU named (fixed defaults)"
        if self.entry_point is not None:
            gpu = self.gpu or f"{(self.gpu_memory_bytes or 0) / _GIB:.2f} GiB GPU"
            where = f"{'vllm serve' if self.entry_point == 'serve' else 'LLM(...)'} on {gpu}"
        rows: list[tuple[str, Any]] = [
            ("model", self.model.name),
            ("defaults of", where),
            ("max_model_len", self.max_model_len),
            ("max_num_batched_tokens", self.max_num_batched_tokens),
            ("max_num_seqs", self.max_num_seqs),
            (
                "async scheduling / block_size / disable_chunked_mm_input",
                f"{self.async_scheduling} / {self.block_size} / {self.disable_chunked_mm_input}",
            ),
            ("limit_mm_per_prompt", self.limits),
        ]
        for key in ("max_tokens_per_item", "max_items_per_prompt", "max_items_per_batch"):
            rows.append((key, getattr(self, key)))
        rows += [
            ("encoder_compute_budget", self.encoder_compute_budget),
            ("encoder_cache_size", self.encoder_cache_size),
            (
                "KV bytes / token (full + sliding)",
                f"{self.kv_bytes_per_token_full:,} + {self.kv_bytes_per_token_sliding:,}",
            ),
            ("KV per request (vLLM)", f"{self.vllm_kv_bytes_per_request / 2**20:,.1f} MiB"),
            ("encoder cache", f"{self.encoder_cache_bytes / 2**20:,.1f} MiB"),
            (
                "weights",
                f"{self.weights_bytes / 2**30:,.2f} GiB ({self.model.num_parameters:,} parameters)",
            ),
        ]
        return Table(
            ("quantity (vLLM's name)", "value"),
            tuple(rows),
            title="serving plan",
            notes=self.steps,
            notes_title="steps",
        )

    def _repr_html_(self) -> str:
        return self.table().html()

    def __str__(self) -> str:
        return self.table().text()


# ----------------------------------------------------------------------- the plan


def _limits(
    limit_mm_per_prompt: Mapping[str, Any] | None, num_frames: int | None
) -> tuple[dict[str, int], int | None]:
    """Counts per modality, as vLLM reads them (an int, or a dict with ``count``)."""
    counts: dict[str, int] = {}
    frames = num_frames
    for modality, value in (limit_mm_per_prompt or {}).items():
        if isinstance(value, Mapping):
            counts[modality] = int(value.get("count", DEFAULT_LIMIT))
            if modality == "video" and value.get("num_frames") is not None:
                frames = int(value["num_frames"]) if num_frames is None else num_frames
        else:
            counts[modality] = int(value)
        if counts[modality] < 0:
            raise ValueError(
                f"limit_mm_per_prompt[{modality!r}] must be ≥ 0, got {counts[modality]}."
            )
    return counts, frames


def _kv_dtype(kv_cache_dtype: str | None, dtype: str) -> str:
    """The KV cache's dtype: ``kv_cache_dtype``, or the model's when unset or "auto"."""
    return str(dtype if kv_cache_dtype in (None, "auto") else kv_cache_dtype)


# The canonical name of each dtype spelling (what vLLM's ModelConfig.dtype prints).
_DTYPE_NAMES = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32"}


def _require_kv_dtype(profile: VllmProfile, dtype: str, kv_cache_dtype: str | None) -> str:
    """A release that refuses an explicit float16/bfloat16 KV dtype unlike the model's
    (``VllmConfig._reject_mismatched_float_kv_cache``) raises its own words here; the step
    says what the KV cache stores."""
    model = _DTYPE_NAMES.get(str(dtype), str(dtype))
    kv = None if kv_cache_dtype in (None, "auto") else str(kv_cache_dtype)
    if kv is None:
        return ""
    if kv in ("float16", "bfloat16") and kv != model:
        if profile.refuses_kv_dtype_mismatch:
            allowed = f"`auto` or `{model}`" if model in ("float16", "bfloat16") else "`auto`"
            raise ValueError(
                error_named("kv-dtype-mismatch", vllm_version=profile.version).format(
                    cache_dtype=kv, model_dtype=model, allowed=allowed
                )
            )
        return (
            f"kv_cache_dtype={kv} on a {model} model: {profile.label} starts and stores KV as "
            f"{kv} (later releases refuse a float KV dtype unlike the model's)"
        )
    return ""


def _require_engine_args(
    spec: Any, max_model_len: int, max_soft_tokens: int | None, dtypes: Sequence[str]
) -> None:
    """What vLLM refuses at start-up: a non-positive length, a budget the processor does
    not know (``require_budget``; a family without budgets ignores it), an unknown dtype."""
    if max_model_len <= 0:
        raise ValueError(f"max_model_len must be positive, got {max_model_len}.")
    if max_soft_tokens is not None and spec.image.budgets:
        require_budget(max_soft_tokens, family=spec)
    for name in (n for n in dtypes if n is not None and n != "auto"):
        if str(name) not in _DTYPE_BYTES:
            raise ValueError(f"Unknown dtype {name!r}; use one of {sorted(_DTYPE_BYTES)}.")
    kv = dtypes[1] if len(dtypes) > 1 else None
    if kv is not None and str(kv) not in KV_CACHE_DTYPES:
        raise ValueError(
            f"kv_cache_dtype={kv!r}: vLLM's --kv-cache-dtype takes {', '.join(KV_CACHE_DTYPES)} "
            "here (CacheDType); leave it unset for the model's dtype."
        )


def _active_rule(model: ServingModel, counts: dict[str, int]) -> Rule[dict[str, int]]:
    """Limits of the modalities the model serves (999 when left out); others are ignored."""
    limits = {m: counts.get(m, DEFAULT_LIMIT) for m in model.modalities}
    ignored = sorted(set(counts) - set(model.modalities))
    step = (
        f"limit_mm_per_prompt {ignored}: {model.name} serves no such input, vLLM ignores it"
        if ignored
        else ""
    )
    return Rule(limits, step)


def _dummy_counted_items(
    model: ServingModel, active: list[str], max_soft_tokens: int | None
) -> Rule[dict[str, int]]:
    """A family whose model file has no ``get_mm_max_tokens_per_item`` hook (Gemma 3n):
    vLLM builds one dummy item per modality and counts its placeholders."""
    spec = model.spec
    tokens: dict[str, int] = {}
    why = [
        f"{spec.display_name}'s model file names its method get_max_tokens_per_item, not "
        "the hook get_mm_max_tokens_per_item, so vLLM builds one dummy item per modality "
        "and counts its placeholders"
    ]
    if "image" in active:
        tokens["image"] = model.image_seq_length
        why.append(f"image: {tokens['image']} tokens, whatever the size (image_seq_length)")
    if "audio" in active:
        tokens["audio"] = model.audio_seq_length
        why.append(
            f"audio: {tokens['audio']} tokens, whatever the length (the replacement is fixed)"
        )
    if max_soft_tokens is not None:
        why.append(
            f"max_soft_tokens={max_soft_tokens} is ignored: {spec.display_name} has no image budget"
        )
    return Rule(tokens, "; ".join(why))


def _stated_items(
    model: ServingModel, active: list[str], max_soft_tokens: int | None, num_frames: int | None
) -> Rule[dict[str, int]]:
    """A family with budgets states its maxima (``get_mm_max_tokens_per_item``): the image
    budget, the processor's audio length, and frames × (video budget + markers) per video."""
    spec = model.spec
    tokens: dict[str, int] = {}
    why = []
    if "image" in active:
        asked = max_soft_tokens in spec.image.budgets
        tokens["image"] = max_soft_tokens if asked else model.default_budget
        source = (
            "mm_processor_kwargs max_soft_tokens"
            if asked
            else f"vision_config.{spec.budget_config_field}"
        )
        why.append(f"image: {tokens['image']} soft tokens ({source}; markers not counted)")
    if "audio" in active:
        tokens["audio"] = model.audio_seq_length
        secs = model.audio_seq_length * spec.audio.ms_per_token / 1000
        why.append(
            f"audio: {model.audio_seq_length} (the processor's audio_seq_length, a {secs:g} s clip)"
        )
    if "video" in active:
        img = spec.image
        frames = min(img.max_video_frames, num_frames or img.max_video_frames)
        tokens["video"] = vllm_video_tokens(frames, family=spec)
        why.append(
            f"video: {frames} frames × ({img.video_budget} soft + 2 markers + 6 timestamp) "
            f"= {tokens['video']} (vLLM's estimate; num_frames from "
            f"limit_mm_per_prompt['video'], capped at {img.max_video_frames}. A real video's "
            "frames after the first write 7 timestamp tokens: plan_video counts them)"
        )
    return Rule(tokens, "; ".join(why))


def _per_item_rule(
    model: ServingModel, active: list[str], max_soft_tokens: int | None, num_frames: int | None
) -> Rule[dict[str, int]]:
    """Worst-case embeddings of one item per active modality, as vLLM finds them."""
    if model.spec.image.fixed_soft_tokens is not None:
        return _dummy_counted_items(model, active, max_soft_tokens)
    return _stated_items(model, active, max_soft_tokens, num_frames)


def _dummy_inputs_rule(model: ServingModel, active: list[str]) -> Rule[DummyInputs | None]:
    """The request vLLM's dummy builder makes (one item per active modality: the warm-up,
    and Gemma 3n's count), read from the checkpoint's processor."""
    if not active:
        return Rule(None, "")
    if model.processor is None:
        return Rule(
            None,
            f"dummy inputs: no processor was read for {model.name} ({model.config_source}), "
            "so the dummy request is not shown",
        )
    dummy = vllm_dummy_inputs(model, dict.fromkeys(active, 1))
    return Rule(dummy, "dummy inputs (one item each): " + " ".join(dummy.steps))


def _model_length_check(model: ServingModel, max_model_len: int) -> None:
    """vLLM's ``ModelConfig`` refuses a max_model_len beyond the model's positions (unless
    ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` is set), before anything is loaded."""
    derived = model.max_position_embeddings
    if derived is not None and max_model_len > derived:
        # vLLM prints the derived length as a float for every Gemma config ("…=8192.0";
        # tests/serving/test_vllm_errors.py holds the text to ModelConfig's own).
        shown = float(derived)
        raise ValueError(
            error_named("max-model-len-above-model").format(
                max_model_len=max_model_len,
                max_len_key="max_position_embeddings",
                derived_max_model_len=shown,
                model_max_length=None,
            )
        )


def _scheduler_rule(
    model: ServingModel,
    mnbt: int,
    max_num_seqs: int,
    max_model_len: int,
    enable_chunked_prefill: bool,
) -> Rule[None]:
    """vLLM's ``SchedulerConfig.verify_max_model_len``, which stops the engine before it
    loads anything: with chunked prefill off a whole prompt must fit one batch, and every
    running sequence needs at least one token of the batch. Its messages, verbatim.

    >>> _scheduler_rule(serving_model("tiny-gemma4"), 256, 1024, 8192, True)
    Traceback (most recent call last):
    ValueError: max_num_batched_tokens (256) must be greater than or equal to max_num_seqs (1024).
    """
    _model_length_check(model, max_model_len)  # ModelConfig's check comes first
    if mnbt < max_model_len and not enable_chunked_prefill:
        raise ValueError(
            error_named("batch-below-max-model-len").format(
                max_num_batched_tokens=mnbt, max_model_len=max_model_len
            )
        )
    if mnbt < max_num_seqs:
        raise ValueError(
            error_named("batch-below-seqs").format(
                max_num_batched_tokens=mnbt, max_num_seqs=max_num_seqs
            )
        )
    return Rule(
        None,
        f"scheduler: max_num_batched_tokens {mnbt} ≥ max_num_seqs {max_num_seqs}"
        + ("" if enable_chunked_prefill else f" and ≥ max_model_len {max_model_len}")
        + " (vLLM's SchedulerConfig starts)",
    )


def _encoder_budget_rule(
    tokens: dict[str, int], mnbt: int, disable_chunked_mm_input: bool
) -> Rule[int]:
    """``compute_mm_encoder_budget``: max(max_num_batched_tokens, largest item), for both the
    compute budget and the cache; an item that cannot be chunked must fit one batch."""
    if not tokens:
        return Rule(0, "every modality has limit 0: no encoder cache (compute = cache = 0)")
    big = max(tokens.values())
    if disable_chunked_mm_input and big > mnbt:
        raise ValueError(
            error_named("item-above-batch").format(
                max_tokens_per_mm_item=big, max_num_batched_tokens=mnbt
            )
        )
    budget = max(mnbt, big)
    return Rule(
        budget,
        f"encoder_compute_budget = encoder_cache_size = max(max_num_batched_tokens {mnbt}, "
        f"largest item {big}) = {budget}",
    )


def _items_rule(
    modality: str,
    tokens: int,
    *,
    limit: int,
    max_model_len: int,
    compute: int,
    max_num_seqs: int,
    mnbt: int,
    enable_chunked_prefill: bool,
) -> Rule[tuple[int, int]]:
    """(items per prompt, items per batch) the profiler runs for one modality."""
    if tokens == 0:
        return Rule((0, 0), "")
    per_prompt = max(1, min(limit, max_model_len // tokens))
    reqs = max_num_seqs if enable_chunked_prefill else min(max_num_seqs, mnbt // tokens)
    per_batch = max(1, min(compute // tokens, reqs * per_prompt))
    return Rule(
        (per_prompt, per_batch),
        f"{modality}: per prompt max(1, min(limit {limit}, {max_model_len} // {tokens})) = "
        f"{per_prompt}; per batch max(1, min({compute} // {tokens}, {reqs} requests × "
        f"{per_prompt})) = {per_batch}",
    )


def _kv_rule(model: ServingModel, kv_bytes: int) -> Rule[tuple[int, int]]:
    """(bytes per token on full layers, on sliding layers) of the layers that store KV."""
    layers = model.layers
    full = sum(la.bytes_per_token(kv_bytes) for la in layers if la.window is None)
    sliding = sum(la.bytes_per_token(kv_bytes) for la in layers if la.window is not None)
    stored = sum(1 for la in layers if la.stores_kv)
    return Rule(
        (full, sliding),
        f"KV: {stored} of {len(layers)} layers store K and V ({len(layers) - stored} share an "
        f"earlier layer's); per token {full:,} B on full layers + {sliding:,} B on sliding "
        "layers (these stop growing at the window)",
    )


def _weights_rule(
    model: ServingModel,
    w_bytes: int,
    limits: dict[str, int] | None = None,
    mnbt: int | None = None,
    vllm_version: str | None = None,
) -> Rule[int]:
    """The weights in bytes as vLLM allocates them (:func:`~gemma_explore.serving.weights.
    vllm_loaded_weights`: towers skipped at limit 0, the k_eq_v value shards, FP8's bf16
    parts, its buffers); the checkpoint's own count when its config cannot be re-read."""
    parts = ", ".join(f"{k} {v:,}" for k, v in model.num_parameters_by_part.items())
    text = (
        f"weights: {model.num_parameters:,} parameters × {w_bytes} B (from the config's "
        f"shapes, meta device: {parts})"
    )
    if model.experts_per_token:
        k, n = model.experts_per_token
        text += (
            f"; {model.expert_parameters:,} in {n} routed experts, {k} per token, so "
            f"{model.active_parameters:,} run per token (all stay in memory)"
        )
    if model.per_layer_embedding_parameters:
        ple = model.per_layer_embedding_parameters
        text += (
            f"; {ple:,} of them are the per-layer embedding table (a lookup; "
            f"{model.num_parameters - ple:,} without it)"
        )
    if limits is None or not model.num_parameters:
        return Rule(model.num_parameters * w_bytes, text)
    from gemma_explore.serving.weights import vllm_loaded_weights

    try:
        loaded = vllm_loaded_weights(
            model,
            limit_mm_per_prompt=limits,
            quantization="fp8" if w_bytes == 1 else None,
            dtype_bytes=max(w_bytes, 2),
            max_num_batched_tokens=mnbt,
            vllm_version=vllm_version,
        )
    except (ValueError, OSError, ImportError) as exc:
        return Rule(model.num_parameters * w_bytes, f"{text}; not vLLM's loaded count ({exc})")
    return Rule(loaded.bytes, f"{text}; as vLLM loads them: " + "; ".join(loaded.steps))


@dataclass(frozen=True)
class _Device:
    """The GPU and entry point a plan takes vLLM's defaults from (None: none given)."""

    name: str | None  # vLLM's device name; "" for a bare memory size
    memory_bytes: int | None
    entry_point: str | None
    capability: tuple[int, int] | None = None  # (major, minor) of a named GPU


def _device_rule(
    gpu: str | None, gpu_memory_gib: float | None, entry_point: str | None
) -> Rule[_Device]:
    """The GPU the defaults are vLLM's for: a named GPU (``GPUS``), a memory size, or
    none (this package's fixed defaults, as before: the plan says so)."""
    from gemma_explore.serving.kv import ENTRY_POINTS, GIB, gpu_named

    if gpu is None and gpu_memory_gib is None and entry_point is None:
        return Rule(
            _Device(None, None, None),
            "no gpu= or entry_point=: vLLM's per-GPU defaults are not applied (max_model_len "
            f"8192, max_num_batched_tokens {DEFAULT_MAX_NUM_BATCHED_TOKENS}, max_num_seqs "
            f"{DEFAULT_MAX_NUM_SEQS}, LLM(...)'s on a GPU under 70 GiB); pass gpu='H100 80GB' "
            "(or gpu_memory_gib=) and entry_point='serve' or 'LLM' for what vLLM will do",
        )
    entry = entry_point or "serve"
    if entry not in ENTRY_POINTS:
        raise ValueError(f"entry_point must be one of {list(ENTRY_POINTS)}, got {entry!r}.")
    if gpu_memory_gib is not None and gpu_memory_gib <= 0:
        raise ValueError(f"gpu_memory_gib must be positive, got {gpu_memory_gib}.")
    named = gpu_named(gpu) if gpu is not None else None
    memory = (
        int(gpu_memory_gib * GIB)
        if gpu_memory_gib is not None
        else (named.memory_bytes if named else 80 * GIB)
    )
    name = named.device_name if named else ""
    what = f"{name} ({memory / GIB:.2f} GiB)" if name else f"a GPU of {memory / GIB:.2f} GiB"
    return Rule(
        _Device(name, memory, entry, named.capability if named else None),
        f"defaults of {'vllm serve' if entry == 'serve' else 'LLM(...)'} on {what}"
        + ("" if gpu is not None or gpu_memory_gib is not None else " (no gpu= given)"),
    )


def _length_rule(model: ServingModel, max_model_len: int | None, device: _Device) -> Rule[int]:
    """``max_model_len``: yours; else, as vLLM does, the model's maximum (8192 when no GPU
    or entry point is named)."""
    if max_model_len is not None:
        return Rule(int(max_model_len), "")
    derived = model.max_position_embeddings
    if device.entry_point is None or derived is None:
        return Rule(8192, "")
    return Rule(
        int(derived),
        f"max_model_len: none given, so vLLM uses the model's maximum, "
        f"max_position_embeddings = {derived:,} (ModelConfig; pass max_model_len= to reserve "
        "less KV per request)",
    )


def _settings_rule(
    model: ServingModel,
    device: _Device,
    max_model_len: int,
    tokens: dict[str, int],
    budget_frames: tuple[int | None, int | None],
    asked: tuple[int | None, int | None, bool | None, bool],
    profile: VllmProfile,
) -> Rule[tuple[int, int, bool]]:
    """(max_num_batched_tokens, max_num_seqs, disable_chunked_mm_input): vLLM's defaults
    for the device and entry point (``kv.batch_settings``), yours where given. ``tokens``:
    the worst case per item of the modalities on; vLLM's prefix-LM raise counts every
    modality the model supports (``budget_frames``: the image budget and video frames)."""
    from gemma_explore.serving.kv import batch_settings

    mnbt, seqs, whole, chunked = asked
    for name, value in (("max_num_batched_tokens", mnbt), ("max_num_seqs", seqs)):
        if value is not None and int(value) < 1:  # SchedulerConfig's Field(ge=1)
            raise ValueError(
                f"{name}={value}: vLLM's SchedulerConfig refuses it ('Input should be greater "
                f"than or equal to 1'); leave it unset for vLLM's default, or give 1 or more."
            )
    item_tokens = _per_item_rule(model, list(model.modalities), *budget_frames).value
    largest = max(tokens.values(), default=0)
    if device.entry_point is None:
        # vLLM's rules on every platform (EngineArgs._set_default_max_num_seqs_and_batched_
        # tokens_args): with chunked prefill off an unset batch grows to max_model_len, and
        # an unset max_num_seqs never exceeds the batch.
        b = mnbt or DEFAULT_MAX_NUM_BATCHED_TOKENS
        b = max(b, max_model_len) if mnbt is None and not chunked else b
        return Rule((b, seqs or min(DEFAULT_MAX_NUM_SEQS, b), bool(whole)), "")
    st = batch_settings(
        entry_point=device.entry_point,
        gpu_memory_bytes=int(device.memory_bytes or 0),
        gpu_name=device.name or "",
        max_model_len=max_model_len,
        prefix_lm=model.use_bidirectional_attention == "vision",
        item_tokens=item_tokens,
        largest_item=largest,
        max_num_batched_tokens=mnbt,
        max_num_seqs=seqs,
        enable_chunked_prefill=chunked,
        gpu_capability=device.capability,
        vllm_version=profile.version,
    )
    forced = st.disable_chunked_mm_input or bool(whole)
    return Rule((st.max_num_batched_tokens, st.max_num_seqs, forced), "; ".join(st.steps))


def _engine_rule(
    async_scheduling: bool | None,
    block_size: int | None,
    device: _Device,
    model: ServingModel,
    kv_bytes: int,
    profile: VllmProfile,
) -> Rule[tuple[bool, int]]:
    """(async scheduling, KV block size): yours, else CUDA's defaults on this GPU."""
    from gemma_explore.serving.kv import GPUS, cuda_block_size

    sync = True if async_scheduling is None else bool(async_scheduling)
    bs = int(block_size) if block_size is not None else profile.default_block_size
    if bs < 1 or bs % 16:  # CacheConfig's gt=0; every CUDA backend's MultipleOf(16)
        raise ValueError(
            f"block_size={bs}: vLLM's attention backends take a multiple of 16 (they answer "
            "'block_size not supported'); leave it unset, or pass 16, 32, 64 or 128."
        )
    if device.entry_point is None:
        return Rule((sync, bs), "")
    why = []
    if async_scheduling is None:
        why.append(
            "async scheduling on (VllmConfig turns it on on CUDA unless pooling, an "
            "unsupported speculative method or pipeline parallelism forbid it): two batches "
            "in flight"
        )
    if block_size is None:
        gpu = next((g for g in GPUS.values() if g.device_name == device.name), None)
        chosen = cuda_block_size(model, gpu, kv_bytes, vllm_version=profile.version)
        bs = chosen.value
        why.append(chosen.step)
    return Rule((sync, bs), "; ".join(why))


def _all_items(
    tokens: dict[str, int],
    limits: dict[str, int],
    mml: int,
    compute: int,
    seqs: int,
    mnbt: int,
    chunked: bool,
) -> dict[str, Rule[tuple[int, int]]]:
    """``_items_rule`` per modality with items (none when there is no encoder budget)."""
    return {
        m: _items_rule(
            m,
            t,
            limit=limits[m],
            max_model_len=mml,
            compute=compute,
            max_num_seqs=seqs,
            mnbt=mnbt,
            enable_chunked_prefill=chunked,
        )
        for m, t in (tokens.items() if compute else ())
    }


def _items_fields(items: dict[str, Rule[tuple[int, int]]]) -> dict[str, Any]:
    """max_items_per_prompt and max_items_per_batch from the per-modality rules."""
    return dict(
        max_items_per_prompt={m: r.value[0] for m, r in items.items()},
        max_items_per_batch={m: r.value[1] for m, r in items.items()},
    )


def _bytes_fields(w_bytes: int, kv_bytes: int, kv: tuple[int, int], weights: int) -> dict[str, Any]:
    """The plan's fields in bytes: per weight, per KV element, KV per token, the weights."""
    return dict(
        dtype_bytes=w_bytes,
        kv_dtype_bytes=kv_bytes,
        kv_bytes_per_token_full=kv[0],
        kv_bytes_per_token_sliding=kv[1],
        weights_bytes=weights,
    )


def _device_fields(device: _Device, engine: tuple[bool, int]) -> dict[str, Any]:
    """The plan's fields that say where its defaults came from."""
    return dict(
        gpu=device.name,
        gpu_memory_bytes=device.memory_bytes,
        entry_point=device.entry_point,
        async_scheduling=engine[0],
        block_size=engine[1],
    )


def plan_serving(
    model_or_bundle: Bundle | ServingModel | str | os.PathLike | Any,
    *,
    gpu: str | None = None,
    gpu_memory_gib: float | None = None,
    entry_point: str | None = None,
    max_model_len: int | None = None,
    limit_mm_per_prompt: Mapping[str, Any] | None = None,
    max_num_batched_tokens: int | None = None,
    max_soft_tokens: int | None = None,
    num_frames: int | None = None,
    max_num_seqs: int | None = None,
    enable_chunked_prefill: bool = True,
    disable_chunked_mm_input: bool | None = None,
    async_scheduling: bool | None = None,
    dtype: str = "bfloat16",
    kv_cache_dtype: str | None = None,
    block_size: int | None = None,
    vllm_version: str | None = None,
) -> ServingPlan:
    """What vLLM reserves at start-up for these engine arguments, and why.

    ``gpu`` (a name of ``kv.GPUS``: "H100 80GB", "A100 40GB", "L4", …) or ``gpu_memory_gib``
    and ``entry_point`` ("serve", the default once a GPU is named, or "LLM") apply vLLM's
    defaults there first (``max_model_len``: the model's maximum; ``max_num_batched_tokens``,
    ``max_num_seqs``, async scheduling, the forced ``disable_chunked_mm_input``, the block
    size), each a step with its reason; values you give win. With none of the three: fixed
    defaults (8192, 8192, 256), said in the steps. ``limit_mm_per_prompt``: modality →
    count, or a dict with ``count`` (and video's ``num_frames``); one left out counts 999.
    ``dtype`` sizes the weights, ``kv_cache_dtype`` the KV cache (default: ``dtype``);
    ``vllm_version`` the release whose rules apply (the installed one, else the newest).

    >>> plan = plan_serving("tiny-gemma4", gpu="L4")
    >>> plan.max_num_batched_tokens, plan.max_num_seqs
    (2048, 256)
    """
    profile, model = vllm_profile(vllm_version), _serving_model_of(model_or_bundle)
    device = _device_rule(gpu, gpu_memory_gib, entry_point)
    length = _length_rule(model, max_model_len, device.value)
    mml = int(length.value)
    _require_engine_args(model.spec, mml, max_soft_tokens, (dtype, kv_cache_dtype))
    kv_dtype_step = _require_kv_dtype(profile, dtype, kv_cache_dtype)
    counts, frames = _limits(limit_mm_per_prompt, num_frames)
    limits = _active_rule(model, counts)
    active = [m for m in model.modalities if limits.value[m] > 0]
    tokens = _per_item_rule(model, active, max_soft_tokens, frames)
    asked = (max_num_batched_tokens, max_num_seqs, disable_chunked_mm_input, enable_chunked_prefill)
    bf = (max_soft_tokens, frames)  # the image budget and video frames
    settings = _settings_rule(model, device.value, mml, tokens.value, bf, asked, profile)
    mnbt, seqs, whole = settings.value
    w_bytes, kv_bytes = _DTYPE_BYTES[str(dtype)], _DTYPE_BYTES[_kv_dtype(kv_cache_dtype, dtype)]
    engine = _engine_rule(async_scheduling, block_size, device.value, model, kv_bytes, profile)
    scheduler = _scheduler_rule(model, mnbt, seqs, mml, enable_chunked_prefill)
    dummy = _dummy_inputs_rule(model, active)
    compute = _encoder_budget_rule(tokens.value, mnbt, whole)
    items = _all_items(tokens.value, limits.value, mml, compute.value, seqs, mnbt, asked[3])
    kv = _kv_rule(model, kv_bytes)
    weights = _weights_rule(model, w_bytes, limits.value, mnbt, profile.version)
    rules = [device, length, settings, engine, scheduler, limits, tokens, dummy]
    rules += [compute, *items.values(), kv, weights]
    return ServingPlan(
        model=model,
        max_model_len=mml,
        max_num_batched_tokens=mnbt,
        max_num_seqs=seqs,
        limits=limits.value,
        max_soft_tokens=max_soft_tokens if model.spec.image.budgets else None,
        num_frames=frames if "video" in model.modalities else None,
        max_tokens_per_item=tokens.value,
        **_items_fields(items),
        encoder_compute_budget=compute.value,
        encoder_cache_size=compute.value,
        dummy_inputs=dummy.value,
        **_bytes_fields(w_bytes, kv_bytes, kv.value, weights.value),
        **_device_fields(device.value, engine.value),
        disable_chunked_mm_input=whole,
        enable_chunked_prefill=enable_chunked_prefill,
        vllm=profile,
        steps=_plan_steps(profile, model, [*rules, Rule(None, kv_dtype_step)], device.value),
    )


def _plan_steps(
    profile: VllmProfile, model: ServingModel, rules: list[Rule[Any]], device: _Device
) -> tuple[str, ...]:
    """The plan's steps: the release and why, the config, each rule's reason, the pool."""
    return (
        f"{profile.label}'s rules ({profile.chosen_because})",
        f"config: {model.config_source or 'as given'}",
        *(r.step for r in rules if r.step),
        _pool_step(profile, device),
    )


def _pool_step(profile: VllmProfile, device: _Device) -> str:
    """How this release sizes the KV pool at start-up: what it measures, what a plan can
    only estimate (``plan.kv_memory()``)."""
    if profile.kv_sizing == "extensible":
        return (
            f"KV pool: {profile.label} sizes it with the extensible KV cache on CUDA and ROCm "
            "(gpu_memory_utilization unset = 1.0): after warm-up and CUDA-graph capture it "
            "measures the free memory and keeps max(1 GiB, 0.75 × the transient peak) plus the "
            "peak out of the pool. The plan can only estimate the peak and the graph pool: "
            "plan.kv_memory() guesses them; vLLM logs the measured size once, after warm-up"
        )
    share = profile.gpu_memory_utilization
    return (
        f"KV pool: {profile.label} takes gpu_memory_utilization {share:g} of the GPU and gives "
        "the KV cache what is left after the weights and the activation peak it profiles "
        "(logged as 'Available KV cache memory'). The plan can only estimate the peak: "
        "plan.kv_memory() guesses it; plan.capacity(kv_cache_memory_bytes=…) sizes a pool "
        "of memory you give"
    )


def _serving_model_of(source: Any) -> ServingModel:
    """A ServingModel as given, else read once (:func:`_cached`)."""
    return source if isinstance(source, ServingModel) else _cached(source)


def _cached(source: Any) -> ServingModel:
    """serving_model once per bundle name / folder / tiny name (``SERVING_MODELS``); a
    config passed in is read each time."""
    from gemma_explore.models.bundle import Bundle

    key = (
        source.name
        if isinstance(source, Bundle)
        else (os.fspath(source) if isinstance(source, str | os.PathLike) else None)
    )
    if key is None:
        return serving_model(source)
    return SERVING_MODELS.get_or_make(key, lambda: serving_model(source))
