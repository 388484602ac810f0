"""Handlers for ``demo_app.py``: plain functions, no gradio import, easy to test.

Every handler catches bad input and returns a message instead of raising, so one bad
upload never stops the app from answering the next request. Each tab's handler
returns figures, a counts table, a parity badge, timings and the random-weights notice.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Iterator
from typing import Any

from ..errors import MediaError, ModelLoadError
from ..families import AUDIO_SAMPLING_RATE, GEMMA4, get_family
from ..features import audio_features
from ..inspection import vision_pooling
from ..layout import layout_prompt
from ..loading import load
from ..media import load_audio, load_image, load_video
from ..models.bundle import Bundle
from ..parity import ParityReport, check_audio_parity, check_image_parity, check_video_parity
from ..plans import plan_audio, plan_image, plan_video
from ..prompting import prepare_inputs
from ..tables import Table
from ..viz.audio import show_mel
from ..viz.embedder import show_embedder_grid
from ..viz.layout import show_layout
from ..viz.patches import show_patch_grid
from ..viz.pooling import show_pooled_mask
from ..viz.video import show_video_frames

__all__ = [
    "RANDOM_WEIGHTS_NOTICE",
    "configure",
    "TabResult",
    "answer_image_question",
    "audio_tab",
    "chat_preview",
    "chat_stream",
    "chat_turn",
    "error_text",
    "model_notice",
    "turn_counts",
    "get_bundle",
    "image_tab",
    "layout_tab",
    "video_tab",
]

DEFAULT_BUDGET = GEMMA4.image.default_budget  # the dropdown's start (Gemma 4's default)

RANDOM_WEIGHTS_NOTICE = (
    "⚠ **Tiny offline model with random weights**: its answers are noise. Everything before "
    "generation (resizing, patches, pooling, mel frames, token counts) is the real computation. "
    "Launch with `--model {checkpoint}` on a GPU for real answers."
)  # {checkpoint}: a released checkpoint of the chosen family (see random_weights_notice)


def random_weights_notice(family: str) -> str:
    """The random-weights banner, naming a released checkpoint of ``family``.

    >>> "gemma-4-12B" in random_weights_notice("gemma4_unified")
    True
    """
    spec = get_family(family)
    hub = spec.hub_ids[-1] if spec.hub_ids else "a released checkpoint"
    return RANDOM_WEIGHTS_NOTICE.format(checkpoint=hub)


def md(text: Any) -> str:
    """``text`` safe inside gradio's Markdown/HTML: token names such as ``<bos>`` and
    ``<image_soft_token>`` stay visible instead of being read as HTML tags.

    >>> md("0 <image_soft_token> for 1 image")
    '0 &lt;image_soft_token&gt; for 1 image'
    """
    return html.escape(str(text), quote=False)


class _Bundles:
    """The demo's one cache: each model is loaded once, with the options it was launched
    with (e.g. ``backend="vllm"``), and shared by every request."""

    def __init__(self) -> None:
        self.options: dict[str, dict[str, Any]] = {}
        self.loaded: dict[str, Bundle] = {}
        self.lock = threading.Lock()

    def get(self, name: str) -> Bundle:
        with self.lock:
            if name not in self.loaded:
                self.loaded[name] = load(name, **self.options.get(name, {}))
            return self.loaded[name]


_BUNDLES = _Bundles()


def configure(name: str, **load_options: Any) -> None:
    """Remember how to load ``name`` (e.g. ``backend="vllm"``) for when it is first used."""
    _BUNDLES.options[name] = dict(load_options)


def get_bundle(name: str) -> Bundle:
    """Load (once) and return the bundle called ``name``."""
    return _BUNDLES.get(name)


def analysis_bundle(name: str) -> Bundle:
    """The bundle whose processor and towers the analysis tabs run.

    vLLM and remote servers do not expose their processor's tensors or towers, so with
    those backends the tabs use the tiny transformers bundle of the same family: the
    same processor settings, hence the same counts (the notice says so)."""
    bundle = get_bundle(name)
    if bundle.model is not None and bundle.processor is not None:
        return bundle
    from ..models.tiny import tiny_name

    return get_bundle(tiny_name(bundle.family))


def error_text(exc: BaseException) -> str:
    """A one-paragraph message for the UI."""
    if isinstance(exc, ConnectionError):  # the library's text names base_url=; ours the flag
        where = str(exc).split(" (")[0]
        return (
            f"✗ {md(where)}. Start the server (`vllm serve MODEL`), or relaunch the demo with "
            "--backend openai --base-url http://HOST:PORT/v1."
        )
    if isinstance(exc, MediaError | ModelLoadError | ValueError):
        return f"✗ {md(exc)}"
    return f"✗ Something went wrong ({type(exc).__name__}: {md(exc)}). Try another input."


def _notice(bundle: Bundle) -> str:
    return random_weights_notice(bundle.family) if bundle.is_random_weights else ""


def model_notice(name: str) -> str:
    """The banner for ``name``: the random-weights warning, or why it did not load.

    Tab errors never touch it, so a bad upload cannot hide that the answers are noise."""
    try:
        return _notice(get_bundle(name))
    except Exception as exc:  # noqa: BLE001 - shown in the banner
        return error_text(exc)


def _table(rows: list[tuple[str, Any]]) -> str:
    return Table(("quantity", "value"), tuple((md(k), md(v)) for k, v in rows)).markdown()


def _badge(report: ParityReport) -> str:
    """Our plan vs the transformers processor vs vLLM's arithmetic, in one line."""
    if report.agree:
        return "✓ **Parity**: our plan, the transformers processor and vLLM's arithmetic agree."
    first = md(report.disagreements[0])
    notes = md(" ".join(report.notes))
    return f"⚠ **Parity**: they part at *{first}*. {notes} Encoder: {md(report.encoder_follows)}."


