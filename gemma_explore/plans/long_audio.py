"""Audio past 30 s: windows the model hears whole, cut at quiet points, and what each
runtime does with the whole clip instead.

No runtime splits a long clip for Gemma: transformers' extractors keep the first 30 s
(``max_length=480_000, truncation=True``) and drop the rest without a word; vLLM takes
the clip whole (Gemma 3n's ``get_speech_to_text_config`` has
``min_energy_split_window_size=None``: chunking off) up to its decoder's 600 s, and the
placeholders it counts stop at 30 s. :func:`plan_long_audio` plans the split a user has
to make, with vLLM's own quiet-point rule (``vllm/multimodal/audio.py``
``find_split_point``, the one its Whisper endpoint splits with):

* each window is at most what the family hears: ``max_samples`` (30 s) for Gemma 3n and
  Gemma 4; for Unified, whose extractor keeps every sample, ``audio_seq_length`` × 40 ms
  (750 × 40 ms = 30 s), the cap vLLM's placeholder count applies;
* a window that does not reach the clip's end is cut at the quietest 0.1 s frame (the
  lowest RMS energy, ``sqrt(mean(x²))`` over 1600 samples) in its last ``search_s``
  seconds; a cut is *quiet* when that frame's RMS is at most 1/10 (−20 dB) of the whole
  clip's;
* the next window starts ``overlap_s`` before the cut, so a word cut in two is heard
  whole once (its text is then in both windows: :func:`~gemma_explore.processing.
  transcription.join_window_texts` drops the repeat).

>>> plan = plan_long_audio(95 * 16_000, family="gemma3n")
>>> [(w.start_s, w.end_s) for w in plan.windows]
[(0.0, 30.0), (29.0, 59.0), (58.0, 88.0), (87.0, 95.0)]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gemma_explore.facts.families import DEFAULT_FAMILY, FamilySpec, get_family
from gemma_explore.media.loaders import load_audio
from gemma_explore.plans.audio import AudioPlan, plan_audio
from gemma_explore.plans.rules import steps_table
from gemma_explore.tables import ShownAsTable, Table
from gemma_explore.vllm_versions import vllm_profile

__all__ = [
    "ENERGY_FRAME",
    "LongAudioPlan",
    "QUIET_RATIO",
    "Window",
    "heard_seconds",
    "plan_long_audio",
]

# vLLM's min_energy_split_window_size for Whisper (whisper.py): RMS frames of 0.1 s.
ENERGY_FRAME = 1600
# A cut frame is "quiet" when its RMS is at most this share of the whole clip's (−20 dB).
QUIET_RATIO = 0.1
DEFAULT_INSTRUCTION = "Transcribe this audio"


@dataclass(frozen=True)
class Window:
    """One window of a long clip: where it is, what it costs, and how it is asked."""

    index: int
    start: int  # first sample (16 kHz)
    end: int  # one past the last sample
    start_s: float
    end_s: float
    cut: str  # "quiet" (a quiet frame), "quietest" (no quiet frame: the least loud) or "end"
    audio_tokens: int  # placeholders plan_audio gives this window (3n always 188)
    prompt_tokens: int  # its audio run in the prompt, markers included
    prompt: str  # the raw prompt sent with this window
    plan: AudioPlan = field(repr=False, compare=False)  # plan_audio of the window

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class LongAudioPlan(ShownAsTable):
    """A clip split into windows the family hears whole, and what the whole clip gets."""

    spec: FamilySpec = field(repr=False)
    num_samples: int  # the clip at 16 kHz
    duration_s: float
    max_window_s: float  # longest window (what the family hears)
    overlap_s: float  # each window starts this long before the previous cut
    search_s: float  # the cut is searched in the last search_s of a window
    windows: tuple[Window, ...]
    audio_tokens: int  # all windows' placeholders together
    whole_clip: AudioPlan = field(repr=False, compare=False)  # plan_audio of the clip unsplit
    runtimes: tuple[tuple[str, str], ...]  # (runtime, what it does with the whole clip)
    steps: tuple[str, ...] = field(default=(), compare=False)
    waveform: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def family(self) -> str:
        """The family's name, read off ``spec``."""
        return self.spec.name

    @property
    def heard_whole_s(self) -> float:
        """Seconds of the unsplit clip the family's extractor keeps (Unified: all)."""
        return self.whole_clip.samples_used / self.spec.audio.sampling_rate

    def table(self) -> Table:
        rows: list[tuple[str, Any]] = [
            ("duration", f"{self.duration_s:.3f} s ({self.num_samples} samples)"),
            (
                "windows",
                f"{len(self.windows)} of ≤ {self.max_window_s:g} s, {self.overlap_s:g} s overlap",
            ),
            *(
                (
                    f"window {w.index}",
                    f"{w.start_s:.2f}–{w.end_s:.2f} s ({w.cut}): {w.audio_tokens} tokens",
                )
                for w in self.windows
            ),
            ("audio tokens", self.audio_tokens),
            *self.runtimes,
        ]
        return steps_table(f"LongAudioPlan — {self.family}", rows, self.steps)

    def __repr__(self) -> str:
        return self.table().text()


