"""The Serving tab's handler: the plan's numbers for the sliders' values, never a crash."""

import re

import pytest

from gemma_explore.app.serving_tab import serving_tab
from gemma_explore.serving.kv import kv_memory_estimate
from gemma_explore.serving.plan import plan_serving
from gemma_explore.vllm_versions import SUPPORTED, vllm_profile


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
    assert bad.figure is None and bad.error.startswith("✗ max_model_len must be a number")
    worse = serving_tab("tiny-gemma4", 2048, 1, 1, 1, 2048, 333)
    assert "one of [70, 140, 280, 560, 1120]" in worse.error


@pytest.mark.parametrize(
    ("changed", "control"),
    [
        ({"max_model_len": 10**7}, "max_model_len"),
        ({"image_limit": -1}, "limit_mm_per_prompt: image"),
        ({"gpu_memory_gib": 0}, "GPU memory (GiB)"),
        ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
        ({"gpu_memory_utilization": "x"}, "gpu_memory_utilization"),
    ],
)
def test_a_bad_value_is_refused_in_one_place_naming_its_control(changed, control):
    """The plot, the table and the verdict all clear together: nothing stale disagrees."""
    out = serving_tab("google/gemma-4-E4B-it", **changed)
    assert out.error.startswith(f"✗ {control} must be")
    assert (out.figure, out.table, out.plan, out.fits, out.warnings) == (None, "", None, None, "")


def _installed_default_share() -> float:
    """The installed vLLM's own share of the GPU with the flag unset, on CUDA: CacheConfig's
    default, resolved as the extensible KV cache resolves it where the release has one."""
    config = pytest.importorskip("vllm.config")
    if hasattr(config.CacheConfig, "resolved_gpu_memory_utilization"):
        cache = config.CacheConfig(enable_extensible_kv_cache=True)  # CUDA's default
        return cache.resolved_gpu_memory_utilization()
    return config.CacheConfig().gpu_memory_utilization


def test_the_gpu_is_a_control_and_the_verdict_is_in_the_table():
    """The assumption (80 GiB at the installed vLLM's own share with the flag unset,
    CacheConfig's) is the default and is said on the page; the 31B in bf16 (about 58 GiB of
    weights) fits 80 GiB, not 24 GiB."""
    util = _installed_default_share()
    out = serving_tab("google/gemma-4-31B-it", 8192, 1, 0, 0, 8192)
    assert out.fits and f"80 GiB at gpu_memory_utilization {util:g}" in out.assumption
    assert "| verdict | ✓ fits:" in out.table
    assert f"of 80 GiB × {util:g} = {80 * util:.2f} GiB" in out.table
    small = serving_tab("google/gemma-4-31B-it", 8192, 1, 0, 0, 8192, gpu_memory_gib=24)
    assert small.fits is False and "| verdict | ✗ does not fit:" in small.table
    assert f"24 GiB at gpu_memory_utilization {util:g}" in small.assumption
    assert "--tensor-parallel-size" in small.table


@pytest.mark.parametrize("version", SUPPORTED)
def test_the_markdown_names_the_release_chosen_in_the_box(version):
    """The release box plans by that release: the table's first row, the assumption and the
    memory bar's title name it, and the KV row is its own estimate on this GPU."""
    out = serving_tab("google/gemma-4-E4B-it", vllm_version=version)
    assert out.error is None and out.plan.vllm_version == version
    rows = [r for r in out.table.splitlines() if r.startswith("| ")]
    assert rows[1].startswith(f"| vLLM release | vLLM {version} (chosen in the vLLM release box")
    assert f"**vLLM {version}**" in out.assumption
    assert f"vLLM {version}" in out.figure.axes[0].get_title()
    est = kv_memory_estimate(out.plan, gpu_memory_bytes=80 * 2**30)
    assert est.vllm_version == version and est.steps[-1] in out.table


def test_without_a_choice_the_installed_release_answers_and_says_why():
    release = vllm_profile(None)
    out = serving_tab("google/gemma-4-E4B-it")
    assert out.plan.vllm_version == release.version
    assert f"| vLLM release | {release.label} ({release.chosen_because}) |" in out.table


@pytest.mark.parametrize("version", SUPPORTED)
def test_gpu_memory_utilization_unset_follows_the_release_and_a_value_is_yours(version):
    """Unset (None, or the value the release uses unset) is the release's own sizing: a
    share of the GPU, or the extensible KV cache, where the table says the pool is measured
    at start-up and the KV row is the plan's estimate. Another value is yours."""
    release = vllm_profile(version)
    unset = serving_tab("google/gemma-4-E4B-it", vllm_version=version)
    row = next(r for r in unset.table.splitlines() if r.startswith("| gpu_memory_utilization"))
    if release.kv_sizing == "extensible":
        assert "| gpu_memory_utilization | unset (extensible KV cache, so 1)" in row
        assert "measures the free memory after warm-up" in row
    else:
        assert f"unset: vLLM {version}'s default {release.gpu_memory_utilization:g}" in row
    yours = serving_tab("google/gemma-4-E4B-it", vllm_version=version, gpu_memory_utilization=0.5)
    row = next(r for r in yours.table.splitlines() if r.startswith("| gpu_memory_utilization"))
    assert row.startswith("| gpu_memory_utilization | 0.5, yours")
    assert "80 GiB GPU × 0.5 = 40.0 GiB (yours" in yours.figure.axes[0].get_title()
    est = kv_memory_estimate(yours.plan, gpu_memory_bytes=80 * 2**30, gpu_memory_utilization=0.5)
    assert est.steps[-1] in yours.table


