"""Phase 8: what changes between two versions of a system, and why (issue 32).

Entry points: :func:`compare_systems` (the components whose resolved
configuration differs, from the output trees of two resolutions) and
:func:`build_diff` (the :class:`Diff`, each change with its causes: the
written changes of ``planning.changes`` its explanations reach);
``Document.diff`` (``src/cdl/engine/diff.py``) composes them. The rules are
in docs/semantics.md, "Diff"; the JSON and text forms in README.md
("cdl diff").

A *component* is the plan's (``planning.plan``): a top level list of the
system, or an element below one with child elements, other than a
cdl:expression or the property holding one. Its *own configuration* is its
attributes, its text and its properties (its children that are no
components); a change in a property changes its component only. Two
versions' children are paired by name and kind, the k-th with the k-th
(``planning.pairing``: the one rule, an update's too); a component or
property only one version has is added or removed. Paths follow the one
rule of ``model.naming``.

Cost: the top level lists of the two versions are compared by their
serializations (lxml's, in C), and only those that differ are walked; below
them, child components are compared the same way while the bytes
serialized stay under twice those of the top level, so that the comparison
stays linear however the system nests. Equal serializations are equal
configurations; the walk decides the rest, element by element, and decides
everything when ``shortcut`` is off (``CDL_NO_FAST_PATHS``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from ..errors import SelectionError
from ..loading.parse import hardened_parser, parse_written
from ..model.elements import tag_of
from ..model.limits import Limits
from ..model.naming import PATH_KEPT, PATH_SHOWN, Prefixes, counted, shortened
from ..model.suggest import did_you_mean
from ..resolution.explain import Explanation
from ..resolution.output import Data, element_data
from .changes import Place, Written, WrittenChange, place
from .pairing import is_component, pair_by_name

__all__ = [
    "Cause",
    "Comparison",
    "ComponentChange",
    "Diff",
    "IndexPath",
    "Kept",
    "ValueChange",
    "build_diff",
    "compare_systems",
    "explanation_places",
]

#: Where an element is in a resolved system: the position of each element
#: on the way down from the cdl:system element.
IndexPath = tuple[int, ...]


# -- the data -----------------------------------------------------------------------


@dataclass(frozen=True)
class ValueChange:
    """One property of a component that differs: ``path`` (its component's
    path and its step, ``[k]`` after a name its siblings share), ``change``
    (``added``, ``removed`` or ``changed``), its ``old`` and ``new`` value
    as ``Resolution.to_data`` writes a property (None where that version has
    none) and ``causes``, the numbers of the :class:`Cause` that made the
    difference. ``path`` is the component's own path when what differs is
    the component's own attributes or text."""

    path: str
    change: str
    old: Data | None
    new: Data | None
    causes: tuple[int, ...] = ()

    def to_data(self) -> dict[str, Any]:
        return {"path": self.path, "change": self.change, "old": self.old, "new": self.new, "causes": list(self.causes)}


@dataclass(frozen=True)
class ComponentChange:
    """A component ``added``, ``removed`` or ``changed`` (its own
    configuration differs: ``values``), at ``path`` (as ``cdl plan`` writes
    it: ``[k]`` after a name its siblings share); its ``causes`` are those
    of its values."""

    path: str
    change: str
    values: tuple[ValueChange, ...]
    causes: tuple[int, ...]

    def to_data(self) -> dict[str, Any]:
        return {"path": self.path, "change": self.change, "causes": list(self.causes), "values": [v.to_data() for v in self.values]}


@dataclass(frozen=True)
class Cause:
    """An element written differently (``change``: ``changed``, ``added``,
    ``removed``), as the ``old`` and the ``new`` version write it (None for
    the version without it), numbered from 1, with the ``components`` its
    difference reaches."""

    number: int
    change: str
    old: Written | None
    new: Written | None
    components: tuple[str, ...]

    def to_data(self) -> dict[str, Any]:
        return {
            "id": self.number,
            "change": self.change,
            "old": self.old.to_data() if self.old else None,
            "new": self.new.to_data() if self.new else None,
            "components": list(self.components),
        }


