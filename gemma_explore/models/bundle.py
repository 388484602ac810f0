"""``load()`` and the :class:`Bundle` it returns: the real processor and model together.

>>> import gemma_explore as ge
>>> bundle = ge.load("tiny-gemma4")                     # doctest: +SKIP
>>> bundle.generate("Hello").text                      # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..families import get_family
from .tiny import TINY_NAMES, build_tiny_model, build_tiny_processor, register_tiny_mobilenet

__all__ = ["Bundle", "Generation", "ModelLoadError", "load", "MARKER_FILE"]

MARKER_FILE = "gemma_explore.json"  # written beside a saved tiny bundle
_TINY_CACHE: dict[tuple[str, str, str], tuple[Any, Any]] = {}
_CACHE_LOCK = threading.Lock()


class ModelLoadError(RuntimeError):
    """A model could not be loaded; the message says what to do."""


@dataclass
class Generation:
    """One answer with its token counts and timings. ``str(gen)`` is the text."""

    text: str
    prompt_tokens: int  # tokens in the expanded prompt
    multimodal_tokens: int  # of which are soft-token placeholders
    generated_tokens: int
    preprocess_s: float  # processor: resize, patches, mel, tokenisation
    encoder_s: float  # vision + audio towers (measured with forward hooks)
    prefill_s: float  # first forward pass, encoders included
    decode_tokens_per_s: float  # tokens after the first, per second
    is_random_weights: bool = False  # the text is noise when True
    timings: dict[str, float] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.text


@dataclass
class Bundle:
    """A family's real processor and model, loaded together."""

    name: str  # "tiny-gemma4", a folder or a hub id
    family: str  # "gemma3n" or "gemma4"
    processor: Any  # Gemma3nProcessor / Gemma4Processor
    model: Any  # Gemma3nForConditionalGeneration / Gemma4ForConditionalGeneration
    is_random_weights: bool  # True for the tiny offline bundles: their text is noise
    backend: str = "hf"
    device: str = "cpu"
    dtype: Any = None

    @property
    def spec(self):
        return get_family(self.family)

    def __repr__(self) -> str:
        weights = "random weights" if self.is_random_weights else "trained weights"
        size = ""
        if hasattr(self.model, "parameters"):
            size = f"{sum(p.numel() for p in self.model.parameters()) / 1e6:.1f} M parameters, "
        return (
            f"Bundle({self.name!r}, family={self.family!r}, backend={self.backend!r}, "
            f"device={self.device!r}, {size}{weights})"
        )

    def save_pretrained(self, directory: str | os.PathLike) -> Path:
        """Save model and processor so ``from_pretrained`` (and vLLM) can load the folder."""
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(path)
        # A tokenizer that has been called with padding=True keeps that setting in its
        # Rust backend and writes it into tokenizer.json; on reload transformers turns it
        # into max_length=None / pad_to_multiple_of=None defaults that leak into the audio
        # feature extractor ("truncation=True needs max_length"). Save it unpadded.
        backend = getattr(self.processor.tokenizer, "_tokenizer", None)
        if backend is not None:
            backend.no_padding()
            backend.no_truncation()
        self.processor.save_pretrained(path)
        (path / MARKER_FILE).write_text(
            json.dumps(
                {
                    "family": self.family,
                    "random_weights": self.is_random_weights,
                    "source": self.name,
                },
                indent=2,
            )
        )
        return path

    def generate(
        self,
        messages: Any,
        *,
        max_new_tokens: int = 32,
        stream: bool = False,
        max_soft_tokens: int | None = None,
        **processor_kwargs: Any,
    ) -> Generation | Iterator[str]:
        """Answer a chat turn (or plain text). ``stream=True`` yields text pieces.

        Messages hold images, audio and (Gemma 4) video items; ``max_soft_tokens``
        sets Gemma 4's per-request image budget.
        """
        if self.backend == "openai":
            from ..inference.openai_backend import generate_openai

            return generate_openai(
                self,
                messages,
                max_new_tokens=max_new_tokens,
                stream=stream,
                max_soft_tokens=max_soft_tokens,
            )
        if self.backend == "vllm":
            from ..inference.vllm_backend import generate_vllm

            gen = generate_vllm(
                self,
                messages,
                max_new_tokens=max_new_tokens,
                max_soft_tokens=max_soft_tokens,
                **processor_kwargs,
            )
            return iter([gen.text]) if stream else gen  # vllm.LLM answers whole
        from ..inference.hf import generate_hf, stream_hf

        if stream:
            return stream_hf(
                self,
                messages,
                max_new_tokens=max_new_tokens,
                max_soft_tokens=max_soft_tokens,
                **processor_kwargs,
            )
        return generate_hf(
            self,
            messages,
            max_new_tokens=max_new_tokens,
            max_soft_tokens=max_soft_tokens,
            **processor_kwargs,
        )


