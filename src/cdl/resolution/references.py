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

Most items never need the stack: unless ``CDL_NO_FAST_PATHS`` is set, a
specialisation (``resolution.shortcuts.ReferenceShortcuts``) first resolves,
in one pass and with the same rules, an item whose paths pass only resolved
elements and end on one leaf that can be copied (or on targets of a
cdl:refroot path already found clean), and hands anything else, unchanged,
to the general code above, which then decides and reports as it always did.

The blocker scan of a target is one C-level XPath over the target's subtree,
whose size is the size of the copy the resolution then makes, so the work stays
proportional to the output.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from lxml import etree

from ..errors import CdlError, ExpressionError, LazinessError, ReferenceResolutionError
from ..model.elements import children_mark, depth_of, doc_index_of, has_value, replace_with_text, table_index, top_level_of
from ..model.expressions import value_of
from ..model.items import NAMESPACES, UNRESOLVED_LEAF, UNRESOLVED_TEST, State, has_lazy_variables, is_unresolved, leaf_size
from ..model.paths import Walk, path_start, walk
from ..model.places import located, located_at, written_as
from ..model.scan import ListScan, collect, releasing
from ..model.suggest import near_children, near_lists
from ..model.tables import Expression, Ref
from ..model.vocabulary import A_CREF, A_LAZY, A_REFROOT, P_COPIES, P_EXPR, P_REF, T_CONFIGURATION, T_EXPRESSION, UP
from ..model.workspace import Context, Location, Problems, Workspace, variables_of
from .shortcuts import ReferenceShortcuts

_ITEMS = etree.XPath("descendant-or-self::*" + UNRESOLVED_TEST, namespaces=NAMESPACES)
_COUNT_BELOW = etree.XPath("count(descendant::*)")
_TEXT = etree.XPath("string-length(string())")


# Bound once as module names: states are read and written several times per
# item, and a module name is found at once where an enum class attribute is not.
_ACTIVE, _DONE, _PENDING, _FAILED, _TEMPLATE = State.ACTIVE, State.DONE, State.PENDING, State.FAILED, State.TEMPLATE

#: The errors a template's reference may have where it is written: an
#: inheritor can give its path something to select (a nested inheritor even
#: something to climb to).
_TEMPLATE_GAPS = ("REF_NOT_FOUND", "REF_ABOVE_TOP")


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


#: lxml tests an element's name against each name asked for: beyond this
#: many names the XPath scan, whose cost does not grow with them, is used
#: (docs/performance.md).
_MAX_ITEM_TAGS = 128


def find_items(ws: Workspace, parents: Iterable[etree._Element]) -> list[etree._Element]:
    """Every item under the given list parents, in document order.

    An item can only have one of the names ``Workspace.item_tags`` holds (or
    be a cdl:expression): lxml's own iteration picks the elements of those
    names in C, making no object for any other, and the one definition
    (``model.items.is_unresolved``) decides for those. The XPath scan, which tests
    the attributes of every element, costs several times as much.
    """
    return [el for el in find_candidates(ws, parents) if is_unresolved(el)]


def find_candidates(ws: Workspace, parents: Iterable[etree._Element]) -> list[etree._Element]:
    """:func:`find_items` without the last test: every item under the given
    list parents, in document order, among the other elements of the names
    items have, for ``ReferenceResolver.run(..., candidates=True)``.

    The resolver's specialisation reads the attributes an item's test reads
    anyway; told apart there, only the elements it gives up on are tested.
    """
    names = _item_names(ws)
    if names is None:
        # The general form: the definition itself, as one scan (no item names).
        return _ALL_ITEMS(parents, ws.size_bound())
    found: list[etree._Element] = []
    for parent in parents:
        collect(found, parent.iterdescendants(*names))  # in pieces: a whole cdl:system is one walk
    return found


def candidates_in(ws: Workspace, lists: Iterable[etree._Element]) -> list[etree._Element]:
    """:func:`find_candidates` in some top level lists (each list itself
    included), in the order given."""
    names = _item_names(ws)
    if names is None:
        return [el for lst in lists for el in _ALL_ITEMS.within(lst)]
    return [el for lst in lists for el in lst.iter(*names)]


