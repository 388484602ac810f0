"""Explorer callbacks run headless: set a control, read the plan and figure."""

import numpy as np

import gemma_explore as ge


def test_explore_image_budget_and_family():
    w = ge.explore_image((1080, 1920))
    assert w.plan.num_soft_tokens == 264
    w.budget.value = 70
    assert (
        w.plan.num_soft_tokens
        == ge.plan_image((1080, 1920), family="gemma4", max_soft_tokens=70).num_soft_tokens
    )
    assert "70" in w.figure.axes[0].get_title()
    w.family.value = "gemma3n"
    assert w.plan.num_soft_tokens == 256 and w.budget.disabled
    assert "256" in w.counts.value


def test_explore_audio_crop(tone):
    w = ge.explore_audio((tone, 16000))
    assert w.plan.num_soft_tokens == 75
    w.crop.value = (0.0, 1.0)
    assert w.plan.num_soft_tokens == 25
    w.family.value = "gemma3n"
    assert w.plan.num_soft_tokens == 188 and w.plan.num_padding_soft_tokens > 0


def test_explore_prompt(tiny4):
    w = ge.explore_prompt(tiny4)
    one = w.plan.num_tokens
    w.images.value = 2
    assert w.plan.num_tokens > one and len(w.plan.placeholders) == 2
    w.budget.value = 70
    assert all(p.num_embeds <= 70 for p in w.plan.placeholders)
    w.audios.value = 1
    assert [p.modality for p in w.plan.placeholders] == ["image", "image", "audio"]
    assert w.error is None and np.isfinite(w.plan.num_tokens)


def test_the_budget_slider_follows_the_family():
    """The slider holds the chosen family's budgets (the default family's at first), is
    disabled for a family without budgets, and comes back when one has them again."""
    from gemma_explore.facts.families import DEFAULT_FAMILY

    w = ge.explore_image((1080, 1920))
    assert w.family.value == DEFAULT_FAMILY.name
    assert tuple(w.budget.options) == DEFAULT_FAMILY.image.budgets
    w.budget.value = DEFAULT_FAMILY.image.budgets[0]
    w.family.value = "gemma3n"
    assert w.budget.disabled
    w.family.value = DEFAULT_FAMILY.name
    assert not w.budget.disabled
    expected = ge.plan_image((1080, 1920), family=DEFAULT_FAMILY, max_soft_tokens=w.budget.value)
    assert w.plan.num_soft_tokens == expected.num_soft_tokens


def test_explore_prompt_on_a_family_without_budgets(tiny3n):
    w = ge.explore_prompt(tiny3n)
    assert w.budget.disabled and w.error is None
    assert all(p.agrees for p in w.plan.placeholders)


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def test_an_explorer_displays_its_widget_and_a_still_of_its_figure():
    """The bundle a notebook keeps: the live widget's view for a front end that runs it,
    the first figure as PNG and a plain line for one that cannot (never the VBox repr)."""
    import base64

    w = ge.explore_image((480, 640))
    bundle = w._repr_mimebundle_()
    assert bundle[WIDGET_VIEW]["model_id"] == w.box.model_id
    assert "VBox(" not in bundle["text/plain"] and "image explorer" in bundle["text/plain"]
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")


def test_a_static_render_shows_the_explorers_figure_not_its_repr(tmp_path):
    """Executed by a kernel, then exported as a notebook saved without its widget state
    (JupyterLab's default, GitHub, nbconvert of a saved copy): the page holds the figure."""
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import gemma_explore as ge\nge.explore_image((480, 640))")
    ]
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    (out,) = nb.cells[0].outputs
    assert {WIDGET_VIEW, "image/png", "text/plain"} <= set(out["data"])
    nb.metadata.pop("widgets", None)  # saved without the widget state
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    assert "VBox(children" not in body
    assert "data:image/png;base64," in body
