"""Gemma 4 Unified (encoder-free): plans equal Gemma4UnifiedProcessor and the model's own
embedders; vLLM's audio count is named where it differs; transformers' quirks are
handled, not tripped over."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from PIL import Image

import gemma_explore as ge
from gemma_explore.engines.vllm_processor import vllm_available, vllm_mm_data, vllm_process
from gemma_explore.facts.families import GEMMA4_UNIFIED
from gemma_explore.plans.vllm import vllm_audio_tokens
from tests.conftest import examples
from tests.parity.vllm_side import USE_VLLM, assert_vllm_side

needs_vllm = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
CELL = 48 * 48 * 3  # raw values in one merged block


# ------------------------------------------------------------------------- the family


def test_family_facts_match_the_released_processor(tinyu):
    u = GEMMA4_UNIFIED
    p = tinyu.processor
    assert (u.image.patch_size, u.image.pooling_kernel) == (
        p.image_processor.patch_size,
        p.image_processor.pooling_kernel_size,
    )
    assert u.image.default_budget == p.image_processor.max_soft_tokens == p.image_seq_length
    assert u.audio.samples_per_token == p.feature_extractor.audio_samples_per_token == 640
    assert u.audio.max_tokens == p.audio_seq_length == 750
    assert u.audio.ms_per_token == p.audio_ms_per_token == 40
    assert u.image.video_budget == p.video_processor.max_soft_tokens
    assert u.image.max_video_frames == p.video_processor.num_frames
    for token in (u.image_token, u.audio_token, u.video_token, u.boi_token, u.eoa_token):
        assert p.tokenizer.convert_tokens_to_ids(token) == u.id_of(token)
    cfg = tinyu.model.config
    assert (cfg.image_token_id, cfg.audio_token_id, cfg.video_token_id) == (
        u.id_of(u.image_token),
        u.id_of(u.audio_token),
        u.id_of(u.video_token),
    )
    assert u.budget_config_field == "num_soft_tokens"
    assert getattr(cfg.vision_config, u.budget_config_field) == 280
    assert not hasattr(tinyu.model.model, "vision_tower")  # encoder-free, really
    assert not hasattr(tinyu.model.model, "audio_tower")


def test_tiny_unified_is_deterministic_and_round_trips(tinyu, saved_dirs, photo):
    from gemma_explore.models.tiny import build_tiny_model

    again = build_tiny_model("gemma4_unified")
    for (name, a), (_, b) in zip(
        tinyu.model.state_dict().items(), again.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name
    folder = saved_dirs["gemma4_unified"]
    loaded = ge.load(folder, device="cpu")
    assert loaded.family == "gemma4_unified" and loaded.is_random_weights
    wave = (np.random.RandomState(0).uniform(-0.3, 0.3, 17_000).astype(np.float32), 16_000)
    msgs = [
        {
            "role": "user",
            "content": [{"type": "image", "image": photo}, {"type": "audio", "audio": wave}],
        }
    ]
    with torch.inference_mode():
        a = tinyu.model(**ge.prepare_inputs(msgs, bundle=tinyu).to_model(tinyu.model)).logits
        b = loaded.model(**ge.prepare_inputs(msgs, bundle=loaded).to_model(loaded.model)).logits
    assert torch.equal(a, b)


def test_hub_ids_and_names_find_the_family():
    from gemma_explore.models.checkpoints import guess_family
    from gemma_explore.models.memory import weights_gib

    assert guess_family("google/gemma-4-12B-it") == "gemma4_unified"
    assert guess_family("my-gemma4-unified-finetune") == "gemma4_unified"
    assert guess_family("google/gemma-4-E4B-it") == "gemma4"
    assert weights_gib("google/gemma-4-12B-it", "bfloat16") == pytest.approx(22.35, abs=0.01)


# ------------------------------------------------------------------------- images


# The image plan and the resize against Unified's processor and module: tests/plans/
# test_plans.py, parametrised over Gemma 4 and Unified.


@pytest.mark.parametrize(
    ("size", "budget"), [((300, 500), 280), ((3, 900), 280), ((1080, 1920), 70), ((48, 48), 1120)]
)
def test_the_embedder_gives_one_row_per_placeholder(tinyu, size, budget):
    image = np.random.RandomState(1).randint(0, 255, (*size, 3), np.uint8)
    report = ge.check_image_parity(image, bundle=tinyu, max_soft_tokens=budget, use_vllm=USE_VLLM)
    assert_vllm_side(report, tinyu)
    # (vLLM assumes another resize for 3×900, as for Gemma 4; its clamped count agrees.)
    placeholders = next(r for r in report.rows if r.step == "prompt placeholders")
    assert placeholders.agree, report
    assert (
        report.encoder_count
        == ge.plan_image(size, family="gemma4_unified", max_soft_tokens=budget).num_soft_tokens
    )


def test_a_token_is_exactly_its_48px_block(tinyu):
    """pixel_values row i holds the raw pixels of block i, rescaled, in (y, x, c) order."""
    rng = np.random.RandomState(2)
    image = rng.randint(0, 255, (96, 144, 3), np.uint8)  # 2×3 blocks at 1:1 when budget fits
    plan = ge.plan_image(image, family="gemma4_unified", max_soft_tokens=70)
    prepared = ge.prepare_inputs("", bundle=tinyu, images=[image], max_soft_tokens=70)
    rows = prepared.batch["pixel_values"][0]  # (70, 6912)
    assert rows.shape == (70, CELL)
    th, tw = plan.resized_size
    resized = np.asarray(
        Image.fromarray(image).resize((tw, th), resample=Image.Resampling.BICUBIC), np.float32
    )
    cols = plan.pooled_grid[1]
    for i in (0, plan.num_soft_tokens - 1):
        r, c = divmod(i, cols)
        block = resized[r * 48 : (r + 1) * 48, c * 48 : (c + 1) * 48] / 255.0
        assert np.allclose(rows[i].numpy(), block.reshape(-1), atol=0.02)


# ------------------------------------------------------------------------- audio


def _vllm_rule(n: int) -> int:
    """The rule in words (docs/research/issue12): one short when n % 640 is 1–160 up to
    30 s; 750 above 30 s; otherwise ceil(n / 640)."""
    c = math.ceil(n / 640)
    if n > 480_000:
        return 750
    return c - 1 if 1 <= n % 640 <= 160 else c


@pytest.mark.slow
@settings(max_examples=examples(0.5))
@given(n=st.integers(0, 45 * 16_000))
@example(n=0).via("empty clip")
@example(n=160).via("vLLM: no placeholder at all")
@example(n=161).via("vLLM: first placeholder")
@example(n=800).via("one short")
@example(n=480_000).via("30 s")
@example(n=480_001).via("just over 30 s: no cap in transformers")
def test_audio_plan_equals_the_unified_processor(tinyu, n):
    wave = np.full(n, 0.01, np.float32)
    out = tinyu.processor(text=[tinyu.processor.audio_token], audio=[wave], return_tensors="pt")
    n_ids = int((out["input_ids"][0] == tinyu.processor.audio_token_id).sum())
    plan = ge.plan_audio(n, family="gemma4_unified")
    assert plan.num_feature_frames == out["input_features"].shape[1] == math.ceil(n / 640)
    assert out["input_features"].shape[-1] == 640  # raw samples, not mel bins
    assert plan.num_valid_frames == int(out["input_features_mask"][0].sum())
    assert plan.num_soft_tokens == n_ids
    assert not plan.truncated  # transformers keeps all of it
    assert vllm_audio_tokens(n, family="gemma4_unified") == _vllm_rule(n)


@needs_vllm
@settings(max_examples=examples(3.0))
@given(n=st.integers(0, 1_000_000))
def test_our_vllm_count_is_vllms_inherited_function(n):
    from vllm.model_executor.models.gemma4_mm import Gemma4ProcessingInfo
    from vllm.model_executor.models.gemma4_unified import Gemma4UnifiedProcessingInfo

    # Unified does not override the tower's mel-based count: that is the whole bug.
    assert (
        Gemma4UnifiedProcessingInfo._compute_audio_num_tokens
        is Gemma4ProcessingInfo._compute_audio_num_tokens
    )
    theirs = Gemma4ProcessingInfo._compute_audio_num_tokens(n, 16_000, 750)
    assert vllm_audio_tokens(n, family="gemma4_unified") == theirs


@pytest.mark.parametrize("seconds", [0.01, 0.05, 0.5, 2.41, 30.0, 31.0, 45.0])
def test_the_embedder_gives_ceil_samples_over_640_rows(tinyu, seconds):
    n = int(seconds * 16_000)
    report = ge.check_audio_parity(n, bundle=tinyu, use_vllm=USE_VLLM)
    assert_vllm_side(report, tinyu)
    assert report.encoder_count == math.ceil(n / 640)
    assert report.encoder_count == ge.plan_audio(n, family="gemma4_unified").num_soft_tokens


@needs_vllm
@pytest.mark.vllm
@pytest.mark.parametrize(
    ("n", "dropped"),
    [
        (160, (0,)),  # no placeholder at all
        (800, (1,)),  # one short
        (1_280, ()),  # 2 frames, 2 placeholders
        (38_560, (60,)),  # 2.41 s
        (496_000, tuple(range(750, 775))),  # 31 s
    ],
)
def test_audio_parity_names_the_rows_vllm_drops(tinyu, n, dropped):
    report = ge.check_audio_parity(n, bundle=tinyu)
    assert report.vllm_ran
    tokens = next(r for r in report.rows if r.step == "soft tokens")
    assert tokens.ours == tokens.transformers == math.ceil(n / 640)
    assert tokens.vllm_processor == tokens.vllm_arithmetic == math.ceil(n / 640) - len(dropped)
    assert report.encoder_count == math.ceil(n / 640)
    assert report.vllm_dropped_rows == dropped
    assert report.agree == (not dropped)
    if dropped:
        assert f"drops rows {dropped[0]}–{dropped[-1]}" in " ".join(report.notes)


# ------------------------------------------------------------------------- layouts


@needs_vllm
@pytest.mark.vllm
@settings(max_examples=examples(0.1, at_least=8))
@given(
    n1=st.integers(1, 3_000),  # an empty clip is refused (media.load_audio)
    n2=st.sampled_from([640, 800, 38_560, 481_000]),
    template=st.booleans(),
)
def test_layout_gives_vllms_ids_for_unified_prompts(tinyu, photo, n1, n2, template):
    clips = [(np.full(n, 0.02, np.float32), 16_000) for n in (n1, n2)]
    if template:
        msgs = [
            {
                "role": "user",
                "content": [
                    {"type": "audio", "audio": clips[0]},
                    {"type": "image", "image": photo},
                    {"type": "text", "text": "and"},
                    {"type": "audio", "audio": clips[1]},
                ],
            }
        ]
        layout = ge.layout_prompt(msgs, bundle=tinyu)
        prepared = ge.prepare_inputs(msgs, bundle=tinyu)
    else:
        raw = "<bos><|turn>user\n<|audio|> a <|image|>\nand <|audio|><turn|>\n<|turn>model\n"
        kw = dict(images=[photo], audios=clips, template=False)
        layout = ge.layout_prompt(raw, bundle=tinyu, **kw)
        prepared = ge.prepare_inputs(raw, bundle=tinyu, **kw)
    out = vllm_process(tinyu, prepared.text, vllm_mm_data(prepared))
    assert out["prompt_token_ids"] == list(layout.vllm_input_ids or layout.input_ids)
    differs = [
        vllm_audio_tokens(n, family="gemma4_unified") != math.ceil(n / 640) for n in (n1, n2)
    ]
    assert len(layout.divergences) == sum(differs)
    theirs = sorted((o, k) for m in out["placeholders"] for (o, k, _) in out["placeholders"][m])
    assert sorted((o, k) for _, o, k in layout.vllm_ranges) == theirs


# ------------------------------------------------------------------------- video


def _frames(n=6, h=96, w=128, seed=4):
    return np.random.RandomState(seed).randint(0, 255, (n, h, w, 3), np.uint8)


def test_video_forward_quirk_is_real_and_handled(tinyu):
    """transformers before 5.23: forward drops num_frames_per_video; we go around it
    (from 5.23 forward takes the video as it is)."""
    from gemma_explore.engines.hf import encoder_free_video_inputs, forward_drops_video_frames

    video = ge.load_video(_frames(), fps=3.0)
    prepared = ge.prepare_inputs("What happens?", bundle=tinyu, videos=[video])
    inputs = prepared.to_model(tinyu.model)
    with torch.inference_mode():
        if forward_drops_video_frames():
            with pytest.raises(ValueError, match="num_frames_per_video"):
                tinyu.model(**inputs)
        logits = tinyu.model(**encoder_free_video_inputs(tinyu.model, inputs)).logits
    assert logits.shape[1] == len(prepared.input_ids)
    answer = tinyu.generate("What happens?", videos=[video], max_new_tokens=3)
    assert answer.generated_tokens >= 1 and answer.is_random_weights
    report = ge.check_video_parity(video, bundle=tinyu, use_vllm=USE_VLLM)
    assert report.agree and report.vllm_ran == USE_VLLM, report


def test_video_embedder_rows_equal_the_placeholders(tinyu):
    video = ge.load_video(_frames(9, 120, 200), fps=2.0)
    report = ge.inspect_multimodal(
        [{"role": "user", "content": [{"type": "video", "video": video}]}], bundle=tinyu
    )
    assert report.agrees, report
    plan = ge.plan_video(video, family="gemma4_unified")
    assert report.items[0].num_embeddings == plan.num_soft_tokens


# ------------------------------------------------------------- budgets vLLM reads


@pytest.fixture
def own_tinyu(tinyu):
    """The Unified tiny bundle with a model of its own: a test may edit its config without
    touching the session's bundle."""
    import copy
    import dataclasses

    return dataclasses.replace(tinyu, model=copy.deepcopy(tinyu.model))


