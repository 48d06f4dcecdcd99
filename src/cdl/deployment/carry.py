"""What a deployment carries over when it moves to new documents (issue
32; docs/semantics.md, "Deployment sessions", "Update").

Entry points: :func:`value_paths` (the deploy-time values supplied so far,
each property by its own path), :func:`update_record` (the journal's
``update`` event: what carries over, from the running version's states and
the diff of the two versions) and :func:`change_lines` (what changed in a
component, and why, as ``cdl diff`` says it). ``engine.deployment`` composes
them: it resolves the new documents with the values, compares the two
versions (``engine.diff``), makes the record, and applies it to the new
version's machine; replaying the journal applies the same record.

A component is matched across the versions by its path (the one rule of
``model.naming``, ``[k]`` among same-named siblings), as ``cdl diff`` pairs
them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lxml import etree

from ..model.naming import Prefixes
from ..planning.diff import ComponentChange, Diff
from ..planning.paths import ComponentPaths
from .machine import Machine
from .removals import Removals


def value_paths(elements: Iterable[etree._Element], prefixes: Prefixes) -> list[str]:
    """Each property's own path, as ``--set`` takes it (``LIST/child[k]/...``,
    whole however deep: it is read back, not shown)."""
    steps = prefixes.steps()
    return ["/".join(prefixes.steps_of(el, steps)) for el in elements]


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


def matched(paths: ComponentPaths, parent: Sequence[int], new_paths: ComponentPaths) -> tuple[list[str], list[int | None]]:
    """Each component of the running version (``paths``, ``parent``: each
    one's parent, by number) with its path, and the component of the new
    version (``new_paths``) with that path, or None: found step by step,
    each among the children of its parent's match, as
    :meth:`ComponentPaths.find` reads a path (a parent's number is below its
    children's). Index 0 is the system."""
    names = [paths[comp] for comp in range(len(paths))]
    found: list[int | None] = [0] * len(paths)
    for comp in range(1, len(paths)):
        up = found[parent[comp]]
        found[comp] = None if up is None else new_paths.find_child(up, paths.step(comp))
    return names, found


def update_record(
    header: Mapping[str, Any],
    values: Mapping[str, str],
    release: Sequence[str],
    old: tuple[Sequence[str], Machine, Mapping[int, Sequence[str]], Removals],
    found: Sequence[int | None],
    diff: Diff,
) -> dict[str, Any]:
    """The ``update`` event moving a deployment to the documents of
    ``header``: ``values`` and ``release`` (the values that carry over, as
    paths of the new documents), and from the running version (``old``: its
    components' paths, machine, the paths of each deployed component's values
    still to come, and its removals; ``found``: the new version's component
    with each one's path, :func:`matched`) the state of each component, by path: deployed
    or failed when its configuration is the same in ``diff`` (``changed``
    kept with what changed before), ``changed`` when it was deployed and its
    configuration changed (with what changed and why), and, for each
    component the new documents no longer have (and each one an earlier
    update left removing), ``removing``, with the components leaving with it
    that wait on it."""
    paths, machine, later, removals = old
    changes = {_key(c.path): c for c in diff.components}
    deployed: list[str] = []
    failed: dict[str, str] = {}
    later_values: dict[str, list[str]] = {}
    changed: dict[str, list[str]] = {}
    leaving: list[int] = []
    for comp in range(1, len(paths)):
        path = paths[comp]
        if found[comp] is None:
            leaving.append(comp)
            continue
        state = machine.state(comp)
        before = machine.changed.get(comp, ())
        change = changes.get(_key(path))
        if change is not None and change.change == "changed":
            if state in ("deployed", "changed") or comp in machine.changed:
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


def _leaving(paths: Sequence[str], machine: Machine, leaving: Sequence[int]) -> dict[str, list[str]]:
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
