"""The vLLM side of a parity report, held to vLLM's own code where vLLM is installed.

A report's "vLLM arithmetic" column is the package's re-derivation (``plans/vllm.py``);
its "vLLM processor" column is vLLM's real processor (``use_vllm``). Parity tests run
with vLLM's processor when vLLM is installed (``USE_VLLM``; it is built once per bundle
and cached in ``VLLM_PROCESSORS``, then costs ~0.1 s per call) and check, with
:func:`assert_vllm_side`, that the re-derived column equals what vLLM's own
``Gemma4ProcessingInfo`` computes for the same item on the same checkpoint.
"""

from __future__ import annotations

from typing import Any

from gemma_explore.engines.vllm_processor import VLLM_PROCESSORS, vllm_available

USE_VLLM = vllm_available()


def vllm_info(bundle: Any) -> Any:
    """vLLM's own processing info for ``bundle`` (its real ``Gemma4ProcessingInfo``, …)."""
    return VLLM_PROCESSORS.get(bundle).info


def vllm_audio_count(bundle: Any, num_samples: int) -> int:
    """The audio placeholders vLLM's own ``get_audio_repl`` writes for a clip of
    ``num_samples`` (Gemma 4 and Unified, which inherits it)."""
    repl = vllm_info(bundle).get_audio_repl(audio_len=num_samples, processor=None)
    return sum(1 for t in repl.full if t == bundle.spec.id_of(bundle.spec.audio_token))


def assert_vllm_side(report: Any, bundle: Any) -> None:
    """Where vLLM is installed: its processor ran, and the re-derived column equals
    vLLM's own functions (no-op without vLLM)."""
    if not USE_VLLM:
        return
    assert report.vllm_ran, report
    rows = {r.step: r for r in report.rows}
    spec = bundle.spec
    if report.kind == "image" and "soft tokens" in rows and spec.image.budgets:
        (h, w) = _original_size(report, rows)
        budget = rows["image budget"].vllm_arithmetic if "image budget" in rows else None
        theirs = vllm_info(bundle)._compute_num_soft_tokens(w, h, budget)
        assert rows["soft tokens"].vllm_arithmetic == theirs, report
    if report.kind == "audio" and "soft tokens" in rows and spec.audio.fixed_placeholders is None:
        n = int(report.description.split("(")[1].split()[0])
        assert rows["soft tokens"].vllm_arithmetic == vllm_audio_count(bundle, n), report
    last = report.rows[-1]
    if last.vllm_processor is not None and not spec.encoder_free:
        # vLLM's processor writes what its own arithmetic says (Unified audio aside)
        assert last.vllm_processor == last.vllm_arithmetic, report


def _original_size(report: Any, rows: dict) -> tuple[int, int]:
    """(height, width) of the report's image, from its description "W×H px (W×H)"."""
    w, h = report.description.split(" px")[0].split("×")
    return int(h), int(w)
