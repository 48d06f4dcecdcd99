"""The small data model every phase shares.

Working trees are ordinary lxml trees. What the phases need to know about an
element beyond its XML (its parsed reference, its prototype name, which
document it came from) is recorded in private attributes in the engine's own
namespace, holding indexes into :class:`Tables`. Private attributes travel with
the element when lxml copies it, which is exactly what inheritance and
reference resolution need; the serializer strips them.

Names are kept resolved, in Clark notation (``{uri}local``, or ``local`` for no
namespace), the form lxml uses for tags, so a resolved name can be compared
with a tag directly.

Beside the model: what is still unresolved (``_items``), limits and the
budget of copies (``_limits``), C-level scans of whole lists (``_scan``), and
how names and paths are written for people (``_naming``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

from lxml import etree

from ._children import ChildIndex
from .errors import CdlError, CdlErrorGroup

if TYPE_CHECKING:
    from elementpath import XPathToken

    from ._limits import Budget, Limits
    from ._naming import Prefixes

CDL_NS = "http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"
XSD_NS = "http://www.w3.org/2001/XMLSchema"
#: Private attributes live here; the serializer removes them all.
ENGINE_NS = "urn:x-cdl-engine:internal"


def cdl(local: str) -> str:
    """The Clark name of a name in the CDL namespace."""
    return f"{{{CDL_NS}}}{local}"


def engine(local: str) -> str:
    """The Clark name of one of the engine's private attributes."""
    return f"{{{ENGINE_NS}}}{local}"


# CDL elements and attributes.
T_CDL = cdl("cdl")
T_IMPORT = cdl("import")
T_TYPES = cdl("types")
T_CONFIGURATION = cdl("configuration")
T_SYSTEM = cdl("system")
T_DOCUMENTATION = cdl("documentation")
T_EXPRESSION = cdl("expression")
T_VARIABLE = cdl("variable")
A_EXTENDS = cdl("extends")
A_CREF = cdl("ref")
A_REFROOT = cdl("refroot")
A_LAZY = cdl("lazy")
A_TYPE = cdl("type")
A_USE = cdl("use")
LIST_PARENTS = frozenset((T_CONFIGURATION, T_SYSTEM))

# Private attributes (values are indexes into Tables, or a document index).
P_REF = engine("ref")  # the cdl:ref/cdl:refroot pair, as one atomic value
P_EXT = engine("ext")  # the prototype name of cdl:extends
P_EXPR = engine("expr")  # on cdl:expression: its parsed expression
P_DOC = engine("doc")  # which document the element (and its subtree) came from
#: On an element that inherited children from a prototype of another
#: document: "DOC TAG TAG ...", the document of its children of those tags
#: (see copies_mark).
P_COPIES = engine("copies")
P_PROV = engine("prov")  # explain only: index of the element's latest provenance event (_explain)

#: A path step that climbs to the parent; every other step is a Clark name.
UP = ".."


def split_clark(name: str) -> tuple[str, str]:
    """``{uri}local`` -> (uri, local); ``local`` -> ("", local)."""
    if name.startswith("{"):
        uri, _, local = name[1:].partition("}")
        return uri, local
    return "", name


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

    def add_ref(self, ref: Ref) -> str:
        root = ref.refroot
        key = (ref.text, None, None, ref.steps) if root is None else (ref.text, root.text, root.candidates, ref.steps)
        index = self._ref_index.get(key)
        if index is None:
            self.refs.append(ref)
            index = self._ref_index[key] = str(len(self.refs) - 1)
        return index

    def add_name(self, name: NameRef) -> str:
        index = self._name_index.get(name)
        if index is None:
            self.names.append(name)
            index = self._name_index[name] = str(len(self.names) - 1)
        return index

    def add_expr(self, expr: Expression) -> str:
        self.exprs.append(expr)
        return str(len(self.exprs) - 1)


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

    def list_parents(self, root: etree._Element | None = None) -> list[etree._Element]:
        """The cdl:configuration and cdl:system elements of this document or a copy of it."""
        return [c for c in (self.root if root is None else root) if c.tag in LIST_PARENTS]


def table_index(el: etree._Element, attribute: str) -> int:
    """The index into :class:`Tables` that the private ``attribute`` of ``el`` holds.

    Asked only of elements that carry it (found by a scan for it, or known to
    be a cdl:expression, which the loader marks); a missing one is a
    programming error.
    """
    value = el.get(attribute)
    if value is None:
        raise KeyError(f"{attribute} is missing on {el.tag!r}")
    return int(value)


def tag_of(el: etree._Element) -> str:
    """The Clark name of an element of the engine's trees.

    lxml returns a parsed element's tag as a str (its stubs also allow the
    bytes or QName a program may assign; the engine never assigns one), and
    the loader removes comments and processing instructions, whose tag is no
    name. Anything else is a programming error.
    """
    tag = el.tag
    if not isinstance(tag, str):
        raise TypeError(f"{el!r} has no name: only parsed elements belong in the engine's trees")
    return tag


def has_value(el: etree._Element) -> bool:
    """A property has a value when it has child elements or non-blank text."""
    return len(el) > 0 or bool(el.text and el.text.strip())


