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


def test_the_results_a_notebook_shows_as_a_table_share_one_repr_html():
    """Every class in the package whose notebook display is its table takes it from
    ShownAsTable: no second copy of ``_repr_html_`` returning ``self.table().html()``."""
    import re
    from pathlib import Path

    from gemma_explore.plans.image import plan_image
    from gemma_explore.tables import ShownAsTable

    package = Path(__file__).resolve().parents[1] / "gemma_explore"
    copies = [
        str(p.relative_to(package))
        for p in package.rglob("*.py")
        if p.name != "tables.py"
        if re.search(
            r"def _repr_html_\(self\)[^:]*:\s*return self\.table\(\)\.html\(\)", p.read_text()
        )
    ]
    # serving/plan.py's ServingPlan is the one left (its module is being reshaped elsewhere)
    assert copies in ([], ["serving/plan.py"]), copies
    plan = plan_image((900, 3), family="gemma4")
    assert isinstance(plan, ShownAsTable) and plan._repr_html_() == plan.table().html()
