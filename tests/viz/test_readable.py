"""Every figure in the gallery reads at the size a notebook shows it, in both styles:
text at least 9 pt on screen and 14 pt for the projector, nothing outside the figure, no
text over a title, no unlabelled size pair."""

from __future__ import annotations

import importlib
import inspect

import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

import gemma_explore as ge
from gemma_explore.viz.style import STYLES, style
from scripts import gallery as gallery_module
from scripts.gallery import figures
from tests.size_rule import unlabelled_pairs

MIN_PT = {"screen": 9, "projector": 14}
MAX_WIDTH_IN = 12  # notebooks show figures at 90 dpi: wider ones get scaled down, text too
VIZ_MODULES = (
    "attention",
    "audio",
    "bill",
    "embedder",
    "flops",
    "layout",
    "patches",
    "pooling",
    "serving",
    "video",
)


def _tick_labels(axis: Axis) -> list[Text]:
    """The tick labels a draw paints: those of ticks inside the view interval."""
    lo, hi = sorted(axis.get_view_interval())
    tol = 1e-9 * (hi - lo) + 1e-12
    out: list[Text] = []
    for locs, ticks in (
        (axis.get_majorticklocs(), axis.get_major_ticks),
        (axis.get_minorticklocs(), axis.get_minor_ticks),
    ):
        for tick, loc in zip(ticks(len(locs)), locs, strict=True):
            if lo - tol <= loc <= hi + tol:
                out += [lab for lab in (tick.label1, tick.label2) if lab.get_visible()]
    return out


def _texts(fig) -> list[Text]:
    """The text artists a draw actually paints: visible, non-empty, tick labels only for
    ticks inside the view and only on axes that are switched on."""
    out: list[Text] = []

    def walk(artist) -> None:
        if not artist.get_visible():
            return
        if isinstance(artist, Axis):
            if artist.axes.axison:
                out.extend(_tick_labels(artist) + [artist.label, artist.offsetText])
            return
        if isinstance(artist, Text):
            out.append(artist)
            return
        for child in artist.get_children():
            walk(child)

    walk(fig)
    return [t for t in out if t.get_visible() and t.get_text().strip()]


@pytest.fixture(scope="module", params=list(STYLES))
def gallery(request, inputs):
    with style(request.param):
        figs = figures(inputs)
    return request.param, figs


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
    "layout_video",
    "prompt_explorer_gemma4",
    "image_explorer_gemma3n",
    "patch_grid_unified",
    "audio_frames_unified",
    "three_way",
    "serving_gemma4",
    "serving_released_80gib",
    "attention_gemma4_vision",
    "bill_samples",
    "flops_released",
    "long_audio_gemma3n",
    "probe_expected",
]


def test_the_gallery_has_every_figure(gallery):
    assert set(NAMES) == set(gallery[1])  # a new figure in the gallery is checked here too


def test_the_gallery_draws_every_show_function():
    source = inspect.getsource(gallery_module)
    shown = {
        name
        for mod in VIZ_MODULES
        for name in importlib.import_module(f"gemma_explore.viz.{mod}").__all__
        if name.startswith("show_")
    }
    shown |= {n for n in ge.__all__ if n.startswith("show_")}
    assert shown and not [n for n in sorted(shown) if f"{n}(" not in source]


@pytest.mark.parametrize("name", NAMES)
def test_text_is_readable_and_inside_the_figure(gallery, name):
    which, figs = gallery
    fig = figs[name]
    assert fig.get_figwidth() <= MAX_WIDTH_IN, f"{name} is {fig.get_figwidth():g} in wide"
    FigureCanvasAgg(fig)  # Figure() made without pyplot has no renderer of its own
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    problems = []
    texts = _texts(fig)
    for t in texts:
        if t.get_fontsize() < MIN_PT[which]:
            problems.append(f"{t.get_text()!r} is {t.get_fontsize():g} pt")
        ext = t.get_window_extent(renderer)
        if ext.x0 < box.x0 - 1 or ext.x1 > box.x1 + 1 or ext.y0 < box.y0 - 1 or ext.y1 > box.y1 + 1:
            problems.append(f"{t.get_text()!r} leaves the figure")
        problems += [f"size without its label: {p}" for p in unlabelled_pairs(t.get_text())]
    sup = [t for t in fig.texts if fig.get_suptitle() and t.get_text() == fig.get_suptitle()]
    titles = [ax.title for ax in fig.axes] + sup
    for title in (t for t in titles if t.get_visible() and t.get_text()):
        tb = title.get_window_extent(renderer)
        for t in texts:
            if t is title or t in titles:
                continue
            if tb.overlaps(t.get_window_extent(renderer)):
                problems.append(f"{t.get_text()!r} covers the title {title.get_text()!r}")
    assert not problems, f"{which}: " + "\n".join(problems[:20])


