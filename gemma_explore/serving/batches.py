"""How vLLM's Gemma 4 batches a step's images through the vision tower (no GPU needed).

``Gemma4ForConditionalGeneration._process_image_input`` (``gemma4_mm.py``; the same in
every supported vLLM release, named ``_process_image_input_local`` where encoder data
parallelism wraps it):

1. **Buckets**: images are grouped by their number of patch rows (``budget × 9``: the
   processor pads each image to its budget), so one encoder call never pads across
   resolutions.
2. **Chunks**: each bucket is encoded in chunks of :func:`~gemma_explore.serving.encoder.
   encoder_chunk` images, free memory re-read before every bucket (the previous bucket's
   activations are still allocated).
3. The pooled, unpadded rows of all images are then projected in **one** batched call of
   the embedder.
4. With multimodal LoRA, every image is padded to ``max_soft_tokens × 9`` patches (the
   engine's budget) so all images form one batch, and an image with more patches fails
   with "exceeds the MM LoRA patch limit".

With multimodal LoRA, ``get_mm_lora_token_counts`` also tells the LoRA manager how many
tokens each item puts through the tower and the connector (:func:`lora_token_counts`):
an image its budget's patches (``max_soft_tokens × 9``, the padding above), a video its
frames' patch rows, an audio clip its soft tokens (from the padded features, one per 4
mel frames, when they are at hand).

>>> b = plan_image_batches([2520, 630, 2520], free_bytes=8 * 2**30, total_bytes=80 * 2**30)
>>> b.buckets, b.chunks
({2520: (0, 2), 630: (1,)}, ((0, 2), (1,)))
>>> lora_token_counts("image", num_embeds=280).tower_tokens
2520
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gemma_explore.serving.encoder import POSITION_EMBEDDING_SIZE, encoder_chunk
from gemma_explore.vllm_versions import vllm_profile

__all__ = ["ImageBatches", "LoraTokens", "lora_token_counts", "plan_image_batches"]

POOLING_AREA = 9  # 3 × 3 patches per soft token (Gemma 4's pooling_kernel_size²)
IMAGE_BUDGETS = (70, 140, 280, 560, 1120)  # gemma4_mm.py _SUPPORTED_SOFT_TOKENS
VIDEO_FRAME_TOKENS = 70  # gemma4_mm.py _VIDEO_MAX_SOFT_TOKENS


@dataclass(frozen=True)
class ImageBatches:
    """The encoder calls one step's images take."""

    patches: tuple[int, ...]  # patch rows per image, in input order
    buckets: dict[int, tuple[int, ...]]  # patch rows → image indices, in first-seen order
    chunks: tuple[tuple[int, ...], ...]  # image indices of each encoder call, in call order
    lora_padded_to: int | None  # with MM LoRA: every image padded to this many patches
    vllm_version: str  # the profile's version: the release whose batching this follows
    steps: tuple[str, ...]  # why, in words

    def __repr__(self) -> str:
        return "\n".join(self.steps)


def plan_image_batches(
    patches: list[int],
    *,
    free_bytes: list[int] | int,
    total_bytes: int,
    position_embedding_size: int = POSITION_EMBEDDING_SIZE,
    lora_max_soft_tokens: int | None = None,
    vllm_version: str | None = None,
) -> ImageBatches:
    """Buckets and chunks for images of ``patches`` rows each, under the release
    ``vllm_version`` names (None: the installed vLLM, else the newest).

    ``free_bytes``: the free GPU memory vLLM reads before each bucket (one value per
    bucket, or one for all). ``lora_max_soft_tokens``: the engine's budget when
    multimodal LoRA is on (None: off).
    """
    p = vllm_profile(vllm_version)
    steps: list[str] = [f"{p.label} ({p.chosen_because}), Gemma 4's _process_image_input:"]
    if lora_max_soft_tokens is not None:
        limit = lora_max_soft_tokens * POOLING_AREA
        for i, n in enumerate(patches):
            if n > limit:
                raise ValueError(
                    f"Image {i} has {n} patches, which exceeds the MM LoRA patch limit of "
                    f"{limit}. Start the engine with a bigger max_soft_tokens, or send the "
                    "image at the engine's budget."
                )
        buckets = {limit: tuple(range(len(patches)))} if patches else {}
        steps.append(f"MM LoRA: every image padded to {limit} patches, one bucket, one call.")
        chunks = tuple(buckets.values())
        return ImageBatches(tuple(patches), buckets, chunks, limit, p.version, tuple(steps))
    grouped: dict[int, list[int]] = {}
    for i, n in enumerate(patches):
        grouped.setdefault(n, []).append(i)
    frees = [free_bytes] * len(grouped) if isinstance(free_bytes, int) else list(free_bytes)
    if len(frees) < len(grouped):
        raise ValueError(f"Give one free_bytes per bucket ({len(grouped)}), or one for all.")
    chunks: list[tuple[int, ...]] = []
    for (n, items), free in zip(grouped.items(), frees, strict=False):
        size = min(
            len(items),
            encoder_chunk(
                n,
                free_bytes=free,
                total_bytes=total_bytes,
                position_embedding_size=position_embedding_size,
                vllm_version=p.version,
            ).chunk,
        )
        calls = [tuple(items[k : k + size]) for k in range(0, len(items), size)]
        chunks += calls
        steps.append(
            f"bucket of {n} patches: images {items} in {len(calls)} call(s) of up to {size} "
            f"(free memory {free / 2**30:.1f} GiB read for this bucket)."
        )
    steps.append("Then all images' pooled rows are projected in one embedder call.")
    buckets = {n: tuple(v) for n, v in grouped.items()}
    return ImageBatches(tuple(patches), buckets, tuple(chunks), None, p.version, tuple(steps))


