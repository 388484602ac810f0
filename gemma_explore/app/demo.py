"""gemma_explore's web demo: see how Gemma 3n, Gemma 4 and Gemma 4 Unified turn inputs into tokens.

    gemma-explore demo [--model tiny-gemma4|tiny-gemma3n|tiny-gemma4-unified|PATH|HUB_ID]
                       [--engine hf|vllm|openai] [--base-url URL] [--host 127.0.0.1] [--port 7860]

The same flags work as ``python -m gemma_explore.app`` and, in a checkout, ``python
demo_app.py``: all three call :func:`main`, which lives in the package so an installed
wheel has the demo too. Binds 127.0.0.1 unless told otherwise (GEMMA_EXPLORE_HOST /
GEMMA_EXPLORE_PORT work too), never creates share links, limits uploads to 20 MB, and
serves requests through gradio's queue two at a time. The page is served at once; the
model loads in the background behind a notice. The page itself is built in
:mod:`gemma_explore.app.ui`, one small function per tab.

>>> parse_args(["--model", "tiny-gemma3n"]).model
'tiny-gemma3n'
"""

from __future__ import annotations

import argparse
import os

from gemma_explore.engines.load import ENGINE_TABLE, ENGINES, engine_help

__all__ = ["main", "parse_args"]

EXAMPLE = "Example: gemma-explore demo --model tiny-gemma3n --port 7861"
_SERVERS = [b.name for b in ENGINE_TABLE.values() if b.takes_base_url]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options; host and port fall back to GEMMA_EXPLORE_HOST / _PORT.

    >>> parse_args([]).host
    '127.0.0.1'
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=EXAMPLE)
    parser.add_argument(
        "--model",
        metavar="NAME",
        default=os.environ.get("GEMMA_EXPLORE_MODEL", "tiny-gemma4"),
        help="tiny-gemma4, tiny-gemma3n or tiny-gemma4-unified (offline, random weights), a "
        "checkpoint folder or a hub id (default: %(default)s)",
    )
    parser.add_argument(
        "--engine",
        default=os.environ.get("GEMMA_EXPLORE_ENGINE", ENGINES[0]),
        choices=list(ENGINES),
        help=f"who generates answers: {engine_help()} (default: %(default)s)",
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        default=None,
        help=f"for a server engine ({', '.join(_SERVERS)}): its address, e.g. "
        "http://127.0.0.1:8000/v1",
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
    """Serve the demo until Ctrl+C (``gemma-explore demo`` calls this).

    >>> main(["--help"])                                    # doctest: +SKIP
    """
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    args = parse_args(argv)
    require_gradio()
    from gemma_explore.app.ui import launch  # gradio: only once the flags are good

    launch(args.model, engine=args.engine, base_url=args.base_url, host=args.host, port=args.port)


def require_gradio() -> None:
    """Exit with one line that says what to install when gradio is missing (a plain
    ``pip install gemma-explore`` has no demo extra).

    >>> require_gradio()  # doctest: +SKIP
    """
    import importlib.util

    if importlib.util.find_spec("gradio") is None:
        raise SystemExit(
            "The demo needs gradio, which this environment lacks: "
            "pip install 'gemma-explore[demo]' (or run `make demo` in a clone)."
        )
