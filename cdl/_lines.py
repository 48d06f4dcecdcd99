"""The line an attribute is written on, read from the source text (errors only).

Entry point: :func:`attribute_line`. libxml2 records an element at the line
where its start tag *ends*, expat (the path for very deep documents) where it
*begins*; for a start tag spread over several lines, an error about one of its
attributes should point at the attribute. Neither parser records attribute
positions, so this looks the start tag up in the document's bytes, which the
loader keeps (:attr:`SourceDoc.data`: the bytes it read anyway, no copy).

It runs only when an error is reported, never during resolution: finding the
line costs a scan of the text up to the element (linear in its offset).
Documents in encodings that are not ASCII-compatible (UTF-16, ...) keep the
element's line.
"""

from __future__ import annotations

import re

from lxml import etree

from ._model import T_VARIABLE, Context, Location, doc_index_of

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


def attribute_line(data: bytes, el: etree._Element, attribute: str, value: str | None = None) -> int | None:
    """The line of ``attribute`` (a Clark name) in the start tag of ``el``.

    ``data`` is the text of the document ``el`` was written in, ``el`` that
    element or a copy of it (its line and namespace declarations are the
    original's). ``value``, when known, tells apart two start tags of the same
    name on that line. Falls back to ``el.sourceline`` when the tag or the
    attribute cannot be found.
    """
    line = el.sourceline
    if not line or not data or data.startswith((b"\xff\xfe", b"\xfe\xff")) or not isinstance(el.tag, str):
        return line
    local = etree.QName(el.tag).localname.encode()
    start = _line_start(data, line)
    if start is None:
        return line
    end = data.find(b"\n", start)
    end = len(data) if end < 0 else end
    # A tag that ends on this line may begin on an earlier one: the last '<'
    # before the line (attribute values cannot hold '<'). Then every tag that
    # begins on the line.
    candidates = []
    before = data.rfind(b"<", 0, start)
    if before >= 0:
        candidates.append(before)
    pos = data.find(b"<", start, end)
    while pos >= 0:
        candidates.append(pos)
        pos = data.find(b"<", pos + 1, end)
    for pos in candidates:
        tag = _START_TAG.match(data, pos)
        if tag is None or tag.end() <= start or tag.group(1).rpartition(b":")[2] != local:
            continue
        found = _find_attribute(tag, el, attribute, value)
        if found is not None:
            return line + data.count(b"\n", start, found) - data.count(b"\n", found, start)
    return line


_CHUNK = 1 << 16


def _line_start(data: bytes, line: int) -> int | None:
    """The offset where ``line`` (1-based) starts, or None past the end.

    Skips whole chunks by counting their newlines (in C), then finds the
    line within one: a few hundred steps for a document of megabytes rather
    than one per line.
    """
    pos, before = 0, line - 1  # newlines still to pass
    while before and pos < len(data):
        count = data.count(b"\n", pos, pos + _CHUNK)
        if count >= before:
            break
        before -= count
        pos += _CHUNK
    for _ in range(before):
        pos = data.find(b"\n", pos) + 1
        if pos == 0:
            return None
    return pos if pos <= len(data) else None


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


def written_as(el: etree._Element, attribute: str) -> str:
    """How cdl:ref or cdl:refroot is written on ``el``: unqualified on a
    cdl:variable (Appendix A), as a Clark name otherwise."""
    return etree.QName(attribute).localname if el.tag == T_VARIABLE else attribute


def located(ctx: Context, el: etree._Element, attribute: str, value: str | None = None) -> Location:
    """``ctx.where(el)`` for an error about ``attribute`` of ``el``: its own line."""
    where = ctx.where(el)
    index = doc_index_of(el)
    if index is not None and index < len(ctx.docs):
        where = where._replace(line=attribute_line(ctx.docs[index].data, el, attribute, value))
    return where


def located_at(ctx: Context, el: etree._Element, attribute: str, value: str | None = None) -> str:
    """``file:line`` of ``attribute`` of ``el``, for messages that list several places."""
    where = located(ctx, el, attribute, value)
    return f"{where.url}:{where.line}" if where.line else str(where.url)
