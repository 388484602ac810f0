"""inspect_multimodal: encoder outputs against placeholders, item by item."""

import numpy as np
import pytest

import gemma_explore as ge
from gemma_explore.samples import sample_photo, sample_speech, sample_video


@pytest.fixture(scope="module")
def media():
    return sample_photo(), sample_speech(), sample_video()


def _msgs(media, video=True):
    photo, speech, vid = media
    content = [
        {"type": "image", "image": photo},
        {"type": "image", "image": np.zeros((90, 1600, 3), np.uint8)},
        {"type": "audio", "audio": speech},
    ]
    if video:
        content.append({"type": "video", "video": vid})
    return [{"role": "user", "content": content + [{"type": "text", "text": "Describe."}]}]


def test_gemma4_every_item_matches_its_plan(tiny4, media):
    report = ge.inspect_multimodal(_msgs(media), bundle=tiny4, max_soft_tokens=140)
    assert report.agrees
    kinds = [(i.modality, i.item) for i in report.items]
    assert kinds == [("image", 0), ("image", 1), ("audio", 0), ("video", 0)]
    photo, speech, vid = media
    plans = [
        ge.plan_image(photo, family="gemma4", max_soft_tokens=140).num_soft_tokens,
        ge.plan_image((90, 1600), family="gemma4", max_soft_tokens=140).num_soft_tokens,
        ge.plan_audio(speech, family="gemma4").num_soft_tokens,
        ge.plan_video(vid).num_soft_tokens,
    ]
    assert [i.num_embeddings for i in report.items] == plans
    image = report.items[0]
    assert image.embedding_shape[0] == plans[0] and sum(image.valid_mask) == plans[0]
    assert len(image.valid_mask) == 140  # pooled slots = the budget
    layout = ge.layout_prompt(_msgs(media), bundle=tiny4, max_soft_tokens=140)
    assert list(image.positions) == layout.placeholders[0].embed_positions


def test_gemma4_per_layer_embeddings_are_zero_at_multimodal_positions(tiny4, media):
    report = ge.inspect_multimodal(_msgs(media, video=False), bundle=tiny4)
    assert report.per_layer_mm_norm == 0.0 and report.per_layer_text_norm > 0
    assert "<pad>" in report.per_layer_note


def test_gemma3n_audio_padding_to_188(tiny3n, media):
    report = ge.inspect_multimodal(_msgs(media, video=False), bundle=tiny3n)
    assert report.agrees
    audio = [i for i in report.items if i.modality == "audio"][0]
    plan = ge.plan_audio(media[1], family="gemma3n")
    assert audio.num_embeddings == audio.num_placeholders == 188
    assert audio.num_padding_soft_tokens == plan.num_padding_soft_tokens
    assert sum(audio.valid_mask) == plan.num_encoder_tokens
    assert [i.num_embeddings for i in report.items if i.modality == "image"] == [256, 256]


@pytest.mark.parametrize("bundle_name", ["tiny4", "tiny3n"])
def test_a_hand_edited_prompt_gets_a_mismatch_report_not_a_crash(bundle_name, media, request):
    bundle = request.getfixturevalue(bundle_name)
    msgs = _msgs(media, video=False)
    ids = ge.prepare_inputs(msgs, bundle=bundle).input_ids
    image_id = bundle.spec.id_of(bundle.spec.image_token)
    k = ids.index(image_id)
    report = ge.inspect_multimodal(msgs, bundle=bundle, input_ids=ids[:k] + ids[k + 1 :])
    assert not report.agrees
    message, vllm = report.mismatches
    counts = [i.num_embeddings for i in report.items]
    total = sum(counts)
    expr = " + ".join(map(str, counts))
    assert "placeholders" in message and report.items[0].num_placeholders == counts[0] - 1
    # vLLM 0.32's own words (models/utils.py _merge_multimodal_embeddings):
    assert report.vllm_error == (
        f"ValueError: Attempted to assign {expr} = {total} multimodal tokens to {total - 1} "
        "placeholders"
    )
    assert vllm.endswith(report.vllm_error)
    assert "MISMATCH" in repr(report) and "#fde0d0" in report._repr_html_()
