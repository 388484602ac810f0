"""Every vLLM fact that changes between releases lives in gemma_explore/vllm_versions/: no
other module of the package writes a vLLM version number, so a new release is one new
profile, and a surface that names a release names the one its profile says."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import gemma_explore

PACKAGE = Path(gemma_explore.__file__).parent
# A release number as text would write one: "0.32", "0.33.1", "vLLM 0.34" (the supported
# releases and their neighbours, 0.30 to 0.39), in a string, docstring or comment; number
# literals (a figure's 0.35 margin) are code, not text.
VERSION = re.compile(r"(?<![\d.])0\.3\d(?:\.\d+)?(?![\d])")


def _text(path: Path):
    """(line, text) of every string and comment token of a module."""
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if tok.type in (tokenize.STRING, tokenize.COMMENT) or tok.type == getattr(
            tokenize, "FSTRING_MIDDLE", -1
        ):
            for offset, line in enumerate(tok.string.splitlines()):
                yield tok.start[0] + offset, line


def test_no_module_outside_the_versioned_folder_writes_a_vllm_version():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(PACKAGE / "vllm_versions"):
            continue
        for number, line in _text(path):
            if VERSION.search(line):
                found.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert not found, "vLLM release numbers outside vllm_versions/:\n" + "\n".join(found)


def test_the_check_would_see_one():
    """The pattern finds the ways a release is written, and leaves other numbers alone."""
    for text in ("vLLM 0.32's default", "0.33.1", "(0.34)", "v0.34"):
        assert VERSION.search(text), text
    for text in ("0.92", "0.5", "10.32", "0.325", "1.034"):
        assert not VERSION.search(text), text
