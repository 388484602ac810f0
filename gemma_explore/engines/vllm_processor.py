"""vLLM's own multimodal processor, run on CPU against a saved copy of a bundle.

vLLM's placeholder logic (the model file's processor and prompt updates) runs without
starting an engine, so it is cheap to call per request (the engine itself runs on a CUDA
GPU or, with vLLM's CPU build, on the CPU: ``engines/vllm.py``). :data:`VLLM_PROCESSORS`
makes each bundle's processor once, from the bundle's folder or from a temporary copy
that is deleted again when the cache is cleared or the process exits.

>>> import gemma_explore as ge
>>> out = vllm_process(ge.load("tiny-gemma4"), "<|image|>", {"image": [ge.sample_photo()]})
>>> out["placeholders"]["image"][0]   # (offset, length, embeddings)
(0, 272, 270)
"""

from __future__ import annotations

import os
import tempfile
import threading
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from gemma_explore.processing.inputs import PreparedInputs

if TYPE_CHECKING:
    from gemma_explore.models.bundle import Bundle

__all__ = [
    "VLLM_PROCESSORS",
    "VllmProcessors",
    "vllm_available",
    "vllm_apply",
    "vllm_mm_data",
    "vllm_process",
]

# vLLM's CPU build scans every loaded module for Triton kernels to swap for C++ ones
# (vllm/triton_utils/dispatcher.py, run when vllm._custom_ops loads). Reading
# torch.distributed.reduce_op on the way raises torch's FutureWarning about its own API:
# a notice for vLLM's developers that would land in a learner's notebook. Only that one
# message is silenced; every other warning still shows.
warnings.filterwarnings(
    "ignore", message=r"`torch\.distributed\.reduce_op` is deprecated", category=FutureWarning
)


def vllm_available() -> bool:
    """True when vLLM's multimodal processor can be imported."""
    try:
        import vllm.multimodal  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return False
    return True


class VllmProcessors:
    """One vLLM multimodal processor per bundle name, made on first use.

    A bundle that is not already a folder on disk (the tiny ones) is saved to a
    temporary folder, which :meth:`clear` deletes (and so does the interpreter's exit,
    through ``TemporaryDirectory``'s own finalizer).
    """

    def __init__(self) -> None:
        self._processors: dict[str, Any] = {}
        self._folders: dict[str, tempfile.TemporaryDirectory] = {}
        self._lock = threading.Lock()

    def folder_of(self, bundle: Bundle) -> str:
        """Where vLLM reads the bundle's checkpoint: its folder, its hub id, or (for the
        tiny in-memory bundles) a temporary copy."""
        if os.path.isdir(bundle.name):
            return bundle.name
        if not bundle.is_random_weights:  # a hub id: vLLM fetches config and tokenizer itself
            return bundle.name
        if bundle.name not in self._folders:
            tmp = tempfile.TemporaryDirectory(prefix="gemma_explore_vllm_")
            bundle.save_pretrained(tmp.name)
            self._folders[bundle.name] = tmp
        return self._folders[bundle.name].name

    def get(self, bundle: Bundle) -> Any:
        """vLLM's processor for ``bundle`` (``MULTIMODAL_REGISTRY.create_processor``)."""
        with self._lock:
            if bundle.name not in self._processors:
                from vllm.config import ModelConfig
                from vllm.multimodal import MULTIMODAL_REGISTRY

                folder = self.folder_of(bundle)
                config = ModelConfig(model=folder, tokenizer=folder, dtype="float32")
                self._processors[bundle.name] = MULTIMODAL_REGISTRY.create_processor(config)
            return self._processors[bundle.name]

    def clear(self) -> None:
        """Forget every processor and delete the temporary folders."""
        with self._lock:
            self._processors.clear()
            for tmp in self._folders.values():
                tmp.cleanup()
            self._folders.clear()


VLLM_PROCESSORS = VllmProcessors()


def vllm_apply(
    bundle: Bundle,
    prompt_text: str,
    mm_data: dict[str, Any],
    mm_kwargs: dict[str, Any] | None = None,
) -> Any:
    """vLLM's processor on a prompt, as its engine runs it: vLLM's own output
    (``prompt_token_ids``, ``mm_placeholders`` as ``PlaceholderRange``s, ``mm_kwargs`` as
    the items the model receives). :func:`vllm_process` is the plain summary of it."""
    from vllm.multimodal.processing.context import TimingContext
    from vllm.multimodal.processing.inputs import ProcessorInputs

    proc = VLLM_PROCESSORS.get(bundle)
    # The chat template already wrote <bos>: no special tokens again.
    ids = proc.info.ctx.tokenizer.encode(prompt_text, add_special_tokens=False)
    items = proc.info.parse_mm_data(mm_data)
    return proc.apply(
        ProcessorInputs(ids, items, hf_processor_mm_kwargs=mm_kwargs or {}),
        TimingContext(enabled=False),
    )


def vllm_process(
    bundle: Bundle,
    prompt_text: str,
    mm_data: dict[str, Any],
    mm_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run vLLM's processor: returns ``{"prompt_token_ids", "placeholders"}`` where
    placeholders maps modality → [(offset, length, num_embeds)]."""
    out = vllm_apply(bundle, prompt_text, mm_data, mm_kwargs)
    ranges = {}
    for modality, lst in out["mm_placeholders"].items():
        ranges[modality] = [
            (r.offset, r.length, int(r.is_embed.sum()) if r.is_embed is not None else r.length)
            for r in lst
        ]
    return {"prompt_token_ids": list(out["prompt_token_ids"]), "placeholders": ranges}


def vllm_mm_data(prepared: PreparedInputs) -> dict[str, Any]:
    """The ``multi_modal_data`` dict vLLM takes for a prepared request."""
    data: dict[str, Any] = {}
    if prepared.images:
        data["image"] = list(prepared.images)
    if prepared.audios:
        data["audio"] = [np.asarray(a, dtype=np.float32) for a in prepared.audios]
    if prepared.videos:
        vids = []
        for v, idx in zip(prepared.videos, prepared.video_frame_indices, strict=True):
            meta = {
                "fps": v.fps,
                "total_num_frames": v.num_frames,
                "frames_indices": list(idx),
                "duration": v.num_frames / v.fps,
                "video_backend": "opencv",
            }
            vids.append((v.frames_at(idx), meta))
        data["video"] = vids
    return data
