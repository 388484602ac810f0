"""ipywidgets explorers. Each returns the widget; its callbacks are plain methods, so a
test can set a control's value and read the resulting plan and figure headless.

>>> w = explore_image((1080, 1920))
>>> w.budget.value = 70; w.plan.num_soft_tokens
66
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gemma_explore.facts.families import (
    AUDIO_SAMPLING_RATE,
    DEFAULT_FAMILY,
    FAMILIES,
    FamilySpec,
    get_family,
)
from gemma_explore.plans.audio import plan_audio
from gemma_explore.plans.image import plan_image
from gemma_explore.processing.features import audio_features

__all__ = ["explore_audio", "explore_image", "explore_prompt", "raw_prompt_example"]


_FAMILY_OPTIONS = [(f.display_name, f.name) for f in reversed(FAMILIES.values())]


def _budget_slider(spec: FamilySpec):
    """A budget slider over ``spec``'s budgets (the default family's, disabled, for a
    family without any)."""
    import ipywidgets as widgets

    shown = spec if spec.image.budgets else DEFAULT_FAMILY
    return widgets.SelectionSlider(
        options=list(shown.image.budgets),
        value=shown.image.default_budget,
        description="budget",
        disabled=not spec.image.budgets,
    )


def _follow_family(budget, spec: FamilySpec) -> int | None:
    """Point ``budget`` at ``spec``'s budgets; return the budget to plan with (None: the
    family has none)."""
    budget.disabled = not spec.image.budgets
    if not spec.image.budgets:
        return None
    if tuple(budget.options) != tuple(spec.image.budgets):
        keep = budget.value if budget.value in spec.image.budgets else spec.image.default_budget
        budget.options = list(spec.image.budgets)
        budget.value = keep
    return budget.value


def _figure_widget():
    import ipywidgets as widgets

    return widgets.Output()


def _draw_into(out, fig) -> None:
    """Put ``fig`` in the ``Output`` widget by setting the widget's ``outputs`` state.

    Not ``with out: display(fig)``: capturing tags the figure with the running cell's
    request, and a client without a browser (nbclient: ``nbconvert --execute``, ``make
    html``, ``make site``, the notebook tests) then plays the front end and writes each
    captured output back to the kernel on the shell socket, the socket on which it is
    waiting for the cell's reply. That reply can then go unnoticed until the cell timeout
    runs out (the reply is there, the wake-up was lost: nbclient issue #312), which is the
    5-minute pause after an explorer cell. Setting the state is one update sent by the
    kernel; JupyterLab, VS Code and nbclient all render it, and no client answers it.
    """
    from IPython import get_ipython

    ip = get_ipython()
    if ip is None:  # headless (tests, scripts): keep the figure, show nothing
        return
    import base64

    data, metadata = ip.display_formatter.format(fig)  # the bundle display() would send
    # PNG comes back as bytes; a notebook's mime bundle holds it base64-encoded, as
    # display() would publish it (raw bytes would travel as a binary buffer instead).
    data = {
        k: base64.b64encode(v).decode("ascii") if isinstance(v, bytes) else v
        for k, v in data.items()
    }
    out.outputs = ({"output_type": "display_data", "data": data, "metadata": metadata},)


class _Explorer:
    """A VBox with its current plan / figure kept on the object for inspection.

    Displayed, it is the VBox's widget view plus a still of its figure (``image/png``) and
    a line of text in place of the widget's repr. A front end with a widget manager
    (JupyterLab, VS Code) draws the live widget; a static render that cannot run it (an
    HTML export without the widget state, GitHub, an untrusted notebook) shows the figure
    as it was when the cell ran, not ``VBox(children=…)``.
    """

    def __init__(self, box, kind: str) -> None:
        self.box = box
        self.kind = kind  # "image", "audio", "prompt": what the text/plain line names
        self.plan: Any = None
        self.figure: Any = None
        self.error: str | None = None

    def _still_png(self) -> str | None:
        """The figure as base64 PNG: the one the Output widget holds, else drawn now."""
        for out in getattr(getattr(self, "output", None), "outputs", ()):
            png = out.get("data", {}).get("image/png")
            if png:
                return png
        if self.figure is None:
            return None
        import base64

        from IPython.core.pylabtools import print_figure

        return base64.b64encode(print_figure(self.figure, "png")).decode("ascii")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle = dict(self.box._repr_mimebundle_(include=include, exclude=exclude) or {})
        what = f"The {self.kind} explorer, a live widget: run the notebook to move its controls."
        if self.error:
            what += f" {self.error}"
        bundle["text/plain"] = what
        png = self._still_png()
        if png:
            bundle["image/png"] = png
        return bundle


def explore_image(image: Any):
    """Family toggle and a budget slider over the family's budgets → patch grid + counts."""
    import ipywidgets as widgets

    from gemma_explore.media.loaders import load_image
    from gemma_explore.viz.patches import show_patch_grid

    pil = load_image(image)
    family = widgets.ToggleButtons(
        options=_FAMILY_OPTIONS,
        value=DEFAULT_FAMILY.name,
        description="family",
    )
    budget = _budget_slider(DEFAULT_FAMILY)
    counts = widgets.HTML()
    out = _figure_widget()
    ex = _Explorer(widgets.VBox([family, budget, counts, out]), "image")
    ex.family, ex.budget, ex.counts, ex.output = family, budget, counts, out

    busy = []  # set while update() moves the slider itself: one plan per change

    def update(_change=None) -> None:
        if busy:
            return
        busy.append(True)
        try:
            b = _follow_family(budget, get_family(family.value))
        finally:
            busy.clear()
        ex.plan = plan_image(pil, family=family.value, max_soft_tokens=b)
        ex.figure = show_patch_grid(ex.plan)
        counts.value = ex.plan._repr_html_()
        _draw_into(out, ex.figure)

    family.observe(update, names="value")
    budget.observe(update, names="value")
    update()
    return ex


def explore_audio(audio: Any, *, sampling_rate: int | None = None):
    """Family toggle and a crop range (seconds) → mel figure + token counts."""
    import ipywidgets as widgets

    from gemma_explore.media.loaders import load_audio
    from gemma_explore.viz.audio import show_mel

    rate = AUDIO_SAMPLING_RATE
    wave, _ = load_audio(audio, sampling_rate=sampling_rate, target_rate=rate)
    duration = wave.shape[0] / rate
    family = widgets.ToggleButtons(
        options=_FAMILY_OPTIONS,
        value=DEFAULT_FAMILY.name,
        description="family",
    )
    crop = widgets.FloatRangeSlider(
        value=(0.0, duration), min=0.0, max=duration, step=0.01, description="crop (s)"
    )
    counts = widgets.HTML()
    out = _figure_widget()
    ex = _Explorer(widgets.VBox([family, crop, counts, out]), "audio")
    ex.family, ex.crop, ex.counts, ex.output = family, crop, counts, out

    def update(_change=None) -> None:
        start, end = crop.value
        piece = wave[int(start * rate) : max(int(end * rate), int(start * rate) + 1)]
        try:
            ex.plan = plan_audio((piece, rate), family=family.value)
            ex.figure = show_mel(audio_features(ex.plan))
            ex.error = None
            counts.value = ex.plan._repr_html_()
            _draw_into(out, ex.figure)
        except ValueError as exc:
            ex.error = str(exc)
            counts.value = f"<b style='color:#D55E00'>{exc}</b>"

    family.observe(update, names="value")
    crop.observe(update, names="value")
    update()
    return ex


def raw_prompt_example(bundle: Any) -> str:
    """A hand-written prompt for ``template=False``: one placeholder, as vLLM takes it."""
    spec = bundle.spec
    return (
        f"{spec.bos_token}{spec.turn_start}user\nLook:{spec.image_token}\n\nWhat is this?"
        f"{spec.turn_end}\n{spec.turn_start}model\n"
    )


def _sample_items() -> tuple[np.ndarray, tuple[np.ndarray, int]]:
    """A noise picture and a 2 s quiet noise clip: stand-ins whose sizes set the counts."""
    rng = np.random.RandomState(0)
    image = (rng.rand(480, 640, 3) * 255).astype(np.uint8)  # (H, W, 3)
    rate = AUDIO_SAMPLING_RATE
    return image, (rng.uniform(-0.1, 0.1, rate * 2).astype(np.float32), rate)  # (2 s,)


def _prompt_controls(bundle: Any) -> dict[str, Any]:
    """The explorer's controls, by name."""
    import ipywidgets as widgets

    return {
        "raw": widgets.Checkbox(value=False, description="raw prompt (as LLM.generate takes it)"),
        "text": widgets.Textarea(value=_PLAIN_QUESTION, description="text"),
        "images": widgets.IntSlider(value=1, min=0, max=3, description="images"),
        "audios": widgets.IntSlider(value=0, min=0, max=2, description="clips"),
        "budget": _budget_slider(bundle.spec),
        "counts": widgets.HTML(),
        "output": _figure_widget(),
    }


_PLAIN_QUESTION = "What is in this picture?"


def explore_prompt(bundle: Any):
    """Text and attachments → the expanded prompt's layout ribbon.

    Tick "raw prompt" to type the prompt as vLLM's ``LLM.generate`` takes it (one
    placeholder token per item, no chat template): the items follow the placeholders
    you write, and the ribbon shows where vLLM and transformers part.
    """
    import ipywidgets as widgets

    from gemma_explore.processing.layout import layout_prompt
    from gemma_explore.viz.layout import show_layout

    c = _prompt_controls(bundle)
    ex = _Explorer(widgets.VBox([c[k] for k in c]), "prompt")
    for name, control in c.items():
        setattr(ex, name, control)
    spec = bundle.spec
    sample_image, sample_clip = _sample_items()

    def on_raw(change) -> None:
        ex.text.value = raw_prompt_example(bundle) if change["new"] else _PLAIN_QUESTION

    busy = []  # set while update() moves the sliders itself: one layout per change

    def follow_raw_prompt() -> None:
        """A raw prompt decides the items by its placeholders; the sliders follow it."""
        ex.images.disabled = ex.audios.disabled = ex.raw.value
        if not ex.raw.value:
            return
        busy.append(True)
        try:
            ex.images.value = min(ex.text.value.count(spec.image_token), ex.images.max)
            ex.audios.value = min(ex.text.value.count(spec.audio_token), ex.audios.max)
        finally:
            busy.clear()

    def update(_change=None) -> None:
        if busy:
            return
        follow_raw_prompt()
        try:
            ex.plan = layout_prompt(
                ex.text.value,
                bundle=bundle,
                images=[sample_image] * ex.images.value,
                audios=[sample_clip] * ex.audios.value,
                max_soft_tokens=ex.budget.value if spec.image.budgets else None,
                template=not ex.raw.value,
            )
            ex.figure = show_layout(ex.plan)
            ex.error = None
            ex.counts.value = ", ".join(f"{k}: {v}" for k, v in ex.plan.counts().items())
            _draw_into(ex.output, ex.figure)
        except ValueError as exc:
            ex.error = str(exc)
            ex.counts.value = f"<b style='color:#D55E00'>{exc}</b>"

    ex.raw.observe(on_raw, names="value")
    for w in (ex.text, ex.images, ex.audios, ex.budget):
        w.observe(update, names="value")
    update()
    return ex
