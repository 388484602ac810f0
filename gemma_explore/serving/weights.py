"""Loading a checkpoint into vLLM: what each released weight name becomes.

vLLM does not load a Gemma checkpoint name for name. Its model class says how
(seeds ``gemma3n_mm.py``, ``gemma4_mm.py``):

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
* Tower quantization: which towers and embedders get the quantization config. Two rules
  exist, and they part when the audio tower's sizes and the vision tower's disagree:

  - the seed (``gemma4_mm.py: _get_tower_quant_config``, newer than vLLM 0.32) judges
    each tower by its *own* config: any size with bitsandbytes, torchao or
    compressed-tensors, otherwise only when its ``hidden_size`` and (where it has one)
    ``intermediate_size`` are multiples of 64 (the audio config has no
    ``intermediate_size``, so its ``hidden_size`` decides): :func:`seed_tower_quantized`;
  - vLLM 0.32 (``Gemma4ForConditionalGeneration.__init__``, a local ``tower_quant``)
    reads the *vision* config for both towers: :func:`vllm_tower_quantized`.

  For every released checkpoint the two agree (E2B/E4B: vision 768 and 3072, audio 1024;
  26B/31B: vision 4304 is no multiple and there is no audio tower). Unified's class hands
  the whole config to its encoder-free ``vision_embedder`` and none to its two
  ``Gemma4MultimodalEmbedder``; Gemma 3n's class passes no quantization to its towers or
  embedders, and its ``get_mm_mapping`` names a ``multi_modal_projector`` connector the
  model does not have. :func:`vllm_quantized_modules` reads all of this by running the
  class's own ``__init__`` with its tower constructors swapped for recorders.

:func:`loading_plan` runs these from vLLM's own class (so vLLM must be installed) on a
bundle's weight names, and lays them out as a table.

>>> plan = loading_plan(ge.load("tiny-gemma4"), quant_method="fp8")   # doctest: +SKIP
>>> plan.row("model.language_model.layers.0.self_attn.q_proj.weight").vllm  # doctest: +SKIP
'language_model.model.layers.0.self_attn.qkv_proj.weight'
"""

from __future__ import annotations

import importlib
import threading
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gemma_explore.tables import Table

if TYPE_CHECKING:
    from gemma_explore.models.bundle import Bundle

__all__ = [
    "LoadingPlan",
    "WeightRow",
    "loading_plan",
    "seed_tower_quantized",
    "vllm_model_class",
    "vllm_quantized_modules",
    "vllm_tower_quantized",
]

# Quantization methods whose kernels take any tower size (gemma4_mm.py: the seed's
# _get_tower_quant_config and vLLM 0.32's __init__ list the same three).
ANY_SIZE_METHODS = ("bitsandbytes", "torchao", "compressed-tensors")
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
class LoadingPlan:
    """Every weight of one checkpoint, mapped the way vLLM's class maps it."""

    family: str
    architecture: str  # the vLLM class that loads it
    rows: tuple[WeightRow, ...]
    ignored_prefixes: tuple[str, ...]  # what load_weights tells its loader to skip
    packed: dict[str, tuple[str, ...]]  # fused module → the checkpoint modules it takes
    quant_method: str | None  # the method the quantized column assumes (None: none)
    # Each tower or embedder module and whether vLLM's __init__ gave it the quantization
    # config (vllm_quantized_modules): the rule as the installed class applies it.
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

    def _repr_html_(self) -> str:
        return self.table().html()


def _quantizable(config: Any) -> bool:
    """Both of a tower's Linear sizes are multiples of 64 (a config without
    ``intermediate_size``, the audio one, counts as divisible there)."""
    intermediate = getattr(config, "intermediate_size", None)
    return config.hidden_size % 64 == 0 and (intermediate is None or intermediate % 64 == 0)


def seed_tower_quantized(quant_method: str | None, tower_config: Any) -> bool:
    """The seed's rule (``gemma4_mm.py: _get_tower_quant_config``, not in vLLM 0.32): a
    tower and its embedder are quantized with bitsandbytes, torchao or
    compressed-tensors at any size, otherwise only when *its own* sizes are multiples of
    64 (``tower_config`` is that tower's config: vision or audio).

    >>> from types import SimpleNamespace as C
    >>> audio = C(hidden_size=1024)  # Gemma 4's audio config has no intermediate_size
    >>> seed_tower_quantized("fp8", audio), seed_tower_quantized("fp8", C(hidden_size=1000))
    (True, False)
    """
    if quant_method is None:
        return False
    return quant_method in ANY_SIZE_METHODS or _quantizable(tower_config)


