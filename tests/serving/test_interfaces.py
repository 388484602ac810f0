"""Engine interfaces (issue 22, item 9), asked of vLLM's own checkers and held to the
class declarations in its model files."""

from __future__ import annotations

import inspect

import pytest

from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.serving.interfaces import vllm_interfaces

pytestmark = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")


@pytest.mark.parametrize(
    "arch", ["Gemma3nForConditionalGeneration", "Gemma4ForConditionalGeneration"]
)
def test_interfaces_are_the_declared_bases(arch):
    from gemma_explore.serving.weights import vllm_model_class

    cls = vllm_model_class(arch)
    declared = inspect.getsource(cls).split(":", 1)[0]  # the class line with its bases
    found = {i.name: i.supported for i in vllm_interfaces(arch)}
    names = {
        "pipeline parallelism": "SupportsPP",
        "LoRA": "SupportsLoRA",
        "Eagle3": "SupportsEagle3",
        "transcription": "SupportsTranscription",
    }
    for name, base in names.items():
        assert found[name] == (base in declared), (arch, name)
    assert found["multimodal"]


def test_only_gemma3n_transcribes_and_only_gemma4_is_pipelined():
    g3 = {i.name: i.supported for i in vllm_interfaces("Gemma3nForConditionalGeneration")}
    g4 = {i.name: i.supported for i in vllm_interfaces("Gemma4ForConditionalGeneration")}
    assert g3["transcription"] and not g4["transcription"]
    assert g4["pipeline parallelism"] and not g3["pipeline parallelism"]


@pytest.mark.parametrize("name", ["tiny4", "tiny3n"])
def test_raw_prompt_placeholders_against_vllms_processor(name, request, photo):
    """vLLM's own get_placeholder_str, and vLLM's processor on a raw prompt: the string we
    say a raw prompt must hold is expanded into the plan's soft tokens; vLLM's placeholder
    string, where it differs (Gemma 4), is not found by vLLM's own processor."""
    import gemma_explore as ge
    from gemma_explore.engines.vllm_processor import vllm_process
    from gemma_explore.serving.interfaces import raw_prompt_placeholders
    from gemma_explore.serving.weights import vllm_model_class

    bundle = request.getfixturevalue(name)
    spec = bundle.spec
    rules = {r.modality: r for r in raw_prompt_placeholders(family=bundle)}
    arch = type(bundle.model).__name__  # what a saved folder names in config.json
    for modality, rule in rules.items():
        assert rule.vllm_placeholder_str == vllm_model_class(arch).get_placeholder_str(modality, 0)
    image = rules["image"]

    def raw(token: str) -> str:
        return (
            f"{spec.turn_start}user\nLook: {token} What?{spec.turn_end}\n{spec.turn_start}model\n"
        )

    out = vllm_process(bundle, raw(image.must_contain), {"image": [photo]})
    plan = ge.plan_image(photo, family=spec)
    assert spec.count_placeholders(out["prompt_token_ids"]) == plan.num_soft_tokens
    if image.agrees:
        assert image.vllm_placeholder_str == image.must_contain
    else:
        assert "content parts" in image.steps[-1]
        with pytest.raises(Exception, match="prompt replacement|placeholder"):
            vllm_process(bundle, raw(image.vllm_placeholder_str), {"image": [photo]})
