"""Engine interfaces (issue 22, item 9), asked of vLLM's own checkers and held to the
class declarations in its model files; the placeholder strings per release, held to the
installed class and to each release's model files."""

from __future__ import annotations

import ast
import inspect

import pytest

from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.facts.released import RELEASED
from gemma_explore.serving.interfaces import raw_prompt_placeholders, vllm_interfaces
from gemma_explore.vllm_versions import SUPPORTED, vllm_profile
from tests.vllm_sources import only_where_the_engine_runs, read_source

needs_vllm = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
# get_placeholder_str differs between releases: each profile's strings are checked here.
pytestmark = pytest.mark.vllm_version

ARCHS = (
    "Gemma3nForConditionalGeneration",
    "Gemma4ForConditionalGeneration",
    "Gemma4UnifiedForConditionalGeneration",
)
# The model file (under model_executor/models/) that defines each class.
FILES = {
    "Gemma3nForConditionalGeneration": "gemma3n_mm.py",
    "Gemma4ForConditionalGeneration": "gemma4_mm.py",
    "Gemma4UnifiedForConditionalGeneration": "gemma4_unified.py",
}


@needs_vllm
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
    gemma4 = arch.startswith("Gemma4")
    assert found["tower and connector LoRA"] == found["encoder CUDA graphs"] == gemma4


@needs_vllm
def test_only_gemma3n_transcribes_and_only_gemma4_is_pipelined():
    g3 = {i.name: i.supported for i in vllm_interfaces("Gemma3nForConditionalGeneration")}
    g4 = {i.name: i.supported for i in vllm_interfaces("Gemma4ForConditionalGeneration")}
    assert g3["transcription"] and not g4["transcription"]
    assert g4["pipeline parallelism"] and not g3["pipeline parallelism"]


def _returned_strings(source: str, cls: str) -> dict[str, str] | None:
    """``get_placeholder_str`` of class ``cls`` in a model file, read with ``ast``: modality
    → the constant it returns (None: the class defines no such method)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "get_placeholder_str":
                    found = {}
                    for branch in ast.walk(item):
                        if not isinstance(branch, ast.If):
                            continue
                        test, ret = branch.test, branch.body[0]
                        if (
                            isinstance(test, ast.Compare)
                            and isinstance(test.left, ast.Name)
                            and test.left.id == "modality"
                            and isinstance(ret, ast.Return)
                        ):
                            found[test.comparators[0].value] = ret.value.value
                    return found
            return None
    raise LookupError(f"no class {cls} in this file")


def _bases(source: str, cls: str) -> list[str]:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return [ast.unparse(b) for b in node.bases]
    raise LookupError(f"no class {cls} in this file")


@pytest.mark.parametrize("version", SUPPORTED)
def test_each_profiles_placeholder_strings_are_its_releases(version):
    """Each release's get_placeholder_str, read from its model files: what the profile
    holds, and so what raw_prompt_placeholders answers for that release. Unified defines
    none and inherits Gemma 4's."""
    profile = vllm_profile(version)
    files = {a: read_source(version, f"model_executor/models/{f}") for a, f in FILES.items()}
    unified = "Gemma4UnifiedForConditionalGeneration"
    assert _returned_strings(files[unified], unified) is None
    assert "Gemma4ForConditionalGeneration" in _bases(files[unified], unified)
    theirs = {a: _returned_strings(files[a], a) for a in ARCHS if a != unified}
    theirs[unified] = theirs["Gemma4ForConditionalGeneration"]
    assert profile.placeholder_str == theirs
    for arch, strings in theirs.items():
        family = next(r.model_type for r in RELEASED.values() if r.architecture == arch)
        for rule in raw_prompt_placeholders(family=family, architecture=arch, vllm_version=version):
            assert rule.vllm_version == version
            assert rule.vllm_placeholder_str == strings[rule.modality]
            assert profile.label in rule.steps[-1]


