"""Image batching (issue 22, item 5): our buckets and chunks equal the encoder calls vLLM's
own _process_image_input makes, run on CPU with the tower replaced by a recorder."""

from __future__ import annotations

import types

import pytest
import torch

from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.serving.batches import plan_image_batches

pytestmark = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")


class _Stop(Exception):
    pass


def _vllm_calls(patches, frees, total, lora_budget=None, monkeypatch=None):
    """Run vLLM's _process_image_input; return the image indices of each encoder call."""
    from vllm.model_executor.models.gemma4_mm import Gemma4ForConditionalGeneration as G

    calls, free_iter = [], iter(frees)
    monkeypatch.setattr(torch.accelerator, "get_memory_info", lambda: (next(free_iter), total))
    pv = [torch.full((n, 3), float(i)) for i, n in enumerate(patches)]  # image i's rows hold i
    pp = [torch.zeros(n, 2, dtype=torch.long) for n in patches]

    def encoder(inputs_embeds, attention_mask, pixel_position_ids):
        calls.append(tuple(int(x) for x in inputs_embeds[:, 0, 0]))
        return types.SimpleNamespace(last_hidden_state=inputs_embeds)

    def pooler(**_):
        raise _Stop

    vt = types.SimpleNamespace(
        patch_embedder=lambda pv, pp, pad: pv, encoder=encoder, pooler=pooler
    )
    cfg = types.SimpleNamespace(
        vision_config=types.SimpleNamespace(
            pooling_kernel_size=3,
            position_embedding_size=10_240,
            default_output_length=lora_budget or 280,
        )
    )
    stub = types.SimpleNamespace(
        vision_tower=vt,
        config=cfg,
        model_dtype=torch.float32,
        _enable_mm_lora=lora_budget is not None,
        _encoder_chunk=G._encoder_chunk,
        multimodal_config=None,
    )
    with pytest.raises(_Stop):
        G._process_image_input(stub, {"pixel_values": pv, "pixel_position_ids": pp})
    return tuple(calls)


@pytest.mark.parametrize(
    "patches, frees",
    [
        ([2520, 630, 2520, 2520], [1 * 2**30, 8 * 2**30]),
        ([10080] * 5 + [630], [3 * 2**30, 1 * 2**30]),
        ([1260, 2520, 5040, 1260], [2**31, 2**30, 2**29]),
    ],
)
def test_buckets_and_chunks_equal_vllms(patches, frees, monkeypatch):
    total = 80 * 2**30
    ours = plan_image_batches(patches, free_bytes=frees, total_bytes=total)
    assert ours.chunks == _vllm_calls(patches, frees, total, monkeypatch=monkeypatch)


def test_lora_pads_all_images_into_one_call(monkeypatch):
    patches = [630, 2520]
    ours = plan_image_batches(patches, free_bytes=0, total_bytes=0, lora_max_soft_tokens=280)
    assert ours.lora_padded_to == 2520
    assert ours.chunks == _vllm_calls(patches, [], 0, lora_budget=280, monkeypatch=monkeypatch)


def test_lora_refuses_a_bigger_image_with_vllms_words(monkeypatch):
    with pytest.raises(ValueError) as theirs:
        _vllm_calls([10080], [], 0, lora_budget=280, monkeypatch=monkeypatch)
    with pytest.raises(ValueError) as ours:
        plan_image_batches([10080], free_bytes=0, total_bytes=0, lora_max_soft_tokens=280)
    assert str(ours.value).startswith(str(theirs.value))
