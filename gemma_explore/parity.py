"""ParityReport: our plan, transformers, vLLM's arithmetic and vLLM's processor, side by side.

vLLM does not run transformers' token arithmetic when it plans placeholders: its model
files (``gemma3n_mm.py``, ``gemma4_mm.py``) compute counts their own way. This module
re-derives that arithmetic *in our own words* so it can be checked without vLLM, and,
when vLLM is installed, also runs vLLM's real multimodal processor on a saved copy of
the bundle.

How vLLM counts, as read from its Gemma 4 model file:

* **images** — scale the image so ``(h/16)·(w/16)`` patches equal the budget × 9, round
  each side *down* to a multiple of 48 px but never below 48, count patches, divide by 9,
  and (since the fix for the 3×900 report) clamp to the budget. transformers instead
  gives a side that rounds to zero 48 px and the other ``floor(long/short)`` cells —
  the two can resize differently and, before the clamp, count differently.
* **audio** — frames from the *unpadded* length, ``(n + 160 − 321) // 160 + 1``, then
  two ``ceil(t/2)`` convolutions, capped at 750. transformers counts the frames of its
  mask after padding to 128 samples.
* **video** — each sampled frame counted like an image at budget 70, timestamps
  ``index / fps`` written ``mm:ss``.
* **Gemma 3n** — always 256 image and 188 audio placeholders; the clip's real encoder
  output is padded or cut to 188.

>>> from gemma_explore import check_parity
>>> check_parity((3, 900), family="gemma4").agree                # doctest: +SKIP
True
"""

from __future__ import annotations

import html
import math
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .families import get_family
from .plans import (
    _conv_out,
    format_timestamp,
    plan_audio,
    plan_image,
    plan_video,
    sample_frame_indices,
)

__all__ = [
    "ParityReport",
    "ParityRow",
    "check_parity",
    "vllm_audio_tokens",
    "vllm_image_tokens",
    "vllm_available",
]


# ----------------------------------------------------------- vLLM's arithmetic, re-derived


def vllm_image_size(height: int, width: int, *, max_soft_tokens: int) -> tuple[int, int]:
    """The (h, w) vLLM's Gemma 4 count assumes: area scaled to the patch budget, each
    side floored to a multiple of 48 px with a minimum of one 48 px cell."""
    patch, k = 16, 3
    cell = patch * k
    max_patches = max_soft_tokens * k * k
    scale = math.sqrt(max_patches / ((height / patch) * (width / patch)))
    th = max(cell, int(math.floor(height * scale / cell)) * cell)
    tw = max(cell, int(math.floor(width * scale / cell)) * cell)
    return th, tw