class Diff:
    """What differs between two versions of a system (``Document.diff``,
    ``cdl diff``): the components that changed, in document order (those
    only the old version has where they stood), and the causes, each once.
    True when there is a difference."""

    __slots__ = ("causes", "components", "new", "old", "warnings")

    def __init__(
        self, old: str, new: str, components: Sequence[ComponentChange], causes: Sequence[Cause], warnings: Sequence[str] = ()
    ) -> None:
        self.old = old
        self.new = new
        self.components = tuple(components)
        self.causes = tuple(causes)
        #: What resolving either version warned of (``file:line: message``).
        self.warnings = list(warnings)

    def __bool__(self) -> bool:
        return bool(self.components)

    def __repr__(self) -> str:
        kinds = {k: sum(1 for c in self.components if c.change == k) for k in ("changed", "added", "removed")}
        said = ", ".join(f"{n} {k}" for k, n in kinds.items() if n) or "no difference"
        return f"<cdl.Diff {self.old!r} -> {self.new!r} ({said}; {counted(len(self.causes), 'cause')})>"

    def to_data(self) -> dict[str, Any]:
        """``{"old", "new", "causes": [...], "components": [...]}`` (README.md, "cdl diff")."""
        return {
            "old": self.old,
            "new": self.new,
            "causes": [c.to_data() for c in self.causes],
            "components": [c.to_data() for c in self.components],
        }

    def to_json(self) -> str:
        """:meth:`to_data` as JSON text, indented."""
        return json.dumps(self.to_data(), indent=2, ensure_ascii=False) + "\n"

    def to_text(self) -> str:
        """Like a unified diff: ``---``/``+++`` the versions, then each cause
        once (where each version writes it, and the components it reaches),
        then one ``@@ path change @@`` hunk per component, each value as a
        ``-`` line and a ``+`` line (JSON values) with its causes."""
        return "".join(_text(self))


# -- comparing ---------------------------------------------------------------------


@dataclass
class _Value:
    """A property (or, with no ``step``, the component's own attributes and
    text) that differs, with its position in its component in each version
    (None where a version lacks it, or for the component's own)."""

    step: str | None
    change: str
    old: Data | None
    new: Data | None
    where: tuple[int | None, int | None]


@dataclass
class _Found:
    """A component that differs, as the walk found it: its number (see
    :class:`Comparison`) and its values."""

    number: int
    change: str
    values: list[_Value]


@dataclass
class Comparison:
    """What :func:`compare_systems` found, before the causes are known."""

    found: list[_Found] = field(default_factory=list)
    #: For each component visited, by number (0 is the cdl:system element):
    #: its parent, its path (the whole one up to PATH_SHOWN steps, else the
    #: first and last PATH_KEPT steps, carried down: a path costs the same at
    #: any depth), and its position among its parent's children in each
    #: version (None where that version lacks it).
    parent: list[int] = field(default_factory=lambda: [-1])
    paths: list[str] = field(default_factory=lambda: [""])
    ends: list[tuple[tuple[str, ...], tuple[str, ...]] | None] = field(default_factory=lambda: [None])
    depth: list[int] = field(default_factory=lambda: [0])
    at: list[tuple[int | None, int | None]] = field(default_factory=lambda: [(None, None)])

    def add(self, parent: int, step: str, at: tuple[int | None, int | None]) -> int:
        """Number the component ``step`` names below ``parent``."""
        depth = self.depth[parent] + 1
        if depth <= PATH_SHOWN:
            path, ends = f"{self.paths[parent]}/{step}", None
        else:
            above = self.ends[parent]
            if above is None:  # the parent's path is whole: PATH_SHOWN steps
                names = self.paths[parent][1:].split("/")
                above = (tuple(names[:PATH_KEPT]), tuple(names[-PATH_KEPT:]))
            ends = (above[0], (*above[1][1:], step))
            path = shortened(ends[0], depth, ends[1])
        self.parent.append(parent)
        self.paths.append(path)
        self.ends.append(ends)
        self.depth.append(depth)
        self.at.append(at)
        return len(self.parent) - 1

    def path(self, number: int) -> str:
        """Component ``number``'s path, as ``cdl plan`` writes it."""
        return self.paths[number]

    def index_path(self, number: int, side: int) -> IndexPath:
        """Where component ``number`` is in version ``side`` (0 old, 1 new)."""
        steps: list[int] = []
        while number > 0:
            position = self.at[number][side]
            assert position is not None
            steps.append(position)
            number = self.parent[number]
        steps.reverse()
        return tuple(steps)


