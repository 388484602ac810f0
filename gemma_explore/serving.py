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

:func:`serving_model` reads a checkpoint's config once (the slow part);
:func:`plan_serving` is pure arithmetic on it.

>>> import gemma_explore as ge
>>> plan = ge.plan_serving("tiny-gemma4", max_model_len=4096,
...                        limit_mm_per_prompt={"image": 2, "audio": 1, "video": 0})  # doctest: +SKIP
>>> plan.max_tokens_per_item, plan.encoder_cache_size                              # doctest: +SKIP
({'image': 280, 'audio': 750}, 8192)
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .families import FamilySpec, get_family
from .sizes import size_label
from .tables import Table
from .vllm_rules import vllm_audio_tokens, vllm_image_tokens

if TYPE_CHECKING:
    from .kv_capacity import AdmitResult, KVCapacity, Request
    from .models.bundle import Bundle

__all__ = [
    "DEFAULT_LIMIT",
    "ImagesFit",
    "KVLayer",
    "kv_layers",
    "RequestMemory",
    "ServingModel",
    "ServingPlan",
    "plan_serving",
    "serving_model",
]

DEFAULT_LIMIT = 999  # vLLM's count for a modality limit_mm_per_prompt leaves out
VIDEO_FRAME_EXTRA_TOKENS = (
    2 + 6
)  # vLLM's Gemma 4 estimate per frame: boi + eoi + ~6 timestamp tokens
DEFAULT_MAX_NUM_BATCHED_TOKENS = (
    8192  # vLLM's LLM(...) default on GPUs under 70 GiB (16384 on H100)
)
DEFAULT_MAX_NUM_SEQS = 256  # vLLM's default on GPUs under 70 GiB (1024 on H100/H200)
_DTYPE_BYTES = {"float32": 4, "fp32": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2,
                "half": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}  # fmt: skip


# ----------------------------------------------------------------------- the checkpoint


@dataclass(frozen=True)
class KVLayer:
    """One decoder layer as the KV cache sees it."""

    index: int
    kind: str  # "full_attention" or "sliding_attention"
    kv_heads: int  # num_key_value_heads of this layer
    head_dim: int  # Gemma 4 full layers use global_head_dim
    window: int | None  # sliding_window (None on full layers)
    shares_kv_with: int | None  # a KV-shared layer reads this earlier layer's cache (stores none)

    @property
    def stores_kv(self) -> bool:
        return self.shares_kv_with is None

    def bytes_per_token(self, dtype_bytes: int) -> int:
        """K and V: 2 × kv heads × head dim × bytes (0 for a layer that shares KV)."""
        return 2 * self.kv_heads * self.head_dim * dtype_bytes if self.stores_kv else 0


@dataclass(frozen=True)
class ServingModel:
    """What serving needs from one checkpoint's config, read once."""

    name: str
    family: str
    modalities: tuple[str, ...]  # what vLLM serves: audio only with an audio_config
    default_budget: int | None  # Gemma 4: vision_config.default_output_length
    audio_seq_length: int | None  # the processor's audio tokens per clip (vLLM reads it)
    image_seq_length: int | None  # Gemma 3n: the processor's fixed image tokens
    hidden_size: int  # the text model's width: encoder outputs are stored at this width
    layers: tuple[KVLayer, ...]
    num_parameters: int  # from the config's shapes, built on the meta device
    num_parameters_by_part: dict[str, int] = field(hash=False, compare=False)
    use_bidirectional_attention: str | None = None  # Gemma 4 26B/31B: "vision"
    # Where the config came from: the checkpoint folder, the local HF cache, the built-in
    # facts of a released id (gemma_explore/released.py), a bundle or a tiny build.
    config_source: str = ""
    # MoE (26B-A4B): parameters of the routed experts, and how many of them run per token.
    expert_parameters: int = 0
    experts_per_token: tuple[int, int] | None = None  # (top_k_experts, num_experts)
    # E-models: the per-layer embedding table (embed_tokens_per_layer), a lookup that
    # Google's "effective" sizes leave out (it can live off the accelerator).
    per_layer_embedding_parameters: int = 0

    @property
    def active_parameters(self) -> int:
        """Parameters one token runs through: all, less the experts it is not routed to.

        >>> serving_model("google/gemma-4-26B-A4B-it").active_parameters < 5e9   # doctest: +SKIP
        True
        """
        if not self.experts_per_token:
            return self.num_parameters
        k, n = self.experts_per_token
        return self.num_parameters - self.expert_parameters * (n - k) // n

    @property
    def spec(self) -> FamilySpec:
        return get_family(self.family)


