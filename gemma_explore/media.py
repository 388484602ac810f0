"""Turn what a user hands us (paths, bytes, arrays, PIL images) into clean inputs.

Every failure here is a :class:`MediaError` (a ``ValueError``) whose message says
what was wrong and what to do, so notebooks and the demo can show it as is.

>>> from gemma_explore.media import load_image
>>> load_image((32, 48)).size   # a (height, width) pair gives a grey test image
(48, 32)
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .plans import prepare_waveform

__all__ = ["MediaError", "Video", "load_audio", "load_image", "load_video"]

MAX_IMAGE_PIXELS = 100_000_000  # refuse decompression bombs (~10 000 × 10 000)


class MediaError(ValueError):
    """A clear, user-facing message about a bad image, clip or video."""


def load_image(image: Any):
    """Return an RGB ``PIL.Image`` from a path, bytes, array, PIL image or (h, w) pair.

    Palette, greyscale, 16-bit and RGBA images are converted to RGB (alpha is
    composited on white), as the processors would see them.
    """
    from PIL import Image, ImageOps, UnidentifiedImageError

    if isinstance(image, tuple) and len(image) == 2 and all(isinstance(v, int) for v in image):
        h, w = image
        if h <= 0 or w <= 0:
            raise MediaError(f"Image sides must be positive, got {h}×{w}.")
        return Image.new("RGB", (w, h), (128, 128, 128))
    if isinstance(image, str | os.PathLike):
        path = Path(image)
        if not path.exists():
            raise MediaError(f"No image file at {path}. Check the path.")
        if path.stat().st_size == 0:
            raise MediaError(f"{path.name} is empty (0 bytes). Upload the image again.")
        image = path.read_bytes()
    if isinstance(image, bytes | bytearray):
        if not image:
            raise MediaError("The image is empty (0 bytes). Upload the image again.")
        try:
            pil = Image.open(io.BytesIO(image))
            pil.load()
        except (UnidentifiedImageError, OSError, SyntaxError) as exc:
            raise MediaError(
                "This file is not an image PIL can read (corrupt or unsupported format). "
                "Save it as PNG or JPEG and try again."
            ) from exc
        image = pil
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
            f"Expected an image (path, bytes, array or PIL image), got {type(image).__name__}."
        )
    w, h = image.size
    if w == 0 or h == 0:
        raise MediaError(f"The image has no pixels ({w}×{h}).")
    if w * h > MAX_IMAGE_PIXELS:
        raise MediaError(
            f"The image is {w}×{h} = {w * h / 1e6:.0f} MP; the limit is "
            f"{MAX_IMAGE_PIXELS / 1e6:.0f} MP. Downscale it first."
        )
    image = ImageOps.exif_transpose(image) if hasattr(image, "getexif") else image
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
    audio: Any, *, sampling_rate: int | None = None, target_rate: int = 16_000
) -> tuple[np.ndarray, dict[str, Any]]:
    """Return a mono float32 waveform at ``target_rate`` and notes on what was done.

    ``audio`` is a path, bytes, a ``(waveform, rate)`` pair or an array with
    ``sampling_rate``. Files are read with soundfile (WAV, FLAC, OGG) and, failing
    that, librosa (MP3 and more). Stereo is averaged; other rates are resampled.
    """
    if isinstance(audio, str | os.PathLike):
        path = Path(audio)
        if not path.exists():
            raise MediaError(f"No audio file at {path}. Check the path.")
        audio = path.read_bytes()
    if isinstance(audio, bytes | bytearray):
        if not audio:
            raise MediaError("The audio file is empty (0 bytes). Upload it again.")
        audio, sampling_rate = _decode_audio_bytes(bytes(audio))
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
    try:
        return prepare_waveform(arr, sampling_rate=int(sampling_rate), target_rate=target_rate)
    except ValueError as exc:
        raise MediaError(str(exc)) from None


def _decode_audio_bytes(data: bytes) -> tuple[np.ndarray, int]:
    import soundfile as sf

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
            "This file is not audio that soundfile or librosa can read (corrupt or unsupported "
            "format). Save it as a WAV or FLAC file and try again."
        ) from exc


@dataclass(frozen=True)
class Video:
    """Decoded frames and their rate. ``frames`` is (T, H, W, 3) uint8."""

    frames: np.ndarray  # (num_frames, height, width, 3)
    fps: float  # frames per second of the source

    @property
    def num_frames(self) -> int:
        return int(self.frames.shape[0])


def load_video(video: Any, *, fps: float | None = None, max_frames: int = 10_000) -> Video:
    """Return a :class:`Video` from a path, bytes, (frames, fps) pair or an array.

    Files are decoded with OpenCV (``opencv-python-headless``). An array needs ``fps``.
    """
    if isinstance(video, Video):
        return video
    if isinstance(video, tuple) and len(video) == 2 and np.isscalar(video[1]):
        video, fps = video
    if isinstance(video, bytes | bytearray):
        if not video:
            raise MediaError("The video file is empty (0 bytes). Upload it again.")
        import tempfile

        with tempfile.NamedTemporaryFile(suffix=".mp4", delete=False) as fh:
            fh.write(video)
            video = fh.name
        try:
            return load_video(video, fps=fps, max_frames=max_frames)
        finally:
            os.unlink(video)
    if isinstance(video, str | os.PathLike):
        path = Path(video)
        if not path.exists():
            raise MediaError(f"No video file at {path}. Check the path.")
        try:
            import cv2
        except ImportError as exc:  # pragma: no cover - opencv comes with the vllm extra
            raise MediaError(
                "Reading video files needs OpenCV: pip install opencv-python-headless"
            ) from exc
        cap = cv2.VideoCapture(str(path))
        frames = []
        while len(frames) < max_frames:
            ok, frame = cap.read()
            if not ok:
                break
            frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
        file_fps = cap.get(cv2.CAP_PROP_FPS) or 0.0
        cap.release()
        if not frames:
            raise MediaError(
                f"Could not decode any frame from {path.name}: corrupt or unsupported codec. "
                "Re-encode it as H.264 MP4 (ffmpeg -i in -c:v libx264 out.mp4)."
            )
        video, fps = np.stack(frames), fps or file_fps or None
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
