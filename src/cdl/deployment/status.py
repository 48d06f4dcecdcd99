"""What a deployment session reports of its components: their states
(:data:`STATES`), one component's status (:class:`ComponentStatus`,
``cdl.ComponentStatus``) and the whole deployment's
(:class:`DeploymentStatus`, ``cdl.DeploymentStatus``), as data, text and the
plan's pictures coloured by state (``planning.render``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, get_args

from ..planning.plan import Plan
from ..planning.render import to_dot, to_mermaid

#: A component's state (``cdl.ComponentState``; docs/semantics.md, "Deployment sessions").
ComponentState: TypeAlias = Literal["waiting", "ready", "deployed", "failed", "blocked", "changed", "removing", "removed"]

#: The states, in the order status counts them.
STATES: tuple[ComponentState, ...] = get_args(ComponentState)


@dataclass(frozen=True)
class ComponentStatus:
    """Where one component of a deployment stands, and why.

    Attributes:
        path: the component, written as ``cdl plan`` writes it (``[k]`` after
            a name that ``k - 1`` earlier siblings share).
        state: 'waiting', 'ready', 'deployed', 'failed', 'blocked', 'changed'
            (deployed, in a configuration an update changed: to deploy
            again), 'removing' (to take down) or 'removed'.
        supplies: its lazy properties (as the plan's ``supplies``): the
            values to give when it is reported deployed.
        releases: its lazy references (as the plan's ``releases``).
        waits_for: the lazy values it still waits for, each with the
            component that supplies it (None: none of the system's; give it
            with ``supply``).
        children: its child components not deployed yet.
        after: the siblings it comes after that are not deployed yet.
        upstream: for a blocked component, each failed component it waits
            for (directly or through others) with that failure's reason.
        reason: for a failed component, the reason given.
        later: for a deployed component, the lazy values its deployment said
            come later (given with ``supply``) that still have none.
        changes: for a changed component (deployed in a configuration an
            update changed), what changed and why, one line each: each value
            that differs, its old and new value and the numbers of its
            causes, then each cause (as ``cdl diff`` writes them).
        removal_waits: for a removing component, the components whose
            removal it still waits for (those that wait on it).
    """

    path: str
    state: ComponentState
    supplies: tuple[str, ...] = ()
    releases: tuple[str, ...] = ()
    waits_for: tuple[tuple[str, str | None], ...] = ()
    children: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    upstream: tuple[tuple[str, str], ...] = ()
    reason: str | None = None
    later: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()
    removal_waits: tuple[str, ...] = ()

    def to_data(self) -> dict[str, Any]:
        """Plain data: the attributes, ``waits_for`` and ``upstream`` as lists of dicts."""
        return {
            "path": self.path,
            "state": self.state,
            "supplies": list(self.supplies),
            "releases": list(self.releases),
            "waits_for": [{"value": value, "supplier": supplier} for value, supplier in self.waits_for],
            "children": list(self.children),
            "after": list(self.after),
            "upstream": [{"path": path, "reason": reason} for path, reason in self.upstream],
            "reason": self.reason,
            "later": list(self.later),
            "changes": list(self.changes),
            "removal_waits": list(self.removal_waits),
        }

    def why(self) -> str:
        """Why it is in its state, in one line (empty for ready, and for deployed
        unless values it supplies come later)."""
        parts = []
        if self.changes:
            parts.append("changed: " + "; ".join(self.changes))
        if self.removal_waits:
            parts.append("removed after " + ", ".join(self.removal_waits))
        if self.later:
            parts.append("later: " + ", ".join(self.later))
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
        return counted_states(comp.state for comp in self.components)

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
        return to_dot(self._plan, self._states())

    def to_mermaid(self) -> str:
        """The plan's Mermaid picture (:meth:`cdl.Plan.to_mermaid`), each component filled with its state's colour."""
        return to_mermaid(self._plan, self._states())

    def _states(self) -> dict[str, str]:
        """Each component's state, by its path (the plan's)."""
        return {c.path: c.state for c in self.components}


def counted_states(states: Iterable[str]) -> dict[str, int]:
    """How many of ``states`` are each state (every state, in the order of :data:`STATES`)."""
    counts: dict[str, int] = dict.fromkeys(STATES, 0)
    for state in states:
        counts[state] += 1
    return counts

