"""Audio kept batch-independent (issue 22, item 4): a clip's features reach vLLM's
encoder cache unpadded, so its entry is the same alone and next to a longer clip; the
model re-pads the list (vLLM's batch_audio_features)."""

from __future__ import annotations

import numpy as np
import pytest

import gemma_explore as ge
from gemma_explore.engines.vllm_processor import VLLM_PROCESSORS, vllm_available
from gemma_explore.processing.features import repad_clips

pytestmark = [pytest.mark.vllm, pytest.mark.skipif(not vllm_available(), reason="no vllm")]


def _cache_entries(bundle, clips):
    from vllm.multimodal.processing.context import TimingContext
    from vllm.multimodal.processing.inputs import ProcessorInputs

    proc = VLLM_PROCESSORS.get(bundle)
    prepared = ge.prepare_inputs("", audios=[(c, 16_000) for c in clips], bundle=bundle)
    ids = proc.info.ctx.tokenizer.encode(prepared.text, add_special_tokens=False)
    items = proc.info.parse_mm_data({"audio": clips})
    out = proc.apply(ProcessorInputs(ids, items, hf_processor_mm_kwargs={}), TimingContext(False))
    return [
        (it["input_features_padded"].data.numpy(), it["input_features_mask"].data.numpy())
        for it in out["mm_kwargs"]["audio"]
    ]


@pytest.mark.parametrize("name", ["tiny3n", "tiny4"])
def test_a_clips_cache_entry_ignores_its_neighbours(name, request):
    bundle = request.getfixturevalue(name)
    short = (np.sin(np.arange(16_000) / 5) * 0.1).astype(np.float32)
    long = (np.sin(np.arange(64_000) / 3) * 0.1).astype(np.float32)
    ((alone_f, alone_m),) = _cache_entries(bundle, [short])
    (pair_f, pair_m), (long_f, _) = _cache_entries(bundle, [short, long])
    assert np.array_equal(alone_f, pair_f) and np.array_equal(alone_m, pair_m)
    plan = ge.plan_audio((short, 16_000), family=bundle.family)
    assert alone_f.shape[0] == int(alone_m.sum()) == plan.num_valid_frames
    assert long_f.shape[0] > alone_f.shape[0]


def test_repadding_equals_vllms_batch_audio_features():
    import torch
    from vllm.model_executor.models.gemma3n_mm import batch_audio_features

    rng = np.random.default_rng(0)
    feats = [rng.normal(size=(n, 8)).astype(np.float32) for n in (3, 7, 5)]
    masks = [np.ones(n, bool) for n in (3, 7, 5)]
    ours = repad_clips(feats, masks)
    theirs = batch_audio_features(
        [torch.from_numpy(f) for f in feats], [torch.from_numpy(m) for m in masks]
    )
    assert np.array_equal(ours[0], theirs[0].numpy()) and np.array_equal(ours[1], theirs[1].numpy())
