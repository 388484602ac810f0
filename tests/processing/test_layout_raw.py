"""Raw prompts (template=False): one named example per Gemma 3n newline rule, checked
against transformers here and against vLLM's own processor when vllm is installed."""

from __future__ import annotations

import numpy as np
import pytest

import gemma_explore as ge
from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.plans.vllm import vllm_search_parts

needs_vllm = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")
IMG = np.random.RandomState(0).randint(0, 255, (48, 64, 3), np.uint8)
N = {k: 106 + k for k in range(1, 8)}  # "\n" * k → its single token id
BOI, EOI = 255_999, 262_144


def raw3n(bundle, text, n_images=1):
    return ge.layout_prompt(text, bundle=bundle, images=[IMG] * n_images, template=False)


def vllm_says(bundle, text, n_images=1):
    from tests.engines.test_vllm_raw_prompts import vllm_raw

    return vllm_raw(bundle, text, {"image": [IMG] * n_images})


def test_plain_placement_agrees_with_transformers(tiny3n):
    layout = raw3n(
        tiny3n, "<start_of_turn>user\nLook\n\n<image_soft_token>\n\nWhat?<end_of_turn>\n"
    )
    assert layout.divergences == () and layout.agrees
    assert (
        list(layout.input_ids)
        == ge.prepare_inputs(layout.text, images=[IMG], template=False, bundle=tiny3n).input_ids
    )


def test_rule_newline_after_a_placeholder_makes_vllm_raise(tiny3n):
    text = "<start_of_turn>user\n<image_soft_token>\nDescribe.<end_of_turn>\n"
    (d,) = raw3n(tiny3n, text).divergences
    assert d.vllm_ids is None and d.seed_function.endswith("_find_mm_placeholders")
    assert d.error == (
        "RuntimeError: Expected there to be 1 prompt placeholders corresponding to 1 image "
        "items, but instead found 0 prompt placeholders! Make sure the implementation of "
        "`_apply_hf_processor_main` and `_get_mm_fields_config` are consistent with each other."
    )
    assert d.transformers_ids == (EOI, N[3])  # transformers runs: closing "\n\n" + "\n"
    if vllm_available():
        said = vllm_says(tiny3n, text)
        assert f"{type(said).__name__}: {said}" == d.error


def test_rule_three_newlines_before_give_other_ids(tiny3n):
    """Only "\\n"+"\\n\\n", "\\n\\n"+"\\n" and "\\n\\n"+"\\n\\n" merge after expansion."""
    layout = raw3n(tiny3n, "A\n\n\n<image_soft_token>B")
    (d,) = layout.divergences
    assert d.vllm_ids[1:] == (N[3], N[2], BOI) and d.transformers_ids[1:] == (N[5], BOI)
    assert "3 newlines before" in d.rule and d.error is None
    if vllm_available():
        assert list(layout.input_ids) == vllm_says(tiny3n, "A\n\n\n<image_soft_token>B")[0]


def test_rule_newlines_between_two_items(tiny3n):
    layout = raw3n(tiny3n, "A<image_soft_token>\n\n<image_soft_token>B", n_images=2)
    (d,) = layout.divergences
    assert "between image #0 and image #1" in d.rule
    assert d.vllm_ids == (EOI, N[4], N[2], BOI) and d.transformers_ids == (EOI, N[6], BOI)


def test_split_parts_are_what_vllms_search_sees(tiny3n):
    """vLLM's search splits a merged "\\n\\n\\n" one way for both wrappers: right for an
    opening wrapper, wrong for a closing one. The parts are the split vllm_expand_gemma3n
    searches with (one table), and whether the wrapper is found is vLLM's own verdict."""
    opening_text, closing_text = "A\n<image_soft_token>B", "A<image_soft_token>\nB"
    (opening,) = raw3n(tiny3n, opening_text).newline_merges
    (closing,) = ge.layout_prompt(
        closing_text, bundle=tiny3n, images=[IMG], template=False
    ).newline_merges
    for merge in (opening, closing):
        assert "".join(merge.parts) == merge.token  # a split of the token, nothing added
        assert merge.parts == vllm_search_parts(len(merge.token))
    assert opening.vllm_finds_wrapper and not closing.vllm_finds_wrapper
    if vllm_available():
        assert not isinstance(vllm_says(tiny3n, opening_text), Exception)
        assert isinstance(vllm_says(tiny3n, closing_text), Exception)


