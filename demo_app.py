"""gemma_explore's web demo, from a checkout: ``python demo_app.py [--model …] [--port …]``.

The demo lives in the package (:mod:`gemma_explore.app.demo`, also ``gemma-explore demo``
and ``python -m gemma_explore.app``); this file only calls it, and re-exports the names
older scripts imported from here.
"""

from __future__ import annotations

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from gemma_explore.app.demo import main, parse_args  # noqa: E402
from gemma_explore.app.ui import CONCURRENCY, CSS, MAX_UPLOAD, build_app, launch  # noqa: E402

__all__ = ["CONCURRENCY", "CSS", "MAX_UPLOAD", "build_app", "launch", "main", "parse_args"]

if __name__ == "__main__":
    main()
