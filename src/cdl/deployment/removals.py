"""Taking components down (issue 32; docs/semantics.md, "Deployment
sessions", "Teardown"): :class:`Removals` holds the components a deployment
is removing, each ``removing`` until it is reported ``removed``, and ready
to be removed once every component that waits on it is removed.

What waits on a component (``carry.waiting_on``): its parent (a
component is deployed after its children, so it goes before them), the
siblings the plan puts after it, and the components that wait for one of
its lazy values (they run with that value): the order of the plan's
teardown (``Plan.teardown``, ``cdl plan --teardown``).
The waits are given once, when components begin to be removed, and only
ever end (a component removed): each component counts those left, so a
removal costs what waits on what it lets go.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


class Removals:
    """The components being removed, numbered in the order they were added,
    each with its path and the components that wait on it."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.number: dict[str, int] = {}
        #: Per component: the components that wait on it (numbers), in order.
        self.waited_by: list[tuple[int, ...]] = []
        #: Per component: the components it waits on (their removal lets it go).
        self.waits_on: list[list[int]] = []
        #: Per component: how many that wait on it are not removed yet.
        self.count: list[int] = []
        self.removed: list[bool] = []
        #: The components that may be removed now.
        self.ready_now: set[int] = set()

    def __len__(self) -> int:
        return len(self.paths)

    def add(self, paths: Sequence[str], waited_by: Mapping[int, Iterable[int]]) -> None:
        """Begin to remove the components ``paths`` (numbered from
        ``len(self)`` on), ``waited_by`` giving, by position in ``paths``,
        the positions of those that wait on each."""
        base = len(self.paths)
        for i, path in enumerate(paths):
            self.number[path] = base + i
            self.paths.append(path)
            self.waits_on.append([])
            self.removed.append(False)
        for i in range(len(paths)):
            waiting = tuple(dict.fromkeys(base + j for j in waited_by.get(i, ()) if j != i))
            self.waited_by.append(waiting)
            self.count.append(len(waiting))
            if not waiting:
                self.ready_now.add(base + i)
        for i in range(base, len(self.paths)):
            for j in self.waited_by[i]:
                self.waits_on[j].append(i)

    def find(self, path: str) -> int | None:
        """The component being removed at ``path`` (the leading ``/`` optional), or None."""
        return self.number.get(path if path.startswith("/") else "/" + path)

    def state(self, i: int) -> str:
        return "removed" if self.removed[i] else "removing"

    def ready(self, i: int) -> bool:
        """Whether ``i`` may be removed now: removing, and nothing that waits on it is left."""
        return not self.removed[i] and not self.count[i]

    def left_waiting(self, i: int) -> tuple[str, ...]:
        """The paths of the components that wait on ``i`` and are not removed yet."""
        return tuple(self.paths[j] for j in self.waited_by[i] if not self.removed[j])

    def remove(self, i: int) -> list[int]:
        """Mark ``i`` (ready) removed: the components it let go (now ready to be removed)."""
        self.removed[i] = True
        self.ready_now.discard(i)
        became = []
        for j in self.waits_on[i]:
            self.count[j] -= 1
            if not self.count[j] and not self.removed[j]:
                self.ready_now.add(j)
                became.append(j)
        return sorted(became)

    def removable(self) -> list[int]:
        """Every component that may be removed now, in the order they were added."""
        return sorted(self.ready_now)

    def leaving(self) -> list[tuple[str, list[str]]]:
        """The components not removed yet, each with the paths of those not
        removed yet that wait on it (what an update carries over)."""
        return [(self.paths[i], list(self.left_waiting(i))) for i in range(len(self.paths)) if not self.removed[i]]
