"""Phase 1: read one CDL document safely and normalize it.

Entry point: :func:`load_document`. It parses the bytes with a hardened
parser (no DTD, no entities, no network), checks the document structure of
section 6, removes cdl:documentation, and parses every CDL annotation once:
QNames are resolved with the namespaces in scope where they are written, paths
become steps (absolute ones translated to relative, 7.3.4), expressions are
compiled. The results go into the shared :class:`Tables`; the tree keeps only
private index attributes, so later phases never see prefixes.

The rules of an element's CDL attributes are defined once
(:func:`_parse_attributes`). With ``fast_paths`` (``LoadOptions.fast_paths``,
src/cdl/model/switch.py) and a document whose namespaces are all declared on its root,
the same texts always mean the same: parsed texts are remembered
(:class:`_LoadCache`) and the working form of an attribute set met again is
replayed (:class:`_AttributeForm`). Without it, every element is parsed with
its own namespaces.
"""

from __future__ import annotations

import re
import xml.parsers.expat as expat
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, cast

from lxml import etree

if TYPE_CHECKING:
    from lxml.etree._docloader import _InputDocument  # stubs only: what a Resolver returns

from ..errors import CdlError, ExpressionError, LazinessError, LimitError, LoadError, NameResolutionError, ReferenceResolutionError
from ..model import expressions as _expressions
from ..model.elements import depth_in_list, has_value, replace_with_text, tag_of
from ..model.limits import Limits
from ..model.paths import PathSyntaxError, PrefixError, is_ncname, parse_name_ref, parse_path, parse_qname, relative_ref
from ..model.places import written_as
from ..model.suggest import did_you_mean, nearest, suggestion
from ..model.tables import Expression, NameRef, Ref, Tables, Variable
from ..model.vocabulary import (
    A_CREF,
    A_EXTENDS,
    A_LAZY,
    A_REFROOT,
    A_TYPE,
    A_USE,
    CDL_ATTRIBUTES,
    CDL_NS,
    ENGINE_NS,
    LIST_PARENTS,
    P_DOC,
    P_EXPR,
    P_EXT,
    P_REF,
    T_CDL,
    T_CONFIGURATION,
    T_DOCUMENTATION,
    T_EXPRESSION,
    T_IMPORT,
    T_SYSTEM,
    T_TYPES,
    T_VARIABLE,
    UP,
    split_clark,
)
from ..model.workspace import Problems, SourceDoc
from ..text.tags import attribute_line, start_tag_in_bytes

_ORDER = {T_IMPORT: 0, T_TYPES: 1, T_CONFIGURATION: 2, T_SYSTEM: 3}
_CDL_PREFIX = "{" + CDL_NS + "}"
_BOOLEANS = {"true": "true", "1": "true", "false": "false", "0": "false"}


def load_document(data: bytes, url: str, index: int, tables: Tables, limits: Limits, *, fast_paths: bool = True) -> SourceDoc:
    """Parse and normalize one document; raise CdlError (possibly a group)."""
    if len(data) > limits.max_bytes:
        raise LimitError(
            f"the document is {len(data)} bytes, over the input size limit of {limits.max_bytes} bytes (max_bytes)",
            url=url,
        )
    root = _parse(data, url, limits)
    # Namespaces are read before anything is marked: the marks themselves
    # live in the engine's namespace.
    uniform, declared = _declarations(data, root, fast_paths)
    if ENGINE_NS in declared.values():
        # The engine keeps its own bookkeeping in this namespace; a document
        # using it could forge that bookkeeping. Names only enter a namespace
        # through a declaration, so refusing the declaration is exact.
        raise LoadError(f"the namespace {ENGINE_NS} is reserved for the engine", url=url)
    # Mark the root first: lxml then declares the engine's namespace once, on
    # the root, and every later mark reuses that declaration. Marked list by
    # list instead, it would be declared on each list, and hoisting thousands
    # of declarations at output time is quadratic.
    root.set(P_DOC, str(index))
    problems = Problems(limits.max_errors)
    doc = _check_structure(root, url, index, problems)
    problems.raise_if_any()
    doc.uniform_namespaces = uniform
    doc.data = data
    doc.declared = declared
    doc.namespaces = tuple(sorted(set(declared.values())))
    # The walk counts the elements of the lists; with the rest of the tree
    # that is the exact count, which later scans use as their bound (cheaper
    # than bounding it from the bytes).
    listed = _normalize(doc, tables, limits, problems, fast_paths)
    problems.raise_if_any()
    others = sum(1 for child in root if child.tag not in LIST_PARENTS for _ in child.iter(etree.Element))
    doc.element_bound = 1 + len(doc.list_parents()) + listed + others
    return doc


def _declarations(data: bytes, root: etree._Element, fast_paths: bool) -> tuple[bool, dict[str | None, str]]:
    """Whether every namespace declaration is on the root, and all of them.

    When the bytes hold no more "xmlns" than the root declares (the usual
    case), each element's in-scope namespaces are the root's and nothing needs
    to walk the tree (with ``fast_paths``; the walk then finds nothing more).
    Otherwise iterwalk's start-ns events report each declaration once,
    without building a namespace map per element.
    """
    declared: dict[str | None, str] = dict(root.nsmap)
    uniform = data.count(b"xmlns") <= len(declared)
    if uniform and fast_paths:
        return True, declared
    for _event, declaration in etree.iterwalk(root, events=("start-ns",)):
        if declaration is None:  # only end-ns events carry none, and they are not asked for
            continue
        prefix, uri = declaration
        if uri in declared.values():
            continue
        key: str | None = prefix or None
        # A prefix bound to two URIs: keep the URI, flag the prefix as taken.
        declared[key if key not in declared else f"{prefix}#{len(declared)}"] = uri
    return uniform, declared


