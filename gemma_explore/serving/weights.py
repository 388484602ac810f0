"""Loading a checkpoint into vLLM: what each released weight name becomes.

vLLM does not load a Gemma checkpoint name for name. Its model class says how
(``gemma3n_mm.py``, ``gemma4_mm.py``):

* ``hf_to_vllm_mapper``: a prefix map from the checkpoint's names to vLLM's module
  paths (``model.language_model.`` → ``language_model.model.``, ``model.vision_tower`` →
  ``vision_tower``, …).
* ``packed_modules_mapping``: ``q_proj``, ``k_proj``, ``v_proj`` load into one fused
  ``qkv_proj`` and ``gate_proj``, ``up_proj`` into ``gate_up_proj``, one shard each.
* ``load_weights``' ignored prefixes: Gemma 4 and Unified skip the vestigial
  ``embed_vision.embedding.`` / ``embed_audio.embedding.`` tables some checkpoints carry
  from Gemma 3n, and every audio weight when the model has no audio tower.
* ``get_mm_mapping``: which modules are the language model, the connectors and the
  towers (what multimodal LoRA targets).
* Tower quantization: which towers and embedders get the quantization config, by the
  profile's ``tower_quant_rule`` (:func:`tower_quantized`). Both rules hand it at any
  size with bitsandbytes, torchao or compressed-tensors, otherwise only to Linear sizes
  that are multiples of 64; they part on *whose* sizes count, which matters when the
  audio tower's sizes and the vision tower's disagree:

  - ``"single"`` (``Gemma4ForConditionalGeneration.__init__``, a local ``tower_quant``):
    the *vision* config's ``hidden_size`` and ``intermediate_size`` decide for both
    towers and both embedders;
  - ``"per-tower"`` (the module function ``_get_tower_quant_config``, called once per
    tower): each tower by its *own* config, its ``hidden_size`` and, where it has one,
    its ``intermediate_size`` (the audio config has none, so its ``hidden_size`` decides).

  For every released checkpoint the two agree (E2B/E4B: vision 768 and 3072, audio 1024;
  26B/31B: vision 4304 is no multiple and there is no audio tower). Unified's class hands
  the whole config to its encoder-free ``vision_embedder`` and none to its two
  ``Gemma4MultimodalEmbedder``; Gemma 3n's class passes no quantization to its towers or
  embedders, and its ``get_mm_mapping`` names a ``multi_modal_projector`` connector the
  model does not have. :func:`vllm_quantized_modules` reads all of this by running the
  installed class's own ``__init__`` with its tower constructors swapped for recorders.

:func:`loading_plan` runs these from vLLM's own class (so vLLM must be installed) on a
bundle's weight names, and lays them out as a table; ``vllm_version=`` naming another
release than the installed one answers Gemma 4's tower rule from that release's profile.

:func:`vllm_loaded_weights` counts what vLLM *allocates* (pure arithmetic on the
config's meta-device build, no vLLM needed; tests/serving/test_weights.py holds it to
the installed vLLM's own model classes built on the meta device for every released
checkpoint; another release differs only by its tower rule, ``vllm_version=``):

* a tower whose modalities all have limit 0 is not allocated (``_mark_tower_model`` in
  gemma4_mm.py / gemma3n_mm.py builds it as a ``StageMissingLayer`` on the meta device):
  31B text-only 1.07 GiB, E4B without audio 0.58 GiB, 3n-E2B without audio 1.28 GiB;
  Unified's class marks no tower, so its limits skip nothing;
* ``attention_k_eq_v`` full layers get a V shard in ``qkv_proj`` that the checkpoint
  lacks (gemma4.py loads K into both): +110.1 M (31B), +14.4 M (26B-A4B), +15.7 M (12B);
* under ``--quantization fp8`` (online from bf16; vLLM reads it as
  ``fp8_per_tensor``) only Linear and MoE weights take 1 byte: the embeddings, the
  per-layer embeddings, norms, the MoE router (a ``GateLinear``) and the towers vLLM
  hands no quantization config (26B/31B, all of Gemma 3n's) stay in bf16: E2B 7.33 GiB,
  E4B 10.66, 3n-E2B 8.34, 31B 31.08 (not 1 B × every parameter);
* RoPE ``cos_sin_cache`` buffers and the per-layer-input staging tensor, which vLLM
  allocates at load time too.

>>> import gemma_explore as ge
>>> plan = loading_plan(ge.load("tiny-gemma4"), quant_method="fp8")
>>> plan.row("model.language_model.layers.0.self_attn.q_proj.weight").vllm
'language_model.model.layers.0.self_attn.qkv_proj.weight'
"""

from __future__ import annotations

import contextlib
import importlib
import threading
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gemma_explore.facts.families import FamilySpec, get_family
from gemma_explore.serving.caches import Memo
from gemma_explore.tables import ShownAsTable, Table
from gemma_explore.vllm_versions import PROFILES, VllmProfile, installed_vllm, vllm_profile

if TYPE_CHECKING:
    from gemma_explore.models.bundle import Bundle
    from gemma_explore.serving.model import ServingModel