class _Timer:
    """Named wall-clock laps for the timings line."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._start = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = now - self._start
        self._start = now

    def text(self) -> str:
        shown = " · ".join(f"{k} {v * 1000:.0f} ms" for k, v in self.laps.items())
        return f"Timings: {shown} · total {sum(self.laps.values()) * 1000:.0f} ms"


class TabResult(dict):
    """What a tab handler returns, by name (``error`` is set when the input was bad)."""


def _fail(exc: BaseException, keys: tuple[str, ...], model_name: str | None = None) -> TabResult:
    """Every output cleared (no stale figure or counts), the message in the counts' place,
    and the model's notice kept."""
    out = TabResult({k: None for k in keys})
    out["error"] = error_text(exc)
    out["counts"] = out["error"]
    if "parity" in out:
        out["parity"] = ""
    if "timings" in out:
        out["timings"] = ""
    if model_name is not None:
        loaded = _BUNDLES.loaded.get(model_name)
        out["notice"] = _notice(loaded) if loaded is not None else ""
    return out


def _done(
    bundle: Bundle,
    timer: _Timer,
    rows: list[tuple[str, Any]],
    report: ParityReport,
    plan: Any,
    **figures: Any,
) -> TabResult:
    """A tab's result: its figures, counts table, parity badge, timings and notice."""
    return TabResult(
        **figures,
        counts=_table(rows),
        parity=_badge(report),
        timings=timer.text(),
        notice=_notice(bundle),
        plan=plan,
        error=None,
    )


def _budget(bundle: Bundle, budget: Any) -> int | None:
    """The dropdown's budget, for families that have one."""
    return int(budget) if bundle.spec.image.budgets and budget not in (None, "") else None


def _grid_row(plan: Any, *, encoder_free: bool) -> tuple[str, str]:
    """The patch count in the family's own unit: Unified's 48 px blocks (one per soft
    token, as its figure draws them), the 16 px patches of a vision tower otherwise."""
    if encoder_free:
        per = plan.pooling_kernel**2  # 16 px patches per block
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


_IMAGE_KEYS = ("patch_figure", "pooled_figure", "counts", "parity", "timings", "notice")


