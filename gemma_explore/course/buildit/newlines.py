r"""Build it 3 · vLLM's Gemma 3n newline merge.

**The goal.** vLLM expands each Gemma 3n placeholder into ``"\n\n" BOI soft × N EOI
"\n\n"`` *as token ids*, after the prompt was tokenized. The tokenizer would have written
``"\n\n\n"`` (one token) where a wrapper meets a text newline, so vLLM merges newline
pairs afterwards, to give the ids the model was trained on. Write that merge.

**The spec.** ``merge_newlines(ids, newline)``, where ``newline[k]`` is the id of the
token of ``k`` newlines (k = 1 … 4), returns the ids after three passes over the whole
prompt, each left to right and never overlapping, in this order:

1. ``"\n"`` followed by ``"\n\n"`` → ``"\n\n\n"``;
2. ``"\n\n"`` followed by ``"\n"`` → ``"\n\n\n"``;
3. ``"\n\n"`` followed by ``"\n\n"`` → ``"\n\n\n\n"``.

No other pair merges (``"\n\n\n"`` + ``"\n"`` stays two tokens), and a pass does not look
again at what it just wrote. That is why vLLM's ids can differ from transformers', and
why a single ``"\n"`` after a placeholder makes vLLM raise (notebook 05).

**The check.** ``python -m gemma_explore.course.buildit check -k newlines`` runs vLLM's
own ``Gemma3nMultiModalProcessor._apply_token_matches``
(``vllm/model_executor/models/gemma3n_mm.py``) on a few hundred random prompts of
newlines, text and placeholders, with the tiny Gemma 3n's vocabulary. About 15 lines.

Once you have written it (until then it raises ``NotImplementedError``):

>>> merge_newlines([5, 1, 2, 7], {1: 1, 2: 2, 3: 3, 4: 4})  # doctest: +SKIP
[5, 3, 7]
"""

from __future__ import annotations

__all__ = ["merge_newlines"]


def merge_newlines(ids: list[int], newline: dict[int, int]) -> list[int]:
    """``ids`` after vLLM's three newline-merge passes (``newline[k]``: k newlines' id)."""
    raise NotImplementedError("Your turn: write vLLM's newline merge (see the docstring).")