def test_parity_catches_a_budget_that_vllm_reads_differently(own_tinyu, tinyu, photo):
    vision = own_tinyu.model.config.vision_config
    vision.num_soft_tokens = 140  # config.json says 140, processor_config.json 280
    # (own_tinyu shares tinyu's name, so vLLM's cached processor would read tinyu's folder:
    # the vLLM side of this check runs on a saved copy, below.)
    report = ge.check_image_parity(photo, bundle=own_tinyu, use_vllm=False, run_encoder=False)
    row = next(r for r in report.rows if r.step == "image budget")
    assert (row.transformers, row.vllm_arithmetic) == (280, 140) and not report.agree
    assert any("silently drops" in n for n in report.notes)
    at_140 = ge.plan_image(photo, family="gemma4_unified", max_soft_tokens=140).num_soft_tokens
    assert report.rows[-1].vllm_arithmetic == at_140  # vLLM counts at the budget it reads
    del vision.num_soft_tokens  # the QAT export's state: vLLM raises AttributeError
    report = ge.check_image_parity(photo, bundle=own_tinyu, use_vllm=False, run_encoder=False)
    assert any("AttributeError" in n and "save_pretrained" in n for n in report.notes)
    # A request budget is what both sides use.
    report = ge.check_image_parity(
        photo, bundle=own_tinyu, use_vllm=False, run_encoder=False, max_soft_tokens=70
    )
    assert report.agree


