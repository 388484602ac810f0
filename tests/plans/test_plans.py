"""Plans equal what the real processors and encoders do.

The property tests run the real transformers processors on real images and clips
drawn by hypothesis (a few thousand cases in all) and compare every count.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from PIL import Image

import gemma_explore as ge
from gemma_explore.plans.image import gemma4_resized_size
from gemma_explore.plans.video import format_timestamp, timestamp_tokens
from tests.conftest import examples
from tests.parity.vllm_side import USE_VLLM, assert_vllm_side

# The plans held to the installed transformers processor: run again in .venv-demo, which
# takes the newest transformers (make test-demo-env).
pytestmark = pytest.mark.transformers_version

BUDGETS = (70, 140, 280, 560, 1120)
MAX_AREA = 16_000_000  # keeps each real processor call well under a second

# Sides 1–8192; the second side is bounded so the image stays under MAX_AREA pixels,
# and a third of the draws are thin strips (extreme aspect ratios).
_side = st.integers(1, 8192)


@st.composite
def image_sizes(draw):
    if draw(st.integers(0, 2)) == 0:
        short = draw(st.integers(1, 16))
        long = draw(st.integers(1, 8192))
        return (short, long) if draw(st.booleans()) else (long, short)
    h = draw(_side)
    w = draw(st.integers(1, min(8192, MAX_AREA // h)))
    return h, w


def _run_gemma4(processor, h, w, budget):
    image = Image.new("RGB", (w, h), (10, 200, 30))
    out = processor(
        text=[processor.image_token],
        images=[[image]],
        images_kwargs={"max_soft_tokens": budget},
        return_tensors="pt",
    )
    pos = out["image_position_ids"][0]
    real = (pos != -1).all(dim=-1)
    grid = (int(pos[real][:, 1].max()) + 1, int(pos[real][:, 0].max()) + 1)
    n_ids = int((out["input_ids"][0] == processor.image_token_id).sum())
    return int(real.sum()), grid, n_ids, out["pixel_values"].shape[1]


@pytest.mark.slow
@pytest.mark.parametrize("family", ["gemma4", "gemma4_unified"])
@pytest.mark.parametrize("budget", BUDGETS)
@settings(max_examples=examples(1.0))
@given(size=image_sizes())
@example(size=(3, 900)).via("the public 3×900 report")
@example(size=(1, 1)).via("smallest image")
@example(size=(1, 8192)).via("thinnest strip")
@example(size=(8192, 1)).via("tallest strip")
@example(size=(1080, 1920)).via("a photo")
@example(size=(50, 50)).via("small images are upscaled")
def test_gemma4_image_plan_equals_the_processor(tiny4, tinyu, family, budget, size):
    """Gemma 4's processor gives a position id per 16 px patch (3×3 of them pool into one
    token); Unified's, one per merged 48 px block (one token each), padded to the budget."""
    h, w = size
    bundle = {"gemma4": tiny4, "gemma4_unified": tinyu}[family]
    plan = ge.plan_image(size, family=family, max_soft_tokens=budget)
    real, grid, n_ids, padded = _run_gemma4(bundle.processor, h, w, budget)
    assert plan.num_soft_tokens == n_ids <= budget
    assert plan.total_tokens == n_ids + 2
    if family == "gemma4":
        assert plan.num_patches == real and plan.patch_grid == grid
        assert plan.num_soft_tokens == real // 9
        assert plan.max_patches == padded
        assert plan.num_padding_patches == padded - real
    else:
        assert plan.num_soft_tokens == real and plan.pooled_grid == grid
        assert padded == budget
        assert plan.num_padding_soft_tokens == budget - real


@pytest.mark.parametrize("family", ["gemma4", "gemma4_unified"])
@pytest.mark.parametrize("budget", BUDGETS)
@settings(max_examples=examples(1.3))
@given(h=st.integers(1, 8192), w=st.integers(1, 8192))
def test_gemma4_resize_equals_transformers_arithmetic_on_every_size(family, budget, h, w):
    """The full 1–8192 square, against the family's own transformers module (Unified
    carries its own copy of the size function), no pixels."""
    module = importlib.import_module(f"transformers.models.{family}.image_processing_{family}")
    ours = gemma4_resized_size(h, w, patch_size=16, pooling_kernel=3, max_soft_tokens=budget)
    assert ours == module.get_aspect_ratio_preserving_size(
        height=h, width=w, patch_size=16, max_patches=budget * 9, pooling_kernel_size=3
    )


