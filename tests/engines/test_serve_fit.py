"""``serve-args`` never prints a command vLLM would refuse: whether the arguments start is
the plan's own start-up arithmetic (its KV estimate and capacity), the lever is one of
``levers()``, and every command printed is re-planned from its own arguments."""

from __future__ import annotations

import pytest

from gemma_explore.engines.serve_args import (
    EXIT_FITS,
    EXIT_LEVER,
    EXIT_NONE_FITS,
    engine_args,
    serve_fit,
    serving_plan_for,
    starts,
)
from gemma_explore.serving.kv import GPUS
from gemma_explore.serving.levers import levers

BIG = "google/gemma-4-31B-it"


def _starts(args: dict, gpu: str) -> bool:
    """The printed arguments, re-planned on ``gpu`` at their tensor parallel size."""
    plan = serving_plan_for(args, gpu=gpu)
    tp = int(args.get("tensor_parallel_size", 1))
    return starts(plan, tensor_parallel_size=tp)[0].fits


def test_the_31b_on_an_l4_fits_nothing_and_names_the_smallest_gpu():
    args = engine_args(BIG, gpu="L4", workshop=False)
    plan = serving_plan_for(args, gpu="L4")
    fit = serve_fit(args, gpu="L4")
    assert not fit.fits and fit.args is None and fit.exit_code == EXIT_NONE_FITS == 2
    # Held to the plan: it refuses on one L4, and no lever re-planned starts it there.
    assert not _starts(args, "L4")
    assert all(lever.after == 0 for lever in levers(plan))
    assert not _starts({**args, "tensor_parallel_size": 2}, "L4")
    assert not _starts({**args, "kv_cache_dtype": "fp8"}, "L4")
    # The smallest GPU of the table on which the arguments as asked start; none smaller does.
    by_memory = sorted(GPUS, key=lambda name: GPUS[name].memory_mib)
    assert _starts(args, fit.smallest_gpu)
    for smaller in by_memory[: by_memory.index(fit.smallest_gpu)]:
        assert not _starts(args, smaller), smaller
    # The headline carries the plan's numbers: its weights and the L4's memory.
    est = plan.kv_memory()
    assert fit.headline.startswith("does not fit: google/gemma-4-31B-it on one L4 (22.5 GiB)")
    assert f"weights {est.weights_bytes / 2**30:,.2f}" in fit.headline
    assert f"KV for one {plan.max_model_len:,}-token request" in fit.headline


@pytest.mark.parametrize(
    "gpu,max_model_len,flag",
    [("A100 40GB", None, "--tensor-parallel-size 2"), ("H100 80GB", 131072, None)],
)
def test_a_lever_that_fits_is_printed_and_starts_when_re_planned(gpu, max_model_len, flag):
    args = engine_args(BIG, gpu=gpu, max_model_len=max_model_len, workshop=False)
    fit = serve_fit(args, gpu=gpu)
    assert not _starts(args, gpu)  # as asked, vLLM would refuse
    assert fit.exit_code == EXIT_LEVER == 3 and fit.args is not None
    assert fit.args != args and _starts(fit.args, gpu)
    plan = serving_plan_for(args, gpu=gpu)
    first = next(x for x in levers(plan) if x.after > 0)  # the most useful that fits
    assert fit.lever == first.flag
    if flag is not None:
        assert fit.lever == flag and fit.args["tensor_parallel_size"] == 2
    assert "re-planned, vLLM would log: GPU KV cache size:" in fit.why


def test_a_plan_that_fits_is_printed_as_asked():
    args = engine_args("google/gemma-4-E4B-it", gpu="H100 80GB", workshop=False)
    fit = serve_fit(args, gpu="H100 80GB")
    assert fit.fits and fit.args == args and fit.exit_code == EXIT_FITS == 0
    assert fit.headline == "" and _starts(args, "H100 80GB")


def test_a_shorter_max_model_len_is_a_lever_only_when_one_request_does_not_fit():
    """vLLM's own estimate of the longest length that fits, re-planned."""
    plan = serving_plan_for(
        engine_args(BIG, gpu="H100 80GB", max_model_len=131072, workshop=False), gpu="H100 80GB"
    )
    cap, _ = starts(plan)
    shorter = [x for x in levers(plan) if x.flag.startswith("--max-model-len")]
    assert not cap.fits and len(shorter) == 1
    n = shorter[0].settings["max_model_len"]
    assert n <= cap.estimated_max_model_len and starts(shorter[0].plan)[0].fits
    fits = serving_plan_for(engine_args(BIG, gpu="H100 80GB", workshop=False), gpu="H100 80GB")
    assert not [x for x in levers(fits) if x.flag.startswith("--max-model-len")]
