"""What vLLM says, and does not refuse, for inputs past its limits: Gemma 4's over-long
audio warning and the refusal of precomputed image embeddings, held to vLLM's own code."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from gemma_explore.engines.vllm_processor import vllm_available, vllm_process
from gemma_explore.plans.vllm import vllm_audio_warning, vllm_image_embeds_error

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(not vllm_available(), reason="vllm is not installed"),
]


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.mark.parametrize("seconds", [29.99, 30.0, 30.5, 45.0])
def test_the_over_long_audio_warning_is_vllms(tiny4, seconds):
    """vLLM's Gemma 4 processor logs one line past audio_seq_length × 40 ms and goes on;
    our function gives the same line, or None where vLLM is silent."""
    import vllm.model_executor.models.gemma4_mm as vmod

    n = round(seconds * 16_000)
    handler = _Lines()
    logger = logging.getLogger(vmod.__name__)
    logger.addHandler(handler)
    try:
        out = vllm_process(tiny4, tiny4.spec.audio_token, {"audio": [np.zeros(n, np.float32)]})
    finally:
        logger.removeHandler(handler)
    theirs = [line for line in handler.lines if line.startswith("Audio duration")]
    ours = vllm_audio_warning(n, audio_seq_length=tiny4.processor.audio_seq_length)
    assert theirs == ([ours] if ours else [])
    assert out["placeholders"]["audio"]  # a warning, not a refusal


def test_gemma3n_processor_logs_no_such_warning(tiny3n):
    """vLLM's Gemma 3n processor takes a 45 s clip without a word (its count is fixed at
    188); our function says the same."""
    import vllm.model_executor.models.gemma3n_mm as v3n

    handler = _Lines()
    logger = logging.getLogger(v3n.__name__)
    logger.addHandler(handler)
    try:
        out = vllm_process(
            tiny3n, tiny3n.spec.audio_token, {"audio": [np.zeros(45 * 16_000, np.float32)]}
        )
    finally:
        logger.removeHandler(handler)
    assert out["placeholders"]["audio"]
    assert not [line for line in handler.lines if "exceeds" in line or "Audio" in line]
    assert vllm_audio_warning(45 * 16_000, family="gemma3n") is None


@pytest.mark.parametrize("name", ["tiny4", "tiny3n"])
def test_image_embeds_are_refused_as_we_say(name, request):
    """Without --enable-mm-embeds vLLM's parser refuses the tensor; with it, the model
    class's own check does."""
    import torch

    from gemma_explore.engines.vllm_processor import VLLM_PROCESSORS

    bundle = request.getfixturevalue(name)
    info = VLLM_PROCESSORS.get(bundle).info
    assert not info.ctx.get_mm_config().enable_mm_embeds  # vLLM's default
    embeds = torch.zeros(1, 4, bundle.model.config.text_config.hidden_size)
    with pytest.raises(ValueError) as parsed:
        info.parse_mm_data({"image": embeds})
    assert str(parsed.value) == vllm_image_embeds_error(bundle.spec)
    if name == "tiny4":
        from vllm.model_executor.models.gemma4_mm import Gemma4ForConditionalGeneration as M
    else:
        from vllm.model_executor.models.gemma3n_mm import Gemma3nForConditionalGeneration as M
    with pytest.raises(AssertionError) as checked:
        M._parse_and_validate_image_input(None, image_embeds=embeds[0])
    assert str(checked.value) == vllm_image_embeds_error(bundle.spec, enable_mm_embeds=True)
