"""Pooled token masks: which soft-token slots the real pooler filled, and how strongly.

Gids: ``"valid_cells"`` (one square per real soft token), ``"padding_cells"`` (one per
padding slot), ``"norm_map"`` (the embedding-norm heat map).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gemma_explore.inside.towers import PooledTokens
from gemma_explore.sizes import size_label
from gemma_explore.viz.palette import (
    PADDING,
    VALID,
    cell_axes,
    padding_cells,
    panels,
    real_cells,
    rect,
)
from gemma_explore.viz.style import current_style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["show_pooled_mask"]


def _draw_slots(ax, pooled: PooledTokens) -> None:
    """Every pooled slot, in rows as wide as the image's pooled grid: real soft tokens
    blue, padding slots hatched; the title says whether the real count equals the plan."""
    from matplotlib.patches import Patch

    st = current_style()
    width = max(pooled.grid[1], 1)
    valid_r, pad_r = [], []
    for i in range(pooled.slots):
        r, c = divmod(i, width)
        (valid_r if pooled.valid[i] else pad_r).append(rect(c, r, 0.92, 0.92))
    ax.add_collection(real_cells(valid_r, gid="valid_cells"))
    ax.add_collection(padding_cells(pad_r, gid="padding_cells"))
    cell_axes(ax, width, -(-pooled.slots // width))
    verdict = "= plan ✓" if pooled.agrees else f"≠ plan {pooled.plan.num_soft_tokens} ✗"
    ax.set_title(
        st.fill(
            f"{pooled.slots} pooled slots: {pooled.num_valid} real {verdict}, "
            f"{pooled.slots - pooled.num_valid} padding",
            5.5,
        ),
        fontsize=st.body,
    )
    handles = [
        Patch(facecolor=VALID, label="real soft token"),
        Patch(facecolor="white", edgecolor=PADDING, hatch="///", label="padding slot"),
    ]
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=2,
        fontsize=st.small,
        frameon=False,
    )


def _draw_norms(ax, pooled: PooledTokens) -> None:
    """Each real token's embedding norm on the image's pooled grid (trained weights only)."""
    st = current_style()
    rows, cols = pooled.grid
    norms = np.full(rows * cols, np.nan)  # (rows·cols,) NaN where no real token
    n = min(pooled.num_valid, rows * cols)
    norms[:n] = pooled.norms[pooled.valid][:n]
    im = ax.imshow(norms.reshape(rows, cols), cmap="viridis", gid="norm_map")
    bar = ax.figure.colorbar(im, ax=ax, shrink=0.8, label="embedding L2 norm")
    bar.formatter.set_useOffset(False)  # plain numbers, never "1e-6+7.99999"
    bar.update_ticks()
    ax.set_title(
        f"token norms on the {size_label((rows, cols), unit='cells')} pooled grid", fontsize=st.body
    )
    ax.set_xticks([])
    ax.set_yticks([])


def show_pooled_mask(pooled: PooledTokens, *, ax: Any = None) -> Figure:
    """Draw valid vs padding slots of the real pooler, and each token's embedding norm.

    Left: every pooled slot, real soft tokens in blue, padding slots hatched. Right (trained
    weights only): the norm of each real token's embedding, laid out on the image's pooled
    grid. With random weights the norms mean nothing, so they are not drawn: the figure
    shows shapes only and says so. The slot title says whether the valid count equals
    the plan. With ``ax=`` the panels go in a sub-grid at that axes' place.

    >>> import gemma_explore as ge
    >>> fig = show_pooled_mask(ge.vision_pooling((300, 500), bundle=ge.load("tiny-gemma4")))
    """
    if not isinstance(pooled, PooledTokens):
        raise TypeError(
            "show_pooled_mask draws a PooledTokens: pass ge.vision_pooling(image, bundle=bundle)."
        )
    norms = not pooled.is_random_weights
    fig, grid = panels(ax, (11 if norms else 6.5, 5.2), 1, 2 if norms else 1)
    _draw_slots(fig.add_subplot(grid[0, 0]), pooled)
    if norms:
        _draw_norms(fig.add_subplot(grid[0, 1]), pooled)
    family = pooled.spec.display_name
    weights = " (random weights: shape only)" if pooled.is_random_weights else ""
    fig.suptitle(
        current_style().fill(
            f"{family} vision pooler{weights}", fig.get_figwidth() - 0.4, size=current_style().title
        ),
        fontsize=current_style().title,
    )
    return fig
