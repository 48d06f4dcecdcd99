"""The open buffers of ``cdl lsp`` and their analyses.

Entry points: :func:`analyse` and :class:`Buffers`. Every open document is
loaded and resolved as a main document (:func:`analyse`, pure: it reads a
snapshot of the buffers, so it may run in another thread), its open buffers
read instead of the files (``LoadOptions.overlay``), for itself and
everything it imports. An analysis remembers every file its load asked for,
so a change to one of them finds the open documents to analyse again
(:meth:`Buffers.readers_of`). Of each open document the buffers keep its
last analysis (:attr:`Buffers.analyses`: what the diagnostics show) and the
last one that loaded and was prepared for the requests
(:attr:`Buffers.answering`: what they answer from, while a newer one is
made; the same one when it is done). Diagnostics of one document are the
union of what every analysis found in it (an imported template is seen by
each document importing it). Pure: no LSP types, paths are real file paths.
"""

from __future__ import annotations

import functools
import os
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ._diagnostics import Loaded, Problem, by_url, problems_of
from ._engine import (
    CdlError,
    Document,
    Earlier,
    Lines,
    LoadOptions,
    SourceDoc,
    check_plan,
    decode,
    encode,
    hand_over,
    load_with,
    loaded_of,
    local_path,
    resolution_after,
)

#: How many symbols a ``documentSymbol`` answer lists, and how many items a
#: completion offers, unless the client's settings say otherwise (0: no limit).
SYMBOL_LIMIT = 5000
COMPLETION_LIMIT = 100


@dataclass(frozen=True)
class Settings:
    """Where imports may come from, and how long the answers of the requests
    that list many things may be, as the client's initialization options say."""

    catalogs: tuple[str, ...] = ()
    import_paths: tuple[str, ...] = ()
    allow_remote: bool = False
    #: The workspace's root directory: a document not saved yet (``untitled:``)
    #: is read as if it were there (its imports resolve against it, and may not leave it).
    root: str | None = None
    symbol_limit: int = SYMBOL_LIMIT
    completion_limit: int = COMPLETION_LIMIT

    def imports(self) -> tuple[object, ...]:
        """What an analysis reads of these settings (a change to the rest analyses nothing again)."""
        return self.catalogs, self.import_paths, self.allow_remote, self.root


#: The initialization options, by their names in the client's JSON.
SETTING_NAMES = ("catalogs", "importPaths", "allowRemote", "symbolLimit", "completionLimit")


def settings_from(options: object, root: str | None) -> tuple[Settings, list[str]]:
    """The settings in the client's ``initializationOptions`` and what is wrong with them.

    Relative paths are taken from ``root`` (the workspace's root directory);
    a wrong value is left out (the default stands) and named.
    """
    complaints: list[str] = []
    if options is None:
        return Settings(root=root), complaints
    if not isinstance(options, Mapping):
        return Settings(root=root), [f"initializationOptions must be an object with {', '.join(SETTING_NAMES)}; ignored"]
    unknown = sorted(str(k) for k in options if k not in SETTING_NAMES)
    if unknown:
        complaints.append(f"unknown initializationOptions {unknown} ignored; known: {', '.join(SETTING_NAMES)}")
    paths: dict[str, tuple[str, ...]] = {}
    for name in ("catalogs", "importPaths"):
        value = options.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            complaints.append(f"{name} must be a list of paths; ignored")
            value = []
        paths[name] = tuple(os.path.join(root, v) if root and not os.path.isabs(v) else v for v in value)
    remote = options.get("allowRemote", False)
    if not isinstance(remote, bool):
        complaints.append("allowRemote must be true or false; remote imports stay refused")
        remote = False
    limits: dict[str, int] = {}
    for name, default in (("symbolLimit", SYMBOL_LIMIT), ("completionLimit", COMPLETION_LIMIT)):
        value = options.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            complaints.append(f"{name} must be a whole number, 0 for no limit; {default} stands")
            value = default
        limits[name] = value
    return Settings(paths["catalogs"], paths["importPaths"], remote, root, limits["symbolLimit"], limits["completionLimit"]), complaints


def path_of_uri(uri: str) -> str | None:
    """The real file path a ``file:`` URI names (None for another scheme)."""
    parsed = urllib.parse.urlsplit(uri)
    try:
        path = local_path(parsed)
        return None if path is None else os.path.realpath(path)
    except (OSError, ValueError):
        return None


#: The scheme of a buffer no file holds yet (LSP's ``untitled:`` documents).
UNTITLED = "untitled:"


