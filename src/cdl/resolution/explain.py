"""Provenance: why each resolved value is what it is (issue 15).

Phase: explanation, on demand after resolution. Entry points:
:class:`Recorder` (handed to a resolution through ``Workspace.recorder``),
:func:`explain` (the explanations of what a path selects; :func:`explain_elements`,
of elements already found), :func:`select`
(elements a ``LIST/child`` path selects, with suggestions when it selects
nothing), :func:`prune` (an output tree cut down to selected properties) and
:meth:`Explanation.to_text` (the text form ``cdl explain`` prints). Spec sections: 7.2.2
(inheritance of elements: ``inherited``, ``overrides``), 7.2.4 (hierarchical
extends), 7.3.2-7.3.5 (references, translated paths of 7.3.4, several targets),
7.3.6 (expressions), 7.5 (deploy-time values: ``supplied``, ``pending``).

Design. Provenance is *recorded by the phases themselves*, not reconstructed:
inheritance, references, expressions and deploy-time values each call the
recorder at the one place where they copy, replace, compute or supply a value
(the calls are marked ``provenance hook``). Reconstructing after the fact would
define inheritance and reference resolution a second time. Plain resolution
passes no recorder and pays one ``None`` test per event (docs/performance.md);
``Resolution.explain`` resolves the same Document and rounds again with a
recorder on, so one explanation costs about one and a half resolutions
(docs/performance.md, "Provenance").

Each event is appended to a table (so its index is the order in which things
happened), kept in columns (:class:`_Events`). During inheritance, the
element it concerns gets the private attribute ``P_PROV``: the index of its
latest event (then where it is written, when the documents were marked so:
:meth:`Recorder.mark_written`). Every event holds the index of the
element's previous one (or, for the first, the element as it was written),
so an element's history is a chain read back from its final state.
The mark is an attribute, like ``P_REF``, so it travels with lxml copies;
keying by element identity would lose the history at each inherited copy. A
copied subtree gets one event, on its root: the first time a source is copied,
its elements are marked with where they were written, so every copy carries
its elements' histories by itself. Events after inheritance (references,
expressions, deploy-time values) are keyed by element instead
(``Recorder.in_place``, cheaper than an attribute): nothing copies a history
any more by then, since a copy made by a reference is explained by its target,
which stays in place. An element's explanation is then its own chain plus the inheritance
events of its ancestors (they brought it along, which is what makes "a property
copied inside an inherited sub-list is inherited too" hold at every depth),
ordered by index; below the root of a copy of a reference target's child, the
element copied is found by position (a target never changes once copied).
Elements that carry no mark were written where they are; a location is the
line where the start tag begins (from ``sourceline``, kept by lxml copies, and
the text: ``text.tags.element_line``) in the document marked by ``P_DOC``. The serializer never sees a recorded workspace.
"""

from __future__ import annotations

import warnings
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from lxml import etree

from ..errors import SelectionError
from ..model.elements import doc_index_of
from ..model.items import holder_of, is_unresolved
from ..model.naming import counted
from ..model.paths import PrefixError, parse_user_path, ranked
from ..model.places import element_line
from ..model.scan import releasing
from ..model.suggest import did_you_mean, near_paths
from ..model.tables import NameRef, Ref
from ..model.vocabulary import LIST_PARENTS, P_EXPR, P_PROV, P_REF, T_EXPRESSION
from ..model.workspace import Workspace

#: Nested explanations (``from`` and ``variables``) go at most this deep, and
#: one explanation holds at most _MAX_NESTED of them: chains of references
#: can be thousands long; the rest is marked ``truncated`` (explain that path).
_MAX_DEPTH = 32
_MAX_NESTED = 500


