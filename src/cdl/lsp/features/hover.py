"""Hover (``textDocument/hover``; issue 25, point 3).

Entry points: :func:`hover` (what a hover shows at a position, in code
points) and :func:`register`. On a cdl:extends value: the prototype's name,
a link to it and its first properties as resolved (7.2). Elsewhere in the
start tag of a property or a list: its explanation as ``cdl explain`` writes
it, with a link to each step's ``file:line`` (the resolution's provenance,
made once per Navigation); when the document does not resolve, why.
"""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types
from lxml import etree

from .._engine import (
    A_EXTENDS,
    T_EXPRESSION,
    T_VARIABLE,
    CdlError,
    Explanation,
    Step,
    holder_of,
    is_unresolved,
    path_namespaces,
    select,
    tag_of,
    top_level_of,
)
from .._links import file_link
from .._navigate import Navigation, Spot
from .._requests import at, request
from .._session import CdlServer

#: A prototype's hover lists at most this many of its resolved properties.
_SHOWN_PROPERTIES = 10
#: What a hover says of a property while the resolution with provenance of
#: the version it answers from is being made (after an edit).
AWAITING = "Where the value comes from is being worked out for this version of the document: hover again in a moment."
#: A hover links at most this many steps of an explanation.
_SHOWN_LINKS = 40


@dataclass(frozen=True)
class Hover:
    """What a hover shows (Markdown) and the range it is about."""

    markdown: str
    spot: Spot | None


def hover(navigation: Navigation, url: str, line: int, column: int) -> Hover | None:
    """On a cdl:extends value, the prototype; elsewhere in the start tag of a
    property or list, its value and where it comes from."""
    cursor = navigation.at(url, line, column)
    if cursor is None or cursor.element is None or cursor.tag is None:
        return None
    written = navigation.written
    if navigation.attribute(cursor) == A_EXTENDS:
        proto = navigation.targets.prototype(cursor.element)
        attr = cursor.attr
        assert attr is not None and attr.value_start is not None  # the name is an attribute's
        spot = written.spot(cursor.doc, attr.value_start, attr.value_end)
        return None if proto is None else Hover(_prototype_text(navigation, proto), spot)
    el = cursor.element
    expression = el.getparent() if el.tag == T_VARIABLE else None
    el = holder_of(el if expression is None else expression)
    if top_level_of(el) is None:
        return None
    spot = written.name_spot(cursor.doc, cursor.doc.source.tags[cursor.tag])
    return Hover(_property_text(navigation, el), spot)


def _property_text(navigation: Navigation, el: etree._Element) -> str:
    path = navigation.written.path_of(el) or "?"
    resolved = navigation.targets.resolved()
    if resolved is None and navigation.targets.awaiting:
        return f"**`{path}`**\n\n{AWAITING}"
    if resolved is None:
        return f"**`{path}`**\n\n{_failure(navigation.targets.failure)}"
    try:
        explanations = resolved.explain(path)
    except CdlError as exc:
        return f"**`{path}`**\n\nNo explanation: `{exc.code}` {exc}"
    return _explanation_text(_chosen(navigation, el, path, explanations))


def _chosen(navigation: Navigation, el: etree._Element, path: str, explanations: list[Explanation]) -> Explanation:
    """The explanation of ``el`` among those of every property its path
    selects: by its rank among what the path selects where it is written
    (when the resolution selects as many), else by where it is written."""
    written = _loaded_selection(navigation, path)
    if len(written) == len(explanations) and el in written:
        return explanations[written.index(el)]
    here = navigation.written.spot_of(el)
    line = None if here is None else here.line + 1
    url = None if here is None else here.url
    return next((e for e in explanations if _written_at(e, url, line)), explanations[0])


def _loaded_selection(navigation: Navigation, path: str) -> list[etree._Element]:
    """What ``path`` (written as the engine writes paths) selects in the
    loaded trees: the elements written there, in document order."""
    written = navigation.written
    main = written.docs[0]
    namespaces = path_namespaces(main.nsmap, written.prefixes.by_uri)
    lists = (written.prefixes.qname(n) for n in written.lists())  # read only for an error's suggestions
    try:
        return select(path, written.lookup, lists, namespaces, main.target_ns, written.prefixes.path_of)
    except CdlError:
        return []


def _prototype_text(navigation: Navigation, proto: etree._Element) -> str:
    written, targets = navigation.written, navigation.targets
    name = written.list_name(proto) or tag_of(proto)
    spot = written.spot_of(proto)
    where = "" if spot is None else f" in {file_link(spot.url, spot.line + 1)}"
    lines = [f"**`{written.prefixes.qname(name)}`**{where}", ""]
    resolved = targets.resolved()
    shown = resolved.settled(name) if resolved is not None else None
    if shown is None:
        shown = proto
        lines += [_failure(targets.failure), ""] if targets.failure is not None else []
    children = list(shown.iterchildren(etree.Element))
    for child in children[:_SHOWN_PROPERTIES]:
        lines.append(f"- `{written.prefixes.qname(tag_of(child))}`{_value_of(child)}")
    if len(children) > _SHOWN_PROPERTIES:
        lines.append(f"- ... and {len(children) - _SHOWN_PROPERTIES} more")
    return "\n".join(lines) + "\n"


def _failure(error: CdlError | None) -> str:
    if error is None:
        return ""
    return f"The document does not resolve: `{error.code}` {error}"


def _written_at(e: Explanation, url: str | None, line: int | None) -> bool:
    first = e.steps[0] if e.steps else None
    return first is not None and first.kind == "written" and first.url == url and first.line == line


def _value_of(el: etree._Element) -> str:
    if is_unresolved(el) or any(is_unresolved(c) for c in el.iterchildren(T_EXPRESSION)):
        return " (pending)"
    if len(el):
        return " (a list)"
    return f" = `{(el.text or '').strip()}`"


def _explanation_text(e: Explanation) -> str:
    """The Markdown of an explanation: its text as ``cdl explain`` writes it,
    then a link to the ``file:line`` of each step, nested ones too."""
    lines = ["```text", e.to_text().rstrip("\n"), "```", ""]
    links: list[str] = []
    stack: list[Step] = list(reversed(e.steps))
    while stack and len(links) < _SHOWN_LINKS:
        step = stack.pop()
        if step.url is not None and step.line:
            link = f"- {step.kind}: {file_link(step.url, step.line)}"
            if link not in links:
                links.append(link)
        nested = [step.source] if step.source is not None else []
        nested += list(step.variables.values())
        for inner in reversed(nested):
            stack.extend(reversed(inner.steps))
    return "\n".join(lines + links) + "\n"


def register(server: CdlServer) -> None:
    @request(server, types.TEXT_DOCUMENT_HOVER, "hovering")
    def on_hover(params: types.HoverParams) -> types.Hover | None:
        found = at(server, params.text_document.uri, params.position)
        if found is None:
            return None
        navigation, analysis, url, line, column = found
        answer = hover(navigation, url, line, column)
        if answer is None:
            return None
        spot = answer.spot
        where = server.range_of(spot, server.lines_of(spot.url, analysis)) if spot is not None else None
        return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, answer.markdown), where)