def vllm_tower_quantized(quant_method: str | None, vision_config: Any) -> bool:
    """vLLM 0.32's rule (``Gemma4ForConditionalGeneration.__init__``): one answer for
    both towers and embedders, from the *vision* config's ``hidden_size`` and
    ``intermediate_size`` (multiples of 64), or any size with bitsandbytes, torchao or
    compressed-tensors. E2B/E4B: 768 and 3072 are; 26B/31B: 4304 is not.

    >>> from types import SimpleNamespace as C
    >>> big = C(hidden_size=1152, intermediate_size=4304)
    >>> vllm_tower_quantized("fp8", big), vllm_tower_quantized("bitsandbytes", big)
    (False, True)
    """
    if quant_method is None:
        return False
    return quant_method in ANY_SIZE_METHODS or _quantizable(vision_config)


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
        raise ValueError(f"vLLM 0.32 has no model class for {architecture!r}.")
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
    bundle: Bundle, *, quant_method: str | None = "fp8", names: list[str] | None = None
) -> LoadingPlan:
    """Map every weight of ``bundle``'s checkpoint the way vLLM's class loads it.

    ``names`` are the checkpoint's weight names (default: the model's state dict, tied
    weights left out, which is what ``save_pretrained`` writes). ``quant_method`` is a
    vLLM quantization method name for the "quantized" column (None: not quantized).
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
    modules_q = vllm_quantized_modules(cls, config, quant_method)
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
    steps = _loading_steps(arch, rows, packed, ignored, quant_method, modules_q, config)
    return LoadingPlan(
        bundle.spec.name, arch, tuple(rows), ignored, packed, quant_method, modules_q, steps
    )


class _Stop(Exception):
    """Raised where vLLM's __init__ reaches its language model: the towers are built."""


class _Stub:
    """Stands in for a tower or embedder: records the quantization config it was given."""

    def __init__(self, quant: Any = None) -> None:
        self.quant = quant

    def post_init(self) -> None:  # AutoModel towers' post_init, called by Gemma 4's class
        return None


def vllm_quantized_modules(cls: Any, config: Any, quant_method: str | None) -> dict[str, bool]:
    """Which tower and embedder modules vLLM's ``cls`` quantizes under ``quant_method``,
    read by running the class's own ``__init__`` on ``config`` (a transformers config:
    only its towers' sizes matter) with ``AutoModel``, the embedder classes and
    ``recursive_replace_linear`` swapped for recorders, up to the language model.

    ``AutoModel`` towers are transformers modules: vLLM quantizes one only where
    ``recursive_replace_linear`` gives it a config; an embedder where its constructor does.

    >>> from gemma_explore.facts.released import released_config
    >>> config = released_config("google/gemma-4-31B-it")
    >>> cls = vllm_model_class("Gemma4ForConditionalGeneration")  # doctest: +SKIP
    >>> vllm_quantized_modules(cls, config, "fp8")  # doctest: +SKIP
    {'vision_tower': False, 'embed_vision': False}
    """
    import inspect

    import torch
    from torch import nn

    init = cls.__init__
    namespace = init.__globals__
    quant = None if quant_method is None else types.SimpleNamespace(get_name=lambda: quant_method)

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
    multimodal = types.SimpleNamespace(get_limit_per_prompt=lambda _m: 1, mm_encoder_only=False)
    vllm_config = types.SimpleNamespace(
        model_config=types.SimpleNamespace(
            hf_config=config,
            multimodal_config=multimodal,
            get_multimodal_config=lambda: multimodal,
            dtype=torch.float32,
        ),
        quant_config=quant,
        lora_config=None,
    )
    model = cls.__new__(cls)
    with _CAPTURE_LOCK:
        saved = {name: namespace[name] for name in swaps}
        namespace.update(swaps)
        try:
            init(model, vllm_config=vllm_config, prefix="")
        except _Stop:
            pass
        finally:
            namespace.update(saved)
    return {
        name: value.quant is not None
        for name, value in vars(model).items()
        if isinstance(value, _Stub)
    }


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
    if quant_method is not None and "vision_tower" in modules_q and audio is not None:
        seed = seed_tower_quantized(quant_method, audio)
        if seed != modules_q.get("audio_tower"):
            sizes += (
                f"; the seed's per-tower rule would {'' if seed else 'not '}quantize the "
                "audio tower (vLLM 0.32 reads the vision sizes for both)"
            )
    return (
        f"vLLM's {arch} renames {renamed} of {len(rows)} weights (hf_to_vllm_mapper) and "
        f"fuses {sum(r.shard is not None for r in rows)} into {fusions}.",
        "load_weights skips "
        + (", ".join(ignored) if ignored else "nothing")
        + f" ({sum(r.ignored for r in rows)} weights here).",
        f"Under {quant_method or 'no quantization'}: vLLM's __init__ hands the config to "
        f"{', '.join(given) or 'no tower or embedder'} and keeps "
        f"{', '.join(kept) or 'none'} unquantized ({sizes}); "
        f"{sum(r.quantized for r in rows)} Linear weights quantized.",
    )
