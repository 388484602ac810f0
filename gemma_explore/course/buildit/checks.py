"""The build-it track's checks: a learner's five functions against transformers' and
vLLM's own.

Run them with ``python -m gemma_explore.course.buildit check DIR`` (or ``pytest`` on this
file with ``GEMMA_EXPLORE_BUILDIT=DIR``); :func:`~gemma_explore.course.buildit.implementation`
picks whose functions are checked. Each ``check_*`` function takes the learner's module and
raises ``AssertionError`` naming the first input where it parts from the real library;
the ``test_*`` functions are pytest's way in. Nothing here is a hard-coded answer: every
expected value is computed by transformers, vLLM or the real towers at check time.

>>> callable(check_resize) and callable(check_video_stamps)
True
"""

from __future__ import annotations

import random
import types
from typing import Any

import pytest

from gemma_explore.course.buildit import implementation

__all__ = [
    "check_audio_slots",
    "check_newlines",
    "check_raw_audio",
    "check_resize",
    "check_video_stamps",
]

BUDGETS = (70, 140, 280, 560, 1120)
# Clip lengths (16 kHz samples) across every rule: under one frame, one window's edges,
# the 160-sample windows where vLLM is short, a partial last token, 30 s and past it.
CLIPS = (100, 513, 800, 1_280, 12_850, 38_560, 80_000, 480_000, 496_000)


def _tiny(name: str) -> Any:
    from gemma_explore.course.exercises.common import tiny

    return tiny(name)


def _parts(what: str, got: Any, want: Any, where: str) -> str:
    return f"{what}: yours gives {got!r}, {where} gives {want!r}."


def check_resize(module: types.ModuleType) -> None:
    """``resize_for_budget`` against transformers' ``get_aspect_ratio_preserving_size``."""
    from transformers.models.gemma4.image_processing_gemma4 import (
        get_aspect_ratio_preserving_size,
    )

    draw = random.Random(0)
    sizes = [(3, 900), (900, 3), (1, 8192), (8192, 1), (768, 768), (900, 1200)]
    sizes += [(draw.randint(1, 8192), draw.randint(1, 8192)) for _ in range(300)]
    for h, w in sizes:
        for budget in BUDGETS:
            want = get_aspect_ratio_preserving_size(
                height=h, width=w, patch_size=16, max_patches=budget * 9, pooling_kernel_size=3
            )
            got = tuple(module.resize_for_budget(h, w, budget))
            assert got == want, _parts(f"{h}×{w} px (H×W) at {budget}", got, want, "transformers")


def check_audio_slots(module: types.ModuleType) -> None:
    """``gemma3n_audio_tokens`` against the tiny Gemma 3n's real audio tower and processor."""
    from gemma_explore.parity.checks import check_audio_parity

    bundle = _tiny("tiny-gemma3n")
    for n in (800, 32_000, 38_560, 117_000, 480_000, 496_000):
        report = check_audio_parity(n, bundle=bundle, use_vllm=False)
        slots = next(r for r in report.rows if r.step == "soft tokens").transformers
        want = (report.encoder_count, max(slots - report.encoder_count, 0))
        got = tuple(module.gemma3n_audio_tokens(n))
        assert got == want, _parts(f"{n} samples: (real, padding)", got, want, "the Gemma 3n tower")


def _vllm_gemma3n_merge() -> Any:
    """vLLM's own Gemma 3n ``_apply_token_matches``, with no prompt updates to apply (so
    only its newline merges run), on the tiny Gemma 3n's vocabulary. A bare processor:
    the method reads nothing but the tokenizer's vocabulary."""
    from vllm.model_executor.models.gemma3n_mm import Gemma3nMultiModalProcessor

    bundle = _tiny("tiny-gemma3n")
    vocab = bundle.processor.tokenizer.get_vocab()
    info = types.SimpleNamespace(
        get_tokenizer=lambda: types.SimpleNamespace(get_vocab=lambda: vocab)
    )
    processor = object.__new__(Gemma3nMultiModalProcessor)
    processor.info = info
    newline = {k: vocab["\n" * k] for k in (1, 2, 3, 4)}
    image = bundle.spec.id_of(bundle.spec.image_token)
    return (lambda ids: processor._apply_token_matches(list(ids), {})[0]), newline, image


