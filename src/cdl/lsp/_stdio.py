"""How ``cdl lsp`` reads its client over stdio: on the request loop itself.

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
on (a regular file) is read as pygls reads it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import threading
from typing import BinaryIO

from pygls.io_ import StdoutWriter, run_async
from pygls.server import JsonRPCServer

logger = logging.getLogger(__name__)

#: The longest header line read (a line of ``Content-Length: ...``); a body
#: is read whole whatever its length.
_HEADER_LIMIT = 1 << 16


def waitable(stream: BinaryIO) -> bool:
    """Whether the event loop can wait on ``stream``: a pipe or a socket
    (what an editor gives a language server), not a regular file."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def serve_stdio(server: JsonRPCServer, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Serve ``server`` on ``stdin`` (which must be :func:`waitable`) and
    ``stdout`` until the client ends it (``exit``, or the end of stdin)."""
    server.protocol.set_writer(StdoutWriter(stdout))
    try:
        asyncio.run(_read(server, stdin))
    except BrokenPipeError:
        logger.error("cdl lsp: the connection to the client is lost; shutting down")
    except (KeyboardInterrupt, SystemExit):  # SystemExit: pygls ends the process at ``exit``
        pass
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]  # (pygls leaves it untyped)


async def _read(server: JsonRPCServer, stdin: BinaryIO) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_HEADER_LIMIT, loop=loop)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), stdin)
    # Never set: the loop ends at the end of stdin, or with the process at ``exit``.
    running = threading.Event()
    await run_async(stop_event=running, reader=reader, protocol=server.protocol, logger=logger, error_handler=server.report_server_error)