# -- the plain-data model -----------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One step of an :class:`Explanation` (see README, "cdl explain").

    ``kind`` is one of ``written``, ``inherited``, ``overrides``,
    ``reference``, ``expression``, ``supplied``, ``pending``; ``url`` and
    ``line`` locate the start tag of the element the step is about (None where
    none applies); ``path`` is that element's path. The other fields belong to
    some kinds only, as :meth:`to_data` writes them.
    """

    kind: str
    url: str | None
    line: int | None
    path: str | None = None
    #: inherited: the prototype extended; overrides: the prototype replaced.
    from_list: str | None = None
    #: overrides: the replaced value; supplied: the value given.
    value: str | None = None
    #: reference (and a pending reference): the path as written, as read
    #: (translated, 7.3.4), its refroot, and the target's path.
    ref: str | None = None
    translated: str | None = None
    refroot: str | None = None
    target: str | None = None
    #: reference: the target's explanation.
    source: Explanation | None = None
    #: expression: its value-of, and each variable's explanation.
    value_of: str | None = None
    variables: Mapping[str, Explanation] = field(default_factory=dict)
    #: supplied (and a reference resolved in a deploy-time round): the round, from 1.
    round: int | None = None
    #: supplied: the path as given to ``set``.
    set_path: str | None = None
    #: pending: what it waits for (paths), and what kind of wait it is
    #: (``value``, ``release``, ``reference``, ``expression``; the JSON ``waiting``).
    waits_for: tuple[str, ...] = ()
    wait_kind: str | None = None

    @property
    def waiting(self) -> str | None:
        """Deprecated: :attr:`wait_kind` (``Pending.waiting`` holds paths, not a kind)."""
        warnings.warn("Step.waiting is deprecated; use Step.wait_kind", DeprecationWarning, stacklevel=2)
        return self.wait_kind

    def to_data(self) -> dict[str, Any]:
        """The step as JSON-ready data: kind, url, line, path, then the kind's own keys."""
        data: dict[str, Any] = {"kind": self.kind, "url": self.url, "line": self.line, "path": self.path}
        kind = self.kind
        if kind == "inherited":
            data["from_list"] = self.from_list
        elif kind == "overrides":
            data["value"] = self.value
            data["from_list"] = self.from_list
            if self.ref is not None:  # the replaced property is a reference never resolved
                data.update(ref=self.ref, translated=self.translated, refroot=self.refroot)
        elif kind == "reference":
            data.update(ref=self.ref, translated=self.translated, refroot=self.refroot, target=self.target)
            if self.round is not None:
                data["round"] = self.round
            data["from"] = self.source.to_data() if self.source is not None else None
        elif kind == "expression":
            data["value_of"] = self.value_of
            data["variables"] = {name: e.to_data() for name, e in self.variables.items()}
        elif kind == "supplied":
            data.update(round=self.round, set=self.set_path, value=self.value)
        elif kind == "pending":
            data["waiting"] = self.wait_kind
            data["waits_for"] = list(self.waits_for)
            if self.ref is not None:
                data.update(ref=self.ref, translated=self.translated, refroot=self.refroot)
        return data


@dataclass(frozen=True)
class Explanation:
    """Why one resolved property is what it is.

    ``value`` is the text of a leaf, None for a list or a value still pending;
    ``status`` is ``resolved`` or ``pending``; ``steps`` go from the final
    value back to its origins: first where the element was written, then each
    event, latest first. ``truncated`` marks a nested explanation left out
    (too deep a chain): explain its path on its own.
    """

    path: str
    value: str | None
    status: str
    steps: tuple[Step, ...]
    truncated: bool = False

    def to_data(self) -> dict[str, Any]:
        """``{"path", "value", "status", "steps": [...]}`` (the JSON contract)."""
        data: dict[str, Any] = {
            "path": self.path,
            "value": self.value,
            "status": self.status,
            "steps": [s.to_data() for s in self.steps],
        }
        if self.truncated:
            data["truncated"] = True
        return data

    def to_text(self) -> str:
        """What ``cdl explain`` prints for it: the value, then one line per step
        with ``file:line`` first (editors and terminals make it a link).
        Nested explanations (a reference's target, an expression's variables)
        are indented below their step; they are at most _MAX_DEPTH deep."""
        lines: list[str] = []
        _text_of(self, "", lines)
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        if self.status == "pending":
            state = "pending"
        else:
            state = "a list" if self.value is None else f"= {self.value!r}"
        n = len(self.steps)
        return f"<cdl.Explanation {self.path!r} {state} ({counted(n, 'step')})>"


# -- recording ------------------------------------------------------------------------


class _Event:
    """One thing that happened to an element (see the module docstring)."""

    __slots__ = ("at", "kind", "origin", "other", "prev", "ref", "round", "text", "value", "variables", "via")

    def __init__(
        self,
        kind: str,
        prev: int | None,
        origin: etree._Element | None,
        via: etree._Element | None = None,
        other: Sequence[etree._Element] = (),
        ref: Ref | None = None,
        at: tuple[int | None, int | None] = (None, None),
        variables: Mapping[str, etree._Element] | None = None,
        round: int | None = None,
        text: str | None = None,
        value: str | None = None,
    ) -> None:
        self.kind = kind
        #: The element's previous event; None: ``origin`` is the element as written.
        self.prev = prev
        self.origin = origin
        #: inherited / extends: the element carrying cdl:extends; reference: the
        #: referring property; copied: the copy's referring property.
        self.via = via
        #: inherited: [the prototype list or property]; overrides: the replaced
        #: elements; reference / copied: [the target]; extends: [the prototype].
        self.other = tuple(other)
        self.ref = ref
        #: (document index, line) of an expression, which resolution removes.
        self.at = at
        self.variables = variables or _NO_VARIABLES
        self.round = round
        #: supplied: the path as given, and the value.
        self.text = text
        self.value = value


