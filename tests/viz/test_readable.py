"""Every figure in the gallery reads at the size a notebook shows it: text at least 9 pt,
nothing outside the figure, no text over a title, no unlabelled size pair."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

from benchmarks.gallery import figures
from tests.size_rule import unlabelled_pairs

MIN_PT = 9
MAX_WIDTH_IN = 12  # notebooks show figures at 90 dpi: wider ones get scaled down, text too


def _texts(fig) -> list[Text]:
    """The text artists a draw actually paints: visible, non-empty, tick labels only for
    ticks inside the view and only on axes that are switched on."""
    out: list[Text] = []

    def walk(artist) -> None:
        if not artist.get_visible():
            return
        if isinstance(artist, Axis):
            if not artist.axes.axison:
                return
            for tick in artist._update_ticks():  # the ticks a draw paints
                out.extend(lab for lab in (tick.label1, tick.label2) if lab.get_visible())
            out.extend([artist.label, artist.offsetText])
            return
        if isinstance(artist, Text):
            out.append(artist)
            return
        for child in artist.get_children():
            walk(child)

    walk(fig)
    return [t for t in out if t.get_visible() and t.get_text().strip()]


@pytest.fixture(scope="module")
def gallery():
    return figures()


NAMES = [
    "patch_grid_gemma4",
    "patch_grid_gemma4_budgets",
    "patch_grid_gemma3n",
    "pooled_mask_gemma4",
    "pooled_mask_gemma3n",
    "mel_gemma4",
    "mel_gemma3n",
    "video_frames",
    "layout_gemma4",
    "layout_gemma3n",
    "prompt_explorer_gemma4",
    "image_explorer_gemma3n",
    "patch_grid_unified",
    "audio_frames_unified",
    "three_way",
    "serving_gemma4",
    "attention_gemma4_vision",
]


def test_the_gallery_has_every_figure(gallery):
    assert set(NAMES) == set(gallery)  # a new figure in the gallery is checked here too


@pytest.mark.parametrize("name", NAMES)
def test_text_is_readable_and_inside_the_figure(gallery, name):
    fig = gallery[name]
    assert fig.get_figwidth() <= MAX_WIDTH_IN, f"{name} is {fig.get_figwidth():g} in wide"
    FigureCanvasAgg(fig)  # Figure() made without pyplot has no renderer of its own
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    problems = []
    texts = _texts(fig)
    for t in texts:
        if t.get_fontsize() < MIN_PT:
            problems.append(f"{t.get_text()!r} is {t.get_fontsize():g} pt")
        ext = t.get_window_extent(renderer)
        if ext.x0 < box.x0 - 1 or ext.x1 > box.x1 + 1 or ext.y0 < box.y0 - 1 or ext.y1 > box.y1 + 1:
            problems.append(f"{t.get_text()!r} leaves the figure")
        problems += [f"size without its label: {p}" for p in unlabelled_pairs(t.get_text())]
    titles = [ax.title for ax in fig.axes] + ([fig._suptitle] if fig._suptitle else [])
    for title in (t for t in titles if t.get_visible() and t.get_text()):
        tb = title.get_window_extent(renderer)
        for t in texts:
            if t is title or t in titles:
                continue
            if tb.overlaps(t.get_window_extent(renderer)):
                problems.append(f"{t.get_text()!r} covers the title {title.get_text()!r}")
    assert not problems, "\n".join(problems[:20])
