"""Validation: documents against the CDL schema, typed values against their types.

Two checks live here, both optional in CDL (6.1: "Use of schema definition for
validation in CDL is optional"):

* :func:`validate_documents` checks CDL documents, and the documents they
  import, against the CDL 1.0 XML Schema (``xsd/cdl.xsd``, Appendix A
  corrected) and reports every violation.
* :func:`check_types` checks, in a resolved tree, that each property carrying
  ``cdl:type`` has a value of that type (7.4.1): an XML Schema built-in simple
  type, or a simple type defined in the documents' ``cdl:types``.

Both use libxml2's own XML Schema validator, so the semantics (whitespace
handling, lexical spaces, facets) are exactly those of XML Schema 1.0.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lxml import etree

from ..errors import CdlError, LoadError, ValidationError
from ..model.naming import Prefixes
from ..model.vocabulary import A_CREF, A_LAZY, A_TYPE, CDL_NS, LIST_PARENTS, T_CDL, T_DOCUMENTATION, T_EXPRESSION, T_IMPORT, T_TYPES, XSD_NS
from ..model.workspace import SourceDoc
from .catalog import Catalogs
from .imports import LoadOptions, Location, import_roots, locate_import, locate_main, read_document
from .parse import hardened_parser

if TYPE_CHECKING:
    from lxml.etree._docloader import _InputDocument  # stubs only: what a Resolver returns

__all__ = ["validate_documents", "check_types"]

#: The element form <cdl:ref> (Appendix A) has the same name as the attribute.
_CDL_REF_ELEMENT = A_CREF

_XS_SCHEMA = f"{{{XSD_NS}}}schema"
_XS_ELEMENT = f"{{{XSD_NS}}}element"
_XS_IMPORT = f"{{{XSD_NS}}}import"
_XS_INCLUDE = f"{{{XSD_NS}}}include"
_XS_REDEFINE = f"{{{XSD_NS}}}redefine"
_XS_SIMPLE_TYPE = f"{{{XSD_NS}}}simpleType"
_XS_COMPLEX_TYPE = f"{{{XSD_NS}}}complexType"
_XS_RESTRICTION = f"{{{XSD_NS}}}restriction"

#: Scheme of the in-memory documents that user schemas are served under while
#: compiling; nothing else is ever loaded (no files, no network).
_MEMORY_SCHEME = "cdl-mem:"

_NCNAME = r"[^\W\d][\w.\-]*"
_QNAME_RE = re.compile(rf"(?:({_NCNAME}):)?({_NCNAME})")

# ---------------------------------------------------------------------------
# The CDL schema


def _schema_source() -> tuple[bytes, str]:
    """The text of ``cdl.xsd`` and where it was found.

    It is package data, ``cdl/xsd/cdl.xsd`` (in a checkout
    ``src/cdl/xsd/cdl.xsd``, its one source).
    """
    # Imported here: importlib.resources imports tempfile, which a run that
    # validates nothing never needs (tests/test_startup.py).
    from importlib import resources

    installed = resources.files("cdl") / "xsd" / "cdl.xsd"
    return installed.read_bytes(), str(installed)


@functools.lru_cache(maxsize=1)
def _cdl_schema() -> etree.XMLSchema:
    """The compiled CDL schema, built once per process."""
    data, where = _schema_source()
    return etree.XMLSchema(etree.fromstring(data, hardened_parser(), base_url=where))


# ---------------------------------------------------------------------------
# validate_documents

_CLARK_RE = re.compile(r"\{([^{}]*)\}([^\s'\",()]+)")
_OTHER_WILDCARD_RE = re.compile(r"##other\{[^{}]*\}\*")


def _readable(message: str, prefixes: dict[str, str]) -> str:
    """libxml2's message with ``{uri}name`` written ``prefix:name`` where possible."""
    message = _OTHER_WILDCARD_RE.sub("##other", message)

    def qualify(match: re.Match[str]) -> str:
        prefix = prefixes.get(match.group(1))
        return f"{prefix}:{match.group(2)}" if prefix else match.group(0)

    return _CLARK_RE.sub(qualify, message).strip()


def _prefixes_of(tree: etree._ElementTree) -> dict[str, str]:
    """URI -> prefix, from the root's declarations, ``cdl`` always meaning CDL."""
    prefixes = {uri: prefix for prefix, uri in tree.getroot().nsmap.items() if prefix}
    prefixes[CDL_NS] = "cdl"
    return prefixes


