"""Our encoder chunk, graph budgets, packing and replay, held to each vLLM release's own code.

The installed vLLM's functions are imported and run. Another supported release cannot be
imported (its torch and its framework differ), so its own code is read from its unpacked
source (``tests/vllm_sources.py``; the tests skip with one line where it is absent) and
executed with ``ast``: the whole ``v1/worker/encoder_cudagraph.py`` manager module, and
Gemma 4's graph methods and tables from ``gemma4_mm.py``, with stand-ins for their
imports (torch is real; the distributed and logging helpers are never reached) and their
``encoder_cudagraph_defs.py`` executed the same way. Every claim is then the release's own
code running on CPU: its ``EncoderCudaGraphManager.__init__`` picks the budgets from its
``CompilationConfig`` defaults (read from its ``config/compilation.py``), its
``_capture_budget_graph`` sizes each graph, its ``_execute_local`` packs the images.
"""

from __future__ import annotations
import __future__

import ast
import contextlib
import functools
import importlib.util
import itertools
import logging
import math
import random
import re
import sys
import textwrap
import types
from bisect import bisect_left
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gemma_explore.serving.encoder import (
    _grid_budgets,
    encoder_chunk,
    encoder_graph_budgets,
    pack_encoder_items,
    plan_encoder_replay,
)
from gemma_explore.vllm_versions import SUPPORTED, installed_vllm, vllm_profile
from tests.conftest import examples
from tests.vllm_sources import read_source

pytestmark = pytest.mark.vllm_version
GIB = 2**30
INSTALLED = vllm_profile().version if installed_vllm() else None
GEMMA4 = "model_executor/models/gemma4_mm.py"
MANAGER = "v1/worker/encoder_cudagraph.py"
DEFS = "v1/worker/encoder_cudagraph_defs.py"
# Gemma 4's methods and tables the encoder-graph path uses (a release has those it has).
GRAPH_METHODS = (
    "_encoder_chunk",
    "_get_max_soft_tokens",
    "_embed_patches",
    "get_encoder_cudagraph_config",
    "get_encoder_cudagraph_budget_range",
    "get_input_modality",
    "get_max_frames_per_video",
    "get_encoder_cudagraph_item_specs",
    "select_encoder_cudagraph_items",
    "prepare_encoder_cudagraph_capture_inputs",
    "prepare_encoder_cudagraph_replay_buffers",
    "encoder_cudagraph_forward",
)
GEMMA4_TABLES = (
    "_SUPPORTED_SOFT_TOKENS",
    "_VIDEO_MAX_SOFT_TOKENS",
    "_VIDEO_MAX_FRAMES",
    "_get_max_soft_tokens",
)


# --- Running a release's own code ---------------------------------------------------------


def _text(version: str, relative: str) -> str:
    """``vllm/<relative>`` of a release: the installed file, or the unpacked source."""
    if version == INSTALLED:
        root = Path(importlib.util.find_spec("vllm").origin).parent
        return (root / relative).read_text(encoding="utf-8")
    return read_source(version, relative)


class _NoImports(ast.NodeTransformer):
    """Turns every import into ``pass``: the namespace supplies the names instead."""

    def visit_Import(self, node: ast.AST) -> ast.AST:
        return ast.copy_location(ast.Pass(), node)

    visit_ImportFrom = visit_Import


def _imported(tree: ast.AST) -> set[str]:
    names = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom):
            names |= {a.asname or a.name for a in n.names}
        elif isinstance(n, ast.Import):
            names |= {a.asname or a.name.split(".")[0] for a in n.names}
    return names


def _run(tree: ast.Module, namespace: dict, where: str) -> dict:
    """Execute ``tree`` (imports turned into ``pass``) as a fresh module named after
    ``where``, its globals ``namespace``, after checking that the namespace stands in for
    every name it imports; annotations stay unevaluated (as under ``from __future__
    import annotations``). Returns the module's globals."""
    missing = _imported(tree) - set(namespace)
    assert not missing, f"{where} imports {sorted(missing)}: give them stand-ins here"
    tree = ast.fix_missing_locations(_NoImports().visit(tree))
    name = "_vllm_source_" + re.sub(r"\W", "_", where)
    module = types.ModuleType(name)
    module.__dict__.update(namespace)
    sys.modules[name] = module  # dataclasses look their module up
    flags = __future__.annotations.compiler_flag
    exec(compile(tree, where, "exec", flags=flags, dont_inherit=True), module.__dict__)
    return module.__dict__


