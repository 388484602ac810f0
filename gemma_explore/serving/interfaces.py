"""The engine interfaces vLLM's Gemma classes declare, and why each exists.

vLLM's model classes opt into engine features by inheriting interfaces (seeds
``gemma3n_mm.py``, ``gemma4_mm.py``). :func:`vllm_interfaces` asks vLLM's own checkers
(``vllm/model_executor/models/interfaces.py``) which ones a class has, and says what
each is for:

* **pipeline parallelism** (``SupportsPP``, Gemma 4): the layers are split over GPUs;
  only the first rank embeds tokens, later ranks receive intermediate tensors
  (``forward`` drops ``inputs_embeds`` when ``intermediate_tensors`` arrive, and Gemma
  4's per-layer inputs travel inside them, next to ``hidden_states``: ``gemma4.py``). Gemma 3n
  does not declare ``SupportsPP``, yet its ``forward`` has the same two ways in and
  refuses a call with neither ("inputs_embeds is required on the first PP rank"): it
  never embeds ``input_ids`` itself, because its per-layer inputs are filled by
  ``embed_input_ids`` before ``forward`` (into the buffer of
  :func:`~gemma_explore.inside.per_layer.vllm_per_layer_buffer`), so the first rank must
  hand it the embeddings.
* **LoRA** (``SupportsLoRA``, Gemma 4): adapters on the language model, and with
  ``supports_tower_connector_lora`` on the towers and embedders too
  (which prefixes are tower, connector and language model: vLLM's ``get_mm_mapping``,
  read by :func:`gemma_explore.serving.weights.loading_plan`). With
  ``enable_tower_connector_lora=True`` vLLM sizes a separate LoRA wrapper for the towers
  and one for the embedders from ``get_mm_lora_token_counts``
  (:func:`gemma_explore.serving.batches.lora_token_counts`): per item, the rows the
  tower and the embedder run on, which are not the prompt's soft tokens. An image's
  tower rows are the *engine's* budget's patches (budget × 9), read from the engine's
  ``mm_processor_kwargs`` or config.json, never from the request: a request that asks
  for another budget brings ``its budget × 9`` rows while the LoRA mapping counts the
  engine's (``tests/serving/test_interfaces.py`` shows it on vLLM's own processor
  output). Gemma 3n declares no tower LoRA, and its mapping names a connector
  (``multi_modal_projector``) the model does not have.
* **Eagle3** (``SupportsEagle3``, Gemma 4): speculative decoding with a small draft
  head that reads hidden states of chosen layers.
* **quantization** (``SupportsQuant``, Gemma 4): the class takes a quantization config
  (and applies the tower rule of :mod:`gemma_explore.serving.weights`).
* **transcription** (``SupportsTranscription``, Gemma 3n only): the ``/v1/audio/``
  endpoints, with the fixed prompt of :mod:`gemma_explore.processing.transcription`.
* Gemma 4's 26B-A4B is a mixture of experts: the class delegates its expert counts to
  the language model (``moe_layers``, ``num_logical_experts`` …) for expert-parallel
  load balancing.

One more multimodal method says what a prompt written by hand must hold:
:func:`raw_prompt_placeholders` compares the family's placeholder token (what vLLM's
processor looks for in a raw prompt and expands, once per item, in item order: the same
token in every supported release) with vLLM's ``get_placeholder_str`` (what vLLM's chat
API types into the text with ``--chat-template-content-format string``). That string is a
fact of the release, so it is read from the release's profile
(``vllm_profile(vllm_version).placeholder_str``): Gemma 3n's class returns its own
placeholders in every release; Gemma 4's (and Unified's, which inherits it) returns Gemma
3n's strings for images and audio in some releases and Gemma 4's own in others, and the
profile says which.

>>> [i.name for i in vllm_interfaces("Gemma3nForConditionalGeneration") if i.supported]
['multimodal', 'transcription']
"""

from __future__ import annotations

from dataclasses import dataclass

from gemma_explore.facts.families import DEFAULT_FAMILY, FamilySpec, get_family
from gemma_explore.facts.released import RELEASED
from gemma_explore.vllm_versions import vllm_profile

__all__ = ["EngineInterface", "RawPromptPlaceholder", "raw_prompt_placeholders", "vllm_interfaces"]

