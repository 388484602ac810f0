"""How vLLM's Gemma 4 batches a step's images through the vision tower (no GPU needed).

``Gemma4ForConditionalGeneration._process_image_input`` (vLLM 0.32 and seed
``gemma4_mm.py``):

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

>>> b = plan_image_batches([2520, 630, 2520], free_bytes=8 * 2**30, total_bytes=80 * 2**30)
>>> b.buckets, b.chunks
({2520: (0, 2), 630: (1,)}, ((0, 2), (1,)))
"""

from __future__ import annotations

from dataclasses import dataclass

from gemma_explore.serving.encoder import POSITION_EMBEDDING_SIZE, encoder_chunk

__all__ = ["ImageBatches", "plan_image_batches"]

POOLING_AREA = 9  # 3 × 3 patches per soft token (Gemma 4's pooling_kernel_size²)


@dataclass(frozen=True)
class ImageBatches:
    """The encoder calls one step's images take."""

    patches: tuple[int, ...]  # patch rows per image, in input order
    buckets: dict[int, tuple[int, ...]]  # patch rows → image indices, in first-seen order
    chunks: tuple[tuple[int, ...], ...]  # image indices of each encoder call, in call order
    lora_padded_to: int | None  # with MM LoRA: every image padded to this many patches
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
) -> ImageBatches:
    """Buckets and chunks for images of ``patches`` rows each.

    ``free_bytes``: the free GPU memory vLLM reads before each bucket (one value per
    bucket, or one for all). ``lora_max_soft_tokens``: the engine's budget when
    multimodal LoRA is on (None: off).
    """
    steps: list[str] = []
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
        return ImageBatches(tuple(patches), buckets, chunks, limit, tuple(steps))
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
    return ImageBatches(tuple(patches), buckets, tuple(chunks), None, tuple(steps))