@needs_vllm
@pytest.mark.vllm
def test_vllms_processor_reads_the_budget_from_config_json(own_tinyu, photo, tmp_path):
    """vLLM's own processor, on a saved checkpoint whose config.json says 140 and whose
    processor_config.json says 280, writes the 140-budget count the report predicts."""
    own_tinyu.model.config.vision_config.num_soft_tokens = 140
    saved = ge.load(str(own_tinyu.save_pretrained(tmp_path / "budget140")), device="cpu")
    report = ge.check_image_parity(photo, bundle=saved, use_vllm=True, run_encoder=False)
    placeholders = report.rows[-1]
    at_140 = ge.plan_image(photo, family="gemma4_unified", max_soft_tokens=140).num_soft_tokens
    assert placeholders.transformers == report.rows[-2].transformers != at_140
    assert placeholders.vllm_processor == placeholders.vllm_arithmetic == at_140
    assert not report.agree and any("silently drops" in n for n in report.notes)


def test_saving_writes_the_field_vllm_needs(own_tinyu, tmp_path):
    import json

    del own_tinyu.model.config.vision_config.num_soft_tokens
    own_tinyu.save_pretrained(tmp_path)
    assert (
        json.loads((tmp_path / "config.json").read_text())["vision_config"]["num_soft_tokens"]
        == 280
    )