class Kept:
    """One version's resolved system kept as the serialization of each of its
    top level lists (lxml's, in C), so that the version's trees need not stay
    alive while the other version resolves; a list is parsed again when the
    comparison walks it (:meth:`element`). Made from an output tree's
    cdl:system element (None: a version without one)."""

    __slots__ = ("_elements", "_parser", "data", "limits", "tags")

    def __init__(
        self, system: etree._Element | None, limits: Limits, keep: bool = False, compared: Callable[[etree._Element], bool] | None = None
    ) -> None:
        self.tags: list[str] = []
        #: Each list's serialization; None for one ``compared`` leaves out:
        #: equal in both versions by construction (see :func:`compare_systems`).
        self.data: list[bytes | None] = []
        self.limits = limits
        tops = list(system) if system is not None else []
        for top in tops:
            self.tags.append(tag_of(top))
            self.data.append(etree.tostring(top, with_tail=False) if compared is None or compared(top) else None)
        #: With ``keep`` (the version resolved last, which nothing else
        #: resolves beside), the lists themselves, which need no parse.
        self._elements = tops if keep else None
        # One parser for all (made per parse, it cost more than the parses);
        # a Kept serves one comparison, in one thread.
        self._parser = hardened_parser(remove_blank_text=True, remove_comments=True, remove_pis=True, collect_ids=False)

    def element(self, i: int) -> etree._Element:
        """Top level list ``i``, as it was."""
        if self._elements is not None:
            return self._elements[i]
        data = self.data[i]
        assert data is not None  # a list left out is never walked
        try:
            return etree.fromstring(data, self._parser)
        except etree.XMLSyntaxError:  # nested deeper than libxml2 parses: the loader's deep parse
            return parse_written(data, "(resolved)", self.limits)


class _Top:
    """Top level list ``index`` of a :class:`Kept` version, named by ``tag``."""

    __slots__ = ("index", "tag")

    def __init__(self, tag: str, index: int) -> None:
        self.tag = tag
        self.index = index


#: A child component in a walk: an element, or a top level list not parsed yet.
_Member = etree._Element | _Top


class _Alike:
    """Equal serializations are equal subtrees: a test in C before a walk in
    Python. Every top level list is tested; below them, child components are,
    until the bytes serialized below them reach twice those of the top level
    lists (the comparison stays linear however the system nests)."""

    def __init__(self, enabled: bool, kept: tuple[Kept, Kept]) -> None:
        self.enabled = enabled
        self.kept = kept
        self.spent = 0
        self.budget: int | None = None

    def same(self, a: _Member, b: _Member) -> bool:
        if isinstance(a, _Top) and isinstance(b, _Top):
            one, two = self.kept[0].data[a.index], self.kept[1].data[b.index]
            if one is None or two is None:
                # Left out by both versions (Kept's ``compared``): neither the
                # list nor anything it reads is written differently.
                assert one is None and two is None
                return True
            if not self.enabled:
                return False
        else:
            if not self.enabled or (self.budget is not None and self.spent >= self.budget):
                return False
            assert isinstance(a, etree._Element) and isinstance(b, etree._Element)
            one, two = etree.tostring(a, with_tail=False), etree.tostring(b, with_tail=False)
        self.spent += len(one) + len(two)
        return one == two

    def top_level_done(self) -> None:
        self.budget = 3 * self.spent


class _Family:
    """The children of one version of a component: its properties and its
    child components, and for those a diff names, their position among all
    the children (worked out when first asked: most families have nothing
    that differs)."""

    __slots__ = ("_children", "_position", "components", "properties")

    def __init__(self, children: Sequence[_Member], top: bool = False) -> None:
        self._children = children
        self.properties: list[etree._Element] = []
        self.components: list[_Member] = []
        for child in children:
            if isinstance(child, _Top) or top or is_component(child):
                self.components.append(child)
            else:
                self.properties.append(child)
        self._position: dict[_Member, int] | None = None

    def position(self, member: _Member) -> int:
        if self._position is None:
            self._position = {child: i for i, child in enumerate(self._children)}
        return self._position[member]


