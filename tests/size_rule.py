"""The one size convention, as a test can check it: a pair of different numbers joined
by "×" is a size, and a size is written W×H with its label (``gemma_explore.sizes``).

Products are written with spaces ("32 × 66"), so they are not mistaken for sizes.
"""

from __future__ import annotations

import re

PAIR = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)×(\d+(?:\.\d+)?)(?![\d.])")


def unlabelled_pairs(text: str) -> list[str]:
    """Size pairs in ``text`` not followed (before the next pair or line end) by "W×H",
    and any "h×w" label (the other convention)."""
    bad = []
    for line in text.splitlines():
        if "h×w" in line.lower().replace(" ", ""):
            bad.append(line.strip())
        matches = list(PAIR.finditer(line))
        for i, m in enumerate(matches):
            if float(m.group(1)) == float(m.group(2)):
                continue  # a square reads the same either way
            end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
            if "W×H" not in line[m.end() : end]:
                bad.append(m.group(0) + " in " + repr(line.strip()))
    return bad


def test_the_size_rule_itself():
    assert unlabelled_pairs("resized 720×864 px (W×H) → 45×54 patches (W×H)") == []
    assert unlabelled_pairs("16×16 cells, 3×3 pooling, 32 × 66 = 2112") == []
    assert unlabelled_pairs("resized 864×720") and unlabelled_pairs("a (h×w) table")
    line = "720×864 and 45×54 patches (W×H)"
    assert unlabelled_pairs(line) == ["720×864 in " + repr(line)]