def _top_level(version: str, relative: str, names: tuple[str, ...], namespace: dict) -> dict:
    """The module-level functions and assignments ``names`` (those the file has) of a
    release's file, executed in ``namespace``."""
    tree = ast.parse(_text(version, relative))
    keep = [
        n
        for n in tree.body
        if (isinstance(n, ast.FunctionDef) and n.name in names)
        or (
            isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id in names for t in n.targets)
        )
    ]
    return _run(ast.Module(body=keep, type_ignores=[]), namespace, f"vLLM {version} {relative}")


def _methods(version: str, relative: str, cls: str, names: tuple[str, ...], namespace: dict):
    """A class holding the methods ``names`` (those it has) of ``cls`` in a release's file."""
    tree = ast.parse(_text(version, relative))
    (node,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
    body = [f for f in node.body if isinstance(f, ast.FunctionDef) and f.name in names]
    new = ast.ClassDef(name=cls, bases=[], keywords=[], body=body, decorator_list=[])
    return _run(ast.Module(body=[new], type_ignores=[]), namespace, f"vLLM {version} {cls}")[cls]


def _unused(*_args: Any, **_kwargs: Any) -> Any:
    raise AssertionError("a stand-in the encoder graph path should not reach")


def _compilation_defaults(version: str) -> dict[str, Any]:
    """``CompilationConfig``'s defaults for the encoder graphs, from the release's own
    ``config/compilation.py`` (``field(default_factory=list)`` is a fresh list)."""
    tree = ast.parse(_text(version, "config/compilation.py"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "CompilationConfig"]
    out = {}
    for n in cls.body:
        if isinstance(n, ast.AnnAssign) and n.target.id.startswith("encoder_cudagraph_"):
            v = n.value
            if isinstance(v, ast.Call) and getattr(v.func, "id", "") == "field":
                (factory,) = [k.value.id for k in v.keywords if k.arg == "default_factory"]
                out[n.target.id] = {"list": list, "dict": dict}[factory]()
            else:
                out[n.target.id] = ast.literal_eval(v)
    return out


class _IdentityNorm:
    """The input norm vLLM builds when the processor already normalized the pixels
    (``IdentityInputNorm``: a cast to the visual dtype)."""

    input_dtype = None

    def __call__(self, pixel_values, dtype):
        return pixel_values.to(dtype)


@dataclass
class Release:
    """One release's encoder-graph code: its manager class, a class with Gemma 4's graph
    methods, its ``encoder_cudagraph_defs`` names, its compilation defaults and its
    ``scatter_output_slices``."""

    version: str
    manager_cls: type
    gemma_cls: type
    defs: dict[str, Any]
    compilation: dict[str, Any]
    scatter: Callable

    @property
    def rule(self) -> str:
        return vllm_profile(self.version).encoder_graph_rule

    def source_of(self, method: str) -> str:
        """The text of one of Gemma 4's methods in this release."""
        text = _text(self.version, GEMMA4)
        (cls,) = [
            n
            for n in ast.parse(text).body
            if isinstance(n, ast.ClassDef) and n.name == "Gemma4ForConditionalGeneration"
        ]
        (node,) = [f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == method]
        return textwrap.dedent(ast.get_source_segment(text, node, padded=True))

    def model(self, *, max_soft_tokens=None, default_output_length=280, tower=None, config=None):
        """Gemma 4's graph methods on stand-in attributes (or, with ``tower``, the tiny
        model's vision tower and embedder)."""
        import torch

        g = self.gemma_cls()
        g.config = config or types.SimpleNamespace(
            vision_config=types.SimpleNamespace(default_output_length=default_output_length),
            text_config=types.SimpleNamespace(hidden_size=8),
        )
        g.vision_tower = tower or types.SimpleNamespace(
            config=types.SimpleNamespace(pooling_kernel_size=3, patch_size=2)
        )
        kwargs = None if max_soft_tokens is None else {"max_soft_tokens": max_soft_tokens}
        g.multimodal_config = types.SimpleNamespace(mm_processor_kwargs=kwargs)
        g.vision_input_norm = _IdentityNorm()
        g.model_dtype = torch.float32
        return g

    def manager(self, *, mnbt, mml, video=True, max_soft_tokens=None):
        """The release's own ``EncoderCudaGraphManager.__init__`` on Gemma 4's methods,
        under the release's compilation defaults (the user sets no encoder option)."""
        import torch

        model = self.model(max_soft_tokens=max_soft_tokens)
        multimodal = types.SimpleNamespace(
            get_limit_per_prompt=lambda m: 0 if m == "video" and not video else 1,
            mm_encoder_tp_mode=None,
            mm_processor_kwargs=model.multimodal_config.mm_processor_kwargs,
        )
        config = types.SimpleNamespace(
            compilation_config=types.SimpleNamespace(**self.compilation),
            model_config=types.SimpleNamespace(multimodal_config=multimodal, max_model_len=mml),
            scheduler_config=types.SimpleNamespace(max_num_batched_tokens=mnbt),
            parallel_config=types.SimpleNamespace(tensor_parallel_size=1),
        )
        return self.manager_cls(config, "cpu", torch.float32, model)


@functools.cache
def _release(version: str) -> Release:
    torch = pytest.importorskip("torch")
    compilation = _compilation_defaults(version)  # skips first where the source is absent
    if version == INSTALLED:
        import vllm.v1.worker.encoder_cudagraph_defs as defs
        from vllm.model_executor.models import gemma4_mm
        from vllm.model_executor.models.utils import scatter_output_slices
        from vllm.v1.worker.encoder_cudagraph import EncoderCudaGraphManager

        cls = gemma4_mm.Gemma4ForConditionalGeneration
        methods = {n: cls.__dict__[n] for n in GRAPH_METHODS if n in cls.__dict__}
        gemma = type("Gemma4Graphs", (), methods)
        return Release(
            version, EncoderCudaGraphManager, gemma, vars(defs), compilation, scatter_output_slices
        )
    common = {"torch": torch, "Any": Any, "Hashable": Hashable, "Callable": Callable}
    defs = _run(
        ast.parse(_text(version, DEFS)),
        {**common, "dataclass": dataclass, "field": field},
        f"vLLM {version} {DEFS}",
    )
    defs = {k: v for k, v in defs.items() if not k.startswith("__")}
    manager_tree = ast.parse(_text(version, MANAGER))
    imported = _imported(manager_tree)
    stand_ins = {
        **common,
        **defs,
        "itertools": itertools,
        "math": math,
        "dataclass": dataclass,
        "TypeAlias": TypeAlias,
        "VllmConfig": object,
        "SupportsEncoderCudaGraph": object,
        "init_logger": logging.getLogger,
        "gpu_sync_allowed": contextlib.nullcontext,
        "get_tensor_model_parallel_rank": lambda: 0,
        "get_tensor_model_parallel_world_size": lambda: 1,
        "tensor_model_parallel_all_gather": _unused,
        "get_load_balance_assignment": _unused,
        "scatter_output_slices": _unused,
        "current_stream": _unused,
    }
    if "round_up_to" in imported:
        stand_ins |= _top_level(
            version, "utils/math_utils.py", ("round_up_to",), {"bisect_left": bisect_left}
        )
    manager = _run(manager_tree, stand_ins, f"vLLM {version} {MANAGER}")
    tables = _top_level(version, GEMMA4, GEMMA4_TABLES, {"Mapping": Mapping, "Any": Any})
    namespace = {**common, **defs, **tables, "Mapping": Mapping, "math": math}
    gemma = _methods(version, GEMMA4, "Gemma4ForConditionalGeneration", GRAPH_METHODS, namespace)
    scatter = _top_level(
        version, "model_executor/models/utils.py", ("scatter_output_slices",), dict(common)
    )["scatter_output_slices"]
    return Release(version, manager["EncoderCudaGraphManager"], gemma, defs, compilation, scatter)


@pytest.fixture(scope="module", params=SUPPORTED)
def release(request) -> Release:
    return _release(request.param)


# --- Chunks and graphs ----------------------------------------------------------------


def test_chunk_is_each_releases(release):
    """The release's own ``_encoder_chunk`` over many patch counts and memory sizes."""
    rng = random.Random(0)
    for _ in range(examples(2)):
        patches = rng.choice([0, 630, 1260, 2520, 5040, 10080])
        free, total = rng.randint(0, 200 * GIB), rng.randint(1, 200 * GIB)
        size = rng.choice([10240, 1024])
        ours = encoder_chunk(
            patches,
            free_bytes=free,
            total_bytes=total,
            position_embedding_size=size,
            vllm_version=release.version,
        )
        assert ours.chunk == release.gemma_cls._encoder_chunk(patches, free, total, size)
        assert ours.vllm_version == release.version


def test_encoder_graphs_are_off_by_default(release):
    """The module docstring's claim: ``cudagraph_mm_encoder`` defaults to False."""
    tree = ast.parse(_text(release.version, "config/compilation.py"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "CompilationConfig"]
    (flag,) = [
        n
        for n in cls.body
        if isinstance(n, ast.AnnAssign) and n.target.id == "cudagraph_mm_encoder"
    ]
    assert ast.literal_eval(flag.value) is False


@settings(max_examples=examples(0.5))
@given(
    mnbt=st.integers(70, 40_000),
    mml=st.integers(70, 40_000),
    max_soft_tokens=st.sampled_from([None, 70, 140, 280, 560, 1120, 300]),
    video=st.booleans(),
)
def test_graphs_are_each_releases(release, mnbt, mml, max_soft_tokens, video):
    """Budgets, images and frames per graph, the capture axis and the graph count, as the
    release's own manager ``__init__`` sets them from Gemma 4's budget range and graph
    config (the engine's ``max_soft_tokens`` through its ``mm_processor_kwargs``)."""
    theirs = release.manager(mnbt=mnbt, mml=mml, video=video, max_soft_tokens=max_soft_tokens)
    ours = encoder_graph_budgets(
        max_num_batched_tokens=mnbt,
        max_model_len=mml,
        video=video,
        max_soft_tokens=max_soft_tokens,
        vllm_version=release.version,
    )
    assert list(ours.token_budgets) == theirs.token_budgets == theirs.path_token_budgets["default"]
    assert ours.max_batch_size == theirs.max_batch_size
    assert ours.max_frames_per_batch == theirs.max_frames_per_batch
    assert theirs._capture_axes == ((ours.row_widths,) if ours.row_widths else ())
    assert ours.graph_count == theirs.get_num_graphs_to_capture()
    assert ours.vllm_version == release.version


def test_budget_ranges_below_the_smallest_image_are_refused(release):
    with pytest.raises(ValueError, match="Invalid encoder cudagraph budget range"):
        release.manager(mnbt=64, mml=8192)
    with pytest.raises(ValueError, match="Invalid encoder cudagraph budget range"):
        encoder_graph_budgets(
            max_num_batched_tokens=64, max_model_len=8192, vllm_version=release.version
        )


@settings(max_examples=examples(1))
@given(
    low=st.integers(1, 300),
    span=st.integers(0, 30_000),
    cap=st.one_of(st.none(), st.integers(1, 12_000)),
)
def test_the_grid_is_the_grid_releases_own(release, low, span, cap):
    """Our budget grid against the release's own ``_generate_budgets`` over any range and
    cap (releases whose rule is not the grid double from ``low``)."""
    from gemma_explore.serving.encoder import _doubling_budgets

    high = low + span
    if release.rule == "grid":
        assert _grid_budgets(low, high, cap) == release.manager_cls._generate_budgets(
            low, high, cap
        )
    else:
        assert _doubling_budgets(low, high) == release.manager_cls._generate_budgets(low, high)


class _Stop(Exception):
    pass


@pytest.mark.parametrize("max_soft_tokens", [None, 1120])
def test_captured_rows_are_each_releases(release, max_soft_tokens):
    """Each graph's pixel buffer, as the release's own ``_capture_budget_graph`` asks
    Gemma 4's ``prepare_encoder_cudagraph_capture_inputs`` for it (stopped before the
    CUDA graph): "budget" rows of min(budget, 280) soft tokens with no capture axis, the
    other rules at most budget // width rows per (budget, row width)."""
    manager = release.manager(mnbt=4096, mml=8192, max_soft_tokens=max_soft_tokens)
    graphs = encoder_graph_budgets(
        max_num_batched_tokens=4096,
        max_model_len=8192,
        max_soft_tokens=max_soft_tokens,
        vllm_version=release.version,
    )
    model = manager.model
    seen = []

    def capture(*args, **kwargs):
        values = type(model).prepare_encoder_cudagraph_capture_inputs(model, *args, **kwargs)
        seen.append(
            (
                tuple(values.values["pixel_values"].shape[:2]),
                values.values["gather_indices"].shape[0],
            )
        )
        raise _Stop

    model.prepare_encoder_cudagraph_capture_inputs = capture
    for budget in graphs.token_budgets:
        for width in graphs.row_widths or (None,):
            with pytest.raises(_Stop):
                manager._capture_budget_graph(budget, axis_keys=() if width is None else (width,))
            rows, row_width = graphs.rows(budget, width)
            assert seen.pop() == ((rows, row_width * 9), budget), (budget, width)


# --- Packing and replay ------------------------------------------------------------------


def _vllm_batches(release: Release, tokens: list[int], manager) -> tuple[list, bool]:
    """Run the release's own ``_execute_local`` on images of ``tokens`` rows (image i's
    pixels hold i), with the graph replay and the eager forward replaced by recorders:
    each batch's images, budget (None: eager) and row-width key; and whether vLLM's
    ``assert graph_output is not None`` fired (no graph captured for that key)."""
    import torch

    captured = set(itertools.product(*manager._capture_axes))
    seen = []

    def items(kwargs):
        return tuple(int(pv[0, 0]) for pv in kwargs["pixel_values"])

    def replay(kwargs, budget, path="default", axis_keys=()):
        seen.append((items(kwargs), budget, tuple(axis_keys)))
        return torch.zeros(1) if tuple(axis_keys) in captured else None  # None: a miss

    def eager(kwargs, path="default", **_kw):
        seen.append((items(kwargs), None, ()))
        return torch.zeros(1)

    def postprocess(outputs, batch, per_item, into, **_kw):
        for i in batch:
            into[i] = torch.zeros(1)

    manager._run_budget_graph = replay
    manager.model.encoder_eager_forward = eager
    manager.model.postprocess_encoder_output = postprocess
    kwargs = {
        "pixel_values": [torch.full((t * 9, 1), float(i)) for i, t in enumerate(tokens)],
        "pixel_position_ids": [torch.zeros(t * 9, 2, dtype=torch.long) for t in tokens],
    }
    try:
        manager._execute_local(kwargs)
    except AssertionError:
        return seen, True
    return seen, False


@settings(max_examples=examples(0.3))
@given(
    tokens=st.lists(st.sampled_from([70, 140, 280, 560, 1120]), min_size=1, max_size=12),
    mnbt=st.sampled_from([512, 2048, 8192]),
    max_soft_tokens=st.sampled_from([None, 560, 1120]),
)
def test_packing_is_each_releases(release, tokens, mnbt, max_soft_tokens):
    """Which images share a replay, in which order, on which budget and row-width graph,
    and where vLLM finds no graph, against the release's own ``_execute_local`` with its
    own item specs and item selection."""
    manager = release.manager(mnbt=mnbt, mml=8192, video=False, max_soft_tokens=max_soft_tokens)
    graphs = encoder_graph_budgets(
        max_num_batched_tokens=mnbt,
        max_model_len=8192,
        video=False,
        max_soft_tokens=max_soft_tokens,
        vllm_version=release.version,
    )
    plan = plan_encoder_replay([t * 9 for t in tokens], graphs=graphs)
    theirs, asserted = _vllm_batches(release, tokens, manager)
    ours = []
    for b in plan.batches:
        axis = () if b.budget is None or release.rule == "budget" else (b.batch_width,)
        ours.append((b.items, b.budget, axis))
        if release.rule != "budget" and not b.fits:
            break  # vLLM's assertion ends the call at the first batch without a graph
    assert ours == theirs
    assert [(b.items, b.budget) for b in pack_encoder_items(tokens, graphs)] == [
        (b.items, b.budget) for b in plan.batches
    ]
    if release.rule != "budget":  # ("budget": a too-wide image fails at the copy instead)
        assert asserted == (not plan.ok)


def test_two_140_token_images():
    """The case that parts the releases: graph budget 280 pools rows 280 wide in the
    "budget" rule, so the second image reads the first one's padding; the row-width rule
    replays the (280, 140) graph; the grid replays (320, 140). test_packing_is_each_releases
    and test_replay_on_cpu_does_what_the_plan_says hold each to the release's own code."""
    said = {}
    for version in ("0.32", "0.33", "0.34"):
        graphs = encoder_graph_budgets(
            max_num_batched_tokens=2048, max_model_len=8192, vllm_version=version
        )
        replay = plan_encoder_replay([1260, 1260], graphs=graphs, vllm_version=version)
        said[version] = (replay.ok, [b.budget for b in replay.batches], replay.vllm_version)
    assert said == {
        "0.32": (False, [280], "0.32"),
        "0.33": (True, [280], "0.33"),
        "0.34": (True, [320], "0.34"),
    }
    graphs = encoder_graph_budgets(
        max_num_batched_tokens=2048, max_model_len=8192, vllm_version="0.32"
    )
    with pytest.raises(ValueError, match="vllm_version='0.33'"):
        plan_encoder_replay([1260, 1260], graphs=graphs, vllm_version="0.33")


@settings(max_examples=examples(0.3))
@given(
    patches=st.lists(st.sampled_from([630, 1260, 2520]), min_size=1, max_size=5),
    as_list=st.booleans(),
)
def test_gather_indices_equal_each_releases(release, patches, as_list):
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
    replay = release.model().prepare_encoder_cudagraph_replay_buffers(
        {"pixel_values": pv, "pixel_position_ids": pp}
    )
    tokens = [p // 9 for p in patches] if as_list else [width // 9] * len(patches)
    ours = replay_gather_indices(tokens, max(patches) // 9)
    assert tuple(replay.values["gather_indices"].tolist()) == ours


@settings(max_examples=examples(0.3))
@given(frames=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_frame_rows_equal_each_releases_selection(release, frames, data):
    import torch

    from gemma_explore.serving.encoder import frame_rows

    indices = data.draw(st.lists(st.integers(0, len(frames) - 1), min_size=1, unique=True))
    rows = torch.arange(sum(frames))
    kwargs = {
        "pixel_values_videos": rows[:, None, None].expand(-1, 9, 3),
        "pixel_position_ids_videos": rows[:, None, None].expand(-1, 9, 2),
        "video_frame_counts": torch.tensor(frames),
    }
    picked = release.model().select_encoder_cudagraph_items(kwargs, indices)
    assert tuple(picked["pixel_values_videos"][:, 0, 0].tolist()) == frame_rows(frames, indices)


def test_the_cast_before_the_projection_is_each_releases(release):
    """``cast_to`` is the expression the release's own replay forward casts with (held to
    the source text: the cast needs a quantized projection to matter, which a CPU test
    cannot build)."""
    graphs = encoder_graph_budgets(
        max_num_batched_tokens=2048, max_model_len=8192, vllm_version=release.version
    )
    replay = plan_encoder_replay([630], graphs=graphs)
    forward = release.source_of("encoder_cudagraph_forward")
    assert replay.cast_to in forward
    assert replay.steps[-1].startswith(f"The gathered rows are cast to {replay.cast_to}")


def test_each_part_is_the_same_since_the_release_it_names():
    """``versions`` says since which release a part is unchanged; for the gather indices
    and the cast, the named releases' own methods say the same (ast-equal replay buffers,
    the same cast expression)."""
    for version in SUPPORTED:
        graphs = encoder_graph_budgets(
            max_num_batched_tokens=2048, max_model_len=8192, vllm_version=version
        )
        versions = plan_encoder_replay([630], graphs=graphs).versions
        label = vllm_profile(version).label
        assert all(v.startswith(f"{label}: ") for v in versions.values()), versions
        for part, method in (
            ("gather_indices", "prepare_encoder_cudagraph_replay_buffers"),
            ("dtype cast before the projection", "encoder_cudagraph_forward"),
        ):
            since = versions[part].rsplit("the same since vLLM ", 1)
            if len(since) == 1:
                continue
            older, newer = _release(since[1]), _release(version)
            if part == "gather_indices":
                assert ast.dump(ast.parse(older.source_of(method))) == ast.dump(
                    ast.parse(newer.source_of(method))
                ), (part, version)
            else:
                cast = plan_encoder_replay([630], graphs=graphs).cast_to
                assert cast in older.source_of(method) and cast in newer.source_of(method)


# Each case: per-image budgets in one request → what each rule's replay does with them.
REPLAY_CASES = [
    ([280, 280], {"budget": "right", "row-width": "right", "grid": "right"}),
    ([140], {"budget": "right", "row-width": "right", "grid": "right"}),
    ([140, 140], {"budget": "wrong", "row-width": "right", "grid": "right"}),
    # 5040 patches: no room in graph 560's rows of 280 × 9 ("budget"); no graph captured
    # for rows of 560 on an engine whose widths stop at 280 (the others)
    ([560], {"budget": "copy fails", "row-width": "no graph", "grid": "no graph"}),
]


@pytest.mark.parametrize(("budgets", "expected"), REPLAY_CASES)
def test_replay_on_cpu_does_what_the_plan_says(release, tiny4, budgets, expected):
    """The release's own capture shapes, padding, item selection, replay buffers, forward
    and scatter, on the tiny model's weights (a CUDA graph replays exactly this forward on
    these buffers): each image's rows against transformers' eager features."""
    import dataclasses

    import numpy as np
    import torch
    from PIL import Image

    import gemma_explore as ge

    expected = expected[release.rule]
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
        encoder_graph_budgets(
            max_num_batched_tokens=2048, max_model_len=8192, vllm_version=release.version
        ),
        max_batch_size=2,
    )
    plan = plan_encoder_replay(
        [p.shape[0] for p in pvs], valid_tokens=[e.shape[0] for e in eager], graphs=graphs
    )
    (batch,) = plan.batches
    stub = release.model(tower=model.model.vision_tower, config=model.config)
    stub.embed_vision = model.model.embed_vision
    kwargs = {"pixel_values": pvs, "pixel_position_ids": pps}
    specs = stub.get_encoder_cudagraph_item_specs(kwargs)
    assert [s.output_tokens for s in specs] == list(batch.item_tokens)
    config = stub.get_encoder_cudagraph_config()
    widths = set(itertools.chain(*config.capture_axes))
    if expected == "no graph":  # the release captures no graph of this width
        assert widths and batch.batch_width not in widths and not batch.fits and not plan.ok
        return
    capture = stub.prepare_encoder_cudagraph_capture_inputs(
        token_budget=batch.budget,
        max_batch_size=2,
        max_frames_per_batch=0,
        axis_keys=(batch.batch_width,) if widths else None,
    )
    assert capture.values["pixel_values"].shape[1] // 9 == batch.graph_width
    selected = stub.select_encoder_cudagraph_items(kwargs, list(batch.items))
    selected.pop(release.defs["ENCODER_CUDAGRAPH_AXIS_KEYS_KWARG"], None)  # the manager pops it
    replay = stub.prepare_encoder_cudagraph_replay_buffers(selected, 2, 0)
    assert tuple(replay.values["gather_indices"].tolist()) == batch.gather_indices
    copy = [
        (
            capture.values[k],
            replay.values[k],
            config.padding_logics.get(k, release.manager_cls._copy_padded_buffer),
        )
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
    release.scatter(out, list(batch.items), [s.output_tokens for s in specs], got)
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
