"""ParityReport: our plan vs transformers vs vLLM's arithmetic vs vLLM's processor."""

import numpy as np
import pytest

import gemma_explore as ge
from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.parity.checks import check_parity
from gemma_explore.plans.vllm import vllm_audio_tokens, vllm_image_tokens
from tests.parity.vllm_side import USE_VLLM, assert_vllm_side, vllm_audio_count, vllm_info

needs_vllm = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")


def test_the_3x900_report_is_explained(tiny4):
    report = ge.check_image_parity((3, 900), max_soft_tokens=280, bundle=tiny4, use_vllm=USE_VLLM)
    assert_vllm_side(report, tiny4)
    assert not report.agree
    assert report.first_difference == "resized size"
    soft = {r.step: r for r in report.rows}["soft tokens"]
    assert soft.ours == soft.transformers == soft.vllm_arithmetic == 280
    assert any("289" in n for n in report.notes)  # the count before vLLM's clamp
    assert vllm_image_tokens(3, 900, max_soft_tokens=280, clamp=False) == 289  # before the clamp
    assert report.encoder_count == 280
    assert "transformers" in report.encoder_follows


@pytest.mark.parametrize("size", [(1080, 1920), (300, 500), (768, 768), (1, 1)])
def test_ordinary_images_agree(tiny4, size):
    report = ge.check_image_parity(size, family="gemma4", bundle=tiny4, use_vllm=USE_VLLM)
    assert report.agree, report
    assert_vllm_side(report, tiny4)


def _transformers_audio_count(bundle, n):
    """Placeholders transformers' own processor writes for a clip of ``n`` samples."""
    wave = np.random.RandomState(n % 1000).uniform(-0.1, 0.1, n).astype(np.float32)
    proc = bundle.processor
    out = proc(text=[proc.audio_token], audio=[wave], return_tensors="pt")
    return int((out["input_ids"][0] == proc.audio_token_id).sum())


@needs_vllm
@pytest.mark.parametrize(
    "n", [161, 320, 480, 481, 640, 38_560, 48_800, 99_360, 480_000, 480_001, 720_000]
)
def test_vllm_audio_arithmetic_matches_transformers(tiny4, n):
    """vLLM's own count (``Gemma4ProcessingInfo.get_audio_repl`` on the tiny checkpoint's
    processor) against transformers' processor run on a clip of that length; the plan and
    the package's re-derivation of vLLM's rule give the same."""
    info = vllm_info(tiny4)
    repl = info.get_audio_repl(audio_len=n, processor=None)
    theirs = repl.full.count(tiny4.spec.id_of(tiny4.spec.audio_token))
    assert repl.full[0] == tiny4.spec.id_of(tiny4.spec.boa_token)  # BOA, soft tokens, EOA
    assert theirs == vllm_audio_count(tiny4, n) == _transformers_audio_count(tiny4, n)
    assert ge.plan_audio(n, family="gemma4").num_soft_tokens == theirs
    cap = info.get_hf_processor().audio_seq_length
    assert vllm_audio_tokens(n, family="gemma4", audio_seq_length=cap) == theirs


def test_reports_render(tiny4):
    report = ge.check_image_parity((3, 900), family="gemma4", bundle=tiny4, use_vllm=USE_VLLM)
    assert "✗" in repr(report) and "<table>" in report._repr_html_()


def test_the_modality_is_named_not_guessed(tiny4):
    """A 2-D stereo clip is audio and a pair of numpy ints is an image size, because the
    caller says so: shapes cannot tell them apart."""
    stereo = np.random.RandomState(0).uniform(-0.1, 0.1, (2, 16_000)).astype(np.float32)
    audio = check_parity((stereo, 16_000), kind="audio", bundle=tiny4, use_vllm=USE_VLLM)
    assert audio.kind == "audio" and audio.agree
    assert_vllm_side(audio, tiny4)
    size = (np.int64(3), np.int64(900))
    image = check_parity(size, kind="image", bundle=tiny4, use_vllm=USE_VLLM)
    assert image.kind == "image" and "900×3 px (W×H)" in image.description
    with pytest.raises(TypeError):
        check_parity(size, bundle=tiny4)  # kind= is required
    with pytest.raises(ValueError, match="image, audio, video"):
        check_parity(size, kind="picture", bundle=tiny4)


def test_gemma3n_audio_padding_is_named(tiny3n):
    report = ge.check_audio_parity(16_000 * 5, bundle=tiny3n, use_vllm=USE_VLLM)
    assert report.agree and "padding embedding" in report.encoder_follows
    assert_vllm_side(report, tiny3n)


@needs_vllm
@pytest.mark.vllm
@pytest.mark.parametrize("budget", [70, 280, 1120])
def test_vllm_processor_agrees_on_images(tiny4, budget):
    report = ge.check_image_parity((1080, 1920), max_soft_tokens=budget, bundle=tiny4)
    assert report.vllm_ran and report.agree, report
    assert_vllm_side(report, tiny4)


@needs_vllm
@pytest.mark.vllm
def test_vllm_processor_agrees_on_audio_and_video(tiny3n, tiny4):
    assert ge.check_audio_parity(38_560, bundle=tiny4).agree
    assert ge.check_audio_parity(16_000 * 3, bundle=tiny3n).agree
    frames = np.random.RandomState(0).randint(0, 255, (40, 90, 160, 3), np.uint8)
    report = ge.check_video_parity(frames, fps=6, bundle=tiny4)
    assert report.vllm_ran and report.agree, report


@needs_vllm
@pytest.mark.vllm
def test_vllms_data_parser_resamples_44k_audio(tiny4):
    """44.1 kHz audio handed straight to vLLM's processor: its data parser resamples to
    the extractor's 16 kHz (get_data_parser's target_sr) before counting, so the count is
    the one of our resampled clip, not of the raw samples."""
    from gemma_explore.engines.vllm_processor import vllm_process

    n44 = 44_100 * 2 + 123
    wave = (np.sin(np.arange(n44) / 7) * 0.1).astype(np.float32)
    prepared = ge.prepare_inputs("", bundle=tiny4, audios=[(wave, 44_100)])
    out = vllm_process(tiny4, prepared.text, {"audio": [(wave, 44_100)]})
    got = out["placeholders"]["audio"][0][2]
    assert got == vllm_audio_tokens(len(prepared.audios[0])) != vllm_audio_tokens(n44)


@needs_vllm
def test_vllm_refuses_image_embeds():
    import torch
    from vllm.model_executor.models.gemma4_mm import Gemma4ForConditionalGeneration

    with pytest.raises(AssertionError, match="does not support image_embeds"):
        Gemma4ForConditionalGeneration._parse_and_validate_image_input(
            None, image_embeds=torch.zeros(1, 4)
        )
