"""inspect_multimodal: encoder outputs against placeholders, item by item."""

import numpy as np
import pytest
import torch

import gemma_explore as ge
from gemma_explore.engines.vllm_processor import vllm_available
from gemma_explore.inside.towers import encode_audio, encode_images
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


def _interleaved(media, video):
    """image, audio, image (, video): an audio clip between two images, so an order by
    modality and an order by position differ."""
    photo, speech, vid = media
    content = [
        {"type": "image", "image": photo},
        {"type": "audio", "audio": speech},
        {"type": "image", "image": np.zeros((90, 1600, 3), np.uint8)},
    ]
    if video:
        content.append({"type": "video", "video": vid})
    return [{"role": "user", "content": content + [{"type": "text", "text": "Describe."}]}]


def _transformers_embeds(bundle, prepared):
    """The language model's input in transformers' own forward: text embeddings with every
    modality's features masked_scatter-ed into its placeholders."""
    seen = {}

    def grab(_module, args, kwargs):
        seen["embeds"] = kwargs["inputs_embeds"][0].detach().clone()  # (seq, hidden)

    from gemma_explore.engines.hf import encoder_free_video_inputs

    # Before transformers 5.23, Gemma4ForConditionalGeneration.forward, like Unified's,
    # drops num_frames_per_video: the video features then go in as mm_encoder_outputs
    # (computed by the model's own get_video_features), and forward still scatters every
    # modality itself; from 5.23 the inputs go in as they are.
    inputs = encoder_free_video_inputs(bundle.model, prepared.to_model(bundle.model))
    handle = bundle.model.model.language_model.register_forward_pre_hook(grab, with_kwargs=True)
    try:
        with torch.inference_mode():
            bundle.model(**inputs)
    finally:
        handle.remove()
    return seen["embeds"]


def _item_features(bundle, prepared):
    """Per modality, per item: the rows the item's encoder hands the language model (Gemma
    3n audio: the tower's tokens, its padding replaced and extended to 188 by the padding
    vector)."""
    from gemma_explore.inside.embedders import audio_padding_embedding

    feats = {"image": list(encode_images(prepared, bundle=bundle).features)}
    audio = encode_audio(prepared, bundle=bundle)
    slots = bundle.spec.audio.fixed_placeholders
    if slots is None:
        feats["audio"] = list(audio.features)
    else:
        pad = audio_padding_embedding(bundle).vector
        feats["audio"] = [
            torch.cat(
                [torch.where(torch.tensor(v)[:, None], f, pad), pad.expand(slots - len(f), -1)]
            )
            for f, v in zip(audio.features, audio.valid, strict=True)
        ]
    if prepared.videos:
        inputs = prepared.to_model(bundle.model)
        with torch.inference_mode():
            out = bundle.model.model.get_video_features(
                inputs["pixel_values_videos"],
                inputs["video_position_ids"],
                inputs["num_frames_per_video"],
            )
        feats["video"] = list(out.pooler_output)
    return feats


@pytest.mark.parametrize(("name", "video"), [("tiny4", True), ("tiny3n", False)])
def test_every_item_lands_where_both_engines_put_it(name, video, media, request):
    """Across modalities: each item's features sit at its report positions in transformers'
    own forward; vLLM's own processor places the same items at the same positions, in the
    order its argsort_mm_positions gives (= ``in_prompt_order``); and vLLM's own
    _merge_multimodal_embeddings, fed the items in that order, makes transformers' tensor."""
    bundle = request.getfixturevalue(name)
    msgs = _interleaved(media, video)
    budget = 140 if bundle.spec.image.budgets else None
    prepared = ge.prepare_inputs(msgs, bundle=bundle, max_soft_tokens=budget)
    report = ge.inspect_multimodal(msgs, bundle=bundle, prepared=prepared)
    assert report.agrees
    by_modality = [(i.modality, i.item) for i in report.items]
    expected = [("image", 0), ("audio", 0), ("image", 1)] + ([("video", 0)] if video else [])
    assert list(report.in_prompt_order) == expected != by_modality
    embeds = _transformers_embeds(bundle, prepared)
    feats = _item_features(bundle, prepared)
    for item in report.items:
        got = embeds[list(item.positions)]
        assert torch.allclose(got.float(), feats[item.modality][item.item].float(), atol=1e-5), item
    if not vllm_available():
        return
    from vllm.model_executor.models.utils import _merge_multimodal_embeddings
    from vllm.multimodal.utils import argsort_mm_positions

    placeholders, ids = _vllm_placeholders(bundle, prepared)
    assert ids == list(prepared.input_ids)
    order = argsort_mm_positions(placeholders)
    assert tuple(order) == report.in_prompt_order
    where = {(i.modality, i.item): list(i.positions) for i in report.items}
    is_mm = torch.zeros(len(ids), dtype=torch.bool)
    for modality, k in order:
        r = placeholders[modality][k]
        embed = range(r.offset, r.offset + r.length)
        if r.is_embed is not None:
            embed = [r.offset + int(j) for j in torch.nonzero(r.is_embed).reshape(-1)]
        assert list(embed) == where[(modality, k)], (modality, k)
        is_mm[list(embed)] = True
    text_only = embeds.clone()
    text_only[is_mm] = 0
    merged = _merge_multimodal_embeddings(text_only, [feats[m][k] for m, k in order], is_mm)
    assert torch.allclose(merged.float(), embeds.float(), atol=1e-5)


def _vllm_placeholders(bundle, prepared):
    """vLLM's own processor on the request: its PlaceholderRange per item and its ids."""
    from gemma_explore.engines.vllm_processor import vllm_apply, vllm_mm_data

    out = vllm_apply(bundle, prepared.text, vllm_mm_data(prepared), prepared.request_kwargs)
    return out["mm_placeholders"], list(out["prompt_token_ids"])


def test_gemma4_every_item_matches_its_plan(tiny4, media):
    """Counts: each item's embeddings against its own plan (placement is the test above)."""
    report = ge.inspect_multimodal(_msgs(media), bundle=tiny4, max_soft_tokens=140)
    assert report.agrees
    photo, speech, vid = media
    plans = {
        ("image", 0): ge.plan_image(photo, family="gemma4", max_soft_tokens=140),
        ("image", 1): ge.plan_image((90, 1600), family="gemma4", max_soft_tokens=140),
        ("audio", 0): ge.plan_audio(speech, family="gemma4"),
        ("video", 0): ge.plan_video(vid),
    }
    assert {(i.modality, i.item): i.num_embeddings for i in report.items} == {
        k: p.num_soft_tokens for k, p in plans.items()
    }
    image = report.items[0]
    n = plans[("image", 0)].num_soft_tokens
    assert image.embedding_shape[0] == n and sum(image.valid_mask) == n
    assert len(image.valid_mask) == 140  # pooled slots = the budget


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
    # vLLM's own words, the same in every supported release (models/utils.py
    # _merge_multimodal_embeddings):
    assert report.vllm_error == (
        f"ValueError: Attempted to assign {expr} = {total} multimodal tokens to {total - 1} "
        "placeholders"
    )
    assert vllm.endswith(report.vllm_error)
    assert "MISMATCH" in repr(report) and "#fde0d0" in report._repr_html_()
