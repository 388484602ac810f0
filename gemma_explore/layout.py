"""PromptLayout: the prompt after expansion, described token by token.

``layout_prompt`` runs the bundle's real chat template and processor, then walks the
token ids and names every run: BOS, turn markers, BOI/EOI and BOA/EOA, soft-token
runs, video timestamps, Gemma 3n's ``"\\n\\n"`` wrappers and the newline tokens they
merged into. For each image, clip and video it records where its placeholders are,
which positions take embeddings, and the plan whose count they must equal.

A raw prompt (``template=False``) is laid out as vLLM's processor expands it, and where
transformers' ids differ (Gemma 3n's newline rules), ``divergences`` says how and why.
For vLLM's chat API, send media as content parts and let the template write the
placeholders: vLLM's Gemma 4 ``get_placeholder_str`` returns the Gemma 3n strings, which
only the ``string`` content format would put into the prompt (and then fails).

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
from .families import MAX_NEWLINE_RUN, NEWLINE_BASE_ID, WRAPPER, FamilySpec, get_family
from .plans import AudioPlan, ImagePlan, VideoPlan, plan_audio, plan_image, plan_video
from .prompting import PreparedInputs, prepare_inputs
from .vllm_rules import (
    vllm_adds_bos,
    vllm_audio_tokens,
    vllm_expand_gemma3n,
    vllm_replacement_length,
)

if TYPE_CHECKING:
    from .models.bundle import Bundle

__all__ = [
    "Divergence",
    "NewlineMerge",
    "Placeholder",
    "PromptLayout",
    "Segment",
    "layout_prompt",
]

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
    # How vLLM's placeholder search reads it (gemma3n_mm.py _find_mm_placeholders): it
    # always splits "\n\n\n" as ("\n", "\n\n") and "\n\n\n\n" as ("\n\n", "\n\n"),
    # and leaves longer runs whole, so a wrapper inside those is never found.
    parts: tuple[str, ...]
    note: str  # which wrapper(s) it holds

    @property
    def vllm_finds_wrapper(self) -> bool:
        """Can vLLM's search find the wrapper this token holds?"""
        opening = "opening" in self.note
        closing = "closing" in self.note
        if len(self.parts) == 1:
            return False
        return (not closing or self.parts[0] == WRAPPER) and (
            not opening or self.parts[-1] == WRAPPER
        )


@dataclass(frozen=True)
class Divergence:
    """Where vLLM's processor and transformers' part: a raw Gemma 3n prompt's newlines,
    or a Unified clip that vLLM counts with Gemma 4's mel rule."""

    rule: str  # what happens, in words
    seed_function: str  # where vLLM does it (gemma3n_mm.py)
    position: int  # index in the layout's input_ids where they part
    vllm_ids: tuple[int, ...] | None  # vLLM's tokens there (None: vLLM raises)
    transformers_ids: tuple[int, ...]  # transformers' tokens there
    error: str | None = None  # what vLLM raises, word for word


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
    template: bool = True  # False: a raw prompt, laid out as vLLM's processor expands it
    # Raw Gemma 3n prompts: where vLLM and transformers part (their ids, or vLLM's error).
    divergences: tuple[Divergence, ...] = ()
    warnings: tuple[str, ...] = ()  # e.g. a double <bos>
    # The ids vLLM's processor makes, where they differ from input_ids without vLLM
    # raising (Unified audio: vLLM counts fewer placeholders); None when they agree.
    vllm_input_ids: tuple[int, ...] | None = None

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
    def vllm_raises(self) -> bool:
        """A raw prompt vLLM's processor refuses; ``input_ids`` are then transformers'."""
        return any(d.error for d in self.divergences)

    @property
    def source(self) -> str:
        """Whose ids these are, in words."""
        if self.template:
            return "chat template"
        if self.vllm_raises:
            return "raw prompt: vLLM raises, so these are transformers' ids"
        if self.vllm_input_ids is not None:
            return "raw prompt: transformers' ids; vLLM's differ (see vllm_input_ids)"
        return "raw prompt, as vLLM expands it"

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
        for d in self.divergences:
            lines.append(f"  ⚠ vLLM ≠ transformers at {d.position}: {d.rule}")
            lines.append(
                f"      vLLM {d.error or _short(d.vllm_ids)} · transformers "
                f"{_short(d.transformers_ids)}"
            )
        lines += [f"  ⚠ {w}" for w in self.warnings]
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
        problems = "".join(
            f"<li><b>vLLM ≠ transformers at token {d.position}</b> ({html.escape(d.seed_function)}): "
            f"{html.escape(d.rule)}<br><code>vLLM: {html.escape(d.error or _short(d.vllm_ids))}"
            f"</code><br><code>transformers: {html.escape(_short(d.transformers_ids))}</code></li>"
            for d in self.divergences
        ) + "".join(f"<li>{html.escape(w)}</li>" for w in self.warnings)
        return (
            f"<div><b>PromptLayout — {self.family}, {self.num_tokens} tokens ({self.source})</b>"
            f"<div style='line-height:1.9'>{''.join(spans)}</div><small>{summary}</small>"
            + (f"<ul style='color:#b24000'>{problems}</ul>" if problems else "")
            + "</div>"
        )


