"""Raw prompts, as vLLM's LLM.generate takes them: our layouts against vLLM 0.32 itself.

For random hand-written prompts (runs of newlines and spaces around 1–3 placeholders,
random image sizes and budgets, random clip lengths, both families), either our
layout's ids equal the ids vLLM's multimodal processor produces, or vLLM raises and
the layout's divergences quoted that error word for word. vLLM's side is tokenized
with vLLM's own tokenizer and its own special-token setting (skipped without vllm).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gemma_explore as ge
from gemma_explore.engines.vllm_processor import VLLM_PROCESSORS, vllm_available
from tests.conftest import examples

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(not vllm_available(), reason="vllm is not installed"),
]


def vllm_raw(bundle, text: str, mm_data: dict, mm_kwargs: dict | None = None):
    """vLLM's processor on a raw prompt, tokenized as LLM.generate tokenizes it.

    Returns (prompt ids, [(modality, offset, length)]) or the exception vLLM raised.
    """
    from vllm.multimodal.processing.context import TimingContext
    from vllm.multimodal.processing.inputs import ProcessorInputs

    proc = VLLM_PROCESSORS.get(bundle)
    tok = proc.info.get_tokenizer()
    ids = tok(text, **proc.info.default_tok_params.get_encode_kwargs())["input_ids"]
    try:
        out = proc.apply(
            ProcessorInputs(
                list(ids), proc.info.parse_mm_data(mm_data), hf_processor_mm_kwargs=mm_kwargs or {}
            ),
            TimingContext(enabled=False),
        )
    except Exception as exc:  # noqa: BLE001 - the error itself is the result
        return exc
    ranges = [(m, r.offset, r.length) for m, rs in out["mm_placeholders"].items() for r in rs]
    return list(out["prompt_token_ids"]), sorted(ranges, key=lambda r: r[1])


def _image(h: int, w: int, seed: int = 0) -> np.ndarray:
    return np.random.RandomState(seed).randint(0, 255, (h, w, 3), np.uint8)


def _clip(n: int, seed: int = 0) -> np.ndarray:
    return np.random.RandomState(seed).uniform(-0.2, 0.2, n).astype(np.float32)


@st.composite
def raw_prompts(draw):
    family = draw(st.sampled_from(["gemma3n", "gemma4"]))
    spec = ge.get_family(family)
    kinds = draw(st.lists(st.sampled_from(["image", "audio"]), min_size=1, max_size=3))
    spacing = st.text(alphabet=" \n", max_size=5)  # runs of 0–5 newlines and spaces
    text = draw(st.sampled_from(["", "<bos>", "<bos>user\n"])) + draw(st.sampled_from(["A", ""]))
    images, audios = [], []
    for kind in kinds:
        text += draw(spacing) + spec.placeholder_tokens[kind] + draw(spacing)
        text += draw(st.sampled_from(["", "Look", "B."]))
        if kind == "image":  # sizes, not pixels, so a failing case prints short
            images.append((draw(st.integers(1, 1200)), draw(st.integers(1, 1200))))
        else:
            audios.append(draw(st.integers(1, 80_000)))
    budget = draw(st.sampled_from(spec.image.budgets)) if spec.image.budgets else None
    return family, text, images, audios, budget


@pytest.mark.slow
@settings(max_examples=examples(0.25))
@given(case=raw_prompts())
def test_random_raw_prompts_equal_vllms_processor_or_predict_its_error(tiny3n, tiny4, case):
    family, text, sizes, lengths, budget = case
    bundle = {"gemma3n": tiny3n, "gemma4": tiny4}[family]
    images = [_image(h, w, i) for i, (h, w) in enumerate(sizes)]
    audios = [(_clip(n, i), 16_000) for i, n in enumerate(lengths)]
    layout = ge.layout_prompt(
        text, bundle=bundle, images=images, audios=audios, max_soft_tokens=budget, template=False
    )
    waves = [wave for wave, _rate in audios]
    # vLLM gets what our engine sends it: RGB PIL images (a (1, 1, 3) array is ambiguous
    # to transformers' channel guess, and media.load_image settles it for our side).
    pils = [ge.load_image(a) for a in images]
    mm = {k: v for k, v in (("image", pils), ("audio", waves)) if v}
    theirs = vllm_raw(bundle, text, mm, {"max_soft_tokens": budget} if budget else None)
    if isinstance(theirs, Exception):
        said = f"{type(theirs).__name__}: {theirs}"
        assert said in [d.error for d in layout.divergences], (text, said, layout.divergences)
        return
    ids, ranges = theirs
    assert list(layout.input_ids) == ids, (text, layout.divergences)
    assert sorted(layout.vllm_ranges, key=lambda r: r[1]) == ranges
    assert not any(d.error for d in layout.divergences)
