"""Checkpoints on this machine: the tiny offline builds, saved folders and hub ids.

Everything here returns transformers objects (a processor and, where asked, a model);
nothing here knows about serving engines. :func:`gemma_explore.load` wraps the result
in a :class:`~gemma_explore.models.bundle.Bundle` with an engine.

>>> parts = load_parts("tiny-gemma4", device="cpu", dtype=None)
>>> parts.family, parts.is_random_weights
('gemma4', True)
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gemma_explore.errors import ModelLoadError
from gemma_explore.facts.families import FAMILIES, family_from_name, get_family
from gemma_explore.facts.released import is_released, released, released_config
from gemma_explore.models.bundle import MARKER_FILE
from gemma_explore.models.memory import require_fits
from gemma_explore.models.tiny import (
    TINY_NAMES,
    build_tiny_model,
    build_tiny_processor,
    register_tiny_mobilenet,
)
from gemma_explore.models.vocabulary import vocabulary_of

if TYPE_CHECKING:
    import torch
    from transformers import ProcessorMixin

__all__ = [
    "BUILT_IN",
    "Parts",
    "cached_file_of",
    "config_for",
    "family_from_config",
    "guess_family",
    "is_random_weights",
    "load_parts",
    "load_processor",
    "looks_like_hub_id",
    "modalities_of",
    "offline_processor",
    "pick_device",
    "pick_dtype",
    "require_checkpoint_folder",
]

_DTYPES = {
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
    "fp16": "float16",
    "float16": "float16",
    "fp32": "float32",
    "float32": "float32",
}


@dataclass(frozen=True)
class Parts:
    """A loaded checkpoint: what a transformers-backed bundle is made of."""

    name: str  # as the user named it
    family: str
    processor: ProcessorMixin
    model: torch.nn.Module
    is_random_weights: bool
    device: str
    dtype: torch.dtype
    modalities: tuple[str, ...]  # what the checkpoint takes (see modalities_of)


def pick_device(device: str | None) -> str:
    """``device`` as asked, or CUDA when visible, else CPU (clear error for missing CUDA)."""
    import torch

    if device is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise ModelLoadError(
            f"device={device!r} was asked for, but no CUDA GPU is visible. "
            "Use device='cpu' or leave it unset."
        )
    return str(device)


def pick_dtype(dtype: Any, device: str) -> torch.dtype:
    """bfloat16 on CUDA, float32 on CPU, unless ``dtype`` (a name or torch dtype) says."""
    import torch

    if dtype is None:
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    if isinstance(dtype, str):
        if dtype not in _DTYPES:
            raise ModelLoadError(
                f"Unknown dtype {dtype!r}; use 'bfloat16', 'float16' or 'float32'."
            )
        return getattr(torch, _DTYPES[dtype])
    return dtype


def looks_like_hub_id(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 2 and all(parts) and not name.startswith((".", "/", "~"))


def family_from_config(config: Any, where: str) -> str:
    """The family a transformers config belongs to, or a clear refusal."""
    model_type = getattr(config, "model_type", None)
    if model_type in FAMILIES:
        return model_type
    raise ModelLoadError(
        f"{where} holds a {model_type!r} model; gemma_explore explains "
        f"{', '.join(f.display_name for f in FAMILIES.values())} "
        f"(model_type {', '.join(map(repr, FAMILIES))}). Load one of those checkpoints, or "
        f"an offline default ({', '.join(TINY_NAMES)})."
    )


def modalities_of(family: str, config: Any = None, name: str = "") -> tuple[str, ...]:
    """What a checkpoint takes: images always; audio when its config has an
    ``audio_config``; video for families that have it. Without a config, a released
    checkpoint's config is the built-in one (:mod:`gemma_explore.facts.released`), never its
    name; an unknown checkpoint is assumed to take what its family can.

    >>> modalities_of("gemma4", name="google/gemma-4-31B")
    ('image', 'video')
    """
    spec = get_family(family)
    if config is not None:
        audio = getattr(config, "audio_config", None) is not None
    elif name and is_released(name):
        audio = released(name).has_audio  # the released config's audio_config, as a fact
    else:
        audio = spec.audio is not None
    return ("image",) + (("audio",) if audio else ()) + (("video",) if spec.has_video else ())


BUILT_IN = "built-in facts (gemma_explore/facts/released.py)"  # where an offline config comes from


def cached_file_of(model_id: str, filename: str) -> str | None:
    """The path of ``filename`` of a hub repo in the local Hugging Face cache, or None.
    Reads the cache folder only: never the network.

    >>> cached_file_of("google/gemma-4-31B-it", "no-such-file.json") is None
    True
    """
    if not looks_like_hub_id(model_id):
        return None
    # transformers.utils.hub re-exports it; importing it from there imports transformers
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(model_id, filename)
    return found if isinstance(found, str) else None


def config_for(model_id: str) -> tuple[Any, str]:
    """(config, where it came from) for a released checkpoint, with no network: a
    ``config.json`` in the local Hugging Face cache wins over the built-in facts.

    >>> config_for("google/gemma-4-31B-it")[1]
    'built-in facts (gemma_explore/facts/released.py)'
    """
    released(model_id)  # a clear refusal for an id we hold no facts for
    cached = cached_file_of(model_id, "config.json")
    if cached is not None:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(model_id, local_files_only=True)
        return config, f"local Hugging Face cache ({cached})"
    return released_config(model_id), BUILT_IN


def offline_processor(model_id: str, family: str) -> tuple[Any, str]:
    """(processor, where it came from) with no network: the real processor when the local
    Hugging Face cache holds its files, else the family's processor at the released
    settings with the tiny bundles' tokenizer (the fetched Gemma vocabulary, else the
    stand-in; the real special tokens and ids either way)."""
    files = ("processor_config.json", "preprocessor_config.json")
    if any(cached_file_of(model_id, f) for f in files) and (
        cached_file_of(model_id, "tokenizer.json") or cached_file_of(model_id, "tokenizer.model")
    ):
        from transformers import AutoProcessor

        processor = AutoProcessor.from_pretrained(model_id, local_files_only=True)
        return processor, "local Hugging Face cache"
    processor = build_tiny_processor(family)
    label = vocabulary_of(processor.tokenizer)
    return processor, f"released processor settings, tokenizer: {label} (no processor cached)"


def guess_family(name: str) -> str:
    """Family of a model we cannot open (a remote server's): a released checkpoint's from
    its built-in config, any other from its name (:func:`~gemma_explore.facts.families.family_from_name`).

    >>> guess_family("my-org/gemma-3n-finetune")
    'gemma3n'
    """
    if is_released(name):
        return released(name).model_type
    spec = family_from_name(name)
    if spec is None:
        raise ModelLoadError(
            f"Cannot tell whether {name!r} is "
            + ", ".join(f.display_name for f in FAMILIES.values())
            + "; pass family=."
        )
    return spec.name


def require_checkpoint_folder(path: str | os.PathLike) -> Path:
    """The folder, when it holds a complete checkpoint; else a refusal naming what is missing.

    >>> require_checkpoint_folder(".")                                  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gemma_explore.errors.ModelLoadError: The folder . is not a complete checkpoint: missing config.json, ...
    """
    path = Path(path)
    files = {p.name for p in path.iterdir()}
    missing = []
    if "config.json" not in files:
        missing.append("config.json")
    if not files & {"processor_config.json", "preprocessor_config.json"}:
        missing.append("processor_config.json or preprocessor_config.json")
    if not files & {"tokenizer.json", "tokenizer.model"}:
        missing.append("tokenizer.json (or tokenizer.model)")
    if "tokenizer_config.json" not in files:
        missing.append("tokenizer_config.json")
    if not any(f.endswith((".safetensors", ".bin")) or f.endswith(".index.json") for f in files):
        missing.append("model weights (*.safetensors)")
    if missing:
        raise ModelLoadError(
            f"The folder {path} is not a complete checkpoint: missing {', '.join(missing)}. "
            "Save it with bundle.save_pretrained(folder), or download the whole model repo "
            "(huggingface-cli download google/gemma-4-E4B-it --local-dir folder)."
        )
    return path


def is_random_weights(path: Path) -> bool:
    """True when a folder was saved from a random-weight (tiny) bundle."""
    marker = path / MARKER_FILE
    return marker.exists() and bool(json.loads(marker.read_text()).get("random_weights"))


def load_processor(source: str) -> ProcessorMixin:
    """The real processor of a tiny name, a folder or a hub id."""
    if source in TINY_NAMES:
        return build_tiny_processor(TINY_NAMES[source])
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(source, trust_remote_code=False)


_TINY_LOCK = threading.Lock()  # two demo requests must not build the same tiny model twice


@cache
def _tiny(name: str, device: str, dtype: torch.dtype) -> tuple[Any, Any]:
    family = TINY_NAMES[name]
    model = build_tiny_model(family).to(device=device, dtype=dtype)
    return model, build_tiny_processor(family)


def _from_pretrained(source: str, device: str, dtype: Any, **hub_kwargs: Any):
    from transformers import AutoConfig, AutoModelForImageTextToText, AutoProcessor

    register_tiny_mobilenet()  # a saved tiny Gemma 3n names our slim timm encoder
    config = AutoConfig.from_pretrained(source, trust_remote_code=False, **hub_kwargs)
    family = family_from_config(config, source)
    processor = AutoProcessor.from_pretrained(source, trust_remote_code=False, **hub_kwargs)
    model = AutoModelForImageTextToText.from_pretrained(
        source, dtype=dtype, trust_remote_code=False, **hub_kwargs
    )
    model.to(device).eval()
    return family, processor, model


def load_parts(
    model: str | os.PathLike, *, device: str | None, dtype: Any, weights: bool = True
) -> Parts:
    """Processor and model of ``"tiny-gemma3n"``, ``"tiny-gemma4"``, a folder or a hub id.

    ``weights=False``: a config-only build (see :func:`config_only_parts`).
    """
    if not weights:
        return config_only_parts(model, dtype=dtype)
    name = os.fspath(model)
    dev = pick_device(device)
    dt = pick_dtype(dtype, dev)
    if name in TINY_NAMES:
        with _TINY_LOCK:
            net, processor = _tiny(name, dev, dt)
        family = TINY_NAMES[name]
        return Parts(name, family, processor, net, True, dev, dt, modalities_of(family, net.config))
    path = Path(name).expanduser()
    if path.is_dir():
        require_checkpoint_folder(path)
        family, processor, net = _from_pretrained(str(path), dev, dt, local_files_only=True)
        modalities = modalities_of(family, net.config)
        return Parts(
            str(path), family, processor, net, is_random_weights(path), dev, dt, modalities
        )
    if looks_like_hub_id(name):
        require_fits(name, device=dev, dtype=dt)
        try:
            family, processor, net = _from_pretrained(name, dev, dt)
        except ModelLoadError:
            raise
        except Exception as exc:  # noqa: BLE001 - network, gated repo, missing repo, …
            raise ModelLoadError(
                f"Could not load {name!r} ({type(exc).__name__}): this needs network access to "
                "the Hugging Face Hub and, for Gemma, an accepted licence — accept it at "
                f"https://huggingface.co/{name}, set HF_TOKEN to a token with read access, or "
                "use an offline default: " + " / ".join(f"load({n!r})" for n in TINY_NAMES) + "."
            ) from None
        return Parts(
            name, family, processor, net, False, dev, dt, modalities_of(family, net.config)
        )
    raise ModelLoadError(
        f"Unknown model {name!r}. Choose one of: {', '.join(TINY_NAMES)} (offline, random "
        "weights), a local checkpoint folder, or a hub id such as 'google/gemma-4-E4B-it' or "
        "'google/gemma-3n-E2B-it'."
    )


def config_only_parts(model: str | os.PathLike, *, dtype: Any = None) -> Parts:
    """A checkpoint without its weights: its config (a released id's from the local
    Hugging Face cache or the built-in facts; a folder's or a tiny bundle's own), the
    model built on PyTorch's ``meta`` device (shapes, no memory), and the processor
    (cached, the folder's, or the released settings with the tiny bundles' tokenizer).
    Layouts, attention masks and serving plans work; generation does not.

    >>> config_only_parts("google/gemma-4-31B-it").model.device.type
    'meta'
    """

    name = os.fspath(model)
    dt = pick_dtype(dtype if dtype is not None else "bfloat16", "meta")
    if name in TINY_NAMES:
        from gemma_explore.models.tiny import tiny_config

        family = TINY_NAMES[name]
        config, processor = tiny_config(family), build_tiny_processor(family)
    elif Path(name).expanduser().is_dir():
        from transformers import AutoConfig

        path = str(Path(name).expanduser())
        config = AutoConfig.from_pretrained(path, local_files_only=True)
        family = family_from_config(config, path)
        processor = load_processor(path)
    elif is_released(name):
        config, _ = config_for(name)
        family = family_from_config(config, name)
        processor, _ = offline_processor(name, family)
    else:
        raise ModelLoadError(
            f"weights=False needs a config on this machine: {name!r} is not a released Gemma "
            "checkpoint, a folder or a tiny name. Use one of "
            + ", ".join(released_ids())
            + ", or a folder holding its config.json."
        )
    return Parts(
        name,
        family,
        processor,
        _meta_model(config, dt),
        False,
        "meta",
        dt,
        modalities_of(family, config, name),
    )


def released_ids() -> tuple[str, ...]:
    """The released instruction-tuned ids (for messages and pickers)."""
    from gemma_explore.facts.released import RELEASED_IDS

    return RELEASED_IDS


def _meta_model(config: Any, dtype: Any) -> Any:
    """The model of ``config`` on the meta device: every parameter's shape, no memory."""
    import torch
    from transformers import AutoModelForImageTextToText

    register_tiny_mobilenet()  # a tiny Gemma 3n names our slim timm encoder
    with torch.device("meta"):
        net = AutoModelForImageTextToText.from_config(config, dtype=dtype)
    return net.eval()