def _pick_device(device: str | None) -> str:
    import torch

    if device is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise ModelLoadError(
            f"device={device!r} was asked for, but no CUDA GPU is visible. "
            "Use device='cpu' or leave it unset."
        )
    return str(device)


def _pick_dtype(dtype: Any, device: str):
    import torch

    if dtype is None:
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    if isinstance(dtype, str):
        try:
            return {
                "bf16": torch.bfloat16,
                "bfloat16": torch.bfloat16,
                "fp16": torch.float16,
                "float16": torch.float16,
                "fp32": torch.float32,
                "float32": torch.float32,
            }[dtype]
        except KeyError:
            raise ModelLoadError(
                f"Unknown dtype {dtype!r}; use 'bfloat16', 'float16' or 'float32'."
            ) from None
    return dtype


def load(
    model: str | os.PathLike = "tiny-gemma4",
    *,
    backend: str = "hf",
    device: str | None = None,
    dtype: Any = None,
    **engine_args: Any,
) -> Bundle:
    """Load a bundle: ``"tiny-gemma3n"``, ``"tiny-gemma4"``, a local folder or a hub id.

    ``backend`` is ``"hf"`` (transformers, CPU or GPU; on CUDA real checkpoints load in
    bfloat16, on CPU in float32, unless ``dtype`` says otherwise), ``"vllm"`` (``vllm.LLM``
    on a CUDA GPU; extra keyword arguments override :func:`engine_args`) or ``"openai"``
    (a client for a running ``vllm serve``: ``base_url=``, ``api_key=``).

    >>> load("tiny-gemma3n").family                      # doctest: +SKIP
    'gemma3n'
    """
    name = os.fspath(model)
    if backend == "openai":
        return _load_openai(name, **engine_args)
    if backend == "vllm":
        return _load_vllm(name, **engine_args)
    if backend != "hf":
        raise ValueError(f"Unknown backend {backend!r}; choose 'hf', 'vllm' or 'openai'.")
    if engine_args:
        raise TypeError(f"Unexpected arguments for backend='hf': {sorted(engine_args)}")
    dev = _pick_device(device)
    dt = _pick_dtype(dtype, dev)
    if name in TINY_NAMES:
        return _load_tiny(name, dev, dt)
    path = Path(name).expanduser()
    if path.is_dir():
        return _load_folder(path, dev, dt)
    if _looks_like_hub_id(name):
        return _load_hub(name, dev, dt)
    raise ModelLoadError(
        f"Unknown model {name!r}. Choose one of: {', '.join(TINY_NAMES)} (offline, random "
        "weights), a local checkpoint folder, or a hub id such as 'google/gemma-4-E4B-it' or "
        "'google/gemma-3n-E2B-it'."
    )


def _load_tiny(name: str, device: str, dtype: Any) -> Bundle:
    family = TINY_NAMES[name]
    key = (name, device, str(dtype))
    with _CACHE_LOCK:
        if key not in _TINY_CACHE:
            model = build_tiny_model(family).to(device=device, dtype=dtype)
            processor = build_tiny_processor(family)
            _TINY_CACHE[key] = (model, processor)
        model, processor = _TINY_CACHE[key]
    return Bundle(
        name=name,
        family=family,
        processor=processor,
        model=model,
        is_random_weights=True,
        device=device,
        dtype=dtype,
    )


