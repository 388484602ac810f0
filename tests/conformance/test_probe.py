"""The probe against loopback servers that count with transformers' real processor (the
tiny bundles'), honestly or with one known fault each (faulty_server.py): each fault is
caught with its own verdict and no other, and the honest server gets none. The probe
against a real ``vllm serve``: tests/serve/test_probe.py."""

from __future__ import annotations

import json
import socket

import pytest

from gemma_explore.conformance.probe import (
    VERDICTS,
    parse_clips,
    parse_sizes,
    plan_probe,
    probe,
    probe_command_text,
    probe_json,
)
from gemma_explore.viz.probe import show_probe
from gemma_explore.vllm_versions import SUPPORTED, vllm_profile

from .faulty_server import faulty_server

MODEL = "served-gemma"

# fault → (the bundle that serves it, the verdict it must get). The cut at 30 s shows on
# Unified only: Gemma 4's and 3n's own extractors keep 30 s, so there it is the reference.
FAULT_VERDICT = {
    "square": ("tiny4", "squashed"),
    "fixed256": ("tiny4", "fixed"),
    "budget_ignored": ("tiny4", "budget_ignored"),
    "audio_dropped": ("tiny4", "audio_dropped"),
    "audio_cut_30s": ("tinyu", "audio_cut"),
    "frames": ("tiny4", "video_frames"),
}


def _probe(bundle, fault="honest", server=None, **options):
    with faulty_server(bundle, fault, **(server or {})) as (url, seen):
        return probe(url, model=options.pop("model", MODEL), family=bundle.spec, **options), seen


@pytest.mark.parametrize("name", ["tiny3n", "tiny4", "tinyu"])
def test_an_honest_server_gets_no_verdict(request, name):
    result, seen = _probe(request.getfixturevalue(name))
    assert result.failure is None and result.ok
    assert {c.verdict for c in result.cases} == {"matches"}
    assert all(body["max_tokens"] == 1 for body in seen)
    assert len(seen) == result.requests - 1  # every chat request, plus the model list


@pytest.mark.parametrize("fault", FAULT_VERDICT)
def test_each_fault_gets_its_verdict_and_no_other(request, fault):
    name, key = FAULT_VERDICT[fault]
    result, _ = _probe(request.getfixturevalue(name), fault)
    assert {c.verdict for c in result.cases} == {"matches", key}
    # A Unified clip cut at 30 s is also what vLLM counts: named, and not a failure.
    assert result.ok == (fault == "audio_cut_30s")
    flagged = [c for c in result.cases if c.verdict == key]
    assert all(VERDICTS[key].split(" (")[0] in c.words for c in flagged)
    if fault == "fixed256":
        assert flagged[0].words == "fixed count whatever the size (256 soft tokens)"
    if fault == "frames":  # every second of 41 frames: 21, where transformers samples 32
        assert flagged[0].words == "video frames differ (21 frames; the reference samples 32)"


def test_the_unified_cut_names_vllms_own_difference(tinyu):
    """A 35 s clip on Unified: transformers keeps every sample; vLLM's count stops at 750,
    which the note says wherever the case is probed."""
    honest, _ = _probe(tinyu, images=(), video=None, clips=(35.0,), budgets=())
    (case,) = honest.cases
    assert case.verdict == "matches" and case.vllm_expected < case.expected
    assert "capped at 750" in case.note


@pytest.mark.parametrize("version", SUPPORTED)
def test_the_expectations_name_the_release_whose_arithmetic_they_used(tinyu, version):
    """vllm_version names the release beside the reference: on each case, the result, the
    note and words of a known difference, the table's column and title, the JSON and the
    figure's legend. The counts are the same in every supported release (vLLM's count code
    did not change), so only the name moves."""
    label = vllm_profile(version).label
    result, _ = _probe(
        tinyu, "audio_cut_30s", images=(), video=None, clips=(35.0,), budgets=(),
        vllm_version=version,
    )  # fmt: skip
    (case,) = result.cases
    assert result.vllm_version == case.vllm_version == version
    assert case.note.startswith(f"{label} counts Gemma 4 Unified audio")
    assert f"as {label} counts it too" in case.words
    assert any(f"{label}'s own arithmetic" in step for step in result.steps)
    table = result.table()
    assert table.header[2] == label and f"{label}'s arithmetic" in table.title
    assert json.loads(probe_json(result))["vllm_version"] == version
    fig = show_probe(result)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert f"{label}'s count" in legend
    first = plan_probe("gemma4_unified", clips=(35.0,), vllm_version=SUPPORTED[0])
    here = plan_probe("gemma4_unified", clips=(35.0,), vllm_version=version)
    assert [c.vllm_expected for c in here] == [c.vllm_expected for c in first]
    assert {c.vllm_version for c in here} == {version}


