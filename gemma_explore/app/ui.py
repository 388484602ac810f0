"""The demo's page, built with gradio: one small function per tab.

Every tab re-renders through gradio's event listeners (``.change`` on its inputs and on
the model), with the queue serialising the work and ``trigger_mode="always_last"``
dropping superseded requests, so nothing waits for a button. Uploads arrive as file
paths (``gr.File`` / ``type="filepath"``): gradio never decodes them, our handlers do,
so every bad upload gets our one-line message and clears the tab's stale outputs.

To add a tab: write ``def build_my_tab(ctx: Context) -> None`` that builds its controls
inside ``with gr.Tab(...)`` and wires its listeners (its handler, in ``tabs.py`` or its
own ``*_tab.py``, returns a frozen result whose fields the listener reads), and append
it to :data:`TABS`.

>>> from gemma_explore.app.ui import TABS
>>> [t.__name__ for t in TABS][:2]
['build_image_tab', 'build_audio_tab']
"""

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gemma_explore.app import bundles
from gemma_explore.app.outputs import AudioResult, ImageResult, VideoResult
from gemma_explore.facts.families import DEFAULT_FAMILY, SPEECH_TO_TEXT_FAMILY, FamilySpec

__all__ = [
    "CONCURRENCY",
    "CSS",
    "MAX_UPLOAD",
    "TABS",
    "Context",
    "budget_choices",
    "build_app",
    "build_audio_tab",
    "build_chat_tab",
    "build_image_tab",
    "build_layout_tab",
    "build_serving_tab",
    "build_video_tab",
]

MAX_UPLOAD = "20mb"  # gradio refuses bigger uploads before they reach a handler
CONCURRENCY = 2  # requests that may run the model at once
LIVE = {"trigger_mode": "always_last", "show_progress": "minimal"}  # a re-render per edit
# The page's style (gradio takes it in launch()):
# * figures show at the size they were drawn (100 dpi: 9 pt text = 12.5 px), in a box
#   that scrolls sideways when the column is narrower, so their text never shrinks
#   below 9 px (a 1200 px figure squeezed to a 390 px phone would show 4 px text);
# * tables keep vLLM's names and checkpoint ids whole (no break inside
#   max_num_batched_tokens, nor at the "/" and "-" of google/gemma-4-E4B-it) and scroll
#   sideways instead;
# * gr.Examples' headers wrap instead of being cut.
CSS = """
[id$="_plot"] .matplotlib { display: block !important; overflow-x: auto !important;
                            width: 100% !important; }
[id$="_plot"] img { display: block; max-width: none !important; width: auto !important;
                    height: auto !important; }
.prose table { display: block; overflow-x: auto; }
.prose td, .prose th { word-break: keep-all; overflow-wrap: normal; hyphens: none; }
#serving_table td { white-space: nowrap; }
.gallery th, .examples th, table.examples-table th { white-space: normal !important;
    overflow: visible !important; text-overflow: clip !important; }
"""


@dataclass
class Context:
    """What every tab builder needs: the shared model box and the bundled examples."""

    model: Any  # the gr.Dropdown holding the model name
    samples: dict[str, str]  # "photo" / "speech" / "video" → path of a bundled sample
    # The page's load event: every tab renders its example when the page opens.
    load: Any = None
    # Every budget dropdown: disabled when the chosen family has no budget (Gemma 3n).
    budgets: list[Any] = field(default_factory=list)

    def on_open(self) -> list[Any]:
        """The page-load trigger, as a list to add to a tab's ``gr.on`` triggers."""
        return [self.load] if self.load is not None else []


def _budget_box(elem_id: str, ctx: Context | None = None) -> Any:
    """An image-budget dropdown; its choices follow the loaded model (see build_app)."""
    import gradio as gr

    choices, value, enabled = budget_choices(DEFAULT_FAMILY)  # until the model has loaded
    box = gr.Dropdown(
        choices,
        value=value,
        label="Image budget (max_soft_tokens; families without one: fixed tokens)",
        elem_id=elem_id,
        interactive=enabled,
    )
    if ctx is not None:
        ctx.budgets.append(box)
    return box


