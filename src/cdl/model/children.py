"""Children of wide elements by name: the index behind every path step.

Used by phases 5 and 6 (references and expressions, deploy-time rounds): a
path step (7.3.1) selects the children of a node that have one name. lxml
finds them by scanning every sibling (``iterchildren(tag)``), which is cheap
for the usual handful of children but makes a list of N components that refer
to each other by name cost N x N (``../svc19999/port`` in a cluster of 20,000).

Where the index lives and when it changes:

- one :class:`ChildIndex` per resolution, in ``Workspace.children``, made
  empty with the workspace (after loading, before prototypes);
- an element gets an entry the first time a path step looks up one of its
  children, and only if it has more than :data:`WIDE` children; narrower
  elements are scanned as before (a scan of a few siblings in C costs less
  than keeping an entry). Building an entry costs one pass over the
  element's children, once;
- it is used only once inheritance is complete (prototypes are merged
  before the first reference is followed), so merges never see it;
- after that, the tree changes in three ways, each of which tells the
  index: a reference with several targets adds sibling shells after itself
  (:meth:`ChildIndex.inserted_after`); an evaluated cdl:expression, and an
  expression replaced by a deploy-time value, leave their holder
  (:meth:`ChildIndex.removing`). A resolved reference receives its copies
  below itself, but an unresolved element is never indexed (a path step
  stops at it), so that needs no update. Building the output takes the
  trees apart after the last lookup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from lxml import etree

#: Elements with more children than this are indexed on their first lookup.
WIDE = 16

#: Children up to which :meth:`ChildIndex.only` compares each child's name
#: itself rather than ask lxml to filter them by name, whose fixed cost per
#: lookup is that of comparing several names (docs/performance.md).
COMPARED_MAX = 4

_NONE: tuple[etree._Element, ...] = ()


def children_by_name(parent: etree._Element) -> dict[str, list[etree._Element]]:
    """The children of ``parent`` by name (Clark notation), each name's in
    document order: what a path step from ``parent`` selects (7.3.1).
    Comments and processing instructions are no properties."""
    table: dict[str, list[etree._Element]] = {}
    for child in parent.iterchildren(etree.Element):
        table.setdefault(cast(str, child.tag), []).append(child)
    return table


class ChildIndex:
    """Children by name of the wide elements looked up so far (see the module)."""

    __slots__ = ("wide",)

    def __init__(self) -> None:
        #: element -> child name (Clark notation) -> those children, in document order.
        self.wide: dict[etree._Element, dict[str, list[etree._Element]]] = {}

    def named(self, parent: etree._Element, tag: str) -> Sequence[etree._Element]:
        """The children of ``parent`` named ``tag``, in document order (do not
        modify): what a path step selects (7.3.1). For a narrow element,
        lxml's filter by name picks what :func:`children_by_name` would list
        under ``tag``."""
        table = self.wide.get(parent)
        if table is None:
            if len(parent) <= WIDE:
                return list(parent.iterchildren(tag))
            table = self.build(parent)
        return table.get(tag, _NONE)

    def only(self, parent: etree._Element, tag: str, count: int) -> etree._Element | None:
        """The child of ``parent`` named ``tag`` if it has exactly one, else
        None: :meth:`named` for a step that selects one node (the fast path
        of resolution takes no other). ``count``, the number of children of
        ``parent`` when the caller met it, only chooses how to look: one gone
        stale since makes the lookup slower, never different
        (tests/internals/test_children.py checks that both agree)."""
        if count <= COMPARED_MAX:
            child = None
            for candidate in parent.getchildren():
                if candidate.tag == tag:
                    if child is not None:
                        return None  # several
                    child = candidate
            return child
        found = self.named(parent, tag)
        return found[0] if len(found) == 1 else None

    def build(self, parent: etree._Element) -> dict[str, list[etree._Element]]:
        """Index the children of ``parent`` (one pass)."""
        table = self.wide[parent] = children_by_name(parent)
        return table

    def inserted_after(self, anchor: etree._Element, added: Sequence[etree._Element]) -> None:
        """``added`` (named as ``anchor``) were just placed right after ``anchor``.

        Finding ``anchor`` among its same-named siblings costs their number
        (a C-level identity scan), which a step naming them selects whole.
        """
        parent = anchor.getparent()
        table = self.wide.get(parent) if parent is not None else None
        if table is not None:
            same = table[cast(str, anchor.tag)]
            at = same.index(anchor) + 1  # identity: lxml elements compare by identity
            same[at:at] = added

    def removing(self, child: etree._Element) -> None:
        """``child`` is about to leave its parent."""
        parent = child.getparent()
        table = self.wide.get(parent) if parent is not None else None
        if table is not None:
            tag = cast(str, child.tag)
            same = table[tag]
            same.remove(child)
            if not same:
                del table[tag]
