"""PromptLayout: the prompt after expansion, described token by token.

``layout_prompt`` runs the bundle's real chat template and processor, then walks the
token ids and names every run: BOS, turn markers, BOI/EOI and BOA/EOA, soft-token
runs, video timestamps, Gemma 3n's ``"\\n\\n"`` wrappers and the newline tokens they
merged into. For each image, clip and video it records where its placeholders are,
which positions take embeddings, and the plan whose count they must equal.

A raw prompt (``template=False``) is laid out as vLLM's processor expands it, and where
transformers' ids differ (Gemma 3n's newline rules), ``divergences`` says how and why. A
raw prompt holds the family's own placeholder token (Gemma 4's ``<|image|>``, Gemma 3n's
``<image_soft_token>``): vLLM's processor looks for that token in every supported release.

For vLLM's chat API, send media as content parts and let the template write the
placeholders. Only the ``string`` content format types a placeholder into the text
itself, and it types what the release's ``get_placeholder_str`` returns, which the
release's profile holds (``vllm_profile(vllm_version).placeholder_str``): Gemma 3n's
class returns its own tokens, written before the message's text with one ``"\\n"``, and
vLLM's processor refuses a single ``"\\n"`` right after a Gemma 3n placeholder (one of
the newline rules ``divergences`` reports); Gemma 4's class returns Gemma 4's own tokens
in the releases whose profile says so, and Gemma 3n's strings in the others, which Gemma
4's processor never finds ("Failed to apply prompt replacement").
:func:`~gemma_explore.serving.interfaces.raw_prompt_placeholders` says it per release.

>>> import gemma_explore as ge
>>> layout = ge.layout_prompt("Describe.", bundle=ge.load("tiny-gemma4"),
...                           images=[(480, 640)])
>>> layout.placeholders[0].num_embeds
266
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gemma_explore.colors import kind_color
from gemma_explore.facts.families import WRAPPER, FamilySpec
from gemma_explore.plans.audio import AudioPlan, plan_audio
from gemma_explore.plans.image import ImagePlan, plan_image
from gemma_explore.plans.video import VideoPlan, plan_video
from gemma_explore.plans.vllm import (
    Divergence,
    newlines_in,
    vllm_adds_bos,
    vllm_audio_tokens,
    vllm_raw_divergences,
    vllm_replacement_length,
    vllm_search_parts,
)
from gemma_explore.processing.inputs import (
    LoadedModel,
    PreparedInputs,
    prepare_inputs,
    takes_inputs_of,
)

__all__ = [
    "Divergence",
    "NewlineMerge",
    "Placeholder",
    "PromptLayout",
    "Segment",
    "layout_prompt",
]

# Every kind a segment can have, and whether neighbouring tokens of that kind form one
# segment (text, soft tokens, timestamps: True) or each token stands alone (markers,
# turn tokens, newline wrappers: False). _segments reads it.
SEGMENT_KINDS: dict[str, bool] = {
    "bos": False,
    "turn_start": False,
    "turn_end": False,
    "text": True,
    "newline": False,
    "newline_merge": False,
    "boi": False,
    "image_soft": True,
    "eoi": False,
    "boa": False,
    "audio_soft": True,
    "eoa": False,
    "video_soft": True,
    "timestamp": True,
}
# A run that opens with this marker: (modality, soft-token kind, closing marker).
_IMAGE_OR_AUDIO = {"boi": ("image", "image_soft", "eoi"), "boa": ("audio", "audio_soft", "eoa")}
_TIMESTAMP = re.compile(r"^▁?\d\d:\d\d▁?$")


@dataclass(frozen=True)
class Segment:
    """A run of tokens of one kind."""

    kind: str  # a key of SEGMENT_KINDS
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
class PromptLayout:
    """The expanded prompt of one chat turn."""

    spec: FamilySpec = field(repr=False)  # the family whose processor expanded it
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

    @property
    def family(self) -> str:
        """The family's name ("gemma3n", "gemma4", "gemma4_unified"), read off ``spec``."""
        return self.spec.name

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
                f"      vLLM {d.error or short_ids(d.vllm_ids)} · transformers "
                f"{short_ids(d.transformers_ids)}"
            )
        lines += [f"  ⚠ {w}" for w in self.warnings]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return layout_html(self)


