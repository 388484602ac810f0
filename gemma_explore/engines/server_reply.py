"""What a server did, in one line: the one reading of a server's answer (or of its silence)
that the probe, the openai engine and its ``transcribe`` share.

Every request goes through :func:`bounded_client`: a total deadline per request (the
connection, the headers and the body together, not only each read), no redirect followed,
and at most :data:`MAX_REPLY_BYTES` read (a streamed answer: per line). Whatever goes
wrong becomes a :class:`ServerFault`: a kind, and one line in the user's words saying what
the server did and what to check (the port, the path ``/v1``, the model name), never a
traceback or an HTML page.

>>> fault_from_exception("http://127.0.0.1:9/v1", ConnectionRefusedError(111, "refused")).kind
'refused'
"""

from __future__ import annotations

import ast
import json
import re
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

__all__ = [
    "MAX_REPLY_BYTES",
    "MAX_PROMPT_TOKENS",
    "BoundedTransport",
    "DeadlinePassed",
    "ReplyTooLarge",
    "ServerFault",
    "bounded_client",
    "check_chat_answer",
    "error_message",
    "fault_from_exception",
    "fault_from_response",
    "read_json",
]

MAX_REPLY_BYTES = 4 * 2**20  # a chat answer is a few kB; nothing a server says needs more
# No prompt holds more tokens than this (Gemma's longest context is 256 Ki tokens): a
# larger usage.prompt_tokens is a broken count, not a prompt.
MAX_PROMPT_TOKENS = 2**22
CHECK = "check the port and that the URL ends in /v1"
NOT_VLLM = "not vLLM's OpenAI API"


@dataclass(frozen=True)
class ServerFault:
    """What a server did wrong: ``kind`` (one word, for code) and ``line`` (for people)."""

    kind: str  # refused, unreachable, closed, banner, tls, timeout, too_large, html,
    # not_json, broken_json, redirect, status, not_openai, no_usage, bad_usage, other_model
    line: str

    def __str__(self) -> str:
        return self.line


class DeadlinePassed(httpx.TimeoutException):
    """A request's total deadline passed (the openai SDK reports it as a timeout)."""


class ReplyTooLarge(httpx.TransportError):
    """An answer longer than the cap: reading stopped there."""


def _one_line(text: str, limit: int = 240) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _port(base: str) -> str:
    parts = urlsplit(base)
    return str(parts.port or (443 if parts.scheme == "https" else 80))


# ------------------------------------------------------------------- the bounded client


class _Capped(httpx.SyncByteStream):
    """The body, chunk by chunk, stopped at the cap (a stream's: per line) and at the
    request's deadline."""

    def __init__(self, inner: httpx.Response, cap: int, deadline: float, lines: bool) -> None:
        self._inner, self._cap, self._deadline, self._lines = inner, cap, deadline, lines

    def __iter__(self) -> Iterator[bytes]:
        held = 0
        for chunk in self._inner.stream:
            if time.monotonic() > self._deadline:
                raise DeadlinePassed("the answer was still arriving at the deadline")
            held = (
                len(chunk) - chunk.rfind(b"\n") - 1
                if self._lines and b"\n" in chunk
                else (held + len(chunk))
            )
            if held > self._cap:
                raise ReplyTooLarge(f"more than {self._cap} bytes")
            yield chunk

    def close(self) -> None:
        self._inner.close()


def _close_late(done: threading.Event, box: dict) -> None:
    """Close what an abandoned request gets, whenever it gets it."""
    done.wait()
    if "response" in box:
        box["response"].close()


class BoundedTransport(httpx.BaseTransport):
    """httpx's transport with a total deadline per request (``seconds``, and never past
    ``until``, a ``time.monotonic()`` instant) and a cap on the bytes read."""

    def __init__(
        self, seconds: float, *, until: float | None = None, cap: int = MAX_REPLY_BYTES
    ) -> None:
        self.seconds, self.until, self.cap = seconds, until, cap
        self._inner = httpx.HTTPTransport(retries=0)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = time.monotonic() + self.seconds
        if self.until is not None:
            deadline = min(deadline, self.until)
        box: dict[str, Any] = {}
        done = threading.Event()

        def work() -> None:
            try:
                box["response"] = self._inner.handle_request(request)
            except BaseException as exc:  # noqa: BLE001 - raised again below, in the caller
                box["error"] = exc
            finally:
                done.set()

        # The connection and the headers in a thread: a server that sends a byte a second
        # never trips a per-read timeout, so the deadline is kept here, as a whole.
        threading.Thread(target=work, daemon=True, name="gemma-explore-request").start()
        if not done.wait(max(deadline - time.monotonic(), 0.0)):
            threading.Thread(target=_close_late, args=(done, box), daemon=True).start()
            raise DeadlinePassed("no answer before the deadline", request=request)
        if "error" in box:
            raise box["error"]
        inner: httpx.Response = box["response"]
        lines = "text/event-stream" in inner.headers.get("content-type", "")
        declared = inner.headers.get("content-length", "")
        if not lines and declared.isdigit() and int(declared) > self.cap:
            inner.close()
            raise ReplyTooLarge(f"Content-Length {declared}", request=request)
        return httpx.Response(
            inner.status_code,
            headers=inner.headers,
            stream=_Capped(inner, self.cap, deadline, lines),
            extensions=inner.extensions,
            request=request,
        )

    def close(self) -> None:
        self._inner.close()


