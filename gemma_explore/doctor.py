"""Pre-flight for a workshop laptop: ``gemma-explore doctor``.

Checks, each a pure function returning a frozen :class:`Check` whose ``todo`` says
what to do when it fails (one line, in the words of the command to run):

- ``python``: the interpreter is one the package supports (``requires-python``);
- ``environment``: the packages the notebooks and the demo need import, and their versions
  against the pins of the file the environment was built from (``constraints-light.txt``
  without vLLM, ``constraints.txt`` with the CPU build's release, ``constraints-vllm-newest.txt``
  with the newest's) and ``pyproject.toml``'s ranges for the rest. The line says whether
  they match; an installed copy without the checkout says its pins are unknown;
- ``vllm``: the installed vLLM and transformers beside the releases the package was checked
  on (its profiles, ``gemma_explore/vllm_versions/``), in a checkout or out of one, and
  which profile answers here;
- ``widgets``: ipywidgets imports, and the widget extension JupyterLab / Notebook 7 load
  is installed (without it an explorer shows a still of its figure, no controls);
- ``demo``: the web demo builds and answers on 127.0.0.1 (in a child process, killed after);
- ``kernel``: a notebook kernel starts and can import ``gemma_explore`` and ``ipywidgets``
  (its "running over TCP without encryption" warning, a local kernel's every start, is
  kept off the screen; anything else it prints still shows).

This module imports nothing of the package at import time; the demo and the kernel run in
child processes, so a broken install is reported, never crashed on.

>>> c = check_python((3, 11, 7))
>>> c.ok, c.name
(True, 'python')
>>> check_python((3, 9, 0)).todo.startswith("Install Python 3.11")
True
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CHECKS",
    "Check",
    "ON_REQUEST",
    "check_demo",
    "check_environment",
    "check_kernel",
    "check_python",
    "check_teacher",
    "check_vllm",
    "check_vocabulary",
    "check_widgets",
    "run_checks",
]

MIN_PYTHON = (3, 11)  # pyproject.toml: requires-python = ">=3.11"
ROOT = Path(__file__).resolve().parent.parent
# Import name → distribution name, for what the notebooks and the demo need.
KEY_PACKAGES = {
    "torch": "torch",
    "torchvision": "torchvision",
    "transformers": "transformers",
    "numpy": "numpy",
    "PIL": "pillow",
    "matplotlib": "matplotlib",
    "librosa": "librosa",
    "timm": "timm",
    "gradio": "gradio",
    "ipykernel": "ipykernel",
    "nbclient": "nbclient",
}
OPTIONAL_PACKAGES = {"vllm": "vllm"}  # make test's environments only; compared when present
WIDGET_EXTENSION = Path("labextensions") / "@jupyter-widgets" / "jupyterlab-manager"


@dataclass(frozen=True)
class Check:
    """One pre-flight check's verdict."""

    name: str  # why: the name `doctor --check NAME` takes and the report prints
    ok: bool  # why: the room can use this piece as it is
    found: str  # why: what was seen (versions, paths, the error), so a helper can compare
    todo: str = ""  # why: the one thing to do when not ok ("" when ok)
    steps: tuple[str, ...] = ()  # why: what was tried, in order

    def line(self) -> str:
        """The report's line: ``ok  name: found`` or ``FAIL name: found → todo``."""
        head = f"{'ok  ' if self.ok else 'FAIL'} {self.name}: {self.found}"
        return head if self.ok else f"{head}\n     → {self.todo}"


def check_python(version: tuple[int, ...] | None = None) -> Check:
    """Is this interpreter one the package supports?

    >>> check_python((3, 12, 1)).found
    'Python 3.12.1'
    """
    v = tuple(version or sys.version_info[:3])
    found = "Python " + ".".join(map(str, v))
    steps = (f"requires-python is >={MIN_PYTHON[0]}.{MIN_PYTHON[1]}", f"this is {found}")
    if v[:2] >= MIN_PYTHON:
        return Check("python", True, found, steps=steps)
    return Check(
        "python",
        False,
        found,
        f"Install Python {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer and rebuild the "
        "environment with it (make demo PYTHON=python3.11).",
        steps,
    )