_NO_VARIABLES: Mapping[str, etree._Element] = MappingProxyType({})

#: What only some events have: (at, variables, round, text, value), and that of all others.
_More = tuple[tuple[int | None, int | None], Mapping[str, etree._Element], int | None, str | None, str | None]
_PLAIN: _More = ((None, None), _NO_VARIABLES, None, None, None)

#: The kinds of events, by their codes in :class:`_Events`.
_KINDS = ("written", "inherited", "overrides", "extends", "reference", "copied", "expression", "supplied")
_CODES = {kind: code for code, kind in enumerate(_KINDS)}


class _Events:
    """The events of one resolution, in the order they happened (so an
    event's index is its place in that order), kept in columns: a few slots
    of arrays and lists per event rather than an :class:`_Event` object
    with its tuple and mapping, as a resolution records about 25 events per
    component and the language server keeps two resolutions alive. What
    only expressions and deploy-time values have is kept apart, by index.
    Reading one (``events[i]``, or iterating) makes its :class:`_Event`."""

    __slots__ = ("_kinds", "_more", "_origin", "_other", "_prev", "_ref", "_via")

    def __init__(self) -> None:
        self._kinds = bytearray()
        self._prev = array("i")  # -1: none
        self._origin: list[etree._Element | None] = []
        self._via: list[etree._Element | None] = []
        #: The one element of ``other`` (most have one), else the tuple.
        self._other: list[etree._Element | tuple[etree._Element, ...]] = []
        self._ref: list[Ref | None] = []
        #: What only some events have (:data:`_More`), by index.
        self._more: dict[int, _More] = {}

    def __len__(self) -> int:
        return len(self._kinds)

    def releasing(self) -> Iterator[None]:
        """Forget every event, a piece at a time (``model.scan.releasing``)."""
        self._kinds, self._prev = bytearray(), array("i")
        for column in (self._origin, self._via, self._other, self._ref):
            yield from releasing(column)
        yield from releasing(self._more)

    def append(self, event: _Event) -> None:
        """Record ``event`` (it is not kept: its fields are)."""
        more = (event.at, event.variables, event.round, event.text, event.value)
        if more != _PLAIN:
            self._more[len(self._kinds)] = more
        self._kinds.append(_CODES[event.kind])
        self._prev.append(-1 if event.prev is None else event.prev)
        self._origin.append(event.origin)
        self._via.append(event.via)
        other = event.other
        self._other.append(other[0] if len(other) == 1 else other)
        self._ref.append(event.ref)

    def __getitem__(self, index: int) -> _Event:
        prev = self._prev[index]
        other = self._other[index]
        at, variables, round, text, value = self._more.get(index, _PLAIN)
        return _Event(
            _KINDS[self._kinds[index]],
            None if prev < 0 else prev,
            self._origin[index],
            self._via[index],
            other if isinstance(other, tuple) else (other,),
            self._ref[index],
            at,
            variables,
            round,
            text,
            value,
        )

    def __iter__(self) -> Iterator[_Event]:
        return (self[index] for index in range(len(self)))


#: The head of a mark whose element has no event yet: only :meth:`Recorder.mark_written` makes one.
_NO_EVENT = "-"


def _remarked(mark: str | None, index: int) -> str:
    """``mark`` (an element's :data:`P_PROV`, or None) naming event ``index``
    as the latest, and still where the element is written, if it says so."""
    where = None if mark is None else mark.partition(" ")[2]
    return f"{index} {where}" if where else str(index)


def latest_event(el: etree._Element, in_place: Mapping[etree._Element, int]) -> int | None:
    """The index of ``el``'s latest event, or None when nothing happened to it."""
    index = in_place.get(el)
    if index is None:
        mark = el.get(P_PROV)
        if mark is not None:
            head = mark.partition(" ")[0]
            index = None if head == _NO_EVENT else int(head)
    return index


