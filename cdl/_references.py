"""Phase 5: value references and expressions, in dependency order (7.3).

Entry point: :class:`ReferenceResolver` (``run`` resolves a set of items and
whatever they need). An *item* is an unresolved reference (an element with a
parsed cdl:ref), a cdl:expression, or a lazy property. Items are resolved by a
depth-first walk with an explicit stack:

- an item first follows its path; an unresolved element on the way, or any
  item inside the target, *blocks* it (7.3.3);
- its blockers are resolved first, one frame at a time, then the item is
  attempted again. Each attempt finds every blocker of one stage (path prefix
  or target), so an item is attempted at most (path length + 2) times;
- a blocker that is on the stack closes a cycle: an error naming every
  property in it;
- a lazy item, and every item that waits for one, is *pending*: it stays as it
  is, attributes and all, until a deploy-time value releases it.

Most items never need the stack: a fast path (``ReferenceResolver._quick``)
resolves, in one pass and without exceptions, an item whose paths pass only
resolved elements and end on one clean leaf (or on targets of a cdl:refroot
path already found clean), and hands anything else, unchanged, to the general
code above, which then decides and reports as it always did.

The blocker scan of a target is one C-level XPath over the target's subtree,
whose size is the size of the copy the resolution then makes, so the work stays
proportional to the output.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from lxml import etree

from . import _expressions
from ._children import WIDE
from ._items import NAMESPACES, UNRESOLVED_TEST, has_lazy_variables, is_unresolved
from ._lines import located, located_at, written_as
from ._model import (
    A_CREF,
    A_LAZY,
    A_REFROOT,
    LIST_PARENTS,
    P_COPIES,
    P_DOC,
    P_EXPR,
    P_REF,
    T_CONFIGURATION,
    T_COPIES,
    T_EXPRESSION,
    T_VARIABLE,
    UP,
    Context,
    Expression,
    Location,
    Problems,
    Ref,
    Variable,
    Workspace,
    copies_mark,
    depth_of,
    doc_index_of,
    has_value,
    replace_with_text,
    stamp,
    table_index,
    top_level_of,
    variables_of,
)
from ._paths import walk
from ._scan import ListScan
from .errors import CdlError, ExpressionError, LazinessError, ReferenceResolutionError

_ITEMS = etree.XPath("descendant-or-self::*" + UNRESOLVED_TEST, namespaces=NAMESPACES)
_COUNT_BELOW = etree.XPath("count(descendant::*)")
_TEXT = etree.XPath("string-length(string())")


def _children_mark(target: etree._Element) -> str | None:
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


class State(enum.Enum):
    """Where an item is. Absent from the resolver's states: not visited yet,
    or resolved by the fast path straight from a static ``run``."""

    ACTIVE = "active"  # on the stack
    DONE = "done"
    PENDING = "pending"  # waits for a deploy-time value, or for an item that does
    FAILED = "failed"
    #: A template's reference that selects nothing where the template is
    #: written, or an item of a template waiting for one: a parameter its
    #: inheritors fill (7.6). Left unresolved, with a warning; not pending.
    TEMPLATE = "template"


# Bound once: reading a member from its enum class costs 0.2 us (Python
# 3.11), and states are read and written several times per item.
_ACTIVE, _DONE, _PENDING, _FAILED, _TEMPLATE = State.ACTIVE, State.DONE, State.PENDING, State.FAILED, State.TEMPLATE

#: The errors a template's reference may have where it is written: an
#: inheritor can give its path something to select (a nested inheritor even
#: something to climb to).
_TEMPLATE_GAPS = ("REF_NOT_FOUND", "REF_ABOVE_TOP")

#: How many items deep the fast path resolves a target that is itself an
#: unresolved reference before it gives the item to the general code (a
#: constant: the general code's stack, not Python's, follows long chains).
_QUICK_DEPTH = 8

#: Elements below a target beyond which its copies are made child by child:
#: a stamp is one more copy of the target, kept as long as the resolver, and
#: a document that multiplies its size by references must not cost more
#: than the budget charges (as _inherit._TEMPLATE_MAX for prototypes).
_STAMP_MAX = 256

#: Names an item may have beside those of Tables.item_tags: cdl:expression,
#: and cdl:variable (a lazy one is no item, but the fast path leaves it to
#: the general code).
_CDL_TAGS = frozenset((T_EXPRESSION, T_VARIABLE))

#: Elements the fast path remembers as passable (not unresolved) at most; the
#: set is emptied when full. Items come in document order, so the few
#: elements of one component that its paths pass through over and over are
#: remembered while they are needed, and memory stays bounded.
_PASSABLE_MAX = 4096

#: Children up to which a step tests each child's name itself rather than ask
#: lxml to filter them by name (which costs about 1.2 us a step however few
#: there are; each child tested costs about 0.15 us).
_FEW = 4


def _make_room(passable: dict[etree._Element, int], wide: dict[etree._Element, int]) -> None:
    """Empty the fast path's full set of passable elements, but keep the wide
    ones (``wide``: those of ``passable`` with more than WIDE children).

    lxml counts an element's children by walking them all: forgetting a list
    of N children (the cluster of the ``wide`` shape) would make the next
    path through it count N children again, once per emptying, which is
    O(N) times per O(N) items. Wide elements are few, unless most are:
    then everything goes. (Kept apart, they need no pass over the set.)
    """
    passable.clear()
    if len(wide) < _PASSABLE_MAX // 2:
        passable.update(wide)
    else:
        wide.clear()


def in_part(el: etree._Element, part: str) -> bool:
    """Whether ``el`` lies in a list of ``part`` (T_CONFIGURATION or T_SYSTEM).

    Walks up to its list: asked only of the few items that are pending or
    whose reference failed.
    """
    top = top_level_of(el)
    parent = top.getparent() if top is not None else None
    return parent is not None and parent.tag == part


def _size(node: etree._Element) -> tuple[int, int]:
    """Elements below ``node`` and characters of its value (what copying its
    content produces). Leaves, the common case, need no XPath."""
    if len(node):
        return int(_COUNT_BELOW(node)), int(_TEXT(node))
    return 0, len(node.text) if node.text else 0


def _items_in(nodes: Sequence[etree._Element]) -> list[etree._Element]:
    """Unresolved items in the subtrees of ``nodes`` (leaves checked without XPath)."""
    found: list[etree._Element] = []
    for node in nodes:
        if len(node):
            found.extend(_ITEMS(node))
        elif is_unresolved(node):
            found.append(node)
    return found


#: The items in and below some elements (``Resolution.explain`` resolves what
#: a path selects in a prototype the main document never needed).
items_in = _items_in

_ALL_ITEMS = ListScan(UNRESOLVED_TEST, NAMESPACES)


#: lxml tests an element's name against each name asked for (about 0.7 ns
#: each per element here): beyond this many names the XPath scan is used. At
#: 128 the walk costs about twice what it costs with ten, a third of the scan.
_MAX_ITEM_TAGS = 128


def find_items(ws: Workspace, parents: Iterable[etree._Element]) -> list[etree._Element]:
    """Every item under the given list parents, in document order.

    An item can only have one of the names ``Tables.item_tags`` holds (or be
    a cdl:expression): lxml's own iteration picks the elements of those
    names in C, making no object for any other, and the one definition
    (``_items.is_unresolved``) decides for those. The XPath scan, which tests
    the attributes of every element, took three times as long (base 20k:
    0.51 s against 0.17 s for 817,000 elements, 225,000 of them named so).
    """
    return [el for el in find_candidates(ws, parents) if is_unresolved(el)]


def find_candidates(ws: Workspace, parents: Iterable[etree._Element]) -> list[etree._Element]:
    """:func:`find_items` without the last test: every item under the given
    list parents, in document order, among the other elements of the names
    items have, for ``ReferenceResolver.run(..., candidates=True)``.

    The resolver's fast path reads the attributes an item's test reads
    anyway; told apart there, only the elements the fast path gives up on
    are tested (base 20k: 0.16 s -> 0.05 s for finding the items).
    """
    tags = ws.item_tags
    if len(tags) > _MAX_ITEM_TAGS:
        return _ALL_ITEMS(parents, ws.size_bound())
    names = (T_EXPRESSION, *tags)
    found: list[etree._Element] = []
    for parent in parents:
        found.extend(parent.iterdescendants(*names))
    return found


class _Plan:
    """How the fast path evaluates one parsed expression (worked out once)."""

    __slots__ = ("paths", "lasts", "parts")

    def __init__(self, expr: Expression) -> None:
        #: Per variable: the variable, and for a path without refroot ending
        #: in a named step, its steps but the last and that last step (else
        #: (), None).
        self.paths: list[tuple[Variable, tuple[str, ...], tuple[str, ...] | None]] = []
        for var in expr.variables:
            steps = var.ref.steps
            if var.ref.refroot is None and steps and steps[-1] != UP:
                self.paths.append((var, steps[:-1], steps[-1:]))
            else:
                self.paths.append((var, (), None))
        #: Per such common prefix, the last steps of its variables.
        self.lasts: dict[tuple[str, ...], tuple[str, ...]] = {}
        for _, prefix, last in self.paths:
            if last is not None:
                self.lasts[prefix] = self.lasts.get(prefix, ()) + last
        #: The expression as literals and variables to join, if it is one
        #: (_expressions.concat_plan).
        self.parts = _expressions.concat_plan(expr.token)


@dataclass
class _Frame:
    item: etree._Element
    blockers: list[etree._Element] = field(default_factory=list)
    pending: list[etree._Element] = field(default_factory=list)
    #: Blockers a template leaves unresolved (state TEMPLATE).
    gaps: list[etree._Element] = field(default_factory=list)
    failed: bool = False


class _Blocked(Exception):
    """Raised inside an attempt: these unresolved elements must go first."""

    def __init__(self, blockers: Sequence[etree._Element]) -> None:
        self.blockers = list(blockers)


class ReferenceResolver:
    """Resolves items of one workspace; keeps their states between rounds."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.ctx = ws.ctx
        self._state: dict[etree._Element, State] = {}
        #: For a pending item, the pending items it waits for directly.
        self._waits_on: dict[etree._Element, list[etree._Element]] = {}
        #: Targets with children whose subtree holds no unresolved item:
        #: (elements, characters) below them. Leaves are checked each time instead.
        self.clean: dict[etree._Element, tuple[int, int]] = {}
        #: Found targets of references with cdl:refroot, by id of the parsed
        #: reference (kept alive by the tables): such a path means the same
        #: nodes wherever it is written, and once those are clean they stay so.
        self.fixed: dict[int, tuple[tuple[etree._Element, ...], int, int]] = {}
        #: Targets copied: the copies_mark a shell of their children takes
        #: (None when the children carry their own document marks), and once
        #: copied twice, a stamp of the children (_model.stamp).
        self.marked: dict[etree._Element, tuple[str | None, etree._Element | None]] = {}
        self.problems = Problems(self.ctx.limits.max_errors)
        self.refs = self.ctx.tables.refs
        #: For each item in state TEMPLATE, the error its reference would be
        #: (for an item waiting on one, that one's): what an inheritor or a
        #: reader of it is told.
        self.gaps: dict[etree._Element, CdlError] = {}
        #: One line per template item left unresolved (``file:line: message``).
        self.warnings: list[str] = []
        #: Whether templates may leave references unresolved: in static
        #: resolution; not when deploy-time values are applied (a deployment
        #: resolves what it touches).
        self._templates_open = True
        # -- the fast path (:meth:`_quick`) --
        #: Elements a path step found not unresolved (bounded, see
        #: _PASSABLE_MAX): resolution only ever removes items, so they stay
        #: so. The value: its number of children when first met, which
        #: chooses how a step finds a child (see _quick_walk). Counting them once
        #: per element, in C but over every child, is cheaper than once per
        #: step. (A count gone stale since only makes a step slower.)
        self._passable: dict[etree._Element, int] = {}
        #: Those of them with more than WIDE children (see _make_room).
        self._wide: dict[etree._Element, int] = {}
        #: How to evaluate each parsed expression, by its id (kept alive by
        #: the tables).
        self._plans: dict[int, _Plan] = {}
        #: The names unresolved items may have (the live set: it only grows).
        #: An element of another name, and not of the CDL namespace, is no
        #: item: the fast path reads no attribute of it (find_items relies on
        #: the same; tests/test_items.py checks it on every tree it resolves).
        self._item_tags = ws.item_tags

    # -- driving ---------------------------------------------------------------

    def run(self, items: Iterable[etree._Element], *, deploying: bool = False, candidates: bool = False) -> None:
        """Resolve ``items`` and everything they depend on; raise collected errors.

        ``deploying`` (a round of deploy-time values): a template's reference
        that selects nothing is an error, as anywhere else. ``candidates``:
        ``items`` also holds elements that are no items (find_candidates),
        which are passed over.
        """
        self._templates_open = not deploying
        state = self._state
        quick = self._quick
        if deploying:
            # Items released and reopened may repeat: remember each done.
            for item in items:
                if item not in state:
                    if quick(item, 0):
                        state[item] = _DONE
                    else:
                        self._resolve_from(item)
        else:
            # Items found once each (find_items, _items_in): one the fast
            # path resolves here is left out of the states (200,000 entries
            # at 20k). Nothing asks for it again: it is no longer unresolved,
            # so no path is blocked by it and no later run is given it.
            for item in items:
                # (The fast path changes nothing of an element that is no
                # item: it finds no reference and no expression on it.)
                if item not in state and not quick(item, 0) and (not candidates or is_unresolved(item)):
                    self._resolve_from(item)
        self.problems.raise_if_any()

    def forget_targets(self) -> None:
        """Drop what resolving remembered of targets, once no item is left to resolve.

        The found targets of cdl:refroot paths (one entry, with the target's
        proxy, per distinct path: 40,000 at 20,000 components), the
        passable elements and the clean and copied targets only serve later
        items. The engine calls this before switching the collector back
        on, so that no collection walks them; what is pending is kept.
        """
        self.fixed.clear()
        self.clean.clear()
        self.marked.clear()
        self._passable.clear()
        self._wide.clear()
        self._plans.clear()

    # -- the fast path -----------------------------------------------------------

    def _quick(self, item: etree._Element, depth: int) -> bool:
        """Resolve the common item at once: a reference that is not lazy, or an
        expression without lazy variables, whose every path passes only
        resolved elements and ends on one leaf (or, with cdl:refroot, on
        targets already found clean). Returns False, having changed nothing
        of ``item``, for anything else (lazy, blocked, failing, several nodes
        or children found the first time, over a limit), which the general
        code then resolves from the start (:meth:`_resolve_from`) with its
        errors.

        A leaf that is itself an unresolved reference, not yet visited, is
        resolved first the same way (at most _QUICK_DEPTH deep), as the
        general code would resolve that blocker first; only successes are
        committed, so what the general code later sees is what it would have
        made itself.
        """
        index = item.get(P_REF)
        if index is None:
            if item.tag == T_EXPRESSION:
                return self._quick_expression(item, depth)
            return False
        lazy = item.get(A_LAZY)
        if lazy == "true":
            return False
        ref = self.refs[int(index)]
        if ref.refroot is None:
            # _quick_leaf written out: this runs for most items.
            parent = item.getparent()
            if parent is None:
                return False
            node = self._quick_walk(ref.steps, parent)
            if node is None:
                return False
            if len(node):
                return False
            tag = node.tag
            # Only elements of the names items have are looked at.
            maybe = tag in self._item_tags or tag in _CDL_TAGS
            if not maybe or node.get(P_REF) is None:
                if maybe and (tag == T_EXPRESSION or node.get(A_LAZY) == "true"):
                    return False
                leaf, value = node, node.text
                size = len(value) if value else 0
            else:
                target = self._quick_leaf(node, depth)
                if target is None:
                    return False
                leaf, value, size = target
        else:
            known = self.fixed.get(id(ref))
            if known is None:
                target = self._quick_target(ref, item, depth)
                if target is None:
                    return False
                leaf, value, size = target
            else:
                nodes, elements, size = known
                if elements or len(nodes) != 1:
                    # Clean targets with children, or several: copied as
                    # _reference copies them, which raises before changing anything.
                    if depth:
                        return False  # a copy gives children (or siblings) to a leaf the caller has found
                    try:
                        self._place(item, ref, nodes, elements, size)
                    except CdlError:
                        return False
                    return True  # only from run (depth 0): the caller records it, or needs not
                # One clean leaf found before (_quick_target for a known
                # target, written out; the text limit is checked below).
                leaf = nodes[0]
                value = leaf.text
        budget = self.ws.budget
        # Charged as _reference charges one leaf: no element, its text; and
        # _targets refuses a text over the limit before anything else.
        total = budget.text + size
        limits = budget.limits
        if total > limits.max_text or budget.elements > limits.max_elements:
            return False  # the general code raises, naming the limit
        budget.text = total
        attrib = item.attrib
        del attrib[P_REF]
        if lazy is not None:
            del attrib[A_LAZY]
        rec = self.ws.recorder
        if rec is not None:  # provenance hook
            rec.referenced(item, leaf, ref)
        item.text = value
        if depth:  # from run, the caller records it (or needs not)
            self._state[item] = _DONE
        return True

    def _quick_target(
        self, ref: Ref, holder: etree._Element, depth: int
    ) -> tuple[etree._Element, str | None, int] | None:
        """The one clean leaf ``ref`` selects for a property ``holder``, its
        value and the value's length; None where :meth:`_targets` would do
        anything but return one leaf (block, raise, several nodes, children)."""
        refroot = ref.refroot
        if refroot is None:
            start = holder.getparent()
            if start is None:
                return None
            node = self._quick_walk(ref.steps, start)
            return None if node is None else self._quick_leaf(node, depth)
        known = self.fixed.get(id(ref))
        if known is None:
            start = self.ws.lookup(refroot)
            if start is None:
                return None
            node = self._quick_walk(ref.steps, start)
            found = None if node is None else self._quick_leaf(node, depth)
            if found is not None:
                self.fixed[id(ref)] = ((found[0],), 0, found[2])  # as _targets keeps it
            return found
        nodes, elements, size = known
        if elements or len(nodes) != 1:
            return None
        budget = self.ws.budget
        if budget.text + size > budget.limits.max_text:
            return None  # _targets checks a known target too
        leaf = nodes[0]
        return leaf, leaf.text, size

    def _quick_walk(self, steps: tuple[str, ...], node: etree._Element) -> etree._Element | None:
        """:func:`walk` while the set holds one node and nothing blocks: that
        node at the end, else None."""
        passable = self._passable
        children = self.ws.children
        for step in steps:
            if step == UP:
                parent = node.getparent()
                if parent is None or parent.tag in LIST_PARENTS:
                    return None
                node = parent
                continue
            count = passable.get(node)
            if count is None:
                count = self._passed(node)
                if count is None:
                    return None
            if count > WIDE:
                listed = children.wide.get(node)
                if listed is None:
                    listed = children.build(node)
                found = listed.get(step, ())
                child = found[0] if len(found) == 1 else None
            elif count <= _FEW:
                # Few children: testing each one's name costs less than
                # lxml's name filter (1.2 us a step, whatever the width).
                child = None
                for candidate in node.getchildren():
                    if candidate.tag == step:
                        if child is not None:
                            child = None  # several
                            break
                        child = candidate
            else:
                matches = node.iterchildren(step)
                child = next(matches, None)
                if child is not None and next(matches, None) is not None:
                    child = None
            if child is None:
                return None  # none or several
            node = child
        return node

    def _passed(self, node: etree._Element) -> int | None:
        """Remember ``node``, met on a path for the first time, as passable
        with its number of children; None (nothing remembered) if it is
        unresolved.

        _items.is_unresolved, inlined and conservative (a lazy variable falls
        back too): the general code decides. Only elements of the names
        items have are looked at.
        """
        tag = node.tag
        if (tag in self._item_tags or tag in _CDL_TAGS) and (
            node.get(P_REF) is not None or tag == T_EXPRESSION or node.get(A_LAZY) == "true"
        ):
            return None
        passable = self._passable
        if len(passable) >= _PASSABLE_MAX:
            _make_room(passable, self._wide)
        count = passable[node] = len(node)
        if count > WIDE:
            self._wide[node] = count
        return count

    def _quick_named(self, parent: etree._Element, tags: tuple[str, ...]) -> dict[str, etree._Element | None] | None:
        """A step from ``parent`` to each of ``tags`` at once, as
        :meth:`_quick_walk` takes one: each name's only child, or None for a
        name with several; None if ``parent`` is unresolved."""
        count = self._passable.get(parent)
        if count is None:
            count = self._passed(parent)
            if count is None:
                return None
        named: dict[str, etree._Element | None] = {}
        if count > WIDE:
            children = self.ws.children
            listed = children.wide.get(parent)
            if listed is None:
                listed = children.build(parent)
            for tag in tags:
                found = listed.get(tag, ())
                if len(found) == 1:
                    named[tag] = found[0]
            return named
        if count <= 2 * _FEW:
            # As in _quick_walk: each child's name tested here costs less
            # than lxml's filter for several names (2.5 us for four).
            for child in parent.getchildren():
                name = child.tag
                if name in tags:
                    named[name] = None if name in named else child  # (in tags: a str)
            return named
        for child in parent.iterchildren(*tags):
            name = child.tag
            named[name] = None if name in named else child  # type: ignore[index]  # an element's tag: a str
        return named

    def _quick_leaf(self, node: etree._Element, depth: int) -> tuple[etree._Element, str | None, int] | None:
        """``node``, where a path ends, with its value and the value's length,
        if it is a clean leaf (an unresolved reference is resolved first, if
        the fast path can); else None."""
        if len(node):
            return None
        budget = self.ws.budget
        while True:
            value = node.text
            size = len(value) if value else 0
            if budget.text + size > budget.limits.max_text:
                return None  # _targets raises here, before the blocker test
            tag = node.tag
            maybe = tag in self._item_tags or tag in _CDL_TAGS  # (see _quick)
            if not maybe or node.get(P_REF) is None:
                if maybe and (tag == T_EXPRESSION or node.get(A_LAZY) == "true"):
                    return None  # an expression leaves the tree when evaluated: the general code retries
                return node, value, size
            # A reference: resolve it first, as the general code would.
            if depth >= _QUICK_DEPTH or node in self._state or not self._quick(node, depth + 1):
                return None

    def _quick_expression(self, item: etree._Element, depth: int) -> bool:
        """:meth:`_quick` for a cdl:expression (as :meth:`_expression` does it)."""
        tables = self.ctx.tables
        if tables.lazy_variables:
            for var_el in item.iterchildren(T_VARIABLE):
                if var_el.get(A_LAZY) == "true":
                    return False  # pending
        index = item.get(P_EXPR)
        holder = item.getparent()
        if index is None or holder is None:
            return False
        expr = tables.exprs[int(index)]
        count = len(item)  # (len() makes no proxy)
        if count != len(expr.variables) and count:
            # Never made so (the loader allows only cdl:variable children);
            # the general code pairs them as it does. None: an inherited
            # copy without its variables (_model.strip_variables), which
            # are read from the tables here.
            return False
        plan = self._plans.get(id(expr))
        if plan is None:
            plan = self._plans[id(expr)] = _Plan(expr)
        values: dict[str, str] = {}
        chosen: list[etree._Element] = []
        start = holder.getparent()
        reached: dict[tuple[str, ...], dict[str, etree._Element | None] | None] = {}
        quick_leaf = self._quick_leaf
        item_tags = self._item_tags
        budget = self.ws.budget
        room = budget.limits.max_text - budget.text
        for var, prefix, last in plan.paths:
            if last is None or start is None:
                found = self._quick_target(var.ref, holder, depth)
            else:
                # Variables share their steps but the last (../listen/host,
                # ../listen/port): walk those once, and find the children
                # all of them name with one scan.
                if prefix in reached:
                    named = reached[prefix]
                else:
                    parent = self._quick_walk(prefix, start)
                    named = reached[prefix] = None if parent is None else self._quick_named(parent, plan.lasts[prefix])
                node = None if named is None else named.get(last[0])
                if node is None:
                    return False
                value = node.text
                tag = node.tag
                # Only elements of the names items have are looked at.
                maybe = tag in item_tags or tag in _CDL_TAGS
                if not (len(node) or (maybe and node.get(P_REF) is not None) or (value and len(value) > room)):
                    # _quick_leaf for the common clean leaf, written out.
                    if maybe and (tag == T_EXPRESSION or node.get(A_LAZY) == "true"):
                        return False
                    chosen.append(node)
                    values[var.name] = value or ""
                    continue
                found = quick_leaf(node, depth)
                room = budget.limits.max_text - budget.text  # a reference resolved first charged it
            if found is None:
                return False
            chosen.append(found[0])
            values[var.name] = found[1] or ""
        parts = plan.parts
        if parts is not None:
            result = "".join([part if name is None else values[name] for name, part in parts])
        else:
            try:
                result = _expressions.evaluate(expr.text, expr.token, values)
            except ExpressionError:
                return False  # the general code raises it, located
        rec = self.ws.recorder
        if rec is not None:  # provenance hook
            rec.computed(holder, item, {var.name: node for var, node in zip(expr.variables, chosen)})
        wide = self.ws.children.wide
        if wide and holder in wide:
            self.ws.children.removing(item)
        replace_with_text(item, result, holder)
        if depth:  # from run, the caller records it (or needs not)
            self._state[item] = _DONE
        return True

    # -- what the laziness phase may ask and change ---------------------------

    def is_pending(self, item: etree._Element) -> bool:
        """Whether ``item`` waits for a deploy-time value, itself or through another."""
        return self._state.get(item) is _PENDING

    def waits_on(self, item: etree._Element) -> list[etree._Element]:
        """The pending items a pending ``item`` waits for directly."""
        return list(self._waits_on.get(item, ()))

    def pending_items(self) -> list[etree._Element]:
        """Every pending item, in no particular order (for the deployment plan)."""
        return [el for el, s in self._state.items() if s is _PENDING]

    def settled(self, item: etree._Element) -> None:
        """``item`` was given its value from outside (a deploy-time value): done."""
        self._state[item] = _DONE
        self._waits_on.pop(item, None)

    def reopen_pending(self) -> list[etree._Element]:
        """Forget pending states (after deploy-time values), returning those items."""
        reopened = [el for el, s in self._state.items() if s is _PENDING]
        for el in reopened:
            del self._state[el]
        self._waits_on.clear()
        return reopened

    def _resolve_from(self, start: etree._Element) -> None:
        self._state[start] = _ACTIVE
        # Most items resolve at the first attempt; only a blocked one needs
        # the stack of frames.
        try:
            self._state[start] = self._attempt(start)
            return
        except _Blocked as blocked:
            stack = [_Frame(start, blocked.blockers)]
        except CdlError as error:
            self._state[start] = self._failed(start, error)
            return
        while stack:
            frame = stack[-1]
            pushed = False
            while frame.blockers:
                blocker = frame.blockers.pop(0)
                status = self._state.get(blocker)
                if status is _DONE:
                    continue
                if status is _PENDING:
                    frame.pending.append(blocker)
                    continue
                if status is _FAILED:
                    frame.failed = True
                    continue
                if status is _TEMPLATE:
                    frame.gaps.append(blocker)
                    continue
                if status is _ACTIVE:
                    self._cycle(stack, blocker)
                    frame.failed = True
                    continue
                self._state[blocker] = _ACTIVE
                stack.append(_Frame(blocker))
                pushed = True
                break
            if pushed:
                continue
            item = frame.item
            if frame.failed:
                self._state[item] = _FAILED
                stack.pop()
                continue
            if frame.gaps:
                self._state[item] = self._waits_on_gap(item, frame.gaps[0])
                stack.pop()
                continue
            if frame.pending:
                self._state[item] = _PENDING
                self._waits_on[item] = frame.pending
                stack.pop()
                continue
            try:
                outcome = self._attempt(item)
            except _Blocked as blocked:
                frame.blockers = blocked.blockers
                continue
            except CdlError as error:
                self._state[item] = self._failed(item, error)
                stack.pop()
                continue
            self._state[item] = outcome
            stack.pop()

    def _failed(self, item: etree._Element, error: CdlError) -> State:
        """The state of ``item`` whose attempt raised ``error``: a template's
        parameter (TEMPLATE, with a warning) or FAILED (the error is kept)."""
        if error.code in _TEMPLATE_GAPS and self._templates_open and in_part(item, T_CONFIGURATION):
            self.gaps[item] = error
            top = top_level_of(item)
            template = self.ctx.prefixes.path_of(item if top is None else top).lstrip("/")
            where = f"{error.url}:{error.line}" if error.line else str(error.url)
            self.warnings.append(
                f"{where}: {error.message}; left unresolved: a template's parameter, which lists extending "
                f"{template} must provide (7.6) (at {error.path})"
            )
            return _TEMPLATE
        self.problems.add(error)
        return _FAILED

    def _waits_on_gap(self, item: etree._Element, gap: etree._Element) -> State:
        """The state of ``item`` that needs ``gap``, a reference a template leaves unresolved.

        Another item of a template waits with it; anything else (a system's
        property reading the template, a deploy-time round) is an error of
        its own, saying what the template lacks.
        """
        cause = self.gaps[gap]
        ctx = self.ctx
        needs = f"{ctx.prefixes.path_of(gap)} ({self._at(gap)})"
        if self._templates_open and in_part(item, T_CONFIGURATION):
            self.gaps[item] = cause
            where = self._where(item)
            self.warnings.append(
                f"{self._at(item)}: left unresolved: it waits for {needs}, which its template leaves unresolved"
                f" (at {where.path})"
            )
            return _TEMPLATE
        what = "this reference" if item.get(P_REF) is not None else "this expression" if item.tag == T_EXPRESSION else "this property"
        self.problems.add(
            ReferenceResolutionError(
                f"{what} needs {needs}, a reference its template leaves unresolved: {cause.message}",
                code=cause.code,
                at=self._where(item),
            )
        )
        return _FAILED

    def _cycle(self, stack: list[_Frame], blocker: etree._Element) -> None:
        ctx = self.ctx
        start = next(i for i, f in enumerate(stack) if f.item is blocker)
        members = [f.item for f in stack[start:]]
        for member in members:
            self._state[member] = _FAILED
        described = ", ".join(f"{ctx.prefixes.path_of(m)} ({self._at(m)})" for m in members)
        if len(members) > 1:
            message = f"references depend on each other in a cycle: {described}"
        elif members[0].tag == T_EXPRESSION:
            message = f"the expression refers to itself: a variable selects the property holding it: {described}"
        else:
            message = f"the reference refers to itself: its path selects it or a property holding it: {described}"
        self.problems.add(ReferenceResolutionError(message, code="REF_CYCLE", at=self._where(members[0])))

    # -- one attempt ---------------------------------------------------------------

    def _attempt(self, item: etree._Element) -> State:
        """Resolve ``item`` now, or raise _Blocked / CdlError. Returns the new state."""
        index = item.get(P_REF)
        if index is not None:
            if item.get(A_LAZY) == "true":
                return _PENDING  # a lazy reference waits for its release (7.5.3)
            return self._reference(item, index)
        if item.tag == T_EXPRESSION:
            if has_lazy_variables(item):
                return _PENDING
            return self._expression(item)
        if has_value(item):
            raise LazinessError(
                "cdl:lazy marks a property whose value is given at deployment; this one has a value and no reference",
                code="LAZY_WITH_VALUE",
                at=located(self.ctx, item, A_LAZY),
            )
        return _PENDING  # a lazy property waits for its value (7.5.2)

    def _targets(
        self, ref: Ref, holder: etree._Element, written: etree._Element, what: str
    ) -> tuple[tuple[etree._Element, ...], int, int]:
        """The nodes ``ref`` selects for a property ``holder``, with the elements
        and characters below them; raise _Blocked when it must wait."""
        ctx = self.ctx
        if ref.refroot is not None:
            known = self.fixed.get(id(ref))
            if known is not None:
                self.ws.budget.check(known[1], known[2], ctx, written)
                return known
            start = self.ws.lookup(ref.refroot)
            if start is None:
                raise ReferenceResolutionError(
                    f"{what} names refroot {ref.refroot.text!r}, which is no top level list",
                    code="UNKNOWN_REFROOT",
                    at=located(ctx, written, written_as(written, A_REFROOT), ref.refroot.text),
                )
        else:
            start = holder.getparent()
            if start is None:
                # A property always has its list above it, and the loader
                # refuses a reference on a list without refroot: never here.
                raise ReferenceResolutionError(f"{what} {ref.text!r} has no context node", code="REF_CONTEXT", at=ctx.where(written))
        result = walk(start, ref.steps, self.ws.children)
        if result.blockers:
            raise _Blocked(result.blockers)
        if result.problem is not None:
            shown = ctx.prefixes.steps_text(ref)
            if result.problem == "above":
                raise ReferenceResolutionError(
                    f"{what} {ref.text!r} (read as {shown!r}) climbs above its top level list",
                    code="REF_ABOVE_TOP",
                    at=located(ctx, written, written_as(written, A_CREF), ref.text),
                )
            raise ReferenceResolutionError(
                f"{what} {ref.text!r} (read as {shown!r}) selects nothing"
                + (f": no {ctx.prefixes.qname(ref.steps[result.step])} at step {result.step + 1}" if result.step >= 0 else "")
                + self._refroot_hint(ref, result.step, what, written),
                code="REF_NOT_FOUND",
                at=located(ctx, written, written_as(written, A_CREF), ref.text),
            )
        nodes = result.nodes
        budget = self.ws.budget
        if len(nodes) == 1 and not len(nodes[0]):
            # The common case, one leaf: its size is its text, and it blocks
            # only if it is an item itself. Checking that costs no more than
            # remembering it would (and millions of leaves would fill memory).
            leaf = nodes[0]
            value = leaf.text
            elements, text = 0, len(value) if value else 0
            if budget.text + text > budget.limits.max_text:
                budget.check(elements, text, ctx, written)  # raises
            if is_unresolved(leaf):
                raise _Blocked((leaf,))
        else:
            elements, text = self._measure(nodes, ctx, written)
        if ref.refroot is not None:
            self.fixed[id(ref)] = (nodes, elements, text)
        return nodes, elements, text

    def _where(self, item: etree._Element) -> Location:
        """Where an item is written: a reference at its cdl:ref, an expression at its start."""
        return located(self.ctx, item, A_CREF) if item.get(P_REF) is not None else self.ctx.where(item)

    def _at(self, item: etree._Element) -> str:
        """``file:line`` of an item, as :meth:`_where` places it."""
        return located_at(self.ctx, item, A_CREF) if item.get(P_REF) is not None else self.ctx.at(item)

    def _refroot_hint(self, ref: Ref, step: int, what: str, written: etree._Element) -> str:
        """How to fix a path whose first named step, not found, names a top level list.

        A path starts inside its own list (7.3.1), so ``/server/port`` never
        reaches the top level list ``server``; cdl:refroot starts a path there.
        Worked out only on the error path.
        """
        if ref.refroot is not None or step < 0 or any(s != UP for s in ref.steps[:step]):
            return ""
        name = ref.steps[step]
        candidates = [name]
        index = doc_index_of(written)
        if not name.startswith("{") and index is not None and self.ctx.docs[index].target_ns:
            # An unqualified list of a document with a targetNamespace is named in it.
            candidates.append(f"{{{self.ctx.docs[index].target_ns}}}{name}")
        if all(self.ws.lists.get(c) is None for c in candidates):
            return ""
        raw = [r for r in ref.text.strip().lstrip("/").split("/") if r != "."]
        at = step - (len(ref.steps) - len(raw))  # absolute paths gained leading '..' steps
        if not 0 <= at < len(raw):
            return ""
        prefix = "cdl:" if what == "path" else ""  # a cdl:variable's attributes are unqualified
        rest = "/".join(raw[at + 1:]) or "."
        return (
            f"; {raw[at]} is a top level list, and a path starts inside its own list:"
            f' to start at {raw[at]}, write {prefix}refroot="{raw[at]}" {prefix}ref="{rest}"'
        )

    def _measure(self, nodes: tuple[etree._Element, ...], ctx: Context, written: etree._Element) -> tuple[int, int]:
        """Elements and characters below ``nodes``; raise _Blocked if an item is among them."""
        clean = self.clean
        budget = self.ws.budget
        elements = text = 0
        unknown: list[etree._Element] = []
        for node in nodes:
            known = clean.get(node)
            if known is None:
                unknown.append(node)
            else:
                elements += known[0]
                text += known[1]
        if unknown:
            measured = [_size(node) for node in unknown]
            for size in measured:
                elements += size[0]
                text += size[1]
            # Refuse an oversized copy before scanning it: scanning is as
            # costly as copying, and a doubling document would otherwise be
            # walked whole first.
            budget.check(elements, text, ctx, written)
            blockers = _items_in(unknown)
            if blockers:
                raise _Blocked(blockers)
            for node, size in zip(unknown, measured):
                # Resolution only ever removes items, so a subtree found clean
                # stays clean (and the same size): remember it.
                clean[node] = size
        else:
            budget.check(elements, text, ctx, written)
        return elements, text

    def _reference(self, el: etree._Element, index: str) -> State:
        """7.3.2: replace ``el`` (whose reference is ``index``) by one copy per
        target, holding the target's value."""
        ref = self.refs[int(index)]
        self._place(el, ref, *self._targets(ref, el, el, "path"))
        return _DONE

    def _place(self, el: etree._Element, ref: Ref, targets: tuple[etree._Element, ...], elements: int, text: int) -> None:
        """Replace ``el`` by copies of ``targets`` (clean, with ``elements``
        and ``text`` below them). Raises (a limit) before changing anything."""
        self.ws.budget.charge(elements + len(targets) - 1, text, self.ctx, el)
        if elements:
            # Each target's children land below el: the target itself lands
            # where el is.
            landing = depth_of(el)
            for target in targets:
                if len(target):
                    self.ws.budget.check_depth(landing, target, elements, self.ctx, el)
        attrib = el.attrib
        del attrib[P_REF]
        if A_LAZY in attrib:
            del attrib[A_LAZY]
        rec = self.ws.recorder  # provenance (explain): None in plain resolution
        if len(targets) == 1 and not elements:
            if rec is not None:  # provenance hook
                rec.referenced(el, targets[0], ref)
            el.text = targets[0].text  # the common case: one leaf value
            return
        shells = [el]
        for _ in targets[1:]:
            shells.append(el.__deepcopy__(None))  # type: ignore[attr-defined]  # lxml has it, the stubs lack it; same name, attributes and origin as el
        anchor = el
        for shell in shells[1:]:
            anchor.addnext(shell)
            anchor = shell
        if len(shells) > 1:
            self.ws.children.inserted_after(el, shells[1:])
            parent = el.getparent()
            if parent is not None:
                self._passable.pop(parent, None)  # its count of children is stale
                self._wide.pop(parent, None)
        for shell, target in zip(shells, targets):
            if rec is not None:  # provenance hook
                rec.referenced(shell, target, ref)
            shell.text = target.text
            if len(target):
                marked = self.marked.get(target)
                if marked is None:
                    mark, copies = self.marked[target] = (_children_mark(target), None)
                else:
                    mark, copies = marked
                if mark is not None:
                    # (Its children are the copies: a reference has no children of its own.)
                    shell.set(P_COPIES, mark)
                if rec is not None or marked is None or elements > _STAMP_MAX:
                    for child in target:
                        shell.append(child.__deepcopy__(None))  # type: ignore[attr-defined]  # lxml has it, the stubs lack it
                        if rec is not None:  # provenance hook
                            rec.copied(shell[-1], child, shell)
                    continue
                if copies is None:
                    # Copied again: from now on, copies of one stamp of its
                    # children (a clean target never changes), one lxml copy
                    # and one move each time instead of one per child
                    # (fanin 20k, 15 children: 22.7 -> 18.9 us a reference).
                    copies = stamp([child.__deepcopy__(None) for child in target], target)  # type: ignore[attr-defined]
                    self.marked[target] = (mark, copies)
                shell.append(copies.__deepcopy__(None))  # type: ignore[attr-defined]
                etree.strip_tags(shell, T_COPIES)

    def _expression(self, el: etree._Element) -> State:
        """7.3.6.1: bind each variable to its target's string value, evaluate, replace."""
        ctx = self.ctx
        expr = ctx.tables.exprs[table_index(el, P_EXPR)]
        holder = el.getparent()
        assert holder is not None
        values: dict[str, str] = {}
        chosen: list[etree._Element] = []  # each variable's node, for provenance
        blockers: list[etree._Element] = []
        variables = variables_of(self.ws, el)  # their elements locate errors
        for var, var_el in zip(expr.variables, variables):
            try:
                nodes = self._targets(var.ref, holder, var_el, f"variable ${var.name}")[0]
            except _Blocked as blocked:
                blockers.extend(blocked.blockers)
                continue
            if len(nodes) > 1:
                raise ExpressionError(
                    f"variable ${var.name} path {var.ref.text!r} selects {len(nodes)} properties; it must select one",
                    code="VARIABLE_MULTIPLE",
                    at=ctx.where(var_el),
                )
            node = nodes[0]
            chosen.append(node)
            # A leaf's string value is its text: no iterator needed.
            values[var.name] = "".join(node.itertext()) if len(node) else (node.text or "")
        if blockers:
            raise _Blocked(blockers)
        try:
            result = _expressions.evaluate(expr.text, expr.token, values)
        except ExpressionError as exc:
            exc.url, exc.line, exc.path = ctx.where(el)  # located only on failure: it walks the tree
            raise
        rec = self.ws.recorder
        if rec is not None:  # provenance hook
            rec.computed(holder, el, {var.name: node for var, node in zip(expr.variables, chosen)})
        self.ws.children.removing(el)
        replace_with_text(el, result)
        return _DONE