def replace_with_text(el: etree._Element, text: str = "", parent: etree._Element | None = None) -> None:
    """Remove ``el``, leaving ``text`` (and ``el``'s tail text) where it stood
    (``parent``: its parent, when the caller has it)."""
    if parent is None:
        parent = el.getparent()
        if parent is None:
            return
    joined = text + (el.tail or "")
    if joined:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + joined
        else:
            parent.text = (parent.text or "") + joined
    parent.remove(el)


def top_level_of(el: etree._Element) -> etree._Element | None:
    """The top level list holding ``el`` (``el`` itself when it is one)."""
    cur: etree._Element | None = el
    while cur is not None:
        parent = cur.getparent()
        if parent is None:
            return None
        if parent.tag in LIST_PARENTS:
            return cur
        cur = parent
    return None


def doc_index_of(el: etree._Element) -> int | None:
    """The index of the document ``el`` was written in.

    Top level lists and the roots of copied subtrees carry the mark; walk up
    to the nearest one. An element that inherited children from a prototype
    of another document says so once (``P_COPIES``) instead of a mark on each
    copy: a copy is a child whose tag it names. Only errors, reports and
    cross-document copies ask this.
    """
    cur: etree._Element | None = el
    while cur is not None:
        mark = cur.get(P_DOC)
        if mark is not None:
            return int(mark)
        parent = cur.getparent()
        if parent is not None:
            copies = parent.get(P_COPIES)
            if copies is not None:
                doc, *tags = copies.split(" ")
                if cur.tag in tags:
                    return int(doc)
        cur = parent
    return None


def copies_mark(doc: int, tags: Iterable[object]) -> str:
    """The ``P_COPIES`` value for children of ``tags`` copied from document ``doc``.

    A merge copies the prototype's children of the names its list does not
    have, so copies and own children never share a name; a reference's
    extra shells take the name, and the origin, of the element they copy.
    One mark per merge instead of one per copy: every mark is freed again
    before the output is written, and hundreds of thousands of small frees
    slow the allocator down when the serializer next allocates.
    """
    return " ".join([str(doc), *[tag for tag in tags if isinstance(tag, str)]])


#: The tag of the elements that carry copies into a tree, one C call
#: (``etree.strip_tags``) putting their children in their place: in the
#: engine's namespace, which no document may use.
T_COPIES = engine("copies")


def stamp(copies: Iterable[etree._Element], scope: etree._Element) -> etree._Element:
    """A T_COPIES element holding ``copies`` (made from children of ``scope``):
    one deep copy of it makes them all again.

    lxml makes a document for every copy it makes, and fixes the namespaces
    of each element it moves, one call per element moved: copies of a stamp
    move in as one element. The namespaces the copies use are declared
    once on the stamp, with ``scope``'s prefixes, rather than on each copy
    (a copy carries the declarations of its element, each dropped again
    when the copy moves in).
    """
    made = list(copies)
    used = {T_COPIES[1 : T_COPIES.index("}")]}
    for top in made:
        for el in top.iter():
            if isinstance(el.tag, str) and el.tag[:1] == "{":
                used.add(el.tag[1 : el.tag.index("}")])
            used.update(key[1 : key.index("}")] for key in el.attrib if key[:1] == "{")
    nsmap = {prefix: uri for prefix, uri in scope.nsmap.items() if prefix is not None and uri in used}
    holder = etree.Element(T_COPIES, nsmap=nsmap)
    holder.extend(made)
    return holder


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
        kept.setdefault(index, variables)
        del expression.attrib["value-of"]


#: The attributes of a loaded cdl:expression, in order (cdl/_load.py).
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
    #: Whether the phases may use their specialisations (cdl/_switch.py),
    #: read when the resolution starts.
    fast_paths: bool = True

    def where(self, el: etree._Element) -> Location:
        """Where ``el`` is: its document, the line its start tag begins on and
        its property path (errors only: the line is read from the text)."""
        from ._lines import element_line  # _lines builds on this module

        idx = doc_index_of(el)
        url = self.docs[idx].url if idx is not None and idx < len(self.docs) else None
        in_list = top_level_of(el) is not None
        return Location(url, element_line(self, el), self.prefixes.path_of(el) if in_list else None)

    def at(self, el: etree._Element) -> str:
        """``file:line`` of ``el``, for messages that list several places."""
        where = self.where(el)
        return f"{where.url}:{where.line}" if where.line else str(where.url)


def depth_of(el: etree._Element) -> int:
    """Levels from the document root to ``el`` (the root is 1)."""
    depth = 0
    cur: etree._Element | None = el
    while cur is not None:
        depth += 1
        cur = cur.getparent()
    return depth


@dataclass
class Workspace:
    """Working copies of every document for one resolution, and their lists by name."""

    ctx: Context
    roots: list[etree._Element]
    lists: dict[str, etree._Element]
    budget: Budget
    #: Provenance recorder (``cdl._explain``), or None: plain resolution
    #: records nothing and pays one None check per event.
    recorder: Recorder | None = None
    #: Children by name of wide elements, for path steps (cdl/_children.py).
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


# -- provenance hooks (issue 15; implemented by cdl._explain.Recorder) ------------


class Recorder(Protocol):
    """What the phases tell a provenance recorder, at the few places where a
    value is copied, replaced, computed or supplied. Only ``Resolution.explain``
    sets one (``Workspace.recorder``); see cdl/_explain.py."""

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
