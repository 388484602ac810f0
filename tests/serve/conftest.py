"""Real ``vllm serve`` processes on loopback, one per family, shared by the whole session.

``gemma3n_server`` and ``gemma4_server`` serve the saved tiny bundles. Each is started
exactly as ``gemma-explore serve-args <folder>`` prints it, plus ``--host``/``--port``
(a free loopback port). On CPU, vLLM reads ``--gpu-memory-utilization`` as a share of the
machine's RAM and refuses to start when that much is not free, so the CPU engine's KV
cache is given with ``VLLM_CPU_KVCACHE_SPACE=1`` (GiB) in the environment instead, which
takes precedence. An engine takes 40 s to minutes to start on 2 cores, so each server
starts on first use and stays up until the session ends (its process group is
terminated then).

The tiny models have random weights: what they write is noise; the tests check that
tokens come back and that the counts are ours.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = float(os.environ.get("GEMMA_EXPLORE_SERVE_TIMEOUT", "900"))

pytestmark = pytest.mark.vllm


@dataclass
class Server:
    """A running ``vllm serve``: where it answers, how it was started, where it logs."""

    name: str  # the served model name: the saved folder's path
    family: str
    argv: list[str]  # the command line as given (``vllm serve …``), before --host/--port
    port: int
    log: Path
    process: subprocess.Popen
    started_s: float  # seconds until /health answered
    env: dict[str, str] = field(default_factory=dict)  # what the environment added
    printed: str | None = None  # the line serve-args printed, when it was started from one

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 60) -> str:
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def models(self) -> dict:
        with urllib.request.urlopen(self.base_url + "/models", timeout=30) as answer:
            return json.load(answer)

    def prompt_tokens_total(self) -> float:
        """vLLM's Prometheus counter of prompt tokens processed so far (``/metrics``): the
        one count a transcription request reports nowhere else."""
        url = f"http://127.0.0.1:{self.port}/metrics"
        with urllib.request.urlopen(url, timeout=30) as answer:
            text = answer.read().decode()
        found = re.search(r"^vllm:prompt_tokens_total\{[^}]*\} (\S+)$", text, re.MULTILINE)
        assert found, "vLLM's /metrics has no vllm:prompt_tokens_total"
        return float(found.group(1))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _vllm_executable() -> list[str]:
    """``vllm`` itself, or the shim when only the CPU build (``vllm-cpu``) is installed."""
    try:
        md.version("vllm")
    except md.PackageNotFoundError:
        return [sys.executable, "-m", "tests.serve.vllm_cli"]
    return [str(Path(sys.executable).with_name("vllm"))]


def on_cpu() -> bool:
    import torch

    return not torch.cuda.is_available()


def start_server(argv: list[str], *, family: str, log: Path, env: dict[str, str]) -> Server:
    """Run ``argv`` (``["vllm", "serve", folder, …]``) on a free loopback port and wait
    for ``/health``; fail with the log's tail if it exits or does not answer in time."""
    assert argv[:2] == ["vllm", "serve"], argv
    port = _free_port()
    command = [*_vllm_executable(), *argv[1:], "--host", "127.0.0.1", "--port", str(port)]
    full_env = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)}  # fmt: skip
    start = time.monotonic()
    with open(log, "w") as out:
        process = subprocess.Popen(
            command, cwd=REPO, env=full_env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the engine's children go with it
        )  # fmt: skip
    server = Server(argv[2], family, argv, port, log, process, 0.0, env)
    while time.monotonic() - start < START_TIMEOUT_S:
        if not server.alive():
            pytest.fail(
                f"`{shlex.join(argv)}` exited with {process.returncode} before answering "
                f"/health. Last lines of {log}:\n{server.log_tail()}",
                pytrace=False,
            )
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                if r.status == 200:
                    server.started_s = time.monotonic() - start
                    return server
        except OSError:
            pass
        time.sleep(1.0)
    stop_server(server)
    pytest.fail(
        f"`{shlex.join(argv)}` did not answer /health within {START_TIMEOUT_S:.0f} s "
        f"(GEMMA_EXPLORE_SERVE_TIMEOUT). Last lines of {log}:\n{server.log_tail()}",
        pytrace=False,
    )


def stop_server(server: Server) -> None:
    """SIGTERM to the whole process group, SIGKILL after 30 s."""
    if server.process.poll() is None:
        try:
            os.killpg(server.process.pid, signal.SIGTERM)
            server.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait(timeout=30)
        except ProcessLookupError:
            pass
    try:  # children that outlived the leader (the engine core, its worker)
        os.killpg(server.process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def serve_args_line(folder: str) -> str:
    """What ``gemma-explore serve-args <folder>`` prints (its last line: the command)."""
    from typer.testing import CliRunner

    from gemma_explore import cli

    done = CliRunner().invoke(cli.app, ["serve-args", folder], prog_name="gemma-explore")
    assert done.exit_code == 0, done.output
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="session")
def serve_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("serve")


class ServerPool:
    """The servers of one saved folder this session: started on first use, and again only
    when a test brought the last one down (an engine crash ends ``vllm serve``)."""

    def __init__(self, folder: str, family: str, root: Path) -> None:
        self.folder, self.family, self.root = folder, family, root
        self.servers: list[Server] = []

    def get(self) -> Server:
        if self.servers and self.servers[-1].alive():
            return self.servers[-1]
        line = serve_args_line(self.folder)
        env = {"VLLM_CPU_KVCACHE_SPACE": "1"} if on_cpu() else {}  # GiB; see the module doc
        log = self.root / f"{self.family}-{len(self.servers)}.log"
        server = start_server(shlex.split(line), family=self.family, log=log, env=env)
        server.printed = line
        self.servers.append(server)
        return server

    def stop(self) -> None:
        for server in self.servers:
            stop_server(server)


@pytest.fixture(scope="session")
def _gemma3n_pool(serve_root, tiny3n):
    pytest.importorskip("vllm")
    pool = ServerPool(str(tiny3n.save_pretrained(serve_root / "tiny-gemma3n")), "gemma3n",
                      serve_root)  # fmt: skip
    yield pool
    pool.stop()


@pytest.fixture(scope="session")
def _gemma4_pool(serve_root, tiny4):
    pytest.importorskip("vllm")
    pool = ServerPool(str(tiny4.save_pretrained(serve_root / "tiny-gemma4")), "gemma4",
                      serve_root)  # fmt: skip
    yield pool
    pool.stop()


@pytest.fixture()
def gemma3n_server(_gemma3n_pool) -> Server:
    """tiny-gemma3n, saved, served as ``gemma-explore serve-args`` prints."""
    return _gemma3n_pool.get()


@pytest.fixture()
def gemma4_server(_gemma4_pool) -> Server:
    """tiny-gemma4, saved, served as ``gemma-explore serve-args`` prints."""
    return _gemma4_pool.get()


def printed_setting(server: Server, flag: str) -> object:
    """A ``--flag`` value of the printed command, decoded (JSON dicts and numbers)."""
    argv = shlex.split(server.printed)
    text = argv[argv.index(flag) + 1]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
