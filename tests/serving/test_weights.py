"""Loading a checkpoint (issue 22, item 8): vLLM's own classes run on the tiny bundles'
weight names. The engine check (every kept name is a loaded parameter) lives in
tests/plans/test_sentences.py, which shares one engine.

The tower-quantization rule of every supported release is held to that release's own
code: the installed class's ``__init__`` is run as it is; another release's
``Gemma4ForConditionalGeneration.__init__`` (and its ``_get_tower_quant_config``, where it
has one) is read from its unpacked source (``tests/vllm_sources.py``) with ``ast`` and run
on the installed vLLM's module globals, the towers swapped for recorders by
``vllm_quantized_modules`` as for the installed class.
"""

from __future__ import annotations

import ast
import builtins
import random
import sys
import types
from pathlib import Path

import pytest

from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.facts.released import RELEASED_IDS, released_config
from gemma_explore.serving.weights import (
    ANY_SIZE_METHODS,
    GEMMA4_TOWER_MODULES,
    _run_loader_setup,
    loading_plan,
    tower_quantized,
    vllm_model_class,
    vllm_quantized_modules,
)
from gemma_explore.vllm_versions import SUPPORTED, installed_vllm, vllm_profile
from tests.vllm_sources import read_source

pytestmark = [
    pytest.mark.vllm_version,
    pytest.mark.skipif(not vllm_available(), reason="vllm is not installed"),
]

INSTALLED = vllm_profile().version if installed_vllm() else None
GEMMA4 = "model_executor/models/gemma4_mm.py"
METHODS = (None, "fp8", "gptq_marlin", "awq", *ANY_SIZE_METHODS)
# (vision hidden, vision intermediate, audio hidden or None): the released sizes, and two
# where the towers disagree about multiples of 64.
SIZES = ((768, 3072, 1024), (1152, 4304, None), (1152, 4304, 1024), (768, 3072, 1000))
TOWERS = {"vision_tower": "vision_config", "embed_vision": "vision_config"}
TOWERS |= {"audio_tower": "audio_config", "embed_audio": "audio_config"}
# Names a release's __init__ uses that the installed vLLM's gemma4_mm.py may not import,
# with what they stand for here (the towers' quantization never reads them).
INIT_STAND_INS = {"build_mm_input_norm": lambda *_args, **_kwargs: None}


def _config(vision_hidden: int, vision_intermediate: int, audio_hidden: int | None):
    from transformers import Gemma4AudioConfig, Gemma4Config, Gemma4VisionConfig

    vision = Gemma4VisionConfig(hidden_size=vision_hidden, intermediate_size=vision_intermediate)
    audio = None if audio_hidden is None else Gemma4AudioConfig(hidden_size=audio_hidden)
    return Gemma4Config(vision_config=vision.to_dict(), audio_config=audio and audio.to_dict())


def _quant(method):
    """What vLLM's __init__ reads of a quantization config: its name."""
    return method and types.SimpleNamespace(get_name=lambda m=method: m)