def _short(ids: tuple[int, ...] | None) -> str:
    """An id list for a message: runs of one id shortened to ``id×count``."""
    if ids is None:
        return "—"
    parts: list[str] = []
    for i in ids:
        if parts and parts[-1].split("×")[0] == str(i):
            head, _, count = parts[-1].partition("×")
            parts[-1] = f"{head}×{int(count or 1) + 1}"
        else:
            parts.append(str(i))
    return "[" + ", ".join(parts) + "]"


_VLLM_SPLITS = {3: ("\n", "\n\n"), 4: ("\n\n", "\n\n")}  # _find_mm_placeholders' view


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
    template: bool = True,
    prepared: PreparedInputs | None = None,
    **processor_kwargs: Any,
) -> PromptLayout:
    r"""Run the real processor and describe the expanded prompt.

    ``template=True`` (the default) renders the chat template around a message list or
    text. ``template=False`` takes an already-templated prompt with one placeholder per
    item, exactly as vLLM's ``LLM.generate({"prompt": text, "multi_modal_data": …})``
    takes it, and lays out the ids vLLM's processor produces. Where those differ from
    transformers' (Gemma 3n's newline rules), ``divergences`` says how and why, or
    quotes the error vLLM raises.

    >>> layout = layout_prompt("<bos>Look\n<image_soft_token>\nWhat?", bundle=b3n,
    ...                        images=[photo], template=False)     # doctest: +SKIP
    >>> layout.divergences[0].error                               # doctest: +SKIP
    'RuntimeError: Expected there to be 1 prompt placeholders corresponding to 1 image items, …'
    """
    spec = get_family(bundle.family)
    if prepared is None:
        prepared = prepare_inputs(
            bundle, messages_or_text, images=images, audios=audios, videos=videos,
            max_soft_tokens=max_soft_tokens, template=template, **processor_kwargs,
        )  # fmt: skip
    ids = prepared.input_ids
    divergences: tuple[Divergence, ...] = ()
    found_by_vllm = None
    if not prepared.template and spec.wraps_in_newlines:
        ids, divergences, found_by_vllm = _vllm_raw_gemma3n(spec, bundle, prepared)
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
            # The space before a timestamp joins frames (it follows a frame's EOI); before
            # a video's first frame it is the prompt's own text.
            if tokens[q] == "▁" and (q == 0 or kinds[q - 1] != "eoi"):
                q += 1
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
                # vLLM's search view always splits "\n\n\n" as "\n" + "\n\n" and
                # "\n\n\n\n" as "\n\n" + "\n\n"; longer runs stay whole.
                parts = _VLLM_SPLITS.get(k, ("\n" * k,))
                merges.append(NewlineMerge(p, "\n" * k, parts, " + ".join(notes)))

    # Items, in order, per modality.
    counters = {"image": 0, "audio": 0, "video": 0}
    frames_per_video = [len(idx) for idx in prepared.video_frame_indices]
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
            # A video: its sampled frames, each "mm:ss <BOI><video>…<EOI>". Videos placed
            # side by side continue the same pattern, so each takes its own frame count.
            item = counters["video"]
            frames_left = frames_per_video[item] if item < len(frames_per_video) else n
            start, q = p, p
            while q < n and kinds[q] in ("timestamp", "boi", "video_soft", "eoi", "text"):
                if kinds[q] == "text" and not (q + 1 < n and kinds[q + 1] == "timestamp"):
                    break
                if kinds[q] == "eoi":
                    frames_left -= 1
                    if frames_left == 0:
                        q += 1
                        break
                q += 1
            runs.append(("video", item, start, q))
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

    ranges = found_by_vllm if found_by_vllm is not None else _vllm_ranges(spec, placeholders)
    vllm_ids = None
    if spec.vllm_audio_rule and not divergences:
        audio_divergences, vllm_ids, ranges = _vllm_audio_counts(spec, ids, placeholders)
        divergences = divergences + audio_divergences
    return PromptLayout(
        family=spec.name,
        text=prepared.text,
        input_ids=tuple(ids),
        tokens=tuple(tokens),
        segments=tuple(segments),
        placeholders=tuple(placeholders),
        newline_merges=tuple(merges),
        vllm_ranges=tuple(ranges),
        max_soft_tokens=prepared.max_soft_tokens,
        template=prepared.template,
        divergences=divergences,
        warnings=_bos_warnings(spec, bundle, ids, prepared),
        vllm_input_ids=vllm_ids,
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


def _vllm_audio_counts(
    spec: FamilySpec, ids: list[int], placeholders: list[Placeholder]
) -> tuple[tuple[Divergence, ...], tuple[int, ...] | None, list[tuple[str, int, int]]]:
    """Unified: vLLM writes its own audio count (Gemma 4's mel rule) into the prompt.

    Returns the divergences, vLLM's ids (None when equal) and vLLM's ranges, whose
    offsets shift after a clip that vLLM gives fewer placeholders.
    """
    out: list[int] = []
    ranges: list[tuple[str, int, int]] = []
    divergences = []
    at = 0
    audio_id = spec.id_of(spec.audio_token)
    for ph in placeholders:
        out += ids[at : ph.start]
        run = list(ids[ph.start : ph.start + ph.length])
        if ph.modality == "audio" and ph.plan is not None:
            v = vllm_audio_tokens(ph.plan.num_samples, family=spec)
            if v != ph.num_embeds:
                new_run = [run[0], *([audio_id] * v), run[-1]]
                divergences.append(
                    Divergence(
                        rule=(
                            f"clip #{ph.item} ({ph.plan.num_samples} samples): the embedder "
                            f"gives {ph.num_embeds} rows (ceil(samples / 640)) but vLLM's "
                            f"prompt reserves {v} placeholders; vLLM's runner then drops "
                            f"{ph.num_embeds - v} rows without an error"
                        ),
                        seed_function=(
                            "gemma4_mm.py Gemma4ProcessingInfo._compute_audio_num_tokens "
                            "(inherited by gemma4_unified.py)"
                        ),
                        position=ph.start,
                        vllm_ids=tuple(new_run),
                        transformers_ids=tuple(run),
                    )
                )
                run = new_run
        ranges.append((ph.modality, len(out), len(run)))
        out += run
        at = ph.start + ph.length
    out += ids[at:]
    return tuple(divergences), (tuple(out) if divergences else None), ranges


# ------------------------------------------------------------ raw prompts through vLLM

_SEED = "gemma3n_mm.py"
_MERGES = "'\\n'+'\\n\\n', '\\n\\n'+'\\n' and '\\n\\n'+'\\n\\n'"


@dataclass(frozen=True)
class _Around:
    """The newline runs around one placeholder token of a raw prompt."""

    modality: str
    item: int
    before: int  # newlines in the token right before it (0 if not a newline run)
    after: int  # newlines in the token right after it
    next_is_item: bool  # only newlines stand between it and the next placeholder


def _around_placeholders(spec: FamilySpec, prompt_ids: list[int]) -> list[_Around]:
    targets = {spec.id_of(t): m for m, t in spec.placeholder_tokens.items()}
    out, counts = [], dict.fromkeys(spec.placeholder_tokens, 0)
    for p, tok in enumerate(prompt_ids):
        if tok not in targets:
            continue
        modality = targets[tok]
        before = _newlines_in(prompt_ids[p - 1]) if p > 0 else 0
        after = _newlines_in(prompt_ids[p + 1]) if p + 1 < len(prompt_ids) else 0
        q = p + 1
        while q < len(prompt_ids) and _newlines_in(prompt_ids[q]):
            q += 1
        next_is_item = q < len(prompt_ids) and prompt_ids[q] in targets and q > p + 1
        out.append(_Around(modality, counts[modality], before, after, next_is_item))
        counts[modality] += 1
    return out


def _runs(spec: FamilySpec, ids: list[int]) -> list[tuple[int, int]]:
    """(opener, closer) positions of each item's marker-delimited run."""
    openers = {spec.id_of(spec.boi_token), spec.id_of(spec.boa_token)}
    closers = {spec.id_of(spec.eoi_token), spec.id_of(spec.eoa_token)}
    out, start = [], None
    for p, tok in enumerate(ids):
        if tok in openers:
            start = p
        elif tok in closers and start is not None:
            out.append((start, p))
            start = None
    return out


def _gap_rule(around: list[_Around], gap: int) -> str:
    """Why the tokens between item ``gap - 1`` and item ``gap`` differ."""
    prev = around[gap - 1] if gap > 0 else None
    nxt = around[gap] if gap < len(around) else None
    if prev is not None and nxt is not None and prev.next_is_item:
        return (
            f"Newlines between {prev.modality} #{prev.item} and {nxt.modality} #{nxt.item}: vLLM "
            "expands both items first, then merges the wrappers with the newlines between "
            f"them pairwise, left to right (only {_MERGES}); transformers expands the text and "
            "tokenizes the whole run as one token."
        )
    rules = []
    if prev is not None and prev.after >= 3:
        rules.append(
            f"{prev.after} newlines after the {prev.modality} placeholder: vLLM merges only "
            f"{_MERGES} after expansion, so the closing '\\n\\n' and the {prev.after} newlines "
            f"stay two tokens; transformers tokenizes one run of {prev.after + 2}."
        )
    if nxt is not None and nxt.before >= 3:
        rules.append(
            f"{nxt.before} newlines before the {nxt.modality} placeholder: vLLM merges only "
            f"{_MERGES} after expansion, so they and the opening '\\n\\n' stay two tokens; "
            f"transformers tokenizes one run of {nxt.before + 2}."
        )
    return " ".join(rules) or (
        f"vLLM merges only {_MERGES} after expansion; transformers tokenizes the expanded "
        "text, so the newline tokens here differ."
    )


def _window(ids: list[int], start: int, stop: int) -> tuple[int, ...]:
    return tuple(ids[max(start - 1, 0) : stop + 1])


def _gap_divergences(
    spec: FamilySpec, v_ids: list[int], t_ids: list[int], around: list[_Around]
) -> tuple[Divergence, ...]:
    v_runs, t_runs = _runs(spec, v_ids), _runs(spec, t_ids)
    bounds_v = [-1] + [c for _, c in v_runs], [o for o, _ in v_runs] + [len(v_ids)]
    bounds_t = [-1] + [c for _, c in t_runs], [o for o, _ in t_runs] + [len(t_ids)]
    out = []
    for gap, (vs, ve, ts, te) in enumerate(zip(*bounds_v, *bounds_t, strict=True)):
        v_gap, t_gap = v_ids[vs + 1 : ve], t_ids[ts + 1 : te]
        if v_gap == t_gap:
            continue
        head = 0
        while head < min(len(v_gap), len(t_gap)) and v_gap[head] == t_gap[head]:
            head += 1
        tail = 0
        while (
            tail < min(len(v_gap), len(t_gap)) - head
            and v_gap[len(v_gap) - 1 - tail] == t_gap[len(t_gap) - 1 - tail]
        ):
            tail += 1
        v_at, t_at = vs + 1 + head, ts + 1 + head
        out.append(
            Divergence(
                rule=_gap_rule(around, gap),
                seed_function=f"{_SEED}: _apply_token_matches",
                position=v_at,
                vllm_ids=_window(v_ids, v_at, ve - tail),
                transformers_ids=_window(t_ids, t_at, te - tail),
            )
        )
    return tuple(out)


def _vllm_raw_gemma3n(
    spec: FamilySpec, bundle: Bundle, prepared: PreparedInputs
) -> tuple[list[int], tuple[Divergence, ...], tuple[tuple[str, int, int], ...] | None]:
    """vLLM's ids for a raw Gemma 3n prompt, and where they differ from transformers'."""
    tokenizer = bundle.processor.tokenizer
    has_template = getattr(tokenizer, "chat_template", None) is not None
    add_bos = vllm_adds_bos(spec, has_chat_template=has_template)
    prompt_ids = tokenizer(prepared.text, add_special_tokens=add_bos)["input_ids"]
    items = {m: n for m, n in (("image", len(prepared.images)), ("audio", len(prepared.audios)))}
    items = {m: n for m, n in items.items() if n}
    expansion = vllm_expand_gemma3n(spec, prompt_ids, items)
    t_ids = prepared.input_ids
    around = _around_placeholders(spec, prompt_ids)
    if expansion.error is not None:
        # The item whose closing wrapper vLLM loses: a lone "\n" after it, unless another
        # placeholder follows at once (then "\n" + "\n\n" merge first and nothing is lost).
        lost = next((a for a in around if a.after == 1 and not a.next_is_item), None)
        runs = _runs(spec, t_ids)
        index = around.index(lost) if lost is not None else 0
        closer = runs[index][1] if index < len(runs) else 0
        rule = (
            f"A single '\\n' right after {lost.modality} #{lost.item}'s placeholder: vLLM merges "
            "the closing "
            "'\\n\\n' with it into '\\n\\n\\n', then its placeholder search always splits "
            "'\\n\\n\\n' as '\\n' + '\\n\\n', so it never finds the closing wrapper and raises. "
            "transformers runs. Write no newline or two ('\\n\\n') after the placeholder."
            if lost is not None and lost.after == 1
            else "vLLM cannot find every item's replacement in its expanded prompt."
        )
        divergence = Divergence(
            rule=rule,
            seed_function=f"{_SEED}: _apply_token_matches, _find_mm_placeholders",
            position=closer,
            vllm_ids=None,
            transformers_ids=tuple(t_ids[closer : closer + 2]),
            error=expansion.error,
        )
        return t_ids, (divergence,), ()
    v_ids = list(expansion.ids)
    if v_ids == t_ids:
        return t_ids, (), expansion.placeholders
    return v_ids, _gap_divergences(spec, v_ids, t_ids, around), expansion.placeholders


def _bos_warnings(
    spec: FamilySpec, bundle: Bundle, ids: list[int], prepared: PreparedInputs
) -> tuple[str, ...]:
    bos = spec.id_of(spec.bos_token)
    if ids[:2] == [bos, bos]:
        return (
            "The prompt starts with two <bos> tokens, which the model never saw in training. "
            + (
                "vLLM prepends <bos> to this family's text prompts, and the text already starts "
                "with '<bos>': drop it from the text."
                if vllm_adds_bos(spec)
                else "Drop one '<bos>' from the text."
            ),
        )
    if ids[:1] != [bos]:
        return (
            "The prompt has no <bos>. vLLM does not add one to "
            f"{spec.display_name} text prompts when the checkpoint has a chat template: "
            "start the text with '<bos>'.",
        )
    return ()
