"""One analysed item, computed once: every consumer reads the same plan, the same
processor run and the same tower run, and gives what it gives for the raw item."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import gemma_explore as ge
from gemma_explore.inside.towers import encode
from gemma_explore.processing.analysis import Analysis, analyse, analysis_of
from tests.parity.vllm_side import USE_VLLM, assert_vllm_side


@pytest.fixture(scope="module")
def image_analysis(tiny4):
    return analyse(ge.sample_photo(), modality="image", bundle=tiny4, max_soft_tokens=280)


def test_the_plan_and_the_processor_describe_the_same_item(image_analysis, tiny4):
    a = image_analysis
    assert a.spec is tiny4.spec and a.model is tiny4
    placeholders = a.prepared.input_ids.count(a.spec.id_of(a.spec.image_token))
    assert a.plan.num_soft_tokens == placeholders == 270
    assert a.plan.original_size == a.prepared.images[0].size[::-1]
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.plan = None  # type: ignore[misc]


def test_an_analysis_is_its_own_analysis(image_analysis):
    assert analysis_of(image_analysis, modality="image", bundle=None) is image_analysis
    with pytest.raises(ValueError, match="analysis of image, not of audio"):
        analysis_of(image_analysis, modality="audio", bundle=None)
    with pytest.raises(ValueError, match="Give bundle="):
        analysis_of(ge.sample_photo(), modality="image", bundle=None)


def test_the_tower_runs_once_and_every_consumer_reads_it(image_analysis, tiny4):
    encoded = encode(image_analysis)
    assert image_analysis.encoded is None  # frozen: a new value holds the run
    assert encode(encoded) is encoded
    pooled = ge.vision_pooling(encoded)
    fresh = ge.vision_pooling(ge.sample_photo(), bundle=tiny4, max_soft_tokens=280)
    assert np.array_equal(pooled.valid, fresh.valid) and pooled.num_valid == 270
    report = ge.check_image_parity(encoded, use_vllm=USE_VLLM)
    again = ge.check_image_parity(
        ge.sample_photo(), bundle=tiny4, max_soft_tokens=280, use_vllm=USE_VLLM
    )
    assert report.rows == again.rows and report.encoder_count == again.encoder_count == 270
    assert_vllm_side(report, tiny4)


def test_the_family_given_must_be_the_analysis_family(image_analysis):
    with pytest.raises(ValueError, match="family='gemma3n' but the analysis is 'gemma4'"):
        ge.check_image_parity(image_analysis, family="gemma3n", use_vllm=False)


def test_audio_and_video_analyses_feed_their_consumers(tiny4):
    clip = analyse(ge.sample_speech(), modality="audio", bundle=tiny4)
    feats = ge.audio_features(clip)
    assert feats.mel.shape[0] == clip.plan.num_feature_frames
    report = ge.check_audio_parity(clip, use_vllm=USE_VLLM, run_encoder=False)
    assert report.rows == (
        ge.check_audio_parity(
            ge.sample_speech(), bundle=tiny4, use_vllm=USE_VLLM, run_encoder=False
        ).rows
    )
    assert_vllm_side(report, tiny4)
    video = analyse(ge.sample_video(), modality="video", bundle=tiny4)
    slots = video.prepared.input_ids.count(video.spec.id_of(video.spec.video_token))
    assert isinstance(video, Analysis) and video.plan.num_soft_tokens == slots
    last = ge.check_video_parity(video, use_vllm=USE_VLLM).rows[-1]
    assert last.ours == video.plan.num_soft_tokens
    if USE_VLLM:  # vLLM's own processor writes the same count
        assert last.vllm_processor == last.ours