def _own(el: etree._Element) -> tuple[dict[str, str], str]:
    """A component's attributes and text (a leaf's exactly; between its
    children, what is not blank: the JSON mapping's ``#text``)."""
    if len(el):
        text = "".join([el.text or "", *(c.tail or "" for c in el)])
        return dict(el.attrib), text if text.strip() else ""
    return dict(el.attrib), el.text or ""


def _own_data(el: etree._Element) -> Data:
    """A component's attributes and text as ``to_data`` writes them."""
    shallow = etree.Element(tag_of(el), dict(el.attrib), nsmap=el.nsmap)
    shallow.text = _own(el)[1] or None
    return element_data(shallow)


def _same_tree(a: etree._Element, b: etree._Element) -> bool:
    """Whether two elements and everything inside them are the same
    (names, attributes, texts), element by element (explicit stack)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x.tag != y.tag or x.text != y.text or x.tail != y.tail or len(x) != len(y) or dict(x.attrib) != dict(y.attrib):
            return False
        stack.extend(zip(x, y))
    return True


def _same_attributes(a: etree._Element, b: etree._Element) -> bool:
    """Whether two elements have the same attributes, in any order (the same
    ones in the same order need no mapping built)."""
    return a.items() == b.items() or dict(a.attrib) == dict(b.attrib)


def _same_leaf(a: etree._Element, b: etree._Element) -> bool:
    """Whether two elements without children are the same."""
    return a.text == b.text and _same_attributes(a, b)


def _same_property(a: etree._Element, b: etree._Element) -> bool:
    if len(a) or len(b):
        return _same_tree(a, b)  # a pending expression
    return _same_leaf(a, b)


#: A pair of components being compared: its number and each version's element.
_Pair = tuple[int, etree._Element | None, etree._Element | None]


class _Walk:
    """The comparison of two versions of a system (:func:`compare_systems`)."""

    def __init__(self, kept: tuple[Kept, Kept], prefixes: tuple[Prefixes, Prefixes], shortcut: bool) -> None:
        self.kept = kept
        self.result = Comparison()
        self.alike = _Alike(shortcut, kept)
        self.qname = (prefixes[0].qname, prefixes[1].qname)
        #: Each version's steps (model.naming: [k] among same-named siblings).
        self.steps = (prefixes[0].steps(), prefixes[1].steps())

    def tops(self) -> tuple[_Family, _Family]:
        """Each version's top level lists, as the family of the system."""
        return (
            _Family([_Top(tag, i) for i, tag in enumerate(self.kept[0].tags)], top=True),
            _Family([_Top(tag, i) for i, tag in enumerate(self.kept[1].tags)], top=True),
        )

    def family(self, el: etree._Element | None) -> _Family:
        return _Family(list(el) if el is not None else ())  # no comments: the parser drops them

    def step(self, member: _Member, side: int) -> str:
        """``member``'s step in its version (a top level list's name is unique: no ``[k]``)."""
        return self.qname[side](member.tag) if isinstance(member, _Top) else self.steps[side](member)

    def element(self, member: _Member | None, side: int) -> etree._Element | None:
        return self.kept[side].element(member.index) if isinstance(member, _Top) else member

    def number(self, parent: int, families: tuple[_Family, _Family], a: _Member | None, b: _Member | None) -> int:
        """A number for the component pair ``a``, ``b`` below component ``parent``."""
        step = self.step(b, 1) if b is not None else self.step(a, 0)  # type: ignore[arg-type]
        at = (families[0].position(a) if a is not None else None, families[1].position(b) if b is not None else None)
        return self.result.add(parent, step, at)

    def children(self, number: int, families: tuple[_Family, _Family]) -> list[_Pair]:
        """The pairs of child components that may differ, numbered."""
        found = []
        for a, b in pair_by_name(families[0].components, families[1].components):
            if a is not None and b is not None and self.alike.same(a, b):
                continue
            found.append((self.number(number, families, a, b), self.element(a, 0), self.element(b, 1)))
        return found

    def compare_own(self, a: etree._Element | None, b: etree._Element | None, values: list[_Value]) -> None:
        """Add to ``values`` the component's own attributes and text, when they differ."""
        change = "changed" if a is not None and b is not None else ("added" if a is None else "removed")
        own = (_own(a) if a is not None else None, _own(b) if b is not None else None)
        if own[0] != own[1] and any(o is not None and o != ({}, "") for o in own):
            old = _own_data(a) if a is not None else None
            new = _own_data(b) if b is not None else None
            values.append(_Value(None, change, old, new, (None, None)))

    def compare(self, number: int, a: etree._Element | None, b: etree._Element | None, families: tuple[_Family, _Family]) -> None:
        """Record component ``number`` if it is added, removed, or its own configuration differs."""
        values: list[_Value] = []
        change = "changed" if a is not None and b is not None else ("added" if a is None else "removed")
        self.compare_own(a, b, values)
        for x, y in pair_by_name(families[0].properties, families[1].properties):
            if x is not None and y is not None and _same_property(x, y):
                continue
            step = self.step(y, 1) if y is not None else self.step(x, 0)  # type: ignore[arg-type]
            kind = "changed" if x is not None and y is not None else ("added" if x is None else "removed")
            old = element_data(x) if x is not None else None
            new = element_data(y) if y is not None else None
            where = (families[0].position(x) if x is not None else None, families[1].position(y) if y is not None else None)
            values.append(_Value(step, kind, old, new, where))
        if change != "changed" or values:
            self.result.found.append(_Found(number, change, values))

    def aligned(self, number: int, a: etree._Element | None, b: etree._Element | None) -> list[_Pair] | None:
        """:meth:`compare` and :meth:`children` of a pair whose children
        have the same names in the same order, each a component in one
        version when it is one in the other (most pairs): ``pair_by_name``
        pairs those by position, so that no family is sorted. None, with
        nothing recorded, for any other pair (a specialisation, off with
        ``CDL_NO_FAST_PATHS``)."""
        if a is None or b is None:
            return None
        ours, theirs = list(a), list(b)
        if len(ours) != len(theirs):
            return None
        names = [(x.tag, x.tail) for x in ours]
        if names != [(y.tag, y.tail) for y in theirs]:
            if [x.tag for x in ours] != [y.tag for y in theirs]:
                return None
            names = []  # the tails differ: the own text may
        values: list[_Value] = []
        differ: list[int] = []
        for i, x in enumerate(ours):
            y = theirs[i]
            if not (len(x) or len(y)):  # leaves: properties
                if not _same_leaf(x, y):
                    values.append(_Value(self.step(y, 1), "changed", element_data(x), element_data(y), (i, i)))
                continue
            is_x = is_component(x)
            if is_x != is_component(y):
                return None
            if not is_x:
                if not _same_tree(x, y):
                    values.append(_Value(self.step(y, 1), "changed", element_data(x), element_data(y), (i, i)))
            elif not self.alike.same(x, y):
                differ.append(i)
        if not (names and a.text == b.text and _same_attributes(a, b)):
            own: list[_Value] = []
            self.compare_own(a, b, own)
            values[:0] = own
        if values:
            self.result.found.append(_Found(number, "changed", values))
        return [(self.result.add(number, self.step(theirs[i], 1), (i, i)), ours[i], theirs[i]) for i in differ]

