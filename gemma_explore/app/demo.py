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

__all__ = ["main", "parse_args", "port_busy"]

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

    ``main(["--help"])`` prints its flags.
    """
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    args = parse_args(argv)
    require_gradio()
    from gemma_explore.app.ui import launch  # gradio: only once the flags are good

    busy = port_busy(args.host, args.port)
    if busy:
        raise SystemExit(busy)
    try:
        launch(
            args.model, engine=args.engine, base_url=args.base_url, host=args.host, port=args.port
        )
    except OSError as exc:  # taken between the check and the launch, or not ours to bind
        why = port_busy(args.host, args.port) or f"The demo could not start: {exc}"
        raise SystemExit(why) from None


def port_busy(host: str, port: int) -> str | None:
    """One line naming a free port to use instead, when ``host:port`` cannot be bound
    (gradio's own message would name GRADIO_SERVER_PORT, which the demo's --port
    overrides); None when it is free.

    >>> port_busy("127.0.0.1", 0) is None
    True
    """
    import socket

    def free(p: int) -> bool:
        with socket.socket() as s:
            try:
                s.bind((host, p))
            except OSError:
                return False
            return True

    if free(port):
        return None
    other = next((p for p in range(port + 1, port + 50) if free(p)), port + 1)
    return (
        f"Port {port} on {host} is in use (another demo?). Start this one on another port: "
        f"make demo PORT={other}, or gemma-explore demo --port {other}."
    )


def require_gradio() -> None:
    """Exit with one line that says what to install when gradio is missing (a plain
    ``pip install gemma-explore`` has no demo extra).

    >>> require_gradio()  # nothing to say where gradio is installed
    """
    import importlib.util

    if importlib.util.find_spec("gradio") is None:
        raise SystemExit(
            "The demo needs gradio, which this environment lacks: "
            "pip install 'gemma-explore[demo]' (or run `make demo` in a clone)."
        )
