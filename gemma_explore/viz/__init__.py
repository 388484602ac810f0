"""Visualisers: each takes a plan, layout or report and returns a matplotlib Figure.

Figures are made with ``matplotlib.figure.Figure`` (not pyplot), so nothing is shown or
kept alive behind your back. In Jupyter they still display inline: on import we
register a PNG formatter for ``Figure`` with IPython when pyplot has not done so.
"""


def _register_ipython_display() -> None:
    import sys

    ipython = sys.modules.get("IPython")  # a kernel has imported it; a script need not (0.3 s)
    if ipython is None:
        return
    shell = ipython.get_ipython()
    if shell is None:
        return
    from IPython.core.pylabtools import print_figure
    from matplotlib.figure import Figure

    png = shell.display_formatter.formatters["image/png"]
    if Figure in png.type_printers:  # pyplot's inline backend got there first
        return
    png.for_type(Figure, lambda fig: print_figure(fig, "png", bbox_inches="tight", dpi=90))


_register_ipython_display()
