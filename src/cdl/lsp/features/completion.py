"""Completion (``textDocument/completion``; issue 25, point 4; bounded by
issue 31, point 2): what may be written at a position of a start tag.

Entry points: :func:`completion` (in code points) and :func:`register`. In a cdl:extends or cdl:refroot value, the top
level lists, each written as the engine would read it there (a candidate
writing is kept only when ``model.paths.parse_name_ref`` at that place finds that
very list); in a cdl:ref value, the children of what the path's complete steps
select (the engine's path parsing and walk, over the resolved trees when the
document resolves, so inherited children are offered too); between attributes,
the CDL attributes (``model.vocabulary.CDL_ATTRIBUTES``) the tag has not got; in
cdl:lazy and cdl:use, their values.

Only what matches what was typed of it is offered (:class:`Wanted`), and at
most ``completionLimit`` items (as clangd's ``--limit-results``), the answer
marked incomplete when cut: the candidates are made lazily, in order, and
each costs a step, so an answer costs what it offers, not the number of
lists (the top level lists come from ``Written.lists_from``, an index kept
per loaded document).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from lsprotocol import types
from lxml import etree

from .._engine import (
    A_CREF,
    A_EXTENDS,
    A_LAZY,
    A_REFROOT,
    A_USE,
    CDL_ATTRIBUTES,
    CDL_NS,
    T_VARIABLE,
    PathSyntaxError,
    PrefixError,
    depth_in_list,
    doc_index_of,
    holder_of,
    parse_name_ref,
    parse_path,
    parse_qname,
    relative_ref,
    split_clark,
    tag_of,
    top_level_of,
    walk,
)
from .._navigate import Navigation, Spot
from .._requests import at, request
from .._session import CdlServer
from .._targets import Targets
from .._written import VARIABLE_ATTRIBUTES, Cursor, Written, attribute_name, is_variable


@dataclass(frozen=True)
class Completion:
    """One thing that may be written: ``kind`` is ``template``, ``child``,
    ``attribute`` or ``value``."""

    label: str
    kind: str
    detail: str
    insert_text: str
    #: What writing it replaces: what was typed of it before the cursor
    #: (a value, a path's last step, an attribute's name), on the cursor's line.
    replace: Spot | None = None


#: What each CDL attribute does, in the order they are offered.
_ATTRIBUTE_DETAILS = {
    A_EXTENDS: "the list this one extends (7.2)",
    A_CREF: "a value reference: the path of the property whose value this takes (7.3)",
    A_REFROOT: "the top level list the cdl:ref path starts from (7.3)",
    A_LAZY: "true: the value is given at deployment (7.5)",
    A_USE: "required or optional: whether the system must give it a value (7.4.2)",
}
#: The values an attribute takes, where there are few.
_VALUES = {A_LAZY: ("true", "false"), A_USE: ("required", "optional")}


_KINDS = {
    "template": types.CompletionItemKind.Class,
    "child": types.CompletionItemKind.Field,
    "attribute": types.CompletionItemKind.Property,
    "value": types.CompletionItemKind.Value,
}


@dataclass(frozen=True)
class Wanted:
    """What was typed of the item to complete, casefolded: an item written
    ``w`` matches when ``w`` starts with it, or, when it holds no ``:``, the
    local part of ``w`` does (``fr`` finds ``t:Frontend``), case aside."""

    typed: str

    def matches(self, writing: str) -> bool:
        folded = writing.casefold()
        return folded.startswith(self.typed) or (":" not in self.typed and folded.rpartition(":")[2].startswith(self.typed))

    def may_write(self, name: str, nsmap: dict[str | None, str]) -> bool:
        """Whether some writing of the Clark ``name`` with the prefixes of
        ``nsmap`` may match (a test of strings, before any is parsed)."""
        uri, local = split_clark(name)
        prefix, colon, rest = self.typed.rpartition(":")
        if colon:
            return local.casefold().startswith(rest) and any(p.casefold() == prefix for p in _prefixes(nsmap, uri))
        return local.casefold().startswith(self.typed) or any(p.casefold().startswith(self.typed) for p in _prefixes(nsmap, uri))


def completion(navigation: Navigation, url: str, line: int, column: int) -> list[Completion]:
    """What may be written at (line, column) of document ``url`` (see the module docstring), all of it."""
    return completed(navigation, url, line, column, 0)[0]


def completed(navigation: Navigation, url: str, line: int, column: int, limit: int) -> tuple[list[Completion], bool]:
    """What may be written at (line, column) of document ``url``: at most
    ``limit`` items (0: all), and whether more were left out."""
    cursor = navigation.at(url, line, column)
    if cursor is None:
        return [], False
    lines = cursor.doc.source.lines
    start = max(_typed_from(cursor), lines.bounds(lines.position_of(cursor.offset)[0])[0])
    wanted = Wanted(cursor.doc.source.text[start : cursor.offset].casefold())
    matching = (c for c in _complete(navigation.written, navigation.targets, cursor, wanted) if wanted.matches(c.label))
    found = list(itertools.islice(matching, limit + 1 if limit else None))
    replace = navigation.written.spot(cursor.doc, start, cursor.offset)
    return [dataclasses.replace(c, replace=replace) for c in found[: limit or None]], bool(limit) and len(found) > limit


def _typed_from(cursor: Cursor) -> int:
    """Where what the cursor completes begins: the value it is in (of a
    cdl:ref, its last step), else the attribute name it ends, else itself."""
    attr = cursor.attr
    if attr is not None and attr.value_start is not None:
        typed = cursor.doc.source.text[attr.value_start : cursor.offset]
        return attr.value_start + typed.rfind("/") + 1
    if cursor.tag is not None:
        for written in cursor.doc.source.tags[cursor.tag].attrs:
            if written.value_start is None and written.name_start < cursor.offset <= written.name_start + len(written.name):
                return written.name_start
    return cursor.offset


def _complete(written: Written, targets: Targets, cursor: Cursor, wanted: Wanted) -> Iterable[Completion]:
    """The candidates at the cursor, in order, made as they are asked for
    (those of the top level lists and of children only where ``wanted`` may match)."""
    if cursor.tag is None or cursor.on_name:
        return []
    tag = cursor.doc.source.tags[cursor.tag]
    nsmap = written.nsmap(cursor)
    attr = cursor.attr
    if attr is None:
        return _attributes(cursor, nsmap)
    variable = is_variable(tag.name, nsmap)
    name = attribute_name(attr.name, nsmap, variable)
    if name in (A_EXTENDS, A_REFROOT):
        return _templates(written, cursor, nsmap, wanted)
    if name == A_CREF:
        assert attr.value_start is not None  # the cursor is in its value
        typed = cursor.doc.source.text[attr.value_start : cursor.offset]
        refroot = tag.attr("refroot")
        root_text = None
        if refroot is not None and refroot.value_start is not None:
            root_text = cursor.doc.source.text[refroot.value_start : refroot.value_end]
        return _children(written, targets, cursor, nsmap, (typed, root_text), wanted)
    values = _VALUES.get(name or "", ())
    return [Completion(v, "value", f"cdl:{split_clark(name or '')[1]}", v) for v in values]


def _attributes(cursor: Cursor, nsmap: dict[str | None, str]) -> list[Completion]:
    """The CDL attributes the tag has not got, outside any attribute value."""
    tag = cursor.doc.source.tags[cursor.tag or 0]
    if cursor.offset <= tag.name_end:
        return []
    if is_variable(tag.name, nsmap):
        written_names = {a.name for a in tag.attrs}
        return [Completion(n, "attribute", "cdl:variable", n) for n in VARIABLE_ATTRIBUTES if n not in written_names]
    try:  # as written: the tag may have been typed since the document last loaded
        own = parse_qname(tag.name, nsmap)[0].startswith("{" + CDL_NS + "}")
    except PrefixError:
        own = False
    if tag.parent < 0 or own:
        return []  # the root and CDL's own elements take no CDL attributes
    prefix = next((p for p, uri in nsmap.items() if uri == CDL_NS and p), None)
    if prefix is None:
        return []
    have: set[str | None] = {attribute_name(a.name, nsmap, False) for a in tag.attrs}
    order = [*_ATTRIBUTE_DETAILS, *sorted(CDL_ATTRIBUTES - set(_ATTRIBUTE_DETAILS))]
    found = []
    for name in order:
        if name in CDL_ATTRIBUTES and name not in have:
            label = f"{prefix}:{split_clark(name)[1]}"
            found.append(Completion(label, "attribute", _ATTRIBUTE_DETAILS.get(name, "a CDL attribute"), label))
    return found


def _templates(written: Written, cursor: Cursor, nsmap: dict[str | None, str], wanted: Wanted) -> Iterator[Completion]:
    """Every top level list ``wanted`` may match, as it is written at the
    cursor to be found there, but the one the cursor is in (extending it
    would be a cycle): in order of their local names."""
    index = written.doc_index(cursor.doc.url)
    target_ns = written.docs[index].target_ns if index is not None else ""
    around = _loaded_around(cursor)
    own = None if around is None else top_level_of(around)
    lists = written.lists()
    named = written.list_names.named_by(nsmap, target_ns)
    for name in _list_names(written, nsmap, wanted):
        el = lists[name]
        if el is own:
            continue
        text = _writing(name, nsmap, functools.partial(_names, named, el), wanted)
        if text is not None:
            url = written.docs[doc_index_of(el) or 0].url
            yield Completion(text, "template", f"list in {os.path.basename(url)}", text)


def _list_names(written: Written, nsmap: dict[str | None, str], wanted: Wanted) -> Iterator[str]:
    """The names of the top level lists ``wanted`` may match (:meth:`Wanted.may_write`),
    from the index: those whose local name it starts, then those of the
    namespaces whose prefix it starts (or names, before a ``:``)."""
    prefix, colon, rest = wanted.typed.rpartition(":")
    sources: list[Iterator[str]] = [] if colon else [written.lists_from(wanted.typed)]
    for written_prefix, uri in sorted((p, u) for p, u in nsmap.items() if p):
        folded = written_prefix.casefold()
        if (folded == prefix) if colon else (folded.startswith(wanted.typed) and wanted.typed):
            sources.append(written.lists_from(rest if colon else "", uri))
    seen: set[str] = set()
    for name in itertools.chain.from_iterable(sources):
        if name not in seen:
            seen.add(name)
            yield name


def _names(named: Callable[[str], etree._Element | None], el: etree._Element, text: str) -> bool:
    """Whether ``text`` names the top level list ``el`` (``named``: what a text names there)."""
    return named(text) is el


def _writing(name: str, nsmap: dict[str | None, str], reads: Callable[[str], bool], wanted: Wanted) -> str | None:
    """The shortest way to write the Clark ``name`` with the prefixes of
    ``nsmap`` that ``wanted`` matches and ``reads`` (text -> bool) accepts."""
    uri, local = split_clark(name)
    writings = [local] + [f"{p}:{local}" for p in sorted(_prefixes(nsmap, uri))]
    return next((w for w in writings if wanted.matches(w) and reads(w)), None)


def _prefixes(nsmap: dict[str | None, str], uri: str) -> Iterator[str]:
    """The prefixes ``nsmap`` binds to ``uri``."""
    return (p for p, u in nsmap.items() if p and u == uri)


def _children(
    written: Written,
    targets: Targets,
    cursor: Cursor,
    nsmap: dict[str | None, str],
    written_ref: tuple[str, str | None],
    wanted: Wanted,
) -> Iterator[Completion]:
    """The children (those ``wanted`` may match) of what the complete steps
    of ``typed`` (a cdl:ref value up to the cursor; ``root_text``: the
    cdl:refroot written beside it) select."""
    typed, root_text = written_ref
    found_holder = _holder(cursor, nsmap)
    if found_holder is None:
        return
    holder, typed_since = found_holder
    index = written.doc_index(cursor.doc.url)
    target_ns = written.docs[index].target_ns if index is not None else ""
    head = typed.rpartition("/")[0] if "/" in typed else ""
    try:
        refroot = parse_name_ref(root_text, nsmap, target_ns) if root_text and root_text.strip() else None
        absolute, steps = (True, ()) if typed.startswith("/") and head == "" else ((False, ()) if not head else parse_path(head, nsmap))
    except (PrefixError, PathSyntaxError):
        return
    depth = -1 if refroot is not None else depth_in_list(holder) + (1 if typed_since else 0)
    ref = relative_ref(head, refroot, absolute, steps, depth)
    nodes: tuple[etree._Element, ...] = ()
    resolved = targets.resolved()
    if resolved is not None:
        nodes = resolved.select(ref, holder, typed_since)
    if not nodes:
        start = written.lookup(refroot) if refroot is not None else holder if typed_since else holder.getparent()
        nodes = walk(start, ref.steps, written.children).nodes if start is not None else ()
    seen: set[str] = set()
    for node in nodes:
        for child in node.iterchildren(etree.Element):
            name = tag_of(child)
            if name.startswith("{" + CDL_NS + "}") or name in seen or not wanted.may_write(name, nsmap):
                continue
            seen.add(name)
            text = _writing(name, nsmap, functools.partial(_step_reads, nsmap=nsmap, name=name), wanted)
            if text is not None:
                detail = "a list" if len(child) else (child.text or "").strip()[:40] or "a property"
                yield Completion(text, "child", detail, text)


def _loaded_around(cursor: Cursor) -> etree._Element | None:
    """The loaded element of the cursor's tag, else of the nearest tag around
    it that was loaded (it was typed since the document last loaded)."""
    source, index = cursor.doc.source, cursor.tag
    while index is not None and index >= 0:
        found = cursor.doc.element_of(index)
        if found is not None:
            return found
        index = source.parent(index)
    return None


def _holder(cursor: Cursor, nsmap: dict[str | None, str]) -> tuple[etree._Element, bool] | None:
    """The loaded property a cdl:ref at the cursor is written for (a
    cdl:variable's: the one its expression is in), and False; or, for a
    property typed since the document last loaded (its tag has no loaded
    element), its loaded parent, and True; None when neither was loaded."""
    el = cursor.element
    if el is not None:
        expression = el.getparent() if el.tag == T_VARIABLE else None
        return (holder_of(expression) if expression is not None else el), False
    if cursor.tag is None:
        return None
    source, doc = cursor.doc.source, cursor.doc
    parent = source.parent(cursor.tag)
    if is_variable(source.tags[cursor.tag].name, nsmap):  # typed: its expression's parent, if loaded
        holder = doc.element_of(source.parent(parent)) if parent >= 0 else None
        return None if holder is None else (holder, False)
    el = doc.element_of(parent) if parent >= 0 else None
    if el is None or top_level_of(el) is None:
        return None  # nothing loaded around it, or a top level list being typed
    return el, True


def _step_reads(text: str, nsmap: dict[str | None, str], name: str) -> bool:
    try:
        return parse_qname(text, nsmap)[0] == name
    except PrefixError:
        return False


def register(server: CdlServer) -> None:
    options = types.CompletionOptions(trigger_characters=['"', "'", ":", "/", " "])

    @request(server, types.TEXT_DOCUMENT_COMPLETION, "completing", options, typed=True)
    def on_completion(params: types.CompletionParams) -> types.CompletionList | None:
        found = at(server, params.text_document.uri, params.position, now=True)  # the text being typed
        if found is None:
            return None
        navigation, analysis, url, line, column = found
        lines = server.lines_of(url, analysis)
        offered, cut = completed(navigation, url, line, column, server.buffers.settings.completion_limit)
        # The items replace one stretch (what was typed): placed once in the client's encoding.
        ranges = {spot: server.range_of(spot, lines) for spot in {c.replace for c in offered} if spot is not None}
        items = [
            types.CompletionItem(
                label=c.label,
                kind=_KINDS.get(c.kind),
                detail=c.detail or None,
                insert_text=c.insert_text or None,
                text_edit=None if c.replace is None else types.TextEdit(ranges[c.replace], c.insert_text),
            )
            for c in offered
        ]
        return types.CompletionList(is_incomplete=cut, items=items)
