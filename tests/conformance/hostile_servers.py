"""Loopback servers that each misbehave one way: the corpus every surface that talks to a
server (the probe, ``ge.load(..., engine="openai")``, ``transcribe``, the CLI and the demo)
must answer in one line, within its deadline and under a memory cap.

Each server listens on 127.0.0.1 at a free port, runs in daemon threads and stops (its
open connections closed) when its ``with`` block ends. It speaks raw bytes on the socket,
so the cases HTTP servers never produce (a banner, a close at once, one byte a second, a
TLS port) are as easy as the ones they do. The honest counting server is
``faulty_server.py``; the 5xx stand-in of the engine tests is ``tests/fake_server.py``.

Cases (``HOSTILE``; ``html_<code>`` for every 4xx and 5xx status of ``http.HTTPStatus``):

- ``html_<code>``: every request answered with that status and an HTML error page, the
  page ``python -m http.server`` writes (``http.server.DEFAULT_ERROR_MESSAGE``);
- ``banner``: an SSH server's banner, then its refusal of the request, then a close;
- ``close``: the connection closed at once; ``silent``: accepted, never answered;
- ``drip``: a whole, valid answer sent one byte a second;
- ``huge``: a 100 MB body (no Content-Length: it ends when the connection closes);
- ``truncated_json``, ``no_usage``, ``negative_tokens``, ``absurd_tokens``,
  ``other_model``: a valid model list, then answers whose JSON is cut, lacks ``usage``,
  counts ``prompt_tokens`` as -7 or 10**15, or names another model;
- ``redirect_loop``: every request redirected to itself (HTTP 302);
- ``tls``: an HTTPS port (a self-signed certificate made at test time) spoken to in plain
  HTTP.
"""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http import HTTPStatus
from http.server import DEFAULT_ERROR_MESSAGE
from pathlib import Path

MODEL = "google/gemma-4-E4B-it"  # the model the JSON servers list (the tests ask for it)
OTHER = "meta-llama/Llama-3.1-8B-Instruct"  # the model other_model answers for
BANNER = b"SSH-2.0-OpenSSH_9.6\r\n"
HUGE_BYTES = 100 * 2**20
ERROR_STATUSES = tuple(s for s in HTTPStatus if 400 <= s.value <= 599)
HOSTILE = (
    *(f"html_{s.value}" for s in ERROR_STATUSES),
    "banner",
    "close",
    "silent",
    "drip",
    "huge",
    "truncated_json",
    "no_usage",
    "negative_tokens",
    "absurd_tokens",
    "redirect_loop",
    "other_model",
    "tls",
)
# One of each kind, for the slower surfaces (the CLI's and the demo's tests run these).
REPRESENTATIVE = tuple(c for c in HOSTILE if not c.startswith("html_")) + ("html_404", "html_501")


def assert_one_line(line: str, url: str) -> None:
    """What every surface must show for a hostile server: one line, in words, naming the
    server's address and what to check; no HTML page, no traceback."""
    assert line and "\n" not in line and "\r" not in line, line
    assert "<html" not in line.lower() and "<!doctype" not in line.lower(), line
    assert "Traceback" not in line and 'File "' not in line, line
    assert url in line, line
    assert "check" in line or "https://" in line, line


def _reply(status: int, body: bytes, kind: str = "application/json", extra: str = "") -> bytes:
    phrase = HTTPStatus(status).phrase
    head = (
        f"HTTP/1.1 {status} {phrase}\r\nContent-Type: {kind}\r\n"
        f"Content-Length: {len(body)}\r\n{extra}Connection: close\r\n\r\n"
    )
    return head.encode() + body


def _html_error(status: int) -> bytes:
    s = HTTPStatus(status)
    page = DEFAULT_ERROR_MESSAGE % {
        "code": s.value,
        "message": s.phrase,
        "explain": s.description,
    }
    return _reply(status, page.encode(), "text/html;charset=utf-8")


def _chat(case: str, asked: str) -> dict:
    tokens = {"negative_tokens": -7, "absurd_tokens": 10**15}.get(case, 42)
    answer = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": OTHER if case == "other_model" else asked,  # vLLM echoes the name asked
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "x"},
                "finish_reason": "length",
            }
        ],
        "usage": {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1},
    }
    if case == "no_usage":
        del answer["usage"]
    return answer


