"""Why vLLM 0.32 and transformers 5.19 pick other greedy tokens on multimodal prompts
(issue 34): the first tensor that differs, the line in each library that makes it differ,
and the same run with that cause removed, on the session's engines and tiny weights.

- Gemma 3n: the language model's input. transformers embeds ``<end_of_image>`` (262144)
  and ``<end_of_audio>`` (262272) with ``embed_vision`` / ``embed_audio``'s hard-token
  table (``Gemma3nModel.forward``, "Handle vision tokens"); vLLM embeds every id that is
  not a placeholder from the text table (``Gemma3nSelfDecoder.embed_input_ids``). One row
  differs, from the first token on. The ids are Google's (the released config's
  ``vocab_offset``s), so the real vocabulary and the released checkpoints meet it too;
  there, the text rows from 262144 up are copies of ``<pad>``'s row (transformers'
  ``convert_gemma3n_weights.py``), so vLLM feeds ``<pad>``'s embedding after each item.
- Unified (``use_bidirectional_attention="vision"``): the first layer's output at the
  image rows. vLLM asks for bidirectional image spans (``is_mm_prefix_lm``) but its
  CPU attention backend cannot give them and says nothing: every layer stays causal.
  transformers' ``Gemma4UnifiedModel.forward`` opens each span on every layer, past the
  window, which is not the Gemma 4 rule its own ``create_masks_for_generate`` (and vLLM
  on CUDA) follows: sliding layers only, inside the window.

``parity.vllm_rules`` / ``parity.transformers_as_vllm`` carry these rules to the parity
checks (``test_parity.py``).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

import gemma_explore as ge
from gemma_explore.engines.hf import encoder_free_video_inputs
from gemma_explore.engines.vllm import vllm_request

from .facts import fresh
from .parity import (
    ATOL,
    CAUSAL_SPANS,
    HARD_TOKENS,
    _greedy,
    engine_drops_image_spans,
    hard_token_rows,
    image,
    media_for,
    transformers_as_vllm,
    vllm_rules,
)


def _vllm_prefill(llm: Any, request: dict, n: int) -> tuple[dict[str, torch.Tensor], list[int]]:
    """vLLM's engine on one request: what its language model receives at the prefill
    (``inputs_embeds``) and what its first decoder layer returns, and the greedy tokens."""
    from vllm import SamplingParams

    def install(model: Any) -> dict[str, torch.Tensor]:
        seen: dict[str, torch.Tensor] = {}
        lm = model.language_model.model  # @support_torch_compile: its __call__ skips hooks
        first = next(m for m in lm.modules() if type(m).__name__.endswith("DecoderLayer"))

        def pre(_m, _a, kw):
            e = kw.get("inputs_embeds")
            if e is not None and e.shape[0] >= n:
                seen.setdefault("inputs_embeds", e[:n].detach().float().cpu().clone())

        def post(_m, _a, out):
            h = out[0] if isinstance(out, tuple) else out
            h = h[0] if h.dim() == 3 else h  # Gemma 3n: (altup streams, tokens, hidden)
            if h.shape[0] >= n:
                seen.setdefault("layer0", h[:n].detach().float().cpu().clone())

        model._ge_divergence = [
            model.register_forward_pre_hook(pre, with_kwargs=True),
            first.register_forward_hook(post),
        ]
        return seen

    def remove(model: Any) -> None:
        for h in model.__dict__.pop("_ge_divergence", []):
            h.remove()

    fresh(llm)
    (seen,) = llm.apply_model(install)
    try:
        (out,) = llm.generate(
            [request], SamplingParams(max_tokens=8, temperature=0.0), use_tqdm=False
        )
    finally:
        llm.apply_model(remove)
    assert len(out.prompt_token_ids) == n
    return seen, list(out.outputs[0].token_ids)


def _hf_prefill(model: Any, inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """transformers on the same prompt (one forward, no cache): the language model's
    ``inputs_embeds``, its masks, and its first decoder layer's output."""
    seen: dict[str, Any] = {}
    lm = model.model.language_model

    def pre(_m, _a, kw):
        seen["inputs_embeds"] = kw["inputs_embeds"][0].detach().float().clone()
        seen["masks"] = kw.get("attention_mask")

    def post(_m, _a, out):
        h = out[0] if isinstance(out, tuple) else out
        seen["layer0"] = (h[0] if h.dim() == 4 else h)[0].detach().float().clone()

    hooks = [lm.register_forward_pre_hook(pre, with_kwargs=True)]
    hooks.append(lm.layers[0].register_forward_hook(post))
    try:
        with torch.inference_mode():
            model(**inputs, use_cache=False)
    finally:
        for h in hooks:
            h.remove()
    return seen


