"""vLLM's errors, explained: every template is its release's own string literal (the
installed vLLM's files, and each supported release's unpacked source), the page lists them
all, and ``explain`` finds each from a pasted copy (several raised by vLLM's own code, here
or executed from a release's source, not written by us)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from gemma_explore.cli import app
from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.serving.vllm_errors import (
    _FIELD,
    VLLM_ERRORS,
    error_named,
    errors_for,
    errors_page,
    explain,
    kv_memory_hint,
)
from gemma_explore.vllm_versions import PROFILES, SUPPORTED, vllm_profile
from tests.vllm_sources import read_source

pytestmark = pytest.mark.vllm_version
ROOT = Path(__file__).resolve().parents[2]
needs_vllm = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
EVERY_ERROR = [e for v in SUPPORTED for e in errors_for(vllm_version=v)]


def _ids(e) -> str:
    return f"{e.name}@{e.vllm_version}"


def installed_function(name: str, *, beside: str | None = None) -> Any:
    """vLLM's function ``name`` from the module the installed release keeps it in (the
    profile's ``locations``); ``beside``: a function located by that name's module."""
    file, _, qual = vllm_profile(None).location(beside or name).partition(": ")
    module = importlib.import_module("vllm." + file.removesuffix(".py").replace("/", "."))
    return getattr(module, name if beside else qual)


def vllm_definition(version: str, file: str, name: str, **names: Any) -> Any:
    """vLLM's own definition ``name`` (a function, a class, or "Class.method" as a plain
    function) executed from one release's source file, its module's names given."""
    tree = ast.parse(read_source(version, file))
    outer, _, inner = name.rpartition(".")
    body = tree.body
    if outer:
        body = next(n for n in body if isinstance(n, ast.ClassDef) and n.name == outer).body
    node = next(n for n in body if getattr(n, "name", None) == inner)
    if outer:
        node.decorator_list = []
    # Its annotations stay strings, as vLLM's own modules make them where they import later.
    lazy = ast.parse("from __future__ import annotations").body
    code = compile(
        ast.Module(body=[*lazy, node], type_ignores=[]), f"vllm-{version}/{file}", "exec"
    )
    namespace = dict(names)
    exec(code, namespace)  # noqa: S102 - vLLM's own code, from its release's source
    return namespace[inner]


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


def _release_literals(version: str, file: str) -> set[str]:
    tree = ast.parse(read_source(version, file))
    return {s for node in ast.walk(tree) if (s := _shape(node))}


@pytest.mark.parametrize(
    "version,key",
    [(v, k) for v in SUPPORTED for k in PROFILES[v].message_templates],
    ids=lambda x: x,
)
def test_each_releases_text_is_a_literal_in_its_own_source(version, key):
    """Every message and every piece vLLM fills into one ({hint}), in each release's
    profile, is a string literal of the file named for
    that release: the wheel's own source, not the installed vLLM."""
    profile = PROFILES[version]
    text, file = profile.message_templates[key], profile.message_files[key]
    shape = _FIELD.sub("{}", text)
    assert shape in _release_literals(version, file), (version, key, file, shape)


@pytest.mark.parametrize("key", ["kv-dtype-mismatch", "media-decode-budget"])
def test_a_new_message_is_in_no_older_release(key):
    """A message a release added is in none of the older releases' source at all."""
    added = [v for v in SUPPORTED if key in PROFILES[v].message_templates]
    shape = _FIELD.sub("{}", PROFILES[added[0]].message_templates[key])
    for older in SUPPORTED[: SUPPORTED.index(added[0])]:
        file = PROFILES[added[0]].message_files[key]
        assert shape not in _release_literals(older, file), (older, key)
    with pytest.raises(ValueError, match=f"has no message '{key}'") as info:
        error_named(key, vllm_version=SUPPORTED[0])
    assert f"vLLM {' and '.join(added)} have it" in str(info.value)


def test_the_page_lists_every_message_verbatim():
    page = (ROOT / "docs" / "vllm_errors.md").read_text(encoding="utf-8")
    assert page == errors_page()
    assert len(VLLM_ERRORS) >= 12
    for v in SUPPORTED:
        errors = errors_for(vllm_version=v)
        assert len({e.name for e in errors}) == len(errors)
        for e in errors:
            assert f"> {e.template}\n" in page
            assert f"`vllm/{e.source}`" in page


