"""Phase 7: the deployment plan (spec sections 4, 3.1, 7.5.1-7.5.3, 7.6).

Entry point: :func:`build_plan`, composed by ``Resolution.plan()`` in
``src/cdl/engine/document.py`` after static resolution and any deploy-time rounds. It
reads the reference phase's results through a small interface
(``ReferenceResolver.pending_items``, ``is_pending`` and ``waits_on``;
:func:`item_kind`; :func:`waits_if_attempted` for what a lazy reference would
wait for once released) and changes nothing in the working trees. The plan it
returns (:class:`Plan`, :class:`PlannedComponent`) is a read-only view of a
compact tree; ``src/cdl/planning/render.py`` writes it as text, DOT and Mermaid.

What it computes (docs/semantics.md, "Deployment plan", has the definitions):

- the *components*: the top level lists of the main document's ``cdl:system``
  and every element below them that has child elements (``cdl:expression``
  is not one, nor does it make its holder one);
- for each pending item of the system, its *owner* (the component it is a
  property of) and the lazy values it ultimately waits for: the closure of
  the direct waits, memoised per item, down to lazy properties and lazy
  references (a lazy reference is released only when its own component is
  ready to deploy, so it is where a chain stops);
- each dependency between two components lifted to the two children of their
  nearest common ancestor: in one depth-first walk with a union-find (Tarjan's
  offline method), or, with the fast paths on, by climbing from both ends
  unless the climbs would add up to more than the components (deep systems);
- waves among each component's children (Kahn's algorithm); a cycle among
  siblings, or a wait for an ancestor's lazy value, is a :class:`PlanError`
  naming every item of the chain with its file and line.

Cost: linear in the components and pending items, plus the lazy values each
distinct set of waits holds (docs/performance.md, "Deployment plan"). An item that waits for one thing shares that
thing's set (a long chain of references holds one set), sets of several are
built once per distinct combination, and each owner reads a shared set once.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

from lxml import etree

from ..errors import PlanError
from ..model.elements import top_level_of
from ..model.items import ItemKind, holder_of, item_kind
from ..model.naming import Prefixes, Steps, counted
from ..model.vocabulary import T_EXPRESSION, T_SYSTEM
from ..model.workspace import Problems, Workspace
from ..resolution.references import ReferenceResolver, waits_if_attempted
from . import render
from .paths import ComponentPaths

__all__ = ["Plan", "PlanFacts", "PlannedComponent", "build_plan", "build_plan_facts", "waves_of"]

# Tuples, not sets: an enum member hashes in Python code, and `in` over a
# tuple compares by identity first.
#: Item kinds whose value arrives at deployment: chains of waits stop there.
_LAZY_KINDS = (ItemKind.LAZY_PROPERTY, ItemKind.LAZY_REFERENCE, ItemKind.LAZY_EXPRESSION)
#: Those a component releases (rather than supplies) when it is ready to deploy.
_RELEASED_KINDS = (ItemKind.LAZY_REFERENCE, ItemKind.LAZY_EXPRESSION)

_NO_REASONS: Mapping[str, tuple[str, ...]] = MappingProxyType({})


class _Details(NamedTuple):
    """What a component supplies, releases, comes after and waits for (paths)."""

    supplies: tuple[str, ...]
    releases: tuple[str, ...]
    after: tuple[str, ...]
    because: Mapping[str, tuple[str, ...]]
    waits_for: tuple[str, ...]


_PLAIN = _Details((), (), (), _NO_REASONS, ())
_EMPTY_LISTS = '"supplies": [], "releases": [], "after": [], "waits_for": []'
#: JSON string literal of a text, as json.dumps(ensure_ascii=False) writes it (C code).
_json_string: Any = json.encoder.encode_basestring


class _Tree:
    """A computed plan, as arrays indexed by component number (0 is the
    ``cdl:system`` element above the top level lists).

    Most components of a large system supply, release and wait for nothing:
    they hold no entry in ``details`` and ``wave`` (wave 1). The public
    objects (:class:`Plan`, :class:`PlannedComponent`) are views of this,
    made when read, so computing a plan costs no object per component.
    """

    __slots__ = ("after", "children", "details", "paths", "teardown", "wave")

    def __init__(
        self,
        paths: ComponentPaths,
        children: dict[int, list[int]],
        wave: dict[int, int],
        details: dict[int, _Details],
        after: dict[int, tuple[int, ...]] | None = None,
        teardown: bool = False,
    ) -> None:
        self.paths = paths
        self.children = children
        self.wave = wave
        self.details = details
        #: The siblings each component comes after (numbers, in document
        #: order): ``details``' ``after``, which same-named siblings share.
        self.after = after or {}
        #: Whether the waves are those of taking the system down (:meth:`reversed`).
        self.teardown = teardown

    def reversed(self) -> _Tree:
        """The same components in the reverse order: each after the siblings
        that came after it (their ``because`` kept, seen from the other side),
        and the waves those orders give (:func:`waves_of`). What each one
        supplies, releases and waits for is unchanged."""
        before: dict[int, list[int]] = {}
        for c in sorted(self.after):
            for b in self.after[c]:
                before.setdefault(b, []).append(c)
        paths, details = self.paths, self.details
        flipped = {b: tuple(cs) for b, cs in before.items()}
        reasons = {
            b: MappingProxyType({paths[c]: details[c].because[paths[b]] for c in cs}) for b, cs in flipped.items()
        }
        new: dict[int, _Details] = {}
        for v in sorted(details.keys() | flipped.keys()):
            d = details.get(v, _PLAIN)
            new[v] = d._replace(
                after=tuple(paths[c] for c in flipped.get(v, ())), because=reasons.get(v, _NO_REASONS)
            )
        wave: dict[int, int] = {}
        for family in self.children.values():
            if any(c in flipped for c in family):
                found, _ = waves_of(family, flipped)
                wave.update(found)
        return _Tree(paths, self.children, wave, new, flipped, not self.teardown)

    def rows(self, v: int) -> list[list[int]]:
        """The children of ``v`` in waves, each in document order."""
        family = self.children.get(v)
        if not family:
            return []
        wave = self.wave
        if not wave or not any(c in wave for c in family):
            return [family]
        rows: list[list[int]] = []
        for c in family:
            w = wave.get(c, 1)
            while len(rows) < w:
                rows.append([])
            rows[w - 1].append(c)
        return [r for r in rows if r]

    def json(self) -> str:
        """The whole plan as JSON text (what ``json.dumps(self.data(0))`` gives),
        written directly, rather than by building the dicts first."""
        paths, details = self.paths, self.details

        def strings(values: tuple[str, ...]) -> str:
            return "[" + ", ".join(map(_json_string, values)) + "]" if values else "[]"

        out: list[str] = []
        stack: list[int | str] = ["]}", *reversed(self._tokens(0)), '{"system": [']
        while stack:  # explicit stack: systems nest as deep as max_depth allows
            token = stack.pop()
            if isinstance(token, str):
                out.append(token)
                continue
            d = details.get(token)
            if d is None:
                out.append(f'{{"path": {_json_string(paths[token])}, {_EMPTY_LISTS}, "waves": [')
            else:
                out.append(
                    f'{{"path": {_json_string(paths[token])}, "supplies": {strings(d.supplies)}, '
                    f'"releases": {strings(d.releases)}, "after": {strings(d.after)}, '
                    f'"waits_for": {strings(d.waits_for)}, "waves": ['
                )
            stack.append("]}")
            stack.extend(reversed(self._tokens(token)))
        return "".join(out)

    def _tokens(self, v: int) -> list[int | str]:
        """The waves of ``v``'s children as JSON punctuation around component numbers."""
        tokens: list[int | str] = []
        for k, row in enumerate(self.rows(v)):
            if k:
                tokens.append(", ")
            tokens.append("[")
            for m, c in enumerate(row):
                if m:
                    tokens.append(", ")
                tokens.append(c)
            tokens.append("]")
        return tokens

    def data(self, v: int) -> dict[str, Any]:
        """Component ``v`` (or, for 0, the system) in the JSON shape of README.md."""
        root: dict[str, Any] = {}
        stack: list[tuple[int, dict[str, Any]]] = [(v, root)]
        paths, details = self.paths, self.details
        while stack:  # explicit stack: systems nest as deep as max_depth allows
            i, out = stack.pop()
            waves: list[list[dict[str, Any]]] = []
            for row in self.rows(i):
                made = []
                for c in row:
                    child: dict[str, Any] = {}
                    made.append(child)
                    stack.append((c, child))
                waves.append(made)
            if i == 0:
                out["system"] = waves
                continue
            d = details.get(i, _PLAIN)
            out["path"] = paths[i]
            out["supplies"] = list(d.supplies)
            out["releases"] = list(d.releases)
            out["after"] = list(d.after)
            out["waits_for"] = list(d.waits_for)
            out["waves"] = waves
        return root


