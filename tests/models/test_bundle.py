"""load(): tiny bundles, the save → from_pretrained round trip, and clear errors."""

import json

import pytest
import torch

import gemma_explore as ge
from gemma_explore.models import memory
from gemma_explore.models.tiny import build_tiny_model


def test_tiny_bundles_use_the_real_classes(tiny3n, tiny4):
    from transformers import (
        Gemma3nForConditionalGeneration,
        Gemma3nProcessor,
        Gemma4ForConditionalGeneration,
        Gemma4Processor,
    )

    assert tiny3n.family == "gemma3n" and tiny4.family == "gemma4"
    assert isinstance(tiny3n.processor, Gemma3nProcessor)
    assert isinstance(tiny3n.model, Gemma3nForConditionalGeneration)
    assert isinstance(tiny4.processor, Gemma4Processor)
    assert isinstance(tiny4.model, Gemma4ForConditionalGeneration)
    assert tiny3n.is_random_weights and tiny4.is_random_weights
    assert "random weights" in repr(tiny4)


def test_processor_settings_match_the_released_models(tiny3n, tiny4):
    p3, p4 = tiny3n.processor, tiny4.processor
    assert p3.image_seq_length == 256 and p3.audio_seq_length == 188
    assert p3.image_processor.size == {"height": 768, "width": 768}
    assert not p3.image_processor.do_normalize
    fe3 = p3.feature_extractor
    assert (fe3.sampling_rate, fe3.frame_length, fe3.hop_length, fe3.fft_length) == (
        16000,
        512,
        160,
        1024,
    )
    assert p4.image_processor.max_soft_tokens == 280
    assert (p4.image_processor.patch_size, p4.image_processor.pooling_kernel_size) == (16, 3)
    assert p4.audio_seq_length == 750 and p4.audio_ms_per_token == 40
    fe4 = p4.feature_extractor
    assert (fe4.sampling_rate, fe4.frame_length, fe4.hop_length, fe4.fft_length) == (
        16000,
        320,
        160,
        512,
    )
    assert p4.video_processor.max_soft_tokens == 70 and p4.video_processor.num_frames == 32
    assert tiny4.model.config.vision_config.default_output_length == 280


def test_chat_templates_write_the_family_format(tiny3n, tiny4):
    msgs = [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    t3 = tiny3n.processor.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    t4 = tiny4.processor.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert t3 == "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n"
    assert t4 == "<bos><|turn>user\nHi<turn|>\n<|turn>model\n"


def test_tiny_models_are_deterministic():
    a, b = build_tiny_model("gemma4"), build_tiny_model("gemma4")
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert na == nb and torch.equal(pa, pb), na


@pytest.mark.slow
@pytest.mark.parametrize("family", ["gemma3n", "gemma4"])
def test_round_trip_gives_identical_logits(family, saved_dirs, tiny3n, tiny4, photo, tone):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    original = {"gemma3n": tiny3n, "gemma4": tiny4}[family]
    folder = saved_dirs[family]
    assert json.loads((folder / "gemma_explore.json").read_text())["random_weights"] is True
    # The plain transformers path, without our loader:
    processor = AutoProcessor.from_pretrained(folder)
    model = AutoModelForImageTextToText.from_pretrained(folder).eval()
    assert type(processor) is type(original.processor)
    assert type(model) is type(original.model)
    # And through load(), which must say the weights are random.
    reloaded = ge.load(folder)
    assert reloaded.family == family and reloaded.is_random_weights
    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "image", "image": photo},
                {"type": "audio", "audio": (tone, 16000)},
                {"type": "text", "text": "What is this?"},
            ],
        }
    ]
    p1 = ge.prepare_inputs(msgs, bundle=original)
    p2 = ge.prepare_inputs(msgs, bundle=reloaded)
    assert p1.input_ids == p2.input_ids
    with torch.inference_mode():
        l1 = original.model(**p1.to_model(original.model)).logits
        l2 = reloaded.model(**p2.to_model(reloaded.model)).logits
        l3 = model(**p2.to_model(model)).logits
    assert torch.equal(l1, l2) and torch.equal(l1, l3)


def test_saved_gemma4_config_has_what_vllm_reads(saved_dirs):
    config = json.loads((saved_dirs["gemma4"] / "config.json").read_text())
    assert config["vision_config"]["default_output_length"] == 280


def test_unknown_name_lists_the_choices():
    with pytest.raises(ge.ModelLoadError) as err:
        ge.load("tiny-gemma5")
    msg = str(err.value)
    assert "tiny-gemma3n" in msg and "tiny-gemma4" in msg and "hub id" in msg


