"""gemma_explore's web demo, from a checkout: ``python demo_app.py [--model …] [--port …]``.

The demo lives in the package (:mod:`gemma_explore.app.demo`, also ``gemma-explore demo``
and ``python -m gemma_explore.app``); this file only calls it.
"""

from __future__ import annotations

import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from gemma_explore.app.demo import main  # noqa: E402

if __name__ == "__main__":
    main()