def _item_names(ws: Workspace) -> tuple[str, ...] | None:
    """The names an item of ``ws`` may have, for lxml to pick them in C; None
    when the scan by the definition itself is to be used (the fast paths
    off, or too many names)."""
    tags = ws.item_tags
    if not ws.ctx.fast_paths or len(tags) > _MAX_ITEM_TAGS:
        return None
    return (T_EXPRESSION, *tags)


@dataclass
class _ItemFrame:
    """An item on the resolver's stack, with what it waits for."""

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


class _Waits:
    """What each pending item waits for directly (``on``), and the reverse:
    for an item, the pending items that wait for it directly (``by``, as
    ordered sets), so that a deploy-time value reopens only what waits on it
    (:meth:`ReferenceResolver.reopen_waiting`)."""

    __slots__ = ("by", "on")

    def __init__(self) -> None:
        self.on: dict[etree._Element, list[etree._Element]] = {}
        self.by: dict[etree._Element, dict[etree._Element, None]] = {}

    def add(self, item: etree._Element, blockers: list[etree._Element]) -> None:
        self.on[item] = blockers
        for blocker in blockers:
            self.by.setdefault(blocker, {})[item] = None

    def forget(self, item: etree._Element) -> None:
        """Drop what ``item`` waited for, from both directions."""
        for blocker in self.on.pop(item, ()):
            waiters = self.by.get(blocker)
            if waiters is not None:
                waiters.pop(item, None)
                if not waiters:
                    del self.by[blocker]