def budget_choices(spec: FamilySpec, current: Any = None) -> tuple[list[Any], Any, bool]:
    """(choices, value, enabled) of a budget dropdown for a family: its own budgets and
    default (``current`` kept when it is one of them); a family without budgets keeps
    ``current`` shown but disabled (changing it would re-run the model for an
    identical result).

    >>> from gemma_explore.facts.families import get_family
    >>> budget_choices(get_family("gemma4"), 70)
    ([70, 140, 280, 560, 1120], 70, True)
    >>> budget_choices(get_family("gemma3n"), 70)[2]
    False
    """
    budgets = list(spec.image.budgets)
    if not budgets:
        return ([current] if current is not None else []), current, False
    return budgets, (current if current in budgets else spec.image.default_budget), True


def budget_enabled(model: str) -> bool:
    """Whether ``model``'s family has an image budget.

    >>> budget_enabled("tiny-gemma3n"), budget_enabled("tiny-gemma4")  # doctest: +SKIP
    (False, True)
    """
    try:
        return bool(bundles.analysis_bundle(model).spec.image.budgets)
    except Exception:  # noqa: BLE001 - the notice says why the model did not load
        return True


def _heading(text: str) -> None:
    """A plot's title as text above it: gradio's label badge would cover the figure's."""
    import gradio as gr

    gr.Markdown(f"**{text}**")


def _plot(elem_id: str) -> Any:
    import gradio as gr

    return gr.Plot(show_label=False, elem_id=elem_id)


def build_image_tab(ctx: Context) -> None:
    import gradio as gr

    from gemma_explore.app.tabs import image_tab

    with gr.Tab("Image", id="image"):
        with gr.Row():
            with gr.Column(scale=1, min_width=300):
                image_in = gr.File(
                    ctx.samples["photo"],
                    label="Image (PNG, JPEG, WebP…)",
                    type="filepath",
                    elem_id="image_in",
                )
                budget = _budget_box("image_budget", ctx)
                gr.Examples([[ctx.samples["photo"]]], inputs=[image_in], label="Example image")
                counts = gr.Markdown(elem_id="image_counts")
                parity = gr.Markdown(elem_id="image_parity")
                timings = gr.Markdown(elem_id="image_time")
            with gr.Column(scale=2, min_width=300):
                _heading("Patch grid: what the processor keeps, and its padding")
                patch = _plot("patch_plot")
                # A family with a pooler gets a second figure; Unified (no tower, no
                # pooler) shows its one figure once, so this panel hides for it.
                with gr.Column(elem_id="pooled_panel") as pooled_panel:
                    _heading("Which soft tokens are real, and which are padding")
                    pooled = _plot("pooled_plot")

        def run(model: str, image: Any, b: Any) -> tuple[Any, ...]:
            r = ImageResult.blank() if image is None else image_tab(model, image, b)
            shown = r.pooled_figure is not None or image is None or r.error is not None
            return (
                r.patch_figure,
                r.pooled_figure,
                r.counts,
                r.parity,
                r.timings,
                gr.Column(visible=shown),
            )

        gr.on(
            [image_in.change, budget.change, ctx.model.change, *ctx.on_open()],
            run,
            [ctx.model, image_in, budget],
            [patch, pooled, counts, parity, timings, pooled_panel],
            api_name="image",
            **LIVE,
        )