def key_of(uri: str) -> str | None:
    """What names the document at ``uri`` among the open ones: the real path
    of a ``file:`` URI, the URI itself of an ``untitled:`` one (None for any
    other scheme: not analysed)."""
    return uri if uri.startswith(UNTITLED) else path_of_uri(uri)


class _Overlay(Mapping[str, bytes]):
    """The open buffers as the loader reads them (encoded when asked for),
    noting every file it asks for."""

    def __init__(self, buffers: Mapping[str, str]) -> None:
        self._buffers = buffers
        self.asked: set[str] = set()

    def __getitem__(self, key: str) -> bytes:
        self.asked.add(key)
        return encode(self._buffers[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._buffers)

    def __len__(self) -> int:
        return len(self._buffers)


class _Texts(Mapping[str, str]):
    """The text of each loaded document, by its url in ``Document.urls``: the
    editor's buffer when it was open, else the bytes it was loaded from,
    decoded when first asked for."""

    def __init__(self, docs: Sequence[SourceDoc], buffers: Mapping[str, str]) -> None:
        self._docs = {doc.url: doc for doc in docs}
        keys = ((doc.url, doc.url if doc.file is None else doc.file) for doc in docs)
        self._held = {url: buffers[key] for url, key in keys if key in buffers}
        self._decoded: dict[str, str] = {}

    def __getitem__(self, url: str) -> str:
        held = self._held.get(url)
        if held is not None:
            return held
        found = self._decoded.get(url)
        if found is None:
            found = self._decoded[url] = decode(self._docs[url].data)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._docs)

    def __len__(self) -> int:
        return len(self._docs)


@dataclass
class Analysis:
    """One open document loaded and resolved as the editor holds it."""

    path: str
    document: Document | None
    #: The problems found, by the document they are in.
    problems: Mapping[str, list[Problem]]
    #: Every file the load asked for (read from a buffer or from disk).
    reads: frozenset[str]
    #: The text of each loaded document, by its url in ``document.urls``.
    texts: Mapping[str, str] = field(default_factory=dict)
    #: What the requests built from it (the navigation), kept with it.
    memo: dict[str, object] = field(default_factory=dict)
    #: The open buffers it read (key -> text, as :attr:`Buffers.texts`).
    seen: Mapping[str, str] = field(default_factory=dict)
    #: The lines of the texts of ``seen``, each split when first asked for.
    lines: dict[str, Lines] = field(default_factory=dict)

    def lines_of(self, key: str) -> Lines | None:
        """The lines of the open buffer ``key`` as this analysis read it (None: it read none)."""
        return _split_once(self.seen, self.lines, key)

    def lines_for(self) -> Callable[[str], Lines | None]:
        """The lines of a text if it is an open buffer's as this analysis read
        it (:meth:`lines_of`), for what is made from it: it holds the
        analysis's buffers and lines, not the analysis (which holds what is
        made from it: no reference cycle)."""
        return functools.partial(_lines_of_text, self.seen, self.lines)


def _split_once(seen: Mapping[str, str], lines: dict[str, Lines], key: str) -> Lines | None:
    """The lines of ``seen[key]`` (None: no such text), split when first asked and kept in ``lines``."""
    found = lines.get(key)
    if found is None:
        text = seen.get(key)
        if text is None:
            return None
        found = lines[key] = Lines(text)
    return found


def _lines_of_text(seen: Mapping[str, str], lines: dict[str, Lines], text: str) -> Lines | None:
    key = next((key for key, held in seen.items() if held is text), None)
    return None if key is None else _split_once(seen, lines, key)


def text_of(url: str, buffers: Mapping[str, str], read: Iterable[Mapping[str, str]]) -> str | None:
    """The text of the document ``url``: the editor's buffer when it is open
    (``buffers``: real path -> text), else as a load read it (``read``: each
    load's texts by url, looked at in order), else the file's; None when it
    cannot be read."""
    real = os.path.realpath(url) if os.path.isabs(url) else url
    if real in buffers:
        return buffers[real]
    for texts in read:
        if url in texts:
            return texts[url]
    try:
        return decode(Path(real).read_bytes())
    except (OSError, ValueError):
        return None


