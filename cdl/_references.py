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

The blocker scan of a target is one C-level XPath over the target's subtree,
whose size is the size of the copy the resolution then makes, so the work stays
proportional to the output.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from lxml import etree

from . import _expressions
from ._model import (
    ListScan,
    A_LAZY,
    Context,
    CDL_NS,
    ENGINE_NS,
    P_DOC,
    P_EXPR,
    P_REF,
    T_EXPRESSION,
    T_VARIABLE,
    Problems,
    Ref,
    Workspace,
    depth_of,
    doc_index_of,
    has_value,
    replace_with_text,
)
from ._paths import is_lazy, walk
from .errors import CdlError, ExpressionError, LazinessError, ReferenceResolutionError

_NS = {"e": ENGINE_NS, "cdl": CDL_NS}
# One location step, never a union: libxml2 sorts a union's result into
# document order, which on trees that inheritance has rearranged costs
# seconds for large documents.
_ITEM_TEST = "[@e:ref or self::cdl:expression or (@cdl:lazy='true' and not(self::cdl:variable))]"
_ITEMS = etree.XPath("descendant-or-self::*" + _ITEM_TEST, namespaces=_NS)
_COUNT_BELOW = etree.XPath("count(descendant::*)")
_TEXT = etree.XPath("string-length(string())")

# Item states. Absent from the state map: not visited yet.
ACTIVE = "active"  # on the stack
DONE = "done"
PENDING = "pending"
FAILED = "failed"


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
        elif node.get(P_REF) is not None or node.tag == T_EXPRESSION or node.get(A_LAZY) == "true":
            found.append(node)
    return found


_ALL_ITEMS = ListScan(_ITEM_TEST, _NS)


def find_items(ws: Workspace, parents: Iterable[etree._Element]) -> list[etree._Element]:
    """Every item under the given list parents, in document order."""
    return _ALL_ITEMS(parents, ws.size_bound())


def item_kind(el: etree._Element) -> str:
    """'reference', 'expression' or 'lazy-property'; lazy references say so."""
    if el.get(P_REF) is not None:
        return "lazy-reference" if is_lazy(el) else "reference"
    if el.tag == T_EXPRESSION:
        return "lazy-expression" if _lazy_variables(el) else "expression"
    return "lazy-property"


def _lazy_variables(expr_el: etree._Element) -> bool:
    return any(var.get(A_LAZY) == "true" for var in expr_el.iterchildren(T_VARIABLE))


