"""The subject comes first and ``bundle=`` is keyword-only; for one release the old order
``f(bundle, subject, …)`` still works, gives the same result, and warns."""

from __future__ import annotations

import numpy as np
import pytest

import gemma_explore as ge
from gemma_explore.inside.attention import attention_mask
from gemma_explore.inside.towers import encode_images
from gemma_explore.processing.inputs import prepare_media


def _old(call, *args, **kwargs):
    with pytest.warns(DeprecationWarning, match="old order"):
        return call(*args, **kwargs)


def test_the_old_order_warns_and_gives_the_same_result(tiny4, photo):
    new = ge.prepare_inputs("Hi", bundle=tiny4, images=[photo], max_soft_tokens=70)
    old = _old(ge.prepare_inputs, tiny4, "Hi", images=[photo], max_soft_tokens=70)
    assert old.input_ids == new.input_ids and old.text == new.text

    pooled = ge.vision_pooling(photo, bundle=tiny4, prepared=new)
    old_pooled = _old(ge.vision_pooling, tiny4, photo, prepared=new)
    assert np.array_equal(old_pooled.valid, pooled.valid)

    assert _old(encode_images, tiny4, new).counts == encode_images(new, bundle=tiny4).counts

    msgs = [{"role": "user", "content": [{"type": "image", "image": photo}]}]
    report = ge.inspect_multimodal(msgs, bundle=tiny4, prepared=new)
    assert _old(ge.inspect_multimodal, tiny4, msgs, prepared=new) == report

    layout = ge.layout_prompt("Hi", bundle=tiny4, images=[photo], max_soft_tokens=70)
    masks = attention_mask(layout, bundle=tiny4)
    old_masks = _old(attention_mask, tiny4, layout)
    assert np.array_equal(old_masks.sliding, masks.sliding) and old_masks.steps == masks.steps


def test_vllm_replay_takes_its_old_three_positionals(tiny4, photo):
    from gemma_explore.parity.checks import vllm_replay

    prepared = ge.prepare_inputs("Hi", bundle=tiny4, images=[photo], max_soft_tokens=70)
    ids = prepared.input_ids
    k = ids.index(tiny4.spec.id_of(tiny4.spec.image_token))
    edited = ids[:k] + ids[k + 1 :]
    new = vllm_replay(edited, bundle=tiny4, prepared=prepared, use_vllm=False)
    assert _old(vllm_replay, tiny4, edited, prepared, use_vllm=False) == new
    with pytest.raises(TypeError, match="two bundles"):
        vllm_replay(tiny4, edited, bundle=tiny4, prepared=prepared)


def test_prepare_media_takes_family_as_a_keyword_and_its_old_order():
    new = prepare_media("Hi", family="gemma3n", images=[(480, 640)])
    old = _old(prepare_media, "gemma3n", "Hi", images=[(480, 640)])
    assert (old.family, old.messages) == (new.family, new.messages) == ("gemma3n", new.messages)
    assert prepare_media("Hi").family == ge.families.DEFAULT_FAMILY.name


def test_prepared_inputs_are_frozen():
    import dataclasses

    prepared = prepare_media("Hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        prepared.text = "edited"  # type: ignore[misc]
