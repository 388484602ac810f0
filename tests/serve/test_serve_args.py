"""``gemma-explore serve-args <saved folder>`` prints a command that runs: the Gemma 3n
server of this session was started from that line (conftest.py), and it serves with the
printed settings."""

from __future__ import annotations

import ast
import json
import re
import shlex

import pytest

from .conftest import serve_args_line

pytestmark = pytest.mark.vllm


SERVERS = ["gemma3n_server", "gemma4_server"]


@pytest.mark.parametrize("which", SERVERS)
def test_the_printed_command_is_what_runs(request, which):
    server = request.getfixturevalue(which)
    line = serve_args_line(server.name)
    assert server.printed == line
    argv = shlex.split(line)
    assert argv[:3] == ["vllm", "serve", server.name]
    assert server.argv == argv  # started as printed (plus --host/--port)
    assert server.alive()
    # Gemma 4's per-request budgets need the server to accept mm_processor_kwargs.
    assert ("--trust-request-mm-kwargs" in argv) == ("--mm-processor-kwargs" in argv)


def _printed_settings(argv: list[str]) -> dict[str, object]:
    """``--flag value`` pairs as vLLM's argument names and values (``--enforce-eager``: True)."""
    out: dict[str, object] = {}
    rest = argv[3:]
    while rest:
        key = rest.pop(0).removeprefix("--").replace("-", "_")
        if not rest or rest[0].startswith("--"):
            out[key] = True
            continue
        text = rest.pop(0)
        try:
            out[key] = json.loads(text)  # numbers and JSON dicts
        except json.JSONDecodeError:
            out[key] = text
    return out


@pytest.mark.parametrize("which", SERVERS)
def test_the_server_runs_with_the_printed_settings(request, which):
    server = request.getfixturevalue(which)
    argv = shlex.split(server.printed)
    settings = _printed_settings(argv)
    assert "max_model_len" in settings and "limit_mm_per_prompt" in settings
    (model,) = server.models()["data"]
    assert model["id"] == server.name
    assert model["max_model_len"] == settings["max_model_len"]
    # vLLM logs the arguments that differ from its defaults once, at start-up.
    log = server.log.read_text(errors="replace")
    line = re.search(r"non-default args: (\{.*\})", log)
    assert line, "vLLM's start-up log has no 'non-default args' line"
    taken = ast.literal_eval(line.group(1))
    assert {k: taken.get(k) for k in settings} == settings
