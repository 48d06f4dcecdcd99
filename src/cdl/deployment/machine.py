"""The states of a deployment's components (docs/semantics.md, "Deployment
sessions"): :class:`Machine` moves each component, by its number in the
plan (``planning.plan.PlanFacts``), through waiting, ready, deployed, failed
and blocked, counting for each what it still waits for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from lxml import etree

from ..planning.plan import PlanFacts
from .status import ComponentState


class Machine:
    """The states of the components, by number (``PlanFacts``), and what each still waits for."""

    def __init__(self, facts: PlanFacts) -> None:
        n = len(facts.parent)
        self.parent = facts.parent
        self.children = facts.children
        #: Per component: its children not deployed plus its lazy values without one.
        self.count = [len(facts.children.get(i, ())) for i in range(n)]
        #: The components that wait for each lazy value.
        self.waiting: dict[etree._Element, list[int]] = {}
        for comp, values in facts.waits.items():
            self.count[comp] += len(values)
            for value in values:
                self.waiting.setdefault(value, []).append(comp)
        self.owner = facts.owner
        #: The lazy values of each component that others wait for.
        self.owned: dict[int, list[etree._Element]] = {}
        for value in self.waiting:
            owner = facts.owner.get(value)
            if owner is not None:
                self.owned.setdefault(owner, []).append(value)
        #: Lazy values waited for that have a value now.
        self.valued: set[etree._Element] = set()
        #: 'deployed' or 'failed' by number; None otherwise.
        self.done: list[Literal["deployed", "failed"] | None] = [None] * n
        self.ready = {i for i in range(1, n) if not self.count[i]}
        self.failed: dict[int, str] = {}
        #: Each blocked component, with the failed components it waits for.
        self.blocked: dict[int, list[int]] = {}

    def state(self, comp: int) -> ComponentState:
        done = self.done[comp]
        if done is not None:
            return done
        if comp in self.ready:
            return "ready"
        return "blocked" if comp in self.blocked else "waiting"

    def given(self, items: Sequence[etree._Element]) -> list[int]:
        """Items given a value or released: the components that became ready."""
        became = []
        unblocks = False
        for item in items:
            comps = self.waiting.get(item)
            if comps is None or item in self.valued:
                continue
            # A value a failed or blocked component owed, given from elsewhere.
            owner = self.owner.get(item)
            unblocks = unblocks or owner in self.failed or owner in self.blocked
            self.valued.add(item)
            for comp in comps:
                self.count[comp] -= 1
                if not self.count[comp] and self.done[comp] is None:
                    self.ready.add(comp)
                    became.append(comp)
        if unblocks:
            self._reblock()
        return became

    def deploy(self, comp: int) -> list[int]:
        """Mark ``comp`` (ready) deployed: the components that became ready."""
        self.ready.discard(comp)
        self.done[comp] = "deployed"
        parent = self.parent[comp]
        if parent > 0:
            self.count[parent] -= 1
            if not self.count[parent] and self.done[parent] is None:
                self.ready.add(parent)
                return [parent]
        return []

    def fail(self, comp: int, reason: str) -> list[int]:
        """Mark ``comp`` (ready) failed: the components it blocks (some may
        be blocked by another failure too)."""
        self.ready.discard(comp)
        self.done[comp] = "failed"
        self.failed[comp] = reason
        self._reblock()
        return sorted(c for c, upstream in self.blocked.items() if comp in upstream)

    def retry(self, comp: int) -> list[int]:
        """Take failed ``comp`` back: the components ready again (itself)."""
        self.done[comp] = None
        del self.failed[comp]
        self._reblock()
        if not self.count[comp]:
            self.ready.add(comp)
            return [comp]
        return []

    def _dependants(self, comp: int) -> list[int]:
        """The components that wait for ``comp`` now (not deployed itself)."""
        found = []
        parent = self.parent[comp]
        if parent > 0:
            found.append(parent)
        for value in self.owned.get(comp, ()):
            if value not in self.valued:
                found.extend(self.waiting[value])
        return found

    def _reblock(self) -> None:
        """Work out the blocked components again, from each failed one: what
        waits for it, directly or through others. Asked when a component
        fails or is retried, or a value it owed comes from elsewhere: it
        costs what the failures block."""
        blocked: dict[int, list[int]] = {}
        for failed in self.failed:
            seen = {failed}
            stack = [failed]
            while stack:
                for comp in self._dependants(stack.pop()):
                    if comp not in seen and comp not in self.failed:
                        seen.add(comp)
                        blocked.setdefault(comp, []).append(failed)
                        stack.append(comp)
        self.blocked = {c: sorted(f) for c, f in blocked.items()}

