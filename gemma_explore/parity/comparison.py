"""The same photo and clip through Gemma 3n, Gemma 4 and Gemma 4 Unified.

:func:`compare_families` plans one image and one clip for each family (pure
arithmetic, the same plans the rest of the package uses), adds what vLLM's prompt
reserves for the clip, and, when asked, the released size of what turns pixels and
samples into soft tokens: a tower, or (Unified) an embedder.

>>> cmp = compare_families((1080, 1920), 16_000 * 5, sizes=False)
>>> [r.image_tokens for r in cmp.rows], [r.audio_tokens for r in cmp.rows]
([256, 264, 264], [188, 125, 125])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gemma_explore.facts.families import FAMILIES, get_family
from gemma_explore.models.encoders import EncoderSizes, encoder_sizes
from gemma_explore.plans.audio import AudioPlan, plan_audio
from gemma_explore.plans.image import ImagePlan, plan_image
from gemma_explore.plans.vllm import vllm_audio_tokens
from gemma_explore.sizes import size_label
from gemma_explore.tables import ShownAsTable, Table

__all__ = ["FamilyComparison", "FamilyRow", "compare_families"]


@dataclass(frozen=True)
class FamilyRow:
    """One family's view of the same image and clip."""

    family: str
    display_name: str
    image_plan: ImagePlan = field(repr=False)
    audio_plan: AudioPlan | None = field(repr=False)  # None: no clip given
    image_tokens: int  # soft tokens (= image placeholders)
    audio_tokens: int | None  # placeholders transformers writes
    vllm_audio_tokens: int | None  # placeholders vLLM's prompt writes (Unified: fewer)
    image_encoder: str  # tower or embedder, in words
    audio_encoder: str
    sizes: EncoderSizes | None = None  # released parameter counts (None: not asked)


@dataclass(frozen=True)
class FamilyComparison(ShownAsTable):
    """Rows for each family, in order; render with ``.table()`` or ``show_three_way``."""

    rows: tuple[FamilyRow, ...]
    image_size: tuple[int, int]  # (height, width) px
    audio_seconds: float | None

    def table(self) -> Table:
        head = ("family", "image tokens", "audio tokens (vLLM)", "vision params", "audio params")

        def params(n: int | None) -> str:
            return "—" if n is None else f"{n / 1e6:,.1f} M"

        body = []
        for r in self.rows:
            audio = "—" if r.audio_tokens is None else str(r.audio_tokens)
            if r.vllm_audio_tokens not in (None, r.audio_tokens):
                audio += f" ({r.vllm_audio_tokens})"
            s = r.sizes
            body.append(
                (
                    r.display_name,
                    r.image_tokens,
                    audio,
                    params(s.vision_params if s else None),
                    params(s.audio_params if s else None),
                )
            )
        h, w = self.image_size
        clip = "" if self.audio_seconds is None else f" and a {self.audio_seconds:.2f} s clip"
        return Table(
            head,
            tuple(body),
            title=f"One {size_label((h, w))} image{clip}, three families",
            notes=tuple(
                f"{r.display_name}: {r.image_encoder}; {r.audio_encoder}" for r in self.rows
            ),
        )

    def __repr__(self) -> str:
        return self.table().text()


def compare_families(
    image: Any,
    audio: Any = None,
    *,
    max_soft_tokens: int | None = None,
    families: tuple[str, ...] = tuple(FAMILIES),
    sizes: bool = True,
) -> FamilyComparison:
    """Plan ``image`` (and ``audio``) for each family; ``sizes`` counts the released
    towers and embedders on the meta device (a few seconds the first time).

    ``max_soft_tokens`` is the Gemma 4 / Unified budget (Gemma 3n has none).
    """
    # A file object can be read once: keep its bytes, which every family's plan can read.
    image = image.read() if hasattr(image, "read") else image
    audio = audio.read() if hasattr(audio, "read") else audio
    rows = []
    image_plan = None
    audio_plan = None
    for name in families:
        spec = get_family(name)
        budget = max_soft_tokens if spec.image.budgets else None
        image_plan = plan_image(image, family=spec.name, max_soft_tokens=budget)
        audio_plan = None if audio is None else plan_audio(audio, family=spec.name)
        rows.append(
            FamilyRow(
                family=spec.name,
                display_name=spec.display_name,
                image_plan=image_plan,
                audio_plan=audio_plan,
                image_tokens=image_plan.num_soft_tokens,
                audio_tokens=None if audio_plan is None else audio_plan.num_soft_tokens,
                vllm_audio_tokens=(
                    None
                    if audio_plan is None
                    else vllm_audio_tokens(audio_plan.num_samples, family=spec)
                ),
                image_encoder=spec.image_encoder,
                audio_encoder=spec.audio_encoder,
                sizes=encoder_sizes(spec.name) if sizes else None,
            )
        )
    return FamilyComparison(
        tuple(rows),
        image_plan.original_size,
        None if audio_plan is None else audio_plan.duration_s,
    )
