"""families.py: the fields code reads instead of a family's name hold what transformers holds."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gemma_explore.facts.families import (
    DEFAULT_FAMILY,
    FAMILIES,
    GEMMA3N,
    GEMMA4,
    GEMMA4_UNIFIED,
    SPEECH_TO_TEXT_FAMILY,
    family_from_name,
    get_family,
)

SPECS = list(FAMILIES.values())


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_the_classes_belong_together(spec):
    """The model is built from the config the spec names, the config from its three
    sub-configs, the language model from the text config; the embedders exist."""
    c = spec.classes
    assert c.resolve("model").config_class is c.resolve("config")
    subs = c.resolve("config").sub_configs
    assert {k: v.__name__ for k, v in subs.items()} == {
        "text_config": c.text_config,
        "vision_config": c.vision_config,
        "audio_config": c.audio_config,
    }
    assert c.resolve("text_model").config_class is c.resolve("text_config")
    for role in ("vision_embedder", "audio_embedder", "processor", "image_processor"):
        assert c.resolve(role).__name__ == getattr(c, role)
    assert (c.video_processor is None) == (not spec.has_video)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_audio_facts_are_the_extractors_own(spec):
    """Window, hop and rate as transformers' extractor holds them; prose reads frame_ms."""
    fe = spec.classes.resolve("feature_extractor")()
    a = spec.audio
    assert fe.sampling_rate == a.sampling_rate
    if a.has_mel:
        assert (fe.frame_length, fe.hop_length, fe.fft_length) == (
            a.frame_length,
            a.hop_length,
            a.fft_length,
        )
        assert a.frame_ms == fe.frame_length * 1000 / fe.sampling_rate
        assert a.hop_ms == fe.hop_length * 1000 / fe.sampling_rate
    else:
        assert fe.audio_samples_per_token == a.samples_per_token == a.frame_length
        assert a.frame_ms == a.ms_per_token  # one raw frame is one token


def test_only_gemma3n_transcribes_and_its_audio_tower_takes_the_padding_mask():
    """The two facts that replaced `spec.name == "gemma3n"` in transcription and flops."""
    assert SPEECH_TO_TEXT_FAMILY is GEMMA3N
    assert [s.name for s in SPECS if s.transcribes] == [GEMMA3N.name]
    assert [s.name for s in SPECS if s.audio.tower_mask_is_padding] == [GEMMA3N.name]


def test_get_family_takes_a_name_a_spec_or_a_bundle():
    bundle = SimpleNamespace(spec=GEMMA4_UNIFIED, family=GEMMA4_UNIFIED.name)
    assert get_family("3n") is get_family(GEMMA3N) is GEMMA3N
    assert get_family(bundle) is GEMMA4_UNIFIED
    with pytest.raises(ValueError, match="Unknown model family"):
        get_family(SimpleNamespace(spec="not a spec"))
    assert DEFAULT_FAMILY is GEMMA4


def test_a_name_says_its_family_most_specific_first():
    """Unified's names contain Gemma 4's markers too: they must win."""
    cases = {
        "google/gemma-4-12B-it": GEMMA4_UNIFIED,
        "me/Gemma4_Unified-ft": GEMMA4_UNIFIED,
        "google/gemma-4-E4B-it": GEMMA4,
        "me/gemma4-lora": GEMMA4,
        "google/gemma-3n-E2B-it": GEMMA3N,
        "me/GEMMA3N": GEMMA3N,
    }
    assert {n: family_from_name(n) for n in cases} == cases
    assert family_from_name("meta-llama/Llama-3") is None


def test_each_family_has_its_own_tiny_bundle():
    names = [s.tiny_name for s in SPECS]
    assert len(set(names)) == len(SPECS) and all(n.startswith("tiny-") for n in names)
