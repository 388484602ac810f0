"""vLLM's video timestamps (issue 22, item 10): the fps fallback to 24, the default frame
indices, and several videos in one prompt, held to vLLM's own Gemma 4 processor."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.plans.vllm import vllm_video_timestamps

pytestmark = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")

STAMP = re.compile(r"\d\d:\d\d")


def _frames(n: int, seed: int = 0) -> np.ndarray:
    return np.random.RandomState(seed).randint(0, 255, (n, 48, 64, 3), np.uint8)  # (n, H, W, 3)


def _vllm_stamps(bundle, videos: list) -> tuple[list[str], list]:
    from gemma_explore.engines.vllm_processor import VLLM_PROCESSORS, vllm_process

    token = bundle.spec.video_token
    out = vllm_process(bundle, " ".join([token] * len(videos)), {"video": videos})
    text = VLLM_PROCESSORS.get(bundle).info.ctx.tokenizer.decode(out["prompt_token_ids"])
    return STAMP.findall(text), out["placeholders"]["video"]


@pytest.mark.parametrize(
    "metadata",
    [
        {},
        {"fps": None},
        {"fps": 0},
        {"fps": 4.0},
        {"fps": 4.0, "frames_indices": list(range(0, 80, 2))},
    ],
)
def test_timestamps_equal_vllms(tiny4, metadata):
    ours = vllm_video_timestamps(40, metadata=metadata)
    stamps, _ = _vllm_stamps(tiny4, [(_frames(40), metadata)])
    assert tuple(stamps) == ours.timestamps
    assert ours.fps_fell_back == (not metadata.get("fps"))
    assert len(stamps) == 40  # every frame given is encoded: vLLM does not sample an array


def test_no_metadata_is_refused_by_both(tiny4):
    with pytest.raises(ValueError, match="metadata is required"):
        _vllm_stamps(tiny4, [_frames(4)])
    with pytest.raises(ValueError, match="send \\(frames"):
        vllm_video_timestamps(4, metadata=None)


def test_two_videos_keep_their_order(tiny4):
    """Each <|video|> is replaced by its own item's frames, in item order (vLLM splits
    the prompt on the token once, so a replacement is never re-split)."""
    first, second = (_frames(3, 1), {"fps": 1.0}), (_frames(5, 2), {"fps": 2.0})
    stamps, ranges = _vllm_stamps(tiny4, [first, second])
    ours = [
        vllm_video_timestamps(3, metadata=first[1]),
        vllm_video_timestamps(5, metadata=second[1]),
    ]
    assert tuple(stamps) == ours[0].timestamps + ours[1].timestamps
    assert len(ranges) == 2 and ranges[0][0] < ranges[1][0]
    assert ranges[1][2] / ranges[0][2] == pytest.approx(5 / 3)  # same frame size: per frame
