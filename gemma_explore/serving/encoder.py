"""How vLLM runs Gemma 4's vision encoder on a GPU: chunk sizes and CUDA-graph budgets.

Two mechanisms in ``gemma4_mm.py`` decide how many images the encoder takes at once:

* **``_encoder_chunk``** (the same in every supported vLLM release): vLLM sizes the
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
* **Encoder CUDA graphs** (``vllm/v1/worker/encoder_cudagraph.py`` and Gemma 4's graph
  methods). They are **off by default in every supported release**: only
  ``--compilation-config '{"cudagraph_mm_encoder": true}'`` (``compilation_config=
  {"cudagraph_mm_encoder": True}`` in Python) turns them on; without it every image runs
  eagerly, and correctly. With them on, vLLM captures graphs for a set of *token
  budgets* and replays each batch of images on the smallest budget that holds it (or
  runs it eagerly when none does). An image's tokens here are its rows: the processor
  pads each image to budget × 9 patches, so it counts as its budget. The profile's
  ``encoder_graph_rule`` says how a release does it:

  - ``"budget"``: budgets double from 70 to ``min(max_num_batched_tokens,
    max_model_len)``; one graph per budget, its rows ``min(budget, 280)`` soft tokens
    wide (it reads ``vision_config.num_soft_tokens``, which Gemma 4 configs do not set,
    so 280); images are packed greedily, smallest first, into several replays. Two
    140-token images replay on the 280 graph, whose rows are 280 wide while the gather
    assumes 140: the second image reads the first one's padding.
  - ``"row-width"``: the same budgets and packing, but one graph per budget *and* row
    width (each allowed budget up to the engine's ``max_soft_tokens``, else the
    config's ``default_output_length``): every image of a call counts as the widest, a
    batch replays the graph of its width with at most ``budget // width`` rows, so
    small images no longer pay for 280-token rows and every image gets its own rows.
  - ``"grid"``: the rewritten manager. Budgets on a finer grid (quarter octaves up to
    1024, steps of 128 up to 2560, eighth octaves above), capped at
    ``encoder_cudagraph_max_token_budget`` (5120 by default); no packing: all images of
    a call go into one replay, largest first, on the smallest budget that holds
    widest × count, or the whole call runs eagerly; the gathered rows are cast to the
    model's dtype before the projection.

Everything here is plain arithmetic; the tests run it against each release's own
functions (the installed vLLM's, and the other releases' source).

>>> from gemma_explore.vllm_versions import SUPPORTED
>>> first, *_, last = SUPPORTED
>>> encoder_chunk(280 * 9, free_bytes=40 * 2**30, total_bytes=80 * 2**30).chunk
10
>>> encoder_graph_budgets(
...     max_num_batched_tokens=8192, max_model_len=8192, vllm_version=first
... ).token_budgets
(70, 140, 280, 560, 1120, 2240, 4480, 8192)
>>> encoder_graph_budgets(
...     max_num_batched_tokens=8192, max_model_len=8192, vllm_version=last
... ).token_budgets[-4:]
(3840, 4224, 4608, 5120)
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from gemma_explore.facts.families import DEFAULT_FAMILY, FamilySpec, get_family
from gemma_explore.plans.rules import require_budget as _require_budget  # the one budget check
from gemma_explore.vllm_versions import PROFILES, VllmProfile, vllm_profile

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
POOL_RATIO = 9  # pooling_kernel_size ** 2 (3 × 3 patches per soft token)

# The profile's encoder_graph_rule values (VllmProfile.encoder_graph_rule says which
# release follows which).
BUDGET, ROW_WIDTH, GRID = "budget", "row-width", "grid"
_RULES = (BUDGET, ROW_WIDTH, GRID)

# The "grid" rule's budgets (EncoderCudaGraphManager._generate_budgets there): four steps
# per octave up to _QUARTER_OCTAVES_END, where a replay pads at most a quarter; steps of
# _LINEAR_STEP tokens from there to _LINEAR_END; then eight steps per octave, each rounded
# up to a multiple of _LINEAR_STEP.
_QUARTER_OCTAVES_END = 1024
_LINEAR_STEP = 128
_LINEAR_END = 2560  # encoder_cudagraph.py _LINEAR_GRID_END


def _rule(p: VllmProfile) -> str:
    """The profile's encoder-graph rule, refused clearly when this module does not know it."""
    if p.encoder_graph_rule not in _RULES:
        raise ValueError(
            f"{p.label}'s encoder graph rule {p.encoder_graph_rule!r} is none of {_RULES}: "
            "this module cannot follow it; name a supported release with vllm_version=."
        )
    return p.encoder_graph_rule


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
    vllm_version: str  # the release whose _encoder_chunk this follows (the same in all)
    # The floating-point bytes transformers 5.19's position path allocates per item (x, y,
    # their sum, its padding-zeroed copy: 4 × patches × hidden × dtype); None without hidden.
    lookup_bytes_per_item: int | None = None
    steps: tuple[str, ...] = field(default=(), compare=False)