def check_newlines(module: types.ModuleType) -> None:
    """``merge_newlines`` against vLLM's ``Gemma3nMultiModalProcessor._apply_token_matches``."""
    pytest.importorskip("vllm", reason="this check runs vLLM's own code: install vLLM")
    vllm_merge, newline, image = _vllm_gemma3n_merge()
    alphabet = [*newline.values(), 5, 7, image]  # newlines, text, a placeholder
    draw = random.Random(0)
    prompts = [[newline[1], newline[2], newline[2], newline[1]], [newline[2]] * 5]
    prompts += [[draw.choice(alphabet) for _ in range(draw.randint(0, 14))] for _ in range(400)]
    for ids in prompts:
        want = vllm_merge(ids)
        got = list(module.merge_newlines(list(ids), dict(newline)))
        assert got == want, _parts(f"ids {ids}", got, want, "vLLM")


def check_raw_audio(module: types.ModuleType) -> None:
    """Unified's embedder rows (the tiny Unified, through the parity harness) and vLLM's
    count (``Gemma4ProcessingInfo._compute_audio_num_tokens``)."""
    vllm = pytest.importorskip("vllm.model_executor.models.gemma4_mm", reason="install vLLM")
    from gemma_explore.parity.checks import check_audio_parity

    bundle = _tiny("tiny-gemma4-unified")
    cap = bundle.processor.audio_seq_length
    for n in CLIPS:
        rows = check_audio_parity(n, bundle=bundle, use_vllm=False).encoder_count
        got = module.unified_audio_tokens(n)
        assert got == rows, _parts(f"{n} samples: embedder rows", got, rows, "the embedder")
    draw = random.Random(0)
    for n in [*range(0, 2_000), *CLIPS, *(draw.randint(0, 1_000_000) for _ in range(2_000))]:
        want = vllm.Gemma4ProcessingInfo._compute_audio_num_tokens(n, 16_000, cap)
        got = module.vllm_unified_placeholders(n)
        assert got == want, _parts(f"{n} samples: vLLM's placeholders", got, want, "vLLM")


def check_video_stamps(module: types.ModuleType) -> None:
    """``expand_video`` against transformers' ``Gemma4Processor.replace_video_token``."""
    from transformers.video_utils import VideoMetadata

    processor = _tiny("tiny-gemma4").processor
    marks = {"boi": processor.boi_token, "video": processor.video_token, "eoi": processor.eoi_token}
    cases = [
        (list(range(0, 48, 3)), 12.0, 3),  # 4 s at 12 fps, every 3rd frame
        (list(range(0, 300, 10)), 30.0, 2),  # a third of a second apart: several 00:00
        ([0, 1500, 2999], 24.0, 1),  # past a minute
        ([0, 23, 24, 25], None, 2),  # no frame rate: 24 assumed
        ([0, 7, 1799], 29.97, 1),
    ]
    for indices, fps, tokens in cases:
        meta = VideoMetadata(total_num_frames=indices[-1] + 1, fps=fps, frames_indices=indices)
        want = processor.replace_video_token(
            {"num_soft_tokens_per_video": [tokens], "video_metadata": [meta]}, 0
        )
        got = module.expand_video(list(indices), fps, tokens, **marks)
        assert got == want, _parts(f"frames {indices[:4]}… at {fps} fps", got, want, "transformers")


@pytest.mark.parametrize(
    "name",
    ["resize", "audio_slots", "newlines", "raw_audio", "video_stamps"],
)
def test_exercise(name: str) -> None:
    """One exercise of the track, on the implementation ``GEMMA_EXPLORE_BUILDIT`` names."""
    CHECKS[name](implementation(name))


# exercise name → its check, in the track's order.
CHECKS = {
    "resize": check_resize,
    "audio_slots": check_audio_slots,
    "newlines": check_newlines,
    "raw_audio": check_raw_audio,
    "video_stamps": check_video_stamps,
}
