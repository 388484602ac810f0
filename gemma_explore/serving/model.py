"""What serving needs from one checkpoint, read once from its config: the I/O half of the
serving view (:mod:`gemma_explore.serving.plan` holds the arithmetic).

:func:`serving_model` reads a bundle, a checkpoint folder, a tiny name, a released id
(never the hub: the local cache, else the built-in facts) or a transformers config, and
keeps what the plan needs: the modalities vLLM serves, the image budget and audio length
vLLM reads, every decoder layer as the KV cache sees it (:func:`kv_layers`) and the
parameters of a meta-device build (:func:`meta_parameters`, cached per config).

>>> serving_model("tiny-gemma4").layers[0].kind
'sliding_attention'
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gemma_explore.facts.families import FamilySpec, get_family
from gemma_explore.serving.caches import PARAMETER_COUNTS

if TYPE_CHECKING:
    from gemma_explore.models.bundle import Bundle

__all__ = [
    "STORED_FIELDS",
    "KVLayer",
    "ServingModel",
    "kv_layers",
    "meta_parameters",
    "serving_model",
]


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
    default_budget: int | None  # vision_config.<spec.budget_config_field> (None: no budgets)
    audio_seq_length: int | None  # the processor's audio tokens per clip (vLLM reads it)
    image_seq_length: int | None  # Gemma 3n: the processor's fixed image tokens
    hidden_size: int  # the text model's width: encoder outputs are stored at this width
    layers: tuple[KVLayer, ...]
    num_parameters: int  # from the config's shapes, built on the meta device
    num_parameters_by_part: dict[str, int] = field(hash=False, compare=False)
    use_bidirectional_attention: str | None = None  # Gemma 4 26B/31B: "vision"
    # Where the config came from: the checkpoint folder, the local HF cache, the built-in
    # facts of a released id (gemma_explore/facts/released.py), a bundle or a tiny build.
    config_source: str = ""
    # MoE (26B-A4B): parameters of the routed experts, and how many of them run per token.
    expert_parameters: int = 0
    experts_per_token: tuple[int, int] | None = None  # (top_k_experts, num_experts)
    # E-models: the per-layer embedding table (embed_tokens_per_layer), a lookup that
    # Google's "effective" sizes leave out (it can live off the accelerator).
    per_layer_embedding_parameters: int = 0
    # text_config.max_position_embeddings: vLLM derives the longest max_model_len from it
    # (``_get_and_verify_max_len``) and refuses a longer one at start-up. None: not known.
    max_position_embeddings: int | None = None
    # The checkpoint's processor when one could be read (vLLM's dummy inputs come from its
    # settings); None for a bare config or a released id with no local tokenizer.
    processor: Any = field(default=None, compare=False, repr=False, hash=False)

    @property
    def active_parameters(self) -> int:
        """Parameters one token runs through: all, less the experts it is not routed to.

        >>> serving_model("google/gemma-4-26B-A4B-it").active_parameters < 5e9
        True
        """
        if not self.experts_per_token:
            return self.num_parameters
        k, n = self.experts_per_token
        return self.num_parameters - self.expert_parameters * (n - k) // n

    @property
    def spec(self) -> FamilySpec:
        return get_family(self.family)


# The ServingModel fields gemma_explore/facts/released_serving.json holds per released id
# (what serving_model reads from the config and the meta-device build); the name, where the
# config came from and the processor belong to the call.
STORED_FIELDS = frozenset(
    f for f in ServingModel.__dataclass_fields__ if f not in {"name", "config_source", "processor"}
)


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


def meta_parameters(config: Any) -> tuple[int, tuple[tuple[str, int], ...]]:
    """Parameters of the model the config describes, built on the meta device (shapes
    only, no memory), per top-level part; ``experts`` and ``per_layer_embeddings`` are
    also counted apart (they are inside ``language_model``). Tied weights count once, as
    ``model.parameters()`` does. Once per distinct config (``PARAMETER_COUNTS``)."""
    key = config.to_json_string(use_diff=False)
    return PARAMETER_COUNTS.get_or_make(key, lambda: _count_on_meta(config))


def _count_on_meta(config: Any) -> tuple[int, tuple[tuple[str, int], ...]]:
    import torch
    from transformers import AutoModelForImageTextToText

    from gemma_explore.models.tiny import register_tiny_mobilenet

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
    return sum(parts.values()), tuple(parts.items()) + tuple(apart.items())


def _config_of(source: Any) -> tuple[str, str, Any, Any, str]:
    """(name, family, config, processor or None, where the config came from) for a
    bundle, folder, tiny name, released id or config. A released id never reaches the
    hub: a local cache copy of its config wins, else the built-in facts."""
    from gemma_explore.models.bundle import Bundle

    if isinstance(source, Bundle):
        if source.model is not None:
            where = f"the loaded bundle's config ({source.name}, {source.device})"
            from gemma_explore.facts.released import is_released

            if source.device == "meta" and is_released(source.name):  # load(weights=False)
                from gemma_explore.models.checkpoints import BUILT_IN, cached_file_of

                cached = cached_file_of(source.name, "config.json")
                where = f"local Hugging Face cache ({cached})" if cached else BUILT_IN
            return source.name, source.family, source.model.config, source.processor, where
        source = source.name
    if isinstance(source, str | os.PathLike):
        name = os.fspath(source)
        from gemma_explore.facts.released import is_released
        from gemma_explore.models.checkpoints import family_from_config, load_processor
        from gemma_explore.models.tiny import TINY_NAMES, build_tiny_processor, tiny_config

        if name in TINY_NAMES:
            family = TINY_NAMES[name]
            return name, family, tiny_config(family), build_tiny_processor(family), "tiny build"
        if is_released(name) and not os.path.isdir(name):
            from gemma_explore.models.checkpoints import (
                cached_file_of,
                config_for,
                offline_processor,
            )

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

    >>> serving_model("tiny-gemma4").num_parameters
    21788384
    """
    if isinstance(source, ServingModel):
        return source
    stored = _stored_model(source)
    if stored is not None:
        return stored
    name, family, config, processor, where = _config_of(source)
    spec = get_family(family)
    text = config.get_text_config()
    modalities = ["image"]
    if getattr(config, "audio_config", None) is not None:
        modalities.append("audio")
    if spec.has_video:
        modalities.append("video")
    default_budget = _default_budget(spec, config)
    audio_len = getattr(processor, "audio_seq_length", None) if processor is not None else None
    if audio_len is None and "audio" in modalities:
        audio_len = spec.audio.max_tokens
    image_len = spec.image.fixed_soft_tokens
    if processor is not None and spec.image.fixed_soft_tokens is not None:
        image_len = getattr(processor, "image_seq_length", image_len)
    total, counted = meta_parameters(config)
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
        max_position_embeddings=getattr(text, "max_position_embeddings", None),
        processor=processor,
    )


