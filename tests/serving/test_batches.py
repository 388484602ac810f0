"""Image batching (issue 22, item 5): our buckets and chunks equal the encoder calls vLLM's
own _process_image_input makes, run on CPU with the tower replaced by a recorder; our LoRA
counts equal its get_mm_lora_token_counts.

Each supported release's own methods: the installed vLLM's, imported; another release's,
read from its unpacked source (``tests/vllm_sources.py``; skipped with one line where it
is absent) with ``ast`` and executed with stand-ins for their imports (torch is real).
"""

from __future__ import annotations
import __future__

import ast
import contextlib
import functools
import math
import types
from collections.abc import Mapping
from typing import Any

import pytest
import torch

from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.serving.batches import plan_image_batches
from gemma_explore.vllm_versions import SUPPORTED, installed_vllm, vllm_profile
from tests.vllm_sources import read_source

pytestmark = [
    pytest.mark.vllm_version,
    pytest.mark.skipif(not vllm_available(), reason="vllm is not installed"),
]
INSTALLED = vllm_profile().version if installed_vllm() else None
GEMMA4 = "model_executor/models/gemma4_mm.py"
# The methods the image batching and the LoRA counts run (a release has those it has:
# with encoder data parallelism, _process_image_input hands each rank's share to
# _process_image_input_local, which then does what _process_image_input did).
METHODS = (
    "_encoder_chunk",
    "_get_max_soft_tokens",
    "_process_image_input",
    "_process_image_input_local",
    "get_mm_lora_token_counts",
)
TABLES = ("_SUPPORTED_SOFT_TOKENS", "_VIDEO_MAX_SOFT_TOKENS", "_get_max_soft_tokens")


@functools.cache
def _gemma4(version: str) -> type:
    """A class with Gemma 4's batching methods of ``version``."""
    if version == INSTALLED:
        from vllm.model_executor.models.gemma4_mm import Gemma4ForConditionalGeneration as G

        return type("Gemma4Batching", (), {n: G.__dict__[n] for n in METHODS if n in G.__dict__})
    tree = ast.parse(read_source(version, GEMMA4))
    tables = [
        n
        for n in tree.body
        if (isinstance(n, ast.FunctionDef) and n.name in TABLES)
        or (isinstance(n, ast.Assign) and any(getattr(t, "id", None) in TABLES for t in n.targets))
    ]
    (cls,) = [
        n
        for n in tree.body
        if isinstance(n, ast.ClassDef) and n.name == "Gemma4ForConditionalGeneration"
    ]
    body = [f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name in METHODS]
    new = ast.ClassDef(name="Gemma4Batching", bases=[], keywords=[], body=body, decorator_list=[])
    module = ast.fix_missing_locations(ast.Module(body=[*tables, new], type_ignores=[]))
    namespace = {
        "torch": torch,
        "math": math,
        "Mapping": Mapping,
        "Any": Any,
        "gpu_sync_allowed": contextlib.nullcontext,
    }
    flags = __future__.annotations.compiler_flag  # annotations stay unevaluated
    exec(
        compile(module, f"vLLM {version} {GEMMA4}", "exec", flags=flags, dont_inherit=True),
        namespace,
    )
    return namespace["Gemma4Batching"]


class _Stop(Exception):
    pass


def _vllm_calls(patches, frees, total, lora_budget=None, monkeypatch=None, version=None):
    """Run the release's _process_image_input (``_process_image_input_local`` where it has
    one); return the image indices of each encoder call."""
    G = _gemma4(version or INSTALLED)
    process = getattr(G, "_process_image_input_local", None) or G._process_image_input

    calls, free_iter = [], iter(frees)
    monkeypatch.setattr(torch.accelerator, "get_memory_info", lambda: (next(free_iter), total))
    pv = [torch.full((n, 3), float(i)) for i, n in enumerate(patches)]  # image i's rows hold i
    pp = [torch.zeros(n, 2, dtype=torch.long) for n in patches]

    def encoder(inputs_embeds, attention_mask, pixel_position_ids):
        calls.append(tuple(int(x) for x in inputs_embeds[:, 0, 0]))
        return types.SimpleNamespace(last_hidden_state=inputs_embeds)

    def pooler(**_):
        raise _Stop

    vt = types.SimpleNamespace(
        patch_embedder=lambda pv, pp, pad: pv, encoder=encoder, pooler=pooler
    )
    cfg = types.SimpleNamespace(
        vision_config=types.SimpleNamespace(
            pooling_kernel_size=3,
            position_embedding_size=10_240,
            default_output_length=lora_budget or 280,
        )
    )
    stub = types.SimpleNamespace(
        vision_tower=vt,
        config=cfg,
        model_dtype=torch.float32,
        _enable_mm_lora=lora_budget is not None,
        _encoder_chunk=G._encoder_chunk,
        _embed_patches=lambda pv, pp, pad: pv,  # the patch embedder, where a release inlines it
        multimodal_config=None,
    )
    if hasattr(G, "_get_max_soft_tokens"):
        stub._get_max_soft_tokens = lambda: G._get_max_soft_tokens(stub)
    with pytest.raises(_Stop):
        process(stub, {"pixel_values": pv, "pixel_position_ids": pp})
    return tuple(calls)


