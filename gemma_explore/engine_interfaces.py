"""The engine interfaces vLLM's Gemma classes declare, and why each exists.

vLLM's model classes opt into engine features by inheriting interfaces (seeds
``gemma3n_mm.py``, ``gemma4_mm.py``). :func:`vllm_interfaces` asks vLLM's own checkers
(``vllm/model_executor/models/interfaces.py``) which ones a class has, and says what
each is for:

* **pipeline parallelism** (``SupportsPP``, Gemma 4): the layers are split over GPUs;
  only the first rank embeds tokens (Gemma 3n's ``forward`` even refuses to run without
  ``inputs_embeds`` on the first rank), later ranks receive intermediate tensors.
* **LoRA** (``SupportsLoRA``, Gemma 4): adapters on the language model, and with
  ``supports_tower_connector_lora`` on the towers and embedders too.
* **Eagle3** (``SupportsEagle3``, Gemma 4): speculative decoding with a small draft
  head that reads hidden states of chosen layers.
* **quantization** (``SupportsQuant``, Gemma 4): the class takes a quantization config
  (and applies the tower rule of :mod:`gemma_explore.weight_names`).
* **transcription** (``SupportsTranscription``, Gemma 3n only): the ``/v1/audio/``
  endpoints, with the fixed prompt of :mod:`gemma_explore.transcription`.
* Gemma 4's 26B-A4B is a mixture of experts: the class delegates its expert counts to
  the language model (``moe_layers``, ``num_logical_experts`` …) for expert-parallel
  load balancing.

>>> [i.name for i in vllm_interfaces("Gemma3nForConditionalGeneration") if i.supported]  # doctest: +SKIP
['multimodal', 'transcription']
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EngineInterface", "vllm_interfaces"]

# (name, vLLM's checker in interfaces.py, why it exists)
_INTERFACES = (
    ("multimodal", "supports_multimodal", "images, audio and video reach the model"),
    ("pipeline parallelism", "supports_pp",
     "layers split over GPUs; the first rank embeds, later ranks take intermediate tensors"),
    ("LoRA", "supports_lora", "adapters on the language model (and towers, if declared)"),
    ("Eagle3", "supports_eagle3", "speculative decoding from hidden states of chosen layers"),
    ("transcription", "supports_transcription", "the /v1/audio/ speech-to-text endpoints"),
)  # fmt: skip


@dataclass(frozen=True)
class EngineInterface:
    """One engine feature and whether vLLM's class declares it."""

    name: str  # the feature, in words
    checker: str  # vLLM's function that answers (interfaces.py)
    supported: bool  # what vLLM's checker says for the class
    why: str  # what the feature is for


def vllm_interfaces(architecture: str) -> tuple[EngineInterface, ...]:
    """Which engine interfaces vLLM's class for ``architecture`` declares, asked of vLLM's
    own checkers (vLLM must be installed)."""
    from vllm.model_executor.models import interfaces

    from .weight_names import vllm_model_class

    cls = vllm_model_class(architecture)
    return tuple(
        EngineInterface(name, checker, bool(getattr(interfaces, checker)(cls)), why)
        for name, checker, why in _INTERFACES
    )