def bounded_client(
    seconds: float, *, until: float | None = None, cap: int = MAX_REPLY_BYTES
) -> httpx.Client:
    """An ``httpx.Client`` whose every request ends within ``seconds`` (and by ``until``),
    reads at most ``cap`` bytes, and follows no redirect (vLLM's API answers directly)."""
    return httpx.Client(
        transport=BoundedTransport(seconds, until=until, cap=cap),
        timeout=httpx.Timeout(seconds),
        follow_redirects=False,
    )


# ------------------------------------------------------------------- what went wrong


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _speaks_tls(base: str, seconds: float) -> bool:
    """Whether the host and port of ``base`` finish a TLS handshake (certificate unchecked:
    only the protocol is asked)."""
    parts = urlsplit(base)
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with socket.create_connection((parts.hostname, int(_port(base))), timeout=seconds) as s:
            with context.wrap_socket(s, server_hostname=parts.hostname):
                return True
    except (OSError, ValueError):
        return False


def _first_bytes(message: str) -> bytes | None:
    """The bytes h11 quotes in "illegal status line: bytearray(b'…')"."""
    found = re.search(r"bytearray\((b(['\"]).*\2)\)", message)
    if not found:
        return None
    try:
        return ast.literal_eval(found.group(1))
    except (ValueError, SyntaxError):
        return None


def _not_http(base: str, first: bytes) -> ServerFault:
    if first[:1] in (b"\x15", b"\x16") and first[1:2] == b"\x03":
        return ServerFault(
            "tls",
            f"the server at {base} answered in TLS: port {_port(base)} speaks HTTPS; start "
            "the URL with https://, or check the port",
        )
    shown = _one_line((first.decode("latin-1").strip().splitlines() or [""])[0], 60)
    return ServerFault(
        "banner",
        f"the server at {base} answered {shown!r}, which is not HTTP: something other than a "
        f"web server listens on port {_port(base)}; check the port",
    )


def _first_words(base: str, seconds: float) -> bytes:
    """The first bytes the host and port of ``base`` send back to a plain request (b"" for
    none within ``seconds``): what a server that closed on us says when asked directly."""
    parts = urlsplit(base)
    got = b""
    try:
        with socket.create_connection((parts.hostname, int(_port(base))), timeout=seconds) as s:
            s.sendall(f"GET {parts.path or '/'} HTTP/1.0\r\nHost: {parts.netloc}\r\n\r\n".encode())
            while len(got) < 64:
                chunk = s.recv(64)
                if not chunk:
                    break
                got += chunk
    except (OSError, ValueError):
        pass
    return got


def _closed(base: str, tls_check_s: float, midway: bool) -> ServerFault:
    if not midway and tls_check_s > 0 and urlsplit(base).scheme == "http":
        first = _first_words(base, tls_check_s / 2)
        if first and not first.startswith(b"HTTP/"):
            return _not_http(base, first)
    if urlsplit(base).scheme == "http" and tls_check_s > 0 and _speaks_tls(base, tls_check_s / 2):
        return ServerFault(
            "tls",
            f"the server at {base} closed the connection: port {_port(base)} speaks HTTPS "
            "(TLS), not plain HTTP; start the URL with https://, or check the port",
        )
    what = "in the middle of its answer" if midway else "without an answer"
    return ServerFault(
        "closed",
        f"the server at {base} closed the connection {what}, {NOT_VLLM}: check the port "
        "(an HTTPS port wants https://) and that the URL ends in /v1",
    )


