"""Deployment sessions: the plan as a live state machine (issue 24).

Entry point: :meth:`cdl.Document.deploy`, which makes a :class:`Deployment`.
A Deployment is the session (its lock, its journal, making the state again
after a failure) around a :class:`~cdl.engine.deployment_state.DeploymentState`:
the resolution of the document with every deploy-time value supplied so far,
each component of the plan (``src/cdl/planning/plan.py``, spec sections 4
and 7.5) moving through the states waiting, ready, deployed, failed and
blocked (changed, removing and removed: issue 32, update and teardown). The
rules are in docs/semantics.md, "Deployment sessions".

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
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, overload

from lxml import etree

from ..deployment.journal import Journal, check_text, journal_header, last_update
from ..deployment.status import DeploymentStatus
from ..errors import CdlError, DeploymentError, DeployValueError, JournalError
from ..planning.plan import Plan
from ..resolution.laziness import Round, left_unresolved
from ..resolution.output import build_output, to_bytes, to_data
from .deployment_state import DeploymentState, Logged, event_of
from .phases import Loaded, copy_working
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

    #: The documents a cdl.Document holds (see :func:`deployment_of`).
    _loaded_of: Callable[[object], Loaded]

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("cdl.Deployment is not made by callers: Document.deploy() gives one")

    def _open(self, loaded: Loaded, journal: str | os.PathLike[str] | None, read_only: bool, wait: float) -> None:
        """Start the deployment, replaying ``journal`` if it has events: see :func:`deployment_of`."""
        self._loaded = loaded
        self._lock = threading.RLock()
        #: Warnings from opening the journal (a torn last line dropped).
        self.warnings: list[str] = []
        self._journal: Journal | None = None
        self._closed = False
        self._read_only = read_only
        #: Why the deployment can no longer be used (a rebuild that failed, a
        #: fork in the middle of a call), or None.
        self._broken: str | None = None
        _LIVE.add(self)
        #: The system's version and where each component is: replaced whole
        #: by an update, or when made again from the events.
        self._state = DeploymentState(loaded)
        if journal is not None:
            self._open_journal(journal, wait)

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
                    self._state.apply(event)
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
            counts = ", ".join(f"{n} {state}" for state, n in self._state.counts().items() if n)
        journal = f", journal {self._journal.path!r}" if self._journal is not None else ""
        return f"<cdl.Deployment {self._loaded.url!r} ({counts or 'no components'}{journal})>"

    @property
    def plan(self) -> Plan:
        """The plan the deployment follows: the system's plan when it opened (or was last updated)."""
        return self._state.plan

    @property
    def rounds(self) -> tuple[Round, ...]:
        """The deploy-time values so far, one round per event that gave values
        or released references, as :meth:`cdl.Document.resolve` accepts them."""
        with self._lock:
            self._check_usable()
            return tuple(self._state.rounds)

    def resolution(self) -> Resolution:
        """The resolution with every deploy-time value so far, equal to
        ``document.resolve(rounds=self.rounds)``, made from copies of the
        deployment's working trees."""
        with self._lock:
            self._check_usable()
            state = self._state
            left = left_unresolved(state.resolver, state.left)  # pending at opening: all that can be now
            working = copy_working((state.ws, state.resolver, left))
            return resolution_of(self._loaded, state.rounds, False, working)

    def ready(self) -> list[str]:
        """The ready components, in document order."""
        with self._lock:
            self._check_usable()
            state = self._state
            return [] if state.teardown is not None else state.named(sorted(state.machine.ready))

    def removable(self) -> list[str]:
        """The components that may be removed now (taken down by :meth:`teardown`,
        or left by an :meth:`update`), in the order they began to be removed."""
        with self._lock:
            self._check_usable()
            return self._state.removal_names(self._state.removals.removable())

    def status(self, path: str | None = None) -> DeploymentStatus:
        """The state of every component (or only of ``path``), and why: the
        plan's, then those an update left to remove (``removing``, ``removed``)."""
        with self._lock:
            self._check_usable()
            return self._state.status(path)

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
            state = self._state
            out = build_output(state.ws, system_only=True, within=state.facts.elements[state.component(path)])
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
            state = self._state
            comp = state.component(path)
            event = {"event": "deployed", "path": state.paths[comp], **_given(values, release)}
            if later:
                event["later"] = _paths_list(later, "later")
            replacing = state.replacing(comp, event["values"]) if comp in state.machine.changed else {}
            if replacing:  # deployed again with other values: they reach what uses them
                self._check_event()
                check_text(event, self._loaded.url)
                return self._named(self._move(self._loaded, replacing, event))
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
            path = self._state.paths[self._state.component(path)]
            return self._named(self._commit({"event": "failed", "path": path, "reason": str(reason)}))

    def retry(self, path: str) -> list[str]:
        """Take failed component ``path`` back to its computed state, its blocked
        dependants with it; returns the components now ready."""
        with self._lock:
            path = self._state.paths[self._state.component(path)]
            return self._named(self._commit({"event": "retry", "path": path}))

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
        loaded = self._loaded_of(document)
        with self._lock:
            self._check_event()
            self._state.refuse_torn_down("update")
            header = _header_of(loaded)
            if header != _header_of(self._loaded):
                self._move(loaded, header=header)
            return self._named(sorted(self._state.machine.ready))

    def teardown(self) -> list[str]:
        """Begin taking the whole system down: every component is ``removing``
        until reported :meth:`removed`, which it may be once every component
        that waits on it (its parent, and those that wait for its lazy
        values) is removed. Returns the components that may be removed now.
        After it, events that deploy or give values are refused (``TORN_DOWN``
        for :meth:`supply` and :meth:`update`). Again: no change."""
        with self._lock:
            return self._state.removal_names(self._commit({"event": "teardown"}))

    def removed(self, path: str) -> list[str]:
        """Record that component ``path`` (removing, and nothing that waits on it
        left) is removed; returns the components that may be removed now
        because of it. One that is not being removed is ``NOT_REMOVING``; one
        that others still wait on ``NOT_READY``, naming them."""
        with self._lock:
            path = self._state.removals.paths[self._state.removal(path)]
            return self._state.removal_names(self._commit({"event": "removed", "path": path}))

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
        state = self._state
        log = len(state.log)
        try:
            result = state.apply(event, live=True)
        except BaseException:
            if state.spoiled:
                self._rebuild(state.log)
            raise
        if len(state.log) == log:
            return result  # changed nothing (values already supplied alike): nothing to record
        self._append(event, state.log, log)
        return result

    def _append(self, event: dict[str, Any], log: Sequence[Logged], before: int, loaded: Loaded | None = None) -> None:
        """Append ``event`` (applied) to the journal; when that fails, the state
        is made again from the first ``before`` events of ``log`` (those before
        it, of ``loaded``'s documents). The log is sliced only then: a copy at
        each event would cost the length of the deployment."""
        if self._journal is None:
            return
        try:
            self._journal.append({k: v for k, v in event.items() if k != "seq"})
        except BaseException:
            self._rebuild(log[:before], loaded)
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

    def _rebuild(self, log: Sequence[Logged], loaded: Loaded | None = None) -> None:
        """Make the state again from the start and ``log`` (after an event
        failed half way; the log of ``loaded``'s documents, when given), all or
        nothing: made aside, then put in place; if that fails, the deployment
        refuses every call from then on and lets its journal go (which holds
        every acknowledged event)."""
        try:
            fresh = DeploymentState(loaded or self._loaded)
            for entry in log:
                fresh.apply(event_of(entry))
        except BaseException as exc:
            self._broken = f"the deployment could not be made again after an event failed half way ({type(exc).__name__}: {exc})"
            if self._journal is not None:
                self._journal.close()
            raise
        self._state, self._loaded = fresh, fresh.loaded

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
        self,
        loaded: Loaded,
        replacing: Mapping[etree._Element, str] | None = None,
        then: dict[str, Any] | None = None,
        header: dict[str, Any] | None = None,
    ) -> list[int]:
        """Move the deployment to ``loaded`` as one update event, the values
        supplied so far carried over (those of ``replacing`` given their new
        values), then apply ``then`` (a changed component's deployed event
        giving those values): made aside and put in place only when all of
        it holds, else nothing changes. What ``then`` made ready (``[]``
        without it). ``header``: the journal header of ``loaded``, when known."""
        old, old_loaded = self._state, self._loaded
        try:
            fresh, record = old.moved(loaded, header or _header_of(loaded), replacing or {})
            became = fresh.apply(then, live=True) if then is not None else []
        except BaseException:
            if old.spoiled:  # the running version's trees were taken apart to compare them
                self._rebuild(old.log)
            raise
        self._state, self._loaded = fresh, loaded
        self._append(record, old.log, len(old.log), old_loaded)
        if then is not None:
            self._append(then, fresh.log, len(fresh.log) - 1)
        return became

    def _named(self, numbers: Sequence[int]) -> list[str]:
        return self._state.named(numbers)


