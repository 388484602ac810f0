"""ParityReport: our plan, transformers, vLLM's arithmetic and vLLM's processor, side by side.

One check per modality: :func:`check_image_parity`, :func:`check_audio_parity` and
:func:`check_video_parity` (:func:`check_parity` dispatches on an explicit ``kind=``).
Each puts four views of the same item in one table:

* **ours**: the plan (:mod:`gemma_explore.plans`), pure arithmetic;
* **transformers**: what the bundle's real processor produced;
* **vLLM arithmetic**: vLLM's own counting, re-derived in :mod:`gemma_explore.plans.vllm`;
* **vLLM processor**: vLLM's real multimodal processor, when vLLM is installed
  (:mod:`gemma_explore.engines.vllm_processor`);

and says which side the model's encoder follows (running it when asked).

>>> from gemma_explore import check_image_parity
>>> check_image_parity((640, 480), family="gemma4").agree
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gemma_explore.engines.load import load
from gemma_explore.engines.vllm_processor import vllm_available, vllm_mm_data, vllm_process
from gemma_explore.facts.families import AUDIO_SAMPLING_RATE, DEFAULT_FAMILY, FamilySpec, get_family
from gemma_explore.inside.towers import encode, encode_audio, encode_images
from gemma_explore.media.loaders import sample_frame_indices
from gemma_explore.models.tiny import tiny_name
from gemma_explore.plans.audio import AudioPlan
from gemma_explore.plans.image import ImagePlan
from gemma_explore.plans.video import format_timestamp
from gemma_explore.plans.vllm import (
    VLLM_MERGE_ERROR,
    vllm_audio_frames,
    vllm_audio_tokens,
    vllm_image_size,
    vllm_image_tokens,
    vllm_reexpand,
)
from gemma_explore.processing.analysis import Analysis, analysis_of
from gemma_explore.processing.inputs import PreparedInputs
from gemma_explore.sizes import size_label
from gemma_explore.tables import ShownAsTable, Table

if TYPE_CHECKING:
    from gemma_explore.models.bundle import Bundle

__all__ = [
    "ParityReport",
    "ParityRow",
    "VllmReplay",
    "check_audio_parity",
    "check_image_parity",
    "check_parity",
    "check_video_parity",
    "vllm_merge_error",
    "vllm_replay",
]

SIDES = ("ours", "transformers", "vLLM arithmetic", "vLLM processor")


@dataclass(frozen=True)
class ParityRow:
    """One step, four views. ``None`` means that side does not state this number."""

    step: str
    ours: Any
    transformers: Any
    vllm_arithmetic: Any
    vllm_processor: Any = None

    @property
    def sides(self) -> tuple[Any, ...]:
        return (self.ours, self.transformers, self.vllm_arithmetic, self.vllm_processor)

    @property
    def values(self) -> list[Any]:
        return [v for v in self.sides if v is not None]

    @property
    def agree(self) -> bool:
        vals = self.values
        return all(v == vals[0] for v in vals)


@dataclass(frozen=True)
class ParityReport(ShownAsTable):
    """Where the four views agree, and the first step where they part."""

    kind: str  # "image", "audio" or "video"
    spec: FamilySpec = field(repr=False)  # the family whose four views these are
    description: str  # e.g. "3×900 image at budget 280"
    rows: tuple[ParityRow, ...]
    encoder_follows: str  # which side the model's encoder output matches, and why
    encoder_count: int | None = None  # embeddings the real encoder produced (when run)
    vllm_ran: bool = False  # vLLM's own processor was run
    notes: tuple[str, ...] = field(default=())
    # Encoder/embedder output rows vLLM's runner slices away because its prompt has no
    # placeholder for them (Unified audio); empty when every row lands.
    vllm_dropped_rows: tuple[int, ...] = ()

    @property
    def family(self) -> str:
        """The family's name ("gemma3n", "gemma4", "gemma4_unified"), read off ``spec``."""
        return self.spec.name

    @property
    def agree(self) -> bool:
        return all(r.agree for r in self.rows)

    @property
    def disagreements(self) -> tuple[str, ...]:
        out = []
        for r in self.rows:
            if not r.agree:
                shown = ", ".join(
                    f"{k} {v}" for k, v in zip(SIDES, r.sides, strict=False) if v is not None
                )
                out.append(f"{r.step}: {shown}")
        return tuple(out)

    @property
    def first_difference(self) -> str | None:
        d = self.disagreements
        return d[0].split(":")[0] if d else None

    def table(self) -> Table:
        verdict = "all agree" if self.agree else f"part at '{self.first_difference}'"
        return Table(
            ("step", *SIDES),
            tuple((r.step, *r.sides) for r in self.rows),
            title=f"Parity — {self.family} {self.kind}, {self.description}: {verdict}",
            flagged=tuple(i for i, r in enumerate(self.rows) if not r.agree),
            notes=(f"encoder: {self.encoder_follows}", *self.notes),
        )

    def __repr__(self) -> str:
        return self.table().text()


