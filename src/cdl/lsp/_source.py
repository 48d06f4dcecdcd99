"""A document's text with its start tags, for the navigation of ``cdl lsp``
(issue 25, points 2-7 and 9).

Entry points: :class:`Source` (a text's start tags, read tolerantly by
``text.tags.scan``, and its lines) and :func:`pair` (which scanned tag each
element of a loaded tree was parsed from). Offsets are code points of the
text (``str``); lines are ``text.lines.Lines``.
"""

from __future__ import annotations

import bisect

from lxml import etree

from ._engine import Lines, Tag, scan


class Source:
    """A text's start tags in document order, and its lines."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tags: list[Tag] = scan(text)
        self._starts = [tag.start for tag in self.tags]
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
        return self.lines.span(start, end)

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
