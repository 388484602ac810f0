"""The demo's page, built with gradio: one small function per tab.

Every tab renders through gradio's event listeners, with the queue serialising the work
and ``trigger_mode="always_last"`` dropping superseded requests, so nothing waits for a
button. An input's ``.change`` re-renders its tab at once; a new model re-renders only the
tab on screen, and every other tab renders when it is opened (:func:`_wire`). Uploads
arrive as file paths (``gr.File`` / ``type="filepath"``): gradio never decodes them, our
handlers do, so every bad upload gets our one-line message, shown where the tab's figure
would be, and clears the tab's stale outputs.

To add a tab: write ``def build_my_tab(ctx: Context) -> None`` that builds its controls
inside ``with gr.Tab(...)`` and wires its listeners with :func:`_wire` (its handler, in
``tabs.py`` or its own ``*_tab.py``, returns a frozen result whose fields the listener
reads), and append it to :data:`TABS`.

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
from gemma_explore.facts.families import (
    DEFAULT_FAMILY,
    SPEECH_TO_TEXT_FAMILY,
    FamilySpec,
    family_from_name,
)

__all__ = [
    "CONCURRENCY",
    "CSS",
    "HEAD",
    "LAUNCH_OPTIONS",
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
_MAX_UPLOAD_BYTES = 20 * 1024 * 1024  # the same cap, for the page's own message (HEAD)
CONCURRENCY = 2  # requests that may run the model at once
LIVE = {"trigger_mode": "always_last", "show_progress": "minimal"}  # a re-render per edit
# Below this width a tab's two columns stack, the figure first (its column's min_width
# and the media query below agree: 300 + 640 px and the gaps).
STACK_BELOW_PX = 1000
# The page's style (gradio takes it in launch()):
# * figures scale down to their column (never wider, never a hidden sideways scroll);
#   below STACK_BELOW_PX the columns stack, figure (or the message that replaces it)
#   first, so a phone sees it without scrolling;
# * tables keep vLLM's names and checkpoint ids whole (no break inside
#   max_num_batched_tokens, nor at the "/" and "-" of google/gemma-4-E4B-it); their values
#   wrap at spaces so the table fits its column;
# * gr.Examples' headers wrap instead of being cut;
# * the upload cap's message (HEAD) shows under the box that refused the file;
# * a file box holding a file has no picker (gradio's gr.File): a line under the file says
#   how to choose another.
REPLACE_FILE = "To choose another file, press × (Clear) at this box's top right first."
CSS = f"""
[id$="_plot"] .matplotlib {{ display: block !important; overflow: hidden !important;
                             width: 100% !important; }}
[id$="_plot"] img {{ display: block; max-width: 100% !important; width: auto !important;
                     height: auto !important; margin: 0 auto; }}
.prose td, .prose th {{ word-break: keep-all; overflow-wrap: normal; hyphens: none; }}
.prose td:first-child {{ white-space: nowrap; }}
#serving_table td:first-child {{ white-space: normal; }}
.gallery th, .examples th, table.examples-table th {{ white-space: normal !important;
    overflow: visible !important; text-overflow: clip !important; }}
.upload-cap {{ color: #b91c1c; font-weight: 600; margin: 4px 0; }}
[id$="_in"] .file-preview-holder::after, #layout_image .file-preview-holder::after,
#layout_audio .file-preview-holder::after {{ content: "{REPLACE_FILE}"; display: block;
    font-size: 12px; padding: 4px 8px; color: var(--block-info-text-color); }}
@media (max-width: {STACK_BELOW_PX}px) {{ .plot-col {{ order: -1; }} }}
@media (max-width: 600px) {{ #serving_table table, [id$="_counts"] table {{ font-size: 12px; }}
    .prose td, .prose th {{ padding: 4px 6px !important; }} }}
