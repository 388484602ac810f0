"""The stand-in tokenizer of the tiny offline bundles.

The package ships no Gemma vocabulary (262 144 text pieces, under the Gemma Terms of
Use): the user fetches Google's with ``gemma-explore tokenizer fetch``
(:mod:`gemma_explore.models.vocabulary`). Until then (offline, or by choice) the
tiny bundles use a tokenizer built from transformers' own ``GemmaTokenizer`` class
(BPE with byte fallback, spaces as "▁") over a small vocabulary that keeps what the
token-expansion logic depends on:

* every special token string at its **real id** (``<start_of_image>`` = 255999, …);
* newline runs ``"\\n"`` … ``"\\n" * 31`` as single tokens at their real ids 107 …,
  produced by BPE merges exactly like the released tokenizer, so Gemma 3n's
  ``"\\n\\n"`` wrappers merge with neighbouring newlines as they do for real, and a
  longer run splits as it does for real (31-newline pieces from the left, checked for
  every run of 1 to 300 against Google's file);
* printable ASCII as single characters and byte fallback (``<0x00>`` … ``<0xFF>``)
  for everything else, so any text round-trips;
* inert ``<unused…>`` fillers so that ids are dense up to the model's vocabulary.

Text is therefore cut into characters, not words: token *counts* for plain text are
larger than with the real tokenizer, but every multimodal count is exact.

>>> from gemma_explore.models.tokenizer import build_stand_in_tokenizer
>>> tok = build_stand_in_tokenizer("gemma4")
>>> tok.convert_tokens_to_ids("<|image|>")
258880
"""

from __future__ import annotations

import string

from gemma_explore.facts.families import FAMILIES, MAX_NEWLINE_RUN, FamilySpec, get_family

__all__ = ["build_stand_in_tokenizer", "CHAT_TEMPLATES", "chat_template", "named_tokens"]

# Ids for the byte-fallback pieces and single characters (free ids in both families).
_BYTE_BASE_ID = 238  # <0x00> … <0xFF> take 238 … 493
_CHAR_BASE_ID = 600  # printable ASCII characters and "▁"


# Chat templates in the released format, written from each family's own tokens. Images,
# clips and videos become one placeholder each; the processor expands them. Gemma 3n's
# tokenizer adds <bos> on encoding; Gemma 4's text already starts with it, which is why
# encoding its output with add_special_tokens=True gives a double BOS (vLLM's own rule for
# which family adds one: plans/vllm.py, vllm_adds_bos).
# Unified shares Gemma 4's tokens and turn format (transformers ships no template for it).
def chat_template(family: str | FamilySpec) -> str:
    """The Jinja chat template of a family's stand-in tokenizer: turns opened and closed
    by the family's turn tokens, one placeholder per image, clip or (if it has video) video.

    >>> "<|video|>" in chat_template("gemma4"), "video" in chat_template("gemma3n")
    (True, False)
    """
    spec = get_family(family)
    video = (
        f"{{%- elif item['type'] == 'video' -%}}{{{{ '{spec.video_token}' }}}}"
        if spec.video_token
        else ""
    )
    return (
        "{{ bos_token }}"
        "{%- for message in messages -%}"
        "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
        f"{{{{ '{spec.turn_start}' + role + '\n' }}}}"
        "{%- if message['content'] is string -%}{{ message['content'] | trim }}"
        "{%- else -%}{%- for item in message['content'] -%}"
        f"{{%- if item['type'] == 'image' -%}}{{{{ '{spec.image_token}' }}}}"
        f"{{%- elif item['type'] == 'audio' -%}}{{{{ '{spec.audio_token}' }}}}"
        f"{video}"
        "{%- elif item['type'] == 'text' -%}{{ item['text'] | trim }}"
        "{%- endif -%}{%- endfor -%}{%- endif -%}"
        f"{{{{ '{spec.turn_end}\n' }}}}"
        "{%- endfor -%}"
        f"{{%- if add_generation_prompt -%}}{{{{ '{spec.turn_start}model\n' }}}}{{%- endif -%}}"
    )


CHAT_TEMPLATES = {name: chat_template(spec) for name, spec in FAMILIES.items()}


def _vocab_and_merges(spec) -> tuple[dict[str, int], list[tuple[str, str]]]:
    vocab: dict[str, int] = dict(spec.token_ids)
    used = set(vocab.values())
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = _BYTE_BASE_ID + b
    chars = [c for c in string.printable if c not in "\n\r\x0b\x0c "] + ["▁", "\r"]
    for i, c in enumerate(chars):
        vocab[c] = _CHAR_BASE_ID + i
    used = set(vocab.values())
    assert len(used) == len(vocab), "stand-in vocabulary ids collide"
    # Newline runs merge the way the real BPE merges them: any two adjacent runs whose
    # total is at most 31 newlines merge, so every run up to 31 becomes one token. The
    # order is the real file's: the merge with the longest left part ranks first (then the
    # longest right part), so a longer run is cut into 31-newline pieces from the left
    # (32 newlines: [137, 107]), exactly as Google's vocabulary cuts every run of 1 to 300.
    pairs = [(i, k - i) for k in range(2, MAX_NEWLINE_RUN + 1) for i in range(1, k)]
    pairs.sort(key=lambda p: (-p[0], -p[1]))
    merges: list[tuple[str, str]] = [("\n" * left, "\n" * right) for left, right in pairs]
    # Inert fillers make the ids dense up to the embedding table's size.
    for i in range(spec.vocab_size):
        if i not in used:
            vocab[f"<unused{i}>"] = i
    return vocab, merges


def named_tokens(spec: FamilySpec) -> dict[str, str]:
    """The multimodal tokens a family's tokenizer carries as attributes
    (``tokenizer.image_token_id``, …), which the real processors read.

    >>> named_tokens(get_family("gemma4"))["image_token"]
    '<|image|>'
    """
    return {
        "image_token": spec.image_token,
        "boi_token": spec.boi_token,
        "eoi_token": spec.eoi_token,
        "audio_token": spec.audio_token,
        "boa_token": spec.boa_token,
        "eoa_token": spec.eoa_token,
    }


def build_stand_in_tokenizer(family: str | FamilySpec):
    """Build the stand-in ``GemmaTokenizer`` of a family (the real special-token strings
    and ids, a byte-level filler vocabulary)."""
    from transformers import GemmaTokenizer

    spec = get_family(family)
    vocab, merges = _vocab_and_merges(spec)
    named = named_tokens(spec)
    tok = GemmaTokenizer(
        vocab=vocab,
        merges=merges,
        extra_special_tokens=named,
        add_bos_token=True,
        add_eos_token=False,
        chat_template=chat_template(spec),
        model_max_length=131_072,
    )
    others = [spec.turn_start, spec.turn_end]
    if spec.video_token:
        others.append(spec.video_token)
    tok.add_special_tokens({"extra_special_tokens": others}, replace_extra_special_tokens=False)
    return tok
