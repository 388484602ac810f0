"""Encoder and prefill FLOPs (gemma_explore/serving/flops.py).

The meta-device counts equal FlopCounterMode running the tiny models' own
get_image_features / get_audio_features on CPU with the real processors' outputs, and
at released shapes they equal arithmetic written out here.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from gemma_explore.facts.released import released_config
from gemma_explore.models.tiny import build_tiny_model, build_tiny_processor, tiny_config
from gemma_explore.serving.flops import encoder_flops, flops_report, flops_table, prefill_flops


def _counted(fn) -> int:
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


@pytest.fixture(scope="module")
def eager_tiny():
    """Fresh tiny models with eager attention (so their attention matmuls count too)."""
    out = {}
    for family in ("gemma3n", "gemma4", "gemma4_unified"):
        model = build_tiny_model(family)
        model.set_attn_implementation("eager")
        out[family] = (model.model, build_tiny_processor(family))
    return out


@pytest.mark.parametrize(
    ("family", "budget"),
    [
        ("gemma3n", None),
        ("gemma4", 70),
        ("gemma4", 280),
        ("gemma4_unified", 70),
        ("gemma4_unified", 140),
    ],
)
def test_image_flops_equal_the_tiny_models_own_forward(eager_tiny, photo, family, budget):
    """At the worst case the budget prices: an image whose 48 px cells fill the budget
    (the tower always runs on budget × 9 patches; the projection on the real tokens)."""
    from gemma_explore.serving.flops import _grid

    inner, processor = eager_tiny[family]
    kwargs = {} if budget is None else {"max_soft_tokens": budget}
    image = photo
    if budget is not None:
        rows, cols = _grid(budget)  # patches: 16 px each
        image = np.full((rows * 16, cols * 16, 3), 128, np.uint8)
    batch = processor.image_processor(images=[image], return_tensors="pt", **kwargs)
    args = [batch["pixel_values"]]
    if "image_position_ids" in batch:
        args.append(batch["image_position_ids"])
    real = _counted(lambda: inner.get_image_features(*args))
    tokens, ours = encoder_flops(tiny_config(family), "image", max_soft_tokens=budget)
    assert ours == real > 0
    assert tokens == (budget or 256)


@pytest.mark.parametrize("family", ["gemma3n", "gemma4", "gemma4_unified"])
@pytest.mark.parametrize("seconds", [1.0, 2.5])
def test_audio_flops_equal_the_tiny_models_own_forward(eager_tiny, family, seconds):
    inner, processor = eager_tiny[family]
    wave = np.zeros(int(seconds * 16_000), np.float32)
    batch = processor.feature_extractor([wave], sampling_rate=16_000, return_tensors="pt")
    feats = batch["input_features"]
    if family == "gemma3n":  # transformers passes the inverted mask (True = padding)
        real = _counted(lambda: inner.get_audio_features(feats, ~batch["input_features_mask"]))
    elif family == "gemma4":
        real = _counted(lambda: inner.get_audio_features(feats, batch["input_features_mask"]))
    else:
        real = _counted(lambda: inner.get_audio_features(feats, batch["input_features_mask"]))
    _, ours = encoder_flops(tiny_config(family), "audio clip", seconds=seconds)
    assert ours == real > 0


def test_prefill_flops_equal_the_tiny_language_models_own_forward(eager_tiny):
    inner, _ = eager_tiny["gemma4"]
    ids = torch.randint(5, 1000, (1, 64))
    real = _counted(lambda: inner.language_model(input_ids=ids, use_cache=False))
    assert prefill_flops(tiny_config("gemma4"), 64) == real > 0


def _vit(n: int, budget: int, width: int, inter: int, layers: int, text: int) -> int:
    """Gemma 4's vision path for one image, written out (2 FLOPs per multiply-add):
    the 768 → width patch projection on n patches; per layer q/k/v/o (4 width²), the
    scores and the weighted sum (2 × n² × width) and the gated MLP (3 × inter × width);
    the pooler's average ((budget × n) @ (n × width)); the projection to the text width."""
    per_layer = 2 * n * 4 * width * width + 2 * 2 * n * n * width + 2 * n * 3 * inter * width
    return (
        2 * n * 768 * width
        + layers * per_layer
        + 2 * budget * n * width
        + 2 * budget * width * text
    )


@pytest.mark.parametrize("budget", [70, 1120])
def test_image_flops_scale_to_the_released_31b_as_written_out(budget):
    config = released_config("google/gemma-4-31B-it")
    _, ours = encoder_flops(config, "image", max_soft_tokens=budget)
    assert ours == _vit(9 * budget, budget, 1152, 4304, 27, 5376)


def test_e2b_tower_is_the_small_one():
    _, ours = encoder_flops(released_config("google/gemma-4-E2B-it"), "video frame")
    assert ours == _vit(9 * 70, 70, 768, 3072, 16, 1536)
    # A hub id is read the same way (local cache copy, else the built-in facts).
    assert encoder_flops("google/gemma-4-E2B-it", "video frame") == (70, ours)
    with pytest.raises(ValueError, match="neither a released checkpoint id"):
        encoder_flops("someone/unknown", "image")


@pytest.mark.slow
def test_report_and_table_for_a_released_checkpoint():
    r = flops_report("google/gemma-4-E2B-it")
    assert [c.setting for c in r.costs if c.item == "image"] == [70, 140, 280, 560, 1120]
    assert r.cost("image", 1120).flops > 16 * r.cost("image", 70).flops  # n² attention
    assert r.cost("audio clip", 30.0).soft_tokens == 750
    with pytest.raises(ValueError, match="no image at"):
        r.cost("image", 75)
    table = flops_table(("google/gemma-4-E2B-it",)).text()
    assert "gemma-4-E2B-it" in table and "prefill" in table
    from gemma_explore.viz.flops import show_flops

    fig = show_flops([r])
    ax = fig.axes[0]
    assert len([p for p in ax.patches if p.get_gid() == "flops_image_high"]) == 1
    assert any(t.get_gid() == "flops_ratio" for t in ax.texts)
