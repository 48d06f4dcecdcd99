"""Deployment sessions: the plan as a live state machine (issue 24).

Entry point: :meth:`cdl.Document.deploy`, which makes a :class:`Deployment`.
A Deployment holds the resolution of the document with every deploy-time
value supplied so far and moves each component of the plan (``src/cdl/planning/plan.py``,
spec sections 4 and 7.5) through the states waiting, ready, deployed, failed
and blocked. The rules are in docs/semantics.md, "Deployment sessions".

Incremental: the working trees and the reference resolver of the resolution
stay alive across events (``src/cdl/engine/document.py`` :func:`live_resolution` copies
them for an output), a round attempts again only what waits on the values it
gives (``resolution.laziness.apply_round`` with ``live``), each lazy value knows the
components that wait for it, and each component counts what it still waits
for: its child components not deployed and the lazy values without a value.
An event costs what depends on it, not the size of the system.

Readiness is the plan made again now (docs/semantics.md): the components
are the plan's when the deployment opens, and a component waits for a
sibling only through the sibling's lazy values, so once those have values
(or its children are deployed, each having had every value it waited for)
no ``after`` edge is left. With ``journal``, events go through
``src/cdl/deployment/journal.py``: replayed when it opens, appended once applied.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, overload

from lxml import etree

from ..deployment.journal import Journal, check_text, journal_header
from ..deployment.machine import Machine
from ..deployment.owners import Owners
from ..deployment.status import ComponentStatus, DeploymentStatus, counted_states
from ..errors import CdlError, DeploymentError, DeployValueError, JournalError
from ..model.items import holder_of
from ..model.suggest import did_you_mean
from ..planning.plan import Plan, PlannedComponent, build_plan_facts
from ..resolution.laziness import CheckedRound, Round, apply_round, check_round, left_unresolved, select_path
from ..resolution.output import build_output, to_bytes, to_data
from .phases import Loaded, copy_working, cyclic_gc_paused, resolve_working
from .resolution import Resolution, resolution_of

__all__ = ["Deployment", "deployment_of"]


class Deployment:
    """A deployment of a document's system in progress (see :meth:`cdl.Document.deploy`)::

        with doc.deploy(journal="farm.journal") as deployment:
            todo = deployment.ready()
            while todo:
                path = todo.pop(0)
                values = {p: start(p) for p in deployment.status(path).components[0].supplies}
                todo += deployment.deployed(path, values)

    Events (:meth:`deployed`, :meth:`supply`, :meth:`failed`, :meth:`retry`)
    are applied one at a time, whichever thread calls; a refused event raises
    :class:`cdl.CdlError` and changes neither the state nor the journal.
    Paths of components are written as ``cdl plan`` writes them (see
    :class:`ComponentStatus`); values as for ``--set``. Made by
    :meth:`cdl.Document.deploy` (the constructor refuses).
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("cdl.Deployment is not made by callers: Document.deploy() gives one")

    def _open(self, loaded: Loaded, journal: str | os.PathLike[str] | None, read_only: bool, wait: float) -> None:
        """Start the deployment, replaying ``journal`` if it has events: see :func:`deployment_of`."""
        self._loaded = loaded
        self._lock = threading.RLock()
        #: Warnings from opening the journal (a torn last line dropped).
        self.warnings: list[str] = []
        #: The events applied (:func:`_logged`: what the journal records,
        #: without seq and time).
        self._log: list[_Logged] = []
        self._journal: Journal | None = None
        self._closed = False
        self._read_only = read_only
        #: Why the deployment can no longer be used (a rebuild that failed), or None.
        self._broken: str | None = None
        self._start()
        if journal is not None:
            self._open_journal(journal, wait)

    def _start(self) -> None:
        """The state of a deployment that has seen no event."""
        self._ws, self._resolver, self._left = resolve_working(self._loaded, ())
        with cyclic_gc_paused():
            self._plan, self._facts = build_plan_facts(self._ws, self._resolver)
        self._machine = Machine(self._facts)
        self._owners = Owners(self._facts)
        self._paths = self._facts.paths
        #: The properties of each deployed component's lazy values it said come later.
        self._later: dict[int, tuple[etree._Element, ...]] = {}
        self._rounds: list[Round] = []
        #: Each element given a value by an event: the value and the event's number.
        self._supplied: dict[etree._Element, tuple[str, int]] = {}

    def _open_journal(self, path: str | os.PathLike[str], wait: float) -> None:
        docs = self._loaded.docs
        header = journal_header([(d.url, d.data) for d in docs], self._loaded.options.catalogs)
        journal: Journal | None = None
        if self._read_only:
            records, warnings = Journal.read(path, header, wait)
        else:
            journal, records, warnings = Journal.open(path, header, wait)
        try:
            # Line 1 is the header; each event takes the next line.
            for line, record in enumerate(records, 2):
                event = {k: v for k, v in record.items() if k not in ("seq", "time")}
                try:
                    self._apply(event)
                except CdlError as exc:
                    raise JournalError(
                        f"event {record.get('seq')} of the journal cannot be applied again: [{exc.code}] {exc.message}",
                        code="JOURNAL_CORRUPT",
                        url=os.fspath(path),
                        line=line,
                    ) from None
        except BaseException:
            if journal is not None:
                journal.close()
            raise
        self._journal = journal
        self.warnings = list(warnings)

    # -- reading ----------------------------------------------------------------------

    def __repr__(self) -> str:
        with self._lock:
            counts = ", ".join(f"{n} {state}" for state, n in self._counts().items() if n)
        journal = f", journal {self._journal.path!r}" if self._journal is not None else ""
        return f"<cdl.Deployment {self._loaded.url!r} ({counts or 'no components'}{journal})>"

    @property
    def plan(self) -> Plan:
        """The plan the deployment follows: the system's plan when it opened."""
        return self._plan

    @property
    def rounds(self) -> tuple[Round, ...]:
        """The deploy-time values so far, one round per event that gave values
        or released references, as :meth:`cdl.Document.resolve` accepts them."""
        with self._lock:
            self._check_usable()
            return tuple(self._rounds)

    def resolution(self) -> Resolution:
        """The resolution with every deploy-time value so far, equal to
        ``document.resolve(rounds=self.rounds)``, made from copies of the
        deployment's working trees."""
        with self._lock:
            self._check_usable()
            left = left_unresolved(self._resolver, self._left)  # pending at opening: all that can be now
            working = copy_working((self._ws, self._resolver, left))
            return resolution_of(self._loaded, self._rounds, False, working)

    def ready(self) -> list[str]:
        """The ready components, in document order."""
        with self._lock:
            self._check_usable()
            return self._named(sorted(self._machine.ready))

    def status(self, path: str | None = None) -> DeploymentStatus:
        """The state of every component (or only of ``path``), and why."""
        with self._lock:
            self._check_usable()
            numbers = range(1, len(self._facts.parent)) if path is None else [self._component(path)]
            return DeploymentStatus([self._status(c) for c in numbers], self._plan)

    @overload
    def configuration(self, path: str, format: Literal["data"] = "data") -> dict[str, Any]: ...

    @overload
    def configuration(self, path: str, format: Literal["xml"]) -> bytes: ...

    def configuration(self, path: str, format: str = "data") -> dict[str, Any] | bytes:
        """The resolved configuration of component ``path`` with every value
        supplied so far, as :meth:`cdl.Resolution.to_data` shapes it (the
        component inside the elements that hold it); ``format="xml"``: the
        same as a document, in bytes. What is still pending is written as
        pending, as in any output."""
        if format not in ("data", "xml"):
            raise ValueError(f"configuration: format must be 'data' or 'xml', not {format!r}")
        with self._lock:
            self._check_usable()
            comp = self._component(path)
            out = build_output(self._ws, system_only=True, within=self._facts.elements[comp])
        return to_bytes(out) if format == "xml" else to_data(out)

    # -- events ---------------------------------------------------------------------

    def deployed(
        self, path: str, values: Mapping[str, str] | None = None, release: Sequence[str] = (), later: Sequence[str] = ()
    ) -> list[str]:
        """Mark component ``path`` deployed, supplying ``values`` (``{"LIST/child":
        value}``) and releasing ``release`` (lazy references) in the same event;
        returns the components that became ready. A component that is not
        ready is refused (``NOT_READY``, naming what it waits for). Every
        lazy value it supplies or releases is given now, or named in
        ``later`` (paths as for ``values``: given afterwards with
        :meth:`supply`) (``VALUES_MISSING``); a value of another component
        is refused (``NOT_OWNER``)."""
        with self._lock:
            comp = self._component(path)
            event = {"event": "deployed", "path": self._paths[comp], **_given(values, release)}
            if later:
                event["later"] = _paths_list(later, "later")
            return self._named(self._commit(event))

    def supply(self, values: Mapping[str, str] | None = None, release: Sequence[str] = ()) -> list[str]:
        """Deploy-time values outside a component's event; returns the components that became ready."""
        with self._lock:
            return self._named(self._commit({"event": "supply", **_given(values, release)}))

    def failed(self, path: str, reason: str) -> list[str]:
        """Mark ready component ``path`` failed for ``reason``; returns the
        components now blocked by it, transitively (what waits for it,
        directly or through others, its ancestors among them)."""
        with self._lock:
            comp = self._component(path)
            return self._named(self._commit({"event": "failed", "path": self._paths[comp], "reason": str(reason)}))

    def retry(self, path: str) -> list[str]:
        """Take failed component ``path`` back to its computed state, its blocked
        dependants with it; returns the components now ready."""
        with self._lock:
            comp = self._component(path)
            return self._named(self._commit({"event": "retry", "path": self._paths[comp]}))

    # -- closing ------------------------------------------------------------------------

    def close(self) -> None:
        """Release the journal (if any). The deployment can still be read;
        with a journal, further events are refused."""
        with self._lock:
            if self._journal is not None:
                self._journal.close()
                self._closed = True

    def __enter__(self) -> Deployment:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.close()

    # -- applying events ------------------------------------------------------------------

    def _commit(self, event: dict[str, Any]) -> list[int]:
        """Apply ``event``, then append it to the journal; on a refusal nothing changes."""
        if self._closed:
            raise DeploymentError("the deployment's journal is closed: open the deployment again", code="DEPLOYMENT_CLOSED")
        if self._read_only:
            raise DeploymentError(
                "the deployment was opened read-only (read_only=True; cdl deploy status, ready, config): open it"
                " without read_only to record events",
                code="DEPLOYMENT_READ_ONLY",
            )
        self._check_usable()
        if self._journal is not None:
            self._journal.check_process()
        check_text(event, self._loaded.url)
        log = len(self._log)
        result = self._apply(event, live=True)
        if len(self._log) == log:
            return result  # changed nothing (values already supplied alike): nothing to record
        if self._journal is not None:
            try:
                self._journal.append(event)
            except BaseException:
                self._rebuild(self._log[:-1])
                raise
        return result

    def _apply(self, event: dict[str, Any], live: bool = False) -> list[int]:
        """Apply one event (``live``, or replayed) and log it: the component
        numbers it returns; a refusal raises and changes nothing. A replayed
        ``deployed`` event was accepted when it was recorded: whose values it
        gives is not asked again, and what it left without a value (a journal
        of an earlier version, which did not ask) counts as ``later``."""
        kind = event["event"]
        machine = self._machine
        if kind in ("deployed", "supply"):
            comp = self._component(event["path"]) if kind == "deployed" else None
            if comp is not None:
                self._require(comp, "ready", "deployed")
            became = self._give(event["values"], event["release"], comp, event.get("later", ()), live)
            if comp is None and became is None:
                return []  # nothing new: not an event to record
            self._log.append(_logged(event))
            if comp is not None:
                became = (became or []) + machine.deploy(comp)
            return sorted(became or [])
        comp = self._component(event["path"])
        if kind == "failed":
            self._require(comp, "ready", "failed")
            self._log.append(_logged(event))
            return machine.fail(comp, event["reason"])
        if kind == "retry":
            self._require(comp, "failed", "retry")
            self._log.append(_logged(event))
            return machine.retry(comp)
        raise DeploymentError(f"unknown event {kind!r}", code="JOURNAL_CORRUPT")

    def _give(
        self, values: Mapping[str, str], release: Sequence[str], comp: int | None, later: Sequence[str], live: bool
    ) -> list[int] | None:
        """Supply ``values`` and release ``release`` on the live trees, as
        component ``comp``'s deployment (None: from elsewhere): the components
        that became ready, or None when the event gives nothing new (every
        value already supplied alike, nothing released). Every rule is
        checked before anything changes (:meth:`_checked`)."""
        checked, given, left = self._checked(values, release, comp, later, live)
        if comp is not None and left:
            self._later[comp] = left
        if not checked.sets and not checked.releases:
            return None
        try:
            items = apply_round(self._ws, self._resolver, checked, live=True)
        except BaseException:
            # What only resolving tells (docs/semantics.md): the trees are
            # half changed; they are made again from the events so far.
            self._rebuild(self._log)
            raise
        number = len(self._log) + 1
        self._rounds.append(checked.round())
        for el, value in given.items():
            self._supplied[el] = (value, number)
        return self._machine.given(items)

    def _checked(
        self, values: Mapping[str, str], release: Sequence[str], comp: int | None, later: Sequence[str], live: bool
    ) -> tuple[CheckedRound, dict[etree._Element, str], tuple[etree._Element, ...]]:
        """The round an event makes of its values, without those already
        supplied alike, with every rule checked (:meth:`_checked_round`),
        then, for ``comp``'s deployment, whose values they are (``NOT_OWNER``,
        live only), what it leaves out (``VALUES_MISSING``, live only) and
        its releases (``LAZY_UNRESOLVED``): the checked round, the elements
        it gives values, and the properties of ``comp``'s lazy values left
        for later (``later``, and on replay what it left)."""
        ws = self._ws
        if values or release:
            checked, given, named = self._checked_round(values, release)
        else:  # most components supply nothing: no round to check
            checked, given, named = _NO_ROUND, {}, []
        left: tuple[etree._Element, ...] = ()
        if comp is not None:
            later_named = [(path, el) for path in later for el in select_path(ws, path, "later")]
            if live:
                named += [("release", path, el) for path, elements in checked.releases for el in elements]
                named += [("later", path, el) for path, el in later_named]
                self._owners.check_own(ws, comp, named, self._paths.__getitem__)
            missing = self._owners.missing(comp, checked, [el for _, el in later_named], self._resolver.is_pending)
            if missing and live:
                self._owners.refuse_missing(ws, comp, self._paths[comp], missing)
            if later_named or missing:
                left = tuple(dict.fromkeys([*(el for _, el in later_named), *(holder_of(item) for item in missing)]))
        self._owners.check_releases(ws, checked, self._resolver.is_pending)
        return checked, given, left

    def _checked_round(
        self, values: Mapping[str, str], release: Sequence[str]
    ) -> tuple[CheckedRound, dict[etree._Element, str], list[tuple[str, str, etree._Element]]]:
        """``check_round`` of an event's values and releases, each value's
        elements narrowed to those it gives now (``SET_CONFLICT`` for one
        given another value): the round, the elements it gives values, and
        every element a value names (given alike before or not)."""
        number = len(self._log) + 1
        given: dict[etree._Element, str] = {}
        named: list[tuple[str, str, etree._Element]] = []

        def fresh(path: str, value: str, elements: list[etree._Element]) -> list[etree._Element]:
            named.extend(("set", path, el) for el in elements)
            new = [el for el in elements if el not in self._supplied and el not in given]
            for el in elements:
                earlier = self._supplied.get(el) or ((given[el], number) if el in given else None)
                if earlier is not None and (earlier[0] != value or new):
                    self._conflict(path, el, value, earlier)
            given.update((el, value) for el in new)
            return new

        checked = check_round(self._ws, Round(dict(values), tuple(release)), fresh=fresh, live=True)
        return checked, given, named

    def _conflict(self, path: str, el: etree._Element, value: str, earlier: tuple[str, int]) -> None:
        ctx = self._ws.ctx
        where = ctx.prefixes.path_of(el)
        by = "this event" if earlier[1] > len(self._log) else f"event {earlier[1]}"
        if earlier[0] == value:
            why = f"{where} already has this value (from {by}), and the path names other properties too; name those alone"
        else:
            why = f"{where} already has the value {earlier[0]!r}, supplied by {by}; a lazy property takes one value"
        raise DeployValueError(f"set {path!r}: {why}", code="SET_CONFLICT", url=ctx.docs[0].url, path=where)

    def _rebuild(self, log: Sequence[_Logged]) -> None:
        """Make the state again from the start and ``log`` (after an event
        failed half way), all or nothing: made aside, then put in place; if
        that fails, the deployment refuses every call from then on and lets
        its journal go (which holds every acknowledged event)."""
        try:
            fresh = deployment_of(self._loaded)
            for entry in log:
                fresh._apply(_event(entry))
        except BaseException as exc:
            self._broken = f"{type(exc).__name__}: {exc}"
            if self._journal is not None:
                self._journal.close()
            raise
        vars(self).update((name, value) for name, value in vars(fresh).items() if name not in _SESSION)

    def _check_usable(self) -> None:
        """Refuse (DEPLOYMENT_BROKEN) any call once a rebuild failed."""
        if self._broken is not None:
            again = "open it again from its journal" if self._journal is not None else "begin it again"
            raise DeploymentError(
                f"the deployment could not be made again after an event failed half way ({self._broken}); {again}",
                code="DEPLOYMENT_BROKEN",
            )

    # -- components --------------------------------------------------------------------

    def _named(self, numbers: Sequence[int]) -> list[str]:
        return [self._paths[c] for c in numbers]

    def _component(self, path: str) -> int:
        """The component ``path`` names (a leading ``/`` optional); COMPONENT_NOT_FOUND otherwise."""
        found = self._paths.find(path) if isinstance(path, str) and path.strip("/") else ("", [])
        if isinstance(found, int):
            return found
        step, there = found
        raise DeploymentError(
            f"{path!r} is no component of the plan: no {step!r} there{did_you_mean(step, there)}",
            code="COMPONENT_NOT_FOUND",
            url=self._loaded.url,
            path=str(path),
        )

    def _require(self, comp: int, state: str, verb: str) -> None:
        now = self._machine.state(comp)
        if now == state:
            return
        status = self._status(comp)
        why = status.why()
        path = self._paths[comp]
        if verb == "retry":
            raise DeploymentError(f"retry {path}: it has not failed, it is {now}", code="NOT_FAILED", url=self._loaded.url, path=path)
        hint = "; retry it first" if now == "failed" else ""
        raise DeploymentError(
            f"{verb} {path}: it is not ready, it is {now}" + (f": {why}" if why else "") + hint,
            code="NOT_READY",
            url=self._loaded.url,
            path=path,
        )

    def _counts(self) -> dict[str, int]:
        state = self._machine.state
        return counted_states(state(c) for c in range(1, len(self._facts.parent)))

    def _status(self, comp: int) -> ComponentStatus:
        machine, facts, path = self._machine, self._facts, self._paths.__getitem__
        state = machine.state(comp)
        planned = facts.planned(comp)
        mine = (planned.supplies, planned.releases)
        if state in ("deployed", "ready"):
            return ComponentStatus(path(comp), state, *mine, later=self._later_paths(comp, planned))
        # The plan writes the paths of the values a component waits for in the order of facts.waits.
        waits = zip(facts.waits.get(comp, ()), planned.waits_for)
        return ComponentStatus(
            path(comp),
            state,
            *mine,
            waits_for=tuple((written, self._owner_path(v)) for v, written in waits if v not in machine.valued),
            children=tuple(path(c) for c in facts.children.get(comp, ()) if machine.done[c] != "deployed"),
            after=self._after(comp),
            upstream=tuple((path(f), machine.failed[f]) for f in machine.upstream(comp)),
            reason=machine.failed.get(comp),
        )

    def _later_paths(self, comp: int, planned: PlannedComponent) -> tuple[str, ...]:
        """The plan's paths of the lazy values ``comp``'s deployment said come later that still have none."""
        later = self._later.get(comp)
        if not later:
            return ()
        written = dict(zip(self._owners.items.get(comp, ()), planned.supplies + planned.releases))
        items = (self._owners.held[el][0] for el in later)
        return tuple(written[item] for item in items if self._resolver.is_pending(item))

    def _owner_path(self, value: etree._Element) -> str | None:
        owner = self._facts.owner.get(value)
        return None if owner is None else self._paths[owner]

    def _after(self, comp: int) -> tuple[str, ...]:
        """The siblings ``comp`` comes after in the plan made again now: those
        not deployed with a lazy value it waits for still without one."""
        valued, done = self._machine.valued, self._machine.done
        return tuple(
            self._paths[sibling]
            for sibling, values in self._facts.after.get(comp, {}).items()
            if done[sibling] != "deployed" and any(v not in valued for v in values)
        )



