"""Phase 6: laziness (7.5) and required properties (7.4.2).

Entry points: :func:`apply_round` (deploy-time values: supply a lazy
property's value, replace a lazy reference by a value, or release a lazy
reference so it resolves; ``live`` for a deployment's events), after
:func:`check_round`, the one definition of a round's rules, checked before
anything changes (a deployment checks each event with it and hands apply the
:class:`CheckedRound`), :func:`check_required` (with :func:`required_tags`,
found once per Document, its fast path walks only the tags a required
property can have), :func:`left_unresolved`, :func:`pending_items` (taken before an
output takes the trees apart) and :func:`pending_report` (paths written when read).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from lxml import etree

from ..errors import CdlError, DeployValueError, LazinessError, RequiredPropertyError
from ..model.elements import doc_index_of, has_value, tag_of, top_level_of
from ..model.items import has_lazy_variables, holder_of, is_lazy, item_kind
from ..model.naming import Prefixes
from ..model.paths import PrefixError, parse_user_path, ranked
from ..model.scan import ListScan
from ..model.suggest import did_you_mean, near_paths
from ..model.vocabulary import A_LAZY, A_USE, CDL_NS, LIST_PARENTS, P_REF, T_EXPRESSION, T_SYSTEM
from ..model.workspace import Context, Problems, SourceDoc, Workspace, variables_of
from .output import may_be_written
from .references import ReferenceResolver, in_part


@dataclass(frozen=True)
class Pending:
    """Something left unresolved for deployment time.

    Attributes:
        path: where it is (``/List/child``), with the main document's prefixes.
        kind: 'lazy-property', 'lazy-reference', 'lazy-expression', or
            'reference' / 'expression' for one that waits on another.
        waiting: paths of the pending items that wait directly on this one.
        waits_on: paths of the pending items this one waits for directly.
    """

    path: str
    kind: str
    waiting: tuple[str, ...] = ()
    waits_on: tuple[str, ...] = ()


@dataclass(frozen=True)
class Round:
    """One deploy-time step: values to supply and lazy references to release."""

    set: Mapping[str, str]
    release: Sequence[str] = ()


@dataclass(frozen=True)
class CheckedRound:
    """A round whose paths are selected and whose rules (7.5) are all met,
    as :func:`check_round` found it: what :func:`apply_round` changes."""

    #: (path, value, the elements it gives that value), for each value, in order.
    sets: tuple[tuple[str, str, tuple[etree._Element, ...]], ...]
    #: (path, the elements it releases), for each release, in order.
    releases: tuple[tuple[str, tuple[etree._Element, ...]], ...]

    def round(self) -> Round:
        """The paths and values of this round, as :class:`Round` holds them."""
        return Round({path: value for path, value, _ in self.sets}, tuple(path for path, _ in self.releases))


#: How a deployment narrows what a value's path selects (see :func:`check_round`).
Fresh = Callable[[str, str, list[etree._Element]], list[etree._Element]]


#: A round as ``Document.resolve(rounds=...)`` takes it (``cdl.RoundLike``): a
#: :class:`Round`, or a mapping ``{"set": {path: value}, "release": [path]}``
#: whose keys are both optional (any other key is ``BAD_SET``).
RoundLike: TypeAlias = Round | Mapping[str, Any]


def apply_round(
    ws: Workspace, resolver: ReferenceResolver, step: Round | CheckedRound, *, live: bool = False
) -> list[etree._Element]:
    """Apply one round of deploy-time values, then resolve what waited on them.

    ``step`` is checked first (:func:`check_round`), unless it was: nothing
    changes before every rule of the round is met. Returns the items given a
    value or released. With ``live`` (a deployment,
    ``src/cdl/engine/deployment.py``), only what waits on those items is
    attempted again (:meth:`ReferenceResolver.reopen_waiting`) and the
    required check (7.4.2) looks at what the round changed; otherwise every
    pending item is, and :func:`check_required` runs after the last round.
    What only resolving can tell (a released reference that still cannot
    resolve, a required property a reference leaves empty) is refused after
    the changes (``LAZY_UNRESOLVED``, ``REQUIRED_MISSING``).
    """
    checked = step if isinstance(step, CheckedRound) else check_round(ws, step, live=live)
    released: list[etree._Element] = []
    changed: list[etree._Element] = []
    for path, value, elements in checked.sets:
        for el in elements:
            changed.extend(_supply(ws, resolver, el, path, value))
    for _, elements in checked.releases:
        released.extend(_release(ws, el) for el in elements)
    # 7.5.1: after a laziness resolution, value reference resolution is applied.
    again = resolver.reopen_waiting(changed + released) if live else resolver.reopen_pending()
    resolver.run(again + released, deploying=True)
    still = [el for el in released if resolver.is_pending(el)]
    if still:
        ctx = ws.ctx
        raise LazinessError(
            "released lazy reference still cannot be resolved: "
            + ", ".join(f"{ctx.prefixes.path_of(el)} waits for {_waits(resolver, el)}" for el in still),
            code="LAZY_UNRESOLVED",
            at=ctx.where(still[0]),
        )
    if live:
        _check_required_below(ws, [*changed, *(holder_of(el) for el in again if not resolver.is_pending(el))])
    return changed + released


def check_round(ws: Workspace, step: Round, *, fresh: Fresh | None = None, live: bool = False) -> CheckedRound:
    """The one definition of a round's rules, checked before anything
    changes: every path is a string naming something (``BAD_SET``,
    ``SET_NOT_FOUND``), every value a string XML can hold (``BAD_SET``),
    every element set lazy or holding a lazy expression and every element
    released a lazy reference or such a holder (``SET_NOT_LAZY``), and no
    element named twice by the round (``SET_CONFLICT``: two values, or a
    value and a release). All such errors are reported together, in the
    order of the paths. With ``live``, a value that would leave a required
    property empty is refused here too (``REQUIRED_MISSING``, 7.4.2).

    ``fresh`` (a deployment's) narrows the elements each value's path
    selects to those it gives a value now (the others were given that value
    before), refusing a different one (``SET_CONFLICT``); a value left with
    none is no part of the round.
    """
    problems = Problems(ws.ctx.limits.max_errors)
    for path in [*step.set, *step.release]:
        if not isinstance(path, str):
            what = type(path).__name__
            raise DeployValueError(f"a deploy-time path must be a string, not {what}", code="BAD_SET", url=ws.ctx.docs[0].url)
    named: dict[etree._Element, str] = {}  # each element the round names, to the path naming it
    sets: list[tuple[str, str, tuple[etree._Element, ...]]] = []
    for path, value in step.set.items():
        try:
            _check_value(path, value, ws)
            elements = select_path(ws, path, "set")
            if fresh is not None:
                elements = fresh(path, value, elements)
            for el in elements:
                _supplyable(ws, el, path)
                _named_once(ws, el, "set", path, named)
                if live:
                    _required_kept(ws, el, value)
            if elements:
                sets.append((path, value, tuple(elements)))
        except CdlError as exc:
            problems.add(exc)
    releases: list[tuple[str, tuple[etree._Element, ...]]] = []
    for path in step.release:
        try:
            elements = select_path(ws, path, "release")
            for el in elements:
                _releasable(ws, el, path)
                _named_once(ws, el, "release", path, named)
            releases.append((path, tuple(elements)))
        except CdlError as exc:
            problems.add(exc)
    problems.raise_if_any()
    return CheckedRound(tuple(sets), tuple(releases))


def _named_once(ws: Workspace, el: etree._Element, verb: str, path: str, named: dict[etree._Element, str]) -> None:
    """Refuse (``SET_CONFLICT``) an element a round names a second time (one
    path selects each element once)."""
    earlier = named.get(el)
    named[el] = f"{verb} {path!r}"
    if earlier is not None:
        raise DeployValueError(
            f"{verb} {path!r}: {ws.ctx.prefixes.path_of(el)} is named by {earlier} too in this round; "
            "a round gives a lazy property one value, and releases a lazy reference it gives no value",
            code="SET_CONFLICT",
            at=ws.ctx.where(el),
        )


def _required_kept(ws: Workspace, el: etree._Element, value: str) -> None:
    """Refuse (``REQUIRED_MISSING``) ``value`` for ``el`` when it would leave
    a required property without a value (the rule of 7.4.2, asked of ``el``
    as it would be once given ``value``)."""
    given = etree.Element("given", {A_USE: el.get(A_USE) or ""})
    given.text = value
    if _required_unmet(given):
        raise _required_missing(ws.ctx, el)


def _supplyable(ws: Workspace, el: etree._Element, path: str) -> None:
    """Refuse (``SET_NOT_LAZY``) a value for ``el``, named by ``path``, unless
    it is lazy or holds an expression with lazy variables."""
    if not is_lazy(el) and _pending_expression(el) is None:
        raise DeployValueError(
            f"set {path!r}: {ws.ctx.prefixes.path_of(el)} is not lazy; only lazy properties and references take deploy-time values",
            code="SET_NOT_LAZY",
            at=ws.ctx.where(el),
        )


def _check_value(path: str, value: object, ws: Workspace) -> None:
    """A deploy-time value must be a string that XML can hold."""
    if not isinstance(value, str):
        raise DeployValueError(
            f"set {path!r}: the value must be a string, not {type(value).__name__}", code="BAD_SET", url=ws.ctx.docs[0].url
        )
    try:
        etree.Element("v").text = value
    except ValueError as exc:  # control characters, NUL, lone surrogates
        raise DeployValueError(f"set {path!r}: the value cannot be held in XML ({exc})", code="BAD_SET", url=ws.ctx.docs[0].url) from None


def _waits(resolver: ReferenceResolver, el: etree._Element) -> str:
    names = [resolver.ctx.prefixes.path_of(w) for w in resolver.waits_on(el)]
    return ", ".join(names) or "a lazy value"


def select_path(ws: Workspace, text: str, verb: str) -> list[etree._Element]:
    """Elements named by ``LIST/child/...`` written with the main document's
    prefixes (a deploy-time path; ``verb`` begins its messages):
    ``BAD_SET``, ``SET_NOT_FOUND`` otherwise."""
    try:
        return _select_in(ws, text, verb)
    except DeployValueError as exc:
        if exc.url is None:  # name the document whose prefixes the path uses
            exc.url = ws.ctx.docs[0].url
        raise


def _select_in(ws: Workspace, text: str, verb: str) -> list[etree._Element]:
    main = ws.ctx.docs[0]
    try:
        list_ref, steps, parts = parse_user_path(text, main.nsmap, main.target_ns)
    except PrefixError as exc:
        raise DeployValueError(f"{verb} {text!r}: {exc}", code="BAD_SET") from None
    top = ws.lookup(list_ref)
    if top is None:
        near = did_you_mean("/" + parts[0], [ws.ctx.prefixes.path_of(el) for el in ws.lists.values()])
        raise DeployValueError(f"{verb} {text!r}: no top level list {parts[0]!r}" + near, code="SET_NOT_FOUND")
    current = [top]
    for i, step in enumerate(steps):
        blocked = [el for el in current if el.get(P_REF) is not None]
        if blocked:
            raise DeployValueError(
                f"{verb} {text!r}: {ws.ctx.prefixes.path_of(blocked[0])} is still an unresolved reference",
                code="SET_NOT_FOUND",
            )
        found = [child for el in current for child in ranked(ws.children.named(el, step.name), step.rank)]
        if not found:
            near = near_paths(parts[i + 1], current, ws.ctx.prefixes.writer())
            raise DeployValueError(f"{verb} {text!r}: no {parts[i + 1]} at step {i + 2}" + near, code="SET_NOT_FOUND")
        current = found
    return current


def _pending_expression(el: etree._Element) -> etree._Element | None:
    expr = el.find(T_EXPRESSION)
    if expr is not None and has_lazy_variables(expr):
        return expr
    return None


def _supply(ws: Workspace, resolver: ReferenceResolver, el: etree._Element, path: str, value: str) -> list[etree._Element]:
    """Give ``el`` (checked) its deploy-time value; the items given it (``el``,
    and the expression it held)."""
    expr = _pending_expression(el)
    given = [el]
    if expr is not None:
        resolver.settled(expr)
        ws.children.removing(expr)
        el.remove(expr)
        given.append(expr)
    # A lazy reference given a value is replaced by the value (7.5.3: the
    # deployment service knows it); a lazy property receives it (7.5.2.1).
    el.attrib.pop(P_REF, None)
    el.attrib.pop(A_LAZY, None)
    el.text = value
    resolver.settled(el)
    if ws.recorder is not None:  # provenance hook
        ws.recorder.supplied(el, path)
    return given


def _releasable(ws: Workspace, el: etree._Element, path: str) -> None:
    """Refuse (``SET_NOT_LAZY``) releasing ``el``, named by ``path``, unless it
    is a lazy reference or holds an expression with lazy variables."""
    if _pending_expression(el) is None and (el.get(P_REF) is None or not is_lazy(el)):
        what = "a lazy property needs a value (use set)" if is_lazy(el) else "it is not a lazy reference"
        raise DeployValueError(
            f"release {path!r}: {ws.ctx.prefixes.path_of(el)} cannot be released: {what}",
            code="SET_NOT_LAZY",
            at=ws.ctx.where(el),
        )


def _release(ws: Workspace, el: etree._Element) -> etree._Element:
    """Release ``el`` (checked): the item released."""
    expr = _pending_expression(el)
    if expr is not None:
        for var in variables_of(ws, expr):
            var.attrib.pop(A_LAZY, None)
        return expr
    del el.attrib[A_LAZY]
    return el


#: The elements marked required, as :func:`_required_unmet` reads the mark.
_REQUIRED = ListScan("[@cdl:use='required']", {"cdl": CDL_NS})
_REQUIRED_LOADED = etree.XPath("descendant-or-self::*[@cdl:use='required']", namespaces={"cdl": CDL_NS})


def required_tags(docs: Sequence[SourceDoc]) -> frozenset[str] | None:
    """The tags of the elements the documents mark ``cdl:use="required"``,
    or None when a required mark may reach other tags.

    A mark reaches resolved trees only from the loaded ones: copies keep
    their tags, and inheritance passes a property's attributes only to an
    own property of the same tag. A top level list's attributes go to every
    element that extends it, whatever its tag: a marked list gives None.
    Documents whose bytes hold no ``use=`` are not scanned (see
    :func:`may_be_written`).
    """
    tags: set[str] = set()
    for doc in docs:
        if not may_be_written(doc, b"use"):
            continue
        for el in _REQUIRED_LOADED(doc.root):
            parent = el.getparent()
            if parent is not None and parent.tag in LIST_PARENTS:
                return None
            tags.add(tag_of(el))
    return frozenset(tags)


def check_required(
    ws: Workspace, resolver: ReferenceResolver, tags: frozenset[str] | None = None, lists: Sequence[etree._Element] | None = None
) -> None:
    """7.4.2: every required property of the main system has a value, or waits for a lazy one.

    ``tags`` (:func:`required_tags`, when known) are the only tags a required
    property can have (see :func:`_required_candidates`). ``lists``: only
    in those top level lists (the others were checked by the resolution
    they were taken over from, ``engine.phases``).
    """
    if lists is not None:
        _check_required_below(ws, lists)
        return
    problems = Problems(ws.ctx.limits.max_errors)
    for el in _required_candidates(ws, tags):
        if _required_unmet(el):
            problems.add(_required_missing(ws.ctx, el))
    problems.raise_if_any()


def _check_required_below(ws: Workspace, tops: Iterable[etree._Element]) -> None:
    """:func:`check_required` for the elements of the main system at or
    below ``tops`` (what a live round changed)."""
    problems = Problems(ws.ctx.limits.max_errors)
    seen: set[etree._Element] = set()
    for top in tops:
        if top in seen or not in_part(top, T_SYSTEM):
            continue
        for el in top.iter(etree.Element):
            if el not in seen:
                seen.add(el)
                if _required_unmet(el):
                    problems.add(_required_missing(ws.ctx, el))
    problems.raise_if_any()


def _required_missing(ctx: Context, el: etree._Element) -> RequiredPropertyError:
    """REQUIRED_MISSING for ``el``: at the element when its system list
    writes it, else at the system list that inherits it unfilled, saying
    where the template declares it (the line ``el`` keeps from its copy)."""
    message = 'this property is marked cdl:use="required" but has no value'
    where = ctx.where(el)
    top = top_level_of(el)
    if top is None or _written_in(ctx, el, top):
        return RequiredPropertyError(message, at=where)
    declared = f"{where.url}:{where.line}" if where.line else str(where.url)
    name = ctx.prefixes.path_of(top).lstrip("/")
    return RequiredPropertyError(
        f"{message}: {name} inherits it without one (declared required at {declared}); give it a value in {name}",
        at=ctx.where(top)._replace(path=where.path),
    )


def _written_in(ctx: Context, el: etree._Element, top: etree._Element) -> bool:
    """Whether ``el``, of the top level list ``top``, is written in that list
    (rather than copied from a template). The loaded document, which copies
    keep the lines of, says: asked only for an error."""
    index = doc_index_of(el)
    if index is None or index != doc_index_of(top) or index >= len(ctx.docs):
        return False
    # The loaded list is the one of top's name and line; only it is searched.
    loaded = next(
        (lst for parent in ctx.docs[index].list_parents() for lst in parent.iterchildren(tag_of(top)) if lst.sourceline == top.sourceline),
        None,
    )
    return loaded is not None and any(source.sourceline == el.sourceline for source in loaded.iter(tag_of(el)))


def _required_unmet(el: etree._Element) -> bool:
    """The rule of 7.4.2 for one element: marked required, it has no value,
    and no reference or lazy mark is still pending for it."""
    # Most candidates have a value: asked first (no attribute read).
    return not has_value(el) and el.get(A_USE) == "required" and el.get(P_REF) is None and not is_lazy(el)


def _required_candidates(ws: Workspace, tags: frozenset[str] | None) -> Iterable[etree._Element]:
    """The elements of the main system that may be required, in document
    order: every element marked ``cdl:use="required"`` is among them.

    With the fast paths on and ``tags`` known, the elements of those tags:
    lxml's own walk then hands Python only elements of those tags, which
    costs less than an XPath test of every element. Otherwise the marked
    elements, found by one XPath scan.
    """
    systems = ws.roots[0].iterchildren(T_SYSTEM)
    if ws.ctx.fast_paths and tags is not None:
        return (el for part in systems for el in part.iterdescendants(*tags)) if tags else ()
    return _REQUIRED(systems, ws.size_bound())


def left_unresolved(resolver: ReferenceResolver, items: Sequence[etree._Element]) -> list[etree._Element]:
    """The items still unresolved once resolution is over (pending, or a
    template's left with a warning), in the document order of ``items``.

    They are what the output writes back as references and expressions, and
    the only items the pending report looks at. The resolver's states say
    which they are; ``items`` is walked once, with a set test per item.
    """
    left = set(resolver.pending_items())
    left.update(resolver.gaps)
    return [el for el in items if el in left]


#: One pending item as the report needs it, taken while the working trees
#: are whole: the item, the property it is about, its kind, and the items
#: it waits on directly with theirs (see :func:`pending_items`).
PendingItem = tuple[etree._Element, etree._Element, str, tuple[tuple[etree._Element, etree._Element], ...]]


def pending_items(
    resolver: ReferenceResolver,
    items: Sequence[etree._Element],
    system_only: bool = False,
) -> list[PendingItem]:
    """What is still pending in the main document, in document order, as
    :func:`pending_report` writes it.

    ``items`` are the main document's items as found, in document order, or
    any part of them that holds every pending one (:func:`left_unresolved`).
    Everything pending is among them (copies are made only of resolved
    targets), so their order is the report's, without walking the tree.
    With ``system_only``, what the deployment of its cdl:system waits for:
    the system's pending items and, transitively, the items they wait on
    (a template's lazy property that a system reference reads through
    cdl:refroot, say). Only what the output changes is read here (kinds,
    the resolver's states, which property an item is about): the paths are
    written later, when the report is read, from the places the output
    leaves the holders in (it moves the lists whole, with what they hold).
    """
    pending = still_pending(resolver, items)
    if system_only:
        needed: set[etree._Element] = set()
        stack = [el for el in pending if in_part(el, T_SYSTEM)]
        while stack:
            el = stack.pop()
            if el not in needed:
                needed.add(el)
                stack.extend(resolver.waits_on(el))
        pending = [el for el in pending if el in needed]
    return [
        (el, holder_of(el), item_kind(el).value, tuple((b, holder_of(b)) for b in resolver.waits_on(el)))
        for el in pending
    ]


def still_pending(resolver: ReferenceResolver, items: Sequence[etree._Element]) -> list[etree._Element]:
    """The items of ``items`` still pending, in their order: one per entry of
    the report (:func:`pending_items`), without reading anything more."""
    return [el for el in items if resolver.is_pending(el)]


def pending_report(
    prefixes: Prefixes,
    pending: Sequence[PendingItem],
    paths: dict[etree._Element, str] | None = None,
) -> list[Pending]:
    """The report of :func:`pending_items`' items, their paths written with
    the main document's ``prefixes``. ``paths`` keeps each item's path once
    written (one dict for both reports: an item is named for itself and for
    each item waiting on it, and writing a path is not cheap).
    """
    written = {} if paths is None else paths
    write = prefixes.writer()

    def where(el: etree._Element, holder: etree._Element) -> str:
        path = written.get(el)
        if path is None:
            path = written[el] = write(holder)
        return path

    waiting: dict[etree._Element, list[str]] = {}
    for el, holder, _, blockers in pending:
        for blocker, _ in blockers:
            waiting.setdefault(blocker, []).append(where(el, holder))
    return [
        Pending(
            path=where(el, holder),
            kind=kind,
            waiting=tuple(waiting.get(el, [])),
            waits_on=tuple(where(b, bh) for b, bh in blockers),
        )
        for el, holder, kind, blockers in pending
    ]
