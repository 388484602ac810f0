"""Engine interfaces (issue 22, item 9), asked of vLLM's own checkers and held to the
class declarations in its model files."""

from __future__ import annotations

import inspect

import pytest

from gemma_explore.engine_interfaces import vllm_interfaces
from gemma_explore.inference.vllm_processor import vllm_available

pytestmark = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")


@pytest.mark.parametrize(
    "arch", ["Gemma3nForConditionalGeneration", "Gemma4ForConditionalGeneration"]
)
def test_interfaces_are_the_declared_bases(arch):
    from gemma_explore.weight_names import vllm_model_class

    cls = vllm_model_class(arch)
    declared = inspect.getsource(cls).split(":", 1)[0]  # the class line with its bases
    found = {i.name: i.supported for i in vllm_interfaces(arch)}
    names = {"pipeline parallelism": "SupportsPP", "LoRA": "SupportsLoRA",
             "Eagle3": "SupportsEagle3", "transcription": "SupportsTranscription"}  # fmt: skip
    for name, base in names.items():
        assert found[name] == (base in declared), (arch, name)
    assert found["multimodal"]


def test_only_gemma3n_transcribes_and_only_gemma4_is_pipelined():
    g3 = {i.name: i.supported for i in vllm_interfaces("Gemma3nForConditionalGeneration")}
    g4 = {i.name: i.supported for i in vllm_interfaces("Gemma4ForConditionalGeneration")}
    assert g3["transcription"] and not g4["transcription"]
    assert g4["pipeline parallelism"] and not g3["pipeline parallelism"]
