"""The truth helpers several notebooks' exercises share: the course's sample photo and
speech, the tiny bundles, and the image and audio counts of the package's own plans.

Each helper imports inside its body, so importing the course stays fast: a truth is
computed only when an exercise is graded (or a teacher reads ``answer_key[name]``).

>>> image_tokens((480, 640), budget=1120)  # a VGA frame (no exercise's answer)
1064
"""

from __future__ import annotations

import functools
from typing import Any

from gemma_explore.facts.families import DEFAULT_FAMILY, FamilySpec

__all__ = ["audio_tokens", "image_tokens", "photo", "speech", "tiny"]


def photo() -> Any:
    """The course's sample photo (a PIL image), the one every notebook plans."""
    from gemma_explore.samples import sample_photo

    return sample_photo()


def speech() -> Any:
    """The course's sample speech, as ``(wave, rate)``."""
    from gemma_explore.samples import sample_speech

    return sample_speech()


@functools.cache
def tiny(name: str) -> Any:
    """A tiny bundle (``"tiny-gemma4"``, …), loaded once: real processor, random weights."""
    from gemma_explore.engines.load import load

    return load(name)


def image_tokens(
    size: tuple[int, int], budget: int = 280, family: str | FamilySpec = DEFAULT_FAMILY
) -> int:
    """Soft tokens of an image of ``size`` (height, width) at ``budget``."""
    from gemma_explore.plans.image import plan_image

    return plan_image(size, family=family, max_soft_tokens=budget).num_soft_tokens


def audio_tokens(clip: Any, family: str) -> int:
    """Placeholders the prompt holds for ``clip`` in ``family``."""
    from gemma_explore.plans.audio import plan_audio

    return plan_audio(clip, family=family).num_soft_tokens
