"""What a deployment carries over when it moves to new documents (issue
32; docs/semantics.md, "Deployment sessions", "Update").

Entry points: :func:`value_paths` (a property's own path, as ``--set``
takes it), :func:`carried_paths` (the deploy-time values supplied so far,
each by the path of its property's pair in the new version), :func:`update_record` (the journal's ``update`` event: what
carries over, from the running version's states and the diff of the two
versions) and :func:`change_lines` (what changed in a component, and why,
as ``cdl diff`` says it). ``engine.deployment`` composes them: it resolves
the new documents with the values, compares the two versions
(``engine.diff``), makes the record, and applies it to the new version's
machine; replaying the journal applies the same record.

Components and properties are paired across the versions by the one rule
``cdl diff`` pairs them by (``planning.pairing``: by name and kind, the
k-th component of a name with the k-th, the k-th property with the k-th),
and the record names each by its path in the new version, so that a
replay finds it there without pairing again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lxml import etree

from ..model.naming import Prefixes
from ..planning.diff import ComponentChange, Diff
from ..planning.pairing import Counterparts
from ..planning.paths import ComponentPaths
from .machine import Machine
from .removals import Removals


def value_paths(elements: Iterable[etree._Element], prefixes: Prefixes) -> list[str]:
    """Each property's own path (``prefixes``: its version's), as ``--set``
    takes it (``LIST/child[k]/...``, whole however deep: it is read back, not
    shown)."""
    steps = prefixes.steps()
    return ["/".join(prefixes.steps_of(el, steps)) for el in elements]


def carried_paths(elements: Iterable[etree._Element], pairs: Counterparts, prefixes: Prefixes) -> list[str | None]:
    """The :func:`value_paths` in the new version (``prefixes``: its) of the
    pair of each of ``elements`` (properties of the running version); None
    for one without a pair."""
    found = [pairs(el) for el in elements]
    paths = iter(value_paths([pair for pair in found if pair is not None], prefixes))
    return [None if pair is None else next(paths) for pair in found]


def change_lines(diff: Diff, change: ComponentChange) -> tuple[str, ...]:
    """What changed in one component and why, one line each: each value
    (its path, old and new as ``cdl diff`` writes them, the numbers of its
    causes), then each of its causes (where each version writes it)."""
    lines = [f"{v.path} {_values(v.old, v.new)} [{', '.join(map(str, v.causes))}]" for v in change.values]
    causes = {c.number: c for c in diff.causes}
    for number in change.causes:
        cause = causes[number]
        sides = [f"{w.url}:{w.line}" if w.line is not None else w.url for w in (cause.old, cause.new) if w is not None]
        path = (cause.new or cause.old).path  # type: ignore[union-attr]
        lines.append(f"[{number}] {cause.change} {path} ({' -> '.join(sides)})")
    return tuple(lines)


def _values(old: object, new: object) -> str:
    """``OLD -> NEW`` as JSON; two values that differ only in their text, by their texts."""
    if isinstance(old, dict) and isinstance(new, dict) and {**old, "#text": None} == {**new, "#text": None}:
        old, new = old.get("#text", ""), new.get("#text", "")
    return f"{_json(old)} -> {_json(new)}"


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _key(path: str) -> str:
    """A component path as ``cdl diff`` writes it: without the ``#k`` of a shortened path."""
    at = path.rfind("#")
    return path[:at] if at > 0 and "...(" in path else path


