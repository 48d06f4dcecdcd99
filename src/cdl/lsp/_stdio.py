"""How ``cdl lsp`` reads its client over stdio: on the request loop itself,
paced while an analysis runs.

Entry point: :func:`serve_stdio`, which :meth:`CdlServer.start_io
<cdl.lsp._session.CdlServer.start_io>` runs. pygls reads stdin from a thread
of its pool, one handoff per read: a message's header line, the blank line
and its body each go to that thread and come back to the request loop
through a future, three round trips a message, each taking the interpreter
from the analysis worker and giving it back (docs/performance.md, "Reading
the client on the request loop"). Here the loop waits on stdin itself
(asyncio's pipe transport, ``asyncio.StreamReader``): a message that
arrived whole is read in one step, and pygls's own message loop
(``pygls.io_.run_async``) handles it as before. A stdin the loop cannot wait
on (a regular file) is read as pygls reads it, unpaced.

While an analysis runs in the worker, the request loop and the worker share
one interpreter, and a client that sends its requests back to back takes as
much of it as it is given. Before it reads the next message, the loop waits
until its own CPU time since the analysis began is within
:data:`REQUEST_SHARE` of the time since, at most :data:`PACE_WAIT` a message
(:class:`Paced`; docs/performance.md, "Pacing the requests during an
analysis"): an editor's requests, far fewer, never wait, and a flood of them
leaves the analysis the rest.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import threading
import time
from collections.abc import Awaitable, Callable
from typing import BinaryIO, Protocol

from pygls.io_ import StdoutWriter, run_async
from pygls.server import JsonRPCServer

logger = logging.getLogger(__name__)


class _OneLine(logging.Filter):
    """What pygls's message loop logs of a message it could not read or
    handle, on one line and without a traceback: the client's log is read by
    people, and the client is told of it too (``window/showMessage``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info is not None and record.exc_info[1] is not None:
            record.msg, record.args = f"cdl lsp: {record.getMessage()}: {record.exc_info[1]}", None
            record.exc_info = record.exc_text = None
        return True


logger.addFilter(_OneLine())

#: The longest header line read (a line of ``Content-Length: ...``); a body
#: is read whole whatever its length.
_HEADER_LIMIT = 1 << 16
#: What a header line too long to be one reads as: a line no header matches,
#: which pygls's message loop passes over (as it does a long line read whole).
_NO_HEADER = b"?\r\n"
#: The request loop's share of the interpreter while an analysis runs, once
#: the client's requests come faster than they are answered.
REQUEST_SHARE = 0.25
#: The longest a message waits for the request loop to be within its share
#: (seconds): well within what a request may take (0.1 s).
PACE_WAIT = 0.02


class Reader(Protocol):
    """What pygls's message loop reads from (``asyncio.StreamReader`` is one)."""

    def readline(self) -> Awaitable[bytes]: ...

    def readexactly(self, n: int) -> Awaitable[bytes]: ...


class Paced:
    """``reader``, the client's messages, each read once the request loop is
    within its share while ``analysing()`` (see the module docstring). What
    the client sends is read as pygls reads stdin: a line too long to be a
    header is passed over, and a body that stdin ends inside is what came of it.
    ``clock``, ``cpu`` (the loop thread's CPU time) and ``sleep`` are the
    time's, unless a test gives its own."""

    def __init__(
        self,
        reader: Reader,
        analysing: Callable[[], bool],
        *,
        clock: Callable[[], float] = time.monotonic,
        cpu: Callable[[], float] = time.thread_time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._reader, self._analysing = reader, analysing
        self._clock, self._cpu, self._sleep = clock, cpu, sleep
        #: The time and the loop's CPU time when the loop first saw the analysis under way.
        self._since: tuple[float, float] | None = None
        #: Whether the next line read starts a message.
        self._starting = True

    async def readline(self) -> bytes:
        if self._starting:
            self._starting = False
            await self._pace()
        try:
            return await self._reader.readline()
        except ValueError:  # a line longer than any header: what it read of it is dropped
            return _NO_HEADER

    async def readexactly(self, n: int) -> bytes:
        self._starting = True
        try:
            return await self._reader.readexactly(n)
        except asyncio.IncompleteReadError as ended:  # stdin ended inside a body: what came of it
            return ended.partial

    async def _pace(self) -> None:
        if not self._analysing():
            self._since = None
            return
        now, cpu = self._clock(), self._cpu()
        if self._since is None:
            self._since = (now, cpu)
            return
        over = (cpu - self._since[1]) / REQUEST_SHARE - (now - self._since[0])
        if over > 0:
            await self._sleep(min(over, PACE_WAIT))


def waitable(stream: BinaryIO) -> bool:
    """Whether the event loop can wait on ``stream``: a pipe or a socket
    (what an editor gives a language server), not a regular file."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def serve_stdio(server: JsonRPCServer, stdin: BinaryIO, stdout: BinaryIO, analysing: Callable[[], bool]) -> None:
    """Serve ``server`` on ``stdin`` (which must be :func:`waitable`) and
    ``stdout`` until the client ends it (``exit``, or the end of stdin),
    paced while ``analysing()``."""
    server.protocol.set_writer(StdoutWriter(stdout))
    try:
        asyncio.run(_read(server, stdin, analysing))
    except BrokenPipeError:
        logger.error("cdl lsp: the connection to the client is lost; shutting down")
    except (KeyboardInterrupt, SystemExit):  # SystemExit: pygls ends the process at ``exit``
        pass
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]  # (pygls leaves it untyped)


async def _read(server: JsonRPCServer, stdin: BinaryIO, analysing: Callable[[], bool]) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_HEADER_LIMIT, loop=loop)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), stdin)
    # Never set: the loop ends at the end of stdin, or with the process at ``exit``.
    running = threading.Event()
    paced = Paced(reader, analysing)
    await run_async(stop_event=running, reader=paced, protocol=server.protocol, logger=logger, error_handler=server.report_server_error)
