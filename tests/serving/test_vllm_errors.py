"""vLLM's errors, explained: every template is vLLM 0.32's own string literal, the page
lists them all, and ``explain`` finds each from a pasted copy (several raised by vLLM's
own code here, not written by us)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gemma_explore.cli import app
from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.serving.vllm_errors import (
    _FIELD,
    VLLM_ERRORS,
    error_named,
    errors_page,
    explain,
)

ROOT = Path(__file__).resolve().parents[2]
needs_vllm = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")


def _shape(node: ast.AST) -> str | None:
    """A string literal with each f-string field as "{}" (adjacent literals are one node)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return re.sub(r"%[-#0-9.]*[sdfr]", "{}", node.value)
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def _literals(source: str) -> set[str]:
    import vllm

    tree = ast.parse((Path(vllm.__file__).parent / source).read_text(encoding="utf-8"))
    return {s for node in ast.walk(tree) if (s := _shape(node))}


@needs_vllm
@pytest.mark.parametrize("error", VLLM_ERRORS, ids=lambda e: e.name)
def test_each_template_is_a_literal_in_vllms_source(error):
    shape = _FIELD.sub("{}", error.template)
    assert shape in _literals(error.source), (error.name, shape)


def test_the_page_lists_every_message_verbatim():
    page = (ROOT / "docs" / "vllm_errors.md").read_text(encoding="utf-8")
    assert page == errors_page()
    assert len(VLLM_ERRORS) >= 12
    assert len({e.name for e in VLLM_ERRORS}) == len(VLLM_ERRORS)
    for e in VLLM_ERRORS:
        assert f"> {e.template}\n" in page


def _sample(error) -> str:
    """The message as vLLM would print it, with made-up values, inside a log line."""
    values = {name: 100 + i for i, name in enumerate(error.fields)}  # numbers fit every field
    if error.template.count("%"):
        text = error.template.replace("%f", "45.000000")
    else:
        text = error.template.format(**{k: v for k, v in values.items() if not k.startswith("arg")})
    return f"(APIServer pid=1) ERROR 12-02 10:00:00 [core.py:42] ValueError: {text}\n"


@pytest.mark.parametrize("error", VLLM_ERRORS, ids=lambda e: e.name)
def test_explain_finds_each_message_from_a_pasted_copy(error):
    found = explain(_sample(error))
    assert found.error is error
    assert found.answer and found.answer[0].isupper()
    for name in error.fields:
        if not name.startswith("arg"):
            assert name in found.fields


def _raised(fn) -> str:
    with pytest.raises(Exception) as info:
        fn()
    return str(info.value)


@needs_vllm
def test_explain_reads_what_vllm_itself_raises():
    from vllm.config import SchedulerConfig
    from vllm.multimodal.audio import AudioResampler
    from vllm.v1.core.kv_cache_utils import _check_enough_kv_cache_memory

    seqs = _raised(
        lambda: SchedulerConfig(
            max_model_len=4096,
            max_num_batched_tokens=256,
            max_num_seqs=1024,
            is_encoder_decoder=False,
        )
    )
    found = explain(seqs)
    assert found.error.name == "batch-below-seqs"
    assert "--max-num-batched-tokens 1024" in found.answer
    chunked = _raised(
        lambda: SchedulerConfig(
            max_model_len=8192,
            max_num_batched_tokens=2048,
            max_num_seqs=16,
            enable_chunked_prefill=False,
            is_encoder_decoder=False,
        )
    )
    assert explain(chunked).error.name == "batch-below-max-model-len"
    assert "--max-num-batched-tokens 8192" in explain(chunked).answer
    gib = 1 << 30
    kv = _raised(
        lambda: _check_enough_kv_cache_memory(gib, lambda: 3 * gib, 65536, lambda m: 21000)
    )
    found = explain(kv)
    assert found.error.name == "kv-too-small"
    assert "--max-model-len 21000 or less" in found.answer
    assert explain(_raised(lambda: _check_enough_kv_cache_memory(0, None, 1, None))).error.name == (
        "kv-no-memory"
    )
    resample = _raised(lambda: AudioResampler(target_sr=None).resample([0.0] * 10, orig_sr=44100))
    assert explain(resample).error.name == "audio-no-target-rate"


@needs_vllm
def test_the_packages_refusals_are_these_templates(tiny4):
    """admit() formats the registry's templates, so its refusals explain themselves."""
    from gemma_explore.serving.plan import plan_serving

    # A small batch, so the encoder cache is the 280 budget's largest item, not 8192.
    plan = plan_serving(
        tiny4,
        max_model_len=2048,
        max_num_batched_tokens=512,
        max_soft_tokens=280,
        limit_mm_per_prompt={"image": 2, "audio": 0, "video": 0},
    )
    refused = plan.admit(images=[(4000, 3000)], max_soft_tokens=1120)
    assert not refused.accepted
    found = explain(refused.message)
    assert found.error.name == "encoder-cache"
    # The answer names the budget that would profile such an item: 1120.
    assert '"max_soft_tokens": 1120' in explain(refused.message, plan=plan).answer
    too_long = plan.admit(images=[(4000, 3000)] * 2, text_tokens=1900)
    assert explain(too_long.message).error.name == "prompt-too-long"


def test_unknown_text_says_what_to_paste():
    with pytest.raises(ValueError, match="paste the whole error line"):
        explain("Segmentation fault")


