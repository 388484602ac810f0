"""Gemma 4 audio through ``vllm serve``: on vLLM 0.32's CPU build the engine dies.

Gemma 4's audio tower runs transformers' conformer inside vLLM, with vLLM's linear layers.
Its light convolution block transposes the depthwise convolution's output back
(``depthwise_conv1d(x.transpose(1, 2)).transpose(1, 2)``), so ``linear_end`` gets a tensor
whose last dimension is not contiguous. CUDA's GEMM takes any strides; vLLM's CPU kernels
do not (``onednn_mm``: "Expected a.stride(-1) == 1" in float32; the AMX packed kernel:
"mat1must be contiguous at last dimension" in bfloat16). The worker raises, the engine
core dies, and ``vllm serve`` exits: every later request is refused.

This file runs last in tests/serve (it takes the Gemma 4 server down; the next test that
needs one starts another). On CUDA it checks the success path instead. When vLLM's CPU
build fixes this, the CPU branch fails: then Gemma 4 audio joins test_chat.py.
"""

from __future__ import annotations

import time

import pytest

import gemma_explore as ge
from gemma_explore.errors import EngineError
from gemma_explore.processing.layout import layout_prompt

from .conftest import on_cpu

pytestmark = pytest.mark.vllm

CPU_KERNEL_ERRORS = ("Expected a.stride(-1) == 1", "mat1must be contiguous at last dimension")


def test_gemma4_audio_chat(gemma4_server, tiny4, tone):
    bundle = ge.load(gemma4_server.name, engine="openai", base_url=gemma4_server.base_url)
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "audio", "audio": (tone, 16_000)},
                {"type": "text", "text": "What is this?"},
            ],
        }
    ]
    if not on_cpu():
        gen = bundle.generate(messages, max_new_tokens=4)
        assert gen.text and gen.prompt_tokens == len(
            layout_prompt(messages, bundle=tiny4).input_ids
        )
        return
    with pytest.raises(EngineError, match="answered 500: .*EngineCore encountered an issue"):
        bundle.generate(messages, max_new_tokens=4)
    gemma4_server.process.wait(timeout=120)  # vllm serve exits once its engine is dead
    time.sleep(0.5)
    log = gemma4_server.log.read_text(errors="replace")
    assert "_process_audio_input" in log and "linear_end" in log
    assert any(error in log for error in CPU_KERNEL_ERRORS), gemma4_server.log_tail()
