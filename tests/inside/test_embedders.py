"""Inside the model: the multimodal embedders and the per-layer embeddings (issue 22,
items 1 and 2), each recomputed and held to transformers' own modules and forward."""

from __future__ import annotations

import pytest
import torch

import gemma_explore as ge
from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.inside.embedders import embedder_of, trace_embedder
from gemma_explore.inside.per_layer import per_layer_ids, vllm_per_layer_buffer
from gemma_explore.inside.towers import encode_audio, encode_images
from gemma_explore.samples import sample_photo, sample_speech


def _prepared(bundle):
    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "image", "image": sample_photo()},
                {"type": "audio", "audio": sample_speech()},
                {"type": "text", "text": "Hi"},
            ],
        }
    ]
    return ge.prepare_inputs(msgs, bundle=bundle)


@pytest.fixture(scope="module", params=["tiny4", "tiny3n", "tinyu"])
def any_bundle(request):
    return request.getfixturevalue(request.param)


def test_encode_results_carry_the_embedder_stage(any_bundle):
    """The trace, re-done from the module's weights, equals the module's forward, and its
    output is what the language model receives for the item."""
    prepared = _prepared(any_bundle)
    encoded_items = (
        encode_images(prepared, bundle=any_bundle),
        encode_audio(prepared, bundle=any_bundle),
    )
    for encoded in encoded_items:
        trace = encoded.embedder
        assert trace is not None and trace.agrees, trace
        text_width = any_bundle.model.config.get_text_config().hidden_size
        assert trace.stages[-1].shape[-1] == text_width
        out = trace.output.reshape(-1, text_width)
        got = torch.cat([f.reshape(-1, text_width) for f in encoded.features])
        if trace.family == "gemma3n" and trace.modality == "audio":
            got = got[: out.shape[0]]  # the 188 slots: tower tokens first, then padding
        assert torch.allclose(out[: got.shape[0]].float(), got.float(), atol=1e-5)


def test_gemma4_runs_the_norm_before_the_linear(tiny4):
    emb = embedder_of(tiny4, "image")
    names = [n for n, _ in emb.named_children()]
    assert set(names) == {"embedding_projection", "embedding_pre_projection_norm"}
    assert not hasattr(emb.embedding_pre_projection_norm, "weight")  # weightless
    x = torch.randn(5, emb.embedding_projection.in_features)
    trace = trace_embedder(tiny4, "image", x)
    assert [s.module for s in trace.stages[1:]] == [
        "embedding_pre_projection_norm",
        "embedding_projection",
    ]
    assert trace.agrees and trace.reverse_gap > 0.1  # the docstring's order is not what runs


@pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
def test_gemma4_order_is_vllms_too():
    """vLLM's own class (what it runs) builds the weightless norm and calls it first."""
    import inspect

    from vllm.model_executor.models.gemma4_mm import Gemma4MultimodalEmbedder

    src = inspect.getsource(Gemma4MultimodalEmbedder.forward)
    assert src.index("embedding_pre_projection_norm") < src.index("embedding_projection(")
    assert "linear projection followed by RMSNorm" in Gemma4MultimodalEmbedder.__doc__


def test_gemma3n_hard_and_soft_paths(tiny3n):
    emb = embedder_of(tiny3n, "image")
    ids = torch.arange(emb.vocab_offset, emb.vocab_offset + 7)  # (7,) vision-vocabulary ids
    hard = trace_embedder(tiny3n, "image", ids, hard=True)
    assert hard.agrees and hard.path == "hard"
    assert [s.module for s in hard.stages] == [
        "",
        "embedding",
        "hard_embedding_norm",
        "embedding_projection",
        "embedding_post_projection_norm",
    ]
    soft = trace_embedder(tiny3n, "image", torch.randn(3, emb.multimodal_hidden_size))
    assert soft.agrees and [s.module for s in soft.stages][1] == "soft_embedding_norm"
    with pytest.raises(ValueError, match="only Gemma 3n"):
        trace_embedder(ge.load("tiny-gemma4"), "image", ids, hard=True)


def test_gemma3n_image_reshape_and_scale(tiny3n):
    """MobileNet's (B, C, 16, 16) map → (B, 256, C) × √C is what the embedder receives."""
    prepared = _prepared(tiny3n)
    model = tiny3n.model.model
    pv = prepared.to_model(tiny3n.model)["pixel_values"]
    with torch.inference_mode():
        fmap = model.vision_tower(pixel_values=pv, do_pooling=False).last_hidden_state
        c = fmap.shape[1]
        rows = fmap.reshape(fmap.shape[0], c, -1).permute(0, 2, 1) * c**0.5  # (B, 256, C)
    trace = trace_embedder(tiny3n, "image", rows[0])
    assert rows.shape[1] == 256
    assert torch.allclose(
        trace.output, encode_images(prepared, bundle=tiny3n).features[0], atol=1e-5
    )
    assert any(f"√{c}" in s for s in trace.steps)


@pytest.mark.parametrize("name", ["tiny4", "tiny3n"])
def test_per_layer_ids_equal_transformers_forward(name, request):
    bundle = request.getfixturevalue(name)
    prepared = _prepared(bundle)
    lm = bundle.model.model.language_model
    seen = []
    original = lm.get_per_layer_inputs

    def spy(input_ids, *args, **kwargs):
        seen.append(input_ids.clone())
        return original(input_ids, *args, **kwargs)

    lm.get_per_layer_inputs = spy
    try:
        with torch.inference_mode():
            bundle.model(**prepared.to_model(bundle.model))
    finally:
        del lm.get_per_layer_inputs
    ours = per_layer_ids(prepared.input_ids, bundle=bundle)
    assert tuple(seen[0][0].tolist()) == ours.per_layer
    assert ours.agrees_with_vllm
    soft = {bundle.spec.id_of(t) for t in bundle.spec.placeholder_tokens.values()}
    if bundle.spec.pads_placeholders_per_layer:  # Gemma 4: by position
        expected = {i for i, t in enumerate(prepared.input_ids) if t in soft}
    else:  # Gemma 3n: by id range, which also catches the end markers
        expected = {i for i, t in enumerate(prepared.input_ids) if t >= ours.table_rows}
        assert bundle.spec.id_of(bundle.spec.eoi_token) in {prepared.input_ids[i] for i in expected}
    assert set(ours.remapped) == expected
    assert all(ours.per_layer[i] == 0 for i in ours.remapped)


def test_unified_has_no_per_layer_table(tinyu):
    ours = per_layer_ids([2, 3, 4], bundle=tinyu)
    assert ours.per_layer is None and "no per-layer" in ours.steps[0]
    assert vllm_per_layer_buffer(tinyu, 2048) is None


def test_vllms_profiling_buffer_shape(tiny4):
    cfg = tiny4.model.config.get_text_config()
    shape = vllm_per_layer_buffer(tiny4, 2048)
    assert shape == (2048, cfg.num_hidden_layers, cfg.hidden_size_per_layer_input)