def test_a_release_not_in_the_box_is_refused_in_the_boxs_words():
    out = serving_tab("google/gemma-4-E4B-it", vllm_version="0.1")
    assert out.error == f"✗ vLLM release must be one of {', '.join(SUPPORTED)}, got '0.1'."
    assert (out.figure, out.table, out.plan, out.fits, out.warnings) == (None, "", None, None, "")


def test_no_request_that_fits_is_a_warning():
    out = serving_tab("google/gemma-4-E4B-it", 256, 1, 1, 1, 8192, 1120)
    assert out.error is None and "⚠ No request with one image fits" in out.warnings
    assert "⚠ No request with one video fits" in out.warnings
    assert serving_tab("google/gemma-4-E4B-it").warnings == ""


def test_the_budget_box_follows_the_checkpoint_chosen_on_the_tab():
    """With tiny-gemma3n loaded above, the 31B's budgets are offered; with tiny-gemma4
    loaded, a Gemma 3n checkpoint's box is disabled (it has no budget)."""
    from gemma_explore.app.serving_tab import LOADED_MODEL, serving_family
    from gemma_explore.app.ui import budget_choices

    assert budget_choices(serving_family("google/gemma-4-31B-it", "tiny-gemma3n"))[2]
    assert not budget_choices(serving_family("google/gemma-3n-E4B-it", "tiny-gemma4"))[2]
    assert not budget_choices(serving_family(LOADED_MODEL, "tiny-gemma3n"))[2]


def test_demo_has_a_serving_endpoint(tmp_path):
    from gemma_explore.app.ui import build_app

    demo = build_app("tiny-gemma4")
    (fn,) = [f for f in demo.fns.values() if f.api_name == "serving"]
    gpu = (80, 0.9)
    fig, table, error, *_ = fn.fn(
        "tiny-gemma4", "the model loaded above", 280, 4096, 2, 1, 0, 2048, *gpu
    )
    assert fig is not None and "encoder_cache_size" in table and error == ""
    # The default: a released checkpoint, planned offline from the built-in facts.
    from gemma_explore.app.serving_tab import SERVING_CHOICES, SERVING_DEFAULT
    from gemma_explore.facts.released import RELEASED_IDS

    assert SERVING_DEFAULT in RELEASED_IDS and set(RELEASED_IDS) <= set(SERVING_CHOICES)
    _, released, *_ = fn.fn("tiny-gemma4", SERVING_DEFAULT, 280, 4096, 2, 1, 0, 2048, *gpu)
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


def test_the_probe_row_draws_a_servers_verdicts(tiny4):
    """The tab's probe against the loopback server that counts with transformers' real
    processor: an honest server's cases all match; a squashing one is named."""
    from gemma_explore.app.serving_tab import probe_tab
    from tests.conformance.faulty_server import faulty_server

    for fault, words in (("honest", None), ("square", "squashed to a square")):
        with faulty_server(tiny4, fault, model="google/gemma-4-E4B-it") as (url, _):
            out = probe_tab(url, "google/gemma-4-E4B-it")
        assert out.error is None and out.figure is not None
        rows = [r for r in out.table.splitlines() if r.startswith("|") and "image" in r]
        assert rows and (words is None) == all("matches" in r for r in rows)
        assert words is None or words in out.table


def test_the_probe_row_refuses_a_bad_url_in_the_boxs_words():
    from gemma_explore.app.serving_tab import probe_tab

    out = probe_tab("127.0.0.1:8000", "m")
    assert out.figure is None and out.error.startswith("✗ Server URL must start with http")
    assert probe_tab("http://127.0.0.1:9/v1", " ").error.startswith("✗ Served model is empty")
    unreachable = probe_tab("http://127.0.0.1:9/v1", "google/gemma-4-E4B-it", timeout=2)
    assert unreachable.figure is None and unreachable.table == ""
    assert unreachable.error.startswith("✗ nothing answered at http://127.0.0.1:9/v1")


def test_demo_has_a_probe_endpoint():
    from gemma_explore.app.ui import build_app

    demo = build_app("tiny-gemma4")
    assert [f for f in demo.fns.values() if f.api_name == "probe"]


def test_the_table_says_what_the_processor_cache_holds():
    """The row reads the plan's processor_cache (its bytes are held to vLLM's
    get_item_size in tests/serving/test_processor_cache.py)."""
    out = serving_tab("google/gemma-4-E4B-it")
    pc = out.plan.processor_cache()
    worst = max((it for it in pc.items if not it.dummy), key=lambda it: it.bytes)
    row = next(r for r in out.table.splitlines() if "processor cache" in r)
    assert f"{pc.capacity_bytes // worst.bytes:,} of the largest item ({worst.what}" in row
    assert "the profiling dummy fits" in row