def _visible(token: str) -> str:
    return token.replace("▁", " ").encode("unicode_escape").decode("ascii")


# -- the walk: classify → timestamps → wrappers → runs → placeholders → segments -------


def _classify(spec: FamilySpec, ids: list[int]) -> list[str]:
    """Each id's kind from the family's special tokens; everything else is text."""
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
    return [kind_of_id.get(i, "text") for i in ids]


def _mark_timestamps(kinds: list[str], tokens: list[str]) -> list[str]:
    """Video frames: the "mm:ss " text before each frame's BOI is a timestamp."""
    kinds = list(kinds)
    n = len(kinds)
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
    return kinds


def _mark_wrappers(
    spec: FamilySpec, ids: list[int], kinds: list[str]
) -> tuple[list[str], dict[int, list[str]], list[NewlineMerge]]:
    """A family that wraps items in "\n\n" (Gemma 3n): find each wrapper, possibly merged
    with neighbouring newlines into one token. Returns the kinds, position → which
    wrapper(s) it holds, and the merged tokens as vLLM's search reads them."""
    if not spec.wraps_in_newlines:
        return kinds, {}, []
    kinds = list(kinds)
    n = len(ids)
    wrapper_of: dict[int, list[str]] = {}
    for p in range(n):
        if kinds[p] in ("boi", "boa") and p > 0 and newlines_in(ids[p - 1]) >= 2:
            wrapper_of.setdefault(p - 1, []).append(f"opening wrapper of {kinds[p + 1][:5]}")
        if kinds[p] in ("eoi", "eoa") and p + 1 < n and newlines_in(ids[p + 1]) >= 2:
            wrapper_of.setdefault(p + 1, []).append(f"closing wrapper of {kinds[p - 1][:5]}")
    merges = []
    for p, notes in sorted(wrapper_of.items()):
        k = newlines_in(ids[p])
        kinds[p] = "newline" if k == 2 else "newline_merge"
        if k > 2:
            merges.append(NewlineMerge(p, "\n" * k, vllm_search_parts(k), " + ".join(notes)))
    return kinds, wrapper_of, merges


def _marker_run_end(kinds: list[str], p: int, soft: str, close: str) -> int:
    """End (exclusive) of an image or clip run opened at ``p``: soft tokens, then the
    closing marker when there is one."""
    q = p + 1
    while q < len(kinds) and kinds[q] == soft:
        q += 1
    return q + 1 if q < len(kinds) and kinds[q] == close else q


def _video_run_end(kinds: list[str], p: int, frames: int) -> int:
    """End (exclusive) of a video opened at ``p``: ``frames`` frames of
    "mm:ss <BOI><video>…<EOI>", joined by text. Videos placed side by side continue the
    same pattern, so each takes its own frame count."""
    n, q = len(kinds), p
    while q < n and kinds[q] in ("timestamp", "boi", "video_soft", "eoi", "text"):
        if kinds[q] == "text" and not (q + 1 < n and kinds[q + 1] == "timestamp"):
            break
        if kinds[q] == "eoi":
            frames -= 1
            if frames == 0:
                return q + 1
        q += 1
    return q


def _item_runs(kinds: list[str], frames_per_video: list[int]) -> list[tuple[str, int, int, int]]:
    """(modality, item, start, end) of every item, markers included, in prompt order."""
    counters = {"image": 0, "audio": 0, "video": 0}
    runs: list[tuple[str, int, int, int]] = []
    n, p = len(kinds), 0
    while p < n:
        k = kinds[p]
        opener = _IMAGE_OR_AUDIO.get(k)
        # BOI also opens video frames, so it needs an image placeholder next; BOA opens a
        # clip even when the clip is too short for any token.
        if opener and (k == "boa" or (p + 1 < n and kinds[p + 1] == opener[1])):
            modality, soft, close = opener
            end = _marker_run_end(kinds, p, soft, close)
        elif k == "timestamp" or (k == "boi" and p + 1 < n and kinds[p + 1] == "video_soft"):
            modality, item = "video", counters["video"]
            end = _video_run_end(
                kinds, p, frames_per_video[item] if item < len(frames_per_video) else n
            )
        else:
            p += 1
            continue
        runs.append((modality, counters[modality], p, end))
        counters[modality] += 1
        p = end
    return runs


