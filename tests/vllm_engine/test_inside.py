"""Inside vLLM's engine (issue 22 item 2, issue 26 Q4/Q5), read from the running model.

- Per-layer embeddings: the ids vLLM's model really looks up in ``embed_tokens_per_layer``
  (a hook on the table inside the engine) equal ``per_layer_ids(…).vllm_per_layer``.
- Encoder reuse: how many items vLLM's engine encodes (``embed_multimodal``, hooked inside
  the engine) when the same image comes back in another request, or in the next turn of a
  chat; and how many prompt tokens the prefix cache served (``num_cached_tokens``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import gemma_explore as ge
from gemma_explore.engines.vllm import vllm_request
from gemma_explore.inside.per_layer import per_layer_ids

from .conftest import ENGINE_OF, HF_OF
from .facts import capture_mm_embeddings, fresh
from .parity import clip, image


def capture_per_layer_ids(llm: Any) -> list[Any]:
    """Record the ids vLLM's model hands its per-layer table (one tensor per call).
    Returns the live list, emptied."""

    def install(model: Any) -> list[Any]:
        calls = getattr(model, "_ge_per_layer", None)
        if calls is None:
            tables = [m for n, m in model.named_modules() if n.endswith("embed_tokens_per_layer")]
            assert len(tables) == 1, f"{len(tables)} per-layer tables"
            calls = model._ge_per_layer = []
            tables[0].register_forward_pre_hook(
                lambda _m, args: calls.append(args[0].detach().cpu().clone())
            )
        calls.clear()
        return calls

    (calls,) = llm.apply_model(install)
    return calls


def _generate(engine, prepared, max_tokens: int = 1):
    from vllm import SamplingParams

    params = SamplingParams(max_tokens=max_tokens, temperature=0.0)
    (out,) = engine.llm.generate([vllm_request(prepared)], params, use_tqdm=False)
    return out


@pytest.mark.parametrize(
    ("family", "media"),
    [
        ("gemma4", {"images": [image(11)]}),
        ("gemma3n", {"images": [image(11)], "audios": [(clip(1.0, 2), 16_000)]}),
    ],
)
def test_per_layer_ids_are_what_vllms_model_looks_up(family, media, request):
    engine = request.getfixturevalue(ENGINE_OF[family])
    hf = request.getfixturevalue(HF_OF[family])
    prepared = ge.prepare_inputs("What is this?", **media, bundle=engine.bundle)
    fresh(engine.llm)
    calls = capture_per_layer_ids(engine.llm)
    out = _generate(engine, prepared)
    n = len(out.prompt_token_ids)
    seen = np.concatenate([c.reshape(-1).numpy() for c in calls])[:n]  # prefill, maybe chunked
    assert len(seen) == n
    ours = per_layer_ids(list(out.prompt_token_ids), bundle=hf)
    assert tuple(int(i) for i in seen) == ours.vllm_per_layer
    assert ours.remapped  # the prompt has positions that read another row than their own
    assert ours.agrees_with_vllm  # and transformers reads the same rows (test_inside.py)


def _chat(img, text, history=()):
    return [
        *history,
        {
            "role": "user",
            "content": [{"type": "image", "image": img}, {"type": "text", "text": text}],
        },
    ]


@pytest.mark.parametrize("family", ["gemma4", "gemma3n"])
def test_encoder_outputs_are_reused_across_requests_and_turns(family, request):
    """Q4/Q5: vLLM keys an encoder output by the item's hash (not by the request), so the
    same image is encoded once; an earlier turn's image is not encoded again."""
    engine = request.getfixturevalue(ENGINE_OF[family])
    llm = engine.llm
    assert llm.llm_engine.vllm_config.cache_config.enable_prefix_caching
    bundle = engine.bundle
    photo, other = image(21), image(22)
    fresh(llm)
    calls = capture_mm_embeddings(llm)

    def items() -> int:
        n = sum(len(c) for c in calls)
        calls.clear()
        return n

    first = _generate(engine, ge.prepare_inputs(_chat(photo, "Describe it."), bundle=bundle), 4)
    assert items() == 1 and first.num_cached_tokens == 0
    # 1. Another request, other words *before* the image: no shared prefix reaches the
    # image, yet it is not encoded again (the encoder cache, keyed by the image's hash).
    text = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Another question."},
                {"type": "image", "image": photo},
                {"type": "text", "text": "Colours?"},
            ],
        }
    ]
    _generate(engine, ge.prepare_inputs(text, bundle=bundle))
    assert items() == 0
    # 2. The next turn of the chat: the first turn (image and answer) is a cached prefix.
    history = [
        *_chat(photo, "Describe it."),
        {"role": "assistant", "content": [{"type": "text", "text": first.outputs[0].text}]},
    ]
    turn2 = ge.prepare_inputs(
        [*history, {"role": "user", "content": [{"type": "text", "text": "And the colours?"}]}],
        bundle=bundle,
    )
    second = _generate(engine, turn2)
    assert items() == 0
    # The prefix cache serves whole KV blocks of the earlier turn (its image included, as
    # far as full blocks reach); the image's positions past the last full block are
    # recomputed from the encoder cache's output, still without running the encoder.
    block = llm.llm_engine.vllm_config.cache_config.block_size
    assert second.num_cached_tokens >= block and second.num_cached_tokens % block == 0
    print(
        f"\n[{family}] block {block}, first prompt {len(first.prompt_token_ids)} tokens "
        f"({bundle.spec.count_placeholders(first.prompt_token_ids)} soft), turn 2 "
        f"{len(second.prompt_token_ids)} tokens, {second.num_cached_tokens} from the prefix cache"
    )
    # 3. A new image in the next turn: only the new one is encoded.
    _generate(engine, ge.prepare_inputs(_chat(other, "And this one?", history), bundle=bundle))
    assert items() == 1
    # 4. Forget both caches: the same image is encoded again.
    fresh(llm)
    _generate(engine, ge.prepare_inputs(_chat(photo, "Describe it."), bundle=bundle))
    assert items() == 1
