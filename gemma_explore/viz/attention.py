"""The masks a sliding-window and a full-attention layer apply to one prompt.

Gids: ``"mask_sliding"`` and ``"mask_full"`` (the boolean masks as images, query rows ×
key columns), ``"token_kinds"`` (the prompt's token kinds along each axis),
``"layer_types"`` (one cell per decoder layer: sliding or full), ``"window_edge"``
(the line k = q − W + 1 on the sliding mask) and ``"mask_legend"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gemma_explore.colors import OKABE_ITO, kind_color
from gemma_explore.inside.attention import AttentionMasks
from gemma_explore.viz.palette import panels
from gemma_explore.viz.style import current_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["show_attention"]

_LAYER_COLOR = {"sliding_attention": OKABE_ITO["sky"], "full_attention": OKABE_ITO["blue"]}
_EDGE = OKABE_ITO["vermillion"]
_RATIO_PER_IN = 11.1 / 6.2  # height-ratio units per inch: 8 in hold the 11.1 units above


def _kind_strip(ax, masks: AttentionMasks) -> None:
    """The prompt's token kinds, one column per token, above a mask."""
    from matplotlib.colors import to_rgb

    strip = np.array([[to_rgb(kind_color(k)) for k in masks.kinds]])  # (1, T, 3)
    ax.imshow(strip, aspect="auto", interpolation="nearest", gid="token_kinds")
    ax.set_xticks([])
    ax.set_yticks([])


def _draw_mask(ax, masks: AttentionMasks, kind: str, title_ax) -> None:
    """One layer type's mask (white: may attend), and on a sliding layer its window edge;
    its title goes on ``title_ax`` (the kind strip above it)."""
    st = current_style()
    mask, gid = (
        (masks.sliding, "mask_sliding")
        if kind == "sliding_attention"
        else (masks.full, "mask_full")
    )
    ax.imshow(mask, cmap="gray", vmin=0, vmax=1, interpolation="nearest", gid=gid)
    sliding = kind == "sliding_attention"
    layers = masks.sliding_layers if sliding else masks.full_layers
    extra = f", window {masks.sliding_window}" if sliding else ""
    title_ax.set_title(
        st.fill(
            f"{kind.split('_')[0]} layers {list(layers)}{extra}\nlater keys seen: "
            f"{masks.future_pairs(kind)}",
            4.6,
        ),
        fontsize=st.body,
    )
    ax.set_xlabel("key position")
    ax.set_ylabel("query position")
    n, w = masks.num_tokens, masks.sliding_window
    if sliding and w < n:
        q = np.arange(w - 1, n)
        ax.plot(q - w + 1, q, color=_EDGE, lw=st.lw(1.2), gid="window_edge")


def _draw_layers(ax, masks: AttentionMasks) -> None:
    """One cell per decoder layer, coloured by its attention type."""
    from matplotlib.colors import to_rgb

    colors = [to_rgb(_LAYER_COLOR.get(t, OKABE_ITO["grey"])) for t in masks.layer_types]
    ax.imshow(np.array([colors]), aspect="auto", interpolation="nearest", gid="layer_types")
    ax.set_yticks([])
    ax.set_xticks(range(len(masks.layer_types)))
    ax.set_xlabel("decoder layer (light: sliding, dark: full)")


def _legend_columns(masks: AttentionMasks) -> tuple[int, int, int, int]:
    """(columns, rows) of the meaning legend and of the kinds legend (its title a row)."""
    wide = current_style().small < 12
    meaning = 3 if masks.sliding_window < masks.num_tokens else 2
    kinds = len(dict.fromkeys(masks.kinds))
    top_cols = meaning if wide else 2
    kind_cols = max(1, min(kinds, 6 if wide else 4))
    return top_cols, -(-meaning // top_cols), kind_cols, -(-kinds // kind_cols) + 1


def _legend(ax, masks: AttentionMasks) -> None:
    """What white, black and the vermillion line mean (top), and right under it the
    strips' colours: the axes is as tall as the two legends' rows (no empty band)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    st = current_style()
    top_cols, top_rows, kind_cols, kind_rows = _legend_columns(masks)
    meaning = [
        Patch(facecolor="white", edgecolor="black", label="white: may attend"),
        Patch(facecolor="black", label="black: masked"),
    ]
    if masks.sliding_window < masks.num_tokens:
        meaning.append(
            Line2D(
                [],
                [],
                color=_EDGE,
                lw=st.lw(2),
                label=(
                    f"window edge: key = query − {masks.sliding_window} + 1 (older keys fall out)"
                ),
            )
        )
    ax.axis("off")
    top = ax.legend(
        handles=meaning,
        loc="upper center",
        fontsize=st.small,
        ncol=top_cols,
        frameon=False,
        borderaxespad=0,
    )
    top.set_gid("mask_legend")
    ax.add_artist(top)
    kinds = list(dict.fromkeys(masks.kinds))
    strips = [Patch(facecolor=kind_color(k), label=k) for k in kinds]
    bottom = ax.legend(
        handles=strips,
        loc="lower center",
        borderaxespad=0,
        ncol=kind_cols,
        fontsize=st.small,
        title="token kinds (the strips above the masks)",
        title_fontsize=st.small,
        frameon=False,
    )
    bottom.set_gid("kind_legend")


def show_attention(masks: AttentionMasks, *, ax: Any = None) -> Figure:
    """Draw the sliding and the full layer's masks side by side (white: may attend), the
    token kinds along the top, a row of the decoder's layers coloured by type, and a
    legend of every colour (the vermillion line is the sliding window's edge).

    With ``use_bidirectional_attention="vision"`` the sliding mask shows a square per
    image above the diagonal: its soft tokens see each other. With ``ax=`` the panels
    are drawn in a sub-grid at that axes' place.

    >>> import gemma_explore as ge
    >>> b = ge.load("tiny-gemma4")
    >>> fig = show_attention(ge.attention_mask(ge.layout_prompt("Hi", bundle=b), bundle=b))
    """
    if not isinstance(masks, AttentionMasks):
        raise TypeError(
            "show_attention draws AttentionMasks: pass ge.attention_mask(layout, bundle=bundle)."
        )
    st = current_style()
    _, top_rows, _, kind_rows = _legend_columns(masks)
    legend_in = ((top_rows + kind_rows) * 1.6 + 0.9) * st.small / 72  # rows + the gap
    fig, grid = panels(
        ax,
        (11, 8.0 + legend_in),
        4,
        2,
        layout="compressed",  # the square masks: no band above or below them
        height_ratios=[0.4, 10, 0.7, legend_in * _RATIO_PER_IN],
    )
    for col, kind in enumerate(("sliding_attention", "full_attention")):
        strip = fig.add_subplot(grid[0, col])
        _kind_strip(strip, masks)
        _draw_mask(fig.add_subplot(grid[1, col]), masks, kind, strip)
    _draw_layers(fig.add_subplot(grid[2, :]), masks)
    _legend(fig.add_subplot(grid[3, :]), masks)
    src = "checkpoint" if masks.from_checkpoint else "set here"
    fig.suptitle(
        f"{masks.spec.display_name}: use_bidirectional_attention="
        f"{masks.use_bidirectional_attention!r} ({src}), {masks.num_tokens} tokens",
        fontsize=st.title,
    )
    return fig
