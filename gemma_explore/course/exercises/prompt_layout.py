"""Notebook 05 · prompt layout: placeholders in the prompt, and vLLM's newline merges.

>>> from gemma_explore.course.grader import grade
>>> [e.name for e in EXERCISES]
['two-photos-70', 'why-split-newlines']
>>> grade(EXERCISES[1], "vLLM does not merge tokens, it matches text.").right
False
"""

from __future__ import annotations

from gemma_explore.course.exercises.common import image_tokens, photo
from gemma_explore.course.grader import Exercise

__all__ = ["EXERCISES", "NOTEBOOK"]

NOTEBOOK = "05_prompt_layout"


EXERCISES = (
    Exercise(
        name="two-photos-70",
        notebook=NOTEBOOK,
        kind="predict",
        truth=lambda: 2 * image_tokens(photo().size[::-1], 70),
        hint="One placeholder per soft token, and none for the markers. Notebook 02's table "
        "has this photo at every budget.",
        why="Two runs of the photo's soft tokens at budget 70.",
        misconceptions=(
            (140, "The budget is an upper bound, not the count."),
            (130, "The markers around each run are not <|image|> placeholders."),
        ),
    ),
    Exercise(
        name="why-split-newlines",
        notebook=NOTEBOOK,
        kind="explain",
        hint="Does vLLM compare text or token ids when it looks for a run, and what would the "
        "tokenizer have written?",
        answer="The merge keeps the prompt the same as the tokenizer would write it, but the run "
        "vLLM searches for starts with the \\n\\n id, which a merged \\n\\n\\n token hides; "
        "reading merged tokens as their parts lets the id match find the run.",
        ideas=(
            # why merge: the ids the tokenizer would write, the ones the model was trained on
            ("tokenizer", "tokeniser", "trained on", "training", "what the model saw"),
            # why read apart: the search for each run matches ids
            (
                "find the run",
                "find each run",
                "find its run",
                "find the placeholder",
                "search for",
                "look for",
                "locate",
                "match the id",
                "match id",
                "id match",
                "by id",
            ),
        ),
        rejects=(
            (
                ("does not merge", "never merges", "no merge"),
                "vLLM does merge newline pairs (_apply_token_matches).",
            ),
            (
                (
                    "match the text",
                    "matches text",
                    "matching text",
                    "match the prompt text",
                    "compare the text",
                    "compares text",
                    "compare strings",
                    "compares the strings",
                    "re-tokenise",
                    "retokenise",
                    "re-tokenize",
                    "retokenize",
                ),
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
)
