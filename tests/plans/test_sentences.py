"""Six sentences the course once got wrong, each held to the code it describes (issue 22).

Every test reads the corrected sentence from the document that states it and recomputes
its claim with vLLM's or transformers' own code, so a wording and its computation cannot
drift apart again.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import gemma_explore as ge
from gemma_explore.engines.vllm_processor import vllm_available, vllm_mm_data, vllm_process
from gemma_explore.parity.checks import vllm_merge_error, vllm_replay
from gemma_explore.plans.audio import conv_out
from gemma_explore.plans.vllm import (
    VLLM_MERGE_ERROR,
    vllm_audio_frames,
    vllm_audio_tokens,
    vllm_image_size,
    vllm_image_tokens,
)
from gemma_explore.samples import sample_photo

ROOT = Path(__file__).resolve().parents[2]
needs_vllm = pytest.mark.skipif(not vllm_available(), reason="vllm is not installed")


def _notebook_text(name: str) -> str:
    nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"])


def _flat(text: str) -> str:
    """Prose with its line breaks folded, so a sentence can be found across lines."""
    return re.sub(r"\s+", " ", text)


WORKSHOP = _flat((ROOT / "docs" / "workshop.md").read_text())


# ---------------------------------------------- 1. a bigger budget per request is honoured


@needs_vllm
@pytest.mark.vllm
def test_1_a_request_may_ask_for_a_bigger_budget_than_the_engine(tiny4, photo):
    """The tiny Gemma 4 starts at budget 280 (config.json); a request at 1120 gets the
    1120 count from vLLM's own processor, not the start-up one."""
    assert "Up to the budget the engine was started with" not in WORKSHOP
    assert "also above the budget the engine was started with" in WORKSHOP
    assert "exceed the encoder cache" in WORKSHOP and "exceeds `max_model_len`" in WORKSHOP
    start = tiny4.model.config.vision_config.default_output_length
    msgs = [{"role": "user", "content": [{"type": "image", "image": photo}]}]
    prepared = ge.prepare_inputs(msgs, max_soft_tokens=1120, bundle=tiny4)
    out = vllm_process(tiny4, prepared.text, vllm_mm_data(prepared), {"max_soft_tokens": 1120})
    got = out["placeholders"]["image"][0][2]
    h, w = photo.height, photo.width
    assert start < 1120
    assert got == vllm_image_tokens(h, w, max_soft_tokens=1120)
    assert got > vllm_image_tokens(h, w, max_soft_tokens=start)


# ----------------------------------------------------- 2. vLLM merges newlines, then reads


def test_2_the_sentences_say_merge_then_split_for_the_search():
    nb05 = _flat(_notebook_text("05_prompt_layout"))
    for text in (WORKSHOP, nb05):
        assert "splits such tokens back" not in text and "splits merged newline" not in text
        assert "`_apply_token_matches` *merges*" in text
        assert "Only `_find_mm_placeholders`" in text


@needs_vllm
@pytest.mark.vllm
def test_2_vllms_prompt_keeps_the_merged_newline(tiny3n, photo):
    """vLLM's own processor: the wrapper's "\\n\\n" next to the text's "\\n" comes back as
    one "\\n\\n\\n" token, and the run it reports starts inside that merged token."""
    spec = tiny3n.spec
    text = f"A\n{spec.image_token}B"
    out = vllm_process(tiny3n, text, {"image": [photo]})
    ids = out["prompt_token_ids"]
    n1, n2, n3 = (spec.id_of("\n" * k) for k in (1, 2, 3))
    offset = out["placeholders"]["image"][0][0]
    assert ids[offset] == n3  # merged, in the prompt the model reads
    assert n2 not in ids[: offset + 1] and ids.count(n1) == 0
    ours = ge.layout_prompt(text, bundle=tiny3n, images=[photo], template=False)
    assert [m.token for m in ours.newline_merges][:1] == ["\n\n\n"]


