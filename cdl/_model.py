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
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lxml import etree

from ._children import ChildIndex
from .errors import CdlError, CdlErrorGroup, LimitError

if TYPE_CHECKING:
    from elementpath.tdop import Token

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

#: Paths in messages longer than this many steps are shortened in the middle.
_PATH_SHOWN = 16

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
    token: Token
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
    # Equal entries share one index: documents repeat the same references.
    _ref_index: dict[Ref, str] = field(default_factory=dict, repr=False)
    _name_index: dict[NameRef, str] = field(default_factory=dict, repr=False)

    def add_ref(self, ref: Ref) -> str:
        index = self._ref_index.get(ref)
        if index is None:
            self.refs.append(ref)
            index = self._ref_index[ref] = str(len(self.refs) - 1)
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


@dataclass(frozen=True)
class Limits:
    """Bounds that keep hostile input from exhausting the machine.

    Every limit produces a LIMIT_EXCEEDED error that names it.
    """

    max_bytes: int = 64 * 1024 * 1024
    max_depth: int = 10_000
    max_elements: int = 2_000_000
    max_imports: int = 1_000
    max_expression_length: int = 10_000
    max_errors: int = 50
    #: Characters of values that inheritance and references may copy.
    max_text: int = 128 * 1024 * 1024


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
    #: At least as many as the document's elements (see ListScan).
    element_bound: int = 0

    def list_parents(self, root: etree._Element | None = None) -> list[etree._Element]:
        """The cdl:configuration and cdl:system elements of this document or a copy of it."""
        return [c for c in (self.root if root is None else root) if c.tag in LIST_PARENTS]


def has_value(el: etree._Element) -> bool:
    """A property has a value when it has child elements or non-blank text."""
    return len(el) > 0 or bool(el.text and el.text.strip())


