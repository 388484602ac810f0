"""Which tokens a laid-out prompt's tokens may look at: the masks transformers builds.

Gemma's decoder interleaves two kinds of layer (``text_config.layer_types``):

* **full attention**: every token sees itself and everything before it (causal);
* **sliding attention**: the same, but only the last ``sliding_window`` tokens
  (``k > q − W``), so KV for older tokens can be dropped.

The larger Gemma 4 checkpoints set ``use_bidirectional_attention="vision"``: on sliding
layers only, the soft tokens of one image (or one video frame) also see each other,
including later ones in the same span; full layers stay causal
(``create_masks_for_vision_model`` in transformers' ``modeling_gemma4.py``). E2B/E4B and
Gemma 3n leave it ``None``: everything is causal. The window still clamps the past
inside an image span, never the future. vLLM does the same with its
``mm_prefix`` ranges, cleared again on full-attention layers
(``_clear_mm_prefix_for_full_attn_layers`` in ``gemma4_mm.py``).

:func:`attention_mask` calls transformers' own mask functions for the bundle's config
(with eager attention, so that both layer types give a materialised mask).

>>> import gemma_explore as ge
>>> bundle = ge.load("tiny-gemma4")
>>> layout = ge.layout_prompt("Look:", bundle=bundle, images=[(96, 96)], max_soft_tokens=70)
>>> masks = attention_mask(layout, bundle=bundle, use_bidirectional_attention="vision")
>>> masks.future_pairs("sliding_attention") > 0, masks.future_pairs("full_attention")
(True, 0)
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gemma_explore.facts.families import FamilySpec
from gemma_explore.processing.layout import PromptLayout

if TYPE_CHECKING:
    from gemma_explore.models.bundle import Bundle

__all__ = ["AttentionMasks", "CHECKPOINT", "MM_TOKEN_TYPES", "attention_mask"]

CHECKPOINT = "checkpoint"  # use_bidirectional_attention as the checkpoint's config says
# transformers' ProcessorMixin.create_mm_token_type_ids: 1 image, 2 video, 3 audio, 0 text
MM_TOKEN_TYPES = {"image_soft": 1, "video_soft": 2, "audio_soft": 3}


@dataclass(frozen=True)
class AttentionMasks:
    """The boolean masks (True = may attend) one prompt meets on each layer type."""

    spec: FamilySpec = field(repr=False)  # the family whose masks these are
    use_bidirectional_attention: str | None  # what the masks were built with
    from_checkpoint: bool  # True when that is the checkpoint's own setting
    sliding_window: int  # W: a sliding layer sees keys k > q − W
    layer_types: tuple[str, ...]  # per decoder layer
    kinds: tuple[str, ...]  # per token: the layout's segment kind
    mm_token_type_ids: tuple[int, ...]  # per token: 0 text, 1 image, 2 video, 3 audio
    full: np.ndarray = field(repr=False)  # (T, T) bool, query × key
    sliding: np.ndarray = field(repr=False)  # (T, T) bool
    steps: tuple[str, ...] = field(default=(), compare=False)

    @property
    def family(self) -> str:
        """The family's name ("gemma3n", "gemma4", "gemma4_unified"), read off ``spec``."""
        return self.spec.name

    @property
    def num_tokens(self) -> int:
        return len(self.kinds)

    def mask(self, layer_type: str) -> np.ndarray:
        """The mask of ``"full_attention"`` or ``"sliding_attention"`` layers."""
        if layer_type not in ("full_attention", "sliding_attention"):
            raise ValueError("layer_type is 'full_attention' or 'sliding_attention'.")
        return self.full if layer_type == "full_attention" else self.sliding

    def future_pairs(self, layer_type: str) -> int:
        """(query, key) pairs with the key *after* the query that may attend: 0 when causal."""
        return int(np.triu(self.mask(layer_type), k=1).sum())

    @property
    def sliding_layers(self) -> tuple[int, ...]:
        return tuple(i for i, t in enumerate(self.layer_types) if t == "sliding_attention")

    @property
    def full_layers(self) -> tuple[int, ...]:
        return tuple(i for i, t in enumerate(self.layer_types) if t == "full_attention")


def _config_of(bundle: Bundle) -> Any:
    if bundle.model is not None:
        return bundle.model.config
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(bundle.name)
    except OSError as exc:
        raise ValueError(
            f"The masks need {bundle.name!r}'s config, which is not on this machine ({exc}). "
            "Load a local folder or a tiny bundle."
        ) from exc


def attention_mask(
    layout: PromptLayout,
    *,
    bundle: Bundle,
    use_bidirectional_attention: str | None = CHECKPOINT,
) -> AttentionMasks:
    """The masks transformers builds for ``layout``'s prompt on the bundle's two layer types.

    ``use_bidirectional_attention`` is read from the checkpoint's text config by default;
    pass ``"vision"`` or ``None`` to see what the other setting would do (a tiny bundle
    with the flag set, as the 26B/31B checkpoints have it).
    """
    config = _config_of(bundle)
    text, flag, ckpt = _text_config_with(bundle, config, use_bidirectional_attention)
    kinds = _token_kinds(layout)
    types = [MM_TOKEN_TYPES.get(k, 0) for k in kinds]
    kwargs = _mask_inputs(text, len(kinds))
    if flag == "vision":
        masks, rule = _vision_masks(bundle, config, types, kwargs)
    else:
        masks, rule = _causal_masks(kwargs)
    out = AttentionMasks(
        spec=bundle.spec,
        use_bidirectional_attention=flag,
        from_checkpoint=flag == ckpt,
        sliding_window=int(text.sliding_window),
        layer_types=tuple(text.layer_types),
        kinds=tuple(kinds),
        mm_token_type_ids=tuple(types),
        full=_as_bool(masks["full_attention"]),
        sliding=_as_bool(masks["sliding_attention"]),
        steps=(),
    )
    layers = (
        f"{len(text.layer_types)} decoder layers: "
        f"{text.layer_types.count('sliding_attention')} sliding (window {text.sliding_window}), "
        f"{text.layer_types.count('full_attention')} full"
    )
    pairs = (
        f"{len(kinds)} tokens; pairs that see a later token: sliding "
        f"{out.future_pairs('sliding_attention')}, full {out.future_pairs('full_attention')}"
    )
    return dataclasses.replace(out, steps=(layers, rule, pairs))