def fault_from_exception(
    base: str, exc: BaseException, *, seconds: float | None = None, tls_check_s: float = 2.0
) -> ServerFault:
    """What a failed request says about the server at ``base``: connection refused, a
    banner, a TLS port, a close, a timeout (``seconds``: the deadline it had), an answer
    over the cap, a status error raised by the openai SDK. ``tls_check_s``: seconds a TLS
    handshake may take, tried once when a plain-HTTP connection is closed on us."""
    chain = list(_chain(exc))
    response = next((getattr(e, "response", None) for e in chain if _has_response(e)), None)
    if response is not None:
        try:
            fault = fault_from_response(base, response)
        except httpx.HTTPError as more:  # its body over the cap, or past the deadline
            chain = [more, *chain]
            fault = None
        if fault is not None:
            return fault
    for e in chain:
        fault = _connection_fault(base, e, seconds) or _answer_fault(base, e, tls_check_s)
        if fault is not None:
            return fault
    return ServerFault(
        "unreadable",
        f"the server at {base} gave an answer that could not be read "
        f"({type(exc).__name__}: {_one_line(exc, 100)}), {NOT_VLLM}: {CHECK}",
    )


def _connection_fault(base: str, e: BaseException, seconds: float | None) -> ServerFault | None:
    """What one exception of the chain says about the connection, or None."""
    text = str(e)
    if isinstance(e, ReplyTooLarge):
        return ServerFault(
            "too_large",
            f"the server at {base} sent more than {MAX_REPLY_BYTES // 2**20} MiB where "
            f"vLLM's answers are a few kB, {NOT_VLLM}: {CHECK}",
        )
    if isinstance(e, httpx.ConnectTimeout):
        return ServerFault(
            "timeout",
            f"no connection to {base} within {seconds or 0:g} s: check the host and the "
            "port, and that no firewall drops the connection",
        )
    if isinstance(e, httpx.TimeoutException | TimeoutError) or type(e).__name__ == (
        "APITimeoutError"
    ):
        took = f" within {seconds:g} s" if seconds else ""
        return ServerFault(
            "timeout",
            f"the server at {base} gave no complete answer{took}: check the port, and "
            'that vLLM has finished starting (its log says "Application startup complete")',
        )
    if isinstance(e, ConnectionRefusedError) or "connection refused" in text.lower():
        return ServerFault(
            "refused",
            f"nothing answered at {base}: the connection was refused, so no server listens "
            f"on port {_port(base)}; check the port, and that `vllm serve` is running",
        )
    if isinstance(e, ssl.SSLCertVerificationError):
        return ServerFault(
            "tls",
            f"the server at {base} has a certificate this machine does not trust "
            f"({_one_line(e.verify_message or e, 80)}): check the URL, or use its http:// port",
        )
    if isinstance(e, ssl.SSLError):
        return ServerFault(
            "tls",
            f"no TLS at {base} ({_one_line(e.reason or e, 60)}): port {_port(base)} speaks "
            "plain HTTP; start the URL with http://, or check the port",
        )
    if isinstance(e, httpx.ConnectError | socket.gaierror):
        return ServerFault(
            "unreachable",
            f"could not connect to {base} ({_one_line(text, 80)}): check the host and the port",
        )
    return None


def _answer_fault(base: str, e: BaseException, tls_check_s: float) -> ServerFault | None:
    """What one exception of the chain says about the answer (not HTTP, cut, a loop), or
    None."""
    text = str(e)
    if "illegal status line" in text or "invalid http" in text.lower():
        first = _first_bytes(text)
        if first is not None:
            return _not_http(base, first)
    if "without sending a response" in text:
        return _closed(base, tls_check_s, midway=False)
    if "without sending complete message body" in text or "incomplete chunked" in text:
        return _closed(base, 0, midway=True)
    if isinstance(e, ConnectionResetError | BrokenPipeError | httpx.ReadError):
        return _closed(base, tls_check_s, midway=False)
    if isinstance(e, httpx.TooManyRedirects):
        return ServerFault("redirect", f"the server at {base} redirects in a loop: {CHECK}")
    if isinstance(e, json.JSONDecodeError):
        return _broken_json(base, e)
    return None


def _has_response(e: BaseException) -> bool:
    return isinstance(getattr(e, "response", None), httpx.Response) and not isinstance(
        e, httpx.TransportError
    )


def _broken_json(base: str, e: json.JSONDecodeError) -> ServerFault:
    return ServerFault(
        "broken_json",
        f"the server at {base} answered with JSON that is cut short or broken "
        f"({e.msg}, character {e.pos}), not a whole OpenAI answer: {CHECK}",
    )