# ------------------------------------------------------- the kwargs-defaults leak


def _defaults():
    from transformers.models.gemma4.processing_gemma4 import Gemma4ProcessorKwargs
    from transformers.models.gemma4_unified.processing_gemma4_unified import (
        Gemma4UnifiedProcessorKwargs,
    )

    return {
        cls.__name__: {k: dict(v) if isinstance(v, dict) else v for k, v in cls._defaults.items()}
        for cls in (Gemma4ProcessorKwargs, Gemma4UnifiedProcessorKwargs)
    }


def test_our_code_never_leaks_a_budget_into_the_processor_defaults(tinyu, tiny4, photo):
    """transformers' _get_num_multimodal_tokens updates the kwargs class defaults in
    place; every path of ours that takes a budget must leave them alone."""
    before = _defaults()
    clip = (np.full(20_000, 0.02, np.float32), 16_000)
    video = ge.load_video(_frames(), fps=3.0)
    for bundle in (tinyu, tiny4):
        ge.prepare_inputs("", bundle=bundle, images=[photo], max_soft_tokens=70)
        ge.layout_prompt("", bundle=bundle, images=[photo], audios=[clip], max_soft_tokens=70)
        ge.check_image_parity(photo, bundle=bundle, max_soft_tokens=70, run_encoder=False)
        ge.check_video_parity(video, bundle=bundle)
        ge.vision_pooling(photo, bundle=bundle, max_soft_tokens=70)
    ge.compare_families(photo, clip, max_soft_tokens=70, sizes=False)
    assert _defaults() == before
    fresh = ge.prepare_inputs("", bundle=tinyu, images=[photo])  # the default budget still holds
    assert fresh.input_ids.count(GEMMA4_UNIFIED.id_of("<|image|>")) == 252


