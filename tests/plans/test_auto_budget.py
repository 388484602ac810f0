"""``max_soft_tokens="auto"``: the smallest Gemma 4 budget that does not shrink the image,
or the largest when every budget does. Held to transformers' own resize (what the tower
really sees at each budget), over a grid of sizes."""

from __future__ import annotations

import itertools

import pytest

import gemma_explore as ge
from gemma_explore.facts.families import get_family

SIDES = (8, 47, 48, 300, 512, 600, 1000, 1920, 3508, 10000)


def _transformers_scale(h: int, w: int, budget: int) -> float:
    from transformers.models.gemma4.image_processing_gemma4 import (
        get_aspect_ratio_preserving_size,
    )

    img = get_family("gemma4").image
    rh, rw = get_aspect_ratio_preserving_size(
        h,
        w,
        patch_size=img.patch_size,
        max_patches=budget * img.patches_per_token,
        pooling_kernel_size=img.pooling_kernel,
    )
    return min(rh / h, rw / w)


@pytest.mark.parametrize("family", ["gemma4", "gemma4_unified"])
def test_auto_is_the_brute_force_over_the_budgets(family):
    budgets = get_family(family).image.budgets
    for h, w in itertools.product(SIDES, SIDES):
        auto = ge.plan_image((h, w), family=family, max_soft_tokens="auto")
        scales = {b: _transformers_scale(h, w, b) for b in budgets}
        native = [b for b in budgets if scales[b] >= 1]
        want = native[0] if native else budgets[-1]
        assert auto.max_soft_tokens == want, (h, w, scales)
        assert auto == ge.plan_image((h, w), family=family, max_soft_tokens=want)
        assert auto.scale == pytest.approx(scales[want])
        assert auto.steps[0].startswith(f"auto: {want}" if native else "auto: every budget")
        for b in budgets:  # the scale at every budget is stated
            assert f"at budget {b}: {scales[b]:.2f}× its size" in auto.steps[1]


def test_auto_for_the_readme_photo_and_an_a4_scan():
    assert (
        ge.plan_image(ge.sample_photo(), family="gemma4", max_soft_tokens="auto").max_soft_tokens
        == 280
    )
    a4 = ge.plan_image((3508, 2480), family="gemma4", max_soft_tokens="auto")  # 300 dpi
    assert a4.max_soft_tokens == 1120 and a4.scale < 1
    assert "text 10 px tall becomes 2.6 px" in a4.steps[1]  # at 280


def test_gemma3n_has_no_auto():
    with pytest.raises(ValueError, match="no token budget"):
        ge.plan_image((600, 512), family="gemma3n", max_soft_tokens="auto")