def _painted(artist, out: list) -> list:
    """Every visible artist a draw paints (ticks only inside the view, axes switched on)."""
    if not artist.get_visible():
        return out
    if isinstance(artist, Axis):
        if artist.axes.axison:
            lo, hi = sorted(artist.get_view_interval())
            tol = 1e-9 * (hi - lo) + 1e-12
            for locs, ticks in (
                (artist.get_majorticklocs(), artist.get_major_ticks),
                (artist.get_minorticklocs(), artist.get_minor_ticks),
            ):
                for tick, loc in zip(ticks(len(locs)), locs, strict=True):
                    if lo - tol <= loc <= hi + tol:
                        _painted(tick, out)
            _painted(artist.label, out)
            _painted(artist.offsetText, out)
        return out
    out.append(artist)
    for child in artist.get_children():
        _painted(child, out)
    return out


def outside_the_figure(fig) -> list[str]:
    """The artists (legends, insets, labels, marks, ticks) a draw puts past the figure's
    edge, where no screen shows them; an artist clipped to its axes counts by what shows."""
    from matplotlib.transforms import Bbox

    FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer, box = fig.canvas.get_renderer(), fig.bbox
    problems = []
    for artist in _painted(fig, []):
        if artist is fig.patch:
            continue
        try:
            ext = artist.get_window_extent(renderer)
        except (TypeError, NotImplementedError, AttributeError):
            continue
        if artist.get_clip_on() and artist.get_clip_box() is not None:
            ext = Bbox.intersection(ext, artist.get_clip_box())
        if ext is None or (ext.width == 0 and ext.height == 0):
            continue
        if ext.x0 < box.x0 - 1 or ext.x1 > box.x1 + 1 or ext.y0 < box.y0 - 1 or ext.y1 > box.y1 + 1:
            text = artist.get_text() if isinstance(artist, Text) else ""
            problems.append(f"{type(artist).__name__} {artist.get_gid() or ''} {text!r}".strip())
    return problems


@pytest.mark.parametrize("name", NAMES)
def test_every_artist_is_inside_the_figure(gallery, name):
    """Legends, insets and marks too, not only text: a front end that scales the figure
    to its column shows the whole canvas, and nothing past it."""
    which, figs = gallery
    assert outside_the_figure(figs[name]) == [], which


def test_the_check_sees_a_legend_outside_the_figure():
    """The control: a legend pushed past the right edge is caught."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 3))
    ax = fig.subplots()
    ax.plot([0, 1], label="a long legend entry")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
    assert any(p.startswith("Legend") for p in outside_the_figure(fig))


def _odd_inputs() -> dict:
    """Inputs a newcomer brings: a clip just past the 30 s cut, a clip too short for its
    ticks, a 4:3 photo (a big-text title once left the top), 32 sampled frames."""
    import numpy as np

    rng = np.random.RandomState(0)
    rate = 16000

    def clip(seconds):
        return (rng.uniform(-0.1, 0.1, int(rate * seconds)).astype(np.float32), rate)

    frames = (rng.rand(36, 64, 3) * 255).astype(np.uint8)[None].repeat(32 * 24, 0)
    return {
        "mel 30.2 s gemma4": lambda: ge.show_mel(clip(30.2), family="gemma4"),
        "mel 31 s gemma3n": lambda: ge.show_mel(clip(31), family="gemma3n"),
        "mel 0.2 s gemma4": lambda: ge.show_mel(clip(0.2), family="gemma4"),
        "patch grid 800×600": lambda: ge.show_patch_grid((600, 800), family="gemma4"),
        "patch grid 1024×768": lambda: ge.show_patch_grid((768, 1024), family="gemma4"),
        "video 32 frames": lambda: ge.show_video_frames((frames, 24)),
    }


@pytest.mark.parametrize("which", list(STYLES))
def test_odd_inputs_stay_inside_the_figure(which):
    problems = {}
    with style(which):
        for name, draw in _odd_inputs().items():
            if found := outside_the_figure(draw()):
                problems[name] = found[:3]
    assert problems == {}


def test_the_30_s_cut_is_drawn_and_labelled_inside():
    import numpy as np

    wave = np.zeros(int(16000 * 30.2), dtype=np.float32)
    fig = ge.show_mel((wave, 16000), family="gemma4")
    ax = fig.axes[0]
    (cut,) = [ln for ln in ax.lines if ln.get_gid() == "cut_30s"]
    assert cut.get_xdata()[0] == 30 and ax.get_xlim()[1] >= 30
    assert [t for t in ax.texts if "30 s cut" in t.get_text()]
    assert outside_the_figure(fig) == []