def update_record(
    header: Mapping[str, Any],
    values: Mapping[str, str],
    release: Sequence[str],
    old: tuple[ComponentPaths, Machine, Mapping[int, Sequence[str]], Removals],
    new: tuple[Sequence[int | None], ComponentPaths],
    diff: Diff,
) -> dict[str, Any]:
    """The ``update`` event moving a deployment to the documents of
    ``header``: ``values`` and ``release`` (the values that carry over, as
    paths of the new documents), and from the running version (``old``: its
    components' paths, machine, the new version's paths of each deployed
    component's values still to come, and its removals; ``new``: each
    component's pair in the new version, ``planning.pairing.pair_components``,
    and the new version's paths) the state of each component, by its pair's path:
    deployed or failed when its configuration is the same in ``diff``
    (``changed`` kept with what changed before), ``changed`` when it was
    deployed and its configuration changed (with what changed and why),
    and, for each component without a pair (and each one an earlier update
    left removing), ``removing``, by its own path, with the components
    leaving with it that wait on it."""
    paths, machine, later, removals = old
    found, new_paths = new
    changes = {_key(c.path): c for c in diff.components}
    deployed: list[str] = []
    failed: dict[str, str] = {}
    later_values: dict[str, list[str]] = {}
    changed: dict[str, list[str]] = {}
    leaving: list[int] = []
    for comp in range(1, len(paths)):
        pair = found[comp]
        if pair is None:
            leaving.append(comp)
            continue
        state = machine.state(comp)
        was_changed = comp in machine.changed
        if state not in ("deployed", "failed") and not was_changed:
            continue  # deployed afresh, by the usual rules
        before = machine.changed.get(comp, ())
        path = new_paths[pair]
        change = changes.get(_key(path))
        if change is not None and change.change == "changed":
            if state == "deployed" or was_changed:
                changed[path] = [*before, *change_lines(diff, change)]
            continue  # otherwise deployed afresh, by the usual rules
        if before:
            changed[path] = list(before)
        if state == "deployed":
            deployed.append(path)
            if later.get(comp):
                later_values[path] = list(later[comp])
        elif state == "failed":
            failed[path] = machine.failed[comp]
    removing = dict(removals.leaving())
    removing.update(_leaving(paths, machine, leaving))
    return {
        "event": "update",
        "documents": list(header["documents"]),
        "catalogs": list(header["catalogs"]),
        "values": dict(values),
        "release": list(release),
        "deployed": deployed,
        "failed": failed,
        "later_values": later_values,
        "changed": changed,
        "removing": removing,
    }


def waiting_on(machine: Machine, comp: int, later: Mapping[int, Sequence[int]]) -> list[int]:
    """The components that wait on ``comp`` while it runs, so go before it
    when the system is taken down: its parent, the siblings the plan puts
    after it (``later``: :func:`later_siblings`), and the components that
    wait for one of its lazy values: the plan's teardown order
    (``Plan.teardown``), read as the deployment reads the plan."""
    waiting: dict[int, None] = {}
    parent = machine.parent[comp]
    if parent > 0:
        waiting[parent] = None
    waiting.update(dict.fromkeys(later.get(comp, ())))
    for value in machine.owned.get(comp, ()):
        waiting.update((w, None) for w in machine.waiting[value] if w != comp)
    return list(waiting)


def later_siblings(machine: Machine) -> dict[int, list[int]]:
    """For each component, the siblings the plan puts after it (the plan's ``after``, the other way round)."""
    later: dict[int, list[int]] = {}
    for comp, before in machine.after.items():
        for sibling in before:
            later.setdefault(sibling, []).append(comp)
    return later


def _leaving(paths: ComponentPaths, machine: Machine, leaving: Sequence[int]) -> dict[str, list[str]]:
    """The components ``leaving`` (numbers of the running version), each with
    those among them that wait on it (:func:`waiting_on`)."""
    among = set(leaving)
    later = later_siblings(machine)
    return {paths[comp]: [paths[w] for w in waiting_on(machine, comp, later) if w in among] for comp in leaving}


def removal_waits(machine: Machine) -> dict[int, list[int]]:
    """For taking the whole system down: for each component (by number,
    from 1, as a position from 0, as ``Removals.add`` takes it) those that
    wait on it (:func:`waiting_on`)."""
    later = later_siblings(machine)
    waits = ((comp, waiting_on(machine, comp, later)) for comp in range(1, len(machine.parent)))
    return {comp - 1: [w - 1 for w in waiting] for comp, waiting in waits if waiting}