@pytest.mark.parametrize(
    "patches, frees",
    [
        ([2520, 630, 2520, 2520], [1 * 2**30, 8 * 2**30]),
        ([10080] * 5 + [630], [3 * 2**30, 1 * 2**30]),
        ([1260, 2520, 5040, 1260], [2**31, 2**30, 2**29]),
    ],
)
@pytest.mark.parametrize("version", SUPPORTED)
def test_buckets_and_chunks_equal_vllms(patches, frees, version, monkeypatch):
    total = 80 * 2**30
    ours = plan_image_batches(patches, free_bytes=frees, total_bytes=total, vllm_version=version)
    assert ours.vllm_version == version
    assert ours.chunks == _vllm_calls(
        patches, frees, total, monkeypatch=monkeypatch, version=version
    )


@pytest.mark.parametrize("version", SUPPORTED)
def test_lora_pads_all_images_into_one_call(version, monkeypatch):
    patches = [630, 2520]
    ours = plan_image_batches(
        patches, free_bytes=0, total_bytes=0, lora_max_soft_tokens=280, vllm_version=version
    )
    assert ours.lora_padded_to == 2520
    theirs = _vllm_calls(patches, [], 0, lora_budget=280, monkeypatch=monkeypatch, version=version)
    assert ours.chunks == theirs


@pytest.mark.parametrize("version", SUPPORTED)
def test_lora_refuses_a_bigger_image_with_vllms_words(version, monkeypatch):
    with pytest.raises(ValueError) as theirs:
        _vllm_calls([10080], [], 0, lora_budget=280, monkeypatch=monkeypatch, version=version)
    with pytest.raises(ValueError) as ours:
        plan_image_batches(
            [10080], free_bytes=0, total_bytes=0, lora_max_soft_tokens=280, vllm_version=version
        )
    assert str(ours.value).startswith(str(theirs.value))


@pytest.mark.parametrize("engine_budget", [None, 560, 1120, 300])
@pytest.mark.parametrize("num_embeds", [1, 70, 140, 281, 2240])
@pytest.mark.parametrize("version", SUPPORTED)
def test_lora_token_counts_equal_vllms(engine_budget, num_embeds, version):
    """Each release's own get_mm_lora_token_counts, on a stub with Gemma 4's vision config
    and the engine's mm_processor_kwargs, with and without the item's tensors."""
    from gemma_explore.serving.batches import lora_token_counts

    G = _gemma4(version)

    kwargs = None if engine_budget is None else {"max_soft_tokens": engine_budget}
    stub = types.SimpleNamespace(
        config=types.SimpleNamespace(
            vision_config=types.SimpleNamespace(pooling_kernel_size=3, default_output_length=280)
        ),
        multimodal_config=types.SimpleNamespace(mm_processor_kwargs=kwargs),
    )
    if hasattr(G, "_get_max_soft_tokens"):  # the engine's budget, read by its own method
        stub._get_max_soft_tokens = lambda: G._get_max_soft_tokens(stub)

    def field(shape):  # a MultiModalFieldElem: only .data is read
        return types.SimpleNamespace(data=torch.zeros(shape))

    frames = -(-num_embeds // 70)
    video = {"pixel_values_videos": field((frames, 630, 12))}
    audio = {"input_features_padded": field((1, 4 * num_embeds + 3, 128))}
    cases = [
        ("image", None, {}),
        ("video", None, {}),
        ("video", video, {"video_patch_rows": frames * 630}),
        ("audio", None, {}),
        ("audio", audio, {"audio_feature_frames": 4 * num_embeds + 3}),
    ]
    for modality, mm_kwargs, ours_kwargs in cases:
        theirs = G.get_mm_lora_token_counts(
            stub, modality=modality, mm_kwargs=mm_kwargs, num_mm_embeds=num_embeds
        )
        ours = lora_token_counts(
            modality,
            num_embeds=num_embeds,
            max_soft_tokens=engine_budget,
            vllm_version=version,
            **ours_kwargs,
        )
        assert (ours.tower_tokens, ours.connector_tokens) == theirs, (modality, mm_kwargs)
    with pytest.raises(ValueError, match="Unsupported modality"):
        G.get_mm_lora_token_counts(stub, modality="text", mm_kwargs=None, num_mm_embeds=1)
    with pytest.raises(ValueError, match="Unsupported modality"):
        lora_token_counts("text", num_embeds=1)