def encoder_chunk(
    patches_per_item: int,
    *,
    free_bytes: int,
    total_bytes: int,
    position_embedding_size: int = POSITION_EMBEDDING_SIZE,
    hidden_size: int | None = None,
    dtype_bytes: int = 2,
    vllm_version: str | None = None,
) -> EncoderChunk:
    """The chunk size vLLM's ``_encoder_chunk`` picks from free and total GPU memory (the
    same formula in every supported release; ``vllm_version`` only names the one).

    ``hidden_size`` (the vision tower's) and ``dtype_bytes`` (2 for bfloat16) only add
    what transformers' position path really allocates, for comparison; the chunk is vLLM's.

    >>> c = encoder_chunk(1120 * 9, free_bytes=60 * 2**30, total_bytes=80 * 2**30)
    >>> c.cost_per_item_bytes / 2**30, c.chunk
    (3.076171875, 2)
    >>> encoder_chunk(280 * 9, free_bytes=1, total_bytes=1, hidden_size=768).lookup_bytes_per_item
    15482880
    """
    p = vllm_profile(vllm_version)
    if patches_per_item <= 0:
        return EncoderChunk(patches_per_item, 0, 0, 1, p.version, steps=("no patches: chunk 1",))
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
        f"{p.label}'s cost per item: {patches_per_item} patches × 2 coordinates × "
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
    return EncoderChunk(
        patches_per_item, budget, cost, chunk, p.version, lookups, steps=tuple(steps)
    )


