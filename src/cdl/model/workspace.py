"""The working state of one run: the loaded documents (:class:`SourceDoc`),
what every phase may consult (:class:`Context`), the working copies of one
resolution (:class:`Workspace`) with the budget of what it may copy
(:class:`Budget`), errors collected (:class:`Problems`) and the provenance
hooks (:class:`Recorder`).

The rest of the data model is below it: the names of CDL (``vocabulary``),
parsed values (``tables``), questions about one element (``elements``), the
children index (``children``), limits (``limits``), C-level scans (``scan``)
and how names and paths are written for people (``naming``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from lxml import etree

from ..errors import CdlError, CdlErrorGroup, LimitError
from ..text.tags import start_line
from .children import ChildIndex
from .elements import doc_index_of, top_level_of
from .limits import Limits
from .naming import Prefixes
from .reads import ListReads
from .scan import has_level
from .tables import NameRef, Ref, Tables
from .vocabulary import LIST_PARENTS, P_EXPR, T_EXPRESSION, T_VARIABLE


@dataclass
class SourceDoc:
    """One loaded CDL document (never modified after loading)."""

    index: int
    url: str
    root: etree._Element
    target_ns: str
    #: Namespace declarations of the root element (prefix -> URI).
    nsmap: dict[str | None, str]
    imports: list[str] = field(default_factory=list)
    #: The real path of the file it was read from, if it was a file.
    file: str | None = None
    #: Every namespace URI declared anywhere in the document.
    namespaces: tuple[str, ...] = ()
    #: Prefix -> URI of the declarations, the root's first (for naming).
    declared: dict[str | None, str] = field(default_factory=dict)
    #: True when all namespace declarations are on the root element.
    uniform_namespaces: bool = False
    #: At least as many as the document's elements (see _scan.ListScan).
    element_bound: int = 0
    #: The bytes it was parsed from (kept, not copied: read only to find an
    #: attribute's line for an error, see _lines).
    data: bytes = b""
    #: Where it was imported: the importing document's index and the line of
    #: its cdl:import (None for the main document).
    importer: tuple[int, int | None] | None = None
    #: The index of the document each of its cdl:import elements loaded, in
    #: document order (one imported before, or circularly, is loaded once).
    loaded_imports: list[int] = field(default_factory=list)

    def list_parents(self, root: etree._Element | None = None) -> list[etree._Element]:
        """The cdl:configuration and cdl:system elements of this document or a copy of it."""
        return [c for c in (self.root if root is None else root) if c.tag in LIST_PARENTS]


def strip_variables(ws: Workspace, copies: etree._Element) -> None:
    """Take the cdl:variable children and the value-of attribute out of the
    expressions below ``copies`` (a stamp that inherited copies are made
    from), keeping the variables of each in ``ws.variables`` for
    :func:`restore_variables`.

    An expression's text and variables live in the tables (its P_EXPR);
    the fast path reads them there, and most inherited expressions are
    evaluated and removed, so copying them (four variables in a typical
    expression, each an element with an attribute) and freeing them again
    is wasted. The general resolution, which reads them (error locations)
    and through which every expression the fast path does not evaluate
    passes (the output writes back those left unresolved), restores them
    first. Only expressions with no other attributes, whose restored
    attributes are then those written, in order; and not when a variable
    may be lazy (``Tables.lazy_variables``): the fast path, the pending
    checks and deploy-time releases read that on the variables. The
    budget and the depth checks count the copies as if nothing was taken
    out, so every limit is met where it was. A specialisation: nothing is
    taken out without ``Context.fast_paths``.
    """
    if ws.ctx.tables.lazy_variables or not ws.ctx.fast_paths:
        return
    kept = ws.variables
    for expression in copies.iter(T_EXPRESSION):
        keys = expression.keys()
        if keys != _EXPRESSION_KEYS:
            continue
        index = expression.get(P_EXPR)
        assert index is not None
        variables = list(expression)
        for variable in variables:
            expression.remove(variable)
        # Every copy of one expression has the same variables; the last
        # taken out stands (a resolution that takes lists over from an
        # earlier one starts from that one's, engine.phases).
        kept[index] = variables
        del expression.attrib["value-of"]


#: The attributes of a loaded cdl:expression, in order (src/cdl/loading/parse.py).
_EXPRESSION_KEYS = ["value-of", P_EXPR]


def restore_variables(ws: Workspace, expression: etree._Element) -> None:
    """Give an expression copy what :func:`strip_variables` took out of it
    (its value-of is the mark), as written, lines and all."""
    if expression.get("value-of") is None:
        index = expression.get(P_EXPR)
        assert index is not None  # every loaded expression has one
        expression.attrib.clear()
        expression.set("value-of", ws.ctx.tables.exprs[int(index)].text)
        expression.set(P_EXPR, index)
        expression.extend([variable.__deepcopy__(None) for variable in ws.variables.get(index, ())])  # type: ignore[attr-defined]  # lxml has it, the stubs lack it


def variables_of(ws: Workspace, expression: etree._Element) -> list[etree._Element]:
    """The cdl:variable elements of a cdl:expression of the working trees,
    as written: the one way to read them (an inherited copy may have had
    them taken out, :func:`strip_variables`; they are put back first)."""
    restore_variables(ws, expression)
    return list(expression.iterchildren(T_VARIABLE))


class Problems:
    """Collects independent errors so one run can report all of them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.items: list[CdlError] = []

    def add(self, error: CdlError) -> None:
        self.items.append(error)
        if len(self.items) >= self.limit:
            self.raise_if_any()

    def raise_if_any(self) -> None:
        if len(self.items) == 1:
            raise self.items[0]
        if self.items:
            raise CdlErrorGroup(self.items)