# --------------------------------------------- 3. vLLM counts every sample, caps the tokens


@needs_vllm
@pytest.mark.parametrize("n", [0, 160, 161, 38_560, 480_000, 480_001, 720_000, 1_600_000])
@pytest.mark.parametrize("cap", [750, 188, 10**9])
def test_3_audio_tokens_equal_vllms_own_function(n, cap):
    from vllm.model_executor.models.gemma4_mm import Gemma4ProcessingInfo

    theirs = Gemma4ProcessingInfo._compute_audio_num_tokens(n, 16_000, cap)
    assert vllm_audio_tokens(n, audio_seq_length=cap) == theirs
    if cap == 10**9 and theirs:  # uncapped: the frames before the two convolutions
        assert conv_out(conv_out(vllm_audio_frames(n))) == theirs


@needs_vllm
@pytest.mark.vllm
def test_3_the_45_s_parity_report(tiny4):
    assert "cut to 30 s" not in (vllm_audio_frames.__doc__ or "")
    report = ge.check_audio_parity(45 * 16_000, bundle=tiny4, run_encoder=False)
    rows = {r.step: r for r in report.rows}
    frames, tokens = rows["mel frames (valid)"], rows["soft tokens"]
    assert frames.transformers == 2999 and frames.vllm_arithmetic == 4499
    cap = tiny4.processor.audio_seq_length
    assert tokens.vllm_processor == tokens.vllm_arithmetic == min(cap, conv_out(conv_out(4499)))
    assert any(f"audio_seq_length = {cap}" in n for n in report.notes)


def test_3_only_the_count_sees_every_sample():
    """The module's sentence, number by number: vLLM's placeholder arithmetic counts a
    45 s clip's 4499 frames, while transformers' Gemma4AudioFeatureExtractor (what the
    tower receives) keeps the first 30 s, 2999 real frames; both end at 750 tokens."""
    from transformers import Gemma4AudioFeatureExtractor

    import gemma_explore.plans.vllm as plans_vllm

    doc = _flat(plans_vllm.__doc__)
    counted = int(re.search(r"a 45 s clip counts (\d+) frames", doc).group(1))
    kept_s, real = map(
        int, re.search(r"keeps the first (\d+) s \((\d+) real frames\)", doc).groups()
    )
    n = 45 * 16_000
    assert counted == vllm_audio_frames(n)
    extractor = Gemma4AudioFeatureExtractor()
    wave = np.random.RandomState(0).randn(n).astype(np.float32) * 0.1
    whole = extractor([wave])
    first = extractor([wave[: kept_s * 16_000]])
    assert int(np.asarray(whole["input_features_mask"][0]).sum()) == real
    np.testing.assert_array_equal(whole["input_features"][0], first["input_features"][0])
    assert conv_out(conv_out(real)) == vllm_audio_tokens(n) == 750
    if vllm_available():
        from vllm.model_executor.models.gemma4_mm import Gemma4ProcessingInfo

        assert Gemma4ProcessingInfo._compute_audio_num_tokens(n, 16_000, 750) == 750


def test_5_transformers_caps_the_long_side_at_the_budgets_cells():
    """transformers' get_aspect_ratio_preserving_size: when the short side rounds to
    zero cells, the long side is floor(long/short) cells, capped at the budget's cells."""
    import math

    from transformers.models.gemma4.image_processing_gemma4 import (
        get_aspect_ratio_preserving_size,
    )

    import gemma_explore.plans.vllm as plans_vllm

    doc = _flat(plans_vllm.__doc__)
    budget, cells, uncapped = map(
        int, re.search(r"3×900 at (\d+) gives (\d+) cells, not (\d+)", doc).groups()
    )
    h, w = get_aspect_ratio_preserving_size(3, 900, 16, budget * 9, 3)
    assert (h, w) == (48, cells * 48) and uncapped == 900 // 3
    assert ge.plan_image((3, 900), family="gemma4", max_soft_tokens=budget).resized_size == (h, w)
    for short, long in [(3, 900), (2, 5000), (4, 3000), (1, 600), (5, 9000)]:
        for b in (70, 140, 280, 560, 1120):
            if long <= short * b:  # the short side keeps at least one cell: another rule
                continue
            for hh, ww in ((short, long), (long, short)):
                th, tw = get_aspect_ratio_preserving_size(hh, ww, 16, b * 9, 3)
                assert min(th, tw) == 48
                assert max(th, tw) // 48 == min(math.floor(long / short), b), (hh, ww, b)