# -- parsing -----------------------------------------------------------------


class _NothingExternal(etree.Resolver):
    """Answers every external load (DTD, entity) with nothing.

    libxml2 still tries to fetch an external DTD subset or parameter entity
    even with load_dtd=False; no_network stops URLs but not local files, so
    this resolver makes sure no file is read on a document's behalf.
    """

    def resolve(self, system_url: str | None, public_id: str | None, context: object) -> _InputDocument:
        return self.resolve_string("", context)


def hardened_parser(
    resolver: etree.Resolver | None = None,
    *,
    remove_blank_text: bool = False,
    remove_comments: bool = False,
    remove_pis: bool = False,
    collect_ids: bool = True,
) -> etree.XMLParser:
    """A parser that never expands entities, reads a DTD or touches the network.

    ``resolver``, if given, replaces the default that answers every external
    load with nothing, and must itself answer every request: lxml keeps
    resolvers in a set, so no order among several can be relied on. A new
    parser per call: lxml parsers are not safe to share between threads.
    """
    parser: etree.XMLParser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False, huge_tree=False,
        remove_blank_text=remove_blank_text, remove_comments=remove_comments, remove_pis=remove_pis, collect_ids=collect_ids,
    )
    parser.resolvers.add(resolver if resolver is not None else _NothingExternal())
    return parser


_FIRST_ELEMENT = re.compile(rb"<[^?!]")


def has_doctype(data: bytes) -> bool:
    """Whether the prolog (before the first element) declares a DOCTYPE.

    Checked on the bytes, before parsing, so a DTD is refused without libxml2
    ever looking at it. Covers ASCII-compatible encodings; for others the
    resolver above and the check after parsing still refuse it.
    """
    first = _FIRST_ELEMENT.search(data)
    prolog = data[: first.start()] if first else data
    return b"<!DOCTYPE" in prolog


_DTD_REFUSED = "the document has a DOCTYPE; DTDs and entity declarations are refused for safety"


def _parse(data: bytes, url: str, limits: Limits) -> etree._Element:
    if not data or data.isspace():  # data.strip() would copy the whole document
        # Said here rather than by libxml2, whose wording and line for an
        # empty input depend on its global state.
        raise LoadError("XML syntax error: not an XML document (the document is empty)", code="XML_SYNTAX", url=url, line=1)
    if has_doctype(data):
        line = data[: data.find(b"<!DOCTYPE")].count(b"\n") + 1
        raise LoadError(_DTD_REFUSED, code="XML_DTD", url=url, line=line)
    parser = hardened_parser(remove_blank_text=True, remove_comments=True, remove_pis=True, collect_ids=False)
    try:
        root = etree.fromstring(data, parser, base_url=url)
    except etree.XMLSyntaxError as exc:
        if any(e.type_name == "ERR_RESOURCE_LIMIT" and "depth" in e.message for e in exc.error_log):
            # libxml2 refuses nesting deeper than 256 (2048 with its "huge"
            # option, which also lifts its other safety limits). Deeper
            # documents are legitimate up to our own configurable limit, so
            # they take the slower expat path.
            return parse_deep(data, url, limits)
        raise LoadError(_syntax_message(exc), code="XML_SYNTAX", url=url, line=exc.lineno or None) from None
    except ValueError as exc:  # e.g. a str with an encoding declaration
        raise LoadError(f"cannot parse the document: {exc}", code="XML_SYNTAX", url=url) from None
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None:
        raise LoadError(_DTD_REFUSED, code="XML_DTD", url=url, line=1)
    if root.getroottree().getroot() is not root:  # pragma: no cover - lxml always returns the root
        raise LoadError("unexpected content around the root element", code="XML_SYNTAX", url=url)
    if _depth_exceeds(root, limits.max_depth):
        raise LimitError(f"the document is nested deeper than the depth limit of {limits.max_depth} (max_depth)", url=url)
    return root


def parse_written(data: bytes, url: str, limits: Limits) -> etree._Element:
    """The document as written, parsed as :func:`load_document` parses it
    (the same refusals; comments, processing instructions and the blanks
    between elements dropped) and not normalized: attributes as written,
    cdl:documentation kept. For comparing two versions of a document
    (``planning.changes``); raises what loading raises."""
    return _parse(data, url, limits)


def _depth_exceeds(root: etree._Element, max_depth: int) -> bool:
    # libxml2 already caps what it parses at 256 levels; only a limit below
    # that needs a look.
    if max_depth >= 256:
        return False
    return bool(root.xpath(f"boolean(/{'/'.join(['*'] * (max_depth + 1))})"))


def _syntax_message(exc: etree.XMLSyntaxError) -> str:
    msg = exc.msg or "not well-formed XML"
    # lxml appends ", line N, column M" which the renderer already shows.
    cut = msg.rfind(", line ")
    if cut > 0:
        msg = msg[:cut]
    if "Document is empty" in msg or "Start tag expected" in msg:
        msg = f"not an XML document ({msg})"
    return f"XML syntax error: {msg}"


class _Refused(Exception):
    def __init__(self, error: CdlError) -> None:
        self.error = error