def test_cli_explain():
    runner = CliRunner()
    text = error_named("too-many-items").format(limit=1, modality="image")
    result = runner.invoke(app, ["explain", text])
    assert result.exit_code == 0, result.output
    assert "too-many-items" in result.output and "--limit-mm-per-prompt" in result.output
    bad = runner.invoke(app, ["explain", "nothing like vLLM"])
    assert bad.exit_code != 0 and "docs/vllm_errors.md" in bad.output


@needs_vllm
@pytest.mark.parametrize("chunked", [True, False])
def test_the_plan_refuses_what_vllms_scheduler_refuses(tiny4, chunked):
    """plan_serving stops where vLLM's SchedulerConfig stops, with its message."""
    from vllm.config import SchedulerConfig

    from gemma_explore.serving.plan import plan_serving

    for mnbt in (128, 512, 2048, 8192):
        for seqs in (16, 256, 1024):
            for mml in (2048, 8192):
                args = dict(max_num_batched_tokens=mnbt, max_num_seqs=seqs)
                try:
                    SchedulerConfig(
                        max_model_len=mml,
                        enable_chunked_prefill=chunked,
                        is_encoder_decoder=False,
                        **args,
                    )
                    theirs = None
                except Exception as exc:  # noqa: BLE001 - pydantic wraps vLLM's ValueError
                    theirs = str(exc)
                try:
                    plan_serving(tiny4, max_model_len=mml, enable_chunked_prefill=chunked, **args)
                    ours = None
                except ValueError as exc:
                    ours = str(exc)
                assert (ours is None) == (theirs is None), (mnbt, seqs, mml, ours, theirs)
                if ours is not None:
                    assert ours in theirs, (ours, theirs)


@needs_vllm
@pytest.mark.parametrize("model_id", ["google/gemma-4-E4B-it", "google/gemma-4-31B-it", "tiny-3n"])
def test_the_plan_refuses_a_length_past_the_models_as_vllm_does(tmp_path, model_id, tiny3n):
    """Released configs (E4B: 131,072 positions; 31B: 262,144) and the tiny Gemma 3n
    (8192): vLLM's ModelConfig and the plan accept the model's length and refuse one
    more, with the same message."""
    from vllm.config import ModelConfig

    from gemma_explore.serving.plan import plan_serving

    from .test_kv import config_only_folder

    if model_id == "tiny-3n":
        folder = str(tiny3n.save_pretrained(tmp_path / "3n"))
    else:
        folder = str(config_only_folder(tmp_path / "c", model_id))
    longest = plan_serving(folder, max_model_len=2048).model.max_position_embeddings
    assert longest in (8192, 131_072, 262_144)
    ModelConfig(model=folder, tokenizer=folder, max_model_len=longest)
    plan_serving(folder, max_model_len=longest)
    with pytest.raises(Exception) as theirs:
        ModelConfig(model=folder, tokenizer=folder, max_model_len=longest + 1)
    with pytest.raises(ValueError) as ours:
        plan_serving(folder, max_model_len=longest + 1)
    assert str(ours.value) in str(theirs.value)
    assert explain(str(theirs.value)).answer.startswith(f"Set --max-model-len {longest} or less")


@needs_vllm
def test_explain_reads_vllms_decode_limit(tmp_path):
    """vLLM's own audio loader refuses a 601 s WAV (VLLM_MAX_AUDIO_DECODE_DURATION_S, 600)."""
    import numpy as np
    import soundfile as sf
    from vllm import envs
    from vllm.multimodal.media.audio import load_audio_soundfile

    path = tmp_path / "long.wav"
    sf.write(path, np.zeros(8_000 * 601, np.float32), 8_000)
    limit = envs.VLLM_MAX_AUDIO_DECODE_DURATION_S
    refused = _raised(lambda: load_audio_soundfile(path, sr=None, max_duration_s=limit))
    found = explain(refused)
    assert found.error.name == "audio-decode-too-long-file"
    assert f"above {limit}" in found.answer


@needs_vllm
def test_explain_reads_vllms_processor_cache_warning():
    """vLLM's own cache_if_fits, given an item larger than its LRU, logs the message
    explain reads; the sizes it prints are ours (processor_cache)."""
    import logging

    from vllm.multimodal.cache.base import (
        BaseMultiModalCache,
        MultiModalCache,
        MultiModalProcessorCacheItemMetadata,
    )

    from gemma_explore.serving.processor_cache import processor_cache

    small = processor_cache("gemma4", mm_processor_cache_gb=0.01)  # the video is 0.03 GiB
    video = small.item("video", dummy=True)
    meta = object.__new__(MultiModalProcessorCacheItemMetadata)
    meta.item_size, meta.prompt_updates = video.bytes, []
    lru = MultiModalCache.get_lru_cache(0.01, MultiModalProcessorCacheItemMetadata)
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda r: records.append(r.getMessage())
    log = logging.getLogger("vllm.multimodal.cache.base")
    log.addHandler(handler)
    try:
        assert BaseMultiModalCache.cache_if_fits(None, lru, "video", meta) is False
    finally:
        log.removeHandler(handler)
    (line,) = [r for r in records if "Skipping" in r]
    assert not video.fits and line == small.message
    found = explain(line)
    assert found.error.name == "processor-cache-item-too-large"
    assert "--mm-processor-cache-gb above 0.03" in found.answer
