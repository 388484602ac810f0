"""One analysed item: an image, clip or video planned once and run through the real
processor once, held as a value that every consumer reads.

Parity checks, the pooling read-out, the audio features, the figures and the demo's tabs
all need the same three things about an item: our plan, the processor's output, and
(for a tower) the encoder's run. Each consumer takes an :class:`Analysis` as its subject,
or the raw item, which it then analyses with :func:`analysis_of`, the one place where
"not given yet, so compute it" happens. Nothing is recomputed behind the caller's back,
and a consumer cannot be handed a plan of one item and the processor's run of another.

>>> from gemma_explore.facts.families import GEMMA4
>>> import gemma_explore as ge
>>> a = analyse((480, 640), modality="image", bundle=ge.load("tiny-gemma4"))  # doctest: +SKIP
>>> a.plan.num_soft_tokens == a.prepared.input_ids.count(GEMMA4.id_of(GEMMA4.image_token))  # doctest: +SKIP
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gemma_explore.facts.families import FamilySpec
from gemma_explore.media.loaders import load_audio, load_image, load_video
from gemma_explore.plans.audio import AudioPlan, plan_audio
from gemma_explore.plans.image import ImagePlan, plan_image
from gemma_explore.plans.video import VideoPlan, plan_video
from gemma_explore.processing.inputs import LoadedModel, PreparedInputs, prepare_inputs

__all__ = ["MODALITIES", "Analysis", "analyse", "analysis_of"]

MODALITIES = ("image", "audio", "video")


@dataclass(frozen=True)
class Analysis:
    """An image, clip or video as the model sees it: our plan and the processor's run of
    one turn that holds just this item, and the tower's run once it has happened."""

    modality: str  # "image", "audio" or "video": which plan, which placeholders, which tower
    # The family's facts, held here: no consumer looks them up by name again.
    spec: FamilySpec = field(repr=False)
    plan: ImagePlan | AudioPlan | VideoPlan  # our arithmetic for the item, made once
    # The loaded model whose processor ran, and whose tower (if any) encodes the item.
    model: LoadedModel = field(repr=False, compare=False)
    # The processor's run on a turn holding only this item: ids, pixel_values or features.
    prepared: PreparedInputs = field(repr=False, compare=False)
    # What loading did to a clip (resampled from, channels averaged): the tabs say so.
    notes: Mapping[str, Any] = field(default_factory=dict, compare=False)
    # The tower's run (inside.towers.EncodedItems) once inside.towers.encode(analysis) has
    # made it; None before, and always for Unified, which has no tower.
    encoded: Any = field(default=None, repr=False, compare=False)


def analyse(
    item: Any,
    *,
    modality: str,
    bundle: LoadedModel,
    max_soft_tokens: int | None = None,
    sampling_rate: int | None = None,
    fps: float | None = None,
) -> Analysis:
    """Load ``item``, run the bundle's real processor on it once, and plan it once.

    ``max_soft_tokens`` is an image's budget (Gemma 4), ``sampling_rate`` a bare array's
    rate, ``fps`` a video's frame rate when its container has none.
    """
    if modality not in MODALITIES:
        raise ValueError(f"modality must be one of {', '.join(MODALITIES)}, got {modality!r}.")
    spec = bundle.spec
    if modality == "image":
        pil = load_image(item)
        prepared = prepare_inputs("", bundle=bundle, images=[pil], max_soft_tokens=max_soft_tokens)
        budget = prepared.max_soft_tokens
        plan = plan_image(prepared.images[0], family=spec, max_soft_tokens=budget)
        return Analysis(modality, spec, plan, bundle, prepared)
    if modality == "audio":
        rate = spec.audio.sampling_rate
        wave, notes = load_audio(
            item, sampling_rate=sampling_rate, target_rate=rate, bare_array_rate=rate
        )
        prepared = prepare_inputs("", bundle=bundle, audios=[(wave, rate)])
        plan = plan_audio((wave, rate), family=spec)
        return Analysis(modality, spec, plan, bundle, prepared, notes)
    video = load_video(item, fps=fps)
    prepared = prepare_inputs("", bundle=bundle, videos=[video])
    return Analysis(modality, spec, plan_video(video, family=spec), bundle, prepared)


def analysis_of(
    subject: Any, *, modality: str, bundle: LoadedModel | None, **options: Any
) -> Analysis:
    """``subject`` itself when it is an :class:`Analysis` of this modality, else the
    subject analysed now with ``bundle``: every consumer's one way to its analysis.

    >>> analysis_of("photo.jpg", modality="image", bundle=None)
    Traceback (most recent call last):
    ...
    ValueError: Give bundle= (a loaded model, e.g. ge.load("tiny-gemma4")) or an Analysis.
    """
    if isinstance(subject, Analysis):
        if subject.modality != modality:
            raise ValueError(f"This is the analysis of {subject.modality}, not of {modality}.")
        return subject
    if bundle is None:
        raise ValueError(
            'Give bundle= (a loaded model, e.g. ge.load("tiny-gemma4")) or an Analysis.'
        )
    return analyse(subject, modality=modality, bundle=bundle, **options)
