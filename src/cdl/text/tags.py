"""Start tags where they are written in a document's text: the one scanner.

Neither XML parser records columns, nor where an attribute is, and both
record an element at the line where its start tag *ends* (libxml2 does;
the expat path, for very deep documents, is made to: ``loading.parse``).
What needs more reads the text again, here:

- :func:`read_start_tag` reads the start tag whose ``<`` is at an offset: its
  name, and each attribute's name and value, where they are. Strict, it
  reads only a well-formed tag; *tolerant*, also one being typed (an
  unterminated attribute value ends at the next ``<``, which a value cannot
  hold; a tag without its ``>`` ends there too; a stray quote, ``=`` or
  ``/`` is stepped over).
- :func:`scan` reads every start tag of a text, tolerantly, with its parent
  (the language server's navigation); :func:`index_tags` finds the same
  ones and keeps only where they are, each read when asked for
  (:class:`TagIndex`: what a reader of a few tags of a large text keeps);
  :func:`tags_reaching` the well-formed ones that reach a line (where an
  error on that line is about).
- :func:`start_line` and :func:`attribute_line` give an element's start tag's
  line, or one of its attributes', for errors and explanations
  (``model.places`` applies them to the documents of a run): an error about
  an element spread over several lines points at its ``<name``, one about an
  attribute at the attribute. They read the bytes the loader kept
  (:attr:`SourceDoc.data`, no copy), decoded once per text
  (``text.encoding``) when the first error or explanation asks, never during
  resolution; :func:`forget_text` lets go of a text kept for them.

Offsets are code points of the text (a ``str``'s indexes); white space is
XML's (space, tab, CR, LF).
"""

from __future__ import annotations

import bisect
import re
import threading
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import overload

from lxml import etree

from .encoding import decode
from .lines import Lines

#: A start tag's name (after its '<').
_ELEMENT_NAME = re.compile(r"""[^ \t\r\n/>=<"'!?]+""")
#: An attribute's name, being typed or not.
_NAME = re.compile(r"""[^ \t\r\n/>=<"']+""")
_SPACE = re.compile(r"[ \t\r\n]*")
_CLOSE_END = re.compile(r"[ \t\r\n]*>")
#: The attributes of a well-formed start tag up to its end, and its '/' if empty.
_ATTRIBUTES = re.compile(r"""((?:[ \t\r\n]+[^ \t\r\n=/>"'<]+[ \t\r\n]*=[ \t\r\n]*(?:"[^"<]*"|'[^'<]*'))*)[ \t\r\n]*(/?)>""")
_ATTRIBUTE = re.compile(r"""([^ \t\r\n=/>"'<]+)[ \t\r\n]*=[ \t\r\n]*(?:"([^"<]*)"|'([^'<]*)')""")
#: A well-formed start tag in a text's bytes, by the same patterns (ASCII's
#: characters each): its name (group 1), its attributes (2), its '/' if empty (3).
_START_TAG_BYTES = re.compile(("<(" + _ELEMENT_NAME.pattern + ")" + _ATTRIBUTES.pattern).encode())
#: One piece of markup. Text content holds no '<', nor do attribute values,
#: so every '<' of a well-formed text begins one of these; what a comment,
#: a CDATA section or a processing instruction holds is passed over (one not
#: ended runs to the end of the text).
_MARKUP = re.compile(
    r"<(?:!--.*?(?:-->|\Z)|!\[CDATA\[.*?(?:\]\]>|\Z)|\?.*?(?:\?>|\Z)|![^>]*>?"
    r"""|/(?P<close>[^ \t\r\n/>=<"']+)|(?P<open>[^ \t\r\n/>=<"'!?]+))""",
    re.S,
)
#: The predefined entities (a catalog or DTD cannot add any: they are refused).
_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&apos;", "'"), ("&amp;", "&"))


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

    @property
    def local(self) -> str:
        return self.name.rpartition(":")[2]


@dataclass(slots=True)
class Tag:
    """One start tag: ``<name`` begins at ``start``; ``end`` is the offset
    after its ``>`` (where the scan stopped when it has none). ``parent`` is
    the index of the tag it is in, among those :func:`scan` found (-1: none,
    or not scanned)."""

    name: str
    start: int
    end: int
    attrs: list[Attr]
    parent: int = -1
    children: list[int] = field(default_factory=list)
    #: Whether its ``>`` was written (a tag being typed may have none).
    terminated: bool = True
    #: Whether it ends with ``/>``.
    empty: bool = False
    #: Where its element ends (after its end tag; its ``end`` when empty or
    #: being typed; where the end tag of an element around it, or the text,
    #: ends it when it has none), as :func:`scan` found it (-1: not scanned).
    element_end: int = -1

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
        return next((a for a in self.attrs if a.local == local), None)


