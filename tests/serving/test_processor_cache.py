"""The processor-cache figures equal the installed vLLM's own: its processor run on CPU
(``vllm_apply``, ``get_dummy_mm_inputs``, built with its default multimodal config, so a
release that normalizes Gemma 4's images on the device hands over raw uint8 pixels), its
size function (``MultiModalCache.get_item_size``) and its LRU (``get_lru_cache``,
``put_if_fits``). Our side is asked for the installed release (``INSTALLED``). What each
release does when one request overflows the cache is read from that release's source."""

from __future__ import annotations

import ast

import numpy as np
import pytest
from PIL import Image

from gemma_explore.engines.vllm_processor import VLLM_PROCESSORS, vllm_apply, vllm_available
from gemma_explore.serving.processor_cache import GIB, cached_item, processor_cache, raw_pixels
from gemma_explore.vllm_versions import PROFILES, SUPPORTED, installed_vllm, vllm_profile
from tests.vllm_sources import read_source

pytestmark = pytest.mark.vllm_version

# The installed vLLM ("0.34.0", the CPU build's "0.32.0+cpu"): our figures follow its rules
# where they are compared with its processor (None without vLLM: those tests skip).
INSTALLED = installed_vllm()


def needs_vllm(test):
    """A test against the installed vLLM's own processor, size function or LRU."""
    for mark in (
        pytest.mark.vllm,
        pytest.mark.skipif(not vllm_available(), reason="vllm is not installed"),
    ):
        test = mark(test)
    return test


# A 5 s clip, a length off the 128-sample grid, and 95 s (past what the models hear).
CLIPS = (16_000 * 5, 16_000 * 7 + 77, 16_000 * 95 + 77)


def _vllm_sizes(out) -> dict[str, list[int]]:
    from vllm.multimodal.cache.base import MultiModalCache

    return {
        m: [MultiModalCache.get_item_size(it) for it in items]
        for m, items in out["mm_kwargs"].items()
    }


def _dtypes(out) -> dict[str, str]:
    """Each field's dtype in vLLM's processor output ("torch.uint8", …)."""
    return {
        key: str(elem.data.dtype)
        for items in out["mm_kwargs"].values()
        for item in items
        for key, elem in item.items()
        if hasattr(elem.data, "dtype")
    }


def _prompt(spec, token: str) -> str:
    return token if spec.wraps_in_newlines else "\t" + token


@pytest.fixture(scope="module", params=["tiny3n", "tiny4", "tinyu"])
def bundle(request):
    return request.getfixturevalue(request.param)


@needs_vllm
def test_every_budgets_image_is_vllms_size(bundle):
    spec = bundle.spec
    odd = Image.new("RGB", (3000, 200))  # the size does not matter: padded to the budget
    for budget in spec.image.budgets or (None,):
        kwargs = {"max_soft_tokens": budget} if budget else {}
        out = vllm_apply(bundle, _prompt(spec, spec.image_token), {"image": [odd]}, kwargs)
        ours = cached_item(spec, "image", budget=budget, dtype="float32", vllm_version=INSTALLED)
        assert _vllm_sizes(out) == {"image": [ours.bytes]}, budget


@needs_vllm
def test_clips_are_vllms_size(bundle):
    spec = bundle.spec
    for n in CLIPS:
        wave = (0.1 * np.random.default_rng(n).standard_normal(n)).astype(np.float32)
        out = vllm_apply(bundle, spec.audio_token, {"audio": [wave]})
        ours = cached_item(spec, "audio", samples=n, dtype="float32", vllm_version=INSTALLED)
        assert _vllm_sizes(out) == {"audio": [ours.bytes]}, n


@needs_vllm
def test_the_profiling_dummy_is_vllms_size(bundle):
    """vLLM's own dummy (what start-up warms the cache with), one item per modality."""
    proc = VLLM_PROCESSORS.get(bundle)
    mods = ("image", "audio", "video") if bundle.spec.has_video else ("image", "audio")
    sizes = _vllm_sizes(proc.get_dummy_mm_inputs(dict.fromkeys(mods, 1)))
    ours = processor_cache(bundle, dtype="float32", vllm_version=INSTALLED)
    assert sizes == {m: [ours.item(m, dummy=True).bytes] for m in mods}


@needs_vllm
def test_raw_pixels_are_the_installed_processors(bundle):
    """The installed processor normalizes on the device (its resolved
    mm_device_do_normalize) exactly for the model classes the installed release's profile
    names, and then its image and video pixel values are uint8 (else float32, the
    processor's dtype here); positions stay int64."""
    proc = VLLM_PROCESSORS.get(bundle)
    raw = raw_pixels(bundle.spec, vllm_profile(INSTALLED))
    on = proc.info.ctx.model_config.get_multimodal_config().mm_device_do_normalize
    assert bool(on) == raw
    mods = ("image", "video") if bundle.spec.has_video else ("image",)
    dtypes = _dtypes(proc.get_dummy_mm_inputs(dict.fromkeys(mods, 1)))
    pixels = "torch.uint8" if raw else "torch.float32"
    assert dtypes["pixel_values"] == pixels
    if bundle.spec.has_video:
        assert dtypes["pixel_values_videos"] == pixels
    if "pixel_position_ids" in dtypes:
        assert dtypes["pixel_position_ids"] == "torch.int64"