def deployment_of(
    loaded: Loaded,
    journal: str | os.PathLike[str] | None = None,
    *,
    read_only: bool = False,
    wait: float = 0.0,
    loaded_of: Callable[[object], Loaded],
) -> Deployment:
    """A deployment of ``loaded``'s system (:meth:`cdl.Document.deploy`):
    with ``journal``, created or replayed (``read_only``: only read), and
    appended to with each event; ``wait``: seconds to wait for the journal.
    ``loaded_of``: the documents a :class:`cdl.Document` holds (what
    :meth:`Deployment.update` is given; ``engine.document``, above this
    module, makes Documents), TypeError for anything else."""
    deployment = object.__new__(Deployment)
    deployment._loaded_of = loaded_of
    deployment._open(loaded, journal, read_only, wait)
    return deployment


def _header_of(loaded: Loaded) -> dict[str, Any]:
    """The journal header naming ``loaded``'s documents and catalogs."""
    return journal_header([(d.url, d.data) for d in loaded.docs], loaded.options.catalogs)


#: Every deployment alive in this process (see :func:`_after_fork`).
_LIVE: weakref.WeakSet[Deployment] = weakref.WeakSet()


def _after_fork() -> None:
    """Run in each child process just forked: a deployment another thread was changing is refused there."""
    for deployment in list(_LIVE):
        deployment._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _given(values: Mapping[str, str] | None, release: Sequence[str]) -> dict[str, Any]:
    """An event's ``values`` and ``release`` as the journal records them."""
    return {"values": dict(values or {}), "release": _paths_list(release, "release")}


def _paths_list(paths: Sequence[str], what: str) -> list[str]:
    """``release`` or ``later`` as the journal records them: a list of paths."""
    if isinstance(paths, str):  # one path where a list was meant: its letters would be paths
        raise DeployValueError(f"{what} {paths!r}: give a list of paths, not one string", code="BAD_SET")
    return list(paths)