class ReferenceResolver:
    """Resolves items of one workspace; keeps their states between rounds."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.ctx = ws.ctx
        self._state: dict[etree._Element, State] = {}
        #: What each pending item waits for directly, and the reverse.
        self._waits = _Waits()
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
        #: The specialisation for common items, and what it remembers for the
        #: general code (targets found clean, copies); None with the fast
        #: paths off: then only the general code runs, remembering nothing.
        self._shortcuts = ReferenceShortcuts(self, self._state, _DONE) if self.ctx.fast_paths else None

    def releasing(self) -> Iterator[None]:
        """Forget what holds elements of the trees, a piece at a time (``model.scan.releasing``); not run afterwards."""
        remembered = self._shortcuts.forgetting() if self._shortcuts is not None else iter(())
        yield from itertools.chain(releasing(self._state), releasing(self.gaps), remembered)

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
        shortcuts = self._shortcuts
        for item in items:
            if item in state:
                continue
            # (The specialisation changes nothing of an element that is no item.)
            if shortcuts is not None and shortcuts.resolved(item):
                if deploying:
                    # Items released and reopened may repeat: remember each
                    # done. Items found once each (find_items, _items_in) are
                    # left out of the states: nothing asks for one again, as
                    # it is no longer unresolved.
                    state[item] = _DONE
            elif not candidates or is_unresolved(item):
                self._resolve_from(item)
        self.problems.raise_if_any()

    def forget_targets(self) -> None:
        """Drop what resolving remembered of targets, once no item is left to resolve.

        The specialisation's memory (found targets of cdl:refroot paths,
        passable elements, clean and copied targets) only serves later
        items. The engine calls this before switching the collector back
        on, so that no collection walks them; what is pending is kept.
        """
        if self._shortcuts is not None:
            self._shortcuts.forget()

    # -- what the laziness phase may ask and change ---------------------------

    def is_pending(self, item: etree._Element) -> bool:
        """Whether ``item`` waits for a deploy-time value, itself or through another."""
        return self._state.get(item) is _PENDING

    def waits_on(self, item: etree._Element) -> list[etree._Element]:
        """The pending items a pending ``item`` waits for directly."""
        return list(self._waits.on.get(item, ()))

    def pending_items(self) -> list[etree._Element]:
        """Every pending item, in no particular order (for the deployment plan)."""
        return [el for el, s in self._state.items() if s is _PENDING]

    def settled(self, item: etree._Element) -> None:
        """``item`` was given its value from outside (a deploy-time value): done."""
        self._state[item] = _DONE
        self._waits.forget(item)

    def reopen_pending(self) -> list[etree._Element]:
        """Forget pending states (after deploy-time values), returning those items."""
        reopened = [el for el, s in self._state.items() if s is _PENDING]
        for el in reopened:
            del self._state[el]
        self._waits = _Waits()
        return reopened

    def reopen_waiting(self, changed: Iterable[etree._Element]) -> list[etree._Element]:
        """Forget the pending states of the items that wait, directly or
        through others, for the ``changed`` items (given values or released),
        and of the pending ``changed`` items themselves; returns them.

        What :meth:`reopen_pending` does for the items a change can reach:
        any other would be pending again, as it is.
        """
        state, waiters = self._state, self._waits.by
        stack = list(changed)
        reopened = dict.fromkeys(el for el in stack if state.get(el) is _PENDING)
        while stack:
            for waiter in waiters.get(stack.pop(), ()):
                if waiter not in reopened:
                    reopened[waiter] = None
                    stack.append(waiter)
        for el in reopened:
            del state[el]
            self._waits.forget(el)
        return list(reopened)

    # -- the stack -----------------------------------------------------------------

    def _resolve_from(self, start: etree._Element) -> None:
        self._state[start] = _ACTIVE
        # Most items resolve at the first attempt; only a blocked one needs
        # the stack of frames.
        try:
            self._state[start] = self._attempt(start)
            return
        except _Blocked as blocked:
            stack = [_ItemFrame(start, blocked.blockers)]
        except CdlError as error:
            self._state[start] = self._failed(start, error)
            return
        while stack:
            frame = stack[-1]
            blocker = self._next_blocker(stack, frame)
            if blocker is not None:
                self._state[blocker] = _ACTIVE
                stack.append(_ItemFrame(blocker))
                continue
            item = frame.item
            if frame.failed:
                self._state[item] = _FAILED
            elif frame.gaps:
                self._state[item] = self._waits_on_gap(item, frame.gaps[0])
            elif frame.pending:
                self._state[item] = _PENDING
                self._waits.add(item, frame.pending)
            else:
                try:
                    self._state[item] = self._attempt(item)
                except _Blocked as blocked:
                    frame.blockers = blocked.blockers
                    continue
                except CdlError as error:
                    self._state[item] = self._failed(item, error)
            stack.pop()

    def _next_blocker(self, stack: list[_ItemFrame], frame: _ItemFrame) -> etree._Element | None:
        """Take ``frame``'s blockers in turn: the first not visited yet, to be
        resolved next; the others, by their state, make the item done with,
        pending, a template's gap or failed (a cycle when on the stack)."""
        state = self._state
        while frame.blockers:
            blocker = frame.blockers.pop(0)
            status = state.get(blocker)
            if status is None:
                return blocker
            if status is _PENDING:
                frame.pending.append(blocker)
            elif status is _FAILED:
                frame.failed = True
            elif status is _TEMPLATE:
                frame.gaps.append(blocker)
            elif status is _ACTIVE:
                self._report_cycle(stack, blocker)
                frame.failed = True
        return None

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
        needs = f"{ctx.prefixes.path_of(gap)} ({_at(ctx, gap)})"
        if self._templates_open and in_part(item, T_CONFIGURATION):
            self.gaps[item] = cause
            self.warnings.append(
                f"{_at(ctx, item)}: left unresolved: it waits for {needs}, which its template leaves unresolved"
                f" (at {_where(ctx, item).path})"
            )
            return _TEMPLATE
        what = "this reference" if item.get(P_REF) is not None else "this expression" if item.tag == T_EXPRESSION else "this property"
        self.problems.add(
            ReferenceResolutionError(
                f"{what} needs {needs}, a reference its template leaves unresolved: {cause.message}",
                code=cause.code,
                at=_where(ctx, item),
            )
        )
        return _FAILED

    def _report_cycle(self, stack: list[_ItemFrame], blocker: etree._Element) -> None:
        """``blocker`` is on the stack: every item from it up is in a cycle (failed)."""
        ctx = self.ctx
        start = next(i for i, f in enumerate(stack) if f.item is blocker)
        members = [f.item for f in stack[start:]]
        for member in members:
            self._state[member] = _FAILED
        described = ", ".join(f"{ctx.prefixes.path_of(m)} ({_at(ctx, m)})" for m in members)
        if len(members) > 1:
            message = f"references depend on each other in a cycle: {described}"
        elif members[0].tag == T_EXPRESSION:
            message = f"the expression refers to itself: a variable selects the property holding it: {described}"
        else:
            message = f"the reference refers to itself: its path selects it or a property holding it: {described}"
        self.problems.add(ReferenceResolutionError(message, code="REF_CYCLE", at=_where(ctx, members[0])))

    # -- one attempt ---------------------------------------------------------------

    def _attempt(self, item: etree._Element) -> State:
        """Resolve ``item`` now, or raise _Blocked / CdlError. Returns the new state."""
        index = item.get(P_REF)
        if index is not None:
            if item.get(A_LAZY) == "true":
                return _PENDING  # a lazy reference waits for its release (7.5.3)
            ref = self.refs[int(index)]
            self.place(item, ref, *self._targets(ref, item, item, "path"))  # 7.3.2
            return _DONE
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
        budget = self.ws.budget
        shortcuts = self._shortcuts
        if ref.refroot is not None and shortcuts is not None and (known := shortcuts.refroot_targets.get(id(ref))) is not None:
            budget.check(known[1], known[2], ctx, written)
            return known
        start = path_start(self.ws, ref, holder)
        if start is None:
            raise _no_start(self.ws, ref, written, what)
        result = walk(start, ref.steps, self.ws.children)
        if result.blockers:
            raise _Blocked(result.blockers)
        if result.problem is not None:
            # A suggestion looks at the children where the path stops: only
            # for as many messages as a run collects errors (template gaps are
            # warnings, as many as there are), so their cost stays bounded.
            suggest = len(self.warnings) + len(self.problems.items) < self.ctx.limits.max_errors
            raise _not_found(self.ws, ref, result, written, what, start, suggest)
        nodes = result.nodes
        if len(nodes) == 1 and not len(nodes[0]):
            # The common case, one leaf: its size is its text, and it blocks
            # only if it is an item itself. Testing that costs no more than
            # remembering it would (and millions of leaves would fill memory).
            leaf = nodes[0]
            elements, text = 0, leaf_size(leaf)
            if text == UNRESOLVED_LEAF:
                budget.check(0, len(leaf.text or ""), ctx, written)  # a copy over a limit is refused first
                raise _Blocked(nodes)
            budget.check(0, text, ctx, written)
        else:
            elements, text = self._measure(nodes, ctx, written)
        if ref.refroot is not None and shortcuts is not None:
            shortcuts.refroot_targets[id(ref)] = (nodes, elements, text)
        return nodes, elements, text

    def _measure(self, nodes: tuple[etree._Element, ...], ctx: Context, written: etree._Element) -> tuple[int, int]:
        """Elements and characters below ``nodes``; raise _Blocked if an item is among them."""
        # Resolution only ever removes items, so a subtree found clean stays
        # clean (and the same size): the specialisation remembers it.
        clean = {} if self._shortcuts is None else self._shortcuts.clean_sizes
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
                clean[node] = size
        else:
            budget.check(elements, text, ctx, written)
        return elements, text

    def place(self, el: etree._Element, ref: Ref, targets: tuple[etree._Element, ...], elements: int, text: int) -> None:
        """7.3.2: replace the reference ``el`` by copies of ``targets`` (clean,
        with ``elements`` and ``text`` below them). Raises (a limit) before
        changing anything."""
        budget = self.ws.budget
        charged = elements + len(targets) - 1
        if elements:
            # The limits are refused before the depth (as the charge would),
            # and nothing is charged for a copy the depth refuses. Each
            # target's children land below el: the target itself lands where el is.
            budget.check(charged, text, self.ctx, el)
            landing = depth_of(el)
            for target in targets:
                if len(target):
                    budget.check_depth(landing, target, elements, self.ctx, el)
        budget.charge(charged, text, self.ctx, el)
        reads = self.ws.reads
        if reads is not None and ref.refroot is not None:
            reads.add_for(el, ref.refroot)
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
        for shell, target in zip(self._shells(el, len(targets)), targets):
            if rec is not None:  # provenance hook
                rec.referenced(shell, target, ref)
            shell.text = target.text
            if len(target):
                self._copy_children(shell, target, elements)

    def _shells(self, el: etree._Element, count: int) -> list[etree._Element]:
        """``el`` and ``count - 1`` copies of it placed after it (same name,
        attributes and origin), one for each target."""
        shells = [el]
        for _ in range(count - 1):
            shells.append(el.__deepcopy__(None))  # type: ignore[attr-defined]  # lxml has it, the stubs lack it
        anchor = el
        for shell in shells[1:]:
            anchor.addnext(shell)
            anchor = shell
        if count > 1:
            self.ws.children.inserted_after(el, shells[1:])
            parent = el.getparent()
            if parent is not None and self._shortcuts is not None:
                self._shortcuts.children_added(parent)
        return shells

    def _copy_children(self, shell: etree._Element, target: etree._Element, elements: int) -> None:
        """Copies of ``target``'s children below ``shell`` (a reference has
        no children of its own), saying which document they were written in."""
        rec = self.ws.recorder
        shortcuts = self._shortcuts
        if rec is None and shortcuts is not None and shortcuts.copied_from_stamp(shell, target, elements):
            return
        mark = children_mark(target)
        if mark is not None:
            shell.set(P_COPIES, mark)
        for child in target:
            shell.append(child.__deepcopy__(None))  # type: ignore[attr-defined]  # lxml has it, the stubs lack it
            if rec is not None:  # provenance hook
                rec.copied(shell[-1], child, shell)

    def _expression(self, el: etree._Element) -> State:
        """7.3.6.1: bind each variable to its target's string value, evaluate, replace."""
        ctx = self.ctx
        expr = ctx.tables.exprs[table_index(el, P_EXPR)]
        holder = el.getparent()
        assert holder is not None
        nodes: list[etree._Element] = []  # each variable's node
        blockers: list[etree._Element] = []
        variables = variables_of(self.ws, el)  # their elements locate errors
        for var, var_el in zip(expr.variables, variables):
            try:
                found = self._targets(var.ref, holder, var_el, f"variable ${var.name}")[0]
            except _Blocked as blocked:
                blockers.extend(blocked.blockers)
                continue
            if len(found) > 1:
                raise ExpressionError(
                    f"variable ${var.name} path {var.ref.text!r} selects {len(found)} properties; it must select one",
                    code="VARIABLE_MULTIPLE",
                    at=ctx.where(var_el),
                )
            nodes.append(found[0])
        if blockers:
            raise _Blocked(blockers)
        try:
            result = value_of(expr, nodes)
        except ExpressionError as exc:
            exc.url, exc.line, exc.path = ctx.where(el)  # located only on failure: it walks the tree
            raise
        self.replace_expression(el, holder, expr, nodes, result)
        return _DONE

    def replace_expression(
        self, el: etree._Element, holder: etree._Element, expr: Expression, nodes: Sequence[etree._Element], result: str
    ) -> None:
        """Replace the cdl:expression ``el`` of ``holder`` by its value
        ``result``, computed from ``nodes`` (what its variables selected)."""
        reads = self.ws.reads
        if reads is not None:
            for var in expr.variables:
                if var.ref.refroot is not None:
                    reads.add_for(holder, var.ref.refroot)
        rec = self.ws.recorder
        if rec is not None:  # provenance hook
            rec.computed(holder, el, {var.name: node for var, node in zip(expr.variables, nodes)})
        self.ws.children.removing(el)
        replace_with_text(el, result, holder)