@dataclass
class _Frame:
    item: etree._Element
    blockers: list[etree._Element] = field(default_factory=list)
    pending: list[etree._Element] = field(default_factory=list)
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
        self.state: dict[etree._Element, str] = {}
        #: For a pending item, the pending items it waits for directly.
        self.waits_on: dict[etree._Element, list[etree._Element]] = {}
        #: Targets with children whose subtree holds no unresolved item:
        #: (elements, characters) below them. Leaves are checked each time instead.
        self.clean: dict[etree._Element, tuple[int, int]] = {}
        #: Found targets of references with cdl:refroot, by id of the parsed
        #: reference (kept alive by the tables): such a path means the same
        #: nodes wherever it is written, and once those are clean they stay so.
        self.fixed: dict[int, tuple[tuple[etree._Element, ...], int, int]] = {}
        #: Targets whose children carry their document mark.
        self.marked: set[etree._Element] = set()
        self.problems = Problems(self.ctx.limits.max_errors)
        self.refs = self.ctx.tables.refs

    # -- driving ---------------------------------------------------------------

    def run(self, items: Iterable[etree._Element]) -> None:
        """Resolve ``items`` and everything they depend on; raise collected errors."""
        for item in items:
            if item not in self.state:
                self._resolve_from(item)
        self.problems.raise_if_any()

    def reopen_pending(self) -> list[etree._Element]:
        """Forget pending states (after deploy-time values), returning those items."""
        reopened = [el for el, s in self.state.items() if s == PENDING]
        for el in reopened:
            del self.state[el]
        self.waits_on.clear()
        return reopened

    def _resolve_from(self, start: etree._Element) -> None:
        self.state[start] = ACTIVE
        # Most items resolve at the first attempt; only a blocked one needs
        # the stack of frames.
        try:
            self.state[start] = self._attempt(start)
            return
        except _Blocked as blocked:
            stack = [_Frame(start, blocked.blockers)]
        except CdlError as error:
            self.problems.add(error)
            self.state[start] = FAILED
            return
        while stack:
            frame = stack[-1]
            pushed = False
            while frame.blockers:
                blocker = frame.blockers.pop(0)
                status = self.state.get(blocker)
                if status == DONE:
                    continue
                if status == PENDING:
                    frame.pending.append(blocker)
                    continue
                if status == FAILED:
                    frame.failed = True
                    continue
                if status == ACTIVE:
                    self._cycle(stack, blocker)
                    frame.failed = True
                    continue
                self.state[blocker] = ACTIVE
                stack.append(_Frame(blocker))
                pushed = True
                break
            if pushed:
                continue
            item = frame.item
            if frame.failed:
                self.state[item] = FAILED
                stack.pop()
                continue
            if frame.pending:
                self.state[item] = PENDING
                self.waits_on[item] = frame.pending
                stack.pop()
                continue
            try:
                outcome = self._attempt(item)
            except _Blocked as blocked:
                frame.blockers = blocked.blockers
                continue
            except CdlError as error:
                self.problems.add(error)
                self.state[item] = FAILED
                stack.pop()
                continue
            self.state[item] = outcome
            stack.pop()

    def _cycle(self, stack: list[_Frame], blocker: etree._Element) -> None:
        ctx = self.ctx
        start = next(i for i, f in enumerate(stack) if f.item is blocker)
        members = [f.item for f in stack[start:]]
        for member in members:
            self.state[member] = FAILED
        described = ", ".join(f"{ctx.prefixes.path_of(m)} ({ctx.at(m)})" for m in members)
        self.problems.add(
            ReferenceResolutionError(
                f"references depend on each other in a cycle: {described}",
                code="REF_CYCLE",
                **ctx.where(members[0]),  # type: ignore[arg-type]
            )
        )

    # -- one attempt ---------------------------------------------------------------

    def _attempt(self, item: etree._Element) -> str:
        """Resolve ``item`` now, or raise _Blocked / CdlError. Returns the new state."""
        index = item.get(P_REF)
        if index is not None:
            if item.get(A_LAZY) == "true":
                return PENDING  # a lazy reference waits for its release (7.5.3)
            return self._reference(item, index)
        if item.tag == T_EXPRESSION:
            if _lazy_variables(item):
                return PENDING
            return self._expression(item)
        if has_value(item):
            raise LazinessError(
                "cdl:lazy marks a property whose value is given at deployment; this one has a value and no reference",
                code="LAZY_WITH_VALUE",
                **self.ctx.where(item),  # type: ignore[arg-type]
            )
        return PENDING  # a lazy property waits for its value (7.5.2)

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
                    **ctx.where(written),  # type: ignore[arg-type]
                )
        else:
            start = holder.getparent()  # a property always has its list above it
        result = walk(start, ref.steps, self.ws.children)
        if result.blockers:
            raise _Blocked(result.blockers)
        if result.problem is not None:
            shown = ctx.prefixes.steps_text(ref)
            if result.problem == "above":
                raise ReferenceResolutionError(
                    f"{what} {ref.text!r} (read as {shown!r}) climbs above its top level list",
                    code="REF_ABOVE_TOP",
                    **ctx.where(written),  # type: ignore[arg-type]
                )
            raise ReferenceResolutionError(
                f"{what} {ref.text!r} (read as {shown!r}) selects nothing"
                + (f": no {ctx.prefixes.qname(ref.steps[result.step])} at step {result.step + 1}" if result.step >= 0 else ""),
                code="REF_NOT_FOUND",
                **ctx.where(written),  # type: ignore[arg-type]
            )
        nodes = result.nodes
        budget = self.ws.budget
        if len(nodes) == 1 and not len(nodes[0]):
            # The common case, one leaf: its size is its text, and it blocks
            # only if it is an item itself (_items_in's test for a leaf, inlined).
            # Checking that costs no more than remembering it would (and
            # millions of leaves would fill memory).
            leaf = nodes[0]
            value = leaf.text
            elements, text = 0, len(value) if value else 0
            if budget.text + text > budget.limits.max_text:
                budget.check(elements, text, ctx, written)  # raises
            if leaf.get(P_REF) is not None or leaf.get(A_LAZY) == "true" or leaf.tag == T_EXPRESSION:
                raise _Blocked((leaf,))
        else:
            elements, text = self._measure(nodes, ctx, written)
        if ref.refroot is not None:
            self.fixed[id(ref)] = (nodes, elements, text)
        return nodes, elements, text

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

    def _reference(self, el: etree._Element, index: str) -> str:
        """7.3.2: replace ``el`` (whose reference is ``index``) by one copy per
        target, holding the target's value."""
        ref = self.refs[int(index)]
        targets, elements, text = self._targets(ref, el, el, "path")
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
        if len(targets) == 1 and not elements:
            el.text = targets[0].text  # the common case: one leaf value
            return DONE
        shells = [el]
        for _ in targets[1:]:
            shells.append(el.__deepcopy__(None))  # same name, attributes and origin as el
        anchor = el
        for shell in shells[1:]:
            anchor.addnext(shell)
            anchor = shell
        if len(shells) > 1:
            self.ws.children.inserted_after(el, shells[1:])
        for shell, target in zip(shells, targets):
            shell.text = target.text
            if len(target):
                if target not in self.marked:
                    # Copies must say which document they were written in:
                    # mark the target's children once (a clean target never
                    # changes), so that every copy carries the mark.
                    self.marked.add(target)
                    origin = doc_index_of(target)
                    if origin is not None:
                        for child in target:
                            if child.get(P_DOC) is None:
                                child.set(P_DOC, str(origin))
                for child in target:
                    shell.append(child.__deepcopy__(None))
        return DONE

    def _expression(self, el: etree._Element) -> str:
        """7.3.6.1: bind each variable to its target's string value, evaluate, replace."""
        ctx = self.ctx
        expr = ctx.tables.exprs[int(el.get(P_EXPR))]  # type: ignore[arg-type]
        holder = el.getparent()
        assert holder is not None
        values: dict[str, str] = {}
        blockers: list[etree._Element] = []
        variables = list(el.iterchildren(T_VARIABLE))
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
                    **ctx.where(var_el),  # type: ignore[arg-type]
                )
            node = nodes[0]
            # A leaf's string value is its text: no iterator needed.
            values[var.name] = "".join(node.itertext()) if len(node) else (node.text or "")
        if blockers:
            raise _Blocked(blockers)
        try:
            result = _expressions.evaluate(expr.text, expr.token, values)
        except ExpressionError as exc:
            where = ctx.where(el)  # located only on failure: it walks the tree
            exc.url, exc.line, exc.path = where["url"], where["line"], where["path"]  # type: ignore[assignment]
            raise
        self.ws.children.removing(el)
        replace_with_text(el, result)
        return DONE

