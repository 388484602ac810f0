"""Exercises that ask: ``grade_exercise(guess, exercise=name)`` grades a learner's blank.

A notebook exercise leaves a blank, ``guess = ...``, and calls :func:`grade_exercise`
with the exercise's name. Nothing else sits in the cell: the truth is computed here, in
the package, by the same functions the lessons use (``plan_image``, ``plan_serving``,
...), so there is no ``truth=`` to copy into the blank. The verdict is one of three:

- ``...`` or ``None`` → "not answered yet" (the notebook still runs to the end);
- a wrong answer → "not yet", a note when it is a known misconception, and a hint that
  nudges (never the answer, never the working);
- a right answer → confirmed, with a sentence saying why it is right.

"Explain" exercises grade a sentence by *ideas*, not keywords: each idea is a few
patterns (other words for the same thing), every idea must be there, and a sentence that
states a known misconception is refused even when it also names the right words. Each
exercise keeps its misconceptions next to its truth (:class:`Exercise`), and the tests
grade every one of them as wrong. The model answer is in the notebook, in a collapsed
``<details>`` block *above* the answer cell.

CI (and a teacher checking a notebook) fills the blanks with the answer key: the
notebook's ``parameters`` cell holds ``ANSWERS = None``; a cell injected after it sets
``ANSWERS = {...}`` (``tests/notebook_answers.json``) and the setup cell calls
``answer_key(ANSWERS)``. A blank is then answered from that key, and a key that
disagrees with the truth raises, so a lesson whose claim stopped being true fails in CI
instead of confusing a learner. ``answer_key[name]`` is the computed truth.

>>> answer_key(None)
>>> grade_exercise(..., exercise="gemma4-10s")
◷ gemma4-10s: not answered yet: replace the ... with your answer and run the cell again.
>>> grade_exercise(188, exercise="gemma4-10s")  # doctest: +ELLIPSIS
✗ gemma4-10s: not yet. 188 is Gemma 3n's fixed count; ... Hint: ...
>>> grade_exercise("No shapes.", exercise="why-padding")  # doctest: +ELLIPSIS
✗ why-padding: not yet. Hint: ...
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gemma_explore.errors import renamed
from gemma_explore.facts.families import (
    DEFAULT_FAMILY,
    GEMMA3N,
    GEMMA4,
    GEMMA4_UNIFIED,
    FamilySpec,
    get_family,
)

__all__ = [
    "EXERCISES",
    "AnswerKey",
    "Exercise",
    "Verdict",
    "answer_key",
    "check",
    "grade_against",
    "grade_exercise",
]

_KEY: dict[str, Any] = {}  # name → answer; set by answer_key(...) (CI, teachers)
MAX_WORDS = 70  # an explanation is one or two sentences: a pasted paragraph is not one


@dataclass(frozen=True)
class Verdict:
    """What a grader decided, printable in a notebook and readable by a test."""

    name: str  # the exercise's name, e.g. "budget-70"
    status: str  # "unanswered" | "wrong" | "right"
    message: str  # one line for the learner
    from_key: bool = False  # the answer came from the answer key, not the learner

    @property
    def answered(self) -> bool:
        return self.status != "unanswered"

    @property
    def right(self) -> bool:
        return self.status == "right"

    def __repr__(self) -> str:
        mark = {"unanswered": "◷", "wrong": "✗", "right": "✓"}[self.status]
        return f"{mark} {self.name}: {self.message}"

    def _repr_html_(self) -> str:
        color = {"unanswered": "#555555", "wrong": "#D55E00", "right": "#009E73"}[self.status]
        return f"<p style='color:{color};font-weight:bold'>{html.escape(repr(self))}</p>"


@dataclass(frozen=True)
class Exercise:
    """One exercise of the course: its truth, the hint, and the known wrong answers.

    >>> EXERCISES["gemma4-10s"].kind
    'predict'
    """

    name: str  # what the notebook's cell passes as exercise=
    notebook: str  # the notebook it belongs to, e.g. "03_audio"
    kind: str  # "predict" | "choose" | "explain": how the guess is read
    hint: str  # a nudge shown on a wrong answer: where to look, never the working
    truth: Callable[[], Any] | None = None  # predict/choose: computed by package functions
    why: str = ""  # printed with a right answer
    tolerance: float = 0  # numbers within ± this are right
    # Known wrong answers → a note on why not (predict/choose: values; explain: sentences).
    misconceptions: tuple[tuple[Any, str], ...] = ()
    # Explain: each idea is a few regular expressions (other words for it); one must match.
    ideas: tuple[tuple[str, ...], ...] = ()
    # Explain: patterns that state a misconception → its note; any match refuses the answer.
    rejects: tuple[tuple[str, str], ...] = ()
    answer: str = ""  # explain: a right answer in one sentence (the key's)
    paraphrases: tuple[str, ...] = ()  # explain: the right idea in other words (tested)

    def value(self) -> Any:
        """The right answer: computed (predict, choose) or the key's sentence (explain)."""
        return _truth(self.name) if self.truth is not None else self.answer


@functools.cache
def _truth(name: str) -> Any:
    exercise = EXERCISES[name]
    assert exercise.truth is not None
    return exercise.truth()


def _blank(value: Any) -> bool:
    return value is ... or value is None or (isinstance(value, str) and not value.strip())


def _same(guess: Any, truth: Any, tolerance: float) -> bool:
    if isinstance(truth, Mapping) and isinstance(guess, Mapping):
        return set(guess) == set(truth) and all(_same(guess[k], truth[k], tolerance) for k in truth)
    if isinstance(truth, tuple | list) and isinstance(guess, tuple | list):
        return len(guess) == len(truth) and all(
            _same(g, t, tolerance) for g, t in zip(guess, truth, strict=True)
        )
    if isinstance(truth, str) and isinstance(guess, str):
        return guess.strip().lower().strip("\"'") == truth.strip().lower()
    if isinstance(truth, bool) or isinstance(guess, bool):
        return guess is truth
    if isinstance(truth, int | float) and isinstance(guess, int | float):
        return abs(guess - truth) <= tolerance
    return guess == truth


def _norm(text: str) -> str:
    return " ".join(str(text).lower().replace("’", "'").split())


