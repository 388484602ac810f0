"""What each released checkpoint needs in memory, and an early, clear refusal.

Figures are total parameters (language model with its per-layer embeddings, vision
and audio towers) as published on the model cards, rounded; weights take
``parameters × bytes per value`` and generation needs some headroom on top for
activations and the KV cache.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import ModelLoadError

__all__ = ["CHECKPOINT_PARAMS_B", "check_fits", "weights_gib"]

# Billions of parameters stored in the checkpoint (not the "effective" E2B/E4B count).
CHECKPOINT_PARAMS_B: dict[str, float] = {
    "google/gemma-3n-e2b-it": 5.4,
    "google/gemma-3n-e2b": 5.4,
    "google/gemma-3n-e4b-it": 7.9,
    "google/gemma-3n-e4b": 7.9,
    "google/gemma-4-e2b-it": 5.1,
    "google/gemma-4-e2b": 5.1,
    "google/gemma-4-e4b-it": 8.0,
    "google/gemma-4-e4b": 8.0,
    "google/gemma-4-26b-a4b-it": 25.2,
    "google/gemma-4-31b-it": 30.7,
    # Unified: the size its name states (no tower; the embedders are < 0.1 B).
    "google/gemma-4-12b-it": 12.0,
}
HEADROOM = 1.2  # activations, KV cache and CUDA context on top of the weights


def _bytes_per_value(dtype: Any) -> int:
    text = str(dtype)
    if "float32" in text:
        return 4
    return 2


def weights_gib(hub_id: str, dtype: Any) -> float | None:
    """GiB the weights of a known checkpoint take in ``dtype`` (None when unknown)."""
    params = CHECKPOINT_PARAMS_B.get(hub_id.lower())
    if params is None:
        return None
    return params * 1e9 * _bytes_per_value(dtype) / 2**30


def _free_gib(device: str) -> float | None:
    if device.startswith("cuda"):
        import torch

        free, _total = torch.cuda.mem_get_info(torch.device(device))
        return free / 2**30
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(hub_id: str, *, device: str, dtype: Any) -> None:
    """Raise before downloading when a known checkpoint cannot fit on ``device``."""
    need = weights_gib(hub_id, dtype)
    free = _free_gib(device)
    if need is None or free is None:
        return
    if need * HEADROOM > free:
        raise ModelLoadError(
            f"{hub_id} needs about {need:.1f} GiB for its weights in {dtype} "
            f"(~{need * HEADROOM:.0f} GiB to generate), but {device} has {free:.1f} GiB free. "
            "Use a bigger GPU, a smaller model (E2B), or the offline tiny default."
        )
