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


@pytest.mark.parametrize("engine_budget", [None, 560, 1120, 300])
@pytest.mark.parametrize("num_embeds", [1, 70, 140, 281, 2240])
def test_lora_token_counts_equal_vllms(engine_budget, num_embeds):
    """vLLM's own get_mm_lora_token_counts, on a stub with Gemma 4's vision config and the
    engine's mm_processor_kwargs, with and without the item's tensors."""
    from vllm.model_executor.models.gemma4_mm import Gemma4ForConditionalGeneration as G

    from gemma_explore.serving.batches import lora_token_counts

    kwargs = None if engine_budget is None else {"max_soft_tokens": engine_budget}
    stub = types.SimpleNamespace(
        config=types.SimpleNamespace(
            vision_config=types.SimpleNamespace(pooling_kernel_size=3, default_output_length=280)
        ),
        multimodal_config=types.SimpleNamespace(mm_processor_kwargs=kwargs),
    )

    def field(shape):  # a MultiModalFieldElem: only .data is read
        return types.SimpleNamespace(data=torch.zeros(shape))

    frames = -(-num_embeds // 70)
    video = {"pixel_values_videos": field((frames, 630, 12))}
    audio = {"input_features_padded": field((1, 4 * num_embeds + 3, 128))}
    cases = [
        ("image", None, {}),
        ("video", None, {}),
        ("video", video, {"video_patch_rows": frames * 630}),
        ("audio", None, {}),
        ("audio", audio, {"audio_feature_frames": 4 * num_embeds + 3}),
    ]
    for modality, mm_kwargs, ours_kwargs in cases:
        theirs = G.get_mm_lora_token_counts(
            stub, modality=modality, mm_kwargs=mm_kwargs, num_mm_embeds=num_embeds
        )
        ours = lora_token_counts(
            modality, num_embeds=num_embeds, max_soft_tokens=engine_budget, **ours_kwargs
        )
        assert (ours.tower_tokens, ours.connector_tokens) == theirs, (modality, mm_kwargs)
    with pytest.raises(ValueError, match="Unsupported modality"):
        G.get_mm_lora_token_counts(stub, modality="text", mm_kwargs=None, num_mm_embeds=1)
    with pytest.raises(ValueError, match="Unsupported modality"):
        lora_token_counts("text", num_embeds=1)