class PlannedComponent:
    """One component of a :class:`Plan` (read-only).

    Attributes:
        path: where it is (``/List/child``), written as ``cdl pending`` writes paths.
        wave: its wave among its siblings (1 = depends on no sibling).
        supplies: its lazy properties, whose values it gives when it is deployed.
        releases: its lazy references (and properties holding an expression
            with lazy variables), released when it is ready to deploy.
        after: the siblings it must be deployed after, in document order.
        because: for each path of ``after``, the lazy values of that sibling's
            subtree that this component's subtree waits for.
        waits_for: the lazy values owned by other components that its own
            properties wait for (directly or through references and expressions).
        waves: its child components in waves; empty when it has none.
    """

    __slots__ = ("_index", "_tree")

    _tree: _Tree
    _index: int

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("cdl.PlannedComponent is not made by callers: a cdl.Plan hands them out (Plan.components(), Plan.waves)")

    @classmethod
    def _of(cls, tree: _Tree, index: int) -> PlannedComponent:
        """Component ``index`` of ``tree`` (the one way to make one)."""
        made = cls.__new__(cls)
        made._tree = tree
        made._index = index
        return made

    @property
    def path(self) -> str:
        return self._tree.paths[self._index]

    @property
    def wave(self) -> int:
        return self._tree.wave.get(self._index, 1)

    @property
    def supplies(self) -> tuple[str, ...]:
        return self._tree.details.get(self._index, _PLAIN).supplies

    @property
    def releases(self) -> tuple[str, ...]:
        return self._tree.details.get(self._index, _PLAIN).releases

    @property
    def after(self) -> tuple[str, ...]:
        return self._tree.details.get(self._index, _PLAIN).after

    @property
    def because(self) -> Mapping[str, tuple[str, ...]]:
        return self._tree.details.get(self._index, _PLAIN).because

    @property
    def waits_for(self) -> tuple[str, ...]:
        return self._tree.details.get(self._index, _PLAIN).waits_for

    @property
    def waves(self) -> tuple[tuple[PlannedComponent, ...], ...]:
        tree = self._tree
        return tuple(tuple(PlannedComponent._of(tree, c) for c in row) for row in tree.rows(self._index))

    def to_data(self) -> dict[str, Any]:
        """The component in the JSON shape of ``cdl plan --format json`` (README.md)."""
        return self._tree.data(self._index)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PlannedComponent) and (other._tree, other._index) == (self._tree, self._index)

    def __hash__(self) -> int:
        return hash((id(self._tree), self._index))

    def __repr__(self) -> str:
        after = f", after {', '.join(self.after)}" if self.after else ""
        return f"<cdl.PlannedComponent {self.path!r} (wave {self.wave}{after})>"


