"""What a media file is, from its header alone: image size, clip length, video frames.

A token bill over 50 000 files cannot afford to decode pixels or samples: every number a
plan needs (an image's size, a clip's sample count and rate, a video's frame count, fps
and frame size) is written in the file's header or container. These readers open a
*path* and read only that:

* images: PIL's lazy ``Image.open`` (the header; pixels are not decoded), with the EXIF
  orientation tag respected, as :func:`~gemma_explore.media.loaders.load_image` and the
  processors see the picture;
* audio: ``soundfile.info`` (WAV, FLAC, OGG, MP3 with libsndfile ≥ 1.1), else
  librosa's ``get_samplerate`` / ``get_duration`` (audioread's metadata) for the rest;
* video: OpenCV's container properties (frame count, fps, width, height).

Every failure is a :class:`~gemma_explore.errors.MediaError` saying what is wrong.

>>> from gemma_explore.media.headers import kind_of
>>> kind_of("holiday/IMG_0001.JPG"), kind_of("talk.flac"), kind_of("notes.txt")
('image', 'audio', None)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from gemma_explore.errors import MediaError

# FFmpeg reads its log level once, when OpenCV opens its first capture in this process
# (whoever opens it: us, or transformers' video loader): set it at import, so a damaged
# file gets our one line and never FFmpeg's "moov atom not found" on stderr.
os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")  # AV_LOG_QUIET
os.environ.setdefault("OPENCV_LOG_LEVEL", "SILENT")
from gemma_explore.media.wavfile import wav_shortfall
from gemma_explore.sizes import size_label

# An empty file, in every reader's words: sending the same file again would not help, so
# the advice is which file to choose.
EMPTY = "{name} is empty (0 bytes): there is no {what} in it. Choose the file that holds it."

__all__ = [
    "AUDIO_SUFFIXES",
    "IMAGE_SUFFIXES",
    "VIDEO_SUFFIXES",
    "AudioHeader",
    "VideoHeader",
    "audio_header",
    "image_header",
    "kind_of",
    "video_header",
]

IMAGE_SUFFIXES = frozenset(
    {".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff", ".ppm", ".pgm"}
)
AUDIO_SUFFIXES = frozenset({".wav", ".flac", ".ogg", ".oga", ".mp3", ".m4a", ".aif", ".aiff"})
VIDEO_SUFFIXES = frozenset({".mp4", ".mov", ".avi", ".mkv", ".webm", ".m4v"})

_ROTATED = (5, 6, 7, 8)  # EXIF orientations that turn the picture by 90° or 270°


def kind_of(path: str | os.PathLike) -> str | None:
    """``"image"``, ``"audio"``, ``"video"`` from the file's suffix, or None."""
    suffix = Path(path).suffix.lower()
    if suffix in IMAGE_SUFFIXES:
        return "image"
    if suffix in AUDIO_SUFFIXES:
        return "audio"
    if suffix in VIDEO_SUFFIXES:
        return "video"
    return None


def _check_file(path: Path, what: str) -> None:
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        raise MediaError(f"No {what} file at {path} (a broken link?).") from None
    except OSError as exc:
        raise MediaError(f"Cannot read {path}: {exc.strerror or exc}.") from None
    if size == 0:
        raise MediaError(EMPTY.format(name=path.name, what=what))


def image_header(path: str | os.PathLike) -> tuple[int, int]:
    """Upright ``(height, width)`` of an image file, from its header.

    >>> from gemma_explore.samples import SAMPLES_DIR
    >>> image_header(SAMPLES_DIR / "photo.jpg")
    (600, 512)
    """
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as pil:  # lazy: parses the header, decodes no pixels
            w, h = pil.size
            # PNG keeps EXIF in an eXIf chunk; PIL's PNG getexif() would decode the pixels
            # to reach one stored after the image data, so read only what the header held.
            if pil.format != "PNG" or "exif" in pil.info:
                orientation = pil.getexif().get(0x0112, 1)
            else:
                orientation = 1
    except Image.DecompressionBombError:
        raise MediaError(
            f"{Path(path).name}: the header claims more pixels than the package opens (over "
            f"{2 * Image.MAX_IMAGE_PIXELS / 1e6:.0f} MP): a damaged header, or a picture to "
            "downscale first."
        ) from None
    except Exception as exc:  # noqa: BLE001 - PIL raises OSError, SyntaxError, ValueError, …
        _check_file(Path(path), "image")  # a missing or empty file says so
        # PIL's own text names the file's full (often temporary) path: say it our way.
        if isinstance(exc, UnidentifiedImageError):
            raise MediaError(
                f"{Path(path).name} is not an image: its bytes are in no image format (PNG, "
                "JPEG, WebP, GIF, BMP, TIFF). It is another kind of file under an image's "
                "name, or a damaged one: use the picture itself."
            ) from None
        raise MediaError(
            f"{Path(path).name} is a damaged image: its header does not read. Open it in an "
            "image viewer and export it again."
        ) from None
    if orientation in _ROTATED:
        w, h = h, w
    if h <= 0 or w <= 0:
        raise MediaError(
            f"The header says {size_label((h, w))}: no pixels. Check the file, or export it again."
        )
    return int(h), int(w)


