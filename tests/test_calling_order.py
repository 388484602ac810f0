"""The subject comes first and ``bundle=`` / ``family=`` are keyword-only: the one order
every public function takes (docs/DESIGN.md, "One calling convention")."""

from __future__ import annotations

import dataclasses

import pytest

import gemma_explore as ge
from gemma_explore.facts.families import DEFAULT_FAMILY
from gemma_explore.processing.inputs import prepare_media


def test_the_bundle_is_keyword_only(tiny4):
    """A bundle given first is a TypeError, not a silent swap: there is no old order."""
    with pytest.raises(TypeError):
        ge.prepare_inputs(tiny4, "Hi")  # type: ignore[misc]
    with pytest.raises(TypeError):
        ge.vision_pooling(tiny4, ge.sample_photo())  # type: ignore[misc]


def test_prepare_media_takes_family_as_a_keyword():
    new = prepare_media("Hi", family="gemma3n", images=[(480, 640)])
    assert new.family == "gemma3n" and new.images[0].size == (640, 480)
    assert prepare_media("Hi").family == DEFAULT_FAMILY.name
    with pytest.raises(TypeError):
        prepare_media("gemma3n", "Hi")  # type: ignore[misc]


def test_prepared_inputs_are_frozen():
    prepared = prepare_media("Hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        prepared.text = "edited"  # type: ignore[misc]
