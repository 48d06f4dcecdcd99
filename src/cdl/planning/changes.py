"""What was written differently between two versions of a document set: the
causes a diff names (issue 32; docs/semantics.md, "Diff").

Entry point: :func:`written_changes`, from the loaded documents of the two
versions (:class:`~cdl.model.workspace.SourceDoc`): the main documents are
paired, and each other document with the other version's by where it lies
relative to its main document (a URL: by itself). Documents whose bytes are equal are equal; the others are
parsed again as written (``loading.parse.parse_written``: attributes as
written, nothing normalized) and compared element by element: an element's
children are paired by name, the k-th of a name with the k-th
(cdl:documentation left out), and an element is *changed* when what is
written on it differs: its name, its attributes, its namespace
declarations, its text (a leaf's exactly; between an element's children,
only text that is not blank). An element of one version that has no pair
in the other is *added* or *removed*, with everything inside it (one change,
at its root); so is a document only one version loads.

Each change says where it is written in each version (:class:`Written`:
document, line of the start tag, path, the element as written) and which
places of the documents it covers (:meth:`WrittenChange.places`), as
explanations name them (``resolution.explain``): a cause is matched to the
explanation steps of the values it changed by those places.

Cost: nothing for a document whose bytes did not change; for one that did,
a parse of each version and a walk of the top level lists that differ. A
list written wholly within the bytes both versions begin or end with
(:class:`_Unchanged`), or whose serialization is the same in both, is not
walked.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from lxml import etree

from ..loading.parse import parse_written
from ..model.limits import Limits
from ..model.naming import Prefixes, list_name
from ..model.vocabulary import LIST_PARENTS, T_DOCUMENTATION
from ..model.workspace import SourceDoc
from ..text.tags import start_line
from .pairing import pair_by_name

__all__ = ["Place", "Written", "WrittenChange", "changed_lists", "lists_in_place", "place", "written_changes"]

#: A place in a version's documents: (document, path without ``[k]``, line
#: of the start tag), as an explanation's step names it (:func:`place`).
Place = tuple[str, str, int | None]

_RANK = re.compile(r"\[\d+\]")


def place(url: str, path: str, line: int | None) -> Place:
    """The place of an element written in document ``url`` at ``path``, its
    start tag on ``line``. The ``[k]`` of same-named siblings is left out:
    an element's siblings as written (here) and in a resolved tree (an
    explanation's step) need not be the same, its line and names are."""
    return url, _RANK.sub("", path), line
#: How each version (old, new) writes an element's path.
_PathsOf = tuple[Callable[[etree._Element], str], Callable[[etree._Element], str]]


@dataclass(frozen=True)
class Written:
    """An element as one version writes it: its document (``url``), the line
    its start tag begins on, its path (as explanations write paths) and the
    element itself as written, its children left out (``<port>80</port>``,
    ``<web cdl:extends="t:Server">…</web>``)."""

    url: str
    line: int | None
    path: str
    xml: str

    def to_data(self) -> dict[str, Any]:
        """``{"url", "line", "path", "written"}`` (the JSON contract of ``cdl diff``)."""
        return {"url": self.url, "line": self.line, "path": self.path, "written": self.xml}


class WrittenChange:
    """One element written differently: ``change`` is ``changed``, ``added``
    (only the new version has it, with everything inside it) or ``removed``;
    ``old`` and ``new`` say where and how each version writes it (None for
    the version without it)."""

    __slots__ = ("_elements", "_names", "_paths", "change", "new", "old")

    def __init__(
        self,
        change: str,
        old: Written | None,
        new: Written | None,
        elements: tuple[tuple[etree._Element, SourceDoc] | None, tuple[etree._Element, SourceDoc] | None],
        paths: _PathsOf,
    ) -> None:
        self.change = change
        self.old = old
        self.new = new
        self._elements = elements
        self._paths = paths

    def __repr__(self) -> str:
        where = self.new or self.old
        assert where is not None
        return f"<WrittenChange {self.change} {where.url}:{where.line} {where.path}>"

    def places(self, side: int) -> Iterator[Place]:
        """The places of version ``side`` (0 old, 1 new) this change covers:
        the element, and for an addition or removal every element inside it."""
        found = self._elements[side]
        if found is None:
            return
        el, doc = found
        path_of = self._paths[side]
        inside = el.iter(etree.Element) if self.change != "changed" else (el,)
        for each in inside:
            yield place(doc.url, path_of(each), start_line(doc.data, each))


