"""What one sample costs: the pure arithmetic of a token bill, from headers only.

A *sample* is what a dataset row or a WebDataset key holds: one or more media items (an
image, a clip, a video), each as bytes in memory or as a path, and maybe a caption.
:func:`bill_sample` reads each item's header (never the pixels or the samples), runs the
plans' arithmetic on the sizes it finds, adds the caption's tokens when a text counter is
given, and returns a small :class:`BillRow`. It is a pure function of its arguments, so
every runner maps this one function unchanged (the process pool and Ray Data alike: see
:mod:`gemma_explore.bill.runners`). A file in a folder is a one-item sample
(:func:`bill_file`).

>>> from gemma_explore.samples import SAMPLES_DIR
>>> row = bill_file(SAMPLES_DIR / "photo.jpg", family="gemma4", budgets=(70, 280))
>>> row.kind, row.tokens
('image', (65, 272))
"""

from __future__ import annotations

import functools
import io
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gemma_explore.errors import MediaError
from gemma_explore.facts.families import get_family
from gemma_explore.media.headers import audio_header, image_header, kind_of, video_header
from gemma_explore.plans.audio import plan_audio
from gemma_explore.plans.image import AUTO, plan_image
from gemma_explore.plans.rules import require_budget
from gemma_explore.plans.video import plan_video
from gemma_explore.sizes import size_label

__all__ = [
    "BillRow",
    "Item",
    "Sample",
    "audio_header_bytes",
    "bill_file",
    "bill_sample",
    "budget_label",
    "image_header_bytes",
    "resolve_budgets",
    "sniff_kind",
]

_ROTATED = (5, 6, 7, 8)  # EXIF orientations that turn the picture by 90° or 270°


def resolve_budgets(
    family: str, budgets: Iterable[int | str] | None = None
) -> tuple[int | str | None, ...]:
    """The budgets to bill at: Gemma 4's allowed ones (default: its default budget), and
    ``"auto"`` (each image at the smallest budget that does not shrink it: see
    :func:`~gemma_explore.plans.image.plan_image`); ``(None,)`` for Gemma 3n, whose images
    always cost 256 soft tokens.

    >>> resolve_budgets("gemma4", [70, 280, "auto"]), resolve_budgets("gemma3n")
    ((70, 280, 'auto'), (None,))
    """
    spec = get_family(family)
    given = [b for b in (budgets or ()) if b is not None]
    if not spec.image.budgets:
        if given:
            raise ValueError(
                f"{spec.display_name} has no image budget (every image is "
                f"{spec.image.fixed_soft_tokens} soft tokens): drop --budget."
            )
        return (None,)
    if not given:
        return (spec.image.default_budget,)
    return tuple(
        dict.fromkeys(b if b == AUTO else require_budget(int(b), family=spec) for b in given)
    )


def budget_label(budget: int | str | None) -> str:
    """Column name of a budget: ``tokens@280``, ``tokens@auto``, or ``tokens`` for a family
    without one.

    >>> budget_label(280), budget_label("auto"), budget_label(None)
    ('tokens@280', 'tokens@auto', 'tokens')
    """
    return "tokens" if budget is None else f"tokens@{budget}"


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Item:
    """One media item of a sample: bytes in memory, or a path (never both needed)."""

    name: str  # where it came from: a column, a tar member's suffix, a file's path
    data: bytes | None = None  # the encoded file (PNG, JPEG, WAV, …) when held in memory
    path: str | None = None  # a file on disk (also the hint for the format of `data`)
    kind: str | None = None  # "image" / "audio" / "video" when the source says so


@dataclass(frozen=True)
class Sample:
    """One row of a dataset (or one WebDataset key, or one file): what a prompt holds."""

    id: str  # e.g. "shard-00000.parquet#17", "shard.tar#key", or a file's path
    items: tuple[Item, ...] = ()
    text: str | None = None  # the caption or prompt text, counted when a counter is given
    error: str | None = None  # the source's own complaint (missing key, wrong column type, …)


