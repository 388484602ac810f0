"""suppress_tokens (issue 22, item 7): which ids each engine can never generate, held to
vLLM's own compute_logits and transformers' logits processor."""

from __future__ import annotations

import inspect
import json
import types

import pytest
import torch

from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.inside.logits import suppressed_tokens, vllm_applies_suppress_tokens

needs_vllm = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")


@pytest.fixture(scope="module")
def suppressing(tiny4, tmp_path_factory):
    """A saved tiny Gemma 4 whose generation_config.json lists its three placeholder ids
    (written by transformers' own save), loaded back from that folder."""
    import gemma_explore as ge

    soft = [tiny4.spec.id_of(t) for t in tiny4.spec.placeholder_tokens.values()]
    folder = tmp_path_factory.mktemp("suppressing")
    tiny4.model.generation_config.suppress_tokens = soft
    try:
        tiny4.save_pretrained(folder)
    finally:
        tiny4.model.generation_config.suppress_tokens = None
    assert json.loads((folder / "generation_config.json").read_text())["suppress_tokens"] == soft
    return ge.load(str(folder)), soft, folder


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
    """vLLM reads the list from the saved folder (ModelConfig.try_get_generation_config,
    as Gemma4ForConditionalGeneration.__init__ does), and its own compute_logits, run on a
    stand-in language model that returns zero logits, sets exactly those ids to −inf."""
    from vllm.config import ModelConfig
    from vllm.model_executor.models.gemma4_mm import Gemma4ForConditionalGeneration as G

    bundle, soft, folder = suppressing
    init = inspect.getsource(G.__init__)
    assert "gen_cfg = vllm_config.model_config.try_get_generation_config()" in init
    assert 'self._suppress_token_ids = gen_cfg.get("suppress_tokens")' in init
    config = ModelConfig(model=str(folder), tokenizer=str(folder), dtype="float32")
    read = config.try_get_generation_config().get("suppress_tokens")
    report = suppressed_tokens(bundle)
    assert report.blocked_in_vllm == {"image": True, "audio": True, "video": True}
    vocab = bundle.model.config.get_text_config().vocab_size
    lm = types.SimpleNamespace(compute_logits=lambda h: torch.zeros(h.shape[0], vocab))
    stub = types.SimpleNamespace(language_model=lm, _suppress_token_ids=read)
    logits = G.compute_logits(stub, torch.zeros(2, 4))  # (2, vocab)
    blocked = set(torch.isinf(logits[0]).nonzero().reshape(-1).tolist())
    assert blocked == set(soft) == set(report.suppressed)


def test_transformers_generate_applies_the_list(suppressing):
    """transformers loads the list from the folder and generate() scores those ids −inf."""
    bundle, soft, _ = suppressing
    model = bundle.model
    assert list(model.generation_config.suppress_tokens) == soft
    ids = torch.tensor([[2, 5, 6, 7]])  # (1, 4) any text prompt
    with torch.inference_mode():
        out = model.generate(
            ids,
            max_new_tokens=2,
            do_sample=False,
            top_p=None,
            top_k=None,
            pad_token_id=0,
            output_scores=True,
            return_dict_in_generate=True,
        )
    for scores in out.scores:  # (1, vocab) per step, after the logits processors
        assert set(torch.isinf(scores[0]).nonzero().reshape(-1).tolist()) >= set(soft)
        assert all(float(scores[0, i]) == float("-inf") for i in soft)
    assert all(suppressed_tokens(bundle).blocked_in_transformers.values())
