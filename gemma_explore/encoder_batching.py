"""How vLLM runs Gemma 4's vision encoder on a GPU: chunk sizes and CUDA-graph budgets.

Two mechanisms in ``gemma4_mm.py`` decide how many images the encoder takes at once:

* **``_encoder_chunk``** (the same in vLLM 0.32 and in the newer seed): peak memory of
  the vision tower is not set by its hidden states but by one transient in transformers'
  ``Gemma4VisionPatchEmbedder._position_embeddings``:
  ``F.one_hot(positions, num_classes=position_embedding_size)`` of shape
  ``(chunk, patches, 2, position_embedding_size)`` in int64, alive together with its cast
  to the table's dtype and the matmul output. vLLM sizes the chunk so that this fits in
  ``min(free / 2, total / 10)`` bytes.
* **Encoder CUDA graphs** (``vllm/v1/worker/encoder_cudagraph.py``): graphs are captured
  for a ladder of *token budgets* (70, 140, 280, … doubling up to
  ``min(max_num_batched_tokens, max_model_len)``); at run time images are sorted by size
  and packed greedily into batches, each batch replayed on the smallest budget that
  holds its tokens (or run eagerly when none does). An image's tokens here are its
  rows: the processor pads each image to budget × 9 patches, so it counts as its budget. In **vLLM 0.32** every graph's rows
  are ``min(budget, 280)`` soft tokens wide (it reads ``vision_config.num_soft_tokens``,
  which Gemma 4 configs do not set, so 280). The **newer seed** captures one graph per
  budget *and row width* (each allowed budget up to ``default_output_length``): a batch
  is padded to its widest image and replays the graph of that width, with at most
  ``budget // width`` rows, so small images no longer pay for 280-token rows.

Everything here is plain arithmetic; the tests run it against vLLM 0.32's own functions.

>>> encoder_chunk(280 * 9, free_bytes=40 * 2**30, total_bytes=80 * 2**30).chunk
10
>>> encoder_graph_budgets(max_num_batched_tokens=8192, max_model_len=8192).token_budgets
(70, 140, 280, 560, 1120, 2240, 4480, 8192)
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

__all__ = [
    "EncoderBatch",
    "EncoderChunk",
    "EncoderGraphs",
    "POSITION_EMBEDDING_SIZE",
    "encoder_chunk",
    "encoder_graph_budgets",
    "pack_encoder_items",
]

POSITION_EMBEDDING_SIZE = 10_240  # Gemma4VisionConfig.position_embedding_size (default)
SOFT_TOKEN_BUDGETS = (70, 140, 280, 560, 1120)  # gemma4_mm.py _SUPPORTED_SOFT_TOKENS
VIDEO_MAX_FRAMES = 32  # gemma4_mm.py _VIDEO_MAX_FRAMES
ROW_WIDTH_0_32 = 280  # 0.32 reads vision_config.num_soft_tokens, absent → _SUPPORTED_SOFT_TOKENS[2]


@dataclass(frozen=True)
class EncoderChunk:
    """How many images (or frames) the vision tower encodes at once."""

    patches_per_item: int  # rows of pixel_values per item (budget × 9 for Gemma 4)
    budget_bytes: int  # min(free / 2, total / 10)
    cost_per_item_bytes: int  # patches × 4 × position_embedding_size × 8
    chunk: int  # items per encoder call (at least 1)
    version: str = "vLLM 0.32 (unchanged in the newer seed)"
    steps: tuple[str, ...] = field(default=(), compare=False)


def encoder_chunk(
    patches_per_item: int,
    *,
    free_bytes: int,
    total_bytes: int,
    position_embedding_size: int = POSITION_EMBEDDING_SIZE,
) -> EncoderChunk:
    """The chunk size vLLM's ``_encoder_chunk`` picks from free and total GPU memory.

    >>> c = encoder_chunk(1120 * 9, free_bytes=60 * 2**30, total_bytes=80 * 2**30)
    >>> c.cost_per_item_bytes / 2**30, c.chunk
    (3.076171875, 2)
    """
    if patches_per_item <= 0:
        return EncoderChunk(patches_per_item, 0, 0, 1, steps=("no patches: chunk 1",))
    budget = min(free_bytes // 2, total_bytes // 10)
    # (chunk, patches, 2, P) int64 one-hot = patches·2·P·8 B per item; ×2 for its dtype
    # cast and the matmul output alive at the same time.
    cost = patches_per_item * 4 * position_embedding_size * 8
    chunk = max(1, budget // cost) if budget > 0 and cost > 0 else 1
    steps = (
        f"budget = min(free {free_bytes / 2**30:.1f} GiB / 2, total {total_bytes / 2**30:.1f} "
        f"GiB / 10) = {budget / 2**30:.2f} GiB (leaves room for the rest of the profile run)",
        f"one item's one-hot transient: {patches_per_item} patches × 2 coordinates × "
        f"{position_embedding_size} classes × 8 B (int64), × 2 for its cast and the matmul "
        f"output = {cost / 2**30:.3f} GiB",
        f"chunk = max(1, {budget} // {cost}) = {chunk} items per encoder call",
    )
    return EncoderChunk(patches_per_item, budget, cost, chunk, steps=steps)


@dataclass(frozen=True)
class EncoderGraphs:
    """The encoder CUDA graphs vLLM captures for Gemma 4 (automatic settings)."""

    token_budgets: tuple[int, ...]  # one graph per budget (0.32), per budget × row width (seed)
    max_batch_size: int  # images per graph
    max_frames_per_batch: int  # video frames per graph (0 when video is off)
    row_width_0_32: int  # 0.32: every row holds this many soft tokens
    row_widths_seed: tuple[int, ...]  # seed: one graph per width ≤ default_output_length
    steps: tuple[str, ...] = field(default=(), compare=False)

    def rows_0_32(self, budget: int) -> tuple[int, int]:
        """vLLM 0.32's captured (rows, soft tokens per row) for one budget."""
        return max(self.max_batch_size, self.max_frames_per_batch), min(budget, self.row_width_0_32)

    def rows_seed(self, budget: int, width: int) -> int:
        """The seed's rows for one (budget, row width) graph: ``budget // width`` at most."""
        return min(max(self.max_batch_size, self.max_frames_per_batch), max(1, budget // width))


def encoder_graph_budgets(
    *,
    max_num_batched_tokens: int,
    max_model_len: int,
    video: bool = True,
    default_output_length: int = 280,
) -> EncoderGraphs:
    """The budgets ``EncoderCudaGraphManager`` generates when the user sets none
    (``get_encoder_cudagraph_budget_range`` + ``_generate_budgets``)."""
    low = SOFT_TOKEN_BUDGETS[0]
    high = min(max_num_batched_tokens, max_model_len)
    budgets: list[int] = []
    b = low
    while b <= high:
        budgets.append(b)
        b *= 2
    if not budgets or budgets[-1] < high:
        budgets.append(high)
    batch = min(high // low, min(budgets))
    frames = batch * VIDEO_MAX_FRAMES if video else 0
    widths = tuple(t for t in SOFT_TOKEN_BUDGETS if t <= default_output_length)
    steps = (
        f"budgets from {low} (the smallest image) doubling to min(max_num_batched_tokens "
        f"{max_num_batched_tokens}, max_model_len {max_model_len}) = {high}: {budgets}",
        f"max_batch_size = min({high} // {low}, smallest budget {min(budgets)}) = {batch}",
        f"max_frames_per_batch = {batch} × {VIDEO_MAX_FRAMES} = {frames}" if video
        else "video limit 0: no frames per batch",
        f"vLLM 0.32: {len(budgets)} graphs, rows of min(budget, {ROW_WIDTH_0_32}) soft tokens",
        f"newer seed: {len(budgets)} × {len(widths)} graphs, one per row width {list(widths)}",
    )  # fmt: skip
    return EncoderGraphs(tuple(budgets), batch, frames, ROW_WIDTH_0_32, widths, steps)


@dataclass(frozen=True)
class EncoderBatch:
    """Items replayed together on one graph."""

    items: tuple[int, ...]  # indices into the request's items
    tokens: int  # their soft tokens together
    budget: int | None  # the graph's token budget; None: run eagerly (too big)
    row_width: int  # the seed's graph key: the widest item of the batch


def _fit(budgets: tuple[int, ...], n: int) -> int | None:
    if n == 0:
        return 0
    i = bisect_left(budgets, n)
    return budgets[i] if i < len(budgets) else None


def pack_encoder_items(
    item_tokens: list[int], graphs: EncoderGraphs, *, seed: bool = False
) -> tuple[EncoderBatch, ...]:
    """Which items share a graph: vLLM's greedy packing (``_execute_local``).

    Items go smallest first. One joins the open batch while the batch has fewer than
    ``max_batch_size`` items and stays within the largest budget, unless running it alone
    is cheaper (the two smaller graphs' budgets add up to less than the merged one's and it
    alone needs at least as big a graph as the batch so far). Each batch replays the
    smallest budget that holds its tokens.

    ``item_tokens`` are the rows each image brings: Gemma 4's processor pads every image
    to its budget × 9 patches, so at one budget each image counts as the budget, whatever
    its size. ``seed=True`` packs as the newer seed does: every image of the request
    counts as the widest one (a batch is padded to it), and the graph replayed is the one
    captured for (budget, widest row of the batch).

    >>> g = encoder_graph_budgets(max_num_batched_tokens=2048, max_model_len=8192)
    >>> [(b.items, b.budget) for b in pack_encoder_items([280, 70, 70, 1120], g)]
    [((1, 2), 140), ((0,), 280), ((3,), 1120)]
    """
    budgets = graphs.token_budgets
    top = max(budgets)
    widest = max(item_tokens, default=0)
    packed = [widest] * len(item_tokens) if seed else list(item_tokens)  # tokens packing counts
    order = sorted(range(len(item_tokens)), key=lambda i: item_tokens[i])
    batches: list[list[int]] = []
    cur: list[int] = []
    cur_tokens = 0
    for i in order:
        t = packed[i]
        fits = len(cur) < graphs.max_batch_size and cur_tokens + t <= top
        defer = False
        if cur and fits and t:
            b_cur, b_alone, b_merged = (
                _fit(budgets, cur_tokens),
                _fit(budgets, t),
                _fit(budgets, cur_tokens + t),
            )
            defer = b_cur + b_alone < b_merged and b_alone >= b_cur
        if cur and (not fits or defer):
            batches.append(cur)
            cur, cur_tokens = [], 0
        cur.append(i)
        cur_tokens += t
    if cur:
        batches.append(cur)
    out = []
    for batch in batches:
        tokens = sum(packed[i] for i in batch)
        out.append(
            EncoderBatch(
                tuple(batch), tokens, _fit(budgets, tokens), max(item_tokens[i] for i in batch)
            )
        )
    return tuple(out)
