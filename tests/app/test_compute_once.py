"""Each demo request and each explorer update plans each item once and runs the
processor, the feature extractor and the towers once.

Calls are counted with cProfile, which sees every call whatever name a module
imported the function under. The counts are what the handlers do, not timings.
"""

from __future__ import annotations

import cProfile
import pstats
from collections import Counter
from pathlib import Path

import pytest

from gemma_explore.samples import SAMPLES_DIR
from tests.app import handlers as h

PHOTO = str(SAMPLES_DIR / "photo.jpg")
SPEECH = str(SAMPLES_DIR / "speech.wav")
VIDEO = str(SAMPLES_DIR / "video.mp4")

WATCHED = {
    ("image.py", "plan_image"): "plan_image",  # gemma_explore/plans/image.py
    ("audio.py", "plan_audio"): "plan_audio",
    ("video.py", "plan_video"): "plan_video",
    ("inputs.py", "prepare_inputs"): "processor run",  # gemma_explore/processing/inputs.py
    ("feature_extraction_gemma3n.py", "__call__"): "feature extractor",
    ("feature_extraction_gemma4.py", "__call__"): "feature extractor",
    ("modeling_gemma3n.py", "get_image_features"): "vision tower",
    ("modeling_gemma4.py", "get_image_features"): "vision tower",
}


def count_calls(fn, *args) -> tuple[Counter, object]:
    """Run ``fn(*args)`` under cProfile; count the watched functions' calls."""
    profile = cProfile.Profile()
    result = profile.runcall(fn, *args)
    counts: Counter = Counter()
    for (file, _line, name), (primitive, *_rest) in pstats.Stats(profile).stats.items():
        label = WATCHED.get((Path(file).name, name))
        if label:
            counts[label] += primitive
    return counts, result


@pytest.mark.parametrize("model", ["tiny-gemma4", "tiny-gemma3n"])
def test_image_tab_plans_processes_and_encodes_once(model):
    h.image_tab(model, PHOTO, 280)  # warm: load the bundle outside the count
    counts, result = count_calls(h.image_tab, model, PHOTO, 280)
    assert result.error is None
    assert counts["plan_image"] == 1  # was 4 before the compute-once refactor
    assert counts["processor run"] == 1  # was 2
    assert counts["vision tower"] == 1


@pytest.mark.parametrize("model", ["tiny-gemma4", "tiny-gemma3n"])
def test_audio_tab_runs_the_feature_extractor_once(model):
    h.audio_tab(model, SPEECH)
    counts, result = count_calls(h.audio_tab, model, SPEECH)
    assert result.error is None
    assert counts["plan_audio"] == 1  # was 3
    assert counts["processor run"] == 1
    assert counts["feature extractor"] == 1  # was 2: the mel figure reads the processor's


def test_video_and_layout_tabs_process_once():
    counts, result = count_calls(h.video_tab, "tiny-gemma4", VIDEO)
    assert result.error is None
    assert counts["plan_video"] == 1 and counts["processor run"] == 1
    counts, result = count_calls(h.layout_tab, "tiny-gemma4", "Hi", PHOTO, SPEECH, 280)
    assert result.error is None
    assert counts["processor run"] == 1
    assert counts["plan_image"] == 1 and counts["plan_audio"] == 1


def test_explorers_plan_once_per_change():
    pytest.importorskip("ipywidgets")
    import gemma_explore as ge
    from gemma_explore.samples import sample_speech

    explorer = ge.explore_image(PHOTO)
    counts, _ = count_calls(setattr, explorer.budget, "value", 70)
    assert counts["plan_image"] == 1 and counts["processor run"] == 0
    audio = ge.explore_audio(sample_speech())
    counts, _ = count_calls(setattr, audio.family, "value", "gemma3n")
    assert counts["plan_audio"] == 1 and counts["feature extractor"] == 1