def build_audio_tab(ctx: Context) -> None:
    import gradio as gr

    from gemma_explore.app.tabs import audio_tab

    with gr.Tab("Audio", id="audio"):
        with gr.Row():
            with gr.Column(scale=1, min_width=300):
                # A file input, as on the Image tab: gr.Audio would refuse a wrong file
                # with gradio's MIME toast before our handler could say what is wrong.
                audio_in = gr.File(
                    ctx.samples["speech"],
                    label="Clip (WAV, FLAC, MP3…)",
                    type="filepath",
                    elem_id="audio_in",
                )
                _recorder(audio_in, "audio_record")
                gr.Examples([[ctx.samples["speech"]]], inputs=[audio_in], label="Example clip")
                counts = gr.Markdown(elem_id="audio_counts")
                parity = gr.Markdown(elem_id="audio_parity")
                timings = gr.Markdown(elem_id="audio_time")
            with gr.Column(scale=2, min_width=300):
                _heading("Waveform, its frames and their tokens")
                mel = _plot("mel_plot")

        def run(model: str, audio: Any) -> tuple[Any, ...]:
            r = AudioResult.blank() if audio is None else audio_tab(model, audio)
            return r.mel_figure, r.counts, r.parity, r.timings

        gr.on(
            [audio_in.change, ctx.model.change, *ctx.on_open()],
            run,
            [ctx.model, audio_in],
            [mel, counts, parity, timings],
            api_name="audio",
            **LIVE,
        )
        transcribe_row(ctx, audio_in)


def _recorder(target: Any, elem_id: str) -> Any:
    """A microphone box whose recording becomes ``target``'s file (and so runs its tab)."""
    import gradio as gr

    mic = gr.Audio(
        sources=["microphone"], type="filepath", label="…or record a clip", elem_id=elem_id
    )
    mic.stop_recording(lambda path: path or gr.update(), [mic], [target], queue=False)
    return mic


def transcribe_row(ctx: Context, audio_in: Any) -> None:
    """Gemma 3n speech-to-text with the fixed prompt vLLM's /v1/audio/transcriptions
    sends (a button: generation is not a live re-render)."""
    import gradio as gr

    from gemma_explore.app.transcribe_tab import transcribe_tab

    with gr.Row():
        language = gr.Textbox(label="Language (ISO 639-1, optional)", elem_id="stt_lang")
        to = gr.Textbox(label="Translate to (optional)", elem_id="stt_to")
        button = gr.Button(
            f"Transcribe ({SPEECH_TO_TEXT_FAMILY.display_name})", elem_id="transcribe_btn"
        )
    transcript = gr.Markdown(elem_id="transcript")
    # A transcript belongs to one clip and one model: a change clears it.
    gr.on([audio_in.change, ctx.model.change], lambda: "", None, [transcript], queue=False)
    button.click(
        lambda m, a, lang, dest: transcribe_tab(m, a, lang, dest).text,
        [ctx.model, audio_in, language, to],
        [transcript],
        api_name="transcribe",
    )


def build_serving_tab(ctx: Context) -> None:
    """What vLLM reserves at start-up for these engine arguments, re-planned live."""
    import gradio as gr

    from gemma_explore.app.serving_tab import (
        LOADED_MODEL,
        SERVING_CHOICES,
        SERVING_DEFAULT,
        serving_tab,
    )

    with gr.Tab("Serving", id="serving"):
        with gr.Row():
            with gr.Column(scale=1, min_width=300):
                # A released checkpoint by default: its real shapes, from the package's
                # cited facts (offline). The tiny model's sizes answer no operator's question.
                checkpoint = gr.Dropdown(
                    list(SERVING_CHOICES),
                    value=SERVING_DEFAULT,
                    label="Checkpoint (released shapes, planned offline)",
                    elem_id="serving_checkpoint",
                )
                controls = [
                    gr.Slider(256, 32768, value=8192, step=256, label="max_model_len"),
                    gr.Slider(0, 16, value=4, step=1, label="limit_mm_per_prompt: image"),
                    gr.Slider(0, 4, value=1, step=1, label="limit_mm_per_prompt: audio"),
                    gr.Slider(0, 4, value=1, step=1, label="limit_mm_per_prompt: video"),
                    gr.Slider(256, 32768, value=8192, step=256, label="max_num_batched_tokens"),
                ]
                budget = _budget_box("serving_budget", ctx)
                table = gr.Markdown(elem_id="serving_table")
            with gr.Column(scale=2, min_width=300):
                _heading("What vLLM reserves: memory, and worst-case tokens per item")
                plot = _plot("serving_plot")

        def run(model: str, chosen: str, b: Any, *values: Any) -> tuple[Any, Any]:
            name = model if chosen == LOADED_MODEL else chosen
            r = serving_tab(name, *values, max_soft_tokens=b)
            return r.figure, r.table

        changes = [ctx.model.change, checkpoint.change, budget.change]
        gr.on(
            [*changes, *(c.change for c in controls), *ctx.on_open()],
            run,
            [ctx.model, checkpoint, budget, *controls],
            [plot, table],
            api_name="serving",
            **LIVE,
        )