def changed_lists(changes: Sequence[WrittenChange]) -> set[str] | None:
    """The names of the top level lists that ``changes`` are written in
    (either version's: a list added or removed is one of them), or None when
    one of them is written outside every top level list (a document's
    namespaces, targetNamespace, imports or types; a document only one
    version loads), which may change what any list means."""
    names: set[str] = set()
    for change in changes:
        for found in change._elements:
            if found is None:
                continue
            el, doc = found
            lst = _list_holding(el)
            if lst is None:
                return None
            names.add(list_name(lst, doc.target_ns))
    return names


def lists_in_place(old: SourceDoc, new: SourceDoc) -> set[str] | None:
    """The names of the top level lists of document ``new`` written in the
    same bytes, on the same lines, as in ``old`` (an earlier version of it),
    among namespaces declared alike: what either version loads of such a
    list, and what a resolution makes of it, is the same, line numbers
    included. None when something written outside the lists differs (their
    namespaces, the document's imports or types, its parts), which may
    change what any list means.

    A list is where it was when the bytes before it and the lines it starts
    on are the same, or the bytes after it (:class:`_Unchanged`); the
    namespace declarations must all be on the root element (else where each
    list sees which is not compared)."""
    if not (old.uniform_namespaces and new.uniform_namespaces) or _outside_lists(old) != _outside_lists(new):
        return None
    names = (old.target_ns, new.target_ns)
    if old.data == new.data:
        return {list_name(el, names[1]) for parent in new.list_parents() for el in _children(parent)}
    unchanged = _Unchanged(old.data, new.data)
    found: set[str] = set()
    for a, b in zip(old.list_parents(), new.list_parents()):
        xs, ys = _children(a), _children(b)
        # Each name is one list's: the k-th list before the first difference
        # is the k-th in both, and the k-th from the end after the last.
        for x, y in zip(xs, ys):
            if x.tag != y.tag or not unchanged.before(x, y):
                break
            found.add(list_name(y, names[1]))
        if unchanged.parents_before(a, b):
            for x, y in zip(reversed(xs), reversed(ys)):
                if x.tag != y.tag or not unchanged.after(x, y) or x.sourceline != y.sourceline:
                    break
                found.add(list_name(y, names[1]))
    return found


def _outside_lists(doc: SourceDoc) -> tuple[object, ...]:
    """What document ``doc`` writes outside its top level lists, as loaded."""
    root = doc.root
    parts: list[object] = [doc.target_ns, root.tag, dict(root.attrib), dict(root.nsmap), root.text]
    for child in root:
        if child.tag in LIST_PARENTS:
            parts.append((child.tag, dict(child.attrib), child.text, child.tail))
        else:
            parts.append(etree.tostring(child))
    return tuple(parts)


def _list_holding(el: etree._Element) -> etree._Element | None:
    """The top level list ``el`` is written in (itself, when it is one), or None."""
    parent = el.getparent()
    while parent is not None:
        above = parent.getparent()
        if parent.tag in LIST_PARENTS:
            return el if above is not None and above.getparent() is None else None
        el, parent = parent, above
    return None


def written_changes(
    old: Sequence[SourceDoc], new: Sequence[SourceDoc], prefixes: tuple[Prefixes, Prefixes], limits: Limits, shortcut: bool = True
) -> list[WrittenChange]:
    """What is written differently in the documents ``new`` than in ``old``,
    in the order of ``new``'s documents (then the documents only ``old``
    loads), each in document order. ``prefixes`` write each version's paths.
    ``shortcut``: top level lists that serialize alike are equal (the
    general walk decides the same, element by element)."""
    keys = [_document_keys(docs) for docs in (old, new)]
    old_by_key = dict(zip(keys[0], old))
    paths = (prefixes[0].path_of, prefixes[1].path_of)
    found: list[WrittenChange] = []
    paired: set[str] = set()
    for key, doc in zip(keys[1], new):
        before = old_by_key.get(key)
        if before is None:
            found.append(_whole(doc, 1, paths, limits))
            continue
        paired.add(key)
        if before.data != doc.data:
            trees = (parse_written(before.data, before.url, limits), parse_written(doc.data, doc.url, limits))
            _compare(trees, (before, doc), paths, found, _Unchanged(before.data, doc.data) if shortcut else None)
    for key, doc in zip(keys[0], old):
        if key not in paired:
            found.append(_whole(doc, 0, paths, limits))
    return found


def _document_keys(docs: Sequence[SourceDoc]) -> list[str]:
    """How each document is paired with the other version's: the main
    documents with each other, the others by their file relative to the main
    document's directory, or by their URL."""
    main = docs[0].file if docs else None
    base = os.path.dirname(main) if main else None
    keys = [os.path.relpath(d.file, base) if d.file and base else d.url for d in docs]
    return ["", *keys[1:]] if keys else keys