def _explain(exercise: Exercise, text: str) -> tuple[bool, str]:
    """(right?, note): every idea present and no misconception stated."""
    low = _norm(text)
    for pattern, note in exercise.rejects:
        if re.search(pattern, low):
            return False, note
    missing = [i for i in exercise.ideas if not any(re.search(p, low) for p in i)]
    return not missing, ""


def _note(exercise: Exercise, guess: Any) -> str:
    for wrong, note in exercise.misconceptions:
        if exercise.kind != "explain" and _same(guess, wrong, exercise.tolerance):
            return note
    return ""


def grade_exercise(guess: Any, *, exercise: str) -> Verdict:
    """Grade ``guess`` for the course exercise named ``exercise`` (its truth lives here).

    >>> grade_exercise(250, exercise="gemma4-10s").right
    True
    """
    if exercise not in EXERCISES:
        raise KeyError(
            f"No exercise named {exercise!r}; the course has: {', '.join(sorted(EXERCISES))}."
        )
    ex = EXERCISES[exercise]
    from_key = False
    if _blank(guess) and exercise in _KEY:
        guess, from_key = _KEY[exercise], True
    if _blank(guess):
        return Verdict(
            exercise,
            "unanswered",
            "not answered yet: replace the ... with your answer and run the cell again.",
        )
    if ex.kind == "explain" and len(str(guess).split()) > MAX_WORDS:
        ok, note = (
            False,
            f"Write it in one or two sentences of your own (at most {MAX_WORDS} words).",
        )
    elif ex.kind == "explain":
        ok, note = _explain(ex, str(guess))
        right = "right. Compare with the model answer above (click “Model answer”)."
    else:
        ok, note = _same(guess, ex.value(), ex.tolerance), _note(ex, guess)
        right = f"right: {guess!r}." + (f" {ex.why}" if ex.why else "")
    if ok:
        return Verdict(exercise, "right", right, from_key)
    if from_key:
        raise AssertionError(
            f"The answer key says {guess!r} for {exercise!r}, but the package disagrees: the "
            "lesson's claim changed. Fix the notebook's text or the answer key."
        )
    return Verdict(
        exercise, "wrong", "not yet. " + (f"{note} " if note else "") + f"Hint: {ex.hint}"
    )


def grade_against(
    guess: Any,
    *,
    exercise: str,
    truth: Any = None,
    hint: str,
    why: str = "",
    keywords: Any = None,
    tolerance: float = 0,
) -> Verdict:
    """Grade ``guess`` against a ``truth`` you give (a value or a function): for a
    teacher's own extra exercise. ``keywords=`` (groups of words, one of each group
    must appear) grades a sentence.

    >>> grade_against(256, exercise="mine", truth=lambda: 16 * 16, hint="count cells").right
    True
    """
    from_key = False
    if _blank(guess) and exercise in _KEY:
        guess, from_key = _KEY[exercise], True
    if _blank(guess):
        return Verdict(
            exercise,
            "unanswered",
            "not answered yet: replace the ... with your answer and run the cell again.",
        )
    if keywords is not None:
        low = str(guess).lower()
        ok = all(any(w.lower() in low for w in g) for g in keywords)
        right = "right. Compare with the model answer above."
    else:
        value = truth() if callable(truth) else truth
        ok = _same(guess, value, tolerance)
        right = f"right: {guess!r}." + (f" {why}" if why else "")
    if ok:
        return Verdict(exercise, "right", right, from_key)
    if from_key:
        raise AssertionError(
            f"The answer key says {guess!r} for {exercise!r}, but the notebook disagrees: the "
            "lesson's claim changed. Fix the notebook's text or the answer key."
        )
    return Verdict(exercise, "wrong", f"not yet. Hint: {hint}")


def _check(name: str, guess: Any, **kwargs: Any) -> Verdict:
    return grade_against(guess, exercise=name, **kwargs)


_check.__name__ = "grade_against"
# The old name and order, check(name, guess, truth=…, hint=…), for one release.
check = renamed(_check, "check")


class AnswerKey(Mapping[str, Any]):
    """The course's answers: ``answer_key[name]`` computes an exercise's truth;
    ``answer_key(answers)`` loads a key (name → answer) that fills blanks left as ``...``
    (``None`` clears it: the learner's own answers only).

    >>> answer_key["gemma4-10s"]
    250
    """

    def __getitem__(self, name: str) -> Any:
        return EXERCISES[name].value()

    def __iter__(self) -> Iterator[str]:
        return iter(EXERCISES)

    def __len__(self) -> int:
        return len(EXERCISES)

    def __call__(self, answers: Mapping[str, Any] | None) -> None:
        _KEY.clear()
        if answers:
            _KEY.update(answers)

    def misconceptions(self, name: str) -> tuple[Any, ...]:
        """The known wrong answers of exercise ``name`` (each graded wrong by the tests)."""
        return tuple(m for m, _ in EXERCISES[name].misconceptions)

    def __repr__(self) -> str:
        return f"AnswerKey({len(self)} exercises; answer_key[name] computes one)"


answer_key = AnswerKey()


# ---- the truths, computed by the package (imports inside: the key loads lazily) -------


def _photo() -> Any:
    from gemma_explore.samples import sample_photo

    return sample_photo()


def _speech() -> Any:
    from gemma_explore.samples import sample_speech

    return sample_speech()


@functools.cache
def _tiny(name: str) -> Any:
    from gemma_explore.engines.load import load

    return load(name)


def _image_tokens(
    size: tuple[int, int], budget: int = 280, family: str | FamilySpec = DEFAULT_FAMILY
) -> int:
    from gemma_explore.plans.image import plan_image

    return plan_image(size, family=family, max_soft_tokens=budget).num_soft_tokens


def _audio_tokens(clip: Any, family: str) -> int:
    from gemma_explore.plans.audio import plan_audio

    return plan_audio(clip, family=family).num_placeholders


def _twice_the_clip() -> int:
    import numpy as np

    wave, rate = _speech()
    return _audio_tokens((np.tile(wave, 2), rate), GEMMA4)


def _real_model_changes() -> str:
    # The multimodal counts come from the real processor settings; the stand-in tokenizer
    # of the tiny bundle cuts text into characters, so only the text part would change.
    tok = _tiny("tiny-gemma4").processor.tokenizer
    text = "What do you see and hear?"
    stand_in = len(tok.encode(text, add_special_tokens=False)) == len(text)
    return "a" if stand_in else "d"


