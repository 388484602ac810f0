"""The analysis tabs' handlers: Image, Audio, Video and Prompt layout, as plain functions
(no gradio import). Each plans its input once, runs the processor once, draws, checks
parity, and returns its tab's frozen result; a bad input gives the result's ``failed``
form (a message, every output cleared, the notice kept), never an exception.

``budget`` is the image budget dropdown's value; None (or a family without budgets)
means the family's own default.

>>> image_tab("tiny-gemma4", None).error
'✗ Upload an image first (PNG or JPEG), or click an example.'
"""

from __future__ import annotations

from typing import Any

from gemma_explore.app.bundles import analysis_bundle, loaded_notice, notice_of
from gemma_explore.app.outputs import (
    AudioResult,
    ImageResult,
    LayoutResult,
    Timer,
    VideoResult,
    counts_table,
    error_text,
    file_error,
    md,
    parity_badge,
)
from gemma_explore.errors import MediaError
from gemma_explore.facts.families import AUDIO_SAMPLING_RATE, FAMILIES, FamilySpec
from gemma_explore.inside.towers import encode, vision_pooling
from gemma_explore.media.headers import kind_of
from gemma_explore.media.loaders import load_audio, load_image
from gemma_explore.models.bundle import Bundle
from gemma_explore.parity.checks import check_audio_parity, check_image_parity, check_video_parity
from gemma_explore.plans.image import recommend_budget
from gemma_explore.plans.long_audio import LongAudioPlan, heard_seconds, plan_long_audio
from gemma_explore.processing.analysis import analyse
from gemma_explore.processing.features import audio_features
from gemma_explore.processing.layout import PromptLayout, layout_prompt
from gemma_explore.sizes import size_label
from gemma_explore.viz.audio import show_long_audio, show_mel
from gemma_explore.viz.layout import show_layout
from gemma_explore.viz.patches import show_patch_grid
from gemma_explore.viz.pooling import show_pooled_mask
from gemma_explore.viz.video import show_video_frames

__all__ = [
    "audio_tab",
    "budget_of",
    "image_tab",
    "layout_tab",
    "long_audio_figure",
    "long_audio_of",
    "video_tab",
]


def budget_of(bundle: Bundle, budget: Any) -> int | None:
    """The dropdown's budget, for families that have one (else None: the family's own).

    >>> from types import SimpleNamespace as NS
    >>> budget_of(NS(spec=NS(image=NS(budgets=()))), "280") is None
    True
    """
    return int(budget) if bundle.spec.image.budgets and budget not in (None, "") else None


# The tab that reads each kind of file, for a file dropped on the wrong one.
_TAB_OF = {"image": "Image", "audio": "Audio", "video": "Video"}


def _right_tab(upload: Any, wanted: str) -> None:
    """A file of another kind (by its suffix) is sent to the tab that reads it."""
    kind = kind_of(upload) if isinstance(upload, str) else None
    if kind is not None and kind != wanted:
        name = md(upload.replace("\\", "/").rsplit("/", 1)[-1])
        raise MediaError(
            f"{name} is {'an' if kind[0] in 'aeiou' else 'a'} {kind} file: open it on the "
            f"{_TAB_OF[kind]} tab."
        )


def _grid_row(plan: Any, *, encoder_free: bool) -> tuple[str, str]:
    """The patch count in the family's own unit: Unified's blocks (one per soft token,
    as its figure draws them), the patches of a vision tower otherwise."""
    if encoder_free:
        per = plan.pooling_kernel**2  # patches per block
        side = plan.patch_size * plan.pooling_kernel
        return (
            f"{side} px blocks",
            f"{plan.num_patches // per} of {plan.max_patches // per} "
            f"({plan.num_padding_patches // per} padding)",
        )
    return (
        f"{plan.patch_size} px patches",
        f"{plan.num_patches} of {plan.max_patches} ({plan.num_padding_patches} padding)",
    )


def _image_rows(spec: FamilySpec, plan: Any) -> list[tuple[str, Any]]:
    rows = [
        ("family", spec.display_name),
        ("original", size_label(plan.original_size)),
        ("resized", size_label(plan.resized_size)),
        _grid_row(plan, encoder_free=spec.encoder_free),
        ("soft tokens", plan.num_soft_tokens),
        ("prompt tokens (with markers)", plan.total_tokens),
    ]
    if spec.image.budgets:  # the budget a user keeps asking for: max_soft_tokens="auto"
        auto = recommend_budget(plan.original_size, family=spec)  # budgets not shown
        rows.append(("recommended budget", _budget_words(auto, plan)))
    return rows


