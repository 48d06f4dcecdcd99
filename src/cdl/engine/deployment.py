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
import weakref
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, overload

from lxml import etree

from ..deployment.carry import removal_waits, update_record, value_paths
from ..deployment.journal import Journal, check_text, journal_header, last_update
from ..deployment.machine import Machine
from ..deployment.owners import Owners
from ..deployment.removals import Removals
from ..deployment.status import ComponentState, ComponentStatus, DeploymentStatus, counted_states
from ..errors import CdlError, DeploymentError, DeployValueError, JournalError
from ..model.items import holder_of
from ..model.suggest import did_you_mean
from ..model.vocabulary import T_SYSTEM
from ..model.workspace import Workspace
from ..planning.plan import Plan, PlannedComponent, build_plan_facts
from ..resolution.laziness import CheckedRound, Round, apply_round, check_round, left_unresolved, select_path
from ..resolution.output import build_output, to_bytes, to_data
from .diff import diff_systems
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
        #: Why the deployment can no longer be used (a rebuild that failed, a
        #: fork in the middle of a call), or None.
        self._broken: str | None = None
        _LIVE.add(self)
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
        #: Each lazy reference (or holder of a lazy expression) released, and the event's number.
        self._released: dict[etree._Element, int] = {}
        #: The events before the first one logged (an update carried them over).
        self._base = 0
        #: The components being taken down, and the number of the first of
        #: the plan's there once the whole system is (teardown), else None.
        self._removals = Removals()
        self._teardown: int | None = None

    def _open_journal(self, path: str | os.PathLike[str], wait: float) -> None:
        header = _header_of(self._loaded)
        journal: Journal | None = None
        if self._read_only:
            records, warnings = Journal.read(path, header, wait)
        else:
            journal, records, warnings = Journal.open(path, header, wait)
        try:
            # Line 1 is the header; each event takes the next line. An update
            # carries over everything before it: replay begins there.
            first = last_update(records)
            for line, record in enumerate(records[first:], 2 + first):
                event = {k: v for k, v in record.items() if k not in ("seq", "time") or (k == "seq" and record["event"] == "update")}
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
            return [] if self._teardown is not None else self._named(sorted(self._machine.ready))

    def removable(self) -> list[str]:
        """The components that may be removed now (taken down by :meth:`teardown`,
        or left by an :meth:`update`), in the order they began to be removed."""
        with self._lock:
            self._check_usable()
            return self._removal_names(self._removals.removable())

    def status(self, path: str | None = None) -> DeploymentStatus:
        """The state of every component (or only of ``path``), and why: the
        plan's, then those an update left to remove (``removing``, ``removed``)."""
        with self._lock:
            self._check_usable()
            if path is not None:
                found = self._removals.find(path) if isinstance(path, str) else None
                if found is not None and not self._in_teardown(found):
                    return DeploymentStatus([self._removal_status(found)], self._plan)
                return DeploymentStatus([self._status(self._component(path))], self._plan)
            statuses = [self._status(c) for c in range(1, len(self._facts.parent))]
            statuses += [self._removal_status(i) for i in range(len(self._removals)) if not self._in_teardown(i)]
            return DeploymentStatus(statuses, self._plan)

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
            replacing = self._replacing(comp, event["values"]) if comp in self._machine.changed else {}
            if replacing:  # deployed again with other values: they reach what uses them
                self._check_event()
                check_text(event, self._loaded.url)
                return self._named(self._move(self._loaded, _header_of(self._loaded), replacing, event))
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

    def update(self, document: object) -> list[str]:
        """Move the deployment to ``document`` (a :class:`cdl.Document`, the
        system's next version), as one event; returns the components ready
        now (to deploy, or to deploy again).

        What carries over: every deploy-time value supplied so far whose
        property the new documents still have (and that still fits:
        ``SET_NOT_LAZY`` and the other errors of a round refuse the update,
        naming the value), and the state of each component whose resolved
        configuration is the same. One deployed whose configuration changed
        is ``changed`` (to deploy again; its status says what changed and
        why, as ``cdl diff`` does); one the new documents add is waiting or
        ready; one they no longer have is ``removing`` until reported
        :meth:`removed`. Refused, changing nothing, when the new documents do
        not resolve or plan, and once the deployment is being taken down
        (``TORN_DOWN``). Documents with the same bytes are no change."""
        loaded = _loaded_of(document)
        with self._lock:
            self._check_event()
            self._refuse_torn_down("update")
            header = _header_of(loaded)
            if header != _header_of(self._loaded):
                self._move(loaded, header)
            return self._named(sorted(self._machine.ready))

    def teardown(self) -> list[str]:
        """Begin taking the whole system down: every component is ``removing``
        until reported :meth:`removed`, which it may be once every component
        that waits on it (its parent, and those that wait for its lazy
        values) is removed. Returns the components that may be removed now.
        After it, events that deploy or give values are refused (``TORN_DOWN``
        for :meth:`supply` and :meth:`update`). Again: no change."""
        with self._lock:
            return self._removal_names(self._commit({"event": "teardown"}))

    def removed(self, path: str) -> list[str]:
        """Record that component ``path`` (removing, and nothing that waits on it
        left) is removed; returns the components that may be removed now
        because of it. One that is not being removed is ``NOT_REMOVING``; one
        that others still wait on ``NOT_READY``, naming them."""
        with self._lock:
            i = self._removal(path)
            return self._removal_names(self._commit({"event": "removed", "path": self._removals.paths[i]}))

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
        self._check_event()
        check_text(event, self._loaded.url)
        log = len(self._log)
        result = self._apply(event, live=True)
        if len(self._log) == log:
            return result  # changed nothing (values already supplied alike): nothing to record
        self._append(event, self._log[:-1])
        return result

    def _append(self, event: dict[str, Any], before: Sequence[_Logged], loaded: Loaded | None = None) -> None:
        """Append ``event`` (applied) to the journal; when that fails, the state
        is made again from ``before`` (the log before it, of ``loaded``'s documents)."""
        if self._journal is None:
            return
        try:
            self._journal.append({k: v for k, v in event.items() if k != "seq"})
        except BaseException:
            if loaded is not None:
                self._loaded = loaded
            self._rebuild(before)
            raise

    def _check_event(self) -> None:
        """Refuse an event to a deployment closed, read-only, broken or forked."""
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

    def _apply(self, event: dict[str, Any], live: bool = False) -> list[int]:
        """Apply one event (``live``, or replayed) and log it: the component
        numbers it returns; a refusal raises and changes nothing. A replayed
        ``deployed`` event was accepted when it was recorded: whose values it
        gives is not asked again, and what it left without a value (a journal
        of an earlier version, which did not ask) counts as ``later``."""
        kind = event["event"]
        machine = self._machine
        if kind in _CARRYING:
            return _CARRYING[kind](self, event)
        if kind == "supply" and self._teardown is not None:
            self._refuse_torn_down("supply")
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
        number = self._base + len(self._log) + 1
        self._rounds.append(checked.round())
        for el, value in given.items():
            self._supplied[el] = (value, number)
        for _, elements in checked.releases:
            self._released.update((el, number) for el in elements)
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
        number = self._base + len(self._log) + 1
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
        by = "this event" if earlier[1] > self._base + len(self._log) else f"event {earlier[1]}"
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
            self._broken = f"the deployment could not be made again after an event failed half way ({type(exc).__name__}: {exc})"
            if self._journal is not None:
                self._journal.close()
            raise
        vars(self).update((name, value) for name, value in vars(fresh).items() if name not in _SESSION)

    def _check_usable(self) -> None:
        """Refuse (DEPLOYMENT_BROKEN) any call once a rebuild failed, or in a
        child forked in the middle of a call."""
        if self._broken is not None:
            again = "open it again from its journal" if self._journal is not None else "begin it again"
            raise DeploymentError(f"{self._broken}; {again}", code="DEPLOYMENT_BROKEN")

    def _forked(self) -> None:
        """In a child just forked: if another thread of the parent was in the
        middle of a call (the lock held, by a thread the child does not
        have), the state here is half made and the lock would never be let
        go: a new lock, and every call refused."""
        if self._lock.acquire(blocking=False):
            self._lock.release()
            return
        self._lock = threading.RLock()
        self._broken = "this process was forked while another thread was in the middle of a call to the deployment"

    # -- carrying over (update) and taking down ------------------------------------------

    def _move(
        self, loaded: Loaded, header: dict[str, Any], replacing: Mapping[str, str] | None = None, then: dict[str, Any] | None = None
    ) -> list[int]:
        """Move the deployment to ``loaded`` (named by journal ``header``) as
        one update event, the values supplied so far carried over (those of
        ``replacing`` given their new values), then apply ``then`` (a changed
        component's deployed event giving those values): made aside and put
        in place only when all of it holds, else nothing changes. What
        ``then`` made ready (``[]`` without it)."""
        fresh = deployment_of(loaded)
        fresh._base = self._base + len(self._log)
        old_loaded, old_log = self._loaded, self._log
        values, release = self._carried(fresh, replacing or {})
        try:
            record = self._update_record(fresh, header, values, release)
            fresh._carry_states(record)
            fresh._log.append(_logged(record))
            became = fresh._apply(then, live=True) if then is not None else []
        except BaseException:
            self._rebuild(old_log)  # the running version's trees were taken apart to compare them
            raise
        vars(self).update((name, value) for name, value in vars(fresh).items() if name not in _SESSION)
        self._loaded = loaded
        self._append(record, old_log, old_loaded)
        if then is not None:
            self._append(then, self._log[:-1])
        return became

    def _replacing(self, comp: int, values: Mapping[str, str]) -> dict[str, str]:
        """The values of changed component ``comp``'s deployed event that give
        one of its own lazy properties another value than it has (by each
        property's own path): deploying it again, it supplies them anew."""
        prefixes = self._ws.ctx.prefixes
        replacing: dict[str, str] = {}
        for path, value in values.items():
            try:
                elements = select_path(self._ws, path, "set")
            except DeployValueError:
                continue  # refused as any event's value is, by the event
            for el in elements:
                supplied = self._supplied.get(el)
                if self._owners.owner(el) == comp and supplied is not None and supplied[0] != value:
                    replacing.update(dict.fromkeys(value_paths([el], prefixes), value))
        return replacing

    def _carried(self, fresh: Deployment, replacing: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
        """The values supplied so far (those of ``replacing`` with their new
        values) and the references released, each by its property's own path,
        that ``fresh`` (the new documents) still has, given to ``fresh`` as
        one round; a value that no longer fits refuses the update (the
        round's error, saying so)."""
        prefixes = self._ws.ctx.prefixes
        values = dict(zip(value_paths(self._supplied, prefixes), (value for value, _ in self._supplied.values())))
        values.update(replacing)
        release = value_paths(self._released, prefixes)
        values = {path: value for path, value in values.items() if _selects(fresh._ws, path, "set")}
        release = [path for path in release if _selects(fresh._ws, path, "release")]
        try:
            fresh._give(values, release, None, (), False)
        except CdlError as exc:
            for error in exc.errors:
                error.message = (
                    f"update: a value supplied so far does not fit the new documents: {error.message}; the running"
                    " deployment's values carry over: change the new documents, or begin a new journal"
                )
                error.args = (error.message,)
            exc.message = exc.errors[0].message  # a group says its first error's message
            exc.args = (exc.message,)
            raise
        return values, release

    def _update_record(self, fresh: Deployment, header: dict[str, Any], values: dict[str, str], release: list[str]) -> dict[str, Any]:
        """The update event moving this deployment to ``fresh``'s documents
        (``fresh`` given the carried ``values`` and ``release``): the two
        versions compared (this one's trees taken apart for it)."""
        prefixes = self._ws.ctx.prefixes
        is_pending, held = self._resolver.is_pending, self._owners.held
        later = {c: value_paths([el for el in els if is_pending(held[el][0])], prefixes) for c, els in self._later.items()}
        with cyclic_gc_paused():
            old = build_output(
                self._ws, system_only=True, consume=True, unresolved=left_unresolved(self._resolver, self._left),
                facts=self._loaded.output_facts,
            )
            new = build_output(
                fresh._ws, system_only=True, unresolved=left_unresolved(fresh._resolver, fresh._left),
                facts=fresh._loaded.output_facts,
            )
        diff = diff_systems((self._loaded, fresh._loaded), (self._rounds, fresh._rounds), (old.find(T_SYSTEM), new.find(T_SYSTEM)))
        del old, new
        record = update_record(header, values, release, (self._paths, self._machine, later, self._removals), fresh._paths, diff)
        record["seq"] = fresh._base + 1
        return record

    def _carry(self, event: dict[str, Any]) -> list[int]:
        """Apply an update event to a deployment of its documents that has
        seen no event (replay: the journal's, or a rebuild's)."""
        self._base = event["seq"] - 1
        self._give(event["values"], event["release"], None, (), False)
        self._carry_states(event)
        self._log.append(_logged(event))
        return []

    def _carry_states(self, event: dict[str, Any]) -> None:
        """The states an update event carries over, put on this deployment's machine and removals."""
        machine, find = self._machine, self._component
        for path, lines in event["changed"].items():
            machine.changed[find(path)] = tuple(lines)
        for path in event["deployed"]:
            machine.deploy(find(path))
        for path, reason in event["failed"].items():
            machine.fail(find(path), reason)
        held = self._owners.held
        for path, later in event["later_values"].items():
            found = [el for value in later for el in select_path(self._ws, value, "later") if el in held]
            if found:
                self._later[find(path)] = tuple(found)
        removing: dict[str, list[str]] = event["removing"]
        position = {path: i for i, path in enumerate(removing)}
        self._removals.add(list(removing), {i: [position[w] for w in waits if w in position] for i, waits in enumerate(removing.values())})

    def _take_down(self, event: dict[str, Any]) -> list[int]:
        """Apply a teardown event: every component of the plan begins to be removed."""
        if self._teardown is not None:
            return []  # already: nothing to record
        base = len(self._removals)
        self._removals.add([self._paths[c] for c in range(1, len(self._facts.parent))], removal_waits(self._machine))
        self._teardown = base
        self._log.append(_logged(event))
        return self._removals.removable()

    def _remove(self, event: dict[str, Any]) -> list[int]:
        """Apply a removed event: the removals it makes ready."""
        i = self._removal(event["path"])
        removals = self._removals
        if not removals.ready(i):
            path = removals.paths[i]
            why = "it is removed already" if removals.removed[i] else "removed after " + ", ".join(removals.left_waiting(i))
            message = f"removed {path}: it is not ready to be removed: {why}"
            raise DeploymentError(message, code="NOT_READY", url=self._loaded.url, path=path)
        self._log.append(_logged(event))
        return removals.remove(i)

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
        now = self._state(comp)
        if now == state or (state == "ready" and now == "changed" and comp in self._machine.ready):
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
        state = self._state
        removals = self._removals
        leaving = (removals.state(i) for i in range(len(removals)) if not self._in_teardown(i))
        return counted_states([*(state(c) for c in range(1, len(self._facts.parent))), *leaving])

    def _state(self, comp: int) -> ComponentState:
        """Component ``comp``'s state: the machine's, or once the system is
        being taken down, its removal's."""
        if self._teardown is not None:
            return self._removals.state(self._teardown + comp - 1)  # type: ignore[return-value]
        return self._machine.state(comp)

    def _status(self, comp: int) -> ComponentStatus:
        machine, facts, path = self._machine, self._facts, self._paths.__getitem__
        state = self._state(comp)
        planned = facts.planned(comp)
        mine = (planned.supplies, planned.releases)
        if self._teardown is not None:
            left = self._removals.left_waiting(self._teardown + comp - 1)
            return ComponentStatus(path(comp), state, *mine, removal_waits=left)
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
            changes=machine.changed.get(comp, ()),
        )

    def _removal_status(self, i: int) -> ComponentStatus:
        """The status of a component an update left to remove."""
        removals = self._removals
        return ComponentStatus(removals.paths[i], removals.state(i), removal_waits=removals.left_waiting(i))  # type: ignore[arg-type]

    def _in_teardown(self, i: int) -> bool:
        """Whether removal ``i`` is one of the plan's components, taken down by teardown."""
        return self._teardown is not None and i >= self._teardown

    def _removal_names(self, numbers: Sequence[int]) -> list[str]:
        return [self._removals.paths[i] for i in numbers]

    def _removal(self, path: str) -> int:
        """The component being removed at ``path``: NOT_REMOVING for one of the
        plan's that is not, COMPONENT_NOT_FOUND for no component."""
        found = self._removals.find(path) if isinstance(path, str) else None
        if found is not None:
            return found
        comp = self._component(path)
        raise DeploymentError(
            f"removed {self._paths[comp]}: it is not being removed, it is {self._state(comp)};"
            " teardown (cdl deploy teardown) begins taking the system down",
            code="NOT_REMOVING",
            url=self._loaded.url,
            path=self._paths[comp],
        )

    def _refuse_torn_down(self, verb: str) -> None:
        if self._teardown is not None:
            raise DeploymentError(
                f"{verb}: the deployment is being taken down (teardown): it deploys nothing more; report what is"
                " removed, and begin a new journal to deploy the system again",
                code="TORN_DOWN",
                url=self._loaded.url,
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


#: The events that carry over or take down, each applied by its own method.
_CARRYING = {"update": Deployment._carry, "teardown": Deployment._take_down, "removed": Deployment._remove}


def _loaded_of(document: object) -> Loaded:
    """The loaded documents of a :class:`cdl.Document` (made in ``engine.document``, above this module)."""
    loaded = getattr(document, "_loaded", None)
    if not isinstance(loaded, Loaded):
        raise TypeError(f"update takes a cdl.Document (cdl.load), not {type(document).__name__}")
    return loaded


def _header_of(loaded: Loaded) -> dict[str, Any]:
    """The journal header naming ``loaded``'s documents and catalogs."""
    return journal_header([(d.url, d.data) for d in loaded.docs], loaded.options.catalogs)


def _selects(ws: Workspace, path: str, verb: str) -> bool:
    """Whether ``path`` names a property of ``ws`` (a carried value whose property is gone does not carry over)."""
    try:
        select_path(ws, path, verb)
    except DeployValueError as exc:
        if exc.code == "SET_NOT_FOUND":
            return False
        raise
    return True

#: Every deployment alive in this process (see :func:`_after_fork`).
_LIVE: weakref.WeakSet[Deployment] = weakref.WeakSet()


def _after_fork() -> None:
    """Run in each child process just forked: a deployment another thread was changing is refused there."""
    for deployment in list(_LIVE):
        deployment._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)

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
