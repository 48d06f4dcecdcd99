"""The line a start tag begins on, or an attribute is written on, read from
the source text (errors and explanations only).

Entry points: :func:`start_line`, :func:`attribute_line` (``model.places``
applies them to the documents of a run). libxml2 records an
element at the line where its start tag *ends*, expat (the path for very deep
documents) where it *begins*; for a start tag spread over several lines, an
error or an explanation step about the element should point at its ``<name``,
one about one of its attributes at the attribute. Neither parser records attribute
positions, so this looks the start tag up in the document's bytes, which the
loader keeps (:attr:`SourceDoc.data`: the bytes it read anyway, no copy).

It runs only when an error is reported or an explanation built, never during
resolution: the first lookup in a text finds where each of its lines starts
(linear in its size, once), and each lookup after it costs a few steps.
Documents in encodings that are not ASCII-compatible (UTF-16, ...) keep the
element's line.
"""

from __future__ import annotations

import array
import functools
import re

from lxml import etree

_START_TAG = re.compile(
    rb"<([^\s/>!?][^\s/>]*)((?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*)\s*/?>"
)
_ATTRIBUTE = re.compile(rb"([^\s=]+)\s*=\s*(\"[^\"]*\"|'[^']*')")
#: The predefined entities (a catalog or DTD cannot add any: they are refused).
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&apos;", "'"), ("&amp;", "&"))


def _unescape(text: str) -> str:
    """An attribute value as parsed, for the predefined entities (xml.sax.saxutils
    would import urllib.request at start-up)."""
    for entity, char in _ENTITIES:
        text = text.replace(entity, char)
    return text


def _tags_ending_on(data: bytes, el: etree._Element) -> tuple[int, int, list[re.Match[bytes]]] | None:
    """The start tags named like ``el`` that reach its recorded line.

    Returns (that line, the offset where it starts, the tags), or None when
    the text cannot be searched. The first tag is the one that begins on an
    earlier line, if any: the last '<' before the line (attribute values
    cannot hold '<'); then every tag that begins on the line.
    """
    line = el.sourceline
    if not line or not data or data.startswith((b"\xff\xfe", b"\xfe\xff")) or not isinstance(el.tag, str):
        return None
    start = _line_start(data, line)
    if start is None:
        return None
    local = etree.QName(el.tag).localname.encode()
    end = data.find(b"\n", start)
    end = len(data) if end < 0 else end
    candidates = []
    before = data.rfind(b"<", 0, start)
    if before >= 0:
        candidates.append(before)
    pos = data.find(b"<", start, end)
    while pos >= 0:
        candidates.append(pos)
        pos = data.find(b"<", pos + 1, end)
    tags = []
    for pos in candidates:
        tag = _START_TAG.match(data, pos)
        if tag is not None and tag.end() > start and tag.group(1).rpartition(b":")[2] == local:
            tags.append(tag)
    return line, start, tags


def _line_of(line: int, start: int, offset: int, data: bytes) -> int:
    """The line of ``offset``, given that ``line`` starts at ``start``."""
    return line + data.count(b"\n", start, offset) - data.count(b"\n", offset, start)


def start_line(data: bytes, el: etree._Element) -> int | None:
    """The line where the start tag of ``el`` begins (its ``<name``).

    libxml2 records the line where a start tag ends; for one spread over
    several lines, the tag that begins on an earlier line and ends on the
    recorded one is it (expat records the beginning: no such tag, the line
    stays). Falls back to ``el.sourceline`` when the text cannot tell.
    """
    found = _tags_ending_on(data, el)
    if found is None:
        return el.sourceline or None
    line, start, tags = found
    end = data.find(b"\n", start)
    ending = [tag for tag in tags if end < 0 or tag.end() <= end + 1]
    if not ending:
        return line
    # Several tags of that name may end on the line (one spread over lines
    # before it, some written on it): the one whose attributes ``el`` still
    # has the most of, the one spread over lines on a tie.
    have = {(etree.QName(name).localname, value) for name, value in el.attrib.items()}
    tag = max(ending, key=lambda tag: (_shared(tag, have), tag.start() < start))
    return _line_of(line, start, tag.start(), data) if tag.start() < start else line


def _shared(tag: re.Match[bytes], have: set[tuple[str, str]]) -> int:
    """How many of the attributes written in ``tag`` are in ``have`` (local
    name, value)."""
    count = 0
    for match in _ATTRIBUTE.finditer(tag.string, tag.start(2), tag.end(2)):
        name = match.group(1).decode("utf-8", "replace").rpartition(":")[2]
        count += (name, _unescape(match.group(2)[1:-1].decode("utf-8", "replace"))) in have
    return count


def attribute_line(data: bytes, el: etree._Element, attribute: str, value: str | None = None) -> int | None:
    """The line of ``attribute`` (a Clark name) in the start tag of ``el``.

    ``data`` is the text of the document ``el`` was written in, ``el`` that
    element or a copy of it (its line and namespace declarations are the
    original's). ``value``, when known, tells apart two start tags of the same
    name on that line. Falls back to ``el.sourceline`` when the tag or the
    attribute cannot be found.
    """
    found = _tags_ending_on(data, el)
    if found is None:
        return el.sourceline
    line, start, tags = found
    for tag in tags:
        offset = _find_attribute(tag, el, attribute, value)
        if offset is not None:
            return _line_of(line, start, offset, data)
    return line


def _line_start(data: bytes, line: int) -> int | None:
    """The offset where ``line`` (1-based) starts, or None past the end."""
    starts = _line_starts(data)
    return starts[line - 1] if 0 < line <= len(starts) else None


@functools.lru_cache(maxsize=4)
def _line_starts(data: bytes) -> array.array[int]:
    """Where each line of ``data`` starts (line 1 at index 0), found once per
    text: an explanation asks for the line of every step, and counting the
    newlines up to each element every time would grow with the square of
    the document. The few texts kept are those of the documents being
    reported on (bytes hash once, and a lookup finds the same object)."""
    starts = array.array("q", [0])
    starts.extend(match.end() for match in _NEWLINE.finditer(data))
    return starts


_NEWLINE = re.compile(b"\n")


def _find_attribute(tag: re.Match[bytes], el: etree._Element, attribute: str, value: str | None) -> int | None:
    """Offset of ``attribute`` in the start tag matched by ``tag``, or None."""
    uri, _, local = attribute[1:].partition("}") if attribute.startswith("{") else ("", "", attribute)
    for match in _ATTRIBUTE.finditer(tag.string, tag.start(2), tag.end(2)):
        prefix, colon, name = match.group(1).decode("utf-8", "replace").rpartition(":")
        # An unprefixed attribute is in no namespace (never the default one).
        if name != local or (el.nsmap.get(prefix) if colon else "") != uri:
            continue
        if value is not None:
            written = _unescape(match.group(2)[1:-1].decode("utf-8", "replace"))
            if written.strip() != value.strip():
                continue
        return match.start(1)
    return None


