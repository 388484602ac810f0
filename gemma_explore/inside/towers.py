"""A look inside the real towers: the vision pooler's valid mask and embedding norms, and
every item's embeddings held against its placeholders.

Which embeddings land where, across modalities: transformers' ``forward`` fills one
modality at a time (``masked_scatter`` of all image features into the image
placeholders, then video, then audio), so within a modality item *k* takes the *k*-th
run of placeholders in the prompt. vLLM sorts every item of the request by its
placeholder offset (``argsort_mm_positions``, ``v1/engine/input_processor.py``) and
writes all embeddings in one pass over the multimodal positions
(``_merge_multimodal_embeddings``, ``models/utils.py``). The two agree because both keep
each modality's items in prompt order: an audio clip written between two images lands
between them in both. :attr:`EncoderReport.in_prompt_order` is vLLM's order.

>>> import gemma_explore as ge
>>> pooled = ge.vision_pooling((300, 500), bundle=ge.load("tiny-gemma4"))
>>> pooled.num_valid == pooled.plan.num_soft_tokens
True
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from gemma_explore.facts.families import FamilySpec
from gemma_explore.inside.embedders import EmbedderTrace, embedder_of, trace_embedder
from gemma_explore.plans.image import ImagePlan
from gemma_explore.plans.vllm import VLLM_MERGE_ERROR
from gemma_explore.processing.analysis import Analysis, analysis_of
from gemma_explore.processing.inputs import PreparedInputs, prepare_inputs
from gemma_explore.tables import ShownAsTable, Table

if TYPE_CHECKING:
    import torch

    from gemma_explore.models.bundle import Bundle

__all__ = [
    "EncodedItems",
    "EncoderReport",
    "ItemReport",
    "PooledTokens",
    "encode",
    "encode_audio",
    "encode_images",
    "inspect_multimodal",
    "vision_pooling",
]


# ------------------------------------------------------------------- the towers' runs


@dataclass(frozen=True)
class EncodedItems:
    """What a tower hands the language model for each item of one modality."""

    features: list[torch.Tensor]  # one (tokens, hidden) per item, as the LM receives it
    valid: list[np.ndarray | None]  # per item: bool mask over the tower's slots (None: all)
    slot_norms: list[np.ndarray]  # per item: L2 norm of every slot, padding slots included
    num_padding_soft_tokens: list[
        int
    ]  # per item: placeholders filled with a padding embedding (3n audio)
    # The last stage before the language model: the multimodal embedder, traced step by
    # step on what it received in this very run (None when not captured, e.g. video).
    embedder: EmbedderTrace | None = None

    @property
    def counts(self) -> list[int]:
        """Embeddings per item that take a placeholder."""
        return [int(f.shape[0]) for f in self.features]


class _EmbedderInput:
    """Catches what a family's multimodal embedder receives during one forward."""

    def __init__(self, bundle: Bundle, modality: str) -> None:
        self.bundle, self.modality, self.seen = bundle, modality, []
        self.handle = embedder_of(bundle, modality).register_forward_hook(
            self._hook, with_kwargs=True
        )

    def _hook(self, _module: Any, args: tuple, kwargs: dict, _out: Any) -> None:
        x = kwargs.get("inputs_embeds", args[0] if args else None)
        if x is not None:
            self.seen.append(x.detach())  # (…, tokens, width) as the embedder got it

    def __enter__(self) -> _EmbedderInput:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.remove()

    def trace(self) -> EmbedderTrace | None:
        """The stage-by-stage trace of the first call caught (None when none was)."""
        if not self.seen:
            return None
        return trace_embedder(self.bundle, self.modality, self.seen[0])


