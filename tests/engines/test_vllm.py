"""The vLLM engine around the engine: arguments, requests, errors, with a stand-in engine
that records what it was given. The real engine (vLLM's CPU build) runs in tests/vllm_engine/."""

import sys
import typing
from types import SimpleNamespace

import numpy as np
import pytest

import gemma_explore as ge
from gemma_explore.engines import serve_args as sa
from gemma_explore.engines import vllm as vb
from gemma_explore.engines.vllm_processor import vllm_available, vllm_process

needs_vllm = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")


def test_engine_args_defaults():
    args = sa.engine_args("google/gemma-4-E4B-it", family="gemma4", max_soft_tokens=1120)
    assert args["mm_processor_kwargs"] == {"max_soft_tokens": 1120}
    assert args["limit_mm_per_prompt"] == {"image": 4, "audio": 1, "video": 1}
    assert args["enforce_eager"] and args["max_model_len"] == 8192
    assert args["trust_remote_code"] is False
    args3 = sa.engine_args("google/gemma-3n-E2B-it", family="gemma3n", max_model_len=4096)
    assert "mm_processor_kwargs" not in args3 and "video" not in args3["limit_mm_per_prompt"]
    assert args3["max_model_len"] == 4096
    with pytest.raises(ValueError, match="1120"):
        sa.engine_args("x", family="gemma4", max_soft_tokens=333)


@needs_vllm
def test_request_is_a_vllm_text_prompt(tiny4, photo, tone):
    from vllm.inputs import TextPrompt

    prepared = ge.prepare_inputs(
        "Hi", bundle=tiny4, images=[photo], audios=[(tone, 16000)], max_soft_tokens=70
    )
    request = vb.vllm_request(prepared)
    allowed = set(typing.get_type_hints(TextPrompt))
    assert set(request) <= allowed and request["prompt"] == prepared.text
    assert request["mm_processor_kwargs"] == {"max_soft_tokens": 70}
    # vLLM's own processor takes the request as is and agrees with our layout.
    out = vllm_process(
        tiny4, request["prompt"], request["multi_modal_data"], request["mm_processor_kwargs"]
    )
    assert out["prompt_token_ids"] == prepared.input_ids


def test_generate_passes_data_and_budget_to_the_engine(tiny4, photo, monkeypatch):
    seen = {}

    class FakeLLM:
        def generate(self, requests, params, use_tqdm=False):
            seen["requests"], seen["params"] = requests, params
            return [
                SimpleNamespace(
                    prompt_token_ids=ge.prepare_inputs(
                        "Hi", bundle=tiny4, images=[photo], max_soft_tokens=140
                    ).input_ids,
                    outputs=[SimpleNamespace(text="a cat", token_ids=[1, 2, 3])],
                    metrics=None,
                )
            ]

    engine = vb.VllmEngine(FakeLLM(), "gemma4")
    bundle = ge.Bundle("fake", "gemma4", tiny4.processor, None, engine, False)
    assert bundle.engine.name == "vllm"
    if not vllm_available():
        monkeypatch.setitem(
            sys.modules, "vllm", SimpleNamespace(SamplingParams=lambda **kw: SimpleNamespace(**kw))
        )
    gen = bundle.generate("Hi", images=[photo], max_new_tokens=3, max_soft_tokens=140)
    (request,) = seen["requests"]
    assert request["mm_processor_kwargs"] == {"max_soft_tokens": 140}
    assert len(request["multi_modal_data"]["image"]) == 1
    assert seen["params"].max_tokens == 3
    plan = ge.plan_image(photo, family="gemma4", max_soft_tokens=140)
    assert gen.text == "a cat" and gen.multimodal_tokens == plan.num_soft_tokens


def test_cpu_engine_args_size_the_kv_cache_in_bytes():
    args = sa.engine_args("x", family="gemma4", device="cpu")
    assert "gpu_memory_utilization" not in args and args["dtype"] == "float32"
    assert args["kv_cache_memory_bytes"] == sa.CPU_KV_CACHE_BYTES
    assert sa.engine_args("x", family="gemma4", device="cpu", dtype="bfloat16")["dtype"] == (
        "bfloat16"
    )


@needs_vllm
def test_no_vllm_platform_is_a_clear_error(monkeypatch):
    from vllm.platforms import current_platform

    monkeypatch.setattr(type(current_platform), "is_unspecified", lambda self: True)
    with pytest.raises(RuntimeError, match="install_vllm.py"):
        ge.load("tiny-gemma4", engine="vllm")


def test_missing_vllm_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(ImportError, match=r"\.\[vllm\]"):
        vb.start_vllm("x", family="gemma4")


