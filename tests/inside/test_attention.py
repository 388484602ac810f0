"""attention_mask equals the masks transformers builds inside the model's forward, on both
layer types, with use_bidirectional_attention="vision" and with None."""

from __future__ import annotations

import numpy as np
import pytest

import gemma_explore as ge
from gemma_explore.inside.attention import attention_mask


def _messages(photo):
    wide = np.full((120, 360, 3), 200, np.uint8)
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Compare"},
                {"type": "image", "image": photo},
                {"type": "image", "image": wide},
                {"type": "text", "text": "please."},
            ],
        }
    ]


def _captured(bundle, prepared, flag, *, via="forward"):
    """The attention_mask each decoder layer receives in a real forward pass (eager), or
    in the prefill of ``generate`` (``via="generate"``)."""
    import torch

    model = bundle.model
    text = model.config.get_text_config()
    before_flag, before_impl = text.use_bidirectional_attention, model.config._attn_implementation
    caught: dict[int, torch.Tensor] = {}
    layers = model.model.language_model.layers

    def keep(i, kw):  # the first call is the prefill; later ones are decode steps
        caught.setdefault(i, kw["attention_mask"])

    hooks = [
        layer.register_forward_pre_hook(lambda mod, args, kw, i=i: keep(i, kw), with_kwargs=True)
        for i, layer in enumerate(layers)
    ]
    try:
        text.use_bidirectional_attention = flag
        model.set_attn_implementation("eager")
        with torch.no_grad():
            if via == "generate":
                model.generate(**prepared.batch, max_new_tokens=1, do_sample=False)
            else:
                model(**prepared.batch)
    finally:
        for h in hooks:
            h.remove()
        text.use_bidirectional_attention = before_flag
        model.set_attn_implementation(before_impl)
    return {i: (m[0, 0] == 0).numpy() for i, m in caught.items()}


@pytest.mark.parametrize("family", ["gemma4", "gemma4_unified"])
@pytest.mark.parametrize("flag", ["vision", None])
def test_masks_equal_the_models_own(tiny4, tinyu, photo, flag, family):
    tiny4 = {"gemma4": tiny4, "gemma4_unified": tinyu}[family]  # the bundle under test
    via = "generate" if family == "gemma4_unified" else "forward"  # Unified: both, below
    msgs = _messages(photo)
    layout = ge.layout_prompt(msgs, bundle=tiny4, max_soft_tokens=70)
    prepared = ge.prepare_inputs(msgs, bundle=tiny4, max_soft_tokens=70)
    assert list(layout.input_ids) == prepared.input_ids
    masks = attention_mask(layout, bundle=tiny4, use_bidirectional_attention=flag)
    # The processor's own mm_token_type_ids: our per-token types come from the layout.
    assert list(masks.mm_token_type_ids) == prepared.batch["mm_token_type_ids"][0].tolist()
    inside = _captured(tiny4, prepared, flag, via=via)
    for i, kind in enumerate(tiny4.model.config.get_text_config().layer_types):
        np.testing.assert_array_equal(masks.mask(kind), inside[i], err_msg=f"layer {i} {kind}")
    n = masks.num_tokens
    q, k = np.indices((n, n))
    if not (family == "gemma4_unified" and flag == "vision"):
        assert (masks.full == (k <= q)).all()  # full layers: causal, whatever the flag
    window = k > q - masks.sliding_window
    assert n > masks.sliding_window  # the window really cuts something here
    if family == "gemma4_unified":  # generate's prefill and a plain forward agree
        assert all((inside[i] == m).all() for i, m in _captured(tiny4, prepared, flag).items())
    if flag is None:
        assert (masks.sliding == ((k <= q) & window)).all()
        assert masks.future_pairs("sliding_attention") == 0
    else:  # each image's s soft tokens see each other: s·(s−1)/2 future pairs per image
        sizes = [p.num_embeds for p in layout.placeholders]
        assert masks.future_pairs("sliding_attention") == sum(s * (s - 1) // 2 for s in sizes)
        # Unified in transformers opens full layers too (vLLM does not; see attention.py).
        open_full = sum(s * (s - 1) // 2 for s in sizes) if family == "gemma4_unified" else 0
        assert masks.future_pairs("full_attention") == open_full


def test_checkpoint_flag_is_read_and_gemma3n_is_causal(tiny4, tiny3n, photo):
    msgs = _messages(photo)
    masks = attention_mask(ge.layout_prompt(msgs, bundle=tiny4), bundle=tiny4)
    assert masks.use_bidirectional_attention is None and masks.from_checkpoint
    masks3n = attention_mask(ge.layout_prompt(msgs, bundle=tiny3n), bundle=tiny3n)
    assert masks3n.future_pairs("sliding_attention") == 0
    with pytest.raises(ValueError, match="always causal"):
        attention_mask(
            ge.layout_prompt(msgs, bundle=tiny3n),
            bundle=tiny3n,
            use_bidirectional_attention="vision",
        )


def test_unified_reads_its_checkpoints_vision_flag(tinyu, photo):
    """Unified's text config defaults to use_bidirectional_attention="vision" (the larger
    Gemma 4 checkpoints' setting): image tokens see each other on sliding layers."""
    msgs = _messages(photo)
    layout = ge.layout_prompt(msgs, bundle=tinyu)
    masks = attention_mask(layout, bundle=tinyu)
    assert masks.use_bidirectional_attention == "vision" and masks.from_checkpoint
    sizes = [p.num_embeds for p in layout.placeholders]
    assert masks.future_pairs("sliding_attention") == sum(s * (s - 1) // 2 for s in sizes)
