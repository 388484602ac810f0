"""What each released checkpoint needs in memory, and an early, clear refusal.

Figures are total parameters (language model with its per-layer embeddings, vision
and audio towers) as published on the model cards, rounded; weights take
``parameters × bytes per value`` and generation needs some headroom on top for
activations and the KV cache.
"""

from __future__ import annotations

import os
from typing import Any

from gemma_explore.errors import ModelLoadError
from gemma_explore.facts.families import FAMILIES, family_from_name

__all__ = ["CHECKPOINT_PARAMS_B", "require_fits", "weights_gib"]

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


def _available_gib(device: str) -> float | None:
    """Memory a new model can take: the GPU's free memory, or the host's *available* memory
    (MemAvailable: free pages plus the page cache the kernel gives back on demand; "free"
    alone understates it on any machine that has read files)."""
    if device.startswith("cuda"):
        import torch

        free, _total = torch.cuda.mem_get_info(torch.device(device))
        return free / 2**30
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024 / 2**30  # kB
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30
    except (ValueError, OSError, AttributeError):
        return None


def _smaller_that_fits(hub_id: str, available: float, dtype: Any) -> str | None:
    """The largest checkpoint of the same generation, smaller than ``hub_id``, that fits.

    >>> _smaller_that_fits("google/gemma-4-E4B-it", 14.0, "bfloat16")  # E2B: 9.5 GiB × 1.2
    'google/gemma-4-e2b-it'
    >>> _smaller_that_fits("google/gemma-4-E2B-it", 14.0, "bfloat16") is None  # none smaller
    True
    """
    key = hub_id.lower()
    family = family_from_name(key)  # a smaller checkpoint of the same family, never another
    instruct = key.endswith("-it")
    need = weights_gib(hub_id, dtype) or 0.0
    fits = [
        (params, name)
        for name, params in CHECKPOINT_PARAMS_B.items()
        if family_from_name(name) is family
        and name.endswith("-it") == instruct
        and (w := weights_gib(name, dtype)) is not None
        and w < need
        and w * HEADROOM <= available
    ]
    return max(fits)[1] if fits else None


def require_fits(hub_id: str, *, device: str, dtype: Any) -> str:
    """``hub_id``, when a known checkpoint fits on ``device`` (or its size or the memory is
    unknown); else a refusal before any download, naming a smaller checkpoint that fits.

    >>> require_fits("my-org/unknown-model", device="cpu", dtype="bfloat16")
    'my-org/unknown-model'
    """
    need = weights_gib(hub_id, dtype)
    available = _available_gib(device)
    if need is None or available is None:
        return hub_id
    if need * HEADROOM > available:
        smaller = _smaller_that_fits(hub_id, available, dtype)
        instead = f"a smaller checkpoint that fits ({smaller}), " if smaller else ""
        raise ModelLoadError(
            f"{hub_id} needs about {need:.1f} GiB for its weights in {dtype} "
            f"(~{need * HEADROOM:.0f} GiB to generate), but {device} has {available:.1f} GiB "
            f"available. Use a bigger GPU, {instead}or an offline tiny default "
            f"({', '.join(f.tiny_name for f in FAMILIES.values())}). Its weights must also be "
            "in your Hugging Face cache "
            "or downloadable: without a network, pass a local checkpoint folder."
        )
    return hub_id
