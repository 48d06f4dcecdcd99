"""C-level XPath scans over whole top level lists and subtrees.

:class:`ListScan` asks one XPath predicate of every element of some lists (the
phases use it to find what they work on without walking trees in Python;
:class:`AttributeScan` finds the elements with one attribute);
:func:`has_level` tells whether a subtree is deeper than a bound (the depth
limit); :func:`elements_bound` bounds a document's elements from its bytes,
which tells a scan whether libxml2's node-set cap can be reached.
"""

from __future__ import annotations

from collections.abc import Iterable

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


#: libxml2 caps an XPath node-set at ten million nodes, intermediate sets
#: included; below this many elements a whole part may be scanned at once.
_WHOLE_SCAN_LIMIT = 9_500_000


class ListScan:
    """One XPath predicate asked of every element of some top level lists.

    The lists of a cdl:configuration or cdl:system are scanned in one C-level
    evaluation when ``bound`` (an upper bound on the elements below) shows the
    node-set cannot reach libxml2's cap, else one list at a time: each call
    has a fixed cost before it looks at a node, so thousands of small lists
    cost more per list than their elements do.
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
