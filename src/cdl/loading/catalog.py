"""OASIS XML Catalogs: mapping import locations to local files (part of phase 2).

Entry point: :class:`Catalogs`, built by the import phase (``loading.imports``) from
the files given with ``--catalog`` / ``cdl.load(catalogs=...)``; its
:meth:`Catalogs.lookup` maps an absolute URI. Section 9 lets a document import
a template by any URI (``http://example.com/serverconfig.cdl``, SmartFrog's
``classpath:/org/smartfrog/...``); a catalog, the XML ecosystem's standard way
to pin such resources to local copies (``xmllint --catalogs``), says where the
copy is.

Supported (OASIS XML Catalogs 1.1, section 7.2.2, URI resolution): ``uri``
(the first exact match wins), ``rewriteURI`` (the longest matching prefix),
``uriSuffix`` (the longest matching suffix), ``group``, ``nextCatalog``
(consulted, in order, only when nothing in its catalog matched; loaded when
first needed), and ``xml:base`` on any of them. Relative targets resolve
against the catalog file (or the ``xml:base`` in scope). Entries about DTD
identifiers (``public``, ``system``, ...) and elements of other namespaces
are ignored; ``delegateURI`` is refused as unsupported rather than ignored,
since ignoring it would quietly change where a document is read from.

Catalog files are read with the hardened parser (no entities, no network); a
DOCTYPE naming the OASIS DTD is accepted (it is not read), an internal subset
is refused. Every problem is a :class:`~cdl.errors.LoadError` with code
``CATALOG_INVALID`` and the catalog's file and line (a catalog over the input
size limit, ``max_bytes``, is ``LIMIT_EXCEEDED`` like a document).
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

from ..errors import LimitError, LoadError
from .parse import hardened_parser
from .urls import local_path

CATALOG_NS = "urn:oasis:names:tc:entity:xmlns:xml:catalog"
_XML_BASE = "{http://www.w3.org/XML/1998/namespace}base"
_C = "{" + CATALOG_NS + "}"
#: OASIS entries about DTD identifiers: they never map a URI.
_IGNORED = frozenset(_C + n for n in ("public", "system", "rewriteSystem", "systemSuffix", "delegatePublic", "delegateSystem"))
#: Required attributes of each supported entry: (what it matches, where it leads).
_ENTRIES = {
    _C + "uri": ("name", "uri"),
    _C + "rewriteURI": ("uriStartString", "rewritePrefix"),
    _C + "uriSuffix": ("uriSuffix", "uri"),
    _C + "nextCatalog": (None, "catalog"),
}
#: A DOCTYPE with an internal subset: '[' before the declaration's '>'.
#: Catalogs name the OASIS DTD, which needs none; a '[' inside a quoted
#: identifier would be refused too, which is safe.
_INTERNAL_SUBSET = re.compile(rb"<!DOCTYPE[^>\[]*\[")
#: How many catalog files one lookup may visit through nextCatalog (a guard
#: against a chain that never ends; cycles are cut anyway).
MAX_CATALOGS = 100


@dataclass(frozen=True)
class Entry:
    """One entry of a catalog: what it matches and the (absolute) URI it leads to."""

    kind: str  # uri, rewriteURI, uriSuffix, nextCatalog
    match: str
    target: str
    file: str
    line: int | None

    def describe(self) -> str:
        """``file:line (kind "match")``, for messages."""
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where} ({self.kind} {self.match!r})" if self.match else f"{where} ({self.kind})"


@dataclass
class _Catalog:
    """One catalog file's entries, in document order."""

    file: Path
    entries: list[Entry] = field(default_factory=list)


@dataclass(frozen=True)
class Mapped:
    """The outcome of a lookup: the URI to read instead, and the entry that said so."""

    target: str
    entry: Entry


class Catalogs:
    """The catalog files given by the user, in order, and those they chain to.

    The given files are read at once (an unreadable or malformed one is an
    error even if no import needs it); ``nextCatalog`` files when a lookup
    first reaches them.
    """

    def __init__(self, files: tuple[str, ...], max_bytes: int | None = None) -> None:
        #: The input size limit applies to catalogs as to documents.
        self._max_bytes = max_bytes
        self._loaded: dict[Path, _Catalog] = {}
        self._first = [self._load(Path(f).resolve(), None) for f in files]

    def __bool__(self) -> bool:
        return bool(self._first)

    @property
    def directories(self) -> list[Path]:
        """The directories of every catalog read so far: allowed import roots."""
        return [c.file.parent for c in self._loaded.values()]

    def lookup(self, uri: str) -> Mapped | None:
        """Where ``uri`` (absolute) is mapped, or None when no catalog maps it."""
        visited: set[Path] = set()
        for catalog in self._first:
            found = self._lookup_in(catalog, uri, visited)
            if found is not None:
                return found
        return None

    def _lookup_in(self, first: _Catalog, uri: str, visited: set[Path]) -> Mapped | None:
        # Depth first through nextCatalog, with an explicit stack: each
        # catalog's own entries, then its next catalogs in order.
        stack = [first]
        while stack:
            catalog = stack.pop()
            if catalog.file in visited:
                continue
            visited.add(catalog.file)
            found = _match(catalog, uri)
            if found is not None:
                return found
            nexts = [e for e in catalog.entries if e.kind == "nextCatalog"]
            for entry in reversed(nexts):
                if len(visited) + len(stack) >= MAX_CATALOGS:
                    raise LoadError(
                        f"more than {MAX_CATALOGS} catalogs are chained by nextCatalog",
                        code="CATALOG_INVALID",
                        url=entry.file,
                        line=entry.line,
                    )
                stack.append(self._load(_file_of(entry), entry))
        return None

    def _load(self, path: Path, via: Entry | None) -> _Catalog:
        known = self._loaded.get(path)
        if known is None:
            known = self._loaded[path] = _read(path, via, self._max_bytes)
        return known