def test_video_request_carries_frames_and_metadata(tiny4):
    frames = np.random.RandomState(0).randint(0, 255, (40, 72, 128, 3), np.uint8)
    prepared = ge.prepare_inputs("What happens?", bundle=tiny4, videos=[(frames, 8.0)])
    ((clip, meta),) = vb.vllm_request(prepared)["multi_modal_data"]["video"]
    assert clip.shape[0] == 32 and meta["fps"] == 8.0 and len(meta["frames_indices"]) == 32


@needs_vllm
@pytest.mark.vllm_version  # releases differ: the newer walk guards against this object
def test_in_process_engines_survive_numbas_llvmlite():
    """Once librosa has JIT-compiled (any mel spectrogram), llvmlite's `lib` object answers
    every attribute, `__dict__` too; the start-up walk over the loaded modules of the vLLM
    releases that read `vars(value).get("kernel")` unguarded then died with
    "'_lib_fn_wrapper' object has no attribute 'get'" (a release whose walk guards against
    it says so in its comment, naming llvmlite). The guard gives that one object an empty
    `__dict__` and leaves the library working, in every release."""
    import inspect

    import numpy as np

    librosa = pytest.importorskip("librosa")
    librosa.feature.melspectrogram(y=np.zeros(4000, dtype=np.float32), sr=16000)
    from llvmlite.binding import ffi
    from vllm.triton_utils import dispatcher

    from gemma_explore.engines.vllm import _let_vllm_scan_llvmlite

    # vLLM's walk over sys.modules (renamed _rebind_impls in newer releases)
    walk = getattr(dispatcher, "_rebind_kernels", None) or dispatcher._rebind_impls
    if not isinstance(getattr(ffi.lib, "__dict__", None), dict):  # not yet guarded here
        try:
            walk([])
            tripped = False
        except AttributeError as exc:
            assert "_lib_fn_wrapper" in str(exc)
            tripped = True
        assert tripped == ("llvmlite" not in inspect.getsource(walk))
    _let_vllm_scan_llvmlite()
    assert vars(ffi.lib) == {}
    walk([])  # vLLM's own walk now passes
    assert callable(ffi.lib.LLVMPY_GetProcessTriple)  # the library still answers
    librosa.feature.melspectrogram(y=np.ones(4000, dtype=np.float32), sr=16000)


@pytest.fixture(scope="module")
def no_audio_bundle(tmp_path_factory, tiny4):
    """A tiny Gemma 4 saved without audio_config, like the 26B-A4B and 31B."""
    from transformers import Gemma4ForConditionalGeneration

    from gemma_explore.models.tiny import tiny_config

    config = tiny_config("gemma4")
    config.audio_config = None
    folder = tmp_path_factory.mktemp("no-audio")
    Gemma4ForConditionalGeneration(config).save_pretrained(folder)
    tiny4.processor.save_pretrained(folder)
    return ge.load(folder)


@needs_vllm
@pytest.mark.vllm
def test_the_audio_less_refusals_are_vllms(no_audio_bundle):
    """engine_args' sentence, phrase by phrase, against vLLM's processor for a checkpoint
    without audio: a clip with its rate fails first in the data parser; a bare array
    parses and fails at the count check."""
    import re

    from gemma_explore.engines.vllm_processor import VLLM_PROCESSORS

    doc = re.sub(r"\s+", " ", sa.engine_args.__doc__)
    with_rate, bare = re.findall(r'"([^"]+)"', doc.split("has_audio=False")[1])[:2]
    info = VLLM_PROCESSORS.get(no_audio_bundle).info
    wave = np.zeros(1600, np.float32)
    with pytest.raises(RuntimeError) as parsed:
        info.parse_mm_data({"audio": [(wave, 16_000)]})
    assert with_rate in str(parsed.value)
    parsed_bare = info.data_parser.parse_mm_data({"audio": [wave]})  # the parser takes it
    assert len(parsed_bare["audio"]) == 1
    with pytest.raises(ValueError) as counted:  # then the count check refuses it
        info.parse_mm_data({"audio": [wave]})
    assert bare in str(counted.value)


class _StandInCore:
    """Stands for vLLM's EngineCore: its shutdown ends, as the real one's does, with
    the module's cleanup_dist_env_and_memory (looked up when it runs)."""

    def __init__(self) -> None:
        self.shutdowns = 0

    def shutdown(self) -> None:
        import vllm.v1.engine.core as core_module

        self.shutdowns += 1
        core_module.cleanup_dist_env_and_memory()


class _StandInClient:
    """Stands for vLLM's in-process client: a finalizer that shuts the core down, and a
    shutdown() that detaches it first."""

    def __init__(self, core: _StandInCore) -> None:
        import weakref

        self.engine_core = core
        self._finalizer = weakref.finalize(self, core.shutdown)

    def shutdown(self) -> None:
        if self._finalizer.detach() is not None:
            self.engine_core.shutdown()


def _stand_in_llm() -> SimpleNamespace:
    return SimpleNamespace(llm_engine=SimpleNamespace(engine_core=_StandInClient(_StandInCore())))


