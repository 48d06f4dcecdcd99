"""The state of ``cdl lsp``: :class:`CdlServer` (the open documents and
their analyses, when and where they are analysed, positions in the
client's encoding) and :func:`guarded`, which keeps any input from stopping
the server. The handlers that use it are the ``features`` modules, composed
by ``server``.

Answers while it thinks (issue 31, point 2). The request loop never
analyses: the document and workspace handlers (``features.documents``,
``features.workspace``) ask for an analysis, at once
(:meth:`CdlServer.analyse_now`) or once typing pauses
(:meth:`CdlServer.analyse_later`), and it runs in one worker thread, on a
snapshot of the buffers (``_buffers.analyse``), then builds there what the
requests need from it (``_navigate.Navigation.prepare``: the text paired
with its tree, the resolution with provenance, its plan). Each request for an
analysis carries the document's *generation*, which every change moves on:
an analysis whose document changed since it was asked for is stale, and is
dropped without being shown (if it has not started; a thread cannot be
stopped: one under way is dropped once done).
What an analysis found is published as soon as it is done
(:attr:`CdlServer.show_problems`, set by ``features.diagnostics``), before
anything is prepared for the requests. A preparation stops between its
steps when another analysis is waiting (any document's: its diagnostics
come first), or when its document changed since (the analysis of the change
is coming); what it made goes once a newer analysis of its document begins
(most often that one replaces it), and is made again only if that one does
not load (then it is the last that loads). The requests answer from the
last analysis prepared (``Buffers.answering``, :meth:`CdlServer.current`),
positions carried through the edits since (``_edits.Edit``:
:meth:`CdlServer.position` and the ranges). A request waits only when that
cannot answer (:meth:`CdlServer.ready`: the document's first analysis, or a
position where the text changed since the last, :meth:`CdlServer.typed_at`),
and a client's ``$/cancelRequest`` ends the wait.

One resolution with provenance at a time (docs/performance.md, "One
resolution with provenance at a time"): once a newer analysis of a document
loaded, the resolution with provenance the requests answer from goes before
that one resolves (:meth:`CdlServer._provenance_goes`; made again if no newer
one is shown), and once a newer analysis's text is prepared, the requests
answer from it (:meth:`CdlServer._hand`) and the one before goes, before its
resolution with provenance is made, apart, and attached
(:meth:`CdlServer._attach`). Meanwhile hovers say where a value comes from
is being worked out. A document's first analysis is prepared whole first.

The worker never changes an analysis the requests read, nor they one it
builds: each lxml tree is changed by one thread, and the loaded trees,
which nothing changes once loaded, are read by both only while a
resolution with provenance is made apart (it copies them first). The
worker asks the request loop for what the requests hold
(:meth:`CdlServer._on_loop`) and lets go of it itself. What the worker made
is frozen for the cyclic garbage collector (:func:`_collector_off`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import functools
import gc
import itertools
import logging
import os
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, BinaryIO, Protocol, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from ._buffers import Analysis, Buffers
from ._edits import Edit
from ._engine import UTF16, Earlier, Lines, __version__, forget_text, loaded_of, released, releasing_tree
from ._navigate import Made, Navigation, Stopped, drop_navigation, navigation_now, navigation_of
from ._stdio import serve_stdio, waitable
from ._written import Region

#: Seconds after the last change before a document is analysed again.
DEBOUNCE = 0.3

logger = logging.getLogger("cdl.lsp.server")

T = TypeVar("T")

#: How long the worker waits at a time for the request loop to run what it
#: asked of it (it stops waiting once the server ends).
_ON_LOOP_WAIT = 0.05


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


class _Protocol(LanguageServerProtocol):
    """pygls's protocol without its own copy of the open documents: the
    server holds them (``Buffers``, their lines updated where a change
    reaches, ``features.documents``), and pygls's copy would apply each
    change once more, line by line over the whole text."""

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


@dataclasses.dataclass
class _Unprepared:
    """An analysis shown and not prepared yet (worker thread only)."""

    analysis: Analysis
    #: The generation of its document it was asked at.
    generation: int
    #: A newer analysis of its document was shown and did not load: this
    #: one is the last that loads, prepared even though the text changed since.
    last: bool = False
    #: The requests answer from it already (its text is prepared): only its
    #: resolution with provenance is made, apart (``Navigation.made_apart``).
    handed: bool = False


class CdlServer(LanguageServer):
    """The language server with the open documents and their analyses."""

    def __init__(self) -> None:
        super().__init__(
            "cdl", __version__, protocol_cls=_Protocol, text_document_sync_kind=types.TextDocumentSyncKind.Incremental
        )
        self.buffers = Buffers()
        self.encoding = UTF16
        self._timers: dict[str, asyncio.TimerHandle] = {}
        #: Each open document's generation (moved on by every change and every
        #: analysis asked for), and the last whose analysis has ended.
        self._generations: dict[str, int] = {}
        self._ended: dict[str, int] = {}
        #: The last analysis shown of each open document that loaded: the
        #: requests answer from it once it is prepared.
        self._loaded: dict[str, Analysis] = {}
        #: Analyses asked of the worker (counted on the request loop) and
        #: started (counted in the worker): more asked than started, one waits.
        self._asked = 0
        self._started = 0
        #: In the worker: the analyses shown and not prepared yet, by document
        #: (one newer that loads replaces it).
        self._unprepared: dict[str, _Unprepared] = {}
        #: In the worker: what a resolution with provenance stopped part way
        #: made (``Stopped.left``), let go of once the analysis it gave way to is shown.
        self._stopped: Iterator[None] = iter(())
        #: The requests waiting for a document's first analysis.
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}
        #: How each open document's text changed since the text an analysis read.
        self._edits: dict[str, Edit] = {}
        self._keys: dict[str, str] = {}
        self.stopping = False
        #: Whether the worker is analysing a document now (set by the worker;
        #: the request loop paces the client's messages meanwhile, ``_stdio``).
        self.analysing = False
        #: The workspace's root directory, which relative settings start from.
        self.root: str | None = None
        #: Shows the problems found in a document (its url; the URI to show
        #: them at, its own by default): set by ``features.diagnostics``.
        self.show_problems: Callable[[str, str | None], None] = lambda url, uri: None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cdl-lsp-analysis")
        #: What lets go of analyses answered from no more (:meth:`_retire`).
        self._releasing: set[asyncio.Task[None]] = set()

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve on stdio until the client ends it, the client's messages
        read on the request loop (``_stdio``) when stdin is a pipe or a socket,
        paced while an analysis runs."""
        source = stdin or sys.stdin.buffer
        if not waitable(source):
            super().start_io(stdin, stdout)
            return
        serve_stdio(self, source, stdout or sys.stdout.buffer, lambda: self.analysing)

    # -- positions --------------------------------------------------------------------

    def lines_of(self, url: str, analysis: Analysis | None = None) -> Lines | None:
        """The lines of ``url`` as ``analysis`` read it (by default: the last
        analysis of ``url``, if open), else as the editor holds it, else as
        it was read."""
        key = self._key(url)
        source = analysis if analysis is not None else self.buffers.analyses.get(key)
        found = None if source is None else source.lines_of(key)
        return found if found is not None else self.buffers.lines(url, analysis)

    def range_of(self, spot: Spot, lines: Lines | None) -> types.Range:
        """``spot`` (on one line of the text ``lines`` splits) in the client's encoding."""
        return self._range(spot.url, spot.line, spot.start, spot.line, spot.end, lines)

    def region_range(self, region: Region, lines: Lines | None) -> types.Range:
        """``region`` (over any number of lines) in the client's encoding."""
        return self._range(region.url, region.line, region.start, region.end_line, region.end, lines)

    def _range(self, url: str, line: int, start: int, end_line: int, end: int, lines: Lines | None) -> types.Range:
        """The range in the text the editor holds now of one in the text ``lines`` splits."""
        if lines is None:  # the text cannot be read: code points stand
            return types.Range(types.Position(line, start), types.Position(end_line, end))
        placed: Lines | Edit = self.edit_since(url, lines) or lines
        first = placed.to_client(line, start, self.encoding)
        last = placed.to_client(end_line, end, self.encoding)
        return types.Range(types.Position(*first), types.Position(*last))

    def location_of(self, spot: Spot, analysis: Analysis | None = None) -> types.Location | None:
        uri = self.buffers.uri_of(spot.url)
        if uri is None:
            return None
        return types.Location(uri, self.range_of(spot, self.lines_of(spot.url, analysis)))

    def position(self, path: str, position: types.Position, analysis: Analysis | None = None) -> tuple[int, int] | None:
        """(line, code-point column) in the text ``analysis`` read of a client's
        ``position`` in the open document ``path`` as it is now; None where
        it was edited since."""
        lines = self.lines_of(path, analysis)
        assert lines is not None  # an open document's text is held
        edit = self.edit_since(path, lines)
        if edit is None:
            return lines.from_client(position.line, position.character, self.encoding)
        return edit.from_client(position.line, position.character, self.encoding)

    def typed_at(self, path: str, analysis: Analysis, position: types.Position) -> bool:
        """Whether what the open document ``path`` says at the client's
        ``position`` may have changed since ``analysis`` read it: the stretch
        edited since reaches the start tag that holds it, or the text between
        the tags around it. Elsewhere the text as it was read says the same
        (only shifted), and is read as it was."""
        lines = self.lines_of(path, analysis)
        edit = None if lines is None else self.edit_since(path, lines)
        if edit is None:
            return False
        place = self.position(path, position, analysis)
        navigation = navigation_of(analysis)
        cursor = None if place is None or navigation is None else navigation.at(navigation.written.document.url, *place)
        if cursor is None:
            return True
        source, offset = cursor.doc.source, cursor.offset
        tags = source.tags
        if cursor.tag is not None:
            first, last = tags[cursor.tag].start, tags[cursor.tag].end
        else:
            after = source.first_from(offset + 1)  # the tag after it (it is in none)
            first = tags[after - 1].end if after > 0 else 0
            last = tags[after].start if after < len(tags) else len(source.text)
        return first <= edit.old_end and edit.start <= last

    def edit_since(self, url: str, lines: Lines) -> Edit | None:
        """How the open document ``url`` changed since the text ``lines`` splits (None: it did not)."""
        key = self._key(url)
        now = self.buffers.texts.get(key)
        if now is None or now is lines.text or now == lines.text:
            return None
        found = self._edits.get(key)
        if found is None or found.old is not lines or found.new is not now:
            found = self._edits[key] = Edit(lines, now)
        return found

    def _key(self, url: str) -> str:
        """The key of the buffer of document ``url`` (``_buffers.key_of``: its real path)."""
        found = self._keys.get(url)
        if found is None:
            found = self._keys[url] = os.path.realpath(url) if os.path.isabs(url) else url
        return found

    # -- analysis ---------------------------------------------------------------------

    def analyse_now(self, paths: Sequence[str] | set[str]) -> None:
        """Analyse the open documents ``paths`` (in the worker thread) and show what they find."""
        loop = asyncio.get_running_loop()
        for path in sorted(paths):
            self._cancel(path)
            if path in self.buffers.texts and not self.stopping:
                generation = self._supersede(path)
                self._asked += 1
                job = self.buffers.job(path, functools.partial(self._provenance_goes, loop, path))
                self._worker.submit(self._run, loop, path, generation, job)

    def analyse_later(self, paths: set[str]) -> None:
        """Analyse ``paths`` once no change has come for :data:`DEBOUNCE` seconds."""
        loop = asyncio.get_running_loop()
        for path in paths:
            self._cancel(path)
            self._supersede(path)  # an analysis under way is stale now
            self._timers[path] = loop.call_later(DEBOUNCE, self.analyse_now, [path])

    def _supersede(self, path: str) -> int:
        """Move the generation of ``path`` on: the analyses asked for before are stale."""
        generation = self._generations[path] = self._generations.get(path, 0) + 1
        return generation

    def _current(self, path: str, generation: int) -> bool:
        return not self.stopping and self._generations.get(path) == generation

    def _run(self, loop: asyncio.AbstractEventLoop, path: str, generation: int, job: Callable[[], Analysis]) -> None:
        """In the worker thread: the analysis ``job`` of ``path`` (skipped if
        stale), handed to the request loop to show what it found; then the
        preparations waiting (:meth:`_prepare_waiting`)."""
        self._started += 1
        dropped: Navigation | None = None
        with _collector_off():
            try:
                if self._current(path, generation):
                    waiting = self._unprepared.get(path)
                    if waiting is not None and not waiting.handed:
                        # Most often this one loads and replaces it: what its
                        # preparation made so far goes (made again if this one
                        # does not load), let go of once this one is shown.
                        dropped = drop_navigation(waiting.analysis)
                    self.analysing = True
                    try:
                        analysis = job()
                        analysis.lines_of(path)  # the diagnostics are placed with them
                    finally:
                        self.analysing = False
                    shown = self._current(path, generation)
                    _tell(loop, self._analysed, path, generation, analysis)
                    # One shown is prepared even if the text changed since: it may be
                    # the last that loads, which the requests answer from.
                    if shown and analysis.document is not None:
                        self._unprepared[path] = _Unprepared(analysis, generation)
                    elif shown and waiting is not None:
                        waiting.last = True
            except (Exception, RecursionError, MemoryError) as exc:
                _tell(loop, self._failed, path, exc)
            finally:
                _tell(loop, self._done, path, generation)
            if dropped is not None:  # a piece at a time: the request loop answers between them
                released(dropped.releasing())
                del dropped
            released(self._stopped)
            self._prepare_waiting(loop)

    def _prepare_waiting(self, loop: asyncio.AbstractEventLoop) -> None:
        """In the worker thread: prepare the analyses shown and not prepared
        yet, each handed to the request loop once prepared. Between the steps
        of a preparation, an analysis asked for meanwhile goes first (this
        goes on after it), and one whose document changed since it was read
        waits for the analysis of the change (unless a newer one shown did
        not load: then it is the last that loads)."""
        for path, waiting in list(self._unprepared.items()):
            navigation = navigation_of(waiting.analysis)
            assert navigation is not None  # it loaded
            told: Callable[[str, Analysis], None] = self._prepared
            try:
                if path in self.buffers.texts and not self._prepare(loop, path, waiting, navigation):
                    if self._asked > self._started or self.stopping:
                        return
                    continue
            except (Exception, RecursionError, MemoryError) as exc:
                _tell(loop, self._failed, path, exc)
                told = self._unprepared_dropped
            del self._unprepared[path]
            if not waiting.handed:  # (one handed is answered from already)
                _tell(loop, told, path, waiting.analysis)

    def _prepare(self, loop: asyncio.AbstractEventLoop, path: str, waiting: _Unprepared, navigation: Navigation) -> bool:
        """In the worker thread: prepare ``waiting``; whether it is done. Once its text is, the requests
        answer from it (:meth:`_hand`; not a document's first) while its resolution with provenance is made apart."""
        yielding = functools.partial(self._yielding, path, waiting)
        released(self._stopped)  # going on: what a stop left goes first
        if not waiting.handed:
            if not navigation.prepare_text(yielding):
                return False
            before = _on_loop(loop, lambda: self.stopping, self._hand, path, waiting.analysis)
            if before is None:
                return navigation.prepare(yielding)
            waiting.handed = True
            released(before)
        try:
            made = navigation.made_apart(yielding)
        except Stopped as stopped:
            self._stopped = stopped.left
            return False
        _tell(loop, self._attach, path, waiting.analysis, made)
        return True

    def _provenance_goes(self, loop: asyncio.AbstractEventLoop, path: str) -> None:
        """In the worker, once an analysis of ``path`` loaded, before it resolves: the
        resolution with provenance answered from goes (made again if none newer is shown)."""
        detached = _on_loop(loop, lambda: self.stopping, self._detach, path)
        if detached is not None:
            analysis, pieces = detached
            self._unprepared.setdefault(path, _Unprepared(analysis, self._generations.get(path, 0), last=True, handed=True))
            released(pieces)

    def _yielding(self, path: str, waiting: _Unprepared) -> bool:
        """In the worker thread: whether to stop preparing ``waiting`` (see :meth:`_prepare_waiting`)."""
        superseded = not waiting.last and self._generations.get(path) != waiting.generation
        return self.stopping or self._asked > self._started or superseded

    def _analysed(self, path: str, generation: int, analysis: Analysis) -> None:
        """On the request loop: ``analysis`` of ``path`` is done; shown unless stale."""
        if not self._current(path, generation) or path not in self.buffers.texts:
            return
        if analysis.document is not None:
            self._loaded[path] = analysis
        changed = self.buffers.install(path, analysis) | {path}  # shown even when unchanged: the client sees it is current
        for url in sorted(changed):
            guarded(self, f"publishing the diagnostics of {url}", functools.partial(self.show_problems, url, None), None)

    def _prepared(self, path: str, analysis: Analysis) -> None:
        """On the request loop: ``analysis`` of ``path`` is prepared; the requests
        answer from it if it is still the last shown that loaded."""
        if self._loaded.get(path) is analysis and path in self.buffers.texts:
            before = self.buffers.answering.get(path)
            self.buffers.answering[path] = analysis
            self._wake(path)
            if before is not None and before is not analysis:
                self._retire(before)

    def _detach(self, path: str) -> tuple[Analysis, Iterator[None]] | None:
        """On the request loop: the analysis answered from for ``path`` and what lets go
        of its resolution with provenance, which it forgets (None: it has none)."""
        analysis = self.buffers.answering.get(path)
        navigation = None if analysis is None else navigation_of(analysis)
        if analysis is None or navigation is None or navigation.targets.awaiting:
            return None
        analysis.memo.pop("now", None)  # lends the resolution
        return analysis, navigation.detach()

    def _hand(self, path: str, analysis: Analysis) -> Iterator[None] | None:
        """On the request loop: the requests answer from ``analysis`` (its text
        prepared, its resolution with provenance made apart); what lets go of the
        one before. None, nothing changed: none before, or ``analysis`` is not shown."""
        before = self.buffers.answering.get(path)
        if before is None or self._loaded.get(path) is not analysis or path not in self.buffers.texts:
            return None
        navigation = navigation_of(analysis)
        assert navigation is not None  # it loaded
        released(navigation.detach())  # none yet: made apart
        self.buffers.answering[path] = analysis
        self._wake(path)
        return itertools.chain.from_iterable(self._pieces(before, drop_navigation(before), None))

    def _attach(self, path: str, analysis: Analysis, made: Made) -> None:
        """On the request loop: ``made``, ``analysis``'s resolution with provenance, answered with if still answered from."""
        navigation = navigation_of(analysis) if self.buffers.answering.get(path) is analysis else None
        if navigation is not None:
            navigation.attach(made)
        elif made[0] is not None:
            self._release([made[0].releasing()])

    def _retire(self, analysis: Analysis, trees: Earlier | None = None) -> None:
        """On the request loop: let go of ``analysis`` (and ``trees``, a closed document's working
        trees) a piece at a time, answering between them (docs/performance.md, "Letting go of an analysis")."""
        self._release(self._pieces(analysis, drop_navigation(analysis), trees))

    def _pieces(self, analysis: Analysis, navigation: Navigation | None, trees: Earlier | None) -> list[Iterator[None]]:
        """What lets go of ``navigation`` (of ``analysis``), of ``trees``, then of the
        documents ``analysis`` loaded unless another analysis answers or is shown from them."""
        analysis.memo.pop("now", None)  # over the texts now: lends its resolution from the navigation
        pieces: list[Iterator[None]] = [] if navigation is None else [navigation.releasing()]
        if trees is not None:
            pieces += [releasing_tree(root) for root in trees.working[0].roots]
        document = analysis.document
        if document is not None and all(other.document is not document for other in self._in_use()):
            for doc in loaded_of(document).docs:
                forget_text(doc.data)  # its lines, kept for explanations
                pieces.append(releasing_tree(doc.root))
        return pieces

    def _release(self, pieces: list[Iterator[None]]) -> None:
        """On the request loop: run ``pieces`` to their end, letting the loop answer between them."""
        task = asyncio.get_running_loop().create_task(_released(pieces))
        self._releasing.add(task)
        task.add_done_callback(self._releasing.discard)

    def _in_use(self) -> Iterator[Analysis]:
        """The analyses shown or answered from."""
        yield from self.buffers.analyses.values()
        yield from self.buffers.answering.values()
        yield from self._loaded.values()

    def _unprepared_dropped(self, path: str, analysis: Analysis) -> None:
        """On the request loop: ``analysis`` of ``path`` could not be prepared;
        the requests go on answering from the one before."""
        if self._loaded.get(path) is analysis:
            del self._loaded[path]
            self._wake(path)

    def _failed(self, path: str, exc: BaseException) -> None:
        def fail() -> None:
            raise exc

        guarded(self, f"analysing {path}", fail, None)

    def _done(self, path: str, generation: int) -> None:
        """On the request loop: the analysis of ``path`` asked for at ``generation`` has ended."""
        self._ended[path] = generation
        if not self._busy(path):
            self._wake(path)

    def _busy(self, path: str) -> bool:
        """Whether an analysis of ``path`` is waited for, under way or being prepared."""
        if path in self._timers or self._generations.get(path, 0) > self._ended.get(path, 0):
            return True
        loaded = self._loaded.get(path)
        return loaded is not None and loaded is not self.buffers.answering.get(path)  # being prepared

    def _wake(self, path: str) -> None:
        for waiter in self._waiters.pop(path, ()):
            if not waiter.done():
                waiter.set_result(None)

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
        self._supersede(path)  # an analysis under way is not shown
        answering = self.buffers.answering.get(path)
        trees = self.buffers.last_trees(path)
        readers = self.buffers.readers_of(path) - {path}
        urls = self.buffers.drop(path)
        self._edits.pop(path, None)
        self._loaded.pop(path, None)
        if answering is not None:  # once nothing else holds its documents
            self._retire(answering, trees)
        self._wake(path)
        self.show_problems(path, uri)
        self.analyse_now(readers)
        for url in sorted(urls - {path}):
            self.show_problems(url, None)

    def stop(self) -> None:
        """The client is leaving: no analysis waits any more, and none starts
        (one under way finishes: a thread cannot be stopped)."""
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self.stopping = True
        self._worker.shutdown(wait=False, cancel_futures=True)
        for path in list(self._waiters):
            self._wake(path)

    # -- requests ---------------------------------------------------------------------

    async def ready(self, uri: str, position: types.Position | None = None) -> None:
        """Return once the open document at ``uri`` has an analysis to answer
        from (at ``position``, if given: one that read the text there as it
        is, :meth:`typed_at`), or none is coming. A request waits only for
        the first analysis of a document, or for one of what was typed where
        it asks; a cancelled request stops waiting."""
        path = self.buffers.path_of(uri)
        while path is not None and self._busy(path) and not self.stopping:
            analysis = self.buffers.answering.get(path)
            if analysis is not None and (position is None or not self.typed_at(path, analysis, position)):
                return
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.setdefault(path, []).append(waiter)
            await waiter
            path = self.buffers.path_of(uri)

    def current(self, uri: str, now: bool = False) -> tuple[str, Analysis] | None:
        """The open document at ``uri`` and the analysis its requests answer
        from (see the module docstring); with ``now``, one over the texts as
        the editor holds them now (for what is being typed: completion),
        which pairs them with the documents that analysis loaded."""
        path = self.buffers.path_of(uri)
        analysis = None if path is None else self.buffers.answering.get(path)
        if path is None or analysis is None:
            return None
        return path, _now(self, analysis) if now else analysis