def encode_images(prepared: PreparedInputs, *, bundle: Bundle) -> EncodedItems:
    """Run the bundle's real vision tower (or Unified's embedder) on a prepared
    request's images.

    Gemma 4: the pooler averages 3×3 patches into ``budget`` slots and returns a mask of
    which slots hold a real cell; the padding slots are stripped before the language
    model. Gemma 3n: its CNN tower gives a fixed grid of tokens, all real. Unified: one row
    per merged 48 px block, padding rows dropped.

    >>> import gemma_explore as ge
    >>> b = ge.load("tiny-gemma3n")
    >>> encode_images(prepare_inputs("", bundle=b, images=[ge.sample_photo()]), bundle=b).counts
    [256]
    """
    import torch

    model = bundle.require_model("The vision report")
    inputs = prepared.to_model(model)
    inner = model.model
    with _EmbedderInput(bundle, "image") as catch, torch.inference_mode():
        if bundle.spec.encoder_free:
            # Unified: no tower. The embedder projects each merged 48 px row on its own;
            # get_image_features drops the padding rows (position (-1, -1)).
            pos = inputs["image_position_ids"]  # (images, budget, 2)
            out = inner.get_image_features(inputs["pixel_values"], pos)
            feats = list(out.pooler_output)  # (valid rows, hidden) per image
            valid = [(p != -1).all(dim=-1).cpu().numpy() for p in pos]  # (budget,) per image
            norms = []
            for f, v in zip(feats, valid, strict=True):
                row = np.zeros(v.shape[0], dtype=np.float32)  # padding rows: no embedding
                row[v] = f.float().norm(dim=-1).cpu().numpy()
                norms.append(row)
        elif bundle.spec.image.fixed_size is None:  # pooled to a budget, with a valid mask
            captured: list[tuple[Any, Any]] = []
            hook = inner.vision_tower.pooler.register_forward_hook(
                lambda _m, _a, out: captured.append(out)  # ((B, slots, d), (B, slots))
            )
            try:
                out = inner.get_image_features(inputs["pixel_values"], inputs["image_position_ids"])
            finally:
                hook.remove()
            hidden, mask = captured[0]
            valid = [m.cpu().numpy().astype(bool) for m in mask]  # (slots,) per image
            norms = [h.float().norm(dim=-1).cpu().numpy() for h in hidden]  # (slots,)
            feats = list(out.pooler_output)  # (valid tokens, hidden) per image
        else:
            out = inner.get_image_features(inputs["pixel_values"])
            feats = list(out.pooler_output)  # (256, hidden) per image
            valid = [None] * len(feats)
            norms = [f.float().norm(dim=-1).cpu().numpy() for f in feats]
    return EncodedItems(feats, valid, norms, [0] * len(feats), catch.trace())


def encode_audio(prepared: PreparedInputs, *, bundle: Bundle) -> EncodedItems:
    """Run the bundle's real audio tower (Unified: its frame embedder) on a prepared
    request's clips.

    Gemma 4: the tower's mask marks real tokens; only those reach the prompt. Gemma 3n:
    the tower's tokens fill the first of the 188 fixed slots, and the model fills the
    rest with one padding embedding.

    >>> import gemma_explore as ge
    >>> b = ge.load("tiny-gemma4")
    >>> clip = ([0.0] * 48000, 16000)  # three seconds of silence
    >>> encode_audio(prepare_inputs("", bundle=b, audios=[clip]), bundle=b).counts
    [75]
    """
    import torch

    model = bundle.require_model("The audio report")
    inputs = prepared.to_model(model)
    inner = model.model
    spec = bundle.spec
    with _EmbedderInput(bundle, "audio") as catch, torch.inference_mode():
        if spec.audio.fixed_placeholders is None:
            out = inner.get_audio_features(inputs["input_features"], inputs["input_features_mask"])
            mask = out.attention_mask  # (clips, T) True = real
            feats = [out.pooler_output[c][mask[c]] for c in range(mask.shape[0])]
            valid = [mask[c].cpu().numpy().astype(bool) for c in range(mask.shape[0])]
            pads = [0] * len(feats)
        else:
            # transformers' 3n tower takes the *padding* mask (True = padding).
            out = inner.get_audio_features(inputs["input_features"], ~inputs["input_features_mask"])
            pad_mask = out.audio_mel_mask  # (clips, T) True = padding
            feats = [out.pooler_output[c] for c in range(pad_mask.shape[0])]
            valid = [(~pad_mask[c]).cpu().numpy() for c in range(pad_mask.shape[0])]
            slots = spec.audio.fixed_placeholders
            pads = [int(slots - v.sum()) for v in valid]
        norms = [f.float().norm(dim=-1).cpu().numpy() for f in feats]
    return EncodedItems(feats, valid, norms, pads, catch.trace())


# ---------------------------------------------------------------------- pooled masks


@dataclass(frozen=True)
class PooledTokens:
    """What the vision tower's pooler produced for one image."""

    spec: FamilySpec = field(repr=False)  # the family whose pooler ran
    plan: ImagePlan = field(repr=False)  # the plan of the same image and budget
    slots: int  # pooled slots the pooler filled (Gemma 4: the budget; 3n: 256)
    valid: np.ndarray = field(repr=False)  # (slots,) bool: True = real soft token
    norms: np.ndarray = field(repr=False)  # (slots,) L2 norm of each slot's embedding
    grid: tuple[int, int]  # (rows, cols) the valid tokens form on the image
    is_random_weights: bool = False  # the norms are noise when True: read the mask only

    @property
    def family(self) -> str:
        """The family's name ("gemma3n", "gemma4", "gemma4_unified"), read off ``spec``."""
        return self.spec.name

    @property
    def num_valid(self) -> int:
        return int(self.valid.sum())

    @property
    def agrees(self) -> bool:
        return self.num_valid == self.plan.num_soft_tokens


