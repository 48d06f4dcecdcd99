"""Diagnostics of ``cdl lsp``: the engine's errors and warnings placed on the text.

Entry point: :func:`problems_of`. Each :class:`cdl.CdlError` of loading and
resolving a document (the members of a :class:`cdl.CdlErrorGroup`) becomes a
:class:`Problem` in the document it names, marking the value of the
attribute the error is about (``cdl:extends`` of ``UNKNOWN_PROTOTYPE``, ...)
when the start tag on the error's line has it, the start tag's name
otherwise. The links of a cycle (``EXTENDS_CYCLE``, ``REF_CYCLE``,
``PLAN_CYCLE``: ``path (file:line)`` each) become related places. An error
in an imported document is also shown in the main document, on the
``cdl:import`` that brought it in. The warnings of templates left
unresolved (``file:line: message``) are warnings. Pure: no LSP types;
positions are 0-based lines and code-point columns (``cdl.text.Lines`` converts them to the client's).
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from ._engine import CdlError, Lines, Tag, join_url, local_path, read_start_tag, scan, tags_reaching, unescape

ERROR, WARNING = "error", "warning"
#: The code of the warnings of a resolution (``Resolution.warnings``: a
#: template's references left unresolved, 7.6).
TEMPLATE_UNRESOLVED = "TEMPLATE_UNRESOLVED"

#: The attributes (local names) an error of each code is about, in the
#: order they are looked for on its start tag.
ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "UNKNOWN_PROTOTYPE": ("extends",),
    "EXTENDS_CYCLE": ("extends",),
    "BAD_QNAME": ("extends", "refroot", "name"),
    "UNKNOWN_REFROOT": ("refroot",),
    "REFROOT_WITHOUT_REF": ("refroot",),
    "BAD_PATH": ("ref",),
    "REF_NOT_FOUND": ("ref",),
    "REF_ABOVE_TOP": ("ref",),
    "REF_CYCLE": ("ref",),
    "REF_CONTEXT": ("ref",),
    "REF_WITH_CHILDREN": ("ref",),
    "VARIABLE_MULTIPLE": ("ref",),
    "LAZY_UNRESOLVED": ("ref",),
    "BAD_LAZY": ("lazy",),
    "LAZY_WITH_VALUE": ("lazy",),
    "BAD_USE": ("use",),
    "BAD_EXPRESSION": ("value-of",),
    "IMPORT_NOT_FOUND": ("location",),
    "IMPORT_REFUSED": ("location",),
    "IMPORT_SYSTEM": ("location",),
}


@dataclass(frozen=True)
class Place:
    """A range on one line of one document (0-based line, code-point columns)."""

    url: str
    line: int
    start: int
    end: int


@dataclass(frozen=True)
class Problem:
    """One diagnostic: where, how severe, the engine's code and message, related places."""

    place: Place
    severity: str
    code: str
    message: str
    related: tuple[tuple[Place, str], ...] = ()


@dataclass(frozen=True)
class Loaded:
    """What the diagnostics know of a loaded set of documents.

    ``urls`` in load order, the main one first; ``importers[i]``: the index
    of the document that imported document ``i`` and the line of its
    ``cdl:import`` (None for the main one).
    """

    urls: Sequence[str]
    importers: Sequence[tuple[int, int | None] | None]


def problems_of(
    errors: Iterable[CdlError],
    warnings: Iterable[str],
    main: str,
    loaded: Loaded | None,
    lines_of: Callable[[str], Lines | None],
) -> list[Problem]:
    """Every problem of ``errors`` and ``warnings`` found resolving ``main``.

    ``loaded`` tells which documents were read (None when loading failed),
    ``lines_of(url)`` gives the lines of a document's text (None when it
    cannot be read: the problem then marks the start of its line).
    """
    marker = _Marker(lines_of)
    known = _Known(loaded.urls if loaded is not None else [main])
    found: list[Problem] = []
    for error in errors:
        for member in error.errors:
            problem = _problem(member, marker, known)
            found.append(problem)
            if problem.place.url != main:
                found.append(_shown_in_main(problem, main, loaded, known, marker))
    for warning in warnings:
        found.append(_warning(warning, main, known, marker))
    return found


class _Known:
    """The urls of the loaded documents, as messages write them: their
    indexes, and patterns finding them in messages (longest first, so a url
    that extends another is found whole)."""

    def __init__(self, urls: Sequence[str]) -> None:
        self.urls = list(urls)
        self.index = {url: i for i, url in enumerate(self.urls)}
        either = "|".join(re.escape(u) for u in sorted(self.urls, key=len, reverse=True))
        #: ``path (url:line)``: a link of a cycle.
        self.links = re.compile(r"(\S+) \((" + either + r"):(\d+)\)")
        #: ``url:line: ``: where a warning is.
        self.warning = re.compile(r"(" + either + r"):(\d+): ")