# -- where items are written, and the errors of a path ---------------------------


def _where(ctx: Context, item: etree._Element) -> Location:
    """Where an item is written: a reference at its cdl:ref, an expression at its start."""
    return located(ctx, item, A_CREF) if item.get(P_REF) is not None else ctx.where(item)


def _at(ctx: Context, item: etree._Element) -> str:
    """``file:line`` of an item, as :func:`_where` places it."""
    return located_at(ctx, item, A_CREF) if item.get(P_REF) is not None else ctx.at(item)


def _no_start(ws: Workspace, ref: Ref, written: etree._Element, what: str) -> ReferenceResolutionError:
    """The error of a path that has nowhere to start (``model.paths.path_start``)."""
    ctx = ws.ctx
    if ref.refroot is not None:
        return ReferenceResolutionError(
            f"{what} names refroot {ref.refroot.text!r}, which is no top level list" + near_lists(ws, ref.refroot.text, written),
            code="UNKNOWN_REFROOT",
            at=located(ctx, written, written_as(written, A_REFROOT), ref.refroot.text),
        )
    # A property always has its list above it, and the loader refuses a
    # reference on a list without refroot: never here.
    return ReferenceResolutionError(f"{what} {ref.text!r} has no context node", code="REF_CONTEXT", at=ctx.where(written))


