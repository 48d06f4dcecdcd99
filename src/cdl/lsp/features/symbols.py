"""Document symbols (``textDocument/documentSymbol``; issue 25, point 6;
bounded by issue 31, point 2).

Entry points: :func:`listed` and :func:`symbols` (in code points) and
:func:`register`. The lists (top level) and properties of the document's
cdl:configuration and cdl:system, as a tree, read from its text alone (no
resolution needed); CDL's own elements (cdl:expression, cdl:documentation)
are left out. A symbol's range is its whole element (start tag to end tag,
as many lines as it takes); its selection range its start tag's name.

At most ``symbolLimit`` symbols are listed (README, "Editor support"; as
LemMinX's ``xml.symbols.maxItemsComputed``): a system of 20,000 components
writes some 400,000 properties, which no editor's outline can use and no
answer can carry in a second. The top level lists come first, in document
order; then each list's properties, a whole list at a time (at every depth,
or none), in document order, while they fit. Only what is listed is read:
the answer costs what it lists, not the size of the document.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from lsprotocol import types

from .._engine import CDL_NS, Lines, Tag
from .._navigate import Navigation, Spot
from .._requests import request, whole
from .._session import CdlServer
from .._source import Source
from .._written import Paired, Region, Written

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
    children: list[Symbol] = field(default_factory=list)


@dataclass(frozen=True)
class Listing:
    """The symbols of a document, and whether the limit cut them."""

    symbols: list[Symbol]
    #: How many top level lists are listed with their properties.
    whole: int = 0
    #: Whether some symbols are left out, and whether some top level lists are.
    cut: bool = False
    lists_cut: bool = False


def symbols(navigation: Navigation, url: str) -> list[Symbol]:
    """Every list and property of the document ``url`` (see the module docstring)."""
    return listed(navigation, url, 0).symbols


def listed(navigation: Navigation, url: str, limit: int) -> Listing:
    """The lists and properties of the document ``url``, at most ``limit`` of
    them (0: all), as the module docstring says."""
    written = navigation.written
    doc = written.text_only(url)
    source = None if doc is None else doc.source
    root = None if source is None else source.root()
    if doc is None or source is None or root is None:
        return Listing([])
    tops = _top_level(source, root, limit)
    cut = lists_cut = bool(limit) and len(tops) > limit
    budget = limit - len(tops) if limit and not cut else None
    made: list[Symbol] = []
    whole = 0
    for tag, prefixes in tops[: limit or None]:
        symbol = _symbol(written, doc, tag, "list")
        made.append(symbol)
        if cut:
            continue
        found = _properties(written, doc, tag, prefixes, budget)
        if found is None:
            cut = True
            continue
        symbol.children.extend(found)
        whole += 1
        if budget is not None:
            budget -= _count(found)
    return Listing(made, whole, cut, lists_cut)


def _top_level(source: Source, root: int, limit: int) -> list[tuple[Tag, frozenset[str]]]:
    """The top level lists (their tags, and the prefixes bound to CDL in each
    one's scope), the first ``limit`` + 1 of them (all, for 0). Each tag is
    read once (the text's tags are read when asked for: ``text.tags.TagIndex``)."""
    tags = source.tags
    scope = _cdl_prefixes(source, tags[root], frozenset())
    found: list[tuple[Tag, frozenset[str]]] = []
    for parent in source.children(root):
        parent_tag = tags[parent]
        inner = _cdl_prefixes(source, parent_tag, scope)
        if parent_tag.local not in ("configuration", "system") or _prefix(parent_tag.name) not in inner:
            continue
        for child in parent_tag.children:
            child_tag = tags[child]
            prefixes = _cdl_prefixes(source, child_tag, inner)
            if _prefix(child_tag.name) not in prefixes:  # cdl:documentation: no list
                found.append((child_tag, prefixes))
                if limit and len(found) > limit:
                    return found
    return found


def _properties(written: Written, doc: Paired, top: Tag, prefixes: frozenset[str], budget: int | None) -> list[Symbol] | None:
    """The properties of the list ``top``, as a tree; None when there are
    more than ``budget`` (None: no bound)."""
    tags = doc.source.tags
    made: list[Symbol] = []
    count = 0
    stack = [(child, prefixes, made) for child in reversed(top.children)]
    while stack:
        child, inherited, into = stack.pop()
        tag = tags[child]
        scope = _cdl_prefixes(doc.source, tag, inherited)
        if _prefix(tag.name) in scope:
            continue  # cdl:expression, cdl:documentation: no properties
        count += 1
        if budget is not None and count > budget:
            return None
        symbol = _symbol(written, doc, tag, "property")
        into.append(symbol)
        stack.extend((grandchild, scope, symbol.children) for grandchild in reversed(tag.children))
    return made


def _symbol(written: Written, doc: Paired, tag: Tag, kind: str) -> Symbol:
    return Symbol(tag.name, kind, written.region(doc, tag.start, tag.element_end), written.name_spot(doc, tag))


def _count(found: list[Symbol]) -> int:
    """How many symbols ``found`` holds, at every depth."""
    total = 0
    stack = list(found)
    while stack:
        symbol = stack.pop()
        total += 1
        stack.extend(symbol.children)
    return total


def _cdl_prefixes(source: Source, tag: Tag, inherited: frozenset[str]) -> frozenset[str]:
    """The prefixes bound to the CDL namespace ('' for a default) in the scope
    of ``tag``, whose parent's are ``inherited``."""
    found: set[str] | None = None
    text = source.text
    for attr in tag.attrs:
        if attr.name == "xmlns" or attr.name.startswith("xmlns:"):
            found = set(inherited) if found is None else found
            value = "" if attr.value_start is None else text[attr.value_start : attr.value_end].strip()
            (found.add if value == CDL_NS else found.discard)(attr.name[6:])
    return inherited if found is None else frozenset(found)


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


def _notice(listing: Listing, limit: int, name: str) -> str:
    """What the user is told when the limit cut the symbols of document ``name``."""
    if listing.lists_cut:
        shown = f"its first {limit} top level lists are listed, without their properties"
    else:
        shown = f"every top level list is listed, and the properties of the first {listing.whole}"
    return f"cdl lsp: {name} has more than symbolLimit ({limit}) symbols: {shown}; set symbolLimit (0: no limit) to list more"


def register(server: CdlServer) -> None:
    #: The documents (and limits) whose cut symbols the user was told of: once each.
    told: set[tuple[str, int]] = set()

    @request(server, types.TEXT_DOCUMENT_DOCUMENT_SYMBOL, "listing symbols")
    def on_symbols(params: types.DocumentSymbolParams) -> list[types.DocumentSymbol] | None:
        found = whole(server, params.text_document.uri)
        if found is None:
            return None
        navigation, url, lines = found
        limit = server.buffers.settings.symbol_limit
        listing = listed(navigation, url, limit)
        if listing.cut and (url, limit) not in told:
            told.add((url, limit))
            name = os.path.basename(url)
            server.window_show_message(types.ShowMessageParams(types.MessageType.Info, _notice(listing, limit, name)))
        return _to_lsp(server, listing.symbols, lines)