# ---------------------------------------------------------------------------------------
# Which graphs are captured
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EncoderGraphs:
    """The encoder CUDA graphs vLLM captures for Gemma 4 (automatic settings)."""

    token_budgets: tuple[int, ...]  # the budgets graphs are captured for, smallest first
    # Images per graph: min(max budget // smallest, smallest budget), from the *uncapped*
    # max budget (min(max_num_batched_tokens, max_model_len)) in every rule.
    max_batch_size: int
    max_frames_per_batch: int  # video frames per batch (0 when video is off)
    # The capture axis: one graph per (budget, row width) for each width here; empty
    # under the "budget" rule, which captures one graph per budget.
    row_widths: tuple[int, ...]
    # "budget" rule only: every graph's rows hold min(budget, this) soft tokens.
    fixed_row_width: int | None
    rule: str  # the profile's encoder_graph_rule: "budget", "row-width" or "grid"
    vllm_version: str  # the profile's version: which release these graphs follow
    steps: tuple[str, ...] = field(default=(), compare=False)

    @property
    def graph_count(self) -> int:
        """Graphs captured: one per budget, times the row widths where there is that axis
        (vLLM warns above 64)."""
        return len(self.token_budgets) * max(1, len(self.row_widths))

    def rows(self, budget: int, width: int | None = None) -> tuple[int, int]:
        """(rows, soft tokens per row) of the graph captured for ``budget`` (and ``width``,
        under the row-width axis), as ``prepare_encoder_cudagraph_capture_inputs`` builds
        its pixel buffer.

        * "budget": ``max(max_batch_size, max_frames_per_batch)`` rows of
          ``min(budget, fixed_row_width)`` soft tokens, whatever the images' widths;
        * "row-width": at most ``budget // width`` rows (at least one) of ``width``;
        * "grid": the same, with the frames capped at the budget by the manager (every
          frame brings at least one token).

        >>> from gemma_explore.vllm_versions import SUPPORTED
        >>> g = encoder_graph_budgets(
        ...     max_num_batched_tokens=2048, max_model_len=8192, vllm_version=SUPPORTED[0]
        ... )
        >>> g.rows(560)
        (928, 280)
        """
        if self.rule == BUDGET:
            return max(self.max_batch_size, self.max_frames_per_batch), min(
                budget, self.fixed_row_width or budget
            )
        if width not in self.row_widths:
            raise ValueError(
                f"No graph is captured for rows of {width} soft tokens: the widths are "
                f"{list(self.row_widths)} (raise the engine's max_soft_tokens to capture more)."
            )
        frames = self.max_frames_per_batch
        if self.rule == GRID:
            frames = min(frames, budget)
        return min(max(self.max_batch_size, frames), max(1, budget // width)), width


def _doubling_budgets(low: int, high: int) -> list[int]:
    """The "budget" and "row-width" rules' budgets: ``low`` doubled while it stays within
    ``high``, then ``high`` itself when the doubling missed it."""
    budgets: list[int] = []
    b = low
    while b <= high:
        budgets.append(b)
        b *= 2
    if not budgets or budgets[-1] < high:
        budgets.append(high)
    return budgets


def _round_up(n: int, step: int) -> int:
    return -(-n // step) * step


def _grid_budgets(low: int, high: int, cap: int | None) -> list[int]:
    """The "grid" rule's budgets from ``low`` to ``high`` (``high`` first lowered to
    ``cap``, but never below ``low``); both ends are always budgets.

    * Below 1024: each power of two ``base`` and its quarter steps ``base + k·(base//4)``
      (k = 1, 2, 3), so a batch pads by at most a quarter: 64, 80, 96, 112, 128, 160, …
    * 1024 to 2560: every multiple of 128 (at most an eighth of padding).
    * Above 2560: each step multiplies by 2^(1/8) (truncated), rounded up to 128:
      2816, 3072, 3456, 3840, 4224, 4608, 5120, …

    Only the points between ``low`` and ``high`` are kept.

    >>> _grid_budgets(70, 2048, 5120)[:10]
    [70, 80, 96, 112, 128, 160, 192, 224, 256, 320]
    """
    if cap is not None:
        high = min(high, max(cap, low))
    points = {low, high}
    base = 1
    while base < min(high, _QUARTER_OCTAVES_END):
        # base // 4 is 0 for 1 and 2: those octaves add only themselves
        points.update(q for k in range(4) if low <= (q := base + k * (base // 4)) <= high)
        base *= 2
    top = min(high, _LINEAR_END)
    points.update(q for q in range(_QUARTER_OCTAVES_END, top + 1, _LINEAR_STEP) if q >= low)
    q = _LINEAR_END
    while q < high:
        q = _round_up(int(q * 2 ** (1 / 8)), _LINEAR_STEP)
        if low <= q <= high:
            points.add(q)
    return sorted(points)


def encoder_graph_budgets(
    *,
    max_num_batched_tokens: int,
    max_model_len: int,
    video: bool = True,
    default_output_length: int | None = None,
    max_soft_tokens: int | None = None,
    family: str | FamilySpec = DEFAULT_FAMILY,
    vllm_version: str | None = None,
) -> EncoderGraphs:
    """The graphs ``EncoderCudaGraphManager`` captures when the user sets no budgets
    (``get_encoder_cudagraph_budget_range`` + ``_generate_budgets``), for ``family``'s
    image budgets, under the release ``vllm_version`` names (None: the installed vLLM).

    Under the row-width axis, the widths are the allowed budgets up to the engine's
    ``max_soft_tokens`` (``--mm-processor-kwargs '{"max_soft_tokens": 560}'``, at the
    top level or under ``images_kwargs``) when it is one of them, else up to
    ``default_output_length`` (the config's; None: the family's default budget), as
    ``_get_max_soft_tokens`` reads them. The "budget" rule ignores both.

    >>> from gemma_explore.vllm_versions import SUPPORTED
    >>> [encoder_graph_budgets(max_num_batched_tokens=512, max_model_len=8192,
    ...                        max_soft_tokens=560, vllm_version=v).row_widths
    ...  for v in SUPPORTED]
    [(), (70, 140, 280, 560), (70, 140, 280, 560)]
    """
    p = vllm_profile(vllm_version)
    rule = _rule(p)
    budgets_allowed, default = _budgets(family)
    low = budgets_allowed[0]
    high = min(max_num_batched_tokens, max_model_len)
    if high < low:
        raise ValueError(
            f"min(max_num_batched_tokens {max_num_batched_tokens}, max_model_len "
            f"{max_model_len}) = {high} is below the smallest image budget {low}: vLLM "
            'refuses to capture encoder graphs ("Invalid encoder cudagraph budget range"). '
            f"Raise max_num_batched_tokens to at least {low}."
        )
    budgets, made = _captured_budgets(p, rule, low, max_num_batched_tokens, max_model_len)
    batch = min(high // low, min(budgets))  # the uncapped high, in every rule
    frames = batch * VIDEO_MAX_FRAMES if video else 0
    steps = [
        f"{p.label} ({p.chosen_because}); encoder graphs are off unless "
        "--compilation-config '{\"cudagraph_mm_encoder\": true}'",
        made,
        f"max_batch_size = min({high} // {low}, smallest budget {min(budgets)}) = {batch}",
        f"max_frames_per_batch = {batch} × {VIDEO_MAX_FRAMES} = {frames}"
        if video
        else "video limit 0: no frames per batch",
    ]
    widths, fixed, graphs = _graph_rows(
        rule, budgets, budgets_allowed, default, max_soft_tokens, default_output_length
    )
    steps.append(graphs)
    return EncoderGraphs(
        tuple(budgets), batch, frames, widths, fixed, rule, p.version, tuple(steps)
    )


def _captured_budgets(
    p: VllmProfile, rule: str, low: int, max_num_batched_tokens: int, max_model_len: int
) -> tuple[list[int], str]:
    """The token budgets ``rule`` captures from the smallest image budget ``low`` up to
    min(max_num_batched_tokens, max_model_len) (the "grid" rule also capped by the
    release's ``encoder_cudagraph_max_token_budget``), and the step that says how."""
    high = min(max_num_batched_tokens, max_model_len)
    if rule == GRID:
        cap = p.encoder_graph_max_budget
        budgets = _grid_budgets(low, high, cap)
        return budgets, (
            f"budgets on the grid from {low} to min(max_num_batched_tokens "
            f"{max_num_batched_tokens}, max_model_len {max_model_len}, "
            f"encoder_cudagraph_max_token_budget {cap}) = {budgets[-1]}: "
            f"quarter octaves to {_QUARTER_OCTAVES_END}, steps of {_LINEAR_STEP} to "
            f"{_LINEAR_END}, eighth octaves above: {budgets}"
        )
    budgets = _doubling_budgets(low, high)
    return budgets, (
        f"budgets from {low} (the smallest image) doubling to min(max_num_batched_tokens "
        f"{max_num_batched_tokens}, max_model_len {max_model_len}) = {high}: {budgets}"
    )


def _graph_rows(
    rule: str,
    budgets: list[int],
    budgets_allowed: tuple[int, ...],
    default: int,
    max_soft_tokens: int | None,
    default_output_length: int | None,
) -> tuple[tuple[int, ...], int | None, str]:
    """The rows each budget's graphs hold: the row widths (one graph per budget and width)
    and the fixed row width (the "budget" rule: one graph per budget), and the step that
    counts the graphs. The widths run up to the engine's ``max_soft_tokens`` when it is an
    allowed budget, else up to ``default_output_length`` (None: the family's default)."""
    if rule == BUDGET:
        # It reads vision_config.num_soft_tokens, which Gemma 4 configs lack, and falls
        # back to _SUPPORTED_SOFT_TOKENS[2]: the default budget (test_captured_row_width_is_vllms).
        return (
            (),
            default,
            f"{len(budgets)} graphs, one per budget, rows of min(budget, {default}) soft tokens",
        )
    engine = isinstance(max_soft_tokens, int) and max_soft_tokens in budgets_allowed
    config = default if default_output_length is None else default_output_length
    cap = max_soft_tokens if engine else config
    widths = tuple(t for t in budgets_allowed if t <= cap)
    why = (
        f"the engine's max_soft_tokens {cap}"
        if engine
        else f"default_output_length {cap}"
        + ("" if max_soft_tokens is None else f" ({max_soft_tokens} is no allowed budget)")
    )
    return (
        widths,
        None,
        f"{len(budgets)} × {len(widths)} = {len(budgets) * len(widths)} graphs, one per "
        f"budget and row width {list(widths)} (widths up to {why})",
    )


# ---------------------------------------------------------------------------------------
# Which images share a replay
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EncoderBatch:
    """Items replayed together on one graph."""

    items: tuple[int, ...]  # indices into the request's items, in the order vLLM runs them
    tokens: int  # the tokens the budget must hold (each image as the widest, with the axis)
    budget: int | None  # the graph's token budget; None: run eagerly (too big)
    row_width: int  # the widest item of the batch: the graph key under the row-width axis


def _fit(budgets: tuple[int, ...], n: int) -> int | None:
    """The smallest budget that holds ``n`` tokens (0 for none), or None."""
    if n == 0:
        return 0
    i = bisect_left(budgets, n)
    return budgets[i] if i < len(budgets) else None


def _graphs_profile(graphs: EncoderGraphs, vllm_version: str | None) -> VllmProfile:
    """The profile the graphs were built for; a different ``vllm_version`` is refused."""
    p = vllm_profile(graphs.vllm_version if vllm_version is None else vllm_version)
    if p.version != graphs.vllm_version:
        raise ValueError(
            f"These graphs follow vLLM {graphs.vllm_version}, not {p.label}: build them "
            f"with encoder_graph_budgets(..., vllm_version={vllm_version!r})."
        )
    return p


def _greedy(item_tokens: list[int], packed: list[int], graphs: EncoderGraphs) -> list[list[int]]:
    """vLLM's greedy packing (``_execute_local`` of the doubling rules): items go
    smallest first; one joins the open batch while the batch has fewer than
    ``max_batch_size`` items and stays within the largest budget, unless running it alone
    is cheaper (the two smaller graphs' budgets add up to less than the merged one's and
    it alone needs at least as big a graph as the batch so far)."""
    budgets = graphs.token_budgets
    top = max(budgets)
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
    return batches


def pack_encoder_items(
    item_tokens: list[int], graphs: EncoderGraphs, *, vllm_version: str | None = None
) -> tuple[EncoderBatch, ...]:
    """Which items share a graph, as the manager's ``_execute_local`` decides under the
    graphs' release (``vllm_version``: the same one, or None).

    ``item_tokens`` are the rows each image brings: Gemma 4's processor pads every image
    to its budget × 9 patches, so at one budget each image counts as the budget, whatever
    its size.

    * "budget": greedy packing, smallest first, each image counting its own rows; each
      batch replays the smallest budget that holds it.
    * "row-width": the same packing, but every image of the call counts as the widest
      (a batch is padded to it), and the graph replayed is the one of (budget, widest
      row of the batch).
    * "grid": no packing: the whole call is one batch, largest image first, on the
      smallest budget that holds widest × count; it runs eagerly when it has more images
      than ``max_batch_size`` or no budget holds it.

    >>> from gemma_explore.vllm_versions import SUPPORTED
    >>> def packed(v):
    ...     g = encoder_graph_budgets(max_num_batched_tokens=2048, max_model_len=8192,
    ...                               vllm_version=v)
    ...     return [(b.items, b.budget) for b in pack_encoder_items([280, 70, 70, 1120], g)]
    >>> packed(SUPPORTED[0])
    [((1, 2), 140), ((0,), 280), ((3,), 1120)]
    >>> packed(SUPPORTED[-1])  # 4 × 1120 tokens: more than any budget, so all eager
    [((3, 0, 1, 2), None)]
    """
    rule = _rule(_graphs_profile(graphs, vllm_version))
    if not item_tokens:
        return ()
    widest = max(item_tokens)
    if rule == GRID:
        # Largest first (a stable sort: equal images keep their order)
        order = sorted(range(len(item_tokens)), key=lambda i: item_tokens[i], reverse=True)
        tokens = widest * len(order)
        fits = len(order) <= graphs.max_batch_size
        budget = _fit(graphs.token_budgets, tokens) if fits else None
        return (EncoderBatch(tuple(order), tokens, budget, widest),)
    packed = [widest] * len(item_tokens) if rule == ROW_WIDTH else list(item_tokens)
    out = []
    for batch in _greedy(item_tokens, packed, graphs):
        tokens = sum(packed[i] for i in batch)
        out.append(
            EncoderBatch(
                tuple(batch),
                tokens,
                _fit(graphs.token_budgets, tokens),
                max(item_tokens[i] for i in batch),
            )
        )
    return tuple(out)


# ---------------------------------------------------------------------------------------
# Replaying a captured graph: which rows reach the projection (issue 22, item 6)
# ---------------------------------------------------------------------------------------


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
    fits: bool  # a graph exists for the batch and its patches fit its pixel buffer
    right_rows: bool  # every kept row belongs to its own image (strides agree)


# What the gathered rows are cast to before embed_vision, per rule (the replay forward's
# own expression).
_CAST = {
    BUDGET: "self.embed_vision.embedding_projection.weight.dtype",
    ROW_WIDTH: "self.embed_vision.embedding_projection.weight.dtype",
    GRID: "self.model_dtype",
}


@dataclass(frozen=True)
class EncoderReplay:
    """What vLLM's encoder graph path does with a list of images."""

    batches: tuple[ReplayBatch, ...]
    vllm_version: str  # the profile's version: which release's path this follows
    # The gathered rows' dtype before the projection, in vLLM's words: the projection's
    # weight dtype (a quantized projection's storage dtype), or the model's dtype.
    cast_to: str
    # each part of the path → the release whose code it follows, and what it does
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
    vllm_version: str | None = None,
    pool_ratio: int = POOL_RATIO,
) -> EncoderReplay:
    """Follow vLLM's encoder CUDA-graph path for images of ``item_patches`` patch rows
    each (Gemma 4's processor pads an image to its budget × 9 rows), under the graphs'
    release (``vllm_version``: the same one, or None): the packing, then per batch the
    graph, the replay buffers and the ``gather_indices``. (Graphs are off by default:
    this is what happens with ``cudagraph_mm_encoder`` on.)

    * **Packing and eager fallback** (:func:`pack_encoder_items`).
    * **Item selection** (``select_encoder_cudagraph_items``, every rule): the batch's
      images are sliced out of the request; the replay buffers pad them to the widest.
    * **Capture width**: the "budget" rule captures each budget's graph with rows of
      ``min(budget, 280)`` soft tokens; the other rules one graph per (budget, row
      width), replaying the one of the batch's width (none for a width above the
      engine's ``max_soft_tokens``: vLLM then fails an assertion).
    * **gather_indices** (every rule): computed with the *batch's* width as the stride
      of the flat pooled output (:func:`replay_gather_indices`), while the graph pools
      rows of the *captured* width. When the two differ ("budget", an image budget other
      than the graph's width), item 2 onwards reads another image's rows; when the batch
      is wider than the capture ("budget", a 560 or 1120 image), the buffer copy fails.
    * **dtype cast** (``cast_to``): the gathered rows are cast to the projection's
      weight dtype ("budget", "row-width"), or to the model's dtype ("grid").

    ``valid_tokens`` (default: every row) are the image's placeholders: the rows past
    them are padding the pooler puts last, and the runner reads only the first ones.

    Two 140-token images, one release after the other:

    >>> from gemma_explore.vllm_versions import SUPPORTED
    >>> def two_140_token_images(v):
    ...     g = encoder_graph_budgets(max_num_batched_tokens=2048, max_model_len=8192,
    ...                               vllm_version=v)
    ...     replay = plan_encoder_replay([1260, 1260], graphs=g, vllm_version=v)
    ...     return replay.ok, replay.batches[0].budget
    >>> [two_140_token_images(v) for v in SUPPORTED]
    [(False, 280), (True, 280), (True, 320)]
    """
    p = _graphs_profile(graphs, vllm_version)
    rule = _rule(p)
    tokens = [n // pool_ratio for n in item_patches]
    valid = list(valid_tokens) if valid_tokens is not None else tokens
    steps = [
        f"{p.label}: {len(tokens)} images of {sorted(set(tokens))} rows each; graphs at "
        f"budgets {list(graphs.token_budgets)}, up to {graphs.max_batch_size} images a graph.",
    ]
    batches = []
    for b in pack_encoder_items(tokens, graphs, vllm_version=p.version):
        batch, step = _replay_batch(b, tokens, valid, graphs, rule=rule, pool_ratio=pool_ratio)
        batches.append(batch)
        steps.append(step)
    cast = _CAST[rule]
    steps.append(f"The gathered rows are cast to {cast}, then projected ({p.label}).")
    return EncoderReplay(tuple(batches), p.version, cast, _replay_versions(p), tuple(steps))


def _replay_batch(
    b: EncoderBatch,
    tokens: list[int],
    valid: list[int],
    graphs: EncoderGraphs,
    *,
    rule: str,
    pool_ratio: int,
) -> tuple[ReplayBatch, str]:
    """One packed batch through the graph path: its graph, gather indices and verdict."""
    width = max(tokens[i] for i in b.items)  # replay buffers pad to the widest
    its = tuple(tokens[i] for i in b.items)
    if b.budget is None:
        batch = ReplayBatch(
            b.items, its, tuple(valid[i] for i in b.items), None, width, None, (), True, True
        )
        why = (
            f"{len(b.items)} images, more than max_batch_size {graphs.max_batch_size}"
            if rule == GRID and len(b.items) > graphs.max_batch_size
            else f"{b.tokens} tokens exceed the largest graph ({max(graphs.token_budgets)})"
        )
        return batch, f"images {list(b.items)}: {why}: encoder_eager_forward."
    if rule == BUDGET:
        graph_width = graphs.rows(b.budget)[1]
        fits = width <= graph_width  # the batch must fit the capture's rows
    else:
        # only widths up to the engine's max_soft_tokens are captured: a wider batch finds
        # no graph (the manager then asserts)
        graph_width = width
        fits = width in graphs.row_widths
    gather = replay_gather_indices(list(its), width)
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
        if not fits and rule != BUDGET
        else f"the copy into the graph's {graph_width * pool_ratio}-patch rows fails"
        if not fits
        else f"images after the first read another image's rows (stride {width} "
        f"assumed, {graph_width} computed)"
    )
    return batch, (
        f"images {list(b.items)}: graph {b.budget} with rows of {graph_width} tokens; "
        f"gather keeps {len(gather)} rows at stride {width}: {what}."
    )


_GREEDY = (
    "greedy, smallest first, into several replays; a batch over the largest budget runs eagerly"
)
_WIDEST = "each image of the call as the widest one"
_PER_WIDTH = "one graph per budget and row width, widths up to the engine's max_soft_tokens"
# Each part of the replay path → what each rule does there.
_PARTS: dict[str, dict[str, str]] = {
    "token budgets": {
        BUDGET: "doubling from 70 to min(max_num_batched_tokens, max_model_len)",
        ROW_WIDTH: "doubling from 70 to min(max_num_batched_tokens, max_model_len)",
        GRID: "quarter octaves, steps of 128, eighth octaves; at most "
        "encoder_cudagraph_max_token_budget",
    },
    "packing and eager fallback": {
        BUDGET: _GREEDY,
        ROW_WIDTH: _GREEDY,
        GRID: "one replay per call, largest first; the whole call runs eagerly beyond "
        "max_batch_size images or the largest budget",
    },
    "tokens an image counts": {BUDGET: "its own rows", ROW_WIDTH: _WIDEST, GRID: _WIDEST},
    "row width of a captured graph": {
        BUDGET: "min(budget, 280), one graph per budget",
        ROW_WIDTH: _PER_WIDTH,
        GRID: _PER_WIDTH,
    },
    "item selection": dict.fromkeys(_RULES, "the batch's images, padded to the widest"),
    "gather_indices": dict.fromkeys(_RULES, "at the stride of the batch's widest image"),
    "dtype cast before the projection": {rule: f"to {cast}" for rule, cast in _CAST.items()},
}


def _replay_versions(p: VllmProfile) -> dict[str, str]:
    """Each part of the replay path → what ``p``'s release does there, and since which
    supported release it has done so (the oldest of the unbroken run up to ``p``)."""
    releases = list(PROFILES.values())  # oldest first
    here = next(i for i, q in enumerate(releases) if q.version == p.version)
    out = {}
    for part, by_rule in _PARTS.items():
        what = by_rule[_rule(p)]
        first = here
        while first > 0 and by_rule[_rule(releases[first - 1])] == what:
            first -= 1
        since = "" if first == here else f"; the same since {releases[first].label}"
        out[part] = f"{p.label}: {what}{since}"
    return out
