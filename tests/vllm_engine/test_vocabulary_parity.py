"""With Google's fetched vocabulary, transformers' processor and vLLM's agree on whole
prompts: text in several scripts, newline runs, images, audio and video, through the
saved folders (vLLM's processor, every family) and the CPU engine (Gemma 4: one engine of
its own, since the session's shared engines run on the stand-in, tests/conftest.py).

Skipped, saying so, when the vocabulary is not fetched (``make test`` fetches it).
"""

from __future__ import annotations

import os

import pytest

import gemma_explore as ge
from gemma_explore.engines.vllm_processor import vllm_mm_data, vllm_process
from gemma_explore.facts.families import get_family
from gemma_explore.models.vocabulary import LABEL_FETCHED, fetched_vocabulary
from tests.conftest import NEEDS_VOCABULARY, REAL_VOCABULARY, real_vocabulary

from .conftest import MAX_MODEL_LEN
from .parity import clip, image, video

pytestmark = pytest.mark.skipif(not REAL_VOCABULARY, reason=NEEDS_VOCABULARY)
TINY = {"gemma3n": "tiny-gemma3n", "gemma4": "tiny-gemma4", "gemma4_unified": "tiny-gemma4-unified"}


@pytest.fixture(scope="module")
def real_dirs(tmp_path_factory):
    """The tiny bundles built with the fetched vocabulary, saved as a user saves them."""
    root = tmp_path_factory.mktemp("with_vocabulary")
    with real_vocabulary():
        assert fetched_vocabulary() is not None
        yield {
            f: ge.load(name, device="cpu").save_pretrained(root / name) for f, name in TINY.items()
        }


FAMILIES = ["gemma3n", "gemma4", "gemma4_unified"]
TEXT = [
    "Describe this image.\n\n\n",  # a newline run that meets the next item
    "Und dann: 你好世界, 안녕하세요 — def f(x): return x + 1 👋\n" + "\n" * 40,
    '  Zwei Leerzeichen, 3.14159 und {"key": "value"}.',
]


def _content(family: str, *, audio: bool) -> list[dict]:
    items = [
        {"type": "text", "text": TEXT[0]},
        {"type": "image", "image": image(1)},
        {"type": "text", "text": TEXT[1]},
    ]
    if audio:
        items.append({"type": "audio", "audio": (clip(1.5, 2), 16_000)})
    if get_family(family).has_video:
        items.append({"type": "video", "video": video(3)[0], "fps": video(3)[1]})
    items.append({"type": "text", "text": TEXT[2]})
    return items


@pytest.mark.vllm
@pytest.mark.parametrize("family", FAMILIES)
def test_vllms_processor_agrees_on_a_whole_prompt(family, real_dirs):
    bundle = ge.load(real_dirs[family])
    assert bundle.vocabulary == LABEL_FETCHED
    msgs = [{"role": "user", "content": _content(family, audio=True)}]
    layout = ge.layout_prompt(msgs, bundle=bundle)
    prepared = ge.prepare_inputs(msgs, bundle=bundle)
    assert list(layout.input_ids) == list(prepared.input_ids)
    out = vllm_process(bundle, prepared.text, vllm_mm_data(prepared))
    # Unified clips vLLM counts differently: the layout names it and holds vLLM's ids.
    assert out["prompt_token_ids"] == list(layout.vllm_input_ids or layout.input_ids)
    # Real word pieces, not characters: far fewer text tokens than characters.
    pieces = bundle.processor.tokenizer.encode(TEXT[1], add_special_tokens=False)
    assert len(pieces) < len(TEXT[1]) / 2


_ENGINE_CHECK = """
import sys, numpy as np
import gemma_explore as ge
from vllm import SamplingParams
from gemma_explore.engines.vllm import vllm_request
from tests.vllm_engine.test_vocabulary_parity import _content
bundle = ge.load(sys.argv[1], engine="vllm", max_model_len=int(sys.argv[2]),
                 limit_mm_per_prompt={"image": 2, "audio": 1, "video": 1})
prepared = ge.prepare_inputs([{"role": "user", "content": _content("gemma4", audio=False)}],
                             bundle=bundle)
(out,) = bundle.engine.llm.generate([vllm_request(prepared)],
                                    SamplingParams(max_tokens=1, temperature=0.0), use_tqdm=False)
print("VOCABULARY", bundle.vocabulary)
print("SAME", list(out.prompt_token_ids) == list(prepared.input_ids))
print("WORDS", int(np.isin(prepared.input_ids, [82858, 672, 2471]).sum()))
"""


@pytest.mark.slow
@pytest.mark.vllm
def test_the_cpu_engine_runs_the_same_prompt_ids(real_dirs):
    """Images, video and text through vLLM's engine (audio: vLLM's processor above; Gemma 4's
    audio tower fails on vLLM's CPU build, tests/vllm_engine/test_parity.py). In a process of its
    own: an engine with the real vocabulary holds gigabytes of processors vLLM caches."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    run = subprocess.run(
        [sys.executable, "-c", _ENGINE_CHECK, str(real_dirs["gemma4"]), str(MAX_MODEL_LEN)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=root,
        env={**os.environ, "VLLM_LOGGING_LEVEL": "ERROR"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in run.stdout.splitlines() if " " in line)
    assert lines["VOCABULARY"] == LABEL_FETCHED
    assert lines["SAME"] == "True" and int(lines["WORDS"]) >= 3  # Describe this image