class Plan:
    """The order in which a system's components can be deployed (read-only).

    ``waves`` holds the top level lists of ``cdl:system`` in waves: the
    components of one wave may be deployed in parallel, each wave after the
    one before. Every component is deployed after all of its children, which
    are themselves in waves (:attr:`PlannedComponent.waves`).
    """

    __slots__ = ("_tree",)

    _tree: _Tree

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("cdl.Plan is not made by callers: Resolution.plan() (or Deployment.plan) gives one")

    @classmethod
    def _of(cls, tree: _Tree) -> Plan:
        """The plan ``tree`` holds (the one way to make one)."""
        made = cls.__new__(cls)
        made._tree = tree
        return made

    @property
    def waves(self) -> tuple[tuple[PlannedComponent, ...], ...]:
        tree = self._tree
        return tuple(tuple(PlannedComponent._of(tree, c) for c in row) for row in tree.rows(0))

    def __repr__(self) -> str:
        waves, n = len(self._tree.rows(0)), sum(1 for _ in self.components())
        order = "teardown " if self._tree.teardown else ""
        return f"<cdl.Plan {order}({counted(waves, 'wave')}, {counted(n, 'component')})>"

    @property
    def is_teardown(self) -> bool:
        """Whether this plan takes the system down (made by :meth:`teardown`)."""
        return self._tree.teardown

    def teardown(self) -> Plan:
        """The order in which the system can be taken down: the reverse of this
        one, each component after everything that waits on it.

        A component goes before its children (it waits on them), and after
        the siblings that come after it here (they wait on its values):
        ``after`` lists those, ``because`` the values each waited for, and
        the waves are the fewest those orders allow. ``teardown()`` of a
        teardown is the deployment order again.
        """
        return Plan._of(self._tree.reversed())

    def components(self) -> Iterator[PlannedComponent]:
        """Every component, depth first, each before its children, waves in order."""
        tree = self._tree
        stack = [c for row in reversed(tree.rows(0)) for c in reversed(row)]
        while stack:
            v = stack.pop()
            yield PlannedComponent._of(tree, v)
            if v in tree.children:
                stack.extend(c for row in reversed(tree.rows(v)) for c in reversed(row))

    def to_data(self) -> dict[str, list[list[dict[str, Any]]]]:
        """The plan in the JSON shape of ``cdl plan --format json`` (README.md)."""
        return self._tree.data(0)

    def to_json(self) -> str:
        """:meth:`to_data` as JSON text."""
        # One line, written straight from the plan's arrays, rather than
        # through the dicts of to_data() and an indenting encoder.
        return self._tree.json() + "\n"

    def to_text(self) -> str:
        """An indented tree for people: ``[wave] name`` with what each supplies and waits for."""
        return render.to_text(self)

    def to_dot(self) -> str:
        """Graphviz DOT: components as nested clusters, one labelled edge per sibling dependency."""
        return render.to_dot(self)

    def to_mermaid(self) -> str:
        """A Mermaid flowchart: the same picture as :meth:`to_dot`."""
        return render.to_mermaid(self)


# ---------------------------------------------------------------------------
# Computing the plan

