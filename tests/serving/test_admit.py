"""admit() returns vLLM's own InputProcessor verdict and message, request by request, on
two checkpoints: the 31B's released shapes (a config-only folder: config.json from the
facts and the tiny processor files, no weights) and the tiny Gemma 3n. Among them: an image
at a per-request max_soft_tokens of 1120 on an engine started at 280, accepted when the
encoder cache holds it and refused when it does not. The start-up defaults and the forced
disable_chunked_mm_input are held to vLLM's EngineArgs and its ModelConfig. A chat
request's decoded media are held, per release, to that release's own byte budget
(``MediaDecodedBudget`` and its audio loader, run from the release's source)."""

from __future__ import annotations

import io
import re
import threading
from types import SimpleNamespace

import numpy as np
import pytest
import soundfile
from PIL import Image

from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.serving.admission import HTTP_MESSAGES, Request, admit, admit_many
from gemma_explore.serving.kv import start_settings
from gemma_explore.serving.plan import plan_serving
from gemma_explore.vllm_versions import PROFILES, SUPPORTED
from tests.serving.fake_gpu import FakeGpu
from tests.vllm_sources import read_source

from .test_kv import config_only_folder, released_text_config, text_plan
from .test_vllm_errors import vllm_definition

pytestmark = pytest.mark.vllm_version
GiB = 1 << 30


def needs_vllm(test):
    """A test against vLLM's own InputProcessor or EngineArgs: slow, skipped without vLLM."""
    for mark in (
        pytest.mark.vllm,
        pytest.mark.slow,
        pytest.mark.skipif(not vllm_available(), reason="vllm is not installed"),
    ):
        test = mark(test)
    return test


@pytest.fixture(scope="module")
def folders(tmp_path_factory, tiny3n):
    root = tmp_path_factory.mktemp("admit")
    return {
        "31B": config_only_folder(root / "g31", "google/gemma-4-31B-it"),
        "3n": tiny3n.save_pretrained(root / "tiny-gemma3n"),
    }


def _engine(folder, *, max_model_len, mnbt, limits):
    """vLLM's InputProcessor for these engine arguments, and our plan for the same."""
    from vllm.config import DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig
    from vllm.v1.engine.input_processor import InputProcessor

    mc = ModelConfig(
        model=str(folder),
        tokenizer=str(folder),
        dtype="bfloat16",
        max_model_len=max_model_len,
        limit_mm_per_prompt=limits,
    )
    sc = SchedulerConfig(
        max_model_len=max_model_len, is_encoder_decoder=False, max_num_batched_tokens=mnbt
    )
    vc = VllmConfig(model_config=mc, scheduler_config=sc, device_config=DeviceConfig(device="cpu"))
    plan = plan_serving(
        str(folder),
        max_model_len=max_model_len,
        limit_mm_per_prompt=limits,
        max_num_batched_tokens=mnbt,
    )
    return InputProcessor(vc), plan