__all__ = [
    "FP8_METHODS",
    "TOWER_MODALITIES",
    "LoadedWeights",
    "LoadingPlan",
    "WeightRow",
    "loading_plan",
    "tower_quantized",
    "vllm_model_class",
    "vllm_quantized_modules",
    "vllm_loaded_weights",
]

# Quantization methods whose kernels take any tower size (gemma4_mm.py: both tower rules
# list the same three).
ANY_SIZE_METHODS = ("bitsandbytes", "torchao", "compressed-tensors")
# Gemma 4's towers (tower_quantized's ``tower``) → the config each is built from, and
# each tower or embedder module of Gemma 4's class → its tower.
TOWER_CONFIGS = {"vision": "vision_config", "audio": "audio_config"}
GEMMA4_TOWER_MODULES = {
    "vision_tower": "vision",
    "embed_vision": "vision",
    "audio_tower": "audio",
    "embed_audio": "audio",
}
_GEMMA4 = "Gemma4ForConditionalGeneration"
_CAPTURE_LOCK = threading.Lock()


@dataclass(frozen=True)
class WeightRow:
    """One weight of the checkpoint, as vLLM loads it."""

    released: str  # the name in the checkpoint's safetensors
    vllm: str | None  # the vLLM parameter it loads into (None: skipped)
    shard: str | None  # the part of a fused Linear it fills ("q_proj" of qkv_proj), or None
    ignored: bool  # skipped on purpose by load_weights' ignored prefixes
    part: str  # "language model", "connector" or "tower" (get_mm_mapping's words)
    # Quantized under the plan's method (only Linear weights can be): language-model
    # Linears always; a tower's or embedder's when vLLM's __init__ hands it the config.
    quantized: bool


@dataclass(frozen=True)
class LoadingPlan(ShownAsTable):
    """Every weight of one checkpoint, mapped the way vLLM's class maps it."""

    family: str
    architecture: str  # the vLLM class that loads it
    vllm_version: str  # the profile whose tower rule the quantized column follows
    rows: tuple[WeightRow, ...]
    ignored_prefixes: tuple[str, ...]  # what load_weights tells its loader to skip
    packed: dict[str, tuple[str, ...]]  # fused module → the checkpoint modules it takes
    quant_method: str | None  # the method the quantized column assumes (None: none)
    # Each tower or embedder module and whether vLLM's __init__ gave it the quantization
    # config (vllm_quantized_modules): the installed class's answer, or the profile's tower
    # rule for another release.
    modules_quantized: dict[str, bool]
    steps: tuple[str, ...]

    def row(self, released: str) -> WeightRow:
        """The row of one released weight name."""
        for r in self.rows:
            if r.released == released:
                return r
        raise KeyError(f"{released!r} is not a weight of this checkpoint.")

    def table(self) -> Table:
        rows = tuple(
            (
                r.released,
                r.vllm or "—",
                r.shard or "",
                "yes" if r.ignored else "",
                r.part,
                "yes" if r.quantized else "",
            )
            for r in self.rows
        )
        return Table(
            ("released name", "vLLM name", "shard of", "ignored", "part", "quantized"),
            rows,
            title=f"Loading {self.family} into vLLM's {self.architecture}",
            notes=self.steps,
        )

    def __repr__(self) -> str:
        return "\n".join(self.steps)


def _quantizable(config: Any) -> bool:
    """Both of a tower's Linear sizes are multiples of 64 (a config without
    ``intermediate_size``, the audio one, counts as divisible there)."""
    intermediate = getattr(config, "intermediate_size", None)
    return config.hidden_size % 64 == 0 and (intermediate is None or intermediate % 64 == 0)


def tower_quantized(
    quant_method: str | None, config: Any, tower: str, *, vllm_version: str | None = None
) -> bool:
    """Does vLLM hand Gemma 4's ``tower`` ("vision" or "audio") and its embedder the
    quantization config of ``quant_method`` (a vLLM method name; None: unquantized)?
    ``config`` is the model's config (its ``vision_config`` and ``audio_config`` matter).

    Under bitsandbytes, torchao or compressed-tensors always; under any other method
    only when the sizes that count are multiples of 64, and the release's
    ``tower_quant_rule`` says whose count:

    * "single": the vision config's ``hidden_size`` and ``intermediate_size``, for every
      tower (``Gemma4ForConditionalGeneration.__init__``'s local ``tower_quant``);
    * "per-tower": the tower's own config (``_get_tower_quant_config``), where a config
      without ``intermediate_size`` (the audio one) counts as divisible there.

    A big vision tower (4304 is no multiple of 64) beside a 1024-wide audio tower, in each
    supported release:

    >>> from types import SimpleNamespace as C
    >>> from gemma_explore.vllm_versions import SUPPORTED
    >>> config = C(vision_config=C(hidden_size=1152, intermediate_size=4304),
    ...            audio_config=C(hidden_size=1024))
    >>> [tower_quantized("fp8", config, "audio", vllm_version=v) for v in SUPPORTED]
    [False, True, True]
    >>> tower_quantized("bitsandbytes", config, "vision")
    True
    """
    if tower not in TOWER_CONFIGS:
        raise ValueError(f"tower={tower!r}: Gemma 4's towers are {sorted(TOWER_CONFIGS)}.")
    own = getattr(config, TOWER_CONFIGS[tower], None)
    if own is None:
        raise ValueError(f"This config has no {tower} tower ({TOWER_CONFIGS[tower]} is None).")
    p = vllm_profile(vllm_version)
    if quant_method is None:
        return False
    if quant_method in ANY_SIZE_METHODS:
        return True
    if p.tower_quant_rule == "single":
        return _quantizable(config.vision_config)
    if p.tower_quant_rule == "per-tower":
        return _quantizable(own)
    raise ValueError(
        f"{p.label}'s tower_quant_rule {p.tower_quant_rule!r} is unknown here: name a "
        "supported release with vllm_version=."
    )


