"""The one rule pairing two versions of a system's elements (issue 32;
docs/semantics.md, "Diff", "Update").

Entry points: :func:`pair_indexes` (the rule: two versions' children of
one kind paired, the k-th of a name with the k-th of that name; on
elements, :func:`pair_by_name`), :func:`is_component` (the kind of an
element of a resolved tree: a component or a property), and for a
deployment's update :func:`pair_components` (the components of two plans
paired) and :class:`Counterparts` (each element of a running version with
its pair in the new one).

The children of a component (and the top level lists) are paired by name
and kind: components with components, properties with properties, each
the k-th of its name among its kind with the k-th. ``cdl diff``
(``planning.diff``) compares the pairs; ``Deployment.update``
(``deployment.carry``) carries each component's state and each value to its
pair. One rule for both: a component the diff finds unchanged keeps its
state, and a value goes where the diff says its property went.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from typing import Any, Protocol, TypeVar, cast

from lxml import etree

from ..model.vocabulary import LIST_PARENTS, T_EXPRESSION

__all__ = ["Counterparts", "is_component", "pair_by_name", "pair_components", "pair_indexes"]


class _Named(Protocol):
    @property
    def tag(self) -> object: ...


_E = TypeVar("_E", bound=_Named)


def pair_indexes(old: Sequence[object], new: Sequence[object]) -> list[tuple[int | None, int | None]]:
    """The rule, on the names of two versions' children of one kind (the
    components, or the properties): the k-th of a name in ``old`` paired with
    the k-th of that name in ``new``, as positions (None where one has
    fewer), in the order of ``new``, then the ones only ``old`` has."""
    by_name: dict[object, list[int]] = {}
    ranks: list[int] = []
    for i, name in enumerate(old):
        same = by_name.get(name)
        if same is None:
            same = by_name[name] = []
        ranks.append(len(same))
        same.append(i)
    seen: dict[object, int] = {}
    pairs: list[tuple[int | None, int | None]] = []
    for j, name in enumerate(new):
        k = seen.get(name, 0)
        seen[name] = k + 1
        same = by_name.get(name)
        pairs.append((same[k] if same is not None and k < len(same) else None, j))
    pairs.extend((i, None) for i, (name, k) in enumerate(zip(old, ranks)) if k >= seen.get(name, 0))
    return pairs


def pair_by_name(old: Sequence[_E], new: Sequence[_E]) -> list[tuple[_E | None, _E | None]]:
    """Two versions' children of one kind paired by :func:`pair_indexes`, by their names."""
    indexes = pair_indexes([el.tag for el in old], [el.tag for el in new])
    return [(None if i is None else old[i], None if j is None else new[j]) for i, j in indexes]


def pair_components(
    old: tuple[Sequence[etree._Element], Mapping[int, Sequence[int]]], new: tuple[Sequence[etree._Element], Mapping[int, Sequence[int]]]
) -> list[int | None]:
    """Each component of a running version's plan paired with the new
    version's (None: it has none), by the rule: each version's components
    by number (0 the system element, a parent's number below its
    children's) and each one's component children, in document order.
    Index 0 is the system."""
    (elements, children), (new_elements, new_children) = old, new
    found: list[int | None] = [0] + [None] * (len(elements) - 1)  # a plan of no system has no element
    for p in range(len(elements)):
        q, ours = found[p], children.get(p)
        if q is None or not ours:
            continue
        theirs = new_children.get(q, ())
        for i, j in pair_indexes([elements[c].tag for c in ours], [new_elements[d].tag for d in theirs]):
            if i is not None:
                found[ours[i]] = None if j is None else theirs[j]
    return found


def is_component(el: etree._Element) -> bool:
    """Whether an element below a top level list is a component (the plan's
    definition, ``planning.plan``: child elements, and not a cdl:expression
    or the property that holds one; only pending expressions are left in a
    resolved system)."""
    # iterchildren, not find: find goes through lxml's ElementPath on each
    # call, which was most of a comparison's walk.
    return len(el) > 0 and el.tag != T_EXPRESSION and next(el.iterchildren(T_EXPRESSION), None) is None


class Counterparts:
    """Each element of a running version's working trees paired with the
    new version's (None: it has none), by the rule, step by step from its
    top level list (top level lists by name: theirs are unique).

    Made with each version's plan's components (``components``: their
    elements) and their pairs (``paired``: :func:`pair_components`, by
    element), and the new version's top level lists by name (``tops``). In
    the system, an element's kind is the plan's; outside it (templates,
    which have no components) it is :func:`is_component`, where the running
    version's ``values`` (elements given a value or released, whose
    resolution may have given them children since) count as properties.
    Asked before the new version is given any value, so its kinds are those
    of its plan. Properties of a name are paired among their family when
    one of them is first asked for."""

    __slots__ = ("_components", "_found", "_system", "_tops", "_values")

    def __init__(
        self,
        components: tuple[Container[etree._Element], Container[etree._Element]],
        paired: Mapping[etree._Element, etree._Element | None],
        tops: Mapping[Any, etree._Element],
        values: Container[etree._Element],
    ) -> None:
        self._components = components
        self._tops = tops
        self._values = values
        self._found: dict[etree._Element, etree._Element | None] = dict(paired)
        #: Whether each element paired so far lies in its version's system
        #: (the plan's components do; so do their pairs).
        self._system: dict[etree._Element, bool] = dict.fromkeys(paired, True)
        self._system.update((there, True) for there in paired.values() if there is not None)

    def __call__(self, el: etree._Element) -> etree._Element | None:
        """The new version's element paired with ``el``, or None."""
        found = self._found
        climbed: list[etree._Element] = []
        cur = el
        while cur not in found:  # explicit stack: up to a paired ancestor
            parent = cur.getparent()
            if parent is None:
                return None  # no top level list above it
            if parent.tag in LIST_PARENTS:
                there = found[cur] = self._tops.get(cur.tag)
                self._system[cur] = cur in self._components[0]
                if there is not None:
                    self._system[there] = there in self._components[1]
                break
            climbed.append(cur)
            cur = parent
        for child in reversed(climbed):
            if child not in found:
                parent = child.getparent()
                assert parent is not None
                self._pair_children(parent, self._kinds(parent, 0, [child])[0], cast(str, child.tag))
        return found[el]

    def _pair_children(self, parent: etree._Element, kind: bool, tag: str) -> None:
        """Pair the children of ``parent`` (paired already) of one ``kind``
        (components or properties) and one name with those of its pair: the
        rule asks no others."""
        found, system = self._found, self._system
        there = found[parent]
        ours = self._children(parent, 0, kind, tag)
        system.update(dict.fromkeys(ours, system[parent]))
        if there is None:
            found.update(dict.fromkeys(ours))
            return
        theirs = self._children(there, 1, kind, tag)
        system.update(dict.fromkeys(theirs, system[there]))
        found.update((a, b) for a, b in pair_by_name(ours, theirs) if a is not None)

    def _children(self, parent: etree._Element, side: int, kind: bool, tag: str) -> list[etree._Element]:
        """The children of ``parent`` (of version ``side``) of one ``kind`` named ``tag``."""
        children = list(parent.iterchildren(tag))
        return [c for c, k in zip(children, self._kinds(parent, side, children)) if k is kind]

    def _kinds(self, parent: etree._Element, side: int, children: Sequence[etree._Element]) -> list[bool]:
        """Whether each of ``children`` of ``parent`` (of version ``side``) is a component."""
        if self._system[parent]:
            components = self._components[side]
            return [c in components for c in children]
        values = self._values if side == 0 else ()
        return [is_component(c) and c not in values for c in children]