def kv_layers(text_config: Any) -> tuple[KVLayer, ...]:
    """The decoder layers of a text config as the KV cache sees them: type, KV heads and head dim per layer (``per_layer_config``
    holds Gemma 4's global_head_dim on full layers), and which layers share KV."""
    types = list(text_config.layer_types)
    per_layer = text_config.per_layer_config
    shared = int(getattr(text_config, "num_kv_shared_layers", 0) or 0)
    first_shared = len(types) - shared
    out = []
    for i, kind in enumerate(types):
        cfg = per_layer[i]
        target = None
        if i >= first_shared:  # reads the last non-shared layer of the same type
            target = max(j for j in range(first_shared) if types[j] == kind)
        out.append(
            KVLayer(
                index=i,
                kind=kind,
                kv_heads=int(cfg.num_key_value_heads),
                head_dim=int(cfg.head_dim),
                window=int(cfg.sliding_window) if kind == "sliding_attention" else None,
                shares_kv_with=target,
            )
        )
    return tuple(out)


_PARAMS: dict[str, tuple[int, tuple[tuple[str, int], ...]]] = {}  # config JSON → counts


def _meta_parameters(config: Any) -> tuple[int, tuple[tuple[str, int], ...]]:
    """Parameters of the model the config describes, built on the meta device (shapes
    only, no memory), per top-level part; ``experts`` and ``per_layer_embeddings`` are
    also counted apart (they are inside ``language_model``). Tied weights count once, as
    ``model.parameters()`` does. Once per distinct config."""
    key = config.to_json_string(use_diff=False)
    if key in _PARAMS:
        return _PARAMS[key]
    import torch
    from transformers import AutoModelForImageTextToText

    from .models.tiny import register_tiny_mobilenet

    register_tiny_mobilenet()  # the tiny Gemma 3n's vision encoder is a registered timm model
    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(config)
    parts: dict[str, int] = {}
    apart = {"experts": 0, "per_layer_embeddings": 0}
    for name, p in model.named_parameters():
        bits = name.split(".")
        part = bits[1] if bits[0] == "model" and len(bits) > 1 else bits[0]
        parts[part] = parts.get(part, 0) + p.numel()
        if ".experts." in name:  # Gemma 4 MoE: experts.gate_up_proj / experts.down_proj
            apart["experts"] += p.numel()
        elif "embed_tokens_per_layer" in name:  # E-models' per-layer embedding table
            apart["per_layer_embeddings"] += p.numel()
    _PARAMS[key] = (sum(parts.values()), tuple(parts.items()) + tuple(apart.items()))
    return _PARAMS[key]


def _config_of(source: Any) -> tuple[str, str, Any, Any, str]:
    """(name, family, config, processor or None, where the config came from) for a
    bundle, folder, tiny name, released id or config. A released id never reaches the
    hub: a local cache copy of its config wins, else the built-in facts."""
    from .models.bundle import Bundle

    if isinstance(source, Bundle):
        if source.model is not None:
            where = f"the loaded bundle's config ({source.name}, {source.device})"
            from .released import is_released

            if source.device == "meta" and is_released(source.name):  # load(weights=False)
                from .models.checkpoints import BUILT_IN, cached_file_of

                cached = cached_file_of(source.name, "config.json")
                where = f"local Hugging Face cache ({cached})" if cached else BUILT_IN
            return source.name, source.family, source.model.config, source.processor, where
        source = source.name
    if isinstance(source, str | os.PathLike):
        name = os.fspath(source)
        from .models.checkpoints import family_from_config, load_processor
        from .models.tiny import TINY_NAMES, build_tiny_processor, tiny_config
        from .released import is_released

        if name in TINY_NAMES:
            family = TINY_NAMES[name]
            return name, family, tiny_config(family), build_tiny_processor(family), "tiny build"
        if is_released(name) and not os.path.isdir(name):
            from .models.checkpoints import cached_file_of, config_for, offline_processor

            config, where = config_for(name)
            family = family_from_config(config, name)
            processor = None  # the family's released settings, unless the cache has it
            if cached_file_of(name, "tokenizer_config.json"):
                processor = offline_processor(name, family)[0]
            return name, family, config, processor, where
        from transformers import AutoConfig

        try:
            config = AutoConfig.from_pretrained(name)
        except OSError as exc:
            raise ValueError(
                f"Could not read a config for {name!r} ({exc}). Pass a loaded bundle, a "
                "checkpoint folder, a tiny name, a released id or a transformers config."
            ) from exc
        processor = load_processor(name) if os.path.isdir(name) else None
        where = f"the folder {name}" if os.path.isdir(name) else "the Hugging Face Hub"
        return name, family_from_config(config, name), config, processor, where
    if hasattr(source, "get_text_config"):
        return (
            getattr(source, "_name_or_path", "") or source.model_type,
            source.model_type,
            source,
            None,
            "the config passed in",
        )
    raise TypeError(
        f"plan_serving takes a bundle, a folder, a tiny name or a config, not {type(source).__name__}."
    )


