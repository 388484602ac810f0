"""What stands between the pixels (or samples) and the language model, at released size.

Each family's towers, or Unified's embedders, are built on PyTorch's ``meta`` device the
way the family's model builds them (:func:`build_part`: ``AutoModel.from_config`` for a
tower, the family's embedder class for the projection), so their parameters are counted
without allocating a byte or downloading a checkpoint. A released id counts that
checkpoint's own towers from its built-in config (:mod:`gemma_explore.facts.released`): the
26B-A4B and 31B carry a 1152-wide, 27-layer vision tower (0.57 B) and no audio tower. A
family counts the towers of its first released checkpoint (the E2B for Gemma 3n and
Gemma 4, whose E-models share their towers).

>>> sizes = encoder_sizes("gemma4_unified")
>>> sizes.vision_params < encoder_sizes("gemma4").vision_params
True
>>> encoder_sizes("google/gemma-4-31B-it").vision_params
569548080
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from gemma_explore.facts.families import get_family
from gemma_explore.facts.released import is_released, released_config
from gemma_explore.models.tiny import register_tiny_mobilenet

__all__ = ["PARTS", "EncoderSizes", "build_part", "encoder_sizes"]

PARTS = ("vision", "audio", "text")  # what build_part builds


@dataclass(frozen=True)
class EncoderSizes:
    """Parameters that turn pixels and samples into soft tokens, for one family."""

    family: str
    vision_params: int  # 3n: MobileNet-V5-300m; 4: ViT tower; Unified: patch embedder
    audio_params: int  # 3n / 4: Conformer towers; Unified: one frame projection; 0: none
    vision_kind: str  # what it is, in words (families.py)
    audio_kind: str
    source: str  # which classes were counted, and what was left out


def build_part(config: Any, part: str) -> tuple[Any, Any]:
    """``(tower, embedder)`` of one modality of ``config``, as the family's model builds
    them, on the current default device (wrap the call in ``torch.device("meta")`` to
    allocate nothing): the tower is ``AutoModel.from_config(vision_config)`` (Gemma 3n:
    timm's MobileNet-V5 in transformers' wrapper) or ``None`` for an encoder-free family;
    the embedder is the family's projection into the language model (Unified: the whole
    path). ``part="text"``: ``(language model, None)``.

    >>> from gemma_explore.models.tiny import tiny_config
    >>> tower, embedder = build_part(tiny_config("gemma4_unified"), "audio")
    >>> tower is None, type(embedder).__name__
    (True, 'Gemma4UnifiedMultimodalEmbedder')
    """
    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, not {part!r}.")
    spec = get_family(config.model_type)
    classes = spec.classes
    text = config.get_text_config()
    if part == "text":
        return classes.resolve("text_model")(text).eval(), None
    from transformers import AutoModel

    register_tiny_mobilenet()  # a tiny Gemma 3n's vision config names our slim timm encoder
    sub = getattr(config, f"{part}_config")
    tower = None if spec.encoder_free else AutoModel.from_config(sub).eval()
    return tower, classes.resolve(f"{part}_embedder")(sub, text).eval()


def _count(module: Any) -> int:
    return sum(p.numel() for p in module.parameters())


@cache
def encoder_sizes(family: str) -> EncoderSizes:
    """Count a family's (or a released checkpoint's) vision and audio parameters at
    released size (meta device).

    With towers (Gemma 3n, Gemma 4): the towers only (their small linear projections
    into the language model are left out). Encoder-free (Unified): the whole path,
    embedder and projection, since that is all it has. A released id without an audio
    tower reports 0 audio parameters.
    """
    if is_released(family):
        return _released_sizes(family)
    spec = get_family(family)
    sizes = _released_sizes(spec.hub_ids[0])
    return EncoderSizes(
        spec.name,
        sizes.vision_params,
        sizes.audio_params,
        sizes.vision_kind,
        sizes.audio_kind,
        sizes.source,
    )


def _released_sizes(model_id: str) -> EncoderSizes:
    """A released checkpoint's own towers (or embedders), from its built-in config."""
    import torch

    config = released_config(model_id)
    spec = get_family(config.model_type)
    counted = {}
    with torch.device("meta"):
        for part in ("vision", "audio"):
            if getattr(config, f"{part}_config", None) is None:
                counted[part] = (0, "none")
                continue
            tower, embedder = build_part(config, part)
            module = embedder if tower is None else tower
            counted[part] = (_count(module), type(module).__name__)
    vision, audio = counted["vision"][0], counted["audio"][0]
    v = config.vision_config
    shape = (
        f" ({v.hidden_size} wide, {v.num_hidden_layers} layers)"
        if hasattr(v, "num_hidden_layers")  # a ViT; not timm's MobileNet or an embedder
        else ""
    )
    source = f"{model_id}: {counted['vision'][1]} at its released vision_config{shape}" + (
        f" + {counted['audio'][1]}" if audio else "; no audio_config, so no audio tower"
    )
    return EncoderSizes(
        spec.name,
        vision,
        audio,
        spec.image_encoder,
        spec.audio_encoder if audio else "none (no audio tower)",
        source,
    )