def validate_documents(
    paths_or_urls: Sequence[str],
    *,
    import_paths: Sequence[str] = (),
    catalogs: Sequence[str] = (),
    allow_remote: bool = False,
) -> list[CdlError]:
    """Validate CDL documents, and every document they import, against the CDL
    1.0 schema and return every violation.

    Documents are found and read as :func:`cdl.load` finds and reads them:
    imports only from files under the main document's directory, an
    ``import_paths`` directory or a catalog's directory; locations mapped by
    the OASIS XML ``catalogs``; ``http(s)`` refused unless ``allow_remote``,
    other schemes always. Each
    document is validated once, depth first in declaration order. Each is
    parsed with entity expansion, DTD loading and network access off. Nothing
    is raised for a faulty document; the result lists:

    * the :class:`LoadError` :func:`cdl.load` raises for a document that
      cannot be read (``IO_ERROR`` for a named one, ``IMPORT_NOT_FOUND`` or
      ``IMPORT_REFUSED`` at the ``cdl:import`` of an imported one), or
      one that is not well-formed (``XML_SYNTAX``);
    * one :class:`LoadError` (``XML_DTD``) for a document with a DTD, which
      CDL documents must not have (it is not validated further);
    * one :class:`ValidationError` (``SCHEMA_INVALID``) per schema violation,
      with the document, the line, the path (``/List/child``, as resolution
      errors write it; None for the root and its ``cdl:configuration`` or
      ``cdl:system``) and libxml2's message.

    An empty list means every document is valid.
    """
    options = LoadOptions(allow_remote=allow_remote, import_paths=tuple(import_paths), catalogs=tuple(catalogs))
    catalog_set = Catalogs(options.catalogs, options.limits.max_bytes)
    problems: list[CdlError] = []
    seen: set[str] = set()
    for source in paths_or_urls:
        try:
            _validate_with_imports(source, options, catalog_set, seen, problems)
        except CdlError as error:
            problems.append(error)
    return problems


def _validate_with_imports(
    source: str, options: LoadOptions, catalogs: Catalogs, seen: set[str], problems: list[CdlError]
) -> None:
    """Validate ``source`` and its imports not in ``seen``; raise what stops
    ``source`` itself from being read."""
    main = locate_main(source, options, catalogs)
    roots = import_roots(main.file.parent if main.file is not None else None, options)
    todo: list[tuple[Location, SourceDoc, etree._Element]] = []

    def visit(location: Location, where: tuple[SourceDoc, etree._Element] | None) -> None:
        if location.key in seen:
            return
        seen.add(location.key)
        root = _validate_one(read_document(location, options, where), location.display, problems)
        if root is not None:
            importer = SourceDoc(index=len(seen), url=location.display, root=root, target_ns="", nsmap={})
            todo.extend((location, importer, imp) for imp in reversed(list(root.iterchildren(T_IMPORT))))

    visit(main, None)
    while todo:
        importer_location, importer, imp = todo.pop()
        try:
            target = locate_import(
                (imp.get("location") or "").strip(), importer_location, importer, imp, roots, options, catalogs
            )
            visit(target, (importer, imp))
        except CdlError as error:
            problems.append(error)


def _validate_one(data: bytes, source: str, problems: list[CdlError]) -> etree._Element | None:
    """Validate one document's bytes; its root when its imports can be read."""
    try:
        # Bytes, not a file name: lxml would route the document's own load
        # through the parser's resolvers, which answer nothing external.
        tree = etree.fromstring(data, hardened_parser(), base_url=source).getroottree()
    except etree.XMLSyntaxError as exc:
        problems.append(LoadError(exc.msg or str(exc), code="XML_SYNTAX", url=source, line=exc.lineno or None))
        return None
    if tree.docinfo.internalDTD is not None or tree.docinfo.doctype:
        # Refused outright: with entities left unexpanded (as they must be),
        # libxml2's schema validator fails internally on entity references.
        problems.append(
            LoadError("the document has a DTD, which CDL documents must not have", code="XML_DTD", url=source)
        )
        return None
    root = tree.getroot()
    if root.tag != T_CDL:
        # libxml2 would only say "no matching global declaration"; say what is expected.
        problems.append(
            ValidationError(
                f"the root element is {root.tag!s}; a CDL document's root is cdl:cdl in the namespace {CDL_NS}",
                code="SCHEMA_INVALID",
                url=source,
                line=root.sourceline,
            )
        )
        return None
    schema = _cdl_schema()
    if not schema.validate(tree):
        prefixes = _prefixes_of(tree)
        log = schema.error_log
        element_at = _NodePaths(tree, {entry.line for entry in log})
        for entry in log:
            element = element_at(entry.path)
            problems.append(
                ValidationError(
                    _readable(entry.message, prefixes),
                    code="SCHEMA_INVALID",
                    url=source,
                    line=entry.line or None,
                    path=_written_path(element, root) if element is not None else None,
                )
            )
    return root


