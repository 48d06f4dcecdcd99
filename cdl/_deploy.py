"""Deployment sessions: the plan as a live state machine (issue 24).

Entry point: :meth:`cdl.Document.deploy`, which makes a :class:`Deployment`.
A Deployment holds the resolution of the document with every deploy-time
value supplied so far and moves each component of the plan (``cdl/_plan.py``,
spec sections 4 and 7.5) through the states waiting, ready, deployed, failed
and blocked. The rules are in docs/semantics.md, "Deployment sessions".

This first version works out the state after each event from the plan of
the resolution made again with every round so far.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ._laziness import Round, select_for_round
from ._plan import Plan, PlannedComponent
from .errors import DeploymentError, DeployValueError

if TYPE_CHECKING:
    from ._engine import Document, Resolution

__all__ = ["ComponentStatus", "Deployment", "DeploymentStatus"]

#: The states, in the order status counts them.
STATES = ("waiting", "ready", "deployed", "failed", "blocked")

_COLOURS = {
    "waiting": "#e0e0e0",
    "ready": "#fff3b0",
    "deployed": "#b7e4c7",
    "failed": "#f4a6a6",
    "blocked": "#f9d0a0",
}


@dataclass(frozen=True)
class ComponentStatus:
    """Where one component of a deployment stands, and why.

    Attributes:
        path: the component, written as ``cdl plan`` writes it.
        state: 'waiting', 'ready', 'deployed', 'failed' or 'blocked'.
        waits_for: the lazy values it still waits for, each with the
            component that supplies it (None: none of the system's; give it
            with ``supply``).
        children: its child components not deployed yet.
        after: the siblings it comes after that are not deployed yet.
        upstream: for a blocked component, each failed component it waits
            for (directly or through others) with that failure's reason.
        reason: for a failed component, the reason given.
    """

    path: str
    state: str
    waits_for: tuple[tuple[str, str | None], ...] = ()
    children: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    upstream: tuple[tuple[str, str], ...] = ()
    reason: str | None = None

    def to_data(self) -> dict[str, Any]:
        """Plain data: the attributes, ``waits_for`` and ``upstream`` as lists of dicts."""
        return {
            "path": self.path,
            "state": self.state,
            "waits_for": [{"value": value, "supplier": supplier} for value, supplier in self.waits_for],
            "children": list(self.children),
            "after": list(self.after),
            "upstream": [{"path": path, "reason": reason} for path, reason in self.upstream],
            "reason": self.reason,
        }

    def why(self) -> str:
        """Why it is in its state, in one line (empty for ready and deployed)."""
        parts = []
        if self.reason is not None:
            parts.append(f"reason: {self.reason}")
        if self.upstream:
            parts.append("upstream failed: " + ", ".join(f"{p} ({r})" for p, r in self.upstream))
        if self.children:
            parts.append("children not deployed: " + ", ".join(self.children))
        if self.after:
            parts.append("after " + ", ".join(self.after))
        if self.waits_for:
            parts.append(
                "waits for "
                + ", ".join(f"{v} (from {s})" if s is not None else f"{v} (supply it)" for v, s in self.waits_for)
            )
        return "; ".join(parts)


class DeploymentStatus:
    """The status of every component of a deployment (or of one), with the plan it follows."""

    def __init__(self, components: Sequence[ComponentStatus], plan: Plan) -> None:
        #: One entry per component, in document order.
        self.components: tuple[ComponentStatus, ...] = tuple(components)
        self._plan = plan

    def __repr__(self) -> str:
        counts = ", ".join(f"{n} {state}" for state, n in self.counts().items() if n)
        return f"<cdl.DeploymentStatus ({counts or 'no components'})>"

    def counts(self) -> dict[str, int]:
        """How many components are in each state (every state, in order)."""
        counts = dict.fromkeys(STATES, 0)
        for comp in self.components:
            counts[comp.state] += 1
        return counts

    def to_data(self) -> dict[str, Any]:
        """``{"counts": {state: n}, "components": [ComponentStatus.to_data(), ...]}``."""
        return {"counts": self.counts(), "components": [c.to_data() for c in self.components]}

    def to_text(self) -> str:
        """One line per component: ``state  path``, then why, when it is not plain."""
        lines = []
        for comp in self.components:
            why = comp.why()
            lines.append(f"{comp.state:<8} {comp.path}" + (f"  ({why})" if why else ""))
        return "".join(line + "\n" for line in lines)

    def to_dot(self) -> str:
        """The plan's Graphviz picture (:meth:`cdl.Plan.to_dot`), each component filled with its state's colour."""
        lines = [f'  c{i} [style="{style},filled", fillcolor="{colour}"];' for i, style, colour in self._coloured()]
        dot = self._plan.to_dot()
        end = dot.rstrip().rfind("}")
        return dot[:end] + "".join(line + "\n" for line in lines) + "}\n"

    def to_mermaid(self) -> str:
        """The plan's Mermaid picture (:meth:`cdl.Plan.to_mermaid`), each component filled with its state's colour."""
        lines = [f"  style c{i} fill:{colour}" for i, _, colour in self._coloured()]
        return self._plan.to_mermaid() + "".join(line + "\n" for line in lines)

    def _coloured(self) -> list[tuple[int, str, str]]:
        """(picture id, DOT style, colour) of each component shown."""
        from ._plan_render import _numbered

        ids = _numbered(self._plan)
        clusters = {c.path for c in self._plan.components() if c.waves}
        return [
            (ids[c.path], "rounded,bold" if c.path in clusters else "solid", _COLOURS[c.state])
            for c in self.components
            if c.path in ids
        ]


class Deployment:
    """A deployment of a document's system in progress (see :meth:`cdl.Document.deploy`).

    Events (:meth:`deployed`, :meth:`supply`, :meth:`failed`, :meth:`retry`)
    are applied one at a time, whichever thread calls; a refused event raises
    :class:`cdl.CdlError` and changes nothing.
    """

    def __init__(self, document: Document, journal: Any = None) -> None:
        self._document = document
        self._lock = threading.RLock()
        self._journal = journal
        self._closed = False
        #: Events applied so far (the sequence number of the last).
        self._events = 0
        self._rounds: list[Round] = []
        #: Each lazy value supplied, by path: its value and the event that supplied it.
        self._supplied: dict[str, tuple[str, int]] = {}
        self._deployed: dict[str, int] = {}
        self._failed: dict[str, str] = {}
        from ._engine import Resolution

        self._resolution = Resolution(document, [])
        self._plan = self._resolution.plan()
        comps = list(self._plan.components())
        comps.sort(key=lambda c: c._index)
        #: Every component, in document order: the plan's at opening.
        self._order: list[str] = [c.path for c in comps]
        self._parent: dict[str, str | None] = {}
        self._children: dict[str, list[str]] = {path: [] for path in self._order}
        for comp in comps:
            for row in comp.waves:
                for child in row:
                    self._parent[child.path] = comp.path
                    self._children[comp.path].append(child.path)
        for wave in self._plan.waves:
            for top in wave:
                self._parent[top.path] = None
        for path in self._children:
            self._children[path].sort(key=self._order.index)
        self._view = _View(self._plan)

    # -- reading ----------------------------------------------------------------------

    def __repr__(self) -> str:
        counts = ", ".join(f"{n} {state}" for state, n in self.status().counts().items() if n)
        return f"<cdl.Deployment {self._document.url!r} ({counts or 'no components'})>"

    @property
    def document(self) -> Document:
        """The document being deployed."""
        return self._document

    @property
    def rounds(self) -> tuple[Round, ...]:
        """The deploy-time values so far, one round per event that carried
        values or releases, as :meth:`cdl.Document.resolve` accepts them."""
        with self._lock:
            return tuple(self._rounds)

    @property
    def plan(self) -> Plan:
        """The plan the deployment follows: the system's plan when it was opened."""
        return self._plan

    def resolution(self) -> Resolution:
        """The resolution with every deploy-time value so far: equal to
        ``document.resolve(rounds=self.rounds)``."""
        with self._lock:
            return self._document.resolve(rounds=self._rounds)

    def ready(self) -> list[str]:
        """The ready components, in document order."""
        with self._lock:
            return [path for path in self._order if self._state(path) == "ready"]

    def status(self, path: str | None = None) -> DeploymentStatus:
        """The state of every component (or only of ``path``) and why."""
        with self._lock:
            paths = self._order if path is None else [self._component(path)]
            return DeploymentStatus([self._status(p) for p in paths], self._plan)

    def configuration(self, path: str, format: str = "data") -> Any:
        """The resolved configuration of component ``path`` with every value
        supplied so far, as :meth:`cdl.Resolution.to_data` shapes it
        (``format="xml"``: the resolved document cut down to it, as bytes).
        What is still pending is shown as pending."""
        if format not in ("data", "xml"):
            raise ValueError(f"format must be 'data' or 'xml', not {format!r}")
        with self._lock:
            comp = self._component(path)
            resolution = self.resolution()
            if format == "xml":
                return resolution.to_bytes(system_only=True, select=[comp])
            return resolution.to_data(system_only=True, select=[comp])

    # -- events ---------------------------------------------------------------------

    def deployed(self, path: str, values: Mapping[str, str] | None = None, release: Sequence[str] = ()) -> list[str]:
        """Mark component ``path`` deployed, supplying ``values`` and releasing
        ``release`` in the same event; the components that became ready.
        A component that is not ready is refused (``NOT_READY``)."""
        with self._lock:
            comp = self._component(path)
            self._require_ready(comp, "deployed")
            return self._event(lambda: self._deployed.__setitem__(comp, self._events), values, release)

    def supply(self, values: Mapping[str, str] | None = None, release: Sequence[str] = ()) -> list[str]:
        """Deploy-time values outside a component's event; the components that became ready."""
        with self._lock:
            return self._event(None, values, release)

    def failed(self, path: str, reason: str) -> list[str]:
        """Mark ready component ``path`` failed; the components now blocked by it, transitively."""
        with self._lock:
            comp = self._component(path)
            self._require_ready(comp, "failed")
            before = set(self._blocked())
            self._events += 1
            self._failed[comp] = str(reason)
            after = self._blocked()
            return [p for p in self._order if p in after and p not in before]

    def retry(self, path: str) -> list[str]:
        """Take failed component ``path`` back (its blocked dependants with it); the components now ready."""
        with self._lock:
            comp = self._component(path)
            if comp not in self._failed:
                raise DeploymentError(
                    f"retry {comp}: it has not failed (it is {self._state(comp)})", code="NOT_FAILED", path=comp
                )
            before = set(self.ready())
            self._events += 1
            del self._failed[comp]
            return [p for p in self.ready() if p not in before]

    # -- closing ------------------------------------------------------------------------

    def close(self) -> None:
        """Release the journal (if any); the deployment can still be read."""
        with self._lock:
            self._closed = True

    def __enter__(self) -> Deployment:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    # -- inside -----------------------------------------------------------------------

    def _event(self, mark: Any, values: Mapping[str, str] | None, release: Sequence[str]) -> list[str]:
        before = set(self.ready())
        step, supplied = self._round(values or {}, release)
        resolution = self._resolution
        if step is not None:
            from ._engine import Resolution

            resolution = Resolution(self._document, [*self._rounds, step])
            plan = resolution.plan()
        self._events += 1
        if step is not None:
            self._rounds.append(step)
            self._resolution, self._view = resolution, _View(plan)
            for key, value in supplied.items():
                self._supplied[key] = (value, self._events)
        if mark is not None:
            mark()
        return [p for p in self.ready() if p not in before]

    def _round(self, values: Mapping[str, str], release: Sequence[str]) -> tuple[Round | None, dict[str, str]]:
        """The round an event's values make, without the values already
        supplied alike; SET_CONFLICT for one supplied otherwise."""
        ws = self._resolution._working()
        kept: dict[str, str] = {}
        supplied: dict[str, str] = {}
        for text, value in values.items():
            elements = select_for_round(ws, text, value)
            keys = [ws.ctx.prefixes.path_of(el) for el in elements]
            fresh = False
            for key in keys:
                earlier = self._supplied.get(key) or (
                    (supplied[key], self._events + 1) if key in supplied else None
                )
                if earlier is None:
                    fresh = True
                elif earlier[0] != value:
                    raise DeployValueError(
                        f"set {text!r}: {key} already has the value {earlier[0]!r} (supplied by event {earlier[1]}); "
                        f"a deployment supplies each lazy value once",
                        code="SET_CONFLICT",
                        url=ws.ctx.docs[0].url,
                        path=key,
                    )
            if fresh:
                kept[text] = value
                for key in keys:
                    supplied.setdefault(key, value)
        if not kept and not release:
            return None, {}
        return Round(kept, tuple(release)), supplied

    def _component(self, path: str) -> str:
        """The component ``path`` names (a leading ``/`` optional); COMPONENT_NOT_FOUND otherwise."""
        text = path if path.startswith("/") else "/" + path
        if text in self._children:
            return text
        near = difflib.get_close_matches(text, self._order, n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise DeploymentError(
            f"{path!r} is no component of the plan{hint}",
            code="COMPONENT_NOT_FOUND",
            url=self._document.url,
            path=text,
        )

    def _require_ready(self, comp: str, verb: str) -> None:
        state = self._state(comp)
        if state != "ready":
            why = self._status(comp).why()
            raise DeploymentError(
                f"{verb} {comp}: it is not ready, it is {state}" + (f": {why}" if why else ""),
                code="NOT_READY",
                url=self._document.url,
                path=comp,
            )

    def _state(self, comp: str) -> str:
        if comp in self._deployed:
            return "deployed"
        if comp in self._failed:
            return "failed"
        if comp in self._blocked():
            return "blocked"
        if any(c not in self._deployed for c in self._children[comp]):
            return "waiting"
        if any(a not in self._deployed for a in self._view.after.get(comp, ())):
            return "waiting"
        if self._view.waits_for.get(comp):
            return "waiting"
        return "ready"

    def _depends_on(self, comp: str) -> list[str]:
        """The components ``comp`` waits for now: children and siblings not
        deployed, suppliers of the values it waits for."""
        found = [c for c in self._children[comp] if c not in self._deployed]
        found += [a for a in self._view.after.get(comp, ()) if a not in self._deployed]
        found += [s for v in self._view.waits_for.get(comp, ()) if (s := self._view.supplier.get(v)) is not None]
        return found

    def _blocked(self) -> dict[str, list[str]]:
        """Each blocked component with the failed components it waits for."""
        if not self._failed:
            return {}
        dependants: dict[str, list[str]] = {}
        for comp in self._order:
            if comp not in self._deployed:
                for dep in self._depends_on(comp):
                    dependants.setdefault(dep, []).append(comp)
        blocked: dict[str, list[str]] = {}
        for failed in self._failed:
            stack = [failed]
            seen = {failed}
            while stack:
                for comp in dependants.get(stack.pop(), ()):
                    if comp not in seen and comp not in self._failed:
                        seen.add(comp)
                        blocked.setdefault(comp, []).append(failed)
                        stack.append(comp)
        return blocked

    def _status(self, comp: str) -> ComponentStatus:
        state = self._state(comp)
        view = self._view
        if state in ("deployed", "ready"):
            return ComponentStatus(comp, state)
        upstream = tuple((f, self._failed[f]) for f in self._blocked().get(comp, ()))
        return ComponentStatus(
            comp,
            state,
            waits_for=tuple((v, view.supplier.get(v)) for v in view.waits_for.get(comp, ())),
            children=tuple(c for c in self._children[comp] if c not in self._deployed),
            after=tuple(a for a in view.after.get(comp, ()) if a not in self._deployed),
            upstream=upstream,
            reason=self._failed.get(comp),
        )


class _View:
    """What the plan of the resolution now says of each component."""

    def __init__(self, plan: Plan) -> None:
        self.waits_for: dict[str, tuple[str, ...]] = {}
        self.after: dict[str, tuple[str, ...]] = {}
        #: The component that supplies (or releases) each lazy value.
        self.supplier: dict[str, str] = {}
        for comp in plan.components():
            self._take(comp)

    def _take(self, comp: PlannedComponent) -> None:
        if comp.waits_for:
            self.waits_for[comp.path] = comp.waits_for
        if comp.after:
            self.after[comp.path] = comp.after
        for value in (*comp.supplies, *comp.releases):
            self.supplier[value] = comp.path


def deploy(document: Document, journal: Any = None) -> Deployment:
    """A new :class:`Deployment` of ``document``."""
    return Deployment(document, journal)

