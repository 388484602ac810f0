"""What a bill costs beyond media tokens: captions' text tokens, and KV bytes on a checkpoint.

Two helpers that read the layers below the bill's arithmetic (the tokenizers in
``models``, the serving plan) and hand the per-sample workers plain objects:

* :func:`text_counter` returns a :class:`TextCounter`: the family's real tokenizer when a
  released checkpoint's tokenizer is in the local Hugging Face cache (never downloaded),
  else Google's vocabulary when the user has fetched it (``gemma-explore tokenizer
  fetch``), else the package's stand-in, and a ``label`` that says which (it starts with
  one of :data:`~gemma_explore.models.vocabulary.LABELS`). It pickles as a few strings,
  and each worker loads the tokenizer once, so the process pool and Ray ship it cheaply.
* :func:`summarize` is :meth:`~gemma_explore.bill.totals.Bill.summary` with the KV bytes of a
  checkpoint from :func:`~gemma_explore.serving.plan.plan_serving`.

>>> counter = text_counter("gemma4")
>>> counter("A cat on a mat.") > 0  # counter.label names the vocabulary it used
True
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gemma_explore.bill.sources import hf_cache_folder
from gemma_explore.facts.families import DEFAULT_FAMILY, get_family
from gemma_explore.models.vocabulary import (
    FETCH_COMMAND,
    LABEL_CACHED,
    LABEL_FETCHED,
    LABEL_STAND_IN,
    fetched_vocabulary,
)

if TYPE_CHECKING:
    from gemma_explore.bill.totals import Bill, BillSummary

__all__ = ["FETCHED", "STAND_IN", "TextCounter", "summarize", "text_counter"]

STAND_IN = "stand-in"  # TextCounter.source of the package's own tokenizer
FETCHED = "fetched"  # TextCounter.source of Google's vocabulary in the user's cache


@dataclass(frozen=True)
class TextCounter:
    """Counts a text's tokens with one tokenizer; picklable (the tokenizer is not shipped)."""

    family: str  # whose tokens (and, for FETCHED, which rebuilt vocabulary file)
    source: str  # a hub id or folder found locally, FETCHED or STAND_IN
    label: str  # what the bill prints: which tokenizer counted (starts with one of LABELS)
    cache_dir: str | None = None  # the Hugging Face cache it was found in (None: default)

    @property
    def vocabulary(self) -> str:
        """The short label alone, as a bundle's ``vocabulary`` says it.

        >>> TextCounter("gemma4", STAND_IN, "stand-in: …").vocabulary
        'stand-in: text counted by characters'
        """
        short = {STAND_IN: LABEL_STAND_IN, FETCHED: LABEL_FETCHED}
        return short.get(self.source, LABEL_CACHED)

    def __call__(self, text: str) -> int:
        """Tokens of ``text`` alone: no BOS and no turn markers (the chat template adds those)."""
        tokenizer = _load(self.family, self.source, self.cache_dir)
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])


@functools.cache  # once per process: workers load it on their first caption
def _load(family: str, source: str, cache_dir: str | None) -> Any:
    if source == STAND_IN:
        from gemma_explore.models.tokenizer import build_stand_in_tokenizer

        return build_stand_in_tokenizer(family)
    if source == FETCHED:  # shared with the tiny bundles of this process
        from gemma_explore.models.vocabulary import fetched_tokenizer

        tokenizer = fetched_tokenizer(family)
        if tokenizer is None:
            raise FileNotFoundError(f"Google's vocabulary is not fetched: run `{FETCH_COMMAND}`")
        return tokenizer
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
    choose), else Google's fetched vocabulary, else the stand-in, labelled as such.
    Nothing is downloaded.

    >>> text_counter("gemma4", cache_dir="/no/such/cache").source in (FETCHED, STAND_IN)
    True
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
        return TextCounter(spec.name, source, f"{LABEL_CACHED} ({source}, {where})", cache_dir)
    if tokenizer is None and fetched_vocabulary() is not None:
        return TextCounter(spec.name, FETCHED, LABEL_FETCHED, cache_dir)
    missing = ", ".join(tried) or "no released checkpoint"
    return TextCounter(
        spec.name,
        STAND_IN,
        f"{LABEL_STAND_IN} ({missing} not in the local Hugging Face cache, Google's vocabulary "
        f"not fetched: `{FETCH_COMMAND}`), so text counts run high",
        cache_dir,
    )


def summarize(bill: Bill, checkpoint: Any = None, **serving: Any) -> BillSummary:
    """The bill by budget with the KV bytes each sample's prompt holds on ``checkpoint``
    (a tiny name, a folder, a hub id with its config in the cache, or a bundle; None: the
    tiny bundle of ``DEFAULT_FAMILY``); ``serving`` goes to
    :func:`~gemma_explore.serving.plan.plan_serving` (``dtype``, ``kv_cache_dtype``, …).

    >>> import tempfile, gemma_explore as ge
    >>> dataset = tempfile.mkdtemp()
    >>> ge.sample_photo().save(f"{dataset}/photo.jpg")
    >>> from gemma_explore.bill.walk import bill
    >>> summary = summarize(bill(dataset), "tiny-gemma4")
    """
    from gemma_explore.models.tiny import tiny_name
    from gemma_explore.serving.plan import plan_serving

    if checkpoint is None:
        checkpoint = tiny_name(DEFAULT_FAMILY.name)
    return bill.summary(plan_serving(checkpoint, **serving))