def _vllm_verdict(processor, request: Request, *, filler: int, placeholder: str):
    """Send the request to vLLM as token ids: ``filler`` ordinary tokens, then one
    placeholder per item (vLLM expands each). Returns (message or None, prompt length,
    embeddings per item)."""
    from vllm import SamplingParams
    from vllm.exceptions import VLLMValidationError

    tok = processor.get_tokenizer()
    word = tok("hello", add_special_tokens=False)["input_ids"][:1]
    data: dict = {}
    marks: list[int] = []
    if request.images:
        marks += [tok.convert_tokens_to_ids(placeholder["image"])] * len(request.images)
        rng = np.random.default_rng(0)
        data["image"] = [
            Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8))
            for h, w in request.images
        ]
    if request.audio_seconds:
        marks += [tok.convert_tokens_to_ids(placeholder["audio"])] * len(request.audio_seconds)
        data["audio"] = [
            (np.zeros(int(s * 16000), np.float32), 16000) for s in request.audio_seconds
        ]
    if request.videos:
        marks += [tok.convert_tokens_to_ids(placeholder["video"])] * len(request.videos)
        rng = np.random.default_rng(1)
        data["video"] = [
            (rng.integers(0, 255, (n, h, w, 3), dtype=np.uint8), {"fps": 1.0})
            for n, h, w in request.videos
        ]
    # One ordinary token between items (part of text_tokens): Gemma 3n's "\n\n" wrappers of
    # two adjacent items would merge into one token.
    ids = word * (filler - max(len(marks) - 1, 0))
    for k, mark in enumerate(marks):
        ids += ([] if k == 0 else word) + [mark]
    prompt = {"prompt_token_ids": ids, "multi_modal_data": data}
    if request.max_soft_tokens is not None:
        prompt["mm_processor_kwargs"] = {"max_soft_tokens": request.max_soft_tokens}
    try:
        out = processor.process_inputs(
            "r", prompt, SamplingParams(max_tokens=1), supported_tasks=("generate",)
        )
    except (
        ValueError,
        RuntimeError,
        VLLMValidationError,
    ) as exc:  # VLLMValidationError's str() adds "(parameter=…)": take the message
        return exc.args[0], None, None
    embeds = [(f.modality, f.mm_position.get_num_embeds()) for f in out.mm_features]
    return None, len(out.prompt_token_ids), embeds


def _compare(processor, plan, request: Request, placeholder):
    ours = admit(plan, request)
    theirs, length, embeds = _vllm_verdict(
        processor, request, filler=request.text_tokens, placeholder=placeholder
    )
    assert ours.message == theirs, request
    assert ours.accepted == (theirs is None)
    if theirs is None:
        assert list(ours.item_tokens) == embeds, request
        if not request.videos:  # a video's timestamps are estimated (6 tokens a frame)
            assert ours.prompt_tokens == length, request
    return ours


G4 = {"image": "<|image|>", "audio": "<|audio|>", "video": "<|video|>"}
G3N = {"image": "<image_soft_token>", "audio": "<audio_soft_token>"}


@needs_vllm
def test_31b_requests(folders):
    """Engine started at the default budget (280) with max_num_batched_tokens 8192: the
    encoder cache holds 8192 embeddings, so a 1120 image is accepted."""
    ip, plan = _engine(
        folders["31B"], max_model_len=4096, mnbt=8192, limits={"image": 2, "video": 0}
    )
    assert plan.max_tokens_per_item["image"] == 280 and plan.encoder_cache_size == 8192
    big = _compare(
        ip, plan, Request(images=((1000, 1000),), text_tokens=20, max_soft_tokens=1120), G4
    )
    assert big.accepted and big.item_tokens == (("image", 1089),)  # 1120 honoured, not 280
    assert _compare(ip, plan, Request(images=((600, 800),) * 2, text_tokens=30), G4).accepted
    limit = _compare(ip, plan, Request(images=((64, 64),) * 3, text_tokens=5), G4)
    assert limit.reason == "limit_mm_per_prompt"
    audio = _compare(ip, plan, Request(images=((64, 64),), audio_seconds=(1.0,)), G4)
    assert audio.reason == "audio"  # the 31B has no audio tower: its parser cannot take a clip
    long = _compare(
        ip, plan, Request(images=((1000, 1000),), text_tokens=3100, max_soft_tokens=1120), G4
    )
    assert long.reason == "max_model_len" and "longer than the maximum" in long.message
    # exactly max_model_len: no room for one output token
    exact = Request(images=((1000, 1000),), text_tokens=4096 - 1091, max_soft_tokens=1120)
    assert _compare(ip, plan, exact, G4).message.startswith("The decoder prompt (length 4096) plus")
    bad = _compare(ip, plan, Request(images=((64, 64),), max_soft_tokens=100), G4)
    assert bad.reason == "budget"


