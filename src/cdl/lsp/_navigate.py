"""Navigation for ``cdl lsp`` (issue 25, points 2-7 and 9): definitions,
hovers, completion, references, document symbols and code lenses, computed
from a loaded :class:`cdl.Document` and the texts the editor holds. No pygls
here: the server converts these results (code-point columns) to LSP.

Entry point: :class:`Navigator`. Construction is cheap: each document's text
is scanned and paired with its loaded tree when first asked
(:mod:`._written`); a resolution is made only for what needs one (hovers,
references and definitions through inherited children, lenses) and at most
once per Navigator (:mod:`._targets`). Definitions, completion and symbols
work from the loaded Document alone when it does not resolve; hovers then say
why. Spec sections: 7.2 (cdl:extends), 7.3 (references), 7.5 (deploy-time
values), 8 (the system), 9 (imports).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from lxml import etree

from ._buffers import Analysis
from ._complete import Completion, complete
from ._engine import (
    A_CREF,
    A_EXTENDS,
    A_REFROOT,
    CDL_NS,
    T_EXPRESSION,
    T_IMPORT,
    T_SYSTEM,
    T_VARIABLE,
    CdlError,
    Document,
    Explanation,
    Plan,
    Resolution,
    Step,
    holder_of,
    is_unresolved,
    path_namespaces,
    select,
    tag_of,
    top_level_of,
)
from ._links import file_link
from ._source import Source
from ._targets import Targets
from ._written import Cursor, Spot, Written, attribute_name, is_variable

__all__ = ["Completion", "Hover", "Lens", "Navigator", "Spot", "Symbol"]

#: A prototype's hover lists at most this many of its resolved properties.
_SHOWN_PROPERTIES = 10
#: A hover links at most this many steps of an explanation.
_SHOWN_LINKS = 40


@dataclass(frozen=True)
class Hover:
    """What a hover shows (Markdown) and the range it is about."""

    markdown: str
    spot: Spot | None


@dataclass(frozen=True)
class Symbol:
    """A list (``kind`` ``list``: a top level list) or a property of a
    document's configuration or system, with what it holds."""

    name: str
    kind: str
    spot: Spot
    selection: Spot
    children: tuple[Symbol, ...]


@dataclass(frozen=True)
class Lens:
    """A line shown above a component of the system: its place in the plan."""

    spot: Spot
    title: str