def compare_systems(
    kept: tuple[Kept, Kept],
    prefixes: tuple[Prefixes, Prefixes],
    shortcut: bool = True,
    select: str | None = None,
    url: str | None = None,
) -> Comparison:
    """The components whose resolved configuration differs between two
    versions of a system (:class:`Kept`), in document order, those only the
    old version has after their new siblings. ``prefixes`` write each
    version's names; ``select``: only the component at that path (as ``cdl
    plan`` writes it, the leading ``/`` optional), :class:`cdl.errors.SelectionError`
    (``COMPONENT_NOT_FOUND``) when neither version has it (``url``: the
    document it names). ``shortcut``: compare serializations first (off:
    element by element only)."""
    walk = _Walk(kept, prefixes, shortcut)
    if select is not None:
        number, a, b = _selected(walk, select, url)
        walk.compare(number, a, b, (walk.family(a), walk.family(b)))
        return walk.result
    stack = walk.children(0, walk.tops())
    walk.alike.top_level_done()
    stack.reverse()
    while stack:  # explicit stack: systems nest as deep as max_depth allows
        number, a, b = stack.pop()
        below = walk.aligned(number, a, b) if shortcut else None
        if below is None:
            families = (walk.family(a), walk.family(b))
            walk.compare(number, a, b, families)
            below = walk.children(number, families)
        stack.extend(reversed(below))
    return walk.result