class _Components:
    """The component tree, numbered depth first in document order.

    Number 0 is the ``cdl:system`` element, a virtual root above the top
    level lists; every component's number is larger than its parent's, and
    siblings are numbered in document order.
    """

    def __init__(
        self,
        ws: Workspace,
        system: etree._Element,
        needed: set[etree._Element],
        skip: set[etree._Element],
        within: Collection[etree._Element] | None = None,
    ) -> None:
        qname = self.qname = _qnames(ws.ctx.prefixes)
        self.system = system
        #: Component numbers of the ``needed`` elements that are components
        #: (owners of pending items), not of all: a dict entry per component
        #: would cost as much as finding it.
        index: dict[etree._Element, int] = {}
        parent = [-1]
        depth = [0]
        #: Every component's element, by number (0: the cdl:system element).
        elements = self.elements = [system]
        children: dict[int, list[int]] = {}
        self.index, self.parent, self.depth = index, parent, depth
        tops: list[int] = []
        # Every top level list is a component; below them, an element with a
        # child element other than cdl:expression (whose cdl:variable
        # children are how a value is computed, not properties): every
        # expression left is pending, so ``skip`` names them and their
        # holders, and no element's children need a look. lxml's own
        # iteration in document order, with a test per element, costs less
        # than walking the children in Python; the chain of ancestors
        # (lxml hands out one proxy per live element, so `is` finds the
        # parent) numbers each component's parent without a lookup table.
        for top in system:
            if not isinstance(top.tag, str) or (within is not None and top not in within):
                continue
            i = len(parent)
            parent.append(0)
            depth.append(1)
            elements.append(top)
            tops.append(i)
            if top in needed:
                index[top] = i
            chain = [top]
            numbers = [i]
            # What lies inside a skipped element (a variable's own children,
            # say) is no component either: lxml's iteration cannot prune.
            inside_skipped: set[etree._Element] = set()
            for el in top.iterdescendants():
                if not len(el):
                    continue
                above = el.getparent()
                if el in skip or above in inside_skipped:
                    inside_skipped.add(el)
                    continue
                while chain[-1] is not above:
                    chain.pop()
                    numbers.pop()
                p = numbers[-1]
                d = len(chain) + 1
                i = len(parent)
                parent.append(p)
                depth.append(d)
                family = children.get(p)
                if family is None:
                    children[p] = [i]
                else:
                    family.append(i)
                elements.append(el)
                if el in needed:
                    index[el] = i
                chain.append(el)
                numbers.append(i)
        if tops:
            children[0] = tops
        self.children = children
        self.size = len(parent)
        self.steps = Steps(qname)  # one for every path of the plan (model.naming.Steps)
        self.paths = ComponentPaths(parent, depth, elements, children, self.steps)


def _qnames(prefixes: Prefixes) -> Callable[[str], str]:
    """``prefixes.qname``, each tag written once (a plan names every component by its tag)."""
    qnames: dict[str, str] = {}

    def qname(tag: str) -> str:
        name = qnames.get(tag)
        if name is None:
            name = qnames[tag] = prefixes.qname(tag)
        return name

    return qname


def _no_components(ws: Workspace) -> ComponentPaths:
    """The paths of a system without components (a document without one)."""
    return ComponentPaths([-1], [0], [ws.roots[0]], {}, ws.ctx.prefixes.steps())


@dataclass
class PlanFacts:
    """What a live deployment (``src/cdl/engine/deployment.py``) needs of a plan beyond its
    public view, by component number (0 is the ``cdl:system`` element;
    numbers follow document order, as the plan's)."""

    parent: list[int]
    children: dict[int, list[int]]
    elements: list[etree._Element]
    #: The lazy values each component waits for (those of ``waits_for``, in its order).
    waits: dict[int, tuple[etree._Element, ...]]
    #: The component each of those values belongs to (None: a template's).
    owner: dict[etree._Element, int | None]
    #: For each component, the siblings it comes after (``after``), each with
    #: the lazy values of the sibling's subtree it waits for (``because``).
    after: dict[int, dict[int, tuple[etree._Element, ...]]]
    #: Each component's lazy properties (the items of ``supplies``, in its order).
    supplies: dict[int, tuple[etree._Element, ...]]
    #: Each component's lazy references and expressions (the items of ``releases``, in its order).
    releases: dict[int, tuple[etree._Element, ...]]
    #: What each of those waits for once released: the lazy values it reaches.
    released_waits: dict[etree._Element, frozenset[etree._Element]]
    #: The components' paths, the plan's.
    paths: ComponentPaths
    #: The plan's view of a component, by number.
    planned: Callable[[int], PlannedComponent]


@dataclass
class _Query:
    """Component ``waiter`` waits for lazy value ``lazy`` of component ``owner``,
    because item ``item`` waits for it."""

    waiter: int
    owner: int
    item: etree._Element
    lazy: etree._Element


