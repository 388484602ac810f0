"""Videos for the tests of vLLM's Gemma 4 video path: deterministic frames, and one
prompt of two videos through vLLM's processor (shared by the field and encoding tests)."""

from __future__ import annotations

import numpy as np


def frames(n: int, seed: int = 0) -> np.ndarray:
    return np.random.RandomState(seed).randint(0, 255, (n, 48, 64, 3), np.uint8)  # (n, H, W, 3)


def two_videos_through_vllm(bundle):
    """vLLM's Gemma 4 processor on a prompt of two videos (3 frames at 1 fps, then 5 at
    2 fps): (the processor, its output)."""
    from gemma_explore.engines.vllm_processor import VLLM_PROCESSORS, vllm_apply

    videos = [(frames(3, 1), {"fps": 1.0}), (frames(5, 2), {"fps": 2.0})]
    token = bundle.spec.video_token
    out = vllm_apply(bundle, f"{token} {token}", {"video": videos})
    return VLLM_PROCESSORS.get(bundle), out