@dataclass(frozen=True)
class BillRow:
    """What one sample costs. Small on purpose: thousands travel between processes."""

    path: str  # the sample's id (a file's path for a folder of files)
    kind: str | None  # "image", "audio", "video", "image+text", …; None when unsupported
    tokens: tuple[int, ...] = ()  # prompt tokens at each budget (empty when it failed)
    height: int | None = None  # first image or frame size, upright
    width: int | None = None
    duration_s: float | None = None  # clips and videos
    frames: int | None = None  # video frames in the container
    fps: float | None = None
    # Seconds of audio past the feature extractor's cut (Gemma 3n and Gemma 4 keep a clip's
    # first 30 s): never tokenised, so never billed and never heard; 0 when none is cut.
    cut_s: float = 0.0
    error: str | None = None  # one line: why this sample cannot be billed
    header_s: float = 0.0  # seconds reading headers
    plan_s: float = 0.0  # seconds in the plans' arithmetic
    # (kind, tokens per budget) for each item, captions as "text": the per-kind totals
    parts: tuple[tuple[str, tuple[int, ...]], ...] = field(default=(), repr=False)
    text_tokens: int | None = None  # the caption's tokens, when counted
    text_s: float = 0.0  # seconds in the tokenizer (its first call loads it)


# --------------------------------------------------------------------------- headers


