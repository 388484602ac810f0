"""The released checkpoints' stored serving inputs (gemma_explore/facts/released_serving.json)
are the real thing: transformers' config classes read by serving_model, and the
meta-device build. Each entry is rebuilt that way and compared, and the plan reads the
same numbers from either; and serve-args for a released id answers without importing
torch, transformers or vLLM.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gemma_explore.facts.released import BASE_IDS, RELEASED_IDS, released_config
from gemma_explore.facts.released_serving import released_serving
from gemma_explore.models.checkpoints import BUILT_IN
from gemma_explore.serving.model import serving_model
from gemma_explore.serving.released_facts import released_serving_entry
from gemma_explore.serving.weights import vllm_loaded_weights
from gemma_explore.vllm_versions import SUPPORTED

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _empty_hub_cache(tmp_path, monkeypatch):
    """No local Hugging Face cache: a released id is read from the built-in facts."""
    import gemma_explore.models.checkpoints as checkpoints

    monkeypatch.setattr(checkpoints, "cached_file_of", lambda model_id, filename: None)


@pytest.mark.parametrize("model_id", RELEASED_IDS)
def test_the_stored_entry_is_what_transformers_and_the_meta_build_give(model_id):
    """Regenerate the entry (python -m gemma_explore.serving.released_facts) if this fails."""
    assert released_serving(model_id) == released_serving_entry(model_id)


@pytest.mark.parametrize("model_id", RELEASED_IDS)
def test_serving_model_of_a_released_id_is_the_one_read_from_its_config(model_id):
    stored = serving_model(model_id)
    read = serving_model(released_config(model_id))  # transformers' classes, meta build
    assert stored.config_source == BUILT_IN and read.config_source != BUILT_IN
    assert stored == dataclasses.replace(read, name=model_id, config_source=BUILT_IN)
    assert stored.num_parameters_by_part == read.num_parameters_by_part


@pytest.mark.parametrize(
    "model_id",
    [
        "google/gemma-3n-E2B-it",
        "google/gemma-4-E4B-it",
        "google/gemma-4-26B-A4B-it",
        "google/gemma-4-12B-it",
    ],
)
def test_the_weights_vllm_allocates_are_the_same_from_the_stored_facts(model_id):
    """Weight kinds and the config values the tower rule reads, across FP8, towers
    skipped and every supported release."""
    stored, read = serving_model(model_id), serving_model(released_config(model_id))
    for version in SUPPORTED:
        for quantization in (None, "fp8"):
            for limits in ({}, {"audio": 0}, {"image": 0, "video": 0, "audio": 0}):
                a, b = (
                    vllm_loaded_weights(
                        m,
                        limit_mm_per_prompt=limits,
                        quantization=quantization,
                        max_num_batched_tokens=8192,
                        vllm_version=version,
                    )
                    for m in (stored, read)
                )
                assert a.bytes_by_part == b.bytes_by_part and a.bytes == b.bytes
                assert a.skipped == b.skipped and a.quantized_parameters == b.quantized_parameters
                assert a.steps[1:] == b.steps[1:]  # the first names where the config came from


@pytest.mark.parametrize("base_id", BASE_IDS)
def test_a_base_id_reads_its_instruction_tuned_entry(base_id):
    """A base config differs from its -it one only in eos_token_id (and its name)."""
    base = released_config(base_id).to_dict()
    tuned_id = next(i for i in RELEASED_IDS if i.lower().startswith(base_id.lower() + "-"))
    tuned = released_config(tuned_id).to_dict()
    for config in (base, tuned):
        config.pop("_name_or_path")
        config["text_config"].pop("eos_token_id")
    assert base == tuned
    assert serving_model(base_id).name == base_id
    assert released_serving(base_id) is released_serving(tuned_id)


def test_a_cached_config_wins_over_the_stored_facts(monkeypatch):
    import gemma_explore.models.checkpoints as checkpoints
    from gemma_explore.serving.model import _stored_model

    assert _stored_model("google/gemma-4-31B-it") is not None
    monkeypatch.setattr(
        checkpoints,
        "cached_file_of",
        lambda model_id, filename: "/cache/config.json" if filename == "config.json" else None,
    )
    assert _stored_model("google/gemma-4-31B-it") is None


# The command as a user runs it, in a fresh interpreter with an empty Hugging Face cache;
# it prints the heavy libraries present at the end on its last stderr line.
RUN = """
import json, sys
from gemma_explore.cli import main
sys.argv = ["gemma-explore", "serve-args", "google/gemma-4-31B-it", "--gpu", "L4"]
try:
    main()
except SystemExit as done:
    code = done.code
heavy = sorted(m for m in ("torch", "transformers", "vllm") if m in sys.modules)
print(json.dumps({"rc": code, "heavy": heavy}), file=sys.stderr)
"""


def test_serve_args_for_a_released_id_imports_no_torch_transformers_or_vllm(tmp_path):
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_CACHE": str(tmp_path / "hf" / "hub"),
    }
    done = subprocess.run(
        [sys.executable, "-c", RUN], env=env, capture_output=True, text=True, check=False
    )
    result = json.loads(done.stderr.strip().splitlines()[-1])
    assert result["heavy"] == [], done.stderr
    assert result["rc"] == 2  # the 31B does not fit one L4: no command, the smallest GPU
    assert "does not fit" in done.stdout and "H100 80GB" in done.stdout