def unescape(text: str) -> str:
    """An attribute value as parsed, for the predefined entities (xml.sax.saxutils
    would import urllib.request at start-up)."""
    for entity, char in _ENTITIES:
        text = text.replace(entity, char)
    return text


def read_start_tag(text: str, pos: int, *, tolerant: bool = False, parent: int = -1, local: str | None = None) -> Tag | None:
    """The start tag whose ``<`` is at ``pos``; None when there is none, or,
    unless ``tolerant``, when it is not well-formed (see the module
    docstring), or, given ``local``, when its name's local part is another."""
    named = _ELEMENT_NAME.match(text, pos + 1)
    if named is None:
        return None
    name = named.group()
    if local is not None and name.rpartition(":")[2] != local:
        return None  # before its attributes are read: a line may hold thousands of tags
    extent = _extent(text, pos, name, tolerant=tolerant)
    if extent is None:
        return None
    end, opens, read = extent
    if isinstance(read, Tag):
        read.parent = parent
        return read
    attrs = []
    for written in _ATTRIBUTE.finditer(text, read.start(1), read.end(1)):
        value = 2 if written.start(2) >= 0 else 3
        attrs.append(Attr(written.group(1), written.start(1), written.start(value), written.end(value)))
    return Tag(name, pos, end, attrs, parent, empty=not opens)


def start_tag_in_bytes(data: bytes, at: int) -> re.Match[bytes] | None:
    """The well-formed start tag whose ``<`` is at byte ``at`` of ``data``, a
    text whose markup and line ends are ASCII's bytes, read before it is
    decoded (:func:`read_start_tag` reads one in a decoded text): group 1
    its name, group 3 ``/`` when the element is empty; None when none is
    there."""
    return _START_TAG_BYTES.match(data, at) if at >= 0 else None


def _extent(text: str, pos: int, name: str, *, tolerant: bool = True) -> tuple[int, bool, re.Match[str] | Tag] | None:
    """Where the start tag whose ``<name`` is at ``pos`` ends, whether it
    opens an element (its ``>`` written, and no ``/`` before it), and what
    it was read from: a well-formed tag at once, the match of its attributes
    (group 1); else, when ``tolerant``, the tag being typed, read attribute
    by attribute (None when not)."""
    whole = _ATTRIBUTES.match(text, pos + 1 + len(name))
    if whole is not None:
        return whole.end(), not whole.group(2), whole
    if not tolerant:
        return None
    typed = _typed_tag(text, pos, name, -1)
    return typed.end, typed.terminated and not typed.empty, typed


def _typed_tag(text: str, pos: int, name: str, parent: int) -> Tag:
    """The start tag being typed whose ``<name`` is at ``pos``, read attribute by attribute."""
    attrs: list[Attr] = []
    i = pos + 1 + len(name)
    size = len(text)
    while True:
        i = _SPACE.match(text, i).end()  # type: ignore[union-attr]  # a '*' always matches
        if i >= size or text[i] == "<":
            return Tag(name, pos, i, attrs, parent, terminated=False)
        if text.startswith("/>", i):
            return Tag(name, pos, i + 2, attrs, parent, empty=True)
        if text[i] == ">":
            return Tag(name, pos, i + 1, attrs, parent)
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
            return Tag(name, pos, end, attrs, parent, terminated=False)
        attrs.append(Attr(found.group(), i, j + 1, close))
        i = close + 1


def scan(text: str) -> list[Tag]:
    """Every start tag of ``text`` with its parent and children, in document
    order, read tolerantly (one pass; markup that is no element is skipped,
    an end tag closes up to the open tag of its name): :func:`index_tags`, read whole."""
    return list(index_tags(text))