def test_gemma4_8192_square_runs_through_the_processor(tiny4):
    plan = ge.plan_image((8192, 8192), family="gemma4", max_soft_tokens=1120)
    real, grid, n_ids, _ = _run_gemma4(tiny4.processor, 8192, 8192, 1120)
    assert (plan.num_patches, plan.patch_grid, plan.num_soft_tokens) == (real, grid, n_ids)


@pytest.mark.slow
@settings(max_examples=examples(0.5))
@given(size=image_sizes())
def test_gemma3n_image_plan_equals_the_processor(tiny3n, size):
    h, w = size
    p = tiny3n.processor
    out = p(text=[p.image_token], images=[[Image.new("RGB", (w, h))]], return_tensors="pt")
    plan = ge.plan_image(size, family="gemma3n")
    assert tuple(out["pixel_values"].shape[-2:]) == plan.resized_size == (768, 768)
    assert int((out["input_ids"][0] == p.image_token_id).sum()) == plan.num_soft_tokens == 256
    assert plan.token_area == pytest.approx((h / 16, w / 16))


def test_gemma3n_vision_tower_gives_256_tokens(tiny3n, photo):
    prepared = ge.prepare_inputs("", images=[photo], bundle=tiny3n)
    with torch.inference_mode():
        out = tiny3n.model.model.get_image_features(prepared.to_model(tiny3n.model)["pixel_values"])
    assert out.pooler_output.shape[1] == ge.plan_image(photo, family="gemma3n").num_soft_tokens


@pytest.mark.parametrize(
    ("size", "budget"),
    [
        ((1080, 1920), 280),
        ((3, 900), 280),
        ((300, 500), 70),
        ((47, 2000), 140),
        ((1, 1), 560),
        ((768, 1024), 1120),
    ],
)
def test_gemma4_vision_tower_valid_cells_equal_the_plan(tiny4, size, budget):
    """Model side: the real pooler's valid mask keeps exactly num_soft_tokens cells."""
    report = ge.check_image_parity(size, max_soft_tokens=budget, bundle=tiny4, use_vllm=USE_VLLM)
    assert_vllm_side(report, tiny4)
    plan = ge.plan_image(size, family="gemma4", max_soft_tokens=budget)
    assert report.encoder_count == plan.num_soft_tokens


# ------------------------------------------------------------------------ audio


def _run_audio(processor, n):
    wave = np.random.RandomState(n % 1000).uniform(-0.1, 0.1, n).astype(np.float32)
    out = processor(text=[processor.audio_token], audio=[wave], return_tensors="pt")
    n_ids = int((out["input_ids"][0] == processor.audio_token_id).sum())
    return out, n_ids


@pytest.mark.slow
@pytest.mark.parametrize("family", ["gemma3n", "gemma4"])
@settings(max_examples=examples(0.5))
@given(n=st.integers(1, 45 * 16_000))
@example(n=38_560).via("golden")
@example(n=480_000).via("exactly 30 s")
@example(n=480_001).via("just over 30 s")
@example(n=161).via("first real frame (Gemma 4)")
@example(n=513).via("first real frame (Gemma 3n)")
def test_audio_plan_equals_the_processor(tiny3n, tiny4, family, n):
    bundle = {"gemma3n": tiny3n, "gemma4": tiny4}[family]
    out, n_ids = _run_audio(bundle.processor, n)
    plan = ge.plan_audio(n, family=family)
    assert plan.num_feature_frames == out["input_features"].shape[1]
    assert plan.num_valid_frames == int(out["input_features_mask"][0].sum())
    assert plan.num_soft_tokens == n_ids
    assert plan.truncated == (n > 480_000)


def test_zero_samples():
    assert ge.plan_audio(0, family="gemma4").num_soft_tokens == 0
    assert ge.plan_audio(0, family="gemma3n").num_soft_tokens == 188


@pytest.mark.parametrize(
    ("samples", "tokens"),
    [(38_560, 60), (48_000, 75), (48_800, 76), (99_360, 155), (640_000, 750)],
)
def test_gemma4_golden_audio_values(samples, tokens):
    assert ge.plan_audio(samples, family="gemma4").num_soft_tokens == tokens


