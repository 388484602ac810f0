"""``make test`` step by step, timed from a fresh clone, as ratios against ``make check``
measured in the same run; the peak memory of each step's largest process; the slowest 20
tests of the whole run.

Targets (the house rule: targets live here, printed as ratios):

* ``make check`` itself: under 120 s on 2 cores (printed as its share of that);
* every pytest step's largest process: under 10 GiB (printed as its share; one process for
  the whole suite once peaked at 16.7 GiB, which is why the Makefile runs it in phases).

Beside each step, the machine's memory in use at its fullest (two phases side by side
hold their sum), and, for the side-by-side step, each phase's own pytest time.

    python benchmarks/bench_suite.py --fresh-clone [--keep DIR] [--pytest-args '...']
    python benchmarks/bench_suite.py --here        # this checkout, its environments as they are

``--fresh-clone`` clones this checkout's committed HEAD into a temporary folder (so
uncommitted work is not measured) and builds every environment there from nothing: pip's
cache and ``~/.cache/gemma_explore`` are kept, as on a CI runner with a warm cache. It takes
as long as ``make test`` plus the environments (an hour or more on 2 cores); it is not part
of ``make bench``. Without either flag the script says so and exits.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECK_TARGET_S = 120.0
MEMORY_TARGET_GIB = 10.0

# The environments, in the order make test builds them (targets of the Makefile).
SETUP = ["env", "vllm-newest-env", "light-env", "demo-test-env", "browser", "vocabulary"]
# make test's steps: read from the Makefile's TEST_STEPS, so this list cannot drift.
_STEPS = re.compile(r"^TEST_STEPS\s*:=\s*((?:.*\\\n)*.*)$", re.M)
# pytest --durations lines: "12.34s call     tests/x.py::test_y", headed by the phase's
# name where phases run side by side ("[test-rest] 12.34s call ...")
_DURATION = re.compile(r"^(?:\[([\w-]+)\] )?\s*([\d.]+)s\s+(call|setup|teardown)\s+(\S+)", re.M)
# The folders each environment's size is read from.
VENVS = [".venv", ".venv-vllm-newest", ".venv-demo"]


@dataclass
class Step:
    """One timed ``make`` target."""

    target: str
    seconds: float
    peak_gib: float  # the largest single process it ran (ru_maxrss of its descendants)
    ok: bool
    output: str
    machine_gib: float = float("nan")  # the machine's memory in use at its fullest (all of it)


def _in_use_gib() -> float:
    """The machine's memory in use now (MemTotal − MemAvailable), in GiB; NaN off Linux."""
    try:
        info = dict(
            (line.split(":")[0], int(line.split()[1]))
            for line in Path("/proc/meminfo").read_text().splitlines()
        )
    except (OSError, ValueError, IndexError):
        return float("nan")
    return (info["MemTotal"] - info["MemAvailable"]) / (1 << 20)


class _MemoryWatch:
    """Samples the machine's memory in use once a second while a step runs: the peak of
    two phases side by side is their sum, which no single process's maxrss shows."""

    def __init__(self) -> None:
        self.peak = float("nan")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            now = _in_use_gib()
            if not self.peak >= now:  # also when the peak is still NaN
                self.peak = now

    def __enter__(self) -> _MemoryWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def test_steps(root: Path) -> list[str]:
    """``make test``'s steps, as the Makefile lists them."""
    found = _STEPS.search((root / "Makefile").read_text(encoding="utf-8"))
    if found is None:
        raise SystemExit("The Makefile has no TEST_STEPS: is this the project's checkout?")
    return found.group(1).replace("\\\n", " ").split()


