"""PromptLayout: the prompt after expansion, described token by token.

``layout_prompt`` runs the bundle's real chat template and processor, then walks the
token ids and names every run: BOS, turn markers, BOI/EOI and BOA/EOA, soft-token
runs, video timestamps, Gemma 3n's ``"\\n\\n"`` wrappers and the newline tokens they
merged into. For each image, clip and video it records where its placeholders are,
which positions take embeddings, and the plan whose count they must equal.

>>> import gemma_explore as ge
>>> layout = ge.layout_prompt("Describe.", bundle=ge.load("tiny-gemma4"),
...                           images=[(480, 640)])              # doctest: +SKIP
>>> layout.placeholders[0].num_embeds                          # doctest: +SKIP
280
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .colors import kind_color
from .families import MAX_NEWLINE_RUN, NEWLINE_BASE_ID, FamilySpec, get_family
from .plans import AudioPlan, ImagePlan, VideoPlan, plan_audio, plan_image, plan_video
from .prompting import PreparedInputs, prepare_inputs
from .vllm_rules import vllm_replacement_length

if TYPE_CHECKING:
    from .models.bundle import Bundle

__all__ = ["NewlineMerge", "Placeholder", "PromptLayout", "Segment", "layout_prompt"]

SEGMENT_KINDS = (
    "bos", "turn_start", "turn_end", "text", "newline", "newline_merge",
    "boi", "image_soft", "eoi", "boa", "audio_soft", "eoa", "video_soft", "timestamp",
)  # fmt: skip
# A run that opens with this marker: (modality, soft-token kind, closing marker).
_IMAGE_OR_AUDIO = {"boi": ("image", "image_soft", "eoi"), "boa": ("audio", "audio_soft", "eoa")}
_TIMESTAMP = re.compile(r"^▁?\d\d:\d\d▁?$")


@dataclass(frozen=True)
class Segment:
    """A run of tokens of one kind."""

    kind: str  # one of SEGMENT_KINDS
    start: int  # index of the first token in input_ids
    length: int
    item: int | None  # which image / clip / video (per modality), None for text
    text: str  # the run's token strings, long runs shortened

    @property
    def end(self) -> int:
        return self.start + self.length


@dataclass(frozen=True)
class Placeholder:
    """Where one item's embeddings go (positions in input_ids)."""

    modality: str  # "image", "audio" or "video"
    item: int  # index within its modality
    start: int  # first token of the item's run, markers (and 3n wrappers) included
    length: int  # tokens of the run in input_ids
    is_embed: tuple[bool, ...]  # per token of the run: does it take an embedding?
    num_embeds: int  # soft-token placeholders = embeddings the encoder must give
    expected: int | None  # what the plan says the encoder gives (None: no item to plan)
    plan: ImagePlan | AudioPlan | VideoPlan | None = field(compare=False, repr=False)

    @property
    def agrees(self) -> bool:
        return self.num_embeds == self.expected

    @property
    def embed_positions(self) -> list[int]:
        return [self.start + i for i, e in enumerate(self.is_embed) if e]


@dataclass(frozen=True)
class NewlineMerge:
    """A Gemma 3n newline token that holds a wrapper and a neighbouring newline."""

    position: int  # index in input_ids
    token: str  # e.g. "\n\n\n"
    parts: tuple[str, ...]  # what vLLM splits it back into, e.g. ("\n", "\n\n")
    note: str  # which wrapper(s) it holds


@dataclass(frozen=True)
class PromptLayout:
    """The expanded prompt of one chat turn."""

    family: str
    text: str  # chat template output, before expansion
    input_ids: tuple[int, ...]
    tokens: tuple[str, ...]  # token strings
    segments: tuple[Segment, ...]
    placeholders: tuple[Placeholder, ...]
    newline_merges: tuple[NewlineMerge, ...]  # Gemma 3n only
    vllm_ranges: tuple[tuple[str, int, int], ...]  # (modality, offset, length) as vLLM finds them
    max_soft_tokens: int | None  # Gemma 4 image budget used

    def counts(self) -> dict[str, int]:
        """Tokens per segment kind."""
        c: Counter[str] = Counter()
        for s in self.segments:
            c[s.kind] += s.length
        return dict(c)

    @property
    def num_tokens(self) -> int:
        return len(self.input_ids)

    @property
    def agrees(self) -> bool:
        return all(p.agrees for p in self.placeholders)

    def __repr__(self) -> str:
        lines = [f"PromptLayout[{self.family}] {self.num_tokens} tokens"]
        for s in self.segments:
            item = "" if s.item is None else f" #{s.item}"
            lines.append(f"  {s.start:>6} +{s.length:<5} {s.kind}{item}: {s.text}")
        for p in self.placeholders:
            mark = "✓" if p.agrees else "✗"
            lines.append(
                f"  {mark} {p.modality} #{p.item}: tokens {p.start}–{p.start + p.length - 1}, "
                f"{p.num_embeds} embeddings (plan {p.expected})"
            )
        for m in self.newline_merges:
            lines.append(
                f"  newline merge at {m.position}: {m.token!r} = {' + '.join(map(repr, m.parts))} ({m.note})"
            )
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        spans = []
        for s in self.segments:
            color = kind_color(s.kind)
            ids = self.input_ids[s.start : s.end]
            title = html.escape(
                f"{s.kind} #{s.item} @{s.start}+{s.length}: ids {list(ids[:8])}"
                + ("…" if s.length > 8 else "")
            )
            label = html.escape(s.text if len(s.text) < 40 else s.text[:37] + "…")
            spans.append(
                f"<span title='{title}' style='background:{color};padding:1px 3px;margin:1px;"
                f"border-radius:3px;display:inline-block;font-family:monospace;font-size:12px'>"
                f"{label}</span>"
            )
        summary = ", ".join(f"{k}: {v}" for k, v in self.counts().items())
        return (
            f"<div><b>PromptLayout — {self.family}, {self.num_tokens} tokens</b>"
            f"<div style='line-height:1.9'>{''.join(spans)}</div><small>{summary}</small></div>"
        )


