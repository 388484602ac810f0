"""``python -m gemma_explore.course.buildit``: start the track, check it, and (for a
teacher) reveal or reseal the reference solutions.

    start DIR                 copy the five blanks and the README into DIR
    check DIR [pytest args]   run the checks on DIR's functions (e.g. ``-k resize``)
    check reference           (teacher) run them on the sealed reference solutions
    reveal DIR                (teacher) write the reference solutions into DIR
    seal DIR                  (teacher) print the SEALED table for DIR's solutions

>>> main(["start"])
2
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from gemma_explore.course.buildit import HERE, SOURCE_ENV, TRACK, start
from gemma_explore.course.buildit.sealed import reference_source, seal

USAGE = __doc__.split("\n\n")[1]


def _check(source: str, extra: list[str]) -> int:
    import pytest

    os.environ[SOURCE_ENV] = source if source == "reference" else str(Path(source).resolve())
    return int(pytest.main([str(HERE / "checks.py"), "-q", "-p", "no:cacheprovider", *extra]))


def main(argv: list[str] | None = None) -> int:
    """Run one command (see the module's docstring); the exit status: 0 when it worked."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2 or args[0] not in ("start", "check", "reveal", "seal"):
        print(USAGE, file=sys.stderr)
        return 2
    command, folder, extra = args[0], args[1], args[2:]
    if command == "start":
        for path in start(folder):
            print(f"wrote {path}")
        print(
            f"Edit the five files in {folder}, then: python -m gemma_explore.course.buildit check {folder}"
        )
        return 0
    if command == "check":
        return _check(folder, extra)
    if command == "reveal":
        Path(folder).mkdir(parents=True, exist_ok=True)
        for name in TRACK:
            (Path(folder) / f"{name}.py").write_text(reference_source(name), encoding="utf-8")
            print(f"wrote {Path(folder) / f'{name}.py'}")
        return 0
    reference_source(TRACK[0])  # seal: a teacher's command too
    print("SEALED: dict[str, str] = {")
    for name in TRACK:
        print(f'    "{name}": "{seal((Path(folder) / f"{name}.py").read_text(encoding="utf-8"))}",')
    print("}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
