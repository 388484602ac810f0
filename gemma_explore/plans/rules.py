"""What every plan shares: one budget check, the prompt rule, and :class:`Rule`, a number
made together with the sentence that says why.

>>> from gemma_explore.plans.rules import require_budget
>>> require_budget(280, family="gemma4")
280
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from gemma_explore.facts.families import DEFAULT_FAMILY, FamilySpec, get_family
from gemma_explore.tables import Table

T = TypeVar("T")

__all__ = ["Rule", "prompt_rule", "require_budget", "steps_table"]

# --------------------------------------------------------------------------- helpers


def steps_table(title: str, rows: list[tuple[str, Any]], steps: tuple[str, ...]) -> Table:
    return Table((), tuple(rows), title=title, notes=steps, notes_title="steps")


def require_budget(
    max_soft_tokens: int | None,
    *,
    family: str | FamilySpec | Any = DEFAULT_FAMILY,
    what: str = "image",
) -> int:
    """The one check of an image budget: the family's default when None, else one of its
    allowed budgets; raises a ``ValueError`` that says what to pass otherwise (also for a
    family with no budget at all). Returns the clean ``int``.

    Every caller that takes a ``max_soft_tokens`` validates it here (plans, prompts,
    ``plan_serving``, vLLM's engine arguments, the bills, the encoder batches).

    >>> require_budget(None, family="gemma4"), require_budget(560, family="gemma4")
    (280, 560)
    """
    spec = get_family(family)
    img = spec.image
    if not img.budgets:
        raise ValueError(
            f"{spec.display_name} has no image budget: every {what} becomes "
            f"{img.fixed_soft_tokens} soft tokens. Drop max_soft_tokens."
        )
    if max_soft_tokens is None:
        return img.default_budget
    if isinstance(max_soft_tokens, bool) or not isinstance(max_soft_tokens, int | np.integer):
        raise ValueError(
            f"max_soft_tokens must be one of {list(img.budgets)}, got {max_soft_tokens!r}."
        )
    if int(max_soft_tokens) not in img.budgets:
        raise ValueError(
            f"max_soft_tokens must be one of {list(img.budgets)} for {spec.display_name} (soft "
            f"tokens per {what}), got {max_soft_tokens}. Choose one of them (default "
            f"{img.default_budget})."
        )
    return int(max_soft_tokens)


def prompt_rule(spec: FamilySpec, n: int, modality: str = "image") -> Rule[int]:
    """Prompt tokens of one item: its placeholders and markers (and 3n's wrappers)."""
    opener, token, closer = (
        (spec.boi_token, spec.image_token, spec.eoi_token)
        if modality == "image"
        else (spec.boa_token, spec.audio_token, spec.eoa_token)
    )
    total = n + spec.markers_per_item
    run = f"{opener} + {token}×{n} + {closer}"
    if spec.wraps_in_newlines:
        return Rule(
            total,
            f'Prompt: "\\n\\n" {run} "\\n\\n" = {total} tokens (the "\\n\\n" may merge with '
            "neighbouring newlines).",
        )
    return Rule(total, f"Prompt: {run} = {total} tokens.")


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