def image_tab(model_name: str, image: Any, budget: Any = DEFAULT_BUDGET) -> TabResult:
    """Image → patch grid, real pooled mask, counts, parity badge, timings.

    Plans the image once, runs the processor once and the vision tower once; the
    figures and the parity badge read those results.
    """
    try:
        bundle = analysis_bundle(model_name)
        t = _Timer()
        if image is None:
            raise MediaError("Upload an image first (PNG or JPEG), or click an example.")
        pil = load_image(image)
        b = _budget(bundle, budget)
        plan = plan_image(pil, family=bundle.family, max_soft_tokens=b)
        prepared = prepare_inputs(bundle, "", images=[pil], max_soft_tokens=b)
        t.lap("plan + processor")
        patch_fig = show_patch_grid(plan)
        t.lap("patch grid")
        spec = bundle.spec
        if spec.encoder_free:  # no tower, no pooler: each 48 px block is its own token
            pooled_fig = show_embedder_grid(plan)
            t.lap("embedder figure")
        else:
            pooled = vision_pooling(bundle, plan=plan, prepared=prepared)
            pooled_fig = show_pooled_mask(pooled)
            t.lap("vision tower")
        report = check_image_parity(
            pil, bundle=bundle, plan=plan, prepared=prepared, use_vllm=False, run_encoder=False
        )
        t.lap("parity")
        rows = [
            ("family", spec.display_name),
            ("original (W×H px)", f"{plan.original_size[1]}×{plan.original_size[0]}"),
            ("resized (W×H px)", f"{plan.resized_size[1]}×{plan.resized_size[0]}"),
            _grid_row(plan, encoder_free=spec.encoder_free),
            ("soft tokens", plan.num_soft_tokens),
            ("prompt tokens (with markers)", plan.total_tokens),
        ]
        return _done(
            bundle, t, rows, report, plan, patch_figure=patch_fig, pooled_figure=pooled_fig
        )
    except Exception as exc:  # noqa: BLE001 - the UI shows every failure as text
        return _fail(exc, _IMAGE_KEYS, model_name)


def audio_tab(model_name: str, audio: Any) -> TabResult:
    """Clip → waveform + mel + token slots, counts, parity badge, timings.

    The feature extractor runs once, inside the processor; the mel figure and the parity
    badge read its output.
    """
    try:
        bundle = analysis_bundle(model_name)
        t = _Timer()
        if audio is None:
            raise MediaError(
                "Upload or record a clip first (WAV, FLAC or MP3), or click an example."
            )
        rate = bundle.spec.audio.sampling_rate
        wave, notes = load_audio(audio, target_rate=rate)
        plan = plan_audio((wave, rate), family=bundle.family)
        prepared = prepare_inputs(bundle, "", audios=[(wave, rate)])
        t.lap("load + plan + processor")
        fig = show_mel(audio_features(family=bundle.family, plan=plan, prepared=prepared))
        t.lap("frames figure" if plan.frame_kind == "raw" else "mel figure")
        report = check_audio_parity(
            wave, bundle=bundle, plan=plan, prepared=prepared, use_vllm=False, run_encoder=False
        )
        t.lap("parity")
        rows = [
            ("family", get_family(bundle.family).display_name),
            ("duration", f"{plan.duration_s:.2f} s" + (" (cut to 30 s)" if plan.truncated else "")),
            (
                "640-sample frames" if plan.frame_kind == "raw" else "mel frames",
                f"{plan.num_mel_frames} ({plan.num_valid_frames} from the clip, "
                f"{plan.num_mel_frames - plan.num_valid_frames} padding)",
            ),
            (
                "embedder rows" if plan.frame_kind == "raw" else "encoder tokens",
                plan.num_encoder_tokens,
            ),
            ("placeholders", plan.num_placeholders),
            ("padding slots", plan.padding_slots),
            ("ms per token", f"{plan.ms_per_token:.0f}"),
        ]
        if notes.get("downmixed"):
            rows.append(("channels", f"{notes['downmixed']} averaged to mono"))
        if notes.get("resampled_from"):
            rows.append(("resampled", f"{notes['resampled_from']} Hz → {rate / 1000:g} kHz"))
        if plan.silent:
            rows.append(("note", "the clip is silent — it still costs tokens"))
        return _done(bundle, t, rows, report, plan, mel_figure=fig)
    except Exception as exc:  # noqa: BLE001
        return _fail(exc, ("mel_figure", "counts", "parity", "timings", "notice"), model_name)