def deployment_of(
    loaded: Loaded, journal: str | os.PathLike[str] | None = None, *, read_only: bool = False, wait: float = 0.0
) -> Deployment:
    """A deployment of ``loaded``'s system (:meth:`cdl.Document.deploy`):
    with ``journal``, created or replayed (``read_only``: only read), and
    appended to with each event; ``wait``: seconds to wait for the journal."""
    deployment = object.__new__(Deployment)
    deployment._open(loaded, journal, read_only, wait)
    return deployment


#: What belongs to the session rather than to its state: a rebuild keeps them.
_SESSION = frozenset({"_loaded", "_lock", "warnings", "_journal", "_closed", "_read_only", "_broken"})

#: An event as the log keeps it: (kind, the pairs of its other fields), all
#: tuples and strings. A live deployment logs one per event for as long as
#: it lasts; dicts and lists would each be objects the cyclic collector
#: tracks, and its full collections, over the whole live trees, would come
#: the more often the longer the deployment ran.
_Logged = tuple[str, tuple[tuple[str, Any], ...]]


def _logged(event: Mapping[str, Any]) -> _Logged:
    """``event`` as the log keeps it."""
    fields = []
    for key, value in event.items():
        if key == "values":
            value = tuple(value.items())
        elif key == "release":
            value = tuple(value)
        if key != "event":
            fields.append((key, value))
    return event["event"], tuple(fields)


def _event(entry: _Logged) -> dict[str, Any]:
    """The event ``entry`` logged, as :meth:`Deployment._apply` takes it."""
    kind, fields = entry
    event: dict[str, Any] = {"event": kind}
    for key, value in fields:
        event[key] = dict(value) if key == "values" else list(value) if key == "release" else value
    return event


#: The round of an event that gives no value and releases nothing.
_NO_ROUND = CheckedRound((), ())


def _given(values: Mapping[str, str] | None, release: Sequence[str]) -> dict[str, Any]:
    """An event's ``values`` and ``release`` as the journal records them."""
    return {"values": dict(values or {}), "release": _paths_list(release, "release")}


def _paths_list(paths: Sequence[str], what: str) -> list[str]:
    """``release`` or ``later`` as the journal records them: a list of paths."""
    if isinstance(paths, str):  # one path where a list was meant: its letters would be paths
        raise DeployValueError(f"{what} {paths!r}: give a list of paths, not one string", code="BAD_SET")
    return list(paths)
