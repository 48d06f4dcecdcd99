"""Start tags and attributes where they are written in a document's text, for
the navigation of ``cdl lsp`` (issue 25, points 2-7 and 9).

Entry points: :func:`scan` (a text's start tags, each with its name's and its
attributes' places) and :func:`pair` (which scanned tag each element of a
loaded tree was parsed from). Neither parser records columns, nor an
attribute's place, so the text is read again here: tolerantly, since an
editor's text is often not well-formed while being typed (an unterminated
attribute value ends at the next ``<``, which a value cannot hold; a tag
without its ``>`` ends there too). Offsets are code points of the text
(``str``); a line ends at ``\\n`` (a ``\\r`` before it is the line's last
character, which no column before it counts), as the XML parser counts lines.
"""

from __future__ import annotations

import bisect
import codecs
import re
from dataclasses import dataclass, field

from lxml import etree

from ._positions import Lines

_NAME = re.compile(r"[^\s/>=<\"']+")
_SPACE = re.compile(r"\s*")
_ENCODING = re.compile(rb"""^<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


@dataclass(slots=True)
class Attr:
    """One attribute as written: its name and where its value's text lies
    (inside the quotes; ``value_start`` is None when no value was written)."""

    name: str
    name_start: int
    value_start: int | None
    value_end: int
    #: Whether the closing quote was written.
    closed: bool = True


@dataclass(slots=True)
class Tag:
    """One start tag: ``<name`` begins at ``start``; ``end`` is the offset
    after its ``>`` (where the scan stopped when it has none)."""

    name: str
    start: int
    end: int
    attrs: list[Attr]
    parent: int
    children: list[int] = field(default_factory=list)
    terminated: bool = True

    @property
    def name_start(self) -> int:
        return self.start + 1

    @property
    def name_end(self) -> int:
        return self.start + 1 + len(self.name)

    @property
    def local(self) -> str:
        return self.name.rpartition(":")[2]

    def attr(self, local: str) -> Attr | None:
        """The first attribute of that local name (any prefix)."""
        return next((a for a in self.attrs if a.name.rpartition(":")[2] == local), None)


class Source:
    """A text's start tags in document order, and its lines."""

    def __init__(self, text: str, tags: list[Tag]) -> None:
        self.text = text
        self.tags = tags
        self._starts = [tag.start for tag in tags]
        #: Its lines, as the positions of ``cdl lsp`` count them.
        self.lines = Lines(text)

    def offset(self, line: int, column: int) -> int:
        """The offset of (line, column); a column past the line's end is its end."""
        if line < 0:
            return 0
        if line >= len(self.lines):
            return len(self.text)
        return self.lines.offset(line, column)

    def span(self, start: int, end: int) -> tuple[int, int, int]:
        """(line, first column, column after the last) of the text from
        ``start`` to ``end``, cut at the end of ``start``'s line."""
        line, _ = self.lines.position_of(start)
        first, stop = self.lines.bounds(line)
        return line, start - first, min(max(end, start), max(stop, start)) - first

    def tag_at(self, offset: int) -> int | None:
        """The start tag that holds ``offset`` (from its ``<`` up to its ``>``;
        for a tag not ended, up to where it stops), or None."""
        index = bisect.bisect_right(self._starts, offset) - 1
        if index < 0:
            return None
        tag = self.tags[index]
        return index if offset < tag.end or (not tag.terminated and offset == tag.end) else None

    def root(self) -> int | None:
        """The first tag that has no parent: the document's root element."""
        return next((i for i, tag in enumerate(self.tags) if tag.parent < 0), None)


def decode(data: bytes) -> str:
    """A document's bytes as text, in the encoding it declares (UTF-8 by default)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", "replace")
    found = _ENCODING.match(data.lstrip(b"\xef\xbb\xbf"))
    name = "utf-8"
    if found is not None:
        try:
            name = codecs.lookup(found.group(1).decode("ascii")).name
        except LookupError:
            pass
    text = data.decode(name, "replace")
    return text[1:] if text.startswith("\ufeff") else text


def scan(text: str) -> Source:
    """Every start tag of ``text`` with its parent, in document order (one
    pass; markup that is no element is skipped, an end tag closes up to the
    open tag of its name)."""
    tags: list[Tag] = []
    open_tags: list[int] = []
    for token in _MARKUP.finditer(text):
        kind = token.lastgroup
        if kind == "close":
            name = token.group("close")
            for depth in range(len(open_tags) - 1, -1, -1):
                if tags[open_tags[depth]].name == name:
                    del open_tags[depth:]
                    break
            continue
        if kind != "open":
            continue  # a comment, CDATA section, processing instruction or declaration
        pos = token.start()
        parent = open_tags[-1] if open_tags else -1
        tag, empty = _start_tag(text, pos, token.group("open"), parent)
        if parent >= 0:
            tags[parent].children.append(len(tags))
        if tag.terminated and not empty:
            open_tags.append(len(tags))
        tags.append(tag)
    return Source(text, tags)


#: One piece of markup. Text content holds no '<', nor do attribute values,
#: so every '<' of a well-formed text begins one of these; what a comment,
#: a CDATA section or a processing instruction holds is passed over (one not
#: ended runs to the end of the text).
_MARKUP = re.compile(
    r"<(?:!--.*?(?:-->|\Z)|!\[CDATA\[.*?(?:\]\]>|\Z)|\?.*?(?:\?>|\Z)|![^>]*>?"
    r"|/(?P<close>[^\s/>=<\"']+)|(?P<open>[^\s/>=<\"'!?]+))",
    re.S,
)
#: The attributes of a well-formed start tag up to its end, and its '/' if empty.
_ATTRIBUTES = re.compile(r"""((?:\s+[^\s=/>"'<]+\s*=\s*(?:"[^"<]*"|'[^'<]*'))*)\s*(/?)>""")
_ATTRIBUTE = re.compile(r"""([^\s=/>"'<]+)\s*=\s*(?:"([^"<]*)"|'([^'<]*)')""")


def _start_tag(text: str, pos: int, name: str, parent: int) -> tuple[Tag, bool]:
    """The start tag whose ``<name`` is at ``pos``, and whether it is empty (``/>``)."""
    attrs: list[Attr] = []
    i = pos + 1 + len(name)
    whole = _ATTRIBUTES.match(text, i)
    if whole is not None:  # well-formed: its attributes at once
        for written in _ATTRIBUTE.finditer(text, whole.start(1), whole.end(1)):
            value = 2 if written.start(2) >= 0 else 3
            attrs.append(Attr(written.group(1), written.start(1), written.start(value), written.end(value)))
        return Tag(name, pos, whole.end(), attrs, parent), bool(whole.group(2))
    # Not well-formed (being typed): attribute by attribute.
    size = len(text)
    while True:
        i = _SPACE.match(text, i).end()  # type: ignore[union-attr]  # \s* always matches
        if i >= size or text[i] == "<":
            return Tag(name, pos, i, attrs, parent, terminated=False), False
        if text.startswith("/>", i):
            return Tag(name, pos, i + 2, attrs, parent), True
        if text[i] == ">":
            return Tag(name, pos, i + 1, attrs, parent), False
        found = _NAME.match(text, i)
        if found is None:  # a stray quote, '=' or '/': step over it
            i += 1
            continue
        j = _SPACE.match(text, found.end()).end()  # type: ignore[union-attr]
        if j >= size or text[j] != "=":
            attrs.append(Attr(found.group(), i, None, found.end()))
            i = found.end()
            continue
        j = _SPACE.match(text, j + 1).end()  # type: ignore[union-attr]
        if j >= size or text[j] not in "\"'":
            attrs.append(Attr(found.group(), i, None, j))
            i = j
            continue
        close = text.find(text[j], j + 1)
        stop = text.find("<", j + 1, close if close >= 0 else size)
        if close < 0 or stop >= 0:  # unterminated: the value ends where a value cannot go on
            end = size if stop < 0 else stop
            attrs.append(Attr(found.group(), i, j + 1, end, closed=False))
            return Tag(name, pos, end, attrs, parent, terminated=False), False
        attrs.append(Attr(found.group(), i, j + 1, close))
        i = close + 1


def pair(source: Source, root: etree._Element) -> tuple[dict[int, etree._Element], dict[etree._Element, int]]:
    """Which tag of ``source`` each element of ``root`` (the loaded tree of
    that text) was parsed from, both ways.

    The loader drops cdl:documentation (and comments, which the scan skips);
    otherwise the trees have the same shape. Children are matched in order by
    local name, a tag without a match being one the loader dropped, so a text
    that changed since it was loaded pairs what still matches and never fails.
    """
    by_tag: dict[int, etree._Element] = {}
    by_element: dict[etree._Element, int] = {}
    first = source.root()
    if first is None or not isinstance(root.tag, str) or source.tags[first].local != root.tag.rpartition("}")[2]:
        return by_tag, by_element
    stack = [(first, root)]
    tags = source.tags
    while stack:
        index, el = stack.pop()
        by_tag[index] = el
        by_element[el] = index
        loaded = [(child, child.tag.rpartition("}")[2]) for child in el if isinstance(child.tag, str)]
        j = 0
        for child in tags[index].children:
            if j < len(loaded) and tags[child].local == loaded[j][1]:
                stack.append((child, loaded[j][0]))
                j += 1
    return by_tag, by_element