def heard_seconds(family: str | FamilySpec | Any = DEFAULT_FAMILY) -> float:
    """The longest window a family hears whole: its extractor's cut (30 s), or, for
    Unified (no cut), ``max_tokens`` × ``ms_per_token`` (750 × 40 ms = 30 s, vLLM's cap).

    >>> heard_seconds("gemma3n"), heard_seconds("unified")
    (30.0, 30.0)
    """
    a = get_family(family).audio
    return a.max_seconds if a.max_seconds is not None else a.max_tokens * a.ms_per_token / 1000


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64)))) if x.size else 0.0


def _quietest(wav: np.ndarray, lo: int, hi: int) -> int:
    """vLLM's find_split_point: the start of the lowest-RMS ENERGY_FRAME in [lo, hi)."""
    seg = wav[lo:hi]
    n = max(len(seg) - ENERGY_FRAME, 0)
    starts = np.arange(0, n, ENERGY_FRAME)  # vLLM's range(0, len - w, w)
    if not starts.size:
        return lo
    frames = np.stack([seg[s : s + ENERGY_FRAME] for s in starts]).astype(np.float64)
    return lo + int(starts[int(np.argmin(np.sqrt((frames**2).mean(axis=1))))])


def _cuts(
    wav: np.ndarray | None, n: int, size: int, overlap: int, search: int
) -> list[tuple[int, int, str]]:
    """(start, end, how it was cut) of every window."""
    loud = _rms(wav) if wav is not None else 0.0
    out, start = [], 0
    while True:
        if start + size >= n:
            out.append((start, n, "end"))
            return out
        end, how = start + size, "quietest"
        if wav is not None:
            cut = _quietest(wav, end - search, end)
            if cut > start + overlap:  # vLLM's forward-progress guard
                end = cut
            how = "quiet" if _rms(wav[end : end + ENERGY_FRAME]) <= QUIET_RATIO * loud else how
        else:
            how = "end"  # a sample count: no wave to listen to, cut at the window's end
        out.append((start, end, how))
        start = end - overlap


def _runtime_notes(spec: FamilySpec, whole: AudioPlan) -> tuple[tuple[str, str], ...]:
    """What transformers and vLLM do with the clip unsplit."""
    a, s = spec.audio, whole.duration_s
    if a.max_samples is not None:
        hf = (
            f"{spec.classes.feature_extractor} keeps the first {a.max_samples} samples "
            f"({a.max_seconds:g} s; max_length, truncation=True) and drops the other "
            f"{max(s - a.max_seconds, 0):.1f} s without a word: {whole.num_soft_tokens} tokens."
        )
    else:
        hf = (
            f"{spec.classes.feature_extractor} keeps every sample: {whole.num_soft_tokens} "
            "tokens, no cap (audio_seq_length is not applied)."
        )
    cap = a.max_tokens * a.ms_per_token / 1000
    # vLLM's decoder limit (VLLM_MAX_AUDIO_DECODE_DURATION_S): a fact of the release
    limit = f"{vllm_profile().max_audio_decode_s:g} s"
    if a.fixed_placeholders is not None:
        vllm = (
            "takes it whole (chat or /v1/audio/transcriptions: chunking off) up to "
            f"{limit} (VLLM_MAX_AUDIO_DECODE_DURATION_S); "
            f"transformers' extractor inside it keeps the first {a.max_seconds:g} s: "
            f"{a.fixed_placeholders} placeholders."
        )
    else:
        vllm = (
            f"takes it whole up to {limit} (VLLM_MAX_AUDIO_DECODE_DURATION_S) and calls the "
            "processor with truncation=False, so the extractor keeps every sample, but it "
            f'counts at most {a.max_tokens} placeholders ({cap:g} s), logging "Audio '
            'duration exceeds max": the rest is processed and never reaches the prompt.'
        )
    return (("transformers", hf), ("vLLM", vllm))


