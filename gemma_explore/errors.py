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

__all__ = ["BackendError", "MediaError", "ModelLoadError", "bundle_keyword", "renamed"]

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


def bundle_keyword(*moved: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Let ``f(subject, *, bundle=…)`` still take the old order ``f(bundle, subject, …)`` for
    one release, with a DeprecationWarning. ``moved`` names the old positionals after the
    subject that are now keyword-only (e.g. ``"prepared"``).

    >>> class Bundle: ...
    >>> @bundle_keyword()
    ... def count(prompt, *, bundle): return len(prompt)
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     count(Bundle(), "abc"), w[0].category.__name__
    (3, 'DeprecationWarning')
    """

    def wrap(new: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(new)
        def accept_old_order(*args: Any, **kwargs: Any) -> T:
            if args and _is_bundle(args[0]):
                if "bundle" in kwargs:
                    raise TypeError(f"{new.__name__}() got two bundles; pass bundle= once.")
                name = new.__name__
                warnings.warn(
                    f"{name}(bundle, …) is the old order and goes in 0.3: write "
                    f"{name}(<subject>, bundle=bundle" + "".join(f", {m}=…" for m in moved) + ").",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs["bundle"], args = args[0], args[1:]
                if len(args) > 1:
                    extra = args[1:]
                    if len(extra) > len(moved):
                        raise TypeError(f"{name}() takes one positional (the subject).")
                    kwargs.update(zip(moved, extra, strict=False))
                    args = args[:1]
            return new(*args, **kwargs)

        return accept_old_order

    return wrap


def _is_bundle(x: object) -> bool:
    """A :class:`~gemma_explore.models.bundle.Bundle`, told by its class name: this leaf
    module may not import the models layer."""
    return any(c.__name__ == "Bundle" for c in type(x).__mro__)