class Location(NamedTuple):
    """Where an element is, for an error: ``CdlError(..., at=location)``."""

    url: str | None
    line: int | None
    #: The property path (``/List/child``), None outside top level lists.
    path: str | None


@dataclass
class Context:
    """What every phase of one run may consult: documents, tables, naming."""

    docs: list[SourceDoc]
    tables: Tables
    prefixes: Prefixes
    limits: Limits
    #: Whether the phases may use their specialisations (src/cdl/model/switch.py),
    #: read when the resolution starts.
    fast_paths: bool = True

    def where(self, el: etree._Element) -> Location:
        """Where ``el`` is: its document, the line its start tag begins on and
        its property path (errors only: the line is read from the text)."""
        idx = doc_index_of(el)
        url = self.docs[idx].url if idx is not None and idx < len(self.docs) else None
        in_list = top_level_of(el) is not None
        return Location(url, self.line_in_document(idx, el), self.prefixes.path_of(el) if in_list else None)

    def line_in_document(self, index: int | None, el: etree._Element) -> int | None:
        """The line of the start tag of ``el``, written in document ``index``
        (None: not known, the line lxml recorded stands)."""
        if index is None or index >= len(self.docs):
            return el.sourceline or None
        return start_line(self.docs[index].data, el)

    def at(self, el: etree._Element) -> str:
        """``file:line`` of ``el``, for messages that list several places."""
        where = self.where(el)
        return f"{where.url}:{where.line}" if where.line else str(where.url)


