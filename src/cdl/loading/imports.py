"""Phase 2: load the main document and everything it imports (section 9).

Entry point: :func:`load_set`. Imports are processed in declaration order,
depth first, each document loaded once however often (or circularly) it is
imported. Where a document may come from is decided here, once:

- local files only under the main document's directory or an allowed import
  directory, after resolving symlinks;
- ``http``/``https`` only when the caller allows remote imports;
- any other scheme only through a caller-supplied resolver;
- a location an XML catalog maps (``loading.catalog``) is read from where the
  catalog says, under the same rules; a catalog's directory is an allowed
  directory.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

from ..errors import CdlError, ImportRefusedError, LimitError, LoadError
from ..model.limits import Limits
from ..model.switch import fast_paths_enabled
from ..model.tables import Tables
from ..model.vocabulary import T_IMPORT, T_SYSTEM
from ..model.workspace import SourceDoc
from .catalog import Catalogs, Mapped
from .parse import load_document
from .urls import join_url, local_path, url2pathname

#: A resolver receives an absolute URL and returns the document's bytes.
Resolver = Callable[[str], bytes]

_REMOTE = ("http", "https")


@dataclass(frozen=True)
class LoadOptions:
    """Where documents may come from, and the limits that apply."""

    allow_remote: bool = False
    import_paths: tuple[str, ...] = ()
    resolver: Resolver | None = None
    limits: Limits = field(default_factory=Limits)
    #: OASIS XML catalog files, consulted in order.
    catalogs: tuple[str, ...] = ()
    #: Seconds to wait for a remote document (only when allowed).
    timeout: float = 30.0
    #: Whether the loader may use its specialisations (src/cdl/model/switch.py),
    #: read when the load starts.
    fast_paths: bool = field(default_factory=fast_paths_enabled)
    #: Texts read instead of files, by real path: the buffers an editor holds
    #: open (``cdl lsp``), for the main document and everything it imports.
    overlay: Mapping[str, bytes] = field(default_factory=dict)


@dataclass
class Location:
    """One document's address: what to show, what identifies it, how to read it."""

    display: str  # as the user would write it (relative file paths stay relative)
    key: str  # canonical: real path for files, the URL otherwise
    base: str  # what relative imports inside it resolve against (a URL)
    file: Path | None = None


def load_set(
    source: str | os.PathLike[str] | bytes,
    options: LoadOptions,
    name: str | None = None,
    base: str | os.PathLike[str] | None = None,
    tables: Tables | None = None,
) -> tuple[list[SourceDoc], Tables]:
    """Load the main document and, recursively, its imports.

    ``source`` is a file path, a URL, or the document's bytes (then ``name`` is
    what errors call it, and relative imports resolve against ``base``, the
    current directory by default). ``tables``: those to append to (an earlier
    version's, ``Tables.continued``), else new ones.
    """
    tables = Tables() if tables is None else tables
    catalogs = Catalogs(options.catalogs, options.limits.max_bytes)
    directory: Path | None
    if isinstance(source, bytes):
        display = name or "<bytes>"
        # The base directory takes the place of a file's own directory: its
        # imports resolve against it and may not leave it.
        directory = _base_directory(base)
        main = Location(display, f"bytes:{display}", directory.as_uri().rstrip("/") + "/")
        data = source
    else:
        if base is not None:
            raise TypeError("base applies to a document given as bytes; a file's imports resolve against its directory")
        main = locate_main(os.fspath(source), options, catalogs)
        data = read_document(main, options, where=None)
        directory = main.file.parent if main.file is not None else None
    roots = import_roots(directory, options)

    docs: list[SourceDoc] = []
    #: The index of each document loaded, by its key.
    seen: dict[str, int] = {main.key: 0}
    # Depth-first in declaration order, without recursion: a stack of
    # (document, its remaining imports).
    first = load_document(data, main.display, 0, tables, options.limits, fast_paths=options.fast_paths)
    first.file = str(main.file) if main.file is not None else None
    docs.append(first)
    stack: list[tuple[SourceDoc, Location, list[etree._Element]]] = [(first, main, _import_elements(first))]
    while stack:
        doc, loc, pending = stack[-1]
        if not pending:
            stack.pop()
            continue
        imp = pending.pop(0)
        location = (imp.get("location") or "").strip()
        target = locate_import(location, loc, doc, imp, roots, options, catalogs)
        known = seen.get(target.key)
        if known is not None:
            doc.loaded_imports.append(known)
            continue
        seen[target.key] = len(docs)
        doc.loaded_imports.append(len(docs))
        if len(docs) > options.limits.max_imports:
            raise LimitError(
                f"more than {options.limits.max_imports} documents are imported (max_imports)",
                url=doc.url,
                line=imp.sourceline,
            )
        data = read_document(target, options, where=(doc, imp))
        imported = load_document(data, target.display, len(docs), tables, options.limits, fast_paths=options.fast_paths)
        imported.file = str(target.file) if target.file is not None else None
        imported.importer = (doc.index, imp.sourceline)
        system = imported.root.find(T_SYSTEM)
        if system is not None:
            raise ImportRefusedError(
                f"{target.display} is imported but has a cdl:system (line {system.sourceline}); "
                "an imported document must not (section 9)",
                code="IMPORT_SYSTEM",
                url=doc.url,
                line=imp.sourceline,
            )
        docs.append(imported)
        stack.append((imported, target, _import_elements(imported)))
    return docs, tables


