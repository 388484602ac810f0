"""The Serving tab's handler: the plan's numbers for the sliders' values, never a crash."""

from gemma_explore.app.serving_tab import serving_tab
from gemma_explore.serving.plan import plan_serving


def test_serving_tab_shows_the_plan():
    out = serving_tab("tiny-gemma4", 4096, 2, 1, 0, 2048, 560)
    plan = plan_serving(
        "tiny-gemma4",
        max_model_len=4096,
        max_num_batched_tokens=2048,
        limit_mm_per_prompt={"image": 2, "audio": 1, "video": 0},
        max_soft_tokens=560,
    )
    assert out.error is None and out.figure is not None
    assert out.plan.max_items_per_batch == plan.max_items_per_batch
    assert "encoder_cache_size" in out.table and str(plan.encoder_cache_size) in out.table


def test_serving_tab_ignores_the_budget_for_gemma3n_and_reports_bad_values():
    out = serving_tab("tiny-gemma3n", 2048, 1, 1, 0, 2048, 560)
    assert out.error is None and out.plan.max_tokens_per_item == {"image": 256, "audio": 188}
    bad = serving_tab("tiny-gemma4", "lots", 1, 1, 1, 2048, None)
    assert bad.figure is None and bad.table.startswith("✗ max_model_len must be a whole number")
    worse = serving_tab("tiny-gemma4", 2048, 1, 1, 1, 2048, 333)
    assert "one of [70, 140, 280, 560, 1120]" in worse.table


def test_demo_has_a_serving_endpoint(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import demo_app

    demo = demo_app.build_app("tiny-gemma4")
    (fn,) = [f for f in demo.fns.values() if f.api_name == "serving"]
    fig, table = fn.fn("tiny-gemma4", "the model loaded above", 280, 4096, 2, 1, 0, 2048)
    assert fig is not None and "encoder_cache_size" in table
    # The default: a released checkpoint, planned offline from the built-in facts.
    from gemma_explore.app.serving_tab import SERVING_CHOICES, SERVING_DEFAULT
    from gemma_explore.facts.released import RELEASED_IDS

    assert SERVING_DEFAULT in RELEASED_IDS and set(RELEASED_IDS) <= set(SERVING_CHOICES)
    _, released = fn.fn("tiny-gemma4", SERVING_DEFAULT, 280, 4096, 2, 1, 0, 2048)
    plan = plan_serving(
        SERVING_DEFAULT,
        max_model_len=4096,
        max_num_batched_tokens=2048,
        limit_mm_per_prompt={"image": 2, "audio": 1, "video": 0},
        max_soft_tokens=280,
    )
    assert SERVING_DEFAULT in released
    assert f"{plan.model.num_parameters:,} parameters" in released  # the released shapes
    assert f"{plan.model.num_parameters:,} parameters" not in table  # not the tiny model's