class Navigator:
    """Answers the navigation requests about one loaded Document (see the module docstring).

    ``texts`` maps urls (as :attr:`cdl.Document.urls` gives them, or a file's
    path) to the text the editor holds; a document without one is read from
    the bytes it was loaded from. ``resolution``, a plain resolution of
    ``document`` the caller already has, gives the code lenses their plan
    (else they resolve the document once).

    Keep one Navigator per Document: the first request that needs a
    resolution makes one with provenance recorded (one resolution's time)
    and later ones reuse it, so a hover then costs milliseconds. Requests
    change what it keeps (they resolve what they look at): make them from
    one thread at a time.
    """

    def __init__(self, document: Document, texts: Mapping[str, str], *, resolution: Resolution | None = None) -> None:
        self._written = Written(document, texts)
        self._targets = Targets(self._written)
        self._plain: Resolution | None = resolution

    def prepare(self) -> None:
        """Build now what the first hover of the main document would: its text
        paired with its tree and the resolution with provenance (``cdl lsp``
        calls it once typing has paused, so that hovers answer at once)."""
        self._written.paired(0)
        self._targets.resolved()

    # -- definition -------------------------------------------------------------------

    def definition(self, url: str, line: int, column: int) -> list[Spot]:
        """Where the value under the cursor leads: a cdl:extends or cdl:refroot
        value to that list's start tag, a cdl:ref value to the elements it
        selects where they are written, a cdl:import location to the document."""
        cursor = self._written.at(url, line, column)
        name = self._attribute(cursor)
        if cursor is None or cursor.element is None or name is None:
            return []
        el, written, targets = cursor.element, self._written, self._targets
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

    def _attribute(self, cursor: Cursor | None) -> str | None:
        """The Clark name of the attribute whose value holds the cursor."""
        if cursor is None or cursor.attr is None or cursor.tag is None:
            return None
        nsmap = self._written.nsmap(cursor)
        tag = cursor.doc.source.tags[cursor.tag]
        return attribute_name(cursor.attr.name, nsmap, is_variable(tag.name, nsmap))

    # -- hover ----------------------------------------------------------------------------

    def hover(self, url: str, line: int, column: int) -> Hover | None:
        """On a cdl:extends value, the prototype; elsewhere in the start tag of a
        property or list, its value and where it comes from."""
        cursor = self._written.at(url, line, column)
        if cursor is None or cursor.element is None or cursor.tag is None:
            return None
        name = self._attribute(cursor)
        if name == A_EXTENDS:
            proto = self._targets.prototype(cursor.element)
            attr = cursor.attr
            assert attr is not None and attr.value_start is not None  # the name is an attribute's
            spot = self._written.spot(cursor.doc, attr.value_start, attr.value_end)
            return None if proto is None else Hover(self._prototype_text(proto), spot)
        el = cursor.element
        expression = el.getparent() if el.tag == T_VARIABLE else None
        el = holder_of(el if expression is None else expression)
        if top_level_of(el) is None:
            return None
        spot = self._written.name_spot(cursor.doc, cursor.doc.source.tags[cursor.tag])
        return Hover(self._property_text(el), spot)

    def _property_text(self, el: etree._Element) -> str:
        path = self._written.path_of(el) or "?"
        resolved = self._targets.resolved()
        if resolved is None:
            return f"**`{path}`**\n\n{_failure(self._targets.failure)}"
        try:
            explanations = resolved.explain(path)
        except CdlError as exc:
            return f"**`{path}`**\n\nNo explanation: `{exc.code}` {exc}"
        return _explanation_text(self._chosen(el, path, explanations))

    def _chosen(self, el: etree._Element, path: str, explanations: list[Explanation]) -> Explanation:
        """The explanation of ``el`` among those of every property its path
        selects: by its rank among what the path selects where it is written
        (when the resolution selects as many), else by where it is written."""
        written = self._loaded_selection(path)
        if len(written) == len(explanations) and el in written:
            return explanations[written.index(el)]
        here = self._written.spot_of(el)
        line = None if here is None else here.line + 1
        url = None if here is None else here.url
        return next((e for e in explanations if _written_at(e, url, line)), explanations[0])

    def _loaded_selection(self, path: str) -> list[etree._Element]:
        """What ``path`` (written as the engine writes paths) selects in the
        loaded trees: the elements written there, in document order."""
        written = self._written
        main = written.docs[0]
        namespaces = path_namespaces(main.nsmap, written.prefixes.by_uri)
        lists = (written.prefixes.qname(n) for n in written.lists())  # read only for an error's suggestions
        try:
            return select(path, written.lookup, lists, namespaces, main.target_ns, written.prefixes.path_of)
        except CdlError:
            return []

    def _prototype_text(self, proto: etree._Element) -> str:
        written = self._written
        name = written.list_name(proto) or tag_of(proto)
        spot = written.spot_of(proto)
        where = "" if spot is None else f" in {file_link(spot.url, spot.line + 1)}"
        lines = [f"**`{written.prefixes.qname(name)}`**{where}", ""]
        resolved = self._targets.resolved()
        shown = resolved.settled(name) if resolved is not None else None
        if shown is None:
            shown = proto
            lines += [_failure(self._targets.failure), ""] if self._targets.failure is not None else []
        children = list(shown.iterchildren(etree.Element))
        for child in children[:_SHOWN_PROPERTIES]:
            lines.append(f"- `{written.prefixes.qname(tag_of(child))}`{_value_of(child)}")
        if len(children) > _SHOWN_PROPERTIES:
            lines.append(f"- ... and {len(children) - _SHOWN_PROPERTIES} more")
        return "\n".join(lines) + "\n"

    # -- completion -------------------------------------------------------------------

    def completion(self, url: str, line: int, column: int) -> list[Completion]:
        """What may be written at the cursor (see :mod:`._complete`)."""
        cursor = self._written.at(url, line, column)
        return [] if cursor is None else complete(self._written, self._targets, cursor)

    # -- references -------------------------------------------------------------------

    def references(self, url: str, line: int, column: int) -> list[Spot]:
        """On a list (its start tag, or a cdl:extends value naming it), every
        element that extends it; on a property, every reference (its cdl:ref
        value) that selects it."""
        cursor = self._written.at(url, line, column)
        if cursor is None or cursor.element is None:
            return []
        el, targets, written = cursor.element, self._targets, self._written
        name = self._attribute(cursor)
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

    # -- symbols ----------------------------------------------------------------------------

    def symbols(self, url: str) -> list[Symbol]:
        """The lists and properties of the document's cdl:configuration and
        cdl:system, as a tree (from its text: no resolution needed)."""
        doc = self._written.text_only(url)
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
            selection = self._written.name_spot(doc, tag)
            whole = self._written.spot(doc, tag.start, tag.end)
            made[tag.parent].append(Symbol(tag.name, kind, whole, selection, tuple(made.pop(index))))
        return [symbol for parent in parents for symbol in made[parent]]

    # -- code lenses ----------------------------------------------------------------------

    def code_lenses(self, url: str) -> list[Lens]:
        """Above each component of the system written in ``url``: its wave
        among its siblings and the siblings it is deployed after."""
        plan = self._plan()
        written = self._written
        if plan is None or written.doc_index(url) != 0:
            return []
        lenses: list[Lens] = []
        written_paths = self._system_paths()
        for component in plan.components():
            el = written_paths.get(component.path)  # none for a component inherited, not written
            spot = None if el is None else written.spot_of(el)
            if spot is not None:
                after = component.after
                title = f"wave {component.wave}" + (f" · after {', '.join(after)}" if after else "")
                lenses.append(Lens(spot, title))
        return sorted(lenses, key=lambda lens: (lens.spot.line, lens.spot.start))

    def _system_paths(self) -> dict[str, etree._Element]:
        """The elements written in the main document's cdl:system by their
        paths as the plan writes them (``Prefixes.path_of``)."""
        written = self._written
        system = written.docs[0].root.find(T_SYSTEM)
        if system is None:
            return {}
        return {written.prefixes.path_of(el, written.steps): el for el in system.iterdescendants(etree.Element)}

    def _plan(self) -> Plan | None:
        try:
            if self._plain is None:
                self._plain = self._written.document.resolve()
            return self._plain.plan()
        except CdlError:
            return None


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


def navigator_of(analysis: Analysis) -> Navigator | None:
    """The navigator over ``analysis``, built on first use (None: the document did not load)."""
    if analysis.document is None:
        return None
    found = analysis.memo.get("navigator")
    if found is None:
        found = analysis.memo["navigator"] = Navigator(analysis.document, analysis.texts, resolution=analysis.resolution)
    return cast("Navigator", found)