def _stretch_3n(size: tuple[int, int]) -> float:
    from gemma_explore.plans.image import plan_image

    h, w = plan_image(size, family=GEMMA3N).token_area  # (height, width) of the original
    return round(w / h, 3)


def _padding_rows(size: tuple[int, int], budget: int) -> int:
    from gemma_explore.plans.image import plan_image

    return plan_image(size, family=GEMMA4, max_soft_tokens=budget).num_padding_patches


def _smallest_budget_for_text(size: tuple[int, int], text_px: float) -> int:
    # The smallest budget whose resize keeps text at least one patch tall.
    from gemma_explore.plans.image import plan_image

    patch = get_family(GEMMA4).image.patch_size
    return min(
        b
        for b in (70, 140, 280, 560, 1120)
        if text_px * plan_image(size, family=GEMMA4, max_soft_tokens=b).resized_size[0] / size[0]
        >= patch
    )


def _padding_slots_3n(seconds: float) -> int:
    import numpy as np

    from gemma_explore.plans.audio import plan_audio

    clip = np.full(int(seconds * 16_000), 0.1, np.float32)
    return plan_audio(clip, family=GEMMA3N).padding_slots


def _tokens_gemma4(seconds: float) -> int:
    import numpy as np

    return _audio_tokens(np.full(int(seconds * 16_000), 0.1, np.float32), GEMMA4)


def _frame_spacing_s(frames: int, fps: float) -> float:
    from gemma_explore.plans.video import plan_video

    idx = plan_video(frames, fps=fps, frame_size=(720, 1280)).frame_indices
    return round((idx[-1] - idx[0]) / (len(idx) - 1) / fps, 3)


def _first_second_frames(frames: int, fps: float) -> int:
    from gemma_explore.plans.video import plan_video

    stamps = plan_video(frames, fps=fps, frame_size=(720, 1280)).timestamps
    return sum(s == stamps[0] for s in stamps)


def _request_budget(budget: int) -> int:
    from gemma_explore.plans.vllm import vllm_image_tokens

    photo = _photo()
    return vllm_image_tokens(photo.height, photo.width, max_soft_tokens=budget)


def _needs_restart() -> str:
    # The option set only in the engine's arguments (not in any request) needs a restart.
    from gemma_explore.engines.vllm import engine_args, vllm_request
    from gemma_explore.processing.inputs import prepare_inputs

    engine = engine_args("google/gemma-4-E4B-it", family=GEMMA4)
    prepared = prepare_inputs(
        "Hi", bundle=_tiny("tiny-gemma4"), images=[_photo()], max_soft_tokens=140
    )
    request = vllm_request(prepared)
    options = {"a": "mm_processor_kwargs", "b": "limit_mm_per_prompt", "c": "max_tokens"}
    return next(k for k, v in options.items() if v in engine and v not in request)


def _unified_samples(samples: int) -> int:
    return _audio_tokens(samples, GEMMA4_UNIFIED)


def _vllm_unified_placeholders(samples: int) -> int:
    from gemma_explore.parity.checks import check_audio_parity

    rows = check_audio_parity(samples, bundle=_tiny("tiny-gemma4-unified"), use_vllm=False).rows
    return next(r for r in rows if r.step == "audio tokens").vllm_arithmetic


def _served(model_id: str) -> Any:
    from gemma_explore.engines.load import load

    return load(model_id, weights=False)


def _photos_that_fit() -> int:
    from gemma_explore.serving.plan import plan_serving

    plan = plan_serving(_served("google/gemma-4-31B-it"), max_model_len=4096, max_soft_tokens=560)
    return plan.images_that_fit((1080, 1920)).fits


def _encoder_cache(model_id: str, batched: int, **limits: Any) -> int:
    from gemma_explore.serving.plan import plan_serving

    plan = plan_serving(
        _served(model_id), max_num_batched_tokens=batched, limit_mm_per_prompt=limits or None
    )
    return plan.encoder_cache_size


def _inside_prompt() -> Any:
    from gemma_explore.processing.inputs import prepare_inputs

    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "image", "image": _photo()},
                {"type": "audio", "audio": _speech()},
                {"type": "text", "text": "What?"},
            ],
        }
    ]
    return prepare_inputs(msgs, bundle=_tiny("tiny-gemma4"))


def _per_layer_remapped() -> int:
    from gemma_explore.inside.per_layer import per_layer_ids

    return len(per_layer_ids(_inside_prompt().input_ids, bundle=_tiny("tiny-gemma4")).remapped)


def _embedder_order() -> str:
    from gemma_explore.inside.towers import encode_images

    trace = encode_images(_inside_prompt(), bundle=_tiny("tiny-gemma4")).embedder
    return "a" if trace.stages[1].module == "embedding_pre_projection_norm" else "b"


def _sum_of_plans() -> int:
    return _image_tokens(_photo().size[::-1], 70) + _audio_tokens(_speech(), GEMMA4)


def _largest_budget_for_four() -> int:
    from gemma_explore.plans.image import plan_image

    size = _photo().size[::-1]
    return max(
        b
        for b in (70, 140, 280, 560, 1120)
        if 4 * plan_image(size, family=GEMMA4, max_soft_tokens=b).total_tokens + 50 <= 2048
    )


def _stray_after_edit(budget: int) -> int:
    from gemma_explore.parity.checks import vllm_replay
    from gemma_explore.processing.inputs import prepare_inputs

    bundle = _tiny("tiny-gemma4")
    one = [{"role": "user", "content": [{"type": "image", "image": _photo()}]}]
    prepared = prepare_inputs(one, max_soft_tokens=budget, bundle=bundle)
    ids = prepared.input_ids
    k = ids.index(bundle.spec.id_of(bundle.spec.image_token))
    return vllm_replay(
        ids[:k] + ids[k + 1 :], use_vllm=False, prepared=prepared, bundle=bundle
    ).stray["image"]


# ---- the course's exercises ------------------------------------------------------------

_B = r"\b"  # word boundary, for readability of the patterns below


def _ex(**kw: Any) -> Exercise:
    return Exercise(**kw)