class Recorder:
    """Records the events of one resolution (implements ``model.workspace.Recorder``)."""

    def __init__(self) -> None:
        self.events = _Events()
        self._premarked: set[etree._Element] = set()
        #: The latest event of elements whose latest event happened after
        #: inheritance: references, copies of targets' children, expressions,
        #: deploy-time values. Only inheritance copies histories along with
        #: elements, and it is over by then (a copy made by a reference is
        #: explained by its target, which is still in place), so these events
        #: need no mark: a dict entry costs a fraction of an attribute.
        self.in_place: dict[etree._Element, int] = {}
        #: The deploy-time round being applied (from 1), or None.
        self.round: int | None = None

    def releasing(self) -> Iterator[None]:
        """Forget what was recorded, a piece at a time, yielding between the
        pieces (a resolution of a large system records hundreds of
        thousands of elements: freed at once, they hold the interpreter).
        Nothing may read the recorder afterwards."""
        yield from self.events.releasing()
        yield from releasing(self.in_place)
        yield from releasing(self._premarked)

    def mark_written(self, doc: int, root: etree._Element) -> None:
        """Mark every element of ``root``, a fresh copy of the loaded document
        ``doc`` whose elements stand in that document's order, with where it
        is written, before anything is resolved: :meth:`written_at` then says
        it of any copy of it too (lxml copies the mark with the element). It
        is the events' own mark, ``EVENT DOC INDEX`` (``-`` for no event
        yet): one attribute per element, where a mark of its own doubled
        their number (each costs lxml as much memory as an element)."""
        for index, el in enumerate(root.iter(etree.Element)):
            el.set(P_PROV, f"{_NO_EVENT} {doc} {index}")

    @staticmethod
    def written_at(el: etree._Element) -> tuple[int, int] | None:
        """(document, place among its elements in document order) of the loaded
        element that ``el`` was copied from, or is; None where the documents
        were not marked (:meth:`mark_written`) or ``el`` was made by resolving."""
        mark = el.get(P_PROV)
        where = None if mark is None else mark.split(" ")
        if where is None or len(where) != 3:
            return None
        return int(where[1]), int(where[2])

    def _add(self, el: etree._Element, event: _Event) -> None:
        """An event that copies of ``el`` must carry (inheritance): in its mark."""
        el.set(P_PROV, _remarked(el.get(P_PROV), len(self.events)))
        self.events.append(event)

    def _add_in_place(self, el: etree._Element, event: _Event) -> None:
        """An event no copy of ``el`` needs (see :attr:`in_place`)."""
        self.in_place[el] = len(self.events)
        self.events.append(event)

    def _history(self, el: etree._Element) -> tuple[int | None, etree._Element | None]:
        index = latest_event(el, self.in_place)
        return (None, el) if index is None else (index, None)

    def _premark(self, source: etree._Element, copy: etree._Element) -> None:
        """Give every element of ``source``'s subtree that has no history yet
        a ``written`` one, once per source, and the same to ``copy`` (made
        from it just now): later copies of ``source`` then carry their
        elements' histories by themselves (lxml copies the mark), so a copy
        costs one event, for its root, however large it is. A source never
        changes while it is copied (a prototype is complete; a reference
        target is fully resolved)."""
        if source in self._premarked:
            return
        self._premarked.add(source)
        for src, dst in zip(source.iter(etree.Element), copy.iter(etree.Element)):
            old = src.get(P_PROV)
            if old is None or old.startswith(_NO_EVENT):
                mark = _remarked(old, len(self.events))
                self.events.append(_Event("written", None, src))
                src.set(P_PROV, mark)
                dst.set(P_PROV, mark)

    def inherited(self, copy: etree._Element, source: etree._Element, extending: etree._Element) -> None:
        self._premark(source, copy)
        proto = source.getparent()
        prev, origin = self._history(source)
        self._add(copy, _Event("inherited", prev, origin, via=extending, other=(proto,) if proto is not None else ()))

    def overrides(self, own: etree._Element, replaced: list[etree._Element]) -> None:
        prev, origin = self._history(own)
        self._add(own, _Event("overrides", prev, origin, other=replaced))

    def extends(self, extending: etree._Element, proto: etree._Element) -> None:
        prev, origin = self._history(extending)
        self._add(extending, _Event("extends", prev, origin, via=extending, other=(proto,)))

    def referenced(self, shell: etree._Element, target: etree._Element, ref: Ref) -> None:
        prev, origin = self._history(shell)
        self._add_in_place(shell, _Event("reference", prev, origin, via=shell, other=(target,), ref=ref, round=self.round))

    def copied(self, copy: etree._Element, source: etree._Element, shell: etree._Element) -> None:
        index = self.in_place.get(shell)
        via = self.events[index] if index is not None else None
        self._add_in_place(copy, _Event("copied", None, None, via=shell, other=(source,), ref=via.ref if via else None, round=self.round))

    def computed(self, holder: etree._Element, expression: etree._Element, variables: dict[str, etree._Element]) -> None:
        prev, origin = self._history(holder)
        at = (doc_index_of(expression), expression.sourceline or None)
        self._add_in_place(holder, _Event("expression", prev, origin, via=holder, other=(expression,), at=at, variables=variables))

    def supplied(self, el: etree._Element, path: str) -> None:
        prev, origin = self._history(el)
        self._add_in_place(el, _Event("supplied", prev, origin, via=el, round=self.round, text=path, value=el.text or ""))