def _release_gemma4(version: str) -> type:
    """``Gemma4ForConditionalGeneration`` with ``version``'s own ``__init__`` (and its
    ``_get_tower_quant_config``, where it has one), read from that release's source and
    executed on the installed ``gemma4_mm``'s globals (its imports and helpers), with the
    installed class's bases; the installed class itself for the installed release."""
    from vllm.model_executor.models import gemma4_mm

    installed = gemma4_mm.Gemma4ForConditionalGeneration
    if version == INSTALLED:
        return installed
    text = read_source(version, GEMMA4)
    tree = ast.parse(text)
    helpers = [
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and n.name == "_get_tower_quant_config"
    ]
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == installed.__name__]
    (init,) = [f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"]
    namespace = {**vars(gemma4_mm), **INIT_STAND_INS, "_BASES": installed.__bases__}
    # (a local variable's annotation is never evaluated: its names need no stand-in)
    annotations = {
        id(n)
        for a in ast.walk(init)
        if isinstance(a, ast.AnnAssign)
        for n in ast.walk(a.annotation)
    }
    names = [n for n in ast.walk(init) if isinstance(n, ast.Name) and id(n) not in annotations]
    local = {n.id for n in names if isinstance(n.ctx, ast.Store)}
    local |= {a.arg for a in ast.walk(init.args) if isinstance(a, ast.arg)}
    used = {n.id for n in names if isinstance(n.ctx, ast.Load)} - local
    helper_names = {h.name for h in helpers}
    missing = used - set(namespace) - local - helper_names - set(dir(builtins))
    assert not missing, f"vLLM {version}'s __init__ uses {sorted(missing)}: add stand-ins"
    new_cls = ast.ClassDef(
        name=installed.__name__,
        bases=[ast.Starred(ast.Name("_BASES", ast.Load()), ast.Load())],
        keywords=[],
        body=[init],
        decorator_list=[],
    )
    name = f"_vllm_source_{version.replace('.', '_')}_gemma4_mm"
    module = types.ModuleType(name)
    module.__dict__.update(namespace)
    module.__dict__["__name__"] = name  # its own name, not the installed module's
    sys.modules[name] = module
    body = ast.fix_missing_locations(ast.Module(body=[*helpers, new_cls], type_ignores=[]))
    flags = __import__("__future__").annotations.compiler_flag
    exec(
        compile(body, f"vLLM {version} {GEMMA4}", "exec", flags=flags, dont_inherit=True),
        module.__dict__,
    )
    return module.__dict__[installed.__name__]


def _tower_quant_config(version: str):
    """A release's own ``_get_tower_quant_config`` (None where the release has none): the
    installed file's, or the release's unpacked source."""
    if version == INSTALLED:
        from vllm.model_executor.models import gemma4_mm

        text = Path(gemma4_mm.__file__).read_text(encoding="utf-8")
    else:
        text = read_source(version, GEMMA4)
    tree = ast.parse(text)
    found = [
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and n.name == "_get_tower_quant_config"
    ]
    if not found:
        return None
    namespace: dict = {}
    exec(compile(ast.Module(body=found, type_ignores=[]), f"vLLM {version}", "exec"), namespace)
    return namespace["_get_tower_quant_config"]


def test_every_name_is_mapped_as_vllms_mapper_maps_it(tiny4, tiny3n, tinyu):
    for bundle in (tiny4, tiny3n, tinyu):
        plan = loading_plan(bundle)
        cls = vllm_model_class(plan.architecture)
        for row in plan.rows:
            base = cls.hf_to_vllm_mapper._map_name(row.released)
            if row.shard:  # the fused name replaces exactly the shard's module name
                assert row.vllm == base.replace(f".{row.shard}.", ".qkv_proj.") or (
                    row.vllm == base.replace(f".{row.shard}.", ".gate_up_proj.")
                )
            elif not row.ignored:
                assert row.vllm == base
        assert not any(r.released.startswith("model.vision_tower") and r.shard for r in plan.rows)


def test_audio_less_checkpoints_skip_every_audio_weight():
    """vLLM's own load_weights, run with and without an audio tower."""
    gemma4 = vllm_model_class("Gemma4ForConditionalGeneration")
    with_audio = _run_loader_setup(gemma4, has_audio=True)
    without = _run_loader_setup(gemma4, has_audio=False)
    assert with_audio == ("embed_vision.embedding.", "embed_audio.embedding.")
    assert set(without) - set(with_audio) == {"audio_tower.", "embed_audio."}
    unified = vllm_model_class("Gemma4UnifiedForConditionalGeneration")
    assert set(_run_loader_setup(unified, has_audio=False)) - set(with_audio) == {"embed_audio."}
    assert _run_loader_setup(vllm_model_class("Gemma3nForConditionalGeneration"), True) == ()


@pytest.mark.parametrize("version", SUPPORTED)
def test_tower_rule_is_what_each_releases_init_hands_each_tower(version):
    """Each release's own ``__init__`` (the installed class, or the release's from its
    source on the installed framework) hands each tower and embedder the quantization
    config exactly where ``tower_quantized`` says, by that release's rule: "single" decides
    both towers from the vision sizes, "per-tower" each tower from its own."""
    cls = _release_gemma4(version)
    for sizes in SIZES:
        config = _config(*sizes)
        for method in METHODS:
            modules = vllm_quantized_modules(cls, config, method)  # the class, run as it is
            assert set(modules) == {m for m, c in TOWERS.items() if getattr(config, c)}
            want = {
                m: tower_quantized(method, config, GEMMA4_TOWER_MODULES[m], vllm_version=version)
                for m in modules
            }
            assert modules == want, (version, sizes, method)


@pytest.mark.parametrize("version", SUPPORTED)
def test_per_tower_rule_is_get_tower_quant_config(version):
    """Where the rule is "per-tower", the release's own ``_get_tower_quant_config``, called
    directly on many tower sizes; where it is "single", the release has no such function
    (its ``__init__`` decides inline, test_tower_rule_is_what_each_releases_init_hands_each_tower)."""
    own = _tower_quant_config(version)
    rule = vllm_profile(version).tower_quant_rule
    assert (own is not None) == (rule == "per-tower"), (version, rule)
    if own is None:
        return
    rng = random.Random(0)
    for _ in range(300):
        vision = types.SimpleNamespace(
            hidden_size=rng.choice([64, 768, 1000, 1152]) + rng.choice([0, 0, 8]),
            intermediate_size=rng.choice([3072, 4304, 4352]),
        )
        audio = types.SimpleNamespace(hidden_size=rng.choice([1024, 1000, 1536]))
        config = types.SimpleNamespace(vision_config=vision, audio_config=audio)
        method = rng.choice(METHODS)
        for tower, part in (("vision", vision), ("audio", audio)):
            theirs = own(part, _quant(method)) is not None
            assert tower_quantized(method, config, tower, vllm_version=version) is theirs


def test_the_rules_part_where_only_one_towers_sizes_divide():
    """A big vision tower beside a 1024-wide audio tower, and the reverse: the "single"
    rule follows the vision sizes for the audio tower, "per-tower" the audio's own (each
    held to the releases' code by the two tests above)."""
    big_vision = _config(1152, 4304, 1024)  # 4304 is no multiple of 64; audio 1024 is
    odd_audio = _config(768, 3072, 1000)
    for version in SUPPORTED:
        per_tower = vllm_profile(version).tower_quant_rule == "per-tower"
        assert tower_quantized("fp8", big_vision, "audio", vllm_version=version) is per_tower
        assert tower_quantized("fp8", odd_audio, "audio", vllm_version=version) is not per_tower
        assert not tower_quantized("fp8", big_vision, "vision", vllm_version=version)
        assert tower_quantized("torchao", big_vision, "vision", vllm_version=version)
        assert not tower_quantized(None, odd_audio, "vision", vllm_version=version)
    with pytest.raises(ValueError, match="no audio tower"):
        tower_quantized("fp8", _config(768, 3072, None), "audio")


def test_released_checkpoints_get_one_answer_from_every_rule():
    gemma4 = vllm_model_class("Gemma4ForConditionalGeneration")
    for rid in RELEASED_IDS:
        config = released_config(rid)
        if config.architectures[0] != gemma4.__name__:
            continue
        installed = vllm_quantized_modules(gemma4, config, "fp8")
        for version in SUPPORTED:
            assert vllm_quantized_modules(gemma4, config, "fp8", vllm_version=version) == (
                installed
            ), (rid, version)


@pytest.mark.parametrize("version", SUPPORTED)
def test_another_release_is_answered_by_its_rule(version, tiny4):
    """Naming a release other than the installed one: the installed class says which
    modules exist, and Gemma 4's towers follow the named release's rule."""
    gemma4 = vllm_model_class("Gemma4ForConditionalGeneration")
    big_vision = _config(1152, 4304, 1024)
    modules = vllm_quantized_modules(gemma4, big_vision, "fp8", vllm_version=version)
    assert modules == vllm_quantized_modules(_release_gemma4(version), big_vision, "fp8")
    plan = loading_plan(tiny4, vllm_version=version)
    assert plan.vllm_version == version
    assert vllm_profile(version).label in plan.steps[-1]


def test_unified_and_gemma3n_classes_quantize_what_their_init_says(tiny3n, tinyu):
    """Unified hands the config to its encoder-free vision_embedder only; Gemma 3n to no
    tower or embedder. The plan's tower rows follow vLLM's __init__."""
    for bundle in (tiny3n, tinyu):
        plan = loading_plan(bundle, quant_method="fp8")
        cls = vllm_model_class(plan.architecture)
        assert plan.modules_quantized == vllm_quantized_modules(cls, bundle.model.config, "fp8")
        for row in plan.rows:
            top = (row.vllm or "").split(".")[0]
            if top in plan.modules_quantized and row.quantized:
                assert plan.modules_quantized[top], row
    assert not any(loading_plan(tiny3n).modules_quantized.values())
    unified = loading_plan(tinyu).modules_quantized
    assert unified == {"vision_embedder": True, "embed_vision": False, "embed_audio": False}


def test_gemma3n_mm_mapping_names_a_missing_connector(tiny3n):
    plan = loading_plan(tiny3n)
    modules = {n for n, _ in tiny3n.model.model.named_modules()}
    assert "multi_modal_projector" not in modules
    assert all(r.part != "connector" for r in plan.rows)
    assert not any(plan.modules_quantized.values())


def test_the_table_renders(tiny4):
    plan = loading_plan(tiny4)
    text = plan.table().text()
    assert "qkv_proj" in text and "released name" in text


# --- The weights vLLM loads (issue 37, item 2): held to vLLM's own model on the meta device.

ALL_ZERO = {"image": 0, "audio": 0, "video": 0}
# (quantization, limits) per released checkpoint: bf16 as served, bf16 text-only, and FP8
# (online, from the bf16 checkpoint) without audio.
CASES = ((None, None), (None, ALL_ZERO), ("fp8", {"audio": 0}))


@pytest.fixture(scope="module")
def vllm_meta(tmp_path_factory):
    """``build(id, quantization, limits)`` → what vLLM's own model class allocates, built on
    the meta device under a CPU VllmConfig (one per case, cached): parameters per top-level
    module, parameters of the layers its quant config quantizes, and the buffers."""
    if not _builds_models_here():
        pytest.skip(f"vLLM {installed_vllm()} (a GPU build) builds no model without CUDA")
    import torch
    import vllm.model_executor.layers.activation as activation
    from vllm.config import (
        DeviceConfig,
        LoadConfig,
        ModelConfig,
        VllmConfig,
        set_current_vllm_config,
    )
    from vllm.distributed import parallel_state
    from vllm.model_executor.model_loader.utils import initialize_model
    from vllm.utils.torch_utils import set_default_torch_dtype

    from gemma_explore.models.checkpoints import family_from_config
    from gemma_explore.models.tiny import build_tiny_processor

    # Gemma 3n's GeluAndMulSparse computes a scalar with .item() in __init__ (it holds no
    # weights): let that one run on the CPU.
    sparse_init = activation.GeluAndMulSparse.__init__

    def on_cpu(self, *args, **kwargs):
        with torch.device("cpu"):
            sparse_init(self, *args, **kwargs)

    activation.GeluAndMulSparse.__init__ = on_cpu
    built: dict = {}
    started = []

    def build(rid, quantization, limits):
        key = (rid, quantization, str(limits))
        if key in built:
            return built[key]
        folder = tmp_path_factory.getbasetemp() / rid.replace("/", "_")
        if not folder.exists():
            config = released_config(rid)
            config.save_pretrained(folder)
            build_tiny_processor(family_from_config(config, rid)).save_pretrained(folder)
        mc = ModelConfig(
            model=str(folder),
            tokenizer=str(folder),
            dtype="bfloat16",
            max_model_len=2048,
            quantization=quantization,
            limit_mm_per_prompt=limits,
        )
        vc = VllmConfig(
            model_config=mc,
            device_config=DeviceConfig(device="cpu"),
            load_config=LoadConfig(load_format="dummy"),
        )
        with set_current_vllm_config(vc):
            if not started:
                parallel_state.init_distributed_environment(
                    world_size=1,
                    rank=0,
                    local_rank=0,
                    distributed_init_method=f"file://{tmp_path_factory.mktemp('dist')}/init",
                    backend="gloo",
                )
                parallel_state.ensure_model_parallel_initialized(1, 1)
                started.append(True)
            with set_default_torch_dtype(torch.bfloat16), torch.device("meta"):
                model = initialize_model(vllm_config=vc)
        built[key] = _summary(model, vc)
        return built[key]

    yield build
    activation.GeluAndMulSparse.__init__ = sparse_init
    if started:
        parallel_state.destroy_model_parallel()
        parallel_state.destroy_distributed_environment()


def _summary(model, vc) -> dict:
    """Parameters per top-level module; quantized: the weights of every layer whose quant
    method is a quantizing one (vLLM's get_quant_method decided); bytes: those at 1 B
    (float8_e4m3fn), the rest at their dtype; buffers: RoPE caches and tensor attributes."""
    import torch

    parts: dict[str, int] = {}
    for name, p in model.named_parameters():
        parts[name.split(".")[0]] = parts.get(name.split(".")[0], 0) + p.numel()
    quantized, quantized_bytes_saved = 0, 0
    for _name, module in model.named_modules():
        method = type(getattr(module, "quant_method", None)).__name__
        if method == "NoneType" or "Unquantized" in method or "KVCache" in method:
            continue
        for pname, p in module.named_parameters(recurse=False):
            if "weight" in pname and "scale" not in pname:
                quantized += p.numel()
                quantized_bytes_saved += p.numel() * (p.element_size() - 1)
    total_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    rope = sum(
        b.numel() * b.element_size()
        for n, b in model.named_buffers()
        if n.endswith("cos_sin_cache")
    )
    attrs = sum(
        v.numel() * v.element_size() for v in vars(model).values() if isinstance(v, torch.Tensor)
    )
    return {
        "parts": parts,
        "quantized": quantized,
        "bytes": total_bytes - quantized_bytes_saved,
        "buffers": rope + attrs,
        "mnbt": vc.scheduler_config.max_num_batched_tokens,
    }


def _builds_models_here() -> bool:
    """vLLM builds a model on a CPU only in its CPU build (``+cpu``); its GPU build, on a
    machine without CUDA, finds no attention backend ("Invalid attention backend")."""
    import torch

    return "+cpu" in (installed_vllm() or "") or torch.cuda.is_available()


@pytest.mark.parametrize("rid", RELEASED_IDS)
def test_loaded_weights_equal_vllms_meta_device_model(rid, vllm_meta):
    """bf16 as served, bf16 with every limit 0, FP8 without audio: parameters per part,
    skipped towers, the extra V projections, quantized parameters, bytes and buffers."""
    from gemma_explore.serving.model import serving_model
    from gemma_explore.serving.weights import vllm_loaded_weights

    model = serving_model(rid)
    for quantization, limits in CASES:
        theirs = vllm_meta(rid, quantization, limits)
        ours = vllm_loaded_weights(
            model,
            limit_mm_per_prompt=limits,
            quantization=quantization,
            max_num_batched_tokens=theirs["mnbt"],
        )
        case = (rid, quantization, limits)
        assert ours.parameters == sum(theirs["parts"].values()), case
        assert ours.parameters_by_part == theirs["parts"], case
        assert ours.quantized_parameters == theirs["quantized"], case
        assert ours.bytes - ours.buffer_bytes == theirs["bytes"], case
        assert ours.buffer_bytes == theirs["buffers"], case
        assert ours.parameters + sum(ours.skipped.values()) == (
            model.num_parameters + ours.extra_value_parameters
        ), case


def test_loaded_weights_refuse_a_method_they_cannot_count():
    from gemma_explore.serving.model import serving_model
    from gemma_explore.serving.weights import vllm_loaded_weights

    with pytest.raises(ValueError, match="quantization='awq'"):
        vllm_loaded_weights(serving_model("tiny-gemma4"), quantization="awq")


def test_loaded_weights_name_their_release():
    """The count follows the named release (its tower rule; the tiny towers' sizes, 32
    and 64, are multiples of 64 under no rule, so every release counts the same)."""
    from gemma_explore.serving.model import serving_model
    from gemma_explore.serving.weights import vllm_loaded_weights

    model = serving_model("tiny-gemma4")
    counts = {}
    for version in SUPPORTED:
        loaded = vllm_loaded_weights(model, quantization="fp8", vllm_version=version)
        assert loaded.vllm_version == version
        assert loaded.steps[-1].startswith(vllm_profile(version).label)
        counts[version] = loaded.quantized_parameters
    assert len(set(counts.values())) == 1, counts
