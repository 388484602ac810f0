"""Readable from the back of a room: every gallery figure drawn in the projector style has
text of at least 14 pt and no label cut short, and the site and the slides are built in
that style.

"Cut short" is checked five ways: no text leaves the figure (the canvas check of
test_readable.py), no text placed in an axes leaves that axes, no clipped text runs past
its clip box, no label ends in an ellipsis, and no two tick labels of one axis overlap.
A text must not sit on a straight rule (a limit line) of its axes either. The ribbon's
box labels must fit their boxes, the attention figure's legends leave no empty band
between them, and the three-way figure counts parameters in bars, not paragraphs.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.legend import Legend
from matplotlib.lines import Line2D

from gemma_explore.viz.style import STYLES, style
from scripts.gallery import figures
from tests.viz.test_readable import NAMES, _texts, _tick_labels, outside_the_figure

ROOT = Path(__file__).resolve().parents[2]
MIN_PT = STYLES["projector"].small  # 14
TOL = 1.5  # px: anti-aliasing and rounding


@pytest.fixture(scope="module")
def drawn(inputs):
    """Every gallery figure, drawn in the projector style, with its renderer ready."""
    with style("projector"):
        figs = figures(inputs)
    for fig in figs.values():
        FigureCanvasAgg(fig)
        fig.canvas.draw()
    return figs


def _inside(inner, outer) -> bool:
    return (
        inner.x0 >= outer.x0 - TOL
        and inner.x1 <= outer.x1 + TOL
        and inner.y0 >= outer.y0 - TOL
        and inner.y1 <= outer.y1 + TOL
    )


def _legend_texts(fig) -> set[int]:
    legends = [a for ax in fig.axes for a in (ax.get_legend(), *ax.artists) if a is not None]
    legends += list(fig.legends)
    return {id(t) for lg in legends if isinstance(lg, Legend) for t in lg.get_texts()} | {
        id(lg.get_title()) for lg in legends if isinstance(lg, Legend)
    }


def _rules(ax, renderer) -> list:
    """The straight horizontal or vertical lines of an axes (limits, cuts, edges)."""
    out = []
    for line in ax.lines:
        if not isinstance(line, Line2D) or not line.get_visible() or len(line.get_xdata()) < 2:
            continue
        ext = line.get_window_extent(renderer)
        if ext.width < 4 or ext.height < 4:
            out.append((line, ext))
    return out


def truncated(fig) -> list[str]:
    """Every way ``fig`` cuts or hides a label (see the module's docstring)."""
    renderer = fig.canvas.get_renderer()
    problems = list(outside_the_figure(fig))
    in_legends = _legend_texts(fig)
    for t in _texts(fig):
        text, ext = t.get_text(), t.get_window_extent(renderer)
        if t.get_fontsize() < MIN_PT:
            problems.append(f"{text!r} is {t.get_fontsize():g} pt")
        if text.rstrip().endswith(("…", "...")):
            problems.append(f"{text!r} is cut")
        clip = t.get_clip_box() if t.get_clip_on() else None
        if clip is not None and not _inside(ext, clip):
            problems.append(f"{text!r} runs past its clip box")
        ax = t.axes
        if ax is not None and t in ax.texts and id(t) not in in_legends:
            if not _inside(ext, ax.bbox):
                problems.append(f"{text!r} leaves its axes")
            problems += [
                f"{text!r} sits on the line {line.get_gid() or line.get_label()!r}"
                for line, rule in _rules(ax, renderer)
                if ext.overlaps(rule)
            ]
    for ax in fig.axes:
        if not ax.axison:
            continue
        for axis in (ax.xaxis, ax.yaxis):
            labels = [lab for lab in _tick_labels(axis) if lab.get_text().strip()]
            boxes = [lab.get_window_extent(renderer) for lab in labels]
            for i, a in enumerate(boxes):
                for j in range(i + 1, len(boxes)):
                    b = boxes[j]
                    shrunk = (a.x0 + TOL, a.y0 + TOL, a.x1 - TOL, a.y1 - TOL)
                    if b.overlaps(type(a).from_extents(*shrunk)):
                        problems.append(
                            f"tick labels {labels[i].get_text()!r} and "
                            f"{labels[j].get_text()!r} overlap"
                        )
    return problems


@pytest.mark.parametrize("name", NAMES)
def test_every_figure_reads_at_14_pt_with_no_label_cut(drawn, name):
    assert truncated(drawn[name]) == []


def test_the_check_sees_small_cut_and_overlapping_text():
    """The control: each check can fail."""
    from matplotlib.figure import Figure

    with style("projector"):
        fig = Figure(figsize=(4, 3))
        ax = fig.subplots()
        ax.set_xlim(0, 1)
        ax.text(0.5, 0.5, "small", fontsize=9)
        ax.text(0.9, 0.2, "far past the right edge of the axes", fontsize=14)
        ax.text(0.1, 0.8, "a label cut…", fontsize=14)
        ax.axvline(0.12, color="k")
        ax.set_xticks([0.0, 0.01], ["a long tick label", "another long one"])
        FigureCanvasAgg(fig)
        fig.canvas.draw()
        found = "\n".join(truncated(fig))
    for what in ("'small' is 9 pt", "leaves its axes", "'a label cut…' is cut", "sits on the line"):
        assert what in found
    assert "overlap" in found


def test_the_ribbon_labels_fit_their_boxes(drawn):
    """Every box of the layout ribbons carries its whole label inside it."""
    for name in ("layout_gemma4", "layout_gemma3n", "layout_video"):
        fig = drawn[name]
        renderer, ax = fig.canvas.get_renderer(), fig.axes[0]
        boxes = [
            p.get_window_extent(renderer)
            for p in ax.patches
            if p.get_gid() in ("segment", "folded_segments")
        ]
        for t in ax.texts:
            if t.get_gid() == "divergence_notes":
                continue
            ext = t.get_window_extent(renderer)
            cx, cy = (ext.x0 + ext.x1) / 2, (ext.y0 + ext.y1) / 2
            (box,) = [b for b in boxes if b.contains(cx, cy)]
            assert _inside(ext, box), (name, t.get_text())


def test_the_attention_legends_leave_no_empty_band(drawn):
    """The mask legend and the token-kinds legend sit one under the other, with at most a
    line of space between them (08's figure once had an empty band there)."""
    fig = drawn["attention_gemma4_vision"]
    renderer = fig.canvas.get_renderer()
    (meaning,) = [a for ax in fig.axes for a in ax.artists if a.get_gid() == "mask_legend"]
    (kinds,) = [a.get_legend() for a in fig.axes if a.get_legend() is not None]
    gap_pt = (
        (meaning.get_window_extent(renderer).y0 - kinds.get_window_extent(renderer).y1)
        * 72
        / fig.dpi
    )
    assert 0 <= gap_pt <= 2 * MIN_PT


def test_the_three_way_figure_counts_parameters_in_bars(drawn):
    fig = drawn["three_way"]
    bars = [
        p for ax in fig.axes for p in ax.patches if p.get_gid() in ("vision_params", "audio_params")
    ]
    assert len(bars) == 6  # vision and audio for each of the three families
    longest = max(t.get_text().count("\n") + 1 for t in _texts(fig))
    assert longest <= 4  # titles of a few lines; no paragraph


def _build_site():
    spec = importlib.util.spec_from_file_location("build_site", ROOT / "scripts" / "build_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_site_and_the_slides_default_to_the_projector_style():
    """``make site`` passes no --style: its notebooks (the slides' figures) and its gallery
    are drawn in the projector style."""
    build = _build_site()
    assert build.parser().parse_args([]).style == "projector"
    assert build.parser().parse_args(["--style", "screen"]).style == "screen"


@pytest.mark.slow
def test_a_notebook_the_site_executes_draws_in_the_projector_style(tmp_path):
    """The slides' figures are the executed notebooks' own: their kernel starts in the
    projector style (and a figure in it has 14-pt tick labels)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import matplotlib as mpl\n"
            "from gemma_explore.viz.style import current_style\n"
            "print(current_style().name, mpl.rcParams['xtick.labelsize'])"
        )
    ]
    path = tmp_path / "probe.ipynb"
    nbformat.write(nb, path)
    build = _build_site()
    out = build.execute(path, timeout=120)
    assert out.cells[0].outputs[0]["text"].split() == ["projector", "14.0"]