def parse_deep(data: bytes, url: str, limits: Limits) -> etree._Element:
    """Parse with expat into an lxml tree, with the same refusals as lxml's path.

    For documents nested deeper than libxml2 parses (256 levels); the
    conformance harness reads such documents this way too."""
    builder = etree.TreeBuilder()
    parser = expat.ParserCreate(namespace_separator="}")
    parser.buffer_text = True
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    pending_ns: dict[str | None, str] = {}
    depth = 0

    def clark(name: str) -> str:
        return "{" + name if "}" in name else name

    def refuse_dtd(*_args: object) -> None:
        raise _Refused(
            LoadError(_DTD_REFUSED, code="XML_DTD", url=url, line=parser.CurrentLineNumber)
        )

    def start_ns(prefix: str | None, uri: str) -> None:
        pending_ns[prefix or None] = uri

    def start(name: str, attrs: dict[str, str]) -> None:
        nonlocal depth
        depth += 1
        if depth > limits.max_depth:
            raise _Refused(
                LimitError(
                    f"the document is nested deeper than the depth limit of {limits.max_depth} (max_depth)",
                    url=url,
                    line=parser.CurrentLineNumber,
                )
            )
        # lxml's TreeBuilder.start takes the namespace map and returns the
        # element; the stubs type it as the 2-argument ParserTarget.start.
        try:
            el: etree._Element = builder.start(clark(name), {clark(k): v for k, v in attrs.items()}, dict(pending_ns))  # type: ignore[call-arg, func-returns-value, assignment]
        except ValueError as exc:  # a namespace URI or a name lxml refuses, as libxml2 does on the other path
            raise _Refused(LoadError(f"XML syntax error: {exc}", code="XML_SYNTAX", url=url, line=parser.CurrentLineNumber)) from None
        el.sourceline = _end_line(data, parser.CurrentByteIndex, parser.CurrentLineNumber)  # type: ignore[misc]  # writable in lxml; the stubs say read-only
        pending_ns.clear()

    def end(name: str) -> None:
        nonlocal depth
        depth -= 1
        builder.end(clark(name))

    parser.StartDoctypeDeclHandler = refuse_dtd
    parser.EntityDeclHandler = refuse_dtd
    parser.StartNamespaceDeclHandler = start_ns
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(data, True)
    except _Refused as exc:
        raise exc.error from None
    except expat.ExpatError as exc:
        raise LoadError(
            f"XML syntax error: {expat.ErrorString(exc.code)}", code="XML_SYNTAX", url=url, line=exc.lineno
        ) from None
    root = builder.close()
    # Match the blank-text removal of the lxml path: whitespace between
    # elements is formatting, not value.
    for el in root.iter():
        if len(el) and el.text is not None and not el.text.strip():
            el.text = None
        if el.tail is not None and not el.tail.strip():
            el.tail = None
    return root


def first_element(data: bytes) -> int:
    """Where the start tag of the first element of ``data`` begins (-1: none)."""
    first = _FIRST_ELEMENT.search(data)
    return -1 if first is None else first.start()


def _end_line(data: bytes, at: int, line: int) -> int:
    """The line where the start tag at byte ``at`` of ``data``, which begins on
    ``line``, ends: the line libxml2 records for an element, which expat
    records where the tag begins (``line`` itself when the bytes do not
    tell: a text in UTF-16, say)."""
    tag = start_tag_in_bytes(data, at)
    return line if tag is None else line + data.count(b"\n", at, tag.end())


# -- document structure (section 6) --------------------------------------------


_DOCUMENTATION_FIRST = "cdl:documentation must be the first child of {} (section 6)"


def _check_structure(root: etree._Element, url: str, index: int, problems: Problems) -> SourceDoc:
    tag = root.tag if isinstance(root.tag, str) else ""
    uri, local = split_clark(tag)
    if tag != T_CDL:
        found = f"{{{uri}}}{local}" if uri else f"{local} (no namespace)"
        raise LoadError(
            f"the root element must be cdl:cdl in the namespace {CDL_NS}; found {found}",
            code="NOT_CDL",
            url=url,
            line=root.sourceline,
        )
    doc = SourceDoc(
        index=index,
        url=url,
        root=root,
        target_ns=(root.get("targetNamespace") or "").strip(),
        # Without the engine's own declaration, which marking the root added.
        nsmap={p: u for p, u in root.nsmap.items() if u != ENGINE_NS},
    )
    if root.text and root.text.strip():
        problems.add(LoadError("text is not allowed directly inside cdl:cdl", url=url, line=root.sourceline))
    last = -1
    seen_extension = False
    for position, child in enumerate(list(root)):
        if child.tail and child.tail.strip():
            problems.add(LoadError("text is not allowed directly inside cdl:cdl", url=url, line=child.sourceline))
        if child.tag == T_DOCUMENTATION:
            if position != 0:
                problems.add(LoadError(_DOCUMENTATION_FIRST.format("cdl:cdl"), url=url, line=child.sourceline))
            root.remove(child)
            continue
        ctag = child.tag
        if isinstance(ctag, str) and ctag.startswith("{" + CDL_NS + "}"):
            name = "cdl:" + split_clark(ctag)[1]
            rank = _ORDER.get(ctag)
            if rank is None:
                near = did_you_mean(name, ["cdl:" + split_clark(known)[1] for known in _ORDER])
                problems.add(LoadError(f"{name} is not allowed inside cdl:cdl" + near, url=url, line=child.sourceline))
            elif seen_extension:
                problems.add(
                    LoadError(f"{name} must come before extension elements", url=url, line=child.sourceline)
                )
            elif rank < last or (rank == last and ctag != T_IMPORT):
                problems.add(
                    LoadError(
                        f"{name} is out of place: the children of cdl:cdl are cdl:import*, cdl:types?, "
                        "cdl:configuration?, cdl:system? in that order",
                        url=url,
                        line=child.sourceline,
                    )
                )
            else:
                last = rank
            if ctag == T_IMPORT:
                location = child.get("location")
                if location is None or not location.strip():
                    problems.add(LoadError("cdl:import needs a location attribute", url=url, line=child.sourceline))
                else:
                    doc.imports.append(location.strip())
            elif ctag == T_TYPES:
                for position, doc_el in enumerate(list(child)):
                    if doc_el.tag == T_DOCUMENTATION:
                        if position != 0:
                            problems.add(LoadError(_DOCUMENTATION_FIRST.format("cdl:types"), url=url, line=doc_el.sourceline))
                        child.remove(doc_el)
            elif ctag in LIST_PARENTS:
                _check_lists(child, url, index, problems)
                if ctag == T_SYSTEM and len(child) == 0:
                    problems.add(
                        LoadError(
                            "cdl:system must hold at least one property list (section 8)",
                            url=url,
                            line=child.sourceline,
                        )
                    )
        else:
            seen_extension = True
    return doc