@needs_vllm
@pytest.mark.parametrize("arch", ARCHS)
def test_the_installed_profile_is_the_installed_classs(arch):
    """The installed release's profile holds what the installed class returns, for every
    modality (a ValueError there: the profile holds none)."""
    from gemma_explore.serving.weights import vllm_model_class

    cls = vllm_model_class(arch)
    strings = vllm_profile().placeholder_str[arch]
    for modality in ("image", "audio", "video"):
        try:
            theirs = cls.get_placeholder_str(modality, 0)
        except ValueError:
            theirs = None
        assert strings.get(modality) == theirs, (arch, modality)


@needs_vllm
@pytest.mark.parametrize("name", ["tiny4", "tiny3n"])
def test_raw_prompt_placeholders_against_vllms_processor(name, request, photo):
    """vLLM's own get_placeholder_str, and vLLM's processor on a raw prompt: the string we
    say a raw prompt must hold is expanded into the plan's soft tokens in every release;
    vLLM's placeholder string, where the installed release's differs (Gemma 4's class in a
    release that returns Gemma 3n's strings), is not found by vLLM's own processor."""
    import gemma_explore as ge
    from gemma_explore.engines.vllm_processor import vllm_process
    from gemma_explore.serving.weights import vllm_model_class

    bundle = request.getfixturevalue(name)
    spec = bundle.spec
    rules = {r.modality: r for r in raw_prompt_placeholders(family=bundle)}
    arch = type(bundle.model).__name__  # what a saved folder names in config.json
    for modality, rule in rules.items():
        assert rule.vllm_version == vllm_profile().version  # the installed release
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
        assert image.vllm_placeholder_str == image.must_contain  # the string format's too
    else:
        assert "content parts" in image.steps[-1]
        with pytest.raises(Exception, match="prompt replacement|placeholder"):
            vllm_process(bundle, raw(image.vllm_placeholder_str), {"image": [photo]})


# --- LoRA (vLLM's get_mm_mapping and get_mm_lora_token_counts) -----------------------


def _vllm_items(bundle, prepared):
    """vLLM's own processor on the request: per modality, its MultiModalKwargsItems and
    the embeddings each item's placeholders take."""
    from gemma_explore.engines.vllm_processor import vllm_apply, vllm_mm_data

    out = vllm_apply(bundle, prepared.text, vllm_mm_data(prepared), prepared.request_kwargs)
    return {
        m: [(item, r.get_num_embeds()) for item, r in zip(out["mm_kwargs"][m], rs, strict=True)]
        for m, rs in out["mm_placeholders"].items()
    }


@only_where_the_engine_runs(
    "its Gemma 4 class reads use_data_parallel, which this test's stand-in lacks"
)
@pytest.mark.parametrize("request_budget", [None, 140])
@needs_vllm
def test_lora_token_counts_are_vllms(tiny4, request_budget):
    """vLLM's own get_mm_lora_token_counts on vLLM's own processor output (an image, a
    clip and a video of one request), against lora_token_counts; and the engine-budget
    trap: a request budget changes the image's rows, not vLLM's count."""
    import types

    from vllm.model_executor.models.gemma4_mm import Gemma4ForConditionalGeneration as G

    import gemma_explore as ge
    from gemma_explore.samples import sample_photo, sample_speech, sample_video
    from gemma_explore.serving.batches import lora_token_counts

    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "image", "image": sample_photo()},
                {"type": "audio", "audio": sample_speech()},
                {"type": "video", "video": sample_video()},
                {"type": "text", "text": "What?"},
            ],
        }
    ]
    prepared = ge.prepare_inputs(msgs, bundle=tiny4, max_soft_tokens=request_budget)
    engine = types.SimpleNamespace(
        config=tiny4.model.config, multimodal_config=types.SimpleNamespace(mm_processor_kwargs={})
    )
    engine_budget = tiny4.model.config.vision_config.default_output_length
    for modality, found in _vllm_items(tiny4, prepared).items():
        for item, n in found:
            theirs = G.get_mm_lora_token_counts(
                engine, modality=modality, mm_kwargs=item, num_mm_embeds=n
            )
            data = {k: v.data for k, v in item.items()}
            at_hand = {}
            if modality == "video":
                at_hand["video_patch_rows"] = data["pixel_values_videos"].shape[:-1].numel()
            if modality == "audio":
                at_hand["audio_feature_frames"] = data["input_features_padded"].shape[-2]
            ours = lora_token_counts(
                modality, num_embeds=n, default_output_length=engine_budget, **at_hand
            )
            assert (ours.tower_tokens, ours.connector_tokens) == theirs, modality
            if modality == "image":
                rows = data["pixel_values"].shape[0]  # the rows the tower really runs on
                assert (rows == theirs[0]) == (request_budget in (None, engine_budget))
            if modality == "audio":
                assert ours.tower_tokens >= n  # padded frames: never fewer than the real tokens
        # start-up sizing (mm_kwargs=None): the worst case
        theirs = G.get_mm_lora_token_counts(
            engine, modality=modality, mm_kwargs=None, num_mm_embeds=2048
        )
        ours = lora_token_counts(modality, num_embeds=2048, default_output_length=engine_budget)
        assert (ours.tower_tokens, ours.connector_tokens) == theirs, modality