class _Planner:
    def __init__(self, ws: Workspace, resolver: ReferenceResolver, within: Collection[etree._Element] | None = None) -> None:
        self.ws = ws
        self.ctx = ws.ctx
        self.resolver = resolver
        #: The top level lists planned (None: every one; :func:`build_plan`).
        self.within = within
        #: Lazy values each item ultimately waits for (shared between items).
        self.reach: dict[etree._Element, frozenset[etree._Element]] = {}
        #: The items each item waits for directly (for reach and for error chains).
        self.direct: dict[etree._Element, list[etree._Element]] = {}
        self._unions: dict[tuple[int, ...], frozenset[etree._Element]] = {}
        #: Position of each child of an owner, made for owners whose items
        #: need sorting (most own one pending item, or wait for one value).
        self._positions: dict[etree._Element, dict[etree._Element, int]] = {}
        self.comps: _Components | None = None
        self.problems = Problems(ws.ctx.limits.max_errors)
        self._kinds: dict[etree._Element, ItemKind] = {}
        #: What each lazy reference (or lazy expression) waits for once released.
        self.released: dict[etree._Element, frozenset[etree._Element]] = {}

    # -- items ----------------------------------------------------------------

    def _kind(self, el: etree._Element) -> ItemKind:
        kind = self._kinds.get(el)
        if kind is None:
            kind = self._kinds[el] = item_kind(el)
        return kind

    def _direct(self, el: etree._Element) -> list[etree._Element]:
        """What ``el`` waits for directly: the resolver's answer for a pending
        item it attempted, else what an attempt would wait for."""
        found = self.direct.get(el)
        if found is None:
            if self._kind(el) in _LAZY_KINDS:
                found = []
            elif self.resolver.is_pending(el):
                found = self.resolver.waits_on(el)
            else:  # never attempted: an imported template's item, say
                found = waits_if_attempted(self.ws, el)
            self.direct[el] = found
        return found

    def _reach(self, start: etree._Element) -> frozenset[etree._Element]:
        """The lazy values ``start`` ultimately waits for (explicit stack, memoised)."""
        reach = self.reach
        known = reach.get(start)
        if known is not None:
            return known
        active: set[etree._Element] = set()
        stack = [start]
        while stack:
            el = stack[-1]
            if el in reach:
                stack.pop()
                continue
            if self._kind(el) in _LAZY_KINDS:
                reach[el] = frozenset((el,))
                stack.pop()
                continue
            deps = self._direct(el)
            if el not in active:
                active.add(el)
                missing = [d for d in deps if d not in reach and d not in active]
                if missing:
                    stack.extend(missing)
                    continue
            # A dependency still active closes a cycle among items the
            # resolver never attempted; it adds nothing (releasing it fails).
            reach[el] = self._union([reach[d] for d in deps if d in reach])
            active.discard(el)
            stack.pop()
        return reach[start]

    def _union(self, sets: list[frozenset[etree._Element]]) -> frozenset[etree._Element]:
        if len(sets) == 1:
            return sets[0]  # shared: a chain of references holds one set
        if not sets:
            return frozenset()
        key = tuple(sorted({id(s) for s in sets}))
        found = self._unions.get(key)
        if found is None:
            found = self._unions[key] = frozenset().union(*sets)
        return found

    def _released_reach(self, el: etree._Element) -> frozenset[etree._Element]:
        """What a lazy reference (or lazy expression) waits for once released."""
        deps = waits_if_attempted(self.ws, el)
        self.direct[el] = deps
        found = self.released[el] = self._union([self._reach(d) for d in deps])
        return found

    def _chain(self, item: etree._Element, lazy: etree._Element) -> list[etree._Element]:
        """The items from ``item`` to ``lazy``, each waiting for the next."""
        chain = [item]
        cur = item
        seen = {item}
        while cur is not lazy:
            nxt = next((d for d in self.direct.get(cur, ()) if d is lazy or lazy in self.reach.get(d, ())), None)
            if nxt is None or nxt in seen:
                chain.append(lazy)
                break
            chain.append(nxt)
            seen.add(nxt)
            cur = nxt
        return chain

    def _sort_key(self, el: etree._Element) -> tuple[int, int]:
        """Document order of items of the system (component number, then
        position in it); others after them, by line."""
        comps = self.comps
        assert comps is not None
        owner_el = self._owner_element(el, comps.system)
        number = None if owner_el is None else comps.index.get(owner_el)
        if owner_el is None or number is None:
            return (comps.size, el.sourceline or 0)
        holder = holder_of(el)
        if holder is owner_el:
            return (number, -1)  # a top level list that is itself an item
        positions = self._positions.get(owner_el)
        if positions is None:
            positions = self._positions[owner_el] = {child: k for k, child in enumerate(owner_el)}
        return (number, positions.get(holder, -1))

    def _sorted(self, els: Sequence[etree._Element] | Mapping[etree._Element, None]) -> list[etree._Element]:
        return sorted(els, key=self._sort_key) if len(els) > 1 else list(els)

    def _owner_element(self, el: etree._Element, system: etree._Element) -> etree._Element | None:
        """The element an item is a property of: its parent (for an expression,
        its holder's), or the item itself when it is a top level list."""
        holder = holder_of(el)
        parent = holder.getparent()
        return holder if parent is system else parent

    def _owner(self, comps: _Components, el: etree._Element) -> int | None:
        """The component an item is a property of (None outside the system)."""
        owner = self._owner_element(el, comps.system)
        return None if owner is None else comps.index.get(owner)

    def _path(self, comps: _Components, el: etree._Element, owner: int | None) -> str:
        holder = holder_of(el)
        if owner is None:
            return self.ctx.prefixes.path_of(holder, comps.steps)
        if comps.index.get(holder) == owner:  # a top level list that is itself an item
            return comps.paths[owner]
        return comps.paths.child(owner, holder)

    def _described(self, chain: Sequence[etree._Element]) -> str:
        ctx = self.ctx
        write = ctx.prefixes.writer()
        parts = []
        for el in chain:
            parts.append(f"{write(holder_of(el))} ({ctx.at(el)})")
        return " -> ".join(parts)

    # -- the plan ---------------------------------------------------------------

    def run(self) -> Plan:
        ws = self.ws
        system = ws.roots[0].find(T_SYSTEM)
        if system is None:
            return Plan._of(_Tree(_no_components(ws), {}, {}, {}))
        # What each pending item waits for first, so that the components are
        # found knowing which of them own something.
        found: list[tuple[etree._Element, ItemKind, frozenset[etree._Element], etree._Element | None]] = []
        needed: set[etree._Element] = set()
        seen_sets: set[int] = set()
        lazy_owners: dict[etree._Element, etree._Element | None] = {}
        pending = self._pending()  # document order is restored below
        skip: set[etree._Element] = set()  # pending expressions and their holders: not components
        for el in pending:
            kind = self._kind(el)
            if kind is ItemKind.LAZY_PROPERTY:
                needs: frozenset[etree._Element] = frozenset()
            elif kind in _RELEASED_KINDS:
                needs = self._released_reach(el)
            else:
                needs = self._reach(el)
            owner_el = self._owner_element(el, system)
            found.append((el, kind, needs, owner_el))
            if el.tag == T_EXPRESSION:
                skip.add(el)
                holder = el.getparent()
                if holder is not None:
                    skip.add(holder)
            if owner_el is not None:
                needed.add(owner_el)
            if id(needs) not in seen_sets:
                seen_sets.add(id(needs))
                for lazy in needs:
                    if lazy not in lazy_owners:
                        lazy_owner = lazy_owners[lazy] = self._owner_element(lazy, system)
                        if lazy_owner is not None:
                            needed.add(lazy_owner)
        comps = self.comps = _Components(ws, system, needed, skip, self.within)
        index = comps.index
        by_owner: dict[int, list[tuple[etree._Element, ItemKind, frozenset[etree._Element]]]] = {}
        for el, kind, needs, owner_el in found:
            number = None if owner_el is None else index.get(owner_el)
            if number is not None:  # else a template's item: templates are not deployed
                by_owner.setdefault(number, []).append((el, kind, needs))
        lazy_numbers = {lazy: (None if o is None else index.get(o)) for lazy, o in lazy_owners.items()}
        supplies: dict[int, list[etree._Element]] = {}
        releases: dict[int, list[etree._Element]] = {}
        waits_for: dict[int, dict[etree._Element, None]] = {}
        queries: list[_Query] = []
        read: set[tuple[int, int]] = set()  # (owner, id of a reach set) already read
        # In document order: by owner, then (for an owner of several) by place.
        for owner in sorted(by_owner):
            group = by_owner[owner]
            if len(group) > 1:
                group.sort(key=lambda f: self._sort_key(f[0]))
            for el, kind, needs in group:
                if kind is ItemKind.LAZY_PROPERTY:
                    supplies.setdefault(owner, []).append(el)
                    continue
                if kind in _RELEASED_KINDS:
                    releases.setdefault(owner, []).append(el)
                key = (owner, id(needs))
                if key in read or not needs:
                    continue
                read.add(key)
                mine = waits_for.setdefault(owner, {})
                for lazy in sorted(needs, key=self._sort_key) if len(needs) > 1 else needs:
                    other = lazy_numbers[lazy]
                    if other == owner or lazy in mine:
                        continue
                    mine[lazy] = None
                    if other is not None:
                        queries.append(_Query(owner, other, el, lazy))
        edges = self._lift(comps, queries)
        waves = self._waves(comps, edges)
        self.problems.raise_if_any()
        return self._build(comps, supplies, releases, waits_for, edges, waves)

    def _pending(self) -> list[etree._Element]:
        """The pending items planned: every one, or those in the lists
        ``within``. Read from the states rather than by testing each item:
        far fewer are pending than resolved."""
        pending = self.resolver.pending_items()
        if self.within is None:
            return pending
        return [el for el in pending if top_level_of(el) in self.within]

    def _lift(self, comps: _Components, queries: list[_Query]) -> dict[int, dict[int, list[_Query]]]:
        """Each dependency as an edge between the two children of the nearest
        common ancestor: ``edges[a][b]`` lists why sibling ``a`` comes after
        ``b``, in the order of ``queries``; a wait for an ancestor's lazy
        value is an error, reported in that order too.

        The general way is one walk over all components (:meth:`_lift_all`).
        With the fast paths on, climbing from both ends answers instead
        (:meth:`_lift_by_climbing`), unless the climbs would add up to more
        than the components (deep systems with many dependencies).
        """
        if self.ctx.fast_paths and (edges := self._lift_by_climbing(comps, queries)) is not None:
            return edges
        return self._lift_all(comps, queries)

    def _lift_by_climbing(self, comps: _Components, queries: list[_Query]) -> dict[int, dict[int, list[_Query]]] | None:
        """:meth:`_lift` by climbing from both ends of each query: it costs
        their depth below the common ancestor, a few steps in most systems.
        None, having reported nothing, when the climbs would cost more than
        the one walk of :meth:`_lift_all`."""
        parent, depth = comps.parent, comps.depth
        ends: list[tuple[int, int] | None] = []
        budget = 2 * comps.size + 64
        for q in queries:
            a, b = q.waiter, q.owner
            da, db = depth[a], depth[b]
            budget -= abs(da - db)
            while da > db:
                a = parent[a]
                da -= 1
            while db > da:
                b = parent[b]
                db -= 1
            if a == b:
                ends.append(None)  # one is the other's ancestor
                continue
            while parent[a] != parent[b] and budget > 0:
                a, b = parent[a], parent[b]
                budget -= 2
            if budget <= 0:
                return None
            ends.append((a, b))
        return self._edges(comps, queries, ends)

    def _edges(
        self, comps: _Components, queries: list[_Query], ends: list[tuple[int, int] | None]
    ) -> dict[int, dict[int, list[_Query]]]:
        """The edges of ``queries`` whose ``ends`` (the two children of the
        nearest common ancestor) are known, in query order; the others are
        a wait between a component and its ancestor: an error when the
        waiter is the descendant, else nothing (a component waits for its
        descendant, deployed first anyway)."""
        edges: dict[int, dict[int, list[_Query]]] = {}
        for q, pair in zip(queries, ends):
            if pair is not None:
                edges.setdefault(pair[0], {}).setdefault(pair[1], []).append(q)
        depth = comps.depth
        for q, pair in zip(queries, ends):
            if pair is None and depth[q.waiter] > depth[q.owner]:
                self._ancestor_error(comps, q)
        return edges

    def _lift_all(self, comps: _Components, queries: list[_Query]) -> dict[int, dict[int, list[_Query]]]:
        """:meth:`_lift` in one depth-first walk over all components.

        Every query is answered when the walk enters its second end (Tarjan's
        offline method): the first end is then finished, and the union-find
        set holding it is labelled with the child, of a component on the
        walk's path, that contains it: the child of the common ancestor.
        A second end entered while the first is on the walk's path is the
        first's descendant.
        """
        n = comps.size
        at: dict[int, list[int]] = {}
        for i, q in enumerate(queries):
            at.setdefault(q.waiter, []).append(i)
            at.setdefault(q.owner, []).append(i)
        ends: list[tuple[int, int] | None] = [None] * len(queries)
        parent, depth, children = comps.parent, comps.depth, comps.children
        uf = list(range(n))
        label = list(range(n))
        status = [0] * n  # 0 not entered, 1 on the path, 2 finished

        def find(x: int) -> int:
            while uf[x] != x:
                uf[x] = uf[uf[x]]
                x = uf[x]
            return x

        path: list[int] = []
        stack: list[tuple[int, bool]] = [(0, False)]
        while stack:
            v, leaving = stack.pop()
            if leaving:
                status[v] = 2
                for c in children.get(v, ()):
                    uf[find(c)] = find(v)
                label[find(v)] = v
                path.pop()
                continue
            status[v] = 1
            path.append(v)
            for i in at.get(v, ()):
                q = queries[i]
                other = q.owner if q.waiter == v else q.waiter
                if status[other] == 2:
                    top = label[find(other)]
                    here = path[depth[parent[top]] + 1]
                    ends[i] = (here, top) if q.waiter == v else (top, here)
                # On the path: ``other`` is an ancestor (see _edges). Not
                # entered yet: answered when the walk enters the other end.
            stack.append((v, True))
            stack.extend((c, False) for c in reversed(children.get(v, ())))
        return self._edges(comps, queries, ends)

    def _ancestor_error(self, comps: _Components, q: _Query) -> None:
        waiter, owner = comps.paths[q.waiter], comps.paths[q.owner]
        self.problems.add(
            PlanError(
                f"{waiter} can never be deployed: it waits for a deploy-time value of its ancestor {owner}, "
                f"which is deployed only after its children: {self._described(self._chain(q.item, q.lazy))}; "
                "take the value from elsewhere, or move the property out of the ancestor",
                code="PLAN_ANCESTOR_WAIT",
                at=self.ctx.where(q.item),
            )
        )

    def _waves(self, comps: _Components, edges: dict[int, dict[int, list[_Query]]]) -> dict[int, int]:
        """The wave of each component that is not in wave 1 (:func:`waves_of`,
        only in families where some sibling waits for another)."""
        wave: dict[int, int] = {}
        for p in sorted({comps.parent[c] for c in edges}):
            found, left = waves_of(comps.children[p], edges)
            wave.update(found)
            if left:
                self._cycle_error(comps, edges, left)
        return wave

    def _cycle_error(self, comps: _Components, edges: dict[int, dict[int, list[_Query]]], left: list[int]) -> None:
        # Every sibling left waits for another one left: walk until one repeats.
        left_set = set(left)
        seen: dict[int, int] = {}
        order: list[int] = []
        cur = left[0]
        while cur not in seen:
            seen[cur] = len(order)
            order.append(cur)
            cur = next(b for b in edges[cur] if b in left_set)
        cycle = order[seen[cur] :]
        links = []
        for i, c in enumerate(cycle):
            b = cycle[(i + 1) % len(cycle)]
            q = edges[c][b][0]
            links.append(f"{comps.paths[c]} after {comps.paths[b]}, because {self._described(self._chain(q.item, q.lazy))}")
        first = edges[cycle[0]][cycle[1 % len(cycle)]][0]
        self.problems.add(
            PlanError(
                "components wait for each other's deploy-time values in a cycle, so none can be deployed first: "
                + "; ".join(links)
                + "; take one of these values from elsewhere, or supply it before deployment (--set)",
                code="PLAN_CYCLE",
                at=self.ctx.where(first.item),
            )
        )

    def _build(
        self,
        comps: _Components,
        supplies: dict[int, list[etree._Element]],
        releases: dict[int, list[etree._Element]],
        waits_for: dict[int, dict[etree._Element, None]],
        edges: dict[int, dict[int, list[_Query]]],
        wave: dict[int, int],
    ) -> Plan:
        paths = comps.paths
        lazy_paths: dict[etree._Element, str] = {}

        def lazy_path(el: etree._Element) -> str:
            found = lazy_paths.get(el)
            if found is None:
                found = lazy_paths[el] = self._path(comps, el, self._owner(comps, el))
            return found

        details: dict[int, _Details] = {}
        for v in sorted(supplies.keys() | releases.keys() | waits_for.keys() | edges.keys()):
            mine = edges.get(v)
            after = sorted(mine) if mine else []  # siblings are numbered in document order
            details[v] = _Details(
                supplies=tuple(self._path(comps, el, v) for el in supplies.get(v, ())),
                releases=tuple(self._path(comps, el, v) for el in releases.get(v, ())),
                after=tuple(paths[b] for b in after),
                because=MappingProxyType(
                    {paths[b]: tuple(dict.fromkeys(lazy_path(q.lazy) for q in self._by_order(mine[b]))) for b in after}
                )
                if mine
                else _NO_REASONS,
                waits_for=tuple(lazy_path(el) for el in self._sorted(waits_for.get(v, {}))),
            )
        after_numbers = {v: tuple(sorted(mine)) for v, mine in edges.items() if mine}
        return Plan._of(_Tree(paths, comps.children, wave, details, after_numbers))

    def _by_order(self, queries: list[_Query]) -> list[_Query]:
        return sorted(queries, key=lambda q: self._sort_key(q.lazy)) if len(queries) > 1 else queries