def _problem(error: CdlError, marker: _Marker, known: _Known) -> Problem:
    attributes = ATTRIBUTES.get(error.code, ())
    name = _last_step(error.path)
    url = error.url if error.url is not None else known.urls[0]
    if error.code == "XML_SYNTAX":
        place = marker.syntax(url, error.line)
    else:
        place = marker.mark(url, error.line, attributes, name)
    related = tuple(
        (marker.mark(m.group(2), int(m.group(3)), attributes, _last_step(m.group(1))), m.group(1))
        for m in known.links.finditer(error.message)
    )
    return Problem(place, ERROR, error.code, error.message, related)


def _last_step(path: str | None) -> str | None:
    """The local name of the last step of a property path (``/A/t:b`` -> ``b``)."""
    if not path:
        return None
    return path.rstrip("/").rpartition("/")[2].rpartition(":")[2] or None


def _warning(warning: str, main: str, known: _Known, marker: _Marker) -> Problem:
    """A template warning, ``file:line: message``, at its place (the main document's start if none)."""
    match = known.warning.match(warning)
    if match is None:
        return Problem(marker.mark(main, 1, (), None), WARNING, TEMPLATE_UNRESOLVED, warning)
    place = marker.mark(match.group(1), int(match.group(2)), ATTRIBUTES["REF_NOT_FOUND"], None)
    return Problem(place, WARNING, TEMPLATE_UNRESOLVED, warning[match.end() :])


def _shown_in_main(problem: Problem, main: str, loaded: Loaded | None, known: _Known, marker: _Marker) -> Problem:
    """``problem``, of an imported document, shown on the main document's import that reads it."""
    where = problem.place
    index = known.index.get(where.url)
    if loaded is not None and index is not None:
        step = loaded.importers[index]
        while step is not None and step[0] != 0:
            step = loaded.importers[step[0]]
        place = marker.mark(main, step[1] if step is not None else 1, ATTRIBUTES["IMPORT_NOT_FOUND"], "import")
    else:  # the load failed in it: the import of the main document that names it, if one does
        place = marker.import_naming(main, where.url)
    message = f"in the imported document {where.url}:{where.line + 1}: [{problem.code}] {problem.message}"
    return Problem(place, problem.severity, problem.code, message, ((where, problem.message), *problem.related))


class _Marker:
    """Finds ranges in the documents' texts, each text's lines asked for once."""

    def __init__(self, lines_of: Callable[[str], Lines | None]) -> None:
        self._lines_of = lines_of
        self._lines: dict[str, Lines | None] = {}

    def lines(self, url: str) -> Lines | None:
        if url not in self._lines:
            self._lines[url] = self._lines_of(url)
        return self._lines[url]

    def mark(self, url: str, line: int | None, attributes: Sequence[str], name: str | None) -> Place:
        """The value of the first of ``attributes`` on the start tag at ``line``
        (the parser's, 1-based), or that tag's name, or the line's text."""
        lines = self.lines(url)
        if lines is None:
            return Place(url, max((line or 1) - 1, 0), 0, 0)
        start, end = _parser_line(lines, line)
        tags = tags_reaching(lines.text, start, end)
        if name is not None:  # the element the error's path names first
            tags.sort(key=lambda tag: tag.local != name)
        for attribute in attributes:
            for tag in tags:
                attr = tag.attr(attribute)
                if attr is not None and attr.value_start is not None:
                    return Place(url, *lines.span(attr.value_start, attr.value_end))
        if tags:
            return Place(url, *lines.span(tags[0].name_start, tags[0].name_end))
        number = lines.position_of(start)[0]
        text = lines.line(number)
        return Place(url, number, len(text) - len(text.lstrip()), len(text.rstrip()))

    def import_naming(self, main: str, url: str) -> Place:
        """The location of the main document's cdl:import that reads the file
        ``url`` directly, else its first cdl:import, else its first line."""
        lines = self.lines(main)
        if lines is None:
            return Place(main, 0, 0, 0)
        first = None
        base = Path(main).resolve().as_uri()
        for tag in scan(lines.text):
            value = tag.attr("location") if tag.local == "import" else None
            if value is None or value.value_start is None or not value.closed:
                continue
            first = first or value
            written = unescape(lines.text[value.value_start : value.value_end]).strip()
            target = local_path(urllib.parse.urlsplit(join_url(base, written)))
            if target is not None and os.path.realpath(target) == os.path.realpath(url):
                return Place(main, *lines.span(value.value_start, value.value_end))
        if first is not None and first.value_start is not None:
            return Place(main, *lines.span(first.value_start, first.value_end))
        return self.mark(main, 1, (), None)

    def syntax(self, url: str, line: int | None) -> Place:
        """The character libxml2 reports a syntax error at (the one before it
        at a line's end), parsing the text again for its column: the error
        keeps only the line. Parsed as UTF-8 whatever the text declares, so
        that libxml2's columns count the text's characters (a character the
        declared encoding cannot hold would be written as a longer character
        reference)."""
        lines = self.lines(url)
        if lines is None:
            return Place(url, max((line or 1) - 1, 0), 0, 0)
        start, end = _parser_line(lines, line)
        column = 0
        parser = etree.XMLParser(encoding="utf-8", resolve_entities=False, no_network=True, huge_tree=False)
        try:
            etree.fromstring(lines.text.encode("utf-8", "surrogatepass"), parser)
        except etree.XMLSyntaxError as exc:
            if exc.position and exc.position[0] == line:
                column = max(exc.position[1] - 1, 0)
                left_open = _left_open(lines, exc.msg) if exc.code == etree.ErrorTypes.ERR_TAG_NAME_MISMATCH else None
                if left_open is not None:
                    return Place(url, *lines.span(left_open.name_start, left_open.name_end))
        offset = min(start + column, end)
        typed = _typed_before(lines.text, offset, start)
        if typed is not None:
            return Place(url, *lines.span(*typed))
        number, column = lines.position_of(offset)
        length = len(lines.line(number))
        first = column - 1 if column and column == length else column
        return Place(url, number, first, max(column, first + 1) if length else first)


