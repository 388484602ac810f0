"""Every error the package raises on purpose, in one leaf module every layer may import.

Each is a subclass of a built-in exception, so ``except ValueError`` still catches a
bad input; the message always says what to do next.

>>> from gemma_explore.errors import MediaError
>>> issubclass(MediaError, ValueError)
True
"""

from __future__ import annotations

__all__ = ["EngineError", "MediaError", "ModelLoadError"]


class MediaError(ValueError):
    """A clear, user-facing message about a bad image, clip or video."""


class ModelLoadError(RuntimeError):
    """A model could not be loaded; the message says what to do."""


class EngineError(RuntimeError):
    """A serving engine (vLLM, an OpenAI-compatible server) refused or failed a request."""