# -- explaining ------------------------------------------------------------------------


class _State:
    """What explaining consults: the resolved workspace, its pending items, the events."""

    def __init__(
        self,
        ws: Workspace,
        recorder: Recorder,
        is_pending: Callable[[etree._Element], bool],
        waits_on: Callable[[etree._Element], Sequence[etree._Element]],
    ) -> None:
        self.ws = ws
        self.ctx = ws.ctx
        self.events = recorder.events
        self.in_place = recorder.in_place
        self.is_pending = is_pending
        self.waits_on = waits_on
        self.nested = 0
        #: Paths of this explanation's elements (the trees do not change while it is made).
        self.path = ws.ctx.prefixes.writer()

    def url(self, el: etree._Element) -> str | None:
        return self.url_of(doc_index_of(el))

    def line(self, el: etree._Element) -> int | None:
        """The line where the start tag of ``el`` begins."""
        return element_line(self.ctx, el)

    def line_in(self, index: int | None, el: etree._Element) -> int | None:
        """The same for ``el`` written in document ``index`` (a cdl:expression
        may have left its list since)."""
        return self.ctx.line_in_document(index, el)

    def url_of(self, index: int | None) -> str | None:
        docs = self.ctx.docs
        return docs[index].url if index is not None and index < len(docs) else None

    def ref_texts(self, ref: Ref) -> tuple[str, str, str | None]:
        refroot = None
        if ref.refroot is not None:
            found = self.ws.lookup(ref.refroot)
            refroot = self.path(found).lstrip("/") if found is not None else ref.refroot.text
        return ref.text, self.ctx.prefixes.steps_text(ref), refroot


def explain(
    ws: Workspace,
    recorder: Recorder,
    path: str,
    settle: Callable[[list[etree._Element]], None],
    is_pending: Callable[[etree._Element], bool],
    waits_on: Callable[[etree._Element], Sequence[etree._Element]],
) -> list[Explanation]:
    """One explanation per property ``path`` selects in the resolved ``ws``.

    From the reference resolver: ``settle`` resolves the items in and below
    the selected elements (resolution resolves only what the main document
    needs; a prototype in an import may hold references nothing needed),
    ``is_pending`` says whether an item is still pending, ``waits_on`` which
    pending items it waits for. Raises :class:`SelectionError` when the path
    selects nothing.
    """
    main = ws.ctx.docs[0]
    names = (ws.ctx.prefixes.qname(name) for name in ws.lists)  # for an error's suggestions: written only then
    namespaces = path_namespaces(main.nsmap, ws.ctx.prefixes.by_uri)
    selected = select(path, ws.lookup, names, namespaces, main.target_ns, ws.ctx.prefixes.writer(), main.url)
    return explain_elements(ws, recorder, selected, settle, is_pending, waits_on)


def explain_elements(
    ws: Workspace,
    recorder: Recorder,
    elements: Sequence[etree._Element],
    settle: Callable[[list[etree._Element]], None],
    is_pending: Callable[[etree._Element], bool],
    waits_on: Callable[[etree._Element], Sequence[etree._Element]],
) -> list[Explanation]:
    """One explanation per element of the resolved ``ws`` (:func:`explain`
    for elements already found: ``cdl diff`` asks of what differs)."""
    settle(list(elements))
    state = _State(ws, recorder, is_pending, waits_on)
    found: list[Explanation] = []
    for el in elements:
        state.nested = 0
        found.append(_explain(state, el, 0))
    return found


def _explain(state: _State, el: etree._Element, depth: int) -> Explanation:
    """The explanation of ``el`` (nested explanations count against the limits)."""
    path = state.path(el)
    pending_item = _pending_item(state, el)
    status = "pending" if pending_item is not None else "resolved"
    value = None if pending_item is not None or len(el) else (el.text or "")
    if depth > _MAX_DEPTH or state.nested > _MAX_NESTED:
        return Explanation(path, value, status, (), truncated=True)
    state.nested += 1
    copied = _copied(state, el)
    if copied is not None:  # the value is a copy of part of a reference's target
        event, target = copied
        return Explanation(path, value, status, (_reference_step(state, event, target, depth),))
    # Its own history, and the copies that brought its ancestors (and so it)
    # where they are; event indexes are the order things happened.
    found: dict[int, _Event] = {}
    origin = _collect(state, el, found, only=None)
    above = el.getparent()
    while above is not None and above.tag not in LIST_PARENTS:
        _collect(state, above, found, only="inherited")
        above = above.getparent()
    steps: list[Step] = []
    if origin is not None:
        steps.append(Step("written", state.url(origin), state.line(origin), state.path(origin)))
    if pending_item is not None:
        steps.append(_pending_step(state, el, pending_item))
    for index in sorted(found, reverse=True):  # latest first: from the final value back to its origins
        steps.extend(_steps_of(state, found[index], depth))
    return Explanation(path, value, status, tuple(steps))


