"""scripts/light_env.sh says the real reason when it falls back to PyPI's torch, and builds
from constraints-light.txt either way (refusing a local "+cpu" torch when it falls back).

The script runs against a stand-in interpreter (a shell script playing ``python``): its
pip succeeds or fails, its index answers or not, its torch is a CPU or a CUDA build, as
each case sets. Nothing is installed and nothing reaches the network.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the CPU index is tried on Linux")

# FAKE_PIP: ok | fail | satisfied; FAKE_INDEX: up | down; FAKE_TORCH: cpu | cuda | novision;
# FAKE_BEFORE: the torch version installed before the script ran (unset: none).
_FAKE_PYTHON = r"""#!/usr/bin/env bash
echo "python $*" >> "$FAKE_LOG"
if [ "$1 $2" = "-m pip" ]; then
  case "$*" in
    *--index-url*)
      case "$FAKE_PIP" in
        ok) echo "Successfully installed torch-2.13.0+cpu torchvision-0.28.0+cpu" ;;
        satisfied) echo "Requirement already satisfied: torch==2.13.0 in ./lib" ;;
        fail) echo "WARNING: Retrying after connection broken by 'ProxyError'" >&2
              echo "ERROR: Could not find a version that satisfies the requirement torch==2.13.0 (from versions: none)" >&2
              echo "ERROR: No matching distribution found for torch==2.13.0" >&2
              exit 1 ;;
      esac ;;
  esac
  exit 0
fi
if [ "$1" = "-c" ]; then  # the torch installed before the script's pip ran
  [ -n "$FAKE_BEFORE" ] && echo "$FAKE_BEFORE"
  exit 0
fi
if [ "$1" = "-" ]; then
  script=$(cat)
  case "$script" in
    *urlopen*) [ "$FAKE_INDEX" = down ] && echo "$2/torch/: [Errno 101] Network is unreachable" ;;
    *torchvision.ops*)
      case "$FAKE_TORCH" in
        cuda) echo "the torch pip left here is a CUDA build (2.13.0+cu128), not the index's CPU one" ;;
        novision) echo "torchvision does not load next to the CPU torch 2.13.0+cpu (operator torchvision::nms does not exist)" ;;
      esac ;;
  esac
  exit 0
fi
exit 0
"""


def _run(tmp_path: Path, **fake: str) -> tuple[str, str]:
    """(what the script printed, the stand-in's call log)."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(_FAKE_PYTHON)
    python.chmod(0o755)
    log = tmp_path / "calls.log"
    env = {
        **os.environ,
        "FAKE_BEFORE": "",
        "FAKE_LOG": str(log),
        **{f"FAKE_{k.upper()}": v for k, v in fake.items()},
    }
    run = subprocess.run(
        ["bash", "scripts/light_env.sh", str(venv), "python3", "https://cpu.index.example/whl"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout, log.read_text()


def _install_line(calls: str) -> str:
    """The stand-in's log line for the package's install."""
    (line,) = [ln for ln in calls.splitlines() if "-e .[demo,notebooks,lab]" in ln]
    return line


def _torch_pin() -> str:
    lines = (ROOT / "constraints-light.txt").read_text(encoding="utf-8").splitlines()
    (pin,) = [ln.split("==")[1].split(",")[0] for ln in lines if ln.startswith("torch==")]
    return pin


def _why(out: str) -> str:
    lines = [ln for ln in out.splitlines() if ln.startswith("Why: ")]
    return lines[0] if lines else ""


def test_a_working_cpu_index_keeps_its_pair(tmp_path):
    out, calls = _run(tmp_path, pip="ok", index="up", torch="cpu")
    assert "Falling back" not in out
    line = _install_line(calls)
    assert "-c constraints-light.txt" in line and "torch!=" not in line  # the +cpu pair stays


def test_an_unreachable_index_is_named_not_torchvision(tmp_path):
    out, calls = _run(tmp_path, pip="fail", index="down", torch="cuda")
    why = _why(out)
    assert "the index could not be reached" in why and "Network is unreachable" in why
    assert "torchvision" not in why
    line = _install_line(calls)
    assert "-c constraints-light.txt" in line and f"torch!={_torch_pin()}+cpu" in line


def test_pip_satisfied_without_the_index_names_the_index(tmp_path):
    """The pins were already installed (a CUDA pair from an earlier fallback): pip never
    asked the index, so the import check's failure is not torchvision's fault."""
    out, _ = _run(tmp_path, pip="satisfied", index="down", torch="cuda")
    why = _why(out)
    assert why.startswith("Why: the index could not be reached")
    assert "CUDA build" in why and "does not load" not in why


def test_a_kept_cuda_torch_is_said_when_the_index_answers(tmp_path):
    out, _ = _run(tmp_path, pip="satisfied", index="up", torch="cuda", before="2.13.0+cu128")
    assert "pip kept the torch 2.13.0+cu128 already in" in _why(out)


def test_a_torchvision_that_does_not_load_is_blamed_only_then(tmp_path):
    out, _ = _run(tmp_path, pip="ok", index="up", torch="novision")
    assert "torchvision does not load next to the CPU torch" in _why(out)


def test_pip_failing_on_a_reachable_index_gives_its_last_error(tmp_path):
    out, _ = _run(tmp_path, pip="fail", index="up", torch="cuda")
    assert "No matching distribution found for torch==2.13.0" in _why(out)
