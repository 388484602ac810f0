"""What a dataset's token bill says: totals per budget, failures, the spread, and the
cost per budget with a checkpoint's KV bytes. Pure results, no I/O:
:func:`~gemma_explore.bill.walk.bill` builds a :class:`Bill`, and
:meth:`Bill.summary` a :class:`BillSummary`.

>>> Bill("gemma4", (280,), 0, {}, (0,), {}, (), (), (), {}, ({},), 0.0).histogram_text()
'(no files billed)'
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gemma_explore.facts.families import get_family
from gemma_explore.plans.audio import plan_audio

if TYPE_CHECKING:
    from gemma_explore.serving.plan import ServingPlan

__all__ = ["Bill", "BillSummary", "BudgetCost"]


@dataclass(frozen=True)
class BudgetCost:
    """One budget's line of the summary."""

    budget: int | None  # None: a family without image budgets
    total_tokens: int  # every billed sample's prompt tokens
    tokens_per_sample: float  # mean over billed samples
    max_tokens: int  # the largest sample
    kv_bytes_per_sample: float | None  # mean KV bytes of one sample's prompt (None: no model)
    kv_bytes_max: int | None  # the largest sample's KV bytes
    kv_bytes_total: int | None  # summed over the samples (each prompt's own cache)


@dataclass(frozen=True)
class BillSummary:
    """The bill keyed by budget, with what the tokens cost in KV on one checkpoint."""

    checkpoint: str | None  # the model the KV bytes are for
    samples: int  # billed samples
    lines: tuple[BudgetCost, ...]
    steps: tuple[str, ...] = field(default=(), compare=False)

    def text(self) -> str:
        """A table: one line per budget."""
        head = f"{'budget':>8} {'total tokens':>15} {'per sample':>11} {'largest':>8}"
        if self.checkpoint is not None:
            head += f" {'KV/sample':>11} {'KV largest':>11} {'KV, all samples':>16}"
        out = [head]
        for c in self.lines:
            label = "fixed" if c.budget is None else str(c.budget)
            line = (
                f"{label:>8} {c.total_tokens:>15,} {c.tokens_per_sample:>11,.1f} {c.max_tokens:>8,}"
            )
            if c.kv_bytes_per_sample is not None:
                line += (
                    f" {_mib(c.kv_bytes_per_sample):>11} {_mib(c.kv_bytes_max):>11} "
                    f"{_mib(c.kv_bytes_total):>16}"
                )
            out.append(line)
        if self.checkpoint is not None:
            out.append(f"KV bytes on {self.checkpoint}: " + "; ".join(self.steps))
        return "\n".join(out)

    def __repr__(self) -> str:
        return self.text()


def _mib(n: float | None) -> str:
    if n is None:
        return "—"
    if n >= 1024**3:
        return f"{n / 1024**3:,.2f} GiB"
    return f"{n / 1024**2:,.2f} MiB"


