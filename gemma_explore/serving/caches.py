"""The process-wide caches of the serving view, in one place, so a test or a notebook can
see and clear them.

Reading a checkpoint's config and building it on the meta device is the slow part of
:func:`gemma_explore.serving.plan.plan_serving`; the plan itself is arithmetic. Two caches keep
the slow part to once per process:

* :data:`PARAMETER_COUNTS`: parameters per part of a model, per distinct config (its JSON);
* :data:`SERVING_MODELS`: the :class:`~gemma_explore.serving.model.ServingModel` read for a
  bundle name, folder, tiny name or released id.

>>> memo = Memo("squares")
>>> memo.get_or_make(3, lambda: 9), memo.get_or_make(3, lambda: 0), len(memo)
(9, 9, 1)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

__all__ = ["PARAMETER_COUNTS", "SERVING_MODELS", "Memo"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(dict, Generic[K, V]):
    """A named dict that makes each value once (``clear()`` forgets them all)."""

    def __init__(self, holds: str) -> None:
        super().__init__()
        self.holds = holds  # what the values are, in words (shown in repr)

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        if key not in self:
            self[key] = make()
        return self[key]

    def __repr__(self) -> str:
        return f"Memo({self.holds}: {len(self)} kept)"


# config JSON → (total, ((part, parameters), …)): a meta-device build per distinct config.
PARAMETER_COUNTS: Memo[str, Any] = Memo("parameter counts per config")
# bundle name / folder / tiny name / released id → ServingModel.
SERVING_MODELS: Memo[str, Any] = Memo("serving models per name")