_ALL = [
    # 00 · quickstart
    _ex(
        name="clip-twice-as-long",
        notebook="00_quickstart",
        kind="predict",
        truth=_twice_the_clip,
        tolerance=1,
        hint="Does Gemma 4's audio count depend on how long the clip is? Its plan in section 3 "
        "says how much sound one token holds.",
        why="Gemma 4 spends one token per 40 ms, so twice the sound costs twice the tokens.",
        misconceptions=(
            (132, "That is the clip played once: Gemma 4's count follows the length."),
            (188, "188 is Gemma 3n's fixed count; this is Gemma 4."),
        ),
    ),
    _ex(
        name="what-a-real-model-changes",
        notebook="00_quickstart",
        kind="choose",
        truth=_real_model_changes,
        hint="Which of the two numbers does the real processor count, and which one depends on "
        "how text is cut into tokens? Section 1 lists what is the tiny model's own.",
        why="The soft-token counts are the real processor's; only the text is cut differently.",
        misconceptions=(
            ("c", "Weights never change how many soft tokens the processor writes."),
            ("b", "The multimodal count is the real processor's, with any weights."),
            ("d", "The tiny bundle's tokenizer is a stand-in: it cuts text into characters."),
        ),
    ),
    _ex(
        name="why-counts-hold",
        notebook="00_quickstart",
        kind="explain",
        hint="Name what does the counting, and what random weights change.",
        answer="The real processor and model classes do every count; random weights change the "
        "values of the vectors, not their shape or number.",
        ideas=(
            (
                _B
                + r"(real|same|actual|original|unchanged|genuine)"
                + _B
                + r"[^.;]{0,40}"
                + _B
                + r"(processor|code|class|classes|config\w*|arithmetic|pipeline)",
                r"(processor|config\w*|code|arithmetic)[^.;]{0,60}"
                + _B
                + r"(real|same|unchanged|does (all )?the count\w*|count\w* (the|every|each))",
            ),
            (
                r"weights?[^.;]{0,80}" + _B + r"(values?|numbers? (inside|in)|contents?|text)" + _B,
                r"(values?|contents?)[^.;]{0,60}"
                + _B
                + r"not"
                + _B
                + r"[^.;]{0,40}(shape|count|number|how many|size)",
                r"(counts?|shapes?|number of|how many)[^.;]{0,60}"
                + r"(don't|doesn't|do not|does not|never|independent|regardless)[^.;]{0,40}"
                + r"(depend|weights|change)",
            ),
        ),
        rejects=(
            (
                r"weights? (are|is) (real|trained|pretrained)",
                "The tiny model's weights are random, not trained.",
            ),
            (
                r"weights?\s+(change|changes|decide|decides|set|sets|determine|determines)\s+"
                r"(how many|the (token )?counts?|the number|the shape)",
                "Weights change what the vectors hold, never how many there are.",
            ),
        ),
        misconceptions=(
            ("processor weights", ""),
            ("The weights are trained, so the counts are right.", ""),
            ("Random weights change how many tokens come out, but the processor fixes it.", ""),
        ),
        paraphrases=(
            "The real processor does all the counting; random weights only change the numbers "
            "inside the vectors, not how many there are.",
            "Every count comes from the same code and config as the real model, and weights "
            "affect values, never the shape.",
        ),
    ),
    # 01 · images
    _ex(
        name="landscape-280",
        notebook="01_images_3n_vs_4",
        kind="predict",
        truth=lambda: _image_tokens((900, 1200)),
        hint="Fit the area to 280 × 9 patches of 16 px, keep the shape, and remember that each "
        "side must hold whole 48 px cells.",
        why="The budget is an upper bound: rounding each side down to 48 px leaves a few slots.",
        misconceptions=(
            (280, "The budget is an upper bound, not the count."),
            (270, "That is our portrait's count; this photo has another shape."),
            (256, "256 is Gemma 3n's fixed count."),
        ),
    ),
    _ex(
        name="panorama-3n-stretch",
        notebook="01_images_3n_vs_4",
        kind="predict",
        truth=lambda: _stretch_3n((1000, 3000)),
        tolerance=0.05,
        hint="Gemma 3n squashes every image to one square grid: how many original pixels of "
        "width, and of height, land in one cell?",
        why="A 3:1 panorama squashed to a square: each cell covers three times more width.",
        misconceptions=(
            (
                1,
                "Gemma 3n does not keep the aspect ratio: its cells are square only after the "
                "squash.",
            ),
            (1 / 3, "Width ÷ height: the panorama is wider than tall."),
        ),
    ),
    _ex(
        name="why-squash",
        notebook="01_images_3n_vs_4",
        kind="explain",
        hint="What kind of encoder does Gemma 3n use, and what does it expect as input?",
        answer="MobileNet-V5 is a convolutional encoder trained on one fixed 768 px square input, "
        "so every image is squashed to that size.",
        ideas=(
            (
                r"convolution",
                _B + r"conv" + _B,
                _B + r"cnn" + _B,
                r"mobilenet",
                r"(its|the|vision) encoder",
            ),
            (
                _B + r"(fixed|one|single|same|set)[- ](input[- ])?(size|shape|resolution|input)",
                r"768",
                r"trained on (one|a single|square)",
                r"square input",
                r"fixed[- ]size",
            ),
        ),
        rejects=(
            (r"(save|saves|less) memory|faster|speed", "Speed and memory are not the reason."),
            (r"budget", "Gemma 3n has no budget: its count is fixed by the encoder."),
            (
                r"3n('s)?[^.;]{0,30}(vit|vision transformer)",
                "Gemma 3n's MobileNet-V5 is convolutional, not a vision transformer.",
            ),
        ),
        misconceptions=(
            ("To save memory, Gemma 3n uses a smaller fixed image.", ""),
            ("Gemma 3n's vision transformer needs square patches of one size.", ""),
            ("Because its budget is always 256 tokens.", ""),
        ),
        paraphrases=(
            "MobileNet-V5 is a CNN that was trained on 768×768 inputs only, so every image is "
            "resized to that one shape and gives the same 16×16 grid.",
            "Its convolutional encoder expects a single fixed resolution, so the processor "
            "stretches every picture to it.",
        ),
    ),
    # 02 · budgets
    _ex(
        name="padding-wide-140",
        notebook="02_budgets_and_pooling",
        kind="predict",
        truth=lambda: _padding_rows((1080, 1920), 140),
        hint="How many patch rows does every image get at one budget, and how many of them "
        "does this resized photo really fill? Both are counted in 16 px patches.",
        why="budget × 9 rows, minus the patches of the resized image.",
        misconceptions=(
            (0, "Every image at one budget gets budget × 9 rows, whatever it needs."),
            (20, "That counts soft tokens (140 − 120); rows are 16 px patches."),
            (1260, "That is every row; the question asks for the padding ones."),
        ),
    ),
    _ex(
        name="ocr-budget",
        notebook="02_budgets_and_pooling",
        kind="choose",
        truth=lambda: _smallest_budget_for_text((3000, 800), 30),
        hint="Plan the receipt at each budget: how much does the resize shrink it, and how tall "
        "is 30 px of text afterwards? Section 5 does this for a page.",
        why="The first budget whose resize keeps the text at least one 16 px patch tall.",
        misconceptions=(
            (1120, "1120 works too, but it is not the smallest that does."),
            (280, "At 280 the receipt shrinks to about half: its text is under one patch."),
            (70, "At 70 the text shrinks to a few pixels."),
        ),
    ),
    _ex(
        name="why-padding",
        notebook="02_budgets_and_pooling",
        kind="explain",
        hint="What do batching and compiled graphs need from tensor shapes?",
        answer="Every image at one budget gets the same static shape, so images can be batched "
        "and a compiled CUDA graph replayed.",
        ideas=(
            (
                r"static",
                r"(same|fixed|constant|one|identical) (tensor )?(shape|size)",
                r"shapes? (don't|never|do not|does not|doesn't) change",
            ),
            (
                r"batch",
                r"compil",
                r"cuda ?graph",
                _B + r"graphs?" + _B,
                _B + r"xla" + _B,
                r"replay",
            ),
        ),
        rejects=(
            (r"accura|quality|better answers?", "The padding rows are ignored: they add nothing."),
            (
                r"(model|encoder) (sees?|uses?|reads?) the padding|borders?|edges?",
                "The padding rows sit at (−1, −1) and are ignored.",
            ),
            (
                r"(exactly|always) (the )?budget (soft )?tokens",
                "The padding slots are stripped before the prompt: the count stays below the "
                "budget.",
            ),
        ),
        misconceptions=(
            ("The padding improves accuracy because the model sees a bigger image.", ""),
            ("So the prompt always gets exactly budget tokens of the same shape.", ""),
            ("It pads so that the batch is faster.", ""),
        ),
        paraphrases=(
            "Every image at a budget then has one fixed tensor shape, so different images batch "
            "together and a captured CUDA graph can be replayed.",
            "Shapes never change between calls, which compiled encoders and batching need.",
        ),
    ),
    # 03 · audio
    _ex(
        name="padding-2s",
        notebook="03_audio",
        kind="predict",
        truth=lambda: _padding_slots_3n(2),
        hint="How long is one Gemma 3n encoder token (the steps in section 3 say)? The slots "
        "that 2 s of sound does not fill are padding.",
        why="188 slots, minus one real token per 160 ms of the clip.",
        misconceptions=(
            (0, "Gemma 3n always writes 188 slots, so a short clip leaves most of them empty."),
            (138, "That counts 40 ms tokens; Gemma 3n's encoder makes one per 160 ms."),
            (188, "Some slots do hold the clip's real tokens."),
        ),
    ),
    _ex(
        name="gemma4-10s",
        notebook="03_audio",
        kind="predict",
        truth=lambda: _tokens_gemma4(10),
        hint="How many milliseconds of sound does one Gemma 4 audio token hold?",
        why="One token per 40 ms: 10 000 ms / 40 ms.",
        misconceptions=(
            (188, "188 is Gemma 3n's fixed count; Gemma 4 charges by length."),
            (1000, "That counts 10 ms mel frames; the encoder squeezes four into one token."),
            (750, "750 is the cap for 30 s; this clip is shorter."),
        ),
    ),
    _ex(
        name="why-188",
        notebook="03_audio",
        kind="explain",
        hint="How long is 188 × 160 ms, and what fills the slots a short clip does not use?",
        answer="The processor always writes a fixed 188 placeholders (about 30 s), a static prompt "
        "shape; a short clip's unused slots are filled with padding.",
        ideas=(
            (
                r"fixed",
                r"static",
                r"always",
                r"constant",
                r"same (number|count|shape|length)",
                r"regardless",
                r"(don't|doesn't|do not|does not|never) depends?",
                r"without (looking|knowing|decoding)",
            ),
            (
                r"pad",
                r"30 ?s" + _B,
                r"30 seconds",
                r"longest",
                r"maximum",
                r"max length",
                r"unused",
                r"fill",
            ),
        ),
        rejects=(
            (
                r"stretch|slow(ed|s)? down|resampl",
                "The clip is not stretched: the unused slots get a padding embedding.",
            ),
            (r"mel (bins|bands)|128", "188 counts tokens, not mel bands."),
            (r"188 (ms|milliseconds)", "One Gemma 3n token is 160 ms; 188 is the number of slots."),
        ),
        misconceptions=(
            ("Because there are 188 mel bins.", ""),
            ("The clip is always stretched to fill 188 tokens.", ""),
            ("It always uses 188 because the encoder makes 188 tokens for any clip.", ""),
        ),
        paraphrases=(
            "The prompt always gets 188 placeholders, about 30 s worth, so its shape never "
            "depends on the clip; slots a short clip doesn't use hold a padding embedding.",
            "A static count: 188 × 160 ms is about the longest clip, and shorter clips are padded.",
        ),
    ),
    # 04 · video
    _ex(
        name="frame-spacing-10s",
        notebook="04_video",
        kind="predict",
        truth=lambda: _frame_spacing_s(300, 30),
        tolerance=0.02,
        hint="How many frames does Gemma 4 sample at most, and how are they spread over the clip?",
        why="32 frames spread evenly over 10 s.",
        misconceptions=(
            (1.0, "Gemma 4 samples a fixed number of frames, not one per second."),
            (1 / 30, "Not every frame is kept: at most 32 are."),
            (0.125, "That is our 4 s sample; this clip is 10 s."),
        ),
    ),
    _ex(
        name="first-second-frames",
        notebook="04_video",
        kind="predict",
        truth=lambda: _first_second_frames(300, 30),
        hint="When is each sampled frame taken, and which of those times truncate to 00:00?",
        why="Frames a third of a second apart: the ones before 1 s all read 00:00.",
        misconceptions=(
            (8, "That is our sample clip's count; this clip is longer."),
            (1, "Seconds are truncated: every frame before 1 s reads 00:00."),
            (3, "Count the frame at 0 s too."),
        ),
    ),
    _ex(
        name="why-timestamps",
        notebook="04_video",
        kind="explain",
        hint="What can the model not tell from the frames alone?",
        answer="The frame tokens say nothing about when each frame was taken or how far apart "
        "the sampled frames are.",
        ideas=(
            (
                _B + r"when" + _B,
                _B + r"time" + _B,
                r"(what|which) second",
                r"duration",
                r"how long",
                r"how far apart",
                r"spacing",
                r"interval",
                r"elapsed",
            ),
            (
                r"(frames?|tokens?)[^.;]{0,60}(no|nothing|not|don't|doesn't|without)[^.;]{0,40}"
                r"(time|when|tell|say)",
                r"apart",
                r"spaced",
                r"spread",
                r"evenly",
                r"gaps?",
                r"any length",
            ),
        ),
        rejects=(
            (
                r"(put|keep|sort|get) (the )?frames? in (the right |their )?order|"
                r"(sort|order)(ing)? the frames",
                "The frames already arrive in order: ordering is not what the stamps add.",
            ),
        ),
        misconceptions=(
            ("To put the frames in order.", ""),
            ("The tokenizer needs the timestamps to decode the video.", ""),
            ("So the model can sort the frames by time.", ""),
        ),
        paraphrases=(
            "Frame tokens carry no notion of time; since at most 32 frames are spread over any "
            "length, only the stamp tells the model when each one happened.",
            "Without stamps the model can't know how far apart the sampled frames are or at what "
            "second something happens.",
        ),
    ),
    # 05 · prompt layout
    _ex(
        name="two-photos-70",
        notebook="05_prompt_layout",
        kind="predict",
        truth=lambda: 2 * _image_tokens(_photo().size[::-1], 70),
        hint="One placeholder per soft token, and none for the markers. Notebook 02's table "
        "has this photo at every budget.",
        why="Two runs of the photo's soft tokens at budget 70.",
        misconceptions=(
            (140, "The budget is an upper bound, not the count."),
            (130, "The markers around each run are not <|image|> placeholders."),
        ),
    ),
    _ex(
        name="why-split-newlines",
        notebook="05_prompt_layout",
        kind="explain",
        hint="Does vLLM compare text or token ids when it looks for a run, and what would the "
        "tokenizer have written?",
        answer="The merge keeps the prompt the same as the tokenizer would write it, but the run "
        "vLLM searches for starts with the \\n\\n id, which a merged \\n\\n\\n token hides; "
        "reading merged tokens as their parts lets the id match find the run.",
        ideas=(
            (
                r"(consistent|same|match(es)?|equal|identical|as)"
                + _B
                + r"[^.;]{0,50}(tokeni[sz]er|training|trained)",
                r"tokeni[sz]er (would )?(writes?|produces?|outputs?|gives?|makes?)",
                r"what the model (saw|was trained)",
            ),
            (
                r"(find|finds|finding|search|locat|look(s|ing)? for|match)[^.;]{0,60}"
                + r"("
                + _B
                + r"ids?"
                + _B
                + r"|runs?|placeholders?|\\n\\n|start)",
            ),
        ),
        rejects=(
            (
                r"(does not|doesn't|never) merge",
                "vLLM does merge newline pairs (_apply_token_matches).",
            ),
            (
                r"match(es|ing)? (the )?(prompt )?text|compar\w* (the )?(text|strings?)|re-?tokeni[sz]",
                "vLLM compares token ids; it never re-tokenises the prompt.",
            ),
        ),
        misconceptions=(
            ("vLLM does not merge tokens, it matches text.", ""),
            (
                "vLLM re-tokenises the prompt, so the merges are the same as the tokenizer's, "
                "and it matches the text to find runs.",
                "",
            ),
            ("The merge saves tokens and the split is faster.", ""),
        ),
        paraphrases=(
            "Merging keeps the ids identical to what the tokenizer would produce, which is what "
            "the model was trained on; but the search for each item's run matches ids that "
            "start with \\n\\n, which a merged token hides.",
            "So the prompt stays consistent with the tokenizer, while finding the placeholder "
            "runs by id needs the unmerged newlines.",
        ),
    ),
    # 06 · inference
    _ex(
        name="request-budget-560",
        notebook="06_inference",
        kind="predict",
        truth=lambda: _request_budget(560),
        hint="Does the engine's start-up budget cap a request that names its own? Then plan "
        "the photo at the request's budget.",
        why="vLLM hands the request's budget to the processor: the photo gets that budget's count.",
        misconceptions=(
            (270, "That is the start-up budget's count; the request's own budget wins."),
            (560, "The budget is an upper bound, not the count."),
        ),
    ),
    _ex(
        name="restart-needed",
        notebook="06_inference",
        kind="choose",
        truth=_needs_restart,
        hint="Which of the three travels with each request, and which is an engine argument "
        "printed in section 3?",
        why="limit_mm_per_prompt is an engine argument: vLLM profiles memory for it at start-up.",
        misconceptions=(
            ("a", "A request may carry its own budget in mm_processor_kwargs."),
            ("c", "max_tokens is a sampling parameter of each request."),
        ),
    ),
    _ex(
        name="tiny-speed",
        notebook="06_inference",
        kind="explain",
        hint="Compare the tiny model's size with a real checkpoint's.",
        answer="The tiny model has random weights and a few million parameters, so its speed says "
        "nothing about a real model's size on a GPU.",
        ideas=(
            (r"tiny", r"small", r"million", r"random", r"toy", r"fewer parameters"),
            (
                r"(real|released|actual|full|billions?|checkpoint)[^.;]{0,60}"
                r"(size|bigger|larger|parameters|slower|compute|memory|gpu)",
                r"(speed|throughput|tokens per second)[^.;]{0,60}(depends?|scales?|says nothing|"
                r"(doesn't|does not) (tell|transfer|say)|not (representative|transfer))",
                r"(bigger|larger) model",
                r"orders of magnitude|thousands of times",
            ),
        ),
        rejects=(
            (
                r"same speed|(conclusion|claim) (holds|is (right|correct|true))|"
                r"will (also |even )?be (fast|faster)",
                "The speed of a few million random parameters says nothing about a real model.",
            ),
        ),
        misconceptions=(
            ("On a GPU it will be even faster, so the conclusion holds.", ""),
            ("The tiny model is random, so its answers are wrong.", ""),
            ("The conclusion holds: tiny and real models have the same speed per parameter.", ""),
        ),
        paraphrases=(
            "The tiny model has only a few million random parameters; a real checkpoint has "
            "billions, so its speed depends on its size and the GPU and must be measured there.",
            "Random toy weights at a tiny size say nothing about the throughput of the full "
            "model, which is orders of magnitude bigger.",
        ),
    ),
    # 07 · encoder-free
    _ex(
        name="unified-1.5s",
        notebook="07_encoder_free",
        kind="predict",
        truth=lambda: _unified_samples(24_000),
        hint="How many samples does one Unified token hold, and what happens to the last, "
        "shorter row?",
        why="ceil(samples / 640): the last partial row is zero-padded into a whole token.",
        misconceptions=(
            (37, "The last partial row is padded to a whole row, not dropped."),
            (150, "That counts 10 ms mel frames; Unified has no mel at all."),
        ),
    ),
    _ex(
        name="vllm-unified-clip",
        notebook="07_encoder_free",
        kind="predict",
        truth=lambda: _vllm_unified_placeholders(20 * 640 + 50),
        hint="First count the embedder's rows; then ask whether the remainder falls in the "
        "window where vLLM's mel count is short.",
        why="The remainder (50 samples) is inside vLLM's 1–160 window: one placeholder short.",
        misconceptions=(
            (21, "That is what the embedder makes; vLLM's prompt counts with Gemma 4's mel rule."),
            (0, "vLLM's mel count is short by one here, not empty: the clip is long."),
        ),
    ),
    _ex(
        name="why-more-work",
        notebook="07_encoder_free",
        kind="explain",
        hint="What has a Gemma 4 token already 'seen' that a Unified token has not?",
        answer="Gemma 4's tower has already mixed every patch with attention; Unified's tokens are "
        "independent raw blocks, so the language model must relate them.",
        ideas=(
            (
                r"(tower|encoder|vit|vision transformer)[^.;]{0,60}"
                r"(mix|attend|attention|context|relat|whole image|every patch|combin)",
                r"(mix|mixed|context|attended)[^.;]{0,40}(before|already)",
                r"context from the (vision )?(tower|encoder|vit)",
            ),
            (
                r"raw",
                r"independent",
                r"unmixed",
                r"local",
                r"isolated",
                r"on (its|their) own",
                r"separately",
                r"no (context|mixing)",
                r"language model (must|has to|needs to|does)",
                r"in the (language model|decoder)",
            ),
        ),
        rejects=(
            (r"more (soft )?tokens", "Gemma 4 and Unified give a photo the same number of tokens."),
        ),
        misconceptions=(
            ("Unified makes more tokens for the same photo, so it needs more compute.", ""),
            ("Unified's encoder is bigger.", ""),
            ("Its rows hold 6912 values, so each token is bigger and slower.", ""),
        ),
        paraphrases=(
            "In Gemma 4 the ViT's attention has already combined every patch with the rest of "
            "the image; Unified's tokens are raw 48 px blocks projected on their own, so the "
            "language model has to relate them itself.",
            "Gemma 4's tokens arrive with context from the vision encoder; Unified's are isolated "
            "local blocks, and the decoder must do that mixing.",
        ),
    ),
    # 08 · serving
    _ex(
        name="photos-in-4096",
        notebook="08_serving",
        kind="predict",
        truth=_photos_that_fit,
        hint="How many tokens does vLLM count for one such photo at 560 (markers included)? "
        "Then fill 4096 with them, after the text.",
        why="Whole images only: vLLM's count per image plus two markers, against max_model_len.",
        misconceptions=((8, "Count vLLM's tokens for this size, not the budget: a few less fit."),),
    ),
    _ex(
        name="e4b-cache-512",
        notebook="08_serving",
        kind="predict",
        truth=lambda: _encoder_cache("google/gemma-4-E4B-it", 512, video=0),
        hint="max(max_num_batched_tokens, the largest item): which item is the largest once "
        "video is off, on a checkpoint that hears?",
        why="With video off, the largest item is a 30 s clip.",
        misconceptions=(
            (512, "The cache is never smaller than the largest item."),
            (280, "Which is larger on the E4B: an image at 280, or a clip?"),
            (2496, "Video is off: its worst case no longer counts."),
            (16384, "That is the H100 default of max_num_batched_tokens; here it is 512."),
        ),
    ),
    _ex(
        name="why-dummy-inputs",
        notebook="08_serving",
        kind="explain",
        hint="Which hook would vLLM then find, and do Gemma 3n's counts depend on the input?",
        answer="vLLM would call the renamed method instead of building dummy inputs, and the worst "
        "case would stay 256 image and 188 audio tokens, because Gemma 3n's counts are fixed.",
        ideas=(
            (
                r"(no|without|skips?|skipping|not build\w*|instead of( building)?) (the |any )?"
                r"dummy",
                r"(call|calls|use|uses|read|reads|ask|asks)[^.;]{0,30}"
                r"(the (renamed )?method|the hook|get_mm_max|it directly)",
            ),
            (
                r"(same|unchanged|still|no change)[^.;]{0,40}(256|188|numbers?|counts?|worst case)",
                r"(256|188)[^.;]{0,40}(either way|anyway|both ways|regardless|in both)",
                r"(counts?|numbers?) (are|is) fixed",
                r"fixed (counts?|numbers?)",
            ),
        ),
        rejects=(
            (
                r"(smaller|larger|bigger|different) (worst case|cache|numbers?|counts?)|"
                r"more (accurate|precise)",
                "Gemma 3n's counts are fixed: any input gives 256 and 188.",
            ),
        ),
        misconceptions=(
            (
                "vLLM would reserve a smaller worst case, because it no longer builds dummy inputs.",
                "",
            ),
            ("Nothing: vLLM always builds dummy inputs for every model.", ""),
            ("The counts would become more accurate.", ""),
        ),
        paraphrases=(
            "vLLM would ask the method for the worst case and skip the dummy inputs, but the "
            "numbers stay the same, 256 and 188, since Gemma 3n's counts are fixed.",
            "It would read get_mm_max_tokens_per_item directly instead of building dummy inputs; "
            "256 and 188 either way.",
        ),
    ),
    # 09 · inside the model (content by the inside-the-model issue)
    _ex(
        name="per-layer-remapped",
        notebook="09_inside_the_model",
        kind="predict",
        truth=_per_layer_remapped,
        hint="Which positions of the prompt hold placeholders? Count the photo's and the clip's "
        "soft tokens.",
        why="Every multimodal position reads the per-layer row of token 0.",
        misconceptions=((270, "The clip's soft tokens are remapped too."),),
    ),
    _ex(
        name="embedder-order",
        notebook="09_inside_the_model",
        kind="choose",
        truth=_embedder_order,
        hint="Read the stage list of section 1, not vLLM's docstring.",
        why="The weightless RMSNorm runs first, then the Linear.",
        misconceptions=(
            ("b", "That is what vLLM's docstring says; the code runs the norm first."),
        ),
    ),
    _ex(
        name="why-row-zero",
        notebook="09_inside_the_model",
        kind="explain",
        hint="What does the placeholder id say about the image, and what carries the image?",
        answer="The placeholder id says nothing about the picture; the soft token from the encoder "
        "carries the content, so every such position reads the same neutral pad row 0.",
        ideas=(
            (
                r"(placeholder|id)[^.;]{0,60}(same|nothing|no (information|content)|"
                r"(doesn't|does not) (say|carry|tell)|carr(y|ies) no|identical|meaningless)",
            ),
            (
                r"(soft tokens?|encoder|embeddings?|vectors?)[^.;]{0,60}"
                r"(carr|hold|bring|content|information|says)",
                r"neutral",
            ),
        ),
        rejects=(
            (
                r"row (0|zero) (holds|has|stores) the (image|picture)",
                "Row 0 is the <pad> row: the same for every image.",
            ),
            (r"faster|speed", "Speed is not the reason."),
        ),
        misconceptions=(
            ("Because row 0 holds the image.", ""),
            ("Row zero is faster to look up.", ""),
            ("The per-layer table has no rows for images, so it would crash otherwise.", ""),
        ),
        paraphrases=(
            "The placeholder id is identical at every image position and tells nothing about the "
            "picture; the encoder's soft token carries the content, so each position gets the "
            "same neutral <pad> row.",
            "Since the id carries no information about the image while the encoder's vectors "
            "hold it, all those positions read one neutral row, id 0.",
        ),
    ),
    # 10 · review
    _ex(
        name="photo70-plus-speech",
        notebook="10_review",
        kind="predict",
        truth=_sum_of_plans,
        hint="Two plans, each from its own notebook: the photo at 70 (02), the speech in "
        "Gemma 4 (03). Soft tokens only.",
        why="The photo's soft tokens at 70 plus one audio token per 40 ms.",
        misconceptions=(
            (70 + 132, "The budget 70 is an upper bound, not the photo's count."),
            (63 + 188, "188 is Gemma 3n's count; this is Gemma 4."),
        ),
    ),
    _ex(
        name="four-photos-2048",
        notebook="10_review",
        kind="choose",
        truth=_largest_budget_for_four,
        hint="Four times the photo's total tokens at each budget, plus the text: which is the "
        "last that stays under 2048?",
        why="The next budget up overflows max_model_len.",
        misconceptions=((560, "Count the photo's tokens at 560, four times, plus the text."),),
    ),
    _ex(
        name="stray-at-70",
        notebook="10_review",
        kind="predict",
        truth=lambda: _stray_after_edit(70),
        hint="How many <|image|> did the edited prompt hold, and how many of them does vLLM "
        "replace with its fresh run?",
        why="The edited run had one placeholder less; vLLM replaces only the first one.",
        misconceptions=(
            (268, "That is the photo at 280; here it is at 70."),
            (0, "vLLM does not look for the runs already in the ids."),
            (62, "vLLM replaces the first <|image|> with its fresh run."),
        ),
    ),
    _ex(
        name="why-no-error",
        notebook="10_review",
        kind="explain",
        hint="Which <|image|> does vLLM expand, and what happens to the others?",
        answer="vLLM replaces the first <|image|> with a fresh run and keeps the other 268 as "
        "stray text tokens, so the counts match, nothing fails, and the model silently reads a "
        "wrong, longer prompt.",
        ideas=(
            (
                r"(fresh|new|its own) run",
                r"re-?expand",
                r"replac\w* (only )?the first",
                r"(counts?|numbers?) (match|agree)",
                r"270 ?= ?270",
                r"first <\|image\|>",
            ),
            (
                r"stray",
                r"leftover",
                r"left over",
                r"extra",
                r"remain",
                r"268",
                r"(text|ordinary) tokens?",
                r"silent",
                r"(wrong|different|longer) prompt",
                r"worse answers?",
                r"no (error|warning)",
                r"unnoticed",
                r"hidden",
                r"hides",
            ),
        ),
        rejects=(
            (
                r"vllm (refuses|raises|rejects|fails)|(error|exception) (is|gets) raised",
                "vLLM raises nothing here.",
            ),
            (r"harmless|no harm|(so|and) (it's|it is) fine", "The model reads a wrong prompt."),
        ),
        misconceptions=(
            ("vLLM refuses the request with Attempted to assign.", ""),
            ("vLLM fixes the prompt with a fresh run, so it is harmless.", ""),
            ("There is no difference: the counts match.", ""),
        ),
        paraphrases=(
            "vLLM writes its own fresh run for the first <|image|> and leaves the other 268 as "
            "ordinary text tokens, so its counts agree, nothing raises, and the model silently "
            "reads a wrong prompt.",
            "The re-expanded run matches the encoder, so no error appears, but the leftover "
            "placeholders stay in the prompt and spoil answers unnoticed.",
        ),
    ),
]

# name → exercise, in course order. The tests grade every truth, misconception and paraphrase.
EXERCISES: dict[str, Exercise] = {e.name: e for e in _ALL}
