"""Deprecated: ``gemma_explore.bill`` was a module, a function, a command and a figure.

The module is now named for what it holds: :mod:`gemma_explore.dataset_bill` (the walk:
:func:`~gemma_explore.dataset_bill.bill`), :mod:`gemma_explore.bill_results` (:class:`Bill`,
its summary) and :mod:`gemma_explore.bill_writers` (:class:`BillWriter`). ``ge.bill`` is
the function. Importing this module warns, and it goes in 0.3; it stays callable, so
``ge.bill(...)`` works even after ``import gemma_explore.bill`` rebinds the name.
"""

from __future__ import annotations

import sys
import types
import warnings
from typing import Any

from . import bill_writers, dataset_bill
from .dataset_bill import Bill, bill

# The names the old module had: the walk's (dataset_bill's __all__) and the writer.
__all__ = sorted([*dataset_bill.__all__, "BillWriter"])
globals().update({name: getattr(dataset_bill, name) for name in dataset_bill.__all__})
BillWriter = bill_writers.BillWriter

warnings.warn(
    "gemma_explore.bill (the module) was split and goes in 0.3: import bill from "
    "gemma_explore (or gemma_explore.dataset_bill), Bill from gemma_explore.bill_results and "
    "BillWriter from gemma_explore.bill_writers.",
    DeprecationWarning,
    stacklevel=2,
)


class _CallableModule(types.ModuleType):
    """Python sets ``gemma_explore.bill`` to this module when it is first imported,
    hiding the function ``ge.bill``: calling the module calls the function."""

    def __call__(self, *args: Any, **kwargs: Any) -> Bill:
        return bill(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
