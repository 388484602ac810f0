"""engine_args(workload=…) proposes arguments the serving plan shows are enough."""

import pytest

from gemma_explore.engines.serve_args import engine_args, serving_plan_for
from gemma_explore.serving.plan import plan_serving
from gemma_explore.serving.recipe import Workload


def test_four_images_at_560_and_one_clip():
    w = Workload(images=4, max_soft_tokens=560, audio_clips=1)
    reasons: dict[str, str] = {}
    args = engine_args("tiny-gemma4", workload=w, reasons=reasons)
    assert args["limit_mm_per_prompt"] == {"image": 4, "audio": 1, "video": 0}
    assert args["mm_processor_kwargs"] == {"max_soft_tokens": 560}
    need = 4 * (560 + 2) + (750 + 2) + w.text_tokens + w.max_new_tokens
    assert args["max_model_len"] >= need > args["max_model_len"] - 256
    # With these arguments vLLM's profiler allows the whole workload in one prompt.
    plan = serving_plan_for(args)
    assert plan.max_items_per_prompt == {"image": 4, "audio": 1}
    assert plan.max_tokens_per_item == {"image": 560, "audio": 750}
    assert set(reasons) == {
        "limit_mm_per_prompt",
        "mm_processor_kwargs",
        "max_model_len",
        "max_num_batched_tokens",
        "gpu_memory_utilization",
    }
    assert "video at 0" in reasons["limit_mm_per_prompt"]
    # A released id: the same proposal, and a plan from its built-in config (no network).
    hub = engine_args("google/gemma-4-E4B-it", family="gemma4", workload=w)
    proposed = ("limit_mm_per_prompt", "mm_processor_kwargs", "max_model_len")
    assert {k: hub[k] for k in proposed} == {k: args[k] for k in proposed}
    assert serving_plan_for(hub).model.name == "google/gemma-4-E4B-it"
    # A hub id whose config is not here: the same proposal from the family's facts.
    other = engine_args("someone/gemma-4-finetune", family="gemma4", has_audio=True, workload=w)
    assert {k: other[k] for k in proposed} == {k: args[k] for k in proposed}
    assert serving_plan_for(other) is None


def test_engine_args_takes_the_recipe_and_explicit_arguments_win():
    w = Workload(images=2, videos=1, video_frames=8, max_soft_tokens=280)
    args = engine_args("tiny-gemma4", family="gemma4", workload=w)
    assert args["limit_mm_per_prompt"] == {
        "image": 2,
        "audio": 0,
        "video": {"count": 1, "num_frames": 8},
    }
    plan = plan_serving(
        "tiny-gemma4",
        max_model_len=args["max_model_len"],
        limit_mm_per_prompt=args["limit_mm_per_prompt"],
        max_soft_tokens=280,
    )
    assert plan.max_tokens_per_item["video"] == 8 * 78
    assert 2 * 282 + 8 * 78 <= args["max_model_len"]
    reasons: dict[str, str] = {}
    mine = engine_args(
        "tiny-gemma4", family="gemma4", workload=w, max_model_len=999, reasons=reasons
    )
    assert mine["max_model_len"] == 999
    assert reasons["max_model_len"].startswith(
        f"999: yours (the workload alone needs {args['max_model_len']}"
    )


def test_a_big_item_raises_max_num_batched_tokens_and_bad_workloads_say_why():
    r = engine_args("google/gemma-4-E4B-it", family="gemma4", workload=Workload(videos=1))
    assert r["max_num_batched_tokens"] == 8192  # 2496 fits the default
    r3 = engine_args("tiny-gemma3n", workload=Workload(images=1, audio_clips=2))
    assert r3["limit_mm_per_prompt"] == {"image": 1, "audio": 2}
    assert "mm_processor_kwargs" not in r3
    with pytest.raises(ValueError, match="no video"):
        engine_args("tiny-gemma3n", workload=Workload(videos=1))
    with pytest.raises(ValueError, match="no audio tower"):
        engine_args(
            "google/gemma-4-31B-it",
            family="gemma4",
            has_audio=False,
            workload=Workload(audio_clips=1),
        )