def _check_lists(parent: etree._Element, url: str, index: int, problems: Problems) -> None:
    mark = str(index)
    if parent.text and parent.text.strip():
        problems.add(LoadError(f"text is not allowed inside cdl:{split_clark(tag_of(parent))[1]}", url=url, line=parent.sourceline))
    for position, el in enumerate(list(parent)):
        tail = el.tail
        if tail and tail.strip():
            problems.add(LoadError(f"text is not allowed inside cdl:{split_clark(tag_of(parent))[1]}", url=url, line=el.sourceline))
        tag = tag_of(el)
        if tag == T_DOCUMENTATION:
            if position != 0:
                problems.add(
                    LoadError(_DOCUMENTATION_FIRST.format("cdl:" + split_clark(tag_of(parent))[1]), url=url, line=el.sourceline)
                )
            parent.remove(el)
        elif tag.startswith(_CDL_PREFIX):
            problems.add(
                LoadError(
                    f"cdl:{split_clark(tag)[1]} cannot be a top level property list",
                    url=url,
                    line=el.sourceline,
                )
            )
        else:
            el.set(P_DOC, mark)


# -- annotations ----------------------------------------------------------------


def _normalize(doc: SourceDoc, tables: Tables, limits: Limits, problems: Problems, fast_paths: bool) -> int:
    """Parse the annotations of every list; the number of elements below the list parents.

    One walk over every element of the lists, in document order: lxml's
    iteration costs less than an XPath scan for "has an attribute", and the
    attributes it reads are the ones each element's work starts from. With
    uniform namespaces the same attributes always become the same working
    attributes: with ``fast_paths``, each distinct set met again is parsed
    once and its working form replayed after (:class:`_AttributeForm`).
    """
    parents = doc.list_parents()
    special = _cdl_elements(parents)
    cache = _LoadCache(doc.nsmap, fast_paths and doc.uniform_namespaces)
    forms = cache.forms if cache.shared else None
    # The walk meets only elements (the parser drops comments and processing
    # instructions, and no entity is left unexpanded), whose tag is a str:
    # added as read, without tag_of's check, which costs as much again.
    add_item_tag = cast("Callable[[object], None]", tables.item_tags.add)
    count = 0
    for parent in parents:
        for el in parent.iterdescendants():
            count += 1
            if special and el in special:
                _load_cdl_element(el, doc, tables, limits, cache, problems)
                continue
            items = el.items()
            if not items:
                continue
            before = tuple(items)
            if forms is not None and (form := forms.get(before)) is not None:
                # A fast path: the working form the full parse gave this set
                # before, replayed; a form that depends on the depth, at a
                # depth not met yet, or a value on a reference or a lazy
                # property (which the full parse reports) goes on below.
                if form is _AS_WRITTEN:
                    continue
                drop, put, content_check, by_depth = form
                if put is None:
                    put = by_depth.get(depth_in_list(el))
                if put is not None and not (content_check and (len(el) or ((text := el.text) and text.strip()))):
                    if drop is None:
                        el.attrib.clear()
                    else:
                        for name in drop:
                            del el.attrib[name]
                    for name, value in put:
                        el.set(name, value)
                    if content_check:  # a reference or a lazy property: an item (find_items)
                        add_item_tag(el.tag)
                    continue
            try:
                if not (forms is not None and _reference_alone(el, before, doc, tables, cache)):
                    _parse_attributes(el, doc, tables, cache)
            except CdlError as exc:
                _problem(exc, el, problems)
                continue
            if forms is not None:
                _remember_form(el, before, form, cache)
    return count


def _cdl_elements(parents: list[etree._Element]) -> set[etree._Element]:
    """The elements of the CDL namespace inside the lists (expressions, their
    variables, misplaced ones), once cdl:documentation is dropped.

    They are few: libxml2 finds them by name, and the walk of
    :func:`_normalize` tests membership only when there are any. Looked for
    one list at a time: between two of them, libxml2 walks in one C call,
    which over a whole large system holds the interpreter throughout.
    """
    special = _cdl_below(parents)
    if any(el.tag == T_DOCUMENTATION for el in special):
        # Documentation is no property: drop it first so nothing inside it
        # counts, then look again. Listed first: removing the element an lxml
        # iterator stands on ends the iteration there.
        for parent in parents:
            for el in list(parent.iter(T_DOCUMENTATION)):
                replace_with_text(el)
        special = _cdl_below(parents)
    return special


def _cdl_below(parents: list[etree._Element]) -> set[etree._Element]:
    """The elements of the CDL namespace below ``parents``, the list parents (see :func:`_cdl_elements`)."""
    return {el for parent in parents for child in parent for el in child.iter(_ANY_CDL)}


def _problem(exc: CdlError, el: etree._Element, problems: Problems) -> None:
    if exc.path is None and el.getparent() is not None:
        exc.path = _path_hint(el)
    problems.add(exc)