_MAGIC: tuple[tuple[bytes, int, str, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image", ".png"),
    (b"\xff\xd8\xff", 0, "image", ".jpg"),
    (b"GIF8", 0, "image", ".gif"),
    (b"BM", 0, "image", ".bmp"),
    (b"WEBP", 8, "image", ".webp"),
    (b"WAVE", 8, "audio", ".wav"),
    (b"fLaC", 0, "audio", ".flac"),
    (b"OggS", 0, "audio", ".ogg"),
    (b"ID3", 0, "audio", ".mp3"),
    (b"\xff\xfb", 0, "audio", ".mp3"),
    (b"AVI ", 8, "video", ".avi"),
    (b"ftyp", 4, "video", ".mp4"),
    (b"\x1a\x45\xdf\xa3", 0, "video", ".mkv"),
)


def sniff_kind(data: bytes) -> tuple[str, str] | None:
    """``(kind, suffix)`` from a file's first bytes (its magic number), or None.

    >>> sniff_kind(b"\\x89PNG\\r\\n\\x1a\\n...."), sniff_kind(b"hello")
    (('image', '.png'), None)
    """
    for magic, at, kind, suffix in _MAGIC:
        if data[at : at + len(magic)] == magic:
            return kind, suffix
    return None


def image_header_bytes(data: bytes) -> tuple[int, int]:
    """Upright ``(height, width)`` of an encoded image held in memory, from its header:
    PIL's lazy open parses the header and decodes no pixels (as :func:`image_header`).

    >>> from PIL import Image
    >>> buf = io.BytesIO(); Image.new("RGB", (640, 480)).save(buf, "PNG")
    >>> image_header_bytes(buf.getvalue())
    (480, 640)
    """
    from PIL import Image, UnidentifiedImageError

    if not data:
        raise MediaError("the image is empty (0 bytes)")
    try:
        with Image.open(io.BytesIO(data)) as pil:  # lazy: the header only
            w, h = pil.size
            # As headers.image_header: a PNG's getexif() would decode the pixels to reach
            # an eXIf chunk after the image data, so read only what the header held.
            if pil.format != "PNG" or "exif" in pil.info:
                orientation = pil.getexif().get(0x0112, 1)
            else:
                orientation = 1
    except (UnidentifiedImageError, SyntaxError, OSError) as exc:
        why = re.sub(r" <_io\.BytesIO object at 0x[0-9a-f]+>", "", str(exc))
        raise MediaError(f"undecodable image bytes (corrupt or unsupported): {why}") from None
    if orientation in _ROTATED:
        w, h = h, w
    if h <= 0 or w <= 0:
        raise MediaError(f"the header says {size_label((h, w))}: no pixels")
    return int(h), int(w)


def audio_header_bytes(data: bytes, suffix: str = ".wav") -> tuple[int, int]:
    """``(samples, sampling rate)`` of an encoded clip held in memory, from its header
    (``soundfile.info`` on the bytes; formats libsndfile cannot read go through a
    temporary file to :func:`audio_header`).

    >>> import numpy as np, soundfile as sf
    >>> buf = io.BytesIO(); sf.write(buf, np.zeros(8000), 16000, format="WAV")
    >>> audio_header_bytes(buf.getvalue())
    (8000, 16000)
    """
    import soundfile as sf

    if not data:
        raise MediaError("the clip is empty (0 bytes)")
    try:
        info = sf.info(io.BytesIO(data))
        frames, rate = int(info.frames), int(info.samplerate)
    except Exception:  # noqa: BLE001 - not a libsndfile format: audioread needs a path
        a = _via_file(data, suffix, audio_header)
        frames, rate = a.frames, a.sampling_rate
    if rate <= 0 or frames <= 0:
        raise MediaError(f"the clip's header gives {frames} samples at {rate} Hz")
    return frames, rate


def _via_file(data: bytes, suffix: str, reader: Callable[[str], Any]) -> Any:
    """Readers that need a path (OpenCV's containers, audioread): a temporary copy."""
    with tempfile.NamedTemporaryFile(suffix=suffix) as fh:
        fh.write(data)
        fh.flush()
        return reader(fh.name)


# --------------------------------------------------------------------------- one sample


def _item_kind(item: Item) -> tuple[str | None, str]:
    """The item's kind and the suffix its bytes are written with (for temporary files)."""
    hint = item.path or item.name
    suffix = Path(hint).suffix.lower() if hint else ""
    by_suffix = kind_of(hint) if hint else None
    if item.data is not None and not by_suffix:
        sniffed = sniff_kind(item.data)
        if sniffed is not None:
            return (item.kind or sniffed[0]), sniffed[1]
    return (item.kind or by_suffix), suffix


@functools.lru_cache(maxsize=16_384)  # datasets repeat sizes (every phone photo is 3000×4000)
def _image_tokens(height: int, width: int, family: str, budget: int | str | None) -> int:
    return plan_image((height, width), family=family, max_soft_tokens=budget).total_tokens


@functools.lru_cache(maxsize=16_384)
def _audio_tokens(frames: int, rate: int, family: str) -> tuple[int, float]:
    """(prompt tokens, seconds past the extractor's cut) of a clip, by the audio plan."""
    plan = plan_audio(frames, family=family, sampling_rate=rate)
    cut = (plan.num_samples - plan.samples_used) / plan.spec.audio.sampling_rate
    return plan.total_tokens, cut


def _bill_item(
    item: Item, family: str, budgets: tuple[int | None, ...], out: dict[str, Any]
) -> tuple[str, tuple[int, ...], float]:
    """(kind, tokens per budget, header seconds) of one item; raises on a bad item."""
    kind, suffix = _item_kind(item)
    if kind is None:
        if item.data is not None and not suffix:
            raise MediaError(f"not an image, clip or video (the bytes start {item.data[:8]!r})")
        raise MediaError(
            f"unsupported file type {suffix or '(no suffix)'} (not an image, clip or video)"
        )
    spec = get_family(family)
    if kind == "video" and not spec.has_video:
        raise MediaError(f"{spec.display_name} has no video input")
    start = time.perf_counter()
    if kind == "image":
        h, w = image_header_bytes(item.data) if item.data is not None else image_header(item.path)
        header = time.perf_counter() - start
        out.setdefault("height", h)
        out.setdefault("width", w)
        return kind, tuple(_image_tokens(h, w, family, b) for b in budgets), header
    if kind == "audio":
        if item.data is not None:
            frames, rate = audio_header_bytes(item.data, suffix or ".wav")
        else:
            a = audio_header(item.path)
            frames, rate = a.frames, a.sampling_rate
        header = time.perf_counter() - start
        out.setdefault("duration_s", frames / rate)
        tokens, cut = _audio_tokens(frames, rate, family)
        if cut:
            out["cut_s"] = out.get("cut_s", 0.0) + cut
        # a clip's tokens do not depend on the image budget
        return kind, (tokens,) * len(budgets), header
    if item.data is not None:
        v = _via_file(item.data, suffix or ".mp4", video_header)
    else:
        v = video_header(item.path)
    header = time.perf_counter() - start
    n = plan_video(v.frames, fps=v.fps, frame_size=v.size, family=family).total_tokens
    for key, value in (
        ("height", v.size[0]),
        ("width", v.size[1]),
        ("frames", v.frames),
        ("fps", v.fps),
        ("duration_s", v.frames / v.fps),
    ):
        out.setdefault(key, value)
    return kind, (n,) * len(budgets), header  # frames always use the video budget (70)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def bill_sample(
    sample: Sample,
    *,
    family: str,
    budgets: tuple[int | None, ...],
    text: Callable[[str], int] | None = None,
) -> BillRow:
    """Bill one sample from its items' headers (and its text, when ``text`` counts tokens):
    a pure function, the one every runner maps.

    Never raises for bad data: the row's ``error`` says what is wrong (which item, why).

    >>> bill_sample(Sample("row#0", (Item("image", data=b"junk"),)), family="gemma4",
    ...             budgets=(280,)).error
    "image: not an image, clip or video (the bytes start b'junk')"
    """
    if sample.error is not None:
        return BillRow(sample.id, None, error=sample.error)
    if not sample.items and (text is None or sample.text is None):
        return BillRow(sample.id, None, error="no media item and no text in this sample")
    extra: dict[str, Any] = {}
    parts: list[tuple[str, tuple[int, ...]]] = []
    header_s = plan_s = 0.0
    multi = len(sample.items) > 1
    for item in sample.items:
        start = time.perf_counter()
        try:
            kind, tokens, seconds = _bill_item(item, family, budgets, extra)
        except Exception as exc:  # noqa: BLE001 - one bad item never stops the walk
            kind = _item_kind(item)[0]
            where = f"{item.name}: " if multi or item.data is not None else ""
            return BillRow(
                sample.id,
                kind if not multi else None,
                error=where + _one_line(exc),
                header_s=header_s + time.perf_counter() - start,
            )
        header_s += seconds
        plan_s += time.perf_counter() - start - seconds
        parts.append((kind, tokens))
    text_tokens, text_s = None, 0.0
    if text is not None and sample.text is not None:
        start = time.perf_counter()
        try:
            text_tokens = int(text(sample.text))
        except Exception as exc:  # noqa: BLE001
            return BillRow(sample.id, None, error=f"text: {_one_line(exc)}")
        text_s = time.perf_counter() - start
        parts.append(("text", (text_tokens,) * len(budgets)))
    totals = tuple(sum(t[i] for _, t in parts) for i in range(len(budgets)))
    kind = "+".join(dict.fromkeys(k for k, _ in parts))
    return BillRow(
        sample.id,
        kind,
        tokens=totals,
        header_s=header_s,
        plan_s=plan_s,
        parts=tuple(parts),
        text_tokens=text_tokens,
        text_s=text_s,
        **extra,
    )


def bill_file(path: str | os.PathLike, *, family: str, budgets: tuple[int | None, ...]) -> BillRow:
    """Bill one file from its header: a one-item :func:`bill_sample`.

    >>> bill_file("notes.txt", family="gemma4", budgets=(280,)).error
    'unsupported file type .txt (not an image, clip or video)'
    """
    name = os.fspath(path)
    return bill_sample(Sample(name, (Item(name, path=name),)), family=family, budgets=budgets)
