"""Real ``vllm serve`` processes on loopback, one per family, shared by this folder's tests.

``gemma3n_server`` and ``gemma4_server`` serve the saved tiny bundles. Each is started
exactly as ``gemma-explore serve-args <folder>`` prints it, plus ``--host``/``--port``
(a free loopback port). On CPU, vLLM reads ``--gpu-memory-utilization`` as a share of the
machine's RAM and refuses to start when that much is not free, so the CPU engine's KV
cache is given with ``VLLM_CPU_KVCACHE_SPACE=1`` (GiB) in the environment instead, which
takes precedence. An engine takes 40 s to minutes to start on 2 cores, so the servers the
selected tests need are launched together when the first of them is needed, and stay up
until this folder's tests are done (each process group is terminated then: the tests after
them need the memory).

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


@dataclass
class Server:
    """A running ``vllm serve``: where it answers, how it was started, where it logs."""

    name: str  # the served model name: the saved folder's path
    family: str
    argv: list[str]  # the command line as given (``vllm serve …``), before --host/--port
    port: int
    log: Path
    process: subprocess.Popen
    launched: float  # time.monotonic() at launch
    env: dict[str, str] = field(default_factory=dict)  # what the environment added
    started_s: float | None = None  # seconds from launch until /health answered
    ready: bool = False  # /health has answered
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


def served_dtype(server: Server):
    """The dtype a server's engine runs, from its start-up line ("dtype=torch.float32")."""
    import re

    import torch

    found = re.search(r"dtype=torch\.(\w+)", server.log.read_text(errors="replace"))
    assert found, server.log_tail()
    return getattr(torch, found.group(1))


def gemma4_audio_kernel(server: Server):
    """The CPU linear kernel vLLM gives the served Gemma 4 audio tower here, and whether
    it takes the tower's strided tensor (tests/vllm_cpu_linear.py); None on CUDA."""
    from tests.vllm_cpu_linear import gemma4_audio_linear

    return gemma4_audio_linear(served_dtype(server))


def gemma4_audio_answers(server: Server) -> bool:
    """Whether this machine's vLLM answers Gemma 4 audio (False: the clip kills the
    engine, and with it a server the next tests share)."""
    kernel = gemma4_audio_kernel(server)
    return kernel is None or kernel.takes_strided_input


def launch_server(argv: list[str], *, family: str, log: Path, env: dict[str, str]) -> Server:
    """Start ``argv`` (``["vllm", "serve", folder, …]``) on a free loopback port, logging
    to ``log``; returns at once (see :func:`wait_healthy`)."""
    assert argv[:2] == ["vllm", "serve"], argv
    port = _free_port()
    command = [*_vllm_executable(), *argv[1:], "--host", "127.0.0.1", "--port", str(port)]
    full_env = {
        **os.environ,
        **env,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
        ),
    }
    with open(log, "w") as out:
        process = subprocess.Popen(
            command,
            cwd=REPO,
            env=full_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the engine's children go with it
        )
    return Server(argv[2], family, argv, port, log, process, time.monotonic(), env)


def wait_healthy(server: Server) -> Server:
    """Wait for ``/health``; fail with the log's tail if the server exits or does not
    answer within the timeout (and stop it then)."""
    if server.ready:
        return server
    command = shlex.join(server.argv)
    while time.monotonic() - server.launched < START_TIMEOUT_S:
        if not server.alive():
            pytest.fail(
                f"`{command}` exited with {server.process.returncode} before answering "
                f"/health. Last lines of {server.log}:\n{server.log_tail()}",
                pytrace=False,
            )
        try:
            url = f"http://127.0.0.1:{server.port}/health"
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    server.started_s = time.monotonic() - server.launched
                    server.ready = True
                    return server
        except OSError:
            pass
        time.sleep(1.0)
    stop_server(server)
    pytest.fail(
        f"`{command}` did not answer /health within {START_TIMEOUT_S:.0f} s "
        f"(GEMMA_EXPLORE_SERVE_TIMEOUT). Last lines of {server.log}:\n{server.log_tail()}",
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
    """The command ``gemma-explore serve-args <folder>`` prints: its one ``vllm serve``
    line (``# …`` lines of reasons and production advice may surround it)."""
    from typer.testing import CliRunner

    from gemma_explore import cli

    done = CliRunner().invoke(cli.app, ["serve-args", folder], prog_name="gemma-explore")
    assert done.exit_code == 0, done.output
    (command,) = [line for line in done.stdout.splitlines() if line.startswith("vllm serve ")]
    return command


@pytest.fixture(scope="session")
def serve_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("serve")


class ServerPool:
    """The servers of one saved folder this session: launched once, and again only when a
    test brought the last one down (an engine crash ends ``vllm serve``)."""

    def __init__(self, folder: str, family: str, root: Path) -> None:
        self.folder, self.family, self.root = folder, family, root
        self.servers: list[Server] = []

    def launch(self) -> None:
        line = serve_args_line(self.folder)
        env = {"VLLM_CPU_KVCACHE_SPACE": "1"} if on_cpu() else {}  # GiB; see the module doc
        log = self.root / f"{self.family}-{len(self.servers)}.log"
        server = launch_server(shlex.split(line), family=self.family, log=log, env=env)
        server.printed = line
        self.servers.append(server)

    def get(self) -> Server:
        if not self.servers or (self.servers[-1].ready and not self.servers[-1].alive()):
            self.launch()
        return wait_healthy(self.servers[-1])

    def stop(self) -> None:
        for server in self.servers:
            stop_server(server)


SERVED = {"gemma3n": "tiny3n", "gemma4": "tiny4"}  # family → the tiny bundle's fixture


@pytest.fixture(scope="package")
def _pools(request, serve_root):
    """One pool per family. The servers the collected tests ask for (by fixture name) are
    all launched together, so their start-ups overlap; any other starts on first use."""
    pytest.importorskip("vllm")
    pools: dict[str, ServerPool] = {}

    def pool(family: str) -> ServerPool:
        if family not in pools:
            bundle = request.getfixturevalue(SERVED[family])
            folder = str(bundle.save_pretrained(serve_root / f"tiny-{family}"))
            pools[family] = ServerPool(folder, family, serve_root)
        return pools[family]

    wanted = {
        family
        for item in request.session.items
        for family in SERVED
        if f"{family}_server" in getattr(item, "fixturenames", ())
    }
    for family in sorted(wanted):
        pool(family).launch()
    yield pool
    for each in pools.values():
        each.stop()


@pytest.fixture()
def gemma3n_server(_pools) -> Server:
    """tiny-gemma3n, saved, served as ``gemma-explore serve-args`` prints."""
    return _pools("gemma3n").get()


@pytest.fixture()
def gemma4_server(_pools) -> Server:
    """tiny-gemma4, saved, served as ``gemma-explore serve-args`` prints."""
    return _pools("gemma4").get()


def printed_setting(server: Server, flag: str) -> object:
    """A ``--flag`` value of the printed command, decoded (JSON dicts and numbers)."""
    argv = shlex.split(server.printed)
    text = argv[argv.index(flag) + 1]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