@needs_vllm
def test_31b_small_batches_refuse_the_1120_image(folders):
    """max_num_batched_tokens 512: the encoder cache is max(512, 280) = 512 embeddings; the
    same 1120 request is refused with vLLM's encoder-cache message, the 280 one accepted."""
    ip, plan = _engine(
        folders["31B"], max_model_len=4096, mnbt=512, limits={"image": 2, "video": 0}
    )
    assert plan.encoder_cache_size == 512
    refused = _compare(
        ip, plan, Request(images=((1000, 1000),), text_tokens=20, max_soft_tokens=1120), G4
    )
    assert refused.reason == "encoder_cache_size"
    assert (
        "1089 embedding tokens, which exceeds the pre-allocated encoder cache size 512"
        in refused.message
    )
    assert _compare(ip, plan, Request(images=((1000, 1000),), text_tokens=20), G4).accepted
    mid = _compare(
        ip, plan, Request(images=((1000, 1000),), text_tokens=20, max_soft_tokens=560), G4
    )
    assert mid.reason == "encoder_cache_size"


@needs_vllm
def test_gemma3n_requests(folders):
    ip, plan = _engine(folders["3n"], max_model_len=1024, mnbt=256, limits={"image": 1, "audio": 1})
    both = _compare(
        ip, plan, Request(images=((300, 500),), audio_seconds=(2.0,), text_tokens=12), G3N
    )
    assert both.accepted and both.item_tokens == (("image", 256), ("audio", 188))
    assert _compare(ip, plan, Request(images=((64, 64),) * 2), G3N).reason == "limit_mm_per_prompt"
    long = _compare(
        ip, plan, Request(images=((64, 64),), audio_seconds=(1.0,), text_tokens=600), G3N
    )
    assert long.reason == "max_model_len"


@needs_vllm
def test_videos_and_a_workload_table(folders):
    """Video requests (Gemma 4: every frame at the video budget) and the batch form, each
    row held to vLLM's InputProcessor verdict."""
    ip, plan = _engine(
        folders["31B"], max_model_len=4096, mnbt=8192, limits={"image": 2, "video": 1}
    )
    workload = [
        Request(videos=((4, 480, 640),), text_tokens=20),
        Request(videos=((2, 64, 64),) * 2),
        Request(images=((600, 800),), videos=((3, 300, 300),), text_tokens=10),
        Request(text_tokens=5000),
    ]
    table = admit_many(plan, workload)
    for request, ours in zip(workload, table.results, strict=True):
        theirs, _, embeds = _vllm_verdict(ip, request, filler=request.text_tokens, placeholder=G4)
        assert ours.message == theirs, request
        if theirs is None:
            assert list(ours.item_tokens) == embeds, request
    assert [r.verdict for r in table.results] == ["accepted", "refused", "accepted", "refused"]
    assert table.results[1].reason == "limit_mm_per_prompt"
    assert len(table.table().rows) == 4 and table.accepted == 2


@needs_vllm
def test_gemma3n_ignores_a_request_budget_and_the_audio_past_30_s(folders, caplog):
    """vLLM passes mm_processor_kwargs on to Gemma3nProcessor, which logs and drops
    max_soft_tokens: accepted, 256 per image, with a warning. A 45 s clip: transformers'
    extractor keeps the first 30 s (the features equal those of the 30 s prefix)."""
    import logging

    from transformers import AutoFeatureExtractor

    caplog.set_level(logging.WARNING)
    ip, plan = _engine(folders["3n"], max_model_len=1024, mnbt=256, limits={"image": 1, "audio": 1})
    for budget in (70, 280, 333):
        ours = _compare(ip, plan, Request(images=((300, 500),), max_soft_tokens=budget), G3N)
        assert ours.accepted and ours.item_tokens == (("image", 256),)
        assert any("max_soft_tokens" in w and "ignored" in w for w in ours.warnings)
    said = HTTP_MESSAGES["kwarg-ignored"].format(key="max_soft_tokens")
    assert said in [r.getMessage() for r in caplog.records]  # transformers' own words
    clip = _compare(ip, plan, Request(audio_seconds=(45.0,), text_tokens=12), G3N)
    assert clip.accepted and any("first 30 s" in w for w in clip.warnings)
    assert not _compare(ip, plan, Request(audio_seconds=(20.0,)), G3N).warnings
    fe = AutoFeatureExtractor.from_pretrained(str(folders["3n"]))
    wav = np.random.default_rng(2).standard_normal(45 * 16000).astype(np.float32)
    whole, head = fe(wav, sampling_rate=16000), fe(wav[: 30 * 16000], sampling_rate=16000)
    assert np.array_equal(np.asarray(whole["input_features"]), np.asarray(head["input_features"]))