def _size_words(scale: float) -> str:
    """What a resize does to the image, in plain words."""
    if scale < 1:
        return f"shrinks it to {scale:.2f}× its size (10 px text becomes {10 * scale:.1f} px)"
    if scale > 1:
        return f"enlarges it {scale:.2f}× (every pixel kept)"
    return "keeps it at its own size"


def _budget_words(auto: Any, plan: Any) -> str:
    """The recommended budget (``max_soft_tokens="auto"``) and what the chosen one does,
    in two plain sentences."""
    if auto.scale >= 1:
        why = f"{auto.max_soft_tokens}: the fewest tokens that keep every pixel of this image."
    else:
        why = (
            f"{auto.max_soft_tokens}: every budget shrinks this image, and this one, the "
            f"largest, shrinks it least ({auto.scale:.2f}× its size)."
        )
    return f"{why} The chosen budget, {plan.max_soft_tokens}, {_size_words(plan.scale)}."


def image_tab(model_name: str, image: Any, budget: Any = None) -> ImageResult:
    """Image → patch grid, real pooled mask, counts, parity badge, timings.

    Plans the image once, runs the processor once and the vision tower once; the
    figures and the parity badge read those results.
    """
    try:
        bundle = analysis_bundle(model_name)
        t = Timer()
        if image is None:
            raise MediaError("Upload an image first (PNG or JPEG), or click an example.")
        _right_tab(image, "image")
        b = budget_of(bundle, budget)
        analysis = analyse(image, modality="image", bundle=bundle, max_soft_tokens=b)
        plan = analysis.plan
        t.lap("plan + processor")
        patch_fig = show_patch_grid(plan)  # Unified: its blocks (show_embedder_grid)
        t.lap("patch grid")
        pooled_fig = None  # Unified has no tower and no pooler: its one figure says it all
        if not bundle.spec.encoder_free:
            analysis = encode(analysis)  # the vision tower, once: pooling and parity read it
            pooled_fig = show_pooled_mask(vision_pooling(analysis))
            t.lap("vision tower")
        report = check_image_parity(analysis, use_vllm=False, run_encoder=False)
        t.lap("parity")
        return ImageResult(
            patch_figure=patch_fig,
            pooled_figure=pooled_fig,
            counts=counts_table(_image_rows(bundle.spec, plan)),
            parity=parity_badge(report),
            timings=t.text(),
            notice=notice_of(bundle),
            plan=plan,
        )
    except Exception as exc:  # noqa: BLE001 - the UI shows every failure as text
        return ImageResult.failed(file_error(image, exc), notice=loaded_notice(model_name))


def _audio_rows(spec: FamilySpec, plan: Any, notes: dict[str, Any]) -> list[tuple[str, Any]]:
    raw = plan.frame_kind == "raw"  # Unified: raw sample frames, no mel
    cut = f" (cut to {spec.audio.max_seconds:g} s)" if plan.truncated else ""
    rows: list[tuple[str, Any]] = [
        ("family", spec.display_name),
        ("duration", f"{plan.duration_s:.2f} s{cut}"),
        (
            f"{spec.audio.samples_per_token}-sample frames" if raw else "mel frames",
            f"{plan.num_feature_frames} ({plan.num_valid_frames} from the clip, "
            f"{plan.num_feature_frames - plan.num_valid_frames} padding)",
        ),
        ("embedder rows" if raw else "encoder tokens", plan.num_encoder_tokens),
        ("soft tokens", plan.num_soft_tokens),
        ("padding soft tokens", plan.num_padding_soft_tokens),
        ("ms per token", f"{plan.ms_per_token:.0f}"),
    ]
    if notes.get("downmixed"):
        rows.append(("channels", f"{notes['downmixed']} averaged to mono"))
    if notes.get("resampled_from"):
        rate = spec.audio.sampling_rate
        rows.append(("resampled", f"{notes['resampled_from']} Hz → {rate / 1000:g} kHz"))
    if plan.silent:
        rows.append(("note", "the clip is silent — it still costs tokens"))
    long = long_audio_of(plan)
    if long is not None:
        spans = ", ".join(f"{w.start_s:.1f}–{w.end_s:.1f} s" for w in long.windows)
        rows.append(
            (
                "windows",
                f"{len(long.windows)} of ≤ {long.max_window_s:g} s, cut at quiet points, "
                f"{long.overlap_s:g} s overlap ({spans}): {long.audio_tokens} tokens in all. "
                + _windows_use(spec, long.max_window_s),
            )
        )
    return rows


