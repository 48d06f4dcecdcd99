"""Parsed values: names, references and expressions as the loader parses them
once (:class:`Tables`), shared by every working copy of a loaded document set.

Working trees are ordinary lxml trees. What the phases need to know about an
element beyond its XML (its parsed reference, its prototype name) is
recorded in private attributes in the engine's own namespace
(``vocabulary``), holding indexes into :class:`Tables`. Private attributes
travel with the element when lxml copies it, which is exactly what
inheritance and reference resolution need; the serializer strips them.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from elementpath import XPathToken


@dataclass(frozen=True, slots=True)
class NameRef:
    """A QName as written in an attribute, with the names it may mean.

    ``candidates`` are Clark names in lookup order: a prefixed name has one;
    an unprefixed one may also find a list of the writing document's
    targetNamespace or a list published with no namespace (NOTES.md, Names).
    """

    text: str
    candidates: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Ref:
    """A parsed value reference: optional refroot and relative steps.

    Absolute paths without refroot are already translated to relative ones
    (7.3.1), so ``steps`` always start at the context node: the refroot list
    when there is one, else the parent of the referring property.
    """

    text: str
    refroot: NameRef | None
    steps: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Variable:
    """One cdl:variable of an expression."""

    name: str
    ref: Ref


@dataclass(frozen=True, slots=True)
class Expression:
    """A parsed cdl:expression: the XPath token tree and its variables."""

    text: str
    token: XPathToken
    variables: tuple[Variable, ...]


@dataclass
class Tables:
    """Parsed values shared by every working copy of a loaded document set.

    Entries are immutable and only ever appended, so copies of a tree made for
    different resolutions can share one table.
    """

    refs: list[Ref] = field(default_factory=list)
    names: list[NameRef] = field(default_factory=list)
    exprs: list[Expression] = field(default_factory=list)
    #: The names of the loaded documents' unresolved items other than
    #: cdl:expression: written references and lazy properties, in every
    #: document (the loader adds them). Each resolution starts its own set
    #: from it (``Workspace.item_tags``), which prototypes extend.
    item_tags: set[str] = field(default_factory=set)
    #: Whether some loaded cdl:variable is lazy. Only the loader makes one
    #: lazy (prototypes copy loaded attributes, deploy-time rounds only clear
    #: them): while False, no expression has a lazy variable, and the
    #: resolver's fast path need not look at each variable.
    lazy_variables: bool = False
    # Equal entries share one index: documents repeat the same references.
    # References are keyed by their fields in a plain tuple, which hashes in
    # C (a frozen dataclass hashes through two Python calls, Ref's and its
    # NameRef's), and equal tuples are exactly equal references.
    _ref_index: dict[tuple[str, str | None, tuple[str, ...] | None, tuple[str, ...]], str] = field(
        default_factory=dict, repr=False
    )
    _name_index: dict[NameRef, str] = field(default_factory=dict, repr=False)
    # An expression is one entry per place it is written (its variables are
    # kept per entry, lines and all: ``model.workspace.strip_variables``), so
    # a load that continues tables (:meth:`continued`) finds its own again.
    _expr_index: dict[Hashable, str] = field(default_factory=dict, repr=False)
    #: The entries of each kind (refs, names, exprs) the load that made these
    #: tables found in its documents; the others are an earlier version's.
    _found: tuple[set[str], set[str], set[str]] = field(default_factory=lambda: (set(), set(), set()), repr=False)

    def add_ref(self, ref: Ref) -> str:
        root = ref.refroot
        key = (ref.text, None, None, ref.steps) if root is None else (ref.text, root.text, root.candidates, ref.steps)
        index = self._ref_index.get(key)
        if index is None:
            self.refs.append(ref)
            index = self._ref_index[key] = str(len(self.refs) - 1)
        self._found[0].add(index)
        return index

    def add_name(self, name: NameRef) -> str:
        index = self._name_index.get(name)
        if index is None:
            self.names.append(name)
            index = self._name_index[name] = str(len(self.names) - 1)
        self._found[1].add(index)
        return index

    def expr_index(self, place: Hashable) -> str | None:
        """The entry of the expression written at ``place`` (see :meth:`add_expr`), if any."""
        index = self._expr_index.get(place)
        if index is not None:
            self._found[2].add(index)
        return index

    def add_expr(self, expr: Expression, place: Hashable) -> str:
        """The entry of ``expr``, written at ``place``: what identifies one
        written expression (its document, line, text, variables and
        namespaces), which :meth:`expr_index` finds again."""
        self.exprs.append(expr)
        index = self._expr_index[place] = str(len(self.exprs) - 1)
        self._found[2].add(index)
        return index

    def continued(self) -> Tables | None:
        """Tables for a load of a later version of the same documents: these
        entries at their indexes, to which it appends what it does not find.
        What both versions write alike then reads the same entries, so the
        trees of a resolution of this version read there what they read here
        (:meth:`extends`; ``engine.phases.take_over``). None when more than
        half of these are an earlier version's (not found by the load that
        made them): that load begins afresh."""
        found = sum(len(kind) for kind in self._found)
        if len(self.refs) + len(self.names) + len(self.exprs) > 2 * found + 256:
            return None
        return Tables(
            list(self.refs),
            list(self.names),
            list(self.exprs),
            _ref_index=dict(self._ref_index),
            _name_index=dict(self._name_index),
            _expr_index=dict(self._expr_index),
        )

    def extends(self, earlier: Tables) -> bool:
        """Whether every entry of ``earlier`` (another load's tables) is here,
        at the same index, meaning the same: then an element of a working
        tree made from ``earlier`` reads here what it read there (an
        expression is compared by what it was parsed from; its namespaces
        are the documents' own, compared by the caller)."""
        n = len(earlier.exprs)
        return (
            self.refs[: len(earlier.refs)] == earlier.refs
            and self.names[: len(earlier.names)] == earlier.names
            and len(self.exprs) >= n
            and all(a.text == b.text and a.variables == b.variables for a, b in zip(self.exprs[:n], earlier.exprs))
        )