def _sample(error) -> str:
    """The message as vLLM would print it, with made-up values, inside a log line."""
    values = {name: 100 + i for i, name in enumerate(error.fields)}  # numbers fit every field
    if error.template.count("%"):
        text = error.template.replace("%f", "45.000000")
    else:
        text = error.template.format(**{k: v for k, v in values.items() if not k.startswith("arg")})
    return f"(APIServer pid=1) ERROR 12-02 10:00:00 [core.py:42] ValueError: {text}\n"


@pytest.mark.parametrize("error", EVERY_ERROR, ids=_ids)
def test_explain_finds_each_message_from_a_pasted_copy(error):
    found = explain(_sample(error), vllm_version=error.vllm_version)
    assert found.error is error and found.vllm_version == error.vllm_version
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

    # Wherever the installed release keeps it (KV planning moved to its own module), with
    # the advice vLLM gives on the CPU backend where the release takes one (hint).
    check = installed_function(
        "_check_enough_kv_cache_memory", beside="check_enough_kv_cache_memory"
    )
    if "hint" in inspect.signature(check).parameters:
        advice = installed_function(
            "_more_kv_cache_memory_hint", beside="check_enough_kv_cache_memory"
        )
        off = SimpleNamespace(cache_config=SimpleNamespace(enable_extensible_kv_cache=False))
        _check = check

        def check(*args):
            return _check(*args, advice(off))

    _check_enough_kv_cache_memory = check

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

    small = processor_cache("gemma4", mm_processor_cache_gb=0.01)  # below the dummy video
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
    assert f"--mm-processor-cache-gb above {round(video.bytes / (1 << 30), 2)}" in found.answer


# ------------------------------------------------- releases: their own code, from source

_KV_PLANNING = "v1/core/kv_cache_planning.py"


def _hint_configs():
    """(our kv_memory_hint's arguments, vLLM's vllm_config) for every case of the hint."""
    for extensible in (False, True):
        for utilization in (0.9, 1.0):
            for after in (False, True):
                cache = SimpleNamespace(
                    enable_extensible_kv_cache=extensible,
                    resolved_gpu_memory_utilization=utilization,
                )
                ours = dict(extensible=extensible, utilization=utilization, after_warmup=after)
                yield ours, SimpleNamespace(cache_config=cache), after


def _hint_releases() -> list[str]:
    return [v for v in SUPPORTED if "{hint}" in PROFILES[v].message_templates["kv-too-small"]]


@pytest.mark.parametrize("version", SUPPORTED)
def test_kv_memory_hint_is_vllms_own(version):
    """kv_memory_hint builds what the release's _more_kv_cache_memory_hint returns, run
    from that release's source; a release without one has no {hint} in its messages."""
    if version not in _hint_releases():
        assert kv_memory_hint(vllm_version=version) == ""
        assert "_more_kv_cache_memory_hint" not in read_source(
            version, PROFILES[version].message_files["kv-too-small"]
        )
        return
    theirs = vllm_definition(version, _KV_PLANNING, "_more_kv_cache_memory_hint")
    for ours, config, after in _hint_configs():
        assert kv_memory_hint(vllm_version=version, **ours) == theirs(config, after), ours


def _raise_kv(version: str, hint: str, available: int, needed: int) -> str:
    """The KV refusal the release's own _check_enough_kv_cache_memory raises."""
    file = PROFILES[version].message_files["kv-too-small"]
    gib = 1 << 30
    fmt = vllm_definition(version, "utils/mem_utils.py", "format_gib", GiB_bytes=gib)
    check = vllm_definition(version, file, "_check_enough_kv_cache_memory", format_gib=fmt)
    args = (available, lambda: needed, 65536, lambda m: 21000)
    if "hint" in inspect.signature(check).parameters:
        args = (*args, hint)
    return _raised(lambda: check(*args))


@pytest.mark.parametrize("version", SUPPORTED)
def test_the_kv_answers_follow_the_release(version):
    """Each release's own check, run from its source: explain finds both refusals, and
    the advice follows the words vLLM gave: raise the utilization where it decides, and
    not where the extensible KV cache already takes everything."""
    gib = 1 << 30
    cases = [(None, "raise --gpu-memory-utilization")]
    if version in _hint_releases():
        cases = [
            (
                kv_memory_hint(vllm_version=version, extensible=False),
                "raise --gpu-memory-utilization",
            ),
            (kv_memory_hint(vllm_version=version), "already resolves to 1.0"),
            (
                kv_memory_hint(vllm_version=version, utilization=0.8),
                "drop --gpu-memory-utilization 0.8",
            ),
            (kv_memory_hint(vllm_version=version, after_warmup=True), "CUDA graphs"),
        ]
    for hint, advice in cases:
        small = explain(_raise_kv(version, hint, gib, 3 * gib), vllm_version=version)
        assert (small.error.name, small.vllm_version) == ("kv-too-small", version)
        assert "--max-model-len 21000 or less" in small.answer and advice in small.answer
        if advice != "raise --gpu-memory-utilization":
            assert "raise --gpu-memory-utilization" not in small.answer
        none = explain(_raise_kv(version, hint, 0, 1), vllm_version=version)
        assert none.error.name == "kv-no-memory" and advice in none.answer


