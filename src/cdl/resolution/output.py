"""Phase 7: the resolved document, as a tree, XML bytes, or plain data.

Entry points: :func:`build_output`, :func:`to_bytes`, :func:`to_data` (with
:func:`element_data`, one element's data, and :func:`data_json`, its JSON
text), and
:func:`prepare_output`, the last step of loading (``cdl.load``).

The output round-trips: every namespace used is declared once, on the root,
with the prefixes the documents used where they agree. QName-valued CDL
attributes (cdl:type, and the cdl:ref/cdl:refroot of whatever is still
pending) are written from their resolved form with those prefixes. A default
namespace is declared only when nothing in the output is in no namespace, since
an unqualified element under a default namespace would change meaning.

The general path scans the output for what it rewrites (:func:`_find_rewrites`)
and hoists every declaration to the root (:func:`_declare_namespaces`). Its
specialisation, the known path, taken only with ``Context.fast_paths``
(src/cdl/model/switch.py), needs no scan of the whole tree: the types were written in
their output form when the documents loaded (:func:`prepare_output`; copies
carry it), the references and expressions to write back are the resolver's
unresolved items, and the documents' bytes show that nothing is declared
below the root. It writes what the general path writes, with the same rules
(:func:`_rewrite`, :func:`_qname`), and declines (changing nothing) whenever
one of those facts does not hold.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from lxml import etree

from ..model.elements import table_index, tag_of
from ..model.naming import Prefixes, relative_text
from ..model.scan import ListScan
from ..model.tables import Ref
from ..model.vocabulary import (
    A_CREF,
    A_LAZY,
    A_REFROOT,
    A_TYPE,
    CDL_NS,
    ENGINE_NS,
    LIST_PARENTS,
    P_COPIES,
    P_DOC,
    P_EXPR,
    P_EXT,
    P_REF,
    T_CDL,
    T_CONFIGURATION,
    T_EXPRESSION,
    T_SYSTEM,
    T_TYPES,
    UP,
    split_clark,
)
from ..model.workspace import Context, SourceDoc, Workspace, variables_of
from .references import in_part

#: One value of the plain data an output gives (``cdl.Data``; README.md, "JSON
#: output"): a string, an object of values by name, or a list of the values of
#: a repeated name.
Data: TypeAlias = str | dict[str, "Data"] | list["Data"]

_NS = {"e": ENGINE_NS, "cdl": CDL_NS}
#: Elements with any attribute (see _find_rewrites).
_ATTRIBUTED = ListScan("[@*]")
_UNQUALIFIED = etree.XPath("boolean(descendant-or-self::*[namespace-uri()=''])")


_TYPED = ListScan("[@cdl:type]", {"cdl": CDL_NS})
#: Encodings in which every ASCII character is its own single byte, so that
#: an attribute name can be looked for in the document's bytes.
_ASCII_ENCODINGS = re.compile(r"(?:UTF-?8|(?:US-)?ASCII|ISO[-_]?8859-\d+|LATIN-?\d|(?:WINDOWS|CP)-?125\d)\Z", re.IGNORECASE)


def may_be_written(doc: SourceDoc, name: bytes, value: bytes = b"", before: frozenset[bytes] | None = None) -> bool:
    """Whether ``doc`` may hold an attribute of local name ``name`` (any
    prefix) whose written value the regular expression ``value`` matches
    (from the opening quote); with ``before``, whether its bytes hold
    ``name`` right after one of those bytes.

    Every attribute of a loaded document was written in its bytes (the loader
    refuses DTDs, so none is defaulted), and an attribute's name cannot be
    written with character references: when the bytes do not hold the name
    and an ``=``, the document has no such attribute. Searching the bytes
    costs far less than an XPath scan of a large document. Documents in an encoding where ASCII is not single bytes
    (UTF-16, EBCDIC) may hold anything.
    """
    data = doc.data
    encoding = doc.root.getroottree().docinfo.encoding or ""
    head = data[3:5] if data.startswith(b"\xef\xbb\xbf") else data.lstrip()[:2]
    if not _ASCII_ENCODINGS.match(encoding) or head[:1] != b"<" or head[1:2] == b"\x00":
        return True
    # The name first, without a word boundary: a pattern that starts with a
    # literal is searched for at memchr speed.
    pattern = re.escape(name) if before is not None else re.escape(name) + rb"\s*=\s*" + value
    for found in re.finditer(pattern, data):
        start = found.start()
        previous = data[start - 1 : start]
        if (previous in before) if before is not None else (start == 0 or previous not in _NAME_BYTES):
            return True
    return False


#: Bytes that can precede ``name`` inside a longer name (``subtype``).
_NAME_BYTES = frozenset(bytes([b]) for b in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") | frozenset(
    bytes([b]) for b in range(0x80, 0x100)
)
#: What precedes a prefix used in a name: ``<p:x``, ``</p:x``, `` p:a="``.
_NAME_STARTS = frozenset((b"<", b"/", b" ", b"\t", b"\n", b"\r"))
#: A lazy value that is not plainly true: the loader may have made it "false".
_NOT_TRUE = rb"""(?:"(?!\s*(?:true|1)\s*")|'(?!\s*(?:true|1)\s*'))"""


@dataclass(frozen=True)
class OutputFacts:
    """What the known path of the output needs to know of a Document's loaded
    trees, found once (:func:`prepare_output`) when it loads: every value the
    output rewrites comes from those trees, and copies carry it.
    """

    #: Whether every cdl:type below a list parent is already written as the
    #: output writes it (the loader wrote the resolved name; this rewrote it):
    #: then the output needs no rewrite per typed element (there is one per
    #: copy of a typed prototype property).
    types_written: bool
    #: The tags of the typed elements (inheritance passes a cdl:type only to
    #: an element of the same tag, or to a list extending a typed list, which
    #: makes this None), and their output values: the output finds which
    #: prefixes the values use by looking at these tags only.
    type_tags: frozenset[str] | None
    type_values: frozenset[str]
    #: Whether a document may hold cdl:lazy="false", which the output drops.
    lazy_false: bool
    #: Whether every namespace the documents' names use is declared on the
    #: main document's root (see :func:`_declared_on_root`).
    declared_on_root: bool = False
    #: The declaration (prefix, URI) this added to the main document's root:
    #: the one namespace type values use that the root does not declare.
    added: tuple[tuple[str, str], ...] = ()


def prepare_output(
    docs: Sequence[SourceDoc], prefixes_seed: list[dict[str | None, str]], fast_paths: bool = True
) -> OutputFacts | None:
    """The last step of loading, for the output's known path: write the
    documents' cdl:type values in their output form, when it is known before
    resolution, and say what else the output must know. Without
    ``fast_paths`` (the load's, src/cdl/model/switch.py): None, and nothing written.

    The output form is known when the main document declares no default
    namespace (with one, the output keeps it or not depending on what it
    holds) and each type's namespace has its prefix from the documents'
    declarations alone (a prefix the naming invents depends on what was
    named before). Then every copy carries the output form, which the
    general path writes again unchanged (:func:`_qname`). Nothing else reads
    cdl:type before the output: type checks (cdl.loading.schema) read the output.
    This runs before the Document exists, which never changes afterwards.
    """
    if not fast_paths:
        return None
    lazy_false = any(may_be_written(doc, b"lazy", _NOT_TRUE) for doc in docs)
    on_root = _declared_on_root(docs)
    typed = [el for doc in docs if may_be_written(doc, b"type") for el in _TYPED(doc.list_parents(), doc.element_bound)]
    unknown = OutputFacts(False, None, frozenset(), lazy_false, on_root)
    if not typed:
        return OutputFacts(True, frozenset(), frozenset(), lazy_false, on_root)
    if docs[0].nsmap.get(None):
        return unknown
    by_uri = Prefixes(prefixes_seed).by_uri
    texts: dict[str, str] = {}
    for el in typed:
        clark = el.get(A_TYPE, "")
        if clark not in texts:
            uri = split_clark(clark)[0]
            if uri and uri not in by_uri:
                return unknown
            texts[clark] = _qname(clark, by_uri.__getitem__, None)
    for el in typed:
        el.set(A_TYPE, texts[el.get(A_TYPE, "")])
    if any(tag_of(parent) in LIST_PARENTS for el in typed if (parent := el.getparent()) is not None):
        return OutputFacts(True, None, frozenset(texts.values()), lazy_false, on_root)
    tags = frozenset(tag_of(el) for el in typed)
    added = _declare_value_namespace(docs[0], texts, lazy_false, on_root)
    return OutputFacts(True, tags, frozenset(texts.values()), lazy_false, on_root, added)


def _declare_value_namespace(
    main: SourceDoc, texts: dict[str, str], lazy_false: bool, on_root: bool
) -> tuple[tuple[str, str], ...]:
    """Declare on the main document's root the namespace its type values
    use and it does not declare (xsd, typically), and return it.

    The output declares such a namespace on its root after every namespace
    its names use. It can add a declaration only with lxml's hoisting, which
    walks and re-points every element of the output; made here, on the
    loaded document (once per Document, a tree the size of the input), every
    working copy's root carries it last, and the output only keeps it. Only
    when the output can take its known path, and for one namespace: with
    several, the output's order of them is not known here.
    """
    if lazy_false or not on_root or not _one_prefix_each(main.root):
        return ()
    declared = set(main.root.nsmap.values())
    missing: dict[str, str] = {}
    for clark, text in texts.items():
        uri = split_clark(clark)[0]
        if uri and uri not in declared:
            missing[text.split(":", 1)[0]] = uri
    if len(missing) != 1:
        return ()
    # The root declares each namespace once and nothing is declared below
    # it (on_root): the walk re-points nothing and every declaration stays.
    etree.cleanup_namespaces(main.root, top_nsmap=missing, keep_ns_prefixes=[*(p for p in main.root.nsmap if p), *missing])
    return tuple(missing.items())


def _declared_on_root(docs: Sequence[SourceDoc]) -> bool:
    """Whether every namespace that a name in the documents may use is
    declared on the main document's root: then no working tree ever holds a
    declaration below its root, so the output needs no hoisting.

    Each document declares everything on its root (``uniform_namespaces``);
    lxml binds an element copied into the main document to the main root's
    declaration of its namespace, whatever the prefix, and declares the
    namespace on the copy only when the main root lacks it. A namespace
    another document declares but the main root does not is safe when no
    name is written with its prefix: the bytes hold that prefix only after a
    quote (a QName value such as ``cdl:type="xsd:string"``), never after
    ``<``, ``/`` or a space.
    """
    main = set(docs[0].nsmap.values())
    if not all(doc.uniform_namespaces for doc in docs):
        return False
    for doc in docs[1:]:
        for prefix, uri in doc.nsmap.items():
            if uri in main:
                continue
            # (A prefix outside ASCII may be written in other bytes than UTF-8's.)
            if prefix is None or not prefix.isascii() or may_be_written(doc, prefix.encode() + b":", before=_NAME_STARTS):
                return False
    return True


def _qname(clark: str, prefix: Callable[[str], str], default: str | None) -> str:
    """How the output writes the name ``clark`` (``{uri}local``): with the
    prefix of its namespace, unprefixed in no namespace or in ``default``.
    A value already in output form (no ``{``: :func:`prepare_output` wrote
    it) is in no namespace for this, and stays as it is."""
    uri, local = split_clark(clark)
    if not uri or uri == default:
        return local
    return f"{prefix(uri)}:{local}"


#: One rewrite of a pending reference: the element, the attribute it is
#: written to (cdl:ref, or a variable's plain ref), the reference.
_RefWrite = tuple[etree._Element, str, Ref]


def build_output(
    ws: Workspace,
    system_only: bool = False,
    keep_origins: bool = False,
    consume: bool = False,
    unresolved: Sequence[etree._Element] | None = None,
    facts: OutputFacts | None = None,
    within: etree._Element | None = None,
) -> etree._Element:
    """A new cdl:cdl tree holding the main document's resolved lists.

    ``within`` (an element of the main document's cdl:system, with
    ``system_only``): only that element, below the elements that hold it
    (without their other children); the working trees are read, never changed.

    ``keep_origins`` leaves the private document marks in place, for a caller
    (typed validation) that must report where each value was written. With
    ``consume`` the working trees' parts move into the output instead of
    being copied; the workspace is unusable afterwards. ``unresolved`` (the
    main document's items left unresolved, in document order) and ``facts``
    (the Document's, :func:`prepare_output`) let a consuming output take the
    known path (:func:`_known_rewrites`).
    """
    ctx = ws.ctx
    source = ws.roots[0]
    if within is not None:
        parts = body = [_holding(within)]
        consume = False
    else:
        parts = [
            child
            for child in source
            if child.tag == T_SYSTEM or (not system_only and child.tag in (T_TYPES, T_CONFIGURATION))
        ]
        body = parts if consume else [copy.deepcopy(part) for part in parts]
    content = [part for part in body if part.tag != T_TYPES]  # schemas are copied as written
    known = _known_facts(ws, consume, unresolved, facts)
    default, used_prefixes = _write_values(ws, content, keep_origins, system_only, unresolved, known)
    nsmap = _output_nsmap(ctx, default)
    root = _output_root(ws, parts, body, nsmap, consume)
    if ctx.docs[0].target_ns:
        root.set("targetNamespace", ctx.docs[0].target_ns)
    used_prefixes.add(ctx.prefixes.prefix(CDL_NS))
    _declare_namespaces(root, nsmap, used_prefixes, known if root is source else None)
    return root


def _holding(el: etree._Element) -> etree._Element:
    """A copy of ``el`` inside copies of its ancestors up to its top level
    part (cdl:system), each holding only the next: what an output of ``el``
    alone is made of."""
    held = copy.deepcopy(el)
    held.tail = None
    parent = el.getparent()
    while parent is not None and parent.getparent() is not None:
        holder = etree.Element(parent.tag, dict(parent.attrib), nsmap=parent.nsmap)
        holder.text = parent.text
        holder.append(held)
        held = holder
        parent = parent.getparent()
    return held


def _known_facts(
    ws: Workspace, consume: bool, unresolved: Sequence[etree._Element] | None, facts: OutputFacts | None
) -> OutputFacts | None:
    """The Document's facts when the output may take its known path, else None:
    with the fast paths on, a consuming output that knows the unresolved items,
    every type already written as output, no cdl:lazy="false" to drop, and no
    default namespace whose keeping depends on the output's content."""
    if (
        ws.ctx.fast_paths
        and consume
        and unresolved is not None
        and facts is not None
        and facts.types_written
        and facts.type_tags is not None
        and not facts.lazy_false
        and not ws.ctx.docs[0].nsmap.get(None)
    ):
        return facts
    return None


def _write_values(
    ws: Workspace,
    content: list[etree._Element],
    keep_origins: bool,
    system_only: bool,
    unresolved: Sequence[etree._Element] | None,
    known: OutputFacts | None,
) -> tuple[str | None, set[str]]:
    """Write what the output rewrites in ``content`` (pending references and
    expressions' variables, types, cdl:lazy="false") and strip the private
    marks: the default namespace the output declares, and the prefixes the
    written values use."""
    marks = _private_marks(keep_origins)
    if known is not None and unresolved is not None:
        items = [el for el in unresolved if not system_only or in_part(el, T_SYSTEM)]
        return None, _known_rewrites(ws, content, marks, items, known)
    refs: list[_RefWrite] = []
    typed: list[tuple[etree._Element, str]] = []  # with the type as written
    _find_rewrites(ws, content, marks, refs, typed)
    default = _output_default(ws, content, refs, typed)
    writer = _Writer(ws, default)
    for el, written_type in typed:
        el.set(A_TYPE, writer.qname(written_type))
    writer.write_refs(refs)
    return default, writer.prefixes_used()


def _output_default(
    ws: Workspace, content: list[etree._Element], refs: list[_RefWrite], typed: list[tuple[etree._Element, str]]
) -> str | None:
    """The main document's default namespace, kept for the output unless
    something in it is in no namespace: an unqualified element or QName
    value under a default namespace would change meaning."""
    default = ws.ctx.docs[0].nsmap.get(None) or None
    if default and (
        any(not written_type.startswith("{") for _, written_type in typed)
        # (Asked of one top level list at a time: libxml2 caps an XPath
        # node-set at ten million nodes, which a whole system can exceed.)
        or any(_UNQUALIFIED(lst) for part in content for lst in part)
        or any(_unqualified_value(ref, ws) for _, _, ref in refs)
    ):
        return None
    return default


def _private_marks(keep_origins: bool) -> tuple[str, ...]:
    """The engine's attributes that the output drops, besides those of pending
    items (P_REF, P_EXPR): the document marks stay with ``keep_origins``."""
    return (P_EXT,) if keep_origins else (P_EXT, P_DOC, P_COPIES)


def _known_rewrites(
    ws: Workspace, content: list[etree._Element], marks: tuple[str, ...], items: list[etree._Element], known: OutputFacts
) -> set[str]:
    """The known path of :func:`_write_values` (see :func:`_known_facts`): the
    references and expressions to write back are ``items``, those left
    unresolved (all of them items, since copies are made only of resolved
    targets), there is no cdl:lazy="false" to drop, and types are already
    written as output. One strip removes the private ``marks``. The prefixes
    the values use."""
    refs: list[_RefWrite] = []
    for el in items:
        _rewrite(el, ws, refs)
    # Written before the strip: right after it, lxml's attribute writes are
    # much slower (the allocator reusing what the strip freed).
    writer = _Writer(ws, None)
    writer.write_refs(refs)
    for part in content:
        etree.strip_attributes(part, *marks, P_REF, P_EXPR)
    return _type_prefixes(content, known) | writer.prefixes_used()


def _output_nsmap(ctx: Context, default: str | None) -> dict[str | None, str]:
    """The declarations of the output's root: every namespace a document
    declares, with the output's prefixes, and ``default`` unprefixed."""
    nsmap: dict[str | None, str] = {}
    for doc in ctx.docs:
        for uri in doc.namespaces:
            if uri and uri != default:
                nsmap[ctx.prefixes.prefix(uri)] = uri
    nsmap[ctx.prefixes.prefix(CDL_NS)] = CDL_NS
    if default:
        nsmap[None] = default
    return nsmap


def _output_root(
    ws: Workspace, parts: list[etree._Element], body: list[etree._Element], nsmap: dict[str | None, str], consume: bool
) -> etree._Element:
    """The output's root, holding ``body``: the working root itself when it
    already declares what the output root must (the usual case), so the
    parts stay where they are; moving them to a new root costs time per
    element, since every namespace reference below must be re-pointed at the
    new root's declarations. This is no specialisation: the root kept also
    keeps the order of its declarations, which a new root writes otherwise,
    so it is the rule for a consuming output in both modes."""
    source = ws.roots[0]
    if consume and all(nsmap.get(p) == u for p, u in source.nsmap.items() if u != ENGINE_NS):
        for child in list(source):
            if child not in parts:
                source.remove(child)
        source.attrib.clear()
        source.text = None
        return source
    root = etree.Element(T_CDL, nsmap=nsmap)
    root.extend(body)
    return root


def _declare_namespaces(
    root: etree._Element, nsmap: dict[str | None, str], used_prefixes: set[str], on_source: OutputFacts | None
) -> None:
    """Declare on ``root`` what the output uses, and nothing else.

    First hoist every declaration to the root: elements are rebound to the
    root's declarations (``nsmap`` holds every URI any document declares), so
    no declaration remains below the root. Only then keep the prefixes that
    attribute values alone use: kept earlier, an inner declaration of the
    same prefix for another URI would survive and shadow them. ``on_source``
    (the known path's facts, when ``root`` is the working root) may show the
    hoisting would change nothing (:func:`_declared_already`).
    """
    values_nsmap = {p: nsmap[p] for p in used_prefixes if p in nsmap}
    if on_source is not None and _declared_already(root, values_nsmap, on_source):
        return
    etree.cleanup_namespaces(root, top_nsmap=nsmap)
    _declare_value_prefixes(root, values_nsmap)


def _declared_already(root: etree._Element, values_nsmap: dict[str, str], facts: OutputFacts) -> bool:
    """The known path of :func:`_declare_namespaces`: when nothing is declared
    below the root and each element is bound to the root's only declaration
    of its namespace, hoisting would change nothing, and its walk re-points
    every element. Dropping the declarations nothing uses is what remains
    (then True). False, having changed nothing, otherwise."""
    if not facts.declared_on_root or not _one_prefix_each(root):
        return False
    added = dict(facts.added)
    if all(p == root.prefix or added.get(p) == uri for p, uri in values_nsmap.items()):
        # What values use is the root's own namespace, or was declared
        # last on the root when the document loaded (prepare_output),
        # where the hoisting would put it: keep it.
        etree.cleanup_namespaces(root, keep_ns_prefixes=sorted(values_nsmap))
        return True
    etree.cleanup_namespaces(root)
    _declare_value_prefixes(root, values_nsmap)
    return True


def _declare_value_prefixes(root: etree._Element, values_nsmap: dict[str, str]) -> None:
    """Declare on ``root`` the prefixes attribute values alone use (this walks
    the tree again; with nothing to add it would change nothing, as every
    declaration left is used)."""
    declared = root.nsmap
    if any(declared.get(p) != uri for p, uri in values_nsmap.items()):
        etree.cleanup_namespaces(root, top_nsmap=values_nsmap, keep_ns_prefixes=sorted(values_nsmap))


def _one_prefix_each(root: etree._Element) -> bool:
    """Whether the root declares each of its namespaces once."""
    uris = list(root.nsmap.values())
    return len(set(uris)) == len(uris)


class _Writer:
    """Writes QName values with the output's prefixes, each distinct name once."""

    def __init__(self, ws: Workspace, default: str | None) -> None:
        self.ws = ws
        self.prefix = ws.ctx.prefixes.prefix
        self.default = default
        #: Clark name -> as written; values repeat a lot.
        self.written: dict[str, str] = {}

    def qname(self, clark: str) -> str:
        text = self.written.get(clark)
        if text is None:
            text = self.written[clark] = _qname(clark, self.prefix, self.default)
        return text

    def write_refs(self, refs: list[_RefWrite]) -> None:
        for el, attr, ref in refs:
            if attr == A_CREF:
                _write_ref(el, ref, A_CREF, A_REFROOT, self.ws, self.qname)
            else:
                _write_ref(el, ref, "ref", "refroot", self.ws, self.qname)

    def prefixes_used(self) -> set[str]:
        """The prefixes of what this wrote."""
        return {text.split(":", 1)[0] for text in self.written.values() if ":" in text}


def _rewrite(el: etree._Element, ws: Workspace, refs: list[_RefWrite]) -> None:
    """Note the reference of ``el`` to be written back, or name the variables
    of an unevaluated expression and note theirs: the one rule for what a
    pending item writes back, whichever path found it."""
    tables = ws.ctx.tables
    index = el.get(P_REF)
    if index is not None:
        refs.append((el, A_CREF, tables.refs[int(index)]))
    elif el.tag == T_EXPRESSION:
        parsed = tables.exprs[table_index(el, P_EXPR)]
        for var, var_el in zip(parsed.variables, variables_of(ws, el)):
            var_el.set("name", var.name)
            refs.append((var_el, "ref", var.ref))


def _find_rewrites(
    ws: Workspace, content: list[etree._Element], marks: tuple[str, ...], refs: list[_RefWrite], typed: list[tuple[etree._Element, str]]
) -> None:
    """The general way: one C-level scan finds every element the output changes.

    Once the document marks are stripped, few elements have attributes, and
    they include every rewrite (pending references and expressions, types,
    lazy="false"). libxml2 tests one attribute axis per element at less cost
    than the four tests that pick those out, which Python then applies to
    the few found. The private ``marks`` are stripped first, those of the
    pending items once they are written.
    """
    for part in content:
        etree.strip_attributes(part, *marks)
    for el in _ATTRIBUTED(content, ws.size_bound()):
        attrib = el.attrib
        if P_REF in attrib or el.tag == T_EXPRESSION:
            _rewrite(el, ws, refs)
        if attrib.get(A_LAZY) == "false":
            del attrib[A_LAZY]
        written_type = attrib.get(A_TYPE)
        if written_type is not None:
            typed.append((el, written_type))
    for part in content:
        etree.strip_attributes(part, P_REF, P_EXPR)


def _type_prefixes(content: list[etree._Element], facts: OutputFacts) -> set[str]:
    """The prefixes the cdl:type values of ``content`` use (they are written
    already): found among the elements of the typed tags only, and only until
    each prefix the documents' types use is seen."""
    wanted = {text.split(":", 1)[0] for text in facts.type_values if ":" in text}
    found: set[str] = set()
    if not wanted:
        return found
    for part in content:
        for el in part.iterdescendants(*facts.type_tags or ()):
            text = el.get(A_TYPE)
            if text is not None and ":" in text:
                found.add(text.split(":", 1)[0])
                if found == wanted:
                    return found
    return found


def _unqualified_value(value: Ref, ws: Workspace) -> bool:
    """Whether a reference to be written names something in no namespace."""
    names = [s for s in value.steps if s != UP]
    if value.refroot is not None:
        names.append(_refroot_name(value, ws))
    return any(not n.startswith("{") for n in names)


def _refroot_name(ref: Ref, ws: Workspace) -> str:
    """The candidate of a reference's cdl:refroot that actually names a list,
    so the output means what the lookup found."""
    assert ref.refroot is not None
    return next((c for c in ref.refroot.candidates if c in ws.lists), ref.refroot.candidates[0])


def _write_ref(
    el: etree._Element, ref: Ref, ref_attr: str, root_attr: str, ws: Workspace, qname: Callable[[str], str]
) -> None:
    """Write a pending reference back as attributes, in its relative form."""
    if ref.refroot is not None:
        el.set(root_attr, qname(_refroot_name(ref, ws)))
    el.set(ref_attr, relative_text([s if s == UP else qname(s) for s in ref.steps]))


def to_bytes(root: etree._Element, pretty: bool = True) -> bytes:
    """Serialize an output tree as UTF-8 XML with a declaration."""
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=pretty)


def to_data(root: etree._Element) -> dict[str, Data]:
    """Plain Python data: ``{'configuration': {...}, 'system': {...}}``, each
    part mapped as :func:`element_data` maps an element, always an object.

    The mapping (README.md, "JSON output"; docs/semantics.md, "JSON
    mapping") follows xmltodict's: names as the XML output writes them
    (``prefix:local``), attributes as ``"@name"`` keys, the text as
    ``"#text"`` beside attributes or children, ``""`` for an empty value, a
    repeated name as a list.
    """
    names = _DataNames(root)
    result: dict[str, Data] = {}
    for part in root:
        if part.tag in (T_CONFIGURATION, T_SYSTEM):
            value = _element_data(part, names)
            result[split_clark(part.tag)[1]] = value if isinstance(value, dict) else {}
    return result


def element_data(el: etree._Element) -> Data:
    """One element of an output tree as plain data, without its name.

    A string when the element has neither attributes nor children (its text
    exactly, ``""`` when empty); otherwise a dict: ``"@name"`` for each
    attribute, in the order written; each child's name (``prefix:local``)
    for its value, a name that repeats mapping to the list of its values in
    order; then ``"#text"``, the element's text, when it is not empty (for
    an element with children: its pieces of text joined, when they are not
    whitespace only, which is indentation). Namespace declarations are not
    attributes and are left out.
    """
    return _element_data(el, _DataNames(el.getroottree().getroot()))


class _DataNames:
    """How the XML output writes the names of elements and attributes.

    The output declares every namespace once, on its root (build_output), so
    an attribute's prefix is found in the root's declarations, once per
    name; an element's prefix is its own.
    """

    def __init__(self, root: etree._Element) -> None:
        self.prefixes = {uri: prefix for prefix, uri in root.nsmap.items() if prefix}
        self.prefixes[_XML_NS] = "xml"
        self.attributes: dict[str, str] = {}

    def attribute_key(self, el: etree._Element, clark: str) -> str:
        """The key of the attribute ``clark`` of ``el``: ``@prefix:local``."""
        key = self.attributes.get(clark)
        if key is None:
            uri, local = split_clark(clark)
            if not uri:
                key = self.attributes[clark] = "@" + local
            elif uri in self.prefixes:
                key = self.attributes[clark] = f"@{self.prefixes[uri]}:{local}"
            else:
                # A namespace declared below the root, where the output did
                # not hoist it: the element's own scope names it.
                key = f"@{next(p for p, u in el.nsmap.items() if p and u == uri)}:{local}"
        return key


_XML_NS = "http://www.w3.org/XML/1998/namespace"


def _qname_of(el: etree._Element) -> str:
    """An element's name as the output writes it: ``prefix:local``, or
    ``local`` in the default namespace or none (which has no prefix)."""
    local = split_clark(tag_of(el))[1]
    prefix = el.prefix
    return f"{prefix}:{local}" if prefix else local


def _element_data(top: etree._Element, names: _DataNames) -> Data:
    # Iterative post-order over the subtree: documents can be deep.
    results: dict[etree._Element, Data] = {}
    stack: list[tuple[etree._Element, bool]] = [(top, False)]
    while stack:
        node, expanded = stack.pop()
        children = len(node)
        if children and not expanded:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node))
            continue
        attributes = node.items()
        if not attributes and not children:
            results[node] = node.text or ""
            continue
        value: dict[str, Data] = {names.attribute_key(node, name): text for name, text in attributes}
        for child in node:
            _add_child(value, _qname_of(child), results.pop(child))
        if children:
            # Text between children: indentation unless some is not blank.
            text = "".join([node.text or "", *(child.tail or "" for child in node)])
            if text.strip():
                value["#text"] = text
        elif node.text:
            value["#text"] = node.text
        results[node] = value
    return results[top]


def _add_child(value: dict[str, Data], key: str, item: Data) -> None:
    """Add a child's value under its name: a name seen before maps to a list."""
    existing = value.get(key)
    if existing is None:
        value[key] = item
    # An element's value is text or a dict, never a list: a list is the one
    # made here for a repeated name.
    elif isinstance(existing, list):
        existing.append(item)
    else:
        value[key] = [existing, item]


def data_json(data: Data) -> str:
    """``json.dumps(data, indent=2, ensure_ascii=False)``, written with an
    explicit stack: the data nests as deep as the document, deeper than the
    json module's recursive encoder goes."""
    quote = _encode_string
    out: list[str] = []
    stack: list[str | tuple[Data, int]] = [(data, 0)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        value, depth = item
        if isinstance(value, str):
            out.append(quote(value))
            continue
        if not value:
            out.append("{}" if isinstance(value, dict) else "[]")
            continue
        inner = "\n" + "  " * (depth + 1)
        pieces: list[str | tuple[Data, int]] = []
        if isinstance(value, dict):
            first = "{" + inner
            for key, entry in value.items():
                pieces.append(f"{first}{quote(key)}: ")
                pieces.append((entry, depth + 1))
                first = "," + inner
            pieces.append("\n" + "  " * depth + "}")
        else:
            first = "[" + inner
            for entry in value:
                pieces.append(first)
                pieces.append((entry, depth + 1))
                first = "," + inner
            pieces.append("\n" + "  " * depth + "]")
        stack.extend(reversed(pieces))
    return "".join(out)


#: The json module's own quoting of a string (``ensure_ascii=False``).
_encode_string: Callable[[str], str] = json.encoder.encode_basestring