def _show(token: str) -> str:
    return token.replace("▁", " ").encode("unicode_escape").decode("ascii")


def _newlines_in(token_id: int) -> int:
    k = token_id - NEWLINE_BASE_ID
    return k if 1 <= k <= MAX_NEWLINE_RUN else 0


def layout_prompt(
    messages_or_text: Any,
    *,
    bundle: Bundle,
    images: Any = (),
    audios: Any = (),
    videos: Any = (),
    max_soft_tokens: int | None = None,
    prepared: PreparedInputs | None = None,
    **processor_kwargs: Any,
) -> PromptLayout:
    """Run the real chat template and processor; describe the expanded prompt."""
    spec = get_family(bundle.family)
    if prepared is None:
        prepared = prepare_inputs(
            bundle, messages_or_text, images=images, audios=audios, videos=videos,
            max_soft_tokens=max_soft_tokens, **processor_kwargs,
        )  # fmt: skip
    ids = prepared.input_ids
    tokens = bundle.processor.tokenizer.convert_ids_to_tokens(ids)
    idx = spec.id_of
    kind_of_id = {
        idx(spec.bos_token): "bos",
        idx(spec.turn_start): "turn_start",
        idx(spec.turn_end): "turn_end",
        idx(spec.boi_token): "boi",
        idx(spec.eoi_token): "eoi",
        idx(spec.boa_token): "boa",
        idx(spec.eoa_token): "eoa",
        idx(spec.image_token): "image_soft",
        idx(spec.audio_token): "audio_soft",
    }
    if spec.video_token:
        kind_of_id[idx(spec.video_token)] = "video_soft"
    kinds = [kind_of_id.get(i, "text") for i in ids]
    # A BOI that opens a run of video placeholders belongs to a video frame.
    n = len(ids)

    # Gemma 4 video: the "mm:ss " text before each frame's BOI is a timestamp.
    frame_bois = [p for p in range(n - 1) if kinds[p] == "boi" and kinds[p + 1] == "video_soft"]
    for p in frame_bois:
        q, acc = p, ""
        while q > 0 and kinds[q - 1] == "text" and len(acc) < 8:
            cand = tokens[q - 1] + acc
            if not re.fullmatch(r"[▁\d:]*", cand):
                break
            acc, q = cand, q - 1
        if _TIMESTAMP.match(acc):
            for r in range(q, p):
                kinds[r] = "timestamp"

    # Gemma 3n: the "\n\n" wrappers around each image/clip, possibly merged.
    merges: list[NewlineMerge] = []
    wrapper_of: dict[int, list[str]] = {}
    if spec.wraps_in_newlines:
        for p in range(n):
            if kinds[p] in ("boi", "boa") and p > 0 and _newlines_in(ids[p - 1]) >= 2:
                wrapper_of.setdefault(p - 1, []).append(f"opening wrapper of {kinds[p + 1][:5]}")
            if kinds[p] in ("eoi", "eoa") and p + 1 < n and _newlines_in(ids[p + 1]) >= 2:
                wrapper_of.setdefault(p + 1, []).append(f"closing wrapper of {kinds[p - 1][:5]}")
        for p, notes in sorted(wrapper_of.items()):
            k = _newlines_in(ids[p])
            kinds[p] = "newline" if k == 2 else "newline_merge"
            if k > 2:
                # vLLM splits "\n\n\n" into "\n"+"\n\n" (or "\n\n"+"\n") and "\n\n\n\n" into
                # "\n\n"+"\n\n" to find the wrapper again.
                before_wrapper = any(n_.startswith("opening") for n_ in notes)
                if k == 4:
                    parts = ("\n\n", "\n\n")
                elif before_wrapper:
                    parts = ("\n" * (k - 2), "\n\n")
                else:
                    parts = ("\n\n", "\n" * (k - 2))
                merges.append(NewlineMerge(p, "\n" * k, parts, " + ".join(notes)))

    # Items, in order, per modality.
    counters = {"image": 0, "audio": 0, "video": 0}
    item_of = [None] * n
    runs: list[tuple[str, int, int, int]] = []  # (modality, item, start, end) incl. markers
    p = 0
    while p < n:
        k = kinds[p]
        opener = _IMAGE_OR_AUDIO.get(k)
        # BOI also opens video frames, so it needs an image placeholder next; BOA opens a
        # clip even when the clip is too short for any token.
        if opener and (k == "boa" or (p + 1 < n and kinds[p + 1] == opener[1])):
            modality, soft, close = opener
            q = p + 1
            while q < n and kinds[q] == soft:
                q += 1
            end = q + 1 if q < n and kinds[q] == close else q
            runs.append((modality, counters[modality], p, end))
            counters[modality] += 1
            p = end
        elif k == "timestamp" or (k == "boi" and p + 1 < n and kinds[p + 1] == "video_soft"):
            # A video: timestamps and frames until the last frame's EOI.
            start, q = p, p
            while q < n and kinds[q] in ("timestamp", "boi", "video_soft", "eoi", "text"):
                if kinds[q] == "text" and not (q + 1 < n and kinds[q + 1] == "timestamp"):
                    break
                q += 1
            runs.append(("video", counters["video"], start, q))
            counters["video"] += 1
            p = q
        else:
            p += 1
    for _modality, item, start, end in runs:
        for r in range(start, end):
            item_of[r] = item

    # 3n: the wrappers belong to the run; include them in the placeholder span.
    placeholders = []
    plans = _plans_for(spec, prepared)
    for modality, item, start, end in runs:
        s, e = start, end
        if spec.wraps_in_newlines:
            if s - 1 in wrapper_of:
                s -= 1
            if e in wrapper_of:
                e += 1
        soft = {"image": "image_soft", "audio": "audio_soft", "video": "video_soft"}[modality]
        mask = tuple(kinds[r] == soft for r in range(s, e))
        plan = plans[modality][item] if item < len(plans[modality]) else None
        expected = _expected(modality, plan)
        placeholders.append(Placeholder(modality, item, s, e - s, mask, sum(mask), expected, plan))

    # Segments: maximal runs of one kind (and one item).
    segments = []
    p = 0
    while p < n:
        q = p + 1
        while q < n and kinds[q] == kinds[p] and item_of[q] == item_of[p] and kinds[p] not in (
            "boi", "eoi", "boa", "eoa", "bos", "turn_start", "turn_end", "newline", "newline_merge",
        ):  # fmt: skip
            q += 1
        run_tokens = tokens[p:q]
        if q - p > 3 and kinds[p].endswith("_soft"):
            label = f"{run_tokens[0]} × {q - p}"
        else:
            label = "".join(_show(t) for t in run_tokens)
        item = item_of[p] if kinds[p] != "text" else None
        segments.append(Segment(kinds[p], p, q - p, item, label))
        p = q

    return PromptLayout(
        family=spec.name,
        text=prepared.text,
        input_ids=tuple(ids),
        tokens=tuple(tokens),
        segments=tuple(segments),
        placeholders=tuple(placeholders),
        newline_merges=tuple(merges),
        vllm_ranges=tuple(_vllm_ranges(spec, placeholders)),
        max_soft_tokens=prepared.max_soft_tokens,
    )


