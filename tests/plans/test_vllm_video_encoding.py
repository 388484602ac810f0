"""vLLM's Gemma 4 video encoding, run: ``_process_video_input`` returns one tensor per
video, its frames' soft tokens in order, as many rows as the prompt's placeholders
(:func:`~gemma_explore.plans.vllm.vllm_video_fields`), and the same vectors as
transformers' ``get_video_features`` on the same frames."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.plans.vllm import vllm_video_fields

from .videos import two_videos_through_vllm

pytestmark = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")


def test_one_tensor_per_video_in_frame_order(tiny4, monkeypatch):
    from vllm.model_executor.models.gemma4_mm import Gemma4ForConditionalGeneration

    _proc, out = two_videos_through_vllm(tiny4)
    items = out["mm_kwargs"]["video"]
    # What vLLM's runner batches for the model: the fields of both videos, frames flat.
    names = ("pixel_values_videos", "pixel_position_ids_videos", "video_frame_counts")
    batch = {
        k: torch.cat([it[k].data.reshape(-1, *it[k].data.shape[1:]) for it in items]) for k in names
    }
    # The model's own method on the tiny checkpoint's tower and embedder (the modules vLLM
    # builds: transformers' vision model, and an embedder of the same weights). The memory
    # it sizes its chunks from is what a GPU would report; CPU has no such call.
    hf = tiny4.model.model
    monkeypatch.setattr(torch.accelerator, "get_memory_info", lambda *a, **k: (8 << 30, 80 << 30))
    model = SimpleNamespace(
        vision_tower=hf.vision_tower,
        embed_vision=hf.embed_vision,
        config=tiny4.model.config,
        model_dtype=torch.float32,
        _encoder_chunk=Gemma4ForConditionalGeneration._encoder_chunk,
    )
    with torch.no_grad():
        theirs = Gemma4ForConditionalGeneration._process_video_input(model, batch)
        hf_split = hf.get_video_features(
            pixel_values_videos=batch["pixel_values_videos"],
            video_position_ids=batch["pixel_position_ids_videos"],
            num_frames_per_video=batch["video_frame_counts"],
        ).pooler_output
    soft = [list(it["video_num_soft_tokens"].data) for it in items]
    ours = vllm_video_fields(soft)
    assert len(theirs) == len(items) == 2  # one tensor per video, not per frame
    assert tuple(t.shape[0] for t in theirs) == ours.embedding_rows
    embeds = tuple(r.is_embed.sum().item() for r in out["mm_placeholders"]["video"])
    assert embeds == ours.embedding_rows  # as many rows as the prompt has placeholders
    for v, t in zip(theirs, hf_split, strict=True):  # the same vectors, frame by frame
        torch.testing.assert_close(v, t.reshape(v.shape), atol=1e-4, rtol=1e-3)
