"""vLLM's video timestamps (issue 22, item 10): the fps fallback to 24, the default frame
indices, and several videos in one prompt, held to vLLM's own Gemma 4 processor."""

from __future__ import annotations

import re

import pytest

from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.plans.vllm import vllm_video_timestamps

from .videos import frames, two_videos_through_vllm

pytestmark = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")

STAMP = re.compile(r"\d\d:\d\d")


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
    stamps, _ = _vllm_stamps(tiny4, [(frames(40), metadata)])
    assert tuple(stamps) == ours.timestamps
    assert ours.fps_fell_back == (not metadata.get("fps"))
    assert len(stamps) == 40  # every frame given is encoded: vLLM does not sample an array


def test_no_metadata_is_refused_by_both(tiny4):
    with pytest.raises(ValueError, match="metadata is required"):
        _vllm_stamps(tiny4, [frames(4)])
    with pytest.raises(ValueError, match="send \\(frames"):
        vllm_video_timestamps(4, metadata=None)


def test_two_videos_keep_their_order(tiny4):
    """Each <|video|> is replaced by its own item's frames, in item order (vLLM splits
    the prompt on the token once, so a replacement is never re-split)."""
    first, second = (frames(3, 1), {"fps": 1.0}), (frames(5, 2), {"fps": 2.0})
    stamps, ranges = _vllm_stamps(tiny4, [first, second])
    ours = [
        vllm_video_timestamps(3, metadata=first[1]),
        vllm_video_timestamps(5, metadata=second[1]),
    ]
    assert tuple(stamps) == ours[0].timestamps + ours[1].timestamps
    assert len(ranges) == 2 and ranges[0][0] < ranges[1][0]
    assert ranges[1][2] / ranges[0][2] == pytest.approx(5 / 3)  # same frame size: per frame


def test_video_fields_are_vllms(tiny4):
    """vllm_video_fields against what vLLM's Gemma 4 processor ships per video: the
    frames flat and split by the counts (flat_from_sizes), the counts, soft tokens and
    timestamps kept on the CPU, and one embedding run per video."""
    from vllm.multimodal.inputs import MultiModalFlatField

    from gemma_explore.plans.vllm import vllm_video_fields

    proc, out = two_videos_through_vllm(tiny4)
    items = out["mm_kwargs"]["video"]
    soft = [list(item["video_num_soft_tokens"].data) for item in items]
    ours = vllm_video_fields(soft)
    assert set(ours.fields) == set(items[0])
    for name, (kind, on_cpu) in ours.fields.items():
        for item in items:
            elem = item[name]
            assert isinstance(elem.field, MultiModalFlatField) == (kind == "flat_from_sizes")
            assert elem.field.keep_on_cpu is on_cpu, name
    for item, count, (start, stop) in zip(items, ours.frame_counts, ours.frame_slices, strict=True):
        assert int(item["video_frame_counts"].data) == count == stop - start
        assert item["pixel_values_videos"].data.shape[0] == count  # its own frames only
    embeds = [r.is_embed.sum().item() for r in out["mm_placeholders"]["video"]]
    assert tuple(embeds) == ours.embedding_rows  # one run of embeddings per video
    # The field table itself, as _get_mm_fields_config builds it from the frame counts.
    import torch
    from transformers import BatchFeature

    config = proc._get_mm_fields_config(
        BatchFeature({"video_frame_counts": torch.tensor(ours.frame_counts)}), {}
    )
    for name, (kind, on_cpu) in ours.fields.items():
        assert isinstance(config[name].field, MultiModalFlatField) == (kind == "flat_from_sizes")
        assert config[name].field.keep_on_cpu is on_cpu
    frames = torch.zeros(sum(ours.frame_counts), 1)
    slices = config["pixel_values_videos"].field.slices
    assert [frames[sl].shape[0] for sl in slices] == list(ours.frame_counts)
    assert [(sl[0].start, sl[0].stop) for sl in slices] == list(ours.frame_slices)