def _not_found(
    ws: Workspace, ref: Ref, result: Walk, written: etree._Element, what: str, start: etree._Element, suggest: bool
) -> ReferenceResolutionError:
    """The error of a path that climbs above its list or selects nothing (with
    the names at the step where it stops that are close, if ``suggest``)."""
    ctx = ws.ctx
    shown = ctx.prefixes.steps_text(ref)
    if result.problem == "above":
        return ReferenceResolutionError(
            f"{what} {ref.text!r} (read as {shown!r}) climbs above its top level list" + _climb_hint(ws, ref, start, what, written),
            code="REF_ABOVE_TOP",
            at=located(ctx, written, written_as(written, A_CREF), ref.text),
        )
    hint = _refroot_hint(ws, ref, result.step, what, written)
    if not hint and suggest and result.step >= 0:
        hint = near_children(ws, ref, start, result.step, written)
    return ReferenceResolutionError(
        f"{what} {ref.text!r} (read as {shown!r}) selects nothing"
        + (f": no {ctx.prefixes.qname(ref.steps[result.step])} at step {result.step + 1}" if result.step >= 0 else "")
        + hint,
        code="REF_NOT_FOUND",
        at=located(ctx, written, written_as(written, A_CREF), ref.text),
    )


def _climb_hint(ws: Workspace, ref: Ref, start: etree._Element, what: str, written: etree._Element) -> str:
    """How far a path that climbs above its top level list may climb, and how
    to start it at another list (cdl:refroot). Worked out only on the error path."""
    top = top_level_of(start)
    if top is None:
        return ""
    room = depth_of(start) - depth_of(top)
    steps = f"{room} step{'s' if room != 1 else ''} ('..')"
    if ref.refroot is not None:
        limit = f": it starts at its cdl:refroot list {ws.ctx.prefixes.path_of(top)}, so it may climb at most {steps} from there"
    else:
        limit = (
            f": it starts at {ws.ctx.prefixes.path_of(start)} (the property's parent), {room} level{'s' if room != 1 else ''}"
            f" below its top level list, so it may climb at most {steps}"
        )
    named = next((i for i, step in enumerate(ref.steps) if step != UP), len(ref.steps))
    hint = _refroot_hint(ws, ref, named, what, written)
    if hint or ref.refroot is not None:
        return limit + hint
    prefix = _attribute_prefix(what)
    return limit + f'; to start at another top level list, name it: {prefix}refroot="LIST" {prefix}ref="PATH"'


