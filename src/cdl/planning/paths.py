"""The paths of a plan's components: each component's one identity.

Entry point: :class:`ComponentPaths`, made by the planner
(``planning.plan``) over its component tree and shared by everything that
names a component: the plan's text, JSON and pictures, and a deployment
session's events and status (``engine.deployment``). The rule of a path is
the one of ``model.naming`` (each step with ``[k]`` among same-named
siblings, shortened in the middle past ``PATH_SHOWN`` steps); this module
adds only what makes a shortened path one component's: ``#k`` after a
shortened path that ``k - 1`` components earlier in document order share.
docs/semantics.md, "Deployment plan", says the rule.
"""

from __future__ import annotations

from collections.abc import Iterable

from lxml import etree

from ..model.naming import PATH_KEPT, PATH_SHOWN, Steps, shortened

__all__ = ["ComponentPaths"]


class ComponentPaths:
    """Component paths by number (0 is the ``cdl:system`` element above the
    top level lists; a parent's number is below its children's, siblings are
    numbered in document order), written when first read: most are read only
    when a plan is written out or a deployment names its components.

    Each is its parent's path and its own step (:class:`model.naming.Steps`),
    kept whole up to ``PATH_SHOWN`` steps; a deeper one keeps the first and
    last ``PATH_KEPT`` steps, carried down from its parent, so a path costs
    the same at any depth. :meth:`find` reads a path back: one handed out
    or written whole, step by step, each step among the children of the
    component before it (each family's steps indexed once).
    """

    __slots__ = (
        "_cache", "_children", "_deep", "_depth", "_elements", "_families", "_found", "_heads", "_parent", "_step", "_steps", "_tails"
    )  # fmt: skip

    def __init__(
        self, parent: list[int], depth: list[int], elements: list[etree._Element], children: dict[int, list[int]], steps: Steps
    ) -> None:
        self._parent, self._depth, self._elements, self._children, self._steps = parent, depth, elements, children, steps
        #: Each component's path without ``#k``, once written.
        self._cache: list[str | None] = [None] * len(parent)
        self._cache[0] = ""
        #: Each component's own step, written with its family's (Steps.of_children).
        self._step: list[str | None] = [None] * len(parent)
        # The first and last PATH_KEPT steps of components deeper than PATH_SHOWN.
        self._heads: dict[int, tuple[str, ...]] = {}
        self._tails: dict[int, tuple[str, ...]] = {}
        #: Each family's children by their steps (see :meth:`find`).
        self._families: dict[int, dict[str, int]] = {}
        #: Every deep component's path (with ``#k``) to its number, and each
        #: deep component's k when its shortened path is shared; made when
        #: the first deep path is read or looked for.
        self._deep: tuple[dict[str, int], dict[int, int]] | None = None
        #: Each whole path found so far, to its component: a path is looked
        #: for again at each event that names it.
        self._found: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._parent)

    def __getitem__(self, i: int) -> str:
        """The path of component ``i``."""
        text = self._plain(i)
        if self._depth[i] > PATH_SHOWN:
            k = self._deep_index()[1].get(i)
            if k is not None:
                return f"{text}#{k}"
        return text

    def step(self, i: int) -> str:
        """Component ``i``'s own step: its name, with ``[k]`` when its parent has other children of that name."""
        found = self._step[i]
        if found is None:
            p = self._parent[i]
            family = self._children[p]
            elements = self._elements
            for c, written in zip(family, self._steps.of_children(elements[p], [elements[c] for c in family])):
                self._step[c] = written
            found = self._step[i]
        return found  # type: ignore[return-value]

    def child(self, owner: int, el: etree._Element) -> str:
        """The path of ``el``, a child of component ``owner`` that is no
        component (a property: what the plan's ``supplies`` and ``waits_for``
        name). It takes no ``#k``: it names a value, not a component."""
        d = self._depth[owner] + 1
        name = self._steps(el)
        if d <= PATH_SHOWN:
            return self._plain(owner) + "/" + name
        head, tail = self._ends(owner)
        return shortened(head, d, (*tail[1:], name))

    def fix(self, elements: Iterable[etree._Element]) -> None:
        """Keep the steps among the siblings of each of ``elements`` as they
        are now (a pending reference: resolved to several targets, it adds
        same-named siblings; a deployment's components keep their paths)."""
        for el in elements:
            parent = el.getparent()
            if parent is not None:
                self._steps.fix(parent)

    def find(self, text: str) -> int | tuple[str, list[str]]:
        """The component ``text`` names (a leading ``/`` optional), or (the
        step not found, the paths of the components where it was looked for).

        A step names a child by its step as written (``web[2]``); ``web[1]``
        also names a ``web`` that has no same-named sibling."""
        text = text if text.startswith("/") else "/" + text
        known = self._found.get(text)
        if known is not None:
            return known
        if "...(" in text:  # a shortened path: only the deep ones hold one
            found = self._deep_index()[0].get(text)
            return (text, []) if found is None else found
        comp = 0
        for step in text.strip("/").split("/"):
            child = self.find_child(comp, step)
            if child is None:
                return step, [self[c] for c in self._children.get(comp, ())]
            comp = child
        self._found[text] = comp
        return comp

    def find_child(self, parent: int, step: str) -> int | None:
        """The child of component ``parent`` that ``step`` names (one step of
        :meth:`find`), or None."""
        family = self._family(parent)
        child = family.get(step)
        if child is None and step.endswith("[1]"):
            child = family.get(step[:-3])
        return child

    def _plain(self, i: int) -> str:
        cache = self._cache
        found = cache[i]
        if found is not None:
            return found
        climbed = []  # explicit stack: up to the nearest written ancestor
        j = i
        while cache[j] is None:
            climbed.append(j)
            j = self._parent[j]
        for j in reversed(climbed):
            p = self._parent[j]
            d = self._depth[j]
            name = self.step(j)
            if d <= PATH_SHOWN:
                cache[j] = cache[p] + "/" + name  # type: ignore[operator]
            else:
                head, tail = self._ends(p)
                tail = (*tail[1:], name)
                self._heads[j], self._tails[j] = head, tail
                cache[j] = shortened(head, d, tail)
        return cache[i]  # type: ignore[return-value]

    def _ends(self, p: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The first and last PATH_KEPT steps of component ``p``'s path (written)."""
        head = self._heads.get(p)
        if head is None:  # the path is whole: PATH_SHOWN steps at most
            names = self._plain(p)[1:].split("/")
            return tuple(names[:PATH_KEPT]), tuple(names[-PATH_KEPT:])
        return head, self._tails[p]

    def _family(self, parent: int) -> dict[str, int]:
        found = self._families.get(parent)
        if found is None:
            found = self._families[parent] = {self.step(c): c for c in self._children.get(parent, ())}
        return found

    def _deep_index(self) -> tuple[dict[str, int], dict[int, int]]:
        if self._deep is None:
            depth = self._depth
            groups: dict[str, list[int]] = {}
            for comp in range(1, len(depth)):
                if depth[comp] > PATH_SHOWN:
                    groups.setdefault(self._plain(comp), []).append(comp)
            paths: dict[str, int] = {}
            ks: dict[int, int] = {}
            for text, comps in groups.items():
                if len(comps) == 1:
                    paths[text] = comps[0]
                    continue
                for k, comp in enumerate(comps, 1):
                    ks[comp] = k
                    paths[f"{text}#{k}"] = comp
            self._deep = paths, ks
        return self._deep
