"""The state of ``cdl lsp``: :class:`CdlServer` (the open documents and
their analyses, when they are analysed, positions in the client's encoding)
and :func:`guarded`, which keeps any input from stopping the server. The
handlers that use it are the ``features`` modules, composed by ``server``.

Where analysis happens (one place, for whoever moves it off the request
loop): the document and workspace handlers (``features.documents``,
``features.workspace``) ask for it, :meth:`CdlServer.analyse_now` (at once)
or :meth:`CdlServer.analyse_later` (once typing pauses); it runs in
:meth:`_buffers.Buffers.analyse`. What it found is consumed by
:attr:`CdlServer.show_problems` (``features.diagnostics`` publishes them),
by :meth:`CdlServer.prepare` (the navigation hovers need, built in a worker
thread), and by the requests, which take the last analysis through
:meth:`CdlServer.current` (analysing first when a change is pending).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from ._buffers import Analysis, Buffers
from ._engine import UTF16, Lines, __version__
from ._navigate import navigation_of
from ._written import Region

#: Seconds after the last change before a document is analysed again.
DEBOUNCE = 0.3
#: Seconds after an analysis before what hovers need is built from it, if
#: the document has not changed again by then.
PREPARE_AFTER = 0.05

logger = logging.getLogger("cdl.lsp.server")

T = TypeVar("T")


class Spot(Protocol):
    """A range on one line of one document (``_diagnostics.Place``, ``_navigate.Spot``)."""

    @property
    def url(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...


class CdlServer(LanguageServer):
    """The language server with the open documents and their analyses."""

    def __init__(self) -> None:
        super().__init__("cdl", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
        self.buffers = Buffers()
        self.encoding = UTF16
        self._timers: dict[str, asyncio.TimerHandle] = {}
        #: Held by the requests the navigation answers and by its preparation
        #: in a worker thread: one at a time.
        self.navigation = threading.Lock()
        self.stopping = False
        #: The workspace's root directory, which relative settings start from.
        self.root: str | None = None
        #: Shows the problems found in a document (its url; the URI to show
        #: them at, its own by default): set by ``features.diagnostics``.
        self.show_problems: Callable[[str, str | None], None] = lambda url, uri: None
        self._preparer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cdl-lsp-prepare")

    # -- positions --------------------------------------------------------------------

    def lines_of(self, url: str, analysis: Analysis | None = None) -> Lines | None:
        """The lines of ``url`` as the editor holds it (or as it was read)."""
        return self.buffers.lines(url, analysis)

    def range_of(self, spot: Spot, lines: Lines | None) -> types.Range:
        """``spot`` (on one line of the text ``lines`` splits) in the client's encoding."""
        return self._range(spot.line, spot.start, spot.line, spot.end, lines)

    def region_range(self, region: Region, lines: Lines | None) -> types.Range:
        """``region`` (over any number of lines) in the client's encoding."""
        return self._range(region.line, region.start, region.end_line, region.end, lines)

    def _range(self, line: int, start: int, end_line: int, end: int, lines: Lines | None) -> types.Range:
        if lines is None:  # the text cannot be read: code points stand
            return types.Range(types.Position(line, start), types.Position(end_line, end))
        first = lines.to_client(line, start, self.encoding)
        last = lines.to_client(end_line, end, self.encoding)
        return types.Range(types.Position(*first), types.Position(*last))

    def location_of(self, spot: Spot, analysis: Analysis | None = None) -> types.Location | None:
        uri = self.buffers.uri_of(spot.url)
        if uri is None:
            return None
        return types.Location(uri, self.range_of(spot, self.lines_of(spot.url, analysis)))

    def position(self, path: str, position: types.Position) -> tuple[int, int]:
        """(line, code-point column) of a client's ``position`` in the open document ``path``."""
        lines = self.buffers.lines(path)
        assert lines is not None  # an open document's text is held
        return lines.from_client(position.line, position.character, self.encoding)

    # -- analysis ---------------------------------------------------------------------

    def analyse_now(self, paths: Sequence[str] | set[str]) -> None:
        """Analyse the open documents ``paths`` and show what changed."""
        changed: set[str] = set()
        for path in sorted(paths):
            self._cancel(path)
            if path in self.buffers.texts:  # shown even when unchanged: the client sees it is current
                nothing: set[str] = set()
                changed |= guarded(self, f"analysing {path}", functools.partial(self.buffers.analyse, path), nothing) | {path}
        for url in sorted(changed):
            guarded(self, f"publishing the diagnostics of {url}", functools.partial(self.show_problems, url, None), None)
        loop = asyncio.get_running_loop()
        for path in paths:
            analysis = self.buffers.analyses.get(path)
            if analysis is not None:
                loop.call_later(PREPARE_AFTER, self.prepare, path, analysis)

    def analyse_later(self, paths: set[str]) -> None:
        """Analyse ``paths`` once no change has come for :data:`DEBOUNCE` seconds."""
        loop = asyncio.get_running_loop()
        for path in paths:
            self._cancel(path)
            self._timers[path] = loop.call_later(DEBOUNCE, self.analyse_now, [path])

    def _cancel(self, path: str) -> None:
        """Forget the analysis of ``path`` waiting for typing to pause, if any."""
        timer = self._timers.pop(path, None)
        if timer is not None:
            timer.cancel()

    def close(self, path: str, uri: str) -> None:
        """The client closed the open document ``path`` (at ``uri``): what the
        documents still open find in it is shown there, and they read it from
        disk now."""
        self._cancel(path)
        readers = self.buffers.readers_of(path) - {path}
        urls = self.buffers.drop(path)
        self.show_problems(path, uri)
        self.analyse_now(readers)
        for url in sorted(urls - {path}):
            self.show_problems(url, None)

    def prepare(self, path: str, analysis: Analysis) -> None:
        """Build what hovers need from ``analysis`` in a worker thread, so that
        the editor's next changes and requests are not kept waiting; requests
        that need it wait for it (``navigation``)."""
        if self.buffers.analyses.get(path) is not analysis or path in self._timers or self.stopping:
            return  # the document changed since (the analysis is out of date), or the client is leaving

        def build() -> None:
            with self.navigation:
                if self.buffers.analyses.get(path) is analysis:
                    navigation = navigation_of(analysis)
                    if navigation is not None:
                        navigation.prepare()

        def done(future: asyncio.Future[None]) -> None:
            guarded(self, f"preparing {path}", future.result, None)

        asyncio.get_running_loop().run_in_executor(self._preparer, build).add_done_callback(done)

    def stop(self) -> None:
        """The client is leaving: no analysis waits any more, and no preparation
        starts (one under way finishes: a thread cannot be stopped)."""
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self.stopping = True
        self._preparer.shutdown(wait=False, cancel_futures=True)

    # -- requests ---------------------------------------------------------------------

    def current(self, uri: str) -> tuple[str, Analysis] | None:
        """The open document at ``uri`` and its analysis, brought up to date first."""
        path = self.buffers.path_of(uri)
        if path is None:
            return None
        if path in self._timers or path not in self.buffers.analyses:
            self.analyse_now([path])
        analysis = self.buffers.analyses.get(path)
        return (path, analysis) if analysis is not None else None


def guarded(server: LanguageServer, what: str, run: Callable[[], T], fallback: T) -> T:
    """``run()``, or ``fallback`` with the failure logged to the client: no input stops the server."""
    try:
        return run()
    except (Exception, RecursionError, MemoryError) as exc:
        logger.error("cdl lsp: %s failed: %s", what, "".join(traceback.format_exception(exc)))
        try:
            server.window_log_message(
                types.LogMessageParams(type=types.MessageType.Error, message=f"cdl lsp: {what} failed: {type(exc).__name__}: {exc}")
            )
        except Exception:  # the client is gone: nothing more to tell it
            pass
        return fallback


def guarded_handler(server: CdlServer, what: str, fallback: Any = None) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Wrap a feature's handler in :func:`guarded`."""

    def wrap(func: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(func)
        def handler(params: Any) -> T:
            answer: T = guarded(server, what, functools.partial(func, params), fallback)
            return answer

        return handler

    return wrap