class _NodePaths:
    """The element libxml2's log names by its node path (which getpath also
    writes). A path is as long as the element is deep, so only the elements
    on the lines the log names get theirs (a path for every element would
    cost the square of a deep document's depth); all of them only when the
    log's line is not the element's (libxml2 may cap a line number)."""

    def __init__(self, tree: etree._ElementTree, lines: set[int]) -> None:
        self.tree = tree
        self.by_path = {tree.getpath(el): el for el in tree.getroot().iter(etree.Element) if el.sourceline in lines}
        self.complete = False

    def __call__(self, path: str | None) -> etree._Element | None:
        if not path:
            return None
        if path not in self.by_path and not self.complete:
            self.by_path = {self.tree.getpath(el): el for el in self.tree.getroot().iter(etree.Element)}
            self.complete = True
        return self.by_path.get(path)


def _written_path(element: etree._Element, root: etree._Element) -> str | None:
    """``/List/child`` as resolution errors write it, with the document's own
    prefixes; None for the root and its lists' parents, which the message names."""
    if element is root or element.tag in LIST_PARENTS:
        return None
    return Prefixes([dict(root.nsmap), dict(element.nsmap)], root.nsmap.get(None)).path_of(element)


# ---------------------------------------------------------------------------
# check_types: how a failed value is explained

#: Bounds of the built-in types derived from xsd:integer, to name the facet a
#: value breaks (libxml2 only says "not a valid value of the atomic type").
_INTEGER_BOUNDS: dict[str, tuple[int | None, int | None]] = {
    "integer": (None, None),
    "nonPositiveInteger": (None, 0),
    "negativeInteger": (None, -1),
    "long": (-(2**63), 2**63 - 1),
    "int": (-(2**31), 2**31 - 1),
    "short": (-(2**15), 2**15 - 1),
    "byte": (-128, 127),
    "nonNegativeInteger": (0, None),
    "unsignedLong": (0, 2**64 - 1),
    "unsignedInt": (0, 2**32 - 1),
    "unsignedShort": (0, 2**16 - 1),
    "unsignedByte": (0, 2**8 - 1),
    "positiveInteger": (1, None),
}

#: What the lexical space of the other commonly used built-ins looks like.
_BUILTIN_RULES: dict[str, str] = {
    "boolean": "expected true, false, 1 or 0",
    "decimal": "expected a decimal number such as -1.5",
    "float": "expected a number such as 1.5, -2E3, INF or NaN",
    "double": "expected a number such as 1.5, -2E3, INF or NaN",
    "dateTime": "expected CCYY-MM-DDThh:mm:ss with optional fraction and time zone",
    "date": "expected CCYY-MM-DD with optional time zone",
    "time": "expected hh:mm:ss with optional fraction and time zone",
    "duration": "expected a duration such as P1Y2M3DT4H5M6S",
    "gYear": "expected CCYY",
    "gYearMonth": "expected CCYY-MM",
    "gMonth": "expected --MM",
    "gMonthDay": "expected --MM-DD",
    "gDay": "expected ---DD",
    "anyURI": "expected a URI reference",
    "QName": "expected a QName whose prefix is declared in scope",
    "NOTATION": "expected a declared notation",
    "NCName": "expected a name without a colon",
    "ID": "expected a name without a colon",
    "IDREF": "expected a name without a colon",
    "ENTITY": "expected a name without a colon",
    "IDREFS": "expected a list of names without colons",
    "ENTITIES": "expected a list of names without colons",
    "Name": "expected an XML name",
    "NMTOKEN": "expected an XML name token",
    "NMTOKENS": "expected a list of XML name tokens",
    "language": "expected a language tag such as en-GB",
    "hexBinary": "expected pairs of hexadecimal digits",
    "base64Binary": "expected base64 text",
}

