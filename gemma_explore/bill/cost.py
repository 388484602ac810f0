"""What a bill costs beyond media tokens: captions' text tokens, and KV bytes on a checkpoint.

Two helpers that read the layers below the bill's arithmetic (the tokenizers in
``models``, the serving plan) and hand the per-sample workers plain objects:

* :func:`text_counter` returns a :class:`TextCounter`: the family's real tokenizer when a
  released checkpoint's tokenizer is in the local Hugging Face cache (never downloaded),
  else the package's stand-in, and a ``label`` that says which. It pickles as three
  strings, and each worker loads the tokenizer once, so the process pool and Ray ship it
  cheaply.
* :func:`summarize` is :meth:`~gemma_explore.bill.totals.Bill.summary` with the KV bytes of a
  checkpoint from :func:`~gemma_explore.serving.plan.plan_serving`.

>>> counter = text_counter("gemma4")                         # doctest: +SKIP
>>> counter.label, counter("A cat on a mat.")                 # doctest: +SKIP
('the stand-in tokenizer (…)', 15)
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gemma_explore.bill.sources import hf_cache_folder
from gemma_explore.facts.families import DEFAULT_FAMILY, get_family

if TYPE_CHECKING:
    from gemma_explore.bill.totals import Bill, BillSummary

__all__ = ["STAND_IN", "TextCounter", "summarize", "text_counter"]

STAND_IN = "stand-in"  # TextCounter.source of the package's own tokenizer


@dataclass(frozen=True)
class TextCounter:
    """Counts a text's tokens with one tokenizer; picklable (the tokenizer is not shipped)."""

    family: str
    source: str  # a hub id or folder found locally, or STAND_IN
    label: str  # what the bill prints: which tokenizer counted
    cache_dir: str | None = None  # the Hugging Face cache it was found in (None: default)

    def __call__(self, text: str) -> int:
        """Tokens of ``text`` alone: no BOS and no turn markers (the chat template adds those)."""
        tokenizer = _load(self.family, self.source, self.cache_dir)
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])


@functools.cache  # once per process: workers load it on their first caption
def _load(family: str, source: str, cache_dir: str | None) -> Any:
    if source == STAND_IN:
        from gemma_explore.models.tokenizer import build_stand_in_tokenizer

        return build_stand_in_tokenizer(family)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(source, local_files_only=True, cache_dir=cache_dir)


def _cached(source: str, cache_dir: str | None) -> bool:
    """Whether a folder or the hub cache holds this tokenizer (a file lookup: cheap, and
    no transformers import when nothing is there)."""
    if os.path.isdir(source):
        return any(
            os.path.isfile(os.path.join(source, f)) for f in ("tokenizer.json", "tokenizer.model")
        )
    folder = hf_cache_folder(source, cache=cache_dir, repo_type="models")
    return folder is not None and _cached(str(folder), None)


def text_counter(
    family: str, *, tokenizer: str | os.PathLike | None = None, cache_dir: str | None = None
) -> TextCounter:
    """The family's tokenizer from the local cache (``tokenizer=`` a hub id or folder to
    choose), else the stand-in, labelled as such. Nothing is downloaded.

    >>> text_counter("gemma4", cache_dir="/no/such/cache").source
    'stand-in'
    """
    spec = get_family(family)
    tried = [os.fspath(tokenizer)] if tokenizer is not None else list(spec.hub_ids)
    for source in tried:
        if not _cached(source, cache_dir):
            continue
        try:
            _load(spec.name, source, cache_dir)
        except Exception:  # noqa: BLE001 - not in the cache (or not a tokenizer): try the next
            continue
        where = "folder" if os.path.isdir(source) else "local Hugging Face cache"
        return TextCounter(spec.name, source, f"{source}'s tokenizer ({where})", cache_dir)
    missing = ", ".join(tried) or "no released checkpoint"
    return TextCounter(
        spec.name,
        STAND_IN,
        f"the stand-in tokenizer ({missing} not in the local Hugging Face cache): it cuts "
        "text into characters, so text counts run high",
        cache_dir,
    )


def summarize(bill: Bill, checkpoint: Any = None, **serving: Any) -> BillSummary:
    """The bill by budget with the KV bytes each sample's prompt holds on ``checkpoint``
    (a tiny name, a folder, a hub id with its config in the cache, or a bundle; None: the
    tiny bundle of ``DEFAULT_FAMILY``); ``serving`` goes to
    :func:`~gemma_explore.serving.plan.plan_serving` (``dtype``, ``kv_cache_dtype``, …).

    >>> summarize(bill("dataset/"), "tiny-gemma4").text()   # doctest: +SKIP
    """
    from gemma_explore.models.tiny import tiny_name
    from gemma_explore.serving.plan import plan_serving

    if checkpoint is None:
        checkpoint = tiny_name(DEFAULT_FAMILY.name)
    return bill.summary(plan_serving(checkpoint, **serving))