def _load_cdl_element(
    el: etree._Element, doc: SourceDoc, tables: Tables, limits: Limits, cache: _LoadCache, problems: Problems
) -> None:
    try:
        if el.tag == T_EXPRESSION:
            _load_expression(el, doc, tables, limits, cache)
        elif el.tag == T_VARIABLE:
            holder = el.getparent()
            if holder is None or holder.tag != T_EXPRESSION:
                raise ExpressionError("cdl:variable must be a child of cdl:expression", url=doc.url, line=el.sourceline)
        else:
            raise LoadError(
                f"cdl:{split_clark(tag_of(el))[1]} is not allowed inside a property list "
                "(only cdl:expression and cdl:documentation are)",
                url=doc.url,
                line=el.sourceline,
            )
    except CdlError as exc:
        _problem(exc, el, problems)


#: Any element of the CDL namespace (an lxml tag filter).
_ANY_CDL = "{" + CDL_NS + "}*"
#: An element's attributes, as ``tuple(el.items())``.
_Attributes = tuple[tuple[str, str], ...]


class _AttributeForm(NamedTuple):
    """The working form :func:`_parse_attributes` gives one distinct set of
    attributes (uniform namespaces), as a rewrite to replay.

    Replayed as ``drop`` (deleted) then ``put`` (set, in order): survivors keep
    their places and new attributes are appended, as the full parse leaves
    them. ``put`` is None when it depends on the depth (an absolute cdl:ref
    without cdl:refroot): ``by_depth`` then holds it per depth met.
    """

    #: None: every attribute.
    drop: tuple[str, ...] | None
    put: _Attributes | None
    #: A reference or a lazy property: a value found on it takes the full
    #: parse, which reports it.
    content_check: bool
    by_depth: dict[int, _Attributes]


#: The form of attribute sets that loading leaves as they are and never checks.
_AS_WRITTEN = _AttributeForm((), (), False, {})


def _path_hint(el: etree._Element) -> str:
    """A path for load-time messages, written with the names as they appear."""
    names: list[str] = []
    cur: etree._Element | None = el
    # Up to (not including) the cdl:configuration or cdl:system under the root;
    # a misplaced element of that name deeper down is part of the path.
    while cur is not None:
        parent = cur.getparent()
        if parent is None or parent.tag == T_CDL:
            break
        uri, local = split_clark(tag_of(cur))
        prefix = next((p for p, u in (cur.nsmap or {}).items() if u == uri and p), None) if uri else None
        names.append(f"{prefix}:{local}" if prefix else local)
        cur = parent
    return "/" + "/".join(reversed(names))


class _LoadCache:
    """What one loading pass remembers; dropped once the document is loaded.

    ``shared`` (a document whose namespaces are all declared on its root, and
    fast paths on): every element's namespaces are the root's, so the same
    text always means the same thing, and parsed texts and attribute forms
    are remembered. Otherwise nothing is, and each element's own namespaces
    are read.
    """

    __slots__ = ("shared", "root_nsmap", "names", "paths", "forms", "ref_index", "refs", "seen", "steps")

    def __init__(self, root_nsmap: dict[str | None, str], shared: bool) -> None:
        #: The root's declarations (without the engine's).
        self.root_nsmap = root_nsmap
        self.shared = shared
        #: QNames of cdl:extends and cdl:refroot.
        self.names: dict[str, NameRef] = {}
        #: Paths of cdl:ref: (absolute, steps).
        self.paths: dict[str, tuple[bool, tuple[str, ...]]] = {}
        #: Steps of those paths (QNames) as Clark names.
        self.steps: dict[str, str] = {}
        #: References of cdl:variable by (path, refroot, depth of the property).
        self.refs: dict[tuple[str, str | None, int], Ref] = {}
        #: Table indexes of cdl:ref by (path, refroot, depth of the property;
        #: -1 where the depth changes nothing), for _ref_index: the text
        #: is hashed, not the parsed reference.
        self.ref_index: dict[tuple[str, str | None, int], str] = {}
        #: Attributes as written -> their working form.
        self.forms: dict[_Attributes, _AttributeForm] = {}
        #: Hashes of the attribute sets met once: a set is remembered only
        #: when it comes again, since many never do.
        self.seen: set[int] = set()

    def nsmap(self, el: etree._Element) -> dict[str | None, str]:
        """The namespaces in scope on ``el`` as the document declares them
        (the engine's own declaration, which marking the root added, left out)."""
        if self.shared:
            return self.root_nsmap
        return {prefix: uri for prefix, uri in el.nsmap.items() if uri != ENGINE_NS}


def _remember_form(el: etree._Element, before: _Attributes, form: _AttributeForm | None, cache: _LoadCache) -> None:
    """Remember the working form that :func:`_parse_attributes` just gave
    ``el``, whose attributes were ``before`` (``form``: what is remembered of
    that set so far), for :func:`_normalize` to replay: from
    the second time the set is met (most never come again), and for a form
    that depends on the depth, once per depth met.

    A top level list carries the engine's document mark, so its sets never
    meet those of the elements below it (a relative path is refused on a list).
    """
    if form is None:
        key = hash(before)
        if key not in cache.seen:
            cache.seen.add(key)
            return
    after = tuple(el.items())
    if form is None:
        written = dict(before)
        ref = written.get(A_CREF)
        depth_bound = ref is not None and A_REFROOT not in written and ref.strip().startswith("/")
        content_check = ref is not None or el.get(A_LAZY) == "true"
        kept = dict(after)
        drop = tuple(name for name, _ in before if name not in kept)
        put = _changed(before, after)
        if not (depth_bound or drop or put or content_check):
            cache.forms[before] = _AS_WRITTEN  # nothing to rewrite and nothing to check again
            return
        form = cache.forms[before] = _AttributeForm(
            None if len(drop) == len(before) else drop, None if depth_bound else put, content_check, {}
        )
    if form.put is None:
        form.by_depth[depth_in_list(el)] = _changed(before, after)