def vllm_model_class(architecture: str) -> Any:
    """vLLM's model class for ``architecture`` (from its registry)."""
    try:
        from vllm.model_executor.models.registry import ModelRegistry
    except Exception as e:  # noqa: BLE001 - vLLM absent or broken
        raise RuntimeError(
            "loading_plan reads vLLM's own model class: install vLLM (pip install -e '.[vllm]')."
        ) from e
    cls = ModelRegistry._try_load_model_cls(architecture)
    if cls is None:
        raise ValueError(f"The installed vLLM has no model class for {architecture!r}.")
    return cls


def _run_loader_setup(cls: Any, has_audio: bool) -> tuple[str, ...]:
    """Run the class's own ``load_weights`` with its weight loader swapped for one that
    only records the prefixes it was told to skip (no weights are read)."""
    module = importlib.import_module(cls.__module__)
    seen: dict[str, Any] = {}

    class _Recorder:
        def __init__(self, _model: Any, **kwargs: Any) -> None:
            seen.update(kwargs)

        def load_weights(self, _weights: Any, mapper: Any = None) -> set[str]:
            return set()

    tower = object() if has_audio else None
    fake = types.SimpleNamespace(
        audio_tower=tower, embed_audio=tower, hf_to_vllm_mapper=cls.hf_to_vllm_mapper
    )
    with _CAPTURE_LOCK:
        real = module.AutoWeightsLoader
        module.AutoWeightsLoader = _Recorder
        try:
            cls.load_weights(fake, [])
        finally:
            module.AutoWeightsLoader = real
    return tuple(seen.get("ignore_unexpected_prefixes") or ()) + tuple(
        seen.get("skip_prefixes") or ()
    )


def _mm_parts(cls: Any, has_audio: bool) -> dict[str, list[str]]:
    tower = object() if has_audio else None
    fake = types.SimpleNamespace(audio_tower=tower, embed_audio=tower)
    keys = cls.get_mm_mapping(fake)
    return {
        "language model": list(keys.language_model),
        "connector": list(keys.connector),
        "tower": list(keys.tower_model),
    }


