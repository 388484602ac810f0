"""One way in: every public entry point takes, for each modality it handles, a path (str or
Path), bytes, a file object and an in-memory object (a PIL image or array, ``(wave,
rate)``, ``(frames, fps)``), and gives the same answer for each.

The entry points come from ``gemma_explore.__all__``: a new public function must be added
to MEDIA (with how to call it per modality) or to NOT_MEDIA (with why), so none is missed.
"""

from __future__ import annotations

import inspect
import io
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import gemma_explore as ge
from gemma_explore.samples import SAMPLES_DIR

PHOTO, SPEECH, VIDEO = (
    SAMPLES_DIR / "photo.jpg",
    SAMPLES_DIR / "speech.wav",
    SAMPLES_DIR / "video.mp4",
)
SOURCES = {"image": PHOTO, "audio": SPEECH, "video": VIDEO}


@cache
def bundle():
    return ge.load("tiny-gemma4")


def _in_memory(modality: str) -> list[tuple[str, object]]:
    if modality == "image":
        pil = ge.load_image(PHOTO)
        return [("PIL image", pil), ("array", np.asarray(pil))]
    if modality == "audio":
        import soundfile as sf

        wave, rate = sf.read(SPEECH, dtype="float32")
        return [("(wave, rate)", (wave, rate))]
    import cv2

    cap, frames = cv2.VideoCapture(str(VIDEO)), []
    fps = cap.get(cv2.CAP_PROP_FPS)
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        frames.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
    cap.release()
    return [("(frames, fps)", (np.stack(frames), fps))]


def _forms(modality: str):
    """Every way in for a modality: (label, a zero-argument maker of the input)."""
    path = SOURCES[modality]
    yield "Path", lambda: path
    yield "str path", lambda: str(path)
    yield "bytes", lambda: path.read_bytes()
    yield "file object", lambda: io.BytesIO(path.read_bytes())
    for label, value in _in_memory(modality):
        yield label, lambda value=value: value


def _turn(kind):
    return lambda x: [
        {"role": "user", "content": [{"type": kind, kind: x}, {"type": "text", "text": "Hi"}]}
    ]


# name → {modality: call}. Several-modality entry points are run once per modality.
MEDIA = {
    "load_image": {"image": ge.load_image},
    "load_audio": {"audio": ge.load_audio},
    "load_video": {"video": ge.load_video},
    "plan_image": {"image": lambda x: ge.plan_image(x, family="gemma4")},
    "plan_audio": {"audio": lambda x: ge.plan_audio(x, family="gemma3n")},
    "plan_video": {"video": ge.plan_video},
    "plan_long_audio": {"audio": lambda x: ge.plan_long_audio(x, family="gemma3n")},
    "audio_features": {"audio": lambda x: ge.audio_features(x, family="gemma4")},
    "show_patch_grid": {"image": lambda x: ge.show_patch_grid(x, family="gemma4")},
    "show_budgets": {"image": ge.show_budgets},
    "show_mel": {"audio": lambda x: ge.show_mel(x, family="gemma3n")},
    "show_video_frames": {"video": ge.show_video_frames},
    "explore_image": {"image": ge.explore_image},
    "explore_audio": {"audio": ge.explore_audio},
    "vision_pooling": {"image": lambda x: ge.vision_pooling(x, bundle=bundle())},
    "check_image_parity": {
        "image": lambda x: ge.check_image_parity(x, bundle=bundle(), use_vllm=False)
    },
    "check_audio_parity": {
        "audio": lambda x: ge.check_audio_parity(x, bundle=bundle(), use_vllm=False)
    },
    "check_video_parity": {
        "video": lambda x: ge.check_video_parity(x, bundle=bundle(), use_vllm=False)
    },
    "layout_prompt": {
        "image": lambda x: ge.layout_prompt("Describe.", bundle=bundle(), images=[x]),
        "audio": lambda x: ge.layout_prompt("Describe.", bundle=bundle(), audios=[x]),
        "video": lambda x: ge.layout_prompt("Describe.", bundle=bundle(), videos=[x]),
    },
    "prepare_inputs": {
        "image": lambda x: ge.prepare_inputs(_turn("image")(x), bundle=bundle()),
        "audio": lambda x: ge.prepare_inputs(_turn("audio")(x), bundle=bundle()),
        "video": lambda x: ge.prepare_inputs(_turn("video")(x), bundle=bundle()),
    },
    "show_embedder_grid": {"image": ge.show_embedder_grid},  # Unified's patch grid
    "show_audio_frames": {"audio": ge.show_audio_frames},  # Unified's frame view
    "compare_families": {
        "image": lambda x: ge.compare_families(x, sizes=False),
        "audio": lambda x: ge.compare_families((300, 500), x, sizes=False),
    },
    "inspect_multimodal": {
        "image": lambda x: ge.inspect_multimodal(_turn("image")(x), bundle=bundle()),
        "audio": lambda x: ge.inspect_multimodal(_turn("audio")(x), bundle=bundle()),
    },
}
NOT_MEDIA = {
    "load": "takes a model name or folder",
    "get_family": "takes a family name",
    "real_answers": "takes a case name: what a real checkpoint answered, recorded on a GPU",
    "save_figure": "takes a Figure",
    "style": "takes a style name: how later figures are drawn",
    "bill": "takes a folder or dataset of files (bill_file takes one file)",
    "grade_exercise": "takes a learner's answer to an exercise",
    "show_layout": "takes a PromptLayout (layout_prompt takes the media)",
    "show_pooled_mask": "takes PooledTokens (vision_pooling takes the image)",
    "explore_prompt": "takes a Bundle; its attachments go through layout_prompt",
    "show_three_way": "takes a FamilyComparison (compare_families takes the media)",
    "plan_serving": "takes a model and engine arguments, no media",
    "show_serving": "takes a ServingPlan",
    "attention_mask": "takes a PromptLayout (layout_prompt takes the media)",
    "show_attention": "takes AttentionMasks",
    "show_bill": "takes a Bill",
    "transcription_prompt": "takes language codes; Bundle.transcribe takes the clip",
    "engine_args": "takes a checkpoint name: vLLM's start-up arguments, no media",
    "released_config": "takes a released checkpoint's id",
    "answer_key": "an exercise answer key",
    "size_label": "takes a (height, width) pair",
    "sample_photo": "takes nothing: the bundled photograph",
    "sample_speech": "takes nothing: the bundled speech clip",
    "sample_video": "takes nothing: the bundled video",
    "show_flops": "takes FlopsReports",
    "probe": "takes a server's URL: it sends its own images, clips and video",
    "show_probe": "takes a ProbeResult",
}