@needs_vllm
def test_serve_http_layer_is_vllms():
    """What a `vllm serve` chat client meets before the engine, with vLLM's own functions:
    max_tokens above max_model_len (TokenizeParams), per-request mm_processor_kwargs
    without --trust-request-mm-kwargs, and the silent clamp of max_tokens (get_max_tokens)."""
    from vllm.entrypoints.generate.base.protocol import validate_request_mm_kwargs
    from vllm.entrypoints.serve.utils.api_utils import get_max_tokens
    from vllm.exceptions import VLLMValidationError
    from vllm.renderers.params import TokenizeParams

    plan = plan_serving("tiny-gemma4", max_model_len=2048)
    ours = admit(plan, Request(text_tokens=20, max_tokens=4096), entry_point="serve")
    with pytest.raises(VLLMValidationError) as theirs:
        TokenizeParams(
            max_total_tokens=2048,
            max_output_tokens=4096,
            max_total_tokens_param="max_model_len",
            max_output_tokens_param="max_tokens",
        )
    assert (ours.reason, ours.status, ours.message) == ("max_tokens", 400, theirs.value.args[0])
    budget = Request(images=((64, 64),), max_soft_tokens=560)
    with pytest.raises(VLLMValidationError) as theirs:
        validate_request_mm_kwargs(
            mm_processor_kwargs={"max_soft_tokens": 560},
            media_io_kwargs=None,
            trust_request_mm_kwargs=False,
        )
    assert admit(plan, budget, entry_point="serve").message == theirs.value.args[0]
    assert admit(plan, budget, entry_point="serve", trust_request_mm_kwargs=True).accepted
    assert admit(plan, budget).accepted  # LLM(...) takes it
    clamped = admit(plan, Request(text_tokens=1500, max_tokens=1000), entry_point="serve")
    assert clamped.status == 200 and clamped.warnings
    assert clamped.max_tokens == get_max_tokens(2048, 1000, clamped.prompt_tokens, {})


# ----------------------------------------------------------------------- start-up settings


@needs_vllm
@pytest.mark.parametrize(
    "memory,name",
    [
        (24 * GiB, "NVIDIA L4"),
        (80 * GiB, "NVIDIA A100-SXM4-80GB"),
        (80 * GiB, "NVIDIA H100 80GB HBM3"),
        (141 * GiB, "NVIDIA H200"),
        (180 * GiB, "NVIDIA B200"),
    ],
)
def test_entry_point_defaults_equal_vllms(monkeypatch, folders, memory, name):
    """vllm serve and LLM(...) defaults by GPU, then the 31B's raise to its largest item
    (images attend both ways there), through vLLM's own EngineArgs."""
    from vllm.config import ModelConfig, ParallelConfig
    from vllm.engine import arg_utils
    from vllm.engine.arg_utils import EngineArgs
    from vllm.usage.usage_lib import UsageContext

    monkeypatch.setattr(arg_utils, "current_platform", FakeGpu(memory, name))
    mc = ModelConfig(model=str(folders["31B"]), tokenizer=str(folders["31B"]), max_model_len=32768)
    assert mc.is_mm_prefix_lm  # vLLM's reason for forcing disable_chunked_mm_input on CUDA
    plan = plan_serving(str(folders["31B"]), max_model_len=32768)
    for entry, usage in (
        ("serve", UsageContext.OPENAI_API_SERVER),
        ("LLM", UsageContext.LLM_CLASS),
    ):
        args = EngineArgs(model=str(folders["31B"]))
        args._set_default_chunked_prefill_and_prefix_caching_args(mc)  # as create_engine_config
        args._set_default_max_num_seqs_and_batched_tokens_args(usage, mc, ParallelConfig())
        ours = start_settings(plan, entry_point=entry, gpu_memory_bytes=memory, gpu_name=name)
        assert (ours.max_num_batched_tokens, ours.max_num_seqs) == (
            args.max_num_batched_tokens,
            args.max_num_seqs,
        ), (entry, name)
        assert ours.disable_chunked_mm_input


