"""suppress_tokens (issue 22, item 7): which ids each engine can never generate, held to
vLLM's own compute_logits and transformers' logits processor."""

from __future__ import annotations

import inspect
import json
import types

import pytest
import torch

from gemma_explore.inference.vllm_processor import vllm_available
from gemma_explore.logits import suppressed_tokens, vllm_applies_suppress_tokens

needs_vllm = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")


@pytest.fixture
def suppressing(tiny4):
    """The tiny Gemma 4 with a generation config that lists its three placeholder ids."""
    soft = [tiny4.spec.id_of(t) for t in tiny4.spec.placeholder_tokens.values()]
    tiny4.model.generation_config.suppress_tokens = soft
    yield tiny4, soft
    tiny4.model.generation_config.suppress_tokens = None


def test_the_tiny_bundles_suppress_nothing(tiny4, tiny3n):
    for bundle in (tiny4, tiny3n):
        report = suppressed_tokens(bundle)
        assert report.suppressed == () and not any(report.blocked_in_transformers.values())


@needs_vllm
def test_which_vllm_classes_apply_the_list():
    assert vllm_applies_suppress_tokens("Gemma4ForConditionalGeneration") is True
    assert vllm_applies_suppress_tokens("Gemma4UnifiedForConditionalGeneration") is True
    assert vllm_applies_suppress_tokens("Gemma3nForConditionalGeneration") is False


@needs_vllm
def test_vllms_compute_logits_blocks_exactly_the_listed_ids(suppressing):
    """vLLM's own method, run on a stand-in language model that returns zero logits."""
    from vllm.model_executor.models.gemma4_mm import Gemma4ForConditionalGeneration

    bundle, soft = suppressing
    report = suppressed_tokens(bundle)
    assert report.blocked_in_vllm == {"image": True, "audio": True, "video": True}
    vocab = bundle.model.config.get_text_config().vocab_size
    lm = types.SimpleNamespace(compute_logits=lambda h: torch.zeros(h.shape[0], vocab))
    stub = types.SimpleNamespace(language_model=lm, _suppress_token_ids=list(report.suppressed))
    logits = Gemma4ForConditionalGeneration.compute_logits(stub, torch.zeros(2, 4))  # (2, vocab)
    blocked = set(torch.isinf(logits[0]).nonzero().reshape(-1).tolist())
    assert blocked == set(soft) == set(report.suppressed)


@needs_vllm
def test_vllm_reads_the_list_from_generation_config_json(tiny4, tmp_path):
    from vllm.config import ModelConfig

    soft = [tiny4.spec.id_of(t) for t in tiny4.spec.placeholder_tokens.values()]
    tiny4.save_pretrained(tmp_path)
    gen = tmp_path / "generation_config.json"
    cfg = json.loads(gen.read_text()) if gen.exists() else {}
    gen.write_text(json.dumps({**cfg, "suppress_tokens": soft}))
    config = ModelConfig(model=str(tmp_path), tokenizer=str(tmp_path), dtype="float32")
    assert config.try_get_generation_config()["suppress_tokens"] == soft


def test_transformers_generate_applies_the_list(suppressing):
    from transformers.generation.logits_process import SuppressTokensLogitsProcessor
    from transformers.generation.utils import GenerationMixin

    bundle, soft = suppressing
    assert "SuppressTokensLogitsProcessor" in inspect.getsource(
        GenerationMixin._get_logits_processor
    )
    proc = SuppressTokensLogitsProcessor(suppressed_tokens(bundle).suppressed)
    vocab = bundle.model.config.get_text_config().vocab_size
    out = proc(torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, vocab))
    assert set(torch.isinf(out[0]).nonzero().reshape(-1).tolist()) == set(soft)
    assert all(suppressed_tokens(bundle).blocked_in_transformers.values())
