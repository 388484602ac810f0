"""Turn what a user hands us into clean inputs: the one way in for every modality.

Every entry point of the package accepts, for its modality, the same things, and
sends them through here:

* images: a path (str or Path), bytes, a file object, a PIL image, an array
  (H, W[, C]) or a ``(height, width)`` pair (a grey test image);
* audio: a path, bytes, a file object, ``(wave, rate)`` / ``(rate, wave)``, or an
  array with ``sampling_rate=``;
* video: a path, bytes, a file object, ``(frames, fps)``, a frame array with ``fps=``.

Every failure here is a :class:`MediaError` (a ``ValueError``) whose message says
what was wrong and what to do, so notebooks and the demo can show it as is.

>>> from gemma_explore.media.loaders import load_image
>>> load_image((32, 48)).size   # a (height, width) pair gives a grey test image
(48, 32)
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gemma_explore.errors import MediaError

# FFmpeg reads its log level once, when OpenCV opens its first capture in this process
# (whoever opens it: us, or transformers' video loader): set it at import, so a damaged
# file gets our one line and never FFmpeg's "moov atom not found" on stderr.
os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")  # AV_LOG_QUIET
os.environ.setdefault("OPENCV_LOG_LEVEL", "SILENT")
from gemma_explore.facts.families import AUDIO_SAMPLING_RATE, DEFAULT_FAMILY
from gemma_explore.media.headers import EMPTY
from gemma_explore.media.wavfile import wav_shortfall
from gemma_explore.sizes import size_label

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

__all__ = [
    "MediaError",
    "Video",
    "image_size",
    "is_image_size",
    "load_audio",
    "load_image",
    "load_video",
    "prepare_waveform",
    "sample_frame_indices",
]

MAX_IMAGE_PIXELS = 100_000_000  # refuse decompression bombs (~10 000 × 10 000)


def _read_source(source: Any, what: str) -> bytes | None:
    """Bytes of a path, bytes or file object; None for anything already in memory."""
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if not path.exists():
            raise MediaError(f"No {what} file at {path}. Check the path.")
        if path.is_dir():
            raise MediaError(f"{path} is a folder, not a {what} file.")
        data = path.read_bytes()
        if not data:
            raise MediaError(EMPTY.format(name=path.name, what=what))
        return data
    if isinstance(source, bytes | bytearray | memoryview):
        if not len(source):
            raise MediaError(EMPTY.format(name=f"The {what}", what=what))
        return bytes(source)
    if hasattr(source, "read"):  # an open file, BytesIO, an upload stream
        data = source.read()
        if isinstance(data, str):
            raise MediaError(f"Open the {what} file in binary mode ('rb'), not text mode.")
        if not data:
            raise MediaError(f"The {what} file object is empty (0 bytes left to read).")
        return bytes(data)
    return None


def is_image_size(value: Any) -> bool:
    """True for a ``(height, width)`` pair of ints (numpy ints too, not bools)."""
    return (
        isinstance(value, tuple | list)
        and len(value) == 2
        and all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in value)
    )


def _cv2() -> Any:
    """OpenCV (its and FFmpeg's logging are switched off at this module's import)."""
    try:
        import cv2
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise MediaError(
            "Reading video files needs OpenCV: pip install opencv-python-headless"
        ) from exc
    return cv2


def _open_image(data: bytes) -> PILImage:
    from PIL import Image, UnidentifiedImageError

    try:
        return Image.open(io.BytesIO(data))
    except Image.DecompressionBombError:
        raise MediaError(
            f"The image header claims more than {MAX_IMAGE_PIXELS / 1e6:.0f} MP (the limit): "
            "a damaged header, or a picture to downscale first."
        ) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise MediaError(
            "This file is not an image: its bytes are in no image format (PNG, JPEG, WebP, "
            "GIF, BMP, TIFF). It is another kind of file under an image's name, or a damaged "
            "one: use the picture itself."
        ) from exc


def image_size(image: Any) -> tuple[int, int]:
    """``(height, width)`` of any image input, reading only the header of files.

    EXIF orientation is respected (a portrait phone photo stored sideways reports its
    upright size), as :func:`load_image` and the processors see it.

    >>> image_size((1080, 1920))
    (1080, 1920)
    """
    if is_image_size(image):
        h, w = int(image[0]), int(image[1])
    else:
        data = _read_source(image, "image")
        if data is not None:
            pil = _open_image(data)  # lazy: reads the header, not the pixels
            w, h = pil.size
            try:
                orientation = pil.getexif().get(0x0112, 1)
            except Exception:  # noqa: BLE001 - a damaged EXIF block: read as upright
                orientation = 1
            if orientation in (5, 6, 7, 8):  # rotated 90° / 270°
                w, h = h, w
        elif hasattr(image, "size") and hasattr(image, "mode") and hasattr(image, "getbands"):
            w, h = image.size  # PIL reports (width, height)
        elif hasattr(image, "shape"):
            shape = tuple(image.shape)
            if len(shape) == 2:
                h, w = shape
            elif len(shape) == 3 and shape[-1] in (1, 3, 4):
                h, w = shape[0], shape[1]  # (H, W, C)
            elif len(shape) == 3 and shape[0] in (1, 3, 4):
                h, w = shape[1], shape[2]  # (C, H, W)
            else:
                raise MediaError(
                    f"An image array must be (height, width) or (height, width, channels); got "
                    f"shape {shape}. Pass a PIL image, an array, a path or a (height, width) pair."
                )
            h, w = int(h), int(w)
        else:
            raise MediaError(
                f"Expected an image (path, bytes, file, PIL image, array or (height, width) "
                f"pair), got {type(image).__name__}."
            )
    if h <= 0 or w <= 0:
        raise MediaError(
            f"Image sides must be positive, got height={h}, width={w}. "
            "Check the file is a real image (an empty or corrupt file decodes to nothing)."
        )
    return h, w


def load_image(image: Any) -> PILImage:
    """Return an RGB ``PIL.Image`` from a path, bytes, file, array, PIL image or (h, w) pair.

    Palette, greyscale, 16-bit and RGBA images are converted to RGB (alpha is
    composited on white), as the processors would see them.
    """
    from PIL import Image, ImageOps

    if is_image_size(image):
        h, w = image_size(image)
        return Image.new("RGB", (w, h), (128, 128, 128))
    data = _read_source(image, "image")
    if data is not None:
        image = _open_image(data)
        w, h = image.size
        if w * h > MAX_IMAGE_PIXELS:  # before decoding: a lying header must not allocate
            raise MediaError(
                f"The image is {size_label((h, w))} = {w * h / 1e6:.0f} MP; the limit is "
                f"{MAX_IMAGE_PIXELS / 1e6:.0f} MP. Downscale it first."
            )
        try:
            image.load()
        except Exception as exc:  # noqa: BLE001 - PIL raises OSError, SyntaxError, ValueError, …
            raise MediaError(
                "This image file is truncated or corrupt: its pixels do not decode. Open "
                "it in an image viewer and export it again, then attach that copy."
            ) from exc
    if isinstance(image, np.ndarray):
        arr = image
        if arr.size == 0:
            raise MediaError(f"The image array is empty (shape {arr.shape}).")
        if arr.ndim == 3 and arr.shape[0] in (1, 3, 4) and arr.shape[-1] not in (1, 3, 4):
            arr = np.moveaxis(arr, 0, -1)  # (C, H, W) → (H, W, C)
        if arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[-1] not in (1, 3, 4)):
            raise MediaError(
                f"An image array must be (H, W) or (H, W, 1|3|4), got shape {image.shape}."
            )
        if not np.isfinite(arr).all():
            raise MediaError("The image array holds NaN or infinite values.")
        if arr.dtype != np.uint8:
            hi = float(arr.max()) if arr.size else 0.0
            arr = (arr * 255.0 if hi <= 1.0 else arr).clip(0, 255).astype(np.uint8)
        if arr.ndim == 3 and arr.shape[-1] == 1:
            arr = arr[..., 0]
        image = Image.fromarray(arr)
    if not (hasattr(image, "mode") and hasattr(image, "convert")):
        raise MediaError(
            f"Expected an image (path, bytes, file, array or PIL image), got "
            f"{type(image).__name__}."
        )
    w, h = image.size
    if w == 0 or h == 0:
        raise MediaError(
            f"The image has no pixels ({size_label((h, w))}). Check the file, or export it again."
        )
    if w * h > MAX_IMAGE_PIXELS:
        raise MediaError(
            f"The image is {size_label((h, w))} = {w * h / 1e6:.0f} MP; the limit is "
            f"{MAX_IMAGE_PIXELS / 1e6:.0f} MP. Downscale it first."
        )
    try:
        image = ImageOps.exif_transpose(image) if hasattr(image, "getexif") else image
    except Exception:  # noqa: BLE001 - a damaged EXIF block: keep the picture as stored
        pass
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        image = Image.alpha_composite(background, rgba)
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        arr = np.asarray(image, dtype=np.float64)
        image = Image.fromarray((arr / max(arr.max(), 1.0) * 255).astype(np.uint8))
    if image.mode == "F":
        arr = np.asarray(image, dtype=np.float64)
        span = max(arr.max() - arr.min(), 1e-12)
        image = Image.fromarray(((arr - arr.min()) / span * 255).astype(np.uint8))
    return image.convert("RGB")


def load_audio(
    audio: Any,
    *,
    sampling_rate: int | None = None,
    target_rate: int = AUDIO_SAMPLING_RATE,
    bare_array_rate: int | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Return a mono float32 waveform at ``target_rate`` and notes on what was done.

    ``audio`` is a path, bytes, a file object, a ``(waveform, rate)`` pair or an array
    with ``sampling_rate``. Files are read with soundfile (WAV, FLAC, OGG) and, failing
    that, librosa (MP3 and more). Stereo is averaged; other rates are resampled.
    ``bare_array_rate``: the rate a numpy array given with no rate is taken to be (the
    plans pass their family's 16 kHz); None refuses such an array and asks for its rate.

    >>> wave, notes = load_audio((np.zeros(8000, np.float32), 8000))
    >>> wave.shape, notes["resampled_from"], notes["silent"]
    ((16000,), 8000, True)
    >>> load_audio(np.zeros(8000, np.float32), bare_array_rate=16_000)[0].shape
    (8000,)
    """
    if sampling_rate is None and isinstance(audio, np.ndarray):
        sampling_rate = bare_array_rate  # the one place a bare array gets a rate
    data = _read_source(audio, "audio")
    if data is not None:
        audio, sampling_rate = _decode_audio_bytes(data)
    elif isinstance(audio, tuple) and len(audio) == 2:
        first, second = audio
        if np.isscalar(second) and not np.isscalar(first):
            audio, sampling_rate = first, second  # (waveform, rate)
        elif np.isscalar(first) and not np.isscalar(second):
            sampling_rate, audio = first, second  # (rate, waveform), as gradio gives it
    if sampling_rate is None:
        raise MediaError(
            "Give the sampling rate of a raw waveform: load_audio(wave, sampling_rate=16000)."
        )
    arr = np.asarray(audio)
    if np.issubdtype(arr.dtype, np.integer):  # PCM integers → [-1, 1]
        arr = arr.astype(np.float32) / float(np.iinfo(arr.dtype).max)
    return prepare_waveform(arr, sampling_rate=int(sampling_rate), target_rate=target_rate)