def encode(analysis: Analysis) -> Analysis:
    """The analysis with its tower's run: the vision tower for an image, the audio tower
    for a clip (Unified: the embedders), run once. An analysis that holds the run
    already comes back as it is, so every consumer after the first reads it for free.

    >>> import gemma_explore as ge
    >>> from gemma_explore.processing.analysis import analyse
    >>> b = ge.load("tiny-gemma4")
    >>> a = encode(analyse(ge.sample_photo(), modality="image", bundle=b))
    >>> encode(a) is a, a.encoded.counts
    (True, [270])
    """
    if analysis.encoded is not None:
        return analysis
    if analysis.modality not in ("image", "audio"):
        raise ValueError(f"encode runs an image's or a clip's tower, not a {analysis.modality}'s.")
    run = encode_images if analysis.modality == "image" else encode_audio
    return replace(analysis, encoded=run(analysis.prepared, bundle=analysis.model))


def vision_pooling(
    image: Any,
    *,
    bundle: Bundle | None = None,
    max_soft_tokens: int | None = None,
) -> PooledTokens:
    """Run the bundle's real vision tower on one image and read its pooler's output
    (Unified, which has no tower: its embedder's rows, valid where the block is real).

    ``image`` is any image input, or an :class:`Analysis` (the demo's: planned,
    processed and encoded once per request), which needs no ``bundle``.

    >>> import gemma_explore as ge
    >>> pooled = vision_pooling((300, 500), bundle=ge.load("tiny-gemma4"))
    >>> pooled.num_valid == pooled.plan.num_soft_tokens
    True
    """
    analysis = encode(
        analysis_of(image, modality="image", bundle=bundle, max_soft_tokens=max_soft_tokens)
    )
    encoded, plan, model = analysis.encoded, analysis.plan, analysis.model
    norms = encoded.slot_norms[0]  # (slots,)
    valid = encoded.valid[0] if encoded.valid[0] is not None else np.ones(len(norms), bool)
    return PooledTokens(
        spec=analysis.spec,
        plan=plan,
        slots=int(valid.shape[0]),
        valid=valid,
        norms=norms,
        grid=plan.pooled_grid,
        is_random_weights=model.is_random_weights,
    )


# ---------------------------------------------------------------------- whole requests


@dataclass(frozen=True)
class ItemReport:
    """One image, clip or video: what its encoder produced and where it goes."""

    modality: str  # "image", "audio" or "video"
    item: int  # index within its modality
    embedding_shape: tuple[int, ...]  # (tokens, hidden) the encoder hands the LM
    norm_mean: float  # mean L2 norm of those embeddings
    norm_max: float
    num_embeddings: int  # embeddings the encoder gives for this item
    num_placeholders: int  # placeholder tokens the prompt reserved for it
    positions: tuple[int, ...] = field(repr=False)  # where in input_ids they land
    valid_mask: tuple[bool, ...] | None = field(default=None, repr=False)  # pooler / audio mask
    num_padding_soft_tokens: int = 0  # Gemma 3n audio: slots filled with the padding embedding

    @property
    def agrees(self) -> bool:
        return self.num_embeddings == self.num_placeholders

    @property
    def message(self) -> str:
        if self.agrees:
            return (
                f"{self.modality} #{self.item}: {self.num_embeddings} embeddings → "
                f"{self.num_placeholders} placeholders ✓"
            )
        return (
            f"{self.modality} #{self.item}: the encoder gives {self.num_embeddings} "
            f"embeddings but the prompt has {self.num_placeholders} placeholders. Let the "
            "processor expand the placeholders (do not edit them by hand) and use the same "
            "budget for both."
        )


