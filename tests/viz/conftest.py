"""What the gallery's figure tests share: the samples and tiny models, loaded once."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def inputs():
    """Every gallery figure's inputs (tiny models, plans, the FLOP count), computed once
    for the readability and the projector tests."""
    from scripts.gallery import gallery_inputs

    return gallery_inputs()