def serving_model(source: Bundle | str | os.PathLike | Any) -> ServingModel:
    """Read what serving needs from a checkpoint's config (and processor, when there is one).

    >>> serving_model("tiny-gemma4").num_parameters            # doctest: +SKIP
    21788384
    """
    if isinstance(source, ServingModel):
        return source
    name, family, config, processor, where = _config_of(source)
    spec = get_family(family)
    text = config.get_text_config()
    modalities = ["image"]
    if getattr(config, "audio_config", None) is not None:
        modalities.append("audio")
    if spec.has_video:
        modalities.append("video")
    vision = getattr(config, "vision_config", None)
    # The image worst case vLLM reads: Gemma 4's vision_config.default_output_length; the
    # encoder-free Unified variant names it num_soft_tokens (vLLM's gemma4_unified.py).
    default_budget = None
    if spec.image.budgets:
        default_budget = getattr(vision, "default_output_length", None) or getattr(
            vision, "num_soft_tokens", None
        )
    audio_len = getattr(processor, "audio_seq_length", None) if processor is not None else None
    if audio_len is None and "audio" in modalities:
        audio_len = spec.audio.max_tokens
    image_len = spec.image.fixed_soft_tokens
    if processor is not None and spec.image.fixed_soft_tokens is not None:
        image_len = getattr(processor, "image_seq_length", image_len)
    total, counted = _meta_parameters(config)
    parts = dict(counted)
    experts = parts.pop("experts", 0)
    ple = parts.pop("per_layer_embeddings", 0)
    routed = None
    if getattr(text, "enable_moe_block", False):
        routed = (int(text.top_k_experts), int(text.num_experts))
    return ServingModel(
        name=name,
        family=family,
        modalities=tuple(modalities),
        default_budget=default_budget or spec.image.default_budget,
        audio_seq_length=audio_len,
        image_seq_length=image_len,
        hidden_size=int(text.hidden_size),
        layers=kv_layers(text),
        num_parameters=total,
        num_parameters_by_part=parts,
        use_bidirectional_attention=getattr(text, "use_bidirectional_attention", None),
        config_source=where,
        expert_parameters=experts,
        experts_per_token=routed,
        per_layer_embedding_parameters=ple,
    )


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
    dummy_inputs: dict[str, str]  # Gemma 3n: what vLLM builds to measure each modality
    dtype_bytes: int  # bytes per weight
    kv_dtype_bytes: int  # bytes per KV element
    block_size: int  # vLLM's KV block, tokens
    kv_bytes_per_token_full: int  # all full-attention layers that store KV
    kv_bytes_per_token_sliding: int  # all sliding layers that store KV (until the window fills)
    weights_bytes: int
    steps: tuple[str, ...] = field(default=(), compare=False)

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
        vLLM's ``max_in_flight_tokens``: 2 × ``max_num_batched_tokens``, since async
        scheduling (on by default on CUDA) keeps two batches in flight. vLLM's CPU engine
        schedules synchronously (one batch); ``capacity(..., async_scheduling=False)``
        models that, with the hybrid manager's page unification on top."""
        in_flight = 2 * self.max_num_batched_tokens  # config/vllm.py max_in_flight_tokens
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

    # -- vLLM's start-up KV arithmetic and admission (kv_capacity.py) ----------------
    def capacity(self, *, kv_cache_memory_bytes: int, **kwargs: Any) -> KVCapacity:
        """vLLM's start-up "KV cache size: N tokens, Maximum concurrency … X x" for this plan
        (:func:`gemma_explore.kv_capacity.capacity`: ``tensor_parallel_size``,
        ``hybrid_kv_cache_manager``, ``async_scheduling``, ``block_size``, …).

        >>> plan.capacity(kv_cache_memory_bytes=20 * 2**30).max_concurrency  # doctest: +SKIP
        """
        from .kv_capacity import capacity

        return capacity(self, kv_cache_memory_bytes=kv_cache_memory_bytes, **kwargs)

    def admit(self, request: Request | None = None, **items: Any) -> AdmitResult:
        """Whether vLLM accepts one request on this engine, with vLLM's message if not
        (:func:`gemma_explore.kv_capacity.admit`).

        >>> plan.admit(images=[(1080, 1920)], max_soft_tokens=1120).accepted  # doctest: +SKIP
        """
        from .kv_capacity import admit

        return admit(self, request, **items)

    # -- answers ---------------------------------------------------------------------
    def _image_tokens(self, height: int, width: int) -> int:
        spec = self.model.spec
        if spec.image.fixed_soft_tokens is not None:
            return self.model.image_seq_length + spec.markers_per_item
        budget = self.max_soft_tokens or self.model.default_budget
        return vllm_image_tokens(height, width, max_soft_tokens=budget) + spec.markers_per_item

    def images_that_fit(
        self, image_size: tuple[int, int] = (1080, 1920), *, text_tokens: int = 32
    ) -> ImagesFit:
        """How many ``(height, width)`` images at this plan's budget fit in ``max_model_len``
        next to ``text_tokens`` of text (and within ``limit_mm_per_prompt``).

        >>> plan.images_that_fit((1080, 1920)).fits        # doctest: +SKIP
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
            n = f * (spec.image.video_budget + VIDEO_FRAME_EXTRA_TOKENS)
            enc += f * spec.image.video_budget
            prompt += n
            steps.append(f"video of {f} frames: ≤ {n} tokens")
        kv = self.kv_bytes(prompt)
        cache = enc * self.model.hidden_size * self.dtype_bytes
        steps.append(
            f"KV for {prompt} tokens: {kv:,} B; encoder outputs {enc} × {self.model.hidden_size} × {self.dtype_bytes} B = {cache:,} B"
        )
        return RequestMemory(prompt, enc, kv, cache, tuple(steps))

    # -- display ---------------------------------------------------------------------
    def table(self) -> Table:
        rows: list[tuple[str, Any]] = [
            ("model", self.model.name),
            ("max_model_len", self.max_model_len),
            ("max_num_batched_tokens", self.max_num_batched_tokens),
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


def _per_item(
    model: ServingModel, active: list[str], max_soft_tokens: int | None, num_frames: int | None
) -> tuple[dict[str, int], dict[str, str], list[str]]:
    """Worst-case embeddings per item, the dummy inputs behind them, and why."""
    spec = model.spec
    tokens: dict[str, int] = {}
    dummies: dict[str, str] = {}
    steps: list[str] = []
    if spec.image.fixed_soft_tokens is not None:  # Gemma 3n: no max-tokens hook → dummy run
        steps.append(
            f"{spec.display_name}'s model file names its method get_max_tokens_per_item, not "
            "the hook get_mm_max_tokens_per_item, so vLLM builds one dummy item per modality "
            "and counts its placeholders"
        )
        h, w = spec.image.fixed_size
        if "image" in active:
            tokens["image"] = model.image_seq_length
            dummies["image"] = (
                f"one {size_label((h, w))} image (image_processor.size) → {tokens['image']} tokens"
            )
        if "audio" in active:
            tokens["audio"] = model.audio_seq_length
            n = spec.audio.fft_length
            dummies["audio"] = (
                f"one clip of {n} samples (fft_length, {n / spec.audio.sampling_rate:.3f} s) → "
                f"{tokens['audio']} tokens (the replacement is fixed, whatever the length)"
            )
        steps += [f"dummy {m}: {d}" for m, d in dummies.items()]
        if max_soft_tokens is not None:
            steps.append(
                f"max_soft_tokens={max_soft_tokens} is ignored: {spec.display_name} has no image budget"
            )
        return tokens, dummies, steps
    if "image" in active:
        budget = max_soft_tokens if max_soft_tokens in spec.image.budgets else model.default_budget
        tokens["image"] = budget
        why = ("mm_processor_kwargs max_soft_tokens" if max_soft_tokens in spec.image.budgets
               else "vision_config.default_output_length")  # fmt: skip
        steps.append(f"image: {budget} soft tokens ({why}; markers not counted)")
    if "audio" in active:
        tokens["audio"] = model.audio_seq_length
        steps.append(
            f"audio: {model.audio_seq_length} (the processor's audio_seq_length, a 30 s clip)"
        )
    if "video" in active:
        frames = min(spec.image.max_video_frames, num_frames or spec.image.max_video_frames)
        per = spec.image.video_budget + VIDEO_FRAME_EXTRA_TOKENS
        tokens["video"] = frames * per
        steps.append(
            f"video: {frames} frames × ({spec.image.video_budget} soft + 2 markers + ~6 timestamp) "
            f"= {tokens['video']} (num_frames from limit_mm_per_prompt['video'], capped at "
            f"{spec.image.max_video_frames})"
        )
    return tokens, dummies, steps


def plan_serving(
    model_or_bundle: Bundle | ServingModel | str | os.PathLike | Any,
    *,
    max_model_len: int = 8192,
    limit_mm_per_prompt: Mapping[str, Any] | None = None,
    max_num_batched_tokens: int | None = None,
    max_soft_tokens: int | None = None,
    num_frames: int | None = None,
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS,
    enable_chunked_prefill: bool = True,
    disable_chunked_mm_input: bool = False,
    dtype: str = "bfloat16",
    kv_cache_dtype: str | None = None,
    block_size: int = 16,
) -> ServingPlan:
    """What vLLM reserves at start-up for these engine arguments, and why.

    ``limit_mm_per_prompt`` maps modality → count, or a dict with ``count`` (and, for
    video, ``num_frames``); a modality left out counts as 999, as in vLLM.
    ``max_num_batched_tokens`` defaults to 8192 (vLLM's ``LLM`` default below 70 GiB of
    GPU memory; 16384 on an H100). ``dtype`` sizes the weights, ``kv_cache_dtype`` the KV
    cache (default: ``dtype``).

    >>> plan = plan_serving("tiny-gemma3n", max_model_len=2048)   # doctest: +SKIP
    >>> plan.max_tokens_per_item                                  # doctest: +SKIP
    {'image': 256, 'audio': 188}
    """
    model = (
        model_or_bundle if isinstance(model_or_bundle, ServingModel) else _cached(model_or_bundle)
    )
    spec = model.spec
    if max_model_len <= 0:
        raise ValueError(f"max_model_len must be positive, got {max_model_len}.")
    mnbt = max_num_batched_tokens or DEFAULT_MAX_NUM_BATCHED_TOKENS
    if (
        max_soft_tokens is not None
        and spec.image.budgets
        and max_soft_tokens not in spec.image.budgets
    ):
        raise ValueError(
            f"max_soft_tokens must be one of {list(spec.image.budgets)} (vLLM refuses to start "
            f"with {max_soft_tokens}: the processor raises)."
        )
    for name in (dtype, kv_cache_dtype or dtype):
        if str(name) not in _DTYPE_BYTES:
            raise ValueError(f"Unknown dtype {name!r}; use one of {sorted(_DTYPE_BYTES)}.")
    counts, frames = _limits(limit_mm_per_prompt, num_frames)
    steps: list[str] = [f"config: {model.config_source or 'as given'}"]
    ignored = sorted(set(counts) - set(model.modalities))
    if ignored:
        steps.append(
            f"limit_mm_per_prompt {ignored}: {model.name} serves no such input, vLLM ignores it"
        )
    limits = {m: counts.get(m, DEFAULT_LIMIT) for m in model.modalities}
    active = [m for m in model.modalities if limits[m] > 0]
    tokens, dummies, why = _per_item(model, active, max_soft_tokens, frames)
    steps += why

    per_prompt: dict[str, int] = {}
    per_batch: dict[str, int] = {}
    if not tokens:
        compute = cache = 0
        steps.append("every modality has limit 0: no encoder cache (compute = cache = 0)")
    else:
        big = max(tokens.values())
        if disable_chunked_mm_input and big > mnbt:
            raise ValueError(
                f"Chunked MM input disabled but max_tokens_per_mm_item ({big}) is larger than "
                f"max_num_batched_tokens ({mnbt}). Please increase max_num_batched_tokens."
            )
        compute = cache = max(mnbt, big)
        steps.append(
            f"encoder_compute_budget = encoder_cache_size = max(max_num_batched_tokens {mnbt}, "
            f"largest item {big}) = {compute}"
        )
        for m, t in tokens.items():
            if t == 0:
                per_prompt[m] = per_batch[m] = 0
                continue
            per_prompt[m] = max(1, min(limits[m], max_model_len // t))
            reqs = max_num_seqs if enable_chunked_prefill else min(max_num_seqs, mnbt // t)
            per_batch[m] = max(1, min(compute // t, reqs * per_prompt[m]))
            steps.append(
                f"{m}: per prompt max(1, min(limit {limits[m]}, {max_model_len} // {t})) = "
                f"{per_prompt[m]}; per batch max(1, min({compute} // {t}, {reqs} requests × "
                f"{per_prompt[m]})) = {per_batch[m]}"
            )
    w_bytes = _DTYPE_BYTES[str(dtype)]
    kv_bytes = _DTYPE_BYTES[str(kv_cache_dtype or dtype)]
    full = sum(la.bytes_per_token(kv_bytes) for la in model.layers if la.window is None)
    sliding = sum(la.bytes_per_token(kv_bytes) for la in model.layers if la.window is not None)
    stored = [la for la in model.layers if la.stores_kv]
    steps.append(
        f"KV: {len(stored)} of {len(model.layers)} layers store K and V "
        f"({len(model.layers) - len(stored)} share an earlier layer's); per token "
        f"{full:,} B on full layers + {sliding:,} B on sliding layers (these stop growing at "
        f"the window)"
    )
    steps.append(_weights_step(model, w_bytes))
    return ServingPlan(
        model=model,
        max_model_len=max_model_len,
        max_num_batched_tokens=mnbt,
        max_num_seqs=max_num_seqs,
        limits=limits,
        max_soft_tokens=max_soft_tokens if spec.image.budgets else None,
        num_frames=frames if "video" in model.modalities else None,
        max_tokens_per_item=tokens,
        max_items_per_prompt=per_prompt,
        max_items_per_batch=per_batch,
        encoder_compute_budget=compute,
        encoder_cache_size=cache,
        dummy_inputs=dummies,
        dtype_bytes=w_bytes,
        kv_dtype_bytes=kv_bytes,
        block_size=block_size,
        kv_bytes_per_token_full=full,
        kv_bytes_per_token_sliding=sliding,
        weights_bytes=model.num_parameters * w_bytes,
        steps=tuple(steps),
    )


def _weights_step(model: ServingModel, w_bytes: int) -> str:
    """The weights in words: every part built on the meta device, the routed experts
    and the per-layer embeddings apart."""
    parts = ", ".join(f"{k} {v:,}" for k, v in model.num_parameters_by_part.items())
    text = (f"weights: {model.num_parameters:,} parameters × {w_bytes} B (from the config's "
            f"shapes, meta device: {parts})")  # fmt: skip
    if model.experts_per_token:
        k, n = model.experts_per_token
        text += (f"; {model.expert_parameters:,} in {n} routed experts, {k} per token, so "
                 f"{model.active_parameters:,} run per token (all stay in memory)")  # fmt: skip
    if model.per_layer_embedding_parameters:
        ple = model.per_layer_embedding_parameters
        text += (f"; {ple:,} of them are the per-layer embedding table (a lookup; "
                 f"{model.num_parameters - ple:,} without it)")  # fmt: skip
    return text


_MODELS: dict[str, ServingModel] = {}


def _cached(source: Any) -> ServingModel:
    """serving_model once per bundle name / folder / tiny name (configs are not cached)."""
    from .models.bundle import Bundle

    key = source.name if isinstance(source, Bundle) else (
        os.fspath(source) if isinstance(source, str | os.PathLike) else None
    )  # fmt: skip
    if key is None:
        return serving_model(source)
    if key not in _MODELS:
        _MODELS[key] = serving_model(source)
    return _MODELS[key]
