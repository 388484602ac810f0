"""How vLLM runs Gemma 4's vision encoder on a GPU: chunk sizes and CUDA-graph budgets.

Two mechanisms in ``gemma4_mm.py`` decide how many images the encoder takes at once:

* **``_encoder_chunk``** (the same in vLLM 0.32 and in the newer seed): vLLM sizes the
  chunk so that ``chunk × patches × 4 × position_embedding_size × 8`` bytes fit in
  ``min(free / 2, total / 10)``. Its docstring says why: an
  ``F.one_hot(positions, num_classes=position_embedding_size)`` of shape
  ``(chunk, patches, 2, position_embedding_size)`` in int64, with its cast and the
  matmul output, in transformers' ``Gemma4VisionPatchEmbedder._position_embeddings``.
  transformers 5.19 no longer makes that tensor: ``_position_embeddings``
  (``models/gemma4/modeling_gemma4.py``) does two ``F.embedding`` lookups into the
  ``(2, position_embedding_size, hidden)`` table, so its transients are the x and y
  embeddings, their sum and its padding-zeroed copy (``torch.where``),
  ``(chunk, patches, hidden)`` each. The formula is still
  vLLM's (this module follows it), but it reserves far more than the lookups use (with
  ``hidden_size=`` the result states both); the vision tower's one remaining
  ``F.one_hot`` is the pooler's ``(chunk, patches, soft tokens)`` weights.
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

from gemma_explore.facts.families import DEFAULT_FAMILY, FamilySpec, get_family
from gemma_explore.plans.rules import require_budget as _require_budget  # the one budget check

__all__ = [
    "EncoderBatch",
    "EncoderChunk",
    "EncoderGraphs",
    "EncoderReplay",
    "POSITION_EMBEDDING_SIZE",
    "ReplayBatch",
    "encoder_chunk",
    "encoder_graph_budgets",
    "frame_rows",
    "pack_encoder_items",
    "plan_encoder_replay",
    "replay_gather_indices",
]

POSITION_EMBEDDING_SIZE = 10_240  # Gemma4VisionConfig.position_embedding_size (default)
VIDEO_MAX_FRAMES = 32  # gemma4_mm.py _VIDEO_MAX_FRAMES


def _budgets(family: str | FamilySpec) -> tuple[tuple[int, ...], int]:
    """The family's image budgets (vLLM's ``_SUPPORTED_SOFT_TOKENS``) and its default one,
    through the one budget check (a family without budgets gets its clear error)."""
    spec = get_family(getattr(family, "spec", family))
    if not spec.image.budgets:
        raise ValueError(
            f"{spec.display_name} has no image budgets, so vLLM captures no encoder graphs "
            f"for it: pass family= a family with budgets (e.g. {DEFAULT_FAMILY.name!r})."
        )
    return spec.image.budgets, _require_budget(None, family=spec)


@dataclass(frozen=True)
class EncoderChunk:
    """How many images (or frames) the vision tower encodes at once."""

    patches_per_item: int  # rows of pixel_values per item (budget × 9 for Gemma 4)
    budget_bytes: int  # min(free / 2, total / 10)
    cost_per_item_bytes: int  # patches × 4 × position_embedding_size × 8: vLLM's formula
    chunk: int  # items per encoder call (at least 1)
    # The floating-point bytes transformers 5.19's position path allocates per item (x, y,
    # their sum, its padding-zeroed copy: 4 × patches × hidden × dtype); None without hidden.
    lookup_bytes_per_item: int | None = None
    version: str = "vLLM 0.32 (unchanged in the newer seed)"
    steps: tuple[str, ...] = field(default=(), compare=False)


def encoder_chunk(
    patches_per_item: int,
    *,
    free_bytes: int,
    total_bytes: int,
    position_embedding_size: int = POSITION_EMBEDDING_SIZE,
    hidden_size: int | None = None,
    dtype_bytes: int = 2,
) -> EncoderChunk:
    """The chunk size vLLM's ``_encoder_chunk`` picks from free and total GPU memory.

    ``hidden_size`` (the vision tower's) and ``dtype_bytes`` (2 for bfloat16) only add
    what transformers' position path really allocates, for comparison; the chunk is vLLM's.

    >>> c = encoder_chunk(1120 * 9, free_bytes=60 * 2**30, total_bytes=80 * 2**30)
    >>> c.cost_per_item_bytes / 2**30, c.chunk
    (3.076171875, 2)
    >>> encoder_chunk(280 * 9, free_bytes=1, total_bytes=1, hidden_size=768).lookup_bytes_per_item
    15482880
    """
    if patches_per_item <= 0:
        return EncoderChunk(patches_per_item, 0, 0, 1, steps=("no patches: chunk 1",))
    budget = min(free_bytes // 2, total_bytes // 10)
    # vLLM's formula: a (chunk, patches, 2, P) int64 one-hot = patches·2·P·8 B per item,
    # ×2 for its cast and the matmul output (a transient transformers 5.19 no longer makes).
    cost = patches_per_item * 4 * position_embedding_size * 8
    chunk = max(1, budget // cost) if budget > 0 and cost > 0 else 1
    # transformers 5.19: x_emb, y_emb (F.embedding each), their sum and its padding-zeroed
    # copy (torch.where), (patches, hidden) each.
    lookups = None if hidden_size is None else 4 * patches_per_item * hidden_size * dtype_bytes
    steps = [
        f"budget = min(free {free_bytes / 2**30:.1f} GiB / 2, total {total_bytes / 2**30:.1f} "
        f"GiB / 10) = {budget / 2**30:.2f} GiB (leaves room for the rest of the profile run)",
        f"vLLM's cost per item: {patches_per_item} patches × 2 coordinates × "
        f"{position_embedding_size} classes × 8 B (int64), × 2 = {cost / 2**30:.3f} GiB, "
        "the F.one_hot its docstring names; transformers 5.19's _position_embeddings makes "
        "no one-hot (two F.embedding lookups), so this over-reserves",
        f"chunk = max(1, {budget} // {cost}) = {chunk} items per encoder call",
    ]
    if lookups is not None:
        steps.append(
            f"transformers 5.19's position path allocates 4 × {patches_per_item} patches × "
            f"{hidden_size} × {dtype_bytes} B = {lookups / 2**20:.1f} MiB per item ({cost / lookups:.0f}× "
            "less than vLLM reserves)"
        )
    return EncoderChunk(patches_per_item, budget, cost, chunk, lookups, steps=tuple(steps))


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
    default_output_length: int | None = None,
    family: str | FamilySpec = DEFAULT_FAMILY,
) -> EncoderGraphs:
    """The budgets ``EncoderCudaGraphManager`` generates when the user sets none
    (``get_encoder_cudagraph_budget_range`` + ``_generate_budgets``), for ``family``'s
    image budgets; ``default_output_length`` (None: the family's default budget) bounds
    the seed's row widths.

    >>> encoder_graph_budgets(max_num_batched_tokens=512, max_model_len=8192).row_widths_seed
    (70, 140, 280)
    """
    budgets_allowed, default = _budgets(family)
    # 0.32 reads vision_config.num_soft_tokens, which Gemma 4 configs lack, and falls back to
    # _SUPPORTED_SOFT_TOKENS[2]: the default budget (test_captured_row_width_is_vllms)
    row_width_0_32 = default
    default_output_length = default if default_output_length is None else default_output_length
    low = budgets_allowed[0]
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
    widths = tuple(t for t in budgets_allowed if t <= default_output_length)
    steps = (
        f"budgets from {low} (the smallest image) doubling to min(max_num_batched_tokens "
        f"{max_num_batched_tokens}, max_model_len {max_model_len}) = {high}: {budgets}",
        f"max_batch_size = min({high} // {low}, smallest budget {min(budgets)}) = {batch}",
        f"max_frames_per_batch = {batch} × {VIDEO_MAX_FRAMES} = {frames}"
        if video
        else "video limit 0: no frames per batch",
        f"vLLM 0.32: {len(budgets)} graphs, rows of min(budget, {row_width_0_32}) soft tokens",
        f"newer seed: {len(budgets)} × {len(widths)} graphs, one per row width {list(widths)}",
    )
    return EncoderGraphs(tuple(budgets), batch, frames, row_width_0_32, widths, steps)


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


# ---------------------------------------------------------------------------------------
# Replaying a captured graph: which rows reach the projection (issue 22, item 6)
# ---------------------------------------------------------------------------------------

POOL_RATIO = 9  # pooling_kernel_size ** 2 (3 × 3 patches per soft token)
V032 = "vLLM 0.32 (the same in the newer seed)"
SEED_ONLY = "newer seed only (not in vLLM 0.32)"


def replay_gather_indices(item_tokens: list[int], per_item_output: int) -> tuple[int, ...]:
    """The pooled rows a graph replay keeps, as vLLM's
    ``prepare_encoder_cudagraph_replay_buffers`` lays them out for images: the pooled
    output is flat, one block of ``per_item_output`` rows per item, and item *i* keeps
    the first ``min(tokens_i, per_item_output)`` rows of block *i*.

    >>> replay_gather_indices([2, 3], 4)
    (0, 1, 4, 5, 6)
    """
    out: list[int] = []
    for i, n in enumerate(item_tokens):
        start = i * per_item_output
        out.extend(range(start, start + min(n, per_item_output)))
    return tuple(out)


def frame_rows(frame_counts: list[int], indices: list[int]) -> tuple[int, ...]:
    """The frame rows ``select_encoder_cudagraph_items`` takes for the videos ``indices``:
    videos are stored frame after frame, so video *i* owns rows
    ``sum(frames[:i]) … sum(frames[:i+1])``.

    >>> frame_rows([2, 3, 1], [2, 0])
    (5, 0, 1)
    """
    starts = [0]
    for n in frame_counts:
        starts.append(starts[-1] + n)
    return tuple(r for i in indices for r in range(starts[i], starts[i + 1]))


@dataclass(frozen=True)
class ReplayBatch:
    """One batch of images on the encoder graph path."""

    items: tuple[int, ...]  # which images (select_encoder_cudagraph_items picks them)
    item_tokens: tuple[int, ...]  # rows each brings: its patches // 9 (EncoderItemSpec)
    valid_tokens: tuple[int, ...]  # soft tokens of each in the prompt (its placeholders)
    budget: int | None  # the graph replayed; None: encoder_eager_forward (no graph fits)
    batch_width: int  # pooled rows per item the replay buffers assume (widest of the batch)
    graph_width: int | None  # pooled rows per item the captured graph computes
    gather_indices: tuple[int, ...]  # rows of the flat pooled output kept, in order
    fits: bool  # the batch's patches fit the captured pixel buffer (else the copy fails)
    right_rows: bool  # every kept row belongs to its own image (strides agree)


@dataclass(frozen=True)
class EncoderReplay:
    """What vLLM's encoder graph path does with a list of images."""

    batches: tuple[ReplayBatch, ...]
    version: str  # "0.32" or "seed": which capture rule
    # each part of the path → the vLLM version whose code it follows
    versions: dict[str, str] = field(default_factory=dict, compare=False)
    steps: tuple[str, ...] = field(default=(), compare=False)

    @property
    def ok(self) -> bool:
        """Every batch runs and hands each image its own rows."""
        return all(b.budget is None or (b.fits and b.right_rows) for b in self.batches)

    def __repr__(self) -> str:
        return "\n".join(self.steps)


def plan_encoder_replay(
    item_patches: list[int],
    *,
    valid_tokens: list[int] | None = None,
    graphs: EncoderGraphs,
    seed: bool = False,
    pool_ratio: int = POOL_RATIO,
) -> EncoderReplay:
    """Follow vLLM's encoder CUDA-graph path for images of ``item_patches`` patch rows
    each (Gemma 4's processor pads an image to its budget × 9 rows): the packing, then
    per batch the graph, the replay buffers and the ``gather_indices``.

    * **Packing and eager fallback** (:func:`pack_encoder_items`; vLLM 0.32 and seed):
      a batch whose tokens exceed the largest budget runs ``encoder_eager_forward``.
    * **Item selection** (``select_encoder_cudagraph_items``; 0.32 and seed): the batch's
      images are sliced out of the request; the replay buffers pad them to the widest.
    * **Capture width**: 0.32 captures each budget's graph with rows of
      ``min(budget, 280)`` soft tokens (it reads ``vision_config.num_soft_tokens``, which
      Gemma 4 configs lack); the seed captures one graph per (budget, row width) and
      replays the one of the batch's width.
    * **gather_indices** (0.32 and seed): computed with the *batch's* width as the stride
      of the flat pooled output (:func:`replay_gather_indices`), while the graph pools
      rows of the *captured* width. When the two differ (0.32, an image budget other
      than the graph's width), item 2 onwards reads another image's rows; when the batch
      is wider than the capture (0.32, a 560 or 1120 image), the buffer copy fails.
    * **dtype cast** (0.32 and seed): the gathered rows are cast to the projection's
      weight dtype before ``embed_vision`` (a bf16 tower under a float32 projection).

    ``valid_tokens`` (default: every row) are the image's placeholders: the rows past
    them are padding the pooler puts last, and the runner reads only the first ones.

    >>> g = encoder_graph_budgets(max_num_batched_tokens=2048, max_model_len=8192)
    >>> plan_encoder_replay([1260, 1260], graphs=g).ok  # two 140-token images, 0.32
    False
    >>> plan_encoder_replay([1260, 1260], graphs=g, seed=True).ok
    True
    """
    tokens = [p // pool_ratio for p in item_patches]
    valid = list(valid_tokens) if valid_tokens is not None else tokens
    steps = [
        f"{len(tokens)} images of {sorted(set(tokens))} rows each; graphs at budgets "
        f"{list(graphs.token_budgets)}, up to {graphs.max_batch_size} images a graph.",
    ]
    batches = []
    for b in pack_encoder_items(tokens, graphs, seed=seed):
        batch, step = _replay_batch(b, tokens, valid, graphs, seed=seed, pool_ratio=pool_ratio)
        batches.append(batch)
        steps.append(step)
    steps.append(
        "The gathered rows are cast to embed_vision's weight dtype, then projected "
        "(vLLM 0.32 and the seed)."
    )
    return EncoderReplay(
        tuple(batches), "seed" if seed else "0.32", _replay_versions(seed), tuple(steps)
    )


def _replay_batch(
    b: EncoderBatch,
    tokens: list[int],
    valid: list[int],
    graphs: EncoderGraphs,
    *,
    seed: bool,
    pool_ratio: int,
) -> tuple[ReplayBatch, str]:
    """One packed batch through the graph path: its graph, gather indices and verdict."""
    width = max(tokens[i] for i in b.items)  # replay buffers pad to the widest
    its = tuple(tokens[i] for i in b.items)
    if b.budget is None:
        batch = ReplayBatch(
            b.items, its, tuple(valid[i] for i in b.items), None, width, None, (), True, True
        )
        return batch, (
            f"images {list(b.items)}: {b.tokens} tokens exceed the largest "
            f"graph ({max(graphs.token_budgets)}): encoder_eager_forward."
        )
    graph_width = width if seed else min(b.budget, graphs.row_width_0_32)
    gather = replay_gather_indices(list(its), width)
    # seed: only widths up to default_output_length are captured (a wider batch finds
    # no graph; 0.32's manager then asserts); 0.32: the batch must fit the capture
    fits = width in graphs.row_widths_seed if seed else width <= graph_width
    right = fits and (graph_width == width or len(its) == 1)
    batch = ReplayBatch(
        b.items,
        its,
        tuple(valid[i] for i in b.items),
        b.budget,
        width,
        graph_width,
        gather,
        fits,
        right,
    )
    what = (
        "runs, each image its own rows"
        if right
        else f"no graph was captured for rows of {width} tokens"
        if not fits and seed
        else f"the copy into the graph's {graph_width * pool_ratio}-patch rows fails"
        if not fits
        else f"images after the first read another image's rows (stride {width} "
        f"assumed, {graph_width} computed)"
    )
    return batch, (
        f"images {list(b.items)}: graph {b.budget} with rows of {graph_width} tokens; "
        f"gather keeps {len(gather)} rows at stride {width}: {what}."
    )


def _replay_versions(seed: bool) -> dict[str, str]:
    """Which vLLM each part of the replay path follows."""
    return {
        "packing and eager fallback": V032,
        "item selection": V032,
        "gather_indices": V032,
        "dtype cast before the projection": V032,
        "row width of a captured graph": (
            "newer seed: one graph per row width"
            if seed
            else "vLLM 0.32: min(budget, default budget); the seed changed this"
        ),
        "Gemma 4 declaring row width as a capture axis": SEED_ONLY,
    }
