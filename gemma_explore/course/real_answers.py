"""What a real checkpoint answers, recorded on a GPU, shown beside the lessons' generate cells.

The tiny bundles' answers are noise, so the course cannot show what a budget, a timestamp
or a second ``<bos>`` does to a real answer. ``benchmarks/gpu_check.py --real ID --payoff``
asks a real checkpoint the :data:`CASES` on a GPU and writes one JSON file per checkpoint
into ``course/recorded/`` (shipped with the package). :func:`real_answers` reads them back;
a lesson prints them next to its own (noise) answer, or, until a GPU run has recorded
them, one line saying so.

>>> print(real_answers("receipt@280"))  # doctest: +ELLIPSIS
No real-model answer recorded yet for receipt@280: on a GPU, run `python benchmarks/...
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CASES", "RECORDED_DIR", "RealAnswer", "RealAnswers", "real_answers", "record"]

# Where gpu_check.py writes and the lessons read: a folder of the package, so a wheel
# carries whatever was recorded when it was built.
RECORDED_DIR = Path(__file__).with_name("recorded")

# Each case: what it asks and which lesson shows it. The names are the JSON's keys.
CASES: dict[str, str] = {
    "receipt@70": "a printed receipt at image budget 70: can the model still read the total?",
    "receipt@280": "the same receipt at budget 280 (Gemma 4's default)",
    "receipt@1120": "the same receipt at budget 1120",
    "video-with-timestamps": "'When does the ball reach the top?' asked of the sample video",
    "video-as-frames": "the same question with the same frames sent as images (no mm:ss)",
    "single-bos": "a raw prompt that starts with one <bos>",
    "double-bos": "the same prompt with <bos> twice (a template's text tokenised with "
    "add_special_tokens=True)",
    "speech-transcribed": "the bundled speech clip, transcribed",
}

_HOW = "python benchmarks/gpu_check.py --real google/gemma-4-E4B-it --payoff"


@dataclass(frozen=True)
class RealAnswer:
    """One case as one real checkpoint answered it."""

    case: str  # a key of CASES
    checkpoint: str  # the hub id or folder that answered
    text: str  # its answer, greedy
    prompt_tokens: int | None  # the expanded prompt's length (vLLM's usage.prompt_tokens)
    first_token_s: float | None  # seconds to the first token: prefill, encoders included
    device: str  # the GPU it ran on, as torch names it
    recorded: str  # when (ISO date), and the package version that recorded it

    def line(self) -> str:
        tokens = "" if self.prompt_tokens is None else f", {self.prompt_tokens} prompt tokens"
        ttft = "" if self.first_token_s is None else f", first token {self.first_token_s:.2f} s"
        return f"{self.checkpoint} ({self.device}{tokens}{ttft}): {self.text!r}"


@dataclass(frozen=True)
class RealAnswers:
    """Every recorded answer to one case (one per checkpoint that was run); its ``str`` is
    what a lesson prints."""

    case: str  # a key of CASES
    answers: tuple[RealAnswer, ...]  # empty until a GPU run recorded some

    def __str__(self) -> str:
        if not self.answers:
            return f"No real-model answer recorded yet for {self.case}: on a GPU, run `{_HOW}`."
        head = f"Real checkpoints, {self.case} ({CASES[self.case]}):"
        return "\n".join([head, *(f"  {a.line()}" for a in self.answers)])

    def _repr_pretty_(self, p, cycle) -> None:  # IPython shows the text, not a dataclass
        p.text(str(self))


def real_answers(case: str, folder: Path | None = None) -> RealAnswers:
    """The recorded real answers to ``case`` (a key of :data:`CASES`), from every
    checkpoint's file in ``folder`` (default :data:`RECORDED_DIR`)."""
    if case not in CASES:
        raise ValueError(f"Unknown case {case!r}: choose from {', '.join(CASES)}.")
    found = []
    for path in sorted((folder or RECORDED_DIR).glob("*.json")):
        data = json.loads(path.read_text())
        row = data.get("cases", {}).get(case)
        if row is not None:
            found.append(
                RealAnswer(
                    case,
                    data["checkpoint"],
                    row["text"],
                    row.get("prompt_tokens"),
                    row.get("first_token_s"),
                    data["device"],
                    data["recorded"],
                )
            )
    return RealAnswers(case, tuple(found))


def record(
    checkpoint: str, device: str, recorded: str, cases: dict[str, dict], folder: Path | None = None
) -> Path:
    """Write one checkpoint's answers (case → ``{"text", "prompt_tokens", "first_token_s"}``)
    where :func:`real_answers` reads them; returns the file.

    >>> import tempfile
    >>> tmp = Path(tempfile.mkdtemp())
    >>> _ = record("google/gemma-4-E4B-it", "NVIDIA H200", "2026-12-01",
    ...            {"single-bos": {"text": "Paris.", "prompt_tokens": 12}}, folder=tmp)
    >>> print(real_answers("single-bos", folder=tmp))
    Real checkpoints, single-bos (a raw prompt that starts with one <bos>):
      google/gemma-4-E4B-it (NVIDIA H200, 12 prompt tokens): 'Paris.'
    """
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        raise ValueError(f"Unknown cases {unknown}: choose from {', '.join(CASES)}.")
    out = Path(folder or RECORDED_DIR)
    out.mkdir(parents=True, exist_ok=True)
    path = out / (checkpoint.replace("/", "--") + ".json")
    body = {"checkpoint": checkpoint, "device": device, "recorded": recorded, "cases": cases}
    path.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n")
    return path