def _placeholders(
    spec: FamilySpec,
    kinds: list[str],
    runs: list[tuple[str, int, int, int]],
    wrapper_of: dict[int, list[str]],
    plans: dict[str, list],
) -> list[Placeholder]:
    """Each item's span (3n: its wrappers included), which of its tokens take embeddings,
    and what its plan says the encoder gives."""
    out = []
    for modality, item, start, end in runs:
        s = start - 1 if start - 1 in wrapper_of else start
        e = end + 1 if end in wrapper_of else end
        soft = f"{modality}_soft"
        mask = tuple(kinds[r] == soft for r in range(s, e))
        plan = plans[modality][item] if item < len(plans[modality]) else None
        out.append(
            Placeholder(modality, item, s, e - s, mask, sum(mask), _expected(modality, plan), plan)
        )
    return out


def _segments(kinds: list[str], item_of: list[int | None], tokens: list[str]) -> list[Segment]:
    """Maximal runs of one kind and one item (markers and wrappers stand alone)."""
    out = []
    n, p = len(kinds), 0
    while p < n:
        q = p + 1
        while (
            q < n and SEGMENT_KINDS[kinds[p]] and (kinds[q], item_of[q]) == (kinds[p], item_of[p])
        ):
            q += 1
        run_tokens = tokens[p:q]
        if q - p > 3 and kinds[p].endswith("_soft"):
            label = f"{run_tokens[0]} × {q - p}"
        else:
            label = "".join(_visible(t) for t in run_tokens)
        item = item_of[p] if kinds[p] != "text" else None
        out.append(Segment(kinds[p], p, q - p, item, label))
        p = q
    return out


@takes_inputs_of(prepare_inputs)
def layout_prompt(
    messages_or_text: Any,
    *,
    bundle: LoadedModel,
    prepared: PreparedInputs | None = None,
    **inputs: Any,
) -> PromptLayout:
    r"""Run the real processor and describe the expanded prompt: ``messages_or_text`` and
    the inputs (``images=``, ``max_soft_tokens=``, ``template=`` …) are
    :func:`prepare_inputs`' own, or ``prepared`` is its result, already made.

    ``template=True`` (the default) renders the chat template around a message list or
    text. ``template=False`` takes an already-templated prompt with one placeholder per
    item, exactly as vLLM's ``LLM.generate({"prompt": text, "multi_modal_data": …})``
    takes it, and lays out the ids vLLM's processor produces. Where those differ from
    transformers' (Gemma 3n's newline rules), ``divergences`` says how and why, or
    quotes the error vLLM raises.

    >>> import gemma_explore as ge
    >>> b3n = ge.load("tiny-gemma3n")
    >>> layout = layout_prompt("<bos>Look\n<image_soft_token>\nWhat?", bundle=b3n,
    ...                        images=[ge.sample_photo()], template=False)
    >>> layout.divergences[0].error[:80]
    'RuntimeError: Expected there to be 1 prompt placeholders corresponding to 1 imag'
    """
    spec = bundle.spec
    if prepared is None:
        prepared = prepare_inputs(messages_or_text, bundle=bundle, **inputs)
    ids, divergences, found_by_vllm = list(prepared.input_ids), (), None
    if not prepared.template and spec.wraps_in_newlines:
        ids, divergences, found_by_vllm = _vllm_raw_ids(spec, bundle, prepared)
    tokens = bundle.processor.tokenizer.convert_ids_to_tokens(ids)
    kinds = _mark_timestamps(_classify(spec, ids), tokens)
    kinds, wrapper_of, merges = _mark_wrappers(spec, ids, kinds)
    runs = _item_runs(kinds, [len(i) for i in prepared.video_frame_indices])
    item_of: list[int | None] = [None] * len(ids)
    for _modality, item, start, end in runs:
        item_of[start:end] = [item] * (end - start)
    placeholders = _placeholders(spec, kinds, runs, wrapper_of, _plans_for(spec, prepared))
    ranges = found_by_vllm if found_by_vllm is not None else _vllm_ranges(spec, placeholders)
    vllm_ids = None
    if spec.vllm_audio_rule and not divergences:
        audio_divergences, vllm_ids, ranges = _vllm_audio_counts(spec, ids, placeholders)
        divergences = divergences + audio_divergences
    return PromptLayout(
        spec=spec,
        text=prepared.text,
        input_ids=tuple(ids),
        tokens=tuple(tokens),
        segments=tuple(_segments(kinds, item_of, tokens)),
        placeholders=tuple(placeholders),
        newline_merges=tuple(merges),
        vllm_ranges=tuple(ranges),
        max_soft_tokens=prepared.max_soft_tokens,
        template=prepared.template,
        divergences=divergences,
        warnings=_bos_warnings(spec, bundle, ids, prepared),
        vllm_input_ids=vllm_ids,
    )


