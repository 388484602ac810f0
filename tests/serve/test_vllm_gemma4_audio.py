"""Gemma 4 audio through ``vllm serve``: on vLLM 0.32's CPU build the engine dies on some
CPUs and answers on others (an AMD EPYC answers); the test asserts what holds here.

Gemma 4's audio tower runs transformers' conformer inside vLLM, with vLLM's linear layers.
Its light convolution block transposes the depthwise convolution's output back
(``depthwise_conv1d(x.transpose(1, 2)).transpose(1, 2)``), so ``linear_end`` gets a tensor
whose last dimension is not contiguous. CUDA's GEMM takes any strides; vLLM's CPU kernels
do not (``onednn_mm``: "Expected a.stride(-1) == 1" in float32; the AMX packed kernel:
"mat1must be contiguous at last dimension" in bfloat16). The worker raises, the engine
core dies, and ``vllm serve`` exits: every later request is refused.

This file runs last in tests/serve (where the engine dies it takes the Gemma 4 server
down; the next test that needs one starts another). Where the engine answers (CUDA, and
CPUs whose kernel takes the strides) the prompt tokens must equal the layout's; where it
dies, the log must name the tower's layer and the kernel's words.
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
    want = len(layout_prompt(messages, bundle=tiny4).input_ids)
    try:
        gen = bundle.generate(messages, max_new_tokens=4)
    except EngineError as err:
        # Only vLLM's CPU kernels refuse the strided tensor, and not on every CPU: which
        # kernel runs depends on the processor (an AMD EPYC runs one that takes it).
        assert on_cpu(), err
        assert "answered 500" in str(err) and "EngineCore encountered an issue" in str(err)
    else:
        assert gen.text and gen.prompt_tokens == want  # the machine's kernels took it
        return
    gemma4_server.process.wait(timeout=120)  # vllm serve exits once its engine is dead
    time.sleep(0.5)
    log = gemma4_server.log.read_text(errors="replace")
    assert "_process_audio_input" in log and "linear_end" in log
    assert any(error in log for error in CPU_KERNEL_ERRORS), gemma4_server.log_tail()
