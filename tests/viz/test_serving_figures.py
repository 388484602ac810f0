"""The serving and attention figures draw the plan's and the masks' own numbers."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

import gemma_explore as ge
from gemma_explore.inside.attention import attention_mask
from gemma_explore.serving.plan import plan_serving
from gemma_explore.viz.attention import show_attention
from gemma_explore.viz.serving import show_serving
from gemma_explore.vllm_versions import SUPPORTED


def _gid(fig, gid):
    return [
        a
        for ax in fig.axes
        for a in list(ax.patches) + list(ax.images) + list(ax.lines)
        if a.get_gid() == gid
    ]


def test_serving_figure_stacks_the_plans_bytes():
    plan = plan_serving("tiny-gemma4", max_model_len=2048, limit_mm_per_prompt={"video": 0})
    fig = show_serving(plan, gpu_memory_gib=1.0, gpu_memory_utilization=0.9)
    (w,) = _gid(fig, "mem_weights")
    (kv,) = _gid(fig, "mem_kv")
    (enc,) = _gid(fig, "mem_encoder_cache")
    (room,) = _gid(fig, "mem_headroom")
    scale = {"GiB": 2**30, "MiB": 2**20}[fig.axes[0].get_ylabel()]
    assert w.get_height() == pytest.approx(plan.weights_bytes / scale)
    assert kv.get_height() == pytest.approx(plan.vllm_kv_bytes_per_request / scale)
    assert enc.get_height() == pytest.approx(plan.encoder_cache_bytes / scale)
    total = w.get_height() + kv.get_height() + enc.get_height() + room.get_height()
    assert total * scale == pytest.approx(0.9 * 2**30)
    bars = [p for p in _gid(fig, "item_tokens")]
    assert sorted(b.get_width() for b in bars) == sorted(
        plan.max_tokens_per_item[m] * plan.max_items_per_prompt[m] for m in plan.max_tokens_per_item
    )
    (line,) = _gid(fig, "max_model_len")
    assert line.get_xdata()[0] == 2048


def test_attention_figure_draws_the_masks(tiny4, photo):
    msgs = [
        {
            "role": "user",
            "content": [{"type": "image", "image": photo}, {"type": "text", "text": "Hi"}],
        }
    ]
    layout = ge.layout_prompt(msgs, bundle=tiny4, max_soft_tokens=70)
    masks = attention_mask(layout, use_bidirectional_attention="vision", bundle=tiny4)
    fig = show_attention(masks)
    (s,) = _gid(fig, "mask_sliding")
    (f,) = _gid(fig, "mask_full")
    np.testing.assert_array_equal(np.asarray(s.get_array()), masks.sliding)
    np.testing.assert_array_equal(np.asarray(f.get_array()), masks.full)
    (layers,) = _gid(fig, "layer_types")
    assert np.asarray(layers.get_array()).shape[1] == len(masks.layer_types)
    assert _gid(fig, "window_edge")


def test_serving_figure_names_the_gpu_it_assumes():
    """The GPU's size and utilisation are the caller's, and the chart says them."""
    plan = plan_serving("tiny-gemma4", max_model_len=2048)
    fig = show_serving(plan, gpu_memory_gib=24, gpu_memory_utilization=0.85)
    assert "24 GiB GPU × 0.85 = 20.4 GiB" in fig.axes[0].get_title()
    (room,) = _gid(fig, "mem_headroom")
    scale = {"GiB": 2**30, "MiB": 2**20}[fig.axes[0].get_ylabel()]
    parts = sum(p.get_height() for p in fig.axes[0].patches) * scale
    assert parts == pytest.approx(24 * 0.85 * 2**30)
    tiny = show_serving(plan, gpu_memory_gib=0.001)
    assert "does not fit" in tiny.axes[0].get_title()
    assert "no GPU given" in show_serving(plan).axes[0].get_title()


@pytest.mark.parametrize("version", SUPPORTED)
def test_serving_figure_names_the_release_and_its_own_share(version):
    """Without a gpu_memory_utilization the bar is measured against what the plan's release
    uses with the flag unset (the plan's memory_fit), and the title names that release;
    with one, the title says it is yours."""
    plan = plan_serving("tiny-gemma4", max_model_len=2048, vllm_version=version)
    fig = show_serving(plan, gpu_memory_gib=24)
    title = fig.axes[0].get_title().replace("\n", " ")  # filled to the bar's width
    assert f"vLLM {version}" in title
    room = plan.memory_fit(24).room_bytes
    scale = {"GiB": 2**30, "MiB": 2**20}[fig.axes[0].get_ylabel()]
    assert sum(p.get_height() for p in fig.axes[0].patches) * scale == pytest.approx(room)
    assert f"= {room / 2**30:,.1f} GiB" in title
    if plan.vllm.kv_sizing == "extensible":
        assert "unset, extensible KV cache" in title
    mine = show_serving(plan, gpu_memory_gib=24, gpu_memory_utilization=0.5).axes[0].get_title()
    assert f"24 GiB GPU × 0.5 = 12.0 GiB (yours, vLLM {version})" in mine.replace("\n", " ")
