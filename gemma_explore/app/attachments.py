"""What the chat box hands over: its text, and each attached file read as an image, a
clip or a video (by suffix: :mod:`gemma_explore.media.headers` holds the one list).

>>> split_message({"text": " Hi ", "files": [{"path": "/tmp/x/photo.jpg"}]})
('Hi', ['/tmp/x/photo.jpg'])
>>> file_name("/tmp/gradio/abc/photo.jpg")
'photo.jpg'
"""

from __future__ import annotations

from typing import Any

from gemma_explore.errors import MediaError
from gemma_explore.facts.families import AUDIO_SAMPLING_RATE
from gemma_explore.media.headers import AUDIO_SUFFIXES, IMAGE_SUFFIXES, VIDEO_SUFFIXES, kind_of
from gemma_explore.media.loaders import load_audio, load_image, load_video

__all__ = ["attachment", "file_name", "split_message"]


def split_message(message: dict[str, Any] | str) -> tuple[str, list[str]]:
    """gradio's MultimodalTextbox value → (stripped text, file paths)."""
    if isinstance(message, str):
        return message.strip(), []
    text = (message or {}).get("text") or ""
    files = []
    for f in (message or {}).get("files") or []:
        files.append(f if isinstance(f, str) else f.get("path"))
    return text.strip(), [f for f in files if f]


def file_name(path: Any) -> str:
    """An upload's own name, never its temporary folder."""
    return str(path).replace("\\", "/").rsplit("/", 1)[-1]


def attachment(path: str) -> dict[str, Any]:
    """One chat content item for the file at ``path``, read by its suffix."""
    kind = kind_of(path)
    if kind == "image":
        return {"type": "image", "image": load_image(path)}
    if kind == "audio":
        wave, _ = load_audio(path, target_rate=AUDIO_SAMPLING_RATE)
        return {"type": "audio", "audio": (wave, AUDIO_SAMPLING_RATE)}
    if kind == "video":
        return {"type": "video", "video": load_video(path)}
    raise MediaError(
        "Not a file type the chat reads: attach an image "
        f"({', '.join(sorted(IMAGE_SUFFIXES))}), audio ({', '.join(sorted(AUDIO_SUFFIXES))}) "
        f"or video ({', '.join(sorted(VIDEO_SUFFIXES))})."
    )
