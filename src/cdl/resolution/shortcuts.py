"""The specialisation of phase 5 for the common item (docs/performance.md).

Most items are a reference that is not lazy, or an expression without lazy
variables, whose every path passes only resolved elements and selects one
leaf that is resolved (or, with cdl:refroot, targets already found clean).
:class:`ReferenceShortcuts` resolves those in one pass, without the
resolver's frames and exceptions, and gives everything else back to the
general code (``ReferenceResolver``), which then decides and reports as it
always does. It calls the rules the general code calls: where a path
starts (``model.paths.path_start``), the child a step selects
(``ChildIndex.only``, which is ``ChildIndex.named`` for a step that selects
one node), what is unresolved (``model.items.is_unresolved``, asked only of
elements of the names items have) and the test of a leaf target
(``model.items.leaf_size``), a ``..`` step (``model.paths.parent_step``), the
budget (``Budget.fits``), the copies a reference is replaced by
(``ReferenceResolver.place``, which charges them), and the value of an
expression (``model.expressions.value_of``, which ``ReferenceResolver
.replace_expression`` puts in place). It restates none of them.

Contract:

- it never raises;
- when it declines an item (returns False), that item is as it was: nothing
  of it changed and nothing charged for it. On the way it may have resolved
  references its paths select (at most :data:`_NESTED_MAX` deep), each one
  exactly as the general code resolves a blocker before the item waiting for
  it, and recorded done;
- it remembers, to serve later items, elements found resolved on a path
  (with their number of children), the targets of cdl:refroot paths found
  clean, the sizes of clean targets with children, the copies made of them
  and each expression's variable paths and concat plan. All of it stays true because
  resolution only ever removes items; :meth:`ReferenceShortcuts.forget`
  drops it all.

``CDL_NO_FAST_PATHS=1`` (``Context.fast_paths`` False) leaves the resolver
without one: it then runs only its general code.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from typing import Protocol

from lxml import etree

from ..errors import CdlError, ExpressionError
from ..model.children import WIDE
from ..model.elements import children_mark, stamp
from ..model.expressions import ConcatPlan, concat_plan, value_of
from ..model.items import UNRESOLVED_LEAF, State, has_lazy_variables, is_unresolved, leaf_size
from ..model.paths import parent_step, path_start
from ..model.scan import released, releasing
from ..model.tables import Expression, Ref, Variable
from ..model.vocabulary import A_LAZY, P_COPIES, P_EXPR, P_REF, T_COPIES, T_EXPRESSION, UP
from ..model.workspace import Context, Workspace


class GeneralResolver(Protocol):
    """What the shortcuts use of the general code (``references.ReferenceResolver``):
    its working trees, and the two rules that change them."""

    ws: Workspace
    ctx: Context

    def place(self, el: etree._Element, ref: Ref, targets: tuple[etree._Element, ...], elements: int, text: int) -> None:
        """Replace the reference ``el`` by copies of ``targets`` (7.3.2)."""

    def replace_expression(
        self, el: etree._Element, holder: etree._Element, expr: Expression, nodes: Sequence[etree._Element], result: str
    ) -> None:
        """Replace the cdl:expression ``el`` of ``holder`` by its value ``result``."""


#: How many items deep a target that is itself an unresolved reference is
#: resolved first before the item is given to the general code (a constant:
#: the general code's stack, not Python's, follows long chains).
_NESTED_MAX = 8

#: Elements remembered as passable at most; the set is emptied when full.
#: Items come in document order, so the few elements of one component that
#: its paths pass through over and over are remembered while they are
#: needed, and memory stays bounded.
_PASSABLE_MAX = 4096

#: Elements below a target beyond which its copies are made child by child:
#: a stamp is one more copy of the target, kept as long as the resolver, and
#: a document that multiplies its size by references must not cost more
#: than the budget charges (as _inherit._TEMPLATE_MAX for prototypes).
_STAMP_MAX = 256

#: The copies_mark of a target copied once, whose stamp is made at its
#: second copy (a target copied once needs none).
_COPIED_ONCE: tuple[str | None, etree._Element | None] = (None, None)


def _make_room(passable: dict[etree._Element, int], wide: dict[etree._Element, int]) -> None:
    """Empty the full set of passable elements, but keep the wide ones
    (``wide``: those of ``passable`` with more than WIDE children).

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