def _json_case(case: str, method: str, path: str, body: bytes) -> bytes:
    """The answer of a JSON-level fault: a valid model list, then the faulty answer."""
    if method == "GET" and path.rstrip("/").endswith("/models"):
        listing = {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
        return _reply(200, json.dumps(listing).encode())
    if "/audio/" in path:  # OpenAI's transcription answer: {"text": …}
        data = {"text": "hello"}
        if case == "truncated_json":
            return _reply(200, json.dumps(data).encode()[:-4])
        return _reply(200, json.dumps(data).encode())
    try:
        asked = json.loads(body).get("model", MODEL)
    except (ValueError, AttributeError):
        asked = MODEL
    raw = json.dumps(_chat(case, asked)).encode()
    return _reply(200, raw[: len(raw) // 2] if case == "truncated_json" else raw)


def _read_request(conn: socket.socket) -> tuple[str, str, bytes]:
    """(method, path, body) of the request on ``conn``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return "", "", b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, *_ = (lines[0].split(" ") + ["", ""])[:3]
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(rest) < length:
        chunk = conn.recv(min(65536, length - len(rest)))
        if not chunk:
            break
        rest += chunk
    return method, path, rest


def _serve_one(case: str, conn: socket.socket, stop: threading.Event) -> None:
    """One connection, answered as ``case`` misbehaves."""
    if case == "close":
        return
    if case == "banner":
        conn.sendall(BANNER)
        conn.settimeout(2)
        try:
            conn.recv(1024)
            conn.sendall(b"Invalid SSH identification string.\r\n")
        except OSError:
            pass
        return
    if case == "silent":
        stop.wait()
        return
    method, path, body = _read_request(conn)
    if not method:
        return
    if case.startswith("html_"):
        conn.sendall(_html_error(int(case[5:])))
    elif case == "redirect_loop":
        conn.sendall(_reply(302, b"", extra=f"Location: {path}\r\n"))
    elif case == "drip":
        for byte in _json_case("drip", method, path, body):
            if stop.wait(1.0):
                return
            conn.sendall(bytes([byte]))
    elif case == "huge":
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
        )
        block, sent = b'{"pad": "' + b"x" * (2**20 - 9), 0
        while sent < HUGE_BYTES and not stop.is_set():
            conn.sendall(block)
            sent += len(block)
    else:
        conn.sendall(_json_case(case, method, path, body))


def _certificate(folder: str) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1: the ``cryptography`` package where it is
    installed, else the ``openssl`` command."""
    cert, key = str(Path(folder) / "cert.pem"), str(Path(folder) / "key.pem")
    try:
        import datetime

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        if not shutil.which("openssl"):
            import pytest

            pytest.skip("neither the cryptography package nor openssl is installed")
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"],
            check=True, capture_output=True,
        )  # fmt: skip
        return cert, key
    pk = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    built = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(pk.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(pk, hashes.SHA256())
    )
    Path(cert).write_bytes(built.public_bytes(serialization.Encoding.PEM))
    Path(key).write_bytes(
        pk.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert, key


@contextmanager
def hostile_server(case: str) -> Iterator[str]:
    """Serve ``case`` (one of ``HOSTILE``) on 127.0.0.1; yields the base URL ending in /v1,
    the way a user would type it."""
    assert case in HOSTILE, case
    stop = threading.Event()
    conns: list[socket.socket] = []
    tls = None
    with tempfile.TemporaryDirectory() as folder:
        if case == "tls":
            tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            tls.load_cert_chain(*_certificate(folder))
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        listener.settimeout(0.2)

        def handle(conn: socket.socket) -> None:
            try:
                if tls is not None:
                    conn = tls.wrap_socket(conn, server_side=True)  # refuses plain HTTP
                    conns.append(conn)
                    _serve_one("html_404", conn, stop)  # never reached over plain HTTP
                else:
                    _serve_one(case, conn, stop)
            except OSError:  # the client gave up (a cap, a deadline), or TLS refused it
                pass
            finally:
                conn.close()

        def accept() -> None:
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                except OSError:
                    return
                conns.append(conn)
                threading.Thread(target=handle, args=(conn,), daemon=True).start()

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        finally:
            stop.set()
            thread.join(2)
            listener.close()
            for conn in conns:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                conn.close()
            time.sleep(0)  # let the handlers see their sockets closed