def error_message(body: bytes) -> str:
    """The message of an OpenAI-style JSON error, on one line (or the start of the body)."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return _one_line(body.decode(errors="replace"), 200)
    err = data.get("error", data) if isinstance(data, dict) else data
    msg = err.get("message", err) if isinstance(err, dict) else err
    return _one_line(msg, 300)


def _status_advice(status: int, message: str) -> str:
    if status == 404 and "model" in message.lower():
        return "check the model name (GET /v1/models lists the served ones)"
    if status == 404:
        return "check that the URL ends in /v1"
    if status in (401, 403):
        return "check the API key (OPENAI_API_KEY)"
    return ""


def fault_from_response(base: str, response: httpx.Response) -> ServerFault | None:
    """What an answer's status and body say is wrong (a redirect, an HTML page, a body
    that is not JSON, an error status), or None for a 2xx answer in JSON."""
    status, kind = response.status_code, response.headers.get("content-type", "")
    phrase = f"HTTP {status}"
    if status in HTTPStatus._value2member_map_:
        phrase += f" ({HTTPStatus(status).phrase})"
    if 300 <= status < 400:
        where = response.headers.get("location", "")
        to = urljoin(str(response.request.url), where) if where else "nowhere"
        loop = " (itself: a loop)" if to == str(response.request.url) else ""
        return ServerFault(
            "redirect",
            f"the server at {base} answered {phrase}, a redirect to {_one_line(to, 80)}{loop}, "
            f"where vLLM's API answers directly: {CHECK}",
        )
    body = response.read()  # up to the cap: over it, ReplyTooLarge
    start = body.lstrip()[:15].lower()
    if "html" in kind or start.startswith((b"<!doctype", b"<html", b"<head", b"<body")):
        return ServerFault(
            "html", f"the server at {base} answered {phrase} with an HTML page, {NOT_VLLM}: {CHECK}"
        )
    try:
        json.loads(body)
    except json.JSONDecodeError as e:
        if status < 400 and ("json" in kind or start.startswith((b"{", b"["))):
            return _broken_json(base, e)
        shown = _one_line(body.decode(errors="replace"), 60) or "an empty body"
        return ServerFault(
            "not_json",
            f"the server at {base} answered {phrase} with {kind or 'a body'} that is not JSON "
            f"({shown!r}), {NOT_VLLM}: {CHECK}",
        )
    except UnicodeDecodeError:
        return ServerFault(
            "not_json", f"the server at {base} answered {phrase} with bytes, {NOT_VLLM}: {CHECK}"
        )
    if status >= 400:
        message = error_message(body)
        advice = _status_advice(status, message)
        return ServerFault(
            "status",
            f"the server at {base} answered {phrase}: {message}"
            + (f"; {advice}" if advice else ""),
        )
    return None


def read_json(base: str, response: httpx.Response) -> tuple[Any, ServerFault | None]:
    """(the JSON of a 2xx answer, None), or (None, what is wrong with the answer)."""
    fault = fault_from_response(base, response)
    if fault is not None:
        return None, fault
    return json.loads(response.content), None


def check_chat_answer(
    base: str, data: Any, *, model: str | None = None, usage: bool = False
) -> ServerFault | None:
    """What is wrong with a chat completion's JSON, or None: no ``choices``, an answer
    for another model than ``model``, a ``usage.prompt_tokens`` no prompt has (and, with
    ``usage``, none at all)."""
    choices = data.get("choices") if isinstance(data, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(first, dict) or not isinstance(first.get("message"), dict):
        shown = _one_line(json.dumps(data)[:60], 60)
        return ServerFault(
            "not_openai",
            f"the server at {base} answered JSON that is not a chat completion (no choices: "
            f"{shown}), {NOT_VLLM}: {CHECK}",
        )
    named = data.get("model")
    if model and isinstance(named, str) and named != model and not named.startswith(model + "-"):
        return ServerFault(
            "other_model",
            f"the server at {base} answered for the model {named!r} where {model!r} was asked: "
            f"check the model name (this server serves {named!r})",
        )
    counts = data.get("usage")
    tokens = counts.get("prompt_tokens") if isinstance(counts, dict) else None
    if tokens is None:
        if not usage:
            return None
        return ServerFault(
            "no_usage",
            f"the server at {base} answered without usage.prompt_tokens, so no cost can be "
            f"read (vLLM always counts the prompt), {NOT_VLLM}: {CHECK}",
        )
    if (
        isinstance(tokens, bool)
        or not isinstance(tokens, int)
        or not 0 < tokens <= MAX_PROMPT_TOKENS
    ):
        return ServerFault(
            "bad_usage",
            f"the server at {base} counted usage.prompt_tokens = {_one_line(tokens, 30)}, which "
            f"no prompt has (1 to {MAX_PROMPT_TOKENS:,}), {NOT_VLLM}: {CHECK}",
        )
    return None
