"""Image plans: how an image is resized, cut into patches and pooled into soft tokens, and why.

Pure arithmetic that re-derives what the transformers processors do; the tests prove it
equal to the real processors' numbers. Nothing here imports torch.

>>> from gemma_explore.plans.image import plan_image
>>> plan = plan_image((1080, 1920), family="gemma4", max_soft_tokens=280)
>>> plan.resized_size, plan.num_soft_tokens
((576, 1056), 264)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gemma_explore.facts.families import DEFAULT_FAMILY, FAMILIES, FamilySpec, get_family
from gemma_explore.media.loaders import (
    image_size,
)
from gemma_explore.plans.rules import Rule, prompt_rule, require_budget, steps_table
from gemma_explore.sizes import size_label
from gemma_explore.tables import ShownAsTable, Table

__all__ = ["ImagePlan", "gemma4_resized_size", "plan_image"]

# --------------------------------------------------------------------------- images


@dataclass(frozen=True)
class ImagePlan(ShownAsTable):
    """How one image becomes soft tokens. Sizes are (height, width) in pixels."""

    # The family whose rules made the plan: its facts, held, so no reader looks them up again.
    spec: FamilySpec = field(repr=False)
    original_size: tuple[int, int]  # what the user gave
    resized_size: tuple[int, int]  # what the vision tower sees (3n: always 768×768)
    patch_size: int  # px per patch side (3n: px per output cell of MobileNet-V5)
    patch_grid: tuple[int, int]  # patches per column, per row
    pooling_kernel: int  # patches per pooled cell side (4: 3; 3n: 1, no pooling step)
    pooled_grid: tuple[int, int]  # soft-token cells per column, per row
    num_patches: int  # real patches the encoder sees
    max_patches: int  # 16 px patches the budget allows (4: rows of pixel_values, budget × 9)
    num_padding_patches: int  # padded rows, position id (-1, -1)
    num_soft_tokens: int  # embeddings the encoder keeps = placeholders in the prompt
    max_soft_tokens: int | None  # Gemma 4's budget; None for 3n
    num_padding_soft_tokens: int  # pooled slots the pooler marks invalid
    total_tokens: int  # prompt tokens: markers + soft tokens (+ 3n's "\n\n" wrappers)
    token_area: tuple[float, float]  # px of the *original* image one soft token covers
    steps: tuple[str, ...] = field(default=(), compare=False)  # the derivation, in words
    # The pixels the plan was made from (a PIL image or array), kept so a figure can draw
    # them without loading the image again; None when planned from a size or a file header.
    image: Any = field(default=None, compare=False, repr=False)

    @property
    def family(self) -> str:
        """The family's name ("gemma3n", "gemma4", "gemma4_unified"), read off ``spec``."""
        return self.spec.name

    @property
    def scale(self) -> float:
        """How much the tower's view is of the original, side for side: the smaller of the
        two ratios (below 1: shrunk, detail lost; 1 or more: native resolution or better).

        >>> round(plan_image((3508, 2480), family="gemma4", max_soft_tokens=280).scale, 2)
        0.26
        """
        (h, w), (rh, rw) = self.original_size, self.resized_size
        return min(rh / h, rw / w)

    def _rows(self) -> list[tuple[str, Any]]:
        return [
            ("original", size_label(self.original_size)),
            ("resized", size_label(self.resized_size)),
            ("patch grid", size_label(self.patch_grid, unit=f"patches of {self.patch_size} px")),
            ("pooled grid", size_label(self.pooled_grid, unit="cells")),
            ("patches / max", f"{self.num_patches} / {self.max_patches}"),
            ("padding patches", self.num_padding_patches),
            ("soft tokens", self.num_soft_tokens),
            ("budget", self.max_soft_tokens),
            ("prompt tokens", self.total_tokens),
        ]

    def table(self) -> Table:
        return steps_table(f"ImagePlan — {self.family}", self._rows(), self.steps)

    def __repr__(self) -> str:
        return self.table().text()


