"""The probe against the hostile-server corpus (hostile_servers.py), from Python and from
the command line: every server gets one line saying what it did and what to check, never
a traceback or an HTML page, within the deadline given (a total, not per request), with
the answer read up to a cap. The openai engine and transcribe against the same corpus:
tests/engines/test_server_reply.py; the demo: tests/app/test_serving_tab.py and
tests/app/test_browser_probe.py."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gemma_explore import cli
from gemma_explore.conformance.probe import probe, probe_table
from gemma_explore.engines.server_reply import MAX_REPLY_BYTES

from .hostile_servers import (
    HOSTILE,
    HUGE_BYTES,
    MODEL,
    REPRESENTATIVE,
    assert_one_line,
    hostile_server,
)

ROOT = Path(__file__).resolve().parents[2]
# What each server did, as the probe names it (ServerFault.kind).
KIND = {
    "banner": "banner",
    "close": "closed",
    "silent": "timeout",
    "drip": "timeout",
    "huge": "too_large",
    "truncated_json": "broken_json",
    "no_usage": "no_usage",
    "negative_tokens": "bad_usage",
    "absurd_tokens": "bad_usage",
    "redirect_loop": "redirect",
    "other_model": "other_model",
    "tls": "tls",
}
# What the line tells the user to check, per kind (the port, the path /v1, the model name).
ADVICE = {
    "other_model": "check the model name",
    "tls": "https://",
    "timeout": "check the port",
    "banner": "check the port",
}
PER_REQUEST = 60.0  # longer than any deadline below: only the probe's total can end them
DEADLINE = 2.0


def kind_of(case: str) -> str:
    return "html" if case.startswith("html_") else KIND[case]


def _probe(url: str, **options):
    options = {"timeout": PER_REQUEST, "deadline": DEADLINE} | options
    return probe(url, model=MODEL, clips=(), video=None, **options)


@pytest.mark.parametrize("case", HOSTILE)
def test_every_hostile_server_gets_one_line_from_the_probe(case):
    with hostile_server(case) as url:
        result = _probe(url)
    assert result.stopped and result.failure_kind == kind_of(case), result.failure
    assert_one_line(result.failure, url)
    assert ADVICE.get(result.failure_kind, "check the port") in result.failure
    if case.startswith("html_"):
        code = case.removeprefix("html_")
        assert f"answered HTTP {code} (" in result.failure and "HTML page" in result.failure
        assert "ends in /v1" in result.failure
    assert result.requests <= 2  # the model list and the baseline at most: then it stops
    table = probe_table(result)  # one line, not a row per case repeating it
    assert table.rows == () and table.notes == (f"failure: {result.failure}",)
    assert "None" not in table.title and "<html" not in table.markdown().lower()


@pytest.mark.parametrize("case", ["silent", "drip"])
def test_the_deadline_is_for_the_whole_probe_not_each_request(case):
    """A server that never answers, and one that sends a byte a second (each byte within
    any per-read timeout): the probe ends at its total deadline, long before the one
    request's own timeout of PER_REQUEST seconds, and says which it was."""
    with hostile_server(case) as url:
        result = _probe(url)
    assert result.failure_kind == "timeout"
    assert f"gave no complete answer within {DEADLINE:g} s" in result.failure
    assert result.seconds < PER_REQUEST  # the deadline ended it, not the request's timeout


def test_a_100_mb_answer_is_read_up_to_the_cap():
    """The 100 MB body (no Content-Length: it ends when the connection closes) is read up
    to the cap, then dropped: the memory the probe holds stays a small multiple of it."""
    with hostile_server("huge") as url:
        tracemalloc.start()
        try:
            result = _probe(url, deadline=30.0)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert result.failure_kind == "too_large"
    assert f"sent more than {MAX_REPLY_BYTES // 2**20} MiB" in result.failure
    assert peak < 8 * MAX_REPLY_BYTES < HUGE_BYTES / 3  # 32 MiB at most, of 100 MB sent


def test_a_dead_port_is_one_line_not_a_row_per_case():
    """The closed port of issue 46: one line with advice, no nine rows, no "baseline
    None" in a header."""
    with hostile_server("close") as url:
        port = url.split(":")[-1].split("/")[0]
    result = probe(url, model=MODEL, timeout=5)
    assert result.failure_kind == "refused" and result.stopped
    assert f"no server listens on port {port}; check the port" in result.failure
    assert probe_table(result).rows == ()


# ------------------------------------------------------------------- the command line

runner = CliRunner()


@pytest.mark.parametrize("case", REPRESENTATIVE)
def test_the_command_line_prints_one_line_and_exits_2(case):
    """`gemma-explore probe` on each kind of hostile server: exit 2 and one line on stderr
    (docs/cli.md's promise for bad input), nothing on stdout."""
    with hostile_server(case) as url:
        done = runner.invoke(
            cli.app,
            ["probe", url, "--model", MODEL, "--clips", "none", "--video", "none",
             "--timeout", str(PER_REQUEST), "--deadline", str(DEADLINE)],
            prog_name="gemma-explore",
        )  # fmt: skip
    assert done.exit_code == 2, done.output
    assert done.stdout == "" and "Traceback" not in done.output
    (line,) = done.stderr.splitlines()
    assert line.startswith("gemma-explore: error: ")
    assert_one_line(line, url)


def test_the_installed_command_on_a_banner_is_one_line_and_exit_2():
    """The real entry point, in its own process: where issue 46 saw a traceback ending in
    http.client.BadStatusLine and rc 1."""
    with hostile_server("banner") as url:
        done = subprocess.run(
            [sys.executable, "-m", "gemma_explore.cli", "probe", url, "--model", MODEL,
             "--timeout", "30", "--deadline", "20"],
            capture_output=True, text=True, timeout=120, cwd=ROOT,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert "answered 'SSH-2.0-OpenSSH_9.6', which is not HTTP" in line
    assert_one_line(line, url)
