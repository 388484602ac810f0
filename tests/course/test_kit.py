"""The teacher's kit tells one story: one sentence about what is real on the learners'
screens, word for word in the kit, the workshop page and notebook 00 (and wherever a
page or notebook says what is real, it is that sentence), and one time plan, with the
same minutes in the agenda, the instructor notes, the kit's README and the agenda slide.

The sentence is defined here, once; the pages quote it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEACHING = ROOT / "docs" / "teaching"
WORKSHOP = ROOT / "docs" / "workshop.md"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

# What is real when the notebooks run on the tiny random-weight models. The tiny bundles
# count text with Google's Gemma vocabulary once `gemma-explore tokenizer fetch` has run,
# and by characters before (bundle.vocabulary says which); widths (hidden sizes), windows
# and memory are the tiny models' own whatever the tokenizer.
WHAT_IS_REAL = (
    "Real: the image, audio and video soft-token counts and shapes, and the positions within "
    "each item. Not real: the tiny models' text counts until the real Gemma vocabulary is "
    "fetched (`gemma-explore tokenizer fetch`), and with them the positions after text; "
    "their widths, windows and memory; and their generated text, which is noise."
)

# Every page that says what is real, and notebook 00, which the room runs first.
KIT = {
    "instructor notes": TEACHING / "instructor_notes.md",
    "slides": TEACHING / "slides.md",
    "cheat sheet": TEACHING / "cheat_sheet.md",
    "teaching README": TEACHING / "README.md",
    "workshop": WORKSHOP,
    "course": ROOT / "docs" / "course.md",
}
# Which tables hold the minutes: the agenda in workshop.md, and a "| notebook | room |"
# table in the notes, the kit's README and the slides.
COURSE = [p.stem for p in NOTEBOOKS]
TOTAL = 180


def _flat(text: str) -> str:
    """Markdown as one line: quote marks and line breaks gone, spaces single."""
    text = re.sub(r"^\s*>\s?", "", text, flags=re.M)
    return re.sub(r"\s+", " ", text)


def _notebook_text(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return "\n".join("".join(c["source"]) for c in nb["cells"])


def _markdown_of(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


@pytest.mark.parametrize("name", KIT)
def test_each_page_of_the_kit_says_what_is_real_in_the_one_sentence(name):
    assert WHAT_IS_REAL in _flat(KIT[name].read_text(encoding="utf-8")), name


def test_notebook_00_says_it_too():
    assert WHAT_IS_REAL in _flat(_markdown_of(ROOT / "notebooks" / "00_quickstart.ipynb"))


def test_slides_1_and_the_running_slide_say_it():
    slides = re.split(r"^---\s*$", (TEACHING / "slides.md").read_text(encoding="utf-8"), flags=re.M)
    assert WHAT_IS_REAL in _flat(slides[0])
    running = next(s for s in slides if "## Running it" in s)
    assert "not real" in running.lower() and "vocabulary is fetched" in _flat(running)


@pytest.mark.parametrize(
    "path",
    [*KIT.values(), *NOTEBOOKS],
    ids=[*KIT, *(p.stem for p in NOTEBOOKS)],
)
def test_wherever_a_page_or_notebook_says_what_is_real_it_says_the_one_sentence(path):
    """Each "Real:" on a page of the kit or in a notebook opens the sentence, whole: no
    second, shorter or older account of what the tiny models get right."""
    text = _flat(_notebook_text(path) if path.suffix == ".ipynb" else path.read_text("utf-8"))
    said = [text[m.start() : m.start() + len(WHAT_IS_REAL)] for m in re.finditer("Real:", text)]
    assert all(s == WHAT_IS_REAL for s in said), (path.name, said)
    if path in KIT.values() or path.stem == "00_quickstart":
        assert said  # the pages that must say it do


def test_no_notebook_says_text_is_always_cut_into_characters():
    """Whether text is counted by characters depends on the fetched vocabulary: a notebook
    that says so ties it to the stand-in ("until …", "without …", "stand-in")."""
    for path in NOTEBOOKS:
        for sentence in re.split(r"(?<=[.;:])\s", _flat(_markdown_of(path))):
            if re.search(r"cuts? text into characters|one token per character", sentence):
                assert re.search(r"stand-in|until|without|not fetched", sentence), (
                    path.stem,
                    sentence,
                )


# --------------------------------------------------------------------------- the time plan

ROOM_ROW = re.compile(
    r"^\| `?([\w-]+)`? \| (\d+) \| (\d+|—) \| (\d+|—) \| (\d+|—) \| (\d+) \|$", re.M
)
AGENDA_ROW = re.compile(
    r"^\| ([\d:]+|after) \| `?([\w-]+)`? \| (\d+) \| (\d+) \|.*\| ([\d ]+/[\d ]+/[\d ]+|—) \|$",
    re.M,
)


def _room_table(text: str) -> dict[str, tuple[int, tuple[int, ...] | None, int]]:
    """name → (room minutes, (demo, learners, discussion) or None, homework)."""
    rows = {}
    for name, room, demo, learners, talk, homework in ROOM_ROW.findall(text):
        split = None if "—" in (demo, learners, talk) else (int(demo), int(learners), int(talk))
        rows[name] = (int(room), split, int(homework))
    return rows


def _agenda() -> dict[str, tuple[int, tuple[int, ...] | None, int]]:
    text = WORKSHOP.read_text(encoding="utf-8")
    section = text[text.index("## Agenda") : text.index("## Running each notebook")]
    rows = {}
    for _start, name, core, homework, split in AGENDA_ROW.findall(section):
        parts = None if split == "—" else tuple(int(x) for x in split.split("/"))
        rows[name] = (int(core), parts, int(homework))
    return rows


PLANS = {
    "agenda (workshop.md)": _agenda,
    "instructor notes": lambda: _room_table((TEACHING / "instructor_notes.md").read_text("utf-8")),
    "teaching README": lambda: _room_table((TEACHING / "README.md").read_text("utf-8")),
    "agenda slide": lambda: _room_table(
        next(
            s
            for s in re.split(r"^---\s*$", (TEACHING / "slides.md").read_text("utf-8"), flags=re.M)
            if "## The day" in s
        )
    ),
}


@pytest.mark.parametrize("name", PLANS)
def test_each_plan_lists_every_notebook_and_sums_to_three_hours(name):
    plan = PLANS[name]()
    assert sorted(n for n in plan if n in COURSE) == sorted(COURSE), name
    assert sum(room for room, _, _ in plan.values()) == TOTAL, name
    for notebook in COURSE:
        room, split, _ = plan[notebook]
        if room:  # a notebook in the room: the demo, the learners and the talk add up
            assert split is not None and sum(split) == room, (name, notebook, split)


def test_the_plans_give_the_same_minutes():
    plans = {name: read() for name, read in PLANS.items()}
    first, *others = plans
    for other in others:
        assert plans[other] == plans[first], (first, other)


def test_the_default_cuts_are_the_plan():
    plan = _agenda()
    assert plan["10_review"][0] == 0 and plan["09_inside_the_model"][0] == 0
    for notebook, heading in [
        ("02_budgets_and_pooling", "### Try it (optional"),
        ("03_audio", "### Try it (optional"),
        ("07_encoder_free", "## 4."),
    ]:
        md = _markdown_of(ROOT / "notebooks" / f"{notebook}.ipynb")
        line = next(x for x in md.splitlines() if x.startswith(heading))
        assert "optional" in line or "(homework)" in line, (notebook, line)


def test_the_notes_time_line_of_each_notebook_is_the_plan():
    text = (TEACHING / "instructor_notes.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^## (\d\d) [^\n]*\n(.*?)(?=^## |\Z)", text, re.M | re.S))
    plan = _agenda()
    for notebook in COURSE:
        room, split, homework = plan[notebook]
        time = re.search(r"\*\*Time:\*\* ([^\n]*(?:\n  [^\n]*)*)", sections[notebook[:2]]).group(1)
        if room:
            assert time.startswith(f"{room} minutes in the room"), (notebook, time)
            assert f"({split[0]} demo, " in time or f"({split[0]} demo" in time, (notebook, time)
        else:
            assert time.startswith(f"homework, {homework} minutes"), (notebook, time)


# --------------------------------------------------------------------------- scaffolding

GLOSSARY = ("soft token", "placeholder", "BOI/EOI", "budget", "encoder cache")
RECIPE = ("mm_processor_kwargs", "limit_mm_per_prompt", "max_num_batched_tokens",
          "add_special_tokens=False", "expanded ids")  # fmt: skip


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_notebook_closes_with_key_points_a_glossary_and_a_production_recipe(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    last = nb["cells"][-1]
    text = "".join(last["source"])
    assert last["cell_type"] == "markdown" and "## Key points" in text, path.stem
    for word in GLOSSARY:
        assert f"**{word}**" in text, (path.stem, word)
    assert "Production recipe" in text, path.stem
    for line in RECIPE:
        assert line in text, (path.stem, line)


def test_each_exercise_the_room_does_has_a_peer_instruction_question():
    """Four options (A–D) and the answer, for every Predict and Choose of 01–08."""
    text = (TEACHING / "instructor_notes.md").read_text(encoding="utf-8")
    pattern = re.compile(r"\*\*Peer instruction, `([\w.-]+)`\*\*(.*?)(?=\n- \*\*|\n## |\Z)", re.S)
    questions = dict(pattern.findall(text))
    answers = json.loads((ROOT / "tests" / "notebook_answers.json").read_text("utf-8"))
    explain = re.compile(r"^why-|^tiny-speed$")
    room = [n for n in COURSE if "01" <= n[:2] <= "08"]
    wanted = {name for nb in room for name in answers[nb] if not explain.match(name)}
    assert set(questions) == wanted, sorted(set(questions) ^ wanted)
    for name, body in questions.items():
        body = _flat(body)
        assert all(f"{x} " in body for x in ("A", "B", "C", "D")), name
        assert re.search(r"Answer [A-D]\b", body), name


def test_the_learner_profile_and_prerequisites_are_written_down():
    text = (TEACHING / "README.md").read_text(encoding="utf-8")
    assert "## Who it is for" in text and "**Prerequisites:**" in text


def test_workshop_links_the_kit():
    text = WORKSHOP.read_text(encoding="utf-8")
    for must in (
        "teaching/slides.md",
        "teaching/cheat_sheet.md",
        "teaching/instructor_notes.md",
        "gemma-explore doctor",
        "make site",
        "when-widgets-dont-render",
        "make teacher",
    ):
        assert must in text, must