def test_the_leak_detector_detects_the_leak(tinyu):
    """The check above can fail: transformers' own helper does leak."""
    from transformers.models.gemma4_unified.processing_gemma4_unified import (
        Gemma4UnifiedProcessorKwargs,
    )

    before = _defaults()
    saved = {
        k: dict(v) if isinstance(v, dict) else v
        for k, v in Gemma4UnifiedProcessorKwargs._defaults.items()
    }
    try:
        tinyu.processor._get_num_multimodal_tokens(image_sizes=[(300, 500)], max_soft_tokens=70)
        assert _defaults() != before
    finally:
        Gemma4UnifiedProcessorKwargs._defaults.clear()
        Gemma4UnifiedProcessorKwargs._defaults.update(saved)
    assert _defaults() == before


# ------------------------------------------------------------------------- figures


def test_figures_show_blocks_frames_and_what_vllm_drops(photo):
    from gemma_explore.viz.embedder import show_audio_frames, show_embedder_grid

    plan = ge.plan_image(photo, family="gemma4_unified")
    fig = show_embedder_grid(plan)
    assert ge.show_patch_grid(plan).axes[0].get_title() == fig.axes[0].get_title()
    lines = next(a for ax in fig.axes for a in ax.collections if a.get_gid() == "token_lines")
    rows, cols = plan.pooled_grid
    assert len(lines.get_segments()) == (rows + 1) + (cols + 1)
    assert "6912 raw values" in fig.axes[1].get_title()
    wave = np.full(800 + 640 * 3, 0.1, np.float32)  # 3840 samples: 6 frames, vLLM 6
    a = ge.plan_audio((np.full(800, 0.1, np.float32), 16_000), family="gemma4_unified")
    figa = show_audio_frames(a)
    gids = {c.get_gid(): len(c.get_paths()) for ax in figa.axes for c in ax.collections}
    assert gids == {"frame_cells": 1, "vllm_dropped": 1}
    figb = ge.show_mel((wave, 16_000), family="gemma4_unified")  # no mel: the frame view
    assert "no mel" in figb.axes[0].get_title()


def test_three_way_comparison(photo, tiny3n, tiny4, tinyu):
    clip = (np.full(38_560, 0.05, np.float32), 16_000)  # 38 560 % 640 = 160: vLLM one short
    cmp = ge.compare_families(photo, clip)
    by = {r.family: r for r in cmp.rows}
    for bundle in (tiny3n, tiny4, tinyu):  # each family's real processor on the same input
        spec, row = bundle.spec, by[bundle.family]
        ids = ge.prepare_inputs("", bundle=bundle, images=[photo], audios=[clip]).input_ids
        assert row.image_tokens == ids.count(spec.id_of(spec.image_token))
        assert row.audio_tokens == ids.count(spec.id_of(spec.audio_token))
        assert row.vllm_audio_tokens == vllm_audio_tokens(38_560, family=spec)
    assert by["gemma4_unified"].vllm_audio_tokens == by["gemma4_unified"].audio_tokens - 1
    assert by["gemma4"].vllm_audio_tokens == by["gemma4"].audio_tokens
    # An embedder is much smaller than a tower (Unified's last projection assumes the
    # 12B's published width, models/encoders.py UNIFIED_TEXT_HIDDEN; 2304 would be smaller).
    assert by["gemma4_unified"].sizes.vision_params < by["gemma4"].sizes.vision_params / 3
    assert by["gemma4_unified"].sizes.audio_params < by["gemma4"].sizes.audio_params / 100
    fig = ge.show_three_way(cmp)
    assert [ax.get_title().split("\n")[0] for ax in fig.axes[:3]] == [
        "Gemma 3n",
        "Gemma 4",
        "Gemma 4 Unified",
    ]
    assert "Gemma 4 Unified" in cmp.table().text()