#: Built-ins checked through a stand-in: an ENTITY must name an unparsed entity
#: of a DTD, and CDL documents have no DTD, so only the lexical form
#: (the same as IDREF's) can be checked.
_BUILTIN_STAND_INS: dict[str, str] = {"ENTITY": "IDREF", "ENTITIES": "IDREFS"}

#: Built-ins whose values cannot be checked at all outside their schema.
_BUILTIN_UNCHECKABLE: dict[str, str] = {
    "NOTATION": "xsd:NOTATION values name notations, which only a schema that declares them can check",
}

_INTEGER_RE = re.compile(r"[+-]?[0-9]+")
_FACET_RE = re.compile(r"\[facet '(?P<facet>\w+)'\] (?P<text>.*)", re.S)
_RESTATEMENT_RE = re.compile(r"is not a valid value of the (?:atomic|list|union) type")
_SUBJECT_RE = re.compile(r"^Element 'v': ")


def _builtin_rule(local: str, value: str) -> str | None:
    """Why ``value`` is not a valid ``xsd:local``, when libxml2 does not say.

    For the integer types, the facet broken (``minInclusive 1``), as XML Schema
    Part 2 defines them; for others, the expected lexical form.
    """
    if local in _INTEGER_BOUNDS:
        text = value.strip()  # integers collapse whitespace before the check
        if not _INTEGER_RE.fullmatch(text):
            return "not an integer"
        low, high = _INTEGER_BOUNDS[local]
        number = int(text)
        if low is not None and number < low:
            return f"minInclusive {low}"
        if high is not None and number > high:
            return f"maxInclusive {high}"
        return None
    return _BUILTIN_RULES.get(local)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _log_details(log: etree._ListErrorLog) -> list[str]:
    """The useful part of libxml2's complaints about one ``<v>`` value.

    A failing value yields a facet message (``[facet 'enumeration'] The value
    ... is not an element of the set {...}``) and/or a restatement (``'x' is
    not a valid value of the atomic type '{ns}t'``). The restatement adds
    nothing to the error's own first half, so it is dropped.
    """
    details: list[str] = []
    for entry in log:
        message = _SUBJECT_RE.sub("", entry.message.strip()).rstrip(".")
        if _RESTATEMENT_RE.search(message):
            continue
        facet = _FACET_RE.match(message)
        if facet:
            details.append(f"{facet['facet']}: {_lower_first(facet['text'])}")
        else:
            details.append(_lower_first(message))
    return details


def _shown(value: str, limit: int = 80) -> str:
    """The value quoted for a message, shortened if long."""
    if len(value) > limit:
        value = value[: limit - 3] + "..."
    return repr(value)


# ---------------------------------------------------------------------------
# check_types: compiling one validator per type

_TypeKey = tuple[str | None, str]


@dataclass(frozen=True)
class _TypeChecker:
    """A compiled validator for one type: an element ``v`` of that type.

    ``schema`` is None for types every value belongs to (xsd:anyType,
    xsd:anySimpleType), which need no validation.
    """

    schema: etree.XMLSchema | None
    builtin_base: str | None  # local name of the nearest built-in ancestor, for messages


@dataclass(frozen=True)
class _Unchecked:
    """A type that cannot be checked, and why (becomes a warning)."""

    reason: str


_TypeLookup = _TypeChecker | _Unchecked

#: Built-in types do not depend on the user schemas: compiled once per process.
_BUILTIN_CACHE: dict[str, _TypeLookup] = {}


def _builtin_checker(local: str) -> _TypeLookup:
    """The validator for ``xsd:local``, from the process-wide cache."""
    cached = _BUILTIN_CACHE.get(local)
    if cached is not None:
        return cached
    result: _TypeLookup
    if local in _BUILTIN_UNCHECKABLE:
        result = _Unchecked(_BUILTIN_UNCHECKABLE[local])
    elif local in ("anyType", "anySimpleType"):
        result = _TypeChecker(None, local)
    else:
        wrapper = etree.Element(_XS_SCHEMA, nsmap={"xs": XSD_NS})
        etree.SubElement(wrapper, _XS_ELEMENT, name="v", type=f"xs:{_BUILTIN_STAND_INS.get(local, local)}")
        try:
            result = _TypeChecker(etree.XMLSchema(wrapper), local)
        except etree.XMLSchemaParseError:
            # libxml2 implements XML Schema 1.0: 1.1 names (dateTimeStamp, ...) are unknown too.
            result = _Unchecked(f"xsd:{local} is not an XML Schema 1.0 built-in type")
    _BUILTIN_CACHE[local] = result
    return result