def _attribute_prefix(what: str) -> str:
    """How cdl:ref and cdl:refroot are written where the path ``what`` is:
    qualified on a property, unqualified on a cdl:variable (Appendix A)."""
    return "cdl:" if what == "path" else ""


def _refroot_hint(ws: Workspace, ref: Ref, step: int, what: str, written: etree._Element) -> str:
    """How to fix a path whose first named step, not found, names a top level list.

    A path starts inside its own list (7.3.1), so ``/server/port`` never
    reaches the top level list ``server``; cdl:refroot starts a path there.
    Worked out only on the error path.
    """
    if ref.refroot is not None or not 0 <= step < len(ref.steps) or any(s != UP for s in ref.steps[:step]):
        return ""
    name = ref.steps[step]
    candidates = [name]
    index = doc_index_of(written)
    docs = ws.ctx.docs
    if not name.startswith("{") and index is not None and docs[index].target_ns:
        # An unqualified list of a document with a targetNamespace is named in it.
        candidates.append(f"{{{docs[index].target_ns}}}{name}")
    if all(ws.lists.get(c) is None for c in candidates):
        return ""
    raw = [r for r in ref.text.strip().lstrip("/").split("/") if r != "."]
    at = step - (len(ref.steps) - len(raw))  # absolute paths gained leading '..' steps
    if not 0 <= at < len(raw):
        return ""
    prefix = _attribute_prefix(what)
    rest = "/".join(raw[at + 1:]) or "."
    return (
        f"; {raw[at]} is a top level list, and a path starts inside its own list:"
        f' to start at {raw[at]}, write {prefix}refroot="{raw[at]}" {prefix}ref="{rest}"'
    )


