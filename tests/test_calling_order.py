"""The subject comes first and ``bundle=`` / ``family=`` are keyword-only: the one order
every public function takes (docs/DESIGN.md, "One calling convention"), read from the
signatures of everything ``gemma_explore`` exports."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

import gemma_explore as ge
from gemma_explore.facts.families import DEFAULT_FAMILY
from gemma_explore.processing.inputs import prepare_media


def _public_functions() -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(obj)
        for name in ge.__all__
        if inspect.isfunction(obj := getattr(ge, name))
    }


def test_every_exported_function_takes_bundle_and_family_by_keyword():
    """Where a bundle or a family goes with a subject, it is keyword-only; where it is the
    subject itself, it is the only parameter (``get_family(family)``,
    ``explore_prompt(bundle)``)."""
    takers, subjects = {}, set()
    for name, sig in _public_functions().items():
        params = list(sig.parameters.values())
        for p in params:
            if p.name not in ("bundle", "family"):
                continue
            if p.kind is inspect.Parameter.KEYWORD_ONLY:
                takers[name] = p.name
            else:
                assert params == [p], f"{name}{sig}: {p.name}= must be keyword-only"
                subjects.add(name)
    assert {"prepare_inputs", "layout_prompt", "vision_pooling", "plan_image"} <= set(takers)
    assert subjects == {"get_family", "explore_prompt"}


def test_the_subject_is_the_first_parameter():
    """The media or the text comes first: ``prepare_inputs(messages_or_text, bundle=…)``,
    ``vision_pooling(image, bundle=…)``, ``plan_image(image, family=…)``."""
    firsts = {n: next(iter(s.parameters)) for n, s in _public_functions().items() if s.parameters}
    assert firsts["prepare_inputs"] == firsts["layout_prompt"] == "messages_or_text"
    assert firsts["vision_pooling"] == "image" and firsts["plan_image"] == "image"
    assert firsts["plan_audio"] == "audio" and firsts["check_video_parity"] == "video"


def test_prepare_media_takes_family_as_a_keyword():
    new = prepare_media("Hi", family="gemma3n", images=[(480, 640)])
    assert new.family == "gemma3n" and new.images[0].size == (640, 480)
    assert prepare_media("Hi").family == DEFAULT_FAMILY.name
    assert inspect.signature(prepare_media).parameters["family"].kind is (
        inspect.Parameter.KEYWORD_ONLY
    )


def test_prepared_inputs_are_frozen():
    prepared = prepare_media("Hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        prepared.text = "edited"  # type: ignore[misc]
