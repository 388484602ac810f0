"""Per-layer embeddings: which id each prompt position looks up in the per-layer table.

Gemma 3n and the Gemma 4 E-models give every decoder layer a small extra input per
token, looked up by token id in ``embed_tokens_per_layer`` (``hidden_size_per_layer_input``
numbers per layer). A placeholder position holds an image or audio vector, not a word,
so its id must not pick a word's per-layer row. The two families do it differently:

* **Gemma 3n**: every id outside ``[0, vocab_size_per_layer_input)`` becomes 0. vLLM does
  it in ``get_per_layer_input_embeddings``; transformers in ``Gemma3nModel.forward``
  before 5.21 (which hands the remapped ids to ``get_per_layer_inputs``) and in
  ``Gemma3nTextModel.get_per_layer_inputs`` itself from 5.21 on (which the forward hands
  the prompt's own ids): ``modeling_gemma3n.py`` 5.19.0 lines 2075-2077, 5.21.0 line
  1768; the same rows either way. The soft-token ids sit above the text vocabulary, so
  they read row 0, and so do the end markers ``<end_of_image>`` (262144) and
  ``<end_of_audio>``; the start markers are text ids and keep their own rows.
* **Gemma 4** E-models: every multimodal *position* (image, audio, video soft tokens)
  reads the row of ``<pad>`` in transformers (``pad_token_id``) and of token 0 in vLLM
  (``embed_input_ids``, seed ``gemma4_mm.py``: "map image token positions to token 0";
  vLLM's ``get_per_layer_inputs`` then also reads row 0 for an id outside the table).
  ``<pad>`` is id 0, so the two agree.
* **Gemma 4 Unified** has no per-layer embeddings.

vLLM also keeps a zero buffer of ``(max_num_batched_tokens, layers, width)`` for these
inputs, allocated at start-up so CUDA graphs see one address; while it profiles memory,
``embed_input_ids`` is never called and the layers read zeros.

>>> import gemma_explore as ge
>>> bundle = ge.load("tiny-gemma4")
>>> layout = ge.layout_prompt("Hi", bundle=bundle, images=[(96, 96)], max_soft_tokens=70)
>>> remapped = per_layer_ids(list(layout.input_ids), bundle=bundle).remapped
>>> len(remapped), remapped == tuple(layout.input_ids.index(258880) + i for i in range(64))
(64, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gemma_explore.models.bundle import Bundle

__all__ = ["PerLayerIds", "per_layer_ids", "vllm_per_layer_buffer"]


@dataclass(frozen=True)
class PerLayerIds:
    """The id each position of one prompt looks up in the per-layer embedding table."""

    family: str
    ids: tuple[int, ...]  # the prompt's token ids
    per_layer: tuple[int, ...] | None  # the id each position reads (None: no per-layer table)
    # the same as vLLM's model looks it up (embed_input_ids, then get_per_layer_inputs);
    # tests/vllm_engine/test_inside.py holds it to the ids vLLM's running model hands its table
    vllm_per_layer: tuple[int, ...] | None
    remapped: tuple[int, ...]  # positions whose per-layer id differs from their token id
    table_rows: int | None  # rows of embed_tokens_per_layer (vocab_size_per_layer_input)
    layers: int  # decoder layers, each with its own slice of the row
    width: int | None  # numbers per layer per token (hidden_size_per_layer_input)
    steps: tuple[str, ...]  # the rule, in words

    @property
    def agrees_with_vllm(self) -> bool:
        """transformers and vLLM pick the same per-layer row at every position."""
        return self.per_layer == self.vllm_per_layer

    def __repr__(self) -> str:
        return "\n".join(self.steps)


def vllm_per_layer_buffer(
    bundle: Bundle, max_num_batched_tokens: int
) -> tuple[int, int, int] | None:
    """Shape of the zero buffer vLLM allocates at start-up for per-layer inputs,
    ``(max_num_batched_tokens, layers, hidden_size_per_layer_input)``; None without them.

    >>> import gemma_explore as ge
    >>> vllm_per_layer_buffer(ge.load("tiny-gemma4"), 2048)
    (2048, 2, 8)
    """
    config = bundle.model.config.get_text_config()
    width = getattr(config, "hidden_size_per_layer_input", None)
    if not width:
        return None
    return (max_num_batched_tokens, config.num_hidden_layers, width)


def per_layer_ids(input_ids: list[int], *, bundle: Bundle) -> PerLayerIds:
    """Which id each position of ``input_ids`` looks up in the per-layer table, as
    transformers' forward computes it and as vLLM's ``embed_input_ids`` does.

    Multimodal positions are the positions holding one of the family's placeholder ids
    (``spec.placeholder_tokens``), which is what both engines' masks mark.
    """
    spec = bundle.spec
    config = bundle.model.config.get_text_config()
    ids = tuple(int(t) for t in input_ids)
    width = getattr(config, "hidden_size_per_layer_input", None)
    layers = int(config.num_hidden_layers)
    if not width:
        return PerLayerIds(
            spec.name,
            ids,
            None,
            None,
            (),
            None,
            layers,
            None,
            (
                f"{spec.display_name} has no per-layer embeddings: every layer reads only the "
                "hidden state.",
            ),
        )
    rows = int(getattr(config, "vocab_size_per_layer_input", config.vocab_size))
    soft = {spec.id_of(t) for t in spec.placeholder_tokens.values()}
    if spec.pads_placeholders_per_layer:  # Gemma 4: by position, to <pad> / token 0
        pad = int(config.pad_token_id)
        ours = tuple(pad if t in soft else t for t in ids)
        # vLLM: embed_input_ids maps multimodal positions to 0, then get_per_layer_inputs
        # (gemma4.py) also reads row 0 for any id outside the table, as Gemma 3n does.
        theirs = tuple(0 if t in soft or not 0 <= t < rows else t for t in ids)
        steps = [
            f"Gemma 4 looks every multimodal position up as <pad> (id {pad}) in transformers "
            "and as token 0 in vLLM (embed_input_ids); the soft token alone carries the "
            "image or audio there.",
        ]
    else:  # Gemma 3n: by id range
        ours = tuple(t if 0 <= t < rows else 0 for t in ids)
        theirs = ours  # get_per_layer_input_embeddings: the same range rule
        # (transformers applies it in Gemma3nModel.forward or, from 5.21, inside
        # get_per_layer_inputs: the table sees these ids in every version)
        above = sorted({t for t in ids if not 0 <= t < rows})
        names = bundle.processor.tokenizer.convert_ids_to_tokens(above) if above else []
        steps = [
            f"Gemma 3n keeps ids below vocab_size_per_layer_input ({rows}) and reads row 0 for "
            "every other id, by id, not by position: here "
            + (", ".join(f"{n} ({t})" for n, t in zip(names, above, strict=True)) or "none")
            + ".",
        ]
    remapped = tuple(i for i, (a, b) in enumerate(zip(ids, ours, strict=True)) if a != b)
    steps.append(
        f"{len(remapped)} of {len(ids)} positions read another row than their own id; each row "
        f"holds {layers} layers × {width} numbers."
    )
    if ours != theirs:
        steps.append("transformers and vLLM pick different rows here (pad_token_id is not 0).")
    return PerLayerIds(spec.name, ids, ours, theirs, remapped, rows, layers, width, tuple(steps))
