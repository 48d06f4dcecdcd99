"""C-level XPath scans over whole top level lists and subtrees.

:class:`ListScan` asks one XPath predicate of every element of some lists (the
phases use it to find what they work on without walking trees in Python;
:class:`AttributeScan` finds the elements with one attribute);
:func:`has_level` tells whether a subtree is deeper than a bound (the depth
limit); :func:`elements_bound` bounds a document's elements from its bytes,
which tells a scan whether libxml2's node-set cap can be reached;
:func:`collect` consumes a C-level iteration a piece at a time,
:func:`release` empties a large list, dict or set of elements a piece at a
time, and :func:`releasing` and :func:`releasing_tree` do so, and free a
tree, yielding between the pieces (:func:`released` runs them to the end).

A C call holds the interpreter until it returns: another thread (``cdl
lsp``'s request loop, while its worker analyses) waits for all of it. A
scan or a walk over a whole large system is therefore made in pieces, with
Python code between them, where the pieces cost little more than one call.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from lxml import etree

from .elements import depth_of

#: What an XPath variable may hold (lxml converts these to XPath values).
XPathVariable = bool | int | float | str | bytes | etree._Element | list[etree._Element]

_CHAINS: dict[int, etree.XPath] = {}
_CHAIN_MAX = 2000  # libxml2 evaluates location steps recursively: keep chains short
_DEEPER = etree.XPath("boolean(descendant::*[count(ancestor::*) >= $n])")


def has_level(el: etree._Element, levels: int) -> bool:
    """Whether ``el`` has a descendant ``levels`` levels below it (C-level,
    breadth-first over the subtree)."""
    if levels <= 0:
        return True
    if levels > _CHAIN_MAX:
        if not has_level(el, _CHAIN_MAX):
            return False
        # Genuinely deep: count ancestors instead (slower, and rare).
        return bool(_DEEPER(el, n=float(depth_of(el) - 1 + levels)))
    chain = _CHAINS.get(levels)
    if chain is None:
        if len(_CHAINS) > 64:
            _CHAINS.clear()
        chain = _CHAINS[levels] = etree.XPath("boolean(" + "/".join(["*"] * levels) + ")")
    return bool(chain(el))


T = TypeVar("T")

#: How many items :func:`collect` takes from an iteration in one C call.
_PIECE = 2048

#: Above this many elements, a part is scanned one list at a time (see
#: :class:`ListScan`). libxml2 caps an XPath node-set at ten million nodes,
#: intermediate sets included, far above it.
_WHOLE_SCAN_LIMIT = 65_536


def release(held: list[Any] | dict[Any, Any] | set[Any]) -> None:
    """Empty ``held`` (a list, a dict or a set), :data:`_PIECE` entries per C
    call: freeing what a large list or dict of lxml elements holds at once
    holds the interpreter throughout."""
    released(releasing(held))


def released(pieces: Iterator[None]) -> None:
    """Run ``pieces`` (:func:`releasing`, :func:`releasing_tree`, or what
    yields between the pieces of a release) to the end here: in a thread
    beside others, they take the interpreter between the pieces."""
    for _ in pieces:
        pass


def releasing(held: list[Any] | dict[Any, Any] | set[Any]) -> Iterator[None]:
    """:func:`release`, a piece at a time: it yields after each piece, so
    that its caller may let others run between them."""
    entries: list[Any]
    if isinstance(held, list):
        entries = held
    else:
        entries = list(held.items()) if isinstance(held, dict) else list(held)
        held.clear()  # nothing is freed yet: ``entries`` holds all of it
    while entries:
        del entries[-_PIECE:]
        yield


#: How many children :func:`releasing_tree` removes at a time, and how many
#: make a child one it empties first.
_TREE_PIECE = 64


def releasing_tree(root: etree._Element) -> Iterator[None]:
    """Empty the tree below ``root`` a piece at a time, yielding after each:
    :data:`_TREE_PIECE` children are removed at a time (each freed with what
    it holds, once nothing else holds an element of it), and a child with
    more children than that is emptied first, the same way. Freed at once, a
    large tree holds the interpreter until all of it is freed. An explicit
    stack: trees may be deep."""
    stack = [root]
    while stack:
        parent = stack[-1]
        piece = parent[-_TREE_PIECE:]
        if not piece:
            stack.pop()
            continue
        wide = [child for child in piece if len(child) > _TREE_PIECE]
        if wide:
            stack.append(wide[-1])
            continue
        for child in piece:
            parent.remove(child)
        del piece[:]
        yield


def collect(found: list[T], walk: Iterator[T]) -> list[T]:
    """Append what ``walk`` yields to ``found`` (and return it), :data:`_PIECE`
    items per C call: consumed whole by one ``list.extend``, an lxml
    iteration over a large tree holds the interpreter until its end."""
    while True:
        before = len(found)
        found.extend(itertools.islice(walk, _PIECE))
        if len(found) - before < _PIECE:
            return found


class ListScan:
    """One XPath predicate asked of every element of some top level lists.

    The lists of a cdl:configuration or cdl:system are scanned in one C-level
    evaluation when ``bound`` (an upper bound on the elements below) is
    small, else one list at a time. Each call has a fixed cost before it
    looks at a node, so thousands of small lists cost more per list than
    their elements do; but one call over a whole large system holds the
    interpreter throughout, and lists cannot be grouped into one call
    without libxml2 comparing each node it finds with the others (merging
    node-sets, or sorting them in document order).
    """

    def __init__(self, predicate: str, namespaces: dict[str, str] | None = None) -> None:
        self.per_part = etree.XPath("descendant::*" + predicate, namespaces=namespaces)
        self.per_list = etree.XPath("descendant-or-self::*" + predicate, namespaces=namespaces)

    def __call__(self, parents: Iterable[etree._Element], bound: int, **variables: XPathVariable) -> list[etree._Element]:
        """Matches below each of ``parents`` (list parents), in document order."""
        found: list[etree._Element] = []
        for parent in parents:
            if bound < _WHOLE_SCAN_LIMIT:
                found.extend(self.per_part(parent, **variables))
            else:
                for lst in parent:
                    found.extend(self.per_list(lst, **variables))
        return found

    def within(self, lst: etree._Element, **variables: XPathVariable) -> list[etree._Element]:
        """Matches in one top level list (itself included), in document order."""
        return list(self.per_list(lst, **variables))


class AttributeScan(ListScan):
    """The elements of some top level lists that carry one attribute.

    Asked as the attribute's nodes (a location step without a predicate,
    which libxml2 runs with less work than a test of every element), then
    each node's element.
    """

    def __init__(self, attribute: str, namespaces: dict[str, str] | None = None) -> None:
        self.per_part = etree.XPath("descendant::*/@" + attribute, namespaces=namespaces)
        self.per_list = etree.XPath("descendant-or-self::*/@" + attribute, namespaces=namespaces)

    def __call__(self, parents: Iterable[etree._Element], bound: int, **variables: XPathVariable) -> list[etree._Element]:
        """Elements carrying the attribute below each of ``parents``, in document order."""
        found: list[etree._Element] = []
        for value in super().__call__(parents, bound, **variables):
            element = value.getparent()
            assert element is not None  # an attribute's node always has its element
            found.append(element)
        return found

    def within(self, lst: etree._Element, **variables: XPathVariable) -> list[etree._Element]:
        """Elements carrying the attribute in one top level list (itself included), in document order."""
        return [value.getparent() for value in self.per_list(lst, **variables)]


def elements_bound(data: bytes) -> int:
    """At least as many as the elements of the XML document ``data``.

    Every start tag has a '<' followed by neither '/', '!' nor '?', and each
    of those three pairs has one '<': so the difference of the counts bounds
    the elements (text and attribute values hold no raw '<'; any in comments
    or CDATA only raise the bound). Entities that could expand are refused at
    load. In an encoding where '<' is not the byte 0x3C (EBCDIC), four bytes
    per element (``<a/>``) bound it instead.
    """
    head = data.lstrip()[:1]
    if head != b"<" and not data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\x00")):
        return len(data) // 4
    return data.count(b"<") - data.count(b"</") - data.count(b"<!") - data.count(b"<?")