def _summary(result):
    """What must not depend on how the input came in."""
    from matplotlib.figure import Figure

    if isinstance(result, tuple):  # load_audio: (wave, notes)
        return result[0].shape, round(float(np.abs(result[0]).sum()), 2)
    if isinstance(result, Figure):
        return "Figure", len(result.axes)
    if hasattr(result, "size") and hasattr(result, "mode"):  # a PIL image
        return result.size, np.asarray(result).tobytes()[:4096]
    for name in ("total_tokens", "num_tokens", "num_soft_tokens", "num_frames", "agree"):
        if hasattr(result, name) and not callable(getattr(result, name)):
            extra = getattr(result, "rows", None)
            return name, getattr(result, name), repr(extra)[:2000] if extra is not None else None
    if hasattr(result, "input_ids"):
        return "ids", tuple(result.input_ids)
    if hasattr(result, "items"):  # EncoderReport
        return "items", repr(result.items)[:2000]
    if hasattr(result, "mel"):
        return "mel", result.mel.shape
    if hasattr(result, "table"):  # FamilyComparison
        return result.table().text()
    return type(result).__name__


def test_every_public_entry_point_is_covered():
    """A new public function must say how it takes media, or why it takes none."""
    functions = {
        name
        for name in ge.__all__
        # callable, not a class: ge.answer_key is a callable mapping
        if callable(getattr(ge, name)) and not inspect.isclass(getattr(ge, name))
    }
    assert functions, "gemma_explore.__all__ lists no functions?"
    missing = functions - set(MEDIA) - set(NOT_MEDIA)
    assert not missing, f"add these public functions to MEDIA or NOT_MEDIA: {sorted(missing)}"
    assert not (set(MEDIA) | set(NOT_MEDIA)) - functions, "stale names in the tables"


CASES = [
    pytest.param(name, modality, id=f"{name}-{modality}")
    for name, calls in MEDIA.items()
    for modality in calls
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "modality"), CASES)
def test_every_way_in_gives_the_same_answer(name, modality):
    call = MEDIA[name][modality]
    results = {label: _summary(call(make())) for label, make in _forms(modality)}
    expected = results["Path"]
    different = {label: r for label, r in results.items() if r != expected}
    assert not different, f"{name}({modality}): {sorted(different)} differ from a Path input"


def test_plan_video_reads_fps_and_size_from_the_file(tmp_path):
    import cv2

    path = Path(tmp_path) / "clip.mp4"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 15, (160, 96))
    for i in range(45):
        writer.write(np.full((96, 160, 3), i * 5, np.uint8))
    writer.release()
    plan = ge.plan_video(str(path))
    assert (plan.fps, plan.frame_size, plan.num_frames) == (15.0, (96, 160), 45)


def test_plan_audio_reads_a_wav_file():
    plan = ge.plan_audio(str(SPEECH), family="gemma4")
    assert plan.num_samples > 0 and plan.total_tokens == plan.num_soft_tokens + 2
