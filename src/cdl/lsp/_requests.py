"""What every navigation request of ``cdl lsp`` does first: find the open
document, bring its analysis up to date, take its :class:`Navigation`, and
convert the client's position; one request at a time with the preparation
in the background (``CdlServer.navigation``).

Entry points: :func:`request` (a handler registered for an LSP method,
guarded and holding the lock), :func:`navigated`, :func:`at` and
:func:`whole`, which the ``features`` modules call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from lsprotocol import types

from ._buffers import Analysis
from ._engine import Lines
from ._navigate import Navigation, navigation_of
from ._session import CdlServer, guarded_handler

P = TypeVar("P")
R = TypeVar("R")


def request(server: CdlServer, method: str, what: str, options: Any = None) -> Callable[[Callable[[P], R]], Callable[[P], R]]:
    """Register the decorated function as the handler of ``method``: guarded
    (``what`` names it in a failure's log) and run holding
    ``server.navigation``, never while a navigation is being prepared in the
    background (:meth:`CdlServer.prepare`)."""

    def wrap(func: Callable[[P], R]) -> Callable[[P], R]:
        @functools.wraps(func)
        def locked(params: P) -> R:
            with server.navigation:
                return func(params)

        handler = guarded_handler(server, what)(locked)
        server.feature(method, options)(handler)
        return handler

    return wrap


def navigated(server: CdlServer, uri: str) -> tuple[Navigation, Analysis, str, str] | None:
    """The navigation of the open document at ``uri``, its analysis, its path
    and its url; None when it cannot answer (not open, or it did not load)."""
    current = server.current(uri)
    if current is None:
        return None
    path, analysis = current
    navigation = navigation_of(analysis)
    if navigation is None:
        return None
    return navigation, analysis, path, navigation.written.document.url


def at(server: CdlServer, uri: str, position: types.Position) -> tuple[Navigation, Analysis, str, int, int] | None:
    """The navigation of the open document at ``uri``, its analysis, its url and
    ``position`` as (line, code-point column); None when it cannot answer."""
    found = navigated(server, uri)
    if found is None:
        return None
    navigation, analysis, path, url = found
    line, column = server.position(path, position)
    return navigation, analysis, url, line, column


def whole(server: CdlServer, uri: str) -> tuple[Navigation, str, Lines | None] | None:
    """For a request about a whole open document: its navigation, its url and
    its lines; None when it cannot answer."""
    found = navigated(server, uri)
    if found is None:
        return None
    navigation, _, path, url = found
    return navigation, url, server.lines_of(path)
