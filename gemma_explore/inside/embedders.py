"""How a soft token enters the language model: the multimodal embedders, stage by stage.

Every family hands an encoder's output to a small *multimodal embedder* before its
vectors take the placeholders' places. The embedders differ, and the differences are
what this module traces, recomputing each stage from the real module's own weights and
checking the result equals the module's forward:

* **Gemma 3n** (``Gemma3nMultimodalEmbedder``, ``modeling_gemma3n.py``; vLLM's
  ``gemma3n_mm.py``): two ways in. The *soft* path (encoder outputs) takes
  ``soft_embedding_norm``; the *hard* path (token ids of the vision/audio vocabulary)
  subtracts ``vocab_offset``, looks the id up in its own ``embedding`` table and takes
  ``hard_embedding_norm``. Both then go through ``embedding_projection`` (a Linear to the
  text width) and ``embedding_post_projection_norm``, an RMSNorm with no weight. Before
  the image embedder, the MobileNet's ``(B, C, 16, 16)`` map is reshaped to
  ``(B, 256, C)`` and multiplied by ``√C`` (``get_image_features``).
* **Gemma 4** (``Gemma4MultimodalEmbedder``): a weightless RMSNorm
  (``embedding_pre_projection_norm``), *then* the Linear. vLLM's docstring for the same
  class says "a linear projection followed by RMSNorm"; its code, like transformers',
  runs the norm first. :attr:`EmbedderTrace.reverse_gap` measures how far the
  docstring's order would land.
* **Gemma 3n's audio padding**: the 188 audio placeholders are fixed, the tower's tokens
  are not. Both transformers (``Gemma3nModel.forward``) and vLLM (``gemma3n_mm.py``,
  ``_process_audio_input``) fill every slot the tower leaves, and every token its mask
  marks as padding, with one vector: ``embed_audio(input_ids=[[vocab_size − 1]])``, the
  *hard* path of the last audio-vocabulary id (text ``vocab_size`` 262 400 − 1 = 262 399,
  row 127 of the audio embedder's own table), not zeros and not the soft token's
  embedding. :func:`audio_padding_embedding` computes it.
* **Gemma 4 Unified**: there is no tower to embed *after*. The same norm-then-Linear
  embedder takes the raw rows (a merged 48 px block after ``patch_dense``, or 640 raw
  samples of audio) and is the whole encoder.

>>> import gemma_explore as ge, torch
>>> b = ge.load("tiny-gemma4")
>>> tower_output = torch.zeros(1, 4, b.model.config.vision_config.hidden_size)  # 4 soft tokens
>>> trace = trace_embedder(b, "image", tower_output)
>>> [s.name for s in trace.stages]
['encoder output', 'RMSNorm without weight', 'Linear 32 → 64']
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from gemma_explore.facts.families import FamilySpec
    from gemma_explore.models.bundle import Bundle

__all__ = [
    "AudioPadding",
    "EmbedderStage",
    "EmbedderTrace",
    "audio_padding_embedding",
    "embedder_of",
    "rms_norm",
    "trace_embedder",
]


@dataclass(frozen=True)
class EmbedderStage:
    """One step of an embedder, with what it made."""

    name: str  # what the step does, e.g. "RMSNorm without weight"
    module: str  # the attribute of the embedder that runs it ("" for the input)
    shape: tuple[int, ...]  # (tokens, width) after the step
    mean_norm: float  # mean L2 norm of a token after the step (noise with random weights)


@dataclass(frozen=True)
class EmbedderTrace:
    """One embedder run on one item, re-done stage by stage from the module's weights."""

    family: str
    modality: str  # "image" or "audio"
    path: str  # "soft" (encoder outputs) or "hard" (token ids, Gemma 3n only)
    embedder: str  # the class that runs, e.g. "Gemma4MultimodalEmbedder"
    stages: tuple[EmbedderStage, ...]
    max_error: float  # largest |ours − module forward| over the output: ~0 when we agree
    reverse_gap: float | None  # Gemma 4: relative distance of Linear-then-norm from what runs
    encoder_free: bool  # Unified: the embedder is the whole encoder (no tower before it)
    output: Any = field(repr=False)  # (tokens, text hidden) tensor the language model gets
    steps: tuple[str, ...] = ()  # why each stage is there, in words

    @property
    def agrees(self) -> bool:
        """Our stage-by-stage result equals the module's own forward."""
        return self.max_error <= 1e-4 * max(1.0, self.stages[-1].mean_norm)

    def __repr__(self) -> str:
        lines = [f"{self.family} {self.modality} embedder ({self.embedder}, {self.path} path):"]
        for s in self.stages:
            lines.append(f"  {s.name:<34} {str(s.shape):<14} {s.module}")
        return "\n".join([*lines, *self.steps])