"""
# The upload cap in the page's own words: a file over MAX_UPLOAD is stopped before gradio
# sees it (gradio would show a bare "exceeds the maximum size" toast, twice), and a line
# under its box says which file, how big, and what to do.
HEAD = f"""<script>
(() => {{
  const LIMIT = {_MAX_UPLOAD_BYTES};
  const block = el => el && (el.closest('[id$="_in"], [id$="_image"], [id$="_audio"]')
                             || el.closest('.block'));
  const check = (event, files) => {{
    const host = block(event.target);
    if (!host || !files || !files.length) return;
    host.querySelectorAll('.upload-cap').forEach(n => n.remove());
    const big = [...files].filter(f => f.size > LIMIT);
    if (!big.length) return;
    event.stopImmediatePropagation();
    event.preventDefault();
    if (event.target.value !== undefined && event.target.type === 'file') event.target.value = '';
    const note = document.createElement('div');
    note.className = 'upload-cap';
    // The advice for the file's own kind (its MIME type, else the box it was dropped on).
    const fix = f => {{
      const kind = (f.type || '').split('/')[0] || (host.id || '').split('_')[0];
      return {{audio: 'Cut the clip shorter', image: 'Shrink the image',
               video: 'Shorten the video'}}[kind] || 'Use a smaller file';
    }};
    note.textContent = big.map(f => '✗ ' + f.name + ' is ' + (f.size / 2 ** 20).toFixed(1)
      + ' MB: the demo takes files up to 20 MB. ' + fix(f) + ', then attach it again.')
      .join(' ');
    host.appendChild(note);
  }};
  for (const kind of ['change', 'input']) {{
    window.addEventListener(kind, e => {{
      if (e.target && e.target.type === 'file') check(e, e.target.files);
    }}, true);
  }}
  window.addEventListener('drop', e => check(e, e.dataTransfer && e.dataTransfer.files), true);
}})();
</script>"""
# How the page is launched (launch() and the tests' server alike): on top of the host
# and port, never a share link, uploads capped, our style and script.
LAUNCH_OPTIONS: dict[str, Any] = {
    "share": False,
    "max_file_size": MAX_UPLOAD,
    "show_error": True,
    "css": CSS,
    "head": HEAD,
}


@dataclass
class Context:
    """What every tab builder needs: the shared model box, the bundled examples, and the
    events that say a tab should render."""

    model: Any  # the gr.Dropdown holding the model name
    samples: dict[str, str]  # "photo" / "speech" / "video" → path of a bundled sample
    # Fires once the page has opened and after each model switch, once the model has
    # loaded (the banner first): the tab on screen renders for it.
    load: Any = None
    # Which tab is on screen (a gr.State holding its id): the others wait to be opened.
    current: Any = None
    # Every budget dropdown: disabled when the chosen family has no budget (Gemma 3n).
    budgets: list[Any] = field(default_factory=list)
    # Buttons only some families use, with the test: (button, spec → enabled).
    family_buttons: list[tuple[Any, Callable[[FamilySpec], bool]]] = field(default_factory=list)

    def on_open(self) -> list[Any]:
        """The model-ready trigger, as a list to add to a listener's triggers."""
        return [self.load] if self.load is not None else []


def _wire(
    ctx: Context,
    tab: Any,
    key: str,
    render: Callable[..., tuple[Any, ...]],
    inputs: list[Any],
    outputs: list[Any],
    changes: list[Any],
    api_name: str,
) -> None:
    """Wire a tab: ``render(model, *inputs)`` → ``outputs``, at once when one of
    ``changes`` fires, and for a new model only if the tab is on screen (else when it is
    next opened). A per-session State remembers which model the tab last rendered for.

    The tab's three listeners (an edit, the model becoming ready, the tab opened) render
    one at a time, in the order they were triggered (one gradio concurrency group per
    tab): run side by side, a render started before an edit (the tab just opened, say)
    could finish after the edit's own and put the old inputs' result back on screen."""
    import gradio as gr

    done = gr.State(None)
    one_at_a_time = {**LIVE, "concurrency_id": f"render-{key}", "concurrency_limit": 1}

    def live(model: str, *values: Any) -> tuple[Any, ...]:
        return (*render(model, *values), model)

    def opened(model: str, current: Any, last: Any, *values: Any) -> tuple[Any, ...]:
        if last == model or (current is not None and current != key):
            return tuple(gr.skip() for _ in range(len(outputs) + 1))
        return (*render(model, *values), model)

    def selected(model: str, last: Any, *values: Any) -> tuple[Any, ...]:
        return opened(model, key, last, *values)

    gr.on(changes, live, [ctx.model, *inputs], [*outputs, done], api_name=api_name, **one_at_a_time)
    if ctx.load is not None:
        state = [ctx.current] if ctx.current is not None else [gr.State(None)]
        gr.on(
            ctx.on_open(),
            opened,
            [ctx.model, *state, done, *inputs],
            [*outputs, done],
            api_visibility="private",
            **one_at_a_time,
        )
    if ctx.current is not None:
        tab.select(lambda: key, None, [ctx.current], queue=False, api_visibility="private")
        tab.select(
            selected,
            [ctx.model, done, *inputs],
            [*outputs, done],
            api_visibility="private",
            **one_at_a_time,
        )


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
        allow_custom_value=True,  # a family without budgets shows "fixed: 256 tokens"
    )
    if ctx is not None:
        ctx.budgets.append(box)
    return box


