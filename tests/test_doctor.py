"""`gemma-explore doctor`: passes here, and fails with a line that says what to do when a
piece is removed (a module blocked by an import hook, a kernel that is not registered, a
widget extension that is not installed, a pinned version that differs)."""

from __future__ import annotations

import importlib.metadata
import os
import re
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


def test_the_line_says_whether_versions_match_the_pins():
    """Here (a checkout, its environment built from the pins) the line names the file
    and the pinned versions it matched."""
    ok = doctor.check_environment()
    assert ok.ok, ok
    assert "versions match constraints" in ok.found
    torch = importlib.metadata.version("torch")
    assert f"torch {torch}" in ok.found


def test_each_environment_is_compared_with_the_file_it_was_built_from(tmp_path):
    """Told by its vLLM: none (the demo's), the release constraints.txt pins (the CPU or
    CUDA build's, make test's .venv), or another (.venv-vllm-newest)."""
    from gemma_explore.vllm_versions import CPU_BUILD, newest

    assert doctor._pin_file(None, ROOT) == "constraints-light.txt"
    assert doctor._pin_file(f"{CPU_BUILD}+cpu", ROOT) == "constraints.txt"
    assert doctor._pin_file(CPU_BUILD, ROOT) == "constraints.txt"
    assert doctor._pin_file(newest().release, ROOT) == "constraints-vllm-newest.txt"
    assert doctor._pin_file(None, tmp_path) is None


def test_an_installed_copy_says_its_pins_are_unknown(tmp_path, monkeypatch):
    """No constraints.txt or pyproject.toml beside the package: versions are listed, the
    line says they could not be compared, and that is no failure."""
    monkeypatch.setattr(doctor, "ROOT", tmp_path)
    assert doctor.pyproject_ranges() == {}
    c = doctor.check_environment({"numpy": "numpy"})
    assert c.ok, c
    assert "pins unknown" in c.found
    assert f"numpy {importlib.metadata.version('numpy')}" in c.found


def test_the_vllm_line_names_what_is_installed_and_what_was_checked(tmp_path, monkeypatch):
    """Outside a checkout (no constraints file, another working folder) the line still
    sets the installed vLLM and transformers beside each profile's release and the
    transformers it was checked with, and names the profile that answers."""
    from gemma_explore.vllm_versions import PROFILES, installed_vllm, vllm_profile

    monkeypatch.setattr(doctor, "ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    c = doctor.check_vllm()
    assert c.ok, c
    vllm, transformers = installed_vllm(), importlib.metadata.version("transformers")
    here = vllm_profile(None)
    assert c.found.startswith(
        f"{f'vLLM {vllm}' if vllm else 'no vLLM'}, transformers {transformers}"
    )
    assert f"{here.label} answers ({here.chosen_because})" in c.found
    for p in PROFILES.values():
        assert f"{p.label} ({p.release}) + transformers {p.transformers}" in c.found
    (line,) = [r for r in doctor.run_checks(["vllm"])]
    assert line.ok and line.found == c.found


def test_a_vllm_older_than_every_profile_fails_and_says_what_to_do():
    old = doctor.check_vllm({"vllm": "0.1.0", "transformers": "5.0.0"})
    assert not old.ok and "upgrade vLLM" in old.todo and "--vllm" in old.todo
    from gemma_explore.vllm_versions import newest

    other = doctor.check_vllm({"vllm": newest().release, "transformers": "0.0.1"})
    assert (
        other.ok
        and f"not the {newest().transformers} {newest().label} was checked with" in other.found
    )


def test_a_version_outside_pyprojects_range_fails():
    assert doctor.pyproject_ranges()["transformers"] == ">=5.19,<6"
    bad = doctor.check_environment({"numpy": "numpy"}, pins={}, ranges={"numpy": ">=99"})
    assert not bad.ok
    assert "(pyproject.toml: >=99)" in bad.found


class _NoisyClient:
    """Plays nbclient: the kernel writes ipykernel's TCP warning and one other line."""

    def execute(self, stderr):
        stderr.write(
            "[IPKernelApp] WARNING | Kernel is running over TCP without encryption. All "
            "communication (including code and outputs) is sent in plain text.\n"
            "something else the kernel said\n"
        )
        stderr.flush()


def test_the_kernels_tcp_warning_is_kept_off_the_screen(capsys):
    error, lines = doctor._run_kernel(_NoisyClient())
    err = capsys.readouterr().err
    assert error is None and lines == ["something else the kernel said"]
    assert "without encryption" not in err and "something else the kernel said" in err


@pytest.mark.slow
def test_a_real_kernel_check_prints_no_tcp_warning():
    run = _doctor("--check", "kernel")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "without encryption" not in run.stdout + run.stderr


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
    assert "Unknown check 'wifi': choose from python, environment, vllm, widgets" in run.stderr


def test_the_flags_help_names_every_check():
    """--check's help lists every check, those run by default and those run on request."""
    import typer.main

    from gemma_explore.cli import app

    command = typer.main.get_command(app).commands["doctor"]
    (option,) = [p for p in command.params if p.name == "check"]
    listed = option.help.split(":", 1)[1].replace("(only when asked)", "")
    named = set(re.findall(r"[a-z]+", listed))
    assert named == set(doctor.CHECKS) | set(doctor.ON_REQUEST), option.help


def test_the_vocabulary_check_says_whether_it_is_fetched(tmp_path, monkeypatch):
    from gemma_explore.models.vocabulary import CACHE_ENV, FETCH_COMMAND

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))  # an empty cache: not fetched
    absent = doctor.check_vocabulary()
    assert absent.ok and "not fetched" in absent.found and FETCH_COMMAND in absent.found
    monkeypatch.delenv(CACHE_ENV)
    from gemma_explore.models.vocabulary import fetched_vocabulary

    if fetched_vocabulary() is None:
        pytest.skip("the Gemma vocabulary is not fetched here (make test fetches it)")
    present = doctor.check_vocabulary()
    assert present.ok and "fetched in" in present.found and "Terms of Use" in present.found


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
    assert (
        run.stdout.splitlines()[-1]
        == f"{len(doctor.CHECKS)} of {len(doctor.CHECKS)} checks passed."
    )
    assert "without encryption" not in run.stdout + run.stderr


def test_the_teacher_check_runs_only_when_asked_and_names_make_teacher():
    from gemma_explore.doctor import ON_REQUEST, run_checks

    assert "teacher" in ON_REQUEST and "teacher" not in doctor.CHECKS
    (result,) = run_checks(["teacher"])
    import importlib.util

    has_lab = importlib.util.find_spec("jupyterlab") is not None
    if not has_lab:  # the test environment keeps JupyterLab out (pyproject.toml's "lab")
        assert not result.ok and "JupyterLab" in result.found and "make teacher" in result.todo