class _VariablePaths:
    """The paths of one parsed expression's variables, grouped so that the
    steps they share are taken once (worked out once per expression)."""

    __slots__ = ("paths", "lasts", "plan")

    def __init__(self, expr: Expression) -> None:
        #: Per variable: the variable, and for a path without refroot ending
        #: in a named step, its steps but the last and that last step (else
        #: (), None).
        self.paths: list[tuple[Variable, tuple[str, ...], str | None]] = []
        for var in expr.variables:
            steps = var.ref.steps
            if var.ref.refroot is None and steps and steps[-1] != UP:
                self.paths.append((var, steps[:-1], steps[-1]))
            else:
                self.paths.append((var, (), None))
        #: The expression's concat plan (``model.expressions.value_of``).
        self.plan: ConcatPlan | None = concat_plan(expr.token)


class ReferenceShortcuts:
    """The common items of one resolver, resolved at once (see the module)."""

    def __init__(self, resolver: GeneralResolver, states: dict[etree._Element, State], done: State) -> None:
        # Not a strong reference: the resolver owns its shortcuts, and a cycle
        # between them would keep a dropped resolution (its working trees, a
        # recorder's events) alive until the cyclic collector walks it, and
        # forever in a process that froze its objects (``gc.freeze``), as
        # ``cdl lsp`` does with the analysis it answers from.
        self._resolver: GeneralResolver = weakref.proxy(resolver)
        self._ws = resolver.ws
        self._tables = resolver.ctx.tables
        #: The resolver's states, and the one of a resolved item: a reference
        #: resolved on the way is recorded done, as the general code records
        #: a blocker.
        self._states = states
        self._done = done
        #: The names unresolved items may have (the live set: it only grows).
        #: An element of another name, and not cdl:expression, is no item:
        #: its attributes need not be read (find_items relies on the same;
        #: tests/internals/test_items.py checks it on every tree it resolves).
        self._item_tags = resolver.ws.item_tags
        #: Elements a path step found not unresolved (bounded, see
        #: _PASSABLE_MAX): resolution only ever removes items, so they stay
        #: so. The value: its number of children when first met, which
        #: chooses how a step finds a child (``ChildIndex.only``); counting
        #: them once per element, in C but over every child, is cheaper than
        #: once per step, and a count gone stale since only makes a step slower.
        self._passable: dict[etree._Element, int] = {}
        #: Those of them with more than WIDE children (see _make_room).
        self._wide: dict[etree._Element, int] = {}
        #: Found targets of references with cdl:refroot, by id of the parsed
        #: reference (kept alive by the tables), with the elements and
        #: characters below them: such a path means the same nodes wherever
        #: it is written, and once those are clean they stay so.
        self.refroot_targets: dict[int, tuple[tuple[etree._Element, ...], int, int]] = {}
        #: Targets with children whose subtree holds no unresolved item:
        #: (elements, characters) below them.
        self.clean_sizes: dict[etree._Element, tuple[int, int]] = {}
        #: Targets copied with their children: the copies_mark of their copies
        #: and, once copied twice, a stamp of their children (_model.stamp).
        self._copied: dict[etree._Element, tuple[str | None, etree._Element | None]] = {}
        #: Each parsed expression's variable paths, by its id (kept alive by the tables).
        self._variable_paths: dict[int, _VariablePaths] = {}

    def forget(self) -> None:
        """Drop everything remembered (once no item is left to resolve)."""
        released(self.forgetting())

    def forgetting(self) -> Iterator[None]:
        """:meth:`forget`, a piece at a time (``model.scan.releasing``): some
        of it holds an entry per reference."""
        remembered = (self._passable, self._wide, self.refroot_targets, self.clean_sizes, self._copied, self._variable_paths)
        for held in remembered:
            yield from releasing(held)

    def children_added(self, parent: etree._Element) -> None:
        """``parent`` gained children (shells of a reference's targets): its
        remembered number of children is stale. (An evaluated expression
        leaving its holder needs no word: one child fewer than remembered
        makes no step slower.)"""
        self._passable.pop(parent, None)
        self._wide.pop(parent, None)

    def copied_from_stamp(self, shell: etree._Element, target: etree._Element, elements: int) -> bool:
        """Give ``shell`` the copies of ``target``'s children (and their
        copies_mark) from a stamp, if ``target`` was copied before; False
        (nothing done) for its first copy, which the caller makes child by
        child, and for copies over _STAMP_MAX elements."""
        if elements > _STAMP_MAX:
            return False
        known = self._copied.get(target)
        if known is None:
            self._copied[target] = _COPIED_ONCE
            return False
        mark, copies = known
        if copies is None:
            # Copied again: from now on, copies of one stamp of its children
            # (a clean target never changes), one lxml copy and one move each
            # time instead of one per child.
            mark = children_mark(target)
            copies = stamp([child.__deepcopy__(None) for child in target], target)  # type: ignore[attr-defined]
            self._copied[target] = (mark, copies)
        if mark is not None:
            shell.set(P_COPIES, mark)
        shell.append(copies.__deepcopy__(None))  # type: ignore[attr-defined]
        etree.strip_tags(shell, T_COPIES)
        return True

    # -- references ----------------------------------------------------------------

    def resolved(self, item: etree._Element, depth: int = 0) -> bool:
        """Resolve ``item`` if it is a common one; False (``item`` unchanged)
        for anything else, including an element that is no item."""
        index = item.get(P_REF)
        if index is None:
            return item.tag == T_EXPRESSION and self._expression(item, depth)
        lazy = item.get(A_LAZY)
        if lazy == "true":
            return False  # pending
        ref = self._tables.refs[int(index)]
        known = self.refroot_targets.get(id(ref)) if ref.refroot is not None else None
        if known is None:
            found = self._leaf_target(ref, item, depth)
            if found is None:
                return False
            leaf, size = found
            targets: tuple[etree._Element, ...] = (leaf,)
            elements = 0
            if ref.refroot is not None:
                self.refroot_targets[id(ref)] = (targets, 0, size)  # as the general code keeps it
        else:
            targets, elements, size = known
            if depth and (elements or len(targets) != 1):
                return False  # a copy gives children (or siblings) to a leaf the caller has found
        try:
            self._resolver.place(item, ref, targets, elements, size)
        except CdlError:
            return False  # a limit: the general code reports it, and place changed nothing
        if depth:  # from run, the caller records it (or needs not)
            self._states[item] = self._done
        return True

    def _leaf_target(self, ref: Ref, holder: etree._Element, depth: int) -> tuple[etree._Element, int] | None:
        """The one leaf ``ref`` selects for a property ``holder``, with the
        characters of its value (``model.items.leaf_size``), if it is resolved (a
        reference there is resolved first, if it can be here); else None."""
        start = path_start(self._ws, ref, holder)
        if start is None:
            return None
        return self._resolved_leaf(self._walk(ref.steps, start), depth)

    def _resolved_leaf(self, node: etree._Element | None, depth: int) -> tuple[etree._Element, int] | None:
        """``node``, where a path ends, with the characters of its value
        (``model.items.leaf_size``), if it is a leaf that is resolved (a reference
        there is resolved first, if it can be here); else None."""
        if node is None or len(node):
            return None
        size = leaf_size(node, self._item_tags)
        if size == UNRESOLVED_LEAF:
            size = self._resolved_first(node, depth)
            if size < 0:
                return None
        return node, size

    def _resolved_first(self, leaf: etree._Element, depth: int) -> int:
        """Resolve ``leaf``, an unresolved leaf a path ends on, first, as the
        general code resolves a blocker first, if it is a reference that can
        be resolved here: then its size (``model.items.leaf_size``); else
        UNRESOLVED_LEAF. The general code refuses a copy over the budget
        before it waits: so does this."""
        value = leaf.text
        if (
            leaf.get(P_REF) is None  # an expression leaves the tree when evaluated; a lazy property waits
            or depth >= _NESTED_MAX
            or leaf in self._states
            or not self._ws.budget.fits(0, len(value) if value else 0)
            or not self.resolved(leaf, depth + 1)
        ):
            return UNRESOLVED_LEAF
        return leaf_size(leaf, self._item_tags)

    def _walk(self, steps: tuple[str, ...], node: etree._Element) -> etree._Element | None:
        """``model.paths.walk`` while the set holds one node and nothing blocks:
        that node at the end, else None."""
        passable = self._passable
        only = self._ws.children.only
        for step in steps:
            if step == UP:
                parent = parent_step(node)
                if parent is None:
                    return None
                node = parent
                continue
            count = passable.get(node)
            if count is None:
                count = self._passed(node)
                if count is None:
                    return None
            child = only(node, step, count)
            if child is None:
                return None  # none or several
            node = child
        return node

    def _passed(self, node: etree._Element) -> int | None:
        """Remember ``node``, met on a path for the first time, as passable
        with its number of children; None (nothing remembered) if it is
        unresolved."""
        tag = node.tag
        if (tag in self._item_tags or tag == T_EXPRESSION) and is_unresolved(node):
            return None
        passable = self._passable
        if len(passable) >= _PASSABLE_MAX:
            _make_room(passable, self._wide)
        count = passable[node] = len(node)
        if count > WIDE:
            self._wide[node] = count
        return count

    # -- expressions ---------------------------------------------------------------

    def _expression(self, item: etree._Element, depth: int) -> bool:
        """A cdl:expression whose every variable selects one leaf that can be
        copied now (as ``ReferenceResolver._expression`` evaluates it)."""
        tables = self._tables
        if tables.lazy_variables and has_lazy_variables(item):
            return False  # pending
        index = item.get(P_EXPR)
        holder = item.getparent()
        if index is None or holder is None:
            return False
        expr = tables.exprs[int(index)]
        count = len(item)
        if count != len(expr.variables) and count:
            # Never made so (the loader allows only cdl:variable children);
            # the general code pairs them as it does. None: an inherited
            # copy without its variables (_model.strip_variables), which
            # are read from the tables here.
            return False
        paths = self._variable_paths.get(id(expr))
        if paths is None:
            paths = self._variable_paths[id(expr)] = _VariablePaths(expr)
        nodes = self._variable_nodes(paths, holder, depth)
        if nodes is None:
            return False
        try:
            result = value_of(expr, nodes, paths.plan)
        except ExpressionError:
            return False  # the general code raises it, located
        self._resolver.replace_expression(item, holder, expr, nodes, result)
        if depth:  # from run, the caller records it (or needs not)
            self._states[item] = self._done
        return True

    def _variable_nodes(self, paths: _VariablePaths, holder: etree._Element, depth: int) -> list[etree._Element] | None:
        """The leaf each variable selects, if each can be copied now. Variables
        share their steps but the last (../listen/host, ../listen/port):
        those are taken once."""
        nodes: list[etree._Element] = []
        largest = 0
        start: etree._Element | None = holder  # (holder: not found yet)
        reached: dict[tuple[str, ...], etree._Element | None] = {}
        for var, prefix, last in paths.paths:
            if last is not None and start is holder:
                start = path_start(self._ws, var.ref, holder)  # the same for every path without refroot
            if last is None or start is None:
                found = self._leaf_target(var.ref, holder, depth)
            else:
                if prefix in reached:
                    parent = reached[prefix]
                else:
                    parent = reached[prefix] = self._walk(prefix, start)
                if parent is None:
                    return None
                found = self._resolved_leaf(self._walk((last,), parent), depth)
            if found is None:
                return None
            nodes.append(found[0])
            if found[1] > largest:
                largest = found[1]
        # Each variable's copy is tested against the budget as it stands
        # (nothing is charged between them): the largest decides.
        return nodes if self._ws.budget.fits(0, largest) else None
