"""Document symbols (``textDocument/documentSymbol``; issue 25, point 6).

Entry points: :func:`symbols` (in code points) and :func:`register`. The
lists (top level) and properties of the document's cdl:configuration and
cdl:system, as a tree, read from its text alone (no resolution needed);
CDL's own elements (cdl:expression, cdl:documentation) are left out. A
symbol's range is its whole element (start tag to end tag, as many lines as
it takes); its selection range its start tag's name.
"""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types

from .._engine import CDL_NS, Lines
from .._navigate import Navigation, Spot
from .._requests import request, whole
from .._session import CdlServer
from .._source import Source
from .._written import Region

_KINDS = {"list": types.SymbolKind.Object, "property": types.SymbolKind.Property}


@dataclass(frozen=True)
class Symbol:
    """A list (``kind`` ``list``: a top level list) or a property of a
    document's configuration or system, with what it holds."""

    name: str
    kind: str
    #: Its element, from ``<name`` to the end of its end tag.
    region: Region
    #: Its start tag's name.
    selection: Spot
    children: tuple[Symbol, ...]


def symbols(navigation: Navigation, url: str) -> list[Symbol]:
    """The lists and properties of the document ``url`` (see the module docstring)."""
    written = navigation.written
    doc = written.text_only(url)
    if doc is None:
        return []
    source = doc.source
    root = source.root()
    if root is None:
        return []
    cdl_prefixes = _cdl_prefixes(source)
    parents = [
        i for i in source.tags[root].children
        if source.tags[i].local in ("configuration", "system") and _prefix(source.tags[i].name) in cdl_prefixes
    ]
    made: dict[int, list[Symbol]] = {parent: [] for parent in parents}
    # Post-order without recursion: a tag is made once all its children are.
    stack = [(tag, False) for parent in parents for tag in reversed(source.tags[parent].children)]
    while stack:
        index, done = stack.pop()
        tag = source.tags[index]
        if _prefix(tag.name) in cdl_prefixes:
            continue  # cdl:expression, cdl:documentation: no properties
        if not done:
            made[index] = []
            stack.append((index, True))
            stack.extend((child, False) for child in reversed(tag.children))
            continue
        kind = "list" if tag.parent in parents else "property"
        selection = written.name_spot(doc, tag)
        region = written.region(doc, tag.start, tag.element_end)
        made[tag.parent].append(Symbol(tag.name, kind, region, selection, tuple(made.pop(index))))
    return [symbol for parent in parents for symbol in made[parent]]


def _cdl_prefixes(source: Source) -> set[str]:
    """The prefixes the text binds to the CDL namespace ('' for a default)."""
    found: set[str] = set()
    text = source.text
    for tag in source.tags:
        for attr in tag.attrs:
            if attr.name.startswith("xmlns") and attr.value_start is not None:
                if text[attr.value_start : attr.value_end].strip() == CDL_NS:
                    found.add(attr.name[6:])
    return found


def _prefix(name: str) -> str:
    return name.rpartition(":")[0]


def _to_lsp(server: CdlServer, found: list[Symbol], lines: Lines | None) -> list[types.DocumentSymbol]:
    """The symbols as LSP's, children within; an explicit stack, as deep as the document."""
    top: list[types.DocumentSymbol] = []
    stack: list[tuple[Symbol, list[types.DocumentSymbol]]] = [(s, top) for s in reversed(found)]
    while stack:
        symbol, into = stack.pop()
        children: list[types.DocumentSymbol] = []
        into.append(
            types.DocumentSymbol(
                name=symbol.name or "?",
                kind=_KINDS.get(symbol.kind, types.SymbolKind.Property),
                range=server.region_range(symbol.region, lines),
                selection_range=server.range_of(symbol.selection, lines),
                children=children,
            )
        )
        stack.extend((child, children) for child in reversed(symbol.children))
    return top


def register(server: CdlServer) -> None:
    @request(server, types.TEXT_DOCUMENT_DOCUMENT_SYMBOL, "listing symbols")
    def on_symbols(params: types.DocumentSymbolParams) -> list[types.DocumentSymbol] | None:
        found = whole(server, params.text_document.uri)
        if found is None:
            return None
        navigation, url, lines = found
        return _to_lsp(server, symbols(navigation, url), lines)