@pytest.mark.parametrize("seconds", [0.05, 0.5, 1.0, 2.41, 7.3, 15.0, 29.99, 30.0, 31.0, 45.0])
def test_gemma3n_encoder_tokens_equal_the_real_audio_tower(tiny3n, seconds):
    n = int(seconds * 16_000)
    report = ge.check_audio_parity(n, bundle=tiny3n, use_vllm=USE_VLLM)
    assert_vllm_side(report, tiny3n)
    plan = ge.plan_audio(n, family="gemma3n")
    assert report.encoder_count == plan.num_encoder_tokens
    # The slots come from transformers' processor, the real tokens from the tower: the
    # plan's padding and dropped counts must split the one against the other.
    wave = np.random.RandomState(0).randn(n).astype(np.float32) * 0.1
    rate = tiny3n.spec.audio.sampling_rate
    ids = list(ge.prepare_inputs("Listen.", audios=[(wave, rate)], bundle=tiny3n).input_ids)
    slots = ids.count(tiny3n.spec.id_of(tiny3n.spec.audio_token))
    assert plan.num_soft_tokens == slots
    assert plan.num_padding_soft_tokens == max(slots - report.encoder_count, 0)
    assert plan.dropped_tokens == max(report.encoder_count - slots, 0)


@pytest.mark.parametrize("seconds", [0.5, 2.41, 12.0, 30.0, 40.0])
def test_gemma4_audio_tower_valid_tokens_equal_the_plan(tiny4, seconds):
    n = int(seconds * 16_000)
    report = ge.check_audio_parity(n, bundle=tiny4, use_vllm=USE_VLLM)
    assert_vllm_side(report, tiny4)
    assert report.encoder_count == ge.plan_audio(n, family="gemma4").num_soft_tokens


def test_stereo_and_other_rates_are_recorded():
    t = np.arange(44_100 * 2) / 44_100
    stereo = np.stack([np.sin(2 * np.pi * 220 * t), np.sin(2 * np.pi * 330 * t)]).astype(np.float32)
    plan = ge.plan_audio(stereo, family="gemma4", sampling_rate=44_100)
    assert plan.resampled and plan.sampling_rate == 44_100 and plan.downmixed_channels == 2
    assert plan.num_samples == 32_000
    assert any("Resample" in s for s in plan.steps) and any("mono" in s for s in plan.steps)


# ------------------------------------------------------------------------ video


@pytest.mark.parametrize(("frames", "fps"), [(12, 6.0), (40, 6.0), (300, 30.0), (1, 1.0)])
def test_video_plan_equals_the_processor(tiny4, frames, fps):
    video = np.random.RandomState(frames).randint(0, 255, (frames, 72, 128, 3), np.uint8)
    plan = ge.plan_video(video, fps=fps)
    layout = ge.layout_prompt(
        [{"role": "user", "content": [{"type": "video", "video": video, "fps": fps}]}], bundle=tiny4
    )
    (ph,) = [p for p in layout.placeholders if p.modality == "video"]
    assert ph.num_embeds == plan.num_soft_tokens
    stamps = [s.text.strip() for s in layout.segments if s.kind == "timestamp"]
    assert stamps == list(plan.timestamps)
    assert len(plan.frame_indices) == min(frames, 32)
    # The plan's prompt tokens are what the video adds to a real prompt, timestamps included.
    assert layout.counts()["timestamp"] == plan.num_timestamp_tokens
    text_only = ge.layout_prompt([{"role": "user", "content": []}], bundle=tiny4)
    assert layout.num_tokens - text_only.num_tokens == plan.total_tokens
    assert plan.total_tokens == plan.num_soft_tokens + plan.num_markers + plan.num_timestamp_tokens


@pytest.mark.parametrize("seconds", [[0, 1, 59], [61, 3599, 5999, 6000, 36_000]])
def test_timestamp_text_costs_one_token_per_character(tiny4, seconds):
    # Whatever vocabulary the bundle holds (the stand-in or Gemma's), "mm:ss " and the
    # joining spaces are one token per character, even past 99 minutes ("100:00").
    spec, tok = tiny4.spec, tiny4.processor.tokenizer
    stamps = [format_timestamp(s) for s in seconds]
    text = " ".join(f"{t} {spec.boi_token}{spec.eoi_token}" for t in stamps)
    ids = tok.encode(text, add_special_tokens=False)
    markers = {spec.id_of(spec.boi_token), spec.id_of(spec.eoi_token)}
    assert sum(i not in markers for i in ids) == timestamp_tokens(stamps)


