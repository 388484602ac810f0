"""The one table helper renders the same rows as text, markdown and HTML."""

from gemma_explore.tables import Table


def test_key_value_and_flagged_tables():
    kv = Table(
        (), (("budget", 280), ("tokens", None)), title="Plan", notes=("a", "b"), notes_title="steps"
    )
    assert kv.text().splitlines() == [
        "Plan",
        "  budget  280",
        "  tokens  —",
        "  steps:",
        "    1. a",
        "    2. b",
    ]
    assert "| budget | 280 |" in kv.markdown() and "1. a" in kv.markdown()
    grid = Table(("step", "ours", "theirs"), (("x", 1, 1), ("y", 2, 3)), flagged=(1,))
    text = grid.text().splitlines()
    assert text[1].startswith("  ✓ x") and text[2].startswith("  ✗ y")
    html = grid.html()
    assert html.count("<tr") == 3 and html.count("background:") == 1
    assert "| ✗ y | 2 | 3 |" in grid.markdown()


def test_cells_are_escaped():
    assert "&lt;|image|&gt;" in Table((), (("token", "<|image|>"),)).html()
    assert "a \\| b" in Table((), (("pipe", "a | b"),)).markdown()