def build_video_tab(ctx: Context) -> None:
    import gradio as gr

    from gemma_explore.app.tabs import video_tab

    with gr.Tab("Video", id="video"):
        with gr.Row():
            with gr.Column(scale=1, min_width=300):
                # A file input: gr.Video would need ffmpeg to re-encode uploads.
                video_in = gr.File(
                    ctx.samples["video"],
                    label="Video for Gemma 4 (MP4, MOV, AVI, MKV, WebM)",
                    type="filepath",
                    elem_id="video_in",
                )
                gr.Examples([[ctx.samples["video"]]], inputs=[video_in], label="Example video")
                counts = gr.Markdown(elem_id="video_counts")
                parity = gr.Markdown(elem_id="video_parity")
                timings = gr.Markdown(elem_id="video_time")
            with gr.Column(scale=2, min_width=300):
                _heading("Sampled frames, their timestamps and tokens")
                frames = _plot("frames_plot")

        def run(model: str, video: Any) -> tuple[Any, ...]:
            r = VideoResult.blank() if video is None else video_tab(model, video)
            return r.frames_figure, r.counts, r.parity, r.timings

        gr.on(
            [video_in.change, ctx.model.change, *ctx.on_open()],
            run,
            [ctx.model, video_in],
            [frames, counts, parity, timings],
            api_name="video",
            **LIVE,
        )


def build_layout_tab(ctx: Context) -> None:
    import gradio as gr

    from gemma_explore.app.tabs import layout_tab

    with gr.Tab("Prompt layout", id="layout"):
        with gr.Row():
            with gr.Column(scale=1, min_width=300):
                raw = gr.Checkbox(
                    False,
                    label="Raw prompt, as vLLM's LLM.generate takes it (no chat template; "
                    "one <|image|> / <image_soft_token> per attachment)",
                    elem_id="layout_raw",
                )
                text = gr.Textbox("Describe this.", label="Text", lines=3, elem_id="layout_text")
                image = gr.File(
                    ctx.samples["photo"],
                    label="Image (optional)",
                    type="filepath",
                    elem_id="layout_image",
                )
                audio = gr.File(
                    ctx.samples["speech"],
                    label="Clip (optional)",
                    type="filepath",
                    elem_id="layout_audio",
                )
                budget = _budget_box("layout_budget", ctx)
                gr.Examples(
                    [["Describe this.", ctx.samples["photo"], ctx.samples["speech"]]],
                    inputs=[text, image, audio],
                    label="Example turn",
                )
                counts = gr.Markdown(elem_id="layout_counts")
            with gr.Column(scale=2, min_width=300):
                _heading("Expanded prompt")
                plot = _plot("layout_plot")
                page = gr.HTML(elem_id="layout_html")
                checks = gr.Markdown(elem_id="layout_checks")
                gr.Markdown(
                    "Keys: **BOS** begins the text · **turn▶ / ◀turn** open and close a chat "
                    "turn · **BOI / EOI** begin and end an image · **BOA / EOA** begin and end "
                    "a clip · **image_soft / audio_soft / video_soft**: one placeholder per "
                    "embedding the encoder (or Unified's embedder) hands the model.",
                    elem_id="layout_keys",
                )
                timings = gr.Markdown(elem_id="layout_time")

        def run(model: str, *inputs: Any) -> tuple[Any, ...]:
            r = layout_tab(model, *inputs)
            return r.layout_figure, r.layout_html, r.counts, r.parity, r.timings

        gr.on(
            [
                text.change,
                image.change,
                audio.change,
                budget.change,
                raw.change,
                ctx.model.change,
                *ctx.on_open(),
            ],
            run,
            [ctx.model, text, image, audio, budget, raw],
            [plot, page, counts, checks, timings],
            api_name="layout",
            **LIVE,
        )


