"""One way to write a size, everywhere: width × height, labelled ``W×H``.

Inside the package sizes stay ``(height, width)`` tuples, the order of numpy arrays,
``pixel_values`` and the processors. Whenever a size is *written* for a person (a plan's
steps, a table, a figure title, a notebook), it goes through :func:`size_label`, which
flips it to the order people say out loud ("a 1920×1080 photo") and says so. A test scans
notebooks and figures for any unlabelled ``\\d+×\\d+`` pair.

>>> size_label((1080, 1920))
'1920×1080 px (W×H)'
>>> size_label((54, 45), unit="patches")
'45×54 patches (W×H)'
>>> size_label((37.5, 32.0))
'32×37.5 px (W×H)'
"""

from __future__ import annotations

__all__ = ["SIZE_ORDER", "size_label"]

SIZE_ORDER = "W×H"  # the label every written size carries


def _num(x: float) -> str:
    x = float(x)
    return f"{x:.0f}" if x == round(x) else f"{x:.1f}"


def size_label(size_hw: tuple[float, float], *, unit: str = "px") -> str:
    """Write a ``(height, width)`` size as ``"W×H unit (W×H)"``.

    ``unit`` names what is counted: ``"px"``, ``"patches"``, ``"cells"``, ``"tokens"``.
    """
    h, w = size_hw
    return f"{_num(w)}×{_num(h)} {unit} ({SIZE_ORDER})"
