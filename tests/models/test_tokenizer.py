"""The stand-in tokenizer keeps the real special-token strings and ids."""

import pytest

from gemma_explore.facts.families import FAMILIES
from gemma_explore.models.tokenizer import build_stand_in_tokenizer


@pytest.fixture(scope="module", params=["gemma3n", "gemma4"])
def fam_tok(request):
    return FAMILIES[request.param], build_stand_in_tokenizer(request.param)


def test_special_tokens_have_real_ids(fam_tok):
    spec, tok = fam_tok
    for token, token_id in spec.token_ids.items():
        assert tok.convert_tokens_to_ids(token) == token_id, token
        assert tok.convert_ids_to_tokens(token_id) == token


def test_reference_ids(fam_tok):
    spec, tok = fam_tok
    if spec.name == "gemma3n":
        expected = {
            "<start_of_image>": 255999,
            "<end_of_image>": 262144,
            "<image_soft_token>": 262145,
            "<start_of_audio>": 256000,
            "<end_of_audio>": 262272,
            "<audio_soft_token>": 262273,
        }
    else:
        expected = {
            "<|image>": 255999,
            "<image|>": 258882,
            "<|image|>": 258880,
            "<|audio>": 256000,
            "<audio|>": 258883,
            "<|audio|>": 258881,
            "<|video|>": 258884,
        }
    for token, token_id in expected.items():
        assert tok.convert_tokens_to_ids(token) == token_id
    # The processors read these attributes.
    assert tok.image_token == spec.image_token
    assert tok.image_token_id == spec.id_of(spec.image_token)
    assert tok.audio_token_id == spec.id_of(spec.audio_token)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 7])
def test_newline_runs_are_single_tokens(fam_tok, k):
    _, tok = fam_tok
    ids = tok.encode("a" + "\n" * k + "b", add_special_tokens=False)
    assert ids[1:-1] == [106 + k]


def test_wrapper_newlines_merge_like_the_real_tokenizer(fam_tok):
    _, tok = fam_tok
    # "\n" followed by a "\n\n" wrapper becomes one "\n\n\n" token; two wrappers → "\n\n\n\n".
    assert tok.encode("x\n" + "\n\n", add_special_tokens=False)[1:] == [109]
    assert tok.encode("\n\n" + "\n\n", add_special_tokens=False) == [110]


@pytest.mark.parametrize(
    "text", ["Hello, world!", "naïve café 😀 – 日本語", "tabs\tand\r\nlines", ""]
)
def test_any_text_round_trips(fam_tok, text):
    _, tok = fam_tok
    ids = tok.encode(text, add_special_tokens=False)
    assert tok.decode(ids) == text


def test_bos_added_once(fam_tok):
    _, tok = fam_tok
    assert tok.encode("hi")[0] == 2
    assert tok.encode("hi").count(2) == 1


def test_vocab_is_dense_up_to_embedding_rows(fam_tok):
    spec, tok = fam_tok
    assert len(tok) == spec.vocab_size


def test_newline_runs_1_to_300_split_as_googles_vocabulary_does(fam_tok):
    """The merges rank the longest left part first, as the real file's do, so a long run is
    cut into 31-newline pieces from the left: 32 newlines give [137, 107], not [122, 122]
    (the real file's ids for every run from 1 to 300: tests/models/test_vocabulary.py)."""
    _, tok = fam_tok
    for n in range(1, 301):
        full, rest = divmod(n, 31)
        expected = [137] * full + ([106 + rest] if rest else [])
        assert tok.encode("\n" * n, add_special_tokens=False) == expected, n


def test_special_tokens_end_newline_runs(fam_tok):
    spec, tok = fam_tok
    # Gemma 3n writes "\n\n" before each image run: the wrapper stays its own token.
    assert tok.encode("\n\n" + spec.boi_token, add_special_tokens=False) == [108, 255999]
    assert tok.encode(spec.eoi_token + "\n\n", add_special_tokens=False) == [
        spec.id_of(spec.eoi_token),
        108,
    ]