def budget_choices(spec: FamilySpec, current: Any = None) -> tuple[list[Any], Any, bool]:
    """(choices, value, enabled) of a budget dropdown for a family: its own budgets and
    default (``current`` kept when it is one of them); a family without budgets shows
    what it uses instead, disabled (changing it would re-run the model for an identical
    result), never the last family's stale budget.

    >>> from gemma_explore.facts.families import get_family
    >>> budget_choices(get_family("gemma4"), 70)
    ([70, 140, 280, 560, 1120], 70, True)
    >>> budget_choices(get_family("gemma3n"), 70)
    (['fixed: 256 tokens per image'], 'fixed: 256 tokens per image', False)
    """
    budgets = list(spec.image.budgets)
    if not budgets:
        fixed = f"fixed: {spec.image.fixed_soft_tokens} tokens per image"
        return [fixed], fixed, False
    return budgets, (current if current in budgets else spec.image.default_budget), True


def budget_enabled(model: str) -> bool:
    """Whether ``model``'s family has an image budget.

    >>> budget_enabled("tiny-gemma3n"), budget_enabled("tiny-gemma4")  # doctest: +SKIP
    (False, True)
    """
    spec = _family_of(model)
    return True if spec is None else bool(spec.image.budgets)


def _family_of(model: str) -> FamilySpec | None:
    """The family of ``model``: from its name (no load), else from its loaded bundle."""
    spec = family_from_name(model)
    if spec is not None or not bundles.is_loaded(model):
        return spec
    try:
        return bundles.analysis_bundle(model).spec
    except Exception:  # noqa: BLE001 - the notice says why the model did not load
        return None


def _heading(text: str) -> None:
    """A plot's title as text above it: gradio's label badge would cover the figure's."""
    import gradio as gr

    gr.Markdown(f"**{text}**")


def _plot(elem_id: str) -> Any:
    import gradio as gr

    return gr.Plot(show_label=False, elem_id=elem_id)


def _error_slot(elem_id: str) -> Any:
    """Where a tab's message goes: at the top of its figure's column, where the figure
    it replaces would be (first on a phone, where that column comes first)."""
    import gradio as gr

    return gr.Markdown(elem_id=elem_id, elem_classes=["tab-error"])


def _columns() -> tuple[Any, Any]:
    """A tab's controls column and its figure column (``plot-col``: first when stacked)."""
    import gradio as gr

    left = gr.Column(scale=1, min_width=300)
    right = gr.Column(scale=2, min_width=640, elem_classes=["plot-col"])
    return left, right


def _shown(r: Any) -> tuple[str, str]:
    """(counts, error) as the page shows them: the message once, in the figure's place."""
    return ("" if r.error else r.counts), (r.error or "")


def build_image_tab(ctx: Context) -> None:
    import gradio as gr

    from gemma_explore.app.tabs import image_tab

    with gr.Tab("Image", id="image") as tab:
        with gr.Row():
            left, right = _columns()
            with left:
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
            with right:
                error = _error_slot("image_error")
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
            counts_md, error_md = _shown(r)
            return (
                r.patch_figure,
                r.pooled_figure,
                counts_md,
                r.parity,
                r.timings,
                error_md,
                gr.Column(visible=shown),
            )

        _wire(
            ctx,
            tab,
            "image",
            run,
            [image_in, budget],
            [patch, pooled, counts, parity, timings, error, pooled_panel],
            [image_in.change, budget.change],
            "image",
        )