def _changed(before: _Attributes, after: _Attributes) -> _Attributes:
    """The attributes of ``after`` that ``before`` lacks or holds otherwise, in order."""
    written = dict(before)
    return tuple((name, value) for name, value in after if written.get(name) != value)


def _parse_attributes(el: etree._Element, doc: SourceDoc, tables: Tables, cache: _LoadCache) -> None:
    """Check the CDL attributes of ``el`` and rewrite them into their working form (the one definition)."""
    attrib = el.attrib
    unknown = [k for k in attrib if k.startswith(_CDL_PREFIX) and k not in CDL_ATTRIBUTES]
    if unknown:
        names = ["cdl:" + split_clark(k)[1] for k in unknown]
        known = sorted("cdl:" + split_clark(k)[1] for k in CDL_ATTRIBUTES)
        near = [close for name in names for close in nearest(name, known)]
        message = f"unknown CDL attribute {', '.join(names)}" + suggestion(list(dict.fromkeys(near)))
        raise LoadError(message, url=doc.url, line=el.sourceline)
    nsmap = cache.nsmap(el)
    extends = attrib.get(A_EXTENDS)
    if extends is not None:
        name = cache.names.get(extends) if cache.shared else None
        if name is None:
            try:
                name = parse_name_ref(extends, nsmap, doc.target_ns)
            except PrefixError as exc:
                raise _bad_qname(doc, "cdl:extends", exc, attribute_line(doc.data, el, A_EXTENDS, extends)) from None
            if cache.shared:
                cache.names[extends] = name
        del attrib[A_EXTENDS]
        el.set(P_EXT, tables.add_name(name))
    ref_text = attrib.get(A_CREF)
    refroot_text = attrib.get(A_REFROOT)
    if refroot_text is not None and ref_text is None:
        raise ReferenceResolutionError(
            "cdl:refroot is given without cdl:ref",
            code="REFROOT_WITHOUT_REF",
            url=doc.url,
            line=attribute_line(doc.data, el, A_REFROOT, refroot_text),
        )
    if ref_text is not None:
        if len(el) > 0 or (el.text and el.text.strip()):
            raise ReferenceResolutionError(
                "a value reference must be placed on a property without a value; this one has "
                + ("child elements" if len(el) else "text"),
                code="REF_WITH_CHILDREN",
                url=doc.url,
                line=attribute_line(doc.data, el, A_CREF, ref_text),
            )
        _write_reference(el, _ref_index(ref_text, refroot_text, el, doc, tables, cache), refroot_text is not None, tables)
    lazy = attrib.get(A_LAZY)
    if lazy is not None:
        el.set(A_LAZY, _boolean(lazy, doc, el))
        if attrib[A_LAZY] == "true":
            tables.item_tags.add(tag_of(el))  # an item (find_items)
        if attrib[A_LAZY] == "true" and ref_text is None and has_value(el):
            raise LazinessError(
                "cdl:lazy marks a property whose value is given at deployment; this one already has a value",
                code="LAZY_WITH_VALUE",
                url=doc.url,
                line=attribute_line(doc.data, el, A_LAZY, lazy),
            )
    type_text = attrib.get(A_TYPE)
    if type_text is not None:
        try:
            clark, _ = parse_qname(type_text, nsmap)
        except PrefixError as exc:
            raise _bad_qname(doc, "cdl:type", exc, el.sourceline) from None
        # Kept as an ordinary attribute (it is inherited like one), holding the
        # resolved name; the serializer writes it back as a prefixed QName.
        el.set(A_TYPE, clark)
    use = attrib.get(A_USE)
    if use is not None:
        if use.strip() not in ("required", "optional"):
            raise LazinessError(
                f"cdl:use is {use!r}; it must be 'required' or 'optional'", code="BAD_USE", url=doc.url, line=el.sourceline
            )
        el.set(A_USE, use.strip())


def _write_reference(el: etree._Element, index: str, has_refroot: bool, tables: Tables, alone: bool = False) -> None:
    """Put the working form of the reference written on ``el`` (table entry
    ``index``) in place of its cdl:ref and cdl:refroot; ``alone``: ``el``
    has no other attribute."""
    attrib = el.attrib
    if alone:
        attrib.clear()
    else:
        del attrib[A_CREF]
        if has_refroot:
            del attrib[A_REFROOT]
    el.set(P_REF, index)
    tables.item_tags.add(el.tag)  # type: ignore[arg-type]  # an item (find_items); a walked element's tag is a str


