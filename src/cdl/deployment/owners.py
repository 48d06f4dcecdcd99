"""Whose lazy values a deployment event gives (docs/semantics.md,
"Deployment sessions"): :class:`Owners` knows, from the plan
(``planning.plan.PlanFacts``), which component supplies or releases each
lazy value, and checks a component's ``deployed`` event against it before
anything changes: it gives only its own values (``NOT_OWNER``), it gives or
releases every one of them unless it says they come later
(``VALUES_MISSING``), and a reference released can resolve
(``LAZY_UNRESOLVED``, as far as the plan can tell).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from lxml import etree

from ..errors import DeploymentError, LazinessError
from ..model.items import holder_of
from ..model.workspace import Workspace
from ..planning.plan import PlanFacts
from ..resolution.laziness import CheckedRound


class Owners:
    """The lazy values of the system's components (the plan's ``supplies``
    and ``releases``), by the property that holds each."""

    def __init__(self, facts: PlanFacts) -> None:
        #: Each component's lazy items, the plan's supplies then its releases.
        self.items: dict[int, tuple[etree._Element, ...]] = {}
        #: The property holding each lazy item, to its item and component.
        self.held: dict[etree._Element, tuple[etree._Element, int]] = {}
        for kind in (facts.supplies, facts.releases):
            for comp, items in kind.items():
                self.items[comp] = self.items.get(comp, ()) + items
                self.held.update((holder_of(item), (item, comp)) for item in items)
        self._released_waits = facts.released_waits

    def owner(self, el: etree._Element) -> int | None:
        """The component whose lazy value property ``el`` holds (None: no component's)."""
        found = self.held.get(el)
        return None if found is None else found[1]

    def check_own(self, ws: Workspace, comp: int, named: Iterable[tuple[str, str, etree._Element]], path: Callable[[int], str]) -> None:
        """Refuse (``NOT_OWNER``) what ``comp``'s event names (``named``: the
        verb, the path given, an element it names: every value, even one
        given alike before, release and ``later``) that is not one of
        ``comp``'s own lazy values."""
        for verb, given, el in named:
            owner = self.owner(el)
            if owner == comp:
                continue
            where = ws.ctx.prefixes.path_of(el)
            whose = (
                f"it is a lazy value of {path(owner)}, not of {path(comp)}: {path(owner)}'s deployment gives it"
                if owner is not None
                else "it is no component's lazy value (a template's, or not the system's), so no deployment gives it"
            )
            raise DeploymentError(
                f"deployed {path(comp)}: {verb} {given!r}: {where}: {whose}; values from elsewhere go through supply (cdl deploy set)",
                code="NOT_OWNER",
                at=ws.ctx.where(el),
            )

    def missing(
        self, comp: int, checked: CheckedRound, later: Sequence[etree._Element], pending: Callable[[etree._Element], bool]
    ) -> list[etree._Element]:
        """The lazy items of ``comp`` still without a value (``pending``)
        that ``checked`` neither gives nor releases, and ``later`` (properties)
        does not name."""
        items = self.items.get(comp)
        if items is None:
            return []
        named = {el for _, _, elements in checked.sets for el in elements}
        named.update(el for _, elements in checked.releases for el in elements)
        named.update(later)
        return [item for item in items if holder_of(item) not in named and pending(item)]

    def refuse_missing(self, ws: Workspace, comp: int, path: str, missing: Sequence[etree._Element]) -> None:
        """``VALUES_MISSING`` for ``missing`` (items of ``comp``, at ``path``)."""
        write = ws.ctx.prefixes.writer()
        names = [write(holder_of(item)).lstrip("/") for item in missing]
        now = [f"--release {n}" if item in self._released_waits else f"--set {n}=VALUE" for item, n in zip(missing, names)]
        later = " ".join(f"--later {n}" for n in names)
        raise DeploymentError(
            f"deployed {path}: this event neither gives nor releases its lazy values {', '.join('/' + n for n in names)}; "
            f"give them now ({' '.join(now)}), or say they come later ({later}; library: later=[...]) "
            "and give them with supply (cdl deploy set) then: what waits for them waits until then",
            code="VALUES_MISSING",
            at=ws.ctx.where(holder_of(missing[0])),
        )

    def check_releases(self, ws: Workspace, checked: CheckedRound, pending: Callable[[etree._Element], bool]) -> None:
        """Refuse (``LAZY_UNRESOLVED``) a release whose reference waits, as the
        plan sees it, for a lazy value that has none and that the round
        neither gives nor releases: resolving it could not succeed. (A value
        the round releases is taken to resolve; applying the round tells.)"""
        if not checked.releases:
            return
        named = {el for _, _, elements in checked.sets for el in elements}
        named.update(el for _, elements in checked.releases for el in elements)
        for path, elements in checked.releases:
            for el in elements:
                found = self.held.get(el)
                waits = self._released_waits.get(found[0], frozenset()) if found is not None else frozenset()
                left = [v for v in waits if pending(v) and holder_of(v) not in named]
                if left:
                    write = ws.ctx.prefixes.writer()
                    raise LazinessError(
                        f"release {path!r}: {write(el)} waits for {', '.join(sorted(write(holder_of(v)) for v in left))}, "
                        "which have no value yet: give them first, or in the same event",
                        code="LAZY_UNRESOLVED",
                        at=ws.ctx.where(el),
                    )
