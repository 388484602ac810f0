"""A look inside the real encoders: the vision pooler's valid mask and embedding norms.

>>> import gemma_explore as ge
>>> pooled = ge.vision_pooling(ge.load("tiny-gemma4"), (300, 500))    # doctest: +SKIP
>>> pooled.num_valid == ge.plan_image((300, 500), family="gemma4").num_soft_tokens  # doctest: +SKIP
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .plans import ImagePlan, plan_image

__all__ = ["EncoderReport", "ItemReport", "PooledTokens", "inspect_multimodal", "vision_pooling"]


@dataclass(frozen=True)
class PooledTokens:
    """What the vision tower's pooler produced for one image."""

    family: str
    plan: ImagePlan = field(repr=False)  # the plan of the same image and budget
    slots: int  # pooled slots the pooler filled (Gemma 4: the budget; 3n: 256)
    valid: np.ndarray = field(repr=False)  # (slots,) bool: True = real soft token
    norms: np.ndarray = field(repr=False)  # (slots,) L2 norm of each slot's embedding
    grid: tuple[int, int]  # (rows, cols) the valid tokens form on the image

    @property
    def num_valid(self) -> int:
        return int(self.valid.sum())

    @property
    def agrees(self) -> bool:
        return self.num_valid == self.plan.num_soft_tokens


def vision_pooling(bundle: Any, image: Any, *, max_soft_tokens: int | None = None) -> PooledTokens:
    """Run the bundle's real vision tower and read its pooler's output.

    Gemma 4: the pooler averages 3×3 patches into ``budget`` slots and returns a mask of
    which slots hold a real cell (the rest are padding, stripped before the language
    model). Gemma 3n: MobileNet-V5 gives 16×16 = 256 tokens, all real.
    """
    import torch

    import gemma_explore as ge

    from .inference.hf import model_inputs

    pil = ge.load_image(image)
    plan = plan_image(pil, family=bundle.family, max_soft_tokens=max_soft_tokens)
    prepared = ge.prepare_inputs(bundle, "", images=[pil], max_soft_tokens=max_soft_tokens)
    inputs = model_inputs(bundle, prepared)
    inner = bundle.model.model
    with torch.inference_mode():
        if bundle.family == "gemma4":
            captured: dict[str, Any] = {}

            def hook(_module, _args, output):
                captured["hidden"], captured["mask"] = output  # (1, slots, d), (1, slots)

            handle = inner.vision_tower.pooler.register_forward_hook(hook)
            try:
                inner.get_image_features(inputs["pixel_values"], inputs["image_position_ids"])
            finally:
                handle.remove()
            valid = captured["mask"][0].cpu().numpy().astype(bool)  # (slots,)
            norms = captured["hidden"][0].float().norm(dim=-1).cpu().numpy()  # (slots,)
        else:
            out = inner.get_image_features(inputs["pixel_values"])
            feats = out.pooler_output[0]  # (256, hidden)
            valid = np.ones(feats.shape[0], dtype=bool)
            norms = feats.float().norm(dim=-1).cpu().numpy()
    return PooledTokens(
        family=bundle.family,
        plan=plan,
        slots=int(valid.shape[0]),
        valid=valid,
        norms=norms,
        grid=plan.pooled_grid,
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
    padding_slots: int = 0  # Gemma 3n audio: slots filled with the padding embedding
    truncated_tokens: int = 0  # encoder tokens that did not fit

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
            f"embeddings but the prompt has {self.num_placeholders} placeholders — the "
            f"situation behind vLLM's 'Attempted to assign {self.num_embeddings} multimodal "
            f"tokens to {self.num_placeholders} placeholders'. Let the processor expand the "
            "placeholders (do not edit them by hand) and use the same budget for both."
        )