# ------------------------------------ 4. vLLM re-expands a hand-edited prompt, no refusal


@pytest.fixture(scope="module")
def edited(tiny4):
    photo = sample_photo()
    one = [{"role": "user", "content": [{"type": "image", "image": photo}]}]
    prepared = ge.prepare_inputs(one, bundle=tiny4)
    ids = prepared.input_ids
    k = ids.index(tiny4.spec.id_of(tiny4.spec.image_token))
    return prepared, ids[:k] + ids[k + 1 :]


@needs_vllm
@pytest.mark.vllm
def test_4_vllm_accepts_the_hand_edited_prompt(tiny4, edited):
    prepared, ids = edited
    replay = vllm_replay(ids, use_vllm=True, prepared=prepared, bundle=tiny4)
    assert replay.agrees_with_vllm and replay.error is None
    assert replay.embeddings == replay.slots == 270
    assert replay.stray == {"image": 268} and replay.extra_markers == {"image": 1}
    nb07 = _flat(_notebook_text("10_review"))
    assert "vLLM refuses the request" not in nb07
    # The growth holds with either tokenizer: a fresh run of soft tokens + markers where one
    # placeholder stood (the text around it is the same on both sides of the arrow).
    grown = len(replay.ids) - replay.sent
    assert f"grows by {grown} tokens" in nb07 and grown == replay.embeddings + 1
    assert f"{replay.stray['image']} stray" in nb07


def test_4_the_merge_error_is_vllms_own_words(monkeypatch):
    """Without vLLM we print the same words its function raises with."""
    import gemma_explore.parity.checks as parity

    if vllm_available():
        from_vllm = vllm_merge_error([270, 3], 525)
        assert from_vllm == VLLM_MERGE_ERROR.format(expr="270 + 3", n=273, slots=525)
    monkeypatch.setattr(parity, "vllm_available", lambda: False)
    assert vllm_merge_error([270, 3], 525).startswith("ValueError: Attempted to assign 270 + 3")
    assert vllm_merge_error([270], 270) is None


# The engine: a tiny Gemma 4 whose config.json says budget 560 while its
# processor_config.json says 280 (a checkpoint edited by hand, or two files out of step).


