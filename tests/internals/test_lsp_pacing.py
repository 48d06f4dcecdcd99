"""While an analysis runs, ``cdl lsp``'s request loop reads the client's next
message once its own CPU time since the analysis began is within
``REQUEST_SHARE`` of the time since, waiting at most ``PACE_WAIT`` a message
(``cdl.lsp._stdio``): requests sent back to back take at most that share of
the interpreter from the analysis, and an editor's few never wait. Counted
with a clock and a CPU clock of the test's own."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from cdl.lsp._stdio import PACE_WAIT, REQUEST_SHARE, Paced, serve_stdio
from cdl.lsp.server import build_server


class _Messages:
    """A client's messages, each a header line, a blank line and a body."""

    def __init__(self) -> None:
        self.lines = 0

    async def readline(self) -> bytes:
        self.lines += 1
        return b"Content-Length: 2\r\n" if self.lines % 2 else b"\r\n"

    async def readexactly(self, n: int) -> bytes:
        return b"{}"


class _Clocks:
    def __init__(self) -> None:
        self.wall = self.cpu = 0.0
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.wall += seconds


def _reader(analysing: list[bool], clocks: _Clocks) -> tuple[Paced, _Messages]:
    messages = _Messages()
    return Paced(messages, lambda: analysing[0], clock=lambda: clocks.wall, cpu=lambda: clocks.cpu, sleep=clocks.sleep), messages


async def _message(reader: Paced) -> None:
    await reader.readline()
    await reader.readline()
    await reader.readexactly(2)


def test_requests_wait_for_their_share_only_while_an_analysis_runs() -> None:
    async def run() -> None:
        analysing, clocks = [False], _Clocks()
        reader, _ = _reader(analysing, clocks)
        for _ in range(5):  # no analysis: the loop may take all of the interpreter
            await _message(reader)
            clocks.cpu += 0.003
            clocks.wall += 0.003
        assert clocks.slept == []
        analysing[0] = True
        await _message(reader)  # the analysis is seen to run from here
        assert clocks.slept == []
        clocks.cpu += 0.003  # a request answered at once, the loop busy throughout
        clocks.wall += 0.003
        await _message(reader)
        # Its 3 ms is the share of 12 ms: the next message waits the other 9, once (not at its blank line).
        assert clocks.slept == [pytest.approx(0.003 / REQUEST_SHARE - 0.003)]
        clocks.cpu += 0.05  # a long answer: the wait is bounded
        clocks.wall += 0.05
        await _message(reader)
        assert clocks.slept[-1] == PACE_WAIT
        clocks.wall += 1.0  # a pause in the client's requests: the loop is within its share again
        await _message(reader)
        assert len(clocks.slept) == 2
        analysing[0] = False
        clocks.cpu += 0.05
        await _message(reader)
        assert len(clocks.slept) == 2
        analysing[0] = True  # a new analysis starts its own count
        await _message(reader)
        assert len(clocks.slept) == 2

    asyncio.run(run())


def test_an_editor_s_requests_never_wait() -> None:
    """A request every 50 ms (faster than anyone types), answered in 2 ms: never held back."""

    async def run() -> None:
        analysing, clocks = [True], _Clocks()
        reader, _ = _reader(analysing, clocks)
        for _ in range(100):
            await _message(reader)
            clocks.cpu += 0.002
            clocks.wall += 0.05
        assert clocks.slept == []

    asyncio.run(run())


def test_the_server_reads_its_client_through_the_pacing(tmp_path: Path) -> None:
    """``serve_stdio`` over a pipe: every message read goes through ``Paced``, which asks whether the worker analyses."""
    asked: list[bool] = []
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {}}}).encode()
    read_end, write_end = os.pipe()
    os.write(write_end, b"Content-Length: %d\r\n\r\n" % len(body) + body)
    os.close(write_end)  # then the end of stdin ends the server
    out = tmp_path / "out"
    with os.fdopen(read_end, "rb") as stdin, out.open("wb") as stdout:
        serve_stdio(build_server(), stdin, stdout, lambda: asked.append(True) or False)
    assert b'"capabilities"' in out.read_bytes()
    assert len(asked) == 2  # the message, and the end of stdin
