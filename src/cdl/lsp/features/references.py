"""Find references (``textDocument/references``; issue 25, point 5).

Entry points: :func:`references` (in code points) and :func:`register`. On a
list (its start tag, or a cdl:extends value naming it): every element whose
cdl:extends names it (7.2). On a property: every reference (a cdl:ref value,
a cdl:variable's ref) that selects it, walked from where each is written
and, when the document resolves, as resolution resolved it in every list it
was inherited into (7.3). The request gathers them from every open document
that loads the one asked about: a template's own analysis does not know who
imports it.
"""

from __future__ import annotations

from lsprotocol import types

from .._engine import A_EXTENDS
from .._navigate import Navigation, Spot, navigation_of
from .._requests import at, request
from .._session import CdlServer


def references(navigation: Navigation, url: str, line: int, column: int) -> list[Spot]:
    """What refers to the list or property at the cursor (see the module docstring)."""
    cursor = navigation.at(url, line, column)
    if cursor is None or cursor.element is None:
        return []
    el, targets, written = cursor.element, navigation.targets, navigation.written
    name = navigation.attribute(cursor)
    if name == A_EXTENDS:
        proto = targets.prototype(el)
        if proto is None:
            return []
        el = proto
    elif name is not None:
        return []
    spots = [written.spot_of(extending) for extending in targets.extenders(el)]
    spots += [written.attr_spot(referring, "ref") for referring in targets.referrers(el)]
    return [spot for spot in spots if spot is not None]


def register(server: CdlServer) -> None:
    @request(server, types.TEXT_DOCUMENT_REFERENCES, "finding references")
    def on_references(params: types.ReferenceParams) -> list[types.Location] | None:
        found = at(server, params.text_document.uri, params.position)
        if found is None:
            return None
        _, _, url, line, column = found
        locations: dict[tuple[str, int, int, int, int], types.Location] = {}
        for analysis in list(server.buffers.answering.values()):
            navigation = navigation_of(analysis)
            if navigation is None or url not in navigation.written.document.urls:
                continue
            for spot in references(navigation, url, line, column):
                location = server.location_of(spot, analysis)
                if location is not None:
                    r = location.range
                    locations.setdefault((location.uri, r.start.line, r.start.character, r.end.line, r.end.character), location)
        return list(locations.values()) or None