# --- pipeline parallelism: what each rank hands forward -------------------------------


def _recording_lm(seen):
    import types

    def model(input_ids, positions, **kwargs):
        seen.update(kwargs)
        return "hidden"

    return types.SimpleNamespace(model=model)


@needs_vllm
def test_gemma3n_forward_needs_inputs_embeds_on_the_first_rank(tiny3n):
    """vLLM's own Gemma 3n forward: neither inputs_embeds nor intermediate tensors is
    refused; on a later rank the per-layer slice is sized by the hidden states."""
    import types

    import torch
    from vllm.model_executor.models.gemma3n_mm import Gemma3nForConditionalGeneration as G

    from gemma_explore.inside.per_layer import vllm_per_layer_buffer

    shape = vllm_per_layer_buffer(tiny3n, 16)
    seen = {}
    stub = types.SimpleNamespace(
        per_layer_embeddings=torch.zeros(shape), language_model=_recording_lm(seen)
    )
    ids, pos = torch.arange(5), torch.arange(5)
    with pytest.raises(ValueError, match="inputs_embeds is required on the first PP rank"):
        G.forward(stub, ids, pos)
    G.forward(stub, ids, pos, inputs_embeds=torch.zeros(5, 4))
    assert seen["per_layer_inputs"].shape == (5, *shape[1:])
    later = {"hidden_states": torch.zeros(3, 4)}
    G.forward(stub, ids, pos, intermediate_tensors=later, inputs_embeds=torch.zeros(5, 4))
    assert seen["inputs_embeds"] is None and seen["per_layer_inputs"].shape[0] == 3
    assert not {i.name: i.supported for i in vllm_interfaces(G.__name__)}["pipeline parallelism"]


@needs_vllm
def test_gemma4_later_ranks_drop_the_embeddings(tiny4):
    """vLLM's own Gemma 4 forward: the first rank slices the per-layer buffer to its
    tokens; a later rank passes neither embeddings nor per-layer inputs (they arrive in
    the intermediate tensors)."""
    import types

    import torch
    from vllm.model_executor.models.gemma4_mm import Gemma4ForConditionalGeneration as G

    from gemma_explore.inside.per_layer import vllm_per_layer_buffer

    shape = vllm_per_layer_buffer(tiny4, 16)
    seen = {}
    stub = types.SimpleNamespace(
        per_layer_embeddings=torch.zeros(shape),
        language_model=_recording_lm(seen),
        _clear_mm_prefix_for_full_attn_layers=lambda: None,
    )
    ids, pos = torch.arange(5), torch.arange(5)
    G.forward(stub, ids, pos, inputs_embeds=torch.zeros(5, 4))
    assert seen["per_layer_inputs"].shape == (5, *shape[1:])
    G.forward(
        stub, ids, pos, intermediate_tensors={"hidden_states": 0}, inputs_embeds=torch.zeros(5, 4)
    )
    assert seen["inputs_embeds"] is None and seen["per_layer_inputs"] is None
    assert seen["intermediate_tensors"] == {"hidden_states": 0}
    # What the package says of it: the class declares pipeline parallelism.
    declared = {i.name: i.supported for i in vllm_interfaces("Gemma4ForConditionalGeneration")}
    assert declared["pipeline parallelism"]