class _MemoryResolver(etree.Resolver):
    """Serves the prepared user schemas; refuses everything else.

    Any other URL gets an empty schema rather than None, because None would
    let libxml2 fall back to reading files or the network.
    """

    _EMPTY = f'<xs:schema xmlns:xs="{XSD_NS}"/>'

    def __init__(self, documents: dict[str, bytes]) -> None:
        super().__init__()
        self._documents = documents

    def resolve(self, system_url: str | None, public_id: str | None, context: object) -> _InputDocument:
        data = self._documents.get(system_url) if system_url is not None else None
        if data is None:
            return self.resolve_string(self._EMPTY, context, base_url=system_url)
        return self.resolve_string(data, context, base_url=system_url)


def _resolve_qname(text: str, scope: etree._Element) -> _TypeKey | None:
    """A QName written in ``scope`` as (namespace, local name), or None if it is
    malformed or its prefix undeclared. An unprefixed name takes the default
    namespace, as xsd:QName does."""
    match = _QNAME_RE.fullmatch(text.strip())
    if not match:
        return None
    prefix, local = match.groups()
    nsmap = scope.nsmap
    if prefix is None:
        return (nsmap.get(None), local)
    if prefix not in nsmap:
        return None
    return (nsmap[prefix], local)


class _TypeLibrary:
    """Looks up and compiles the types of one set of ``cdl:types`` schemas.

    Every user schema becomes an in-memory document whose ``xs:import``\\ s
    point at the in-memory documents of the namespaces they import; a type is
    compiled as a tiny schema declaring ``<v>`` of that type, which imports the
    type's namespace. Each distinct type is compiled once per library.
    """

    def __init__(self, schemas: Sequence[etree._Element]) -> None:
        self._documents: dict[str, bytes] = {}
        self._namespace_urls: dict[str | None, str] = {}
        self._definitions: dict[_TypeKey, etree._Element] = {}
        self._cache: dict[_TypeKey, _TypeLookup] = {}
        self._parser = hardened_parser(_MemoryResolver(self._documents))
        self._prepare(schemas)

    def _prepare(self, schemas: Sequence[etree._Element]) -> None:
        pieces: dict[str | None, list[str]] = {}
        copies: list[tuple[str, etree._Element]] = []
        for index, schema in enumerate(schemas):
            namespace = schema.get("targetNamespace") or None
            url = f"{_MEMORY_SCHEME}/schema/{index}.xsd"
            pieces.setdefault(namespace, []).append(url)
            # A fresh root with every namespace in scope at the original: QName
            # values (type="t:x", base="xs:int") need prefixes that a plain
            # copy of the subtree would not declare.
            standalone = etree.Element(_XS_SCHEMA, attrib=dict(schema.attrib), nsmap=schema.nsmap)
            standalone.text = schema.text
            for child in schema:
                standalone.append(copy.deepcopy(child))
            copies.append((url, standalone))
            for definition in standalone:
                name = definition.get("name")
                if name and definition.tag in (_XS_SIMPLE_TYPE, _XS_COMPLEX_TYPE):
                    self._definitions.setdefault((namespace, name), definition)
        for namespace, urls in pieces.items():
            if len(urls) == 1:
                self._namespace_urls[namespace] = urls[0]
                continue
            # Several schemas for one namespace: a hub that includes them all.
            hub_url = f"{_MEMORY_SCHEME}/namespace/{len(self._namespace_urls)}.xsd"
            hub = etree.Element(_XS_SCHEMA, nsmap={"xs": XSD_NS})
            if namespace is not None:
                hub.set("targetNamespace", namespace)
            for url in urls:
                etree.SubElement(hub, _XS_INCLUDE, schemaLocation=url)
            self._documents[hub_url] = etree.tostring(hub)
            self._namespace_urls[namespace] = hub_url
        for url, standalone in copies:
            for directive in list(standalone):
                if directive.tag == _XS_IMPORT:
                    target = self._namespace_urls.get(directive.get("namespace") or None)
                    if target is not None:
                        directive.set("schemaLocation", target)
                    elif "schemaLocation" in directive.attrib:
                        # An outside schema: never fetched; its types stay unknown.
                        del directive.attrib["schemaLocation"]
                elif directive.tag in (_XS_INCLUDE, _XS_REDEFINE):
                    # These name files; the schemas of one namespace are already
                    # combined above, and nothing is read from outside.
                    standalone.remove(directive)
            self._documents[url] = etree.tostring(standalone)

    def lookup(self, key: _TypeKey) -> _TypeLookup:
        """The validator of the type named ``key``, or why there is none."""
        namespace, local = key
        if namespace == XSD_NS:
            return _builtin_checker(local)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = self._compile(key)
        return cached

    def _compile(self, key: _TypeKey) -> _TypeLookup:
        namespace, local = key
        definition = self._definitions.get(key)
        where = f"namespace {namespace}" if namespace else "no namespace"
        if definition is None:
            if namespace in self._namespace_urls:
                return _Unchecked(f"the cdl:types schema for {where} defines no type {local!r}")
            return _Unchecked(f"no cdl:types schema has {where}")
        if definition.tag == _XS_COMPLEX_TYPE:
            return _Unchecked("it is a complex type; only simple types are checked")
        wrapper = etree.Element(_XS_SCHEMA, nsmap={"xs": XSD_NS} | ({"t": namespace} if namespace else {}))
        if namespace is None:
            etree.SubElement(wrapper, _XS_INCLUDE, schemaLocation=self._namespace_urls[None])
            etree.SubElement(wrapper, _XS_ELEMENT, name="v", type=local)
        else:
            etree.SubElement(wrapper, _XS_IMPORT, namespace=namespace, schemaLocation=self._namespace_urls[namespace])
            etree.SubElement(wrapper, _XS_ELEMENT, name="v", type=f"t:{local}")
        # Parsed (not built) so that the document carries the parser whose
        # resolver serves the in-memory imports.
        url = f"{_MEMORY_SCHEME}/type/{len(self._cache)}.xsd"
        document = etree.fromstring(etree.tostring(wrapper), self._parser, base_url=url)
        try:
            schema = etree.XMLSchema(document)
        except etree.XMLSchemaParseError as exc:
            first = exc.error_log[0].message if len(exc.error_log) else str(exc)
            return _Unchecked(f"the cdl:types schemas do not compile: {first}")
        return _TypeChecker(schema, self._builtin_base(key))

    def _builtin_base(self, key: _TypeKey) -> str | None:
        """The built-in type a user simple type restricts, through any chain."""
        seen: set[_TypeKey] = set()
        while key not in seen:
            seen.add(key)
            definition = self._definitions.get(key)
            if definition is None:
                return None
            restriction = definition.find(_XS_RESTRICTION)
            base = restriction.get("base") if restriction is not None else None
            next_key = _resolve_qname(base, restriction) if base and restriction is not None else None
            if next_key is None:
                return None
            if next_key[0] == XSD_NS:
                return next_key[1]
            key = next_key
        return None