def rms_norm(x: torch.Tensor, eps: float, weight: torch.Tensor | None = None) -> torch.Tensor:
    """RMSNorm as Gemma writes it: ``x / sqrt(mean(x²) + eps)``, times ``weight`` when the
    norm has one (Gemma 3n's scaled norms multiply by ``weight`` itself, not ``1 + weight``).

    >>> import torch
    >>> rms_norm(torch.tensor([[3.0, 4.0]]), 0.0).pow(2).mean().item()
    1.0
    """
    import torch

    y = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
    return (y if weight is None else y * weight.float()).to(x.dtype)


def embedder_of(bundle: Bundle, modality: str) -> Any:
    """The module that maps an encoder's output (or Unified's raw rows) to the text width:
    ``embed_vision`` / ``embed_audio``, or Unified's ``multimodal_embedder`` inside
    ``embed_vision``."""
    model = bundle.require_model("The embedder trace")
    name = {"image": "embed_vision", "video": "embed_vision", "audio": "embed_audio"}.get(modality)
    if name is None:
        raise ValueError(f"modality must be 'image', 'audio' or 'video', got {modality!r}.")
    module = getattr(model.model, name, None)
    if module is None:
        raise ValueError(f"This checkpoint has no {name}: it has no {modality} input.")
    return getattr(module, "multimodal_embedder", module)


def _norm_weight(norm: Any) -> torch.Tensor | None:
    """The norm's scale, or None for a weightless one (``with_scale=False``)."""
    return getattr(norm, "weight", None) if getattr(norm, "with_scale", True) else None


def _stage(name: str, module: str, x: torch.Tensor) -> EmbedderStage:
    flat = x.reshape(-1, x.shape[-1])  # (tokens, width)
    norm = float(flat.float().norm(dim=-1).mean()) if flat.numel() else 0.0
    return EmbedderStage(name, module, tuple(flat.shape), norm)


def trace_embedder(
    bundle: Bundle,
    modality: str,
    inputs: torch.Tensor,
    *,
    hard: bool = False,
) -> EmbedderTrace:
    """Run ``bundle``'s ``modality`` embedder stage by stage on ``inputs``: the encoder's
    output ``(tokens, width)`` (what the embedder's forward receives), or, with
    ``hard=True`` (Gemma 3n), token ids of the vision/audio vocabulary.

    Each stage is recomputed from the module's own weights with :func:`rms_norm` and a
    matrix product, and the result is compared with the module's forward
    (``max_error``). For Gemma 4 the seed docstring's order (Linear, then the norm) is
    computed too, to show it is not what runs (``reverse_gap``).
    """
    import torch

    emb = embedder_of(bundle, modality)
    spec = bundle.spec
    with torch.inference_mode():
        if hasattr(emb, "soft_embedding_norm"):  # Gemma 3n: two ways in, post-norm out
            if hard:
                stages, x, reference, steps = _hard_way_in(emb, inputs)
            else:
                stages, x, reference, steps = _soft_way_in(emb, inputs, modality, spec)
            out, tail, why = _project_then_post_norm(emb, x)
            stages, steps, reverse = stages + tail, [*steps, why], None
        else:  # Gemma 4 and Unified: weightless norm, then the Linear
            if hard:
                raise ValueError(
                    f"{type(emb).__name__} has no embedding table: only Gemma 3n embeds "
                    "token ids (hard=True)."
                )
            stages, out, reference, reverse, why = _norm_then_project(emb, spec, modality, inputs)
            steps = [why]
        if spec.encoder_free:
            steps.append(
                "Unified has no tower: this embedder is the whole encoder, so there is no "
                "encoder output before it, only raw rows."
            )
        err = float((reference.reshape(out.shape).float() - out.float()).abs().max())
    return EmbedderTrace(
        spec.name,
        modality,
        "hard" if hard else "soft",
        type(emb).__name__,
        tuple(stages),
        err,
        reverse,
        spec.encoder_free,
        out,
        tuple(steps),
    )


