"""vLLM's own multimodal processor, on the tiny checkpoints saved to folders, produces
exactly the prompt ids our layouts describe (skipped without vllm)."""

import numpy as np
import pytest

import gemma_explore as ge
from gemma_explore.engines.vllm_processor import vllm_available, vllm_mm_data, vllm_process

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(not vllm_available(), reason="vllm is not installed"),
]


def _clip(seconds, seed=0):
    return (
        np.random.RandomState(seed).uniform(-0.2, 0.2, int(16_000 * seconds)).astype(np.float32),
        16_000,
    )


def _cases(photo):
    frames = np.random.RandomState(3).randint(0, 255, (20, 72, 128, 3), np.uint8)
    wide = np.zeros((90, 1600, 3), np.uint8)
    return {
        "image": [{"type": "text", "text": "Look:"}, {"type": "image", "image": photo}],
        "two images": [
            {"type": "image", "image": photo},
            {"type": "image", "image": wide},
            {"type": "text", "text": "Compare."},
        ],
        "audio": [{"type": "audio", "audio": _clip(2.41)}, {"type": "text", "text": "Say?"}],
        "long audio": [{"type": "audio", "audio": _clip(33.0)}],
        "mixed": [
            {"type": "text", "text": "A\n"},
            {"type": "image", "image": photo},
            {"type": "audio", "audio": _clip(1.3, 1)},
            {"type": "text", "text": "\nB"},
        ],
        "video": [
            {"type": "video", "video": frames, "fps": 5.0},
            {"type": "text", "text": "What happens?"},
        ],
    }


@pytest.mark.parametrize("case", ["image", "two images", "audio", "long audio", "mixed", "video"])
@pytest.mark.parametrize("budget", [None, 70, 560])
def test_prompt_ids_equal_vllms(tiny3n, tiny4, tinyu, photo, case, budget):
    content = _cases(photo)[case]
    for bundle in (tiny3n, tiny4, tinyu):
        if bundle.family == "gemma3n" and (case == "video" or budget is not None):
            continue
        msgs = [{"role": "user", "content": content}]
        layout = ge.layout_prompt(msgs, bundle=bundle, max_soft_tokens=budget)
        prepared = ge.prepare_inputs(msgs, bundle=bundle, max_soft_tokens=budget)
        out = vllm_process(
            bundle,
            prepared.text,
            vllm_mm_data(prepared),
            {"max_soft_tokens": budget} if budget else None,
        )
        # Unified clips vLLM counts differently: the layout names it and holds vLLM's ids.
        vllm_ids = layout.vllm_input_ids or layout.input_ids
        assert out["prompt_token_ids"] == list(vllm_ids), (bundle.family, case)
        assert (layout.vllm_input_ids is not None) == bool(layout.divergences)
        ours = [(m, o, n) for m, o, n in layout.vllm_ranges]
        theirs = [
            (m, o, n)
            for m in ("image", "audio", "video")
            for (o, n, _) in out["placeholders"].get(m, [])
        ]
        assert sorted(ours, key=lambda r: r[1]) == sorted(theirs, key=lambda r: r[1])
        embeds = {
            m: [e for (_, _, e) in out["placeholders"].get(m, [])]
            for m in ("image", "audio", "video")
        }
        for ph in layout.placeholders:
            shorter = [d for d in layout.divergences if d.position == ph.start]
            expect = ph.num_embeds - sum(len(d.transformers_ids) - len(d.vllm_ids) for d in shorter)
            assert embeds[ph.modality][ph.item] == expect


def test_the_processor_cache_deletes_its_temporary_folders(tiny4):
    import os

    from gemma_explore.engines.vllm_processor import VllmProcessors

    cache = VllmProcessors()
    assert cache.get(tiny4) is cache.get(tiny4)  # made once
    folder = cache.folder_of(tiny4)
    assert os.path.isdir(folder) and "gemma_explore_vllm_" in folder
    cache.clear()
    assert not os.path.exists(folder)
