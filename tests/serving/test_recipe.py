"""engine_args(for_workload=…) proposes arguments the serving plan shows are enough."""

import pytest

from gemma_explore.engines.vllm import engine_args
from gemma_explore.serving.plan import plan_serving
from gemma_explore.serving.recipe import Workload, engine_recipe


def test_four_images_at_560_and_one_clip():
    w = Workload(images=4, max_soft_tokens=560, audio_clips=1)
    r = engine_recipe("tiny-gemma4", workload=w)
    assert r.args["limit_mm_per_prompt"] == {"image": 4, "audio": 1, "video": 0}
    assert r.args["mm_processor_kwargs"] == {"max_soft_tokens": 560}
    need = 4 * (560 + 2) + (750 + 2) + w.text_tokens + w.max_new_tokens
    assert r.args["max_model_len"] >= need > r.args["max_model_len"] - 256
    # With these arguments vLLM's profiler allows the whole workload in one prompt.
    assert r.plan.max_items_per_prompt == {"image": 4, "audio": 1}
    assert r.plan.max_tokens_per_item == {"image": 560, "audio": 750}
    assert set(r.reasons) == {
        "limit_mm_per_prompt",
        "mm_processor_kwargs",
        "max_model_len",
        "max_num_batched_tokens",
    }
    assert "video at 0" in r.reasons["limit_mm_per_prompt"]
    # A released id: the same arguments, and a plan from its built-in config (no network).
    hub = engine_recipe("google/gemma-4-E4B-it", family="gemma4", workload=w)
    assert hub.args == r.args and hub.plan.model.name == "google/gemma-4-E4B-it"
    # A hub id whose config is not here: the same arguments from the family's facts.
    other = engine_recipe("someone/gemma-4-finetune", family="gemma4", workload=w)
    assert other.args == r.args and other.plan is None


def test_engine_args_takes_the_recipe_and_explicit_arguments_win():
    w = Workload(images=2, videos=1, video_frames=8, max_soft_tokens=280)
    args = engine_args("tiny-gemma4", family="gemma4", for_workload=w)
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
    assert (
        engine_args("tiny-gemma4", family="gemma4", for_workload=w, max_model_len=999)[
            "max_model_len"
        ]
        == 999
    )


def test_a_big_item_raises_max_num_batched_tokens_and_bad_workloads_say_why():
    r = engine_recipe("google/gemma-4-E4B-it", family="gemma4", workload=Workload(videos=1))
    assert r.args["max_num_batched_tokens"] == 8192  # 2496 fits the default
    r3 = engine_recipe("tiny-gemma3n", workload=Workload(images=1, audio_clips=2))
    assert r3.args["limit_mm_per_prompt"] == {"image": 1, "audio": 2}
    assert "mm_processor_kwargs" not in r3.args
    with pytest.raises(ValueError, match="no video"):
        engine_recipe("tiny-gemma3n", workload=Workload(videos=1))
    with pytest.raises(ValueError, match="no audio tower"):
        engine_recipe(
            "google/gemma-4-31B-it",
            family="gemma4",
            has_audio=False,
            workload=Workload(audio_clips=1),
        )