def copied_resolver(
    resolver: ReferenceResolver, ws: Workspace, copy_of: Callable[[etree._Element], etree._Element | None]
) -> ReferenceResolver:
    """A resolver for ``ws``, a copy of ``resolver``'s working trees
    (``copy_of`` gives each element's copy), holding what is read of a
    resolution once resolving is over: the pending and template states,
    what each pending item waits for, the templates' gaps and the warnings
    (``engine.document.live_resolution``).

    An element without a copy (None) is left out, with what waits for it: a
    resolution that takes some lists over from an earlier one
    (``engine.phases``) gives each element of those itself and resolves
    the others again."""
    other = ReferenceResolver(ws)
    get = copy_of
    for el, s in resolver._state.items():
        if s is _PENDING or s is _TEMPLATE:
            copy = get(el)
            if copy is not None:
                other._state[copy] = s
    for el, blockers in resolver._waits.on.items():
        copies = [get(each) for each in (el, *blockers)]
        if all(copy is not None for copy in copies):
            other._waits.add(copies[0], copies[1:])  # type: ignore[arg-type]  # none is None
    other.gaps = {copy: error for el, error in resolver.gaps.items() if (copy := get(el)) is not None}
    other.warnings = list(resolver.warnings)
    return other


def record_left_reads(ws: Workspace, items: Iterable[etree._Element]) -> None:
    """Record in ``ws.reads`` the cdl:refroot of each item left unresolved
    (a reference, or an expression's variables): its output writes the
    name its lookup finds (``resolution.output``)."""
    reads = ws.reads
    if reads is None:
        return
    tables = ws.ctx.tables
    for item in items:
        index = item.get(P_REF)
        if index is not None:
            refs = [tables.refs[int(index)]]
        elif item.tag == T_EXPRESSION and (expr := item.get(P_EXPR)) is not None:
            refs = [var.ref for var in tables.exprs[int(expr)].variables]
        else:
            continue
        for ref in refs:
            if ref.refroot is not None:
                reads.add_for(item, ref.refroot)


# -- for the deployment plan (src/cdl/planning/plan.py) ---------------------------------------


def waits_if_attempted(ws: Workspace, item: etree._Element) -> list[etree._Element]:
    """What a reference or expression would wait for if it were attempted now.

    The resolver never follows the path of a lazy reference (or of a lazy
    expression's variables) before its release (7.5.3), so what it would wait
    for is not among the resolver's results. This follows each path as an
    attempt does (from :func:`path_start`) with the same tests
    (:func:`walk`'s blockers, then :func:`_items_in` over what it selects),
    and changes nothing: no copy, no budget, no state. A path that selects
    nothing gives nothing: that is an error only when the reference is
    released. A lazy property gives nothing (it waits for a value).
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
        start = path_start(ws, ref, holder)
        if start is None:
            continue
        result = walk(start, ref.steps, ws.children)
        if result.blockers:
            found.extend(result.blockers)
        elif result.nodes:
            found.extend(_items_in(result.nodes))
    return found
