"""Unpack the Python source of every supported vLLM release, for the tests that hold each
profile (gemma_explore/vllm_versions/) to that release's own files.

    python scripts/vllm_sources.py [--out DIR]

Each release's standard wheel is downloaded from PyPI with ``pip download --no-deps``
(about 240-340 MB each; pip's cache keeps them) and only its ``.py`` files are unpacked
into ``DIR/<release>/vllm/`` (default ``~/.cache/gemma_explore/vllm-src``). Nothing is
installed and nothing of vLLM is imported. A release already unpacked is skipped, so a
re-run costs nothing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from gemma_explore.vllm_versions import PROFILES


def unpack(release: str, out: Path) -> Path:
    """Download vLLM ``release``'s wheel and unpack its Python files into ``out/release``."""
    target = out / release
    if (target / "vllm" / "__init__.py").exists():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps"]
        command += ["--only-binary=:all:", "-d", tmp, f"vllm=={release}"]
        subprocess.run(command, check=True)
        (wheel,) = Path(tmp).glob("vllm-*.whl")
        partial = out / f".{release}.partial"
        with zipfile.ZipFile(wheel) as zf:
            names = [n for n in zf.namelist() if n.endswith((".py", "METADATA"))]
            zf.extractall(partial, names)
        partial.rename(target)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path.home() / ".cache/gemma_explore/vllm-src")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for profile in PROFILES.values():
        print(f"vLLM {profile.release}: {unpack(profile.release, args.out)}", flush=True)


if __name__ == "__main__":
    main()