def prepare_waveform(
    audio: Any, *, sampling_rate: int, target_rate: int = AUDIO_SAMPLING_RATE
) -> tuple[np.ndarray, dict[str, Any]]:
    """Turn an in-memory waveform into a mono float32 waveform at ``target_rate``.

    Accepts a 1-D array (samples) or a 2-D array (channels × samples or samples ×
    channels). Stereo is averaged to mono and other rates are resampled with librosa.
    Returns the waveform and a dict saying what was done
    (``{"downmixed": 2, "resampled_from": 44100, "non_finite": 0, "silent": False}``).
    """
    notes: dict[str, Any] = {"downmixed": None, "resampled_from": None, "non_finite": 0}
    try:
        wav = np.asarray(audio, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise MediaError(
            f"Audio must be an array of samples, got {type(audio).__name__}. "
            "Pass a path, bytes, or (waveform, sampling_rate)."
        ) from exc
    if not sampling_rate or sampling_rate <= 0:
        raise MediaError(f"sampling_rate must be a positive number of Hz, got {sampling_rate!r}.")
    if wav.ndim == 2 and 1 in wav.shape:
        wav = wav.reshape(-1)  # one channel stored as 2-D: nothing to mix
    if wav.ndim == 2:
        # The shorter axis is the channel axis: (2, n) or (n, 2).
        channels_first = wav.shape[0] <= wav.shape[1]
        notes["downmixed"] = int(wav.shape[0] if channels_first else wav.shape[1])
        wav = wav.mean(axis=0 if channels_first else 1)
    elif wav.ndim != 1:
        raise MediaError(
            f"Audio must be 1-D (samples) or 2-D (channels × samples), got shape {wav.shape}."
        )
    if wav.size == 0:
        raise MediaError("The audio clip is empty (0 samples). Record or upload a longer clip.")
    if not np.isfinite(wav).all():
        bad = ~np.isfinite(wav)
        notes["non_finite"] = int(bad.sum())
        if bad.all():
            raise MediaError(
                "Every sample of the clip is NaN or infinite. The file is probably corrupt; "
                "re-export it as 16-bit PCM WAV."
            )
        wav = np.where(bad, 0.0, wav).astype(np.float32)
    if sampling_rate != target_rate:
        import librosa

        notes["resampled_from"] = int(sampling_rate)
        wav = librosa.resample(wav, orig_sr=sampling_rate, target_sr=target_rate).astype(np.float32)
    notes["silent"] = not wav.any()
    return wav, notes


def _decode_audio_bytes(data: bytes) -> tuple[np.ndarray, int]:
    import soundfile as sf

    short = wav_shortfall(data[:65536], total_size=len(data))
    if short is not None:
        raise MediaError(
            f"The WAV file is cut short: its header promises {short[0]:.2f} s, the file holds "
            f"{short[1]:.2f} s. Export or copy it again."
        )

    try:
        wav, sr = sf.read(io.BytesIO(data), dtype="float32", always_2d=True)
        return wav.T, int(sr)  # (channels, samples)
    except Exception:  # noqa: BLE001 - fall through to librosa's decoders
        pass
    try:
        import librosa

        wav, sr = librosa.load(io.BytesIO(data), sr=None, mono=False)
        return np.asarray(wav, dtype=np.float32), int(sr)
    except Exception as exc:  # noqa: BLE001
        raise MediaError(
            "This file is not audio: its bytes are in no audio format this package reads "
            "(WAV, FLAC, MP3, OGG, M4A, AIFF). It is another kind of file under a clip's "
            "name, or a damaged one: use the recording itself, or export it again as "
            "WAV or FLAC from the program that made it."
        ) from exc


def sample_frame_indices(num_frames: int, *, max_frames: int) -> list[int]:
    """Evenly spaced frames, as transformers samples them: ``i × total // n`` for
    ``n = min(total, max_frames)`` (every frame of a short video).

    >>> sample_frame_indices(10, max_frames=4)
    [0, 2, 5, 7]
    """
    n = min(num_frames, max_frames)
    return [i * num_frames // n for i in range(n)]


@dataclass(frozen=True)
class Video:
    """A video's frames and rate. A file keeps only the frames a model samples, so memory
    is bounded by those (32 at most), not by the clip's length."""

    frames: np.ndarray  # (kept, height, width, 3) uint8
    fps: float  # frames per second of the source
    total_frames: int | None = None  # frames in the source (None: all of them are kept)
    kept: tuple[int, ...] | None = None  # source index of each kept frame (None: 0, 1, …)
    source: str | None = None  # the file it was read from, if any
    data: bytes | None = field(default=None, repr=False)  # the encoded upload, if given as bytes

    @property
    def num_frames(self) -> int:
        """Frames in the source video."""
        return int(self.total_frames if self.total_frames is not None else self.frames.shape[0])

    @property
    def size(self) -> tuple[int, int]:
        """(height, width) of a frame."""
        return int(self.frames.shape[1]), int(self.frames.shape[2])

    def frames_at(self, indices: list[int] | tuple[int, ...]) -> np.ndarray:
        """The frames at these source indices, (len(indices), H, W, 3)."""
        if self.kept is None:
            return self.frames[list(indices)]
        where = {k: i for i, k in enumerate(self.kept)}
        missing = [i for i in indices if i not in where]
        if missing:
            raise MediaError(
                f"This video keeps only its {len(self.kept)} sampled frames; frames {missing[:5]} "
                "were not read. Load it again with load_video(path, max_frames=…)."
            )
        return self.frames[[where[i] for i in indices]]


def _decode_at(cap: Any, wanted: list[int]) -> tuple[list[int], list[np.ndarray]]:
    """Decode the frames at ``wanted`` (ascending); stop at the first that will not decode."""
    cv2 = _cv2()

    dense = bool(wanted) and wanted[-1] < 4 * len(wanted)  # short clip: stepping beats seeking
    kept: list[int] = []
    frames: list[np.ndarray] = []
    position = 0
    for index in wanted:
        if dense:
            while position < index and cap.grab():
                position += 1
        else:
            cap.set(cv2.CAP_PROP_POS_FRAMES, index)
        ok, frame = cap.read()
        if not ok:
            break  # past the real end: the container over-counted
        position = index + 1
        kept.append(index)
        frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))  # (H, W, 3) uint8
    return kept, frames


