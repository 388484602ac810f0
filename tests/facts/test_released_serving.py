"""The reader of the released checkpoints' stored serving inputs (the entries themselves
are held to transformers and the meta-device build by tests/serving/test_released_facts.py)."""

from __future__ import annotations

import pytest

from gemma_explore.facts.released import BASE_IDS, RELEASED_IDS, released
from gemma_explore.facts.released_serving import ConfigFacts, released_serving


@pytest.mark.parametrize("model_id", RELEASED_IDS + BASE_IDS)
def test_every_released_and_base_id_has_an_entry_of_its_own_family(model_id):
    entry = released_serving(model_id)
    assert entry is not None and entry["family"] == released(model_id).model_type
    assert ("audio" in entry["modalities"]) == released(model_id).has_audio
    assert (entry["config"]["audio_config"] is None) == (not released(model_id).has_audio)


def test_ids_are_matched_as_is_released_matches_them():
    assert released_serving("GOOGLE/GEMMA-4-31B-IT") is released_serving("google/gemma-4-31B-it")
    for other in ("tiny-gemma4", "google/gemma-5-31B-it", "/tmp/some-folder"):
        assert released_serving(other) is None


def test_config_facts_has_a_configs_shape_and_no_invented_values():
    config = ConfigFacts(
        {
            "text_config": {"attention_k_eq_v": True},
            "vision_config": {"hidden_size": 1152},
            "audio_config": None,
        }
    )
    assert config.get_text_config().attention_k_eq_v is True
    assert config.audio_config is None
    assert getattr(config.vision_config, "intermediate_size", None) is None  # absent stays absent
    with pytest.raises(AttributeError):
        config.vision_config.intermediate_size  # noqa: B018
