"""Deprecated: this module's name hid the standard library's ``inspect``. It is now
:mod:`gemma_explore.inspection`; importing this one warns, and it goes in 0.3."""

from __future__ import annotations

import warnings

from . import inspection as _renamed

# The same names as the module it became: its __all__ is the one list.
__all__ = list(_renamed.__all__)
globals().update({name: getattr(_renamed, name) for name in __all__})

warnings.warn(
    "gemma_explore.inspect was renamed gemma_explore.inspection (it hid the standard "
    "library's inspect) and goes in 0.3: import from gemma_explore.inspection.",
    DeprecationWarning,
    stacklevel=2,
)
