"""Code lenses (``textDocument/codeLens``; issue 25, point 7): each
component's place in the deployment plan, and the command that shows its
entry (``workspace/executeCommand`` :data:`SHOW_PLAN_ENTRY`).

Entry points: :func:`code_lenses` (in code points), :func:`plan_entry` and
:func:`register`. Above each component of the main document's system that
is written there (not on inherited ones): its wave among its siblings and
the siblings it is deployed after, from ``Resolution.plan()`` (spec
sections 4 and 8). Running a lens shows that component's plan entry (a
``window/showMessage``) and answers it as ``cdl plan --format json`` writes
it (``PlannedComponent.to_data``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from lxml import etree

from .._engine import T_SYSTEM, PlannedComponent
from .._navigate import Navigation, Spot
from .._requests import navigated, request, whole
from .._session import CdlServer, guarded

#: The command a lens carries: arguments, the document's URI and the component's plan path.
SHOW_PLAN_ENTRY = "cdl.showPlanEntry"


@dataclass(frozen=True)
class Lens:
    """A line shown above a component of the system: its place in the plan."""

    spot: Spot
    title: str
    #: The component's path in the plan.
    path: str


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
            lenses.append(Lens(spot, title, component.path))
    return sorted(lenses, key=lambda lens: (lens.spot.line, lens.spot.start))


def _system_paths(navigation: Navigation) -> dict[str, etree._Element]:
    """The elements written in the main document's cdl:system by their
    paths as the plan writes them (``Prefixes.path_of``)."""
    written = navigation.written
    system = written.docs[0].root.find(T_SYSTEM)
    if system is None:
        return {}
    return {written.prefixes.path_of(el, written.steps): el for el in system.iterdescendants(etree.Element)}


def plan_entry(navigation: Navigation, path: str) -> PlannedComponent | None:
    """The component of the plan at ``path`` (as the plan writes it)."""
    plan = navigation.plan()
    return None if plan is None else next((c for c in plan.components() if c.path == path), None)


def _entry_text(component: PlannedComponent) -> str:
    """One line a person reads: the component's place in the plan."""
    parts = [f"{component.path}: wave {component.wave}"]
    for label, paths in (
        ("after", component.after),
        ("supplies", component.supplies),
        ("releases", component.releases),
        ("waits for", component.waits_for),
    ):
        if paths:
            parts.append(f"{label} {', '.join(paths)}")
    children = sum(len(wave) for wave in component.waves)
    if children:
        parts.append(f"{children} child component{'s' if children != 1 else ''}")
    return "; ".join(parts)


def _show_plan_entry(server: CdlServer, arguments: tuple[Any, ...]) -> dict[str, Any] | None:
    """:data:`SHOW_PLAN_ENTRY` with ``arguments`` (URI, path): the entry, shown and answered."""
    if len(arguments) != 2 or not all(isinstance(a, str) for a in arguments):
        raise ValueError(f"{SHOW_PLAN_ENTRY} takes a document's URI and a component's path, not {list(arguments)!r}")
    uri, path = arguments
    found = navigated(server, uri)
    component = None if found is None else plan_entry(found[0], path)
    if component is None:
        message = types.ShowMessageParams(types.MessageType.Warning, f"cdl: no component {path} in the plan of {uri}")
        server.window_show_message(message)
        return None
    server.window_show_message(types.ShowMessageParams(types.MessageType.Info, _entry_text(component)))
    return component.to_data()


def register(server: CdlServer) -> None:
    @request(server, types.TEXT_DOCUMENT_CODE_LENS, "finding code lenses")
    def on_code_lens(params: types.CodeLensParams) -> list[types.CodeLens] | None:
        found = whole(server, params.text_document.uri)
        if found is None:
            return None
        navigation, url, lines = found
        uri = params.text_document.uri
        return [
            types.CodeLens(server.range_of(lens.spot, lines), types.Command(lens.title, SHOW_PLAN_ENTRY, arguments=[uri, lens.path]))
            for lens in code_lenses(navigation, url)
        ]

    @server.command(SHOW_PLAN_ENTRY)
    def show_plan_entry(*arguments: Any) -> dict[str, Any] | None:
        # Not guarded_handler: pygls passes a command's arguments one by one.
        return guarded(server, "showing a plan entry", functools.partial(_show_plan_entry, server, arguments), None)