# (name, vLLM's checker in interfaces.py, why it exists)
_INTERFACES = (
    ("multimodal", "supports_multimodal", "images, audio and video reach the model"),
    (
        "pipeline parallelism",
        "supports_pp",
        "layers split over GPUs; the first rank embeds, later ranks take intermediate tensors",
    ),
    ("LoRA", "supports_lora", "adapters on the language model (and towers, if declared)"),
    ("Eagle3", "supports_eagle3", "speculative decoding from hidden states of chosen layers"),
    ("transcription", "supports_transcription", "the /v1/audio/ speech-to-text endpoints"),
)
# Class flags vLLM reads off the model class itself (no checker function in interfaces.py).
_FLAGS = (
    (
        "tower and connector LoRA",
        "supports_tower_connector_lora",
        "adapters on the towers and embedders too, with --enable-tower-connector-lora "
        "(enable_tower_connector_lora=True in LLM(...)) "
        "(read by vLLM's LoRA manager, lora/model_manager.py)",
    ),
    (
        "encoder CUDA graphs",
        "supports_encoder_cudagraph",
        "the vision tower is replayed from captured graphs (v1/worker/encoder_cudagraph.py)",
    ),
)


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

    from gemma_explore.serving.weights import vllm_model_class

    cls = vllm_model_class(architecture)
    checked = tuple(
        EngineInterface(name, checker, bool(getattr(interfaces, checker)(cls)), why)
        for name, checker, why in _INTERFACES
    )
    flags = tuple(
        EngineInterface(name, flag, bool(getattr(cls, flag, False)), why)
        for name, flag, why in _FLAGS
    )
    return checked + flags


@dataclass(frozen=True)
class RawPromptPlaceholder:
    """What a hand-written prompt must hold for one item of one modality."""

    family: str
    modality: str
    must_contain: str  # the family's placeholder token, once per item, in item order
    # The release's get_placeholder_str for the model class (None: the profile holds no
    # string for this class and modality).
    vllm_placeholder_str: str | None
    agrees: bool | None  # the two are the same string (None: no string to compare)
    steps: tuple[str, ...]  # what to write, and what vLLM's string format would write
    vllm_version: str  # the release whose get_placeholder_str this is (profile.version)


def raw_prompt_placeholders(
    *,
    family: str | FamilySpec = DEFAULT_FAMILY,
    architecture: str | None = None,
    vllm_version: str | None = None,
) -> tuple[RawPromptPlaceholder, ...]:
    """Per modality of ``family``: the string a raw prompt (``template=False``, or vLLM's
    ``LLM.generate`` with a text prompt) must contain once per item, next to what
    ``get_placeholder_str`` of the model class (``architecture``: the released checkpoints'
    class by default) returns in ``vllm_version`` (None: the installed vLLM, else the
    newest supported), read from that release's profile.

    A raw prompt holds the family's own token in every release: vLLM's processor targets
    it (``_get_prompt_updates``). Only the ``string`` chat-template content format types
    ``get_placeholder_str`` into the text, so only there does the release matter.

    >>> [p.must_contain for p in raw_prompt_placeholders(family="gemma4")]
    ['<|image|>', '<|audio|>', '<|video|>']
    >>> from gemma_explore.vllm_versions import SUPPORTED
    >>> [p.agrees for p in raw_prompt_placeholders(family="gemma4", vllm_version=SUPPORTED[-1])]
    [True, True, True]
    >>> [p.agrees for p in raw_prompt_placeholders(family="gemma4", vllm_version=SUPPORTED[0])]
    [False, False, True]
    """
    spec = get_family(getattr(family, "spec", family))
    if architecture is None:
        architecture = next(r.architecture for r in RELEASED.values() if r.model_type == spec.name)
    profile = vllm_profile(vllm_version)
    strings = profile.placeholder_str.get(architecture, {})
    out = []
    for modality, token in spec.placeholder_tokens.items():
        theirs = strings.get(modality)
        agrees = None if theirs is None else theirs == token
        steps = [
            f"A raw {spec.display_name} prompt holds {token} once per {modality}, in the "
            f"order of the {modality} items; vLLM's processor expands each one."
        ]
        if agrees is False:
            steps.append(
                f"{profile.label}'s {architecture}.get_placeholder_str gives {theirs!r}: only "
                "the 'string' chat-template content format types it into the text, and "
                f"vLLM's processor then finds no {token} to expand (\"Failed to apply prompt "
                f'replacement"). Send {modality} as content parts and let the chat template '
                "write the placeholder."
            )
        elif agrees and spec.wraps_in_newlines:
            steps.append(
                f"{profile.label}'s get_placeholder_str gives the same string, {theirs!r}; but "
                "the 'string' chat-template content format writes it before the message's "
                'text with one "\\n" between them, and a single "\\n" right after a '
                f"{spec.display_name} placeholder makes vLLM's processor raise (see "
                "layout_prompt(..., template=False)). Send content parts."
            )
        elif agrees:
            steps.append(
                f"{profile.label}'s get_placeholder_str gives the same string, {theirs!r}: the "
                "'string' chat-template content format types the placeholder vLLM's "
                "processor expands."
            )
        else:
            steps.append(
                f"{profile.label}'s profile holds no get_placeholder_str for "
                f"{architecture} and {modality}."
            )
        out.append(
            RawPromptPlaceholder(
                spec.name, modality, token, theirs, agrees, tuple(steps), profile.version
            )
        )
    return tuple(out)
