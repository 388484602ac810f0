"""Deprecated: this module's name hid the standard library's ``inspect``. It is now
:mod:`gemma_explore.inspection`; importing this one warns, and it goes in 0.3."""

from __future__ import annotations

import warnings

from .inspection import (
    EncodedItems,
    EncoderReport,
    ItemReport,
    PooledTokens,
    encode_audio,
    encode_images,
    inspect_multimodal,
    vision_pooling,
)

__all__ = [
    "EncodedItems",
    "EncoderReport",
    "ItemReport",
    "PooledTokens",
    "encode_audio",
    "encode_images",
    "inspect_multimodal",
    "vision_pooling",
]

warnings.warn(
    "gemma_explore.inspect was renamed gemma_explore.inspection (it hid the standard "
    "library's inspect) and goes in 0.3: import from gemma_explore.inspection.",
    DeprecationWarning,
    stacklevel=2,
)
