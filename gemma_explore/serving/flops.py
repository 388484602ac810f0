"""What one item costs to encode, and one prompt token to prefill, at released size.

Each count is PyTorch's own: the real transformers (or timm) modules of a checkpoint
are built on the ``meta`` device (shapes only, no memory) and run under
``torch.utils.flop_counter.FlopCounterMode`` on inputs of the shape the processor
hands them. Attention runs as transformers' ``eager`` implementation, so its matmuls
are counted too (a fused kernel does the same arithmetic; a windowed kernel skips the
masked scores of sliding layers, which eager computes).

- **images and video frames** (Gemma 4): the processor pads every image to
  ``max_soft_tokens × 9`` patches, so the cost depends on the budget only. The ViT runs
  on all of them; its pooler's one-hot average (the one data-dependent step, which the
  meta device cannot run) is counted as the matmul it is, ``(budget × patches) @
  (patches × width)``.
- **audio clips**: the mel frames (or Unified's raw 640-sample frames) of a clip of
  that length, through the tower (or embedder).
- **Gemma 3n**: a fixed 768×768 px (W×H) image through MobileNet-V5; clips through the
  Conformer.
- **prefill**: the language model on a prompt of ``num_tokens`` tokens, divided by them.

The tests hold these counts to ``FlopCounterMode`` running the tiny models' own
``get_image_features`` / ``get_audio_features`` on CPU, and to written-out arithmetic at
released shapes.

>>> report = flops_report("google/gemma-4-E2B-it")
>>> round(report.cost("image", 1120).flops / report.cost("image", 70).flops, 1)
38.3
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from gemma_explore.facts.families import get_family
from gemma_explore.tables import ShownAsTable, Table

__all__ = [
    "CLIP_SECONDS",
    "EncoderCost",
    "FlopsReport",
    "encoder_flops",
    "flops_report",
    "flops_table",
    "prefill_flops",
]

CLIP_SECONDS = (5.0, 10.0, 30.0)  # clip lengths the report prices
PREFILL_TOKENS = 4096  # the prompt length prefill FLOPs per token are quoted at


@dataclass(frozen=True)
class EncoderCost:
    """FLOPs to turn one item into soft tokens."""

    item: str  # "image", "video frame" or "audio clip"
    setting: int | float  # the image budget (max_soft_tokens) or the clip's seconds
    soft_tokens: int  # embeddings the item becomes
    flops: int  # counted by FlopCounterMode (multiply-adds × 2)
    fixed: bool = False  # Gemma 3n: every image is the same 256 tokens (no budget)

    @property
    def label(self) -> str:
        """The setting in words ("budget 280", "10 s", "fixed 256")."""
        if self.item == "audio clip":
            return f"{self.setting:g} s"
        return f"fixed {self.setting}" if self.fixed else f"budget {self.setting}"


@dataclass(frozen=True)
class FlopsReport(ShownAsTable):
    """Every item cost and the prefill cost per token, for one checkpoint."""

    model: str
    costs: tuple[EncoderCost, ...]
    prefill_flops_per_token: int  # the language model, averaged over PREFILL_TOKENS tokens
    prefill_tokens: int
    steps: tuple[str, ...] = field(default=(), compare=False)

    def cost(self, item: str, setting: int | float) -> EncoderCost:
        """The cost of one ``item`` ("image", "video frame", "audio clip") at ``setting``."""
        for c in self.costs:
            if c.item == item and c.setting == setting:
                return c
        raise ValueError(f"{self.model} has no {item} at {setting!r}; see .costs.")

    def table(self) -> Table:
        rows = [
            (
                c.item,
                c.label,
                c.soft_tokens,
                f"{c.flops / 1e9:,.1f}",
                f"{c.flops / max(self.prefill_flops_per_token, 1):,.0f}",
            )
            for c in self.costs
        ]
        return Table(
            ("item", "setting", "soft tokens", "GFLOPs", "= prompt tokens of prefill"),
            tuple(rows),
            title=f"{self.model}: encoder FLOPs per item",
            notes=self.steps,
            notes_title="steps",
        )

    def __str__(self) -> str:
        return self.table().text()


# ----------------------------------------------------------------------- counting


def _count(fn: Any) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    return int(counter.get_total_flops())


def _eager(config: Any) -> Any:
    """A copy of ``config`` (and its sub-configs) with eager attention: its matmuls count."""
    config = copy.deepcopy(config)
    for sub in (
        config,
        *(getattr(config, k, None) for k in ("vision_config", "audio_config", "text_config")),
    ):
        if sub is not None:
            # A timm tower (its config names a timm ``architecture``: 3n's MobileNet-V5)
            # picks its own attention, scaled_dot_product_attention, whose matmuls
            # FlopCounterMode counts too; asking it for eager only draws a warning.
            sub._attn_implementation = "sdpa" if hasattr(sub, "architecture") else "eager"
    text = config.get_text_config()
    if getattr(text, "enable_moe_block", False):
        # One matmul per (token, routed expert): the FLOPs of the k experts each token
        # runs, with shapes the meta device can follow (the grouped kernel wants bf16).
        text._experts_implementation = "batched_mm"
    return config


@cache
def _built(key: str, part: str, device: str) -> Any:
    """``(tower, embedder)`` of one part of a config (eager attention), built once per
    (config, part, device): :func:`~gemma_explore.models.encoders.build_part`."""
    import torch

    from gemma_explore.models.encoders import build_part

    with torch.device(device):
        return build_part(_eager(_CONFIGS[key]), part)


_CONFIGS: dict[str, Any] = {}  # config JSON → config (the key _built caches on)


def _key(config: Any) -> str:
    key = config.to_json_string(use_diff=False)
    _CONFIGS.setdefault(key, config)
    return key


def _grid(budget: int) -> tuple[int, int]:
    """(rows, cols) of patches for a budget: 3k × 3(budget / k) with k the divisor of
    the budget nearest its square root (budget × 9 patches, no padding)."""
    k = max(d for d in range(1, int(budget**0.5) + 1) if budget % d == 0)
    return 3 * k, 3 * (budget // k)


def _config_of(source: Any) -> Any:
    """A config as given, or read from a hub id / local folder (no network: a released
    id's local Hugging Face cache copy, else the built-in facts)."""
    import os

    if not isinstance(source, str | os.PathLike):
        return source
    if os.path.isdir(source):
        from transformers import AutoConfig

        return AutoConfig.from_pretrained(os.fspath(source))
    from gemma_explore.facts.released import is_released

    if not is_released(str(source)):
        raise ValueError(
            f"encoder_flops: {source!r} is neither a released checkpoint id nor a local "
            "folder; pass a transformers config, a released id (e.g. google/gemma-4-E4B-it) "
            "or a checkpoint folder."
        )
    from gemma_explore.models.checkpoints import config_for

    return config_for(str(source))[0]


def encoder_flops(
    config: Any,
    item: str,
    *,
    max_soft_tokens: int | None = None,
    seconds: float | None = None,
    device: str = "meta",
) -> tuple[int, int]:
    """(soft tokens, FLOPs) of one item through ``config``'s tower (or embedder) and its
    projection into the language model, counted by ``FlopCounterMode``. ``config``: a
    transformers config, a released hub id or a local checkpoint folder.

    ``item`` is "image", "video frame" (Gemma 4: ``max_soft_tokens``, default the
    family's image / video budget) or "audio clip" (``seconds``). One pass per path:
    a fixed squash through a CNN (:func:`_fixed_image_flops`), a budget of patches
    through a ViT and its pooler (:func:`_vit_image_flops`), raw blocks through an
    embedder (:func:`_embedder_image_flops`), a clip (:func:`_audio_flops`).

    >>> from gemma_explore.facts.released import released_config
    >>> encoder_flops(released_config("google/gemma-4-31B-it"), "image",
    ...               max_soft_tokens=70)[0]
    70
    """
    import torch

    config = _config_of(config)
    spec = get_family(config.model_type)
    key = _key(config)
    with torch.no_grad():
        if item == "audio clip":
            if getattr(config, "audio_config", None) is None:
                name = config._name_or_path or "This checkpoint"
                raise ValueError(f"{name} has no audio tower.")
            return _audio_flops(spec, _built(key, "audio", device), seconds or 10.0, device)
        if item not in ("image", "video frame"):
            raise ValueError(f"item must be 'image', 'video frame' or 'audio clip', not {item!r}.")
        parts = _built(key, "vision", device)
        if spec.image.fixed_soft_tokens is not None:  # Gemma 3n: one size, one count
            return _fixed_image_flops(spec, parts, config.vision_config.hidden_size, device)
        default = spec.image.video_budget if item == "video frame" else spec.image.default_budget
        budget = max_soft_tokens or default
        if spec.encoder_free:
            return _embedder_image_flops(spec, parts, budget, device)
        return _vit_image_flops(spec, parts, budget, config.vision_config.hidden_size, device)


def _fixed_image_flops(spec: Any, parts: tuple, width: int, device: str) -> tuple[int, int]:
    """3n: every image is squashed to one size; the CNN's map is the soft tokens."""
    import torch

    tower, proj = parts
    h, w = spec.image.fixed_size
    n = spec.image.fixed_soft_tokens
    pixels = torch.zeros(1, 3, h, w, device=device)  # (1, 3, 768, 768)
    feats = torch.zeros(1, n, width, device=device)  # (1, 256, width)

    def run() -> None:  # as get_image_features runs it: the map, unpooled, then projected
        tower(pixel_values=pixels, do_pooling=False)
        proj(inputs_embeds=feats)

    return n, _count(run)


def _positions(budget: int, device: str) -> Any:
    """(x, y) of every patch of the budget's grid: ``(1, 9B, 2)``."""
    import torch

    rows, cols = _grid(budget)
    ys, xs = torch.meshgrid(torch.arange(rows), torch.arange(cols), indexing="ij")
    return torch.stack([xs.flatten(), ys.flatten()], -1)[None].to(device)  # (1, 9B, 2)


def _embedder_image_flops(spec: Any, parts: tuple, budget: int, device: str) -> tuple[int, int]:
    """Encoder-free (Unified): one merged block of k×k patches per token, through the
    embedder, which is the whole path (its projection included)."""
    import torch

    _, embedder = parts
    k = spec.image.pooling_kernel
    values = 3 * spec.image.cell_px**2  # RGB values of one block (6912)
    blocks = torch.zeros(1, budget, values, device=device)  # (1, B, 6912)
    pos = _positions(budget, device)[0]  # (9B, 2) patch positions
    rows, cols = _grid(budget)
    grid = pos.reshape(rows, cols, 2)[::k, ::k] // k  # one (x, y) per block
    bpos = grid.reshape(1, budget, 2)  # (1, B, 2)
    return budget, _count(lambda: embedder(pixel_values=blocks, image_position_ids=bpos))


def _vit_image_flops(
    spec: Any, parts: tuple, budget: int, width: int, device: str
) -> tuple[int, int]:
    """Gemma 4: the ViT runs on all ``budget × 9`` patches the processor pads to; its
    pooler's one-hot average is counted as the matmul it is; then the projection."""
    import torch

    tower, proj = parts
    pos = _positions(budget, device)
    n = pos.shape[1]
    pixels = torch.zeros(1, n, 3 * spec.image.patch_size**2, device=device)  # (1, 9B, 768)
    weights = torch.zeros(1, budget, n, device=device)  # the pooler's one-hot average
    pooled = torch.zeros(1, budget, width, device=device)  # (1, B, width)

    def run() -> None:
        embeds = tower.patch_embedder.input_proj(pixels)  # (1, 9B, width)
        hidden = tower.encoder(
            inputs_embeds=embeds, attention_mask=None, pixel_position_ids=pos
        ).last_hidden_state  # (1, 9B, width)
        torch.bmm(weights, hidden)  # (1, B, width): the pooler
        proj(inputs_embeds=pooled)  # (1, B, text width)

    return budget, _count(run)


def _audio_flops(spec: Any, parts: tuple, seconds: float, device: str) -> tuple[int, int]:
    """A clip of ``seconds``: its mel frames through the tower and the projection, or
    (encoder-free) its raw frames straight into the projection."""
    import numpy as np
    import torch

    from gemma_explore.plans.audio import plan_audio

    tower, proj = parts
    rate = spec.audio.sampling_rate
    plan = plan_audio((np.zeros(int(round(seconds * rate)), np.float32), rate), family=spec)
    frames = plan.num_feature_frames
    if spec.encoder_free:  # raw frames of samples_per_token samples, one token each
        rows = torch.zeros(1, frames, spec.audio.samples_per_token, device=device)  # (1, T, 640)
        return frames, _count(lambda: proj(inputs_embeds=rows))
    mel = torch.zeros(1, frames, spec.audio.mel_bins, device=device)  # (1, T, 128)
    # Every frame real: all False where the tower's mask marks padding (3n), else all True.
    fill = torch.zeros if spec.audio.tower_mask_is_padding else torch.ones
    mask = fill(1, frames, dtype=torch.bool, device=device)  # (1, T)
    holder: dict[str, Any] = {}

    def run() -> None:
        out = tower(mel, mask)
        hidden = out[0] if isinstance(out, tuple) else out.last_hidden_state  # (1, tokens, d)
        holder["tokens"] = hidden.shape[1]
        proj(inputs_embeds=hidden)

    flops = _count(run)
    return int(holder["tokens"]), flops


def prefill_flops(config: Any, num_tokens: int = PREFILL_TOKENS, *, device: str = "meta") -> int:
    """FLOPs of the language model over a ``num_tokens`` prompt (eager attention: every
    layer scores all pairs; the mask is passed in, as the meta device cannot build it).

    >>> from gemma_explore.facts.released import released_config
    >>> prefill_flops(released_config("google/gemma-4-31B-it"), 1024) > 6e13
    True
    """
    import torch

    lm, _ = _built(_key(config), "text", device)
    ids = torch.zeros(1, num_tokens, dtype=torch.long, device=device)  # (1, T)
    mask = torch.zeros(1, 1, num_tokens, num_tokens, device=device)  # (1, 1, T, T)
    masks = {"full_attention": mask, "sliding_attention": mask}
    pos = torch.arange(num_tokens, device=device)[None]  # (1, T)
    kwargs: dict[str, Any] = {
        "input_ids": ids,
        "attention_mask": masks,
        "position_ids": pos,
        "use_cache": False,
    }
    with torch.no_grad():
        return _count(lambda: lm(**kwargs))


@cache
def flops_report(model_id: str) -> FlopsReport:
    """Encoder FLOPs per image at each budget, per video frame and per clip length, and
    the language model's prefill FLOPs per token, for one released checkpoint.

    >>> flops_report("google/gemma-4-E2B-it").cost("video frame", 70).soft_tokens
    70
    """
    from gemma_explore.facts.released import released_config

    config = released_config(model_id)
    spec = get_family(config.model_type)
    costs: list[EncoderCost] = []
    budgets = spec.image.budgets or (spec.image.fixed_soft_tokens,)
    for b in budgets:
        n, f = encoder_flops(config, "image", max_soft_tokens=b if spec.image.budgets else None)
        costs.append(EncoderCost("image", b, n, f, fixed=not spec.image.budgets))
    if spec.has_video:
        b = spec.image.video_budget
        n, f = encoder_flops(config, "video frame", max_soft_tokens=b)
        costs.append(EncoderCost("video frame", b, n, f))
    if config.audio_config is not None:
        for s in CLIP_SECONDS:
            n, f = encoder_flops(config, "audio clip", seconds=s)
            costs.append(EncoderCost("audio clip", s, n, f))
    per_token = prefill_flops(config, PREFILL_TOKENS) // PREFILL_TOKENS
    steps = (
        "built on the meta device from the released config; counted by FlopCounterMode",
        f"prefill: the language model over {PREFILL_TOKENS} tokens, divided by them "
        "(eager attention scores every pair, sliding layers included)",
        "last column: the item's FLOPs in prompt tokens of prefill",
    )
    return FlopsReport(model_id, tuple(costs), per_token, PREFILL_TOKENS, steps)


def flops_table(model_ids: tuple[str, ...] | None = None) -> Table:
    """One table: each checkpoint's image at the smallest and largest budget (1120 vs
    70), a video frame, a 30 s clip, and prefill per token.

    >>> flops_table(("google/gemma-4-E2B-it",)).rows[0][:4]
    ('google/gemma-4-E2B-it', '211 (budget 70)', '8,070 (budget 1120)', '38.3×')
    """
    from gemma_explore.facts.released import RELEASED_IDS

    rows = []
    longest = max(CLIP_SECONDS)  # the clip the table prices
    for model_id in model_ids or RELEASED_IDS:
        r = flops_report(model_id)
        images = [c for c in r.costs if c.item == "image"]
        lo, hi = images[0], images[-1]
        frame = next((c for c in r.costs if c.item == "video frame"), None)
        clip = next((c for c in r.costs if c.item == "audio clip" and c.setting == longest), None)
        rows.append(
            (
                model_id,
                f"{lo.flops / 1e9:,.0f} ({lo.label})",
                f"{hi.flops / 1e9:,.0f} ({hi.label})",
                f"{hi.flops / lo.flops:.1f}×",
                "—" if frame is None else f"{frame.flops / 1e9:,.0f}",
                "—" if clip is None else f"{clip.flops / 1e9:,.0f}",
                f"{r.prefill_flops_per_token / 1e9:,.1f}",
            )
        )
    return Table(
        (
            "checkpoint",
            "image, smallest (GFLOPs)",
            "image, largest (GFLOPs)",
            "ratio",
            "video frame (GFLOPs)",
            f"{longest:g} s clip (GFLOPs)",
            "prefill / token (GFLOPs)",
        ),
        tuple(rows),
        title="encoder and prefill FLOPs at released size (FlopCounterMode, meta device)",
    )