class LastResolved:
    """The working trees of the last resolution of one open document, which
    its next analysis takes over what it can of (``resolution_after``: what
    an edit does not reach is not resolved again). Taken and put back by the
    analyses, in whichever thread they run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._trees: Earlier | None = None

    def __repr__(self) -> str:
        return f"<LastResolved {'held' if self._trees is not None else 'empty'}>"

    def take(self) -> Earlier | None:
        """The trees held, no longer held (None: none)."""
        with self._lock:
            found, self._trees = self._trees, None
            return found

    def put(self, trees: Earlier | None) -> None:
        """Hold ``trees`` for the next analysis."""
        with self._lock:
            self._trees = trees


def analyse(
    path: str,
    buffers: Mapping[str, str],
    settings: Settings,
    lines: Mapping[str, Lines] | None = None,
    earlier: LastResolved | None = None,
    on_loaded: Callable[[], None] | None = None,
) -> Analysis:
    """Load and resolve the document at ``path`` (a real path, or an
    ``untitled:`` URI, then read from its buffer as if it were in the
    workspace's root directory), reading ``buffers`` (path -> text) instead
    of files; ``lines``: the lines of some of those texts, already found;
    ``earlier``: the document's last resolution, taken over where it can be
    and replaced by this one; ``on_loaded()`` is called once the documents
    loaded, before they are resolved (``cdl lsp`` lets go of the last
    resolution with provenance there)."""
    overlay = _Overlay(buffers)
    options = LoadOptions(
        allow_remote=settings.allow_remote,
        import_paths=settings.import_paths,
        catalogs=settings.catalogs,
        overlay=overlay,
    )
    errors: list[CdlError] = []
    document = resolution = None
    taken = None if earlier is None else earlier.take()
    # The load continues the tables of the version the trees were made from.
    continuing = None if taken is None else taken.loaded
    try:
        # Never output: the output's known path is not prepared (``load_loaded``).
        if path.startswith(UNTITLED):
            document = load_with(encode(buffers[path]), options, name=path, base=settings.root, continuing=continuing, output=False)
        else:
            document = load_with(path, options, continuing=continuing, output=False)
        if on_loaded is not None:
            on_loaded()
        resolution = resolution_after(loaded_of(document), taken)
        check_plan(resolution)  # a plan's cycle is an error of the document too
    except CdlError as error:
        errors.append(error)
    if earlier is not None:
        # Taken over when this loaded (else they stay for the next). Only the
        # trees are kept (the plan was read): nothing asks this resolution again.
        earlier.put(taken if document is None else None if resolution is None else hand_over(resolution))
    texts: Mapping[str, str] = {}
    loaded = None
    if document is not None:
        docs = loaded_of(document).docs
        texts = _Texts(docs, buffers)
        loaded = Loaded([d.url for d in docs], [d.importer for d in docs])

    warnings = resolution.warnings if resolution is not None else []
    analysis = Analysis(path, document, {}, frozenset(overlay.asked), texts, seen=buffers, lines=dict(lines or {}))
    read = functools.partial(text_of, buffers=buffers, read=(texts,))
    # Not kept: what the requests read is made from the document (``_navigate``).
    analysis.problems = by_url(problems_of(errors, warnings, path, loaded, functools.partial(_lines_of, analysis, read)))
    return analysis


def _lines_of(analysis: Analysis, read: Callable[[str], str | None], url: str) -> Lines | None:
    """The lines of the text of document ``url`` (``read``): an open
    buffer's as ``analysis`` keeps them (split once, or found before it)."""
    text = read(url)
    if text is None:
        return None
    return analysis.lines_for()(text) or Lines(text)


class Buffers:
    """The open documents (real path -> text) and the last analysis of each."""

    def __init__(self) -> None:
        self.settings = Settings()
        self.texts: dict[str, str] = {}
        self.uris: dict[str, str] = {}
        self.analyses: dict[str, Analysis] = {}
        #: The analysis the requests answer from, by open document (see the module docstring).
        self.answering: dict[str, Analysis] = {}
        #: The lines of each document last asked for, with the text they split.
        self._lines: dict[str, Lines] = {}
        #: File -> the open documents whose last analysis read it.
        self._readers: dict[str, set[str]] = {}
        #: The last resolution of each open document, for its next analysis.
        self._earlier: dict[str, LastResolved] = {}

    def put(self, uri: str, text: str, lines: Lines | None = None) -> str | None:
        """Hold ``text`` as the document at ``uri`` (``lines``: its lines,
        when known); its key (:func:`key_of`; None: not a file nor an
        ``untitled:`` buffer, not held)."""
        path = key_of(uri)
        if path is not None:
            self.texts[path] = text
            self.uris[path] = uri
            if lines is not None and lines.text is text:
                self._lines[path] = lines
        return path

    def lines(self, url: str, analysis: Analysis | None = None) -> Lines | None:
        """The lines of the document ``url`` as :meth:`text_of` finds it, split
        once per text (a request may place many ranges in one document)."""
        text = self.text_of(url, analysis)
        if text is None:
            return None
        found = self._lines.get(url)
        if found is None or found.text is not text:
            # An analysis split this very text already (the first change after an open).
            split = (analysis.lines.get(url) for analysis in self.analyses.values())
            found = next((lines for lines in split if lines is not None and lines.text is text), None) or Lines(text)
            self._lines[url] = found
        return found

    def path_of(self, uri: str) -> str | None:
        """The key (:func:`key_of`) of the open document at ``uri`` (None: not open)."""
        path = key_of(uri)
        return path if path is not None and path in self.texts else None

    def last_trees(self, path: str) -> Earlier | None:
        """The working trees held for the next analysis of the open document
        ``path``, held no more (None: none, or an analysis has them now)."""
        held = self._earlier.get(path)
        return None if held is None else held.take()

    def drop(self, path: str) -> set[str]:
        """Forget the open document ``path`` and its analysis; the documents it had found problems in."""
        self.texts.pop(path, None)
        self.uris.pop(path, None)
        self._lines.pop(path, None)  # its text
        self.answering.pop(path, None)
        self._earlier.pop(path, None)
        return self._forget(path)

    def texts_now(self, document: Document) -> Mapping[str, str]:
        """The texts of the documents ``document`` loaded, as the editor holds them now."""
        return _Texts(loaded_of(document).docs, self.texts)

    def text_of(self, url: str, analysis: Analysis | None = None) -> str | None:
        """The text of the document ``url``: the editor's if open, else as
        ``analysis`` (or any analysis) read it, else the file's."""
        read = (source.texts for source in (analysis, *self.analyses.values()) if source is not None)
        return text_of(url, self.texts, read)

    def readers_of(self, path: str) -> set[str]:
        """The open documents to analyse again when ``path`` changes (itself, if open, among them)."""
        found = {p for p in self._readers.get(path, ()) if p in self.texts}
        if path in self.texts:
            found.add(path)
        return found

    def job(self, path: str, on_loaded: Callable[[], None] | None = None) -> Callable[[], Analysis]:
        """The analysis of the open document ``path`` as the buffers and the
        settings are now, to run in any thread (:func:`analyse`; ``on_loaded``
        is its hook)."""
        texts = dict(self.texts)
        # The lines the request loop found (kept up to date as the editor types) serve the worker too.
        lines = {key: found for key, found in self._lines.items() if texts.get(key) is found.text}
        earlier = self._earlier.setdefault(path, LastResolved())
        return functools.partial(analyse, path, texts, self.settings, lines, earlier, on_loaded)

    def analyse(self, path: str) -> set[str]:
        """Analyse the open document ``path`` again, here and now; the documents whose diagnostics changed."""
        return self.install(path, self.job(path)())

    def install(self, path: str, analysis: Analysis) -> set[str]:
        """Take ``analysis`` as the last of the open document ``path``; the documents whose diagnostics changed."""
        old = self._forget(path)
        self.analyses[path] = analysis
        for read in analysis.reads:
            self._readers.setdefault(read, set()).add(path)
        return old | set(analysis.problems)

    def _forget(self, path: str) -> set[str]:
        """Drop the analysis of ``path``; the documents it had found problems in."""
        old = self.analyses.pop(path, None)
        if old is None:
            return set()
        for read in old.reads:
            readers = self._readers.get(read)
            if readers is not None:
                readers.discard(path)
                if not readers:
                    del self._readers[read]
        return set(old.problems)

    def problems_in(self, url: str) -> list[Problem]:
        """The problems every analysis found in ``url``, each once."""
        seen: set[Problem] = set()
        found: list[Problem] = []
        for analysis in self.analyses.values():
            for problem in analysis.problems.get(url, ()):
                if problem not in seen:
                    seen.add(problem)
                    found.append(problem)
        return found

    def uri_of(self, url: str) -> str | None:
        """The URI to publish a document's diagnostics to: the editor's own for an open one."""
        if url in self.uris:  # an open one not saved yet
            return self.uris[url]
        if not os.path.isabs(url):
            return None
        real = os.path.realpath(url)
        return self.uris.get(real) or Path(real).as_uri()