@dataclass(frozen=True)
class EncoderReport(ShownAsTable):
    """What the real encoders made of one request, item by item."""

    family: str
    items: tuple[ItemReport, ...]
    num_tokens: int  # prompt length
    per_layer_note: str | None  # Gemma 4: per-layer embeddings at multimodal positions
    per_layer_mm_norm: float | None  # mean norm of per-layer inputs at multimodal positions
    per_layer_text_norm: float | None  # … and at text positions, for comparison
    is_random_weights: bool = False  # norms are noise then: the table shows shapes only

    @property
    def agrees(self) -> bool:
        return all(i.agrees for i in self.items)

    @property
    def in_prompt_order(self) -> tuple[tuple[str, int], ...]:
        """``(modality, item)`` sorted by where each item's placeholders start: the order
        vLLM hands the embeddings to its merge (``argsort_mm_positions``). ``items``
        itself lists the modalities one after another, as transformers scatters them."""
        placed = sorted((i.positions[0], i.modality, i.item) for i in self.items if i.positions)
        return tuple((m, k) for _, m, k in placed)

    @property
    def vllm_error(self) -> str | None:
        """What vLLM's runner raises when it marks these placeholders for these embeddings
        (``_merge_multimodal_embeddings`` in vLLM's ``models/utils.py``, word for word),
        so you can search your logs for it; None when every embedding has its placeholder.

        vLLM reaches it only when its own count differs from the processor's (a budget in
        config.json that differs from processor_config.json): a prompt edited by hand is
        re-expanded by vLLM's processor instead, and accepted (``parity.vllm_replay``)."""
        given = [i.num_embeddings for i in self.items]
        slots = sum(i.num_placeholders for i in self.items)
        if sum(given) == slots:
            return None
        expr = " + ".join(map(str, given))
        return VLLM_MERGE_ERROR.format(expr=expr, n=sum(given), slots=slots)

    @property
    def mismatches(self) -> tuple[str, ...]:
        items = tuple(i.message for i in self.items if not i.agrees)
        if not self.vllm_error:
            return items
        return items + (f"vLLM's runner, given these placeholders, raises: {self.vllm_error}",)

    def table(self) -> Table:
        rows = tuple(
            (
                f"{i.modality} #{i.item}",
                i.embedding_shape,
                i.num_embeddings,
                i.num_placeholders,
                "random" if self.is_random_weights else f"{i.norm_mean:.2f}",
                i.num_padding_soft_tokens,
            )
            for i in self.items
        )
        verdict = "every item fits its placeholders" if self.agrees else "MISMATCH"
        if self.is_random_weights:
            verdict += " (random weights: shapes and counts only)"
        notes = tuple(self.mismatches) + ((self.per_layer_note,) if self.per_layer_note else ())
        return Table(
            ("item", "shape", "embeddings", "placeholders", "mean norm", "padding soft tokens"),
            rows,
            title=f"EncoderReport — {self.family}, {self.num_tokens} tokens: {verdict}",
            flagged=tuple(k for k, i in enumerate(self.items) if not i.agrees),
            notes=notes,
        )

    def __repr__(self) -> str:
        return self.table().text()


def _norms(x) -> tuple[float, float]:
    n = x.float().norm(dim=-1)
    return (float(n.mean()) if n.numel() else 0.0, float(n.max()) if n.numel() else 0.0)


def inspect_multimodal(
    messages: Any,
    *,
    bundle: Bundle,
    input_ids: Any = None,
    max_soft_tokens: int | None = None,
    prepared: PreparedInputs | None = None,
) -> EncoderReport:
    """Run the towers on a request and check every item's embeddings against its placeholders.

    ``input_ids`` replaces the processor's ids (e.g. with a placeholder removed by hand) to
    see the mismatch report instead of the model's exception.

    >>> import gemma_explore as ge
    >>> msgs = [{"role": "user", "content": [{"type": "image", "image": ge.sample_photo()},
    ...                                      {"type": "text", "text": "What is this?"}]}]
    >>> report = inspect_multimodal(msgs, bundle=ge.load("tiny-gemma4"))
    >>> report.agrees, [i.num_placeholders for i in report.items]
    (True, [270])
    """
    import torch

    bundle.require_model("inspect_multimodal")
    if prepared is None:
        prepared = prepare_inputs(messages, bundle=bundle, max_soft_tokens=max_soft_tokens)
    ids = torch.as_tensor(input_ids if input_ids is not None else prepared.input_ids)
    ids = ids.reshape(-1)  # (seq,)
    spec = bundle.spec
    items: list[ItemReport] = []
    if prepared.images:
        runs = _placeholder_runs(ids, spec.id_of(spec.image_token), len(prepared.images))
        items += _item_reports("image", encode_images(prepared, bundle=bundle), runs)
    if prepared.audios:
        runs = _placeholder_runs(ids, spec.id_of(spec.audio_token), len(prepared.audios))
        # Gemma 3n: the model fills all its fixed slots (tokens, then the padding embedding).
        slots = spec.audio.fixed_placeholders
        items += _item_reports("audio", encode_audio(prepared, bundle=bundle), runs, slots)
    if prepared.videos:
        encoded = _encode_videos(bundle, prepared)
        runs = _video_runs(ids, spec.id_of(spec.video_token), encoded.counts)
        items += _item_reports("video", encoded, runs)
    note, mm_norm, text_norm = _per_layer_note(bundle, ids)
    return EncoderReport(
        bundle.family,
        tuple(items),
        int(ids.shape[0]),
        note,
        mm_norm,
        text_norm,
        bundle.is_random_weights,
    )