# ---------------------------------------------------------------------------
# check_types


def _typed_properties(root: etree._Element) -> Iterator[etree._Element]:
    """Elements carrying cdl:type, in document order, outside cdl:types,
    cdl:documentation and cdl:expression (which hold no properties)."""
    skipped = (T_TYPES, T_DOCUMENTATION, T_EXPRESSION)
    stack = [root]
    while stack:
        element = stack.pop()
        if element.get(A_TYPE) is not None:
            yield element
        stack.extend(
            child for child in reversed(element) if isinstance(child.tag, str) and child.tag not in skipped
        )


def _is_true(text: str | None) -> bool:
    return text is not None and text.strip() in ("true", "1")


def _where(origin: tuple[str | None, int | None]) -> str:
    url, line = origin
    return f"{url or '<input>'}:{line}" if line else (url or "<input>")


def schemas_of(docs: Sequence[SourceDoc]) -> list[etree._Element]:
    """The xsd:schema elements found in the documents' cdl:types."""
    found: list[etree._Element] = []
    for doc in docs:
        for types in doc.root.iterchildren(T_TYPES):
            found.extend(types.iterchildren(f"{{{XSD_NS}}}schema"))
    return found


def check_types(
    root: etree._Element,
    schemas: Sequence[etree._Element],
    origin: Callable[[etree._Element], tuple[str | None, int | None]],
    path_of: Callable[[etree._Element], str],
) -> tuple[list[ValidationError], list[str]]:
    """Check every typed property value of a resolved tree against its cdl:type.

    Args:
        root: a resolved ``cdl:cdl`` element; ``cdl:type`` values are QNames
            whose prefixes are declared where they are written.
        schemas: the ``xsd:schema`` elements of the documents' ``cdl:types``
            (any number, any target namespaces, importing each other by
            namespace; ``schemaLocation``\\ s are ignored, nothing is read).
        origin: gives the (url, line) an element came from.
        path_of: gives an element's property path.

    A property is checked when it has a value: not while it still carries
    ``cdl:ref`` or a true ``cdl:lazy``, not while it holds an unresolved
    ``cdl:expression`` or ``cdl:ref`` element, and not when it is empty or
    holds only whitespace. The type is an XML Schema built-in (``xsd:int``) or
    a simple type of ``schemas``, facets included; QName values resolve their
    prefix with the property's in-scope declarations.

    Returns:
        (errors, warnings). One ``TYPE_INVALID`` :class:`ValidationError` per
        invalid value, naming the value, the type and the broken facet or
        rule. One warning string (``file:line: message``) per property whose
        type cannot be checked: an undeclared prefix, an unknown name or
        namespace, a complex type, or user schemas that do not compile.
    """
    library = _TypeLibrary(schemas)
    errors: list[ValidationError] = []
    warnings: list[str] = []
    for element in _typed_properties(root):
        value = _value_to_check(element)
        if value is None:
            continue
        text, has_content = value
        problem = _check_value(library, element, text, has_content)
        if isinstance(problem, str):
            warnings.append(f"{_where(origin(element))}: {problem}")
        elif problem is not None:
            url, line = origin(element)
            errors.append(ValidationError(problem.message, code="TYPE_INVALID", url=url, line=line, path=path_of(element)))
    return errors, warnings


