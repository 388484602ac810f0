"""Build it 4 · Gemma 4 Unified's raw audio rows, against vLLM's mel count.

**The goal.** Gemma 4 Unified has no audio tower: its embedder cuts the waveform into
rows of 640 raw samples (40 ms) and projects each row into one token. vLLM serves
Unified with Gemma 4's processing info, so it *counts* the prompt's placeholders with
Gemma 4's mel rule instead. Write both counts, and find where they part.

**The spec.**

- ``unified_audio_tokens(num_samples)``: the embedder's rows, ``ceil(samples / 640)``
  (the last, partial row is zero-padded into a whole row, not dropped), with no cap.
- ``vllm_unified_placeholders(num_samples)``: vLLM's count. Prepend ``320 // 2`` zeros
  (semicausal), frame 321-sample windows every 160 samples (``(n + 160 − 321) // 160 +
  1``; none at all → 0 tokens), then two stride-2 convolutions (``ceil(t / 2)`` each),
  then cap at the processor's ``audio_seq_length``, 750.

The two agree on most clips, but vLLM is one short when ``samples % 640`` is 1 … 160,
has none for a clip of 160 samples or fewer, and stops at 750 past 30 s: vLLM raises
nothing and its runner drops the surplus embeddings.

**The check.** ``python -m gemma_explore.course.buildit check -k raw_audio`` runs the
tiny Unified's real embedder through the package's parity harness
(:func:`~gemma_explore.parity.checks.check_audio_parity`) and vLLM's own
``Gemma4ProcessingInfo._compute_audio_num_tokens`` (``gemma4_mm.py``). About 10 lines.

Once you have written it (until then it raises ``NotImplementedError``):

>>> unified_audio_tokens(800), vllm_unified_placeholders(800)  # doctest: +SKIP
(2, 1)
"""

from __future__ import annotations

__all__ = ["unified_audio_tokens", "vllm_unified_placeholders"]


def unified_audio_tokens(num_samples: int) -> int:
    """Tokens Unified's embedder makes for ``num_samples`` at 16 kHz."""
    raise NotImplementedError("Your turn: count Unified's raw rows (see the docstring).")


def vllm_unified_placeholders(num_samples: int) -> int:
    """Placeholders vLLM's prompt holds for the same clip (Gemma 4's mel rule)."""
    raise NotImplementedError("Your turn: count the way vLLM does (see the docstring).")
