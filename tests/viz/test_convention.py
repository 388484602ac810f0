"""Every show_* follows one convention: the subject first, ``ax=`` (a multi-panel figure
given an axes draws in a sub-grid at that axes' place), a Figure back, annotated so; and
the styles set the sizes every figure reads."""

from __future__ import annotations

import importlib
import inspect

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure

import gemma_explore as ge
from gemma_explore.viz.style import STYLES, current_style

VIZ = (
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
SHOW = {
    name: getattr(importlib.import_module(f"gemma_explore.viz.{m}"), name)
    for m in VIZ
    for name in importlib.import_module(f"gemma_explore.viz.{m}").__all__
    if name.startswith("show_")
}


@pytest.mark.parametrize("name", sorted(SHOW))
def test_every_show_takes_ax_and_returns_a_figure(name):
    sig = inspect.signature(SHOW[name])
    params = list(sig.parameters.values())
    assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD  # the subject
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:]), name
    assert "ax" in sig.parameters and sig.parameters["ax"].default is None
    # Annotations are strings (postponed evaluation); matplotlib is imported when drawing.
    assert sig.return_annotation in ("Figure", Figure), f"{name} -> {sig.return_annotation}"


def test_show_three_way_has_no_image_argument():
    assert "image" not in inspect.signature(ge.show_three_way).parameters


def _inside(outer, fig, axes) -> bool:
    box = outer  # the removed axes' place, in figure coordinates
    return all(
        box.x0 - 1e-6 <= a.get_position().x0 and a.get_position().x1 <= box.x1 + 1e-6 for a in axes
    )


def _subgrid_draws(draw):
    """Draw into the right half of a two-axes figure; return (figure, right box, new axes)."""
    fig = Figure(figsize=(16, 8))
    left, right = fig.subplots(1, 2)
    place = right.get_position()
    out = draw(right)
    new = [a for a in fig.axes if a is not left]
    return out is fig, place, new, left in fig.axes and right not in fig.axes


@pytest.mark.parametrize(
    "draw",
    [
        lambda ax, photo, tone: ge.show_patch_grid(photo, family="gemma4", ax=ax),
        lambda ax, photo, tone: ge.show_patch_grid(photo, family="gemma3n", ax=ax),
        lambda ax, photo, tone: ge.show_embedder_grid(photo, ax=ax),
        lambda ax, photo, tone: ge.show_mel((tone, 16000), family="gemma3n", ax=ax),
        lambda ax, photo, tone: ge.show_audio_frames((tone, 16000), ax=ax),
    ],
    ids=["patch_grid_4", "patch_grid_3n", "embedder_grid", "mel", "audio_frames"],
)
def test_a_multi_panel_figure_given_ax_draws_in_its_place(draw, photo, tone):
    same, place, new, replaced = _subgrid_draws(lambda ax: draw(ax, photo, tone))
    assert same and replaced and len(new) >= 2
    assert _inside(place, None, new)


def test_budgets_and_single_panel_figures_draw_in_the_given_axes(photo):
    fig = Figure()
    ax = fig.subplots()
    assert ge.show_budgets(photo, ax=ax) is fig and fig.axes == [ax]


def test_style_switches_and_a_with_block_switches_back():
    before = matplotlib.rcParams["xtick.labelsize"]
    with ge.style("projector") as s:
        assert s is current_style() is STYLES["projector"] and s.small >= 14
        assert matplotlib.rcParams["xtick.labelsize"] == s.small
        assert matplotlib.rcParams["lines.linewidth"] > 1.5
    assert current_style().name == "screen"
    assert matplotlib.rcParams["xtick.labelsize"] == before
    with pytest.raises(ValueError, match="'screen', 'projector'"):
        ge.style("poster")


def test_projector_lines_are_thicker(photo):
    def widths(fig):
        (lines,) = [c for a in fig.axes for c in a.collections if c.get_gid() == "token_lines"]
        return lines.get_linewidths()[0]

    screen = widths(ge.show_patch_grid(photo, family="gemma4"))
    with ge.style("projector"):
        projector = widths(ge.show_patch_grid(photo, family="gemma4"))
    assert projector >= 2 * screen


def test_a_dropped_unified_frame_is_enlarged(tiny4):
    # 38 560 samples: 61 frames of 640; vLLM's mel-based count gives the prompt 60.
    clip = (np.full(38_560, 0.05, np.float32), 16_000)
    plan = ge.plan_audio(clip, family=ge.get_family("gemma4_unified"))
    from gemma_explore.plans.vllm import vllm_audio_tokens

    lost = plan.num_encoder_tokens - vllm_audio_tokens(plan.num_samples, family=plan.family)
    assert lost == 1
    fig = ge.show_audio_frames(plan)
    (zoom,) = [a for a in fig.axes for p in a.patches if p.get_gid() == "zoom_dropped"]
    (cell,) = [p for p in zoom.patches if p.get_gid() == "zoom_dropped"]
    assert cell.get_width() / np.ptp(zoom.get_xlim()) > 0.2  # a quarter of the panel, not 1 px
    assert "constant signal" in " ".join(fig.axes[0].get_title().split())
    lo, hi = fig.axes[0].get_ylim()
    assert lo < 0.05 < hi and hi < 0.1  # the level is on the axis, not a line at its edge


def test_serving_sets_a_released_checkpoint_beside_the_tiny_one():
    tiny = ge.plan_serving("tiny-gemma4", max_model_len=2048)
    real = ge.plan_serving("google/gemma-4-E2B-it", max_model_len=2048)
    fig = ge.show_serving(tiny, released=real)
    tiny_ax, real_ax = fig.axes[:2]
    assert "tiny random-weight model" in tiny_ax.get_title() and tiny_ax.get_ylabel() == "MiB"
    assert "released" in real_ax.get_title() and real_ax.get_ylabel() == "GiB"
    (w,) = [p for p in real_ax.patches if p.get_gid() == "mem_weights_released"]
    assert w.get_height() == pytest.approx(real.weights_bytes / 2**30)


def test_attention_has_a_legend_that_names_the_window_edge(tiny4, photo):
    msgs = [
        {
            "role": "user",
            "content": [{"type": "image", "image": photo}, {"type": "text", "text": "Hi"}],
        }
    ]
    layout = ge.layout_prompt(msgs, bundle=tiny4, max_soft_tokens=70)
    masks = ge.attention_mask(layout, use_bidirectional_attention="vision", bundle=tiny4)
    fig = ge.show_attention(masks)
    (meaning,) = [a for ax in fig.axes for a in ax.artists if a.get_gid() == "mask_legend"]
    labels = [t.get_text() for t in meaning.get_texts()]
    assert labels[:2] == ["white: may attend", "black: masked"]
    assert (masks.sliding_window < masks.num_tokens) == any(
        t.startswith(f"window edge: key = query − {masks.sliding_window} + 1") for t in labels
    )
    (kinds,) = [a.get_legend() for a in fig.axes if a.get_legend() is not None]
    assert {t.get_text() for t in kinds.get_texts()} == set(masks.kinds)
