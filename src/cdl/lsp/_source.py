"""A document's text with its start tags, for the navigation of ``cdl lsp``
(issue 25, points 2-7 and 9).

Entry points: :class:`Source` (a text's start tags, found tolerantly by
``text.tags.index_tags`` and each read when asked for, and its lines;
:meth:`Source.carried`, those of a text being typed around what was typed,
from an earlier text's) and :class:`Pairing` (which tag each element of a
loaded tree was parsed from, found where asked). Offsets are code points of
the text (``str``); lines are ``text.lines.Lines``.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence

from lxml import etree

from ._engine import Attr, Lines, Tag, TagIndex, index_tags, markup_before, read_start_tag, scan


class Source:
    """A text's start tags in document order, and its lines (``tags`` and
    ``lines`` given: those, not read again). Found whole, the tags are a
    ``TagIndex``: each is read when asked for (a request reads a few)."""

    def __init__(self, text: str, tags: Sequence[Tag] | None = None, lines: Lines | None = None) -> None:
        self.text = text
        self.tags: Sequence[Tag] = index_tags(text) if tags is None else tags
        self._index = self.tags if isinstance(self.tags, TagIndex) else None
        self._starts: Sequence[int] = [tag.start for tag in self.tags] if self._index is None else self._index.starts
        #: Its lines, as the positions of ``cdl lsp`` count them.
        self.lines = Lines(text) if lines is None else lines

    def parent(self, index: int) -> int:
        """The tag that tag ``index`` is in (-1: none)."""
        return self.tags[index].parent if self._index is None else self._index.parents[index]

    def children(self, index: int) -> list[int]:
        """The tags in tag ``index``, in order."""
        return self.tags[index].children if self._index is None else self._index.children(index)

    def tag_alone(self, index: int) -> Tag:
        """Tag ``index``, its children not listed (``TagIndex.read``)."""
        return self.tags[index] if self._index is None else self._index.read(index)

    def element_end(self, index: int) -> int:
        """Where tag ``index``'s element ends (after its end tag; see ``Tag.element_end``)."""
        return self.tags[index].element_end if self._index is None else self._index.element_ends[index]

    def local(self, index: int) -> str:
        """The local part of tag ``index``'s name."""
        name = self.tags[index].name if self._index is None else self._index.name(index)
        return name.rpartition(":")[2]

    @classmethod
    def carried(cls, old: Source, text: str, lines: Lines, stretch: tuple[int, int, int]) -> tuple[Source, dict[int, int]]:
        """``text`` (its lines: ``lines``), which differs from ``old``'s text in
        one stretch (``start``, its end in ``old``'s text, its end in ``text``),
        with only the start tags around it: those from the tag before the
        stretch to the tag after it, read again, in the tags of ``old`` that
        the text before the stretch leaves open (their parents). And which tag
        of ``old`` each one is: matched in order by local name among the
        children of the tag they are in, as :class:`Pairing` matches tags with
        elements (a tag without a match was typed since). Reads what the
        stretch touches, not the whole text."""
        start, old_end, new_end = stretch
        # The markup before the stretch, read from old's last start tag before
        # it (unchanged text): a '<' in a comment after that tag begins none.
        before = old.first_from(start) - 1
        first = markup_before(text, start, old.tags[before].start if before >= 0 else 0)
        closed = text.find(">", first, start)
        if text.startswith("</", first) and closed >= 0:
            first = closed + 1  # after an end tag: in the element around the one it ends
        after = text.find("<", new_end)
        tag = read_start_tag(text, after, tolerant=True) if after >= 0 else None
        last = len(text) if after < 0 else tag.end if tag is not None else after
        chain = old.open_at(first)
        tags = [
            dataclasses.replace(old.tag_alone(i), parent=k - 1, children=[k + 1] if k + 1 < len(chain) else [])
            for k, i in enumerate(chain)
        ]
        base = len(tags)
        tags += [_moved(read, first, base) for read in scan(text[first:last])]
        tops = [i for i in range(base, len(tags)) if tags[i].parent == base - 1]
        if base:
            tags[base - 1].children = tops
        # The tags of old in the same place: those begun between ``first`` and
        # where ``last`` was, at the top, in the same tag of the chain.
        lo, hi = old.first_from(first), old.first_from(last - new_end + old_end)
        was = dict(enumerate(chain))
        stack = [(tops, [i for i in range(lo, hi) if old.parent(i) == (chain[-1] if chain else -1)])]
        while stack:
            news, olds = stack.pop()
            for k, j in _in_order((tags[index].local for index in news), [old.local(i) for i in olds]):
                was[news[k]] = olds[j]
                stack.append((tags[news[k]].children, old.children(olds[j])))
        return cls(text, tags, lines), was

    def first_from(self, offset: int) -> int:
        """The index of the first tag begun at or after ``offset`` (the number of tags, if none)."""
        return bisect.bisect_left(self._starts, offset)

    def open_at(self, offset: int) -> list[int]:
        """The tags whose elements hold ``offset`` (begun before it, ended
        after it), outermost first. The last tag begun before it is in the
        innermost of them, if it is not that one."""
        index = self.first_from(offset) - 1
        while index >= 0 and self.element_end(index) <= offset:
            index = self.parent(index)
        chain = []
        while index >= 0:
            chain.append(index)
            index = self.parent(index)
        chain.reverse()
        return chain

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
        return next((i for i in range(len(self.tags)) if self.parent(i) < 0), None)