def _rows_differ(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per row: True where two (tokens, hidden) tensors differ beyond float32 noise."""
    return (a - b).abs().amax(-1) > ATOL + 1e-3 * float(b.abs().max())


@pytest.mark.parametrize("modality", ["image", "audio"])
def test_vllm_gemma3n_embeds_end_of_item_tokens_from_the_text_table(engine3n, tiny3n, modality):
    model, spec = tiny3n.model, tiny3n.spec
    prepared = ge.prepare_inputs("What is this?", **media_for(modality), bundle=tiny3n)
    request = vllm_request(
        ge.prepare_inputs("What is this?", **media_for(modality), bundle=engine3n.bundle)
    )
    ids = torch.tensor(prepared.input_ids)
    vllm, vllm_tokens = _vllm_prefill(engine3n.llm, request, len(ids))
    inputs = prepared.to_model(model)
    hf = _hf_prefill(model, inputs)

    # The first tensor that differs: the language model's input, at one row only, the
    # item's end token (transformers' hard-token range starts at embed_vision.vocab_offset).
    hard = hard_token_rows(model, ids)
    end = spec.id_of(spec.eoi_token if modality == "image" else spec.eoa_token)
    assert ids[hard].tolist() == [end]
    assert _rows_differ(vllm["inputs_embeds"], hf["inputs_embeds"]).tolist() == hard.tolist()

    # vLLM's row is vLLM's own text embedding of that id; transformers' is its tower
    # embedder's hard-token embedding (the same weights, loaded by both).
    def vllm_text_row(m: Any) -> torch.Tensor:
        return m.language_model.model.embed_input_ids(torch.tensor([end])).float().cpu()

    (text_row,) = engine3n.llm.apply_model(vllm_text_row)
    torch.testing.assert_close(vllm["inputs_embeds"][hard], text_row, atol=ATOL, rtol=1e-4)
    embedder = model.model.embed_vision if modality == "image" else model.model.embed_audio
    with torch.inference_mode():
        hard_row = embedder(input_ids=torch.tensor([[end]]))[0].float()
    torch.testing.assert_close(hf["inputs_embeds"][hard], hard_row, atol=ATOL, rtol=1e-4)

    # The cause removed: transformers with vLLM's row there runs to vLLM's numbers.
    rules = vllm_rules(engine3n.llm, model)
    assert rules == (HARD_TOKENS,)
    with transformers_as_vllm(model, rules):
        fixed = _hf_prefill(model, inputs)
        fixed_tokens = _greedy(model, inputs)
    assert not _rows_differ(vllm["inputs_embeds"], fixed["inputs_embeds"]).any()
    assert not _rows_differ(vllm["layer0"], fixed["layer0"]).any()
    assert vllm_tokens == fixed_tokens


def test_vllm_cpu_attention_leaves_bidirectional_image_spans_causal(engineu, tinyu):
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend

    model = tinyu.model
    assert model.config.get_text_config().use_bidirectional_attention == "vision"
    # vLLM asks for the spans (Gemma4ModelArchConfigConvertor.is_mm_prefix_lm) and its
    # CPU backend, the only one this platform selects, cannot give them.
    assert engineu.llm.llm_engine.model_config.is_mm_prefix_lm
    assert not CPUAttentionBackend.supports_mm_prefix()
    assert engine_drops_image_spans(engineu.llm)

    prepared = ge.prepare_inputs("What is this?", images=[image(1)], bundle=tinyu)
    request = vllm_request(
        ge.prepare_inputs("What is this?", images=[image(1)], bundle=engineu.bundle)
    )
    ids = torch.tensor(prepared.input_ids)
    vllm, vllm_tokens = _vllm_prefill(engineu.llm, request, len(ids))
    inputs = encoder_free_video_inputs(model, prepared.to_model(model))
    hf = _hf_prefill(model, inputs)

    # Same input; the first tensor that differs is the first (sliding) layer's output, at
    # the image rows and only there: in transformers each sees its whole span (the later
    # rows, and for the span's end the rows past the window too).
    assert not _rows_differ(vllm["inputs_embeds"], hf["inputs_embeds"]).any()
    soft = (inputs["mm_token_type_ids"][0] == 1).nonzero().flatten()
    assert len(soft) > tinyu.model.config.get_text_config().sliding_window
    expected = torch.zeros(len(ids), dtype=torch.bool)
    expected[soft] = True
    assert torch.equal(_rows_differ(vllm["layer0"], hf["layer0"]), expected)

    # The cause removed: transformers without the spans runs to vLLM's numbers.
    rules = vllm_rules(engineu.llm, model)
    assert rules == (CAUSAL_SPANS,)
    with transformers_as_vllm(model, rules):
        causal = _hf_prefill(model, inputs)
        causal_tokens = _greedy(model, inputs)
    assert not _rows_differ(vllm["layer0"], causal["layer0"]).any()
    assert vllm_tokens == causal_tokens


def _allowed(mask: torch.Tensor | None, n: int) -> torch.Tensor:
    """A transformers mask (bool, or additive float; None = plain causal) as (q, k) bool."""
    if mask is None:
        return torch.ones(n, n, dtype=torch.bool).tril()
    m = mask[0, 0]
    return m if m.dtype == torch.bool else m == 0


def test_transformers_unified_opens_image_spans_on_every_layer(tinyu):
    """transformers 5.19 has two masks for Unified: ``Gemma4UnifiedModel.forward`` (what
    ``generate`` meets with its default cache) gives Gemma 3's, spans open on every layer
    and past the window; ``create_masks_for_generate`` (its own override, which
    ``generate`` calls only for a compilable cache) gives the Gemma 4 rule vLLM's CUDA
    backends follow (``mm_prefix_clamp_sliding_window``, and
    ``_clear_mm_prefix_for_full_attn_layers`` on full layers)."""
    from vllm.model_executor.models.gemma4_unified import Gemma4UnifiedForConditionalGeneration

    model = tinyu.model
    text = model.config.get_text_config()
    prepared = ge.prepare_inputs("What is this?", images=[image(1)], bundle=tinyu)
    inputs = prepared.to_model(model)
    n = inputs["input_ids"].shape[1]
    forward = _hf_prefill(model, inputs)["masks"]
    override = model.create_masks_for_generate(
        config=model.config,
        inputs_embeds=torch.empty((1, n, 0)),
        attention_mask=inputs["attention_mask"],
        past_key_values=None,
        position_ids=torch.arange(n)[None],
        mm_token_type_ids=inputs["mm_token_type_ids"],
        is_first_iteration=True,
    )
    soft = (inputs["mm_token_type_ids"][0] == 1).nonzero().flatten()
    first, last = int(soft[0]), int(soft[-1])
    assert last - first + 1 > text.sliding_window  # the tiny image is wider than the window
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    fwd_full = _allowed(forward["full_attention"], n)
    fwd_sliding = _allowed(forward["sliding_attention"], n)
    own_full = _allowed(override["full_attention"], n)
    own_sliding = _allowed(override["sliding_attention"], n)
    # Full layers: the forward opens the span, the override stays causal.
    assert fwd_full[first, last] and torch.equal(own_full, causal)
    # Sliding layers: both open the span forward; the last image row sees the first one in
    # the forward (past the window), not in the override.
    assert fwd_sliding[first, last] and own_sliding[first, last]
    assert fwd_sliding[last, first] and not own_sliding[last, first]
    # vLLM's side of the same rule, in its own model class.
    assert Gemma4UnifiedForConditionalGeneration.mm_prefix_clamp_sliding_window
    assert hasattr(Gemma4UnifiedForConditionalGeneration, "_clear_mm_prefix_for_full_attn_layers")
