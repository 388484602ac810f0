"""Pooled token masks: which soft-token slots the real pooler filled, and how strongly.

Gids: ``"valid_cells"`` (one square per real soft token), ``"padding_cells"`` (one per
padding slot), ``"norm_map"`` (the embedding-norm heat map).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..families import get_family
from ..inspection import PooledTokens
from ..sizes import size_label
from .palette import PADDING, VALID, cell_axes, padding_cells, real_cells

__all__ = ["show_pooled_mask"]


def show_pooled_mask(pooled: PooledTokens, *, ax: Any = None):
    """Draw valid vs padding slots of the real pooler, and each token's embedding norm.

    Left: every pooled slot, real soft tokens in blue, padding slots hatched. Right (trained
    weights only): the norm of each real token's embedding, laid out on the image's pooled
    grid. With random weights the norms mean nothing, so they are not drawn: the figure
    shows shapes only and says so. The slot title says whether the valid count equals
    the plan.

    >>> fig = show_pooled_mask(ge.vision_pooling(ge.load("tiny-gemma4"), "photo.jpg"))  # doctest: +SKIP
    """
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch, Rectangle

    if not isinstance(pooled, PooledTokens):
        raise TypeError(
            "show_pooled_mask draws a PooledTokens: pass ge.vision_pooling(bundle, image)."
        )
    rows, cols = pooled.grid
    if ax is None and pooled.is_random_weights:
        fig = Figure(figsize=(6.5, 4.6), layout="constrained")
        slots_ax, norm_ax = fig.subplots(), None
    elif ax is None:
        fig = Figure(figsize=(11, 4.6), layout="constrained")
        slots_ax, norm_ax = fig.subplots(1, 2, width_ratios=[1, 1])
    else:
        fig, slots_ax, norm_ax = ax.figure, ax, None

    # Slots: laid out in rows as wide as the image's pooled grid.
    width = max(cols, 1)
    slot_rows = -(-pooled.slots // width)
    valid_r, pad_r = [], []
    for i in range(pooled.slots):
        r, c = divmod(i, width)
        (valid_r if pooled.valid[i] else pad_r).append(Rectangle((c, r), 0.92, 0.92))
    slots_ax.add_collection(real_cells(valid_r, gid="valid_cells"))
    slots_ax.add_collection(padding_cells(pad_r, gid="padding_cells"))
    cell_axes(slots_ax, width, slot_rows)
    verdict = "= plan ✓" if pooled.agrees else f"≠ plan {pooled.plan.num_soft_tokens} ✗"
    slots_ax.set_title(
        f"{pooled.slots} pooled slots: {pooled.num_valid} real {verdict}, "
        f"{pooled.slots - pooled.num_valid} padding",
        fontsize=10,
    )
    slots_ax.legend(
        handles=[
            Patch(facecolor=VALID, label="real soft token"),
            Patch(facecolor="white", edgecolor=PADDING, hatch="///", label="padding slot"),
        ],
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=2,
        fontsize=9,
        frameon=False,
    )
    if norm_ax is not None:
        norms = np.full(rows * cols, np.nan)  # (rows·cols,) NaN where no real token
        n = min(pooled.num_valid, rows * cols)
        norms[:n] = pooled.norms[pooled.valid][:n]
        im = norm_ax.imshow(norms.reshape(rows, cols), cmap="viridis", gid="norm_map")
        bar = fig.colorbar(im, ax=norm_ax, shrink=0.8, label="embedding L2 norm")
        bar.formatter.set_useOffset(False)  # plain numbers, never "1e-6+7.99999"
        bar.update_ticks()
        norm_ax.set_title(
            f"token norms on the {size_label((rows, cols), unit='cells')} pooled grid",
            fontsize=10,
        )
        norm_ax.set_xticks([])
        norm_ax.set_yticks([])
    family = get_family(pooled.family).display_name
    weights = " (random weights: shape only)" if pooled.is_random_weights else ""
    fig.suptitle(f"{family} vision pooler{weights}", fontsize=12)
    return fig