def _load(clip: Any, spec: FamilySpec, sampling_rate: int | None) -> tuple[np.ndarray | None, int]:
    """(the mono wave at the family's rate or None for a sample count, its samples)."""
    a = spec.audio
    if isinstance(clip, int | np.integer) and not isinstance(clip, bool):
        if sampling_rate not in (None, a.sampling_rate):
            raise ValueError("Give the clip itself to plan a resampled one, not a count.")
        return None, int(clip)
    wav, _ = load_audio(
        clip,
        sampling_rate=sampling_rate,
        target_rate=a.sampling_rate,
        bare_array_rate=a.sampling_rate,
    )
    return wav, int(wav.shape[0])


def _window_seconds(
    spec: FamilySpec, max_window_s: float | None, overlap_s: float, search_s: float
) -> float:
    """The longest window, checked: no longer than the family hears (a cut family), and
    long enough that each window moves forward past its overlap."""
    heard = heard_seconds(spec)
    window_s = heard if max_window_s is None else float(max_window_s)
    if spec.audio.max_samples is not None and window_s > heard:
        raise ValueError(
            f"max_window_s={max_window_s:g} is longer than {spec.display_name} hears: its "
            f"extractor keeps the first {heard:g} s of a clip. Give max_window_s={heard:g} "
            "or less."
        )
    if not 0 <= overlap_s < window_s - search_s:
        raise ValueError(
            f"overlap_s={overlap_s:g} must be at least 0 and less than max_window_s − "
            f"search_s ({window_s:g} − {search_s:g} s), so each window moves forward."
        )
    return window_s


def plan_long_audio(
    clip: Any,
    *,
    family: str | FamilySpec | Any = DEFAULT_FAMILY,
    overlap_s: float = 1.0,
    max_window_s: float | None = None,
    search_s: float = 2.0,
    sampling_rate: int | None = None,
    instruction: str = DEFAULT_INSTRUCTION,
) -> LongAudioPlan:
    """Split a clip into windows the family hears whole, at quiet points.

    ``clip``: any audio input :func:`~gemma_explore.plans.audio.plan_audio` takes, or a
    number of samples (then no wave to listen to: windows end at their full length).
    ``max_window_s``: at most what the family hears (default: all of it, 30 s);
    ``overlap_s``: how much each window repeats of the previous one; ``search_s``: how
    far back from a window's end a quiet point is looked for. ``instruction`` is written
    into each window's raw prompt (Gemma 3n's default is vLLM's transcription prompt).

    >>> plan_long_audio(20 * 16_000, family="gemma4").windows[0].audio_tokens
    500
    """
    spec = get_family(family)
    a = spec.audio
    wav, n = _load(clip, spec, sampling_rate)
    heard = heard_seconds(spec)
    window_s = _window_seconds(spec, max_window_s, overlap_s, search_s)
    rate = a.sampling_rate
    size, overlap = int(window_s * rate), int(round(overlap_s * rate))
    search = int(round(search_s * rate))
    prompt = f"{spec.turn_start}user\n{instruction}: {spec.audio_token}{spec.turn_end}\n"
    prompt += f"{spec.turn_start}model\n"
    windows = []
    for i, (lo, hi, how) in enumerate(_cuts(wav, n, size, overlap, search)):
        p = plan_audio(hi - lo if wav is None else (wav[lo:hi], rate), family=spec)
        windows.append(
            Window(
                i, lo, hi, lo / rate, hi / rate, how, p.num_soft_tokens, p.total_tokens, prompt, p
            )
        )
    whole = plan_audio(n if wav is None else (wav, rate), family=spec)
    steps = [
        f"{n} samples = {n / rate:.3f} s; {spec.display_name} hears {heard:g} s whole"
        + (
            " (extractor's max_length)."
            if a.max_samples
            else " (vLLM's 750-token cap; transformers has none)."
        ),
        f"Windows of ≤ {window_s:g} s; each not reaching the end is cut at the quietest "
        f"{ENERGY_FRAME}-sample frame (RMS) in its last {search_s:g} s (vLLM's "
        f"find_split_point); 'quiet' when that RMS ≤ {QUIET_RATIO:g} × the clip's.",
        f"Each next window starts {overlap_s:g} s before the cut: {len(windows)} windows.",
        "Tokens per window: plan_audio of its samples.",
    ]
    return LongAudioPlan(
        spec=spec,
        num_samples=n,
        duration_s=n / rate,
        max_window_s=window_s,
        overlap_s=float(overlap_s),
        search_s=float(search_s),
        windows=tuple(windows),
        audio_tokens=sum(w.audio_tokens for w in windows),
        whole_clip=whole,
        runtimes=_runtime_notes(spec, whole),
        steps=tuple(steps),
        waveform=wav,
    )
