"""The capstone on the real engine: the workload (``gemma_explore/course/capstone``)
through the shared Unified CPU engine and its own processor, diffed against the plans.

The engine is the suite's shared one (``engineu``): the workload is written for its
arguments, which the first test holds to the conftest's."""

from __future__ import annotations

import math

import pytest

import gemma_explore as ge
from gemma_explore.course.capstone import load_workload, run_capstone
from gemma_explore.engines.serve_args import engine_args

from .conftest import LIMITS, MAX_MODEL_LEN

WORK = load_workload()


def test_the_workload_is_written_for_the_shared_engine():
    assert WORK.family == "gemma4_unified"
    # The values the workload sets of the one engine_args, as ge.load(**WORK.engine) passes
    # them, are the shared engine's.
    args = engine_args("tiny-gemma4-unified", family=WORK.family, has_audio=True, **WORK.engine)
    assert args["max_model_len"] == MAX_MODEL_LEN
    assert args["limit_mm_per_prompt"] == LIMITS[WORK.family]


@pytest.fixture(scope="module")
def capstone(engineu):
    return run_capstone(engineu.bundle, guesses={"photo-70": {"image": 70}})


def test_the_plans_predict_every_request_and_the_encoder_cache(capstone):
    """The prediction key holds: tokens, refusals and the cache, request by request."""
    assert capstone.agree, capstone.table().text()
    assert capstone.cache[0] == capstone.cache[1] > 0


def test_the_workload_covers_what_the_capstone_promises(capstone):
    engine = capstone.engine
    # Images at mixed budgets (None: the start-up one). Each budget the engine has not
    # met yet costs vLLM a new transformers processor (tens of seconds on two busy cores),
    # so the workload keeps to 70 (video's, built at start-up), 140 and the start-up 280.
    budgets = {r.budget for r in WORK.requests if r.images}
    assert budgets == {70, 140, None}
    assert {engine[n].refused for n in capstone.names} >= {
        "limit_mm_per_prompt",
        "max_model_len",
        None,
    }
    assert [n for n in capstone.names if "audio" in engine[n].tokens]  # clips
    assert [n for n in capstone.names if "video" in engine[n].tokens]  # a video
    # In vLLM's own words, not ours.
    assert "At most 2 image(s) may be provided in one prompt." in engine["three-photos"].said
    assert "maximum context length" in engine["too-long"].said


def test_the_processor_decides_the_placeholders_and_the_engine_the_context(capstone):
    for name in capstone.names:
        processor, engine = capstone.processor[name], capstone.engine[name]
        if engine.refused == "max_model_len":  # the processor never checks the length
            assert processor.refused is None, name
        else:
            assert (processor.tokens, processor.refused) == (engine.tokens, engine.refused), name


def test_the_hand_edited_prompt_runs_with_stray_placeholders(capstone, engineu):
    """vLLM accepts the edited ids: a fresh run for the photo, the rest left as text."""
    photo = next(r for r in WORK.requests if r.name == "hand-edited")
    one_run = ge.plan_image(tuple(photo.images[0]["size"]), family=WORK.family, max_soft_tokens=70)
    got = capstone.engine["hand-edited"].tokens["image"]
    # A fresh run of n; of the edited run's n − 1, the first is replaced, n − 2 stay as text.
    assert got == one_run.num_soft_tokens + (one_run.num_soft_tokens - 2)


def test_the_unified_clip_is_counted_with_gemma4s_mel_rule(capstone):
    """The embedder makes ceil(samples / 640) rows; vLLM's prompt holds fewer."""
    for request in WORK.requests:
        if request.clips and request.name != "clip-45s":
            samples = request.clips[0]["samples"]
            rows = ge.plan_audio(samples, family=WORK.family).num_soft_tokens
            assert rows == math.ceil(samples / 640)
            assert capstone.engine[request.name].tokens["audio"] == rows - 1, request.name


def test_a_learners_guess_is_scored_against_the_engine(capstone):
    right, asked = capstone.score()
    assert asked == 1 and right == (capstone.engine["photo-70"].tokens == {"image": 70})
    assert "your guess" in capstone.table().text()