class Budget:
    """What inheritance and references may produce: elements, text, depth.

    A list holding two children that extend a list holding two children that
    extend ... doubles per level; one value referenced a thousand times copies
    its text a thousand times. Each copy is charged before it is made, so such
    documents stop early with LIMIT_EXCEEDED naming the limit.
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.elements = 0
        self.text = 0

    def check(self, elements: int, text: int, ctx: Context, el: etree._Element) -> None:
        """Refuse now if a copy of this size would exceed a limit (charges nothing)."""
        if self.elements + elements > self.limits.max_elements:
            raise LimitError(
                f"resolution would produce more than {self.limits.max_elements} elements (max_elements); "
                "inheritance or references multiply this document's size",
                at=ctx.where(el),
            )
        if self.text + text > self.limits.max_text:
            raise LimitError(
                f"resolution would copy more than {self.limits.max_text} characters of values (max_text); "
                "references or inheritance multiply this document's text",
                at=ctx.where(el),
            )

    def fits(self, elements: int, text: int) -> bool:
        """Whether a copy of this size is within the limits (charges nothing, never raises)."""
        limits = self.limits
        return self.elements + elements <= limits.max_elements and self.text + text <= limits.max_text

    def charge(self, elements: int, text: int, ctx: Context, el: etree._Element) -> None:
        """Count a copy about to be made."""
        if not self.fits(elements, text):
            self.check(elements, text, ctx, el)  # raises, saying which limit
        self.elements += elements
        self.text += text

    def check_depth(self, landing: int, source: etree._Element, bound: int, ctx: Context, where: etree._Element) -> None:
        """Refuse a copy of ``source``'s subtree that would nest deeper than max_depth.

        ``landing`` is the depth the copy of ``source`` itself will have; an
        element r levels below it lands at ``landing + r``. ``bound`` (the
        copy's element count, at least its height) skips the test when it
        cannot matter, so ordinary documents never pay for it.
        """
        limit = self.limits.max_depth
        if landing + bound <= limit:
            return
        if landing > limit or has_level(source, limit - landing + 1):
            raise LimitError(
                f"resolution would nest elements deeper than the depth limit of {limit} (max_depth)",
                at=ctx.where(where),
            )


@dataclass
class Workspace:
    """Working copies of every document for one resolution, and their lists by name."""

    ctx: Context
    roots: list[etree._Element]
    lists: dict[str, etree._Element]
    budget: Budget
    #: Provenance recorder (``cdl.resolution.explain``), or None: plain resolution
    #: records nothing and pays one None check per event.
    recorder: Recorder | None = None
    #: What each top level list's resolution looked up of the others
    #: (``model.reads``), or None: recorded only when a diff or an update
    #: will ask (one None check per lookup otherwise).
    reads: ListReads | None = None
    #: Children by name of wide elements, for path steps (src/cdl/model/children.py).
    children: ChildIndex = field(default_factory=ChildIndex)
    #: The cdl:variable children taken out of inherited copies of
    #: expressions (strip_variables), by the expressions' P_EXPR: one
    #: detached set each, copied back into a copy that needs them.
    #: (An expression without variables has an empty set.)
    variables: dict[str, list[etree._Element]] = field(default_factory=dict)
    #: Every name an unresolved item other than a cdl:expression may have in
    #: these working trees: the loader's (``Tables.item_tags``, copied when
    #: the resolution starts) and those of elements that inherit a reference
    #: or cdl:lazy from a prototype (added by prototypes; only ever grows).
    #: The Document's own set never changes.
    item_tags: set[str] = field(default_factory=set)
    #: The top level lists a plan of these trees can find an error among,
    #: when that is known to be fewer than all (None: any): set by a
    #: resolution that took the others over from trees whose plan found
    #: none (``engine.phases.Taken.plan_within``).
    plan_within: frozenset[etree._Element] | None = None

    def size_bound(self) -> int:
        """An upper bound on the elements of the working trees now: what was
        read plus every copy charged to the budget."""
        return sum(doc.element_bound for doc in self.ctx.docs) + self.budget.elements

    def lookup(self, name: NameRef) -> etree._Element | None:
        for candidate in name.candidates:
            found = self.lists.get(candidate)
            if found is not None:
                return found
        return None


# -- provenance hooks (issue 15; implemented by cdl.resolution.explain.Recorder) ------------


class Recorder(Protocol):
    """What the phases tell a provenance recorder, at the few places where a
    value is copied, replaced, computed or supplied. Only ``Resolution.explain``
    sets one (``Workspace.recorder``); see src/cdl/resolution/explain.py."""

    def inherited(self, copy: etree._Element, source: etree._Element, extending: etree._Element) -> None:
        """``copy`` (a subtree) was copied from prototype child ``source`` into ``extending`` (7.2.2.1)."""

    def overrides(self, own: etree._Element, replaced: list[etree._Element]) -> None:
        """``own`` replaced the prototype's same-named ``replaced`` (7.2.2.1)."""

    def extends(self, extending: etree._Element, proto: etree._Element) -> None:
        """``extending``'s cdl:extends of ``proto`` was resolved."""

    def referenced(self, shell: etree._Element, target: etree._Element, ref: Ref) -> None:
        """``shell`` took its value from ``target`` by reference ``ref`` (7.3.2); called
        before ``target``'s children are copied into it."""

    def copied(self, copy: etree._Element, source: etree._Element, shell: etree._Element) -> None:
        """``copy`` (a subtree) is a copy of ``source``, a child of the target of ``shell``'s reference."""

    def computed(self, holder: etree._Element, expression: etree._Element, variables: dict[str, etree._Element]) -> None:
        """``holder``'s value was computed by ``expression`` (7.3.6), before it is replaced."""

    def supplied(self, el: etree._Element, path: str) -> None:
        """``el`` received a deploy-time value named by ``path`` (7.5)."""