def _whole(doc: SourceDoc, side: int, paths: _PathsOf, limits: Limits) -> WrittenChange:
    """A document only one version loads: added or removed as a whole."""
    return _one_sided(parse_written(doc.data, doc.url, limits), doc, side, paths)


def _one_sided(el: etree._Element, doc: SourceDoc, side: int, paths: _PathsOf) -> WrittenChange:
    """``el`` (with everything inside it), which only version ``side`` writes:
    removed (0, the old version) or added (1)."""
    written = _written(el, doc, paths[side])
    if side == 0:
        return WrittenChange("removed", written, None, ((el, doc), None), paths)
    return WrittenChange("added", None, written, (None, (el, doc)), paths)


def _compare(
    trees: tuple[etree._Element, etree._Element],
    docs: tuple[SourceDoc, SourceDoc],
    paths: _PathsOf,
    found: list[WrittenChange],
    unchanged: _Unchanged | None,
) -> None:
    """The changes between two versions of one document, in document order
    (explicit stack: documents nest as deep as max_depth allows).
    ``unchanged`` (None: the shortcuts off): where the two texts are the
    same, so that top level lists written there, and those that serialize
    alike, are equal without a walk."""
    stack: list[tuple[etree._Element | None, etree._Element | None]] = [trees]
    while stack:
        a, b = stack.pop()
        if a is None or b is None:
            side = 0 if b is None else 1
            el = a if b is None else b
            assert el is not None
            found.append(_one_sided(el, docs[side], side, paths))
            continue
        if _own_form(a) != _own_form(b):
            found.append(
                WrittenChange(
                    "changed", _written(a, docs[0], paths[0]), _written(b, docs[1], paths[1]), ((a, docs[0]), (b, docs[1])), paths
                )
            )
        pairs = pair_by_name(_children(a), _children(b))
        if unchanged is not None and a.tag in LIST_PARENTS:
            alike = unchanged.alike(a, b, pairs)
            pairs = [(x, y) for x, y in pairs if x is None or y is None or not (alike(x, y) or etree.tostring(x) == etree.tostring(y))]
        stack.extend(reversed(pairs))


class _Unchanged:
    """Where two versions of a document's text are the same: the bytes they
    begin with and those they end with. An element written wholly within
    either, below ancestors whose start tags are in the first, is parsed
    alike from the same bytes in both versions: the written comparison need
    not look at it (a specialisation, off with ``CDL_NO_FAST_PATHS``).

    Told by lines, which the parser records (``sourceline``: the line where a
    start tag ends, with expat where it begins): an element ends before the
    start tag of the element after it ends, and begins after the start tag
    of the element before it began."""

    def __init__(self, old: bytes, new: bytes) -> None:
        begin = _common_prefix(old, new)
        end = _common_suffix(old, new, min(len(old), len(new)) - begin)
        #: The line of the first byte that differs (the same in both).
        self.first = old.count(b"\n", 0, begin) + 1
        #: In each version, the line of the last byte that differs (of the
        #: first one, when the version has none of its own).
        self.last = tuple(data.count(b"\n", 0, max(len(data) - end - 1, begin)) + 1 for data in (old, new))

    def alike(
        self, a: etree._Element, b: etree._Element, pairs: Sequence[tuple[etree._Element | None, etree._Element | None]]
    ) -> Callable[[etree._Element, etree._Element], bool]:
        """For the children of list parents ``a`` and ``b`` (paired as
        ``pairs``): whether a pair of them is written in the same place of
        the same bytes. Before the first difference (the node after it
        begins before it), the k-th child of a name is the same element in both; after the last, it is when both
        versions have as many children of that name (it is as far from the
        end in both) and the parents' start tags come before the first
        difference (in scope, the same namespaces)."""
        counted: set[object] = set()
        if self.parents_before(a, b):
            counts = [Counter(x.tag for x, _ in pairs if x is not None), Counter(y.tag for _, y in pairs if y is not None)]
            counted = {name for name, n in counts[0].items() if counts[1].get(name) == n}

        def same(x: etree._Element, y: etree._Element) -> bool:
            return self.before(x, y) or (x.tag in counted and self.after(x, y))

        return same

    def parents_before(self, a: etree._Element, b: etree._Element) -> bool:
        """Whether the start tags of parents ``a`` and ``b`` come before the first difference."""
        return _line(a[0] if len(a) else None) < self.first and _line(b[0] if len(b) else None) < self.first

    def before(self, x: etree._Element, y: etree._Element) -> bool:
        """Whether ``x`` and ``y`` (one version's each) are written wholly
        before the first difference (the node after each begins before it)."""
        return _line(_after(x)) < self.first and _line(_after(y)) < self.first

    def after(self, x: etree._Element, y: etree._Element) -> bool:
        """Whether ``x`` and ``y`` are written wholly after the last difference
        (the node before each begins after it)."""
        return _line(x.getprevious(), 0) > self.last[0] and _line(y.getprevious(), 0) > self.last[1]


