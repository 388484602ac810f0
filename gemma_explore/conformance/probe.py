"""A probe for a running OpenAI-compatible server that serves a Gemma model: does it
count images, clips and videos as the reference does?

It sends a small, bounded set of chat requests with ``max_tokens=1``: a text-only
baseline, then the same message with one image (at chosen sizes and budgets), one clip
(of chosen lengths) or, where the family has video, one video. Each item's cost is the
difference in ``usage.prompt_tokens``; the reference is our plans (transformers' count)
and ``plans/vllm.py`` (vLLM's own arithmetic, named by the release whose rules it follows:
``vllm_version``, else the installed vLLM, else the newest supported). A budget travels in the request's
``mm_processor_kwargs``, the knob vLLM declares (``vllm serve`` refuses it without
``--trust-request-mm-kwargs``).

Where the item lands: after the chat template's ``user\\n`` and before the text. Gemma 3n
wraps each run in ``"\\n\\n"``, and the opening one merges with that ``"\\n"`` into one
``"\\n\\n\\n"`` token, in transformers and in vLLM alike: a 3n item costs its plan's
``total_tokens`` less one.

>>> [c.name for c in plan_probe("gemma4", images=((480, 640),), clips=(), budgets=(70,), video=None)]
['image 640×480 px (W×H)', 'budget knob (mm_processor_kwargs)', 'image 640×480 px (W×H) at 70']
>>> plan_probe("gemma3n", images=((480, 640),), clips=(5.0,), budgets=(), video=None)[1].expected
191
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from gemma_explore.engines.openai import chat_request
from gemma_explore.engines.server_reply import (
    ServerFault,
    bounded_client,
    check_chat_answer,
    error_message,
    fault_from_exception,
    read_json,
)
from gemma_explore.facts.families import (
    FAMILIES,
    FamilySpec,
    family_from_name,
    get_family,
)
from gemma_explore.plans.audio import plan_audio
from gemma_explore.plans.image import plan_image
from gemma_explore.plans.video import plan_video, timestamp_tokens
from gemma_explore.plans.vllm import (
    vllm_audio_tokens,
    vllm_image_tokens,
    vllm_video_timestamps,
)
from gemma_explore.sizes import size_label
from gemma_explore.tables import Table
from gemma_explore.vllm_versions import PROFILES, VllmProfile, vllm_profile

__all__ = [
    "DEFAULT_CLIPS",
    "DEFAULT_DEADLINE",
    "DEFAULT_IMAGES",
    "DEFAULT_VIDEO",
    "MAX_REQUESTS",
    "ProbeCase",
    "ProbeResult",
    "VERDICTS",
    "check_knob",
    "parse_clips",
    "parse_sizes",
    "plan_probe",
    "probe",
    "probe_command_text",
    "probe_json",
    "probe_table",
]

# (height, width): one square, one landscape, one tall strip; a squash or a fixed count
# shows on the two that are not square.
DEFAULT_IMAGES: tuple[tuple[int, int], ...] = ((256, 256), (480, 640), (1000, 200))
DEFAULT_CLIPS: tuple[float, ...] = (5.0, 35.0)  # seconds: one short, one past the 30 s cut
# (frames, fps, (height, width)): 41 frames at 1 fps, more than the 32 Gemma 4 samples,
# so the sampling matters (vLLM's timestamps differ from transformers' on 5 frames);
# small frames keep the request cheap.
DEFAULT_VIDEO: tuple[int, float, tuple[int, int]] = (41, 1.0, (64, 96))
MAX_REQUESTS = 24  # the probe never sends more, whatever it is asked
DEFAULT_DEADLINE = 300.0  # seconds for a whole probe (every request together)
TEXT = "What is this?"
TRUST_FLAG = "--trust-request-mm-kwargs"

# Every verdict the probe gives, key → the plain words (some get numbers appended).
VERDICTS: dict[str, str] = {
    "matches": "matches",
    "squashed": "squashed to a square (3n-style)",
    "fixed": "fixed count whatever the size",
    "budget_ignored": "budget ignored",
    "audio_dropped": "audio dropped",
    "audio_cut": "audio cut at 30 s",
    "video_frames": "video frames differ",
    "vllm_known": "matches vLLM's count, which parts from transformers here",
    "unknown": "unknown difference of {n} tokens",
    "budget_refused": f"budget refused: server not started with {TRUST_FLAG}",
    "failed": "failed",
    "not_sent": "not sent",
}


@dataclass(frozen=True)
class ProbeCase:
    """One probed item: what the reference says it costs, what the server counted, and
    the verdict in words."""

    name: str  # what was sent, e.g. "image 640×480 px (W×H) at 70"
    modality: str  # "image", "audio", "video" or "knob" (the budget knob alone)
    budget: int | None  # the max_soft_tokens sent in mm_processor_kwargs (None: none sent)
    expected: int  # prompt tokens the item adds, by transformers' rules (our plans)
    vllm_expected: int  # the same by vLLM's own arithmetic (plans/vllm.py), as vllm_version counts
    # What each known fault would make the server count (fault key → tokens), so the
    # verdict is a lookup, and a reader sees why a fault was or was not named.
    predictions: dict[str, int] = field(default_factory=dict, compare=False)
    measured: int | None = None  # usage.prompt_tokens minus the baseline's (None: no answer)
    verdict: str = "not_sent"  # a key of VERDICTS
    words: str = VERDICTS["not_sent"]  # the verdict in plain words, with its numbers
    note: str | None = None  # a known vLLM-vs-transformers difference that applies here
    seconds: float = 0.0  # the request's wall time
    frames: int | None = None  # video: frames the reference samples
    # video: tokens one frame adds (soft tokens, two markers, "mm:ss " and a joining space)
    frame_cost: int | None = None
    steps: tuple[str, ...] = field(default=(), compare=False)  # how expected was derived
    body: dict[str, Any] | None = field(default=None, compare=False, repr=False)  # the request
    # The vLLM release whose arithmetic vllm_expected and the notes follow (the placeholder
    # counts are the same in every supported release; the name says which was checked).
    vllm_version: str = ""


@dataclass(frozen=True)
class ProbeResult:
    """A whole probe: the server, the baseline, every case, and a failure line when the
    probe had to stop (unreachable, no usage, a model not served, a timeout)."""

    spec: FamilySpec = field(repr=False)  # the family whose reference was used
    url: str  # the base URL, ending in /v1
    model: str  # the model id sent
    baseline: int | None  # usage.prompt_tokens of the text-only message
    cases: tuple[ProbeCase, ...]
    failure: str | None  # one line; None when every request got an answer
    requests: int  # requests sent (the model list included)
    seconds: float  # wall time of the whole probe
    steps: tuple[str, ...] = field(default=(), compare=False)
    vllm_version: str = ""  # the vLLM release whose arithmetic the "vLLM" column follows
    failure_kind: str | None = None  # the failure's kind (a ServerFault's), for code

    @property
    def stopped(self) -> bool:
        """The probe failed before any case was counted: ``failure`` is all it has to say."""
        return self.failure is not None and all(c.measured is None for c in self.cases)

    @property
    def family(self) -> str:
        """The family's name, read off ``spec``."""
        return self.spec.name

    @property
    def vllm_label(self) -> str:
        """How the table names the release: the profile's label."""
        return PROFILES[self.vllm_version].label if self.vllm_version in PROFILES else "vLLM"

    @property
    def ok(self) -> bool:
        """No failure, and every case matches the reference or counts as the release's own
        arithmetic is known to (its differences from transformers, named in the notes)."""
        return self.failure is None and all(
            c.verdict in ("matches", "vllm_known")
            or (c.measured is not None and c.measured == c.vllm_expected)
            for c in self.cases
        )

    def table(self) -> Table:
        return probe_table(self)

    def __repr__(self) -> str:
        return self.table().text()


