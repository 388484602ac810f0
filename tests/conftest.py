"""Shared fixtures: the tiny bundles are built once per test session."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never reach the network
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import contextlib
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from PIL import Image

from gemma_explore.models.vocabulary import CACHE_ENV, fetched_vocabulary, vocabulary_dir

# Google's Gemma vocabulary, which `make test` fetches into the user's cache, costs about
# 4 s each time transformers loads its tokenizer, and vLLM loads a processor 6-8 times per
# engine: on two cores that doubled the suite. So the suite runs on the stand-in (the
# offline fallback, itself under test), and the tests about the real vocabulary opt in with
# real_vocabulary() (tests/models/test_vocabulary.py, tests/vllm_engine/test_vocabulary_parity.py,
# the doctor's and the sentences' checks). Subprocesses (notebook kernels, `vllm serve`)
# inherit the stand-in too.
REAL_CACHE_ROOT = str(vocabulary_dir().parent)  # where `make test` fetched it
REAL_VOCABULARY = fetched_vocabulary() is not None
os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="gemma-explore-no-vocabulary-")
NEEDS_VOCABULARY = (
    "Google's Gemma vocabulary is not fetched here: run `gemma-explore tokenizer fetch` "
    "(make test does)"
)


SERVE_TESTS = Path(__file__).parent / "serve"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests on the two real ``vllm serve`` processes (``tests/serve``) run first, and
    the servers stop when they are done. The servers take about 10 GiB together; late in
    the run this process holds about as much (engines, processors, bundles), and the two
    together left under 2 GiB of the machine's 24 free: near enough to thrash that one run
    crawled past CI's 90 minutes."""
    items.sort(key=lambda item: not item.path.is_relative_to(SERVE_TESTS))  # stable


@contextlib.contextmanager
def real_vocabulary():
    """Inside: the fetched Gemma vocabulary is the one the package finds (and tiny bundles
    built inside hold it)."""
    import gc

    from gemma_explore.models import vocabulary
    from gemma_explore.models.checkpoints import _tiny

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(CACHE_ENV, REAL_CACHE_ROOT)
        _tiny.cache_clear()  # a tiny bundle built outside holds the stand-in
        try:
            yield
        finally:
            # About 0.5 GB per real tokenizer: let go of every one this block cached, the
            # package's and vLLM's processor caches alike (the suite shares 24 GiB with two
            # `vllm serve` processes).
            _tiny.cache_clear()
            vocabulary._load_fetched.cache_clear()
            _clear_vllm_processor_caches()
            gc.collect()


def _clear_vllm_processor_caches() -> None:
    try:
        from vllm.tokenizers import registry
        from vllm.transformers_utils import processor
    except ImportError:
        return
    for cache in (
        processor.cached_get_processor,
        processor.cached_get_processor_without_dynamic_kwargs,
        processor.cached_get_feature_extractor,
        registry.cached_get_tokenizer,
    ):
        getattr(cache, "cache_clear", lambda: None)()


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
