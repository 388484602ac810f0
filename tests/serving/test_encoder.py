"""Our encoder chunk, graph budgets and packing equal vLLM 0.32's own functions."""

from __future__ import annotations

import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.serving.encoder import encoder_chunk, encoder_graph_budgets, pack_encoder_items
from tests.conftest import examples
from tests.seeds import SEEDS, load_seed

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(not vllm_available(), reason="vllm is not installed"),
]
GIB = 2**30


@settings(max_examples=examples(0.5))
@given(
    patches=st.sampled_from([0, 630, 1260, 2520, 5040, 10080]),
    free=st.integers(0, 200 * GIB),
    total=st.integers(1, 200 * GIB),
    size=st.sampled_from([10240, 1024]),
)
def test_chunk_equals_vllms(patches, free, total, size):
    from vllm.model_executor.models.gemma4_mm import Gemma4ForConditionalGeneration as G

    ours = encoder_chunk(patches, free_bytes=free, total_bytes=total, position_embedding_size=size)
    assert ours.chunk == G._encoder_chunk(patches, free, total, size)


@pytest.mark.parametrize("mnbt", [70, 512, 2048, 8192, 16384])
@pytest.mark.parametrize("mml", [1024, 8192, 32768])
def test_budgets_equal_vllms(mnbt, mml):
    from vllm.v1.worker.encoder_cudagraph import EncoderCudaGraphManager as M

    graphs = encoder_graph_budgets(max_num_batched_tokens=mnbt, max_model_len=mml)
    high = min(mnbt, mml)
    assert list(graphs.token_budgets) == M._generate_budgets(70, high)
    assert graphs.max_batch_size == min(high // 70, min(M._generate_budgets(70, high)))


def _vllm_packing(tokens, graphs, seed=False):
    """Run vLLM 0.32's own _execute_local with the graphs replaced by a recorder, on the
    item specs of 0.32's get_encoder_cudagraph_item_specs, or of the seed's."""
    import torch
    from vllm.model_executor.models.gemma4_mm import Gemma4ForConditionalGeneration as G
    from vllm.v1.worker.encoder_cudagraph import EncoderCudaGraphManager

    cls = load_seed("gemma4_mm").Gemma4ForConditionalGeneration if seed else G
    seen = []

    class Model:
        get_input_modality = cls.get_input_modality
        get_encoder_cudagraph_item_specs = cls.get_encoder_cudagraph_item_specs
        vision_tower = types.SimpleNamespace(config=types.SimpleNamespace(pooling_kernel_size=3))

        def postprocess_encoder_output(self, outs, batch, per_item, into, **kw):
            for i in batch:
                into[i] = torch.zeros(1)

        def encoder_eager_forward(self, kwargs, path):
            seen.append((tuple(kwargs["items"]), None))
            return torch.zeros(1)

    class Recorder(EncoderCudaGraphManager):
        def __init__(self):  # no GPU: only what _execute_local reads
            self.path_token_budgets = {"default": list(graphs.token_budgets)}
            self.token_budgets = list(graphs.token_budgets)
            self.max_batch_size = graphs.max_batch_size
            self.graph_misses = 0
            self.model = Model()

        def _select_items(self, mm_kwargs, indices):
            return {"items": list(indices)}, ()

        def _run_budget_graph(self, mm_kwargs, budget, path="default", axis_keys=()):
            seen.append((tuple(mm_kwargs["items"]), budget))
            return torch.zeros(1)

    # The processor's pixel_values as vLLM batches them: one (budget × 9, ·) tensor each.
    Recorder()._execute_local({"pixel_values": [torch.zeros(t * 9, 1) for t in tokens]})
    return seen


@settings(max_examples=examples(0.3))
@given(
    tokens=st.lists(
        st.sampled_from([64, 70, 140, 256, 280, 560, 1120, 2496]), min_size=1, max_size=12
    ),
    mnbt=st.sampled_from([512, 2048, 8192]),
)
@pytest.mark.parametrize("seed", [False, True])  # not drawn: a skip would end every example
def test_packing_equals_vllms(tokens, mnbt, seed):
    """0.32's packing, and the seed's (its item specs make every image as wide as the
    widest) on 0.32's manager."""
    if seed and not (SEEDS / "gemma4_mm.py").exists():
        pytest.skip(f"vLLM's seed files are not at {SEEDS}")
    graphs = encoder_graph_budgets(max_num_batched_tokens=mnbt, max_model_len=8192)
    ours = [(b.items, b.budget) for b in pack_encoder_items(tokens, graphs, seed=seed)]
    assert ours == _vllm_packing(tokens, graphs, seed=seed)


# --- Graph replay (item 6): vLLM 0.32's own replay functions, run on CPU ---------------


def _stub(model=None, patch_size=16):
    """An object carrying vLLM 0.32's own Gemma 4 encoder-graph methods; with ``model``,
    on the tiny model's vision tower (the transformers class vLLM builds too,
    ``AutoModel.from_config``) and embedder."""
    import types

    import torch
    from vllm.model_executor.models.gemma4_mm import Gemma4ForConditionalGeneration as G

    names = [
        "get_input_modality",
        "get_encoder_cudagraph_item_specs",
        "select_encoder_cudagraph_items",
        "prepare_encoder_cudagraph_capture_inputs",
        "prepare_encoder_cudagraph_replay_buffers",
        "encoder_cudagraph_forward",
        "get_encoder_cudagraph_config",
    ]
    stub = type("Gemma4Graphs", (), {n: getattr(G, n) for n in names})()
    if model is None:
        vcfg = types.SimpleNamespace(pooling_kernel_size=3, patch_size=patch_size)
        stub.vision_tower = types.SimpleNamespace(config=vcfg)
        stub.config = types.SimpleNamespace(
            vision_config=types.SimpleNamespace(), text_config=types.SimpleNamespace(hidden_size=8)
        )
    else:
        stub.vision_tower = model.model.vision_tower
        stub.embed_vision = model.model.embed_vision
        stub.config = model.config
    stub.model_dtype = torch.float32
    return stub


@settings(max_examples=examples(0.3))
@given(
    patches=st.lists(st.sampled_from([630, 1260, 2520]), min_size=1, max_size=5),
    as_list=st.booleans(),
)
def test_gather_indices_equal_vllms(patches, as_list):
    import torch

    from gemma_explore.serving.encoder import replay_gather_indices

    width = max(patches) if not as_list else None
    pv = (
        [torch.zeros(p, 768) for p in patches] if as_list else torch.zeros(len(patches), width, 768)
    )
    pp = (
        [torch.zeros(p, 2, dtype=torch.long) for p in patches]
        if as_list
        else torch.zeros(len(patches), width, 2, dtype=torch.long)
    )
    replay = _stub().prepare_encoder_cudagraph_replay_buffers(
        {"pixel_values": pv, "pixel_position_ids": pp}
    )
    tokens = [p // 9 for p in patches] if as_list else [width // 9] * len(patches)
    ours = replay_gather_indices(tokens, max(patches) // 9)
    assert tuple(replay.values["gather_indices"].tolist()) == ours


@settings(max_examples=examples(0.3))
@given(frames=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_frame_rows_equal_vllms_selection(frames, data):
    import torch

    from gemma_explore.serving.encoder import frame_rows

    indices = data.draw(st.lists(st.integers(0, len(frames) - 1), min_size=1, unique=True))
    rows = torch.arange(sum(frames))
    kwargs = {
        "pixel_values_videos": rows[:, None, None].expand(-1, 9, 3),
        "pixel_position_ids_videos": rows[:, None, None].expand(-1, 9, 2),
        "video_frame_counts": torch.tensor(frames),
    }
    picked = _stub().select_encoder_cudagraph_items(kwargs, indices)
    assert tuple(picked["pixel_values_videos"][:, 0, 0].tolist()) == frame_rows(frames, indices)


@pytest.mark.parametrize("budget", [70, 140, 280, 560, 1120, 2048])
def test_captured_row_width_is_vllms(budget):
    """0.32 captures every budget's graph with rows of min(budget, 280) soft tokens."""
    graphs = encoder_graph_budgets(max_num_batched_tokens=2048, max_model_len=8192)
    capture = _stub().prepare_encoder_cudagraph_capture_inputs(
        token_budget=budget, max_batch_size=2, max_frames_per_batch=0
    )
    assert capture.values["pixel_values"].shape[1] // 9 == graphs.rows_0_32(budget)[1]
    assert capture.values["gather_indices"].shape == (budget,)
    # 0.32's Gemma 4 declares no capture axis (the seed adds the row width as one)
    from gemma_explore.serving.encoder import SEED_ONLY, plan_encoder_replay

    stub = _stub()
    stub.config.text_config.hidden_size = 8
    assert stub.get_encoder_cudagraph_config().capture_axes == ()
    versions = plan_encoder_replay([630], graphs=graphs).versions
    assert versions["Gemma 4 declaring row width as a capture axis"] == SEED_ONLY


# Each case: per-image budgets in one request → what the plan says vLLM 0.32 does.
REPLAY_CASES = [
    ([280, 280], "right"),  # packed on graph 560, rows of 280: strides agree
    ([140], "right"),  # alone on graph 140, rows of 140
    ([140, 140], "wrong"),  # graph 280 pools rows of 280; gather assumes 140
    ([560], "copy fails"),  # 5040 patches do not fit graph 560's rows of 280 × 9
]


@pytest.mark.parametrize(("budgets", "expected"), REPLAY_CASES)
def test_replay_on_cpu_does_what_the_plan_says(tiny4, budgets, expected):
    """vLLM 0.32's capture shapes, padding, replay buffers, forward and scatter, on the
    tiny model's weights (a CUDA graph replays exactly this forward on these buffers):
    each image's rows against transformers' eager features."""
    import dataclasses

    import numpy as np
    import torch
    from PIL import Image
    from vllm.model_executor.models.utils import scatter_output_slices
    from vllm.v1.worker.encoder_cudagraph import EncoderCudaGraphManager as M

    import gemma_explore as ge
    from gemma_explore.serving.encoder import plan_encoder_replay

    model = tiny4.model
    images = [
        Image.fromarray(np.random.RandomState(i).randint(0, 255, (240, 320, 3), np.uint8))
        for i in range(len(budgets))
    ]
    pvs, pps, eager = [], [], []
    for img, b in zip(images, budgets, strict=True):
        inputs = ge.prepare_inputs("x", images=[img], max_soft_tokens=b, bundle=tiny4).to_model(
            model
        )
        pvs.append(inputs["pixel_values"][0])  # (b × 9, 768): padded to the budget
        pps.append(inputs["image_position_ids"][0])  # (b × 9, 2), -1 on padding
        with torch.inference_mode():
            eager.append(
                model.get_image_features(
                    inputs["pixel_values"], inputs["image_position_ids"]
                ).pooler_output[0]
            )
    graphs = dataclasses.replace(
        encoder_graph_budgets(max_num_batched_tokens=2048, max_model_len=8192), max_batch_size=2
    )
    plan = plan_encoder_replay(
        [p.shape[0] for p in pvs], valid_tokens=[e.shape[0] for e in eager], graphs=graphs
    )
    (batch,) = plan.batches
    stub = _stub(model)
    kwargs = {"pixel_values": pvs, "pixel_position_ids": pps}
    specs = stub.get_encoder_cudagraph_item_specs(kwargs)
    assert [s.output_tokens for s in specs] == list(batch.item_tokens)
    capture = stub.prepare_encoder_cudagraph_capture_inputs(
        token_budget=batch.budget, max_batch_size=2, max_frames_per_batch=0
    )
    assert capture.values["pixel_values"].shape[1] // 9 == batch.graph_width
    selected = stub.select_encoder_cudagraph_items(kwargs, list(batch.items))
    replay = stub.prepare_encoder_cudagraph_replay_buffers(selected, 2, 0)
    assert tuple(replay.values["gather_indices"].tolist()) == batch.gather_indices
    padding = stub.get_encoder_cudagraph_config().padding_logics
    copy = [
        (capture.values[k], replay.values[k], padding.get(k, M._copy_padded_buffer))
        for k in capture.values
    ]
    if expected == "copy fails":
        assert not batch.fits and not plan.ok
        with pytest.raises(RuntimeError):
            for dst, src, pad in copy:
                pad(dst, src)
        return
    for dst, src, pad in copy:
        pad(dst, src)
    with torch.inference_mode():
        out = stub.encoder_cudagraph_forward(capture.values)  # (budget, hidden)
    got: dict[int, torch.Tensor] = {}
    scatter_output_slices(out, list(batch.items), [s.output_tokens for s in specs], got)
    same = [torch.allclose(got[i][: e.shape[0]], e, atol=1e-5) for i, e in enumerate(eager)]
    assert same[0]  # the first image's rows start at 0 in both layouts
    assert all(same) == (expected == "right") == batch.right_rows == plan.ok


def test_transformers_position_path_makes_no_one_hot():
    """vLLM's _encoder_chunk docstring blames an F.one_hot in transformers' patch embedder;
    run transformers' own _position_embeddings and record every op it dispatches."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from transformers.models.gemma4.configuration_gemma4 import Gemma4VisionConfig
    from transformers.models.gemma4.modeling_gemma4 import Gemma4VisionPatchEmbedder

    hidden, size, patches = 16, 64, 12
    config = Gemma4VisionConfig(hidden_size=hidden, position_embedding_size=size)
    embedder = Gemma4VisionPatchEmbedder(config)
    positions = torch.stack(torch.meshgrid(torch.arange(3), torch.arange(4), indexing="xy"), -1)
    positions = positions.reshape(1, patches, 2)
    padding = torch.zeros(1, patches, dtype=torch.bool)
    padding[0, -2:] = True
    positions[0, -2:] = -1

    class Record(TorchDispatchMode):
        ops: list = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            Record.ops.append((func.overloadpacket.__name__, out))
            return out

    with torch.no_grad(), Record():
        embedder._position_embeddings(positions, padding)
    names = [name for name, _ in Record.ops]
    assert names.count("embedding") == 2 and not any("one_hot" in n for n in names), names
    new_floats = [
        out
        for name, out in Record.ops
        if isinstance(out, torch.Tensor)
        and out.is_floating_point()
        and out.dim()
        and out._base is None
        if name not in ("select", "unsqueeze", "view", "expand", "alias")
    ]
    assert all(t.shape == (1, patches, hidden) for t in new_floats), [t.shape for t in new_floats]
    ours = encoder_chunk(
        patches,
        free_bytes=0,
        total_bytes=0,
        position_embedding_size=size,
        hidden_size=hidden,
        dtype_bytes=4,
    )
    assert ours.lookup_bytes_per_item == sum(t.numel() * t.element_size() for t in new_floats)


@pytest.mark.parametrize("default_output_length", [280, 1120])
def test_seed_row_widths_and_rows_are_the_seeds(default_output_length):
    """The seed's own get_encoder_cudagraph_config (its capture axis: one row width per
    allowed budget up to default_output_length) and prepare_encoder_cudagraph_capture_inputs
    (at most budget // width rows), against encoder_graph_budgets' seed columns."""
    seed = load_seed("gemma4_mm").Gemma4ForConditionalGeneration
    graphs = encoder_graph_budgets(
        max_num_batched_tokens=4096, max_model_len=8192, default_output_length=default_output_length
    )
    stub = type(
        "SeedGraphs",
        (),
        {
            n: getattr(seed, n)
            for n in ("get_encoder_cudagraph_config", "prepare_encoder_cudagraph_capture_inputs")
        },
    )()
    stub.config = types.SimpleNamespace(
        vision_config=types.SimpleNamespace(default_output_length=default_output_length),
        text_config=types.SimpleNamespace(hidden_size=8),
    )
    stub.vision_tower = types.SimpleNamespace(
        config=types.SimpleNamespace(pooling_kernel_size=3, patch_size=2)
    )
    stub.model_dtype = None
    assert stub.get_encoder_cudagraph_config().capture_axes == (graphs.row_widths_seed,)
    for budget in graphs.token_budgets:
        for width in graphs.row_widths_seed:
            capture = stub.prepare_encoder_cudagraph_capture_inputs(
                token_budget=budget,
                max_batch_size=graphs.max_batch_size,
                max_frames_per_batch=graphs.max_frames_per_batch,
                axis_keys=(width,),
            )
            rows, patches = capture.values["pixel_values"].shape[:2]
            assert (rows, patches) == (graphs.rows_seed(budget, width), width * 9), (budget, width)