@needs_vllm
def test_bfloat16_halves_the_floating_tensors(tiny4):
    """vLLM casts floating tensors to the model dtype: a bfloat16 engine's items. Raw
    uint8 pixel values (a release that normalizes Gemma 4 on the device) are not floating:
    they stay uint8, and only the audio features are halved."""
    from vllm.config import ModelConfig
    from vllm.multimodal import MULTIMODAL_REGISTRY
    from vllm.multimodal.processing.context import TimingContext
    from vllm.multimodal.processing.inputs import ProcessorInputs

    folder = VLLM_PROCESSORS.folder_of(tiny4)
    config = ModelConfig(model=folder, tokenizer=folder, dtype="bfloat16")
    proc = MULTIMODAL_REGISTRY.create_processor(config)
    dummy = proc.get_dummy_mm_inputs({"image": 1, "audio": 1, "video": 1})
    sizes = _vllm_sizes(dummy)
    wave = np.zeros(16_000 * 30, np.float32)
    ids = proc.info.ctx.tokenizer.encode(tiny4.spec.audio_token, add_special_tokens=False)
    out = proc.apply(
        ProcessorInputs(ids, proc.info.parse_mm_data({"audio": [wave]})),
        TimingContext(enabled=False),
    )
    ours = processor_cache(tiny4, vllm_version=INSTALLED)  # bfloat16 by default
    assert sizes == {m: [ours.item(m, dummy=True).bytes] for m in ("image", "audio", "video")}
    assert _vllm_sizes(out) == {"audio": [ours.item("audio").bytes]}
    raw = raw_pixels(tiny4.spec, vllm_profile(INSTALLED))
    pixels = "torch.uint8" if raw else "torch.bfloat16"
    dtypes = _dtypes(dummy)
    assert (dtypes["pixel_values"], dtypes["pixel_values_videos"]) == (pixels, pixels)
    assert dtypes["input_features_padded"] == "torch.bfloat16"


@needs_vllm
@pytest.mark.parametrize("family", ["gemma3n", "gemma4", "gemma4_unified"])
def test_items_per_gib_and_fits_are_vllms_lru(family):
    """vLLM's own LRU of 1 GiB keeps exactly items_per_gib copies of an item, and
    put_if_fits refuses one exactly when ours says it does not fit."""
    from vllm.multimodal.cache.base import (
        MultiModalCache,
        MultiModalProcessorCacheItemMetadata,
    )

    for item in processor_cache(family).items:
        assert item.items_per_gib == GIB // item.bytes

    def sized(n: int) -> MultiModalProcessorCacheItemMetadata:
        # What the LRU sender (P0) stores: get_leaf_size reads its item_size.
        meta = object.__new__(MultiModalProcessorCacheItemMetadata)
        meta.item_size, meta.prompt_updates = n, []
        return meta

    video = max(processor_cache(family).items, key=lambda it: it.bytes)  # the largest
    lru = MultiModalCache.get_lru_cache(1.0, MultiModalProcessorCacheItemMetadata)
    for i in range(video.items_per_gib + 5):
        lru.put_if_fits(str(i), sized(video.bytes))
    assert len(lru) == video.items_per_gib
    small = processor_cache(family, mm_processor_cache_gb=video.bytes / GIB * 0.99)
    tiny_lru = MultiModalCache.get_lru_cache(
        small.mm_processor_cache_gb, MultiModalProcessorCacheItemMetadata
    )
    for item in small.items:
        assert tiny_lru.put_if_fits(item.what + str(item.dummy), sized(item.bytes)) == item.fits
        tiny_lru.clear()


@needs_vllm
def test_a_serving_plans_dummy_is_at_its_start_up_budget(tiny4):
    """From a serving plan: the dummy image is profiled at the plan's
    --mm-processor-kwargs budget, as vLLM's own dummy at that budget."""
    from vllm.config import ModelConfig
    from vllm.multimodal import MULTIMODAL_REGISTRY

    from gemma_explore.serving.plan import plan_serving

    folder = VLLM_PROCESSORS.folder_of(tiny4)
    config = ModelConfig(
        model=folder,
        tokenizer=folder,
        dtype="float32",
        mm_processor_kwargs={"max_soft_tokens": 1120},
    )
    proc = MULTIMODAL_REGISTRY.create_processor(config)
    sizes = _vllm_sizes(proc.get_dummy_mm_inputs({"image": 1}))
    plan = plan_serving(tiny4, max_soft_tokens=1120, vllm_version=INSTALLED)
    ours = processor_cache(plan, dtype="float32")
    assert sizes == {"image": [ours.item("image", dummy=True).bytes]}
    assert ours.item("image", dummy=True).what == "image at budget 1120"


def _merge_source(version: str) -> str:
    """The release's BaseMultiModalProcessor._merge_mm_kwargs, as written."""
    text = read_source(version, "multimodal/processing/processor.py")
    node = next(
        n
        for n in ast.walk(ast.parse(text))
        if isinstance(n, ast.FunctionDef) and n.name == "_merge_mm_kwargs"
    )
    return ast.get_source_segment(text, node)


@pytest.mark.parametrize("version", SUPPORTED)
def test_a_request_that_overflows_the_cache_is_the_releases(version):
    """Whether a request keeps its own cached items while it inserts its new ones: the
    release's _merge_mm_kwargs reads their payloads first (get_cached_item) or it does not,
    and the steps of a plan of that release say which, in the release's name."""
    from gemma_explore.serving.plan import plan_serving

    keeps = "get_cached_item" in _merge_source(version)
    for cache in (
        processor_cache(plan_serving("tiny-gemma4", vllm_version=version)),
        processor_cache("gemma4", vllm_version=version),
    ):
        assert cache.vllm_version == version
        (step,) = [s for s in cache.steps if "overflow the cache" in s]
        assert step.startswith(f"{PROFILES[version].label}: ")
        assert ("keeps its own cached items" in step) == keeps, step
    small = processor_cache("gemma4", mm_processor_cache_gb=0.01, vllm_version=version)
    assert small.message and any(
        s.startswith(f"At start-up {PROFILES[version].label}") for s in small.steps
    )