def _analysis(
    subject: Any, modality: str, family: Any, bundle: Bundle | None, **options: Any
) -> Analysis:
    """The subject's analysis: itself, or analysed now with the bundle the check runs on."""
    if isinstance(subject, Analysis):
        if family is not None and get_family(family) is not subject.spec:
            raise ValueError(f"family={family!r} but the analysis is {subject.spec.name!r}.")
        return analysis_of(subject, modality=modality, bundle=None)
    _spec, bundle = _bundle_for(family, bundle)
    return analysis_of(subject, modality=modality, bundle=bundle, **options)


def _bundle_for(
    family: str | FamilySpec | Bundle | None, bundle: Bundle | None
) -> tuple[FamilySpec, Bundle]:
    """The family and the bundle a check runs on: the bundle's family, else ``family``'s
    tiny bundle (``DEFAULT_FAMILY`` when neither is given)."""
    if family is None:
        family = bundle.spec if bundle is not None else DEFAULT_FAMILY
    spec = get_family(getattr(family, "spec", family))
    if bundle is not None and bundle.spec is not spec:
        raise ValueError(f"family={spec.name!r} but the bundle is {bundle.family!r}; drop one.")
    return spec, bundle if bundle is not None else load(tiny_name(spec.name))


def _hw(size: tuple[int, int]) -> str:
    return size_label((int(size[0]), int(size[1])))


def check_image_parity(
    image: Any,
    *,
    family: str | FamilySpec | Bundle | None = None,
    bundle: Bundle | None = None,
    max_soft_tokens: int | None = None,
    use_vllm: bool | None = None,
    run_encoder: bool | None = None,
) -> ParityReport:
    """Our plan, transformers, vLLM's arithmetic and processor for one image.

    ``image`` is any image input, a ``(height, width)`` pair, or an :class:`Analysis`
    (its plan, processor run and tower run are read, not made again). ``bundle``
    supplies the real processor (the family's tiny default when omitted); ``run_encoder``
    also runs the vision tower (default: when a bundle or an analysis is given; an
    analysis that holds the tower's run gives its count for free); ``use_vllm`` runs
    vLLM's processor (default: when installed).
    """
    given = bundle is not None or isinstance(image, Analysis)
    run_encoder = given if run_encoder is None else run_encoder
    analysis = _analysis(image, "image", family, bundle, max_soft_tokens=max_soft_tokens)
    spec, bundle, plan, prepared = analysis.spec, analysis.model, analysis.plan, analysis.prepared
    use_vllm = vllm_available() if use_vllm is None else use_vllm
    if spec.image.budgets:
        rows, notes = _budgeted_image_rows(spec, bundle, plan, prepared)
    else:
        rows, notes = _fixed_image_rows(spec, plan, prepared), []
    v_proc = _vllm_placeholders(bundle, prepared, "image", request=True) if use_vllm else None
    hf_ids = prepared.input_ids.count(spec.id_of(spec.image_token))
    v_arith = rows[-1].vllm_arithmetic
    rows.append(ParityRow("prompt placeholders", plan.num_soft_tokens, hf_ids, v_arith, v_proc))
    encoder_count = encode(analysis).encoded.counts[0] if run_encoder else None
    follows = _image_encoder_follows(spec, rows[-2].transformers, encoder_count)
    budget = f" at budget {plan.max_soft_tokens}" if plan.max_soft_tokens else ""
    return ParityReport(
        "image",
        spec,
        f"{size_label(plan.original_size)} image{budget}",
        tuple(rows),
        follows,
        encoder_count,
        v_proc is not None,
        tuple(notes),
    )