def _vllm_raw_ids(
    spec: FamilySpec, bundle: LoadedModel, prepared: PreparedInputs
) -> tuple[list[int], tuple[Divergence, ...], tuple[tuple[str, int, int], ...] | None]:
    """A raw prompt tokenized as ``LLM.generate`` tokenizes it, then vLLM's expansion of
    it and where that parts from transformers' (:func:`vllm_raw_divergences`)."""
    tokenizer = bundle.processor.tokenizer
    has_template = getattr(tokenizer, "chat_template", None) is not None
    add_bos = vllm_adds_bos(spec, has_chat_template=has_template)
    prompt_ids = tokenizer(prepared.text, add_special_tokens=add_bos)["input_ids"]
    items = {"image": len(prepared.images), "audio": len(prepared.audios)}
    items = {m: n for m, n in items.items() if n}
    return vllm_raw_divergences(spec, prompt_ids, list(prepared.input_ids), items)


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
        return plan.num_soft_tokens
    return plan.num_soft_tokens


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
                            f"gives {ph.num_embeds} rows (ceil(samples / {spec.audio.samples_per_token})) "
                            "but vLLM's "
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


def _bos_warnings(
    spec: FamilySpec, bundle: LoadedModel, ids: list[int], prepared: PreparedInputs
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


# --------------------------------------------------------------------------- HTML


def short_ids(ids: tuple[int, ...] | None) -> str:
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


def _span(layout: PromptLayout, segment) -> str:
    s = segment
    ids = layout.input_ids[s.start : s.end]
    title = html.escape(
        f"{s.kind} #{s.item} @{s.start}+{s.length}: ids {list(ids[:8])}"
        + ("…" if s.length > 8 else "")
    )
    label = html.escape(s.text if len(s.text) < 40 else s.text[:37] + "…")
    return (
        f"<span title='{title}' style='background:{kind_color(s.kind)};padding:1px 3px;"
        "margin:1px;border-radius:3px;display:inline-block;font-family:monospace;"
        f"font-size:12px'>{label}</span>"
    )


def _problems(layout: PromptLayout) -> str:
    return "".join(
        f"<li><b>vLLM ≠ transformers at token {d.position}</b> ({html.escape(d.seed_function)}): "
        f"{html.escape(d.rule)}<br><code>vLLM: {html.escape(d.error or short_ids(d.vllm_ids))}"
        f"</code><br><code>transformers: {html.escape(short_ids(d.transformers_ids))}</code></li>"
        for d in layout.divergences
    ) + "".join(f"<li>{html.escape(w)}</li>" for w in layout.warnings)


def layout_html(layout: PromptLayout) -> str:
    """The layout as an HTML fragment (what a notebook shows for a ``PromptLayout``)."""
    spans = "".join(_span(layout, s) for s in layout.segments)
    summary = ", ".join(f"{k}: {v}" for k, v in layout.counts().items())
    problems = _problems(layout)
    return (
        f"<div><b>PromptLayout — {layout.family}, {layout.num_tokens} tokens ({layout.source})</b>"
        f"<div style='line-height:1.9'>{spans}</div><small>{summary}</small>"
        + (f"<ul style='color:#b24000'>{problems}</ul>" if problems else "")
        + "</div>"
    )