# Runs one make target in a child and reports the peak RSS of everything it waited for:
# a fresh process per step, so each step's peak is its own.
_MEASURE = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:])
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(f"BENCH_SUITE_PEAK_KIB={peak_kib}", file=sys.stderr)
sys.exit(done.returncode)
"""


def run_make(target: str, root: Path, pytest_args: str) -> Step:
    """Time ``make <target>`` in ``root``; its output is shown and kept."""
    command = [sys.executable, "-c", _MEASURE, "make", "--no-print-directory", target]
    if pytest_args:
        command.append(f"PYTEST_ARGS={pytest_args}")
    print(f"\n=== make {target}", flush=True)
    start = time.perf_counter()
    child = subprocess.Popen(
        command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines = []
    with _MemoryWatch() as watch:
        for line in child.stdout:
            if not line.startswith("BENCH_SUITE_PEAK_KIB="):
                sys.stdout.write(line)
            lines.append(line)
        child.wait()
    seconds = time.perf_counter() - start
    text = "".join(lines)
    peak = re.findall(r"BENCH_SUITE_PEAK_KIB=(\d+)", text)
    peak_gib = int(peak[-1]) / (1 << 20) if peak else float("nan")
    return Step(target, seconds, peak_gib, child.returncode == 0, text, watch.peak)


def slowest(steps: list[Step], count: int = 20) -> list[tuple[float, str, str, str]]:
    """The ``count`` slowest test phases of the run: (seconds, when, test id, step)."""
    found = []
    for step in steps:
        for phase, seconds, when, test in _DURATION.findall(step.output):
            found.append((float(seconds), when, test, phase or step.target))
    return sorted(found, reverse=True)[:count]


# pytest's last line in a phase run side by side: "[test-rest] ==== 3 passed in 12.34s ..."
_SUMMARY = re.compile(r"^\[([\w-]+)\] =+ .* in ([\d.]+)s\b", re.M)


def _side_by_side(output: str) -> list[tuple[str, float]]:
    """Each phase a side-by-side step ran, with pytest's own time for it."""
    return [(phase, float(seconds)) for phase, seconds in _SUMMARY.findall(output)]


def disk_gib(path: Path) -> float | None:
    """Size of a folder on disk, in GiB (``du``), or None when it is missing."""
    if not path.is_dir():
        return None
    done = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True)
    return int(done.stdout.split()[0]) / (1 << 20) if done.returncode == 0 else None


def report(setup: list[Step], check: Step, steps: list[Step], root: Path) -> None:
    base = check.seconds
    print("\n" + "=" * 78)
    print(
        f"make check: {base:.0f} s = {base / CHECK_TARGET_S:.2f} × its {CHECK_TARGET_S:.0f} s target"
    )
    print(
        f"{'step':<22}{'seconds':>9}{'× check':>9}{'peak GiB':>10}{'× 10 GiB':>10}"
        f"{'machine GiB':>13}  status"
    )
    for step in [*setup, check, *steps]:
        memory = step.peak_gib / MEMORY_TARGET_GIB
        print(
            f"{step.target:<22}{step.seconds:>9.0f}{step.seconds / base:>9.2f}"
            f"{step.peak_gib:>10.1f}{memory:>10.2f}{step.machine_gib:>13.1f}"
            f"  {'ok' if step.ok else 'FAILED'}"
        )
        for phase, seconds in _side_by_side(step.output):
            print(f"  {phase:<20}{seconds:>9.0f}{seconds / base:>9.2f}  (pytest's own time)")
    total = sum(s.seconds for s in steps)
    print(f"{'make test (steps)':<22}{total:>9.0f}{total / base:>9.2f}")
    for venv in VENVS:
        size = disk_gib(root / venv)
        if size is not None:
            print(f"{venv}: {size:.1f} GiB on disk")
    print("\nThe slowest 20 tests (seconds, and × make check):")
    for seconds, when, test, target in slowest(steps):
        print(f"{seconds:>8.1f} s {seconds / base:>6.2f}×  {when:<8} {test}  ({target})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--fresh-clone", action="store_true", help="clone HEAD, build everything")
    where.add_argument("--here", action="store_true", help="this checkout, as it is")
    parser.add_argument("--keep", type=Path, help="clone into this folder and keep it")
    parser.add_argument("--pytest-args", default="", help="added to every pytest of the run")
    args = parser.parse_args(argv)
    if not (args.fresh_clone or args.here):
        print(
            "bench_suite: times make test from a fresh clone (an hour or more): run it with "
            "--fresh-clone (make bench-suite) or --here; skipped."
        )
        return 0
    pytest_args = f"--durations=20 {args.pytest_args}".strip()
    tmp = None
    root = ROOT
    if args.fresh_clone:
        if args.keep is None:
            tmp = tempfile.mkdtemp(prefix="gemma-explore-bench-suite-")
        dest = args.keep or Path(tmp) / "clone"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(dest)], check=True)
        root = dest
        print(f"Fresh clone of HEAD in {root}", flush=True)
    try:
        setup = [run_make(t, root, "") for t in SETUP]
        check = run_make("check", root, pytest_args)
        steps = [run_make(t, root, pytest_args) for t in test_steps(root)]
        report(setup, check, steps, root)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    failed = [s.target for s in [*setup, check, *steps] if not s.ok]
    if failed:
        print(f"\nFailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
