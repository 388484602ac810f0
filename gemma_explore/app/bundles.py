"""The demo's one bundle cache, and the model notice every tab keeps.

Each model is loaded once, with the options it was launched with (e.g.
``engine="vllm"``), and shared by every request and every tab.

>>> configure("tiny-gemma4", engine="hf")
>>> get_bundle("tiny-gemma4").family
'gemma4'
"""

from __future__ import annotations

import threading
from typing import Any

from gemma_explore.app.outputs import error_text
from gemma_explore.engines.load import load
from gemma_explore.facts.families import get_family
from gemma_explore.models.bundle import Bundle
from gemma_explore.models.vocabulary import LABEL_STAND_IN

__all__ = [
    "RANDOM_WEIGHTS_NOTICE",
    "analysis_bundle",
    "configure",
    "forget",
    "get_bundle",
    "is_loaded",
    "model_notice",
    "notice_of",
    "random_weights_notice",
    "warming",
]

_WARM_WAIT_S = 600  # the longest the notice waits for a warm-up before it shows anyway

RANDOM_WEIGHTS_NOTICE = (
    "⚠ **Tiny offline model with random weights**: its answers are noise. Everything before "
    "generation (resizing, patches, pooling, mel frames, token counts) is the real computation. "
    "Launch with `--model {checkpoint}` on a GPU for real answers."
)  # {checkpoint}: a released checkpoint of the chosen family (see random_weights_notice)


def random_weights_notice(family: Any) -> str:
    """The random-weights banner, naming a released checkpoint of ``family``.

    >>> "gemma-4-12B" in random_weights_notice("gemma4_unified")
    True
    """
    spec = get_family(family)
    hub = spec.hub_ids[-1] if spec.hub_ids else "a released checkpoint"
    return RANDOM_WEIGHTS_NOTICE.format(checkpoint=hub)


class _Bundles:
    """Loaded bundles by name, and how to load each one."""

    def __init__(self) -> None:
        self.options: dict[str, dict[str, Any]] = {}
        self.loaded: dict[str, Bundle] = {}
        self.lock = threading.Lock()
        self.warm: dict[str, threading.Event] = {}  # set once the model's warm-up is done

    def get(self, name: str) -> Bundle:
        with self.lock:
            if name not in self.loaded:
                self.loaded[name] = load(name, **self.options.get(name, {}))
            return self.loaded[name]


_BUNDLES = _Bundles()


def configure(name: str, **load_options: Any) -> None:
    """Remember how to load ``name`` (e.g. ``engine="vllm"``) for when it is first used."""
    _BUNDLES.options[name] = dict(load_options)


def get_bundle(name: str) -> Bundle:
    """Load (once) and return the bundle called ``name``."""
    return _BUNDLES.get(name)


def warming(name: str) -> threading.Event:
    """The event a warm-up of ``name`` sets when it is done; until then the model's
    notice (and so every tab, which renders after it) waits behind "Loading…"."""
    return _BUNDLES.warm.setdefault(name, threading.Event())


def is_loaded(name: str) -> bool:
    """Whether ``name`` is loaded already (no load is started).

    >>> is_loaded("no-such-model")
    False
    """
    return name in _BUNDLES.loaded


def analysis_bundle(name: str) -> Bundle:
    """The bundle whose processor and towers the analysis tabs run.

    vLLM and remote servers do not expose their processor's tensors or towers, so with
    those engines the tabs use the tiny transformers bundle of the same family: the
    same processor settings, hence the same counts (the notice says so)."""
    bundle = get_bundle(name)
    if bundle.model is not None and bundle.processor is not None:
        return bundle
    from gemma_explore.models.tiny import tiny_name

    return get_bundle(tiny_name(bundle.family))


def notice_of(bundle: Bundle) -> str:
    """The banner a tab shows beside its result: the random-weights warning, or nothing;
    and, while the text is counted by a stand-in vocabulary, that it counts characters."""
    counted = (
        " Text is counted by characters here: a stand-in until the real Gemma vocabulary "
        "is fetched."
        if bundle.vocabulary == LABEL_STAND_IN
        else ""
    )
    return (random_weights_notice(bundle.family) + counted) if bundle.is_random_weights else ""


def loaded_notice(name: str | None) -> str:
    """The notice of ``name`` if it is loaded (a failed tab never starts a load)."""
    loaded = _BUNDLES.loaded.get(name) if name is not None else None
    return notice_of(loaded) if loaded is not None else ""


def model_notice(name: str) -> str:
    """The banner for ``name``: the random-weights warning, or why it did not load.

    Tab errors never touch it, so a bad upload cannot hide that the answers are noise.
    While ``name`` warms up (:func:`warming`) it waits for the warm-up."""
    event = _BUNDLES.warm.get(name)
    if event is not None:
        event.wait(_WARM_WAIT_S)
    try:
        return notice_of(get_bundle(name))
    except Exception as exc:  # noqa: BLE001 - shown in the banner
        return error_text(exc)


def forget(name: str) -> None:
    """Drop ``name``'s bundle and load options (the next request loads it afresh).

    >>> forget("no-such-model")
    """
    with _BUNDLES.lock:
        _BUNDLES.options.pop(name, None)
        _BUNDLES.loaded.pop(name, None)