class TagIndex(Sequence[Tag]):
    """Every start tag of a text, as :func:`scan` finds them, kept as where
    each begins and how the tags nest (a few machine integers per tag); a
    :class:`Tag`, with its name and attributes, is read when asked for, each
    time (``index[i]``). What a reader of a few tags keeps of a large text:
    at 20,000 components the Tag objects of every start tag took 217 MB."""

    def __init__(self, text: str) -> None:
        self.text = text
        #: Per tag: where its ``<`` is, its parent (-1: none), where its element ends.
        self.starts = array("q")
        self.parents = array("l")
        self.element_ends = array("q")
        self._index()

    def _index(self) -> None:
        text, starts, parents, ends = self.text, self.starts, self.parents, self.element_ends
        open_tags: list[tuple[int, str]] = []  # outermost first
        for token in _MARKUP.finditer(text):
            name = token.group("open")
            if name is not None:
                start, index = token.start(), len(starts)
                end, opens, _ = _extent(text, start, name)  # type: ignore[misc]  # tolerant: always read
                starts.append(start)
                parents.append(open_tags[-1][0] if open_tags else -1)
                ends.append(end)
                if opens:
                    open_tags.append((index, name))
                continue
            name = token.group("close")
            if name is None:
                continue  # a comment, CDATA section, processing instruction or declaration
            for depth in range(len(open_tags) - 1, -1, -1):
                if open_tags[depth][1] == name:
                    for inner, _ in open_tags[depth + 1 :]:
                        ends[inner] = token.start()
                    closed = _CLOSE_END.match(text, token.end())  # its '>', if written
                    ends[open_tags[depth][0]] = token.end() if closed is None else closed.end()
                    del open_tags[depth:]
                    break
        for index, _ in open_tags:
            ends[index] = len(text)

    def __len__(self) -> int:
        return len(self.starts)

    @overload
    def __getitem__(self, index: int) -> Tag: ...
    @overload
    def __getitem__(self, index: slice) -> list[Tag]: ...
    def __getitem__(self, index: int | slice) -> Tag | list[Tag]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        tag = self.read(index)
        tag.children = self.children(index)
        return tag

    def read(self, index: int) -> Tag:
        """Tag ``index`` without its children (listing them walks them: a
        list parent's can be a whole system's lists)."""
        tag = read_start_tag(self.text, self.starts[index], tolerant=True, parent=self.parents[index])
        assert tag is not None  # the index holds a '<' and a name there
        tag.element_end = self.element_ends[index]
        return tag

    def name(self, index: int) -> str:
        """The name of tag ``index`` as written (its attributes not read)."""
        named = _ELEMENT_NAME.match(self.text, self.starts[index] + 1)
        assert named is not None  # the index holds a '<' and a name there
        return named.group()

    def children(self, index: int) -> list[int]:
        """The indexes of the tags whose parent is tag ``index``, in order:
        the tags begun in its element, each child's own passed over (a
        child's element ends before its next sibling begins)."""
        starts, ends = self.starts, self.element_ends
        last = bisect.bisect_left(starts, ends[index], index + 1)
        found = []
        child = index + 1
        while child < last:
            found.append(child)
            child = max(bisect.bisect_left(starts, ends[child], child + 1, last), child + 1)
        return found


def index_tags(text: str) -> TagIndex:
    """Every start tag of ``text``, as :func:`scan` reads them, each read when asked for."""
    return TagIndex(text)


def markup_before(text: str, end: int, floor: int = 0) -> int:
    """Where the last piece of markup begun before ``end`` starts (a start or
    end tag, a comment, a CDATA section, a processing instruction or a
    declaration, as :func:`scan` reads them: a '<' in a comment is none),
    reading from ``floor`` (where a piece of markup starts); ``floor`` if
    none begins after it."""
    last = floor
    for token in _MARKUP.finditer(text, floor, end):
        last = token.start()
    return last


def tags_reaching(text: str, start: int, end: int, local: str | None = None) -> list[Tag]:
    """The well-formed start tags that reach the text from ``start`` to ``end``
    (a line): the one begun before it, if any (the last '<' before it:
    attribute values hold no '<'), then those begun in it; given ``local``,
    only those whose name's local part it is."""
    candidates = []
    before = text.rfind("<", 0, start)
    if before >= 0:
        candidates.append(before)
    pos = text.find("<", start, end)
    while pos >= 0:
        candidates.append(pos)
        pos = text.find("<", pos + 1, end)
    tags = []
    for pos in candidates:
        tag = read_start_tag(text, pos, local=local)
        if tag is not None and tag.end > start:
            tags.append(tag)
    return tags


# -- the lines of errors and explanations -----------------------------------------------