def _count_frames(path: Path, start: int = 0) -> int:
    """Frames that really decode, counted by grabbing from ``start`` on (nothing kept)."""
    cv2 = _cv2()

    cap = cv2.VideoCapture(str(path))
    try:
        count = 0
        if start:
            cap.set(cv2.CAP_PROP_POS_FRAMES, start)
            count = start
        while cap.grab():
            count += 1
        return count
    finally:
        cap.release()


def _read_sampled(path: Path, max_frames: int) -> tuple[np.ndarray, float, int, tuple[int, ...]]:
    """Decode only the frames a model samples: seek to each one (container metadata gives
    the frame count and fps). Memory holds one frame at a time plus those kept.

    A container may claim more frames than decode (a truncated or damaged file): then the
    real count is found by grabbing past the last good frame, and the frames are sampled
    again over it, as a model sampling the decodable video would."""
    cv2 = _cv2()
    undecodable = MediaError(
        f"Could not decode any frame from {path.name}: corrupt or unsupported codec. "
        "Re-encode it as H.264 MP4 (ffmpeg -i in -c:v libx264 out.mp4)."
    )
    cap = cv2.VideoCapture(str(path))
    try:
        count = int(cap.get(cv2.CAP_PROP_FRAME_COUNT) or 0)
        file_fps = float(cap.get(cv2.CAP_PROP_FPS) or 0.0)
    finally:
        cap.release()
    if count <= 0:  # no count in the container: count by decoding, keeping nothing
        count = _count_frames(path)
    for _attempt in range(3):
        if count <= 0:
            raise undecodable
        wanted = sample_frame_indices(count, max_frames=max_frames)
        cap = cv2.VideoCapture(str(path))
        try:
            kept, frames = _decode_at(cap, wanted)
        finally:
            cap.release()
        if len(kept) == len(wanted):
            break
        # Over-counted: the real end lies after the last frame that decoded. Sample again
        # over the frames that exist (the count only ever shrinks).
        real = _count_frames(path, kept[-1] + 1) if kept else _count_frames(path)
        count = min(real, count - 1)
    else:
        raise MediaError(
            f"{path.name}: frames do not decode where the container says they are (a damaged "
            "index). Re-encode it as H.264 MP4 (ffmpeg -i in -c:v libx264 out.mp4)."
        )
    if not frames:
        raise undecodable
    return np.stack(frames), file_fps, count, tuple(kept)