def _match(catalog: _Catalog, uri: str) -> Mapped | None:
    """OASIS 7.2.2 steps 2-4 within one catalog."""
    best_rewrite: Entry | None = None
    best_suffix: Entry | None = None
    for entry in catalog.entries:
        if entry.kind == "uri" and entry.match == uri:
            return Mapped(entry.target, entry)
        if entry.kind == "rewriteURI" and uri.startswith(entry.match):
            best_rewrite = _longer(best_rewrite, entry)
        elif entry.kind == "uriSuffix" and uri.endswith(entry.match):
            best_suffix = _longer(best_suffix, entry)
    if best_rewrite is not None:
        return Mapped(best_rewrite.target + uri[len(best_rewrite.match):], best_rewrite)
    if best_suffix is not None:
        return Mapped(best_suffix.target, best_suffix)
    return None


def _longer(best: Entry | None, entry: Entry) -> Entry:
    """The entry with the longer match; the earlier one on a tie."""
    return entry if best is None or len(entry.match) > len(best.match) else best


def _file_of(entry: Entry) -> Path:
    parsed = urllib.parse.urlsplit(entry.target)
    path = local_path(parsed)
    if path is None:
        raise LoadError(
            f"nextCatalog {entry.target!r} is not a local file; only local catalogs are read",
            code="CATALOG_INVALID",
            url=entry.file,
            line=entry.line,
        )
    return Path(path).resolve()


def _invalid(message: str, file: str, line: int | None) -> LoadError:
    return LoadError(message, code="CATALOG_INVALID", url=file, line=line)


def _read(path: Path, via: Entry | None, max_bytes: int | None) -> _Catalog:
    """Parse one catalog file into its entries (groups flattened, bases applied)."""
    file = str(path)
    try:
        size = path.stat().st_size
        if max_bytes is not None and size > max_bytes:
            raise LimitError(f"the catalog is {size} bytes, over the input size limit of {max_bytes} bytes (max_bytes)", url=file)
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if via is not None:
            raise _invalid(f"cannot read the catalog {file} named by nextCatalog: {reason}", via.file, via.line) from None
        raise _invalid(f"cannot read the catalog {file}: {reason}", file, None) from None
    subset = _INTERNAL_SUBSET.search(data)
    if subset is not None:
        # Checked on the bytes, before libxml2 reads any declaration.
        line = data[: subset.start()].count(b"\n") + 1
        raise _invalid("the catalog's DOCTYPE has an internal subset; entity declarations are refused for safety", file, line)
    try:
        root = etree.fromstring(data, hardened_parser(remove_comments=True, remove_pis=True), base_url=path.as_uri())
    except etree.XMLSyntaxError as exc:
        raise _invalid(f"the catalog is not well-formed XML: {exc.msg}", file, exc.lineno or None) from None
    if root.tag != _C + "catalog":
        raise _invalid(f"the root element must be catalog in the namespace {CATALOG_NS}; found {root.tag!s}", file, root.sourceline)
    catalog = _Catalog(path)
    # (element, base URI in scope for it), in document order, without recursion.
    stack: list[tuple[etree._Element, str]] = [(root, path.as_uri())]
    while stack:
        el, base = stack.pop()
        base = _with_base(el, base, file)
        children = [(child, base) for child in el if isinstance(child.tag, str)]
        if el is root or el.tag == _C + "group":
            stack.extend(reversed(children))
            continue
        _entry(el, base, catalog)
    return catalog


def _with_base(el: etree._Element, base: str, file: str) -> str:
    written = el.get(_XML_BASE)
    if written is None:
        return base
    joined = urllib.parse.urljoin(base, written.strip())
    if not urllib.parse.urlsplit(joined).scheme:
        raise _invalid(f"xml:base {written!r} is not a usable URI", file, el.sourceline)
    return joined


def _entry(el: etree._Element, base: str, catalog: _Catalog) -> None:
    file = str(catalog.file)
    tag = el.tag if isinstance(el.tag, str) else ""
    if not tag.startswith(_C) or tag in _IGNORED:
        return  # another namespace's extension, or an entry about DTD identifiers
    kind = tag[len(_C):]
    attributes = _ENTRIES.get(tag)
    if attributes is None:
        what = "is not supported" if kind.startswith("delegate") else "is not an element of XML catalogs"
        raise _invalid(f"catalog entry {kind} {what} (supported: uri, rewriteURI, uriSuffix, group, nextCatalog)", file, el.sourceline)
    match_attr, target_attr = attributes
    values = {}
    for name in (match_attr, target_attr):
        if name is None:
            continue
        value = el.get(name)
        if value is None or not value.strip():
            raise _invalid(f"catalog entry {kind} needs a {name} attribute", file, el.sourceline)
        values[name] = value.strip()
    target = urllib.parse.urljoin(base, values[target_attr])
    match = values[match_attr] if match_attr is not None else ""
    if kind == "uri" and not urllib.parse.urlsplit(match).scheme:
        match = urllib.parse.urljoin(base, match)  # a relative name is relative to the base (OASIS 6.5.7)
    catalog.entries.append(Entry(kind, match, target, file, el.sourceline))