def _selected(walk: _Walk, select: str, url: str | None) -> _Pair:
    """The component pair ``select`` names, numbered with its ancestors."""
    number = 0
    families = walk.tops()
    pair: tuple[etree._Element | None, etree._Element | None] = (None, None)
    for step in select.strip("/").split("/"):
        found: list[_Member | None] = [None, None]
        for side in (0, 1):
            for member in families[side].components:
                written = walk.step(member, side)
                if step in (written, f"{written}[1]"):
                    found[side] = member
        if found[0] is None and found[1] is None:
            here = walk.result.path(number)
            names = sorted({f"{here}/{walk.step(m, side)}" for side, f in enumerate(families) for m in f.components})
            raise SelectionError(
                f"{select!r} names no component of either version: {here or 'the system'} has no component {step!r}"
                + did_you_mean(f"{here}/{step}", names),
                code="COMPONENT_NOT_FOUND",
                url=url,
                path=select,
            )
        number = walk.number(number, families, found[0], found[1])
        pair = (walk.element(found[0], 0), walk.element(found[1], 1))
        families = (walk.family(pair[0]), walk.family(pair[1]))
    return number, pair[0], pair[1]


# -- the causes ----------------------------------------------------------------------


def explanation_places(explanations: Iterable[Explanation]) -> set[Place]:
    """Every place the steps of ``explanations`` name, nested ones too: the
    written elements a value was made from."""
    places: set[Place] = set()
    stack = list(explanations)
    while stack:
        e = stack.pop()
        for step in e.steps:
            if step.url is not None and step.path is not None:
                places.add(place(step.url, step.path, step.line))
            if step.source is not None:
                stack.append(step.source)
            stack.extend(step.variables.values())
    return places


#: What a diff asks of each version's provenance: for version ``side`` (0
#: old, 1 new), the places on the explanation of the element at each index path.
Explainer = Callable[[int, Sequence[IndexPath]], list[set[Place]]]


def build_diff(
    comparison: Comparison,
    changes: Sequence[WrittenChange],
    explainer: Explainer | None,
    urls: tuple[str, str],
    warnings: Sequence[str] = (),
) -> Diff:
    """The :class:`Diff` of ``comparison``: each value's causes are the
    ``changes`` whose places its explanation in either version names, or all
    of them when it names none (something among them made the difference).
    Without an ``explainer`` every value has every change as its cause: what
    the rule gives when there is at most one change."""
    asked = _asked(comparison)
    reached: list[list[int]] = [[] for _ in asked]  # change indexes, per thing explained
    if explainer is not None and changes:
        index = _places_index(changes)
        for side in (0, 1):
            wanted = [(k, path) for k, paths in enumerate(asked) if (path := paths[side]) is not None]
            for (k, _), places in zip(wanted, explainer(side, [p for _, p in wanted])):
                reached[k].extend(sorted({i for place in places for i in index[side].get(place, ())}))
    everything = list(range(len(changes)))
    component_causes: list[list[int]] = []
    k = 0
    value_causes: list[list[list[int]]] = []
    for found in comparison.found:
        mine: list[list[int]] = []
        for _ in found.values:
            mine.append(sorted(set(reached[k])) or everything)
            k += 1
        whole: set[int] = {i for causes in mine for i in causes}
        if found.change != "changed":
            whole |= set(reached[k]) or set(everything)
            k += 1
        component_causes.append(sorted(whole))
        value_causes.append(mine)
    return _numbered(comparison, changes, component_causes, value_causes, urls, warnings)