# Leading bytes of still-image formats: OpenCV would read such a file as a one-frame
# "video" at a made-up 25 fps.
_IMAGE_MAGIC = {
    b"\xff\xd8\xff": "JPEG",
    b"\x89PNG\r\n\x1a\n": "PNG",
    b"GIF87a": "GIF",
    b"GIF89a": "GIF",
    b"BM": "BMP",
    b"II*\x00": "TIFF",
    b"MM\x00*": "TIFF",
}


def _still_image_kind(path: Path) -> str | None:
    """The still-image format ``path`` holds ("JPEG", "PNG", …), None for anything else."""
    with open(path, "rb") as f:
        head = f.read(16)
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WebP"
    return next((kind for magic, kind in _IMAGE_MAGIC.items() if head.startswith(magic)), None)


def _video_file(
    path: Path,
    fps: float | None,
    limit: int,
    *,
    source: str | None = None,
    data: bytes | None = None,
) -> Video:
    kind = _still_image_kind(path)
    if kind is not None:
        name = "The file" if data is not None else path.name
        raise MediaError(f"{name} is a {kind} image, not a video: give it as an image instead.")
    frames, file_fps, count, kept = _read_sampled(path, limit)
    rate = fps or file_fps
    if not rate or rate <= 0:
        raise MediaError(
            "The file does not say its frame rate: re-save it with one (for example as MP4)."
        )
    if kept == tuple(range(count)):
        return Video(frames=frames, fps=float(rate), source=source, data=data)
    return Video(
        frames=frames, fps=float(rate), total_frames=count, kept=kept, source=source, data=data
    )


