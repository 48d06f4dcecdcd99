"""The names of a deployment's components: :class:`ComponentNames` writes
each component's path and finds the component a path names.
"""

from __future__ import annotations

from ..planning.plan import _PATH_SHOWN, PlanFacts, paths_of


class ComponentNames:
    """The paths of a deployment's components: as ``cdl plan`` writes them
    (shortened in the middle when deep), with ``[k]`` after a name that
    ``k - 1`` earlier siblings share, and ``#k`` after a shortened path that
    ``k - 1`` components earlier in document order share: a deployment names
    each component once.

    Written when first asked. A path handed out is found again by a lookup;
    another is followed step by step, each step among the children of the
    component before it (each family's names indexed once), so nothing costs
    the whole system but the first shortened path asked for.
    """

    def __init__(self, facts: PlanFacts) -> None:
        self._facts = facts
        self._families: dict[int, dict[str, tuple[int, ...]]] = {}
        self._steps: dict[int, str] = {}
        self._written = paths_of(facts.parent, facts.depth, self.step)
        #: Every path handed out, to its component.
        self._numbers: dict[str, int] = {}
        #: Shortened paths that several components share (found when one is first asked).
        self._shared: dict[str, list[int]] | None = None
        #: Whether every shortened path is in ``_numbers`` (once one not handed out was asked for).
        self._deep_written = False

    def family(self, parent: int) -> dict[str, tuple[int, ...]]:
        """The children of ``parent`` by name, in document order.

        Kept as tuples: the index grows over a whole deployment, and the
        cyclic collector stops tracking tuples of numbers (lists it would walk
        in each full collection, over the live trees)."""
        found = self._families.get(parent)
        if found is None:
            grouped: dict[str, list[int]] = {}
            facts = self._facts
            for child in facts.children.get(parent, ()):
                grouped.setdefault(facts.qname(facts.elements[child].tag), []).append(child)  # type: ignore[arg-type]
            found = self._families[parent] = {name: tuple(children) for name, children in grouped.items()}
        return found

    def step(self, comp: int) -> str:
        """The component's own name in its path."""
        found = self._steps.get(comp)
        if found is None:
            facts = self._facts
            name = facts.qname(facts.elements[comp].tag)  # type: ignore[arg-type]
            same = self.family(facts.parent[comp])[name]
            found = self._steps[comp] = name if len(same) == 1 else f"{name}[{same.index(comp) + 1}]"
        return found

    def path(self, comp: int) -> str:
        text = self._written(comp)
        if self._facts.depth[comp] > _PATH_SHOWN:
            same = self._shared_paths().get(text)
            if same is not None:
                text = f"{text}#{same.index(comp) + 1}"
        self._numbers[text] = comp
        return text

    def _shared_paths(self) -> dict[str, list[int]]:
        if self._shared is None:
            depth = self._facts.depth
            groups: dict[str, list[int]] = {}
            for comp in range(1, len(depth)):
                if depth[comp] > _PATH_SHOWN:
                    groups.setdefault(self._written(comp), []).append(comp)
            self._shared = {text: comps for text, comps in groups.items() if len(comps) > 1}
        return self._shared

    def find(self, text: str) -> int | tuple[str, list[str]]:
        """The component ``text`` names, or (the step not found, the paths
        of the components where it was looked for)."""
        text = text if text.startswith("/") else "/" + text
        known = self._numbers.get(text)
        if known is not None:
            return known
        if "...(" in text:  # a shortened path not handed out yet: write them all, once
            if not self._deep_written:
                for comp in range(1, len(self._facts.depth)):
                    if self._facts.depth[comp] > _PATH_SHOWN:
                        self.path(comp)
                self._deep_written = True
            known = self._numbers.get(text)
            return (text, []) if known is None else known
        comp = 0
        for step in text.strip("/").split("/"):
            name, _, index = step.partition("[")
            same = self.family(comp).get(name, ())
            k = int(index[:-1]) - 1 if index[:-1].isdigit() and index.endswith("]") else (0 if not index and len(same) == 1 else -1)
            if not 0 <= k < len(same):
                return step, [self.path(c) for c in self._facts.children.get(comp, ())]
            comp = same[k]
        return comp

