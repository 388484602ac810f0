"""Profiling dummy inputs (issue 22, item 3), equal to vLLM's own dummy builders run on
the tiny checkpoints."""

from __future__ import annotations

import numpy as np
import pytest

from gemma_explore.engines.vllm_processor import VLLM_PROCESSORS, vllm_available
from gemma_explore.serving.dummy_inputs import vllm_dummy_inputs

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(not vllm_available(), reason="vllm is not installed"),
]


@pytest.mark.parametrize(
    "name, counts",
    [
        ("tiny4", {"image": 2, "audio": 1, "video": 1}),
        ("tiny3n", {"image": 1, "audio": 2}),
        ("tinyu", {"image": 1, "audio": 1, "video": 1}),
    ],
)
def test_equal_to_vllms_dummy_builder(name, counts, request):
    bundle = request.getfixturevalue(name)
    ours = vllm_dummy_inputs(bundle, counts)
    builder = VLLM_PROCESSORS.get(bundle).dummy_inputs
    assert builder.get_dummy_text(counts) == ours.text
    data = builder.get_dummy_mm_data(4096, counts, {})
    images = data.get("image") or []
    assert len(images) == counts.get("image", 0)
    for img in images:
        assert (img.height, img.width) == ours.image_size
    for clip in data.get("audio") or []:
        assert len(np.asarray(clip)) == ours.audio_samples
    for video, meta in data.get("video") or []:
        assert video.shape[0] == ours.video_frames and video.shape[1:3] == ours.image_size
        assert meta["fps"] == ours.video_fps and meta["do_sample_frames"] is ours.video_sampled
        assert meta["frames_indices"] == list(range(ours.video_frames))


def test_unifieds_audio_length_is_the_fallback(tinyu):
    ours = vllm_dummy_inputs(tinyu, {"audio": 1})
    assert not hasattr(tinyu.processor.feature_extractor, "fft_length")
    p = tinyu.processor
    assert ours.audio_samples == int(
        p.audio_seq_length * p.audio_ms_per_token / 1000 * p.feature_extractor.sampling_rate
    )


def test_gemma3n_takes_no_video(tiny3n):
    with pytest.raises(ValueError, match="drop 'video'"):
        vllm_dummy_inputs(tiny3n, {"video": 1})


def test_the_stated_fft_lengths_are_the_extractors():
    """The module's sentence gives each family's dummy clip length: the released
    extractors' own fft_length (Gemma 3n's is 1024, not "a few hundred")."""
    import re

    from transformers import Gemma3nAudioFeatureExtractor, Gemma4AudioFeatureExtractor

    from gemma_explore.facts.families import GEMMA3N, GEMMA4
    from gemma_explore.serving import dummy_inputs

    doc = re.sub(r"\s+", " ", dummy_inputs.__doc__)
    stated = {
        "3n": int(re.search(r"Gemma 3n (\d+), \d+ ms", doc).group(1)),
        "4": int(re.search(r"Gemma 4 (\d+), \d+ ms", doc).group(1)),
    }
    assert stated["3n"] == Gemma3nAudioFeatureExtractor().fft_length == GEMMA3N.audio.fft_length
    assert stated["4"] == Gemma4AudioFeatureExtractor().fft_length == GEMMA4.audio.fft_length
    for family, n in stated.items():
        assert f"Gemma {family} {n}, {n * 1000 // 16_000} ms" in doc