def _reference_alone(el: etree._Element, before: _Attributes, doc: SourceDoc, tables: Tables, cache: _LoadCache) -> bool:
    """Give ``el`` the working form :func:`_parse_attributes` gives
    ``before``, its attributes, when they are a reference alone on a
    property without a value: a relative cdl:ref, or a cdl:ref with its
    cdl:refroot (a fast path, for a document with uniform namespaces: the
    sets most often met once, a peer's refroot or a path naming a sibling
    list, whose texts are parsed from the cache).

    Never raises; False, changing nothing, for any other set, a property
    with a value, or a text that does not parse (the full parse reports it).
    """
    if len(before) == 1:
        (name, text), refroot_text = before[0], None
        # Relative, without refroot, below a list (a list's sets hold its
        # mark, so a set of one is never a list's): the depth changes nothing.
        if name != A_CREF or text.strip().startswith("/"):
            return False
    elif len(before) == 2:
        (first, first_text), (second, second_text) = before
        if first == A_REFROOT and second == A_CREF:
            text, refroot_text = second_text, first_text
        elif first == A_CREF and second == A_REFROOT:
            text, refroot_text = first_text, second_text
        else:
            return False
    else:
        return False
    if len(el) or ((value := el.text) and value.strip()):
        return False
    refroot = None
    try:
        if refroot_text is not None:
            refroot = cache.names.get(refroot_text)
            if refroot is None:
                refroot = cache.names[refroot_text] = parse_name_ref(refroot_text, cache.root_nsmap, doc.target_ns)
        absolute, steps = cache.paths.get(text) or _path(text, cache.root_nsmap, cache)
    except (PrefixError, PathSyntaxError):
        return False
    _write_reference(el, tables.add_ref(relative_ref(text, refroot, absolute, steps, -1)), refroot_text is not None, tables, alone=True)
    return True


def _bad_qname(doc: SourceDoc, what: str, exc: PrefixError, line: int | None) -> NameResolutionError:
    """BAD_QNAME for the QName of ``what``, saying which declaration is missing."""
    message = f"{what}: {exc}"
    prefix = exc.prefix
    if prefix is not None:
        uri = doc.declared.get(prefix)
        if uri is None or uri == ENGINE_NS:
            message += f': add xmlns:{prefix}="..." to this element or an enclosing one'
        else:
            # Declared on another element: the user most likely means that namespace.
            message += f': add xmlns:{prefix}="{uri}" (as declared elsewhere in this document) to this element or an enclosing one'
    return NameResolutionError(message, code="BAD_QNAME", url=doc.url, line=line)


def _boolean(text: str, doc: SourceDoc, el: etree._Element, attribute: str = A_LAZY) -> str:
    value = _BOOLEANS.get(text.strip())
    if value is None:
        raise LazinessError(
            f"cdl:lazy is {text!r}; it must be an xsd:boolean (true, false, 1 or 0)",
            code="BAD_LAZY",
            url=doc.url,
            line=attribute_line(doc.data, el, attribute, text),
        )
    return value


def _ref_index(
    text: str,
    refroot_text: str | None,
    el: etree._Element,
    doc: SourceDoc,
    tables: Tables,
    cache: _LoadCache,
    depth: int | None = None,
) -> str:
    """The table index of the reference written on property ``el``; ``depth``
    -1 when the caller knows it changes nothing."""
    if depth is None:
        # With a refroot the depth changes nothing.
        depth = -1 if refroot_text is not None else depth_in_list(el)
    if not cache.shared:
        return tables.add_ref(_parse_ref_text(text, refroot_text, cache.nsmap(el), depth, doc, el, None))
    # Same text, same depth, same namespaces: same reference.
    key = (text, refroot_text, depth)
    index = cache.ref_index.get(key)
    if index is None:
        ref = _parse_ref_text(text, refroot_text, cache.root_nsmap, depth, doc, el, cache)
        index = cache.ref_index[key] = tables.add_ref(ref)
    return index


def _parse_ref(
    text: str,
    refroot_text: str | None,
    written_on: etree._Element,
    holder: etree._Element,
    doc: SourceDoc,
    cache: _LoadCache,
) -> Ref:
    """Parse a reference written on ``written_on`` that acts for property ``holder``."""
    # With a refroot the depth changes nothing.
    depth = -1 if refroot_text is not None else depth_in_list(holder)
    if cache.shared:
        # Same text, same depth, same namespaces: same reference.
        key = (text, refroot_text, depth)
        cached = cache.refs.get(key)
        if cached is None:
            cached = cache.refs[key] = _parse_ref_text(text, refroot_text, cache.root_nsmap, depth, doc, written_on, cache)
        return cached
    return _parse_ref_text(text, refroot_text, cache.nsmap(written_on), depth, doc, written_on, None)


def _parse_ref_text(
    text: str,
    refroot_text: str | None,
    nsmap: dict[str | None, str],
    depth: int,
    doc: SourceDoc,
    written_on: etree._Element,
    parsed: _LoadCache | None,
) -> Ref:
    """Parse a reference's texts. ``parsed`` (with uniform namespaces, where
    the same text always means the same) remembers the refroot names and
    paths: a document repeats the same path under many refroots."""
    refroot: NameRef | None = None
    if refroot_text is not None:
        refroot = parsed.names.get(refroot_text) if parsed is not None else None
        if refroot is None:
            try:
                refroot = parse_name_ref(refroot_text, nsmap, doc.target_ns)
            except PrefixError as exc:
                line = attribute_line(doc.data, written_on, written_as(written_on, A_REFROOT), refroot_text)
                raise _bad_qname(doc, "refroot", exc, line) from None
            if parsed is not None:
                parsed.names[refroot_text] = refroot
    try:
        if parsed is None:
            absolute, steps = parse_path(text, nsmap)
        else:
            absolute, steps = _path(text, nsmap, parsed)
    except PathSyntaxError as exc:
        raise ReferenceResolutionError(
            f"path {text!r} is not valid (7.3.1: Path ::= ('/')? Step ('/' Step)*, Step ::= '.' | '..' | QName): {exc}",
            code="BAD_PATH",
            url=doc.url,
            line=attribute_line(doc.data, written_on, written_as(written_on, A_CREF), text),
        ) from None
    if refroot is None and depth == 0:
        raise ReferenceResolutionError(
            f"path {text!r} is on a top level list without cdl:refroot: its context would be outside any list",
            code="REF_CONTEXT",
            url=doc.url,
            line=attribute_line(doc.data, written_on, written_as(written_on, A_CREF), text),
        )
    return relative_ref(text, refroot, absolute, steps, depth)