@pytest.fixture(scope="module")
def mismatched_engine(tmp_path_factory, tiny4):
    folder = tmp_path_factory.mktemp("tiny4_budget_560")
    tiny4.save_pretrained(folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["vision_config"]["default_output_length"] = 560
    (folder / "config.json").write_text(json.dumps(cfg))
    # A vestigial Gemma 3n-style table some Gemma 4 checkpoints carry: vLLM must skip it.
    from safetensors.torch import load_file, save_file

    weights = load_file(folder / "model.safetensors")
    weights["model.embed_vision.embedding.weight"] = torch.zeros(4, 8)
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # in-process: one engine, no spawn
        from vllm import LLM

        from gemma_explore.engines.vllm import _let_vllm_scan_llvmlite

        _let_vllm_scan_llvmlite()  # librosa's numba may have loaded llvmlite already

        llm = LLM(
            str(folder),
            kv_cache_memory_bytes=256 << 20,
            max_model_len=2048,
            enforce_eager=True,
            dtype="float32",
            distributed_executor_backend="uni",
            limit_mm_per_prompt={"image": 2},
        )
        yield llm, folder
        llm.llm_engine.engine_core.shutdown()
        del llm


@needs_vllm
@pytest.mark.vllm
@pytest.mark.slow
def test_4_and_1_through_vllms_engine(mismatched_engine, tiny4):
    """One engine, three requests: a bigger budget than the start-up one runs; a prompt
    over max_model_len is refused; and with no request budget vLLM counts 560 while the
    processor pads for 280, the one case where "Attempted to assign" fires."""
    from vllm import SamplingParams

    photo = sample_photo()
    h, w = photo.height, photo.width
    text = tiny4.processor.apply_chat_template(
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Hi"}]}],
        tokenize=False,
        add_generation_prompt=True,
    )
    params = SamplingParams(max_tokens=1)

    llm, _ = mismatched_engine

    def ask(prompt: str, images: list, **kwargs):
        req = {"prompt": prompt, "multi_modal_data": {"image": images}, **kwargs}
        return llm.generate(req, params, use_tqdm=False)[0]

    big = ask(text, [photo], mm_processor_kwargs={"max_soft_tokens": 1120})
    ids = big.prompt_token_ids
    run = ids.count(tiny4.spec.id_of(tiny4.spec.image_token))
    assert run == vllm_image_tokens(h, w, max_soft_tokens=1120) > 560

    two = text.replace("<|image|>", "<|image|><|image|>")
    with pytest.raises(Exception, match="longer than the maximum model length of 2048"):
        ask(two, [photo, photo], mm_processor_kwargs={"max_soft_tokens": 1120})

    hf_count = ge.plan_image(photo, family="gemma4", max_soft_tokens=280).num_soft_tokens
    v_count = vllm_image_tokens(h, w, max_soft_tokens=560)
    with pytest.raises(ValueError) as err:
        ask(text, [photo])
    assert f"ValueError: {err.value}" == vllm_merge_error([hf_count], v_count)
    nb07 = _flat(_notebook_text("10_review"))
    assert f"{hf_count} = {hf_count} multimodal tokens to {v_count} placeholders" in nb07


# ------------------------------- 5. plan_image follows transformers' resize, not vLLM's


@needs_vllm
def test_5_the_two_resizes_side_by_side(tiny4, monkeypatch):
    """3×900 px at 280: transformers resizes to 13440×48 px, vLLM's arithmetic to
    13872×48 px (289 tokens before its clamp); only the clamped counts agree."""
    import vllm.model_executor.models.gemma4_mm as vmod

    from gemma_explore.engines.vllm_processor import VLLM_PROCESSORS

    info = VLLM_PROCESSORS.get(tiny4).info
    plan = ge.plan_image((3, 900), family="gemma4", max_soft_tokens=280)
    ours = ge.check_image_parity((3, 900), bundle=tiny4, max_soft_tokens=280, use_vllm=False)
    resized = {r.step: r for r in ours.rows}["resized size"]
    assert resized.transformers == ge.size_label(plan.resized_size) == "13440×48 px (W×H)"
    assert ge.size_label(vllm_image_size(3, 900, max_soft_tokens=280)) == "13872×48 px (W×H)"
    assert info._compute_num_soft_tokens(900, 3, 280) == plan.num_soft_tokens == 280
    monkeypatch.setattr(vmod, "min", lambda a, b: a, raising=False)  # vLLM without its clamp
    assert info._compute_num_soft_tokens(900, 3, 280) == 289
    assert vllm_image_tokens(3, 900, max_soft_tokens=280, clamp=False) == 289
    nb00 = _flat(_notebook_text("00_quickstart"))
    assert "mirrors `Gemma4ImageProcessor`" in nb00 and "vllm_image_size" in nb00
    assert "and vLLM's `Gemma4ProcessingInfo._compute_num_soft_tokens`" not in nb00


# ----------------------------------- 6. text counts come from a stand-in tokenizer


def test_6_the_stand_in_tokenizer_cuts_text_into_characters(tiny4):
    from gemma_explore.models.tokenizer import build_stand_in_tokenizer
    from gemma_explore.models.vocabulary import LABEL_FETCHED, LABEL_STAND_IN, fetched_vocabulary

    text = "What do you see and hear?"
    ids = build_stand_in_tokenizer("gemma4").encode(text, add_special_tokens=False)
    assert len(ids) == len(text)  # one token per character
    # The bundle says which tokenizer it holds; fetched, it is Gemma's own vocabulary.
    real = tiny4.processor.tokenizer.encode("Describe this image.", add_special_tokens=False)
    if fetched_vocabulary() is not None:
        assert tiny4.vocabulary == LABEL_FETCHED and real == [82858, 672, 2471, 236761]
    else:
        assert tiny4.vocabulary == LABEL_STAND_IN and len(real) == len("Describe this image.")
    # The lessons and the workshop page say both: the stand-in cuts text into characters
    # until the vocabulary is fetched, and bundle.vocabulary tells which one is in use.
    for name in ("00_quickstart", "05_prompt_layout", "10_review"):
        lesson = _flat(_notebook_text(name))
        assert "gemma-explore tokenizer fetch" in lesson and "vocabulary" in lesson, name
    lessons = _flat(_notebook_text("05_prompt_layout") + _notebook_text("10_review"))
    assert "cuts text into characters" in lessons
    assert "Every count, shape and position" not in WORKSHOP
    assert "gemma-explore tokenizer fetch" in WORKSHOP


def test_6_media_counts_do_not_depend_on_the_text(tiny4):
    """What the sentence keeps: placeholders per item are the processor's, whatever the
    text around them (only the positions after the text move)."""
    photo = sample_photo()
    counts = []
    for words in ("Hi", "A much longer question about the picture?"):
        msgs = [
            {
                "role": "user",
                "content": [{"type": "image", "image": photo}, {"type": "text", "text": words}],
            }
        ]
        counts.append([p.num_embeds for p in ge.layout_prompt(msgs, bundle=tiny4).placeholders])
    assert counts[0] == counts[1] == [ge.plan_image(photo, family="gemma4").num_soft_tokens]


def test_the_workshop_numbers_are_the_codes(tiny4):
    """Numbers the corrected sentences state, recomputed (no vLLM needed)."""
    assert vllm_audio_frames(45 * 16_000) == 4499
    assert np.isclose(tiny4.spec.audio.max_seconds, 30)


# ---------------- the same engine loaded the checkpoint: the loading plan, held to it


@needs_vllm
@pytest.mark.vllm
@pytest.mark.slow
def test_the_loading_plan_is_what_the_engine_loaded(mismatched_engine, tiny4):
    """(Issue 22, item 8; it shares this module's engine.) Every weight the plan keeps is a
    parameter of vLLM's loaded model under the plan's vLLM name; the vestigial table the
    plan marks ignored is not, and loading did not fail on it."""
    from safetensors import safe_open

    from gemma_explore.serving.weights import loading_plan

    llm, folder = mismatched_engine
    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        names = list(f.keys())
    plan = loading_plan(tiny4, names=names)
    assert plan.row("model.embed_vision.embedding.weight").ignored
    loaded = llm.apply_model(
        lambda m: {n for n, _ in m.named_parameters()} | {n for n, _ in m.named_buffers()}
    )[0]
    kept = {r.vllm for r in plan.rows if not r.ignored}
    assert kept <= loaded, sorted(kept - loaded)[:5]
    assert not any(n.startswith("embed_vision.embedding.") for n in loaded)
    assert {r.shard for r in plan.rows if r.shard} == {
        "q_proj",
        "k_proj",
        "v_proj",
        "gate_proj",
        "up_proj",
    }