def test_a_message_in_another_releases_words_is_found_and_named():
    """Asked for one release, a message only another has (older words, or a message that
    release does not have) still gets its answer, from the nearest release with those
    words, and the explanation says so."""
    old = explain(_sample(error_named("kv-too-small", vllm_version=SUPPORTED[0])))
    newest = SUPPORTED[-1]
    again = explain(
        _sample(error_named("kv-too-small", vllm_version=SUPPORTED[0])), vllm_version=newest
    )
    if old.error.template != error_named("kv-too-small", vllm_version=newest).template:
        assert again.asked == newest and newest not in again.releases
        assert again.vllm_version == again.releases[-1] != newest
        assert f"not in {PROFILES[newest].label}'s words" in again.text()
    assert again.answer == old.answer  # the same words, the same answer
    media = error_named("media-decode-budget-bytes", vllm_version=newest)
    found = explain(media.format(limit=715827880, used=720000000), vllm_version=SUPPORTED[0])
    assert found.error.name == "media-decode-budget-bytes"
    assert found.asked == SUPPORTED[0] and SUPPORTED[0] not in found.releases
    assert found.vllm_version == found.releases[0]  # the nearest release that has it
    assert "VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES=720000000 or more" in found.answer


def _budget(version: str, limit: int):
    """The release's own MediaDecodedBudget, run from its source, at this limit."""
    envs = SimpleNamespace(VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES=limit)
    return vllm_definition(
        version, "multimodal/media/base.py", "MediaDecodedBudget", threading=threading, envs=envs
    )()


@pytest.mark.parametrize("version", SUPPORTED)
def test_explain_reads_the_decoded_media_limit(version):
    """The release's own decoded-media budget (where it has one) refuses a charge past the
    limit and a reservation with nothing left: explain reads both, in that release."""
    if PROFILES[version].media_decode_limit_bytes is None:
        assert "MediaDecodedBudget" not in read_source(version, "multimodal/media/base.py")
        assert "VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES" not in read_source(version, "envs.py")
        return
    limit = PROFILES[version].media_decode_limit_bytes
    budget = _budget(version, limit)
    budget.charge(limit - 100)
    over = _raised(lambda: budget.charge(4000 * 3000 * 4))
    found = explain(over, vllm_version=version)
    assert found.error.name == "media-decode-budget-bytes"
    assert found.fields["used"] == str(limit - 100 + 48_000_000)
    full = _budget(version, limit)
    full.charge(limit)
    found = explain(_raised(lambda: full.reserve(256 << 20)), vllm_version=version)
    assert found.error.name == "media-decode-budget" and found.answer.startswith("An audio clip")


@pytest.mark.parametrize("version", SUPPORTED)
def test_explain_reads_the_kv_dtype_refusal(version):
    """The release's own VllmConfig._reject_mismatched_float_kv_cache (where it has one):
    float16 KV on a bfloat16 Gemma stops the engine with the message error_named formats."""
    if not PROFILES[version].refuses_kv_dtype_mismatch:
        assert "_reject_mismatched_float_kv_cache" not in read_source(version, "config/vllm.py")
        with pytest.raises(ValueError, match="has no message"):
            error_named("kv-dtype-mismatch", vllm_version=version)
        return
    reject = vllm_definition(
        version, "config/vllm.py", "VllmConfig._reject_mismatched_float_kv_cache"
    )
    config = SimpleNamespace(
        cache_config=SimpleNamespace(cache_dtype="float16"),
        model_config=SimpleNamespace(dtype="torch.bfloat16"),
    )
    theirs = _raised(lambda: reject(config))
    ours = error_named("kv-dtype-mismatch", vllm_version=version).format(
        cache_dtype="float16", model_dtype="bfloat16", allowed="`auto` or `bfloat16`"
    )
    assert ours == theirs
    found = explain(theirs, vllm_version=version)
    assert found.error.name == "kv-dtype-mismatch"
    assert found.answer.startswith("Set --kv-cache-dtype auto or bfloat16")
