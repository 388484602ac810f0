"""Figures are checked for structure, not pixels: the drawn artists match the plans."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure

import gemma_explore as ge


def _artists(fig, gid):
    found = []
    for ax in fig.axes:
        for art in list(ax.collections) + list(ax.images) + list(ax.patches) + list(ax.lines):
            if art.get_gid() == gid:
                found.append(art)
    return found


def _one(fig, gid):
    (art,) = _artists(fig, gid)
    return art


@pytest.mark.parametrize(
    ("size", "budget"),
    [((1080, 1920), 280), ((300, 500), 70), ((3, 900), 280), ((2000, 500), 1120)],
)
def test_gemma4_patch_grid_lines_equal_the_patch_grid(size, budget):
    plan = ge.plan_image(size, family="gemma4", max_soft_tokens=budget)
    fig = ge.show_patch_grid(size, family="gemma4", max_soft_tokens=budget)
    assert isinstance(fig, Figure)
    patch_lines = _one(fig, "patch_lines")
    rows, cols = plan.patch_grid
    segs = patch_lines.get_segments()
    vertical = [s for s in segs if s[0][0] == s[1][0]]
    horizontal = [s for s in segs if s[0][1] == s[1][1]]
    assert (len(horizontal) - 1, len(vertical) - 1) == (rows, cols)
    token_segs = _one(fig, "token_lines").get_segments()
    assert len(token_segs) == plan.pooled_grid[0] + plan.pooled_grid[1] + 2
    # Hatched padding: its area, in squares of one soft token's k² rows, times k², is the
    # number of padding patches (rows of pixel_values).
    pad = _one(fig, "padding_patches")
    area = sum(abs(np.prod(np.ptp(p.vertices, axis=0))) for p in pad.get_paths())
    assert round(area) * plan.pooling_kernel**2 == plan.num_padding_patches
    real = _one(fig, "real_patches")
    assert len(real.get_paths()) * plan.pooling_kernel**2 == plan.num_patches
    # The enlarged cell holds k × k patches: k + 1 lines each way.
    zoom = _one(fig, "zoom_patch_lines").get_segments()
    assert len(zoom) == 2 * (plan.pooling_kernel + 1)
    assert f"{plan.num_soft_tokens} tokens" in fig.axes[0].get_title()


def test_few_tokens_are_numbered():
    fig = ge.show_patch_grid((300, 500), family="gemma4", max_soft_tokens=70)
    plan = ge.plan_image((300, 500), family="gemma4", max_soft_tokens=70)
    numbers = [t.get_text() for t in fig.axes[0].texts]
    assert numbers == [str(i) for i in range(plan.num_soft_tokens)]


def test_gemma3n_patch_grid_shows_original_and_squash(photo):
    fig = ge.show_patch_grid(photo, family="gemma3n")
    assert len(fig.axes) == 2
    assert len(_one(fig, "token_lines").get_segments()) == 17 + 17
    assert "256 tokens" in fig.axes[1].get_title()


def test_all_five_budgets_side_by_side_to_one_scale(photo):
    fig = ge.show_patch_grid(photo, family="gemma4", max_soft_tokens="all")
    (ax,) = fig.axes
    images = _artists(fig, "budget_image")
    labels = [t.get_text() for t in ax.texts if t.get_gid() == "budget_label"]
    budgets = ge.get_family("gemma4").image.budgets
    assert len(images) == len(labels) == len(budgets)
    for image, label, b in zip(images, labels, budgets, strict=True):
        plan = ge.plan_image(photo, family="gemma4", max_soft_tokens=b)
        left, right, bottom, top = image.get_extent()
        # One axis, one scale: each image spans its resized size in the same units.
        assert (bottom - top, right - left) == plan.resized_size
        assert label == f"{b}\n→ {plan.num_soft_tokens} tok"


def test_patch_grid_accepts_an_axis(photo):
    fig = Figure()
    ax = fig.subplots()
    assert ge.show_patch_grid(photo, family="gemma4", ax=ax) is fig


@pytest.mark.parametrize("budget", [70, 280])
def test_pooled_mask_valid_cells_equal_the_plan(tiny4, photo, budget):
    fig = ge.show_pooled_mask(ge.vision_pooling(photo, max_soft_tokens=budget, bundle=tiny4))
    plan = ge.plan_image(photo, family="gemma4", max_soft_tokens=budget)
    assert len(_one(fig, "valid_cells").get_paths()) == plan.num_soft_tokens
    assert len(_one(fig, "padding_cells").get_paths()) == budget - plan.num_soft_tokens
    assert "= plan ✓" in fig.axes[0].get_title()


def test_pooled_mask_gemma3n(tiny3n, photo):
    fig = ge.show_pooled_mask(ge.vision_pooling(photo, bundle=tiny3n))
    assert len(_one(fig, "valid_cells").get_paths()) == 256


@pytest.mark.parametrize(
    ("family", "seconds"), [("gemma4", 2.41), ("gemma4", 33.0), ("gemma3n", 7.0), ("gemma3n", 31.0)]
)
def test_mel_token_boundaries_equal_the_plan(family, seconds, tone):
    n = int(seconds * 16_000)
    wave = np.resize(tone, n)
    plan = ge.plan_audio(wave, family=family)
    fig = ge.show_mel((wave, 16_000), family=family)
    assert len(_one(fig, "token_boundaries").get_segments()) == plan.num_encoder_tokens
    assert bool(_artists(fig, "cut_30s")) == plan.truncated
    if family == "gemma3n":
        real = len(_one(fig, "slots_real").get_paths())
        pad = len(_one(fig, "slots_padding").get_paths())
        assert real + pad == 188 and pad == plan.num_padding_soft_tokens


def test_video_frames_thumbnails():
    frames = np.random.RandomState(0).randint(0, 255, (40, 60, 80, 3), np.uint8)
    fig = ge.show_video_frames(frames, fps=6)
    plan = ge.plan_video(frames, fps=6)
    assert len(_artists(fig, "frame_thumb")) == len(plan.frame_indices) == 32
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert [t.split(" · ")[0] for t in titles] == list(plan.timestamps)


def test_layout_ribbon_segments(tiny3n, tiny4, photo, tone):
    for bundle in (tiny3n, tiny4):
        layout = ge.layout_prompt("What?", bundle=bundle, images=[photo], audios=[(tone, 16000)])
        fig = ge.show_layout(layout)
        assert len(_artists(fig, "segment")) == len(layout.segments)  # nothing to fold
        assert len(_artists(fig, "merge_marker")) == len(layout.newline_merges)
        labels = [t.get_text() for t in fig.axes[0].texts]
        assert any("× 188" in t or "× " in t for t in labels)


def test_save_figure_png_and_svg(tmp_path, photo):
    fig = ge.show_patch_grid(photo, family="gemma4")
    png = ge.save_figure(fig, tmp_path / "grid.png")
    svg = ge.save_figure(fig, tmp_path / "grid.svg")
    assert png.read_bytes()[:4] == b"\x89PNG" and b"<svg" in svg.read_bytes()[:400]


def test_bad_input_gets_the_same_clear_errors(tiny4):
    with pytest.raises(ValueError, match="70, 140, 280, 560, 1120"):
        ge.show_patch_grid((100, 100), family="gemma4", max_soft_tokens=99)
    with pytest.raises(ge.MediaError, match="PNG, JPEG"):
        ge.show_patch_grid(b"garbage", family="gemma4")
    with pytest.raises(ge.MediaError, match="empty"):
        ge.show_mel((np.zeros(0, np.float32), 16000), family="gemma4")
    with pytest.raises(ge.MediaError, match="NaN"):
        ge.show_mel((np.full(100, np.nan, np.float32), 16000), family="gemma3n")
    with pytest.raises(ValueError, match="no video"):
        ge.plan_video(np.zeros((2, 8, 8, 3), np.uint8), fps=1, family="gemma3n")
    with pytest.raises(ge.MediaError, match="frame rate"):
        ge.show_video_frames(np.zeros((2, 8, 8, 3), np.uint8))


def test_ribbon_counts_newline_runs_and_says_it_is_not_to_scale(tiny3n, photo, tone):
    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "image", "image": photo},
                {"type": "audio", "audio": (tone, 16000)},
                {"type": "text", "text": "What?"},
            ],
        }
    ]
    layout = ge.layout_prompt(msgs, bundle=tiny3n)
    fig = ge.show_layout(layout)
    labels = [t.get_text() for t in fig.axes[0].texts]
    merged = {m.token.count("\n") for m in layout.newline_merges}
    assert merged and all(f"\\n×{k}" in labels for k in merged)
    assert "not to scale" in fig.axes[0].get_title()


def test_random_weights_draw_no_norm_map(tiny4, photo):
    import dataclasses

    pooled = ge.vision_pooling(photo, bundle=tiny4)
    fig = ge.show_pooled_mask(pooled)
    assert not _artists(fig, "norm_map") and "shape only" in fig.get_suptitle()
    trained = dataclasses.replace(pooled, is_random_weights=False)
    fig = ge.show_pooled_mask(trained)
    (bar,) = [ax for ax in fig.axes if ax.get_ylabel() == "embedding L2 norm"]
    assert _one(fig, "norm_map") is not None
    assert not bar.yaxis.get_major_formatter().get_useOffset()


def test_mel_axes_are_in_seconds_and_the_mask_is_labelled(tone):
    fig = ge.show_mel((tone, 16000), family="gemma3n")
    assert [ax.get_xlabel() for ax in fig.axes[:3]] == ["time (s)"] * 3
    title = fig.axes[2].get_title()
    # A clip alone has no padding frames: one blue run, and the title says so (an
    # all-black strip once read as silence).
    frames = len(_one(fig, "frame_mask").get_paths())
    assert frames == 1 and "all" in title and "valid" in title and "padding" in title
    assert len(_one(fig, "frame_mask_padding").get_paths()) == 0
    ticks = _one(fig, "token_boundaries").get_segments()
    bins = 128
    assert all(seg[0][1] >= bins for seg in ticks)  # above the spectrogram, not through it


def test_a_video_ribbon_folds_its_middle_frames(tiny4):
    frames = np.random.RandomState(1).randint(0, 255, (48, 36, 64, 3), np.uint8)
    layout = ge.layout_prompt("What happens?", bundle=tiny4, videos=[(frames, 12.0)])
    folded = ge.show_layout(layout)
    (fold,) = _artists(folded, "folded_segments")
    drawn = len(_artists(folded, "segment"))
    assert drawn + int(fold.get_label()) == len(layout.segments)
    stamps = sum(s.kind == "timestamp" for s in layout.segments)
    assert f"{stamps - 3} frames like these" in " ".join(t.get_text() for t in folded.axes[0].texts)
    full = ge.show_layout(layout, fold=False)
    assert len(_artists(full, "segment")) == len(layout.segments)
    assert folded.get_figheight() < full.get_figheight() / 2  # rows, not pages