def _now(server: CdlServer, analysis: Analysis) -> Analysis:
    """``analysis`` over the texts the editor holds now (itself when none changed)."""
    texts = server.buffers.texts
    if all(texts.get(key) is text for key, text in analysis.seen.items()) and len(texts) == len(analysis.seen):
        return analysis
    found = analysis.memo.get("now")
    if isinstance(found, Analysis) and found.seen == texts:
        return found
    assert analysis.document is not None  # the requests answer from one that loaded
    current = server.buffers.texts_now(analysis.document)
    found = dataclasses.replace(analysis, texts=current, memo={}, seen=dict(texts), lines={})
    lines = analysis.lines_of(analysis.path)
    edit = None if lines is None else server.edit_since(analysis.path, lines)  # what was typed in it, read alone
    navigation = found.memo["navigation"] = navigation_now(analysis, current, edit)
    if navigation is not None:  # its lines are those its text was scanned with
        found.lines[analysis.path] = navigation.written.paired(0).source.lines
    analysis.memo["now"] = found
    return found


@contextmanager
def _collector_off() -> Iterator[None]:
    """Run the worker's analyses and preparations without Python's cyclic
    garbage collector, then freeze what is alive (``gc.freeze``).

    An analysis holds millions of objects, the analysis the requests answer
    from as many, and a full collection walks every one of them while it
    holds the interpreter (the request loop waits): set off by the
    allocations of one large answer, it made a hover wait for it. Frozen,
    what the worker made is never walked again; an analysis holds no
    reference cycle (``tests/internals/test_lsp_buffers.py`` checks it), so
    one dropped is freed by reference counting all the same. What is left
    to collect is collected first, while frozen objects make that cheap:
    only the garbage cycles made on the request loop during the worker's
    run are frozen with the rest.
    """
    enabled = gc.isenabled()
    if enabled:
        gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _on_loop(loop: asyncio.AbstractEventLoop, stopping: Callable[[], bool], callback: Callable[..., T], *args: Any) -> T | None:
    """In the worker thread: ``callback(*args)`` run on the request loop,
    waited for; None if the server ends first (``stopping()``)."""
    done: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        try:
            done.set_result(callback(*args))
        except BaseException as exc:  # handed to the worker, which reports it
            done.set_exception(exc)

    try:
        loop.call_soon_threadsafe(run)
    except RuntimeError:  # the loop is closed: the server is ending
        return None
    while not stopping():
        try:
            return done.result(timeout=_ON_LOOP_WAIT)
        except concurrent.futures.TimeoutError:
            continue
    return None


async def _released(pieces: list[Iterator[None]]) -> None:
    """Run ``pieces`` to their end, letting the request loop answer between them."""
    for piece in pieces:
        for _ in piece:
            await asyncio.sleep(0)


def _tell(loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: Any) -> None:
    """Run ``callback(*args)`` on ``loop`` (from the worker thread), unless the loop has ended."""
    try:
        loop.call_soon_threadsafe(callback, *args)
    except RuntimeError:  # the loop is closed: the server is ending
        pass


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