def _windows_use(spec: FamilySpec, heard_s: float) -> str:
    """Who sends the windows in this demo: Transcribe, for a family that transcribes;
    for the others nothing does, and the row says what the model hears instead."""
    if spec.transcribes:
        return "The Transcribe button below sends each window and joins the texts."
    return (
        f"Nothing in this demo sends windows under {spec.display_name}: Chat sends the "
        f"clip whole and the model hears its first {heard_s:g} s. To ask about the rest, "
        "cut the clip at these points and attach each part to its own turn."
    )


def long_audio_of(plan: Any) -> LongAudioPlan | None:
    """The windows of a clip longer than its family hears whole (30 s), from the Audio
    tab's plan's waveform (decoded once); None for a shorter clip or no waveform."""
    if plan is None or plan.waveform is None or plan.duration_s <= heard_seconds(plan.spec):
        return None
    return plan_long_audio((plan.waveform, plan.spec.audio.sampling_rate), family=plan.spec)


def long_audio_figure(plan: Any) -> Any:
    """The Audio tab's windows figure (show_long_audio), or None when the clip is heard
    whole."""
    long = long_audio_of(plan)
    return None if long is None else show_long_audio(long)


def audio_tab(model_name: str, audio: Any) -> AudioResult:
    """Clip → waveform + mel + token slots, counts, parity badge, timings.

    The feature extractor runs once, inside the processor; the mel figure and the parity
    badge read its output.
    """
    try:
        bundle = analysis_bundle(model_name)
        t = Timer()
        if audio is None:
            raise MediaError(
                "Upload or record a clip first (WAV, FLAC or MP3), or click an example."
            )
        _right_tab(audio, "audio")
        analysis = analyse(audio, modality="audio", bundle=bundle)
        plan = analysis.plan
        t.lap("load + plan + processor")
        fig = show_mel(audio_features(analysis))  # read from the processor's run
        t.lap("frames figure" if plan.frame_kind == "raw" else "mel figure")
        report = check_audio_parity(analysis, use_vllm=False, run_encoder=False)
        t.lap("parity")
        return AudioResult(
            mel_figure=fig,
            counts=counts_table(_audio_rows(bundle.spec, plan, analysis.notes)),
            parity=parity_badge(report),
            timings=t.text(),
            notice=notice_of(bundle),
            plan=plan,
        )
    except Exception as exc:  # noqa: BLE001
        return AudioResult.failed(file_error(audio, exc), notice=loaded_notice(model_name))


def video_tab(model_name: str, video: Any, fps: float | None = None) -> VideoResult:
    """Video → sampled frames with timestamps and per-frame tokens (families with video)."""
    try:
        bundle = analysis_bundle(model_name)
        t = Timer()
        spec = bundle.spec
        if not spec.has_video:
            with_video = " or ".join(f.display_name for f in FAMILIES.values() if f.has_video)
            raise MediaError(
                f"{spec.display_name} has no video input: pick a {with_video} model in Model, "
                "or send a few frames on the Image tab."
            )
        if video is None:
            raise MediaError("Upload a video first (MP4), or click an example.")
        if not (isinstance(video, str) and kind_of(video) == "image"):  # the loader says so
            _right_tab(video, "video")
        analysis = analyse(video, modality="video", bundle=bundle, fps=fps or None)
        plan = analysis.plan
        t.lap("decode + plan + processor")
        fig = show_video_frames(plan)
        t.lap("frames figure")
        report = check_video_parity(analysis, use_vllm=False)
        t.lap("parity")
        return VideoResult(
            frames_figure=fig,
            counts=counts_table(_video_rows(plan, bundle.vocabulary)),
            parity=parity_badge(report),
            timings=t.text(),
            notice=notice_of(bundle),
            plan=plan,
        )
    except Exception as exc:  # noqa: BLE001
        # The loader's "give it as an image instead" is a library's advice: name the tab.
        message = file_error(video, exc).replace(
            "give it as an image instead", "open it on the Image tab"
        )
        return VideoResult.failed(message, notice=loaded_notice(model_name))