def gemma4_resized_size(
    height: int, width: int, *, patch_size: int, pooling_kernel: int, max_soft_tokens: int
) -> tuple[int, int]:
    """Gemma 4's aspect-preserving target size, derived in our own words.

    Scale the image so its area is the patch budget (``max_soft_tokens × 9`` patches of
    16×16 px), then round each side *down* to a multiple of 48 px (one pooled cell).
    A side that rounds to zero becomes one cell, and the other side is then
    ``floor(long / short)`` cells, capped at the budget — so a 3×900 strip becomes
    48 × (280 × 48) px at budget 280, never more tokens than the budget.
    """
    cell = patch_size * pooling_kernel  # 48 px: one soft token's side
    budget_px = max_soft_tokens * pooling_kernel**2 * patch_size**2
    scale = math.sqrt(budget_px / (height * width))
    th = int(math.floor(height * scale / cell)) * cell
    tw = int(math.floor(width * scale / cell)) * cell
    longest = max_soft_tokens * cell  # a one-cell-high strip holds at most the budget
    if th == 0:
        th, tw = cell, min(int(math.floor(width / height)) * cell, longest)
    elif tw == 0:
        th, tw = min(int(math.floor(height / width)) * cell, longest), cell
    return th, tw


# -- images of a family with one fixed size (Gemma 3n) --------------------------------


def _squash_rule(spec: FamilySpec, h: int, w: int) -> Rule[tuple[int, int]]:
    """Every image is squashed to the family's fixed size, aspect ratio not kept."""
    rh, rw = spec.image.fixed_size
    return Rule(
        (rh, rw),
        f"Squash {size_label((h, w))} to {size_label((rh, rw))} (aspect ratio not kept; "
        f"x-scale {rw / w:.3g}, y-scale {rh / h:.3g}); rescale pixels by 1/255, no "
        "normalisation.",
    )