def _looks_like_hub_id(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 2 and all(parts) and not name.startswith((".", "/", "~"))


def _family_from_config(config: Any, where: str) -> str:
    model_type = getattr(config, "model_type", None)
    if model_type in ("gemma3n", "gemma4"):
        return model_type
    raise ModelLoadError(
        f"{where} holds a {model_type!r} model; gemma_explore explains Gemma 3n and Gemma 4 "
        "(model_type 'gemma3n' or 'gemma4')."
    )


def _check_folder(path: Path) -> None:
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


def _from_pretrained(source: str, device: str, dtype: Any, **hub_kwargs: Any):
    from transformers import AutoConfig, AutoModelForImageTextToText, AutoProcessor

    register_tiny_mobilenet()  # a saved tiny Gemma 3n names our slim timm encoder
    config = AutoConfig.from_pretrained(source, trust_remote_code=False, **hub_kwargs)
    family = _family_from_config(config, source)
    processor = AutoProcessor.from_pretrained(source, trust_remote_code=False, **hub_kwargs)
    model = AutoModelForImageTextToText.from_pretrained(
        source, dtype=dtype, trust_remote_code=False, **hub_kwargs
    )
    model.to(device).eval()
    return family, processor, model


def _load_folder(path: Path, device: str, dtype: Any) -> Bundle:
    _check_folder(path)
    marker = path / MARKER_FILE
    random_weights = False
    if marker.exists():
        random_weights = bool(json.loads(marker.read_text()).get("random_weights", False))
    family, processor, model = _from_pretrained(str(path), device, dtype, local_files_only=True)
    return Bundle(
        name=str(path),
        family=family,
        processor=processor,
        model=model,
        is_random_weights=random_weights,
        device=device,
        dtype=dtype,
    )


def _load_hub(hub_id: str, device: str, dtype: Any) -> Bundle:
    from .memory import check_fits

    check_fits(hub_id, device=device, dtype=dtype)
    try:
        family, processor, model = _from_pretrained(hub_id, device, dtype)
    except ModelLoadError:
        raise
    except Exception as exc:  # noqa: BLE001 - network, gated repo, missing repo, …
        raise ModelLoadError(
            f"Could not load {hub_id!r} ({type(exc).__name__}): this needs network access to "
            "the Hugging Face Hub and, for Gemma, an accepted licence — accept it at "
            f"https://huggingface.co/{hub_id}, set HF_TOKEN to a token with read access, or "
            "use the offline default load('tiny-gemma4') / load('tiny-gemma3n')."
        ) from None
    return Bundle(
        name=hub_id,
        family=family,
        processor=processor,
        model=model,
        is_random_weights=False,
        device=device,
        dtype=dtype,
    )


def _guess_family(name: str) -> str:
    """Family of a model we cannot open (a remote server's): from its name."""
    low = name.lower().replace("_", "-")
    if "gemma-3n" in low or "gemma3n" in low:
        return "gemma3n"
    if "gemma-4" in low or "gemma4" in low:
        return "gemma4"
    raise ModelLoadError(f"Cannot tell whether {name!r} is Gemma 3n or Gemma 4; pass family=.")


def _load_openai(
    name: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    family: str | None = None,
    **unexpected: Any,
) -> Bundle:
    from ..inference.openai_backend import DEFAULT_BASE_URL, OpenAIClient

    if unexpected:
        raise TypeError(f"Unexpected arguments for backend='openai': {sorted(unexpected)}")
    fam = family or (TINY_NAMES.get(name) or _guess_family(name))
    processor = None
    if name in TINY_NAMES:
        processor = build_tiny_processor(fam)
    elif Path(name).is_dir():
        from transformers import AutoProcessor

        processor = AutoProcessor.from_pretrained(name, trust_remote_code=False)
    client = OpenAIClient(model=name, base_url=base_url or DEFAULT_BASE_URL, api_key=api_key)
    return Bundle(
        name=name,
        family=get_family(fam).name,
        processor=processor,
        model=client,
        is_random_weights=False,
        backend="openai",
        device="remote",
    )


def _load_vllm(name: str, **engine_overrides: Any) -> Bundle:
    from ..inference.vllm_backend import load_vllm

    source, random_weights = name, False
    if name in TINY_NAMES:
        import tempfile

        tiny = _load_tiny(name, "cpu", None)
        source = str(tiny.save_pretrained(tempfile.mkdtemp(prefix="gemma_explore_")))
        random_weights = True
    if Path(source).is_dir():
        _check_folder(Path(source))
        from transformers import AutoConfig

        family = _family_from_config(AutoConfig.from_pretrained(source), source)
        marker = Path(source) / MARKER_FILE
        random_weights = random_weights or (
            marker.exists() and bool(json.loads(marker.read_text()).get("random_weights"))
        )
    else:
        family = _guess_family(source)
    llm, processor = load_vllm(source, family=family, **engine_overrides)
    return Bundle(
        name=name,
        family=family,
        processor=processor,
        model=llm,
        is_random_weights=random_weights,
        backend="vllm",
        device="cuda",
    )