class _StopEvents:
    """One threading.Event per browser session's running chat turn: Stop sets it, and the
    transformers engine's StoppingCriteria ends generation at the next token."""

    def __init__(self) -> None:
        self._events: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def new(self, session: str) -> threading.Event:
        with self._lock:
            self._events[session] = event = threading.Event()
            return event

    def stop(self, session: str) -> None:
        with self._lock:
            event = self._events.get(session)
        if event is not None:
            event.set()


_STOPS = _StopEvents()


def build_chat_tab(ctx: Context) -> None:
    import gradio as gr

    from gemma_explore.app.chat import chat_preview, chat_stream

    with gr.Tab("Chat", id="chat"):
        chatbot = gr.Chatbot(label="Conversation", height=380, elem_id="chatbot")
        counts = gr.Markdown(elem_id="chat_counts")
        example = {"text": "What is in this picture?", "files": [ctx.samples["photo"]]}
        chat_in = gr.MultimodalTextbox(
            example,  # the example waits in the box: Enter asks it
            file_types=["image", "audio", "video"],
            file_count="multiple",
            label="Message (attach an image, clip or video)",
            placeholder="Ask about an image, a clip or a video…",
            elem_id="chat_in",
        )
        with gr.Row():
            stop_btn = gr.Button("Stop", variant="stop", elem_id="chat_stop", scale=0)
            max_tokens = gr.Slider(
                1, 256, value=32, step=1, label="Max new tokens", elem_id="chat_max_tokens"
            )
            budget = _budget_box("chat_budget", ctx)
        examples = gr.Examples(
            [[example]],
            inputs=[chat_in],
            label="Example question (asks it at once)",
        )

        def respond(m, message, history, n, b, request: gr.Request):
            stop = _STOPS.new(getattr(request, "session_hash", None) or "")
            outcome: dict[str, Any] = {}
            for hist, line in chat_stream(m, message, history, n, b, stop=stop, outcome=outcome):
                # A turn that failed keeps the question in the box, to fix and resend.
                yield hist, (message if outcome.get("failed") else None), line

        inputs = [ctx.model, chat_in, chatbot, max_tokens, budget]
        outputs = [chatbot, chat_in, counts]
        chat_in.submit(respond, inputs, outputs, api_name="chat")
        # One click on the example fills the box and asks.
        examples.load_input_event.then(respond, inputs, outputs, api_visibility="private")

        gr.on(
            [ctx.model.change, budget.change, *ctx.on_open()],
            chat_preview,
            [ctx.model, chat_in, budget],
            [counts],
            api_visibility="private",
            **LIVE,
        )

        def stop(request: gr.Request) -> None:
            _STOPS.stop(getattr(request, "session_hash", None) or "")

        # No cancels=: the turn ends at its next token and says "stopped by you" (a
        # cancelled event would never show its last update).
        stop_btn.click(stop, None, None, queue=False, api_name="chat_stop")


TABS: list[Callable[[Context], None]] = [
    build_image_tab,
    build_audio_tab,
    build_video_tab,
    build_layout_tab,
    build_serving_tab,
    build_chat_tab,
]