def _after(el: etree._Element) -> etree._Element | None:
    """The node that begins after ``el`` and all it holds (None: none does)."""
    node: etree._Element | None = el
    while node is not None:
        following = node.getnext()
        if following is not None:
            return following
        node = node.getparent()
    return None


def _line(el: etree._Element | None, unknown: int = 1 << 62) -> int:
    """The line the parser recorded for ``el`` (``unknown`` when none)."""
    return (el.sourceline if el is not None else None) or unknown


def _common_prefix(a: bytes, b: bytes) -> int:
    """How many bytes ``a`` and ``b`` begin with alike (compared a block at a time, in C)."""
    n = min(len(a), len(b))
    at = 0
    while at < n:
        upto = min(at + _BLOCK, n)
        if a[at:upto] != b[at:upto]:
            while upto - at > 1:  # the first difference is in [at, upto)
                middle = (at + upto) // 2
                if a[at:middle] == b[at:middle]:
                    at = middle
                else:
                    upto = middle
            return at
        at = upto
    return n


def _common_suffix(a: bytes, b: bytes, most: int) -> int:
    """How many bytes (at most ``most``) ``a`` and ``b`` end with alike."""
    la, lb = len(a), len(b)
    done = 0
    while done < most:
        upto = min(done + _BLOCK, most)
        if a[la - upto : la - done] != b[lb - upto : lb - done]:
            while upto - done > 1:  # the last difference is between done and upto bytes from the end
                middle = (done + upto) // 2
                if a[la - middle : la - done] == b[lb - middle : lb - done]:
                    done = middle
                else:
                    upto = middle
            return done
        done = upto
    return most


_BLOCK = 1 << 16


def _children(el: etree._Element) -> list[etree._Element]:
    """What is compared below ``el``: its child elements but cdl:documentation."""
    return [c for c in el if isinstance(c.tag, str) and c.tag != T_DOCUMENTATION]


def _own_form(el: etree._Element) -> tuple[object, ...]:
    """What is written on ``el`` itself: its name, attributes, namespace
    declarations and text (a leaf's exactly; between children, what is not blank)."""
    parent = el.getparent()
    above = parent.nsmap if parent is not None else {}
    declared = sorted((p or "", u) for p, u in el.nsmap.items() if above.get(p) != u)
    if _children(el):
        # Text between children: formatting unless it is not blank (so an
        # element whose children were all removed is not changed itself).
        text = "".join([el.text or "", *(c.tail or "" for c in el)])
        text = text if text.strip() else ""
    else:
        text = el.text or ""
    return el.tag, sorted(el.attrib.items()), declared, text


def _written(el: etree._Element, doc: SourceDoc, path_of: Callable[[etree._Element], str]) -> Written:
    path = path_of(el) if el.tag not in LIST_PARENTS else "/" + _qname(el, el.tag)
    return Written(doc.url, start_line(doc.data, el), path, _xml(el))


def _qname(el: etree._Element, clark: str) -> str:
    """``clark`` as ``el``'s declarations let it be written (``prefix:local``)."""
    if not clark.startswith("{"):
        return clark
    uri, _, local = clark[1:].partition("}")
    if uri == "http://www.w3.org/XML/1998/namespace":
        return f"xml:{local}"
    prefix = next((p for p, u in el.nsmap.items() if u == uri and p), None)
    if prefix is None and el.nsmap.get(None) == uri and clark == el.tag:
        return local
    return f"{prefix}:{local}" if prefix else local


def _xml(el: etree._Element) -> str:
    """``el`` as written, its children left out: ``<name a="v">text</name>``,
    ``<name a="v">…</name>`` when it has children, ``<name/>`` when empty."""
    name = _qname(el, el.tag)  # type: ignore[arg-type]
    attributes = "".join(f' {_qname(el, k)}="{_escape(v, attribute=True)}"' for k, v in el.attrib.items())
    if _children(el):
        return f"<{name}{attributes}>…</{name}>"
    if el.text:
        return f"<{name}{attributes}>{_escape(el.text)}</{name}>"
    return f"<{name}{attributes}/>"


def _escape(text: str, attribute: bool = False) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace('"', "&quot;") if attribute else text
