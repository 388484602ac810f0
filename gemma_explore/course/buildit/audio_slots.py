"""Build it 2 · Gemma 3n's audio tokens: the real ones, and the padding slots.

**The goal.** Gemma 3n's prompt always holds 188 audio placeholders, whatever the clip.
The encoder makes one real token per 160 ms of sound; the slots it does not fill get a
padding embedding. Count both, the way the feature extractor and the audio tower do.

**The spec.** ``gemma3n_audio_tokens(num_samples)`` (16 kHz samples) returns
``(real tokens, padding slots)``:

1. the extractor keeps at most 30 s (480 000 samples) and pads what it keeps to a
   multiple of 128 samples;
2. mel frames are windows of 512 + 1 samples (the extra one feeds pre-emphasis) every 160
   samples: ``(padded − 513) // 160 + 1``, never below 0; a frame is *real* when its
   first sample is, so ``ceil(kept / 160)`` frames at most are real;
3. two stride-2 convolutions each keep ``ceil(t / 2)`` steps, and the conformer keeps every
   4th step: ``ceil(t / 4)``; that is 16 mel frames per token;
4. when some frames are padding, only ``ceil(real frames / 16)`` of those tokens are real;
5. padding slots = ``188 − real``, never below 0 (a longer clip is cut to 188).

Round *up* everywhere a partial window still holds sound: floor is the classic slip.

**The check.** ``python -m gemma_explore.course.buildit check -k audio_slots`` runs the
real Gemma 3n audio tower (transformers' ``Gemma3nAudioEncoder``, through the package's
parity harness, :func:`~gemma_explore.parity.checks.check_audio_parity`) on clips from
50 ms to 31 s and compares its real tokens, and the processor's 188 slots. About 12 lines.

Once you have written it (until then it raises ``NotImplementedError``):

>>> gemma3n_audio_tokens(7 * 16_000)  # doctest: +SKIP
(44, 144)
"""

from __future__ import annotations

__all__ = ["gemma3n_audio_tokens"]


def gemma3n_audio_tokens(num_samples: int) -> tuple[int, int]:
    """(real encoder tokens, padding slots) of a clip of ``num_samples`` at 16 kHz."""
    raise NotImplementedError("Your turn: count Gemma 3n's audio tokens (see the docstring).")