def build_app(model: str = "tiny-gemma4", *, tabs: list[Callable[[Context], None]] | None = None):
    """The demo's ``gr.Blocks``, queued; ``tabs`` defaults to :data:`TABS`."""
    import gradio as gr

    from gemma_explore.samples import SAMPLES_DIR

    samples = {
        "photo": str(SAMPLES_DIR / "photo.jpg"),
        "speech": str(SAMPLES_DIR / "speech.wav"),
        "video": str(SAMPLES_DIR / "video.mp4"),
    }
    from gemma_explore.models.tiny import TINY_NAMES

    choices = list(dict.fromkeys([model, *TINY_NAMES]))  # the three offline families
    with gr.Blocks(title="gemma_explore", analytics_enabled=False) as demo:
        gr.Markdown(
            "# gemma_explore\nHow Gemma 3n, Gemma 4 and Gemma 4 Unified turn pictures, sound "
            "and video "
            "into tokens — computed by the real processors and encoders."
        )
        model_box = gr.Dropdown(choices, value=model, label="Model", elem_id="model")
        notice = gr.Markdown(
            bundles.model_notice(model)
            if bundles.is_loaded(model)
            else f"Loading **{model}**… (the tabs answer once it is ready)",
            elem_id="notice",
        )
        # Fires once the page has opened and the model has loaded (the notice first): the
        # tabs then render their examples, never racing the model's first import.
        ready = gr.State(0)
        ctx = Context(model=model_box, samples=samples, load=ready.change)
        # "wrap": at phone width every tab stays on screen (the default hides some behind ⋯).
        with gr.Tabs(elem_id="tabs", overflow_behavior="wrap"):
            for tab in tabs if tabs is not None else TABS:
                tab(ctx)
        model_box.change(bundles.model_notice, [model_box], [notice], api_name="model")
        demo.load(bundles.model_notice, [model_box], [notice]).then(
            lambda n: n + 1, [ready], [ready], api_visibility="private"
        )
        if ctx.budgets:

            def budgets(m: str, *current: Any) -> list[Any]:
                """Each dropdown follows the loaded family: its budgets, or disabled."""
                try:
                    spec = bundles.analysis_bundle(m).spec
                except Exception:  # noqa: BLE001 - the notice says why it did not load
                    return [gr.update() for _ in current]
                updates = [budget_choices(spec, value) for value in current]
                return [gr.update(choices=c, value=v, interactive=on) for c, v, on in updates]

            gr.on(
                [model_box.change, ready.change],
                budgets,
                [model_box, *ctx.budgets],
                ctx.budgets,
                api_visibility="private",
            )
    demo.queue(default_concurrency_limit=CONCURRENCY, max_size=64)
    return demo


def _warm_figures() -> None:
    """Import matplotlib and draw one small figure (fonts, glyph cache, the image
    encoder), so the first request's figures cost what every later one does."""
    import io

    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 1))
    ax = fig.subplots()
    ax.imshow([[0.0, 1.0]], cmap="magma")
    ax.set_title("warm-up 0123456789")
    fig.savefig(io.BytesIO(), format="webp")


def preload(model: str) -> threading.Thread:
    """Load ``model`` and warm matplotlib in a background thread, so the page is served
    while torch and the model load (the notice says so until the first request finds it
    ready)."""

    def work() -> None:
        try:
            bundles.get_bundle(model)
        except Exception:  # noqa: BLE001 - the notice shows the error on the first request
            pass
        _warm_figures()

    thread = threading.Thread(target=work, name=f"load {model}", daemon=True)
    thread.start()
    return thread


def launch(
    model: str = "tiny-gemma4",
    *,
    engine: str | None = None,
    base_url: str | None = None,
    host: str = "127.0.0.1",
    port: int = 7860,
    block: bool = True,
    quiet: bool = False,
):
    """Serve the demo: on 127.0.0.1 unless told otherwise, never a share link, uploads
    capped at :data:`MAX_UPLOAD`. The model loads in the background. ``engine``: a name
    from :data:`~gemma_explore.engines.load.ENGINES` (None: the first, transformers)."""
    from gemma_explore.engines.load import ENGINES, engine_options

    name = engine or ENGINES[0]
    bundles.configure(model, **engine_options(name, base_url=base_url))
    demo = build_app(model)
    demo.launch(
        server_name=host,
        server_port=port,
        share=False,
        max_file_size=MAX_UPLOAD,
        show_error=True,
        prevent_thread_lock=True,
        css=CSS,
        quiet=True,  # gradio's own lines suggest share=True, which this demo never uses
    )
    if not quiet:
        print(f"* The demo is at {demo.local_url} (this machine only; Ctrl+C stops it)")
    # Only now import torch and load the model: started earlier, that thread would hold
    # the interpreter while gradio imports, and the page would come later.
    preload(model)
    if block:
        demo.block_thread()
    return demo
