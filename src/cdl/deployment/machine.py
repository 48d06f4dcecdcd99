"""The states of a deployment's components (docs/semantics.md, "Deployment
sessions"): :class:`Machine` moves each component, by its number in the
plan (``planning.plan.PlanFacts``), through waiting, ready, deployed, failed
and blocked (and changed, after an update: deployed in a configuration
that changed, to deploy again once ready), counting for each what it still
waits for, and keeping for each failure what it blocks. Components taken
down are ``removals``'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from lxml import etree

from ..planning.plan import PlanFacts
from .status import ComponentState


class Machine:
    """The states of the components, by number (``PlanFacts``), and what each still waits for.

    *What waits for a component* (:meth:`_dependants`): its parent, and the
    components that wait for one of its lazy values still without one. A
    component is blocked while a failed one reaches it through that
    relation. It only loses edges (a child once deployed stays so, a value
    once given stays), never closes a cycle (the plan refuses those), and a
    ready or failed component is never reached (its children are deployed
    and its values given). So each failure keeps what it blocks, each
    blocked component counting how many of the failure's reached components
    (the failure among them) it waits for: a failure costs what it blocks,
    a retry what it stops blocking, and a value given costs, per failure
    that blocks its owner, what stops being blocked.
    """

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
        #: Per component, the siblings it comes after in the plan (the plan's lifted order).
        self.after = facts.after
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
        #: For each failed component, each component it blocks, with how many
        #: of the components the failure reaches (itself included) it waits for.
        self.blocks: dict[int, dict[int, int]] = {}
        #: Each blocked component, with the failed components that block it.
        self.blocked: dict[int, set[int]] = {}
        #: Each component deployed in a configuration an update changed (to
        #: deploy again), with what changed and why, one line each.
        self.changed: dict[int, tuple[str, ...]] = {}

    def state(self, comp: int) -> ComponentState:
        done = self.done[comp]
        if done is not None:
            return done
        if comp in self.changed:
            return "changed"
        if comp in self.ready:
            return "ready"
        return "blocked" if comp in self.blocked else "waiting"

    def upstream(self, comp: int) -> list[int]:
        """The failed components that block ``comp``, in document order."""
        return sorted(self.blocked.get(comp, ()))

    def given(self, items: Sequence[etree._Element]) -> list[int]:
        """Items given a value or released: the components that became ready."""
        became = []
        for item in items:
            comps = self.waiting.get(item)
            if comps is None or item in self.valued:
                continue
            owner = self.owner.get(item)
            # A value a failed or blocked component owed, given from elsewhere:
            # what waits for it no longer waits for its owner.
            if owner is not None and (owner in self.failed or owner in self.blocked):
                for failure in [*self.blocked.get(owner, ()), *((owner,) if owner in self.failed else ())]:
                    self._unreach(failure, comps)
            self.valued.add(item)
            for comp in comps:
                self.count[comp] -= 1
                if not self.count[comp] and self.done[comp] is None:
                    self.ready.add(comp)
                    became.append(comp)
        return became

    def deploy(self, comp: int) -> list[int]:
        """Mark ``comp`` (ready) deployed: the components that became ready."""
        self.ready.discard(comp)
        self.changed.pop(comp, None)
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
        be blocked by another failure too), in document order."""
        self.ready.discard(comp)
        self.done[comp] = "failed"
        self.failed[comp] = reason
        reached: dict[int, int] = {}
        stack = [comp]
        while stack:  # each reached component once, counting the edges into it
            for dependant in self._dependants(stack.pop()):
                if dependant in reached:
                    reached[dependant] += 1
                else:
                    reached[dependant] = 1
                    stack.append(dependant)
        self.blocks[comp] = reached
        for blocked in reached:
            self.blocked.setdefault(blocked, set()).add(comp)
        return sorted(reached)

    def retry(self, comp: int) -> list[int]:
        """Take failed ``comp`` back: the components ready again (itself)."""
        self.done[comp] = None
        del self.failed[comp]
        for blocked in self.blocks.pop(comp):
            self._unblock(blocked, comp)
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

    def _unreach(self, failure: int, lost: list[int]) -> None:
        """The edges from a component ``failure`` reaches to ``lost`` are gone
        (a value given): drop from its blocked set what it no longer reaches."""
        counts = self.blocks[failure]
        stack = list(lost)
        while stack:
            comp = stack.pop()
            left = counts[comp] - 1
            if left:
                counts[comp] = left
                continue
            del counts[comp]
            self._unblock(comp, failure)
            stack.extend(self._dependants(comp))

    def _unblock(self, comp: int, failure: int) -> None:
        upstream = self.blocked[comp]
        upstream.discard(failure)
        if not upstream:
            del self.blocked[comp]
