"""A look inside the real encoders: the vision pooler's valid mask and embedding norms.

>>> import gemma_explore as ge
>>> pooled = ge.vision_pooling(ge.load("tiny-gemma4"), (300, 500))    # doctest: +SKIP
>>> pooled.num_valid == ge.plan_image((300, 500), family="gemma4").num_soft_tokens  # doctest: +SKIP
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .plans import ImagePlan, plan_image

__all__ = ["PooledTokens", "vision_pooling"]


@dataclass(frozen=True)
class PooledTokens:
    """What the vision tower's pooler produced for one image."""

    family: str
    plan: ImagePlan = field(repr=False)  # the plan of the same image and budget
    slots: int  # pooled slots the pooler filled (Gemma 4: the budget; 3n: 256)
    valid: np.ndarray = field(repr=False)  # (slots,) bool: True = real soft token
    norms: np.ndarray = field(repr=False)  # (slots,) L2 norm of each slot's embedding
    grid: tuple[int, int]  # (rows, cols) the valid tokens form on the image

    @property
    def num_valid(self) -> int:
        return int(self.valid.sum())

    @property
    def agrees(self) -> bool:
        return self.num_valid == self.plan.num_soft_tokens


def vision_pooling(bundle: Any, image: Any, *, max_soft_tokens: int | None = None) -> PooledTokens:
    """Run the bundle's real vision tower and read its pooler's output.

    Gemma 4: the pooler averages 3×3 patches into ``budget`` slots and returns a mask of
    which slots hold a real cell (the rest are padding, stripped before the language
    model). Gemma 3n: MobileNet-V5 gives 16×16 = 256 tokens, all real.
    """
    import torch

    import gemma_explore as ge

    from .inference.hf import model_inputs

    pil = ge.load_image(image)
    plan = plan_image(pil, family=bundle.family, max_soft_tokens=max_soft_tokens)
    prepared = ge.prepare_inputs(bundle, "", images=[pil], max_soft_tokens=max_soft_tokens)
    inputs = model_inputs(bundle, prepared)
    inner = bundle.model.model
    with torch.inference_mode():
        if bundle.family == "gemma4":
            captured: dict[str, Any] = {}

            def hook(_module, _args, output):
                captured["hidden"], captured["mask"] = output  # (1, slots, d), (1, slots)

            handle = inner.vision_tower.pooler.register_forward_hook(hook)
            try:
                inner.get_image_features(inputs["pixel_values"], inputs["image_position_ids"])
            finally:
                handle.remove()
            valid = captured["mask"][0].cpu().numpy().astype(bool)  # (slots,)
            norms = captured["hidden"][0].float().norm(dim=-1).cpu().numpy()  # (slots,)
        else:
            out = inner.get_image_features(inputs["pixel_values"])
            feats = out.pooler_output[0]  # (256, hidden)
            valid = np.ones(feats.shape[0], dtype=bool)
            norms = feats.float().norm(dim=-1).cpu().numpy()
    return PooledTokens(
        family=bundle.family,
        plan=plan,
        slots=int(valid.shape[0]),
        valid=valid,
        norms=norms,
        grid=plan.pooled_grid,
    )
