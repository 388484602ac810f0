"""`gemma-explore doctor`: passes here, and fails with a line that says what to do when a
piece is removed (a module blocked by an import hook, a kernel that is not registered, a
widget extension that is not installed, a pinned version that differs)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gemma_explore import doctor

ROOT = Path(__file__).resolve().parents[1]

# Run the CLI in a child whose imports of the named top-level modules fail, as on a laptop
# where they were never installed.
_BLOCKED_RUN = """
import sys
blocked = set(sys.argv[1].split(","))

class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}")

sys.meta_path.insert(0, Block())
from gemma_explore.cli import main
main(sys.argv[2:])
"""


def _doctor(*args: str, block: str = "") -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-c", _BLOCKED_RUN, block or "-", "doctor", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )


def test_python_version_check():
    assert doctor.check_python((3, 11, 0)).ok
    old = doctor.check_python((3, 10, 12))
    assert not old.ok and "3.11" in old.todo and old.found == "Python 3.10.12"


def test_pins_are_read_from_constraints_txt():
    pins = doctor.pinned_versions()
    lines = (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines()
    pinned = [ln.split("==")[0].lower() for ln in lines if "==" in ln and not ln.startswith("#")]
    assert sorted(pins) == sorted(pinned)
    assert pins["transformers"] == importlib.metadata.version("transformers")


def test_a_version_that_differs_from_the_pin_fails():
    numpy = importlib.metadata.version("numpy")
    ok = doctor.check_environment({"numpy": "numpy"}, pins={"numpy": numpy})
    assert ok.ok, ok
    bad = doctor.check_environment({"numpy": "numpy"}, pins={"numpy": "0.0.1"})
    assert not bad.ok
    assert f"numpy {numpy} (constraints.txt: 0.0.1)" in bad.found
    assert "make clean-env" in bad.todo and "wheelhouse" in bad.todo


def test_no_widget_extension_fails(tmp_path):
    bad = doctor.check_widgets(data_dirs=[tmp_path])
    assert not bad.ok and "jupyterlab_widgets" in bad.todo
    (tmp_path / doctor.WIDGET_EXTENSION).mkdir(parents=True)
    assert doctor.check_widgets(data_dirs=[tmp_path]).ok


def test_an_unregistered_kernel_fails():
    bad = doctor.check_kernel("gemma-explore-not-registered")
    assert not bad.ok
    assert "no kernel named 'gemma-explore-not-registered'" in bad.found
    assert "python -m ipykernel install --user --name gemma-explore-not-registered" in bad.todo


def test_an_unknown_check_name_says_which_exist():
    run = _doctor("--check", "wifi")
    assert run.returncode == 2
    assert "Unknown check 'wifi': choose from python, environment, widgets" in run.stderr


@pytest.mark.slow
def test_removed_packages_fail_with_what_to_do():
    """ipywidgets and librosa blocked: the environment and widget checks fail, say why
    and what to run; the exit code is 1."""
    run = _doctor("--check", "environment", "--check", "widgets", block="ipywidgets,librosa")
    assert run.returncode == 1, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert "FAIL environment: cannot import librosa" in lines[0]
    assert lines[1].strip().startswith("→ Reinstall the environment")
    assert "FAIL widgets: cannot import ipywidgets" in lines[2]
    assert lines[3].strip().startswith("→ Install it in this environment")
    assert lines[-1] == "0 of 2 checks passed."


@pytest.mark.slow
def test_doctor_passes_here():
    """Every check, as a teacher runs it: the demo served, a kernel started."""
    run = _doctor()
    assert run.returncode == 0, run.stdout + run.stderr
    names = [ln.split()[1].rstrip(":") for ln in run.stdout.splitlines() if ln.startswith("ok")]
    assert names == list(doctor.CHECKS)
    assert run.stdout.splitlines()[-1] == "5 of 5 checks passed."