def pinned_versions(path: Path | None = None) -> dict[str, str]:
    """``name==version`` pins of ``constraints.txt`` ({} when there is no such file).

    >>> pinned_versions(Path("/nonexistent"))
    {}
    """
    path = path or ROOT / "constraints.txt"
    if not path.is_file():
        return {}
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==([^,;\s#]+)", line.strip())
        if m:
            pins[m.group(1).lower()] = m.group(2)
    return pins


# The file each environment is built from: .venv (the CPU build's release), .venv-demo (no
# vLLM), .venv-vllm-newest (the newest release's code). docs/install.md lists them.
PIN_FILES = ("constraints.txt", "constraints-light.txt", "constraints-vllm-newest.txt")


def _checkout(root: Path) -> bool:
    """Is ``root`` this package's checkout (its pyproject.toml names the project)?"""
    try:
        return 'name = "gemma-explore"' in (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return False


_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*([^;]*?)\s*(?:;\s*(.*))?$")
_PLATFORM_MARKER = re.compile(r"^sys_platform\s*==\s*['\"]([^'\"]+)['\"]$")


def pyproject_ranges(root: Path | None = None) -> dict[str, str]:
    """Distribution → version range, from the checkout's ``pyproject.toml`` (dependencies
    and extras; one with a ``sys_platform`` marker only on that platform; {} outside a
    checkout).

    >>> pyproject_ranges(Path("/nonexistent"))
    {}
    """
    root = root or ROOT
    if not _checkout(root):
        return {}
    import tomllib

    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = list(project.get("dependencies", []))
    lines += [ln for extra in project.get("optional-dependencies", {}).values() for ln in extra]
    ranges: dict[str, str] = {}
    for line in lines:
        m = _REQUIREMENT.match(line)
        if not m or not m.group(2):
            continue
        platform = _PLATFORM_MARKER.match((m.group(3) or "").strip())
        if platform and platform.group(1) != sys.platform:
            continue
        ranges.setdefault(m.group(1).lower(), m.group(2).replace(" ", ""))
    return ranges


def _pin_file(vllm_version: str | None, root: Path) -> str | None:
    """The file this environment was built from, told by its vLLM: none (the light
    environment), the release ``constraints.txt`` pins (CPU or CUDA build), or another
    (the newest release's code). None outside a checkout."""
    present = [f for f in PIN_FILES if (root / f).is_file()]
    if not present:
        return None
    if vllm_version is None:
        want = PIN_FILES[1]
    else:
        pinned = pinned_versions(root / PIN_FILES[0]).get("vllm")
        want = PIN_FILES[0] if pinned and _same(vllm_version, pinned) else PIN_FILES[2]
    return want if want in present else present[0]


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _same(installed: str, pinned: str) -> bool:
    """2.13.0+cpu satisfies 2.13.0 (a local build of the same release)."""
    return installed.split("+")[0] == pinned.split("+")[0]


def _release(version: str) -> tuple[int, ...]:
    """The numeric release of a version: "2.13.0+cpu" → (2, 13, 0), "1.0rc1" → (1, 0)."""
    return tuple(int(n) for n in re.findall(r"\d+", re.split(r"[+]|[a-z]", version)[0]))


def _in_range(version: str, spec: str) -> bool:
    """Does ``version`` meet every clause of a range like ``<6,>=5.19``? (Release numbers
    only: enough for the ranges pyproject.toml writes; an odd clause is not a failure.)

    >>> _in_range("5.19.0", "<6,>=5.19"), _in_range("6.0", "<6,>=5.19")
    (True, False)
    """
    have = _release(version)
    for clause in filter(None, spec.split(",")):
        m = re.match(r"^(~=|==|!=|>=|<=|>|<)([\d.]+)$", clause.strip())
        if not m:
            continue
        op, want = m.group(1), _release(m.group(2))
        width = max(len(have), len(want))
        a, b = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
        ok = {
            "==": a == b,
            "!=": a != b,
            ">=": a >= b,
            "<=": a <= b,
            ">": a > b,
            "<": a < b,
            "~=": a >= b and have[: len(want) - 1] == want[:-1],
        }[op]
        if not ok:
            return False
    return True


def _compare(
    versions: dict[str, str], pins: dict[str, str], label: str, ranges: dict[str, str]
) -> tuple[list[str], list[str], list[str]]:
    """(versions off their pin or range, the pinned that match, the unpinned in range)."""
    wrong, pinned, ranged = [], [], []
    for dist, version in versions.items():
        pin, spec = pins.get(dist.lower()), ranges.get(dist.lower())
        if pin is not None:
            if _same(version, pin):
                pinned.append(f"{dist} {version}")
            else:
                wrong.append(f"{dist} {version} ({label}: {pin})")
        elif spec is not None:
            if _in_range(version, spec):
                ranged.append(f"{dist} {version}")
            else:
                wrong.append(f"{dist} {version} (pyproject.toml: {spec})")
    return wrong, pinned, ranged


def _imported(packages: dict[str, str], optional: dict[str, str]):
    """(the modules that fail to import, dist → version of those that import, steps)."""
    missing, versions, steps = [], {}, []
    for module, dist in {**packages, **optional}.items():
        if module in optional and importlib.util.find_spec(module) is None:
            steps.append(f"{module}: not installed (optional: only make test needs it)")
            continue
        try:
            importlib.import_module(module)
        except Exception as exc:  # ImportError, or a broken binary raising anything
            missing.append(module)
            steps.append(f"{module}: import failed ({type(exc).__name__}: {exc})")
            continue
        version = _version(dist)
        versions[dist] = version or "?"
        steps.append(f"{module}: imported, {dist} {version or '?'}")
    return missing, {d: v for d, v in versions.items() if v != "?"}, steps


def _environment_line(count: int, label: str | None, pinned: list, ranged: list) -> str:
    """The ok line: how many import, and whether their versions match the pins."""
    if label is None:
        shown = ", ".join(pinned + ranged)
        return (
            f"{count} packages import ({shown}); pins unknown: no constraints.txt beside the "
            "package (an installed copy, not a checkout), so versions are not compared"
        )
    line = f"{count} packages import; versions match {label} ({', '.join(pinned) or 'none pinned'})"
    return line + (f"; {len(ranged)} more within pyproject.toml's ranges" if ranged else "")


def check_environment(
    packages: dict[str, str] | None = None,
    pins: dict[str, str] | None = None,
    ranges: dict[str, str] | None = None,
) -> Check:
    """Do the key packages import, at the pinned versions (of the file the environment was
    built from; ``pyproject.toml``'s ranges for the packages it does not pin)?

    >>> check_environment({"json": "no-such-dist"}, pins={}).ok
    True
    """
    optional = OPTIONAL_PACKAGES if packages is None else {}
    packages = KEY_PACKAGES if packages is None else packages
    missing, versions, steps = _imported(packages, optional)
    if pins is None:
        label = _pin_file(versions.get("vllm"), ROOT)
        pins = pinned_versions(ROOT / label) if label else {}
    else:
        label = "constraints.txt"
    ranges = pyproject_ranges() if ranges is None else ranges
    # vLLM is held to the releases the package was checked on (the vllm check), not to
    # the one release the `vllm` extra names.
    ranges = {d: r for d, r in ranges.items() if d != "vllm"}
    wrong, pinned, ranged = _compare(versions, pins, label or "", ranges if label else {})
    steps.append(f"compared with {label or 'no pin file (pins unknown)'}")
    if missing or wrong:
        found = "; ".join(
            ([f"cannot import {', '.join(missing)}"] if missing else [])
            + ([f"wrong versions: {', '.join(wrong)}"] if wrong else [])
        )
        todo = (
            "Reinstall the environment: `make clean-env && make demo` (online), or install "
            "from the room's wheelhouse: `pip install --no-index --find-links wheelhouse "
            "-c constraints-light.txt -e '.[notebooks,lab,demo]'` (docs/teaching/README.md)."
        )
        return Check("environment", False, found, todo, tuple(steps))
    if label is None:
        pinned, ranged = [f"{d} {v}" for d, v in versions.items()], []
    found = _environment_line(len(versions), label, pinned, ranged)
    return Check("environment", True, found, steps=tuple(steps))


def check_vllm(versions: dict[str, str | None] | None = None) -> Check:
    """The installed vLLM and transformers beside the releases the package was checked on
    (each profile's vLLM release and the transformers checked with it), and the profile
    that answers here. Fails only for a vLLM older than every profile; a pair the package
    was not checked with is said, not failed. ``versions``: ``{"vllm": …, "transformers":
    …}`` (None: read what is installed; a None value: not installed).

    >>> check_vllm({"vllm": None, "transformers": None}).ok
    True
    >>> check_vllm({"vllm": "0.1.0", "transformers": None}).todo.startswith("vLLM 0.1.0 is older")
    True
    """
    from gemma_explore.vllm_versions import PROFILES, installed_vllm, newest, vllm_profile

    look = versions is None
    if look:
        versions = {"vllm": installed_vllm(), "transformers": _version("transformers")}
    vllm, transformers = versions.get("vllm"), versions.get("transformers")
    checked = ", ".join(
        f"{p.label} ({p.release}) + transformers {p.transformers}" for p in PROFILES.values()
    )
    here = (
        f"{f'vLLM {vllm}' if vllm else 'no vLLM'}, transformers {transformers or 'not installed'}"
    )
    steps = [f"installed: {here}", f"checked on: {checked}"]
    try:
        # Read from the machine, the installed vLLM decides as everywhere in the package
        # (its reason says "installed"); a version handed in is asked for by name.
        p = vllm_profile(None) if look else vllm_profile(vllm) if vllm else newest()
    except ValueError as exc:
        return Check(
            "vllm", False, f"{here}; the package was checked on {checked}", str(exc), tuple(steps)
        )
    why = p.chosen_because or "the newest supported"
    steps.append(f"{p.label} answers: {why}")
    found = f"{here}; {p.label} answers ({why}). Checked on {checked}"
    if vllm and transformers and _release(transformers) != _release(p.transformers):
        found += f"; this transformers is not the {p.transformers} {p.label} was checked with"
    return Check("vllm", True, found, steps=tuple(steps))


def _data_dirs() -> list[Path]:
    """Where Jupyter looks for extensions, in its order: JUPYTER_PATH, the user's data
    folder, this environment's, the system's (jupyter_core.paths.jupyter_path's rules)."""
    dirs = [Path(p) for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    if sys.platform == "darwin":
        dirs.append(Path.home() / "Library" / "Jupyter")
    elif os.name == "nt":
        dirs.append(Path(os.environ.get("APPDATA", Path.home())) / "jupyter")
    else:
        data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
        dirs.append(Path(data) / "jupyter")
    dirs.append(Path(sys.prefix) / "share" / "jupyter")
    dirs += [Path("/usr/local/share/jupyter"), Path("/usr/share/jupyter")]
    return dirs


def check_widgets(data_dirs: Iterable[Path] | None = None) -> Check:
    """Will the explorers draw as widgets (not as a still figure without controls)?

    >>> check_widgets(data_dirs=[Path("/nonexistent")]).ok
    False
    """
    steps = []
    try:
        ipywidgets = importlib.import_module("ipywidgets")
    except Exception as exc:
        return Check(
            "widgets",
            False,
            f"cannot import ipywidgets ({exc})",
            "Install it in this environment: `pip install -c constraints.txt ipywidgets` "
            "(or `pip install -e '.[notebooks]'`). Until then the explorers cannot be used; "
            "docs/teaching/README.md has the no-widget fallback.",
            (f"import ipywidgets: {type(exc).__name__}",),
        )
    version = getattr(ipywidgets, "__version__", "?")
    steps.append(f"ipywidgets {version} imports")
    dirs = list(data_dirs) if data_dirs is not None else _data_dirs()
    hits = [d / WIDGET_EXTENSION for d in dirs if (d / WIDGET_EXTENSION).is_dir()]
    steps.append(f"looked for {WIDGET_EXTENSION} in {len(dirs)} Jupyter data folders")
    if not hits:
        return Check(
            "widgets",
            False,
            f"ipywidgets {version}, but no widget extension for JupyterLab / Notebook 7",
            "Install it: `pip install -c constraints.txt jupyterlab_widgets` in the "
            "environment that runs JupyterLab, then restart JupyterLab (VS Code needs none).",
            tuple(steps),
        )
    return Check(
        "widgets", True, f"ipywidgets {version}, extension at {hits[0]}", steps=tuple(steps)
    )


def check_vocabulary() -> Check:
    """Is Google's Gemma vocabulary fetched? Either way the room can work: without it the
    tiny bundles count text by characters, and every surface says so.

    >>> check_vocabulary().name
    'vocabulary'
    """
    from gemma_explore.models.vocabulary import fetched_vocabulary, vocabulary_status

    found = fetched_vocabulary()
    return Check(
        "vocabulary",
        True,
        vocabulary_status(),
        steps=(f"looked for the rebuilt tokenizers in {found.folder if found else 'the cache'}",),
    )


def check_teacher() -> Check:
    """Is this the teacher's environment (``make teacher``): vLLM for the projector demos
    (notebooks 06 and 08), JupyterLab, and Google's Gemma vocabulary? Not a default check:
    a learner's laptop needs none of them.

    >>> check_teacher().name
    'teacher'
    """
    from gemma_explore.models.vocabulary import fetched_vocabulary

    steps, missing = [], []
    for module, what in (("vllm", "vLLM (its CPU build)"), ("jupyterlab", "JupyterLab")):
        found = importlib.util.find_spec(module) is not None
        steps.append(f"{what}: {'found' if found else 'missing'}")
        if not found:
            missing.append(what)
    if fetched_vocabulary() is None:
        missing.append("the Gemma vocabulary")
    steps.append(
        f"Gemma vocabulary: {'missing' if 'the Gemma vocabulary' in missing else 'fetched'}"
    )
    if missing:
        return Check(
            "teacher",
            False,
            f"not the teacher's environment: no {', no '.join(missing)}",
            "Run `make teacher` (it builds .venv-teacher: vLLM's CPU build, JupyterLab, the "
            "Gemma vocabulary) and teach from its JupyterLab.",
            tuple(steps),
        )
    return Check("teacher", True, "vLLM, JupyterLab and the Gemma vocabulary", steps=tuple(steps))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The demo, built and served the way `make demo` does, in a child process.
_DEMO_CHILD = """
import os, sys, time
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
from gemma_explore.app.ui import CSS, MAX_UPLOAD, build_app
demo = build_app("tiny-gemma4")
demo.launch(server_name="127.0.0.1", server_port=int(sys.argv[1]), share=False,
            prevent_thread_lock=True, quiet=True, max_file_size=MAX_UPLOAD, css=CSS)
print("serving", flush=True)
time.sleep(float(sys.argv[2]))
"""


def check_demo(timeout_s: float = 180.0, python: str | None = None) -> Check:
    """Does the web demo build and answer on 127.0.0.1? (a child process, killed after)"""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "NO_PROXY": "127.0.0.1,localhost"}
    cmd = [python or sys.executable, "-c", _DEMO_CHILD, str(port), str(timeout_s)]
    steps = [f"started the demo on {url}"]
    with subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as child:
        try:
            deadline = time.monotonic() + timeout_s
            body = None
            while time.monotonic() < deadline and child.poll() is None:
                try:
                    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
                    with opener.open(url, timeout=5) as reply:
                        body = reply.read().decode("utf-8", "replace")
                    break
                except OSError:
                    time.sleep(0.5)
        finally:
            child.kill()
            output = child.communicate()[0] or ""
    if body is not None and "gradio" in body.lower():
        steps.append("the page answered")
        return Check("demo", True, f"served and answered on 127.0.0.1:{port}", steps=tuple(steps))
    last = next((ln for ln in reversed(output.strip().splitlines()) if ln.strip()), "no output")
    steps.append(f"child said: {last}")
    return Check(
        "demo",
        False,
        f"the demo did not answer on 127.0.0.1:{port} ({last})",
        "Run `make demo` (or `python demo_app.py`) and read its first error; a missing "
        "package is fixed by the environment check's line, a busy port with --port 7861.",
        tuple(steps),
    )


# Run inside the kernel: where it runs and whether the course's imports work there.
_KERNEL_PROBE = "import sys, gemma_explore, ipywidgets; print(sys.executable)"
# ipykernel's warning on every local kernel started over TCP (what nbclient and JupyterLab
# start): true of every laptop in the room and nothing to act on, so doctor leaves it out.
_TCP_WARNING = "Kernel is running over TCP without encryption"


def _run_kernel(client) -> tuple[Exception | None, list[str]]:
    """Execute ``client``'s notebook with the kernel's stderr caught: (the error, or None;
    the kernel's stderr lines). Every line but the TCP warning is passed on to stderr."""
    import tempfile

    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as err:
        try:
            client.execute(stderr=err)
            error = None
        except Exception as exc:  # jupyter_client's NoSuchKernel, a dead kernel, an import
            error = exc
        err.seek(0)
        lines = [ln.rstrip("\n") for ln in err if _TCP_WARNING not in ln]
    if lines:
        sys.stderr.write("\n".join(lines) + "\n")
    return error, lines


def check_kernel(kernel_name: str = "python3", timeout_s: int = 120) -> Check:
    """Does a notebook kernel start and import ``gemma_explore`` and ``ipywidgets``?

    >>> check_kernel("no-such-kernel").todo.startswith("Register this environment")
    True
    """
    register = (
        "Register this environment as a kernel: `python -m ipykernel install --user --name "
        f"{kernel_name}` (run with this environment's python), then pick it in JupyterLab."
    )
    try:
        import nbformat
        from nbclient import NotebookClient
    except ImportError as exc:
        return Check(
            "kernel",
            False,
            f"cannot import nbclient ({exc})",
            "Install the notebook extra: `pip install -c constraints.txt -e '.[notebooks]'`.",
        )
    steps = [f"starting kernel {kernel_name!r}"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(_KERNEL_PROBE)])
    client = NotebookClient(
        nb, kernel_name=kernel_name, timeout=timeout_s, startup_timeout=timeout_s
    )
    exc, _ = _run_kernel(client)
    if exc is not None:
        if type(exc).__name__ == "NoSuchKernel":
            return Check(
                "kernel", False, f"no kernel named {kernel_name!r}", register, tuple(steps)
            )
        error = (str(getattr(exc, "evalue", "") or exc).strip().splitlines() or ["?"])[-1]
        steps.append(f"failed: {error}")
        return Check(
            "kernel",
            False,
            f"kernel {kernel_name!r} did not start or cannot import the course ({error})",
            register,
            tuple(steps),
        )
    where = "".join(o.get("text", "") for o in nb.cells[0].outputs).strip()
    steps.append("imported gemma_explore and ipywidgets")
    return Check("kernel", True, f"{kernel_name!r} starts, runs {where}", steps=tuple(steps))


CHECKS: dict[str, Callable[[], Check]] = {
    "python": check_python,
    "environment": check_environment,
    "vllm": check_vllm,
    "widgets": check_widgets,
    "vocabulary": check_vocabulary,
    "demo": check_demo,
    "kernel": check_kernel,
}


# Checks run only when named (``--check teacher``): what one person in the room needs.
ON_REQUEST: dict[str, Callable[[], Check]] = {"teacher": check_teacher}


def run_checks(names: Iterable[str] | None = None) -> list[Check]:
    """Run the named checks (all of :data:`CHECKS` by default; :data:`ON_REQUEST` only when
    named), in that order.

    >>> [c.name for c in run_checks(["python"])]
    ['python']
    """
    every = {**CHECKS, **ON_REQUEST}
    chosen = list(names) if names else list(CHECKS)
    unknown = [n for n in chosen if n not in every]
    if unknown:
        raise ValueError(
            f"Unknown check {unknown[0]!r}: choose from {', '.join(every)} (--check NAME)."
        )
    return [every[n]() for n in every if n in chosen]