def _collect(state: _State, el: etree._Element, found: dict[int, _Event], only: str | None) -> etree._Element | None:
    """Add ``el``'s events (of kind ``only``, or all but ``written``) to
    ``found``; return where ``el`` was written."""
    origin: etree._Element | None = el
    index = latest_event(el, state.in_place)
    while index is not None:  # the chain is as long as the element's history
        event = state.events[index]
        if event.kind == (only or event.kind) and event.kind != "written":
            found[index] = event
        index, origin = event.prev, event.origin
    return origin


def _copied(state: _State, el: etree._Element) -> tuple[_Event, etree._Element] | None:
    """When ``el`` is (inside) a copy of a reference target's child: the latest
    such copy's event and the element of the target that ``el`` copies.

    Only the root of a copy has the event; below it, the element is found
    by its position, as the target is fully resolved and never changes
    after it is copied. Positions are read only below that root: an
    element's position is a walk over the siblings before it, and above
    the copy they can be the whole system's lists.
    """
    best: tuple[int, int] | None = None  # (the event, how many of ``chain`` lie below its root)
    chain: list[etree._Element] = []
    cur: etree._Element | None = el
    while cur is not None and cur.tag not in LIST_PARENTS:
        index = state.in_place.get(cur)
        if index is not None and state.events[index].kind == "copied" and (best is None or index > best[0]):
            best = (index, len(chain))
        chain.append(cur)
        cur = cur.getparent()
    if best is None:
        return None
    event = state.events[best[0]]
    target = event.other[0]
    for below in reversed(chain[: best[1]]):
        parent = below.getparent()
        assert parent is not None  # below the copy's root
        target = target[parent.index(below)]
    return event, target


def _reference_step(state: _State, event: _Event, target: etree._Element, depth: int) -> Step:
    assert event.via is not None and event.ref is not None
    ref, translated, refroot = state.ref_texts(event.ref)
    return Step(
        "reference",
        state.url(event.via),
        state.line(event.via),
        state.path(event.via),
        ref=ref,
        translated=translated,
        refroot=refroot,
        target=state.path(target),
        source=_explain(state, target, depth + 1),
        round=event.round,
    )


def _pending_item(state: _State, el: etree._Element) -> etree._Element | None:
    """The item that keeps ``el`` pending: itself, or its cdl:expression."""
    if state.is_pending(el):
        return el
    for expr in el.iterchildren(T_EXPRESSION):
        if state.is_pending(expr):
            return expr
    return None


def _pending_step(state: _State, el: etree._Element, item: etree._Element) -> Step:
    blockers = state.waits_on(item)
    if blockers:
        waits = tuple(state.path(holder_of(b)) for b in blockers)
        waiting = "reference" if item.get(P_REF) is not None else "expression"
    elif item.get(P_REF) is not None:
        waits, waiting = (state.path(el),), "release"  # a lazy reference (7.5.3)
    elif item.tag == T_EXPRESSION:
        waits, waiting = (state.path(el),), "release"  # lazy variables (7.5.3)
    else:
        waits, waiting = (state.path(el),), "value"  # a lazy property (7.5.2)
    step = Step("pending", state.url(item), state.line(item), state.path(el), waits_for=waits, wait_kind=waiting)
    index = item.get(P_REF)
    if index is not None:
        ref, translated, refroot = state.ref_texts(state.ctx.tables.refs[int(index)])
        step = Step(
            "pending", step.url, step.line, step.path, waits_for=waits, wait_kind=waiting, ref=ref, translated=translated, refroot=refroot
        )
    return step


