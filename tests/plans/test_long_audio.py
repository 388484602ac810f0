"""plan_long_audio: windows a family hears whole, cut where vLLM's own splitter cuts,
each priced as transformers' processor prices it."""

from __future__ import annotations

import numpy as np
import pytest

from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.plans.long_audio import ENERGY_FRAME, heard_seconds, plan_long_audio

RATE = 16_000


def _speech_like(seconds: float, gaps: tuple[float, ...] = ()) -> np.ndarray:
    """Noise bursts (loud), with 0.7 s of near silence starting at each of ``gaps``."""
    wave = 0.3 * np.random.default_rng(0).standard_normal(int(seconds * RATE))
    for g in gaps:
        wave[int(g * RATE) : int((g + 0.7) * RATE)] *= 0.001
    return wave.astype(np.float32)


@pytest.mark.parametrize("family", ["gemma3n", "gemma4", "gemma4_unified"])
def test_a_95_s_clip_gets_windows_the_family_hears_whole(family):
    wave = _speech_like(95, gaps=(27.6,))
    plan = plan_long_audio((wave, RATE), family=family, overlap_s=1.0)
    ws = plan.windows
    assert len(ws) == 4 and ws[0].start == 0 and ws[-1].end == len(wave)
    assert all(w.end - w.start <= heard_seconds(family) * RATE for w in ws)
    assert all(b.start == a.end - RATE for a, b in zip(ws, ws[1:], strict=False))  # 1 s overlap
    # The first cut lands in the quiet gap, and says so; the others find no quiet frame.
    assert 27.6 <= ws[0].end_s <= 28.3 - ENERGY_FRAME / RATE and ws[0].cut == "quiet"
    assert [w.cut for w in ws[1:]] == ["quietest", "quietest", "end"]
    assert plan.audio_tokens == sum(w.audio_tokens for w in ws)
    assert dict(plan.runtimes).keys() == {"transformers", "vLLM"}


@pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
def test_without_overlap_the_cuts_are_vllms_split_audio():
    """With no overlap our windows are exactly vLLM's own energy splitter's chunks
    (vllm/multimodal/audio.py split_audio, searching the last search_s of each chunk)."""
    from vllm.multimodal.audio import split_audio

    wave = _speech_like(95, gaps=(12.0, 27.6, 41.0))
    plan = plan_long_audio((wave, RATE), family="gemma3n", overlap_s=0.0, search_s=3.0)
    chunks = split_audio(wave, RATE, 30.0, 3.0, ENERGY_FRAME)
    assert [w.end - w.start for w in plan.windows] == [len(c) for c in chunks]
    ends = np.cumsum([len(c) for c in chunks])
    assert [w.end for w in plan.windows] == list(ends)


def _processor_tokens(bundle, wave) -> int:
    """Audio placeholders transformers' own processor writes for one clip."""
    p = bundle.processor
    ids = p(text=p.audio_token, audio=[wave], return_tensors="np")["input_ids"][0]
    return int((ids == bundle.spec.id_of(bundle.spec.audio_token)).sum())


def test_each_windows_tokens_are_the_processors(tiny3n, tiny4, tinyu):
    wave = _speech_like(70, gaps=(29.0,))
    for bundle in (tiny3n, tiny4, tinyu):
        plan = plan_long_audio((wave, RATE), family=bundle)
        for w in plan.windows:
            assert w.audio_tokens == _processor_tokens(bundle, wave[w.start : w.end]), w
        # The whole clip unsplit: transformers keeps 30 s (3n, 4) or all of it (Unified).
        assert plan.whole_clip.num_soft_tokens == _processor_tokens(bundle, wave)


def test_the_window_prompt_is_vllms_transcription_prompt():
    from gemma_explore.processing.transcription import transcription_prompt

    plan = plan_long_audio(40 * RATE, family="gemma3n")
    assert {w.prompt for w in plan.windows} == {transcription_prompt()}


def test_bad_settings_say_what_to_give():
    with pytest.raises(ValueError, match="max_window_s=30 or less"):
        plan_long_audio(60 * RATE, family="gemma4", max_window_s=45)
    with pytest.raises(ValueError, match="overlap_s=29"):
        plan_long_audio(60 * RATE, family="gemma4", overlap_s=29)
    # Unified's extractor keeps every sample: a longer window is the user's choice.
    assert len(plan_long_audio(60 * RATE, family="unified", max_window_s=60).windows) == 1