def loading_plan(
    bundle: Bundle,
    *,
    quant_method: str | None = "fp8",
    names: list[str] | None = None,
    vllm_version: str | None = None,
) -> LoadingPlan:
    """Map every weight of ``bundle``'s checkpoint the way vLLM's class loads it.

    ``names`` are the checkpoint's weight names (default: the model's state dict, tied
    weights left out, which is what ``save_pretrained`` writes). ``quant_method`` is a
    vLLM quantization method name for the "quantized" column (None: not quantized).
    The names, fusions and skips are the installed class's; the towers' quantization
    follows ``vllm_version``'s profile (None: the installed vLLM, whose class answers).
    """
    import torch

    model = bundle.require_model("The loading plan")
    config = model.config
    arch = (config.architectures or [type(model).__name__])[0]
    cls = vllm_model_class(arch)
    has_audio = getattr(config, "audio_config", None) is not None
    if names is None:
        tied = set(getattr(model, "_tied_weights_keys", None) or ())
        names = [n for n in model.state_dict() if n not in tied]
    linear = {f"{n}.weight" for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    packed = {k: tuple(v) for k, v in getattr(cls, "packed_modules_mapping", {}).items()}
    ignored = _run_loader_setup(cls, has_audio)
    parts = _mm_parts(cls, has_audio)
    p = vllm_profile(vllm_version)
    modules_q = vllm_quantized_modules(cls, config, quant_method, vllm_version=p.version)
    lm_prefixes = tuple(parts["language model"])
    rows = []
    for name in names:
        mapped = cls.hf_to_vllm_mapper._map_name(name)
        skip = mapped is not None and any(mapped.startswith(p) for p in ignored)
        shard = None
        # Only vLLM's own language model fuses; the towers are transformers modules.
        if mapped is not None and not skip and mapped.startswith(lm_prefixes):
            mapped, shard = _fused(mapped, packed)
        quant = name in linear and quant_method is not None and not skip
        if not (mapped or "").startswith(lm_prefixes) and quant:
            quant = modules_q.get((mapped or "").split(".")[0], False)
        part = _part_of(mapped, parts)
        rows.append(WeightRow(name, None if skip else mapped, shard, skip, part, quant))
    steps = _loading_steps(arch, rows, packed, ignored, quant_method, modules_q, config, p)
    return LoadingPlan(
        bundle.spec.name,
        arch,
        p.version,
        tuple(rows),
        ignored,
        packed,
        quant_method,
        modules_q,
        steps,
    )


class _Stop(Exception):
    """Raised where vLLM's __init__ reaches its language model: the towers are built."""


class _Stub:
    """Stands in for a tower or embedder: records the quantization config it was given."""

    def __init__(self, quant: Any = None) -> None:
        self.quant = quant

    def post_init(self) -> None:  # AutoModel towers' post_init, called by Gemma 4's class
        return None


def vllm_quantized_modules(
    cls: Any, config: Any, quant_method: str | None, *, vllm_version: str | None = None
) -> dict[str, bool]:
    """Which tower and embedder modules vLLM's ``cls`` quantizes under ``quant_method``,
    read by running the class's own ``__init__`` on ``config`` (a transformers config:
    only its towers' sizes matter) with ``AutoModel``, the embedder classes and
    ``recursive_replace_linear`` swapped for recorders, up to the language model.

    ``AutoModel`` towers are transformers modules: vLLM quantizes one only where
    ``recursive_replace_linear`` gives it a config; an embedder where its constructor does.

    ``vllm_version`` (None: the installed vLLM) naming another release: the installed
    class still says which modules exist, and Gemma 4's towers follow that release's
    ``tower_quant_rule`` (:func:`tower_quantized`; Unified's and Gemma 3n's rules are the
    same in every supported release).

    >>> from gemma_explore.facts.released import released_config
    >>> config = released_config("google/gemma-4-31B-it")
    >>> cls = vllm_model_class("Gemma4ForConditionalGeneration")
    >>> vllm_quantized_modules(cls, config, "fp8")
    {'vision_tower': False, 'embed_vision': False}
    """
    init = cls.__init__
    namespace = init.__globals__
    swaps = _recorder_swaps(namespace)
    vllm_config = _recording_vllm_config(config, quant_method)
    p = vllm_profile(vllm_version)
    model = cls.__new__(cls)
    # The towers' and language model's markers (a limit of 0 skips a tower; here every
    # limit is 1) ask for the pipeline-parallel group in some releases, which no engine
    # has set up here: they mark nothing, so they stand aside.
    for marker in ("_mark_tower_model", "_mark_language_model"):
        if hasattr(cls, marker):
            object.__setattr__(model, marker, lambda *_a, **_k: contextlib.nullcontext())
    with _CAPTURE_LOCK:
        saved = {name: namespace[name] for name in swaps}
        namespace.update(swaps)
        try:
            init(model, vllm_config=vllm_config, prefix="")
        except _Stop:
            pass
        finally:
            namespace.update(saved)
    modules = {
        name: value.quant is not None
        for name, value in vars(model).items()
        if isinstance(value, _Stub)
    }
    if cls.__name__ == _GEMMA4 and not _is_installed(p):
        for name in modules:
            if name in GEMMA4_TOWER_MODULES:
                tower = GEMMA4_TOWER_MODULES[name]
                modules[name] = tower_quantized(quant_method, config, tower, vllm_version=p.version)
    return modules


def _recorder_swaps(namespace: dict[str, Any]) -> dict[str, Any]:
    """The recorders that stand in, in the model module's ``namespace``, for what builds
    the towers and embedders (each records the quantization config it is handed) and for
    the language model's builder (which stops ``__init__`` with :class:`_Stop`)."""
    import inspect

    from torch import nn

    def auto_model(**_kwargs: Any) -> _Stub:
        return _Stub()

    def replace_linear(module: _Stub, quant_config: Any, prefix: str = "") -> None:
        module.quant = quant_config

    def embedder(real: Any) -> Any:
        signature = inspect.signature(real)

        def build(*args: Any, **kwargs: Any) -> _Stub:
            bound = signature.bind(*args, **kwargs)
            return _Stub(bound.arguments.get("quant_config"))

        return build

    def language_model(**_kwargs: Any) -> Any:
        raise _Stop

    swaps: dict[str, Any] = {"init_vllm_registered_model": language_model}
    if "AutoModel" in namespace:
        swaps["AutoModel"] = types.SimpleNamespace(from_config=auto_model)
    if "recursive_replace_linear" in namespace:
        swaps["recursive_replace_linear"] = replace_linear
    for name, value in namespace.items():
        if isinstance(value, type) and issubclass(value, nn.Module) and name.endswith("Embedder"):
            swaps[name] = embedder(value)
    return swaps


def _recording_vllm_config(config: Any, quant_method: str | None) -> Any:
    """The least ``VllmConfig`` a class's ``__init__`` reads up to its language model:
    ``config`` as the HF config, a limit of 1 per modality (every tower is built), and a
    quantization config that only says its name (None: unquantized)."""
    import torch

    quant = None if quant_method is None else types.SimpleNamespace(get_name=lambda: quant_method)
    multimodal = types.SimpleNamespace(get_limit_per_prompt=lambda _m: 1, mm_encoder_only=False)
    return types.SimpleNamespace(
        model_config=types.SimpleNamespace(
            hf_config=config,
            multimodal_config=multimodal,
            get_multimodal_config=lambda: multimodal,
            dtype=torch.float32,
        ),
        quant_config=quant,
        lora_config=None,
    )


def _is_installed(p: VllmProfile) -> bool:
    """Is ``p`` the installed vLLM's release (so its own classes answer for it)?"""
    found = installed_vllm()
    try:
        return found is not None and vllm_profile(found).version == p.version
    except ValueError:  # an installed vLLM older than every profile
        return False


def _fused(mapped: str, packed: dict[str, tuple[str, ...]]) -> tuple[str, str | None]:
    """The fused parameter a language-model weight loads into, and its shard (None: the
    weight is not fused), as ``packed_modules_mapping`` says."""
    for fused, pieces in packed.items():
        for piece in pieces:
            if f".{piece}." in mapped:
                return mapped.replace(f".{piece}.", f".{fused}."), piece
    return mapped, None


def _part_of(mapped: str | None, parts: dict[str, list[str]]) -> str:
    """Which part of the model (language model, connector, tower) a vLLM name is in."""
    for part, prefixes in parts.items():
        if mapped and any(mapped.startswith(x) for x in prefixes):
            return part
    return "language model"


def _loading_steps(
    arch: str,
    rows: list[WeightRow],
    packed: dict[str, tuple[str, ...]],
    ignored: tuple[str, ...],
    quant_method: str | None,
    modules_q: dict[str, bool],
    config: Any,
    p: VllmProfile,
) -> tuple[str, ...]:
    """The plan in three sentences: renames and fusions, skips, quantization."""
    renamed = sum(r.vllm != r.released for r in rows if r.vllm)
    fusions = ", ".join(f"{k} ({' + '.join(v)})" for k, v in packed.items())
    given = [m for m, q in modules_q.items() if q]
    kept = [m for m, q in modules_q.items() if not q]
    vision = getattr(config, "vision_config", None)
    audio = getattr(config, "audio_config", None)
    sizes = (
        f"vision hidden {getattr(vision, 'hidden_size', None)}, intermediate "
        f"{getattr(vision, 'intermediate_size', None)}; audio hidden "
        f"{getattr(audio, 'hidden_size', None)}"
    )
    if quant_method is not None and "audio_tower" in modules_q and audio is not None:
        rules = {q.tower_quant_rule: q for q in reversed(PROFILES.values())}  # oldest each
        for rule, q in rules.items():
            other = tower_quantized(quant_method, config, "audio", vllm_version=q.version)
            if rule != p.tower_quant_rule and other != modules_q["audio_tower"]:
                sizes += (
                    f"; {q.label}'s {rule} rule would {'' if other else 'not '}quantize "
                    "the audio tower"
                )
    return (
        f"vLLM's {arch} renames {renamed} of {len(rows)} weights (hf_to_vllm_mapper) and "
        f"fuses {sum(r.shard is not None for r in rows)} into {fusions}.",
        "load_weights skips "
        + (", ".join(ignored) if ignored else "nothing")
        + f" ({sum(r.ignored for r in rows)} weights here).",
        f"Under {quant_method or 'no quantization'}: {p.label}'s __init__ hands the config to "
        f"{', '.join(given) or 'no tower or embedder'} and keeps "
        f"{', '.join(kept) or 'none'} unquantized ({sizes}); "
        f"{sum(r.quantized for r in rows)} Linear weights quantized.",
    )


# ---------------------------------------------------------------------------------------
# What vLLM allocates: skipped towers, the extra value projections, FP8's bf16 leftovers.
# ---------------------------------------------------------------------------------------

# Online FP8 (weights quantized at load time from a bf16 checkpoint): vLLM reads
# ``--quantization fp8`` on an unquantized checkpoint as the deprecated alias of
# ``fp8_per_tensor`` (config/quantization.py; layers/quantization/online/fp8.py). Each
# quantized weight takes 1 byte per value (float8_e4m3fn) plus a few float32 scales.
FP8_METHODS = ("fp8", "fp8_per_tensor", "fp8_per_block", "fp8_ptpc")
# The modules a modality limit of 0 skips, per vLLM class (``_mark_tower_model`` in
# gemma4_mm.py / gemma3n_mm.py: a tower is built on the meta device as a
# StageMissingLayer, not registered, so none of its weights is allocated or loaded, when
# every modality it serves has limit 0). Gemma 4 Unified's class marks no tower.
TOWER_MODALITIES: dict[str, dict[str, tuple[str, ...]]] = {  # keyed by the model class
    "Gemma4ForConditionalGeneration": {
        "vision_tower": ("image", "video"),
        "embed_vision": ("image", "video"),
        "audio_tower": ("audio",),
        "embed_audio": ("audio",),
    },
    "Gemma3nForConditionalGeneration": {
        "vision_tower": ("image",),
        "embed_vision": ("image",),
        "audio_tower": ("audio",),
        "embed_audio": ("audio",),
    },
    "Gemma4UnifiedForConditionalGeneration": {},
}
_WEIGHT_KINDS = Memo("vLLM-loaded weight kinds per config")
_CONFIGS = Memo("(config, weight kinds) vllm_loaded_weights re-read, per (name, config source)")
# The config values this module reads (vllm_loaded_weights and the tower rule it applies):
# a released id planned from the stored facts reads exactly these
# (gemma_explore/facts/released_serving.json, written by serving/released_facts.py).
CONFIG_FIELDS: dict[str, tuple[str, ...]] = {
    "text_config": ("attention_k_eq_v", "hidden_size_per_layer_input"),
    "vision_config": ("hidden_size", "intermediate_size"),
    "audio_config": ("hidden_size", "intermediate_size"),
}


@dataclass(frozen=True)
class LoadedWeights:
    """What vLLM allocates for one checkpoint's weights under these limits and this
    quantization (one GPU, tensor parallel size 1)."""

    spec: FamilySpec
    model: str
    vllm_version: str  # the profile whose tower rule the quantized towers follow
    quantization: str | None  # the --quantization method assumed (None: none)
    dtype_bytes: int  # bytes per unquantized value (2: bf16 / fp16)
    parameters: int  # parameters vLLM allocates (skipped towers left out, extra V in)
    parameters_by_part: dict[str, int]  # per top-level module of the checkpoint
    quantized_parameters: int  # in quantized Linear / MoE layers (1 B each under FP8)
    kept_parameters: int  # embeddings, per-layer embeddings, norms, unquantized towers
    skipped: dict[str, int]  # tower or embedder a limit of 0 skips → its parameters
    extra_value_parameters: int  # V projections vLLM allocates in attention_k_eq_v layers
    buffer_bytes: int  # RoPE cos/sin caches and the per-layer-embedding staging buffer
    bytes_by_part: dict[str, int]  # weights per part (buffers apart, in buffer_bytes)
    bytes: int  # weights + buffers: what vLLM's "Model loading took" counts on a GPU
    steps: tuple[str, ...]

    @property
    def gib(self) -> float:
        return self.bytes / 2**30

    def __repr__(self) -> str:
        return "\n".join(self.steps)


def _weight_kinds(config: Any) -> dict[str, dict[str, int]]:
    """Parameters of the transformers model on the meta device, per top-level part and
    kind: ``linear`` (an ``nn.Linear`` weight), ``experts`` (MoE expert tensors),
    ``embedding`` (an ``nn.Embedding``), ``float32`` (Gemma 3n's AltUp
    ``correct_output_scale``, which vLLM allocates in float32), ``other`` (norms, biases,
    scalars, convs).
    Unified's ``embed_vision`` is split as vLLM splits it: the patch embedder
    (``vision_embedder``) apart from its ``multimodal_embedder`` (vLLM's ``embed_vision``)."""
    import torch
    from torch import nn
    from transformers import AutoModelForImageTextToText

    from gemma_explore.models.tiny import register_tiny_mobilenet

    register_tiny_mobilenet()
    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(config)
    unified = hasattr(getattr(model.model, "embed_vision", None), "multimodal_embedder")
    kinds: dict[str, dict[str, int]] = {}
    seen: set[int] = set()
    for module_name, module in model.named_modules():
        for name, p in module.named_parameters(recurse=False):
            if id(p) in seen:  # tied weights count once
                continue
            seen.add(id(p))
            full = f"{module_name}.{name}"
            bits = full.split(".")
            part = bits[1] if bits[0] == "model" and len(bits) > 1 else bits[0]
            part = "language_model" if part == "lm_head" else part
            if unified and part == "embed_vision" and ".multimodal_embedder." not in full:
                part = "vision_embedder"  # vLLM's Gemma4UnifiedVisionEmbedder
            if ".experts." in full:
                kind = "experts"
            elif name == "correct_output_scale":  # vLLM's gemma3n.py keeps it in float32
                kind = "float32"
            elif ".router." in f"{full}" and isinstance(module, nn.Linear):
                kind = "other"  # vLLM's Gemma4Router.proj is a GateLinear, never quantized
            elif isinstance(module, nn.Linear) and name == "weight":
                kind = "linear"
            elif isinstance(module, nn.Embedding):
                kind = "embedding"
            else:
                kind = "other"
            by_kind = kinds.setdefault(part, {})
            by_kind[kind] = by_kind.get(kind, 0) + p.numel()
    return kinds


def _limit(limits: Mapping[str, Any], modality: str) -> int:
    value = limits.get(modality, 999)  # vLLM's count for a modality left out
    return int(value.get("count", 999)) if isinstance(value, Mapping) else int(value)


def _tower_gets_quant(
    model_class: str, part: str, config: Any, quantization: str, p: VllmProfile
) -> bool:
    """Whether vLLM's class hands a tower or embedder the quantization config: Gemma 4's
    towers by the profile's tower rule, Unified's vision embedder always, Gemma 3n's
    towers never."""
    if model_class == _GEMMA4:
        tower = GEMMA4_TOWER_MODULES.get(part, "vision")
        return tower_quantized(quantization, config, tower, vllm_version=p.version)
    return model_class == "Gemma4UnifiedForConditionalGeneration" and part == "vision_embedder"


def _extra_value_parameters(model: ServingModel, text: Any) -> int:
    """vLLM's ``QKVParallelLinear`` allocates a V shard in every KV-storing full layer of
    an ``attention_k_eq_v`` model (gemma4.py: K is loaded into both shards), where the
    checkpoint and transformers have no ``v_proj``: hidden × KV heads × head dim each."""
    if not getattr(text, "attention_k_eq_v", False):
        return 0
    return sum(
        model.hidden_size * layer.kv_heads * layer.head_dim
        for layer in model.layers
        if layer.kind == "full_attention" and layer.stores_kv
    )


def _buffer_bytes(
    model: ServingModel, text: Any, dtype_bytes: int, max_num_batched_tokens: int | None
) -> tuple[int, str]:
    """RoPE caches (one ``cos_sin_cache`` of max_position_embeddings × head dim per
    attention kind, rotary_embedding/base.py) and, on models with per-layer inputs, the
    ``per_layer_embeddings`` staging tensor (max_num_batched_tokens × layers × width,
    gemma4_mm.py / gemma3n_mm.py ``__init__``)."""
    head = {layer.kind: layer.head_dim for layer in model.layers}
    positions = int(model.max_position_embeddings or 0)
    rope = sum(positions * d * dtype_bytes for d in head.values())
    text_out = f"RoPE caches {positions:,} positions × {sorted(head.values())} dims"
    ple = int(getattr(text, "hidden_size_per_layer_input", 0) or 0)
    staging = 0
    if ple and max_num_batched_tokens:
        staging = max_num_batched_tokens * len(model.layers) * ple * dtype_bytes
        text_out += (
            f" + per-layer-input staging {max_num_batched_tokens:,} tokens × "
            f"{len(model.layers)} layers × {ple}"
        )
    elif ple:
        text_out += " (per-layer-input staging not counted: no max_num_batched_tokens)"
    return rope + staging, text_out


def _config_of_model(model: ServingModel) -> Any:
    from gemma_explore.serving.model import _config_of

    try:
        return _config_of(model.name)[2]
    except (ValueError, TypeError, OSError) as exc:
        raise ValueError(
            f"vllm_loaded_weights re-reads the config of {model.name!r} and could not "
            f"({exc}). Pass a ServingModel read from a folder, a tiny name or a released id."
        ) from exc


def _config_and_kinds(model: ServingModel) -> tuple[Any, dict[str, dict[str, int]]]:
    """The config values and the weight kinds per part of ``model``: a ServingModel read
    from the built-in facts of a released id takes both from the stored facts (no
    transformers, no meta-device build); any other re-reads its config and builds it."""
    from gemma_explore.facts.released_serving import ConfigFacts, released_serving
    from gemma_explore.models.checkpoints import BUILT_IN

    facts = released_serving(model.name) if model.config_source == BUILT_IN else None
    if facts is not None:
        return ConfigFacts(facts["config"]), facts["weight_kinds"]
    config = _config_of_model(model)
    kinds = _WEIGHT_KINDS.get_or_make(
        config.to_json_string(use_diff=False), lambda: _weight_kinds(config)
    )
    return config, kinds


def vllm_loaded_weights(
    model: ServingModel,
    *,
    limit_mm_per_prompt: Mapping[str, Any] | None = None,
    quantization: str | None = None,
    dtype_bytes: int = 2,
    max_num_batched_tokens: int | None = None,
    vllm_version: str | None = None,
) -> LoadedWeights:
    """The weights vLLM allocates for ``model`` (tensor parallel size 1), under the
    release ``vllm_version`` names (None: the installed vLLM, else the newest).

    Against the checkpoint's own count: a tower whose modalities all have limit 0 is not
    allocated (``_mark_tower_model``); ``attention_k_eq_v`` full layers get a V shard
    vLLM allocates and fills with K; under FP8 (``--quantization fp8``, online from a
    bf16 checkpoint) only Linear and MoE weights take 1 byte, while the embeddings, the
    per-layer embeddings, norms and the towers vLLM keeps unquantized stay in
    ``dtype_bytes``. ``max_num_batched_tokens`` sizes the per-layer-input staging buffer.

    >>> from gemma_explore.serving.model import serving_model
    >>> w = vllm_loaded_weights(serving_model("google/gemma-4-E4B-it"),
    ...                         limit_mm_per_prompt={"audio": 0})
    >>> w.skipped
    {'audio_tower': 304824608, 'embed_audio': 3932160}
    """
    if quantization is not None and quantization not in FP8_METHODS:
        raise ValueError(
            f"quantization={quantization!r}: the loaded-weights count knows vLLM's online "
            f"FP8 ({', '.join(FP8_METHODS)}) or None; a pre-quantized checkpoint's "
            "weights are its safetensors' size."
        )
    p = vllm_profile(vllm_version)
    config, kinds = _CONFIGS.get_or_make(
        (model.name, model.config_source), lambda: _config_and_kinds(model)
    )
    text = config.get_text_config()
    model_class = get_family(model.family).classes.model
    skipped = _skipped_towers(kinds, model_class, limit_mm_per_prompt or {})
    extra = _extra_value_parameters(model, text)
    by_part, bytes_by_part, quantized = _allocated_parts(
        kinds, skipped, extra, quantization, dtype_bytes, (model_class, config, p)
    )
    total = sum(by_part.values())
    buffers, buffer_text = _buffer_bytes(model, text, dtype_bytes, max_num_batched_tokens)
    result_bytes = sum(bytes_by_part.values()) + buffers
    steps = _weights_steps(model, skipped, extra, quantization, quantized, total, dtype_bytes)
    steps += (f"buffers: {buffers / 2**30:.2f} GiB ({buffer_text})",)
    steps += (f"{p.label} allocates {result_bytes / 2**30:.2f} GiB for the weights and buffers",)
    return LoadedWeights(
        spec=model.spec,
        model=model.name,
        vllm_version=p.version,
        quantization=quantization,
        dtype_bytes=dtype_bytes,
        parameters=total,
        parameters_by_part=by_part,
        quantized_parameters=quantized,
        kept_parameters=total - quantized,
        skipped=skipped,
        extra_value_parameters=extra,
        buffer_bytes=buffers,
        bytes_by_part=bytes_by_part,
        bytes=result_bytes,
        steps=steps,
    )


def _skipped_towers(
    kinds: dict[str, dict[str, int]], model_class: str, limits: Mapping[str, Any]
) -> dict[str, int]:
    """The towers vLLM does not allocate (``_mark_tower_model``: every modality a tower
    serves has limit 0), each with its parameter count."""
    towers = TOWER_MODALITIES.get(model_class, {})
    return {
        part: sum(kinds[part].values())
        for part, modalities in towers.items()
        if part in kinds and all(_limit(limits, m) == 0 for m in modalities)
    }


def _allocated_parts(
    kinds: dict[str, dict[str, int]],
    skipped: dict[str, int],
    extra: int,
    quantization: str | None,
    dtype_bytes: int,
    model: tuple[str, Any, VllmProfile],
) -> tuple[dict[str, int], dict[str, int], int]:
    """Per allocated part: its parameters (the language model's with the ``extra`` V
    shards) and bytes (quantized ones at 1 B, float32 ones at 4, the rest at
    ``dtype_bytes``), and the quantized total. Under ``quantization`` the language model's
    Linear and MoE weights are quantized; a tower's Linear weights only where ``model``'s
    (class, config, profile) hands it the quantization config."""
    model_class, config, p = model
    by_part: dict[str, int] = {}
    bytes_by_part: dict[str, int] = {}
    quantized = 0
    for part, by_kind in kinds.items():
        if part in skipped:
            continue
        count = sum(by_kind.values()) + (extra if part == "language_model" else 0)
        q = 0
        if quantization is not None:
            if part == "language_model":
                q = by_kind.get("linear", 0) + by_kind.get("experts", 0) + extra
            elif _tower_gets_quant(model_class, part, config, quantization, p):
                q = by_kind.get("linear", 0)
        by_part[part] = count
        wide = by_kind.get("float32", 0)
        bytes_by_part[part] = q + (count - q - wide) * dtype_bytes + wide * 4
        quantized += q
    return by_part, bytes_by_part, quantized


def _weights_steps(
    model: ServingModel,
    skipped: dict[str, int],
    extra: int,
    quantization: str | None,
    quantized: int,
    total: int,
    dtype_bytes: int,
) -> tuple[str, ...]:
    steps = [f"checkpoint: {model.num_parameters:,} parameters ({model.config_source})"]
    if skipped:
        gone = ", ".join(f"{k} {v:,}" for k, v in skipped.items())
        steps.append(
            f"skipped (limit 0 for every modality they serve; vLLM's _mark_tower_model "
            f"builds them as StageMissingLayer on the meta device): {gone} — "
            f"{sum(skipped.values()) * dtype_bytes / 2**30:.2f} GiB not allocated"
        )
    if extra:
        steps.append(
            f"attention_k_eq_v: vLLM allocates a V shard in each full layer's qkv_proj "
            f"(loaded with K): +{extra:,} parameters"
        )
    if quantization is None:
        steps.append(f"weights: {total:,} parameters × {dtype_bytes} B")
    else:
        steps.append(
            f"{quantization}: {quantized:,} parameters in Linear/MoE layers at 1 B; "
            f"{total - quantized:,} kept at {dtype_bytes} B (embeddings, per-layer "
            "embeddings, norms, towers vLLM hands no quantization config)"
        )
    return tuple(steps)
