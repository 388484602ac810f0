"""gemma_explore's web demo: see how Gemma 3n, Gemma 4 and Gemma 4 Unified turn inputs into tokens.

    python demo_app.py [--model tiny-gemma4|tiny-gemma3n|tiny-gemma4-unified|PATH|HUB_ID] [--backend hf]
                       [--host 127.0.0.1] [--port 7860]

Binds 127.0.0.1 unless told otherwise (GEMMA_EXPLORE_HOST / GEMMA_EXPLORE_PORT work
too), never creates share links, limits uploads to 20 MB, and serves requests through
gradio's queue two at a time so one GPU box can take a workshop in turn. The page is
served at once; the model loads in the background behind a notice.

The page itself is built in ``gemma_explore/app/ui.py``, one small function per tab.
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from gemma_explore.app.ui import CONCURRENCY, CSS, MAX_UPLOAD, build_app, launch  # noqa: E402

__all__ = ["CONCURRENCY", "CSS", "MAX_UPLOAD", "build_app", "launch", "main", "parse_args"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options; host and port fall back to GEMMA_EXPLORE_HOST / _PORT."""
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Example: gemma-explore demo --model tiny-gemma3n --port 7861",
    )
    parser.add_argument(
        "--model",
        metavar="NAME",
        default=os.environ.get("GEMMA_EXPLORE_MODEL", "tiny-gemma4"),
        help="tiny-gemma4, tiny-gemma3n or tiny-gemma4-unified (offline, random weights), a "
        "checkpoint folder or a hub id (default: %(default)s)",
    )
    parser.add_argument(
        "--backend",
        default=os.environ.get("GEMMA_EXPLORE_BACKEND", "hf"),
        choices=["hf", "vllm", "openai"],
        help="who generates answers: transformers (hf), vLLM in this process, or a running "
        "vllm serve (openai) (default: %(default)s)",
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        default=None,
        help="for --backend openai: the server, e.g. http://127.0.0.1:8000/v1",
    )
    parser.add_argument(
        "--host",
        default=os.environ.get("GEMMA_EXPLORE_HOST", "127.0.0.1"),
        help="address to listen on; 0.0.0.0 opens it to your network (default: %(default)s)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("GEMMA_EXPLORE_PORT", 7860)),
        help="port to listen on (default: %(default)s)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Serve the demo (the CLI calls this too)."""
    args = parse_args(argv)
    launch(args.model, backend=args.backend, base_url=args.base_url, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
