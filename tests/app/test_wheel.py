"""The package as pypa/build makes it and pip installs it, not a checkout: ``python -m build``
builds the sdist and, from it, the wheel (their file lists hold no Gemma vocabulary); the
wheel goes into a fresh venv; then, from a folder outside the repository, ``gemma-explore
demo --help`` and a started demo that serves its page.

No download: pypa/build runs without isolation (the test environment's setuptools, which the
build table's ``requires`` must accept), the venv sees the test environment's packages (a
``.pth`` line naming its site-packages, which ``--system-site-packages`` alone would not
reach from inside a venv), and pip (the environment's own) installs only the built wheel
(``--no-deps --no-index``).
Not skipped anywhere: CI runs it with the rest (about 40 s on an idle 2-core machine).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tarfile
import time
import urllib.request
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(sdist, wheel, what pypa/build printed) from a copy of the checkout as it stands
    (a fetched vocabulary lying in it would be copied too)."""
    import tomllib
    from importlib.metadata import version

    from packaging.requirements import Requirement

    (needed,) = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    have = version("setuptools")
    assert Requirement(needed).specifier.contains(have), (
        f"this environment's setuptools {have} cannot build the package ({needed}, from "
        "pyproject.toml's build-system); pip install -U setuptools"
    )
    base = tmp_path_factory.mktemp("dist")
    source = base / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv*",
            "build",
            "dist",
            "*.egg-info",
            "__pycache__",
            ".*_cache",
            "artifacts",
            ".hypothesis",
        ),
    )
    out = base / "dist"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    run = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        env=env,
        cwd=base,
        timeout=600,
    )
    said = run.stdout + run.stderr
    assert run.returncode == 0, said[-3000:]
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    shutil.rmtree(source)
    return sdist, wheel, said


def test_pypa_build_reads_the_build_table_without_a_warning(built):
    """pypa/build validates pyproject.toml's [build-system] (a misspelt key is an error
    there, where pip falls back to setuptools' legacy backend without a word)."""
    *_, said = built
    table = [
        line
        for line in said.splitlines()
        if re.search(r"build-system|build-backend|build_meta|legacy|Unknown propert", line)
    ]
    assert not table, "\n".join(table)
    assert "Successfully built" in said


def test_no_vocabulary_in_the_wheel_or_the_sdist(built):
    """Google's Gemma vocabulary is fetched into the user's cache, never shipped."""
    sdist, wheel, _ = built
    for names in (zipfile.ZipFile(wheel).namelist(), tarfile.open(sdist).getnames()):
        assert any(n.endswith("gemma_explore/models/vocabulary.py") for n in names)
        assert not [n for n in names if Path(n).name in ("tokenizer.json", "tokenizer.model")]
        assert not [n for n in names if "vocabulary.json" in n or n.endswith("NOTICE.txt")]


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory):
    """(bin folder, environment, a working folder outside the repo) of a venv holding the
    wheel pypa/build made (non-editable)."""
    _, wheel, _ = built
    base = tmp_path_factory.mktemp("wheel")
    env_dir = base / "venv"
    venv.create(env_dir, system_site_packages=True, with_pip=False, symlinks=True)
    bin_dir = env_dir / "bin"
    py = bin_dir / "python"
    site = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # This environment's packages, after the venv's own: nothing to download.
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (Path(site) / "_test_environment.pth").write_text("\n".join(ours) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", GRADIO_ANALYTICS_ENABLED="0")
    pip = subprocess.run(
        [
            py,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--disable-pip-version-check",
            "--quiet",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=base,
    )
    assert pip.returncode == 0, pip.stderr[-3000:]
    cwd = base / "elsewhere"
    cwd.mkdir()
    return bin_dir, env, cwd


def test_the_installed_package_is_the_one_that_runs(installed):
    bin_dir, env, cwd = installed
    where = subprocess.run(
        [bin_dir / "python", "-c", "import gemma_explore.app.demo as d; print(d.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        check=True,
    ).stdout.strip()
    assert where.startswith(str(bin_dir.parent)), where  # the venv's copy, not the checkout
    assert str(ROOT) not in where


def test_demo_help_from_the_installed_script(installed):
    bin_dir, env, cwd = installed
    run = subprocess.run(
        [bin_dir / "gemma-explore", "demo", "--help"],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage: gemma-explore demo")
    assert "--engine {hf,vllm,openai}" in run.stdout and "--port PORT" in run.stdout
    assert "ships with the repository" not in run.stdout + run.stderr


def test_the_installed_demo_serves_its_page(installed):
    bin_dir, env, cwd = installed
    port = _free_port()
    server = subprocess.Popen(
        [bin_dir / "gemma-explore", "demo", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    try:
        page, deadline = None, time.monotonic() + 120
        while page is None and time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
                    page = (r.status, r.read().decode("utf-8", "replace"))
            except OSError:
                time.sleep(0.5)
        if page is None:
            server.kill()
            output = server.communicate(timeout=10)[0]
            pytest.fail(f"the installed demo served no page; it said:\n{output[-3000:]}")
        status, html = page
        assert status == 200 and "gemma_explore" in html
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()


def test_python_dash_m_gemma_explore_app_has_the_same_flags():
    run = subprocess.run(
        [sys.executable, "-m", "gemma_explore.app", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert run.returncode == 0 and "--engine {hf,vllm,openai}" in run.stdout


def test_a_demo_without_gradio_says_what_to_install(monkeypatch, capsys):
    """A plain `pip install gemma-explore` has no gradio: `gemma-explore demo` must say
    which extra to install, in one line, instead of a traceback (seen from a clean venv)."""
    import importlib.util

    from gemma_explore.app import demo

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "gradio" else real(name, *a)
    )
    with pytest.raises(SystemExit) as stop:
        demo.main(["--port", "7999"])
    assert "pip install 'gemma-explore[demo]'" in str(stop.value)
    assert "\n" not in str(stop.value)