def _typed_before(text: str, offset: int, line_start: int) -> tuple[int, int] | None:
    """Where a syntax error found at ``offset`` belongs when a start tag is
    being typed: libxml2 finds an attribute name without its value, a value
    without its closing quote, a tag without its ``>``, only at what comes
    next, often the next line. When only white space stands before
    ``offset`` on its line and ``offset`` is in a start tag (read
    tolerantly), the last thing written in that tag before it: its last
    attribute (name and value), else its name."""
    if text[line_start:offset].strip():
        return None
    pos = text.rfind("<", 0, offset)
    tag = read_start_tag(text, pos, tolerant=True) if pos >= 0 else None
    if tag is None or not tag.start < offset <= tag.end:
        return None
    written = [attr for attr in tag.attrs if attr.name_start < offset]
    if not written:
        return tag.name_start, tag.name_end
    last = written[-1]
    if last.value_start is None:
        return last.name_start, last.value_end
    return last.name_start, last.value_end + (1 if last.closed else 0)


#: libxml2's message when an end tag does not close the element open there.
_MISMATCH = re.compile(r"Opening and ending tag mismatch: (\S+) line (\d+) and ([^\s,]+)")


def _left_open(lines: Lines, message: str) -> Tag | None:
    """The start tag of an element left open (being typed: ``<b>`` written,
    its content and ``</b>`` not yet), which libxml2 finds only at the end
    tag of an element around it, often on a later line: the start tag the
    mismatch names, on the (parser's) line it names, when an element around
    it has the end tag's name. None otherwise: the end tag is the one wrong
    (``</Wbe>`` closing ``<Web>``), where libxml2 reports it."""
    found = _MISMATCH.match(message)
    bounds = None if found is None else lines.parser_bounds(int(found.group(2)))
    if found is None or bounds is None:
        return None
    name, closing = found.group(1), found.group(3)
    tags = scan(lines.text)
    for tag in reversed(tags):
        if tag.name != name or not bounds[0] <= tag.start <= bounds[1]:
            continue
        around = tag.parent
        while around >= 0 and tags[around].name != closing:
            around = tags[around].parent
        if around >= 0:
            return tag
    return None


def _parser_line(lines: Lines, line: int | None) -> tuple[int, int]:
    """Where the parser's ``line`` (1-based; the last one past the text) starts and ends."""
    last = lines.parser_line_of(len(lines.text))
    found = lines.parser_bounds(min(max(line or 1, 1), last))
    assert found is not None  # a line of the text
    return found


def by_url(problems: Iterable[Problem]) -> Mapping[str, list[Problem]]:
    """``problems`` grouped by the document they are in."""
    grouped: dict[str, list[Problem]] = {}
    for problem in problems:
        grouped.setdefault(problem.place.url, []).append(problem)
    return grouped