def _asked(comparison: Comparison) -> list[tuple[IndexPath | None, IndexPath | None]]:
    """What is explained, in order: each value of each component found (in
    each version that has it), then an added or removed component itself."""
    asked: list[tuple[IndexPath | None, IndexPath | None]] = []
    for found in comparison.found:
        at = comparison.at[found.number]
        bases = [comparison.index_path(found.number, side) if at[side] is not None else None for side in (0, 1)]
        for value in found.values:
            pair: list[IndexPath | None] = []
            for side, data in ((0, value.old), (1, value.new)):
                base, position = bases[side], value.where[side]
                if data is None or base is None:  # that version has none
                    pair.append(None)
                else:
                    pair.append(base if position is None else (*base, position))
            asked.append((pair[0], pair[1]))
        if found.change != "changed":
            asked.append((bases[0], bases[1]))
    return asked


def _places_index(changes: Sequence[WrittenChange]) -> tuple[dict[Place, list[int]], dict[Place, list[int]]]:
    index: tuple[dict[Place, list[int]], dict[Place, list[int]]] = ({}, {})
    for i, change in enumerate(changes):
        for side in (0, 1):
            for where in change.places(side):
                index[side].setdefault(where, []).append(i)
    return index


def _numbered(
    comparison: Comparison,
    changes: Sequence[WrittenChange],
    component_causes: list[list[int]],
    value_causes: list[list[list[int]]],
    urls: tuple[str, str],
    warnings: Sequence[str],
) -> Diff:
    """The diff with the changes that reach something numbered from 1, in their order."""
    used = sorted({i for causes in component_causes for i in causes})
    number = {i: n for n, i in enumerate(used, 1)}
    reaches: dict[int, list[str]] = {i: [] for i in used}
    components = []
    for found, causes, per_value in zip(comparison.found, component_causes, value_causes):
        path = comparison.path(found.number)
        for i in causes:
            reaches[i].append(path)
        values = tuple(
            ValueChange(path if v.step is None else f"{path}/{v.step}", v.change, v.old, v.new, tuple(number[i] for i in mine))
            for v, mine in zip(found.values, per_value)
        )
        components.append(ComponentChange(path, found.change, values, tuple(number[i] for i in causes)))
    causes_out = [Cause(number[i], changes[i].change, changes[i].old, changes[i].new, tuple(reaches[i])) for i in used]
    return Diff(urls[0], urls[1], components, causes_out, warnings)


# -- the text form --------------------------------------------------------------------


def _value_text(value: Data | None) -> str:
    return json.dumps(value, ensure_ascii=False)


def _written_line(sign: str, written: Written) -> str:
    where = f"{written.url}:{written.line}" if written.line else written.url
    return f"    {sign} {where}  {written.xml}\n"


def _text(diff: Diff) -> Iterator[str]:
    if not diff:
        return  # no difference: nothing, as diff(1) prints
    yield f"--- {diff.old}\n+++ {diff.new}\n"
    for cause in diff.causes:
        where = cause.new or cause.old
        assert where is not None
        yield f"[{cause.number}] {cause.change} {where.path}, reaching {counted(len(cause.components), 'component')}:\n"
        if cause.old is not None:
            yield _written_line("-", cause.old)
        if cause.new is not None:
            yield _written_line("+", cause.new)
        yield from _wrapped(cause.components, "    ")
    for comp in diff.components:
        why = " " + _causes_text(comp.causes) if comp.change != "changed" else ""
        yield f"@@ {comp.path} {comp.change} @@{why}\n"
        for value in comp.values:
            name = value.path[len(comp.path) :].lstrip("/") or "(its own attributes and text)"
            causes = _causes_text(value.causes)
            if value.old is not None:
                yield f"- {name}: {_value_text(value.old)}" + (f"  {causes}\n" if value.new is None else "\n")
            if value.new is not None:
                yield f"+ {name}: {_value_text(value.new)}  {causes}\n"


def _causes_text(causes: Sequence[int]) -> str:
    return " ".join(f"[{n}]" for n in causes)


def _wrapped(paths: Sequence[str], indent: str, width: int = 100) -> Iterator[str]:
    line = indent
    for path in paths:
        if len(line) > len(indent) and len(line) + 1 + len(path) > width:
            yield line + "\n"
            line = indent
        line += (" " if len(line) > len(indent) else "") + path
    if len(line) > len(indent):
        yield line + "\n"
