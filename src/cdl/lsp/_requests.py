"""What every navigation request of ``cdl lsp`` does first: find the open
document, take the analysis it answers from and its :class:`Navigation`
(``CdlServer.current``: the last one prepared, while the next is made in
the worker thread), and convert the client's position to that analysis's
text (None where the editor changed it since).

Entry points: :func:`request` (a handler registered for an LSP method:
guarded, and waiting for the document's first analysis, a wait the client
may cancel), :func:`navigated`, :func:`at` and :func:`whole`, which the
``features`` modules call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from lsprotocol import types

from ._buffers import Analysis
from ._engine import Lines
from ._navigate import Navigation, navigation_of
from ._session import CdlServer, guarded_handler

P = TypeVar("P")
R = TypeVar("R")


def request(
    server: CdlServer, method: str, what: str, options: Any = None, typed: bool = False
) -> Callable[[Callable[[P], R]], Callable[[P], R]]:
    """Register the decorated function as the handler of ``method``: guarded
    (``what`` names it in a failure's log), run on the request loop once the
    document asked about has an analysis to answer from at the request's
    position (:meth:`CdlServer.ready`; a ``$/cancelRequest`` ends the wait).
    ``typed``: the request reads the text being typed (completion, with
    ``at(now=True)``), and waits only for the document's first analysis."""

    def wrap(func: Callable[[P], R]) -> Callable[[P], R]:
        handler = guarded_handler(server, what)(func)

        async def answer(params: P) -> R | None:
            document = getattr(params, "text_document", None)
            uri = getattr(document, "uri", None)
            position = None if typed else getattr(params, "position", None)
            if isinstance(uri, str):
                await server.ready(uri, position if isinstance(position, types.Position) else None)
            return handler(params)

        server.feature(method, options)(answer)
        return func

    return wrap


def navigated(server: CdlServer, uri: str, now: bool = False) -> tuple[Navigation, Analysis, str, str] | None:
    """The navigation of the open document at ``uri``, its analysis, its path
    and its url; None when it cannot answer (not open, or it never loaded).
    With ``now``, over the texts as the editor holds them now (what is being
    typed: ``CdlServer.current``)."""
    current = server.current(uri, now)
    if current is None:
        return None
    path, analysis = current
    navigation = navigation_of(analysis)
    if navigation is None:
        return None
    return navigation, analysis, path, navigation.written.document.url


def at(server: CdlServer, uri: str, position: types.Position, now: bool = False) -> tuple[Navigation, Analysis, str, int, int] | None:
    """The navigation of the open document at ``uri``, its analysis, its url and
    ``position`` as (line, code-point column) in the text that analysis read;
    None when it cannot answer (the position is in text edited since, or
    see :func:`navigated`)."""
    found = navigated(server, uri)
    if found is None:
        return None
    navigation, analysis, path, url = found
    place = server.position(path, position, analysis)
    if now and server.typed_at(path, analysis, position):
        found = navigated(server, uri, now=True)
        if found is None:
            return None
        navigation, analysis, path, url = found
        place = server.position(path, position, analysis)
    if place is None:
        return None
    return navigation, analysis, url, *place


def whole(server: CdlServer, uri: str) -> tuple[Navigation, str, Lines | None] | None:
    """For a request about a whole open document: its navigation, its url and
    its lines; None when it cannot answer."""
    found = navigated(server, uri)
    if found is None:
        return None
    navigation, analysis, path, url = found
    return navigation, url, server.lines_of(path, analysis)