def video_tab(model_name: str, video: Any, fps: float | None = None) -> TabResult:
    """Video → sampled frames with timestamps and per-frame tokens (Gemma 4 only)."""
    try:
        bundle = analysis_bundle(model_name)
        t = _Timer()
        spec = get_family(bundle.family)
        if not spec.has_video:
            raise MediaError(
                f"{spec.display_name} has no video input: pick a Gemma 4 model in Model, "
                "or send a few frames on the Image tab."
            )
        if video is None:
            raise MediaError("Upload a video first (MP4), or click an example.")
        v = load_video(video, fps=fps or None)
        plan = plan_video(v, family=spec.name)
        t.lap("decode + plan")
        fig = show_video_frames(plan)
        t.lap("frames figure")
        report = check_video_parity(v, bundle=bundle, plan=plan, use_vllm=False)
        t.lap("processor + parity")
        rows = [
            ("frames", f"{plan.num_frames} at {plan.fps:g} fps = {plan.duration_s:.2f} s"),
            ("sampled", len(plan.frame_indices)),
            ("tokens per frame", plan.soft_tokens_per_frame),
            ("soft tokens", plan.total_soft_tokens),
            ("markers", plan.total_tokens - plan.total_soft_tokens),
            ("prompt tokens (with markers)", plan.total_tokens),
            ("timestamps", ", ".join(dict.fromkeys(plan.timestamps))),
        ]
        return _done(bundle, t, rows, report, plan, frames_figure=fig)
    except Exception as exc:  # noqa: BLE001
        return _fail(exc, ("frames_figure", "counts", "parity", "timings", "notice"), model_name)


def layout_tab(
    model_name: str,
    text: str,
    image: Any = None,
    audio: Any = None,
    budget: Any = DEFAULT_BUDGET,
    raw: bool = False,
) -> TabResult:
    """A chat turn with attachments → the layout ribbon and its HTML form.

    ``raw=True``: ``text`` is the prompt as vLLM's ``LLM.generate`` takes it (one
    placeholder per attachment, no chat template), laid out as vLLM expands it.
    """
    try:
        bundle = analysis_bundle(model_name)
        t = _Timer()
        b = _budget(bundle, budget)
        images = [load_image(image)] if image is not None else []
        audios = [load_audio(audio)] if audio is not None else []
        if raw:
            _check_raw(bundle.spec, text or "", image=len(images), audio=len(audios))
        layout = layout_prompt(
            text or "",
            bundle=bundle,
            images=images,
            audios=[(wave, AUDIO_SAMPLING_RATE) for wave, _notes in audios],
            max_soft_tokens=b,
            template=not raw,
        )
        t.lap("processor + layout")
        fig = show_layout(layout)
        t.lap("ribbon")
        rows = [(k, v) for k, v in layout.counts().items()] + [("total", layout.num_tokens)]
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
        parity = "\n\n".join(checks + merges + problems) or "No attachments: text only."
        return TabResult(
            layout_figure=fig,
            layout_html=layout._repr_html_(),
            counts=_table(rows),
            parity=parity,
            timings=t.text(),
            notice=_notice(bundle),
            layout=layout,
            error=None,
        )
    except Exception as exc:  # noqa: BLE001
        keys = ("layout_figure", "layout_html", "counts", "parity", "timings", "notice")
        return _fail(exc, keys, model_name)


def _check_raw(spec: Any, text: str, **items: int) -> None:
    """A raw prompt needs one placeholder per attachment: said in the words of the
    Prompt layout tab's controls (the library's message names ``template=True``)."""
    for modality, count in items.items():
        token = spec.placeholder_tokens[modality]
        found = text.count(token)
        if found != count:
            where = "where the " + modality + " goes" if count == 1 else "per " + modality
            raise MediaError(
                f"The raw prompt has {found} {token} for {count} {modality} attachment(s): "
                f'type one {token} {where} in Text, or untick "Raw prompt" to let the '
                "chat template place it."
                if count
                else f"The raw prompt has {found} {token} but no {modality} is attached: "
                f"attach one, or delete the {token} from Text."
            )


def turn_counts(bundle: Bundle, input_ids: list[int]) -> dict[str, int]:
    """Prompt tokens of one turn by kind: text (template and markers included) and each
    modality's placeholders, read from the ids the model receives.

    >>> turn_counts(get_bundle("tiny-gemma4"), [2, 105, 258880, 258880])  # doctest: +SKIP
    {'text': 2, 'image': 2, 'audio': 0, 'video': 0}
    """
    spec = bundle.spec
    out = {m: input_ids.count(spec.id_of(tok)) for m, tok in spec.placeholder_tokens.items()}
    return {"text": len(input_ids) - sum(out.values()), **out}


def _counts_line(counts: dict[str, int], generated: int | None, seconds: float | None) -> str:
    parts = " · ".join(f"{k} {v}" for k, v in counts.items())
    line = f"**This turn**: {sum(counts.values())} prompt tokens ({parts})"
    if generated is not None:
        line += f" · {generated} generated"
    if seconds is not None:
        line += f" · {seconds * 1000:.0f} ms"
    return line


