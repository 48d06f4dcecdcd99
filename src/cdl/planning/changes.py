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

import bisect
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from lxml import etree

from ..errors import CdlError
from ..loading.parse import first_element, parse_written
from ..model.limits import Limits
from ..model.naming import Prefixes, list_name
from ..model.vocabulary import LIST_PARENTS, T_DOCUMENTATION
from ..model.workspace import SourceDoc
from ..text.tags import start_line, start_tag_in_bytes
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
        elements: tuple[tuple[etree._Element, _Text] | None, tuple[etree._Element, _Text] | None],
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
            unchanged = _Unchanged(before.data, doc.data) if shortcut else None
            (old_tree, old_text), (new_tree, new_text) = _as_written((before, doc), unchanged, limits)
            _compare((old_tree, new_tree), (old_text, new_text), paths, found, unchanged)
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


def _one_sided(el: etree._Element, doc: _Text, side: int, paths: _PathsOf) -> WrittenChange:
    """``el`` (with everything inside it), which only version ``side`` writes:
    removed (0, the old version) or added (1)."""
    written = _written(el, doc, paths[side])
    if side == 0:
        return WrittenChange("removed", written, None, ((el, doc), None), paths)
    return WrittenChange("added", None, written, (None, (el, doc)), paths)


def _compare(
    trees: tuple[etree._Element, etree._Element],
    docs: tuple[_Text, _Text],
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


@dataclass(frozen=True)
class _Stretch:
    """The text a version of a document was parsed from for the written
    comparison when only a stretch of it was (:func:`_stretches`): its
    document's URL and target namespace, and the bytes parsed, whose lines
    are the document's (the lines of each element, where its start tag
    begins, are read from them)."""

    url: str
    target_ns: str
    data: bytes


#: A document as the written comparison read it: whole, or a stretch of it.
_Text = SourceDoc | _Stretch


def _as_written(
    docs: tuple[SourceDoc, SourceDoc], unchanged: _Unchanged | None, limits: Limits
) -> tuple[tuple[etree._Element, _Text], tuple[etree._Element, _Text]]:
    """Both versions of a document as written (``parse_written``), each with
    the text it was parsed from: whole, or, with ``unchanged`` (the
    shortcuts on), only the stretch of one list parent's lists that holds
    every byte that differs (:func:`_stretches`). Either way the comparison
    finds the same changes."""
    stretches = None if unchanged is None else _stretches(docs, unchanged, limits)
    if stretches is not None:
        return stretches
    old, new = docs
    return (parse_written(old.data, old.url, limits), old), (parse_written(new.data, new.url, limits), new)


def _stretches(
    docs: tuple[SourceDoc, SourceDoc], unchanged: _Unchanged, limits: Limits
) -> tuple[tuple[etree._Element, _Stretch], tuple[etree._Element, _Stretch]] | None:
    """Both versions of a document parsed only where they differ: the
    document's root and one list parent, as written, holding the top level
    lists from the line where the last list that begins before the first
    difference begins to the line where the first list after the last one
    begins, each element on its own line (a specialisation: what is left
    out is written in the same bytes in both versions, so it holds no
    change; off with ``CDL_NO_FAST_PATHS``). None when the texts do not
    allow it: a document not loaded, a text not in UTF-8 or ASCII, lists
    named alike or text between them, a difference outside one list
    parent's lists, a list that does not begin its line."""
    found = []
    for side, doc in enumerate(docs):
        root = getattr(doc, "root", None)
        cut = None if root is None or not _byte_lines(doc.data) else _cut(doc.data, root, unchanged, side)
        if cut is None:
            return None
        found.append(cut)
    (start, end, parent, lists), (start1, end1, parent1, _) = found
    if start != start1 or len(docs[0].data) - end != len(docs[1].data) - end1 or parent.tag != parent1.tag:
        return None
    trees = []
    for doc, (start, end, parent, lists) in zip(docs, found):
        tree = _stretch(doc, (start, end), parent, lists, limits)
        if tree is None:
            return None
        trees.append(tree)
    return trees[0], trees[1]


#: An XML declaration's encoding, and the encodings whose bytes are ASCII's where the
#: markup and the line ends are (a stretch is cut from the bytes).
_ENCODING = re.compile(rb"""^(?:\xef\xbb\xbf)?<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)""")
_BYTE_LINES = {"utf-8", "utf8", "us-ascii", "ascii"}


def _byte_lines(data: bytes) -> bool:
    """Whether ``data`` is UTF-8 or ASCII (as an XML parser reads it), so that markup and line ends are its bytes."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in data[:4]:
        return False
    declared = _ENCODING.match(data)
    return declared is None or declared.group(1).decode().lower() in _BYTE_LINES


def _cut(
    data: bytes, root: etree._Element, unchanged: _Unchanged, side: int
) -> tuple[int, int, etree._Element, list[etree._Element]] | None:
    """Where the stretch of version ``side`` (``data``, loaded as ``root``)
    begins and ends, the list parent it is in and the lists it holds, or None."""
    parents = [c for c in root if c.tag in LIST_PARENTS]
    before = [p for p in parents if _line(p) < unchanged.first]
    if not before or sum(1 for p in parents if p.tag == before[-1].tag) != 1:
        return None
    parent = before[-1]
    lists = _children(parent)
    lines = [x.sourceline or 0 for x in lists]
    if len({x.tag for x in lists}) != len(lists) or _text_between(parent):
        return None
    first = bisect.bisect_right(lines, unchanged.first) - 1
    after = bisect.bisect_right(lines, unchanged.last[side])
    if not 0 <= first < after:
        return None
    start = _line_start(data, lists[first], (unchanged.begin, unchanged.first))
    last_offset = max(len(data) - unchanged.end - 1, unchanged.begin)
    if after < len(lists):
        end = _line_start(data, lists[after], (last_offset, unchanged.last[side]))
    else:
        end = _end_tag_line(data, parent, last_offset)
    if start is None or end is None or not start <= unchanged.begin < end or end < len(data) - unchanged.end:
        return None
    return start, end, parent, lists[first:after]


def _text_between(parent: etree._Element) -> bool:
    """Whether list parent ``parent`` has text that is not blank between its children."""
    return any(t.strip() for t in (parent.text, *(c.tail for c in parent)) if t)


def _written_name(el: etree._Element) -> bytes:
    """The name of ``el`` as its start tag writes it (its prefix as parsed)."""
    local = etree.QName(el).localname
    return (f"{el.prefix}:{local}" if el.prefix else local).encode()


#: Spaces and tabs.
_BLANKS = re.compile(rb"[ \t]*")


def _line_start(data: bytes, el: etree._Element, anchor: tuple[int, int]) -> int | None:
    """Where the line begins whose first markup is the start tag of ``el``
    (a top level list on the line the parser recorded for it), or None;
    ``anchor``: an offset of ``data`` and its line, from which lines are
    counted (one line end at a time: as many as lie between)."""
    offset, line = anchor
    target = el.sourceline
    if not target:
        return None
    at = data.rfind(b"\n", 0, offset) + 1
    for _ in range(line - target):
        at = data.rfind(b"\n", 0, at - 1) + 1
    for _ in range(target - line):
        at = data.find(b"\n", at) + 1
        if at == 0:
            return None
    name = b"<" + _written_name(el)
    tag = _BLANKS.match(data, at).end()  # type: ignore[union-attr]  # matches the empty string
    if not data.startswith(name, tag) or data[tag + len(name) : tag + len(name) + 1] not in (b" ", b"\t", b"\r", b"\n", b"/", b">"):
        return None
    return at


def _end_tag_line(data: bytes, parent: etree._Element, after: int) -> int | None:
    """Where the line begins whose first markup is the end tag of ``parent``
    (the first written after offset ``after``), or None."""
    tag = data.find(b"</" + _written_name(parent), after + 1)
    at = data.rfind(b"\n", 0, tag) + 1
    return at if tag > 0 and at > after and not data[at:tag].strip(b" \t") else None


def _stretch(
    doc: SourceDoc, cut: tuple[int, int], parent: etree._Element, lists: list[etree._Element], limits: Limits
) -> tuple[etree._Element, _Stretch] | None:
    """The stretch ``cut`` of ``doc`` as written, below its root's and list
    parent ``parent``'s start tags as written and as many line ends as put
    each element on its line; None unless it parses to ``lists``, each on
    its line."""
    data = doc.data
    start, end = cut
    root_tag = start_tag_in_bytes(data, first_element(data))
    parent_tag = start_tag_in_bytes(data, data.rfind(b"<" + _written_name(parent), 0, start))
    if root_tag is None or parent_tag is None or root_tag.group(3) or parent_tag.group(3) or parent_tag.start() < root_tag.end():
        return None
    if data.count(b"\n", 0, parent_tag.end()) + 1 != parent.sourceline:
        return None
    head = data[: root_tag.end()] + parent_tag.group()
    missing = (lists[0].sourceline or 0) - 1 - head.count(b"\n")
    if missing < 0:
        return None
    text = b"".join((head, b"\n" * missing, data[start:end], b"</", parent_tag.group(1), b"></", root_tag.group(1), b">"))
    try:
        tree = parse_written(text, doc.url, limits)
    except CdlError:
        return None
    held = [c for c in tree if isinstance(c.tag, str)]
    if len(held) != 1 or held[0].tag != parent.tag:
        return None
    written = _children(held[0])
    if [(x.tag, x.sourceline) for x in written] != [(x.tag, x.sourceline) for x in lists]:
        return None
    return tree, _Stretch(doc.url, doc.target_ns, text)


class _Unchanged:
    """Where two versions of a document's text are the same: the bytes they
    begin with and those they end with. An element written wholly within
    either, below ancestors whose start tags are in the first, is parsed
    alike from the same bytes in both versions: the written comparison need
    not look at it (a specialisation, off with ``CDL_NO_FAST_PATHS``).

    Told by lines, which the parser records (``sourceline``: the line where a
    start tag ends, with either parser): an element ends before the
    start tag of the element after it ends, and begins after the start tag
    of the element before it began."""

    def __init__(self, old: bytes, new: bytes) -> None:
        #: How many bytes both versions begin with alike, and end with.
        self.begin = begin = _common_prefix(old, new)
        self.end = end = _common_suffix(old, new, min(len(old), len(new)) - begin)
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
        """Whether the start tags of parents ``a`` and ``b`` end before the first
        difference (on a line before its line: the parser records an
        element on the line where its start tag ends)."""
        return _line(a) < self.first and _line(b) < self.first

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


def _written(el: etree._Element, doc: _Text, path_of: Callable[[etree._Element], str]) -> Written:
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