@pytest.mark.parametrize("case", ["banner", "html_501", "silent", "huge", "tls", "no_usage"])
def test_the_probe_row_shows_one_line_where_the_figure_was(case):
    """The tab's handler on hostile servers (tests/conformance/hostile_servers.py): no
    figure, no table, one line in the error slot, within the deadline given; never an
    exception (gradio's bare "Error" toast), an HTML page or a traceback."""
    from gemma_explore.app.serving_tab import probe_tab
    from tests.conformance.hostile_servers import MODEL, assert_one_line, hostile_server

    with hostile_server(case) as url:
        out = probe_tab(url, MODEL, timeout=60, deadline=2)
    assert out.figure is None and out.table == ""
    assert out.error.startswith("✗ the server at ")
    assert_one_line(out.error, url)


def test_a_refusal_speaks_of_the_control_the_page_has():
    """The GPU's memory is a number box, the limits are sliders: each refusal says how to
    fix it with that control."""
    box = serving_tab("google/gemma-4-E4B-it", gpu_memory_gib=0).error
    assert box.endswith("type a number from 1 to 1024 in its box.") and "slider" not in box
    slider = serving_tab("google/gemma-4-E4B-it", image_limit=40).error
    assert "(got 40): drag the slider, or type a number from 0 to 16 in its box." in slider


def _notes(table: str) -> list[str]:
    return [line for line in table.splitlines() if re.match(r"\d+\. ", line)]


def test_max_num_batched_tokens_is_yours_only_when_it_is_not_vllms_own():
    """At the value vllm serve picks unset on this GPU the notes give vLLM's default and
    why (the plan with the flag unset is the same); another value is yours."""
    unset = plan_serving("google/gemma-4-E4B-it", gpu_memory_gib=80, entry_point="serve")
    out = serving_tab("google/gemma-4-E4B-it", max_num_batched_tokens=unset.max_num_batched_tokens)
    assert out.plan.max_num_batched_tokens == unset.max_num_batched_tokens
    assert "yours" not in " ".join(n for n in _notes(out.table) if "max_num_batched" in n)
    assert f"vllm serve defaults to {unset.max_num_batched_tokens}" in out.table
    mine = serving_tab("google/gemma-4-E4B-it", max_num_batched_tokens=4096)
    assert mine.plan.max_num_batched_tokens == 4096
    assert "max_num_batched_tokens 4096: yours, from its slider" in mine.table


# What a notebook reader has and a page user has not: a source file, a Python call of the
# package, a keyword argument of the Python API.
_PYTHON = re.compile(
    r"\.py\b|\bplan[._]\w+|\b\w+\.\w+\(|\b(?:vllm_version|block_size|max_num_batched_tokens|"
    r"max_model_len|kv_cache_memory_bytes)="
)


@pytest.mark.parametrize("version", SUPPORTED)
def test_the_notes_use_the_pages_words(version):
    """Every checkpoint the tab offers, by every release: no note cites a source file or a
    Python call; where the plan's note did, the page names its own row, tab or flag."""
    from gemma_explore.app.serving_tab import SERVING_CHOICES

    for checkpoint in SERVING_CHOICES[:-1]:
        out = serving_tab(checkpoint, vllm_version=version, max_num_batched_tokens=4096)
        notes = _notes(out.table)
        assert notes, checkpoint
        python = [n for n in notes if _PYTHON.search(n)]
        assert python == [], f"{checkpoint} by vLLM {version}: {python}"
        assert any("the KV pool row above" in n for n in notes), notes
        assert "config: the released checkpoint's config, built in (no download)" in out.table


def test_a_limit_the_checkpoint_has_no_input_for_is_disabled_with_its_reason():
    from gemma_explore.app.serving_tab import limit_states

    big = serving_tab("google/gemma-4-31B-it")
    assert "audio" not in big.plan.model.modalities
    assert limit_states(big.plan) == (
        (True, ""),
        (False, "google/gemma-4-31B-it takes no audio: vLLM ignores this limit."),
        (True, ""),
    )
    n3 = serving_tab("google/gemma-3n-E4B-it").plan
    assert [on for on, _ in limit_states(n3)] == [True, True, False]
    assert limit_states(None) is None


def test_the_docs_give_each_releases_default_utilization():
    """docs/demo.md states the slider's default for every release, from the profiles (the
    page's source): never a number of its own."""
    from pathlib import Path

    from gemma_explore.app.serving_tab import utilization_default

    doc = (Path(__file__).resolve().parents[2] / "docs" / "demo.md").read_text()
    text = " ".join(doc.split())
    for version in SUPPORTED:
        assert f"vLLM {version}: {utilization_default(version):g}" in text, version


def test_the_sliders_read_the_checkpoint_the_tab_planned_by_name():
    from gemma_explore.app.serving_tab import limit_states

    assert limit_states("never-planned") is None
    serving_tab("google/gemma-4-26B-A4B-it")
    assert limit_states("google/gemma-4-26B-A4B-it")[1][0] is False
