"""The requests of ``cdl lsp``: the navigator's answers in LSP's terms.

Entry point: :func:`register_navigation`. Definition, hover, completion,
references, document symbols and code lenses are computed by
:class:`._navigate.Navigator` over the last analysis of the open document
(built once per analysis and kept with it); this module converts positions
(``_positions``) and the navigator's results to lsprotocol types.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

from lsprotocol import types

from ._buffers import Analysis
from ._engine import Lines
from ._navigate import Navigator, Symbol, navigator_of
from ._session import CdlServer, guarded_handler

P = TypeVar("P")
R = TypeVar("R")

_COMPLETION_KINDS = {
    "template": types.CompletionItemKind.Class,
    "child": types.CompletionItemKind.Field,
    "attribute": types.CompletionItemKind.Property,
    "value": types.CompletionItemKind.Value,
}
_SYMBOL_KINDS = {"list": types.SymbolKind.Object, "property": types.SymbolKind.Property}


def _under(server: CdlServer) -> Callable[[Callable[[P], R]], Callable[[P], R]]:
    """Run a request holding ``server.navigation``: never while a navigator is
    being prepared in the background (:meth:`CdlServer.prepare`)."""

    def wrap(func: Callable[[P], R]) -> Callable[[P], R]:
        @functools.wraps(func)
        def handler(params: P) -> R:
            with server.navigation:
                return func(params)

        return handler

    return wrap


def register_navigation(server: CdlServer) -> None:
    """Register the requests the navigator answers."""
    _register_places(server)
    _register_listings(server)


def _navigated(server: CdlServer, uri: str) -> tuple[Navigator, Analysis, str, str] | None:
    """The navigator of the open document at ``uri``, its analysis, its path
    and its url; None when it cannot answer (not open, or it did not load)."""
    current = server.current(uri)
    if current is None:
        return None
    path, analysis = current
    navigator = navigator_of(analysis)
    if navigator is None or analysis.document is None:
        return None
    return navigator, analysis, path, analysis.document.url


def _at(server: CdlServer, uri: str, position: types.Position) -> tuple[Navigator, Analysis, str, int, int] | None:
    """The navigator of the open document at ``uri``, its analysis, its url and
    ``position`` as (line, code-point column); None when it cannot answer."""
    found = _navigated(server, uri)
    if found is None:
        return None
    navigator, analysis, path, url = found
    line, column = server.position(path, position)
    return navigator, analysis, url, line, column


def _whole(server: CdlServer, uri: str) -> tuple[Navigator, str, Lines | None] | None:
    """For a request about a whole open document: its navigator, its url and
    its lines; None when it cannot answer."""
    found = _navigated(server, uri)
    if found is None:
        return None
    navigator, _, path, url = found
    return navigator, url, server.lines_of(path)


def _register_places(server: CdlServer) -> None:
    """Definition, references and hover: answers about the place under the cursor."""

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    @guarded_handler(server, "finding a definition")
    @_under(server)
    def definition(params: types.DefinitionParams) -> list[types.Location] | None:
        found = _at(server, params.text_document.uri, params.position)
        if found is None:
            return None
        navigator, analysis, url, line, column = found
        spots = navigator.definition(url, line, column)
        return [loc for s in spots if (loc := server.location_of(s, analysis)) is not None] or None

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    @guarded_handler(server, "finding references")
    @_under(server)
    def references(params: types.ReferenceParams) -> list[types.Location] | None:
        found = _at(server, params.text_document.uri, params.position)
        if found is None:
            return None
        _, _, url, line, column = found
        # Every open document that loads this one may hold references to it
        # (a template's own analysis does not know who imports it).
        locations: dict[tuple[str, int, int, int, int], types.Location] = {}
        for analysis in list(server.buffers.analyses.values()):
            document = analysis.document
            navigator = navigator_of(analysis) if document is not None and url in document.urls else None
            for spot in navigator.references(url, line, column) if navigator is not None else ():
                location = server.location_of(spot, analysis)
                if location is not None:
                    r = location.range
                    locations.setdefault((location.uri, r.start.line, r.start.character, r.end.line, r.end.character), location)
        return list(locations.values()) or None

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @guarded_handler(server, "hovering")
    @_under(server)
    def hover(params: types.HoverParams) -> types.Hover | None:
        found = _at(server, params.text_document.uri, params.position)
        if found is None:
            return None
        navigator, analysis, url, line, column = found
        answer = navigator.hover(url, line, column)
        if answer is None:
            return None
        spot = answer.spot
        where = server.range_of(spot, server.lines_of(spot.url, analysis)) if spot is not None else None
        return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, answer.markdown), where)



def _register_listings(server: CdlServer) -> None:
    """Completion, document symbols and code lenses."""

    @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=['"', "'", ":", "/", " "]))
    @guarded_handler(server, "completing")
    @_under(server)
    def completion(params: types.CompletionParams) -> types.CompletionList | None:
        found = _at(server, params.text_document.uri, params.position)
        if found is None:
            return None
        navigator, _, url, line, column = found
        items = [
            types.CompletionItem(
                label=c.label, kind=_COMPLETION_KINDS.get(c.kind), detail=c.detail or None, insert_text=c.insert_text or None
            )
            for c in navigator.completion(url, line, column)
        ]
        return types.CompletionList(is_incomplete=False, items=items)

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @guarded_handler(server, "listing symbols")
    @_under(server)
    def symbols(params: types.DocumentSymbolParams) -> list[types.DocumentSymbol] | None:
        found = _whole(server, params.text_document.uri)
        if found is None:
            return None
        navigator, url, lines = found
        return _symbols(server, navigator.symbols(url), lines)

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    @guarded_handler(server, "finding code lenses")
    @_under(server)
    def code_lens(params: types.CodeLensParams) -> list[types.CodeLens] | None:
        found = _whole(server, params.text_document.uri)
        if found is None:
            return None
        navigator, url, lines = found
        return [types.CodeLens(server.range_of(lens.spot, lines), types.Command(lens.title, "")) for lens in navigator.code_lenses(url)]


def _symbols(server: CdlServer, found: list[Symbol], lines: Lines | None) -> list[types.DocumentSymbol]:
    """The navigator's symbols as LSP's, children within; an explicit stack, as deep as the document."""
    top: list[types.DocumentSymbol] = []
    stack: list[tuple[Symbol, list[types.DocumentSymbol]]] = [(s, top) for s in reversed(found)]
    while stack:
        symbol, into = stack.pop()
        children: list[types.DocumentSymbol] = []
        into.append(
            types.DocumentSymbol(
                name=symbol.name or "?",
                kind=_SYMBOL_KINDS.get(symbol.kind, types.SymbolKind.Property),
                range=server.range_of(symbol.spot, lines),
                selection_range=server.range_of(symbol.selection, lines),
                children=children,
            )
        )
        stack.extend((child, children) for child in reversed(symbol.children))
    return top
