"""Small questions about an element of the engine's trees: its name, its
value, its top level list, the document it was written in, and the marks and
stamps that copies carry.
"""

from __future__ import annotations

from collections.abc import Iterable

from lxml import etree

from .vocabulary import LIST_PARENTS, P_COPIES, P_DOC, T_COPIES


def table_index(el: etree._Element, attribute: str) -> int:
    """The index into :class:`Tables` that the private ``attribute`` of ``el`` holds.

    Asked only of elements that carry it (found by a scan for it, or known to
    be a cdl:expression, which the loader marks); a missing one is a
    programming error.
    """
    value = el.get(attribute)
    if value is None:
        raise KeyError(f"{attribute} is missing on {el.tag!r}")
    return int(value)


def tag_of(el: etree._Element) -> str:
    """The Clark name of an element of the engine's trees.

    lxml returns a parsed element's tag as a str (its stubs also allow the
    bytes or QName a program may assign; the engine never assigns one), and
    the loader removes comments and processing instructions, whose tag is no
    name. Anything else is a programming error.
    """
    tag = el.tag
    if not isinstance(tag, str):
        raise TypeError(f"{el!r} has no name: only parsed elements belong in the engine's trees")
    return tag


def has_value(el: etree._Element) -> bool:
    """A property has a value when it has child elements or non-blank text."""
    return len(el) > 0 or bool(el.text and el.text.strip())


def replace_with_text(el: etree._Element, text: str = "", parent: etree._Element | None = None) -> None:
    """Remove ``el``, leaving ``text`` (and ``el``'s tail text) where it stood
    (``parent``: its parent, when the caller has it)."""
    if parent is None:
        parent = el.getparent()
        if parent is None:
            return
    joined = text + (el.tail or "")
    if joined:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + joined
        else:
            parent.text = (parent.text or "") + joined
    parent.remove(el)


def top_level_of(el: etree._Element) -> etree._Element | None:
    """The top level list holding ``el`` (``el`` itself when it is one)."""
    cur: etree._Element | None = el
    while cur is not None:
        parent = cur.getparent()
        if parent is None:
            return None
        if parent.tag in LIST_PARENTS:
            return cur
        cur = parent
    return None


def depth_in_list(el: etree._Element) -> int:
    """Steps from ``el`` up to its top level list (0 for the list itself).

    Walked up each time: only references without cdl:refroot ask, a few
    steps each, and a table of every element met would cost more.
    """
    depth = 0
    cur = el.getparent()
    while cur is not None and cur.tag not in LIST_PARENTS:
        depth += 1
        cur = cur.getparent()
    return depth


def doc_index_of(el: etree._Element) -> int | None:
    """The index of the document ``el`` was written in.

    Top level lists and the roots of copied subtrees carry the mark; walk up
    to the nearest one. An element that inherited children from a prototype
    of another document says so once (``P_COPIES``) instead of a mark on each
    copy: a copy is a child whose tag it names. Only errors, reports and
    cross-document copies ask this.
    """
    cur: etree._Element | None = el
    while cur is not None:
        mark = cur.get(P_DOC)
        if mark is not None:
            return int(mark)
        parent = cur.getparent()
        if parent is not None:
            copies = parent.get(P_COPIES)
            if copies is not None:
                doc, *tags = copies.split(" ")
                if cur.tag in tags:
                    return int(doc)
        cur = parent
    return None


def copies_mark(doc: int, tags: Iterable[object]) -> str:
    """The ``P_COPIES`` value for children of ``tags`` copied from document ``doc``.

    A merge copies the prototype's children of the names its list does not
    have, so copies and own children never share a name; a reference's
    extra shells take the name, and the origin, of the element they copy.
    One mark per merge instead of one per copy: every mark is freed again
    before the output is written, and hundreds of thousands of small frees
    slow the allocator down when the serializer next allocates.
    """
    return " ".join([str(doc), *[tag for tag in tags if isinstance(tag, str)]])


def stamp(copies: Iterable[etree._Element], scope: etree._Element) -> etree._Element:
    """A T_COPIES element holding ``copies`` (made from children of ``scope``):
    one deep copy of it makes them all again.

    lxml makes a document for every copy it makes, and fixes the namespaces
    of each element it moves, one call per element moved: copies of a stamp
    move in as one element. The namespaces the copies use are declared
    once on the stamp, with ``scope``'s prefixes, rather than on each copy
    (a copy carries the declarations of its element, each dropped again
    when the copy moves in).
    """
    made = list(copies)
    used = {T_COPIES[1 : T_COPIES.index("}")]}
    for top in made:
        for el in top.iter():
            if isinstance(el.tag, str) and el.tag[:1] == "{":
                used.add(el.tag[1 : el.tag.index("}")])
            used.update(key[1 : key.index("}")] for key in el.attrib if key[:1] == "{")
    nsmap = {prefix: uri for prefix, uri in scope.nsmap.items() if prefix is not None and uri in used}
    holder = etree.Element(T_COPIES, nsmap=nsmap)
    holder.extend(made)
    return holder


def depth_of(el: etree._Element) -> int:
    """Levels from the document root to ``el`` (the root is 1)."""
    depth = 0
    cur: etree._Element | None = el
    while cur is not None:
        depth += 1
        cur = cur.getparent()
    return depth


def children_mark(target: etree._Element) -> str | None:
    """Copies must say which document they were written in: a shell of the
    copies of ``target``'s children says it once (copies_mark) when they
    were all written in one document; else each child is marked, once (a
    clean target never changes), so that every copy carries its mark."""
    origins = [doc_index_of(child) for child in target]
    first = origins[0]
    if first is not None and all(origin == first for origin in origins):
        return copies_mark(first, [child.tag for child in target])
    for child, origin in zip(target, origins):
        if origin is not None and child.get(P_DOC) is None:
            child.set(P_DOC, str(origin))
    return None