@needs_vllm
def test_forced_chunked_mm_input_refuses_like_vllm(folders):
    """An explicit max_num_batched_tokens below the largest item stops the engine: the same
    words as vLLM's compute_mm_encoder_budget once the flag is on."""
    from vllm.config import SchedulerConfig
    from vllm.v1.core.encoder_cache_manager import compute_mm_encoder_budget

    plan = plan_serving(str(folders["31B"]), max_model_len=8192, max_soft_tokens=1120)
    with pytest.raises(ValueError) as ours:
        start_settings(plan, max_num_batched_tokens=1024)
    sc = SchedulerConfig(
        max_model_len=8192,
        is_encoder_decoder=False,
        max_num_batched_tokens=1024,
        disable_chunked_mm_input=True,
    )
    with pytest.raises(ValueError) as theirs:
        compute_mm_encoder_budget(sc, plan.max_tokens_per_item)
    assert str(ours.value) == str(theirs.value)
    # Gemma 3n's images attend causally: nothing is forced.
    assert not start_settings(plan_serving("tiny-gemma3n")).disable_chunked_mm_input


@needs_vllm
def test_text_plan_helper_is_the_released_shape():
    text = released_text_config("google/gemma-4-31B-it")
    assert text_plan(text, max_model_len=4096).model.use_bidirectional_attention == "vision"


# ------------------------------------------------------- decoded media of a chat request

MEDIA = "multimodal/media"
PHOTO = (3000, 4000)  # a 12 MP photo, (height, width): 48,000,000 B decoded
# In admit's order (images, audio, videos), as vLLM would decode them one after another.
DECODED = [
    Request(images=(PHOTO,) * 14),  # 672,000,000 B: fits
    Request(images=(PHOTO,) * 15),  # the 15th photo crosses 715,827,880 B
    # 150 s of 48 kHz stereo after 14 photos: the clip's reservation is cut to the
    # 43,827,880 B left, and its decoder counts both channels (57,600,000 B) ...
    Request(
        images=(PHOTO,) * 14, audio_seconds=(150.0,), audio_sample_rate=48_000, audio_channels=2
    ),
    # ... while the same clip in mono (28,800,000 B) fits.
    Request(images=(PHOTO,) * 14, audio_seconds=(150.0,), audio_sample_rate=48_000),
    # Two clips each hold 256 MiB only while they decode: 2 photos and both fit.
    Request(images=(PHOTO,) * 2, audio_seconds=(30.0, 30.0), audio_sample_rate=44_100),
    # 7 photos and two 32-frame 1080p videos (199,065,600 B each): the second video crosses.
    Request(images=(PHOTO,) * 7, videos=((32, 1080, 1920),) * 2),
]


def _env_default(version: str, name: str) -> int | None:
    """An envs.py default of the release (None: the release has no such variable)."""
    found = re.search(rf'os\.getenv\(\s*"{name}",\s*"(\d+)"\s*\)', read_source(version, "envs.py"))
    return int(found.group(1)) if found else None