class _TurnStop(threading.Event):
    """The event a chat turn hands the engine: set when the user presses Stop, or when
    the engine itself ends the stream (it sets its event when it finishes). Only
    ``user`` says which of the two happened."""

    def __init__(self, user: threading.Event | None) -> None:
        super().__init__()
        self.user = user if user is not None else threading.Event()

    def is_set(self) -> bool:
        return super().is_set() or self.user.is_set()


def chat_stream(
    model_name: str,
    message: dict[str, Any] | str,
    history: list[dict] | None,
    max_new_tokens: int = 32,
    budget: Any = DEFAULT_BUDGET,
    *,
    stop: threading.Event | None = None,
    outcome: dict[str, Any] | None = None,
) -> Iterator[tuple[list[dict], str]]:
    """One multimodal chat turn, streamed: yields (history with the growing answer,
    the turn's token counts).

    ``message`` is gradio's MultimodalTextbox value ``{"text": ..., "files": [...]}``.
    Setting ``stop`` (the user's Stop) or closing this generator ends generation at the
    next token. ``outcome``, when given, is filled with ``failed`` (the turn never ran:
    the caller keeps the question) and ``stopped`` (the user stopped it; a turn that
    simply finished is not "stopped").
    """
    history = list(history or [])
    outcome = outcome if outcome is not None else {}
    outcome.update(failed=False, stopped=False)
    counts_md = ""
    pieces = None
    turn_stop = _TurnStop(stop)
    try:
        bundle = get_bundle(model_name)
        text, files = _split_message(message)
        content: list[dict[str, Any]] = []
        problems: list[str] = []
        for path in files:
            try:
                content.append(_attachment(path, bundle))
            except Exception as exc:  # noqa: BLE001 - one message per failing attachment
                why = error_text(exc).removeprefix("✗ ")
                problems.append(f"✗ **{md(_file_name(path))}**: {why}")
        if problems:
            outcome["failed"] = True
            yield history + [{"role": "assistant", "content": p} for p in problems], ""
            return
        if text:
            content.append({"type": "text", "text": text})
        if not content:
            raise MediaError("Type a message or attach an image, clip or video.")
        shown = md(text) + "".join(f"\n[{md(_file_name(p))}]" for p in files)
        turn = [{"role": "user", "content": shown}, {"role": "assistant", "content": ""}]
        b = _budget(bundle, budget)
        start = time.perf_counter()
        messages = [{"role": "user", "content": content}]
        counts: dict[str, int] | None = None
        if bundle.processor is not None:
            prepared = prepare_inputs(bundle, messages, max_soft_tokens=b)
            counts = turn_counts(bundle, prepared.input_ids)
            counts_md = _counts_line(counts, None, None)
            pieces = bundle.engine.stream(
                prepared, max_new_tokens=int(max_new_tokens), stop=turn_stop
            )
        else:  # a remote server: it tokenizes the turn itself
            pieces = bundle.generate(
                messages, stream=True, max_new_tokens=int(max_new_tokens), max_soft_tokens=b,
                stop=turn_stop,
            )  # fmt: skip
        history = history + turn
        if counts is not None:  # the turn's counts show before its first token
            yield history, counts_md
        answer, generated = "", 0
        for piece in pieces:
            answer += piece
            generated += 1
            history[-1] = {"role": "assistant", "content": md(answer)}
            yield history, counts_md
        elapsed = time.perf_counter() - start
        outcome["stopped"] = stopped = turn_stop.user.is_set()
        suffix = "\n\n_(" + ("stopped by you, " if stopped else "") + f"{elapsed * 1000:.0f} ms"
        suffix += ", random weights: this text is noise)_" if bundle.is_random_weights else ")_"
        history[-1] = {"role": "assistant", "content": md(answer) + suffix}
        if counts is not None:
            counts_md = _counts_line(counts, generated, elapsed)
        yield history, counts_md
    except Exception as exc:  # noqa: BLE001
        outcome["failed"] = True
        yield history + [{"role": "assistant", "content": error_text(exc)}], ""
    finally:
        if pieces is not None and hasattr(pieces, "close"):
            pieces.close()  # an abandoned turn stops its generation thread


