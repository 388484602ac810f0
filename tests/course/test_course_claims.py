"""Claims the course makes in prose about code it does not run in the notebook, held to the
real thing: the language model's positions (notebook 01, section 5) and a video's sound
(notebook 04, section 4)."""

from __future__ import annotations

import pytest
import torch

import gemma_explore as ge
from gemma_explore.samples import sample_photo


@pytest.fixture(scope="module")
def tiny4():
    return ge.load("tiny-gemma4")


def test_the_language_model_numbers_soft_tokens_one_after_another(tiny4):
    """transformers: the text model's rotary embedding gets 1-D positions 0, 1, 2, …, the
    image's soft tokens included: nothing 2-D reaches the language model."""
    prepared = ge.prepare_inputs("", images=[sample_photo()], bundle=tiny4)
    text_model = tiny4.model.model.language_model
    seen = []
    hook = text_model.rotary_emb.register_forward_hook(
        lambda _m, args, _out: seen.append(args[1].clone())
    )
    try:
        with torch.no_grad():
            tiny4.model(**prepared.batch)
    finally:
        hook.remove()
    n = len(prepared.input_ids)
    assert seen and all(p.shape == (1, n) for p in seen)  # (batch, sequence): one axis
    assert all(torch.equal(p[0], torch.arange(n)) for p in seen)


def test_vllm_gives_gemma_no_multidimensional_positions():
    pytest.importorskip("vllm")
    from vllm.model_executor.models.gemma3n_mm import Gemma3nForConditionalGeneration
    from vllm.model_executor.models.gemma4_mm import Gemma4ForConditionalGeneration
    from vllm.model_executor.models.interfaces import supports_mrope

    assert not supports_mrope(Gemma4ForConditionalGeneration)
    assert not supports_mrope(Gemma3nForConditionalGeneration)


def test_a_video_brings_no_sound_unless_asked(tiny4):
    """The video item's run holds frames and stamps only; transformers' chat template can
    add the file's audio track as a separate item (load_audio_from_video)."""
    from transformers.processing_utils import ProcessorChatTemplateKwargs

    from gemma_explore.samples import sample_video

    layout = ge.layout_prompt("What happens?", bundle=tiny4, videos=[sample_video()])
    assert layout.counts().get("video_soft", 0) > 0 and "audio_soft" not in layout.counts()
    assert "load_audio_from_video" in ProcessorChatTemplateKwargs.__annotations__