def build_audio_tab(ctx: Context) -> None:
    import gradio as gr

    from gemma_explore.app.tabs import audio_tab, long_audio_figure

    with gr.Tab("Audio", id="audio") as tab:
        with gr.Row():
            left, right = _columns()
            with left:
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
            with right:
                error = _error_slot("audio_error")
                _heading("Waveform, its frames and their tokens")
                mel = _plot("mel_plot")
                # Past 30 s: the windows the model hears whole (empty for a shorter clip).
                windows = _plot("audio_windows_plot")

        def run(model: str, audio: Any) -> tuple[Any, ...]:
            r = AudioResult.blank() if audio is None else audio_tab(model, audio)
            counts_md, error_md = _shown(r)
            figure = long_audio_figure(r.plan)
            return r.mel_figure, counts_md, r.parity, r.timings, error_md, figure

        _wire(
            ctx,
            tab,
            "audio",
            run,
            [audio_in],
            [mel, counts, parity, timings, error, windows],
            [audio_in.change],
            "audio",
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


def _transcribes(spec: FamilySpec) -> bool:
    return spec.transcribes


def transcribe_row(ctx: Context, audio_in: Any) -> None:
    """Gemma 3n speech-to-text with the fixed prompt vLLM's /v1/audio/transcriptions
    sends (a button: generation is not a live re-render). The button is active only
    under a family that transcribes; the line beside it says which one does."""
    import gradio as gr

    from gemma_explore.app.transcribe_tab import transcribe_tab

    stt = SPEECH_TO_TEXT_FAMILY.display_name
    with gr.Row():
        language = gr.Textbox(label="Language (ISO 639-1, optional)", elem_id="stt_lang")
        to = gr.Textbox(label="Translate to (optional)", elem_id="stt_to")
        button = gr.Button(
            f"Transcribe ({stt})",
            elem_id="transcribe_btn",
            interactive=_transcribes(DEFAULT_FAMILY),
        )
    gr.Markdown(
        f"Transcription is {stt}'s (pick a {stt} model in Model); under Gemma 4, attach the "
        'clip in the Chat tab and ask "Transcribe this audio."',
        elem_id="transcribe_help",
    )
    ctx.family_buttons.append((button, _transcribes))
    transcript = gr.Markdown(elem_id="transcript")
    # A transcript belongs to one clip and one model: a change clears it.
    gr.on([audio_in.change, ctx.model.change], lambda: "", None, [transcript], queue=False)
    button.click(
        lambda m, a, lang, dest: transcribe_tab(m, a, lang, dest).text,
        [ctx.model, audio_in, language, to],
        [transcript],
        api_name="transcribe",
    )


def _lenient(slider: Any) -> Any:
    """``slider`` with its typed value reaching the handler even when out of range:
    gradio's own check would refuse it with a bare toast and leave the box showing a
    value the plot and table never saw; the handler refuses it in the control's words."""
    slider.preprocess = lambda payload: payload
    return slider


def _serving_controls() -> tuple[list[Any], Any, Any]:
    """The Serving tab's engine-argument sliders and GPU controls, built from the one
    description the handler checks them against (serving_tab.CONTROLS)."""
    import gradio as gr

    from gemma_explore.app.serving_tab import CONTROLS

    boxes = {}
    for c in CONTROLS:
        # The GPU's memory is typed (no range: the handler refuses a bad one in its words,
        # where gradio's own check would show a bare toast); the rest are sliders.
        box = (
            gr.Number(value=c.default, label=c.label, elem_id=f"serving_{c.key}")
            if c.key == "gpu_memory_gib"
            else _lenient(
                gr.Slider(
                    c.low,
                    c.high,
                    value=c.default,
                    step=c.step,
                    label=c.label,
                    elem_id=f"serving_{c.key}",
                )
            )
        )
        boxes[c.key] = box
    gpu = [boxes.pop("gpu_memory_gib"), boxes.pop("gpu_memory_utilization")]
    return list(boxes.values()), gpu[0], gpu[1]


def build_serving_tab(ctx: Context) -> None:
    """What vLLM reserves at start-up for these engine arguments on this GPU, re-planned
    live; the budget box follows the checkpoint chosen here."""
    import gradio as gr

    from gemma_explore.app.serving_tab import (
        SERVING_CHOICES,
        SERVING_DEFAULT,
        VLLM_CHOICES,
        VLLM_DEFAULT,
        VLLM_LABEL,
    )

    with gr.Tab("Serving", id="serving") as tab:
        with gr.Row():
            left, right = _columns()
            with left:
                # A released checkpoint by default: its real shapes, from the package's
                # cited facts (offline). The tiny model's sizes answer no operator's question.
                checkpoint = gr.Dropdown(
                    list(SERVING_CHOICES),
                    value=SERVING_DEFAULT,
                    label="Checkpoint (released shapes, planned offline)",
                    elem_id="serving_checkpoint",
                )
                # The release whose rules plan the engine (the installed one, else the newest).
                release = gr.Dropdown(
                    list(VLLM_CHOICES), value=VLLM_DEFAULT, label=VLLM_LABEL, elem_id="serving_vllm"
                )
                controls, gpu, util = _serving_controls()
                budget = _budget_box("serving_budget")  # follows `checkpoint`, not Model
            with right:
                error = _error_slot("serving_error")
                warnings = gr.Markdown(elem_id="serving_warnings")
                _heading("What vLLM reserves: memory, and worst-case tokens per item")
                assumption = gr.Markdown(elem_id="serving_assumption")
                plot = _plot("serving_plot")
        table = gr.Markdown(elem_id="serving_table")  # full width: its values stay whole
        outputs = [plot, table, error, warnings, assumption]
        _wire_serving(ctx, tab, checkpoint, budget, [*controls, gpu, util, release], outputs)
        _probe_row()


def _probe_row() -> None:
    """Probe a running server: does it count like the plan above? Runs on the button
    only (it sends requests), bounded in requests and seconds."""
    import gradio as gr

    from gemma_explore.app.serving_tab import probe_tab

    _heading("Probe a running server: does it count like this?")
    with gr.Row():
        url = gr.Textbox(
            label="Server URL", placeholder="http://127.0.0.1:8000/v1", elem_id="probe_url"
        )
        model = gr.Textbox(
            label="Served model", placeholder="google/gemma-4-E4B-it", elem_id="probe_model"
        )
        button = gr.Button("Probe", elem_id="probe_button")
    error = _error_slot("probe_error")
    plot = _plot("probe_plot")
    table = gr.Markdown(elem_id="probe_table")

    def run(u: str, m: str) -> tuple[Any, str, str]:
        r = probe_tab(u, m)
        return r.figure, r.table, r.error or ""

    button.click(run, [url, model], [plot, table, error], api_name="probe")


def _wire_serving(
    ctx: Context, tab: Any, checkpoint: Any, budget: Any, values: list[Any], outputs: list[Any]
) -> None:
    """The budget box follows the checkpoint chosen on the tab (or the model above, when
    that is the choice); every control re-plans, and plot, table and verdict change
    together (a refused value clears them all and says which control)."""
    import gradio as gr

    from gemma_explore.app.serving_tab import (
        LOADED_MODEL,
        serving_family,
        serving_tab,
        utilization_default,
    )

    def follow(model: str, chosen: str, current: Any) -> Any:
        spec = serving_family(chosen, model)
        if spec is None:
            return gr.update()
        choices, value, on = budget_choices(spec, current)
        return gr.update(choices=choices, value=value, interactive=on)

    gr.on(
        [checkpoint.change, *ctx.on_open()],
        follow,
        [ctx.model, checkpoint, budget],
        [budget],
        api_visibility="private",
        queue=False,
    )

    # A new release moves gpu_memory_utilization to what that release uses unset (its
    # default share, or 1.0 with the extensible KV cache): the slider never carries one
    # release's default into another as if it were yours.
    util, release = values[6], values[7]
    release.change(
        lambda v: gr.update(value=utilization_default(v or None)),
        [release],
        [util],
        api_visibility="private",
        queue=False,
    )

    def run(model: str, chosen: str, b: Any, *v: Any) -> tuple[Any, ...]:
        name = model if chosen == LOADED_MODEL else chosen
        spec = serving_family(chosen, model)
        b = b if spec is not None and spec.image.budgets else None
        r = serving_tab(
            name,
            *v[:5],
            max_soft_tokens=b,
            gpu_memory_gib=v[5],
            gpu_memory_utilization=v[6],
            vllm_version=v[7] if len(v) > 7 else None,  # the API's callers may leave it out
        )
        return r.figure, r.table, r.error or "", r.warnings, r.assumption

    _wire(
        ctx,
        tab,
        "serving",
        run,
        [checkpoint, budget, *values],
        outputs,
        [checkpoint.change, budget.change, *(c.change for c in values)],
        "serving",
    )


def build_video_tab(ctx: Context) -> None:
    import gradio as gr

    from gemma_explore.app.tabs import video_tab

    with gr.Tab("Video", id="video") as tab:
        with gr.Row():
            left, right = _columns()
            with left:
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
            with right:
                error = _error_slot("video_error")
                _heading("Sampled frames, their timestamps and tokens")
                frames = _plot("frames_plot")

        def run(model: str, video: Any) -> tuple[Any, ...]:
            r = VideoResult.blank() if video is None else video_tab(model, video)
            counts_md, error_md = _shown(r)
            return r.frames_figure, counts_md, r.parity, r.timings, error_md

        _wire(
            ctx,
            tab,
            "video",
            run,
            [video_in],
            [frames, counts, parity, timings, error],
            [video_in.change],
            "video",
        )


def build_layout_tab(ctx: Context) -> None:
    import gradio as gr

    from gemma_explore.app.tabs import layout_tab

    with gr.Tab("Prompt layout", id="layout") as tab:
        with gr.Row():
            left, right = _columns()
            with left:
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
            with right:
                error = _error_slot("layout_error")
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
            counts_md, error_md = _shown(r)
            return r.layout_figure, r.layout_html, counts_md, r.parity, r.timings, error_md

        _wire(
            ctx,
            tab,
            "layout",
            run,
            [text, image, audio, budget, raw],
            [plot, page, counts, checks, timings, error],
            [text.change, image.change, audio.change, budget.change, raw.change],
            "layout",
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

    def pressed(self, session: str) -> bool:
        """Whether Stop was pressed during the session's last turn."""
        with self._lock:
            event = self._events.get(session)
        return event is not None and event.is_set()

    def stop(self, session: str) -> None:
        with self._lock:
            event = self._events.get(session)
        if event is not None:
            event.set()


_STOPS = _StopEvents()


def build_chat_tab(ctx: Context) -> None:
    import gradio as gr

    from gemma_explore.app.chat import FRESH_PROMPT, chat_preview

    with gr.Tab("Chat", id="chat") as tab:
        # Each message its own bubble: a refusal or an error never reads as part of the
        # answer before it.
        chatbot = gr.Chatbot(
            label=f"Conversation ({FRESH_PROMPT})",
            height=380,
            elem_id="chatbot",
            group_consecutive_messages=False,
        )
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
            # Active only while a turn runs; pressed, it says so at once.
            stop_btn = gr.Button(
                "Stop", variant="stop", elem_id="chat_stop", scale=0, interactive=False
            )
            max_tokens = gr.Slider(
                1, 256, value=32, step=1, label="Max new tokens", elem_id="chat_max_tokens"
            )
            budget = _budget_box("chat_budget", ctx)
        examples = gr.Examples(
            [[example]],
            inputs=[chat_in],
            label="Example question (asks it at once)",
        )
        inputs = [ctx.model, chat_in, chatbot, max_tokens, budget]
        outputs = [chatbot, chat_in, counts]
        _wire_turn(chat_in.submit, stop_btn, inputs, outputs, api_name="chat")
        # One click on the example fills the box and asks.
        _wire_turn(examples.load_input_event.then, stop_btn, inputs, outputs, api_name=None)

        def preview(m: str, message: Any, b: Any) -> tuple[Any]:
            line = chat_preview(m, message, b)
            return (line if line else gr.skip(),)  # an emptied box keeps the turn's counts

        _wire(
            ctx,
            tab,
            "chat",
            preview,
            [chat_in, budget],
            [counts],
            [chat_in.change, budget.change],
            "chat_preview",
        )

        def stop(request: gr.Request) -> Any:
            _STOPS.stop(getattr(request, "session_hash", None) or "")
            return gr.update(value="Stopping…", interactive=False)

        # No cancels=: the turn ends at its next token and says "stopped by you" (a
        # cancelled event would never show its last update).
        stop_btn.click(stop, None, [stop_btn], queue=False, api_name="chat_stop")


def _respond(m, message, history, n, b, request: Any = None):
    """One streamed turn (chat_stream), for the page: the box empties when the turn is
    sent; a turn that failed gives the box back what chat_stream says (the message
    without the files it refused, or the whole message to fix and resend)."""
    from gemma_explore.app.chat import chat_stream

    stop = _STOPS.new(getattr(request, "session_hash", None) or "")
    outcome: dict[str, Any] = {}
    for hist, line in chat_stream(m, message, history, n, b, stop=stop, outcome=outcome):
        yield hist, (outcome.get("box") if outcome.get("failed") else None), line


def _wire_turn(trigger: Callable, stop_btn: Any, inputs: list, outputs: list, api_name) -> None:
    """``trigger`` starts a turn: Stop becomes active first, the turn streams, and Stop
    is inactive again after it ("Stopped" when it was pressed, else "Stop")."""
    import gradio as gr

    def respond(m, message, history, n, b, request: gr.Request):
        yield from _respond(m, message, history, n, b, request)

    def start() -> Any:
        return gr.update(value="Stop", interactive=True)

    def end(request: gr.Request) -> Any:
        pressed = _STOPS.pressed(getattr(request, "session_hash", None) or "")
        return gr.update(value="Stopped" if pressed else "Stop", interactive=False)

    private = {"api_visibility": "private"}
    named = {"api_name": api_name} if api_name else private
    (
        trigger(start, None, [stop_btn], queue=False, **private)
        .then(respond, inputs, outputs, **named)
        .then(end, None, [stop_btn], queue=False, **private)
    )


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

    from gemma_explore.models.tiny import TINY_NAMES
    from gemma_explore.samples import SAMPLES_DIR

    samples = {
        "photo": str(SAMPLES_DIR / "photo.jpg"),
        "speech": str(SAMPLES_DIR / "speech.wav"),
        "video": str(SAMPLES_DIR / "video.mp4"),
    }
    choices = list(dict.fromkeys([model, *TINY_NAMES]))  # the three offline families
    with gr.Blocks(title="gemma_explore", analytics_enabled=False) as demo:
        gr.Markdown(
            "# gemma_explore\nHow Gemma 3n, Gemma 4 and Gemma 4 Unified turn pictures, sound "
            "and video "
            "into tokens — computed by the real processors and encoders."
        )
        model_box = gr.Dropdown(choices, value=model, label="Model", elem_id="model")
        notice = gr.Markdown(
            bundles.model_notice(model) if bundles.is_loaded(model) else _loading(model),
            elem_id="notice",
        )
        # Fires once the page has opened and after each switch, once the model has loaded
        # (the notice first): the tab on screen then renders, never racing the load.
        ready = gr.State(0)
        current = gr.State("image")  # the tab on screen: the first, until another is opened
        ctx = Context(model=model_box, samples=samples, load=ready.change, current=current)
        # "wrap": at phone width every tab stays on screen (the default hides some behind ⋯).
        with gr.Tabs(elem_id="tabs", overflow_behavior="wrap"):
            for tab in tabs if tabs is not None else TABS:
                tab(ctx)
        _wire_model(demo, ctx, notice, ready)
    demo.queue(default_concurrency_limit=CONCURRENCY, max_size=64)
    return demo


def _loading(model: str) -> str:
    """The banner while ``model`` loads: a tiny model's warning at once (its checkpoint
    named from its family), and that the tabs answer once it is ready."""
    from gemma_explore.models.tiny import TINY_NAMES

    spec = family_from_name(model)
    waiting = f"Loading **{model}**… (the tabs answer once it is ready)"
    if model in TINY_NAMES and spec is not None:
        return f"{bundles.random_weights_notice(spec)}\n\n{waiting}"
    return waiting


def _wire_model(demo: Any, ctx: Context, notice: Any, ready: Any) -> None:
    """A model switch: the banner and the controls change first (from the family the
    name says, no load), then the model loads and its notice shows, then the tab on
    screen renders (the others when they are opened)."""
    import gradio as gr

    buttons = [b for b, _ in ctx.family_buttons]
    controls = [*ctx.budgets, *buttons]

    def first(m: str, *current: Any) -> list[Any]:
        spec = _family_of(m)
        if spec is None:
            return [_loading(m), *(gr.update() for _ in controls)]
        budgets = [budget_choices(spec, v) for v in current[: len(ctx.budgets)]]
        return [
            _loading(m),
            *(gr.update(choices=c, value=v, interactive=on) for c, v, on in budgets),
            *(gr.update(interactive=test(spec)) for _, test in ctx.family_buttons),
        ]

    def after(m: str, *current: Any) -> list[Any]:
        """Once loaded: the same updates from the loaded family (a folder or hub id
        whose name says no family)."""
        return first(m, *current)[1:]

    private = {"api_visibility": "private"}
    (
        ctx.model.change(first, [ctx.model, *controls], [notice, *controls], queue=False, **private)
        .then(bundles.model_notice, [ctx.model], [notice], api_name="model")
        .then(after, [ctx.model, *controls], controls, **private)
        .then(lambda n: n + 1, [ready], [ready], **private)
    )
    demo.load(bundles.model_notice, [ctx.model], [notice], **private).then(
        after, [ctx.model, *controls], controls, **private
    ).then(lambda n: n + 1, [ready], [ready], **private)


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


def _warm(model: str) -> None:
    """What a first request would otherwise pay for: matplotlib, librosa's resampler
    (13.8 s for the first 44.1 kHz clip in a fresh environment), and one run of each
    analysis tab on its sample (torch's kernels, the processors' caches, the video
    decoder)."""
    import numpy as np

    from gemma_explore.app import tabs
    from gemma_explore.media.loaders import load_audio
    from gemma_explore.samples import SAMPLES_DIR

    _warm_figures()
    load_audio((np.zeros(4410, np.float32), 44_100))  # librosa.resample: its first call
    tabs.image_tab(model, str(SAMPLES_DIR / "photo.jpg"))
    tabs.audio_tab(model, str(SAMPLES_DIR / "speech.wav"))
    tabs.video_tab(model, str(SAMPLES_DIR / "video.mp4"))


def preload(model: str) -> threading.Thread:
    """Load ``model`` and warm what its first requests need (:func:`_warm`) in a
    background thread, so the page is served while torch and the model load; the notice
    says "Loading…" until both are done."""
    done = bundles.warming(model)

    def work() -> None:
        try:
            bundles.get_bundle(model)
            _warm(model)
        except Exception:  # noqa: BLE001 - the notice shows the error on the first request
            pass
        finally:
            done.set()

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
    from :data:`~gemma_explore.engines.load.ENGINES` (None: the first, transformers).
    A busy port raises OSError (the command line turns it into one line)."""
    from gemma_explore.engines.load import ENGINES, engine_options

    name = engine or ENGINES[0]
    bundles.configure(model, **engine_options(name, base_url=base_url))
    demo = build_app(model)
    demo.launch(
        server_name=host,
        server_port=port,
        prevent_thread_lock=True,
        quiet=True,  # gradio's own lines suggest share=True, which this demo never uses
        **LAUNCH_OPTIONS,
    )
    if not quiet:
        print(f"* The demo is at {demo.local_url} (this machine only; Ctrl+C stops it)")
    # Only now import torch and load the model: started earlier, that thread would hold
    # the interpreter while gradio imports, and the page would come later.
    preload(model)
    if block:
        demo.block_thread()
    return demo