def _value_to_check(element: etree._Element) -> tuple[str, bool] | None:
    """A typed property's value as checked, and whether it has child
    elements; None when it is not checked (no value yet, or empty)."""
    if element.get(A_CREF) is not None or _is_true(element.get(A_LAZY)):
        return None
    value_parts = [element.text or ""]
    has_content = False
    for child in element:
        if child.tag in (T_EXPRESSION, _CDL_REF_ELEMENT):
            return None  # unresolved
        if isinstance(child.tag, str) and child.tag != T_DOCUMENTATION:
            has_content = True
        value_parts.append(child.tail or "")  # comments, PIs and documentation are not part of the value
    value = "".join(value_parts)
    if not has_content and not value.strip():
        return None
    return value, has_content


@dataclass(frozen=True)
class _Invalid:
    """A value that does not conform to its type: the error's message."""

    message: str


def _check_value(library: _TypeLibrary, element: etree._Element, value: str, has_content: bool) -> _Invalid | str | None:
    """Check one value against its element's cdl:type: None when it conforms
    (or any value does), an :class:`_Invalid`, or the warning (a string)
    when the type cannot be checked."""
    written = element.get(A_TYPE, "").strip()
    key = _resolve_qname(written, element)
    if key is None:
        return f"cdl:type {written!r} is not checked: it is not a QName whose prefix is declared in scope"
    found = library.lookup(key)
    if isinstance(found, _Unchecked):
        return f"cdl:type {written!r} is not checked: {found.reason}"
    if found.schema is None:  # xsd:anyType / xsd:anySimpleType: any value
        return None
    if has_content:
        return _Invalid(f"the property has child elements, but its type {written} is a simple type")
    # The value is checked as an element <v> with the property's in-scope
    # namespaces, so that QName values resolve as they would in place.
    instance = etree.Element("v", nsmap=element.nsmap)
    instance.text = value
    if found.schema.validate(instance):
        return None
    details = _log_details(found.schema.error_log)
    if not details and found.builtin_base is not None:
        rule = _builtin_rule(found.builtin_base, value)
        if rule is not None:
            details = [rule if key[0] == XSD_NS else f"derived from xsd:{found.builtin_base}: {rule}"]
    message = f"value {_shown(value)} is not a valid {written}"
    if details:
        message += f" ({'; '.join(details)})"
    return _Invalid(message)
