"""The masks a sliding-window and a full-attention layer apply to one prompt.

Gids: ``"mask_sliding"`` and ``"mask_full"`` (the boolean masks as images, query rows ×
key columns), ``"token_kinds"`` (the prompt's token kinds along each axis),
``"layer_types"`` (one cell per decoder layer: sliding or full) and ``"window_edge"``
(the line k = q − W + 1 on the sliding mask).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..attention import AttentionMasks
from ..colors import OKABE_ITO, kind_color

__all__ = ["show_attention"]


def _kind_strip(masks: AttentionMasks) -> np.ndarray:
    from matplotlib.colors import to_rgb

    return np.array([[to_rgb(kind_color(k)) for k in masks.kinds]])  # (1, T, 3)


def show_attention(masks: AttentionMasks, *, ax: Any = None):
    """Draw the sliding and the full layer's masks side by side (white: may attend), the
    token kinds along the top, and a row of the decoder's layers coloured by type.

    With ``use_bidirectional_attention="vision"`` the sliding mask shows a square per
    image above the diagonal: its soft tokens see each other. ``ax=`` draws the sliding
    mask only.

    >>> fig = show_attention(ge.attention_mask(bundle, layout))   # doctest: +SKIP
    """
    from matplotlib.figure import Figure

    if not isinstance(masks, AttentionMasks):
        raise TypeError(
            "show_attention draws AttentionMasks: pass ge.attention_mask(bundle, layout)."
        )
    n = masks.num_tokens
    if ax is None:
        fig = Figure(figsize=(11, 6), layout="constrained")
        grid = fig.add_gridspec(3, 2, height_ratios=[0.4, 10, 0.6])
        strips = [fig.add_subplot(grid[0, c]) for c in range(2)]
        panels = [fig.add_subplot(grid[1, c]) for c in range(2)]
        layers_ax = fig.add_subplot(grid[2, :])
    else:
        fig, strips, panels, layers_ax = ax.figure, [None], [ax], None

    which = [("sliding_attention", masks.sliding, "mask_sliding"),
             ("full_attention", masks.full, "mask_full")][: len(panels)]  # fmt: skip
    flag = masks.use_bidirectional_attention
    for (kind, mask, gid), panel, strip in zip(which, panels, strips, strict=True):
        panel.imshow(mask, cmap="gray", vmin=0, vmax=1, interpolation="nearest", gid=gid)
        layers = masks.sliding_layers if kind == "sliding_attention" else masks.full_layers
        extra = f", window {masks.sliding_window}" if kind == "sliding_attention" else ""
        panel.set_title(f"{kind.split('_')[0]} layers {list(layers)}{extra}\n"
                        f"later keys seen: {masks.future_pairs(kind)}", fontsize=9)  # fmt: skip
        panel.set_xlabel("key position")
        panel.set_ylabel("query position")
        if kind == "sliding_attention" and masks.sliding_window < n:
            q = np.arange(masks.sliding_window - 1, n)
            panel.plot(q - masks.sliding_window + 1, q, color=OKABE_ITO["vermillion"], lw=0.8,
                       gid="window_edge")  # fmt: skip
        if strip is not None:
            strip.imshow(
                _kind_strip(masks), aspect="auto", interpolation="nearest", gid="token_kinds"
            )
            strip.set_xticks([])
            strip.set_yticks([])
    if layers_ax is not None:
        from matplotlib.colors import to_rgb

        colors = [to_rgb(OKABE_ITO["sky"] if t == "sliding_attention" else OKABE_ITO["blue"])
                  for t in masks.layer_types]  # fmt: skip
        layers_ax.imshow(
            np.array([colors]), aspect="auto", interpolation="nearest", gid="layer_types"
        )
        layers_ax.set_yticks([])
        layers_ax.set_xticks(range(len(masks.layer_types)))
        layers_ax.set_xlabel("decoder layer (light: sliding, dark: full)")
    src = "checkpoint" if masks.from_checkpoint else "set here"
    fig.suptitle(
        f"{masks.family}: use_bidirectional_attention={flag!r} ({src}), {n} tokens", fontsize=10
    )
    return fig