def _hard_way_in(emb: Any, inputs: Any) -> tuple[list[EmbedderStage], Any, Any, list[str]]:
    """Gemma 3n's hard path: ids of the vision/audio vocabulary look up the embedder's own
    table, then the hard norm. Returns (stages, normed rows, the module's forward, steps)."""
    import torch

    ids = torch.as_tensor(inputs).reshape(-1)  # (tokens,)
    table = emb.embedding(ids - emb.vocab_offset)  # (tokens, width)
    x = rms_norm(table, emb.eps, _norm_weight(emb.hard_embedding_norm))  # (tokens, width)
    stages = [
        _stage(f"ids − vocab_offset {emb.vocab_offset}", "", ids[:, None]),
        _stage("own embedding table", "embedding", table),
        _stage("RMSNorm with weight (hard)", "hard_embedding_norm", x),
    ]
    why = (
        "Hard path: ids of the vision/audio vocabulary (from vocab_offset on) look up "
        "the embedder's own table, not the text table."
    )
    return stages, x, emb(input_ids=ids), [why]


def _soft_way_in(
    emb: Any, inputs: Any, modality: str, spec: FamilySpec
) -> tuple[list[EmbedderStage], Any, Any, list[str]]:
    """Gemma 3n's soft path: the encoder's vectors take the soft norm. Returns (stages,
    normed rows, the module's forward, steps)."""
    x0 = inputs.reshape(-1, inputs.shape[-1])  # (tokens, width)
    x = rms_norm(x0, emb.eps, _norm_weight(emb.soft_embedding_norm))  # (tokens, width)
    stages = [
        _stage("encoder output", "", x0),
        _stage("RMSNorm with weight (soft)", "soft_embedding_norm", x),
    ]
    steps = ["Soft path: the encoder's vectors take the soft norm."]
    if modality != "audio":
        c, n = x0.shape[-1], spec.image.fixed_soft_tokens
        side = math.isqrt(n)  # the tower's square output map: one token per cell
        steps.insert(
            0,
            f"Before it, get_image_features turned the vision tower's (B, {c}, {side}, {side}) "
            f"map into (B, {n}, {c}) rows and multiplied them by √{c} = {c**0.5:.2f}.",
        )
    return stages, x, emb(inputs_embeds=x0), steps


def _project_then_post_norm(emb: Any, x: Any) -> tuple[Any, list[EmbedderStage], str]:
    """Gemma 3n's shared tail: the Linear to the text width, then a weightless post-norm."""
    w = emb.embedding_projection.weight  # (text hidden, width)
    y = x @ w.T  # (tokens, text hidden)
    out = rms_norm(y, emb.eps, _norm_weight(emb.embedding_post_projection_norm))
    stages = [
        _stage(f"Linear {w.shape[1]} → {w.shape[0]}", "embedding_projection", y),
        _stage("RMSNorm without weight", "embedding_post_projection_norm", out),
    ]
    return out, stages, "Both paths share the projection and a weightless post-norm."


