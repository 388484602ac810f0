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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
    "transcribe_help",
]

MAX_UPLOAD = "20mb"  # gradio refuses bigger uploads before they reach a handler
_MAX_UPLOAD_BYTES = 20 * 1024 * 1024  # the same cap, for the page's own message (HEAD)
CONCURRENCY = 2  # requests that may run the model at once
LIVE = {"trigger_mode": "always_last", "show_progress": "minimal"}  # a re-render per edit
# Below this width a tab's two columns stack, the figure first (its column's min_width
# and the media query below agree: 300 + 640 px and the gaps).
STACK_BELOW_PX = 1000
# A phone (below this width) shows each figure at PHONE_FIGURE_ZOOM of its drawn size, in a
# box that scrolls sideways and says so: shrunk to a 390 px screen, an 11-inch figure's
# 9 pt labels (12.5 px at the figure's 100 dpi) would be 4 px tall; at this zoom they are
# 9 px or more (9 pt × 100/72 × 0.75 = 9.4 px).
PHONE_BELOW_PX = 600
PHONE_FIGURE_ZOOM = 0.75
# The page's style (gradio takes it in launch()):
# * figures scale down to their column (never wider, never a hidden sideways scroll);
#   below STACK_BELOW_PX the columns stack, figure (or the message that replaces it)
#   first, so a phone sees it without scrolling;
# * tables keep vLLM's names and checkpoint ids whole (no break inside
#   max_num_batched_tokens, nor at the "/" and "-" of google/gemma-4-E4B-it); their values
#   wrap at spaces so the table fits its column;
# * gr.Examples' headers wrap instead of being cut, and on a phone its cells too;
# * a counts table's names wrap at their spaces, so its values keep their width;
# * on a phone, a figure keeps its labels legible (PHONE_FIGURE_ZOOM) and scrolls sideways;
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
[id$="_counts"] td:first-child {{ white-space: normal; }}
[id$="_counts"] td:last-child {{ min-width: 9em; }}
.slider-range {{ color: #b45309; font-weight: 600; margin: 4px 0; }}
[id$="_in"] .file-preview-holder::after, #layout_image .file-preview-holder::after,
#layout_audio .file-preview-holder::after {{ content: "{REPLACE_FILE}"; display: block;
    font-size: 12px; padding: 4px 8px; color: var(--block-info-text-color); }}
