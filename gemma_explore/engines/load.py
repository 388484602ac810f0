"""``load()``: the one place that knows the engines, and puts a bundle together.

Analysis needs the processor (and, for encoder reports, the model); answering needs an
engine. ``load`` reads the checkpoint with :mod:`gemma_explore.models.checkpoints` and
attaches the engine the caller asked for.

>>> import gemma_explore as ge
>>> ge.load("tiny-gemma4").engine.name
'hf'
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemma_explore.engines.hf import HFEngine
from gemma_explore.engines.openai import DEFAULT_BASE_URL, OpenAIEngine
from gemma_explore.engines.vllm import VllmEngine, start_vllm, vllm_device
from gemma_explore.facts.families import get_family
from gemma_explore.models.bundle import Bundle
from gemma_explore.models.checkpoints import (
    family_from_config,
    guess_family,
    is_random_weights,
    load_parts,
    load_processor,
    modalities_of,
    require_checkpoint_folder,
)
from gemma_explore.models.tiny import TINY_NAMES

__all__ = [
    "ENGINES",
    "ENGINE_TABLE",
    "EngineChoice",
    "engine_help",
    "engine_options",
    "load",
    "require_engine",
]


@dataclass(frozen=True)
class EngineChoice:
    """One way to answer: what front ends say about it and which options it takes.

    >>> ENGINE_TABLE["openai"].takes_base_url
    True
    """

    name: str  # the value of load(engine=…) and of every --engine flag
    label: str  # who generates the answers, in a help text's words
    takes_base_url: bool  # answers come from a running server at base_url


ENGINE_TABLE: dict[str, EngineChoice] = {
    b.name: b
    for b in (
        EngineChoice("hf", "transformers in this process", takes_base_url=False),
        EngineChoice("vllm", "vLLM in this process", takes_base_url=False),
        EngineChoice("openai", "a running vllm serve", takes_base_url=True),
    )
}
ENGINES = tuple(ENGINE_TABLE)  # the names, in the order help texts list them


def require_engine(name: str, *, flag: str = "--engine") -> EngineChoice:
    """The engine called ``name``, or a ValueError that lists the choices in ``flag``'s words.

    >>> require_engine("hf").label
    'transformers in this process'
    """
    try:
        return ENGINE_TABLE[name]
    except KeyError:
        raise ValueError(
            f"Unknown engine {name!r}: give {flag} one of {', '.join(ENGINES)}."
        ) from None


def engine_options(name: str, *, base_url: str | None = None) -> dict[str, Any]:
    """The :func:`load` options a front end's ``--engine`` / ``--base-url`` flags mean
    (``base_url`` only where the engine is a server; none means its default address).

    >>> engine_options("openai", base_url="http://127.0.0.1:8000/v1")
    {'engine': 'openai', 'base_url': 'http://127.0.0.1:8000/v1'}
    >>> engine_options("hf", base_url="http://ignored")
    {'engine': 'hf'}
    """
    engine = require_engine(name)
    options: dict[str, Any] = {"engine": engine.name}
    if engine.takes_base_url and base_url:
        options["base_url"] = base_url
    return options


def engine_help() -> str:
    """Each engine and who answers, for a ``--engine`` help text.

    >>> engine_help()
    'transformers in this process (hf), vLLM in this process (vllm) or a running vllm serve (openai)'
    """
    items = [f"{b.label} ({b.name})" for b in ENGINE_TABLE.values()]
    return ", ".join(items[:-1]) + " or " + items[-1]


def load(
    model: str | os.PathLike = "tiny-gemma4",
    *,
    engine: str = "hf",
    device: str | None = None,
    dtype: Any = None,
    weights: bool = True,
    **engine_args: Any,
) -> Bundle:
    """Load a bundle: ``"tiny-gemma3n"``, ``"tiny-gemma4"``, a local folder or a hub id.

    ``engine`` is ``"hf"`` (transformers, CPU or GPU; on CUDA real checkpoints load in
    bfloat16, on CPU in float32, unless ``dtype`` says otherwise), ``"vllm"`` (``vllm.LLM``
    on a CUDA GPU, or on the CPU with vLLM's CPU build, in this process; extra keyword
    arguments override :func:`~gemma_explore.engines.serve_args.engine_args`, and
    ``in_process=False`` starts vLLM's own engine process) or ``"openai"`` (a
    running ``vllm serve``: ``base_url=``, ``api_key=``, ``family=``, ``timeout=`` seconds per request). ``weights=False``
    (``hf``): a config-only bundle, offline for the released ids: the real processor
    settings, the model on the meta device; layouts, masks and serving plans work.

    >>> load("tiny-gemma3n").family
    'gemma3n'
    """
    name = os.fspath(model)
    if engine == "openai":
        return _load_openai(name, **engine_args)
    if engine == "vllm":
        return _load_vllm(name, **engine_args)
    require_engine(engine, flag="engine=")
    if engine_args:
        raise TypeError(f"Unexpected arguments for engine='hf': {sorted(engine_args)}")
    parts = load_parts(name, device=device, dtype=dtype, weights=weights)
    answers = HFEngine(parts.model, parts.processor, parts.family, parts.is_random_weights)
    return Bundle(
        name=parts.name,
        family=parts.family,
        processor=parts.processor,
        model=parts.model,
        engine=answers,
        is_random_weights=parts.is_random_weights,
        device=parts.device,
        dtype=parts.dtype,
        modalities=parts.modalities,
    )


def _load_openai(
    name: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    family: str | None = None,
    timeout: float = 600.0,
    **unexpected: Any,
) -> Bundle:
    if unexpected:
        raise TypeError(f"Unexpected arguments for engine='openai': {sorted(unexpected)}")
    fam = get_family(family or TINY_NAMES.get(name) or guess_family(name)).name
    # The server holds the model; a local processor (tiny or a folder) lets the analysis
    # tabs show the same counts. A hub id's processor would need the network: none.
    processor = load_processor(name) if name in TINY_NAMES or Path(name).is_dir() else None
    engine = OpenAIEngine(
        name, base_url=base_url or DEFAULT_BASE_URL, api_key=api_key, timeout=timeout
    )
    return Bundle(
        name=name,
        family=fam,
        processor=processor,
        model=None,
        engine=engine,
        is_random_weights=False,
        device="remote",
        modalities=modalities_of(fam, _config_or_none(name), name),
    )


def _config_or_none(source: str) -> Any:
    """The checkpoint's config when it is on this machine (a folder), else None."""
    if not Path(source).is_dir():
        return None
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(source)


