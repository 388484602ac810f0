"""The demo's handlers in one import (``from tests.app import handlers as h``):
plain functions, no gradio import, easy to test. Each concept lives in its own module:

* :mod:`~gemma_explore.app.bundles`: the one bundle cache and the model notice;
* :mod:`~gemma_explore.app.tabs`: the Image, Audio, Video and Prompt layout tabs;
* :mod:`~gemma_explore.app.chat`: the Chat tab (a streamed turn, the waiting turn's counts);
* :mod:`~gemma_explore.app.attachments`: the chat box's files, read by suffix;
* :mod:`~gemma_explore.app.outputs`: one frozen result per tab, and how text is written.

Every handler catches bad input and returns a message instead of raising, so one bad
upload never stops the app from answering the next request.

>>> from tests.app import handlers as h
>>> h.image_tab is h.tabs.image_tab
True
"""

from __future__ import annotations

from gemma_explore.app import attachments, bundles, chat, tabs
from gemma_explore.app import outputs as results
from gemma_explore.app.bundles import (
    RANDOM_WEIGHTS_NOTICE,
    analysis_bundle,
    configure,
    get_bundle,
    model_notice,
    random_weights_notice,
)
from gemma_explore.app.chat import chat_preview, chat_stream, turn_counts
from gemma_explore.app.outputs import TabResult, error_text, md
from gemma_explore.app.tabs import audio_tab, image_tab, layout_tab, video_tab
from gemma_explore.facts.families import DEFAULT_FAMILY

__all__ = [
    "DEFAULT_BUDGET",
    "RANDOM_WEIGHTS_NOTICE",
    "TabResult",
    "analysis_bundle",
    "attachments",
    "audio_tab",
    "bundles",
    "chat",
    "chat_preview",
    "chat_stream",
    "configure",
    "error_text",
    "get_bundle",
    "image_tab",
    "layout_tab",
    "md",
    "model_notice",
    "random_weights_notice",
    "results",
    "tabs",
    "turn_counts",
    "video_tab",
]

# The default family's default budget, for tests that name it. The handlers' own default
# is None, which means the loaded family's default.
DEFAULT_BUDGET = DEFAULT_FAMILY.image.default_budget
