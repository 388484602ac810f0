"""Every error the package raises on purpose, in one leaf module every layer may import.

Each is a subclass of a built-in exception, so ``except ValueError`` still catches a
bad input; the message always says what to do next.

>>> from gemma_explore.errors import MediaError
>>> issubclass(MediaError, ValueError)
True
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["BackendError", "MediaError", "ModelLoadError", "renamed"]

T = TypeVar("T")


class MediaError(ValueError):
    """A clear, user-facing message about a bad image, clip or video."""


class ModelLoadError(RuntimeError):
    """A model could not be loaded; the message says what to do."""


class BackendError(RuntimeError):
    """A serving backend (vLLM, an OpenAI-compatible server) refused or failed a request."""


def renamed(new: Callable[..., T], old_name: str, *, removed_in: str = "0.3") -> Callable[..., T]:
    """Keep an old public name working for one release, with a DeprecationWarning that says
    which name to use instead.

    >>> def require_budget(x): return x
    >>> check_budget = renamed(require_budget, "check_budget")
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     check_budget(3), w[0].category.__name__
    (3, 'DeprecationWarning')
    """

    @functools.wraps(new)
    def old(*args: Any, **kwargs: Any) -> T:
        warnings.warn(
            f"{old_name} was renamed {new.__name__}; the old name goes in {removed_in}. "
            f"Replace {old_name}( with {new.__name__}(.",
            DeprecationWarning,
            stacklevel=2,
        )
        return new(*args, **kwargs)

    old.__name__ = old.__qualname__ = old_name
    old.__doc__ = f"Deprecated alias of :func:`{new.__name__}` (goes in {removed_in})."
    return old