def _steps_of(state: _State, event: _Event, depth: int) -> list[Step]:
    kind = event.kind
    if kind == "inherited":
        # One link: the links before it are earlier events of the same element.
        assert event.via is not None
        proto = event.other[0] if event.other else None
        name = state.path(proto).lstrip("/") if proto is not None else None
        return [Step("inherited", state.url(event.via), state.line(event.via), state.path(event.via), from_list=name)]
    if kind == "extends":
        return _extends_chain(state, event)
    if kind == "overrides":
        return [_overridden(state, r) for r in event.other]
    if kind == "reference" or kind == "copied":
        return [_reference_step(state, event, event.other[0], depth)]
    if kind == "expression":
        assert event.via is not None
        expression = event.other[0]
        index = expression.get(P_EXPR)
        value_of = state.ctx.tables.exprs[int(index)].text if index is not None else None
        return [
            Step(
                "expression",
                state.url_of(event.at[0]),
                state.line_in(event.at[0], expression),
                state.path(event.via),
                value_of=value_of,
                variables={name: _explain(state, node, depth + 1) for name, node in event.variables.items()},
            )
        ]
    # supplied: no place in any document
    path = state.path(event.via) if event.via is not None else None
    return [Step("supplied", None, None, path, round=event.round, set_path=event.text, value=event.value)]


def _overridden(state: _State, r: etree._Element) -> Step:
    """An overrides step: the replaced prototype property, its value as the
    prototype has it (None for a list), or its reference when that was never
    resolved (only what the main document needs is resolved)."""
    index = r.get(P_REF)
    if index is None:
        value = None if len(r) else (r.text or "")
        return Step("overrides", state.url(r), state.line(r), state.path(r), value=value, from_list=_parent_name(state, r))
    ref, translated, refroot = state.ref_texts(state.ctx.tables.refs[int(index)])
    return Step(
        "overrides",
        state.url(r),
        state.line(r),
        state.path(r),
        from_list=_parent_name(state, r),
        ref=ref,
        translated=translated,
        refroot=refroot,
    )


def _extends_chain(state: _State, event: _Event) -> list[Step]:
    """The inherited step of ``event``, then the links of the prototype it
    extended, so a chain of lists extending lists shows every link."""
    steps: list[Step] = []
    seen: set[int] = set()
    current: _Event | None = event
    while current is not None:
        extending = current.via
        proto = current.other[0] if current.other else None
        if extending is None or proto is None:
            break
        name = state.path(proto).lstrip("/")
        steps.append(Step("inherited", state.url(extending), state.line(extending), state.path(extending), from_list=name))
        # Follow the prototype's own cdl:extends (a resolved prototype has its event).
        current = None
        index = _extends_event(state, proto)
        if index is not None and index not in seen:
            seen.add(index)
            current = state.events[index]
    return steps


def _extends_event(state: _State, el: etree._Element) -> int | None:
    """The index of the extends event in ``el``'s history, if it has one."""
    index = latest_event(el, state.in_place)
    while index is not None:
        event = state.events[index]
        if event.kind == "extends":
            return index
        index = event.prev
    return None


def _parent_name(state: _State, el: etree._Element) -> str | None:
    parent = el.getparent()
    if parent is None or parent.tag in LIST_PARENTS:
        return None
    return state.path(parent).lstrip("/")


# -- selecting ---------------------------------------------------------------------------


def select(
    text: str,
    lookup: Callable[[NameRef], etree._Element | None],
    lists: Iterable[str],
    nsmap: Mapping[str | None, str],
    target_ns: str,
    path_of: Callable[[etree._Element], str],
    url: str | None = None,
) -> list[etree._Element]:
    """The elements ``LIST/child/...`` selects (a leading '/' is optional),
    with the prefixes of ``nsmap`` (:func:`path_namespaces`).

    ``lookup`` finds a top level list by name, ``lists`` are all their names
    as a user writes them (for suggestions), ``path_of`` writes an element's path, ``url`` names the
    document whose prefixes the path uses, in errors. Raises
    :class:`SelectionError` naming the path, with the nearest existing paths
    by name when there are some.
    """
    try:
        list_ref, steps, parts = parse_user_path(text, dict(nsmap), target_ns)
    except PrefixError as exc:
        raise SelectionError(f"{text!r} is no path: {exc}", code="BAD_SELECT", url=url, path=text) from None
    top = lookup(list_ref)
    if top is None:
        raise SelectionError(
            f"{text!r} selects nothing: there is no top level list {parts[0]!r}" + did_you_mean(parts[0], ["/" + n for n in lists]),
            url=url,
            path=text,
        )
    current = [top]
    for i, step in enumerate(steps):
        waiting = [el for el in current if is_unresolved(el)]
        if waiting:
            raise SelectionError(
                f"{text!r} selects nothing: {path_of(waiting[0])} is still pending, so it has no children yet",
                url=url,
                path=text,
            )
        found = [child for el in current for child in ranked(list(el.iterchildren(step.name)), step.rank)]
        if not found:
            raise SelectionError(
                f"{text!r} selects nothing: {path_of(current[0])} has no {parts[i + 1]}" + near_paths(parts[i + 1], current, path_of),
                url=url,
                path=text,
            )
        current = found
    return current