# -- for the deployment plan (cdl/_plan.py) ---------------------------------------


def waits_if_attempted(ws: Workspace, item: etree._Element) -> list[etree._Element]:
    """What a reference or expression would wait for if it were attempted now.

    The resolver never follows the path of a lazy reference (or of a lazy
    expression's variables) before its release (7.5.3), so what it would wait
    for is not among the resolver's results. This follows each path as an
    attempt does (from the refroot list, else from the holder's parent) with
    the same tests (:func:`walk`'s blockers, then :func:`_items_in` over what
    it selects), and changes nothing: no copy, no budget, no state. A path
    that selects nothing gives nothing: that is an error only when the
    reference is released. A lazy property gives nothing (it waits for a value).
    """
    ctx = ws.ctx
    index = item.get(P_REF)
    if index is not None:
        paths = [(ctx.tables.refs[int(index)], item)]
    elif item.tag == T_EXPRESSION:
        holder = item.getparent()
        assert holder is not None
        paths = [(var.ref, holder) for var in ctx.tables.exprs[int(item.get(P_EXPR))].variables]  # type: ignore[arg-type]
    else:
        return []
    found: list[etree._Element] = []
    for ref, holder in paths:
        if ref.refroot is not None:
            start = ws.lookup(ref.refroot)
            if start is None:
                continue
        else:
            parent = holder.getparent()
            if parent is None:
                continue
            start = parent
        result = walk(start, ref.steps, ws.children)
        if result.blockers:
            found.extend(result.blockers)
        elif result.nodes:
            found.extend(_items_in(result.nodes))
    return found
