"""Code lenses (``textDocument/codeLens``; issue 25, point 7): each
component's place in the deployment plan.

Entry points: :func:`code_lenses` (in code points) and :func:`register`.
Above each component of the main document's system that is written there
(not on inherited ones): its wave among its siblings and the siblings it is
deployed after, from ``Resolution.plan()`` (spec sections 4 and 8).
"""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types
from lxml import etree

from .._engine import T_SYSTEM
from .._navigate import Navigation, Spot
from .._requests import request, whole
from .._session import CdlServer


@dataclass(frozen=True)
class Lens:
    """A line shown above a component of the system: its place in the plan."""

    spot: Spot
    title: str


def code_lenses(navigation: Navigation, url: str) -> list[Lens]:
    """Above each component of the system written in ``url``: its wave
    among its siblings and the siblings it is deployed after."""
    plan = navigation.plan()
    written = navigation.written
    if plan is None or written.doc_index(url) != 0:
        return []
    lenses: list[Lens] = []
    written_paths = _system_paths(navigation)
    for component in plan.components():
        el = written_paths.get(component.path)  # none for a component inherited, not written
        spot = None if el is None else written.spot_of(el)
        if spot is not None:
            after = component.after
            title = f"wave {component.wave}" + (f" · after {', '.join(after)}" if after else "")
            lenses.append(Lens(spot, title))
    return sorted(lenses, key=lambda lens: (lens.spot.line, lens.spot.start))


def _system_paths(navigation: Navigation) -> dict[str, etree._Element]:
    """The elements written in the main document's cdl:system by their
    paths as the plan writes them (``Prefixes.path_of``)."""
    written = navigation.written
    system = written.docs[0].root.find(T_SYSTEM)
    if system is None:
        return {}
    return {written.prefixes.path_of(el, written.steps): el for el in system.iterdescendants(etree.Element)}


def register(server: CdlServer) -> None:
    @request(server, types.TEXT_DOCUMENT_CODE_LENS, "finding code lenses")
    def on_code_lens(params: types.CodeLensParams) -> list[types.CodeLens] | None:
        found = whole(server, params.text_document.uri)
        if found is None:
            return None
        navigation, url, lines = found
        return [types.CodeLens(server.range_of(lens.spot, lines), types.Command(lens.title, "")) for lens in code_lenses(navigation, url)]