def test_bos_is_explained(tiny3n, tiny4):
    doubled = raw3n(tiny3n, "<bos>A<image_soft_token>B")
    assert doubled.input_ids[:2] == (2, 2) and "two <bos>" in doubled.warnings[0]
    bare = ge.layout_prompt("A<|image|>B", bundle=tiny4, images=[IMG], template=False)
    assert bare.input_ids[0] != 2 and "no <bos>" in bare.warnings[0]
    good = ge.layout_prompt("<bos>A<|image|>B", bundle=tiny4, images=[IMG], template=False)
    assert good.warnings == () and good.input_ids[0] == 2


def test_a_wrong_placeholder_count_says_what_to_write(tiny4):
    with pytest.raises(ValueError, match=r"1 <\|image\|> placeholder\(s\) for 2 image"):
        ge.layout_prompt("<bos>A<|image|>B", bundle=tiny4, images=[IMG, IMG], template=False)


def test_the_ribbon_and_html_show_divergences(tiny3n):
    layout = raw3n(tiny3n, "<bos>A\n\n\n<image_soft_token>B")
    fig = ge.show_layout(layout)
    assert any(a.get_gid() == "divergence" for ax in fig.axes for a in ax.lines)
    assert "vLLM ≠ transformers" in layout._repr_html_() and "raw prompt" in layout._repr_html_()


@needs_vllm
@pytest.mark.parametrize("family", ["gemma3n", "gemma4"])
def test_one_bos_through_vllms_own_tokenization(family, tiny3n, tiny4, photo):
    """Our vLLM request, rendered by vLLM's own LLM.generate path (its renderer, its
    tokenizer, its special-token setting), starts with exactly one <bos>."""
    from vllm.config import DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig
    from vllm.renderers import renderer_from_config
    from vllm.renderers.inputs.preprocess import parse_model_prompt

    from gemma_explore.engines.vllm import vllm_request
    from gemma_explore.engines.vllm_processor import VLLM_PROCESSORS

    bundle = {"gemma3n": tiny3n, "gemma4": tiny4}[family]
    folder = VLLM_PROCESSORS.folder_of(bundle)
    model = ModelConfig(model=folder, tokenizer=folder, dtype="float32", max_model_len=4096)
    config = VllmConfig(
        model_config=model,
        scheduler_config=SchedulerConfig(
            max_model_len=4096, is_encoder_decoder=False, max_num_batched_tokens=4096
        ),
        device_config=DeviceConfig(device="cpu"),
    )
    renderer = renderer_from_config(config)
    prepared = ge.prepare_inputs("What is this?", images=[photo], bundle=bundle)
    request = vllm_request(prepared)
    (out,) = renderer.render_cmpl(
        [parse_model_prompt(model, request)], renderer.default_cmpl_tok_params
    )
    ids = list(out["prompt_token_ids"])
    assert ids[:2] != [2, 2] and ids[0] == 2
    assert ids == prepared.input_ids
    # The chat-template text itself starts with <bos>: sent as is, Gemma 3n doubles it.
    raw = {**request, "prompt": prepared.text}
    (doubled,) = renderer.render_cmpl(
        [parse_model_prompt(model, raw)], renderer.default_cmpl_tok_params
    )
    assert (list(doubled["prompt_token_ids"])[:2] == [2, 2]) == (family == "gemma3n")


@needs_vllm
def test_several_videos_and_per_request_budgets_equal_vllm(tiny4):
    from gemma_explore.engines.vllm_processor import vllm_mm_data
    from tests.engines.test_vllm_raw_prompts import vllm_raw

    rng = np.random.RandomState(1)
    clips = [(rng.randint(0, 255, (n, 48, 64, 3), np.uint8), 4.0) for n in (6, 40)]
    for template in (True, False):
        text = "Compare." if template else "<bos>A<|video|> and <|video|>?"
        layout = ge.layout_prompt(text, bundle=tiny4, videos=clips, template=template)
        prepared = ge.prepare_inputs(text, videos=clips, template=template, bundle=tiny4)
        ids, ranges = vllm_raw(tiny4, prepared.text, vllm_mm_data(prepared))
        assert list(layout.input_ids) == ids
        assert [(p.modality, p.num_embeds) for p in layout.placeholders] == [
            ("video", 6 * 63),
            ("video", 32 * 63),
        ]
        assert [(m, o) for m, o, _ in ranges] == [("video", p.start) for p in layout.placeholders]
    for budget in (70, 1120):  # the request's budget, not the processor's start-up one
        text = "<bos>Look<|image|>"
        layout = ge.layout_prompt(
            text, bundle=tiny4, images=[IMG], template=False, max_soft_tokens=budget
        )
        ids, _ = vllm_raw(tiny4, text, {"image": [IMG]}, {"max_soft_tokens": budget})
        assert list(layout.input_ids) == ids