def _hf_image_counts(spec: FamilySpec, batch: Any) -> tuple[tuple[int, int], int, int]:
    """transformers' resized size, patches and soft tokens, read off ``image_position_ids``.

    Gemma 4: one row per 16 px patch, budget × 9 rows. Unified: one row per merged 48 px
    block (6912 raw values), budget rows. Position (x, y) counts the rows' units.
    """
    img = spec.image
    unit = img.cell_px if spec.encoder_free else img.patch_size
    per_row = img.patches_per_token if spec.encoder_free else 1  # patches in one row
    pos = batch["image_position_ids"][0]  # (rows, 2) as (x, y); (-1, -1) = padding
    real = (pos != -1).all(dim=-1)  # (rows,)
    grid = (int(pos[real][:, 1].max()) + 1, int(pos[real][:, 0].max()) + 1)
    patches = int(real.sum()) * per_row
    return (grid[0] * unit, grid[1] * unit), patches, patches // img.patches_per_token


def _budgeted_image_rows(
    spec: FamilySpec, bundle: Bundle, plan: ImagePlan, prepared: PreparedInputs
) -> tuple[list[ParityRow], list[str]]:
    """A budgeted family's rows (budget, resized size, patches, soft tokens) and the notes
    that say where vLLM's arithmetic parts from transformers."""
    (h, w), img = plan.original_size, spec.image
    hf_size, hf_patches, hf_soft = _hf_image_counts(spec, prepared.batch)
    budget_row, budget_note = _budget_check(spec, bundle, prepared)
    # vLLM counts with the budget *it* reads (the request's, else config.json's), which
    # can differ from the processor's: tests/test_unified.py runs vLLM's processor on such
    # a checkpoint and gets this column's count.
    b = plan.max_soft_tokens
    if budget_row is not None and budget_row.vllm_arithmetic is not None:
        b = budget_row.vllm_arithmetic
    v_size = vllm_image_size(h, w, max_soft_tokens=b, family=spec)
    v_tokens = vllm_image_tokens(h, w, max_soft_tokens=b, family=spec)
    v_old = vllm_image_tokens(h, w, max_soft_tokens=b, clamp=False, family=spec)
    v_patches = (v_size[0] // img.patch_size) * (v_size[1] // img.patch_size)
    rows = [
        ParityRow("resized size", _hw(plan.resized_size), _hw(hf_size), _hw(v_size)),
        ParityRow("patches", plan.num_patches, hf_patches, v_patches),
        ParityRow("soft tokens", plan.num_soft_tokens, hf_soft, v_tokens),
    ]
    notes = []
    if budget_row is not None:
        rows.insert(0, budget_row)
    if budget_note:
        notes.append(budget_note)
    if v_old != v_tokens:
        notes.append(
            f"Before vLLM clamped to the budget it reserved {v_old} placeholders here for "
            f"{hf_soft} embeddings: 'Attempted to assign {hf_soft} = {hf_soft} multimodal "
            f"tokens to {v_old} placeholders'."
        )
    if v_size != tuple(hf_size):
        notes.append(
            "vLLM's assumed resize differs from what transformers does; only the "
            "clamped count keeps them in step."
        )
    return rows, notes


def _fixed_image_rows(
    spec: FamilySpec, plan: ImagePlan, prepared: PreparedInputs
) -> list[ParityRow]:
    """A fixed-size family's rows: every image squashed to one size, one token count."""
    squash = _hw(spec.image.fixed_size)
    hf_size = _hw(tuple(prepared.batch["pixel_values"].shape[-2:]))
    n = spec.image.fixed_soft_tokens
    return [
        ParityRow("resized size", _hw(plan.resized_size), hf_size, squash),
        ParityRow("soft tokens", plan.num_soft_tokens, n, n),
    ]


def _vllm_placeholders(
    bundle: Bundle, prepared: PreparedInputs, modality: str, *, request: bool = False
) -> int:
    """The placeholders vLLM's own processor writes for the first item of ``modality``
    (0 when it writes none: Unified audio of ≤ 160 samples). ``request`` sends the
    request's ``mm_processor_kwargs`` too."""
    kwargs = prepared.request_kwargs if request else None
    out = vllm_process(bundle, prepared.text, vllm_mm_data(prepared), kwargs)
    found = out["placeholders"].get(modality) or [(0, 0, 0)]
    return found[0][2]


def _image_encoder_follows(spec: FamilySpec, hf_count: Any, encoder_count: int | None) -> str:
    """Which side the image encoder follows, and what it produced when it ran."""
    follows = (
        "the encoder sees transformers' pixel_values, so it yields transformers' "
        f"count ({hf_count})"
    )
    if encoder_count is not None:
        tower = "embedder (no tower)" if spec.encoder_free else "vision tower"
        follows += f"; the real {tower} produced {encoder_count} embeddings"
    return follows


def _budget_check(
    spec: FamilySpec, bundle: Bundle, prepared: PreparedInputs
) -> tuple[ParityRow | None, str | None]:
    """The image budget each side uses for this request.

    transformers' processor takes it from the request or processor_config.json; vLLM
    from the request's or the model's ``mm_processor_kwargs``, otherwise from
    config.json's ``vision_config.<budget field>`` (``num_soft_tokens`` for Unified,
    ``default_output_length`` for Gemma 4), never from processor_config.json. A
    checkpoint whose two files disagree is counted differently by the two.
    """
    key = spec.budget_config_field
    vision = getattr(getattr(bundle.model, "config", None), "vision_config", None)
    if key is None or vision is None:
        return None, None
    in_config = getattr(vision, key, None)
    asked = prepared.request_kwargs.get("max_soft_tokens")
    v_budget = asked if asked is not None else in_config
    hf_budget = prepared.max_soft_tokens
    row = ParityRow("image budget", hf_budget, hf_budget, v_budget)
    if in_config is None and asked is None:
        return row, (
            f"config.json has no vision_config.{key}: vLLM fails with AttributeError "
            f"'{type(vision).__name__}' object has no attribute '{key}'. Save the checkpoint "
            "with bundle.save_pretrained(folder), which writes it."
        )
    if v_budget is not None and v_budget != hf_budget:
        if v_budget < hf_budget:
            fate = (
                "vLLM reserves fewer placeholders than the encoder returns and silently drops "
                "the extra embeddings"
            )
        else:
            fate = (
                "vLLM reserves more placeholders than the encoder returns and its runner "
                "raises 'Attempted to assign … multimodal tokens to … placeholders'"
            )
        return row, (
            f"config.json says vision_config.{key} = {in_config} but the processor uses "
            f"{hf_budget}: {fate}. Make them equal, or pass "
            f"mm_processor_kwargs={{'max_soft_tokens': {hf_budget}}} to vLLM."
        )
    return row, None


def _test_wave(num_samples: int) -> np.ndarray:
    """A clip of ``num_samples`` that is not silent, so nothing special-cases it."""
    wave = np.zeros(num_samples, dtype=np.float32)
    wave[::97] = 0.01
    return wave


def check_audio_parity(
    audio: Any,
    *,
    family: str | FamilySpec | Bundle | None = None,
    bundle: Bundle | None = None,
    sampling_rate: int | None = None,
    use_vllm: bool | None = None,
    run_encoder: bool | None = None,
) -> ParityReport:
    """Our plan, transformers, vLLM's arithmetic and processor for one clip.

    ``audio`` is any audio input, a number of samples (a test clip of that length), or
    an :class:`Analysis` (read, not made again).
    """
    run_encoder = (
        (bundle is not None or isinstance(audio, Analysis)) if run_encoder is None else run_encoder
    )
    if isinstance(audio, int | np.integer) and not isinstance(audio, bool):
        audio = (_test_wave(int(audio)), sampling_rate or AUDIO_SAMPLING_RATE)  # a test clip
    analysis = _analysis(audio, "audio", family, bundle, sampling_rate=sampling_rate)
    spec, bundle, plan, prepared = analysis.spec, analysis.model, analysis.plan, analysis.prepared
    use_vllm = vllm_available() if use_vllm is None else use_vllm
    a = spec.audio
    hf_ids = prepared.input_ids.count(spec.id_of(spec.audio_token))
    n = plan.num_samples
    # vLLM caps with the processor's own audio_seq_length (get_audio_repl), not a constant.
    cap = getattr(bundle.processor, "audio_seq_length", None)
    v_tokens = vllm_audio_tokens(n, family=spec, audio_seq_length=cap)
    v_proc = _vllm_placeholders(bundle, prepared, "audio") if use_vllm else None
    rows = _audio_frame_rows(spec, plan, prepared)
    encoder_count = _valid_audio_tokens(bundle, prepared) if run_encoder else None
    notes, dropped = [], ()
    if not a.has_mel:  # Unified: the embedder's rows, and those vLLM's prompt has no room for
        rows.append(ParityRow("embedder rows", plan.num_encoder_tokens, encoder_count, None))
        v_prompt = v_proc if v_proc is not None else v_tokens
        dropped, note = _rows_vllm_drops(spec, plan, v_prompt)
        notes += [note] if note else []
    rows.append(ParityRow("soft tokens", plan.num_soft_tokens, hf_ids, v_tokens, v_proc))
    notes += _cut_note(spec, plan, rows[0], cap, v_tokens)
    follows, slot_notes = _audio_encoder_follows(spec, plan, hf_ids, encoder_count)
    return ParityReport(
        "audio",
        spec,
        f"{plan.duration_s:.3f} s clip ({n} samples)",
        tuple(rows),
        follows,
        encoder_count,
        v_proc is not None,
        tuple(notes + slot_notes),
        dropped,
    )


def _audio_frame_rows(
    spec: FamilySpec, plan: AudioPlan, prepared: PreparedInputs
) -> list[ParityRow]:
    """The feature frames each side counts: mel frames, or Unified's raw frames (which
    vLLM does not count: it counts mel frames anyway)."""
    a = spec.audio
    batch = prepared.batch
    frames = int(batch["input_features"].shape[1])
    valid = int(batch["input_features_mask"][0].sum())
    mel_rule = a.fixed_placeholders is None and a.has_mel
    v_frames = vllm_audio_frames(plan.num_samples, family=spec) if mel_rule else None
    kind = "mel frames" if a.has_mel else "raw frames"
    return [
        ParityRow(f"{kind} (valid)", plan.num_valid_frames, valid, v_frames),
        ParityRow(f"{kind} (all)", plan.num_feature_frames, frames, None),
    ]


def _valid_audio_tokens(bundle: Bundle, prepared: PreparedInputs) -> int:
    """The tokens the real audio tower (or Unified's embedder) marks valid for the clip."""
    encoded = encode_audio(prepared, bundle=bundle)
    valid_mask = encoded.valid[0]
    return int(valid_mask.sum()) if valid_mask is not None else encoded.counts[0]


def _rows_vllm_drops(
    spec: FamilySpec, plan: AudioPlan, v_prompt: int
) -> tuple[tuple[int, ...], str | None]:
    """Unified: the embedder rows vLLM's runner slices away, with the note that says so.

    transformers' model and vLLM's own Unified model both turn every frame into a row;
    only the prompts differ.
    """
    dropped = tuple(range(v_prompt, plan.num_encoder_tokens))
    if not dropped:
        return dropped, None
    a, n = spec.audio, plan.num_samples
    rate, per = a.sampling_rate, a.samples_per_token
    first, last = dropped[0], dropped[-1]
    end = min(n, (last + 1) * per)
    return dropped, (
        f"vLLM's prompt has {v_prompt} audio placeholders for {plan.num_encoder_tokens} "
        f"embedder rows: its runner keeps rows 0–{v_prompt - 1} and silently drops rows "
        f"{first}–{last} (samples {first * per}–{end - 1}, "
        f"{first * per / rate:.2f}–{end / rate:.2f} s). "
        "vLLM raises nothing: Gemma4UnifiedProcessingInfo inherits Gemma 4's mel-based "
        "_compute_audio_num_tokens (0 for ≤ 160 samples, one short when samples % 640 "
        "is 1–160, capped at 750), while the embedder makes ceil(samples / 640) rows."
    )


def _cut_note(
    spec: FamilySpec, plan: AudioPlan, frames: ParityRow, cap: int | None, v_tokens: int
) -> list[str]:
    """A clip longer than the extractor keeps: the two sides cut it at different steps."""
    a, n = spec.audio, plan.num_samples
    if frames.vllm_arithmetic is None or a.max_samples is None or n <= a.max_samples:
        return []
    return [
        f"transformers' extractor keeps the first {a.max_seconds:g} s ({frames.transformers} "
        f"frames); vLLM counts all {n} samples ({frames.vllm_arithmetic} frames) and caps "
        f"only the tokens, min(t, audio_seq_length = {cap}): both end at {v_tokens} tokens."
    ]


def _audio_encoder_follows(
    spec: FamilySpec, plan: AudioPlan, hf_ids: int, encoder_count: int | None
) -> tuple[str, list[str]]:
    """Which side the audio encoder follows (with what it produced when it ran), and a
    note when its tokens do not fit a fixed number of slots."""
    a, notes = spec.audio, []
    if not a.has_mel:
        follows = (
            f"no tower: the embedder turns each {a.samples_per_token}-sample frame into one "
            f"row, transformers' count ({hf_ids})"
        )
    elif a.fixed_placeholders is not None:
        slots = a.fixed_placeholders
        if plan.num_padding_soft_tokens:
            fate = f"the model fills the other {plan.num_padding_soft_tokens} of the {slots} slots with "
            fate += "the padding embedding"
        elif plan.dropped_tokens:
            fate = f"the model keeps the first {slots}"
        else:
            fate = f"exactly the {slots} slots"
        follows = (
            f"the encoder gives {plan.num_encoder_tokens} real tokens (one per "
            f"{a.ms_per_token} ms); {fate}"
        )
        if plan.dropped_tokens:
            notes.append(f"{plan.dropped_tokens} encoder tokens do not fit the {slots} slots.")
    else:
        follows = (
            "the audio tower masks by transformers' input_features_mask, so it yields "
            f"transformers' count ({hf_ids})"
        )
    if encoder_count is not None:
        tower = "audio tower" if a.has_mel else "embedder"
        follows += f"; the real {tower} produced {encoder_count} valid tokens"
    return follows, notes


def _hf_timestamps(bundle: Bundle, ids: list[int]) -> list[str]:
    tokens = bundle.processor.tokenizer.convert_ids_to_tokens(ids)
    text = "".join(t.replace("▁", " ") for t in tokens)
    return re.findall(rf"(\d\d:\d\d) {re.escape(bundle.spec.boi_token)}", text)


def check_video_parity(
    video: Any,
    *,
    family: str | FamilySpec | Bundle | None = None,
    bundle: Bundle | None = None,
    fps: float | None = None,
    use_vllm: bool | None = None,
) -> ParityReport:
    """Our plan, transformers, vLLM's arithmetic and processor for one video (or its
    :class:`Analysis`, read, not made again)."""
    analysis = _analysis(video, "video", family, bundle, fps=fps)
    spec, bundle, plan, prepared = analysis.spec, analysis.model, analysis.plan, analysis.prepared
    use_vllm = vllm_available() if use_vllm is None else use_vllm
    v = prepared.videos[0]
    ids = prepared.input_ids
    hf_total = ids.count(spec.id_of(spec.video_token))
    idx = sample_frame_indices(v.num_frames, max_frames=spec.image.max_video_frames)
    stamps = [format_timestamp(i / v.fps) for i in idx]
    h, w = v.size
    v_per_frame = vllm_image_tokens(h, w, max_soft_tokens=spec.image.video_budget, family=spec)
    v_proc = None
    if use_vllm:
        out = vllm_process(bundle, prepared.text, vllm_mm_data(prepared))
        v_proc = out["placeholders"]["video"][0][2]
    hf_frames = len(prepared.video_frame_indices[0])
    rows = [
        ParityRow("sampled frames", len(plan.frame_indices), hf_frames, len(idx)),
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
        ParityRow(
            "video placeholders", plan.num_soft_tokens, hf_total, v_per_frame * len(idx), v_proc
        ),
    ]
    tower = "the embedder (no tower)" if spec.encoder_free else "the vision tower"
    follows = (
        f"each frame goes through {tower} like an image at budget "
        f"{spec.image.video_budget}; the encoder follows transformers' pixel_values_videos"
    )
    desc = f"{v.num_frames} frames at {v.fps:g} fps ({size_label((h, w))})"
    return ParityReport("video", spec, desc, tuple(rows), follows, None, v_proc is not None)


_CHECKS = {"image": check_image_parity, "audio": check_audio_parity, "video": check_video_parity}


def check_parity(item: Any, *, kind: str, **options: Any) -> ParityReport:
    """Dispatch to :func:`check_image_parity`, :func:`check_audio_parity` or
    :func:`check_video_parity`. ``kind`` is explicit: a shape cannot tell a stereo clip
    from a greyscale image."""
    if kind not in _CHECKS:
        raise ValueError(f"kind must be one of {', '.join(_CHECKS)}, got {kind!r}.")
    return _CHECKS[kind](item, **options)


# ------------------------------------------------------------ hand-edited prompts in vLLM


@dataclass(frozen=True)
class VllmReplay:
    """What vLLM's processor makes of token ids handed to it as they are (a hand-edited,
    already expanded prompt): re-derived always, and vLLM's own result when it ran."""

    family: str
    sent: int  # tokens handed to vLLM
    ids: tuple[int, ...]  # the prompt vLLM's processor returns (our re-derivation)
    placeholders: tuple[tuple[str, int, int], ...]  # (modality, offset, length) vLLM writes
    embeddings: int  # encoder outputs for the items (what the runner will assign)
    slots: int  # positions vLLM marks as embeddings (its runs' soft tokens)
    stray: dict[str, int]  # placeholder tokens left outside vLLM's runs: read as plain text
    extra_markers: dict[str, int]  # start markers beyond one per item (e.g. a second <|image>)
    vllm_ids: tuple[int, ...] | None  # vLLM's own processor's ids, when it ran (else None)
    error: str | None  # what vLLM raises for this prompt (None: it accepts it)
    steps: tuple[str, ...]  # what happened, in order, in words

    @property
    def agrees_with_vllm(self) -> bool | None:
        """Our re-derivation equals vLLM's processor (None when vLLM did not run)."""
        return None if self.vllm_ids is None else self.vllm_ids == self.ids

    def __repr__(self) -> str:
        return "\n".join(self.steps)


def vllm_replay(
    input_ids: list[int],
    *,
    bundle: Bundle,
    prepared: PreparedInputs,
    use_vllm: bool | None = None,
) -> VllmReplay:
    """Hand ``input_ids`` (e.g. an expanded prompt with one placeholder removed) to vLLM's
    processor with ``prepared``'s media, as ``LLM.generate({"prompt_token_ids": …})``
    does, and say what comes out.

    vLLM does not refuse it, in any supported release: it re-expands the first placeholder
    of each item and keeps the rest as text (:func:`~gemma_explore.plans.vllm.vllm_reexpand`),
    so the counts agree and no error is raised. ``use_vllm`` also runs vLLM's processor
    (default: when installed) and keeps its ids in ``vllm_ids``.

    >>> import gemma_explore as ge
    >>> bundle = ge.load("tiny-gemma4")
    >>> prepared = ge.prepare_inputs("Look", bundle=bundle, images=[(96, 96)], max_soft_tokens=70)
    >>> ids = prepared.input_ids; k = ids.index(bundle.spec.id_of(bundle.spec.image_token))
    >>> replay = vllm_replay(ids[:k] + ids[k + 1:], bundle=bundle, prepared=prepared)  # one removed
    >>> replay.sent == len(ids) - 1, replay.error  # vLLM re-expands it: no error
    (True, None)
    """
    spec = bundle.spec
    if spec.image.fixed_soft_tokens is not None or prepared.videos:
        raise ValueError(
            "vllm_replay follows Gemma 4's plain runs (images and audio); for Gemma 3n's "
            "wrapped runs use layout_prompt(..., template=False)."
        )
    use_vllm = vllm_available() if use_vllm is None else use_vllm
    counts: dict[str, list[int]] = {}  # modality → embeddings per item, from the encoders
    if prepared.images:
        counts["image"] = list(encode_images(prepared, bundle=bundle).counts)
    if prepared.audios:
        counts["audio"] = list(encode_audio(prepared, bundle=bundle).counts)
    out = vllm_reexpand(spec, list(input_ids), counts)
    if out.ids is None:
        return VllmReplay(
            spec.name,
            len(input_ids),
            (),
            out.placeholders,
            0,
            0,
            {},
            {},
            None,
            out.error,
            (f"vLLM raises: {out.error}",),
        )
    ids = out.ids
    stray, extra = _left_as_text(spec, ids, out.placeholders, counts)
    embeddings = sum(sum(c) for c in counts.values())
    slots = sum(length - 2 for _, _, length in out.placeholders)
    vllm_ids = _vllm_prompt_ids(bundle, input_ids, prepared) if use_vllm else None
    steps = [
        f"vLLM gets {len(input_ids)} tokens and accepts them: it never looks for the runs "
        "already in the prompt.",
        *_fresh_run_steps(spec, out.placeholders, counts),
        _growth_step(spec, len(input_ids), len(ids), stray, extra, counts),
        f"Embeddings {embeddings} = placeholders {slots}: nothing raises, and the model "
        "reads a longer, different prompt.",
    ]
    if vllm_ids is not None:
        same = "the same ids" if vllm_ids == ids else f"{len(vllm_ids)} different ids"
        steps.append(f"vLLM's own processor returned {same}.")
    return VllmReplay(
        spec.name,
        len(input_ids),
        ids,
        out.placeholders,
        embeddings,
        slots,
        stray,
        extra,
        vllm_ids,
        None,
        tuple(steps),
    )


def _start_markers(spec: FamilySpec) -> dict[str, str]:
    """The token that opens each modality's run of soft tokens."""
    return {"image": spec.boi_token, "audio": spec.boa_token}


def _left_as_text(
    spec: FamilySpec,
    ids: tuple[int, ...],
    placeholders: tuple[tuple[str, int, int], ...],
    counts: dict[str, list[int]],
) -> tuple[dict[str, int], dict[str, int]]:
    """Per modality: placeholder tokens outside vLLM's runs (read as plain text), and start
    markers beyond one per item."""
    inside = set()
    for _, offset, length in placeholders:
        inside.update(range(offset, offset + length))
    marker = _start_markers(spec)
    stray, extra = {}, {}
    for modality in counts:
        tok = spec.id_of(spec.placeholder_tokens[modality])
        stray[modality] = sum(1 for i, t in enumerate(ids) if t == tok and i not in inside)
        extra[modality] = ids.count(spec.id_of(marker[modality])) - len(counts[modality])
    return stray, extra


def _vllm_prompt_ids(
    bundle: Bundle, input_ids: list[int], prepared: PreparedInputs
) -> tuple[int, ...]:
    """The ids vLLM's own processor returns for ``input_ids`` handed over as they are."""
    from vllm.multimodal.processing.context import TimingContext
    from vllm.multimodal.processing.inputs import ProcessorInputs

    from gemma_explore.engines.vllm_processor import VLLM_PROCESSORS

    proc = VLLM_PROCESSORS.get(bundle)
    items = proc.info.parse_mm_data(vllm_mm_data(prepared))
    got = proc.apply(
        ProcessorInputs(list(input_ids), items, hf_processor_mm_kwargs=prepared.request_kwargs),
        TimingContext(enabled=False),
    )
    return tuple(int(t) for t in got["prompt_token_ids"])


def _fresh_run_steps(
    spec: FamilySpec,
    placeholders: tuple[tuple[str, int, int], ...],
    counts: dict[str, list[int]],
) -> list[str]:
    """One sentence per item: where vLLM wrote its fresh run, and how long it is."""
    per_item = [n for c in counts.values() for n in c]
    return [
        f"It replaces the first {spec.placeholder_tokens[m]} with a fresh run of "
        f"{n} at position {offset} ({length} tokens with the markers)."
        for (m, offset, length), n in zip(placeholders, per_item, strict=False)
    ]


def _growth_step(
    spec: FamilySpec,
    sent: int,
    returned: int,
    stray: dict[str, int],
    extra: dict[str, int],
    counts: dict[str, list[int]],
) -> str:
    """How the prompt grew, and what of the hand-edited runs stays behind as text."""
    marker = _start_markers(spec)
    left = "; ".join(
        f"{stray[m]} stray {spec.placeholder_tokens[m]} stay as text tokens and "
        f"{marker[m]} appears {extra[m] + len(counts[m])} times"
        for m in counts
    )
    return f"The prompt grows from {sent} to {returned} tokens; {left}."


def vllm_merge_error(embeddings: list[int], placeholders: int) -> str | None:
    """The error vLLM's runner raises when ``placeholders`` positions are marked for the
    items' ``embeddings`` (``_merge_multimodal_embeddings`` in vLLM's
    ``model_executor/models/utils.py``); None when they agree.

    With vLLM installed this runs vLLM's own function on zero tensors and returns its
    message; without it, the same words from :data:`~gemma_explore.plans.vllm.VLLM_MERGE_ERROR`
    (a test holds the two equal). It fires when vLLM's count and the processor's differ,
    e.g. a config.json budget above processor_config.json's: 270 embeddings for 525
    placeholders.

    >>> vllm_merge_error([270], 525)
    'ValueError: Attempted to assign 270 = 270 multimodal tokens to 525 placeholders'
    """
    if sum(embeddings) == placeholders:
        return None
    if not vllm_available():
        expr = " + ".join(map(str, embeddings))
        return VLLM_MERGE_ERROR.format(expr=expr, n=sum(embeddings), slots=placeholders)
    import torch
    from vllm.model_executor.models.utils import _merge_multimodal_embeddings

    seq = max(placeholders, sum(embeddings)) + 1
    inputs = torch.zeros(seq, 1)  # (seq, hidden=1)
    mm = [torch.zeros(n, 1) for n in embeddings]  # one (tokens, 1) per item
    mask = torch.zeros(seq, dtype=torch.bool)  # (seq,)
    mask[:placeholders] = True
    try:
        _merge_multimodal_embeddings(inputs, mm, mask)
    except ValueError as e:
        return f"{type(e).__name__}: {e}"
    return None
