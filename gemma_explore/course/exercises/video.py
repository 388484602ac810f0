"""Notebook 04 · video: how Gemma 4 samples frames, and what the timestamps add.

>>> from gemma_explore.course.grader import grade
>>> [e.name for e in EXERCISES]
['frame-spacing-10s', 'first-second-frames', 'why-timestamps']
>>> grade(EXERCISES[2], "To put the frames in order.").right
False
"""

from __future__ import annotations

from gemma_explore.course.grader import Exercise

__all__ = ["EXERCISES", "NOTEBOOK"]

NOTEBOOK = "04_video"


def _frame_spacing_s(frames: int, fps: float) -> float:
    from gemma_explore.plans.video import plan_video

    idx = plan_video(frames, fps=fps, frame_size=(720, 1280)).frame_indices
    return round((idx[-1] - idx[0]) / (len(idx) - 1) / fps, 3)


def _first_second_frames(frames: int, fps: float) -> int:
    from gemma_explore.plans.video import plan_video

    stamps = plan_video(frames, fps=fps, frame_size=(720, 1280)).timestamps
    return sum(s == stamps[0] for s in stamps)


EXERCISES = (
    Exercise(
        name="frame-spacing-10s",
        notebook=NOTEBOOK,
        kind="predict",
        truth=lambda: _frame_spacing_s(300, 30),
        tolerance=0.02,
        hint="How many frames does Gemma 4 sample at most, and how are they spread over the clip?",
        why="32 frames spread evenly over 10 s.",
        misconceptions=(
            (1.0, "Gemma 4 samples a fixed number of frames, not one per second."),
            (1 / 30, "Not every frame is kept: at most 32 are."),
            (0.125, "That is our 4 s sample; this clip is 10 s."),
        ),
    ),
    Exercise(
        name="first-second-frames",
        notebook=NOTEBOOK,
        kind="predict",
        truth=lambda: _first_second_frames(300, 30),
        hint="When is each sampled frame taken, and which of those times truncate to 00:00?",
        why="Frames a third of a second apart: the ones before 1 s all read 00:00.",
        misconceptions=(
            (8, "That is our sample clip's count; this clip is longer."),
            (1, "Seconds are truncated: every frame before 1 s reads 00:00."),
            (3, "Count the frame at 0 s too."),
        ),
    ),
    Exercise(
        name="why-timestamps",
        notebook=NOTEBOOK,
        kind="explain",
        hint="What can the model not tell from the frames alone?",
        answer="The frame tokens say nothing about when each frame was taken or how far apart "
        "the sampled frames are.",
        ideas=(
            # what the stamps tell: time
            (
                "when",
                "time",
                "what second",
                "which second",
                "duration",
                "how long",
                "how far apart",
                "spacing",
                "interval",
                "elapsed",
            ),
            # why the frames cannot tell it themselves
            (
                "say nothing",
                "says nothing",
                "nothing about",
                "no notion",
                "carry no",
                "cannot tell",
                "can not tell",
                "not know",
                "apart",
                "spread",
                "evenly",
                "gap",
                "any length",
            ),
        ),
        rejects=(
            (
                (
                    "put the frames in order",
                    "put frames in order",
                    "keep the frames in order",
                    "get the frames in order",
                    "frames in the right order",
                    "sort the frames",
                    "sort frames",
                    "order the frames",
                    "ordering the frames",
                ),
                "The frames already arrive in order: ordering is not what the stamps add.",
            ),
        ),
        misconceptions=(
            ("To put the frames in order.", ""),
            ("The tokenizer needs the timestamps to decode the video.", ""),
            ("So the model can sort the frames by time.", ""),
        ),
        paraphrases=(
            "Frame tokens carry no notion of time; since at most 32 frames are spread over any "
            "length, only the stamp tells the model when each one happened.",
            "Without stamps the model can't know how far apart the sampled frames are or at what "
            "second something happens.",
        ),
    ),
)