def _text_config_with(bundle: Bundle, config: Any, asked: str | None) -> tuple[Any, Any, Any]:
    """A copy of the text config set up for the masks: the bidirectional flag asked for
    (the checkpoint's own by default) and eager attention, which materialises both masks
    (sdpa skips the causal one). Returns (text config, flag, the checkpoint's flag)."""
    text = copy.deepcopy(config.get_text_config())
    ckpt = getattr(text, "use_bidirectional_attention", None)
    flag = ckpt if asked == CHECKPOINT else asked
    if flag not in (None, "vision"):
        raise ValueError(
            f"use_bidirectional_attention={flag!r} is for embedding checkpoints; the masks "
            "here explain None (causal) and 'vision' (image spans see each other)."
        )
    if flag == "vision" and not hasattr(text, "use_bidirectional_attention"):
        raise ValueError(
            f"{bundle.spec.display_name} has no use_bidirectional_attention setting: its "
            "masks are always causal. Pass use_bidirectional_attention=None."
        )
    if hasattr(text, "use_bidirectional_attention"):
        text.use_bidirectional_attention = flag
    text._attn_implementation = "eager"
    return text, flag, ckpt


def _token_kinds(layout: PromptLayout) -> list[str]:
    """Each token's segment kind ("image_soft", "text", …), in prompt order."""
    kinds = [""] * len(layout.input_ids)
    for seg in layout.segments:
        for p in range(seg.start, seg.end):
            kinds[p] = seg.kind
    return kinds


def _mask_inputs(text: Any, n: int) -> dict[str, Any]:
    """What transformers' mask functions read for a batch of one ``n``-token prompt."""
    import torch

    return {
        "config": text,
        "inputs_embeds": torch.zeros(1, n, 1),  # only batch, length and dtype are read
        "attention_mask": torch.ones(1, n, dtype=torch.long),
        _cache_arg(): None,
        "position_ids": torch.arange(n)[None],  # (1, T)
    }


def _cache_arg() -> str:
    """The mask functions' name for the KV cache: ``past_key_values`` until transformers
    5.24 renamed it ``cache`` (masking_utils.create_causal_mask, no alias kept)."""
    import inspect

    from transformers import masking_utils

    params = inspect.signature(masking_utils.create_causal_mask).parameters
    return "cache" if "cache" in params else "past_key_values"


def _vision_masks(
    bundle: Bundle, config: Any, types: list[int], kwargs: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    """The masks with each run of image (or video-frame) soft tokens open as a block, and
    the sentence that says on which layers."""
    import torch
    from transformers import masking_utils

    module = importlib.import_module(
        f"transformers.models.{config.model_type}.modeling_{config.model_type}"
    )
    mm = torch.tensor([types])  # (1, T)
    blocks = module.get_block_sequence_ids_for_mask(mm, device="cpu")  # (1, T), -1 = no block
    if bundle.spec.encoder_free:
        # transformers' Gemma4UnifiedModel.forward (and so generate) builds this mask with
        # the generic create_masks_for_generate, which opens each block on full layers
        # too (modeling_gemma4_unified.py: 5.19.0 line 1115, the same in 5.22.2 and
        # 5.25.0); its own create_masks_for_vision_model, Gemma 4, and vLLM's Unified
        # (gemma4_mm.py _clear_mm_prefix_for_full_attn_layers, in every supported vLLM
        # release) keep full layers causal.
        masks = masking_utils.create_masks_for_generate(block_sequence_ids=blocks, **kwargs)
        return masks, (
            "use_bidirectional_attention='vision' (Unified, transformers): each run of "
            "image (or video-frame) soft tokens is a block, open on BOTH layer types "
            "(Gemma4UnifiedModel.forward uses create_masks_for_generate); vLLM opens it "
            "on sliding layers only, so the two differ on full layers"
        )
    masks = module.create_masks_for_vision_model(block_sequence_ids=blocks, **kwargs)
    return masks, (
        "use_bidirectional_attention='vision': each run of image (or video-frame) soft "
        "tokens is a block; sliding layers allow (causal OR same block) AND window, "
        "full layers stay causal (create_masks_for_vision_model)"
    )


def _causal_masks(kwargs: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Causal masks on both layer types, the window on sliding ones."""
    from transformers import masking_utils

    masks = {
        "full_attention": masking_utils.create_causal_mask(**kwargs),
        "sliding_attention": masking_utils.create_sliding_window_causal_mask(**kwargs),
    }
    return masks, "use_bidirectional_attention=None: causal on every layer, window on sliding ones"


def _as_bool(mask: Any) -> np.ndarray:
    """(T, T) bool, True = may attend, from transformers' mask (bool or additive float)."""
    m = mask[0, 0]  # (T, T) additive float: 0 = attend
    return (m == 0).numpy() if m.dtype.is_floating_point else m.numpy().astype(bool)
