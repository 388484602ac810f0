"""Explorer callbacks run headless: set a control, read the plan and figure."""

import numpy as np

import gemma_explore as ge


def test_explore_image_budget_and_family():
    w = ge.explore_image((1080, 1920))
    assert w.plan.num_soft_tokens == 264
    w.budget.value = 70
    assert (
        w.plan.num_soft_tokens
        == ge.plan_image((1080, 1920), family="gemma4", max_soft_tokens=70).num_soft_tokens
    )
    assert "70" in w.figure.axes[0].get_title()
    w.family.value = "gemma3n"
    assert w.plan.num_soft_tokens == 256 and w.budget.disabled
    assert "256" in w.counts.value


def test_explore_audio_crop(tone):
    w = ge.explore_audio((tone, 16000))
    assert w.plan.num_placeholders == 75
    w.crop.value = (0.0, 1.0)
    assert w.plan.num_placeholders == 25
    w.family.value = "gemma3n"
    assert w.plan.num_placeholders == 188 and w.plan.padding_slots > 0


def test_explore_prompt(tiny4):
    w = ge.explore_prompt(tiny4)
    one = w.plan.num_tokens
    w.images.value = 2
    assert w.plan.num_tokens > one and len(w.plan.placeholders) == 2
    w.budget.value = 70
    assert all(p.num_embeds <= 70 for p in w.plan.placeholders)
    w.audios.value = 1
    assert [p.modality for p in w.plan.placeholders] == ["image", "image", "audio"]
    assert w.error is None and np.isfinite(w.plan.num_tokens)