@media (max-width: {STACK_BELOW_PX}px) {{ .plot-col {{ order: -1; }} }}
@media (max-width: {PHONE_BELOW_PX}px) {{
    #serving_table table, [id$="_counts"] table {{ font-size: 12px; }}
    .prose td, .prose th {{ padding: 4px 6px !important; }}
    [id$="_plot"] .matplotlib {{ overflow-x: auto !important; }}
    [id$="_plot"] img {{ max-width: none !important; width: auto !important;
                         zoom: {PHONE_FIGURE_ZOOM}; margin: 0; }}
    [id$="_plot"]:has(img)::before {{ content: "← the figure scrolls sideways →";
        display: block; font-size: 12px; color: #6b7280; text-align: center; }}
    .table-wrap table {{ table-layout: fixed; width: 100% !important; }}
    .table-wrap th, .table-wrap td {{ overflow-wrap: anywhere; white-space: normal !important;
        padding: 4px !important; }} }}
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
  // A slider's box takes a typed number past the slider's ends, and gradio then sets the
  // nearest end without a word: the line under the slider says so.
  const typed = new WeakMap();
  const range = el => el.closest('.wrap') && el.closest('.wrap').querySelector('input[type=range]');
  window.addEventListener('input', e => {{
    if (e.target && e.target.type === 'number' && range(e.target)) typed.set(e.target, e.target.value);
  }}, true);
  const said = e => {{
    const box = e.target, r = box && box.type === 'number' && range(box);
    if (!r || !typed.has(box)) return;
    const host = box.closest('.block') || box.parentElement;
    host.querySelectorAll('.slider-range').forEach(n => n.remove());
    const v = Number(typed.get(box)), lo = Number(r.min), hi = Number(r.max);
    typed.delete(box);
    if (!(v < lo || v > hi)) return;
    const label = (host.querySelector('label') || {{innerText: 'This slider'}}).innerText.trim();
    const note = document.createElement('div');
    note.className = 'slider-range';
    note.textContent = '⚠ ' + label + ' goes from ' + lo + ' to ' + hi + ': ' + v
      + ' was set to ' + (v > hi ? hi : lo) + ', its ' + (v > hi ? 'highest' : 'lowest') + '.';
    host.appendChild(note);
  }};
  window.addEventListener('focusout', said, true);  // gradio sets the end on blur
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
    # Lines whose words follow the family, with their text: (markdown, spec → text).
    family_texts: list[tuple[Any, Callable[[FamilySpec], str]]] = field(default_factory=list)

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

    >>> budget_enabled("tiny-gemma3n"), budget_enabled("tiny-gemma4")
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


def _plot(elem_id: str, **options: Any) -> Any:
    import gradio as gr

    return gr.Plot(show_label=False, elem_id=elem_id, **options)


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


@dataclass
class _Page:
    """A tab of the common shape: its controls column (``left``), and in its figure
    column the message slot (``error``) above the column of figures it replaces
    (``figures``: hidden while a message shows, so on a phone the message sits right
    above the controls, with no empty figure box between them)."""

    key: str  # the tab's id, its elements' prefix and its API name
    tab: Any
    left: Any
    error: Any
    figures: Any


@contextmanager
def _page(title: str, key: str) -> Iterator[_Page]:
    """Build a tab of the common shape: in the ``with`` block, fill ``page.left`` with
    the controls and ``page.figures`` with the figures, then wire it (:func:`_wire_page`);
    what is built outside those two goes under both, full width."""
    import gradio as gr

    with gr.Tab(title, id=key) as tab:
        with gr.Row():
            left, right = _columns()
            with right:
                error = _error_slot(f"{key}_error")
                figures = gr.Column(elem_id=f"{key}_figures")
        yield _Page(key, tab, left, error, figures)


def _readouts(key: str) -> tuple[Any, Any, Any]:
    """The counts table, the parity badge and the timings under a tab's controls."""
    import gradio as gr

    return (
        gr.Markdown(elem_id=f"{key}_counts"),
        gr.Markdown(elem_id=f"{key}_parity"),
        gr.Markdown(elem_id=f"{key}_time"),
    )


def _readouts_of(r: Any) -> tuple[str, str, str, str]:
    """A result's (counts, parity, timings, message), as :func:`_readouts` and the
    message slot show them."""
    counts_md, error_md = _shown(r)
    return counts_md, r.parity, r.timings, error_md


def _wire_page(
    ctx: Context,
    page: _Page,
    render: Callable[..., tuple[Any, ...]],
    inputs: list[Any],
    outputs: list[Any],
    changes: list[Any],
) -> None:
    """:func:`_wire` for a :func:`_page`: ``render(model, *inputs)`` gives ``outputs``'
    values, the page's message among them; the figure column shows exactly when the
    message is empty. The API (named after the tab) returns ``outputs``."""
    import gradio as gr

    at = next(i for i, o in enumerate(outputs) if o is page.error)

    def shown(model: str, *values: Any) -> tuple[Any, ...]:
        out = render(model, *values)
        return (*out, gr.Column(visible=not out[at]))

    _wire(ctx, page.tab, page.key, shown, inputs, [*outputs, page.figures], changes, page.key)


def _upload(sample: str, label: str, elem_id: str) -> Any:
    """A tab's file input, holding its bundled sample at first. A file box, not
    gr.Image / gr.Audio / gr.Video: those would refuse a wrong file with gradio's own
    toast (or need ffmpeg to re-encode a video) before our handler could say what is
    wrong; the file reaches the handler as a path."""
    import gradio as gr

    return gr.File(sample, label=label, type="filepath", elem_id=elem_id)


def build_image_tab(ctx: Context) -> None:
    import gradio as gr

    from gemma_explore.app.tabs import image_tab

    with _page("Image", "image") as page:
        with page.left:
            image_in = _upload(ctx.samples["photo"], "Image (PNG, JPEG, WebP…)", "image_in")
            budget = _budget_box("image_budget", ctx)
            gr.Examples([[ctx.samples["photo"]]], inputs=[image_in], label="Example image")
            readouts = _readouts("image")
        with page.figures:
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
            return (r.patch_figure, r.pooled_figure, *_readouts_of(r), gr.Column(visible=shown))

        outputs = [patch, pooled, *readouts, page.error, pooled_panel]
        _wire_page(ctx, page, run, [image_in, budget], outputs, [image_in.change, budget.change])


def build_audio_tab(ctx: Context) -> None:
    import gradio as gr

    from gemma_explore.app.tabs import audio_tab, long_audio_figure

    with _page("Audio", "audio") as page:
        with page.left:
            audio_in = _upload(ctx.samples["speech"], "Clip (WAV, FLAC, MP3…)", "audio_in")
            _recorder(audio_in, "audio_record")
            gr.Examples([[ctx.samples["speech"]]], inputs=[audio_in], label="Example clip")
            readouts = _readouts("audio")
        with page.figures:
            _heading("Waveform, its frames and their tokens")
            mel = _plot("mel_plot")
            # Past 30 s: the windows the model hears whole; hidden for a shorter clip
            # (never an empty box).
            with gr.Column(visible=False, elem_id="audio_windows_panel") as windows_panel:
                windows = _plot("audio_windows_plot")

        def run(model: str, audio: Any) -> tuple[Any, ...]:
            r = AudioResult.blank() if audio is None else audio_tab(model, audio)
            figure = long_audio_figure(r.plan)
            shown = gr.Column(visible=figure is not None)
            return (r.mel_figure, *_readouts_of(r), figure, shown)

        outputs = [mel, *readouts, page.error, windows, windows_panel]
        _wire_page(ctx, page, run, [audio_in], outputs, [audio_in.change])
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


def transcribe_help(spec: FamilySpec) -> str:
    """The line under the Transcribe button for the chosen family: what the button
    sends, or (a family without speech-to-text) where to ask instead.

    >>> from gemma_explore.facts.families import get_family
    >>> transcribe_help(get_family("gemma4"))[:46]
    'Gemma 4 has no speech-to-text interface here: '
    """
    from gemma_explore.plans.long_audio import heard_seconds

    stt = SPEECH_TO_TEXT_FAMILY.display_name
    heard = f"{heard_seconds(spec):g} s"
    if spec.transcribes:
        return (
            f"Transcribe sends the clip with {stt}'s fixed speech-to-text prompt (the one "
            f"vLLM's /v1/audio/transcriptions sends). A clip longer than {heard} is sent "
            "window by window, cut at the quiet points the counts table lists, and the "
            "texts are joined."
        )
    return (
        f"{spec.display_name} has no speech-to-text interface here: attach the clip in the "
        f'Chat tab and ask "Transcribe this audio." (Chat sends the clip whole: the model '
        f"hears its first {heard}). Transcribe is {stt}'s: pick a {stt} model in Model."
    )


def transcribe_row(ctx: Context, audio_in: Any) -> None:
    """Gemma 3n speech-to-text with the fixed prompt vLLM's /v1/audio/transcriptions
    sends (a button: generation is not a live re-render). The button is active only
    under a family that transcribes; the line under it follows the family chosen."""
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
    help_line = gr.Markdown(transcribe_help(DEFAULT_FAMILY), elem_id="transcribe_help")
    ctx.family_buttons.append((button, _transcribes))
    ctx.family_texts.append((help_line, transcribe_help))
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
        # The GPU's memory is typed (a number box: the handler refuses a bad one in its
        # words); the rest are sliders.
        box = (
            gr.Number(value=c.default, label=c.label, elem_id=f"serving_{c.key}")
            if c.kind == "box"
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

    with _page("Serving", "serving") as page:
        with page.left:
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
        with page.figures:
            warnings = gr.Markdown(elem_id="serving_warnings")
            _heading("What vLLM reserves: memory, and worst-case tokens per item")
            assumption = gr.Markdown(elem_id="serving_assumption")
            plot = _plot("serving_plot")
        table = gr.Markdown(elem_id="serving_table")  # full width: its values stay whole
        outputs = [plot, table, page.error, warnings, assumption]
        _wire_serving(ctx, page, checkpoint, budget, [*controls, gpu, util, release], outputs)
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
    ctx: Context, page: _Page, checkpoint: Any, budget: Any, values: list[Any], outputs: list[Any]
) -> None:
    """The budget box follows the checkpoint chosen on the tab (or the model above, when
    that is the choice); every control re-plans, and plot, table and verdict change
    together (a refused value clears them all and says which control). A limit the
    checkpoint has no input for is disabled, with the reason under it."""
    import gradio as gr

    from gemma_explore.app.serving_tab import (
        LOADED_MODEL,
        limit_states,
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
    limits = values[1:4]  # image, audio, video

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

    changes = [checkpoint.change, budget.change, *(c.change for c in values)]
    _wire_page(ctx, page, run, [checkpoint, budget, *values], outputs, changes)

    def enable(model: str, chosen: str) -> tuple[Any, ...]:
        states = limit_states(model if chosen == LOADED_MODEL else chosen)
        if states is None:  # not planned (a refused value): the sliders stay as they are
            return tuple(gr.update() for _ in limits)
        return tuple(gr.update(interactive=on, info=why) for on, why in states)

    # Once a plan is on screen, its checkpoint's inputs decide which limits mean something.
    outputs[1].change(
        enable, [ctx.model, checkpoint], limits, queue=False, api_visibility="private"
    )


def build_video_tab(ctx: Context) -> None:
    import gradio as gr

    from gemma_explore.app.tabs import video_tab

    with _page("Video", "video") as page:
        with page.left:
            video_in = _upload(
                ctx.samples["video"], "Video for Gemma 4 (MP4, MOV, AVI, MKV, WebM)", "video_in"
            )
            gr.Examples([[ctx.samples["video"]]], inputs=[video_in], label="Example video")
            readouts = _readouts("video")
        with page.figures:
            _heading("Sampled frames, their timestamps and tokens")
            frames = _plot("frames_plot")

        def run(model: str, video: Any) -> tuple[Any, ...]:
            r = VideoResult.blank() if video is None else video_tab(model, video)
            return (r.frames_figure, *_readouts_of(r))

        outputs = [frames, *readouts, page.error]
        _wire_page(ctx, page, run, [video_in], outputs, [video_in.change])


def build_layout_tab(ctx: Context) -> None:
    import gradio as gr

    from gemma_explore.app.tabs import layout_tab

    with _page("Prompt layout", "layout") as page:
        with page.left:
            raw = gr.Checkbox(
                False,
                label="Raw prompt, as vLLM's LLM.generate takes it (no chat template; "
                "one <|image|> / <image_soft_token> per attachment)",
                elem_id="layout_raw",
            )
            text = gr.Textbox("Describe this.", label="Text", lines=3, elem_id="layout_text")
            image = _upload(ctx.samples["photo"], "Image (optional)", "layout_image")
            audio = _upload(ctx.samples["speech"], "Clip (optional)", "layout_audio")
            budget = _budget_box("layout_budget", ctx)
            gr.Examples(
                [["Describe this.", ctx.samples["photo"], ctx.samples["speech"]]],
                inputs=[text, image, audio],
                label="Example turn",
                elem_id="layout_examples",
            )
            counts = gr.Markdown(elem_id="layout_counts")
        with page.figures:
            _heading("Expanded prompt")
            plot = _plot("layout_plot")
            html = gr.HTML(elem_id="layout_html")
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
            counts_md, parity, times, error_md = _readouts_of(r)
            return r.layout_figure, r.layout_html, counts_md, parity, times, error_md

        inputs = [text, image, audio, budget, raw]
        outputs = [plot, html, counts, checks, timings, page.error]
        _wire_page(ctx, page, run, inputs, outputs, [i.change for i in inputs])


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
            bundles.model_notice(model) if bundles.is_loaded(model) else _loading(model, warm=True),
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


def _loading(model: str, *, warm: bool = False) -> str:
    """The banner while ``model`` loads: a tiny model's warning at once (its checkpoint
    named from its family), then one plain line: what is loading (``warm``: the demo's
    start, which also runs each analysis tab once, :func:`preload`), and that the tabs
    answer once it is ready.

    >>> _loading("my-model", warm=True)[:58]
    "Loading **my-model**: torch and transformers, the model's "
    """
    from gemma_explore.models.tiny import TINY_NAMES

    spec = family_from_name(model)
    what = "the model's processor and weights"
    what = f"torch and transformers, {what}" if warm else what
    then = ", then one run of each analysis tab on its example" if warm else ""
    waiting = f"Loading **{model}**: {what}{then}. The tabs answer once it is ready."
    if model in TINY_NAMES and spec is not None:
        return f"{bundles.random_weights_notice(spec)}\n\n{waiting}"
    return waiting


def _wire_model(demo: Any, ctx: Context, notice: Any, ready: Any) -> None:
    """A model switch: the banner and the controls change first (from the family the
    name says, no load), then the model loads and its notice shows, then the tab on
    screen renders (the others when they are opened)."""
    import gradio as gr

    buttons = [b for b, _ in ctx.family_buttons]
    texts = [t for t, _ in ctx.family_texts]
    controls = [*ctx.budgets, *buttons, *texts]

    def first(m: str, *current: Any) -> list[Any]:
        spec = _family_of(m)
        if spec is None:
            return [_loading(m), *(gr.update() for _ in controls)]
        budgets = [budget_choices(spec, v) for v in current[: len(ctx.budgets)]]
        return [
            _loading(m),
            *(gr.update(choices=c, value=v, interactive=on) for c, v, on in budgets),
            *(gr.update(interactive=test(spec)) for _, test in ctx.family_buttons),
            *(gr.update(value=words(spec)) for _, words in ctx.family_texts),
        ]

    def after(m: str, *current: Any) -> list[Any]:
        """Once loaded: the same updates from the loaded family (a folder or hub id
        whose name says no family)."""
        return first(m, *current)[1:]

    private = {"api_visibility": "private"}
    # The banner's own line says what is loading: no greyed banner with gradio's timer
    # on it while the model loads (show_progress="hidden").
    quiet = {"show_progress": "hidden"}
    (
        ctx.model.change(first, [ctx.model, *controls], [notice, *controls], queue=False, **private)
        .then(bundles.model_notice, [ctx.model], [notice], api_name="model", **quiet)
        .then(after, [ctx.model, *controls], controls, **private, **quiet)
        .then(lambda n: n + 1, [ready], [ready], **private, **quiet)
    )
    demo.load(bundles.model_notice, [ctx.model], [notice], **private, **quiet).then(
        after, [ctx.model, *controls], controls, **private, **quiet
    ).then(lambda n: n + 1, [ready], [ready], **private, **quiet)


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
