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
* Tower quantization (``Gemma4ForConditionalGeneration.__init__``): the towers and
  embedders are quantized only with bitsandbytes, torchao or compressed-tensors, or when
  the *vision* config's ``hidden_size`` and ``intermediate_size`` are both multiples of
  64 (the rule reads the vision config for the audio tower too). Gemma 3n's class passes
  no quantization to its towers or embedders, and its ``get_mm_mapping`` names a
  ``multi_modal_projector`` connector the model does not have.

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

__all__ = ["LoadingPlan", "WeightRow", "loading_plan", "tower_quantized", "vllm_model_class"]

# Quantization methods whose kernels take any tower size (gemma4_mm.py, __init__).
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
    # Quantized under the plan's method (only Linear weights can be); None for tower and
    # connector weights of a class without Gemma 4's tower rule (not derived here).
    quantized: bool | None


@dataclass(frozen=True)
class LoadingPlan:
    """Every weight of one checkpoint, mapped the way vLLM's class maps it."""

    family: str
    architecture: str  # the vLLM class that loads it
    rows: tuple[WeightRow, ...]
    ignored_prefixes: tuple[str, ...]  # what load_weights tells its loader to skip
    packed: dict[str, tuple[str, ...]]  # fused module → the checkpoint modules it takes
    quant_method: str | None  # the method the quantized column assumes (None: none)
    towers_quantized: bool | None  # the tower rule's answer (None: the class has no rule)
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
                {True: "yes", False: "", None: "?"}[r.quantized],
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


def tower_quantized(
    quant_method: str | None, vision_hidden_size: int, vision_intermediate_size: int
) -> bool:
    """Whether vLLM's Gemma 4 quantizes its towers and embedders (``__init__``): any size
    with bitsandbytes, torchao or compressed-tensors; otherwise only when both vision
    sizes are multiples of 64 (E2B/E4B: 768 and 3072 are; 26B/31B: 4304 is not).

    >>> tower_quantized("fp8", 1152, 4304), tower_quantized("bitsandbytes", 1152, 4304)
    (False, True)
    >>> tower_quantized("fp8", 768, 3072)
    True
    """
    if quant_method is None:
        return False
    if quant_method in ANY_SIZE_METHODS:
        return True
    return vision_hidden_size % 64 == 0 and vision_intermediate_size % 64 == 0


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
    vision = getattr(config, "vision_config", None)
    towers_q = _towers_quantized(cls, vision, quant_method)
    lm_prefixes = tuple(parts["language model"])
    rows = []
    for name in names:
        mapped = cls.hf_to_vllm_mapper._map_name(name)
        skip = mapped is not None and any(mapped.startswith(p) for p in ignored)
        shard = None
        # Only vLLM's own language model fuses; the towers are transformers modules.
        if mapped is not None and not skip and mapped.startswith(lm_prefixes):
            mapped, shard = _fused(mapped, packed)
        quant: bool | None = name in linear and quant_method is not None and not skip
        if not (mapped or "").startswith(lm_prefixes) and quant:
            quant = towers_q
        part = _part_of(mapped, parts)
        rows.append(WeightRow(name, None if skip else mapped, shard, skip, part, quant))
    steps = _loading_steps(arch, rows, packed, ignored, quant_method, towers_q, vision)
    return LoadingPlan(
        bundle.spec.name, arch, tuple(rows), ignored, packed, quant_method, towers_q, steps
    )


def _towers_quantized(cls: Any, vision: Any, quant_method: str | None) -> bool | None:
    """Whether vLLM's class quantizes the towers under ``quant_method`` (None: the class
    has no tower rule). Gemma 4's __init__ computes a local ``tower_quant`` from the
    rule; a class without it does not apply the rule (read from the class's own code)."""
    if "tower_quant" not in cls.__init__.__code__.co_varnames:
        return None
    return tower_quantized(
        quant_method,
        getattr(vision, "hidden_size", 0) if vision is not None else 0,
        getattr(vision, "intermediate_size", 0) if vision is not None else 0,
    )


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
    towers_q: bool | None,
    vision: Any,
) -> tuple[str, ...]:
    """The plan in three sentences: renames and fusions, skips, quantization."""
    renamed = sum(r.vllm != r.released for r in rows if r.vllm)
    fusions = ", ".join(f"{k} ({' + '.join(v)})" for k, v in packed.items())
    towers = {True: "quantized", False: "kept unquantized", None: "not covered by a tower rule"}
    return (
        f"vLLM's {arch} renames {renamed} of {len(rows)} weights (hf_to_vllm_mapper) and "
        f"fuses {sum(r.shard is not None for r in rows)} into {fusions}.",
        "load_weights skips "
        + (", ".join(ignored) if ignored else "nothing")
        + f" ({sum(r.ignored for r in rows)} weights here).",
        f"Under {quant_method or 'no quantization'}: towers and connectors are "
        f"{towers[towers_q]} (vision hidden {getattr(vision, 'hidden_size', None)}, "
        f"intermediate {getattr(vision, 'intermediate_size', None)}); "
        f"{sum(bool(r.quantized) for r in rows)} Linear weights quantized.",
    )
