"""Gemma 4 audio through ``vllm serve``: the engine answers or dies by the CPU linear
kernel vLLM's CPU build chose on this machine; the test asks vLLM's own dispatch which.

Gemma 4's audio tower runs transformers' conformer inside vLLM, with vLLM's linear layers.
Its light convolution block transposes the depthwise convolution's output back
(``depthwise_conv1d(x.transpose(1, 2)).transpose(1, 2)``), so ``linear_end`` gets a tensor
whose last dimension is strided. CUDA's GEMM takes any strides. On the CPU,
``dispatch_cpu_unquantized_gemm`` picks the kernel per machine (tests/vllm_cpu_linear.py):
oneDNN's ``onednn_mm`` ("Expected a.stride(-1) == 1") and the AMX sgl kernel, bfloat16
on CPUs with AMX tiles ("mat1must be contiguous at last dimension"), refuse it; torch's
linear (no oneDNN in the build) takes it. Where it is refused the worker raises, the engine
core dies and ``vllm serve`` exits: every later request is refused.

This file runs last in tests/serve (where the engine dies it takes the Gemma 4 server
down; the next test that needs one starts another).
"""

from __future__ import annotations

import time

import pytest

import gemma_explore as ge
from gemma_explore.errors import EngineError
from gemma_explore.processing.layout import layout_prompt

from .conftest import gemma4_audio_kernel

pytestmark = pytest.mark.vllm


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
    kernel = gemma4_audio_kernel(gemma4_server)  # None: CUDA
    if kernel is None or kernel.takes_strided_input:
        gen = bundle.generate(messages, max_new_tokens=4)
        assert gen.text and gen.prompt_tokens == want, kernel
        return
    with pytest.raises(EngineError) as err:
        bundle.generate(messages, max_new_tokens=4)
    said = str(err.value)
    assert "answered HTTP 500" in said and "EngineCore encountered an issue" in said, said
    gemma4_server.process.wait(timeout=120)  # vllm serve exits once its engine is dead
    time.sleep(0.5)
    log = gemma4_server.log.read_text(errors="replace")
    # The tower's layer, the kernel vLLM chose here (its function in the traceback), and
    # the kernel's own words: what the same kernel said to the same tensor shape above.
    assert "_process_audio_input" in log and "linear_end" in log, gemma4_server.log_tail()
    assert kernel.function in log, (kernel, gemma4_server.log_tail())
    assert kernel.error.split("(Could")[0].strip() in log, (kernel, gemma4_server.log_tail())