def waves_of(family: Sequence[int], after: Mapping[int, Collection[int]]) -> tuple[dict[int, int], list[int]]:
    """Waves among the siblings ``family`` (Kahn's algorithm), each coming
    after the siblings ``after`` names: the wave of each one not in wave 1,
    and those left in a cycle (none when there is an order)."""
    wave: dict[int, int] = {}
    waiting = {c: len(after.get(c, ())) for c in family}
    before: dict[int, list[int]] = {}
    for c in family:
        for b in after.get(c, ()):
            before.setdefault(b, []).append(c)
    ready = [c for c in family if not waiting[c]]
    done = 0
    while done < len(ready):
        b = ready[done]
        done += 1
        for c in before.get(b, ()):
            wave[c] = max(wave.get(c, 1), wave.get(b, 1) + 1)
            waiting[c] -= 1
            if not waiting[c]:
                ready.append(c)
    left = [c for c in family if waiting[c]] if len(ready) < len(family) else []
    return wave, left


def build_plan(ws: Workspace, resolver: ReferenceResolver, within: Collection[etree._Element] | None = None) -> Plan:
    """The deployment plan of the main document's ``cdl:system``.

    ``resolver`` holds the items' states after static resolution and every
    deploy-time round. Raises :class:`PlanError` (``PLAN_CYCLE``,
    ``PLAN_ANCESTOR_WAIT``) when no order exists. With ``within``, some top
    level lists of the system: the plan of those alone and of the items
    pending in them (a wait for a value of another list is left out), which
    finds the errors among them (``engine.resolution.check_plan``).
    """
    return _Planner(ws, resolver, within).run()