# ------------------------------------------------------------------- the media sent


def _image(h: int, w: int) -> Any:
    """A deterministic RGB image: two gradients and a diagonal stripe pattern."""
    from PIL import Image

    yy, xx = np.mgrid[0:h, 0:w]
    rgb = np.stack([xx * 255 // max(w - 1, 1), yy * 255 // max(h - 1, 1), (xx + yy) % 64 * 4], -1)
    return Image.fromarray(rgb.astype(np.uint8))


def _clip(seconds: float, rate: int) -> np.ndarray:
    """A deterministic clip: a 440 Hz tone with a slow vibrato, mono float32."""
    t = np.arange(int(round(seconds * rate))) / rate
    return (0.3 * np.sin(2 * np.pi * (440 * t + 3 * np.sin(2 * np.pi * 0.5 * t)))).astype(
        np.float32
    )


def _frames(count: int, size: tuple[int, int]) -> np.ndarray:
    """``count`` frames of a bar moving right, (frames, height, width, RGB)."""
    h, w = size
    frames = np.zeros((count, h, w, 3), np.uint8)
    for i in range(count):
        x = (i * 7) % max(w - 8, 1)
        frames[i, :, x : x + 8] = (255, 128, 0)
    return frames


# ------------------------------------------------------------------- the reference


def _merge(spec: FamilySpec) -> int:
    """Tokens the item's opening wrapper merges away (3n: "\\n" + "\\n\\n" → one token)."""
    return 1 if spec.wraps_in_newlines else 0


def _merge_step(spec: FamilySpec) -> tuple[str, ...]:
    if not spec.wraps_in_newlines:
        return ()
    return (
        "The item follows the template's 'user\\n': its opening '\\n\\n' merges with that "
        "'\\n' into one '\\n\\n\\n' token (transformers and vLLM alike): −1.",
    )


def _image_case(
    spec: FamilySpec, hw: tuple[int, int], budget: int | None
) -> tuple[ProbeCase, list[dict]]:
    h, w = hw
    plan = plan_image(hw, family=spec, max_soft_tokens=budget)
    merge, markers = _merge(spec), spec.markers_per_item
    expected = plan.total_tokens - merge
    predictions: dict[str, int] = {}
    if spec.image.budgets:
        at = budget or spec.image.default_budget
        vllm = vllm_image_tokens(h, w, max_soft_tokens=at, family=spec) + markers - merge
        side = max(h, w)
        square = plan_image((side, side), family=spec, max_soft_tokens=budget)
        predictions["squashed"] = square.total_tokens - merge
        if budget is not None and budget != spec.image.default_budget:
            predictions["budget_ignored"] = plan_image(hw, family=spec).total_tokens - merge
    else:
        vllm = spec.image.fixed_soft_tokens + markers - merge
    name = f"image {size_label(hw)}" + (f" at {budget}" if budget is not None else "")
    msg = [{"type": "image", "image": _image(h, w)}]
    steps = (*plan.steps, *_merge_step(spec))
    return ProbeCase(name, "image", budget, expected, vllm, predictions, steps=steps), msg


def _audio_case(spec: FamilySpec, seconds: float) -> tuple[ProbeCase, list[dict]]:
    rate = spec.audio.sampling_rate
    wave = _clip(seconds, rate)
    n = int(wave.shape[0])
    merge, markers = _merge(spec), spec.markers_per_item
    plan = plan_audio(n, family=spec)
    expected = plan.total_tokens - merge
    vllm = vllm_audio_tokens(n, family=spec) + markers - merge
    cut = 30 * rate
    predictions = {"audio_cut": plan_audio(min(n, cut), family=spec).total_tokens - merge}
    predictions["audio_dropped"] = markers + 1  # at most the markers and one placeholder
    msg = [{"type": "audio", "audio": (wave, rate)}]
    case = ProbeCase(
        f"audio {seconds:g} s ({n} samples)",
        "audio",
        None,
        expected,
        vllm,
        predictions,
        steps=(*plan.steps, *_merge_step(spec)),
    )
    return case, msg


def _video_case(
    spec: FamilySpec, video: tuple[int, float, tuple[int, int]]
) -> tuple[ProbeCase, list[dict]]:
    count, fps, (h, w) = video
    plan = plan_video(count, fps=fps, frame_size=(h, w), family=spec)
    limit = spec.image.max_video_frames
    sampled = len(plan.frame_indices)
    # vLLM decodes the file itself: np.linspace over the frames, at most 32 (its opencv
    # loader), then stamps each frame index / the file's fps.
    if count <= limit:
        v_idx = list(range(count))
    else:
        v_idx = np.linspace(0, count - 1, limit, dtype=int).tolist()
    stamps = vllm_video_timestamps(len(v_idx), metadata={"fps": fps, "frames_indices": v_idx})
    per = vllm_image_tokens(h, w, max_soft_tokens=spec.image.video_budget, family=spec)
    vllm = len(v_idx) * (per + spec.markers_per_item) + timestamp_tokens(stamps.timestamps)
    note = None
    if stamps.timestamps != plan.timestamps:
        differ = sum(a != b for a, b in zip(stamps.timestamps, plan.timestamps, strict=False))
        note = (
            f"vLLM samples np.linspace(0, {count - 1}, {limit}) frames where transformers takes "
            f"i × {count} // {limit}: {differ} of the {sampled} timestamps differ (vLLM "
            f"{' '.join(stamps.timestamps[-3:])}; transformers {' '.join(plan.timestamps[-3:])}, "
            "the last three), the count does not (vllm-project/vllm#46988)"
        )
    frames = _frames(count, (h, w))
    msg = [{"type": "video", "video": frames, "fps": fps}]
    name = f"video {count} frames at {fps:g} fps, {size_label((h, w))}"
    cost = plan.soft_tokens_per_frame + spec.markers_per_item + 7
    case = ProbeCase(name, "video", None, plan.total_tokens, vllm, {}, note=note, steps=plan.steps)
    case = replace(case, frames=sampled, frame_cost=cost)
    return case, msg


def _knob_case(spec: FamilySpec) -> tuple[ProbeCase, list[dict]]:
    """The text-only message again, with a budget in mm_processor_kwargs: 0 tokens more
    where the server takes the knob; a 400 naming the flag where it does not."""
    step = (
        f"The baseline with mm_processor_kwargs {{'max_soft_tokens': "
        f"{spec.image.default_budget}}}: a text-only prompt, so 0 tokens more.",
    )
    case = ProbeCase("budget knob (mm_processor_kwargs)", "knob", spec.image.default_budget, 0, 0)
    return replace(case, steps=step), []


def plan_probe(
    family: str | FamilySpec,
    *,
    images: tuple[tuple[int, int], ...] = DEFAULT_IMAGES,
    clips: tuple[float, ...] = DEFAULT_CLIPS,
    budgets: tuple[int, ...] | None = None,
    video: tuple[int, float, tuple[int, int]] | None = DEFAULT_VIDEO,
    vllm_version: str | None = None,
) -> tuple[ProbeCase, ...]:
    """The cases a probe sends, with their reference costs (no request is made).

    ``images`` are (height, width); ``clips`` seconds; ``budgets`` the budgets sent for
    the first image that is not square (None: the family's smallest and largest; a family without budgets
    takes none); ``video`` (frames, fps, (height, width)) or None. A family without
    video sends none. Each case's ``vllm_expected`` is named by ``vllm_version``'s release
    (its ``vllm_version``). Raises ``ValueError`` for a budget the family does not have.
    """
    version = vllm_profile(vllm_version).version
    spec = get_family(family)
    if budgets is None:
        budgets = (min(spec.image.budgets), max(spec.image.budgets)) if spec.image.budgets else ()
    if budgets and not spec.image.budgets:
        raise ValueError(
            f"{spec.display_name} has no image budget: every image becomes "
            f"{spec.image.fixed_soft_tokens} soft tokens. Drop --budget."
        )
    cases: list[tuple[ProbeCase, list[dict]]] = [_image_case(spec, hw, None) for hw in images]
    if budgets:
        cases.append(_knob_case(spec))
        # a squash or an ignored budget shows on an image that is not square
        first = next((hw for hw in images if hw[0] != hw[1]), images[0] if images else (480, 640))
        cases += [_image_case(spec, first, _checked_budget(spec, b)) for b in budgets]
    if video is not None and spec.has_video:
        cases.append(_video_case(spec, video))
    cases += [_audio_case(spec, s) for s in clips]  # last: an audio crash spares the rest
    if len(cases) + 2 > MAX_REQUESTS:
        raise ValueError(
            f"That is {len(cases) + 2} requests; the probe sends at most {MAX_REQUESTS}. "
            "Give fewer --images, --clips or --budget values."
        )
    return tuple(replace(c, body={"content": m}, vllm_version=version) for c, m in cases)


def _checked_budget(spec: FamilySpec, budget: int) -> int:
    """A budget the family has, or a ``ValueError`` in the words of ``--budget``."""
    if budget not in spec.image.budgets:
        raise ValueError(
            f"--budget {budget} is not a {spec.display_name} budget: use one of "
            f"{', '.join(map(str, spec.image.budgets))}."
        )
    return budget


# ------------------------------------------------------------------- the requests


@dataclass(frozen=True)
class _Answer:
    """One request's outcome: prompt_tokens, or one line saying why not."""

    prompt_tokens: int | None
    error: str | None
    kind: str | None  # a ServerFault's kind, "refused_knob", or None
    seconds: float


def _fetch(
    base: str, path: str, body: dict | None, timeout: float, until: float
) -> tuple[Any, ServerFault | None, float]:
    """(the answer, None, seconds) or (None, what went wrong, seconds): one request, ended
    by ``timeout`` and by the probe's deadline ``until`` (``time.monotonic()``), its body
    read up to the cap."""
    left = until - time.monotonic()
    if left <= 0:
        return None, ServerFault("timeout", f"the probe's deadline passed before {path}"), 0.0
    seconds = min(timeout, left)
    start = time.perf_counter()
    with bounded_client(seconds, until=until) as client:
        try:
            if body is None:
                answer = client.get(base + path)
            else:
                data = json.dumps(body).encode()
                headers = {"Content-Type": "application/json"}
                answer = client.post(base + path, content=data, headers=headers)
        except Exception as exc:  # noqa: BLE001 - every failure becomes one line
            check = min(2.0, max(until - time.monotonic(), 0.0))
            fault = fault_from_exception(base, exc, seconds=seconds, tls_check_s=check)
            return None, fault, time.perf_counter() - start
    return answer, None, time.perf_counter() - start


def _post_chat(base: str, body: dict, timeout: float, until: float) -> _Answer:
    answer, fault, took = _fetch(base, "/chat/completions", body, timeout, until)
    if fault is None and answer.status_code == 400 and body.get("mm_processor_kwargs"):
        if TRUST_FLAG in error_message(answer.content):
            return _Answer(None, VERDICTS["budget_refused"], "refused_knob", took)
    if fault is None:
        data, fault = read_json(base, answer)
    if fault is None:
        fault = check_chat_answer(base, data, model=body["model"], usage=True)
    if fault is not None:
        return _Answer(None, fault.line, fault.kind, took)
    return _Answer(int(data["usage"]["prompt_tokens"]), None, None, took)


def _served_models(base: str, model: str, timeout: float, until: float) -> ServerFault | None:
    """What is wrong with the model list (an answer that is not one, a model not served),
    or None (a JSON error status: the chat answer will say)."""
    answer, fault, _ = _fetch(base, "/models", None, timeout, until)
    if fault is None:
        data, fault = read_json(base, answer)
    if fault is not None:
        return None if fault.kind == "status" else fault
    try:
        ids = [m["id"] for m in data["data"]]
    except (KeyError, TypeError):
        return ServerFault(
            "not_openai",
            f"the server at {base} answered /models with JSON that is not a model list, "
            "not vLLM's OpenAI API: check the port and that the URL ends in /v1",
        )
    if model not in ids:
        served = ", ".join(repr(str(i)) for i in ids[:5]) or "no model"
        return ServerFault(
            "model_not_served",
            f"the server at {base} serves {served}, not {model!r}: check the model name",
        )
    return None


def _body(model: str, spec: FamilySpec, content: list[dict], budget: int | None) -> dict:
    messages = [{"role": "user", "content": [*content, {"type": "text", "text": TEXT}]}]
    if not content and budget is not None:  # the knob alone: a text-only prompt
        body = chat_request(messages, model=model, family=spec, max_tokens=1)
        return body | {"mm_processor_kwargs": {"max_soft_tokens": budget}}
    return chat_request(messages, model=model, family=spec, max_tokens=1, max_soft_tokens=budget)


# ------------------------------------------------------------------- the verdicts


def _soft(spec: FamilySpec, cost: int) -> int:
    """Soft tokens in an image's cost (its markers and 3n's merge taken off)."""
    return cost - spec.markers_per_item + _merge(spec)


def _fixed_image_count(spec: FamilySpec, cases: list[ProbeCase]) -> int | None:
    """The one count every image got, when images of two sizes should differ at the same
    budget: a fixed count (one size probed at two budgets is an ignored budget instead)."""
    images = [c for c in cases if c.modality == "image" and c.measured is not None]
    if len(images) < 2 or len({c.measured for c in images}) != 1:
        return None
    if len({c.expected for c in images if c.budget is None}) < 2:  # two sizes, two counts
        return None
    return images[0].measured


def _explaining(cases: list[ProbeCase], fixed: int | None) -> list[str]:
    """The image faults that explain *every* image case (not only the ones that differ)."""
    images = [c for c in cases if c.modality == "image" and c.measured is not None]
    if not images or all(c.measured == c.expected for c in images):
        return []
    out = ["fixed"] if fixed is not None else []
    for key in ("squashed", "budget_ignored"):
        if all(c.measured == c.predictions.get(key, c.expected) for c in images):
            if key == "budget_ignored" and not any(key in c.predictions for c in images):
                continue
            out.append(key)
    return out


def _video_frames(case: ProbeCase) -> int | None:
    """Frames a video's cost stands for, when it is a whole number of frames: each frame
    costs its soft tokens, its two markers and 'mm:ss ' plus a joining space (7 tokens;
    the first frame has no joining space)."""
    if not case.frame_cost or case.measured is None or (case.measured + 1) % case.frame_cost:
        return None
    return (case.measured + 1) // case.frame_cost


def _words(key: str, spec: FamilySpec, case: ProbeCase, fixed: int | None) -> str:
    if key == "fixed":
        return f"{VERDICTS['fixed']} ({_soft(spec, fixed)} soft tokens)"
    if key == "budget_ignored":
        return f"{VERDICTS['budget_ignored']} (counted at the default {spec.image.default_budget})"
    if key == "video_frames":
        got, want = _video_frames(case), case.frames
        return f"{VERDICTS['video_frames']} ({got} frames; the reference samples {want})"
    if key == "unknown":
        return VERDICTS["unknown"].format(n=case.measured - case.expected)
    return VERDICTS[key]


def _key_for(spec: FamilySpec, case: ProbeCase, explaining: list[str]) -> str:
    """The verdict of one answered case: the reference first, then the named faults, then
    vLLM's own arithmetic, else an unknown difference."""
    m = case.measured
    if m == case.expected:
        return "matches"
    if case.modality == "image" and explaining:
        return explaining[0]
    if case.modality == "audio" and m <= case.predictions["audio_dropped"] < case.expected:
        return "audio_dropped"
    for key in ("audio_cut", "squashed", "budget_ignored"):
        if case.predictions.get(key) == m != case.expected:
            return key
    if case.modality == "video" and _video_frames(case) not in (None, 0, case.frames):
        return "video_frames"
    if m == case.vllm_expected:
        return "vllm_known"
    return "unknown"


def _vllm_note(spec: FamilySpec, case: ProbeCase, release: VllmProfile) -> str | None:
    """The known vLLM-vs-transformers difference behind a case, in words (None: none),
    naming the release whose arithmetic counted it."""
    if case.note or case.vllm_expected == case.expected:
        return case.note
    if case.modality == "audio" and spec.vllm_audio_rule:
        rule = get_family(spec.vllm_audio_rule).display_name
        why = (
            f"{release.label} counts {spec.display_name} audio with {rule}'s mel rule, capped "
            "at 750 (30 s): one placeholder fewer when samples % 640 is 1–160, nothing past "
            "30 s; transformers makes ceil(samples / 640) rows, and vLLM's runner drops the "
            "surplus (docs/parity.md)"
        )
    else:
        why = f"{release.label}'s own arithmetic (plans/vllm.py) counts differently here"
    return f"{why}: vLLM's count is {case.vllm_expected}, transformers' {case.expected}"


def _judge(spec: FamilySpec, cases: list[ProbeCase], release: VllmProfile) -> tuple[ProbeCase, ...]:
    fixed = _fixed_image_count(spec, cases)
    explaining = _explaining(cases, fixed)
    out = []
    for case in cases:
        note = _vllm_note(spec, case, release)
        if case.measured is None:
            out.append(replace(case, note=note))
            continue
        key = _key_for(spec, case, explaining)
        words = _words(key, spec, case, fixed)
        if key not in ("matches", "vllm_known") and case.measured == case.vllm_expected:
            words += f" — as {release.label} counts it too (a known difference: see the note)"
        if key == "fixed" and "squashed" in explaining:
            words += " (a square squash counts the same here: send a --budget to tell them apart)"
        out.append(replace(case, verdict=key, words=words, note=note))
    return tuple(out)


# ------------------------------------------------------------------- the probe


def _family_for(model: str, family: str | FamilySpec | None) -> FamilySpec:
    if family is not None:
        return get_family(family)
    found = family_from_name(model)
    if found is None:
        raise ValueError(
            f"Cannot tell the Gemma family of {model!r} from its name: pass --family "
            f"({', '.join(FAMILIES)})."
        )
    return found


def _base_url(url: str) -> str:
    base = url.rstrip("/")
    return base if base.endswith("/v1") else base + "/v1"


def _send(
    base: str,
    model: str,
    spec: FamilySpec,
    planned: tuple[ProbeCase, ...],
    timeout: float,
    until: float,
) -> tuple[list[ProbeCase], int, _Answer | None, int | None]:
    """Each planned case sent once; stops at the first answer that is not a count (a
    timeout, a lost server, an answer that is not vLLM's; the rest: not sent) other than
    a JSON error for that case alone. Returns (cases, requests sent, the answer that
    stopped the probe, the baseline's prompt tokens)."""
    baseline = _post_chat(base, _body(model, spec, [], None), timeout, until)
    if baseline.error:
        return list(planned), 1, baseline, None
    out, sent, stopped, refused = [], 1, None, False
    for case in planned:
        if stopped:
            out.append(case)
            continue
        if refused and case.budget is not None:
            out.append(replace(case, verdict="budget_refused", words=VERDICTS["budget_refused"]))
            continue
        body = _body(model, spec, case.body["content"], case.budget)
        answer = _post_chat(base, body, timeout, until)
        sent += 1
        case = replace(case, seconds=answer.seconds)
        if answer.kind == "refused_knob":
            refused = True
            out.append(replace(case, verdict="budget_refused", words=answer.error))
        elif answer.error and answer.kind == "status":
            out.append(replace(case, verdict="failed", words=answer.error))
        elif answer.error:
            stopped = answer
            out.append(replace(case, verdict="failed", words=answer.error))
        else:
            out.append(replace(case, measured=answer.prompt_tokens - baseline.prompt_tokens))
    return out, sent, stopped, baseline.prompt_tokens


def probe(
    url: str,
    *,
    model: str,
    family: str | FamilySpec | None = None,
    images: tuple[tuple[int, int], ...] = DEFAULT_IMAGES,
    clips: tuple[float, ...] = DEFAULT_CLIPS,
    budgets: tuple[int, ...] | None = None,
    video: tuple[int, float, tuple[int, int]] | None = DEFAULT_VIDEO,
    timeout: float = 120.0,
    deadline: float = DEFAULT_DEADLINE,
    vllm_version: str | None = None,
) -> ProbeResult:
    """Measure what a running OpenAI-compatible server counts for each case of
    :func:`plan_probe`, and give each a verdict (``VERDICTS``). vLLM's own count beside
    the reference is ``vllm_version``'s arithmetic (None: the installed vLLM, else the
    newest supported), and the result names that release.

    ``url`` is the server's base URL (``/v1`` added when missing); ``family`` is read
    from the model's name when not given. At most :data:`MAX_REQUESTS` requests, each
    bounded by ``timeout`` seconds and all of them by ``deadline`` seconds; each answer is
    read up to ``MAX_REPLY_BYTES``. A server that does not answer as vLLM's OpenAI API
    does (unreachable, a banner, an HTML page, no usage, a model not served, a timeout…)
    stops the probe with one line in ``failure``
    (:func:`~gemma_explore.engines.server_reply.fault_from_exception` and its kin: the
    same words the openai engine uses), and its kind in ``failure_kind``.

    >>> probe("http://127.0.0.1:9", model="google/gemma-4-E4B-it", timeout=2).failure_kind
    'refused'
    """
    release = vllm_profile(vllm_version)
    spec = _family_for(model, family)
    planned = plan_probe(
        spec,
        images=images,
        clips=clips,
        budgets=budgets,
        video=video,
        vllm_version=release.version,
    )
    base, start = _base_url(url), time.perf_counter()
    until = time.monotonic() + deadline
    fault = _served_models(base, model, timeout, until)
    baseline, stopped = None, None
    if fault:
        cases, sent = list(planned), 0
    else:
        cases, sent, stopped, baseline = _send(base, model, spec, planned, timeout, until)
        if stopped is not None:
            fault = ServerFault(stopped.kind or "failed", stopped.error or "")
    steps = (
        f"Baseline: the text-only message {TEXT!r}; each case adds one item before the text "
        "and reads its cost as usage.prompt_tokens minus the baseline's (max_tokens=1).",
        f"Reference: transformers' rules (gemma_explore.plans) for {spec.display_name}; "
        f"{release.label}'s own arithmetic beside it (plans/vllm.py; "
        f"{release.chosen_because}).",
    )
    return ProbeResult(
        spec=spec,
        url=base,
        model=model,
        baseline=baseline,
        cases=_judge(spec, cases, release),
        failure=fault.line if fault else None,
        requests=sent + 1,
        seconds=time.perf_counter() - start,
        steps=steps,
        vllm_version=release.version,
        failure_kind=fault.kind if fault else None,
    )


def check_knob(
    url: str,
    *,
    model: str,
    family: str | FamilySpec,
    budget: int,
    timeout: float = 120.0,
    vllm_version: str | None = None,
) -> ProbeCase:
    """The budget knob alone: the text-only message with ``mm_processor_kwargs``
    ``{"max_soft_tokens": budget}``, against the message without it. A server that takes
    the knob adds nothing ("matches"); ``vllm serve`` without ``--trust-request-mm-kwargs``
    answers 400 ("budget refused: …"). Works for any family: the knob is the server's.
    Both requests together end within ``2 × timeout`` seconds.
    """
    release = vllm_profile(vllm_version)
    spec = get_family(family)
    base = _base_url(url)
    until = time.monotonic() + 2 * timeout
    case = ProbeCase("budget knob (mm_processor_kwargs)", "knob", budget, 0, 0)
    case = replace(case, vllm_version=release.version)
    plain = _post_chat(base, _body(model, spec, [], None), timeout, until)
    if plain.error:
        return replace(case, verdict="failed", words=plain.error)
    answer = _post_chat(base, _body(model, spec, [], budget), timeout, until)
    if answer.kind == "refused_knob":
        return replace(case, verdict="budget_refused", words=answer.error, seconds=answer.seconds)
    if answer.error:
        return replace(case, verdict="failed", words=answer.error, seconds=answer.seconds)
    measured = answer.prompt_tokens - plain.prompt_tokens
    judged = replace(case, measured=measured, seconds=answer.seconds)
    return _judge(spec, [judged], release)[0]


# ------------------------------------------------------------------- the outputs


def probe_table(result: ProbeResult) -> Table:
    """The probe as a table: each case's reference, vLLM's count (the column names the
    release whose arithmetic it is), the server's, the verdict; the notes name known vLLM
    differences and any failure."""
    header = ("case", "expected", result.vllm_label, "measured", "verdict")
    if result.stopped:  # nothing counted: the one line, not a row per case saying it again
        title = f"probe — {result.model} at {result.url}: stopped, nothing counted"
        return Table(header, (), title=title, notes=(f"failure: {result.failure}",))
    rows = tuple((c.name, c.expected, c.vllm_expected, c.measured, c.words) for c in result.cases)
    flagged = tuple(
        i for i, c in enumerate(result.cases) if c.verdict not in ("matches", "vllm_known")
    )
    notes = tuple(f"{c.name}: {c.note}" for c in result.cases if c.note)
    if result.failure:
        notes = (f"failure: {result.failure}", *notes)
    baseline = "" if result.baseline is None else f"baseline {result.baseline} prompt tokens, "
    title = (
        f"probe — {result.model} at {result.url} ({result.spec.display_name}; "
        f"{result.vllm_label}'s arithmetic; {baseline}"
        f"{result.requests} requests, {result.seconds:.1f} s)"
    )
    return Table(header, rows, title=title, flagged=flagged, notes=notes)


def probe_json(result: ProbeResult) -> str:
    """The probe as JSON, for CI (every case's numbers, verdict key and words)."""
    cases = [
        {
            "name": c.name,
            "modality": c.modality,
            "budget": c.budget,
            "expected": c.expected,
            "vllm_expected": c.vllm_expected,
            "measured": c.measured,
            "verdict": c.verdict,
            "words": c.words,
            "note": c.note,
            "seconds": round(c.seconds, 4),
        }
        for c in result.cases
    ]
    out = {
        "url": result.url,
        "model": result.model,
        "family": result.family,
        "vllm_version": result.vllm_version,
        "baseline": result.baseline,
        "failure": result.failure,
        "failure_kind": result.failure_kind,
        "ok": result.ok,
        "requests": result.requests,
        "seconds": round(result.seconds, 4),
        "cases": cases,
    }
    return json.dumps(out, indent=2, ensure_ascii=False)


def parse_sizes(text: str) -> tuple[tuple[int, int], ...]:
    """``--images 256x256,640x480`` (W×H each) as (height, width) pairs; "none": none.

    >>> parse_sizes("640x480,1x10")
    ((480, 640), (10, 1))
    """
    if text.strip().lower() == "none":
        return ()
    out = []
    for part in text.split(","):
        w, sep, h = part.strip().lower().replace("×", "x").partition("x")
        if not sep or not w.isdigit() or not h.isdigit() or int(w) < 1 or int(h) < 1:
            raise ValueError(f"--images takes W×H sizes like 640x480,256x256; got {part!r}.")
        out.append((int(h), int(w)))
    return tuple(out)


def parse_clips(text: str) -> tuple[float, ...]:
    """``--clips 5,35`` (seconds) as floats; "none": none.

    >>> parse_clips("5,35.5")
    (5.0, 35.5)
    """
    if text.strip().lower() == "none":
        return ()
    try:
        out = tuple(float(p) for p in text.split(","))
    except ValueError:
        raise ValueError(f"--clips takes seconds like 5,35; got {text!r}.") from None
    if any(not 0 < s <= 600 for s in out):
        raise ValueError(f"--clips takes lengths between 0 and 600 s; got {text!r}.")
    return out


def _parse_video(text: str) -> tuple[int, float, tuple[int, int]] | None:
    """``--video 40@8`` (frames at fps, 64×96 px frames); "none": no video."""
    if text.strip().lower() == "none":
        return None
    frames, sep, fps = text.partition("@")
    try:
        count, rate = int(frames), float(fps) if sep else DEFAULT_VIDEO[1]
    except ValueError:
        raise ValueError(f"--video takes FRAMES@FPS like 40@8, or none; got {text!r}.") from None
    if count < 1 or rate <= 0 or count > 1000:
        raise ValueError(f"--video takes 1 to 1000 frames at a positive fps; got {text!r}.")
    return count, rate, DEFAULT_VIDEO[2]


def probe_command_text(
    url: str,
    *,
    model: str,
    family: str | None = None,
    images: str | None = None,
    clips: str | None = None,
    budget: str | None = None,
    video: str | None = None,
    timeout: float = 120.0,
    deadline: float = DEFAULT_DEADLINE,
    as_json: bool = False,
    vllm_version: str | None = None,
) -> tuple[str, int]:
    """What ``gemma-explore probe`` prints, and its exit code (0: every case matches or
    names a known vLLM difference; 1: a fault, or a failure after some counts; 2: the
    server gave no count at all, and the text is its one line). Raises ``ValueError`` for
    bad flags, in the flags' words."""
    budgets = None
    if budget is not None:
        budgets = (
            ()
            if budget.strip().lower() == "none"
            else tuple(int(b) for b in budget.split(",") if b.strip().isdigit())
        )
        if budget.strip().lower() != "none" and len(budgets) != len(budget.split(",")):
            raise ValueError(f"--budget takes budgets like 70,1120, or none; got {budget!r}.")
    result = probe(
        url,
        model=model,
        family=family,
        images=DEFAULT_IMAGES if images is None else parse_sizes(images),
        clips=DEFAULT_CLIPS if clips is None else parse_clips(clips),
        budgets=budgets,
        video=DEFAULT_VIDEO if video is None else _parse_video(video),
        timeout=timeout,
        deadline=deadline,
        vllm_version=vllm_version,
    )
    if result.stopped:
        return (probe_json(result) if as_json else result.failure), 2
    text = probe_json(result) if as_json else probe_table(result).text()
    return text, 0 if result.ok else 1