def _load_vllm(name: str, **engine_overrides: Any) -> Bundle:
    device = vllm_device()  # fails first, with the install line, where vLLM cannot run
    source, random_weights, keep = name, False, None
    if name in TINY_NAMES:  # saved in float32, as the CPU engine runs it
        keep = tempfile.TemporaryDirectory(prefix="gemma_explore_")  # removed with the engine
        load(name, device="cpu").save_pretrained(keep.name)
        source, random_weights = keep.name, True
    config = _config_or_none(source)
    if config is not None:
        require_checkpoint_folder(Path(source))
        family = family_from_config(config, source)
        random_weights = random_weights or is_random_weights(Path(source))
    else:
        family = guess_family(source)
    modalities = modalities_of(family, config, source)
    has_audio = "audio" in modalities
    llm = start_vllm(source, family=family, has_audio=has_audio, **engine_overrides)
    startup = (engine_overrides.get("mm_processor_kwargs") or {}).get("max_soft_tokens")
    startup = (
        startup
        or engine_overrides.get("max_soft_tokens")
        or get_family(family).image.default_budget
    )
    return Bundle(
        name=name,
        family=family,
        processor=load_processor(source),
        model=None,
        engine=VllmEngine(llm, family, random_weights, keep_alive=keep, startup_budget=startup),
        is_random_weights=random_weights,
        device=device,
        modalities=modalities,
    )