def _read_source_checks(path: Path, what: str) -> None:
    if not path.exists():
        raise MediaError(f"No {what} file at {path}. Check the path.")
    if path.is_dir():
        raise MediaError(f"{path} is a folder, not a {what} file.")
    if path.stat().st_size == 0:
        raise MediaError(EMPTY.format(name=path.name, what=what))


def load_video(video: Any, *, fps: float | None = None, max_frames: int | None = None) -> Video:
    """Return a :class:`Video` from a path, bytes, file, (frames, fps) pair or an array.

    Files are read with OpenCV (``opencv-python-headless``), seeking to the ``max_frames``
    (default: the default family's cap, Gemma 4's 32) evenly spaced frames a model
    samples; their fps comes from the container. An array is kept whole and needs ``fps``.
    """
    if isinstance(video, Video):
        return video
    limit = max_frames or DEFAULT_FAMILY.image.max_video_frames
    if isinstance(video, tuple) and len(video) == 2 and np.isscalar(video[1]):
        video, fps = video
    if isinstance(video, str | os.PathLike):
        path = Path(video)
        _read_source_checks(path, "video")
        return _video_file(path, fps, limit, source=str(path))
    data = None if isinstance(video, np.ndarray) else _read_source(video, "video")
    if data is not None:  # bytes or a file object: decode from a temporary copy
        import tempfile

        with tempfile.TemporaryDirectory(prefix="gemma_explore_video_") as tmp:
            path = Path(tmp) / "upload.mp4"
            path.write_bytes(data)
            return _video_file(path, fps, limit, data=data)
    arr = np.asarray(video)
    if arr.ndim != 4 or arr.shape[-1] not in (1, 3, 4):
        raise MediaError(
            f"A video array must be (frames, height, width, channels), got shape {arr.shape}."
        )
    if arr.shape[0] == 0:
        raise MediaError("The video has no frames.")
    if not fps or fps <= 0:
        raise MediaError("Give the frame rate of a video array: load_video(frames, fps=24).")
    if arr.dtype != np.uint8:
        arr = (arr * 255.0 if float(arr.max()) <= 1.0 else arr).clip(0, 255).astype(np.uint8)
    if arr.shape[-1] == 1:
        arr = np.repeat(arr, 3, axis=-1)
    elif arr.shape[-1] == 4:
        arr = arr[..., :3]
    return Video(frames=np.ascontiguousarray(arr), fps=float(fps))
