"""Build it 1 · Gemma 4's resize for a budget.

**The goal.** Gemma 4 never crops or squashes a photo: it scales it, keeping its shape,
to the largest size whose 16 px patches fit the budget, with both sides a whole number
of 48 px cells (3 × 3 patches pool into one soft token). Write that resize.

**The spec.** ``resize_for_budget(height, width, budget)`` returns the ``(height,
width)`` in pixels that transformers' Gemma 4 image processor resizes to:

1. the patch budget is ``budget × 9`` patches of 16 px, so the target area is
   ``budget × 9 × 16²`` px; scale both sides by ``sqrt(target area / area)``;
2. round each scaled side *down* to a multiple of 48 px (floor, never ceil: rounding up
   would pass the budget);
3. a very thin image rounds one side to 0: make that side one cell (48 px) and the other
   ``floor(long / short)`` cells, but never more than ``budget`` cells long.

**The check.** ``python -m gemma_explore.course.buildit check -k resize`` compares your
function with transformers' own ``get_aspect_ratio_preserving_size``
(``transformers/models/gemma4/image_processing_gemma4.py``) on a few hundred sizes from
1 to 8192 px at every budget. About 15 lines.

Once you have written it (until then it raises ``NotImplementedError``):

>>> resize_for_budget(600, 800, 70)  # doctest: +SKIP
(336, 432)
"""

from __future__ import annotations

__all__ = ["resize_for_budget"]


def resize_for_budget(height: int, width: int, budget: int) -> tuple[int, int]:
    """The (height, width) Gemma 4 resizes a ``height × width`` px image to at ``budget``."""
    raise NotImplementedError("Your turn: write Gemma 4's resize (see this module's docstring).")