def replace_with_text(el: etree._Element, text: str = "") -> None:
    """Remove ``el``, leaving ``text`` (and ``el``'s tail text) where it stood."""
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
    to the nearest one. Only errors and cross-document copies ask this.
    """
    cur: etree._Element | None = el
    while cur is not None:
        mark = cur.get(P_DOC)
        if mark is not None:
            return int(mark)
        cur = cur.getparent()
    return None


class Prefixes:
    """Chooses one prefix per namespace URI, for output and for messages.

    The main document's own prefixes come first, then those of the other
    documents, so paths in messages and output read as the user wrote them.
    A default namespace gets a prefix too (output never relies on a default
    namespace, see the serializer), preferring one the documents declare.
    """

    def __init__(self, nsmaps: list[dict[str | None, str]], main_default: str | None = None) -> None:
        #: Names in the main document's default namespace are written
        #: unprefixed in messages, as the user writes them in --set paths.
        self.main_default = main_default or None
        self.by_uri: dict[str, str] = {}
        taken: set[str] = set()
        pending_defaults: list[str] = []
        for nsmap in nsmaps:
            for prefix, uri in nsmap.items():
                if prefix is None:
                    pending_defaults.append(uri)
                elif "#" in prefix:  # a URI whose prefix another declaration took
                    pending_defaults.append(uri)
                elif uri not in self.by_uri and prefix not in taken and uri:
                    self.by_uri[uri] = prefix
                    taken.add(prefix)
        self._taken = taken
        for uri in pending_defaults:
            self.prefix(uri)

    def prefix(self, uri: str) -> str:
        """The prefix for ``uri``, inventing ``nsN`` when no document offers one."""
        found = self.by_uri.get(uri)
        if found is None:
            if uri == CDL_NS and "cdl" not in self._taken:
                found = "cdl"
            elif uri == XSD_NS and "xsd" not in self._taken:
                found = "xsd"
            else:
                n = 1
                while f"ns{n}" in self._taken:
                    n += 1
                found = f"ns{n}"
            self.by_uri[uri] = found
            self._taken.add(found)
        return found

    def qname(self, clark: str) -> str:
        uri, local = split_clark(clark)
        return f"{self.prefix(uri)}:{local}" if uri and uri != self.main_default else local

    def path_of(self, el: etree._Element) -> str:
        """``/List/child/grandchild`` for an element of a list (its own name for a list)."""
        names: list[str] = []
        cur: etree._Element | None = el
        while cur is not None and cur.tag not in LIST_PARENTS and cur.tag != T_CDL:
            names.append(self.qname(cur.tag) if isinstance(cur.tag, str) else "?")
            cur = cur.getparent()
        names.reverse()
        if len(names) > _PATH_SHOWN:
            # A path thousands of steps deep helps nobody: keep both ends.
            half = _PATH_SHOWN // 2
            names = [*names[:half], f"...({len(names) - 2 * half} more)...", *names[-half:]]
        return "/" + "/".join(names)

    def steps_text(self, ref: Ref) -> str:
        """A reference path written back with these prefixes (relative form)."""
        return relative_text([s if s == UP else self.qname(s) for s in ref.steps])


def relative_text(steps: list[str]) -> str:
    """Written steps as the relative path of 7.3.1: '.' + path unless it climbs."""
    if not steps:
        return "."
    text = "/".join(steps)
    return text if steps[0] == UP else "./" + text


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


@dataclass
class Context:
    """What every phase of one run may consult: documents, tables, naming."""

    docs: list[SourceDoc]
    tables: Tables
    prefixes: Prefixes
    limits: Limits

    def where(self, el: etree._Element) -> dict[str, object]:
        """Keyword arguments locating ``el`` for a CdlError: url, line and path."""
        idx = doc_index_of(el)
        url = self.docs[idx].url if idx is not None and idx < len(self.docs) else None
        in_list = top_level_of(el) is not None
        return {"url": url, "line": el.sourceline or None, "path": self.prefixes.path_of(el) if in_list else None}

    def at(self, el: etree._Element) -> str:
        """``file:line`` of ``el``, for messages that list several places."""
        w = self.where(el)
        return f"{w['url']}:{w['line']}" if w["line"] else str(w["url"])


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
                **ctx.where(el),  # type: ignore[arg-type]
            )
        if self.text + text > self.limits.max_text:
            raise LimitError(
                f"resolution would copy more than {self.limits.max_text} characters of values (max_text); "
                "references or inheritance multiply this document's text",
                **ctx.where(el),  # type: ignore[arg-type]
            )

    def charge(self, elements: int, text: int, ctx: Context, el: etree._Element) -> None:
        """Count a copy about to be made."""
        total_elements, total_text = self.elements + elements, self.text + text
        limits = self.limits
        if total_elements > limits.max_elements or total_text > limits.max_text:
            self.check(elements, text, ctx, el)  # raises, saying which limit
        self.elements, self.text = total_elements, total_text

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
        if landing > limit or _has_level(source, limit - landing + 1):
            raise LimitError(
                f"resolution would nest elements deeper than the depth limit of {limit} (max_depth)",
                **ctx.where(where),  # type: ignore[arg-type]
            )


def depth_of(el: etree._Element) -> int:
    """Levels from the document root to ``el`` (the root is 1)."""
    depth = 0
    cur: etree._Element | None = el
    while cur is not None:
        depth += 1
        cur = cur.getparent()
    return depth


_CHAINS: dict[int, etree.XPath] = {}
_CHAIN_MAX = 2000  # libxml2 evaluates location steps recursively: keep chains short
_DEEPER = etree.XPath("boolean(descendant::*[count(ancestor::*) >= $n])")


def _has_level(el: etree._Element, levels: int) -> bool:
    """Whether ``el`` has a descendant ``levels`` levels below it (C-level,
    breadth-first over the subtree)."""
    if levels <= 0:
        return True
    if levels > _CHAIN_MAX:
        if not _has_level(el, _CHAIN_MAX):
            return False
        # Genuinely deep: count ancestors instead (slower, and rare).
        return bool(_DEEPER(el, n=float(depth_of(el) - 1 + levels)))
    chain = _CHAINS.get(levels)
    if chain is None:
        if len(_CHAINS) > 64:
            _CHAINS.clear()
        chain = _CHAINS[levels] = etree.XPath("boolean(" + "/".join(["*"] * levels) + ")")
    return bool(chain(el))


#: libxml2 caps an XPath node-set at ten million nodes, intermediate sets
#: included; below this many elements a whole part may be scanned at once.
_WHOLE_SCAN_LIMIT = 9_500_000


class ListScan:
    """One XPath predicate asked of every element of some top level lists.

    The lists of a cdl:configuration or cdl:system are scanned in one C-level
    evaluation when ``bound`` (an upper bound on the elements below) shows the
    node-set cannot reach libxml2's cap, else one list at a time: each call
    costs microseconds before it looks at a node, so thousands of small lists
    cost more per list than their elements do.
    """

    def __init__(self, predicate: str, namespaces: dict[str, str] | None = None) -> None:
        self.per_part = etree.XPath("descendant::*" + predicate, namespaces=namespaces)
        self.per_list = etree.XPath("descendant-or-self::*" + predicate, namespaces=namespaces)

    def __call__(self, parents: Iterable[etree._Element], bound: int, **variables: object) -> list[etree._Element]:
        """Matches below each of ``parents`` (list parents), in document order."""
        found: list[etree._Element] = []
        for parent in parents:
            if bound < _WHOLE_SCAN_LIMIT:
                found.extend(self.per_part(parent, **variables))
            else:
                for lst in parent:
                    found.extend(self.per_list(lst, **variables))
        return found


def elements_bound(data: bytes) -> int:
    """At least as many as the elements of the XML document ``data``.

    Every start tag has a '<' followed by neither '/', '!' nor '?', and each
    of those three pairs has one '<': so the difference of the counts bounds
    the elements (text and attribute values hold no raw '<'; any in comments
    or CDATA only raise the bound). Entities that could expand are refused at
    load. In an encoding where '<' is not the byte 0x3C (EBCDIC), four bytes
    per element (``<a/>``) bound it instead.
    """
    head = data.lstrip()[:1]
    if head != b"<" and not data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\x00")):
        return len(data) // 4
    return data.count(b"<") - data.count(b"</") - data.count(b"<!") - data.count(b"<?")


@dataclass
class Workspace:
    """Working copies of every document for one resolution, and their lists by name."""

    ctx: Context
    roots: list[etree._Element]
    lists: dict[str, etree._Element]
    budget: Budget
    #: Children by name of wide elements, for path steps (cdl/_children.py).
    children: ChildIndex = field(default_factory=ChildIndex)

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