class _FactsPlanner(_Planner):
    """The planner, keeping what it builds the plan from as :class:`PlanFacts`."""

    facts: PlanFacts | None = None

    def _build(
        self,
        comps: _Components,
        supplies: dict[int, list[etree._Element]],
        releases: dict[int, list[etree._Element]],
        waits_for: dict[int, dict[etree._Element, None]],
        edges: dict[int, dict[int, list[_Query]]],
        wave: dict[int, int],
    ) -> Plan:
        plan = super()._build(comps, supplies, releases, waits_for, edges, wave)
        waits = {v: tuple(self._sorted(values)) for v, values in waits_for.items() if values}
        owner = {value: self._owner(comps, value) for values in waits.values() for value in values}
        after = {
            v: {b: tuple(dict.fromkeys(q.lazy for q in self._by_order(mine[b]))) for b in sorted(mine)}
            for v, mine in edges.items()
            if mine
        }
        # A deployment's components keep their paths: a pending reference
        # resolved to several targets adds same-named siblings.
        comps.paths.fix(self.resolver.pending_items())
        tree = plan._tree
        self.facts = PlanFacts(
            comps.parent,
            comps.children,
            comps.elements,
            waits,
            owner,
            after,
            {v: tuple(items) for v, items in supplies.items()},
            {v: tuple(items) for v, items in releases.items()},
            {el: self.released[el] for items in releases.values() for el in items},
            comps.paths,
            lambda v: PlannedComponent._of(tree, v),
        )
        return plan


def build_plan_facts(ws: Workspace, resolver: ReferenceResolver) -> tuple[Plan, PlanFacts]:
    """:func:`build_plan` with what a live deployment needs of it."""
    planner = _FactsPlanner(ws, resolver)
    plan = planner.run()
    if planner.facts is None:  # no cdl:system: no components
        tree = plan._tree
        return plan, PlanFacts([-1], {}, [], {}, {}, {}, {}, {}, {}, tree.paths, lambda v: PlannedComponent._of(tree, v))
    return plan, planner.facts