def test_a_checkpoint_without_audio_tower(tmp_path, tiny4):
    """Gemma 4 26B/31B have no audio_config: no audio in vLLM's limits, and a clip gets our
    message before vLLM's 'does not have an audio tower'."""
    from transformers import Gemma4ForConditionalGeneration

    from gemma_explore.engines.serve_args import engine_args
    from gemma_explore.models.tiny import tiny_config

    config = tiny_config("gemma4")
    config.audio_config = None
    model = Gemma4ForConditionalGeneration(config)
    folder = tmp_path / "no-audio"
    model.save_pretrained(folder)
    tiny4.processor.save_pretrained(folder)
    bundle = ge.load(folder)
    assert bundle.modalities == ("image", "video")
    with pytest.raises(ge.MediaError, match="no audio tower"):
        ge.prepare_inputs("Hi", audios=[(np.zeros(1600, np.float32), 16_000)], bundle=bundle)
    args = engine_args(str(folder), family="gemma4", has_audio=False)
    assert "audio" not in args["limit_mm_per_prompt"]
    with pytest.raises(ValueError, match="no audio tower"):
        engine_args(str(folder), family="gemma4", has_audio=False, limit_mm_per_prompt={"audio": 1})
    if vllm_available():
        from tests.engines.test_vllm_raw_prompts import vllm_raw

        said = vllm_raw(bundle, "<bos><|audio|>", {"audio": [np.zeros(1600, np.float32)]})
        assert isinstance(said, ValueError) and "does not have an audio tower" in str(said)


def test_the_lost_item_is_the_one_vllm_loses(tiny3n):
    """A "\\n" between two placeholders merges harmlessly; the lone "\\n" after the second
    is what vLLM trips on, and vLLM's view is not claimed when it raises."""
    text = "A<image_soft_token>\n<image_soft_token>\nB"
    layout = raw3n(tiny3n, text, n_images=2)
    (d,) = layout.divergences
    assert "image #1's placeholder" in d.rule and d.transformers_ids == (EOI, N[3])
    assert layout.placeholders[1].start + layout.placeholders[1].length - 2 == d.position
    assert layout.vllm_raises and layout.vllm_ranges == () and "transformers' ids" in layout.source
    if vllm_available():
        said = vllm_says(tiny3n, text, n_images=2)
        assert f"{type(said).__name__}: {said}" == d.error


@needs_vllm
def test_newlines_between_items_equal_vllm(tiny3n):
    text = "A<image_soft_token>\n\n<image_soft_token>B"
    assert list(raw3n(tiny3n, text, n_images=2).input_ids) == vllm_says(tiny3n, text, 2)[0]


def test_raw_prompts_are_refused_by_a_chat_api_server():
    bundle = ge.load("google/gemma-4-E4B-it", engine="openai", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match="placeholder"):  # checked before any request
        bundle.generate("<bos>Look", images=[IMG], template=False)
    with pytest.raises(ge.EngineError, match="engine='vllm' for raw prompts"):
        bundle.generate("<bos>Look<|image|>", images=[IMG], template=False)


def test_vllm_refusals_come_back_with_the_way_out(tiny4, monkeypatch):
    import sys
    from types import SimpleNamespace

    from gemma_explore.engines.vllm import VllmEngine

    class RefusingLLM:
        def generate(self, requests, params, use_tqdm=False):
            raise ValueError("exceeds the pre-allocated encoder cache size 512")

    if not vllm_available():
        monkeypatch.setitem(
            sys.modules, "vllm", SimpleNamespace(SamplingParams=lambda **kw: SimpleNamespace(**kw))
        )
    engine = VllmEngine(RefusingLLM(), "gemma4", startup_budget=280)
    prepared = ge.prepare_inputs("Hi", images=[IMG], max_soft_tokens=1120, bundle=tiny4)
    with pytest.raises(ge.EngineError, match="above the start-up budget 280"):
        engine.generate(prepared)


def test_the_raw_explorer_lays_out_once_per_edit(tiny3n):
    pytest.importorskip("ipywidgets")
    from tests.app.test_compute_once import count_calls

    explorer = ge.explore_prompt(tiny3n)
    explorer.raw.value = True
    counts, _ = count_calls(
        setattr,
        explorer.text,
        "value",
        explorer.text.value.replace("Look:", "Look: <image_soft_token>"),
    )
    assert explorer.images.value == 2 and counts["processor run"] == 1
