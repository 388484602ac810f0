"""The golden set, read: Gemma's multimodal token expansion as JSON Lines any runtime can
test against (``conformance/v1/``), the rules that rebuild every case's input, and
:func:`read_golden`, which checks each file against the manifest's SHA-256.

Each case describes its input so any language can rebuild it (an image's width, height
and :func:`rule_pixels`; a clip's sample count, rate and :func:`rule_wave`; a video's
frame count, fps and frame size; or a raw prompt), every step, the expanded prompt
transformers' processor makes, vLLM's where it differs, and every known place where the
two libraries part. The set is made by :mod:`gemma_explore.conformance.generate`
(``gemma-explore golden``), which runs the real processors.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "FORMAT",
    "MANIFEST",
    "PIXEL_RULE",
    "SCHEMA_FILE",
    "VERSION",
    "WAVE_RULE",
    "read_golden",
    "rule_pixels",
    "rule_wave",
    "sha256_hex",
]

FORMAT = "gemma-explore-golden/1"  # every line's "format"; bumped when a field changes meaning
VERSION = "v1"  # the folder the committed copy lives in (conformance/v1/)
SCHEMA_FILE = Path(__file__).with_name("golden_schema.json")
PIXEL_RULE = "ge-rgb-1"  # rule_pixels: R, G, B of pixel (x, y) of frame f, integers only
WAVE_RULE = "ge-wave-1"  # rule_wave: sample i, an int16 value over 32768, exact in float32
MANIFEST = "manifest.json"

# -------------------------------------------------------------------- rebuildable inputs


def rule_pixels(width: int, height: int, frame: int = 0) -> np.ndarray:
    """The deterministic RGB image of every case, (height, width, 3) uint8: pixel (x, y)
    of video frame ``frame`` is R = (7x + 3y + 13f) mod 256, G = (5x + 11y + 85) mod 256,
    B = (x xor y) mod 256. Integer arithmetic only, so every language rebuilds it exactly.

    >>> rule_pixels(3, 2)[1].tolist()
    [[3, 96, 1], [10, 101, 0], [17, 106, 3]]
    """
    y, x = np.mgrid[0:height, 0:width].astype(np.int64)
    r = (7 * x + 3 * y + 13 * frame) % 256
    g = (5 * x + 11 * y + 85) % 256
    b = (x ^ y) % 256
    return np.stack([r, g, b], axis=-1).astype(np.uint8)


def rule_wave(samples: int) -> np.ndarray:
    """The deterministic mono clip of every audio case, float32: sample i is
    ((7919 i) mod 2001 − 1000) / 32768, an int16 value over 32768 (exact in float32).

    >>> (rule_wave(3) * 32768).tolist()
    [-1000.0, 916.0, 831.0]
    """
    i = np.arange(samples, dtype=np.int64)
    return (((7919 * i) % 2001 - 1000) / 32768).astype(np.float32)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_golden(folder: str | Path) -> dict[str, list[dict[str, Any]]]:
    """A written set, family → records, each file checked against the manifest's SHA-256.

    Not run by the doctests: it reads the checkout's conformance/ folder, which the wheel does not ship.

    >>> read_golden("conformance/v1")["gemma4"][0]["id"]               # doctest: +SKIP
    'gemma4/image/b70/10000x1'
    """
    folder = Path(folder)
    manifest = json.loads((folder / MANIFEST).read_text())
    out = {}
    for name, info in manifest["files"].items():
        data = (folder / name).read_bytes()
        if sha256_hex(data) != info["sha256"]:
            raise ValueError(f"{folder / name} does not match its SHA-256 in {MANIFEST}.")
        if name.endswith(".jsonl"):
            out[name.removesuffix(".jsonl")] = [json.loads(line) for line in data.splitlines()]
    return out
