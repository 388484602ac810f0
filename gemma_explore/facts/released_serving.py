"""The serving inputs of each released checkpoint, read from a generated data file, so a
plan for a released id needs neither transformers nor torch.

``released_serving.json`` (beside this module) holds, per released -it id, what
:func:`gemma_explore.serving.model.serving_model` reads from the transformers config and
the meta-device build (the ``ServingModel`` fields), the weight kinds per part that
:func:`gemma_explore.serving.weights.vllm_loaded_weights` counts on the meta-device
model, and the few config values ``weights.py`` reads (``weights.CONFIG_FIELDS``). It is
written by :func:`gemma_explore.serving.released_facts.write_released_serving` from the
real thing (transformers 5.19's config classes and a meta-device build), and
``tests/serving/test_released_facts.py`` rebuilds every entry that way and compares, so
the file cannot drift. Only inputs are stored: the plan's arithmetic reads them as it
reads a config.

A base id (no -it) has the same architecture as its -it id (its config differs only in
``eos_token_id``, which serving does not read), so it reads the -it id's entry.

>>> facts = released_serving("google/gemma-4-31B-it")
>>> facts["hidden_size"], facts["config"]["audio_config"]
(5376, None)
>>> released_serving("tiny-gemma4") is None
True
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from gemma_explore.facts.released import is_released, released

__all__ = ["SERVING_FACTS_FILE", "ConfigFacts", "released_serving"]

SERVING_FACTS_FILE = Path(__file__).with_name("released_serving.json")


class ConfigFacts:
    """The config values serving reads, in a config's shape: ``text_config``,
    ``vision_config``, ``audio_config`` (None: no audio tower) as attribute bags, and
    ``get_text_config()`` as transformers' configs have it. A value not stored is absent
    (an AttributeError for ``config.x``, the default for ``getattr(config, "x", d)``)."""

    def __init__(self, values: dict[str, dict[str, Any] | None]) -> None:
        for key, block in values.items():
            setattr(self, key, None if block is None else SimpleNamespace(**block))

    def get_text_config(self) -> Any:
        return self.text_config


@cache
def _entries() -> dict[str, Any]:
    return json.loads(SERVING_FACTS_FILE.read_text())["models"]


def released_serving(model_id: str) -> dict[str, Any] | None:
    """The stored serving inputs of a released checkpoint (its -it id's entry), or None
    for an id that is not released or has no entry."""
    if not is_released(model_id):
        return None
    return _entries().get(released(model_id).id)