def test_a_minute_of_video_costs_32_frames():
    plan = ge.plan_video(60 * 24, fps=24, frame_size=(720, 1280))
    assert len(plan.frame_indices) == 32
    assert plan.timestamps[-1] == "00:58"
    assert plan.num_soft_tokens == 32 * plan.soft_tokens_per_frame


# -------------------------------------------------------------------- bad input


@pytest.mark.parametrize("size", [(0, 10), (10, 0), (-5, 10)])
def test_zero_or_negative_sizes(size):
    with pytest.raises(ValueError, match="positive"):
        ge.plan_image(size, family="gemma4")


@pytest.mark.parametrize("thing", [3.5, None, {"h": 1}])
def test_non_images(thing):
    with pytest.raises(ValueError, match="PIL image"):
        ge.plan_image(thing, family="gemma4")


def test_a_missing_file_says_so():
    with pytest.raises(ge.MediaError, match="No image file at photo.jpg"):
        ge.plan_image("photo.jpg", family="gemma4")


@pytest.mark.parametrize("budget", [0, 100, 281, 2240, "280", True])
def test_unsupported_budgets_list_the_valid_ones(budget):
    with pytest.raises(ValueError, match=r"70, 140, 280, 560, 1120"):
        ge.plan_image((100, 100), family="gemma4", max_soft_tokens=budget)


def test_budget_for_gemma3n_is_explained():
    with pytest.raises(ValueError, match="256"):
        ge.plan_image((100, 100), family="gemma3n", max_soft_tokens=280)


def test_empty_audio():
    with pytest.raises(ValueError, match="empty"):
        ge.plan_audio(np.zeros(0, np.float32), family="gemma4")


def test_all_nan_audio():
    with pytest.raises(ValueError, match="NaN"):
        ge.plan_audio(np.full(1000, np.nan, np.float32), family="gemma4")


def test_some_nan_audio_is_zeroed_and_counted():
    wave = np.ones(16_000, np.float32)
    wave[:10] = np.nan
    assert ge.plan_audio(wave, family="gemma4").num_soft_tokens == 25


def test_silent_audio_still_costs_tokens():
    plan = ge.plan_audio(np.zeros(16_000, np.float32), family="gemma4")
    assert plan.silent and plan.num_soft_tokens == 25


def test_over_long_audio_is_truncated_and_said_so():
    plan = ge.plan_audio(45 * 16_000, family="gemma3n")
    assert plan.truncated and plan.samples_used == 480_000
    assert any("30 s" in s for s in plan.steps)


def test_video_for_gemma3n():
    with pytest.raises(ValueError, match="no video"):
        ge.plan_video(10, fps=10, frame_size=(64, 64), family="gemma3n")


def test_unknown_family():
    with pytest.raises(ValueError, match="gemma3n, gemma4"):
        ge.plan_image((10, 10), family="gemma5")


# -------------------------------------------------------------------- reprs


def test_reprs_show_the_steps():
    plan = ge.plan_image((1080, 1920), family="gemma4")
    text, page = repr(plan), plan._repr_html_()
    assert "264" in text and "steps" in text and "<ol>" in page
    assert len(plan.steps) >= 4
    assert "256" in repr(ge.plan_image((10, 10), family="gemma3n"))
    assert "<table>" in ge.plan_audio(16_000, family="gemma3n")._repr_html_()


def test_require_budget_reads_the_family_it_is_given(tiny3n):
    from gemma_explore.facts.families import DEFAULT_FAMILY
    from gemma_explore.plans.rules import require_budget

    assert require_budget(None) == DEFAULT_FAMILY.image.default_budget
    with pytest.raises(ValueError, match="Drop max_soft_tokens"):
        require_budget(280, family=tiny3n)  # a bundle gives its family


def test_plans_default_to_the_default_family():
    from gemma_explore.facts.families import DEFAULT_FAMILY

    assert ge.plan_image((480, 640)) == ge.plan_image((480, 640), family=DEFAULT_FAMILY.name)
    assert ge.plan_audio(48_000) == ge.plan_audio(48_000, family=DEFAULT_FAMILY.name)