def import_roots(directory: Path | None, options: LoadOptions) -> list[Path]:
    """The directories imported files may lie under: the main document's
    own (``directory``: its file's directory, the base directory of one
    given as bytes, None for a URL) and each of ``options.import_paths``
    (the directories of the catalogs read are added as they are read)."""
    return ([directory] if directory is not None else []) + [Path(p).resolve() for p in options.import_paths]


def _base_directory(base: str | os.PathLike[str] | None) -> Path:
    """The directory ``base`` names (a path or a ``file:`` URL), the current one for None."""
    if base is None:
        return Path.cwd().resolve()
    text = os.fspath(base)
    parsed = urllib.parse.urlsplit(text)
    if len(parsed.scheme) > 1:  # a one-letter scheme is a Windows drive
        path = local_path(parsed)
        if path is None:
            raise ValueError(f"base {text!r} is neither a directory nor a file: URL of one")
        text = path
    return Path(text).resolve()


def _import_elements(doc: SourceDoc) -> list[etree._Element]:
    return list(doc.root.iterchildren(T_IMPORT))


def locate_main(text: str, options: LoadOptions, catalogs: Catalogs) -> Location:
    parsed = urllib.parse.urlsplit(text)
    if len(parsed.scheme) > 1:  # a one-letter scheme is a Windows drive
        mapped = catalogs.lookup(text) if catalogs else None
        if mapped is not None:
            path = _mapped_file(text, mapped, None)
            if path is not None:
                return _file_location(str(path), path)
            text, parsed = mapped.target, urllib.parse.urlsplit(mapped.target)
        if parsed.scheme == "file":
            path = Path(url2pathname(parsed.path))
            return _file_location(text, path)
        _check_scheme(text, parsed.scheme, options, None)
        return Location(text, text, text)
    return _file_location(text, Path(text))


def _file_location(display: str, path: Path) -> Location:
    real = path.resolve()
    return Location(display, str(real), real.as_uri(), real)


def locate_import(
    location: str,
    importer: Location,
    doc: SourceDoc,
    imp: etree._Element,
    roots: Sequence[Path],
    options: LoadOptions,
    catalogs: Catalogs,
) -> Location:
    absolute = join_url(importer.base, location)
    mapped = catalogs.lookup(absolute) if catalogs else None
    if mapped is not None:
        _mapped_file(location, mapped, (doc, imp))  # a missing file is named with its entry
        absolute = location = mapped.target  # what is read, and refused, from here on
    roots = [*roots, *catalogs.directories]  # after the lookup: it may have read more catalogs
    parsed = urllib.parse.urlsplit(absolute)
    if parsed.scheme != "file":
        _check_scheme(location, parsed.scheme, options, (doc, imp))
        return Location(absolute, absolute, absolute)
    if parsed.netloc not in ("", "localhost"):
        raise ImportRefusedError(
            f"import {location!r} names a file on another host ({parsed.netloc})", url=doc.url, line=imp.sourceline
        )
    try:
        path = Path(url2pathname(parsed.path))
        real = path.resolve()  # symlinks resolved before the confinement check
    except (ValueError, OSError) as exc:  # a NUL byte, a loop of symlinks ...
        raise ImportRefusedError(f"import {location!r} is not a usable file name: {exc}", url=doc.url, line=imp.sourceline) from None
    if not any(real == root or root in real.parents for root in roots):
        allowed = ", ".join(str(r) for r in roots) or "(none)"
        raise ImportRefusedError(
            f"import {location!r} resolves to {real}, outside the allowed directories ({allowed}); "
            "allow its directory with --import-path",
            url=doc.url,
            line=imp.sourceline,
        )
    # Show imports relative to the importing document's display path when it
    # is a relative file path, so messages read as the user's files.
    display = str(real)
    if importer.file is not None and not os.path.isabs(importer.display) and "://" not in importer.display:
        display = os.path.normpath(os.path.join(os.path.dirname(importer.display), os.path.relpath(real, importer.file.parent)))
    return Location(display, str(real), real.as_uri(), real)


