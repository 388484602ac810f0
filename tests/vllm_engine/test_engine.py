"""engine="vllm" on vLLM's real engine (CPU build): generate and stream, per family."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import gemma_explore as ge

from .conftest import ENGINE_OF, FAMILIES
from .parity import HARD_TOKENS, transformers_as_vllm, vllm_rules


def _photo(seed: int):
    from PIL import Image

    rng = np.random.RandomState(seed)
    return Image.fromarray(rng.randint(0, 255, (240, 320, 3), np.uint8))


@pytest.mark.parametrize("family", FAMILIES)
def test_generate_and_stream(family, request, photo):
    engine = request.getfixturevalue(ENGINE_OF[family])
    bundle = engine.bundle
    assert bundle.engine.name == "vllm" and bundle.family == family
    assert bundle.device == "cpu" and bundle.is_random_weights
    gen = bundle.generate("Describe the picture.", images=[photo], max_new_tokens=6)
    prepared = ge.prepare_inputs("Describe the picture.", images=[photo], bundle=bundle)
    # The engine's prompt is the processor's, placeholders and all.
    assert gen.prompt_tokens == len(prepared.input_ids)
    assert gen.multimodal_tokens == bundle.spec.count_placeholders(prepared.input_ids)
    assert gen.generated_tokens == 6 and gen.text
    pieces = list(
        bundle.generate("Describe the picture.", images=[photo], max_new_tokens=6, stream=True)
    )
    assert len(pieces) > 1  # token by token, as the engine steps
    assert "".join(pieces) == gen.text  # greedy: the same answer


@pytest.mark.parametrize("family", ["gemma3n", "gemma4"])
def test_same_answer_as_the_transformers_engine(family, request, photo):
    """Random weights: both engines keep to the same readable ids, so the noise is the
    same, token for token (the notebook shows them side by side), once transformers
    follows the rules vLLM's Gemma 3n differs by (parity.vllm_rules: its <end_of_image>
    comes from the text table; Gemma 4 meets none, test_divergence.py)."""
    engine = request.getfixturevalue(ENGINE_OF[family])
    hf = request.getfixturevalue({"gemma3n": "tiny3n", "gemma4": "tiny4"}[family])
    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "image", "image": photo},
                {"type": "text", "text": "Who is this?"},
            ],
        }
    ]
    rules = vllm_rules(engine.llm, hf.model)
    assert rules == ((HARD_TOKENS,) if family == "gemma3n" else ())
    ours = engine.bundle.generate(msgs, max_new_tokens=12)
    with transformers_as_vllm(hf.model, rules):
        theirs = hf.generate(msgs, max_new_tokens=12)
    assert (ours.prompt_tokens, ours.multimodal_tokens) == (
        theirs.prompt_tokens,
        theirs.multimodal_tokens,
    )
    assert ours.text == theirs.text


def test_a_set_stop_event_ends_the_stream(engine4):
    stop = threading.Event()
    stream = engine4.bundle.generate("Count.", max_new_tokens=50, stream=True, stop=stop)
    first = next(stream)
    stop.set()
    rest = list(stream)
    assert first and len(rest) <= 1  # at most the piece already in flight
    assert not engine4.llm.llm_engine.has_unfinished_requests()  # aborted in the engine


def test_gemma3n_in_vllms_own_processes(saved_dirs, engine3n, photo):
    """vLLM's default: the engine core in its own process. The tiny MobileNet reaches it
    through the package's vllm.general_plugins entry point (register_tiny_mobilenet)."""
    bundle = ge.load(
        str(saved_dirs["gemma3n"]),
        engine="vllm",
        in_process=False,
        max_model_len=1024,
        limit_mm_per_prompt={"image": 1, "audio": 0},
    )
    try:
        from vllm.v1.engine.core_client import SyncMPClient

        assert isinstance(bundle.engine.llm.llm_engine.engine_core, SyncMPClient)
        gen = bundle.generate("Describe.", images=[photo], max_new_tokens=6)
        same = engine3n.bundle.generate("Describe.", images=[photo], max_new_tokens=6)
        assert gen.text == same.text and gen.prompt_tokens == same.prompt_tokens
    finally:
        bundle.engine.close()


def test_a_slow_stream_reader_does_not_block_other_requests(engine4):
    """A stream paused between pieces holds no lock: another request, from another
    thread, is answered meanwhile, and the paused stream then finishes with every piece
    (the other request's steps advanced it; its pieces waited in its inbox)."""
    bundle = engine4.bundle
    whole = bundle.generate("Count.", max_new_tokens=8).text
    stream = bundle.generate("Count.", max_new_tokens=8, stream=True)
    first = next(stream)  # the reader now pauses, mid-answer
    other: dict[str, object] = {}
    worker = threading.Thread(
        target=lambda: other.setdefault("gen", bundle.generate("Hello.", max_new_tokens=4))
    )
    worker.start()
    worker.join(timeout=300)  # a deadlock never joins; a free engine answers in seconds
    assert not worker.is_alive(), "the paused stream blocked another request"
    assert other["gen"].generated_tokens == 4
    assert first + "".join(stream) == whole  # nothing lost while it waited
    assert not engine4.llm.llm_engine.has_unfinished_requests()