def _path(text: str, nsmap: dict[str | None, str], cache: _LoadCache) -> tuple[bool, tuple[str, ...]]:
    """``parse_path`` for a document with uniform namespaces, remembering
    paths and their steps: paths that differ in one step (a sibling's name)
    share the others. A path with a step not met before is parsed whole,
    which reports what is wrong with it."""
    path = cache.paths.get(text)
    if path is not None:
        return path
    body = text.strip()
    absolute = body.startswith("/")
    raws = (body[1:] if absolute else body).split("/")
    known = cache.steps
    steps: list[str] = []
    for raw in raws:
        if raw == ".":
            continue
        if raw == UP:
            steps.append(UP)
            continue
        clark = known.get(raw)
        if clark is None and raw and raw == raw.strip():
            try:
                clark = known[raw] = parse_qname(raw, nsmap)[0]
            except PrefixError:
                clark = None  # parse_path says what is wrong
        if clark is None:
            path = parse_path(text, nsmap)
            # Each step that is neither '.' nor '..' gave one name, in order.
            names = iter(path[1])
            for written in raws:
                if written != ".":
                    name = next(names)
                    if written != UP:
                        known[written] = name
            break
        steps.append(clark)
    else:
        path = (absolute, tuple(steps))
    cache.paths[text] = path
    return path


def _load_expression(
    el: etree._Element, doc: SourceDoc, tables: Tables, limits: Limits, cache: _LoadCache
) -> None:
    holder = el.getparent()
    assert holder is not None
    if holder.tag in LIST_PARENTS:
        raise ExpressionError("cdl:expression cannot be a top level list", url=doc.url, line=el.sourceline)
    text = el.get("value-of")
    if text is None:
        raise ExpressionError("cdl:expression needs a value-of attribute", url=doc.url, line=el.sourceline)
    if len(text) > limits.max_expression_length:
        raise LimitError(
            f"the expression is {len(text)} characters long, over the limit of {limits.max_expression_length} "
            "(max_expression_length)",
            url=doc.url,
            line=el.sourceline,
        )
    if el.text and el.text.strip():
        raise ExpressionError("cdl:expression holds only cdl:variable elements, not text", url=doc.url, line=el.sourceline)
    if holder.get(A_CREF) is not None:
        raise ReferenceResolutionError(
            "a value reference must be placed on a property without a value; this one holds a cdl:expression",
            code="REF_WITH_CHILDREN",
            url=doc.url,
            line=attribute_line(doc.data, holder, A_CREF),
        )
    variables: list[Variable] = []
    for var in el:
        if var.tag != T_VARIABLE:
            raise ExpressionError("cdl:expression holds only cdl:variable elements", url=doc.url, line=var.sourceline)
        if var.tail and var.tail.strip():
            raise ExpressionError("cdl:expression holds only cdl:variable elements, not text", url=doc.url, line=var.sourceline)
        if next(var.iter(T_EXPRESSION), None) is not None:
            # variableType (Appendix A) has attributes only. What else a
            # variable holds is left alone, but an expression in it would be
            # taken out with the variable before it is evaluated.
            raise ExpressionError("a cdl:variable holds no cdl:expression (it has attributes only)", url=doc.url, line=var.sourceline)
        name = (var.get("name") or "").strip()
        if not is_ncname(name):
            raise ExpressionError("cdl:variable needs a name that is an NCName", url=doc.url, line=var.sourceline)
        if any(v.name == name for v in variables):
            raise ExpressionError(f"variable ${name} is declared twice", url=doc.url, line=var.sourceline)
        ref_text = var.get("ref")
        if ref_text is None:
            raise ExpressionError(f"cdl:variable ${name} needs a ref attribute", url=doc.url, line=var.sourceline)
        ref = _parse_ref(ref_text, var.get("refroot"), var, holder, doc, cache)
        # The text syntax of 7.3.6 writes cdl:lazy, the schema of Appendix A an
        # unqualified lazy; both are accepted and kept as cdl:lazy.
        lazy_values = [(v, a) for a in (A_LAZY, "lazy") if (v := var.get(a)) is not None]
        for attr in ("ref", "refroot", "lazy", A_LAZY):
            var.attrib.pop(attr, None)
        for lazy, attr in lazy_values:
            var.set(A_LAZY, _boolean(lazy, doc, var, attr))
            if var.get(A_LAZY) == "true":
                tables.lazy_variables = True  # Tables.lazy_variables
        if len(lazy_values) == 2 and _boolean(lazy_values[0][0], doc, var) != _boolean(lazy_values[1][0], doc, var):
            raise LazinessError(f"cdl:variable ${name} has both lazy and cdl:lazy, with different values", url=doc.url, line=var.sourceline)
        variables.append(Variable(name, ref))
    namespaces = cache.nsmap(el)
    written = tuple((var.sourceline, var.get(A_LAZY)) for var in el)  # what restore_variables gives back of each
    place = (doc.index, el.sourceline, text, tuple(variables), written, frozenset(namespaces.items()))
    index = tables.expr_index(place)  # written so in the version whose tables these continue
    if index is None:
        token = _expressions.compile_expression(text, [v.name for v in variables], doc.url, el.sourceline, namespaces)
        index = tables.add_expr(Expression(text, token, tuple(variables)), place)
    el.set(P_EXPR, index)
    # value-of now lives in the table; keep the attribute for output of a
    # pending expression.


__all__ = ["load_document"]