def _cell_grid_rule(spec: FamilySpec, size: tuple[int, int]) -> Rule[tuple[int, int]]:
    """The tower's output grid: one soft token per ``patch_size`` px cell of the squash."""
    p = spec.image.patch_size
    grid = (size[0] // p, size[1] // p)
    n = grid[0] * grid[1]
    return Rule(
        grid,
        f"The {spec.image_encoder} gives one soft token per {p}×{p} px cell: a grid of "
        f"{size_label(grid, unit='cells')} = {n} soft tokens, always.",
    )


def _cell_area_rule(
    spec: FamilySpec, h: int, w: int, grid: tuple[int, int]
) -> Rule[tuple[float, float]]:
    """Pixels of the original image one soft token covers."""
    p = spec.image.patch_size
    area = (h / grid[0], w / grid[1])
    return Rule(
        area,
        f"One soft token covers {p}×{p} px of the squash = {size_label(area)} of the original.",
    )


def _plan_fixed_image(spec: FamilySpec, h: int, w: int, pixels: Any) -> ImagePlan:
    size = _squash_rule(spec, h, w)
    grid = _cell_grid_rule(spec, size.value)
    area = _cell_area_rule(spec, h, w, grid.value)
    n = grid.value[0] * grid.value[1]
    prompt = prompt_rule(spec, n)
    return ImagePlan(
        spec=spec,
        original_size=(h, w),
        resized_size=size.value,
        patch_size=spec.image.patch_size,
        patch_grid=grid.value,
        pooling_kernel=1,
        pooled_grid=grid.value,
        num_patches=n,
        max_patches=n,
        num_padding_patches=0,
        num_soft_tokens=n,
        max_soft_tokens=None,
        num_padding_soft_tokens=0,
        total_tokens=prompt.value,
        token_area=area.value,
        steps=(size.step, grid.step, area.step, prompt.step),
        image=pixels,
    )


# -- images of a family with budgets (Gemma 4, Unified) --------------------------------


def _patch_budget_rule(spec: FamilySpec, budget: int) -> Rule[int]:
    """Patches the budget allows: budget × (patches per soft token)."""
    img = spec.image
    p, k = img.patch_size, img.pooling_kernel
    max_patches = budget * img.patches_per_token
    return Rule(
        max_patches,
        f"Budget {budget} soft tokens × {k}×{k} patches = {max_patches} patches of {p}×{p} px "
        f"= {max_patches * p * p:,} px.",
    )


def _aspect_resize_rule(
    spec: FamilySpec, h: int, w: int, budget: int, max_patches: int
) -> Rule[tuple[int, int]]:
    """Scale the area to the patch budget, each side floored to whole cells
    (:func:`gemma4_resized_size`); a side that rounds to 0 becomes one cell."""
    img = spec.image
    p, cell = img.patch_size, img.cell_px
    size = gemma4_resized_size(
        h, w, patch_size=p, pooling_kernel=img.pooling_kernel, max_soft_tokens=budget
    )
    scale = math.sqrt(max_patches * p * p / (h * w))
    step = (
        f"Scale {size_label((h, w))} by √({max_patches * p * p:,} / {h * w:,}) = {scale:.4g} → "
        f"{size_label((h * scale, w * scale))}; round each side down to a multiple of {cell} px."
    )
    if int(h * scale // cell) == 0 or int(w * scale // cell) == 0:
        step += (
            f" One side rounded to 0, so it becomes {cell} px and the other side "
            f"floor(long / short) × {cell} px, capped at {budget} × {cell} px."
        )
    return Rule(size, step)


def _patch_grid_rule(
    spec: FamilySpec, size: tuple[int, int], max_patches: int
) -> Rule[tuple[int, int]]:
    """The resized image cut into patches; pixel_values padded to the budget's rows (a
    tower) or kept as merged blocks (encoder-free, described by the pooling rule)."""
    p = spec.image.patch_size
    grid = (size[0] // p, size[1] // p)
    n = grid[0] * grid[1]
    step = (
        f"Resize (bicubic, aspect kept) to {size_label(size)} → "
        f"{size_label(grid, unit='patches')} = {n} patches"
    )
    if spec.encoder_free:
        return Rule(grid, step + f" of {p} px.")
    return Rule(
        grid,
        step + f"; pad pixel_values to {max_patches} rows ({max_patches - n} padding rows with "
        "position (-1, -1)).",
    )


def _pool_rule(spec: FamilySpec, grid: tuple[int, int], budget: int) -> Rule[tuple[int, int]]:
    """k×k patches become one soft token: pooled by the tower, or (encoder-free) merged
    into one row of raw pixels that a small embedder projects on its own."""
    img = spec.image
    k, cell = img.pooling_kernel, img.cell_px
    pooled = (grid[0] // k, grid[1] // k)
    n = pooled[0] * pooled[1]
    if spec.encoder_free:
        # Unified: no tower, no attention between blocks, so a token is exactly its block.
        return Rule(
            pooled,
            f"Merge each {k} × {k} block into one row of {cell} × {cell} × 3 = {cell * cell * 3} "
            f"raw pixel values: {size_label(pooled, unit='blocks')} = {n} rows; pad "
            f"pixel_values to {budget} rows ({budget - n} padding rows with position (-1, -1)). "
            f"Then {spec.image_encoder}: one soft token per row, nothing mixes pixels across "
            f"blocks: {n} soft tokens.",
        )
    return Rule(
        pooled,
        f"Pool {k}×{k} patches → {size_label(pooled, unit='cells')} = {n} soft tokens "
        f"({budget - n} of the {budget} pooled slots are padding and are stripped).",
    )


def _plan_budget_image(
    spec: FamilySpec, h: int, w: int, max_soft_tokens: int | None, pixels: Any
) -> ImagePlan:
    budget = require_budget(max_soft_tokens, family=spec)
    max_patches = _patch_budget_rule(spec, budget)
    size = _aspect_resize_rule(spec, h, w, budget, max_patches.value)
    grid = _patch_grid_rule(spec, size.value, max_patches.value)
    pooled = _pool_rule(spec, grid.value, budget)
    num_patches = grid.value[0] * grid.value[1]
    n = pooled.value[0] * pooled.value[1]
    prompt = prompt_rule(spec, n)
    return ImagePlan(
        spec=spec,
        original_size=(h, w),
        resized_size=size.value,
        patch_size=spec.image.patch_size,
        patch_grid=grid.value,
        pooling_kernel=spec.image.pooling_kernel,
        pooled_grid=pooled.value,
        num_patches=num_patches,
        max_patches=max_patches.value,
        num_padding_patches=max_patches.value - num_patches,
        num_soft_tokens=n,
        max_soft_tokens=budget,
        num_padding_soft_tokens=budget - n,
        total_tokens=prompt.value,
        token_area=(h / pooled.value[0], w / pooled.value[1]),
        steps=(max_patches.step, size.step, grid.step, pooled.step, prompt.step),
        image=pixels,
    )


AUTO = "auto"  # max_soft_tokens="auto": the smallest budget that keeps native resolution


def recommend_budget(image: Any, *, family: str | FamilySpec | Any = DEFAULT_FAMILY) -> ImagePlan:
    """The plan at the budget ``max_soft_tokens="auto"`` picks: the smallest whose resize
    does not shrink the image (it sees every pixel at the fewest tokens), or the largest
    when every budget shrinks it (the least detail lost). The steps say why and give the
    scale at every budget, with what it does to 10 px text.

    >>> recommend_budget((600, 512), family="gemma4").max_soft_tokens
    280
    """
    spec = get_family(family)
    if not spec.image.budgets:
        raise ValueError(f"{spec.display_name} has no token budget to recommend.")
    h, w = image_size(image)
    pixels = image if hasattr(image, "getbands") or isinstance(image, np.ndarray) else None
    return _auto_budget_image(spec, h, w, pixels)


def _auto_budget_image(spec: FamilySpec, h: int, w: int, pixels: Any) -> ImagePlan:
    plans = [_plan_budget_image(spec, h, w, b, pixels) for b in spec.image.budgets]
    native = [p for p in plans if p.scale >= 1]
    chosen = native[0] if native else plans[-1]
    if native:
        why = (
            f"auto: {chosen.max_soft_tokens} is the smallest budget at which this "
            f"{size_label((h, w))} image is not shrunk ({chosen.num_soft_tokens} soft tokens)"
        )
    else:
        why = (
            f"auto: every budget shrinks this {size_label((h, w))} image; the largest, "
            f"{chosen.max_soft_tokens}, shrinks it least ({chosen.scale:.2f}×)"
        )
    scales = "; ".join(
        f"at budget {p.max_soft_tokens}: {p.scale:.2f}× its size"
        + (
            f", so text 10 px tall becomes {10 * p.scale:.1f} px"
            if p.scale < 1
            else " (not shrunk: every pixel kept)"
        )
        for p in plans
    )
    return ImagePlan(
        **{k: getattr(chosen, k) for k in chosen.__dataclass_fields__ if k != "steps"},
        steps=(why, f"scale per budget: {scales}", *chosen.steps),
    )


def plan_image(
    image: Any,
    *,
    family: str | FamilySpec | Any = DEFAULT_FAMILY,
    max_soft_tokens: int | str | None = None,
) -> ImagePlan:
    """Plan how an image becomes soft tokens.

    ``image`` is any image input (a path, bytes, file, PIL image, array (H, W[, C]) or
    a ``(height, width)`` pair); files are read only as far as their header.
    ``family`` is a name, a spec or a loaded bundle (default: ``DEFAULT_FAMILY``).
    ``max_soft_tokens`` is the family's budget (Gemma 4: 70, 140, 280, 560 or 1120), or
    ``"auto"``: the smallest budget that does not shrink the image, else the largest (the
    steps give the scale at every budget).

    >>> plan_image((768, 1024), family="gemma3n").num_soft_tokens
    256
    >>> plan_image((3508, 2480), family="gemma4", max_soft_tokens="auto").max_soft_tokens
    1120
    """
    spec = get_family(family)
    h, w = image_size(image)
    # Keep in-memory pixels for figures; never load a file's pixels just to plan.
    pixels = image if hasattr(image, "getbands") or isinstance(image, np.ndarray) else None
    if spec.image.fixed_size is None:
        if max_soft_tokens == AUTO:
            return _auto_budget_image(spec, h, w, pixels)
        return _plan_budget_image(spec, h, w, max_soft_tokens, pixels)
    if max_soft_tokens is not None:
        budgeted = next(f.name for f in FAMILIES.values() if f.image.budgets)
        raise ValueError(
            f"{spec.display_name} has no token budget: every image becomes "
            f"{spec.image.fixed_soft_tokens} soft tokens. Drop max_soft_tokens, or use "
            f"family={budgeted!r}."
        )
    return _plan_fixed_image(spec, h, w, pixels)
