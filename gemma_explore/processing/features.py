"""Audio features: the real feature extractor's log-mel frames and frame mask for a clip.

Computed once per request and handed to :func:`~gemma_explore.viz.audio.show_mel`.
When the processor has already run (an :class:`~gemma_explore.processing.analysis.Analysis`
holds its run), the features are read from its batch instead of running the extractor a
second time.

>>> import gemma_explore as ge
>>> feats = audio_features(ge.sample_speech(), family="gemma4")
>>> feats.mel.shape, int(feats.mask.sum())
((528, 128), 528)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from gemma_explore.facts.families import DEFAULT_FAMILY, FamilySpec, get_family
from gemma_explore.plans.audio import AudioPlan, plan_audio
from gemma_explore.processing.analysis import Analysis

__all__ = ["AudioFeatures", "audio_features", "repad_clips"]


@dataclass(frozen=True)
class AudioFeatures:
    """One clip as the audio tower receives it, with the plan of the same clip."""

    spec: FamilySpec = field(repr=False)  # the family whose extractor made the frames
    plan: AudioPlan = field(repr=False)  # counts, and the 16 kHz waveform in plan.waveform
    # (frames, mel_bins) log-mel, as input_features; Unified: (frames, 640) raw samples
    mel: np.ndarray = field(repr=False)
    mask: np.ndarray = field(repr=False)  # (frames,) bool: True = frame over real audio

    @property
    def family(self) -> str:
        """The family's name ("gemma3n", "gemma4", "gemma4_unified"), read off ``spec``."""
        return self.spec.name

    @property
    def num_frames(self) -> int:
        return int(self.mel.shape[0])

    @property
    def num_valid_frames(self) -> int:
        return int(self.mask.sum())


@cache
def _default_extractor(family: str) -> Any:
    """The family's feature extractor with its released settings (built once): Unified's
    cuts raw samples into frames of ``samples_per_token``, the others compute log-mel."""
    spec = get_family(family)
    return spec.classes.resolve("feature_extractor")()


def audio_features(
    audio: Any,
    *,
    family: str | FamilySpec = DEFAULT_FAMILY,
    sampling_rate: int | None = None,
) -> AudioFeatures:
    """Log-mel frames and frame mask of a clip, from the family's real feature extractor.

    ``audio`` is any audio input, an :class:`~gemma_explore.plans.audio.AudioPlan` that
    holds its waveform, or an :class:`~gemma_explore.processing.analysis.Analysis` of the
    clip, whose processor run already computed the features (read, not computed again).
    ``family``: a name, a spec or a bundle (default ``DEFAULT_FAMILY``; an analysis
    brings its own).

    >>> feats = audio_features((np.zeros(16_000, np.float32), 16_000), family="gemma4")
    >>> feats.num_frames, feats.mel.shape[1]
    (99, 128)
    """
    prepared = None
    if isinstance(audio, Analysis):
        spec, plan, prepared = audio.spec, audio.plan, audio.prepared
    elif isinstance(audio, AudioPlan):
        spec, plan = audio.spec, audio
    else:
        if isinstance(audio, int | np.integer):
            raise ValueError("Features need the waveform, not a sample count; use plan_audio.")
        spec = get_family(family)
        plan = plan_audio(audio, family=spec.name, sampling_rate=sampling_rate)
    if plan.waveform is None:
        raise ValueError("This plan was made from a sample count; plan the waveform instead.")
    if prepared is not None and prepared.batch is not None:
        frames = plan.num_feature_frames  # a batch pads every clip to the longest
        mel = np.asarray(prepared.batch["input_features"][0], dtype=np.float32)[:frames]
        mask = np.asarray(prepared.batch["input_features_mask"][0]).astype(bool)[:frames]
    else:
        out = _default_extractor(spec.name)([plan.waveform], return_tensors="np")
        mel = out["input_features"][0]  # (frames, mel_bins)
        mask = out["input_features_mask"][0].astype(bool)  # (frames,)
    return AudioFeatures(spec=spec, plan=plan, mel=mel, mask=mask)


def repad_clips(
    features: list[np.ndarray], masks: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """vLLM's ``batch_audio_features`` (seed ``gemma3n_mm.py``, shared by Gemma 4),
    re-derived: clips reach the model *unpadded*, each trimmed to its own frames (3n) or
    unpadded by its mask (Gemma 4), so a clip's encoder-cache entry never depends on the
    clips it was first batched with; the model then zero-pads the list to the longest
    clip and marks the padding invalid.

    ``features``: one ``(frames_i, bins)`` array per clip; ``masks``: one ``(frames_i,)``.
    Returns ``(clips, max_frames, bins)`` features and a ``(clips, max_frames)`` mask.

    >>> f, m = repad_clips([np.ones((2, 3)), np.ones((4, 3))], [np.ones(2, bool), np.ones(4, bool)])
    >>> f.shape, m.sum(axis=1).tolist()
    ((2, 4, 3), [2, 4])
    """
    if not features or len(features) != len(masks):
        raise ValueError("Give one feature array and one mask per clip.")
    longest = max(f.shape[0] for f in features)
    out = np.zeros((len(features), longest, features[0].shape[-1]), features[0].dtype)
    mask = np.zeros((len(features), longest), dtype=bool)
    for i, (f, m) in enumerate(zip(features, masks, strict=True)):
        out[i, : f.shape[0]] = f  # (frames_i, bins) at the start; zeros after
        mask[i, : m.shape[0]] = m
    return out, mask
