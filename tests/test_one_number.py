"""One number for one thing: the sample video's prompt cost is the same on every surface
that shows it (the plan, ``gemma-explore plan``, ``bill``, the serving plan's request), and
each equals what the video adds to a real prompt built by transformers' processor
(``layout_prompt``): soft tokens, markers and timestamps. The demo's Video, Serving and Chat
tabs are held to the same layout in ``tests/app/test_handlers.py``
(``test_one_video_has_one_cost_on_every_tab_and_it_is_layout_prompts``).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import gemma_explore as ge
from gemma_explore.bill.core import bill_file
from gemma_explore.cli import app
from gemma_explore.samples import SAMPLES_DIR

VIDEO = SAMPLES_DIR / "video.mp4"


@pytest.fixture(scope="module")
def layout_cost(tiny4) -> dict[str, int]:
    """What the sample video adds to a chat prompt, by segment kind, from the real
    processor's ids (the prompt with it minus the same prompt without it)."""
    with_video = ge.layout_prompt(
        [{"role": "user", "content": [{"type": "video", "video": str(VIDEO)}]}], bundle=tiny4
    )
    without = ge.layout_prompt([{"role": "user", "content": []}], bundle=tiny4)
    counts = with_video.counts()
    return {
        "total": with_video.num_tokens - without.num_tokens,
        "timestamps": counts["timestamp"],
        "soft": counts["video_soft"],
    }


def test_the_plan_adds_up_to_the_layout(layout_cost):
    plan = ge.plan_video(VIDEO, family="gemma4")
    assert plan.total_tokens == layout_cost["total"]
    assert plan.num_timestamp_tokens == layout_cost["timestamps"]
    assert plan.num_soft_tokens == layout_cost["soft"]
    rows = dict(plan._rows())
    assert rows["soft tokens"] + rows["markers"] + rows["timestamps"] == rows["prompt tokens"]
    assert rows["prompt tokens"] == layout_cost["total"]


def test_cli_plan_and_bill_say_the_same(layout_cost):
    result = CliRunner().invoke(app, ["plan", str(VIDEO), "--family", "gemma4", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total_tokens"] == layout_cost["total"]
    row = bill_file(VIDEO, family="gemma4", budgets=(280,))
    assert row.error is None and set(row.tokens) == {layout_cost["total"]}


def test_a_requests_worst_case_video_holds_the_layout(layout_cost):
    # The serving plan prices a request's video as frames at the video budget (70, the
    # worst case of one frame) with their markers and timestamps: never below a real one.
    plan = ge.plan_serving("tiny-gemma4", max_model_len=8192)
    video = ge.plan_video(VIDEO, family="gemma4")
    memory = plan.request_memory(video_frames=[len(video.frame_indices)], text_tokens=0)
    per_frame_gap = video.spec.image.video_budget - video.soft_tokens_per_frame
    assert memory.prompt_tokens - per_frame_gap * len(video.frame_indices) == layout_cost["total"]