@dataclass(frozen=True)
class EncoderReport:
    """What the real encoders made of one request, item by item."""

    family: str
    items: tuple[ItemReport, ...]
    num_tokens: int  # prompt length
    per_layer_note: str | None  # Gemma 4: per-layer embeddings at multimodal positions
    per_layer_mm_norm: float | None  # mean norm of per-layer inputs at multimodal positions
    per_layer_text_norm: float | None  # … and at text positions, for comparison

    @property
    def agrees(self) -> bool:
        return all(i.agrees for i in self.items)

    @property
    def mismatches(self) -> tuple[str, ...]:
        return tuple(i.message for i in self.items if not i.agrees)

    def __repr__(self) -> str:
        lines = [
            f"EncoderReport[{self.family}] {self.num_tokens} tokens: "
            + ("every item fits its placeholders" if self.agrees else "MISMATCH")
        ]
        for i in self.items:
            extra = f", {i.padding_slots} padding slots" if i.padding_slots else ""
            lines.append(
                f"  {i.message} (shape {i.embedding_shape}, mean norm {i.norm_mean:.2f}{extra})"
            )
        if self.per_layer_note:
            lines.append(f"  {self.per_layer_note}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html as _html

        rows = "".join(
            f"<tr style='background:{'' if i.agrees else '#fde0d0'}'><td>{i.modality} #{i.item}</td>"
            f"<td>{i.embedding_shape}</td><td>{i.num_embeddings}</td><td>{i.num_placeholders}</td>"
            f"<td>{i.norm_mean:.2f}</td><td>{i.padding_slots}</td></tr>"
            for i in self.items
        )
        note = f"<p>{_html.escape(self.per_layer_note)}</p>" if self.per_layer_note else ""
        mism = "".join(f"<li>{_html.escape(m)}</li>" for m in self.mismatches)
        return (
            f"<div><b>EncoderReport — {self.family}</b><table><tr><th>item</th><th>shape</th>"
            f"<th>embeddings</th><th>placeholders</th><th>mean norm</th><th>padding</th></tr>"
            f"{rows}</table>{note}<ul>{mism}</ul></div>"
        )


def _norms(x) -> tuple[float, float]:
    n = x.float().norm(dim=-1)
    return (float(n.mean()) if n.numel() else 0.0, float(n.max()) if n.numel() else 0.0)


def inspect_multimodal(
    bundle: Any, messages: Any, *, input_ids: Any = None, max_soft_tokens: int | None = None
) -> EncoderReport:
    """Run the towers on a request and check every item's embeddings against its placeholders.

    ``input_ids`` replaces the processor's ids (e.g. with a placeholder removed by hand) to
    see the mismatch report instead of the model's exception.

    >>> report = inspect_multimodal(ge.load("tiny-gemma4"), msgs)     # doctest: +SKIP
    """
    import torch

    import gemma_explore as ge

    from .inference.hf import model_inputs

    prepared = ge.prepare_inputs(bundle, messages, max_soft_tokens=max_soft_tokens)
    inputs = model_inputs(bundle, prepared)
    ids = torch.as_tensor(input_ids if input_ids is not None else inputs["input_ids"][0])
    ids = ids.reshape(-1)
    spec = bundle.spec
    inner = bundle.model.model
    items: list[ItemReport] = []

    def positions_of(token: str) -> list[int]:
        return [int(p) for p in torch.nonzero(ids == spec.id_of(token)).reshape(-1)]

    def split_positions(token: str, counts: list[int]) -> list[list[int]]:
        """Placeholder positions per item: consecutive runs in prompt order."""
        pos = positions_of(token)
        runs, current = [], []
        for p in pos:
            if current and p != current[-1] + 1 and len(runs) < len(counts) - 1:
                runs.append(current)
                current = []
            current.append(p)
        runs.append(current)
        return runs + [[] for _ in range(len(counts) - len(runs))]

    with torch.inference_mode():
        if prepared.images:
            if bundle.family == "gemma4":
                masks: list = []
                hook = inner.vision_tower.pooler.register_forward_hook(
                    lambda _m, _a, out: masks.append(out[1].cpu())
                )
                try:
                    out = inner.get_image_features(
                        inputs["pixel_values"], inputs["image_position_ids"]
                    )
                finally:
                    hook.remove()
                feats = list(out.pooler_output)  # one (tokens, hidden) per image
                valid = (
                    [tuple(bool(v) for v in m) for m in masks[0]] if masks else [None] * len(feats)
                )
            else:
                out = inner.get_image_features(inputs["pixel_values"])
                feats = list(out.pooler_output)  # (256, hidden) each
                valid = [None] * len(feats)
            runs = split_positions(spec.image_token, [f.shape[0] for f in feats])
            for i, (f, pos) in enumerate(zip(feats, runs, strict=False)):
                mean, mx = _norms(f)
                items.append(
                    ItemReport(
                        "image",
                        i,
                        tuple(f.shape),
                        mean,
                        mx,
                        int(f.shape[0]),
                        len(pos),
                        tuple(pos),
                        valid[i],
                    )
                )
        if prepared.audios:
            if bundle.family == "gemma4":
                out = inner.get_audio_features(
                    inputs["input_features"], inputs["input_features_mask"]
                )
                mask = out.attention_mask  # (clips, T) True = real
                feats = [out.pooler_output[c][mask[c]] for c in range(mask.shape[0])]
                vmask = [tuple(bool(v) for v in mask[c]) for c in range(mask.shape[0])]
                pads = [0] * len(feats)
            else:
                out = inner.get_audio_features(
                    inputs["input_features"], ~inputs["input_features_mask"]
                )
                pad_mask = out.audio_mel_mask  # (clips, T) True = padding
                real = (~pad_mask).sum(dim=1)
                slots = bundle.model.config.audio_soft_tokens_per_image
                # The model fills padding and the rest of the 188 slots with one embedding.
                feats = [out.pooler_output[c] for c in range(pad_mask.shape[0])]
                vmask = [tuple(bool(v) for v in ~pad_mask[c]) for c in range(pad_mask.shape[0])]
                pads = [int(slots - r) for r in real]
            counts = [f.shape[0] for f in feats]
            runs = split_positions(spec.audio_token, counts)
            for c, (f, pos) in enumerate(zip(feats, runs, strict=False)):
                mean, mx = _norms(f)
                n = (
                    int(f.shape[0])
                    if bundle.family == "gemma4"
                    else (bundle.model.config.audio_soft_tokens_per_image)
                )
                items.append(
                    ItemReport(
                        "audio",
                        c,
                        tuple(f.shape),
                        mean,
                        mx,
                        n,
                        len(pos),
                        tuple(pos),
                        vmask[c],
                        padding_slots=pads[c],
                    )
                )
        if prepared.videos:
            out = inner.get_video_features(
                inputs["pixel_values_videos"],
                inputs["video_position_ids"],
                inputs["num_frames_per_video"],
            )
            feats = list(out.pooler_output)
            # A video's placeholders are split by timestamps: gather all of its runs.
            all_pos = positions_of(spec.video_token)
            start = 0
            for v, f in enumerate(feats):
                pos = all_pos[start : start + f.shape[0]] if v < len(feats) - 1 else all_pos[start:]
                start += f.shape[0]
                mean, mx = _norms(f)
                items.append(
                    ItemReport(
                        "video", v, tuple(f.shape), mean, mx, int(f.shape[0]), len(pos), tuple(pos)
                    )
                )
        note = mm_norm = text_norm = None
        if (
            bundle.family == "gemma4"
            and bundle.model.config.get_text_config().hidden_size_per_layer_input
        ):
            lm = inner.language_model
            mm = torch.zeros_like(ids, dtype=torch.bool)
            for tok in (spec.image_token, spec.audio_token, spec.video_token):
                mm |= ids == spec.id_of(tok)
            pad = bundle.model.config.text_config.pad_token_id
            llm_ids = torch.where(mm, pad, ids)[None].to(bundle.model.device)
            per_layer = lm.get_per_layer_inputs(llm_ids, None)[0]  # (seq, layers, dim)
            norms = per_layer.float().flatten(1).norm(dim=-1).cpu()
            mm_norm = float(norms[mm].mean()) if mm.any() else None
            text_norm = float(norms[~mm].mean()) if (~mm).any() else None
            if mm_norm is not None:
                note = (
                    f"Per-layer embeddings: the {int(mm.sum())} multimodal positions are looked "
                    f"up as <pad> (id {pad}), whose per-layer row has norm {mm_norm:.3g} "
                    f"(text positions: {text_norm:.3g}) — zeroed, so only the soft tokens "
                    "carry the image/audio there."
                )
    return EncoderReport(bundle.family, tuple(items), int(ids.shape[0]), note, mm_norm, text_norm)