class _Texts:
    """A document's text and its lines, made once per text, and the start tags
    read on its lines: an explanation asks for the line of every step, and
    reading the text again each time would grow with the square of the
    document; errors about same-named siblings written on one line (up to
    ``max_errors`` of them, each asking for its start line and its
    attribute's) would each read every tag of that line again. The few texts
    kept (:data:`_TEXTS_KEPT`, the most recently asked; bytes hash once, and a
    lookup finds the same object) are those of the documents being reported
    on; :func:`forget_text` drops one before it would leave."""

    def __init__(self) -> None:
        self._kept: dict[bytes, tuple[Lines, dict[tuple[int, str], _OnLine]]] = {}
        #: The language server reads and forgets texts in two threads.
        self._lock = threading.Lock()

    def _entry(self, data: bytes) -> tuple[Lines, dict[tuple[int, str], _OnLine]]:
        entry = self._kept.pop(data, None)
        if entry is None:
            entry = (Lines(decode(data)), {})
            while len(self._kept) >= _TEXTS_KEPT:
                del self._kept[next(iter(self._kept))]
        self._kept[data] = entry  # the most recent last
        return entry

    def tags_on(self, data: bytes, line: int, local: str) -> _OnLine:
        """The start tags named ``local`` that reach the parser's ``line`` of
        ``data``, with the text's lines and that line's bounds (None: the
        text cannot tell)."""
        with self._lock:
            lines, read = self._entry(data)
            if (line, local) not in read:
                bounds = lines.parser_bounds(line)
                if len(read) >= _LINES_READ_KEPT:
                    read.clear()
                read[(line, local)] = None if bounds is None else (lines, *bounds, tags_reaching(lines.text, *bounds, local))
            return read[(line, local)]

    def forget(self, data: bytes) -> None:
        with self._lock:
            self._kept.pop(data, None)


#: What :meth:`_Texts.tags_on` finds.
_OnLine = tuple[Lines, int, int, list[Tag]] | None
#: How many texts are kept, and how many lines' tags of each.
_TEXTS_KEPT = 4
_LINES_READ_KEPT = 16
_texts = _Texts()


def forget_text(data: bytes) -> None:
    """Forget what is kept of the text ``data`` (its lines, the tags read on
    them) for :func:`start_line` and :func:`attribute_line`: a process that
    keeps running (``cdl lsp``) lets go of a version of a document it no
    longer holds, instead of keeping it until newer texts push it out."""
    _texts.forget(data)


def _tags_ending_on(data: bytes, el: etree._Element) -> tuple[Lines, int, int, list[Tag]] | None:
    """The start tags named like ``el`` that reach its recorded line: (the
    document's lines, where that line starts and where it ends, the tags),
    or None when the text cannot tell."""
    line = el.sourceline
    if not line or not data or not isinstance(el.tag, str):
        return None
    return _texts.tags_on(data, line, etree.QName(el.tag).localname)


def start_line(data: bytes, el: etree._Element) -> int | None:
    """The line where the start tag of ``el`` begins (its ``<name``).

    The parser records the line where a start tag ends; for one spread over
    several lines, the tag that begins on an earlier line and ends on the
    recorded one is it. Falls back to ``el.sourceline`` when the text cannot tell.
    """
    found = _tags_ending_on(data, el)
    if found is None:
        return el.sourceline or None
    lines, start, end, tags = found
    ending = [tag for tag in tags if tag.end <= end]
    if not ending:
        return el.sourceline
    # Several tags of that name may end on the line (one spread over lines
    # before it, some written on it): the one whose attributes ``el`` still
    # has the most of, the one spread over lines on a tie.
    have = {(etree.QName(name).localname, value) for name, value in el.attrib.items()}
    tag = max(ending, key=lambda tag: (_shared(lines.text, tag, have), tag.start < start))
    return lines.parser_line_of(tag.start) if tag.start < start else el.sourceline


def _shared(text: str, tag: Tag, have: set[tuple[str, str]]) -> int:
    """How many of the attributes written in ``tag`` are in ``have`` (local
    name, value)."""
    return sum((attr.local, _value(text, attr)) in have for attr in tag.attrs)


def _value(text: str, attr: Attr) -> str:
    """The value of a well-formed attribute as parsed."""
    return unescape(text[attr.value_start : attr.value_end])


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
    lines, _, _, tags = found
    for tag in tags:
        offset = _find_attribute(lines.text, tag, el, attribute, value)
        if offset is not None:
            return lines.parser_line_of(offset)
    return el.sourceline


def _find_attribute(text: str, tag: Tag, el: etree._Element, attribute: str, value: str | None) -> int | None:
    """Offset of ``attribute`` in the start tag ``tag``, or None."""
    uri, _, local = attribute[1:].partition("}") if attribute.startswith("{") else ("", "", attribute)
    for attr in tag.attrs:
        prefix, colon, name = attr.name.rpartition(":")
        # An unprefixed attribute is in no namespace (never the default one).
        if name != local or (el.nsmap.get(prefix) if colon else "") != uri:
            continue
        if value is not None and _value(text, attr).strip() != value.strip():
            continue
        return attr.name_start
    return None
