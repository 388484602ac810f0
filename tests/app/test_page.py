"""The page's build (no browser): what the banner does while the model loads."""

from gemma_explore.app.ui import _loading, build_app


def test_the_loading_banner_is_one_plain_line_without_gradios_timer():
    """Every event that writes the banner, or waits on the load behind it, runs with
    gradio's progress hidden (no greyed banner with a timer); the banner's own line says
    what is loading."""
    demo = build_app("tiny-gemma4")
    notice = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "notice")
    writes = [f for f in demo.fns.values() if any(o is notice for o in f.outputs)]
    waits = [f for f in writes if getattr(f.fn, "__name__", "") == "model_notice"]
    assert len(waits) == 2  # the page opening, and a model switch
    assert all(f.show_progress == "hidden" for f in waits), [f.show_progress for f in waits]
    start = _loading("tiny-gemma4", warm=True)
    assert "Loading **tiny-gemma4**: torch and transformers, the model's processor" in start
    assert "then one run of each analysis tab on its example" in start
    switch = _loading("tiny-gemma3n")
    assert "Loading **tiny-gemma3n**: the model's processor and weights." in switch