def _video_rows(plan: Any, vocabulary: str) -> list[tuple[str, Any]]:
    """The plan's rows: soft tokens + markers + timestamps = the video's prompt tokens
    (layout_prompt's count for the same video)."""
    return [
        ("frames", f"{plan.num_frames} at {plan.fps:g} fps = {plan.duration_s:.2f} s"),
        ("sampled", len(plan.frame_indices)),
        ("tokens per frame", plan.soft_tokens_per_frame),
        ("soft tokens", plan.num_soft_tokens),
        ("markers (BOI + EOI per frame)", plan.num_markers),
        (f"timestamps ({vocabulary})", plan.num_timestamp_tokens),
        (
            "prompt tokens",
            f"{plan.total_tokens} = {plan.num_soft_tokens} + {plan.num_markers} + "
            f"{plan.num_timestamp_tokens}",
        ),
        ("frame times", ", ".join(dict.fromkeys(plan.timestamps))),
    ]


def layout_tab(
    model_name: str,
    text: str,
    image: Any = None,
    audio: Any = None,
    budget: Any = None,
    raw: bool = False,
) -> LayoutResult:
    """A chat turn with attachments → the layout ribbon and its HTML form.

    ``raw=True``: ``text`` is the prompt as vLLM's ``LLM.generate`` takes it (one
    placeholder per attachment, no chat template), laid out as vLLM expands it.
    """
    try:
        bundle = analysis_bundle(model_name)
        t = Timer()
        images = [_load(load_image, image, "image")] if image is not None else []
        audios = [_load(load_audio, audio, "audio")] if audio is not None else []
        if raw:
            _check_raw(bundle.spec, text or "", image=len(images), audio=len(audios))
        layout = layout_prompt(
            text or "",
            bundle=bundle,
            images=images,
            audios=[(wave, AUDIO_SAMPLING_RATE) for wave, _notes in audios],
            max_soft_tokens=budget_of(bundle, budget),
            template=not raw,
        )
        t.lap("processor + layout")
        fig = show_layout(layout)
        t.lap("ribbon")
        vocabulary = bundle.vocabulary
        rows = [
            (f"{k} ({vocabulary})" if k == "text" else k, v) for k, v in layout.counts().items()
        ] + [("total", layout.num_tokens)]
        return LayoutResult(
            layout_figure=fig,
            layout_html=layout._repr_html_(),
            counts=counts_table(rows),
            parity=_layout_checks(layout),
            timings=t.text(),
            notice=notice_of(bundle),
            layout=layout,
        )
    except Exception as exc:  # noqa: BLE001
        return LayoutResult.failed(error_text(exc), notice=loaded_notice(model_name))


def _load(loader: Any, upload: Any, kind: str) -> Any:
    """An attachment read by ``loader``; a refusal names the file once."""
    _right_tab(upload, kind)
    try:
        return loader(upload)
    except Exception as exc:  # noqa: BLE001 - re-raised with the file's name
        raise MediaError(file_error(upload, exc).removeprefix("✗ ")) from exc


def _layout_checks(layout: PromptLayout) -> str:
    """Each placeholder run against its plan, the newline merges, where vLLM and
    transformers part, and the layout's warnings: one paragraph each."""
    checks = [
        f"{'✓' if p.agrees else '✗'} {p.modality} #{p.item}: {p.num_embeds} "
        f"placeholders at {p.start}…{p.start + p.length - 1} (plan {p.expected})"
        for p in layout.placeholders
    ]
    merges = [f"newline merge at {m.position}: {md(m.note)}" for m in layout.newline_merges]
    problems = [
        f"⚠ **vLLM ≠ transformers** at token {d.position}: {md(d.error or d.rule)}"
        + (f" ({md(d.rule)})" if d.error else "")
        for d in layout.divergences
    ] + [f"⚠ {md(w)}" for w in layout.warnings]
    return "\n\n".join(checks + merges + problems) or "No attachments: text only."


def _check_raw(spec: FamilySpec, text: str, **items: int) -> None:
    """A raw prompt needs one placeholder per attachment: said in the words of the
    Prompt layout tab's controls (the library's message names ``template=True``), every
    placeholder that does not match named in one message."""
    said, fixes, placed = [], [], 0
    for modality, count in items.items():
        token = spec.placeholder_tokens[modality]
        found = text.count(token)
        if found == count:
            continue
        if count:
            where = "where the " + modality + " goes" if count == 1 else "per " + modality
            said.append(f"{found} {token} for {count} {modality} attachment(s)")
            fixes.append(f"type one {token} {where} in Text")
            placed += 1
        else:
            said.append(f"{found} {token} but no {modality} is attached")
            fixes.append(f"attach one, or delete the {token} from Text")
    if not said:
        return
    them = "it" if placed == 1 else "them"
    untick = f', or untick "Raw prompt" to let the chat template place {them}' if placed else ""
    raise MediaError(f"The raw prompt has {' and '.join(said)}: {'; '.join(fixes)}{untick}.")
