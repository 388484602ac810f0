"""Shared fixtures: the tiny bundles are built once per test session."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never reach the network
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from PIL import Image

# Hypothesis profiles: thorough in CI (CI=true), quick on a laptop. Tests that are slow
# per example take a fraction of the profile's count (see examples()). The CI profile is
# derandomized, so a local `CI=true` run tries exactly the examples CI will; the dev
# profile draws fresh ones every run, and keeps exploring.
settings.register_profile(
    "ci",
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "dev", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


def examples(fraction: float = 1.0, *, at_least: int = 10) -> int:
    """This run's example count for a property test, scaled by ``fraction``."""
    return max(at_least, int(settings.default.max_examples * fraction))


@pytest.fixture(scope="session")
def tiny4():
    import gemma_explore as ge

    return ge.load("tiny-gemma4", device="cpu")


@pytest.fixture(scope="session")
def tiny3n():
    import gemma_explore as ge

    return ge.load("tiny-gemma3n", device="cpu")


@pytest.fixture(scope="session")
def tinyu():
    """The encoder-free Gemma 4 Unified tiny bundle."""
    import gemma_explore as ge

    return ge.load("tiny-gemma4-unified", device="cpu")


@pytest.fixture(scope="session", params=["tiny-gemma3n", "tiny-gemma4"])
def tiny(request):
    import gemma_explore as ge

    return ge.load(request.param, device="cpu")


@pytest.fixture(scope="session")
def photo():
    """A 300×500 RGB test image with structure (gradients and a disc)."""
    yy, xx = np.mgrid[0:300, 0:500]
    r = (xx / 500 * 255).astype(np.uint8)
    g = (yy / 300 * 255).astype(np.uint8)
    b = (((xx - 250) ** 2 + (yy - 150) ** 2) < 80**2).astype(np.uint8) * 255
    return Image.fromarray(np.stack([r, g, b], axis=-1))


@pytest.fixture(scope="session")
def tone():
    """Three seconds of a 440 Hz tone at 16 kHz."""
    t = np.arange(16_000 * 3) / 16_000
    return (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)


@pytest.fixture(scope="session")
def saved_dirs(tmp_path_factory, tiny3n, tiny4, tinyu):
    """The tiny bundles saved to folders, as a user would save them."""
    root = tmp_path_factory.mktemp("checkpoints")
    return {
        "gemma3n": tiny3n.save_pretrained(root / "tiny-gemma3n"),
        "gemma4": tiny4.save_pretrained(root / "tiny-gemma4"),
        "gemma4_unified": tinyu.save_pretrained(root / "tiny-gemma4-unified"),
    }