@dataclass(frozen=True)
class AudioHeader:
    """A clip's length and rate, as its header states them."""

    frames: int  # samples per channel
    sampling_rate: int  # Hz
    channels: int  # 0 when only audioread's metadata was available

    @property
    def duration_s(self) -> float:
        return self.frames / self.sampling_rate


def audio_header(path: str | os.PathLike) -> AudioHeader:
    """Samples, rate and channels of a clip, from its header.

    >>> from gemma_explore.samples import SAMPLES_DIR
    >>> audio_header(SAMPLES_DIR / "speech.wav").sampling_rate
    16000
    """
    import soundfile as sf

    path = Path(path)
    _check_file(path, "audio")
    try:
        info = sf.info(str(path))
        frames, rate, channels = int(info.frames), int(info.samplerate), int(info.channels)
    except Exception:  # noqa: BLE001 - not a libsndfile format: ask audioread's metadata
        frames, rate, channels = _audio_metadata(path)
    if rate <= 0:
        raise MediaError(
            f"{path.name}: the header gives no sampling rate. Re-export the clip as WAV or FLAC."
        )
    if frames <= 0:
        raise MediaError(
            f"{path.name}: the header says the clip has no samples. Record or export it again."
        )
    with open(path, "rb") as f:  # libsndfile clamps a short WAV to what is there: say so
        short = wav_shortfall(f.read(65536), total_size=os.path.getsize(path))
    if short is not None:
        raise MediaError(
            f"{path.name} is cut short: its header promises {short[0]:.2f} s, the file holds "
            f"{short[1]:.2f} s. Export or copy it again."
        )
    return AudioHeader(frames=frames, sampling_rate=rate, channels=channels)


def _audio_metadata(path: Path) -> tuple[int, int, int]:
    """librosa's metadata readers: soundfile, then audioread (MP4/M4A, MP3 and more)."""
    import warnings

    import librosa

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # librosa warns when it falls back to audioread
            rate = int(librosa.get_samplerate(str(path)))
            seconds = float(librosa.get_duration(path=str(path)))
    except Exception:  # noqa: BLE001
        raise MediaError(
            f"{path.name} is not audio: its bytes are in no audio format this package reads "
            "(WAV, FLAC, MP3, OGG, M4A, AIFF). It is another kind of file under a clip's name, "
            "or a damaged one: use the recording itself, or export it again as WAV or FLAC."
        ) from None
    return int(round(seconds * rate)), rate, 0  # 0: the metadata does not say


@dataclass(frozen=True)
class VideoHeader:
    """A video's frame count, rate and frame size, as its container states them."""

    frames: int
    fps: float
    size: tuple[int, int]  # (height, width)


def video_header(path: str | os.PathLike) -> VideoHeader:
    """Frame count, fps and (height, width) of a video, from its container.

    >>> from gemma_explore.samples import SAMPLES_DIR
    >>> video_header(SAMPLES_DIR / "video.mp4").fps
    12.0
    """
    import cv2  # FFmpeg's logging is off: see the top of this module

    path = Path(path)
    _check_file(path, "video")
    cap = cv2.VideoCapture(str(path))
    try:
        if not cap.isOpened():
            raise MediaError(
                f"{path.name} is not a video OpenCV can open (corrupt, or an unsupported "
                "codec). Re-encode it as H.264 MP4 (ffmpeg -i in -c:v libx264 out.mp4)."
            )
        frames = int(cap.get(cv2.CAP_PROP_FRAME_COUNT) or 0)
        fps = float(cap.get(cv2.CAP_PROP_FPS) or 0.0)
        w = int(cap.get(cv2.CAP_PROP_FRAME_WIDTH) or 0)
        h = int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT) or 0)
    finally:
        cap.release()
    if frames <= 0:
        raise MediaError("The container gives no frame count (re-mux it as MP4).")
    if fps <= 0:
        raise MediaError(
            "The container gives no frame rate. Re-mux it (ffmpeg -i in -c copy out.mp4), or "
            "plan it with plan_video(frames, fps=…)."
        )
    if h <= 0 or w <= 0:
        raise MediaError(
            f"The container says frames are {size_label((h, w))}. Re-encode the video "
            "(e.g. ffmpeg -i in.mp4 out.mp4)."
        )
    return VideoHeader(frames=frames, fps=fps, size=(h, w))
