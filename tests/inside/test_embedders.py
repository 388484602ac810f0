"""Inside the model: the multimodal embedders and the per-layer embeddings (issue 22,
items 1 and 2), each recomputed and held to transformers' own modules and forward."""

from __future__ import annotations

import pytest
import torch

import gemma_explore as ge
from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.inside.embedders import audio_padding_embedding, embedder_of, trace_embedder
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
    """The ids transformers' forward looks up in the per-layer table itself (its
    embed_tokens_per_layer's input): Gemma 3n remaps them in Gemma3nModel.forward before
    transformers 5.21 and inside get_per_layer_inputs from 5.21 on, so only the table's
    input is the same place in every version."""
    bundle = request.getfixturevalue(name)
    prepared = _prepared(bundle)
    lm = bundle.model.model.language_model
    seen = []
    handle = lm.embed_tokens_per_layer.register_forward_pre_hook(
        lambda _module, args: seen.append(args[0].clone())
    )
    try:
        with torch.inference_mode():
            bundle.model(**prepared.to_model(bundle.model))
    finally:
        handle.remove()
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


def _vllm_init_value(cls, attr, hf_config, max_num_batched_tokens=2048):
    """What vLLM's own ``__init__`` assigns to ``self.<attr>``, read from the installed
    class's source and evaluated on this config (with every local it uses evaluated the
    same way); for a ``torch.zeros(...)`` call, the shape it is given."""
    import ast
    import inspect
    import textwrap
    import types

    tree = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__)))
    assigns = [n for n in ast.walk(tree) if isinstance(n, ast.Assign)]
    node = next(
        n.value
        for n in assigns
        if any(getattr(t, "attr", None) == attr for t in n.targets)
        and not isinstance(n.value, ast.Constant)  # `= None` in an else branch
    )
    scheduler = types.SimpleNamespace(max_num_batched_tokens=max_num_batched_tokens)
    names = {
        "config": hf_config,
        "self": types.SimpleNamespace(config=hf_config),
        "vllm_config": types.SimpleNamespace(scheduler_config=scheduler),
    }
    local = {  # the locals __init__ assigns by name (Gemma 4's ple_dim)
        t.id: n.value for n in assigns for t in n.targets if isinstance(t, ast.Name)
    }

    def value(node):
        for name in {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - names.keys():
            if name in local:
                names[name] = value(local[name])
        return eval(compile(ast.Expression(node), "<vllm>", "eval"), {}, names)  # noqa: S307

    if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "zeros":
        return tuple(int(value(a)) for a in node.args)
    return value(node)


@pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
@pytest.mark.parametrize("name", ["tiny4", "tiny3n"])
def test_vllms_profiling_buffer_shape(name, request):
    """Our shape is the one vLLM's own model class allocates: the ``torch.zeros`` call in
    ``Gemma4ForConditionalGeneration.__init__`` / ``Gemma3nForConditionalGeneration.__init__``,
    evaluated on the bundle's config (not the config read a second time)."""
    from vllm.model_executor.models.gemma3n_mm import Gemma3nForConditionalGeneration
    from vllm.model_executor.models.gemma4_mm import Gemma4ForConditionalGeneration

    bundle = request.getfixturevalue(name)
    cls = {"tiny4": Gemma4ForConditionalGeneration, "tiny3n": Gemma3nForConditionalGeneration}[name]
    for mnbt in (256, 2048, 8192):
        theirs = _vllm_init_value(cls, "per_layer_embeddings", bundle.model.config, mnbt)
        assert vllm_per_layer_buffer(bundle, mnbt) == theirs
    assert theirs[0] == 8192  # rows: the scheduler's batch, not the prompt


def _audio_slots_in_transformers(bundle, seconds):
    """transformers' own forward on a clip: the rows its masked_scatter wrote into the
    audio placeholders (captured at the language model's input), and the prepared request."""
    import numpy as np

    wave = (np.sin(np.arange(int(seconds * 16_000)) / 9) * 0.1).astype(np.float32)
    prepared = ge.prepare_inputs("Listen.", audios=[(wave, 16_000)], bundle=bundle)
    seen = {}

    def grab(_module, args, kwargs):
        seen["embeds"] = kwargs["inputs_embeds"][0].detach().clone()

    lm = bundle.model.model.language_model
    handle = lm.register_forward_pre_hook(grab, with_kwargs=True)
    try:
        with torch.inference_mode():
            bundle.model(**prepared.to_model(bundle.model))
    finally:
        handle.remove()
    ids = torch.tensor(prepared.input_ids)
    audio = ids == bundle.spec.id_of(bundle.spec.audio_token)
    return seen["embeds"][audio], prepared


@pytest.mark.parametrize("seconds", [0.7, 2.41])
def test_gemma3n_audio_padding_vector_is_transformers(tiny3n, seconds):
    """Every audio slot the tower leaves holds exactly our padding vector in transformers'
    own forward; it is the hard path of the last audio-vocabulary row, and no other
    candidate (zeros, the soft token's id, the first audio row) is."""
    pad = audio_padding_embedding(tiny3n)
    assert (pad.token_id, pad.table_row, pad.last_row) == (262_399, 127, True)
    assert pad.trace.agrees and pad.trace.path == "hard"
    slots, _ = _audio_slots_in_transformers(tiny3n, seconds)
    plan = ge.plan_audio(int(seconds * 16_000), family="gemma3n")
    assert slots.shape[0] == 188
    is_pad = torch.isclose(slots.float(), pad.vector.float(), atol=1e-5).all(dim=-1)
    assert int(is_pad.sum()) >= plan.num_padding_soft_tokens > 0
    assert is_pad[-plan.num_padding_soft_tokens :].all()  # the appended tail
    emb = embedder_of(tiny3n, "audio")
    with torch.inference_mode():
        for other in (emb.vocab_offset, tiny3n.spec.id_of(tiny3n.spec.audio_token) - 1):
            wrong = emb(input_ids=torch.tensor([[other]]))[0, 0]
            assert not torch.allclose(wrong.float(), pad.vector.float(), atol=1e-3)
    assert pad.vector.float().norm() > 0
    with pytest.raises(ValueError, match="only Gemma 3n"):
        audio_padding_embedding(ge.load("tiny-gemma4"))


@pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
def test_gemma3n_audio_padding_vector_is_vllms(tiny3n):
    """vLLM's own ``_process_audio_input`` (padding id from its own ``__init__``, its
    ``adjust_audio_features_to_expected_length``), run on the tiny tower and embedder
    (vLLM builds the same transformers tower, ``AutoModel.from_config``): the 188 rows it
    hands the merge equal transformers' rows, and it asks the embedder for our id."""
    import types

    from vllm.model_executor.models.gemma3n_mm import Gemma3nForConditionalGeneration as G

    pad = audio_padding_embedding(tiny3n)
    slots, prepared = _audio_slots_in_transformers(tiny3n, 0.7)
    inputs = prepared.to_model(tiny3n.model)
    model = tiny3n.model.model
    asked = []

    def embed_audio(**kwargs):
        if "input_ids" in kwargs:
            asked.append(kwargs["input_ids"].reshape(-1).tolist())
        return model.embed_audio(**kwargs)

    stub = types.SimpleNamespace(
        audio_tower=model.audio_tower,
        embed_audio=embed_audio,
        vocab_size=_vllm_init_value(G, "vocab_size", tiny3n.model.config),
        config=tiny3n.model.config,
    )
    with torch.inference_mode():
        (theirs,) = G._process_audio_input(
            stub,
            {
                "input_features_padded": inputs["input_features"],
                "input_features_mask": inputs["input_features_mask"],
            },
        )
    assert asked == [[pad.token_id]]
    assert theirs.shape == slots.shape
    assert torch.allclose(theirs.float(), slots.float(), atol=1e-5)
