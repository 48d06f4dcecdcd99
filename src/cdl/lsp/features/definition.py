"""Go to definition (``textDocument/definition``; issue 25, point 2).

Entry points: :func:`definition` (where the value under a position leads, in
code points) and :func:`register`. A cdl:extends or cdl:refroot value leads
to the start tag of the top level list it names (7.2, 7.3); a cdl:ref value
to the elements its path selects where they are written (7.3.1), through
the resolution when it passes an inherited child or a reference; a
cdl:import location to the document it loaded (9).
"""

from __future__ import annotations

from lsprotocol import types
from lxml import etree

from .._engine import A_CREF, A_EXTENDS, A_REFROOT, T_IMPORT
from .._navigate import Navigation, Spot
from .._requests import at, request
from .._session import CdlServer


def definition(navigation: Navigation, url: str, line: int, column: int) -> list[Spot]:
    """Where the value under the cursor leads (see the module docstring)."""
    cursor = navigation.at(url, line, column)
    name = navigation.attribute(cursor)
    if cursor is None or cursor.element is None or name is None:
        return []
    el, written, targets = cursor.element, navigation.written, navigation.targets
    if el.tag == T_IMPORT and name == "location":
        index = targets.imported(el)
        return [] if index is None else [Spot(written.docs[index].url, 0, 0, 0)]
    found: list[etree._Element] = []
    if name == A_EXTENDS:
        proto = targets.prototype(el)
        found = [] if proto is None else [proto]
    elif name in (A_CREF, A_REFROOT):
        reference = targets.reference(el)
        if reference is not None:
            ref, holder = reference
            if name == A_CREF:
                found = targets.selected(ref, holder) or targets.inherited_selections(el)
            elif ref.refroot is not None:
                top = written.lookup(ref.refroot)
                found = [] if top is None else [top]
    return [spot for spot in map(written.spot_of, found) if spot is not None]


def register(server: CdlServer) -> None:
    @request(server, types.TEXT_DOCUMENT_DEFINITION, "finding a definition")
    def on_definition(params: types.DefinitionParams) -> list[types.Location] | None:
        found = at(server, params.text_document.uri, params.position)
        if found is None:
            return None
        navigation, analysis, url, line, column = found
        spots = definition(navigation, url, line, column)
        return [loc for s in spots if (loc := server.location_of(s, analysis)) is not None] or None
