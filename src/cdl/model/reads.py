"""What each top level list's resolution read of the other top level lists
(issue 32: a diff and an update compare only the lists whose inputs changed).

Entry point: :class:`ListReads`, which a resolution fills when its
``Workspace.reads`` is set (``engine.phases.resolve_working``): the
prototypes merge records each cdl:extends it looks up
(``resolution.inherit``), the references phase each cdl:refroot of a
reference or expression variable it resolves (``ReferenceResolver.place``,
``replace_expression``), and the last phase the cdl:refroot of each item
left unresolved (its output writes the name the lookup finds). A name is
recorded with every candidate its lookup may try (``NameRef.candidates``):
an unprefixed name can find a list that another document adds.

Nothing else lets a list's resolved value depend on another list: a path
without cdl:refroot never leaves its own list (7.3.1,
``model.paths.parent_step``), and an expression reads only its variables
(7.3.6, ``model.expressions``). What a list reads is read with what those
lists read in turn: :func:`reaching` follows the records transitively.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping

from lxml import etree

from .elements import top_level_of
from .tables import NameRef
from .vocabulary import LIST_PARENTS


class ListReads:
    """For each top level list of one resolution's working trees (the element),
    the names of the lists its resolution looked up."""

    __slots__ = ("_list_of", "_names", "_read", "_taken")

    def __init__(self) -> None:
        #: Each list, with each name it looked up (by identity: one table holds each name once).
        self._read: set[tuple[etree._Element, int]] = set()
        self._names: dict[int, NameRef] = {}
        #: The top level list holding each element met on the way up from
        #: the parent of an element recorded (lists and their parents left out).
        self._list_of: dict[etree._Element | None, etree._Element | None] = {}
        #: The records of lists taken over from an earlier resolution, by name (:meth:`carry`).
        self._taken: dict[str, set[str]] = {}

    def __repr__(self) -> str:
        return f"<ListReads of {len({lst for lst, _ in self._read})} lists>"

    def add(self, lst: etree._Element, name: NameRef) -> None:
        """List ``lst`` looked up ``name``."""
        self._names[id(name)] = name
        self._read.add((lst, id(name)))

    def add_for(self, el: etree._Element, name: NameRef) -> None:
        """The list holding ``el`` looked up ``name`` (for it): one look-up of
        ``el``'s parent, most of the time (a resolution records one per
        cdl:refroot it resolves)."""
        parent = el.getparent()
        lst = self._list_of.get(parent, el)
        if lst is el:
            lst = self._holding(el, parent)
        if lst is not None:
            self._names[id(name)] = name
            self._read.add((lst, id(name)))

    def _holding(self, el: etree._Element, parent: etree._Element | None) -> etree._Element | None:
        """``top_level_of(el)`` (``parent``: its parent), remembered for each
        element on the way up from ``parent``, so that the next element
        recorded below any of them stops there (items are many, their
        ancestors few)."""
        if parent is None or parent.tag in LIST_PARENTS:
            return top_level_of(el)  # a top level list's own reference (7.3.4), or none
        known = self._list_of
        way = []
        node = parent
        while node not in known:
            way.append(node)
            up = node.getparent()
            if up is None or up.tag in LIST_PARENTS:
                lst = top_level_of(node)
                break
            node = up
        else:
            lst = known[node]
        for node in way:
            known[node] = lst
        return lst

    def carry(self, read: Mapping[str, set[str]], names: Container[str]) -> None:
        """Take the records of the lists ``names`` from ``read`` (an earlier
        resolution's, :meth:`by_name`): lists taken over from it, which read
        what they read there. Kept by name, as :meth:`by_name` gives them, so
        that what a resolution that takes lists over records is only what
        it resolves."""
        self._taken = {name: found for name, found in read.items() if name in names}

    def by_name(self, lists: Mapping[str, etree._Element]) -> dict[str, set[str]]:
        """The records by the name of each list (``lists``: the workspace's,
        name to element), each name read with every candidate its lookup may
        try (the sets are not to be changed: some are shared with the
        records of the next resolution)."""
        names = {el: name for name, el in lists.items()} if self._read else {}
        found: dict[str, set[str]] = {}
        for lst, key in self._read:
            reader = names.get(lst)
            if reader is not None:
                found.setdefault(reader, set()).update(self._names[key].candidates)
        for name, taken in self._taken.items():
            own = found.get(name)
            found[name] = taken if own is None else own | taken
        return found


def reaching(changed: Iterable[str], reads: Iterable[Mapping[str, set[str]]]) -> set[str]:
    """The names of the lists ``changed`` and of every list that reads one of
    them, directly or through others, by any of the records ``reads`` (one
    per version: a list is reached when either version's reads reach it)."""
    readers: dict[str, list[str]] = {}
    for records in reads:
        for reader, names in records.items():
            for name in names:
                readers.setdefault(name, []).append(reader)
    reached = set(changed)
    stack = list(reached)
    while stack:  # explicit stack: chains of reads are as long as the system
        for reader in readers.get(stack.pop(), ()):
            if reader not in reached:
                reached.add(reader)
                stack.append(reader)
    return reached