def _norm_then_project(
    emb: Any, spec: FamilySpec, modality: str, inputs: Any
) -> tuple[list[EmbedderStage], Any, Any, float, str]:
    """Gemma 4 and Unified: a weightless norm, then the Linear; and how far the other
    order (vLLM's docstring) lands. Returns (stages, output, the module's forward,
    that distance, the step)."""
    w = emb.embedding_projection.weight  # (text hidden, width)
    x0 = inputs.reshape(-1, inputs.shape[-1])  # (tokens, width)
    if not spec.encoder_free:
        first = "encoder output"
    elif modality == "audio":
        first = f"raw {spec.audio.samples_per_token}-sample frames"
    else:
        first = f"{spec.image.cell_px} px blocks after patch_dense"
    x = rms_norm(x0, emb.eps, _norm_weight(emb.embedding_pre_projection_norm))
    out = x @ w.T  # (tokens, text hidden)
    stages = [
        _stage(first, "", x0),
        _stage("RMSNorm without weight", "embedding_pre_projection_norm", x),
        _stage(f"Linear {w.shape[1]} → {w.shape[0]}", "embedding_projection", out),
    ]
    other = rms_norm(x0 @ w.T, emb.eps)  # the docstring's order: Linear, then norm
    reverse = float((other - out).float().norm() / out.float().norm().clamp_min(1e-12))
    why = (
        "The norm runs first and has no weight; the Linear comes after. vLLM's docstring "
        "for this class says 'a linear projection followed by RMSNorm', but its code "
        f"(like transformers') runs the norm first: the other order lands {reverse:.0%} "
        "away (relative distance)."
    )
    return stages, out, emb(inputs_embeds=x0), reverse, why


@dataclass(frozen=True)
class AudioPadding:
    """Gemma 3n's audio padding vector: what fills the audio slots the tower leaves."""

    token_id: int  # the id embedded: the text config's vocab_size − 1 (both engines)
    token: str  # that id's name in the bundle's tokenizer
    table_row: int  # its row in embed_audio's own table: token_id − vocab_offset
    last_row: bool  # the row is the table's last (the last audio-vocabulary id)
    vector: Any = field(repr=False)  # (text hidden,) the padding embedding itself
    trace: EmbedderTrace | None = field(default=None, repr=False)  # the hard path, stage by stage
    steps: tuple[str, ...] = ()  # where the vector comes from, in words


def audio_padding_embedding(bundle: Bundle) -> AudioPadding:
    """The vector Gemma 3n writes into audio slots the tower does not fill.

    transformers' ``Gemma3nModel.forward`` and vLLM's ``_process_audio_input`` both
    embed ``vocab_size − 1`` (``config.text_config.vocab_size``) through
    ``embed_audio``'s hard path, put the result where the tower's mask marks padding, and
    append it until the 188 slots are full (vLLM truncates longer outputs instead).

    >>> import gemma_explore as ge
    >>> pad = audio_padding_embedding(ge.load("tiny-gemma3n"))
    >>> pad.token_id, pad.table_row, pad.last_row
    (262399, 127, True)
    """
    import torch

    model = bundle.require_model("The audio padding vector")
    if bundle.spec.audio.fixed_placeholders is None or not hasattr(
        embedder_of(bundle, "audio"), "embedding"
    ):
        raise ValueError(
            f"{bundle.spec.display_name} has no audio padding vector: only Gemma 3n pads its "
            "fixed audio slots (Gemma 4 strips the padding tokens instead)."
        )
    emb = embedder_of(bundle, "audio")
    token_id = int(model.config.get_text_config().vocab_size) - 1
    row = token_id - int(emb.vocab_offset)
    trace = trace_embedder(bundle, "audio", torch.tensor([token_id]), hard=True)
    name = bundle.processor.tokenizer.convert_ids_to_tokens(token_id)
    last = row == int(emb.vocab_size) - 1
    steps = (
        f"Padding id = text vocab_size − 1 = {token_id} ({name}), the same in transformers "
        "(Gemma3nModel.forward) and vLLM (_process_audio_input).",
        f"embed_audio's hard path: row {token_id} − vocab_offset {emb.vocab_offset} = {row} "
        f"of its own table ({emb.vocab_size} rows{': the last' if last else ''}), hard norm, "
        "projection, post-norm.",
        "One vector for every padded slot: where the tower's mask says padding, and after "
        "the tower's tokens up to the 188 placeholders.",
    )
    return AudioPadding(token_id, name, row, last, trace.output[0], trace, steps)
