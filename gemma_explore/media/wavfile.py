"""What a WAV file's header promises, against what the file holds.

libsndfile (soundfile) clamps a WAV's length to the bytes present, so a clip cut short
in transfer, or a header that lies (a 2 GB ``data`` chunk in a 160 kB file), reads as a
shorter clip with no word said. :func:`wav_shortfall` reads the RIFF chunk sizes and
says when the file holds less than its header promises, so both the decoders
(:mod:`~gemma_explore.media.loaders`) and the header readers (:mod:`~gemma_explore.media.headers`)
can refuse it with the same message.

>>> import struct
>>> head = b"RIFF" + struct.pack("<I", 36 + 32000) + b"WAVEfmt " + struct.pack(
...     "<IHHIIHH", 16, 1, 1, 16000, 32000, 2, 16) + b"data" + struct.pack("<I", 32000)
>>> wav_shortfall(head + bytes(800), total_size=len(head) + 800)
(1.0, 0.025)
"""

from __future__ import annotations

import struct

__all__ = ["wav_shortfall"]

_UNKNOWN_SIZES = (0, 0xFFFFFFFF)  # streamed WAVs: "length not known when written"


def wav_shortfall(head: bytes, *, total_size: int) -> tuple[float, float] | None:
    """``(seconds promised, seconds present)`` when a RIFF/WAVE file holds less audio
    than its ``data`` chunk declares; None when it holds all of it, or is not a WAV.

    ``head`` is the file's start (its first few kB hold the chunk headers);
    ``total_size`` is the whole file's length in bytes.
    """
    if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        return None
    pos, byte_rate = 12, 0
    while pos + 8 <= len(head):
        chunk, size = head[pos : pos + 4], struct.unpack("<I", head[pos + 4 : pos + 8])[0]
        if chunk == b"fmt " and pos + 20 <= len(head):
            byte_rate = struct.unpack("<I", head[pos + 16 : pos + 20])[0]  # bytes per second
        if chunk == b"data":
            if size in _UNKNOWN_SIZES or byte_rate <= 0:
                return None
            present = max(total_size - (pos + 8), 0)
            if present >= size:
                return None
            return size / byte_rate, present / byte_rate
        pos += 8 + size + (size & 1)  # chunks are word-aligned
    return None