def test_folder_missing_files_names_them(tmp_path, saved_dirs):
    (tmp_path / "config.json").write_text((saved_dirs["gemma4"] / "config.json").read_text())
    with pytest.raises(ge.ModelLoadError) as err:
        ge.load(tmp_path)
    msg = str(err.value)
    assert "processor_config.json" in msg and "tokenizer.json" in msg
    assert "tokenizer_config.json" in msg and "safetensors" in msg


def test_folder_of_another_model_type(tmp_path, saved_dirs):
    import shutil

    folder = shutil.copytree(saved_dirs["gemma4"], tmp_path / "m")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["model_type"] = "llama"
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(Exception) as err:
        ge.load(folder)
    assert "gemma" in str(err.value).lower()


def test_hub_without_network_is_one_clear_sentence(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ge.ModelLoadError) as err:
        ge.load("someone/gemma-4-finetune")
    msg = str(err.value)
    assert "HF_TOKEN" in msg and "licence" in msg and "tiny-gemma4" in msg
    assert err.value.__cause__ is None and err.value.__suppress_context__


def test_too_big_for_the_device_fails_before_download(monkeypatch):
    monkeypatch.setattr(
        memory, "_available_gib", lambda device: 28.0
    )  # float32 on CPU: E2B fits, E4B not
    with pytest.raises(ge.ModelLoadError) as err:
        ge.load("google/gemma-4-E4B-it")
    msg = str(err.value)
    assert "28.0 GiB available" in msg and "(google/gemma-4-e2b-it)" in msg
    assert "local checkpoint folder" in msg  # the network is named too
    # Nothing smaller fits (or exists): no smaller model is suggested, E2B least of all.
    monkeypatch.setattr(memory, "_available_gib", lambda device: 4.0)
    with pytest.raises(ge.ModelLoadError) as err:
        ge.load("google/gemma-3n-E2B-it")
    assert "smaller checkpoint" not in str(err.value) and "tiny-gemma3n" in str(err.value)


def test_available_memory_is_memavailable_not_free():
    with open("/proc/meminfo") as f:
        fields = {line.split(":")[0]: int(line.split()[1]) for line in f}
    got = memory._available_gib("cpu") * 2**30 / 1024
    assert abs(got - fields["MemAvailable"]) < 0.05 * fields["MemTotal"]


def test_memory_table_is_in_bfloat16_gib():
    assert 14 < memory.weights_gib("google/gemma-4-E4B-it", torch.bfloat16) < 16
    assert memory.weights_gib("someone/else", torch.bfloat16) is None


def test_unknown_backend_and_dtype():
    with pytest.raises(ValueError, match="engine"):
        ge.load("tiny-gemma4", engine="tensorrt")
    with pytest.raises(ge.ModelLoadError, match="dtype"):
        ge.load("tiny-gemma4", dtype="int3")


def test_the_validators_refuse_in_one_line(tmp_path, monkeypatch):
    """require_checkpoint_folder and require_fits refuse with the fix in the message."""
    from gemma_explore.models import checkpoints

    with pytest.raises(ge.ModelLoadError, match="config.json"):
        checkpoints.require_checkpoint_folder(tmp_path)
    monkeypatch.setattr(memory, "_available_gib", lambda device: 4.0)
    with pytest.raises(ge.ModelLoadError, match="4.0 GiB available"):
        memory.require_fits("google/gemma-4-E4B-it", device="cpu", dtype=torch.bfloat16)
    # Each hands back the clean value when there is nothing to refuse.
    assert memory.require_fits("someone/else", device="cpu", dtype=torch.bfloat16) == "someone/else"


def test_every_bundle_names_its_tokenizer(tiny3n, tiny4, tinyu):
    from gemma_explore.models.vocabulary import LABELS, fetched_vocabulary

    expected = "Gemma vocabulary (fetched)" if fetched_vocabulary() else LABELS[1]
    for bundle in (tiny3n, tiny4, tinyu):
        assert bundle.vocabulary == expected, bundle.name
    # What a bundle's tokenizer makes of the README's quick-start prompt.
    ids = tiny4.processor.tokenizer.encode("Describe this image.", add_special_tokens=False)
    assert len(ids) == (4 if fetched_vocabulary() else 20)


@pytest.mark.slow
def test_a_saved_folder_keeps_its_vocabulary(saved_dirs, tiny3n, tiny4):
    from gemma_explore.models.vocabulary import LABEL_FETCHED

    for bundle in (tiny3n, tiny4):
        folder = saved_dirs[bundle.family]
        marker = json.loads((folder / "gemma_explore.json").read_text())
        assert marker["vocabulary"] == bundle.vocabulary
        assert (folder / "GEMMA_NOTICE.txt").exists() == (bundle.vocabulary == LABEL_FETCHED)
        reloaded = ge.load(folder)
        assert reloaded.vocabulary == bundle.vocabulary
        text = "Describe this image.\n\n"
        assert reloaded.processor.tokenizer.encode(text) == bundle.processor.tokenizer.encode(text)