def _in_order(names: Iterable[str], others: Sequence[str]) -> Iterator[tuple[int, int]]:
    """The pairs (k, j) of ``names[k]`` and ``others[j]``, matched in order
    by name: each of ``names`` with the next of ``others`` when that one has
    its name, one without a match passed over (a tag typed since, or one the
    loader dropped). Stops when ``others`` are all paired: ``names`` may read
    each name as it goes."""
    j = 0
    for k, name in enumerate(names):
        if j == len(others):
            return
        if name == others[j]:
            yield k, j
            j += 1


def _moved_by(offset: int | None, by: int) -> int | None:
    return None if offset is None else offset + by


def _moved(tag: Tag, by: int, base: int) -> Tag:
    """``tag``, read from a slice of a text beginning at offset ``by``, as a tag
    of the text, after ``base`` tags (those its top level ones are in)."""
    attrs = [Attr(a.name, a.name_start + by, _moved_by(a.value_start, by), a.value_end + by, a.closed) for a in tag.attrs]
    parent = base - 1 if tag.parent < 0 else tag.parent + base
    children = [child + base for child in tag.children]
    return Tag(tag.name, tag.start + by, tag.end + by, attrs, parent, children, tag.terminated, tag.empty, tag.element_end + by)


class Pairing:
    """Which tag of ``source`` each element of ``root`` (the loaded tree of
    that text) was parsed from, both ways, found where asked: the children
    of a tag are matched with its element's when a tag or an element below
    them is first asked about (a request asks about one list of thousands).
    ``pairs`` given: those, and no more (no ``root``).

    The loader drops cdl:documentation (and comments, which the scan skips);
    otherwise the trees have the same shape. Children are matched in order by
    local name, a tag without a match being one the loader dropped, so a text
    that changed since it was loaded pairs what still matches and never fails.
    """

    def __init__(self, source: Source, root: etree._Element | None, pairs: Mapping[int, etree._Element] | None = None) -> None:
        self.source = source
        self._element: dict[int, etree._Element] = dict(pairs or {})
        self._tag: dict[etree._Element, int] = {el: tag for tag, el in self._element.items()}
        #: Paired tags whose children are not matched yet.
        self._unmatched: set[int] = set()
        first = source.root() if root is not None and pairs is None else None
        #: The root's tag, paired with ``root``.
        self._root: int | None = None
        if root is not None and first is not None and isinstance(root.tag, str) and source.local(first) == root.tag.rpartition("}")[2]:
            self._add(first, root)
            self._root = first

    def __len__(self) -> int:
        """How many tags are paired so far."""
        return len(self._element)

    def element_of(self, index: int) -> etree._Element | None:
        """The loaded element tag ``index`` was parsed from (None: none, it was typed since)."""
        found = self._element.get(index)
        if found is None:
            chain = []
            at = index
            while at >= 0 and at not in self._element:
                chain.append(at)
                at = self.source.parent(at)
            for tag in reversed(chain if at >= 0 else ()):
                self._match(at)
                if tag not in self._element:
                    return None
                at = tag
            found = self._element.get(index)
        return found

    def tag_of(self, el: etree._Element) -> int | None:
        """The tag loaded ``el`` was parsed from (None: it is not of this tree, or not written in this text)."""
        found = self._tag.get(el)
        if found is None:
            chain = []
            at: etree._Element | None = el
            while at is not None and at not in self._tag:
                chain.append(at)
                at = at.getparent()
            for below in reversed(chain if at is not None else ()):
                assert at is not None
                self._match(self._tag[at])
                if below not in self._tag:
                    return None
                at = below
            found = self._tag.get(el)
        return found

    def match_top(self, depth: int) -> None:
        """Pair the tags down to ``depth`` levels below the root now (the top
        level lists are two below it: a request pairs the rest of its way)."""
        level = [] if self._root is None else [self._root]
        for _ in range(depth):
            for tag in level:
                self._match(tag)
            level = [child for tag in level for child in self.source.children(tag) if child in self._element]

    def _add(self, tag: int, el: etree._Element) -> None:
        self._element[tag] = el
        self._tag[el] = tag
        self._unmatched.add(tag)

    def _match(self, index: int) -> None:
        """Pair the children of the paired tag ``index`` (once)."""
        if index not in self._unmatched:
            return
        self._unmatched.discard(index)
        loaded = [(child, child.tag.rpartition("}")[2]) for child in self._element[index] if isinstance(child.tag, str)]
        children = self.source.children(index)
        names = (self.source.local(child) for child in children)
        for k, j in _in_order(names, [name for _, name in loaded]):
            self._add(children[k], loaded[j][0])