def _mapped_file(location: str, mapped: Mapped, where: tuple[SourceDoc, etree._Element] | None) -> Path | None:
    """The local file a catalog maps ``location`` to (None for a non-file
    target); an error naming the catalog entry when the file is missing."""
    parsed = urllib.parse.urlsplit(mapped.target)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    path = Path(url2pathname(parsed.path))
    if not path.is_file():
        url = where[0].url if where else location
        line = where[1].sourceline if where else None
        raise LoadError(
            f"{location!r} is mapped by the catalog entry {mapped.entry.describe()} to {path}, which "
            + ("is not a file" if path.exists() else "does not exist"),
            code="IMPORT_NOT_FOUND" if where else "IO_ERROR",
            url=url,
            line=line,
        )
    return path


def _check_scheme(
    location: str, scheme: str, options: LoadOptions, where: tuple[SourceDoc, etree._Element] | None
) -> None:
    url = where[0].url if where else location
    line = where[1].sourceline if where else None
    if scheme in _REMOTE and not options.allow_remote:
        raise ImportRefusedError(
            f"{location!r} is remote; remote documents are refused unless allowed (--allow-remote) "
            "or mapped to a local file by an XML catalog (--catalog)",
            url=url,
            line=line,
        )
    if scheme not in _REMOTE and options.resolver is None:
        raise ImportRefusedError(
            f"{location!r} uses the scheme {scheme!r}; only files, and http(s) when allowed, can be read: "
            "map it to a local file with an XML catalog (--catalog), or, from the library, supply a resolver",
            url=url,
            line=line,
        )


def read_document(loc: Location, options: LoadOptions, where: tuple[SourceDoc, etree._Element] | None) -> bytes:
    url = where[0].url if where else loc.display
    line = where[1].sourceline if where else None
    code = "IMPORT_NOT_FOUND" if where else "IO_ERROR"
    limit = options.limits.max_bytes
    try:
        if loc.file is not None:
            held = options.overlay.get(loc.key)
            size = len(held) if held is not None else loc.file.stat().st_size
            if size > limit:
                raise LimitError(
                    f"{loc.display} is {size} bytes, over the input size limit of {limit} bytes (max_bytes)",
                    url=url,
                    line=line,
                )
            return held if held is not None else loc.file.read_bytes()
        if options.resolver is not None:
            try:
                data = options.resolver(loc.key)
            except Exception as exc:  # the caller's code: whatever it raises is a read failure
                raise LoadError(
                    f"cannot read {loc.display}: the resolver failed ({type(exc).__name__}: {exc})",
                    code=code,
                    url=url,
                    line=line,
                ) from exc
            if not isinstance(data, bytes):
                raise LoadError(
                    f"cannot read {loc.display}: the resolver returned {type(data).__name__}, not bytes",
                    code=code,
                    url=url,
                    line=line,
                )
            return data
        import urllib.request  # only here: importing it pulls in http.client and email

        with urllib.request.urlopen(loc.key, timeout=options.timeout) as response:
            body: bytes = response.read(limit + 1)
            if len(body) > limit:
                raise LimitError(f"{loc.display} is over the input size limit of {limit} bytes (max_bytes)", url=url, line=line)
            return body
    except CdlError:
        raise
    except IsADirectoryError:
        raise LoadError(f"cannot read {loc.display}: it is a directory", code=code, url=url, line=line) from None
    except FileNotFoundError:
        raise LoadError(f"cannot read {loc.display}: no such file", code=code, url=url, line=line) from None
    except (OSError, ValueError, TypeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise LoadError(f"cannot read {loc.display}: {reason}", code=code, url=url, line=line) from None