def _vllm_decodes(version: str, request: Request, limit: int) -> tuple[str | None, int]:
    """The release's own decoded-media count of a chat request (its MediaDecodedBudget,
    AudioMediaIO._load_with_budget and soundfile loader, run from its source, on real WAV
    bytes): (its message or None, the bytes it counted)."""
    envs = SimpleNamespace(
        VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES=limit,
        VLLM_MAX_AUDIO_DECODE_BYTES=_env_default(version, "VLLM_MAX_AUDIO_DECODE_BYTES"),
        VLLM_MAX_AUDIO_DECODE_DURATION_S=_env_default(version, "VLLM_MAX_AUDIO_DECODE_DURATION_S"),
    )
    audio = f"{MEDIA}/audio.py"
    budget = vllm_definition(
        version, f"{MEDIA}/base.py", "MediaDecodedBudget", threading=threading, envs=envs
    )()
    from_file = vllm_definition(
        version, audio, "load_audio_soundfile", soundfile=soundfile, np=np, MiB_bytes=1 << 20
    )

    def load_audio(source, *, sr, max_duration_s, max_decode_bytes, backend):
        return from_file(
            source, sr=sr, max_duration_s=max_duration_s, max_decode_bytes=max_decode_bytes
        )

    load = vllm_definition(
        version, audio, "AudioMediaIO._load_with_budget", envs=envs, load_audio=load_audio
    )
    media_io = SimpleNamespace(decoded_budget=budget, audio_backend=None)
    # What the release's image and video readers charge (their own lines).
    assert "self.decoded_budget.charge(w * h * 4)" in read_source(version, f"{MEDIA}/image.py")
    assert "else frames.nbytes" in read_source(version, f"{MEDIA}/video.py")
    try:
        for h, w in request.images:
            budget.charge(w * h * 4)
        for seconds in request.audio_seconds:
            rate = request.audio_sample_rate
            wav = io.BytesIO()
            pcm = np.zeros((round(seconds * rate), request.audio_channels), np.int16)
            soundfile.write(wav, pcm, rate, format="WAV")
            wav.seek(0)
            load(media_io, wav)
        for frames, h, w in request.videos:  # OpenCV's uint8 RGB frames
            budget.charge(np.broadcast_to(np.zeros((), np.uint8), (frames, h, w, 3)).nbytes)
    except ValueError as exc:
        return str(exc), budget.used
    return None, budget.used


@pytest.mark.parametrize("version", SUPPORTED)
def test_a_chat_requests_decoded_media_are_the_releases_count(version):
    """vllm serve refuses (400) exactly the chat requests the release's own decoded-media
    budget refuses, with its message; LLM (LLM.generate) accepts them with a warning; a
    release without the limit counts nothing. The limit admit names lets the whole
    request through that budget, and one byte less does not."""
    plan = plan_serving(
        "tiny-gemma4", max_model_len=8192, limit_mm_per_prompt={"image": 20, "audio": 4, "video": 2}
    )
    profile = PROFILES[version]
    limit = _env_default(version, "VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES")
    assert profile.media_decode_limit_bytes == limit
    if limit is not None:
        reservation = _env_default(version, "VLLM_MAX_AUDIO_DECODE_BYTES")
        assert profile.audio_decode_reservation_bytes == reservation
    verdicts = []
    for request in DECODED:
        serve = admit(plan, request, entry_point="serve", vllm_version=version)
        llm = admit(plan, request, vllm_version=version)
        assert serve.vllm_version == llm.vllm_version == version
        assert serve.steps[0].startswith(f"{profile.label}'s checks")
        warned = [w for w in llm.warnings if "VLLM_MAX_MEDIA_REQUEST_DECODE_BYTES" in w]
        if limit is None:
            assert serve.accepted and serve.decoded_media_bytes is None and not warned
            verdicts.append(None)
            continue
        theirs, used = _vllm_decodes(version, request, limit)
        verdicts.append(theirs is None)
        if theirs is None:
            assert serve.accepted and not warned, request
            assert serve.decoded_media_bytes == used
            continue
        assert (serve.accepted, serve.status, serve.reason) == (False, 400, "media_decode")
        assert serve.message == theirs and llm.accepted and theirs in warned[0]
        needed = int(re.search(r"=(\d+) or more", serve.fix).group(1))
        assert _vllm_decodes(version, request, needed)[0] is None
        assert _vllm_decodes(version, request, needed - 1)[0] is not None
    if limit is None:
        assert "MediaDecodedBudget" not in read_source(version, f"{MEDIA}/base.py")
    else:
        assert verdicts == [True, False, False, True, True, False]