def _stored_model(source: Any) -> ServingModel | None:
    """A released id with no local folder and nothing of it in the local Hugging Face
    cache: the ServingModel from the stored facts (``facts/released_serving.json``, written
    from this module's own reading of the built-in config), with no transformers or torch.
    None otherwise (the config is read)."""
    if not isinstance(source, str | os.PathLike):
        return None
    name = os.fspath(source)
    from gemma_explore.facts.released_serving import released_serving

    facts = released_serving(name)
    if facts is None or os.path.isdir(name):
        return None
    from gemma_explore.models.checkpoints import BUILT_IN, cached_file_of

    if any(cached_file_of(name, f) for f in ("config.json", "tokenizer_config.json")):
        return None  # the cache's config (or processor) wins, as _config_of reads it
    values = {k: v for k, v in facts.items() if k in STORED_FIELDS}
    routed = values.pop("experts_per_token")
    layers = values.pop("layers")
    return ServingModel(
        **{**values, "modalities": tuple(values["modalities"])},
        name=name,
        layers=tuple(KVLayer(**layer) for layer in layers),
        experts_per_token=tuple(routed) if routed else None,
        config_source=BUILT_IN,
    )


def _default_budget(spec: FamilySpec, config: Any) -> int | None:
    """The image worst case vLLM reads from the config: the ``vision_config`` key the
    family names (``budget_config_field``: Gemma 4's ``default_output_length``, Unified's
    ``num_soft_tokens``); None for a family without budgets."""
    if not spec.budget_config_field:
        return None
    return getattr(getattr(config, "vision_config", None), spec.budget_config_field, None)