def path_namespaces(main: Mapping[str | None, str], written: Mapping[str, str]) -> dict[str | None, str]:
    """The prefixes a selected path may use: the main document's (as ``--set``
    paths do), and those the engine writes paths with (``written``: URI to
    prefix, ``Prefixes.by_uri``), so a path copied from ``cdl pending`` or from
    an explanation, which may use an imported document's prefix, selects."""
    namespaces: dict[str | None, str] = {prefix: uri for uri, prefix in written.items()}
    namespaces.update(main)
    return namespaces


def prune(root: etree._Element, selected: Sequence[etree._Element]) -> etree._Element:
    """A new output tree holding only ``selected`` (elements of ``root``) and
    the elements above them (their attributes kept, their other children left
    out), in document order. A selected element inside another one is copied
    with it, once."""
    order = {el: i for i, el in enumerate(root.iter(etree.Element))}
    chosen = sorted(set(selected), key=order.__getitem__)  # ancestors before descendants
    new_root = etree.Element(root.tag, dict(root.attrib), nsmap=root.nsmap)
    shells: dict[etree._Element, etree._Element] = {root: new_root}
    copied: set[etree._Element] = set()
    for el in chosen:
        above: list[etree._Element] = []
        cur = el.getparent()
        inside = False
        while cur is not None and cur not in shells:
            if cur in copied:
                inside = True
                break
            above.append(cur)
            cur = cur.getparent()
        if inside or cur is None:
            continue
        target = shells[cur]
        for node in reversed(above):
            target = shells[node] = etree.SubElement(target, node.tag, dict(node.attrib))
        copy = el.__deepcopy__(None)  # type: ignore[attr-defined]
        copy.tail = None
        target.append(copy)
        copied.add(el)
    return new_root


# -- the text form -------------------------------------------------------------------------


def _header(e: Explanation) -> str:
    if e.status == "pending":
        return f"{e.path} (pending)"
    if e.value is None:
        return f"{e.path} (a list)"
    return f"{e.path} = {e.value}" if e.value else f'{e.path} = ""'


def _location(step: Step) -> str:
    if step.url is None:
        return f"(round {step.round})" if step.round is not None else "-"
    return f"{step.url}:{step.line}" if step.line else step.url


def _name(path: str | None) -> str:
    return (path or "?").lstrip("/")


def _describe(step: Step) -> str:
    kind = step.kind
    if kind == "written":
        parent, _, name = _name(step.path).rpartition("/")
        name = name.partition("[")[0]  # the tag as written: its [k] is in the path
        return f"<{name}> in {parent}" if parent else f"<{name}>"
    if kind == "inherited":
        return f"{_name(step.path)} extends {step.from_list}"
    if kind == "overrides":
        if step.ref is not None:
            root = f" from list {step.refroot}" if step.refroot else ""
            value = f"cdl:ref {step.ref}{root}"
        else:
            value = "a list" if step.value is None else (step.value or '""')
        return f"{value}, from {step.from_list}" if step.from_list else value
    if kind == "reference":
        read = f" (read as {step.translated})" if step.translated != step.ref else ""
        root = f" from list {step.refroot}" if step.refroot else ""
        when = f", round {step.round}" if step.round is not None else ""
        return f"{step.ref}{read}{root} -> {step.target}{when}"
    if kind == "expression":
        return f"value-of {step.value_of}"
    if kind == "supplied":
        return f"set {step.set_path} = {step.value}" if step.value is not None else f"set {step.set_path}"
    # pending
    if step.wait_kind == "value":
        return f"waits for a deploy-time value (set {_name(step.path)})"
    if step.wait_kind == "release":
        return f"waits to be released (release {_name(step.path)})"
    return "waits for " + ", ".join(step.waits_for)


def _text_of(e: Explanation, indent: str, lines: list[str]) -> None:
    lines.append(indent + _header(e) + (" ... (explain this path for more)" if e.truncated else ""))
    width = max((len(_location(s)) for s in e.steps), default=0) + 4
    for step in e.steps:
        lines.append(f"{indent}  {step.kind:<10} {_location(step):<{width}}{_describe(step)}")
        if step.source is not None:
            _text_of(step.source, indent + "    ", lines)
        for name, variable in step.variables.items():
            lines.append(f"{indent}    ${name}:")
            _text_of(variable, indent + "      ", lines)