@dataclass(frozen=True)
class Bill:
    """A dataset's bill: totals per budget, failures, the slowest part, the spread."""

    family: str
    budgets: tuple[int | None, ...]
    files: int  # samples seen (files, for a folder of files)
    billed: dict[str, int]  # sample kind ("image", "image+text", …) → samples billed
    totals: tuple[int, ...]  # prompt tokens over all billed samples, per budget
    totals_by_kind: dict[str, tuple[int, ...]]  # item kind (and "text") → totals per budget
    failures: tuple[tuple[str, str], ...]  # (sample, reason) for samples not billed
    walk_problems: tuple[tuple[str, str], ...]  # (path, reason): loops, unreadable folders
    slowest_files: tuple[tuple[str, float], ...]  # (sample, seconds), slowest first
    part_seconds: dict[str, float]  # where the time went: walking, headers by kind, arithmetic
    histograms: tuple[dict[int, int], ...]  # per budget: tokens per sample → samples
    wall_s: float  # seconds from start to end
    unit: str = "file"  # "file" for a folder of files, "sample" for shards
    runner: str = "local"  # which runner ran the per-sample function
    text_tokenizer: str | None = None  # what counted the captions (None: not counted)
    cut_samples: int = 0  # billed samples with a clip past the extractor's cut (30 s)
    cut_s: float = 0.0  # seconds of audio past it: never tokenised, never heard

    def cut_note(self) -> str | None:
        """What the bill says of clips past the feature extractor's cut (Gemma 3n and
        Gemma 4 hear a clip's first 30 s, and the bill prices those), or None.

        >>> bill = Bill("gemma4", (280,), 1, {"audio": 1}, (752,), {}, (), (), (), {},
        ...             ({752: 1},), 0.0, cut_samples=1, cut_s=15.0)
        >>> print(bill.cut_note())  # doctest: +NORMALIZE_WHITESPACE
        1 file holds a clip over 30 s: Gemma 4 hears the first 30 s of a clip, 752 tokens,
        and the bill prices those; 15.0 s of audio past the cut is never heard. To have all of
        it heard (and billed), send a long clip in windows of at most 30 s.
        """
        if not self.cut_samples:
            return None
        spec = get_family(self.family)
        heard_s = spec.audio.max_seconds
        heard = plan_audio(spec.audio.max_samples, family=spec).total_tokens
        holds = (
            f"1 {self.unit} holds"
            if self.cut_samples == 1
            else f"{self.cut_samples:,} {self.unit}s hold"
        )
        return (
            f"{holds} a clip over {heard_s:g} s: {spec.display_name} hears the first "
            f"{heard_s:g} s of a clip, {heard:,} tokens, and the bill prices those; "
            f"{self.cut_s:,.1f} s of audio past the cut is never heard. To have all of it "
            f"heard (and billed), send a long clip in windows of at most {heard_s:g} s."
        )

    @property
    def billed_files(self) -> int:
        return sum(self.billed.values())

    @property
    def slowest_part(self) -> tuple[str, float]:
        """The part that took the most (summed) seconds, e.g. ``("video headers", 1.2)``."""
        return max(self.part_seconds.items(), key=lambda kv: kv[1], default=("nothing", 0.0))

    def histogram_text(self, budget: int | None = None, *, bins: int = 10, width: int = 40) -> str:
        """A text histogram of tokens per sample at one budget (default: the first)."""
        i = self.budgets.index(budget) if budget in self.budgets else 0
        counts = self.histograms[i]
        if not counts:
            return f"(no {self.unit}s billed)"
        lo, hi = min(counts), max(counts)
        step = max(1, math.ceil((hi - lo + 1) / bins))
        binned = Counter()
        for value, n in counts.items():
            binned[(value - lo) // step] += n
        top = max(binned.values())
        lines = []
        for b in range(max(binned) + 1):
            a = lo + b * step
            n = binned.get(b, 0)
            bar = "█" * max(1 if n else 0, round(n / top * width))
            lines.append(f"{a:>7}–{a + step - 1:<7} {bar} {n}")
        return "\n".join(lines)

    def summary(self, serving: ServingPlan | None = None) -> BillSummary:
        """Total tokens, tokens per sample and, given a :func:`~gemma_explore.plan_serving`
        plan, the KV bytes each sample's prompt holds on that checkpoint (exact per sample:
        the histogram keeps every distinct token count).

        >>> import tempfile, gemma_explore as ge
        >>> dataset = tempfile.mkdtemp()
        >>> ge.sample_photo().save(f"{dataset}/photo.jpg")
        >>> b = ge.bill(dataset, budgets=[280, 1120])
        >>> b.summary(ge.plan_serving("tiny-gemma4")).lines[0].kv_bytes_total > 0
        True
        """
        n = self.billed_files
        lines = []
        for budget, hist, total in zip(self.budgets, self.histograms, self.totals, strict=True):
            kv_mean = kv_max = kv_total = None
            if serving is not None and hist:
                kv_total = sum(count * serving.kv_bytes(t) for t, count in hist.items())
                kv_max = serving.kv_bytes(max(hist))
                kv_mean = kv_total / n
            lines.append(
                BudgetCost(
                    budget,
                    total,
                    total / n if n else 0.0,
                    max(hist, default=0),
                    kv_mean,
                    kv_max,
                    kv_total,
                )
            )
        steps: tuple[str, ...] = ()
        name = None
        if serving is not None:
            name = serving.model.name
            steps = (
                f"{serving.kv_bytes_per_token_full:,} B per token on full-attention layers + "
                f"{serving.kv_bytes_per_token_sliding:,} B on sliding layers until their window "
                f"fills ({serving.kv_dtype_bytes} B per element)",
                "each sample is its own prompt: KV, all samples = Σ over samples of the KV "
                "its prompt holds (what a batch job's cache sees, one sample at a time)",
            )
        return BillSummary(name, n, tuple(lines), steps)

    def text(self) -> str:
        """The bill as the command line prints it."""
        spec = get_family(self.family)
        unit, units = self.unit, f"{self.unit}s"
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.billed.items())) or "none"
        head = (
            f"Token bill — {spec.display_name}: {self.files} {units}, {self.billed_files} billed "
            f"({kinds}), {len(self.failures)} failed, in {self.wall_s:.2f} s"
        )
        if self.runner != "local":
            head += f" on {self.runner}"
        out = [head]
        if self.text_tokenizer is not None:
            out.append(f"  text counted with {self.text_tokenizer}")
        for i, b in enumerate(self.budgets):
            label = "fixed (no budget)" if b is None else f"budget {b}"
            per = self.totals[i] / self.billed_files if self.billed_files else 0.0
            by = ", ".join(f"{k} {t[i]:,}" for k, t in sorted(self.totals_by_kind.items()))
            out.append(f"  {label:>18}: {self.totals[i]:>12,} tokens ({per:,.1f} per {unit}; {by})")
        note = self.cut_note()
        if note is not None:
            out.append(f"Note: {note}")
        if self.failures:
            out.append(f"{units.capitalize()} that fail ({len(self.failures)}):")
            out += [f"  {p}: {r}" for p, r in self.failures]
        if self.walk_problems:
            out.append(f"Not walked ({len(self.walk_problems)}):")
            out += [f"  {p}: {r}" for p, r in self.walk_problems]
        part, secs = self.slowest_part
        total = sum(self.part_seconds.values()) or 1.0
        parts = ", ".join(f"{k} {v:.3f} s" for k, v in self.part_seconds.items())
        out.append(f"Slowest part: {part} ({secs:.3f} s, {secs / total:.0%} of the work; {parts})")
        if self.slowest_files:
            out.append(
                f"Slowest {units}: "
                + ", ".join(f"{Path(p).name} {s * 1000:.1f} ms" for p, s in self.slowest_files)
            )
        first = self.budgets[0]
        title = "fixed" if first is None else f"budget {first}"
        out.append(f"Tokens per {unit} ({title}):")
        out.append(self.histogram_text(first))
        return "\n".join(out)

    def __repr__(self) -> str:
        return self.text()
