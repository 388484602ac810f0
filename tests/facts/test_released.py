"""The released checkpoints as cited facts (gemma_explore/facts/released.py).

Every field carries a source; the config built from the facts is the transformers class
the converters use, with the values the facts state, and audio presence comes from it.
"""

from __future__ import annotations

import dataclasses

import pytest

from gemma_explore.facts.families import get_family
from gemma_explore.facts.released import (
    BASE_IDS,
    RELEASED,
    RELEASED_IDS,
    SOURCES,
    Fact,
    is_released,
    released,
    released_config,
)


def test_seven_instruction_tuned_ids_and_their_base_ids():
    assert set(RELEASED_IDS) == {
        "google/gemma-3n-E2B-it",
        "google/gemma-3n-E4B-it",
        "google/gemma-4-E2B-it",
        "google/gemma-4-E4B-it",
        "google/gemma-4-26B-A4B-it",
        "google/gemma-4-31B-it",
        "google/gemma-4-12B-it",
    }
    assert BASE_IDS == tuple(i.removesuffix("-it") for i in RELEASED_IDS)
    for base in BASE_IDS:
        assert released(base) is released(base + "-it")
    assert is_released("GOOGLE/GEMMA-4-31B-IT") and not is_released("google/gemma-3-4b-it")


def _unsourced(r) -> list[str]:
    """Fields that are not a Fact whose source starts with known SOURCES keys ("a+b",
    optionally ": a note")."""
    bad = []
    for name, fact in r.facts().items():
        keys = fact.source.split(":", 1)[0].split("+") if isinstance(fact, Fact) else []
        if not keys or not all(k in SOURCES for k in keys):
            bad.append(name)
    return bad


@pytest.mark.parametrize("model_id", RELEASED_IDS)
def test_every_field_has_a_source_note(model_id):
    """No fact is typed without its source."""
    r = released(model_id)
    assert len(r.facts()) > 40
    assert _unsourced(r) == []


def test_a_field_without_a_source_fails_the_check():
    """The check is not vacuous: a bare value and an unknown source key are both caught."""
    r = released("google/gemma-4-31B-it")
    bare = dataclasses.replace(r, text=dict(r.text, hidden_size=5376))
    unknown = dataclasses.replace(r, vision=dict(r.vision, patch_size=Fact(16, "blog")))
    assert _unsourced(bare) == ["text.hidden_size"]
    assert _unsourced(unknown) == ["vision.patch_size"]


def test_unknown_id_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="google/gemma-4-31B-it"):
        released("google/gemma-4-99B-it")


@pytest.mark.parametrize("model_id", RELEASED_IDS + BASE_IDS)
def test_config_built_from_the_facts_holds_them(model_id):
    r = released(model_id)
    config = released_config(model_id)
    assert config.model_type == r.model_type
    text = config.get_text_config()
    # Every text fact lands on the config, except the two Gemma 4 fields transformers
    # 5.19 turns into per-layer overrides of the full layers.
    for key, fact in r.text.items():
        if key in ("global_head_dim", "num_global_key_value_heads"):
            continue
        want = fact.value
        if (
            key in ("head_dim", "num_key_value_heads", "sliding_window")
            and r.model_type != "gemma3n"
        ):
            got = getattr(text.per_layer_config[0], key)  # layer 0 is a sliding layer
        else:
            got = getattr(text, key)
        if key == "intermediate_size" and isinstance(got, list):  # 3n: one per layer
            assert got == [want] * text.num_hidden_layers
        else:
            assert got == want, key
    for key, fact in r.vision.items():
        assert getattr(config.vision_config, key) == fact.value, key
    assert (config.audio_config is not None) == r.has_audio == r.audio_presence.value
    for key, fact in (r.audio or {}).items():
        got = getattr(config.audio_config, key)
        assert (list(got) if isinstance(got, tuple) else got) == fact.value, key
    for key, fact in r.token_ids.items():
        assert getattr(config, key) == fact.value, key
    eos = text.eos_token_id
    assert eos == ([1, 106] if model_id.endswith("-it") else 1)


@pytest.mark.parametrize("model_id", [i for i in RELEASED_IDS if "gemma-4" in i])
def test_full_layers_use_the_global_head_dim_and_kv_heads(model_id):
    r = released(model_id)
    text = released_config(model_id).get_text_config()
    glob = r.text["num_global_key_value_heads"].value
    for i, kind in enumerate(text.layer_types):
        layer = text.per_layer_config[i]
        if kind == "full_attention":
            assert layer.head_dim == r.text["global_head_dim"].value == 512
            want = glob if (glob is not None and r.text["attention_k_eq_v"].value) else None
            assert layer.num_key_value_heads == (want or r.text["num_key_value_heads"].value)
        else:
            assert layer.head_dim == 256
            assert layer.sliding_window == r.text["sliding_window"].value


@pytest.mark.parametrize("model_id", RELEASED_IDS)
def test_processor_facts_agree_with_families(model_id):
    """The family spec (what the planners use) and the released processor facts agree."""
    r = released(model_id)
    spec = get_family(r.model_type)
    p = {k: f.value for k, f in r.processor.items()}
    tokens = {k: f.value for k, f in r.token_ids.items()}
    assert tokens["image_token_id"] == spec.id_of(spec.image_token)
    assert tokens["boi_token_id"] == spec.id_of(spec.boi_token)
    assert tokens["audio_token_id"] == spec.id_of(spec.audio_token)
    if spec.image.fixed_soft_tokens is not None:
        assert p["image_seq_length"] == spec.image.fixed_soft_tokens
        assert tuple(p["image_size"]) == spec.image.fixed_size
        assert p["audio_seq_length"] == spec.audio.fixed_placeholders
    else:
        assert tuple(p["allowed_max_soft_tokens"]) == spec.image.budgets
        assert p["max_soft_tokens"] == spec.image.default_budget
        assert p["video_max_soft_tokens"] == spec.image.video_budget
        assert p["video_num_frames"] == spec.image.max_video_frames
    if "frame_length" in p:
        assert p["frame_length"] == spec.audio.frame_length
        assert p["hop_length"] == spec.audio.hop_length
        assert p["max_length"] == spec.audio.max_samples
    if "audio_samples_per_token" in p:
        assert p["audio_samples_per_token"] == spec.audio.samples_per_token


def test_audio_is_a_fact_of_the_config_not_the_name():
    no_audio = {i for i in RELEASED_IDS if not RELEASED[i].has_audio}
    assert no_audio == {"google/gemma-4-26B-A4B-it", "google/gemma-4-31B-it"}
    for model_id in no_audio:
        assert released_config(model_id).audio_config is None
        assert released_config(model_id.removesuffix("-it")).audio_config is None
