"""Result types shared across layers: made by one layer, read by several above it.

:class:`Generation` is made by every engine (transformers, vLLM, an OpenAI-compatible
server) and read by the bundle, the demo and the command line, so it lives here rather
than with any one of them. A number a backend cannot see is ``None``, never a sentinel.

>>> g = Generation(text="a cat", prompt_tokens=300, multimodal_tokens=None, generated_tokens=2)
>>> str(g), g.multimodal_tokens is None
('a cat', True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["Generation", "Rule"]

T = TypeVar("T")


@dataclass(frozen=True)
class Rule(Generic[T]):
    """One rule of a plan: the number(s) it gives and the sentence that says why, made
    together by one small function so the prose cannot drift from the arithmetic.

    >>> r = Rule(256, "16×16 cells: 256 soft tokens.")
    >>> r.value, r.step
    (256, '16×16 cells: 256 soft tokens.')
    """

    value: T  # what the rule computes (a count, a size, a tuple of them)
    step: str  # the sentence a learner reads in the result's ``steps``


@dataclass(frozen=True)
class Generation:
    """One answer with its token counts and timings. ``str(gen)`` is the text."""

    text: str
    prompt_tokens: int | None  # tokens in the expanded prompt (None: not reported)
    multimodal_tokens: int | None  # of which are soft-token placeholders (None: not reported)
    generated_tokens: int | None  # (None: not reported)
    preprocess_s: float = 0.0  # processor: resize, patches, mel, tokenisation
    encoder_s: float | None = None  # vision + audio towers (None: not separable, e.g. vLLM)
    prefill_s: float | None = None  # first forward pass, encoders included
    decode_tokens_per_s: float | None = None  # tokens after the first, per second
    is_random_weights: bool = False  # the text is noise when True
    timings: dict[str, float] = field(default_factory=dict)  # anything else measured

    def __str__(self) -> str:
        return self.text
