"""The state of a deployment session (issue 24; issue 32 for update and
teardown): one version of the system resolved with every deploy-time value
supplied so far, its plan, and each component's state.

Entry point: :class:`DeploymentState`, made and replaced by
``engine.deployment`` (:class:`cdl.Deployment`), which holds the session
around it (the lock, the journal, making the state again after a failure).
:meth:`DeploymentState.apply` applies one event; :meth:`DeploymentState.moved`
makes the state of the next version with everything that carries over
(docs/semantics.md, "Deployment sessions", "Update", "Teardown").

The working trees and the reference resolver stay alive across events: a
round attempts again only what waits on the values it gives
(``resolution.laziness.apply_round`` with ``live``), each lazy value knows the
components that wait for it, and each component counts what it still waits
for. An event costs what depends on it, not the size of the system.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lxml import etree

from ..deployment.carry import carried_paths, removal_waits, update_record, value_paths
from ..deployment.machine import Machine
from ..deployment.owners import Owners
from ..deployment.removals import Removals
from ..deployment.status import ComponentState, ComponentStatus, DeploymentStatus, counted_states
from ..errors import CdlError, DeploymentError, DeployValueError
from ..model.elements import top_level_of
from ..model.items import holder_of
from ..model.naming import list_name
from ..model.reads import reaching
from ..model.suggest import did_you_mean
from ..model.switch import fast_paths_enabled
from ..model.vocabulary import T_SYSTEM
from ..model.workspace import Workspace
from ..planning.changes import WrittenChange, written_changes
from ..planning.pairing import Counterparts, pair_components
from ..planning.plan import PlannedComponent, build_plan_facts
from ..resolution.laziness import CheckedRound, Round, apply_round, check_round, left_unresolved, select_path
from ..resolution.output import build_output
from .diff import changed_names, compared_lists, diff_systems
from .phases import Earlier, Loaded, copy_main, cyclic_gc_paused, deployed_earlier, list_places, resolve_working, restore_lists

__all__ = ["DeploymentState", "Logged", "event_of", "logged"]


class DeploymentState:
    """One version of a deployed system and where each of its components is:
    made for ``loaded`` with no event, then changed by :meth:`apply`."""

    def __init__(self, loaded: Loaded, earlier: Earlier | None = None) -> None:
        self.loaded = loaded
        #: The events applied (:func:`logged`: what the journal records, without seq and time).
        self.log: list[Logged] = []
        #: Whether an event failed half way (what only resolving tells), leaving
        #: the trees half changed: the state must be made again from ``log``.
        self.spoiled = False
        self.ws, self.resolver, self.left = resolve_working(self.loaded, (), reads=fast_paths_enabled(), earlier=earlier)
        #: What was pending when the deployment opened: only where it is do
        #: deploy-time rounds change the trees (:meth:`earlier`).
        self.opened_pending = self.resolver.pending_items()
        with cyclic_gc_paused():
            self.plan, self.facts = build_plan_facts(self.ws, self.resolver)
        self.machine = Machine(self.facts)
        self.owners = Owners(self.facts)
        self.paths = self.facts.paths
        #: The properties of each deployed component's lazy values it said come later.
        self.later: dict[int, tuple[etree._Element, ...]] = {}
        self.rounds: list[Round] = []
        #: Each element given a value by an event: the value and the event's number.
        self.supplied: dict[etree._Element, tuple[str, int]] = {}
        #: Each lazy reference (or holder of a lazy expression) released, and the event's number.
        self.released: dict[etree._Element, int] = {}
        #: The events before the first one logged (an update carried them over).
        self.base = 0
        #: The components being taken down, and the number of the first of
        #: the plan's there once the whole system is (teardown), else None.
        self.removals = Removals()
        self.teardown: int | None = None

    def apply(self, event: dict[str, Any], live: bool = False) -> list[int]:
        """Apply one event (``live``, or replayed) and log it: the component
        numbers it returns; a refusal raises and changes nothing. A replayed
        ``deployed`` event was accepted when it was recorded: whose values it
        gives is not asked again, and what it left without a value (a journal
        of an earlier version, which did not ask) counts as ``later``."""
        kind = event["event"]
        machine = self.machine
        if kind in _CARRYING:
            return _CARRYING[kind](self, event)
        if kind == "supply" and self.teardown is not None:
            self.refuse_torn_down("supply")
        if kind in ("deployed", "supply"):
            comp = self.component(event["path"]) if kind == "deployed" else None
            if comp is not None:
                self._require(comp, "ready", "deployed")
            became = self._give(event["values"], event["release"], comp, event.get("later", ()), live)
            if comp is None and became is None:
                return []  # nothing new: not an event to record
            self.log.append(logged(event))
            if comp is not None:
                became = (became or []) + machine.deploy(comp)
            return sorted(became or [])
        comp = self.component(event["path"])
        if kind == "failed":
            self._require(comp, "ready", "failed")
            self.log.append(logged(event))
            return machine.fail(comp, event["reason"])
        if kind == "retry":
            self._require(comp, "failed", "retry")
            self.log.append(logged(event))
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
            self.later[comp] = left
        if not checked.sets and not checked.releases:
            return None
        try:
            items = apply_round(self.ws, self.resolver, checked, live=True)
        except BaseException:
            # What only resolving tells (docs/semantics.md): the trees are
            # half changed; the deployment makes them again from the events so far.
            self.spoiled = True
            raise
        number = self.base + len(self.log) + 1
        self.rounds.append(checked.round())
        for el, value in given.items():
            self.supplied[el] = (value, number)
        for _, elements in checked.releases:
            self.released.update((el, number) for el in elements)
        return self.machine.given(items)

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
        ws = self.ws
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
                self.owners.check_own(ws, comp, named, self.paths.__getitem__)
            missing = self.owners.missing(comp, checked, [el for _, el in later_named], self.resolver.is_pending)
            if missing and live:
                self.owners.refuse_missing(ws, comp, self.paths[comp], missing)
            if later_named or missing:
                left = tuple(dict.fromkeys([*(el for _, el in later_named), *(holder_of(item) for item in missing)]))
        self.owners.check_releases(ws, checked, self.resolver.is_pending)
        return checked, given, left

    def _checked_round(
        self, values: Mapping[str, str], release: Sequence[str]
    ) -> tuple[CheckedRound, dict[etree._Element, str], list[tuple[str, str, etree._Element]]]:
        """``check_round`` of an event's values and releases, each value's
        elements narrowed to those it gives now (``SET_CONFLICT`` for one
        given another value): the round, the elements it gives values, and
        every element a value names (given alike before or not)."""
        number = self.base + len(self.log) + 1
        given: dict[etree._Element, str] = {}
        named: list[tuple[str, str, etree._Element]] = []

        def fresh(path: str, value: str, elements: list[etree._Element]) -> list[etree._Element]:
            named.extend(("set", path, el) for el in elements)
            new = [el for el in elements if el not in self.supplied and el not in given]
            for el in elements:
                earlier = self.supplied.get(el) or ((given[el], number) if el in given else None)
                if earlier is not None and (earlier[0] != value or new):
                    self._conflict(path, el, value, earlier)
            given.update((el, value) for el in new)
            return new

        checked = check_round(self.ws, Round(dict(values), tuple(release)), fresh=fresh, live=True)
        return checked, given, named

    def _conflict(self, path: str, el: etree._Element, value: str, earlier: tuple[str, int]) -> None:
        ctx = self.ws.ctx
        where = ctx.prefixes.path_of(el)
        by = "this event" if earlier[1] > self.base + len(self.log) else f"event {earlier[1]}"
        if earlier[0] == value:
            why = f"{where} already has this value (from {by}), and the path names other properties too; name those alone"
        else:
            why = f"{where} already has the value {earlier[0]!r}, supplied by {by}; a lazy property takes one value"
        raise DeployValueError(f"set {path!r}: {why}", code="SET_CONFLICT", url=ctx.docs[0].url, path=where)

    def replacing(self, comp: int, values: Mapping[str, str]) -> dict[etree._Element, str]:
        """The properties of changed component ``comp``'s own lazy values that
        its deployed event's ``values`` give another value than they have,
        with their new values: deploying it again, it supplies them anew."""
        replacing: dict[etree._Element, str] = {}
        for path, value in values.items():
            try:
                elements = select_path(self.ws, path, "set")
            except DeployValueError:
                continue  # refused as any event's value is, by the event
            for el in elements:
                supplied = self.supplied.get(el)
                if self.owners.owner(el) == comp and supplied is not None and supplied[0] != value:
                    replacing[el] = value
        return replacing

    def _carried(
        self, fresh: DeploymentState, pairs: Counterparts, replacing: Mapping[etree._Element, str]
    ) -> tuple[tuple[dict[str, str], list[str]], tuple[list[str | None], list[str | None]]]:
        """The values supplied so far (those of ``replacing`` with their new values) and the
        references released, each by the path of its property's pair in ``fresh`` (the new
        documents), given to ``fresh`` as one round, and those paths (in the order of ``supplied``,
        then of ``released``); a value whose property has no pair is dropped, one that no longer
        fits refuses the update (the round's error, saying so)."""
        prefixes = fresh.ws.ctx.prefixes
        given = {el: value for el, (value, _) in self.supplied.items()}
        given.update(replacing)
        paths = carried_paths(given, pairs, prefixes)
        values = {path: value for path, value in zip(paths, given.values()) if path is not None and _selects(fresh.ws, path, "set")}
        released = carried_paths(self.released, pairs, prefixes)
        release = [path for path in released if path is not None and _selects(fresh.ws, path, "release")]
        try:
            fresh._give(values, release, None, (), False)
        except CdlError as exc:
            _not_fitting(exc)
            raise
        return (values, release), (paths, released)

    def _carry(self, event: dict[str, Any]) -> list[int]:
        """Apply an update event to a deployment of its documents that has
        seen no event (replay: the journal's, or a rebuild's)."""
        self.base = event["seq"] - 1
        self._give(event["values"], event["release"], None, (), False)
        self._carry_states(event)
        self.log.append(logged(event))
        return []

    def _carry_states(self, event: dict[str, Any], find: Callable[[str], int] | None = None) -> None:
        """The states an update event carries over, put on this deployment's
        machine and removals (``find``: each component's number by its path,
        when known; else :meth:`component`)."""
        machine, find = self.machine, find or self.component
        for path, lines in event["changed"].items():
            machine.changed[find(path)] = tuple(lines)
        for path in event["deployed"]:
            machine.deploy(find(path))
        for path, reason in event["failed"].items():
            machine.fail(find(path), reason)
        held = self.owners.held
        for path, later in event["later_values"].items():
            found = [el for value in later for el in select_path(self.ws, value, "later") if el in held]
            if found:
                self.later[find(path)] = tuple(found)
        removing: dict[str, list[str]] = event["removing"]
        position = {path: i for i, path in enumerate(removing)}
        self.removals.add(list(removing), {i: [position[w] for w in waits if w in position] for i, waits in enumerate(removing.values())})

    def _take_down(self, event: dict[str, Any]) -> list[int]:
        """Apply a teardown event: every component of the plan begins to be removed."""
        if self.teardown is not None:
            return []  # already: nothing to record
        base = len(self.removals)
        self.removals.add([self.paths[c] for c in range(1, len(self.facts.parent))], removal_waits(self.machine))
        self.teardown = base
        self.log.append(logged(event))
        return self.removals.removable()

    def _remove(self, event: dict[str, Any]) -> list[int]:
        """Apply a removed event: the removals it makes ready."""
        i = self.removal(event["path"])
        removals = self.removals
        if not removals.ready(i):
            path = removals.paths[i]
            why = "it is removed already" if removals.removed[i] else "removed after " + ", ".join(removals.left_waiting(i))
            message = f"removed {path}: it is not ready to be removed: {why}"
            raise DeploymentError(message, code="NOT_READY", url=self.loaded.url, path=path)
        self.log.append(logged(event))
        return removals.remove(i)

    def named(self, numbers: Sequence[int]) -> list[str]:
        return [self.paths[c] for c in numbers]

    def component(self, path: str) -> int:
        """The component ``path`` names (a leading ``/`` optional); COMPONENT_NOT_FOUND otherwise."""
        found = self.paths.find(path) if isinstance(path, str) and path.strip("/") else ("", [])
        if isinstance(found, int):
            return found
        step, there = found
        raise DeploymentError(
            f"{path!r} is no component of the plan: no {step!r} there{did_you_mean(step, there)}",
            code="COMPONENT_NOT_FOUND",
            url=self.loaded.url,
            path=str(path),
        )

    def _require(self, comp: int, state: str, verb: str) -> None:
        now = self.state_of(comp)
        if now == state or (state == "ready" and now == "changed" and comp in self.machine.ready):
            return
        status = self.component_status(comp)
        why = status.why()
        path = self.paths[comp]
        if verb == "retry":
            raise DeploymentError(f"retry {path}: it has not failed, it is {now}", code="NOT_FAILED", url=self.loaded.url, path=path)
        hint = "; retry it first" if now == "failed" else ""
        raise DeploymentError(
            f"{verb} {path}: it is not ready, it is {now}" + (f": {why}" if why else "") + hint,
            code="NOT_READY",
            url=self.loaded.url,
            path=path,
        )

    def counts(self) -> dict[str, int]:
        state = self.state_of
        removals = self.removals
        leaving = (removals.state(i) for i in range(len(removals)) if not self.in_teardown(i))
        return counted_states([*(state(c) for c in range(1, len(self.facts.parent))), *leaving])

    def state_of(self, comp: int) -> ComponentState:
        """Component ``comp``'s state: the machine's, or once the system is
        being taken down, its removal's."""
        if self.teardown is not None:
            return self.removals.state(self.teardown + comp - 1)  # type: ignore[return-value]
        return self.machine.state(comp)

    def component_status(self, comp: int) -> ComponentStatus:
        machine, facts, path = self.machine, self.facts, self.paths.__getitem__
        state = self.state_of(comp)
        planned = facts.planned(comp)
        mine = (planned.supplies, planned.releases)
        if self.teardown is not None:
            left = self.removals.left_waiting(self.teardown + comp - 1)
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

    def removal_status(self, i: int) -> ComponentStatus:
        """The status of a component an update left to remove."""
        removals = self.removals
        return ComponentStatus(removals.paths[i], removals.state(i), removal_waits=removals.left_waiting(i))  # type: ignore[arg-type]

    def in_teardown(self, i: int) -> bool:
        """Whether removal ``i`` is one of the plan's components, taken down by teardown."""
        return self.teardown is not None and i >= self.teardown

    def removal_names(self, numbers: Sequence[int]) -> list[str]:
        return [self.removals.paths[i] for i in numbers]

    def removal(self, path: str) -> int:
        """The component being removed at ``path``: NOT_REMOVING for one of the
        plan's that is not, COMPONENT_NOT_FOUND for no component."""
        found = self.removals.find(path) if isinstance(path, str) else None
        if found is not None:
            return found
        comp = self.component(path)
        raise DeploymentError(
            f"removed {self.paths[comp]}: it is not being removed, it is {self.state_of(comp)};"
            " teardown (cdl deploy teardown) begins taking the system down",
            code="NOT_REMOVING",
            url=self.loaded.url,
            path=self.paths[comp],
        )

    def refuse_torn_down(self, verb: str) -> None:
        if self.teardown is not None:
            raise DeploymentError(
                f"{verb}: the deployment is being taken down (teardown): it deploys nothing more; report what is"
                " removed, and begin a new journal to deploy the system again",
                code="TORN_DOWN",
                url=self.loaded.url,
            )

    def _later_paths(self, comp: int, planned: PlannedComponent) -> tuple[str, ...]:
        """The plan's paths of the lazy values ``comp``'s deployment said come later that still have none."""
        later = self.later.get(comp)
        if not later:
            return ()
        written = dict(zip(self.owners.items.get(comp, ()), planned.supplies + planned.releases))
        items = (self.owners.held[el][0] for el in later)
        return tuple(written[item] for item in items if self.resolver.is_pending(item))

    def _owner_path(self, value: etree._Element) -> str | None:
        owner = self.facts.owner.get(value)
        return None if owner is None else self.paths[owner]

    def _after(self, comp: int) -> tuple[str, ...]:
        """The siblings ``comp`` comes after in the plan made again now: those
        not deployed with a lazy value it waits for still without one."""
        valued, done = self.machine.valued, self.machine.done
        return tuple(
            self.paths[sibling]
            for sibling, values in self.facts.after.get(comp, {}).items()
            if done[sibling] != "deployed" and any(v not in valued for v in values)
        )

    def status(self, path: str | None = None) -> DeploymentStatus:
        """The state of every component (or only of ``path``), and why: the
        plan's, then those an update left to remove (``removing``, ``removed``)."""
        if path is not None:
            found = self.removals.find(path) if isinstance(path, str) else None
            if found is not None and not self.in_teardown(found):
                return DeploymentStatus([self.removal_status(found)], self.plan)
            return DeploymentStatus([self.component_status(self.component(path))], self.plan)
        statuses = [self.component_status(c) for c in range(1, len(self.facts.parent))]
        statuses += [self.removal_status(i) for i in range(len(self.removals)) if not self.in_teardown(i)]
        return DeploymentStatus(statuses, self.plan)

    def moved(
        self, loaded: Loaded, header: dict[str, Any], replacing: Mapping[etree._Element, str]
    ) -> tuple[DeploymentState, dict[str, Any]]:
        """The state of ``loaded``'s documents (named by journal ``header``)
        with everything this one carries over (the values supplied so far,
        those of ``replacing`` given their new values), and the update event
        that records it. Its lists still in their static form are moved
        into the new version's trees (``engine.phases.deployed_earlier``),
        and put back when the move is refused before the versions are
        compared; then its trees are taken apart to compare them: whether
        the move holds or not, it is not used again (``spoiled``).

        All of it runs with the cyclic collector paused, as each phase does
        (``cyclic_gc_paused``): the new state lives on, and a full collection
        over both versions' objects came in the middle of each update."""
        with cyclic_gc_paused():
            read = None if self.ws.reads is None else self.ws.reads.by_name(self.ws.lists)
            places = list_places(self.ws)
            try:
                fresh, kept = _fresh(self, loaded, read, places)
                fresh.base = self.base + len(self.log)
                # Everything is paired (planning.pairing, the rule of cdl diff)
                # before fresh is given a value: its kinds are its plan's.
                elements, new_elements = self.facts.elements, fresh.facts.elements
                found = pair_components((elements, self.facts.children), (new_elements, fresh.facts.children))
                paired = {el: None if n is None else new_elements[n] for el, n in zip(elements[1:], found[1:])}
                components = (set(elements), set(new_elements))
                pairs = Counterparts(components, paired, _tops(fresh), set(self.supplied).union(self.released))
                later = _later_carried(self, fresh, pairs)
                carried, pair_paths = self._carried(fresh, pairs, replacing)
                compared = _compared(self, fresh, replacing, carried, pair_paths, read)
            except BaseException:
                restore_lists(places, ())  # refused: what fresh took over goes back
                raise
            self.spoiled = True  # from here on: its trees are taken apart
            compared = (_leaving_out(compared[0], kept, fresh.loaded), compared[1])
            record, named = _update_record(self, fresh, header, carried, (found, later), compared)
            fresh._carry_states(record, named.__getitem__)
            fresh.log.append(logged(record))
        return fresh, record


def _fresh(
    running: DeploymentState,
    loaded: Loaded,
    read: Mapping[str, set[str]] | None,
    places: list[tuple[etree._Element, list[etree._Element]]],
) -> tuple[DeploymentState, set[str]]:
    """The state of ``loaded``'s documents (no event applied), resolved
    taking over what it can of ``running``'s lists (:func:`_taken_over`,
    moved out of its trees, whose lists were where ``places`` says), and
    the names of the lists it took over; each list it did not is back in
    ``running``'s trees (it resolved whole after all). Should it fail, the
    caller puts every list back."""
    fresh = DeploymentState(loaded, _taken_over(running, read))
    taken = set(fresh.ws.lists.values())
    restore_lists(places, taken)
    return fresh, {name for name, el in running.ws.lists.items() if el in taken}


def _leaving_out(
    compared: Callable[[etree._Element], bool] | None, kept: set[str], loaded: Loaded
) -> Callable[[etree._Element], bool] | None:
    """Which top level lists an update compares: those of ``compared``
    (``engine.diff.compared_lists``; None: every one) but the lists of
    ``kept``, which the new version took over from the running one: the
    very same elements in both versions, equal."""
    if not kept:
        return compared
    target_ns = loaded.docs[0].target_ns
    return lambda top: list_name(top, target_ns) not in kept and (compared is None or compared(top))


def _taken_over(running: DeploymentState, read: Mapping[str, set[str]] | None) -> Earlier | None:
    """What a resolution of the next version of the documents may take
    over from ``running`` (``engine.phases.deployed_earlier``): the lists
    that held nothing pending at open and were given no value or release
    since. ``read``: what each list read (``ListReads.by_name``), None when not recorded."""
    if read is None:
        return None
    changed = [*running.opened_pending, *running.supplied, *running.released]
    return deployed_earlier(running.loaded, (running.ws, running.resolver, running.left), changed, read)


def _update_record(
    running: DeploymentState,
    fresh: DeploymentState,
    header: dict[str, Any],
    carried: tuple[dict[str, str], list[str]],
    paired: tuple[list[int | None], dict[int, list[str]]],
    compared: tuple[Callable[[etree._Element], bool] | None, list[WrittenChange] | None] = (None, None),
) -> tuple[dict[str, Any], dict[str, int]]:
    """The update event moving ``running`` to ``fresh``'s documents (``fresh`` given the
    ``carried`` values and releases; ``paired``: each component's pair in ``fresh``,
    ``pair_components``, and the values still to come of each, by their pairs' paths), the two
    versions compared (``running``'s trees taken apart for it; the lists of ``compared``,
    :func:`_compared`), and the number in ``fresh`` of each component path it names."""
    with cyclic_gc_paused():
        old = build_output(
            running.ws,
            system_only=True,
            consume=True,
            unresolved=left_unresolved(running.resolver, running.left),
            facts=running.loaded.output_facts,
        )
        # fresh's trees live on: an output of a copy (the one way an output
        # both leaves them whole and takes the known path), of the lists compared.
        ws, left = copy_main((fresh.ws, fresh.resolver, left_unresolved(fresh.resolver, fresh.left)), compared[0])
        new = build_output(ws, system_only=True, consume=True, unresolved=left, facts=fresh.loaded.output_facts)
    diff = diff_systems((running.loaded, fresh.loaded), (running.rounds, fresh.rounds), (old.find(T_SYSTEM), new.find(T_SYSTEM)), *compared)
    del old, new
    found, later = paired
    record = update_record(header, *carried, (running.paths, running.machine, later, running.removals), (found, fresh.paths), diff)
    record["seq"] = fresh.base + 1
    return record, {fresh.paths[number]: number for number in found if number}


def _compared(
    running: DeploymentState,
    fresh: DeploymentState,
    replacing: Mapping[etree._Element, str],
    carried: tuple[dict[str, str], list[str]],
    pair_paths: tuple[list[str | None], list[str | None]],
    read: Mapping[str, set[str]] | None,
) -> tuple[Callable[[etree._Element], bool] | None, list[WrittenChange] | None]:
    """Which lists an update compares (``engine.diff.compared_lists``), and
    the documents' written changes when they were needed for it: the lists
    written differently, those of ``running`` whose deploy-time values do not
    carry over to the same place of ``fresh`` alike (``carried``: the values
    and releases given to ``fresh``, by the paths of their pairs, and those
    paths, ``pair_paths``, as ``_carried`` made them; a value given anew,
    ``replacing``, or one not carried), and those that read one of them, by
    either version's reads (``read``: ``running``'s, by name). Every list
    (None) without the reads."""
    new_reads = fresh.ws.reads
    if read is None or new_reads is None:
        return None, None
    versions = (running.loaded, fresh.loaded)
    prefixes = (running.loaded.prefixes(), fresh.loaded.prefixes())
    changes = written_changes(running.loaded.docs, fresh.loaded.docs, prefixes, fresh.loaded.options.limits)
    changed = changed_names(versions, changes)
    if changed is None:
        return None, changes
    values, release = carried
    supplied_pairs, released_pairs = pair_paths
    old_prefixes = running.ws.ctx.prefixes
    supplied, released, carried_release = list(running.supplied), list(running.released), set(release)
    moved = [
        el
        for el, path, pair in zip(supplied, value_paths(supplied, old_prefixes), supplied_pairs)
        if el in replacing or pair != path or values.get(path) != running.supplied[el][0]
    ]
    moved += [
        el
        for el, path, pair in zip(released, value_paths(released, old_prefixes), released_pairs)
        if pair != path or path not in carried_release
    ]
    names: dict[etree._Element | None, str] = {el: name for name, el in running.ws.lists.items()}
    changed.update(name for el in moved if (name := names.get(top_level_of(el))) is not None)
    by_name = [read, new_reads.by_name(fresh.ws.lists)]
    return compared_lists(fresh.loaded, reaching(changed, by_name)), changes


def _not_fitting(exc: CdlError) -> None:
    """Say in ``exc`` (an error of the round of values an update carries) that those values do not fit."""
    for error in exc.errors:
        error.message = (
            f"update: a value supplied so far does not fit the new documents: {error.message}; the running"
            " deployment's values carry over: change the new documents, or begin a new journal"
        )
        error.args = (error.message,)
    exc.message = exc.errors[0].message  # a group says its first error's message
    exc.args = (exc.message,)


def _tops(state: DeploymentState) -> dict[Any, etree._Element]:
    """The top level lists of ``state``'s documents by name (names are unique among them)."""
    return {el.tag: el for el in state.ws.lists.values()}


def _later_carried(old: DeploymentState, fresh: DeploymentState, pairs: Counterparts) -> dict[int, list[str]]:
    """The values still to come of each of ``old``'s components deployed
    with ``later`` (by number), each by the path of its property's pair in
    ``fresh``."""
    is_pending, held, prefixes = old.resolver.is_pending, old.owners.held, fresh.ws.ctx.prefixes
    later: dict[int, list[str]] = {}
    for comp, elements in old.later.items():
        paths = carried_paths([el for el in elements if is_pending(held[el][0])], pairs, prefixes)
        later[comp] = [path for path in paths if path is not None]
    return later


#: The events that carry over or take down, each applied by its own method.
_CARRYING = {"update": DeploymentState._carry, "teardown": DeploymentState._take_down, "removed": DeploymentState._remove}

#: The round of an event that gives no value and releases nothing.
_NO_ROUND = CheckedRound((), ())


def _selects(ws: Workspace, path: str, verb: str) -> bool:
    """Whether ``path`` names a property of ``ws`` (a carried value whose property is gone does not carry over)."""
    try:
        select_path(ws, path, verb)
    except DeployValueError as exc:
        if exc.code == "SET_NOT_FOUND":
            return False
        raise
    return True


#: An event as the log keeps it: (kind, the pairs of its other fields), all
#: tuples and strings. A live deployment logs one per event for as long as
#: it lasts; dicts and lists would each be objects the cyclic collector
#: tracks, and its full collections, over the whole live trees, would come
#: the more often the longer the deployment ran.
Logged = tuple[str, tuple[tuple[str, Any], ...]]


def logged(event: Mapping[str, Any]) -> Logged:
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


def event_of(entry: Logged) -> dict[str, Any]:
    """The event ``entry`` logged, as :meth:`DeploymentState.apply` takes it."""
    kind, fields = entry
    event: dict[str, Any] = {"event": kind}
    for key, value in fields:
        event[key] = dict(value) if key == "values" else list(value) if key == "release" else value
    return event