@needs_vllm
def test_the_release_tears_the_groups_down_at_every_engines_shutdown():
    """What the shared shutdown guards against, in the installed vLLM's own code: the
    in-process client's finalizer is the core's shutdown, and that ends by destroying the
    process's distributed groups."""
    import inspect

    from vllm.v1.engine.core import EngineCore
    from vllm.v1.engine.core_client import InprocClient

    assert "cleanup_dist_env_and_memory()" in inspect.getsource(EngineCore.shutdown)
    init = inspect.getsource(InprocClient.__init__)
    assert "weakref.finalize(self, self.engine_core.shutdown)" in init


@needs_vllm
def test_in_process_engines_keep_the_groups_until_the_last_one_goes(monkeypatch):
    import gc
    import weakref

    import vllm.v1.engine.core as core_module

    teardowns: list[int] = []
    monkeypatch.setattr(vb, "_LIVE_IN_PROCESS", weakref.WeakSet())
    monkeypatch.setattr(core_module, "cleanup_dist_env_and_memory", lambda: teardowns.append(1))
    first, second = _stand_in_llm(), _stand_in_llm()
    vb._share_process_state(first)
    vb._share_process_state(second)
    first_core = first.llm_engine.engine_core.engine_core
    second_core = second.llm_engine.engine_core.engine_core
    first.llm_engine.engine_core.shutdown()  # closed, with the second still running
    assert first_core.shutdowns == 1 and teardowns == []
    first.llm_engine.engine_core.shutdown()  # again: nothing more
    assert first_core.shutdowns == 1
    del second  # dropped, not closed: its finalizer shuts it down, the last one
    gc.collect()
    assert second_core.shutdowns == 1 and teardowns == [1]
    assert core_module.cleanup_dist_env_and_memory is not vb._free_memory_only


class _FailingEngine:
    """Stands for ``llm.llm_engine``: takes the request, or refuses it at add_request;
    then its step raises."""

    def __init__(self, *, refuse: Exception | None = None, step: Exception | None = None):
        self.refuse, self.fail = refuse, step
        self.engine_core = SimpleNamespace(engine_core=object())  # in this process
        self.output_processor = SimpleNamespace(request_states={})

    def add_request(self, request_id, prompt, params):
        if self.refuse is not None:
            raise self.refuse
        self.output_processor.request_states[request_id] = prompt
        return request_id

    def has_unfinished_requests(self) -> bool:
        return bool(self.output_processor.request_states)

    def step(self):
        raise self.fail

    def abort_request(self, ids, internal=False):
        for i in ids:
            self.output_processor.request_states.pop(i, None)


@needs_vllm
@pytest.mark.parametrize("groups", [True, False])
def test_only_a_refusal_is_called_one(tiny4, monkeypatch, groups):
    """vLLM refuses a request at add_request (its input processing); a step that fails
    afterwards is the engine's fault, and where the process's distributed groups are gone
    the one line says to restart the kernel."""
    import vllm.distributed.parallel_state as ps

    monkeypatch.setattr(ps, "model_parallel_is_initialized", lambda: groups)
    prepared = ge.prepare_inputs("Hi", bundle=tiny4)

    def engine(**kw):
        return vb.VllmEngine(SimpleNamespace(llm_engine=_FailingEngine(**kw)), "gemma4")

    if groups:
        with pytest.raises(ge.EngineError, match="^vLLM refused the request: ValueError: no"):
            engine(refuse=ValueError("no")).generate(prepared, max_new_tokens=2)
        failing = engine(step=RuntimeError("boom"))
        with pytest.raises(ge.EngineError) as info:
            failing.generate(prepared, max_new_tokens=2)
        said = str(info.value)
        assert said.startswith("vLLM's engine failed while answering: RuntimeError: boom")
        assert "refused" not in said and "restart the kernel" in said
        assert not failing.llm.llm_engine.has_unfinished_requests()  # drained
    else:
        lost = AssertionError("pipeline model parallel group is not initialized")
        for kind in ("generate", "stream"):
            with pytest.raises(ge.EngineError) as info:
                if kind == "generate":
                    engine(step=lost).generate(prepared, max_new_tokens=2)
                else:
                    list(engine(step=lost).stream(prepared, max_new_tokens=2))
            assert str(info.value) == vb.VLLM_LOST_STATE
            assert "refused" not in str(info.value) and "Restart the kernel" in str(info.value)


def test_a_closed_engine_says_to_load_again(tiny4):
    closed = vb.VllmEngine(None, "gemma4")
    prepared = ge.prepare_inputs("Hi", bundle=tiny4)
    with pytest.raises(ge.EngineError, match="was closed: load the model again"):
        closed.generate(prepared)
    with pytest.raises(ge.EngineError, match="was closed"):
        list(closed.stream(prepared))
    closed.close()  # closing a closed engine is harmless