def vllm_image_tokens(height: int, width: int, *, max_soft_tokens: int, clamp: bool = True) -> int:
    """Soft tokens vLLM's Gemma 4 reserves for an image. ``clamp=False`` gives the count
    before the fix that caps it at the budget (the "280 tokens for 289 placeholders" bug)."""
    th, tw = vllm_image_size(height, width, max_soft_tokens=max_soft_tokens)
    n = (th // 16) * (tw // 16) // 9
    return min(n, max_soft_tokens) if clamp else n


def vllm_audio_tokens(num_samples: int, *, family: str = "gemma4") -> int:
    """Audio placeholders vLLM reserves: Gemma 3n always 188; Gemma 4 from the unpadded
    length with semicausal padding and two stride-2 convolutions, capped at 750."""
    spec = get_family(family)
    if spec.name == "gemma3n":
        return spec.audio.fixed_placeholders
    fl, hop = spec.audio.frame_length, spec.audio.hop_length
    frames = (num_samples + fl // 2 - (fl + 1)) // hop + 1
    if frames <= 0:
        return 0
    return min(_conv_out(_conv_out(frames)), spec.audio.max_tokens)


# ----------------------------------------------------------------------- the report


@dataclass(frozen=True)
class ParityRow:
    """One step, four views. ``None`` means that side does not state this number."""

    step: str
    ours: Any
    transformers: Any
    vllm_arithmetic: Any
    vllm_processor: Any = None

    @property
    def values(self) -> list[Any]:
        return [
            v
            for v in (self.ours, self.transformers, self.vllm_arithmetic, self.vllm_processor)
            if v is not None
        ]

    @property
    def agree(self) -> bool:
        vals = self.values
        return all(v == vals[0] for v in vals)


@dataclass(frozen=True)
class ParityReport:
    """Where the four views agree, and the first step where they part."""

    kind: str  # "image", "audio" or "video"
    family: str
    description: str  # e.g. "3×900 image at budget 280"
    rows: tuple[ParityRow, ...]
    encoder_follows: str  # which side the model's encoder output matches, and why
    encoder_count: int | None = None  # embeddings the real encoder produced (when run)
    vllm_ran: bool = False  # vLLM's own processor was run
    notes: tuple[str, ...] = field(default=())

    @property
    def agree(self) -> bool:
        return all(r.agree for r in self.rows)

    @property
    def disagreements(self) -> tuple[str, ...]:
        out = []
        for r in self.rows:
            if not r.agree:
                sides = {
                    "ours": r.ours,
                    "transformers": r.transformers,
                    "vLLM arithmetic": r.vllm_arithmetic,
                    "vLLM processor": r.vllm_processor,
                }
                shown = ", ".join(f"{k} {v}" for k, v in sides.items() if v is not None)
                out.append(f"{r.step}: {shown}")
        return tuple(out)

    @property
    def first_difference(self) -> str | None:
        d = self.disagreements
        return d[0].split(":")[0] if d else None

    def _header(self) -> list[str]:
        return ["step", "ours", "transformers", "vLLM arithmetic", "vLLM processor"]

    def __repr__(self) -> str:
        lines = [
            f"ParityReport[{self.family} {self.kind}] {self.description}: "
            + ("all agree" if self.agree else f"part at '{self.first_difference}'")
        ]
        for r in self.rows:
            mark = "✓" if r.agree else "✗"
            cells = [
                r.ours,
                r.transformers,
                r.vllm_arithmetic,
                "—" if r.vllm_processor is None else r.vllm_processor,
            ]
            lines.append(f"  {mark} {r.step:<22} " + " | ".join(f"{c!s:>12}" for c in cells))
        lines.append(f"  encoder: {self.encoder_follows}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in self._header())
        body = ""
        for r in self.rows:
            style = "" if r.agree else " style='background:#fde0d0'"
            cells = [
                r.step,
                r.ours,
                r.transformers,
                r.vllm_arithmetic,
                "—" if r.vllm_processor is None else r.vllm_processor,
            ]
            body += (
                f"<tr{style}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>"
            )
        verdict = (
            "all agree ✓" if self.agree else f"part at <b>{html.escape(self.first_difference)}</b>"
        )
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return (
            f"<div><b>Parity — {html.escape(self.description)}</b>: {verdict}"
            f"<table><tr>{head}</tr>{body}</table>"
            f"<p>Encoder: {html.escape(self.encoder_follows)}</p><ul>{notes}</ul></div>"
        )


# ------------------------------------------------------------------ vLLM's processor


def vllm_available() -> bool:
    """True when vLLM's multimodal processor can be imported."""
    try:
        import vllm.multimodal  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return False
    return True


_VLLM_PROCESSORS: dict[str, Any] = {}


def vllm_processor_for(bundle: Any) -> Any:
    """vLLM's real multimodal processor for ``bundle`` (saved to a folder once)."""
    key = bundle.name
    if key in _VLLM_PROCESSORS:
        return _VLLM_PROCESSORS[key]
    from vllm.config import ModelConfig
    from vllm.multimodal import MULTIMODAL_REGISTRY

    folder = bundle.name
    if not os.path.isdir(folder):
        folder = tempfile.mkdtemp(prefix="gemma_explore_vllm_")
        bundle.save_pretrained(folder)
    config = ModelConfig(model=folder, tokenizer=folder, dtype="float32")
    proc = MULTIMODAL_REGISTRY.create_processor(config)
    _VLLM_PROCESSORS[key] = proc
    return proc


def vllm_process(
    bundle: Any, prompt_text: str, mm_data: dict[str, Any], mm_kwargs: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Run vLLM's processor: returns ``{"prompt_token_ids", "placeholders"}`` where
    placeholders maps modality → [(offset, length, num_embeds)]."""
    from vllm.multimodal.processing.context import TimingContext
    from vllm.multimodal.processing.inputs import ProcessorInputs

    proc = vllm_processor_for(bundle)
    tok = proc.info.ctx.tokenizer
    # The chat template already wrote <bos>: no special tokens again.
    ids = tok.encode(prompt_text, add_special_tokens=False)
    items = proc.info.parse_mm_data(mm_data)
    out = proc.apply(
        ProcessorInputs(ids, items, hf_processor_mm_kwargs=mm_kwargs or {}),
        TimingContext(enabled=False),
    )
    ranges = {}
    for modality, lst in out["mm_placeholders"].items():
        ranges[modality] = [
            (r.offset, r.length, int(r.is_embed.sum()) if r.is_embed is not None else r.length)
            for r in lst
        ]
    return {"prompt_token_ids": list(out["prompt_token_ids"]), "placeholders": ranges}


def vllm_mm_data(prepared: Any) -> dict[str, Any]:
    """The ``multi_modal_data`` dict vLLM takes for a prepared request."""
    data: dict[str, Any] = {}
    if prepared.images:
        data["image"] = list(prepared.images)
    if prepared.audios:
        data["audio"] = [np.asarray(a, dtype=np.float32) for a in prepared.audios]
    if prepared.videos:
        vids = []
        for v, idx in zip(prepared.videos, prepared.video_frame_indices, strict=True):
            meta = {
                "fps": v.fps,
                "total_num_frames": v.num_frames,
                "frames_indices": list(idx),
                "duration": v.num_frames / v.fps,
                "video_backend": "opencv",
            }
            vids.append((v.frames[list(idx)], meta))
        data["video"] = vids
    return data


# --------------------------------------------------------------------- check_parity


def check_parity(
    item: Any,
    *,
    family: str,
    max_soft_tokens: int | None = None,
    fps: float | None = None,
    sampling_rate: int = 16_000,
    bundle: Any = None,
    use_vllm: bool | None = None,
    run_encoder: bool | None = None,
) -> ParityReport:
    """Put our plan, transformers, vLLM's arithmetic and vLLM's processor side by side.

    ``item`` is an image (or (h, w) pair), a waveform / sample count, or a video array
    (give ``fps``). ``bundle`` supplies the real processor (the tiny default of the
    family when omitted). ``run_encoder`` also runs the real encoder (default: when a
    bundle is given). ``use_vllm`` runs vLLM's processor (default: when installed).
    """
    import gemma_explore as ge

    spec = get_family(family)
    run_enc = bundle is not None if run_encoder is None else bool(run_encoder)
    if bundle is None:
        bundle = ge.load(f"tiny-{spec.name}")
    if use_vllm is None:
        use_vllm = vllm_available()
    kind = _kind_of(item, fps)
    if kind == "image":
        return _image_parity(item, spec, bundle, max_soft_tokens, use_vllm, run_enc)
    if kind == "audio":
        return _audio_parity(item, spec, bundle, sampling_rate, use_vllm, run_enc)
    return _video_parity(item, spec, bundle, fps, use_vllm)


def _kind_of(item: Any, fps: float | None) -> str:
    if fps is not None:
        return "video"
    if isinstance(item, int | np.integer):
        return "audio"
    if isinstance(item, tuple) and len(item) == 2 and all(isinstance(v, int) for v in item):
        return "image"
    if hasattr(item, "getbands"):
        return "image"
    arr = np.asarray(item) if not isinstance(item, tuple) else np.asarray(item[0])
    if arr.ndim == 1 or (isinstance(item, tuple) and len(item) == 2):
        return "audio"
    if arr.ndim == 4:
        return "video"
    return "image"


def _image_parity(item, spec, bundle, budget, use_vllm, run_encoder) -> ParityReport:
    import gemma_explore as ge

    plan = plan_image(item, family=spec.name, max_soft_tokens=budget)
    h, w = plan.original_size
    image = ge.load_image(item if not isinstance(item, tuple) else (h, w))
    prepared = ge.prepare_inputs(bundle, "", images=[image], max_soft_tokens=budget)
    batch = prepared.batch
    hf_ids = prepared.input_ids.count(spec.id_of(spec.image_token))
    rows = []
    notes = []
    if spec.name == "gemma4":
        b = plan.max_soft_tokens
        pos = batch["image_position_ids"][0]
        real = (pos != -1).all(dim=-1)
        hf_grid = (int(pos[real][:, 1].max()) + 1, int(pos[real][:, 0].max()) + 1)
        hf_size = (hf_grid[0] * 16, hf_grid[1] * 16)
        hf_soft = int(real.sum()) // 9
        v_size = vllm_image_size(h, w, max_soft_tokens=b)
        v_tokens = vllm_image_tokens(h, w, max_soft_tokens=b)
        v_old = vllm_image_tokens(h, w, max_soft_tokens=b, clamp=False)
        rows += [
            ParityRow("resized size (h×w)", _hw(plan.resized_size), _hw(hf_size), _hw(v_size)),
            ParityRow(
                "patches", plan.num_patches, int(real.sum()), (v_size[0] // 16) * (v_size[1] // 16)
            ),
            ParityRow("soft tokens", plan.num_soft_tokens, hf_soft, v_tokens),
        ]
        if v_old != v_tokens:
            notes.append(
                f"Before vLLM clamped to the budget it reserved {v_old} placeholders "
                f"here for {hf_soft} embeddings: the 'Attempted to assign' error."
            )
        if v_size != tuple(hf_size):
            notes.append(
                "vLLM's assumed resize differs from what transformers does; only the "
                "clamped count keeps them in step."
            )
    else:
        rows.append(
            ParityRow(
                "resized size (h×w)",
                _hw(plan.resized_size),
                _hw(tuple(batch["pixel_values"].shape[-2:])),
                "768×768",
            )
        )
        rows.append(ParityRow("soft tokens", plan.num_soft_tokens, 256, 256))
    v_proc = None
    if use_vllm:
        out = vllm_process(
            bundle,
            prepared.text,
            vllm_mm_data(prepared),
            {"max_soft_tokens": budget} if budget else None,
        )
        v_proc = out["placeholders"]["image"][0][2]
    rows.append(
        ParityRow(
            "prompt placeholders", plan.num_soft_tokens, hf_ids, rows[-1].vllm_arithmetic, v_proc
        )
    )
    encoder_count = _vision_encoder_count(bundle, prepared) if run_encoder else None
    follows = (
        "the encoder sees transformers' pixel_values, so it yields transformers' "
        f"count ({rows[-2].transformers})"
    )
    if encoder_count is not None:
        follows += f"; the real vision tower produced {encoder_count} embeddings"
    desc = f"{h}×{w} image" + (f" at budget {plan.max_soft_tokens}" if plan.max_soft_tokens else "")
    return ParityReport(
        "image",
        spec.name,
        desc,
        tuple(rows),
        follows,
        encoder_count,
        v_proc is not None,
        tuple(notes),
    )


def _audio_parity(item, spec, bundle, sampling_rate, use_vllm, run_encoder) -> ParityReport:
    import gemma_explore as ge

    if isinstance(item, int | np.integer):
        wave = np.zeros(int(item), dtype=np.float32)
        if wave.size:
            wave[::97] = 0.01  # not silent, so nothing special-cases it
        rate = sampling_rate
    else:
        wave, _ = ge.load_audio(item, sampling_rate=sampling_rate)  # mono, 16 kHz
        rate = 16_000
    plan = plan_audio(wave, family=spec.name, sampling_rate=rate)
    prepared = ge.prepare_inputs(bundle, "", audios=[(np.asarray(wave), rate)])
    batch = prepared.batch
    hf_ids = prepared.input_ids.count(spec.id_of(spec.audio_token))
    frames = int(batch["input_features"].shape[1])
    valid = int(batch["input_features_mask"][0].sum())
    n = plan.num_samples
    v_tokens = vllm_audio_tokens(n, family=spec.name)
    v_frames = None
    if spec.name == "gemma4":
        fl, hop = spec.audio.frame_length, spec.audio.hop_length
        v_frames = max((min(n, spec.audio.max_samples) + fl // 2 - (fl + 1)) // hop + 1, 0)
    rows = [
        ParityRow("mel frames (valid)", plan.num_valid_frames, valid, v_frames),
        ParityRow("mel frames (all)", plan.num_mel_frames, frames, None),
    ]
    notes = []
    if spec.name == "gemma3n":
        rows.append(ParityRow("placeholders", plan.num_placeholders, hf_ids, v_tokens))
    else:
        rows.append(ParityRow("audio tokens", plan.num_placeholders, hf_ids, v_tokens))
    v_proc = None
    if use_vllm:
        out = vllm_process(bundle, prepared.text, vllm_mm_data(prepared))
        v_proc = out["placeholders"]["audio"][0][2]
        rows[-1] = ParityRow(
            rows[-1].step, rows[-1].ours, rows[-1].transformers, rows[-1].vllm_arithmetic, v_proc
        )
    encoder_count = _audio_encoder_count(bundle, prepared) if run_encoder else None
    if spec.name == "gemma3n":
        if plan.padding_slots:
            fate = (
                f"the model fills the other {plan.padding_slots} of the "
                f"{plan.num_placeholders} slots with the padding embedding"
            )
        elif plan.dropped_tokens:
            fate = f"the model keeps the first {plan.num_placeholders}"
        else:
            fate = f"exactly the {plan.num_placeholders} slots"
        follows = (
            f"the encoder gives {plan.num_encoder_tokens} real tokens (one per 160 ms); " + fate
        )
        if plan.dropped_tokens:
            notes.append(f"{plan.dropped_tokens} encoder tokens do not fit the 188 slots.")
    else:
        follows = (
            "the audio tower masks by transformers' input_features_mask, so it yields "
            f"transformers' count ({hf_ids})"
        )
    if encoder_count is not None:
        follows += f"; the real audio tower produced {encoder_count} valid tokens"
    desc = f"{plan.duration_s:.3f} s clip ({n} samples)"
    return ParityReport(
        "audio",
        spec.name,
        desc,
        tuple(rows),
        follows,
        encoder_count,
        v_proc is not None,
        tuple(notes),
    )


def _video_parity(item, spec, bundle, fps, use_vllm) -> ParityReport:
    import gemma_explore as ge

    video = ge.load_video(item, fps=fps)
    plan = plan_video(video.frames, fps=video.fps, family=spec.name)
    prepared = ge.prepare_inputs(
        bundle, [{"role": "user", "content": [{"type": "video", "video": video}]}]
    )
    ids = prepared.input_ids
    vid = spec.id_of(spec.video_token)
    hf_total = ids.count(vid)
    idx = sample_frame_indices(video.num_frames, max_frames=spec.image.max_video_frames)
    stamps = [format_timestamp(i / video.fps) for i in idx]
    h, w = video.frames.shape[1:3]
    v_per_frame = vllm_image_tokens(h, w, max_soft_tokens=spec.image.video_budget)
    rows = [
        ParityRow(
            "sampled frames",
            len(plan.frame_indices),
            len(prepared.video_frame_indices[0]),
            len(idx),
        ),
        ParityRow(
            "timestamps",
            " ".join(plan.timestamps),
            " ".join(_hf_timestamps(bundle, ids)),
            " ".join(stamps),
        ),
        ParityRow(
            "tokens per frame",
            plan.soft_tokens_per_frame,
            hf_total // max(len(idx), 1),
            v_per_frame,
        ),
    ]
    v_proc = None
    if use_vllm:
        out = vllm_process(bundle, prepared.text, vllm_mm_data(prepared))
        v_proc = out["placeholders"]["video"][0][2]
    rows.append(
        ParityRow(
            "video placeholders", plan.total_soft_tokens, hf_total, v_per_frame * len(idx), v_proc
        )
    )
    follows = (
        "each frame goes through the vision tower like an image at budget 70; the "
        "encoder follows transformers' pixel_values_videos"
    )
    desc = f"{video.num_frames} frames at {video.fps:g} fps ({h}×{w})"
    return ParityReport(
        "video", spec.name, desc, tuple(rows), follows, None, v_proc is not None, ()
    )


def _hf_timestamps(bundle, ids) -> list[str]:
    tokens = bundle.processor.tokenizer.convert_ids_to_tokens(ids)
    text = "".join(t.replace("▁", " ") for t in tokens)
    import re

    return re.findall(r"(\d\d:\d\d) <\|image>", text)


def _hw(size) -> str:
    return f"{int(size[0])}×{int(size[1])}"


def _vision_encoder_count(bundle, prepared) -> int | None:
    """Embeddings the real vision tower keeps (Gemma 4: valid pooled cells)."""
    import torch

    from .inference.hf import model_inputs

    inputs = model_inputs(bundle, prepared)
    inner = bundle.model.model
    with torch.inference_mode():
        if bundle.family == "gemma4":
            out = inner.get_image_features(inputs["pixel_values"], inputs["image_position_ids"])
            return int(sum(t.shape[0] for t in out.pooler_output))
        out = inner.get_image_features(inputs["pixel_values"])
        return int(out.pooler_output.shape[1])


def _audio_encoder_count(bundle, prepared) -> int | None:
    """Valid tokens the real audio tower produces for the first clip."""
    import torch

    from .inference.hf import model_inputs

    inputs = model_inputs(bundle, prepared)
    inner = bundle.model.model
    with torch.inference_mode():
        if bundle.family == "gemma3n":
            out = inner.get_audio_features(inputs["input_features"], ~inputs["input_features_mask"])
            return int((~out.audio_mel_mask[0]).sum())
        out = inner.get_audio_features(inputs["input_features"], inputs["input_features_mask"])
        mask = getattr(out, "attention_mask", None)
        if mask is None:
            return None
        return int(mask[0].sum())