def _plans_for(spec: FamilySpec, prepared: PreparedInputs) -> dict[str, list]:
    budget = prepared.max_soft_tokens
    images = [plan_image(im, family=spec.name, max_soft_tokens=budget) for im in prepared.images]
    audios = [plan_audio(a, family=spec.name) for a in prepared.audios]
    videos = []
    for v, idx in zip(prepared.videos, prepared.video_frame_indices, strict=False):
        videos.append(plan_video(v, family=spec.name, max_frames=len(idx)))
    return {"image": images, "audio": audios, "video": videos}


def _expected(modality: str, plan: ImagePlan | AudioPlan | VideoPlan | None) -> int | None:
    if plan is None:
        return None
    if modality == "image":
        return plan.num_soft_tokens
    if modality == "audio":
        return plan.num_placeholders
    return plan.total_soft_tokens


def _vllm_ranges(spec: FamilySpec, placeholders: list[Placeholder]) -> list[tuple[str, int, int]]:
    """(modality, offset, length) as vLLM reports them.

    vLLM's offset is in input_ids; its length counts the item's replacement tokens. For
    Gemma 3n vLLM first splits merged newline tokens, matches the replacement
    ``"\\n\\n" BOI … EOI "\\n\\n"`` there, and maps the start back: the offset is the
    merged token's position, and the length (260 for an image) can then reach one
    token further than the run does in input_ids.
    """
    out = []
    for ph in placeholders:
        if spec.wraps_in_newlines:
            length = vllm_replacement_length(spec, ph.modality, ph.num_embeds)
            out.append((ph.modality, ph.start, length))
        else:
            out.append((ph.modality, ph.start, ph.length))
    return out
