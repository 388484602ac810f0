"""What stands between the pixels (or samples) and the language model, at released size.

Each family's towers, or Unified's embedders, are instantiated on PyTorch's ``meta``
device from transformers' own config classes, so their parameters are counted without
allocating a byte or downloading a checkpoint. A family name counts its E-model towers
(transformers' defaults); a released id counts that checkpoint's own towers from its
built-in config (:mod:`gemma_explore.released`): the 26B-A4B and 31B carry a 1152-wide,
27-layer vision tower (0.57 B) and no audio tower.

>>> sizes = encoder_sizes("gemma4_unified")          # doctest: +SKIP
>>> sizes.vision_params < encoder_sizes("gemma4").vision_params   # doctest: +SKIP
True
>>> encoder_sizes("google/gemma-4-31B-it").vision_params       # doctest: +SKIP
569548080
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..families import get_family
from ..released import is_released, released_config

__all__ = ["EncoderSizes", "encoder_sizes"]

# Unified 12B's language-model width (published config mirrors; transformers' class
# default is 2304). Only the embedders' last projection depends on it.
UNIFIED_TEXT_HIDDEN = 3840


@dataclass(frozen=True)
class EncoderSizes:
    """Parameters that turn pixels and samples into soft tokens, for one family."""

    family: str
    vision_params: int  # 3n: MobileNet-V5-300m; 4: ViT tower; Unified: patch embedder
    audio_params: int  # 3n / 4: Conformer towers; Unified: one frame projection
    vision_kind: str  # what it is, in words (families.py)
    audio_kind: str
    source: str  # which classes were counted, and what was left out


def _count(module) -> int:
    return sum(p.numel() for p in module.parameters())


@cache
def encoder_sizes(family: str) -> EncoderSizes:
    """Count a family's (or a released checkpoint's) vision and audio parameters at
    released size (meta device).

    Gemma 3n and Gemma 4: the towers only (their small linear projections into the
    language model are left out). Unified: the whole path, embedder and projection,
    since that is all it has. A released id without an audio tower reports 0 audio
    parameters.
    """
    if is_released(family):
        return _released_sizes(family)
    import torch

    spec = get_family(family)
    with torch.device("meta"):
        if spec.name == "gemma3n":
            import timm
            from transformers import Gemma3nAudioConfig
            from transformers.models.gemma3n.modeling_gemma3n import Gemma3nAudioEncoder

            vision = _count(timm.create_model("mobilenetv5_300m_enc", pretrained=False))
            audio = _count(Gemma3nAudioEncoder(Gemma3nAudioConfig()))
            source = "timm mobilenetv5_300m_enc + Gemma3nAudioEncoder(Gemma3nAudioConfig())"
        elif spec.encoder_free:
            from transformers import (
                Gemma4UnifiedAudioConfig,
                Gemma4UnifiedTextConfig,
                Gemma4UnifiedVisionConfig,
            )
            from transformers.models.gemma4_unified import modeling_gemma4_unified as mu

            text = Gemma4UnifiedTextConfig(hidden_size=UNIFIED_TEXT_HIDDEN)
            vision_config = Gemma4UnifiedVisionConfig()
            vision = _count(mu.Gemma4UnifiedVisionEmbedder(vision_config, text))
            audio = _count(mu.Gemma4UnifiedMultimodalEmbedder(Gemma4UnifiedAudioConfig(), text))
            source = (
                "Gemma4UnifiedVisionEmbedder + Gemma4UnifiedMultimodalEmbedder at default "
                f"configs, language model width {UNIFIED_TEXT_HIDDEN}"
            )
        else:
            from transformers import Gemma4AudioConfig, Gemma4VisionConfig
            from transformers.models.gemma4 import modeling_gemma4 as m4

            vision = _count(m4.Gemma4VisionModel(Gemma4VisionConfig()))
            audio = _count(m4.Gemma4AudioModel(Gemma4AudioConfig()))
            source = "Gemma4VisionModel + Gemma4AudioModel at default configs (E2B/E4B towers)"
    return EncoderSizes(spec.name, vision, audio, spec.image_encoder, spec.audio_encoder, source)


def _released_sizes(model_id: str) -> EncoderSizes:
    """A released checkpoint's own towers, from its built-in config (meta device)."""
    import torch

    config = released_config(model_id)
    spec = get_family(config.model_type)
    if spec.name != "gemma4":  # 3n and Unified: every release has the family's towers
        sizes = encoder_sizes(spec.name)
        return EncoderSizes(
            spec.name, sizes.vision_params, sizes.audio_params, sizes.vision_kind,
            sizes.audio_kind, f"{model_id}: {sizes.source}",
        )  # fmt: skip
    from transformers.models.gemma4 import modeling_gemma4 as m4

    v = config.vision_config
    with torch.device("meta"):
        vision = _count(m4.Gemma4VisionModel(v))
        audio = (
            0 if config.audio_config is None else _count(m4.Gemma4AudioModel(config.audio_config))
        )
    source = (
        f"{model_id}: Gemma4VisionModel at its released vision_config ({v.hidden_size} wide, "
        f"{v.num_hidden_layers} layers)"
        + (" + Gemma4AudioModel" if audio else "; no audio_config, so no audio tower")
    )
    return EncoderSizes(
        spec.name, vision, audio, spec.image_encoder,
        spec.audio_encoder if audio else "none (no audio tower)", source,
    )  # fmt: skip