@dataclass(frozen=True)
class LoraTokens:
    """What one multimodal item costs multimodal LoRA (``get_mm_lora_token_counts``)."""

    modality: str  # "image", "video" or "audio"
    tower_tokens: int  # rows the tower's LoRA adapters see (patches for images and video)
    connector_tokens: int  # rows the connector (embedder) LoRA sees
    vllm_version: str  # the profile's version: the release whose counts these are
    steps: tuple[str, ...]  # why, in words

    def __repr__(self) -> str:
        return "\n".join(self.steps)


def lora_token_counts(
    modality: str,
    *,
    num_embeds: int,
    max_soft_tokens: int | None = None,
    default_output_length: int = 280,
    video_patch_rows: int | None = None,
    audio_feature_frames: int | None = None,
    audio_clips: int = 1,
    vllm_version: str | None = None,
) -> LoraTokens:
    """vLLM's ``Gemma4ForConditionalGeneration.get_mm_lora_token_counts`` for one item
    (the same counts in every supported release; ``vllm_version`` names the one).

    ``num_embeds``: the item's soft tokens. ``max_soft_tokens``: the engine's
    ``mm_processor_kwargs`` budget (ignored unless it is a supported one; then
    ``default_output_length``, the config's, counts). ``video_patch_rows``: frames ×
    patches per frame of the video's ``pixel_values_videos`` (None: not at hand, so vLLM
    counts 70-token frames). ``audio_feature_frames``: the padded mel frames of the
    clip's ``input_features_padded`` (None: not at hand).

    >>> lora_token_counts("video", num_embeds=140).tower_tokens  # two frames of 70 × 9
    1260
    >>> lora_token_counts("audio", num_embeds=10, audio_feature_frames=402).connector_tokens
    101
    """
    v = vllm_profile(vllm_version).version
    if modality == "image":
        budget = max_soft_tokens if max_soft_tokens in IMAGE_BUDGETS else default_output_length
        tower = budget * POOLING_AREA
        why = f"image: the budget's patches, {budget} × {POOLING_AREA} (LoRA pads every image)"
        return LoraTokens(
            modality, tower, num_embeds, v, (why, f"connector: {num_embeds} soft tokens")
        )
    if modality == "video":
        if video_patch_rows is not None:
            tower = video_patch_rows
            why = f"video: its pixel_values_videos rows, {tower} patches"
        else:
            frames = math.ceil(num_embeds / min(IMAGE_BUDGETS))
            tower = frames * VIDEO_FRAME_TOKENS * POOLING_AREA
            why = (
                f"video without its pixels: ceil({num_embeds} / {min(IMAGE_BUDGETS)}) = {frames} "
                f"frames × {VIDEO_FRAME_TOKENS} × {POOLING_AREA} patches"
            )
        return LoraTokens(
            modality, tower, num_embeds, v, (why, f"connector: {num_embeds} soft tokens")
        )
    if modality == "audio":
        if audio_feature_frames is None:
            why = f"audio: {num_embeds} soft tokens through tower and connector"
            return LoraTokens(modality, num_embeds, num_embeds, v, (why,))
        tokens = audio_clips * math.ceil(audio_feature_frames / 4)
        why = (
            f"audio: {audio_clips} clip(s) × ceil({audio_feature_frames} padded mel frames / 4) "
            f"= {tokens} tokens through tower and connector (the padding counts)"
        )
        return LoraTokens(modality, tokens, tokens, v, (why,))
    raise ValueError(f"Unsupported modality: {modality}")