def test_without_a_release_the_installed_one_answers():
    cases = plan_probe("gemma4", images=((480, 640),), clips=(), budgets=(), video=None)
    assert {c.vllm_version for c in cases} == {vllm_profile(None).version}


def test_a_server_without_the_trust_flag_refuses_the_budget_once(tiny4):
    result, seen = _probe(tiny4, server={"trust": False}, clips=(), video=None)
    budgeted = [c for c in result.cases if c.budget is not None]
    assert budgeted and {c.words for c in budgeted} == {VERDICTS["budget_refused"]}
    assert sum("mm_processor_kwargs" in body for body in seen) == 1  # no more after the first


@pytest.mark.parametrize(
    ("server", "model", "kind", "words"),
    [
        ({"usage": False}, MODEL, "no_usage", "answered without usage.prompt_tokens"),
        ({}, "someone-else", "model_not_served", "serves 'served-gemma', not 'someone-else'"),
        ({"delay": 2.0}, MODEL, "timeout", "gave no complete answer within 0.5 s"),
    ],
)
def test_a_failure_is_one_line_and_stops_the_probe(tiny4, server, model, kind, words):
    result, seen = _probe(tiny4, server=server, model=model, timeout=0.5)
    assert result.failure_kind == kind and words in result.failure
    assert "\n" not in result.failure and result.stopped
    assert len(seen) <= 1  # the baseline at most: nothing is sent after a failure
    assert all(c.verdict == "not_sent" and c.measured is None for c in result.cases)
    table = result.table()  # the one line, not a row per case repeating it
    assert table.rows == () and table.notes == (f"failure: {result.failure}",)
    assert "baseline None" not in table.title


def test_an_unreachable_server_is_one_line(tiny4):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = probe(f"http://127.0.0.1:{port}", model=MODEL, family="gemma4", timeout=2)
    assert result.failure_kind == "refused"
    assert result.failure == (
        f"nothing answered at http://127.0.0.1:{port}/v1: the connection was refused, so no "
        f"server listens on port {port}; check the port, and that `vllm serve` is running"
    )
    assert result.requests == 1 and not result.ok


def test_the_probe_is_bounded_and_checks_its_flags():
    with pytest.raises(ValueError, match="at most 24"):
        plan_probe("gemma4", images=((10, 10),) * 30)
    with pytest.raises(ValueError, match="--budget 99"):
        plan_probe("gemma4", budgets=(99,))
    with pytest.raises(ValueError, match="Drop --budget"):
        plan_probe("gemma3n", budgets=(280,))
    with pytest.raises(ValueError, match="--images"):
        parse_sizes("640by480")
    with pytest.raises(ValueError, match="--clips"):
        parse_clips("five")


def test_the_command_text_and_the_figure(tiny4):
    with faulty_server(tiny4, "budget_ignored") as (url, _):
        text, code = probe_command_text(
            url,
            model=MODEL,
            family="gemma4",
            images="640x480",
            clips="none",
            budget="70",
            video="none",
            as_json=True,
        )
    out = json.loads(text)
    assert code == 1 and out["ok"] is False
    assert [c["verdict"] for c in out["cases"]] == ["matches", "matches", "budget_ignored"]
    result, _ = _probe(tiny4, "square", clips=(), video=None)
    fig = show_probe(result)
    measured = [a for a in fig.axes[0].lines if a.get_gid() == "probe_measured"]
    assert len(measured) == sum(c.modality != "knob" for c in result.cases)


@pytest.mark.vllm
def test_vllms_own_processor_on_unified_audio_is_named(tinyu):
    """Counted by vLLM's own processor (offline): a clip whose samples % 640 is 160 gets
    one placeholder fewer than transformers' rows (vLLM's known difference, named), and a
    35 s clip stops at 750, which the probe calls a cut at 30 s and says is vLLM's."""
    pytest.importorskip("vllm")
    result, _ = _probe(tinyu, "vllm", images=(), video=None, clips=(5.01, 35.0), budgets=())
    rows, long = result.cases
    assert rows.measured == rows.vllm_expected == rows.expected - 1
    assert rows.verdict == "vllm_known" and "samples % 640 is 1–160" in rows.note
    assert long.verdict == "audio_cut" and long.measured == long.vllm_expected
    assert "capped at 750" in long.note and "known difference" in long.words
    assert result.ok  # what vLLM is known to do passes, named
