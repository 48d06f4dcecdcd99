"""``cdl lsp`` over stdio as an editor starts it, run as installed: the
client's messages read on the request loop when stdin is a pipe
(``cdl.lsp._stdio``), a large message whole, and as pygls reads them when
stdin is a regular file (all read at once: the session ends before the
hover is answered); either way the server answers, and ends at ``exit``
with 0 after ``shutdown``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import IO, Any, cast

import pytest

pytest.importorskip("pygls")

from synthetic import generate


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _opening(uri: str, text: str, line: int) -> bytes:
    """Open ``text`` at ``uri`` and hover at ``line`` (which waits for its first analysis)."""
    messages: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "cdl", "version": 1, "text": text}}},
        {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {"textDocument": {"uri": uri}, "position": {"line": line, "character": 6}}},
    ]
    return b"".join(_frame(message) for message in messages)


#: What ends the session, once the hover is answered.
_ENDING = _frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}) + _frame({"jsonrpc": "2.0", "method": "exit"})


def _answer(out: IO[bytes], wanted: int) -> dict[str, Any]:
    """The response to request ``wanted``, read from ``out`` (the server's stdout), skipping the rest."""
    while True:
        length = 0
        while (header := out.readline()) not in (b"\r\n", b""):
            if header.lower().startswith(b"content-length:"):
                length = int(header.split(b":")[1])
        assert length, "the server ended its output"
        message = json.loads(out.read(length))
        if message.get("id") == wanted and "method" not in message:
            return cast("dict[str, Any]", message)


def _run(uri: str, text: str, line: int, stdin: IO[bytes] | None) -> None:
    """Run ``cdl lsp`` as installed, the session written to ``stdin`` (a
    file already holding the opening, and the ending once the hover is
    answered), or to a pipe."""
    server = subprocess.Popen(
        [sys.executable, "-m", "cdl", "lsp"], stdin=stdin or subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert server.stdout is not None and server.stderr is not None
    try:
        if server.stdin is not None:
            server.stdin.write(_opening(uri, text, line))
            server.stdin.flush()
        assert "capabilities" in _answer(server.stdout, 1)["result"]
        hover = _answer(server.stdout, 2)
        if stdin is None:
            assert "/" in hover["result"]["contents"]["value"]  # the 1.3 MB text read whole and analysed
        else:  # a file is all read at once: the session ends before the hover can be answered
            assert hover.get("result") or hover["error"]["code"] == -32800
        if server.stdin is not None:
            server.stdin.write(_ENDING)
            server.stdin.close()
            assert _answer(server.stdout, 3)["result"] is None
        assert server.wait(60) == 0
        assert b"Traceback" not in server.stderr.read()
    finally:
        server.kill()
        server.wait()


@pytest.fixture
def system(tmp_path: Path) -> tuple[str, str, int]:
    """A system of 2,000 components (about 1.3 MB, one didOpen), its URI and the line of a ``<name>`` in it."""
    _, path = generate(2000, tmp_path)
    text = Path(path).read_text(encoding="utf-8")
    line = text[: text.index("<name>", len(text) // 2)].count("\n")
    return Path(path).resolve().as_uri(), text, line


def test_a_pipe_is_read_on_the_request_loop(system: tuple[str, str, int]) -> None:
    _run(*system, None)


def test_a_regular_file_is_read_as_pygls_reads_it(system: tuple[str, str, int], tmp_path: Path) -> None:
    uri, text, line = system
    messages = tmp_path / "messages"
    messages.write_bytes(_opening(uri, text, line) + _ENDING)
    with messages.open("rb") as stdin:
        _run(uri, text, line, stdin)


def _through_a_pipe(data: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "cdl", "lsp"], input=data, capture_output=True, timeout=120)


def test_a_line_too_long_for_a_header_is_passed_over() -> None:
    """A line longer than any header (200 KB, more than the reader holds for
    one) is passed over as pygls passes over a line it does not know, and
    the message after it is answered."""
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {}}}
    done = _through_a_pipe(b"X" * 200_000 + b"\r\n\r\n" + _frame(initialize) + _ENDING)
    assert done.returncode == 0 and b"Traceback" not in done.stderr
    assert b'"capabilities"' in done.stdout and b'"id": 3' in done.stdout


def test_a_body_that_stdin_ends_inside_ends_the_server_cleanly() -> None:
    done = _through_a_pipe(b'Content-Length: 100000\r\n\r\n{"jsonrpc": "2.0", "id": 1, "meth')
    assert done.returncode == 0 and b"Traceback" not in done.stderr
    # One line in the client's log, and the client told.
    assert b"cdl lsp: Unable to handle message: Unterminated string" in done.stderr
    assert b"window/showMessage" in done.stdout