def _positions(ids: torch.Tensor, token_id: int) -> list[int]:
    """Where ``token_id`` sits in ``ids`` (seq,)."""
    import torch

    return [int(p) for p in torch.nonzero(ids == token_id).reshape(-1)]


def _placeholder_runs(ids: torch.Tensor, token_id: int, n_items: int) -> list[list[int]]:
    """Placeholder positions per item: consecutive runs in prompt order (any beyond the
    last item join it; missing items get an empty run)."""
    runs: list[list[int]] = []
    for p in _positions(ids, token_id):
        if runs and p == runs[-1][-1] + 1 or len(runs) == n_items:
            runs[-1].append(p)
        else:
            runs.append([p])
    return runs + [[] for _ in range(n_items - len(runs))]


def _video_runs(ids: torch.Tensor, token_id: int, counts: list[int]) -> list[list[int]]:
    """A video's placeholders are split by timestamps: hand out each video its share of
    the positions in order (the last takes the rest)."""
    positions, start, runs = _positions(ids, token_id), 0, []
    for v, n in enumerate(counts):
        last = v == len(counts) - 1
        runs.append(positions[start:] if last else positions[start : start + n])
        start += n
    return runs


def _encode_videos(bundle: Bundle, prepared: PreparedInputs) -> EncodedItems:
    """The real vision tower (Unified: its embedder) on every video's sampled frames."""
    import torch

    model = bundle.require_model("inspect_multimodal")
    inputs = prepared.to_model(model)
    with torch.inference_mode():
        out = model.model.get_video_features(
            inputs["pixel_values_videos"],
            inputs["video_position_ids"],
            inputs["num_frames_per_video"],
        )
    feats = list(out.pooler_output)  # (tokens, hidden) per video
    return EncodedItems(feats, [None] * len(feats), [], [0] * len(feats))


def _item_reports(
    modality: str, encoded: EncodedItems, runs: list[list[int]], slots: int | None = None
) -> list[ItemReport]:
    """One report per item: its embeddings (all ``slots`` when the model fills a fixed
    number) against the placeholders of its run."""
    reports = []
    for i, (f, pos) in enumerate(zip(encoded.features, runs, strict=True)):
        mean, mx = _norms(f)
        valid = encoded.valid[i]
        reports.append(
            ItemReport(
                modality,
                i,
                tuple(f.shape),
                mean,
                mx,
                num_embeddings=slots if slots is not None else int(f.shape[0]),
                num_placeholders=len(pos),
                positions=tuple(pos),
                valid_mask=None if valid is None else tuple(bool(v) for v in valid),
                num_padding_soft_tokens=encoded.num_padding_soft_tokens[i],
            )
        )
    return reports


def _per_layer_note(bundle: Bundle, ids: torch.Tensor) -> tuple[str | None, ...]:
    """Gemma 4 E-models: what the per-layer embeddings hold at multimodal positions."""
    import torch

    model = bundle.require_model("inspect_multimodal")
    config = model.config.get_text_config()
    spec = bundle.spec
    if not spec.pads_placeholders_per_layer or not config.hidden_size_per_layer_input:
        return None, None, None
    mm = torch.zeros_like(ids, dtype=torch.bool)  # (seq,)
    for tok in spec.placeholder_tokens.values():
        mm |= ids == spec.id_of(tok)
    if not mm.any():
        return None, None, None
    pad = config.pad_token_id
    llm_ids = torch.where(mm, pad, ids)[None].to(model.device)  # (1, seq)
    with torch.inference_mode():
        per_layer = model.model.language_model.get_per_layer_inputs(llm_ids, None)[0]
    norms = per_layer.float().flatten(1).norm(dim=-1).cpu()  # (seq,)
    mm_norm = float(norms[mm].mean())
    text_norm = float(norms[~mm].mean()) if (~mm).any() else None
    note = (
        f"Per-layer embeddings: the {int(mm.sum())} multimodal positions are looked up as "
        f"<pad> (id {pad}), whose per-layer row has norm {mm_norm:.3g} (text positions: "
        f"{text_norm if text_norm is None else f'{text_norm:.3g}'}) — zeroed, so only the "
        "soft tokens carry the image/audio there."
    )
    return note, mm_norm, text_norm
