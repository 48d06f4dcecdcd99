"""The specialisation of phase 5 for the common item (docs/performance.md).

Most items are a reference that is not lazy, or an expression without lazy
variables, whose every path passes only resolved elements and selects one
leaf that is resolved (or, with cdl:refroot, targets already found clean).
:class:`ReferenceShortcuts` resolves those in one pass, without the
resolver's frames and exceptions, and gives everything else back to the
general code (``ReferenceResolver``), which then decides and reports as it
always does. It restates no rule: where a path starts
(``_paths.path_start``), a ``..`` step (``_paths.parent_step``), the
children a step selects (``ChildIndex.named``), what is unresolved and the
test of a leaf target (``_items``), the copy itself (``ReferenceResolver.place``)
and the value of an expression (``_expressions.value_of``) are all called.

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
  and each expression's concat plan. All of it stays true because
  resolution only ever removes items; :meth:`ReferenceShortcuts.forget`
  drops it all.

``CDL_NO_FAST_PATHS=1`` (``Context.fast_paths`` False) leaves the resolver
without one: it then runs only its general code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lxml import etree

from ._children import WIDE
from ._expressions import ConcatPlan, concat_plan, value_of
from ._items import UNRESOLVED_LEAF, has_lazy_variables, is_unresolved, leaf_copy_size
from ._model import A_LAZY, P_COPIES, P_EXPR, P_REF, T_COPIES, T_EXPRESSION, UP, Expression, Ref, stamp
from ._paths import parent_step, path_start
from .errors import CdlError, ExpressionError

if TYPE_CHECKING:
    from ._references import ReferenceResolver, State

#: How many items deep a target that is itself an unresolved reference is
#: resolved first before the item is given to the general code (a constant:
#: the general code's stack, not Python's, follows long chains).
_NESTED_MAX = 8

#: Elements remembered as passable (not unresolved) at most; the set is
#: emptied when full. Items come in document order, so the few elements of
#: one component that its paths pass through over and over are remembered
#: while they are needed, and memory stays bounded.
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


class ReferenceShortcuts:
    """The common items of one resolver, resolved at once (see the module)."""

    def __init__(self, resolver: ReferenceResolver, states: dict[etree._Element, State], done: State) -> None:
        self._resolver = resolver
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
        #: tests/test_items.py checks it on every tree it resolves).
        self._item_tags = resolver.ws.item_tags
        #: Elements a path step found not unresolved (bounded, see
        #: _PASSABLE_MAX), with their number of children when first met,
        #: which chooses how a step looks for a child (``ChildIndex.named``).
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
        #: Each parsed expression's concat plan, by its id (kept alive by the tables).
        self._plans: dict[int, ConcatPlan | None] = {}

    def forget(self) -> None:
        """Drop everything remembered (once no item is left to resolve)."""
        self._passable.clear()
        self._wide.clear()
        self.refroot_targets.clear()
        self.clean_sizes.clear()
        self._copied.clear()
        self._plans.clear()

    def resolved(self, item: etree._Element, depth: int = 0) -> bool:
        """Resolve ``item`` if it is a common one; False (``item`` unchanged)
        for anything else, including an element that is no item."""
        index = item.get(P_REF)
        if index is not None:
            return self._reference(item, index, depth)
        if item.tag == T_EXPRESSION:
            return self._expression(item, depth)
        return False

    def children_added(self, parent: etree._Element) -> None:
        """``parent`` has new children (shells of a reference's targets): its
        remembered number of children is stale."""
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
            from ._references import children_mark  # (the general code's module imports this one)

            mark = children_mark(target)
            copies = stamp([child.__deepcopy__(None) for child in target], target)  # type: ignore[attr-defined]
            self._copied[target] = (mark, copies)
        if mark is not None:
            shell.set(P_COPIES, mark)
        shell.append(copies.__deepcopy__(None))  # type: ignore[attr-defined]
        etree.strip_tags(shell, T_COPIES)
        return True

    # -- references ----------------------------------------------------------------

    def _reference(self, item: etree._Element, index: str, depth: int) -> bool:
        if item.get(A_LAZY) == "true":
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
            return False  # a limit: the general code reports it
        if depth:  # from run, the caller records it (or needs not)
            self._states[item] = self._done
        return True

    def _leaf_target(self, ref: Ref, holder: etree._Element, depth: int) -> tuple[etree._Element, int] | None:
        """The one leaf ``ref`` selects for a property ``holder``, with the
        characters of its value, if it can be copied now (a reference there
        is resolved first, if it can be here); None for anything else."""
        start = path_start(self._ws, ref, holder)
        if start is None:
            return None
        node = self._walk(ref.steps, start)
        if node is None or len(node):
            return None
        while True:
            size = leaf_copy_size(node, self._ws.budget)
            if size >= 0:
                return node, size
            if (
                size != UNRESOLVED_LEAF
                or node.get(P_REF) is None  # an expression leaves the tree when evaluated; a lazy property waits
                or depth >= _NESTED_MAX
                or node in self._states
                or not self.resolved(node, depth + 1)
            ):
                return None

    def _walk(self, steps: tuple[str, ...], node: etree._Element) -> etree._Element | None:
        """``_paths.walk`` while the set holds one node and nothing blocks:
        that node at the end, else None."""
        passable = self._passable
        named = self._ws.children.named
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
            found = named(node, step, count)
            if len(found) != 1:
                return None  # none or several
            node = found[0]
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
        nodes: list[etree._Element] = []
        for var in expr.variables:
            found = self._leaf_target(var.ref, holder, depth)
            if found is None:
                return False
            nodes.append(found[0])
        try:
            result = value_of(expr, nodes, self._plan(expr))
        except ExpressionError:
            return False  # the general code raises it, located
        self._resolver.replace_expression(item, holder, expr, nodes, result)
        if depth:  # from run, the caller records it (or needs not)
            self._states[item] = self._done
        return True

    def _plan(self, expr: Expression) -> ConcatPlan | None:
        """``expr``'s concat plan, worked out once."""
        key = id(expr)
        if key in self._plans:
            return self._plans[key]
        plan = self._plans[key] = concat_plan(expr.token)
        return plan