def chat_preview(
    model_name: str, message: dict[str, Any] | str, budget: Any = DEFAULT_BUDGET
) -> str:
    """The token counts of the turn waiting in the chat box, before anything is asked
    (the Chat tab's result on page load). A message, never an exception.

    >>> chat_preview("tiny-gemma4", "Hi")                          # doctest: +SKIP
    '**Waiting to be asked** (press Enter): 12 prompt tokens (text 12 · image 0 · …)'
    """
    try:
        bundle = get_bundle(model_name)
        if bundle.processor is None:
            return ""  # a remote server tokenizes the turn itself
        text, files = _split_message(message)
        content = [_attachment(path, bundle) for path in files]
        if text:
            content.append({"type": "text", "text": text})
        if not content:
            return ""
        messages = [{"role": "user", "content": content}]
        prepared = prepare_inputs(bundle, messages, max_soft_tokens=_budget(bundle, budget))
        line = _counts_line(turn_counts(bundle, prepared.input_ids), None, None)
        return line.replace("**This turn**", "**Waiting to be asked** (press Enter)")
    except Exception as exc:  # noqa: BLE001 - the box's own problem, as a line
        return error_text(exc)


def _file_name(path: Any) -> str:
    """An upload's own name, never its temporary folder."""
    return str(path).replace("\\", "/").rsplit("/", 1)[-1]


def chat_turn(
    model_name: str,
    message: dict[str, Any] | str,
    history: list[dict] | None,
    max_new_tokens: int = 32,
    budget: Any = DEFAULT_BUDGET,
    *,
    stop: threading.Event | None = None,
) -> Iterator[list[dict]]:
    """:func:`chat_stream` without the counts: yields the history with the growing answer."""
    for history_now, _counts in chat_stream(
        model_name, message, history, max_new_tokens, budget, stop=stop
    ):
        yield history_now


def _split_message(message: dict[str, Any] | str) -> tuple[str, list[str]]:
    if isinstance(message, str):
        return message.strip(), []
    text = (message or {}).get("text") or ""
    files = []
    for f in (message or {}).get("files") or []:
        files.append(f if isinstance(f, str) else f.get("path"))
    return text.strip(), [f for f in files if f]


_IMAGE_EXT = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff")
_AUDIO_EXT = (".wav", ".flac", ".mp3", ".ogg", ".m4a")
_VIDEO_EXT = (".mp4", ".mov", ".avi", ".mkv", ".webm")


def _attachment(path: str, bundle: Bundle) -> dict[str, Any]:
    low = str(path).lower()
    if low.endswith(_IMAGE_EXT):
        return {"type": "image", "image": load_image(path)}
    if low.endswith(_AUDIO_EXT):
        wave, _ = load_audio(path, target_rate=AUDIO_SAMPLING_RATE)
        return {"type": "audio", "audio": (wave, AUDIO_SAMPLING_RATE)}
    if low.endswith(_VIDEO_EXT):
        return {"type": "video", "video": load_video(path)}
    raise MediaError(
        "Not a file type the chat reads: attach an image "
        f"({', '.join(_IMAGE_EXT)}), audio ({', '.join(_AUDIO_EXT)}) or video "
        f"({', '.join(_VIDEO_EXT)})."
    )


def answer_image_question(
    model_name: str, image: Any, question: str, max_new_tokens: int = 24
) -> tuple[str, str]:
    """Image + question → (answer, notice). Errors come back as the answer text."""
    try:
        bundle = get_bundle(model_name)
        if image is None:
            raise MediaError("Upload an image first (PNG or JPEG).")
        content = [{"type": "image", "image": image}]
        if question and question.strip():
            content.append({"type": "text", "text": question.strip()})
        gen = bundle.generate(
            [{"role": "user", "content": content}], max_new_tokens=int(max_new_tokens)
        )
        image_tokens = "?" if gen.multimodal_tokens is None else gen.multimodal_tokens
        prefill = "" if gen.prefill_s is None else f", prefill {gen.prefill_s * 1000:.0f} ms"
        stats = (
            f"\n\n— {gen.prompt_tokens} prompt tokens ({image_tokens} image), "
            f"{gen.generated_tokens} generated{prefill}"
        )
        return gen.text + stats, _notice(bundle)
    except Exception as exc:  # noqa: BLE001 - the UI shows every failure as text
        return error_text(exc), ""
