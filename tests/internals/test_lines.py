"""Start-tag lines from the raw text (``text.tags``): tags of one name on one
line told apart by value, lines far into a large document, several tags on a
line (tests/test_lines.py has the lines errors report)."""

from __future__ import annotations

import bisect
import itertools
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

import cdl.text.tags as tags_module
from cdl import CdlError
from cdl.text import offsets
from cdl.text.encoding import decode, encode
from cdl.text.lines import Lines
from cdl.text.offsets import Offsets
from cdl.text.tags import attribute_line, index_tags, read_start_tag, scan, start_line, tags_reaching, unescape
from conftest import CDL_DECL, CDL_NS, resolve_text
from test_lines import document

DATA = f"""<cdl:cdl {CDL_DECL}>
<a cdl:ref="x"/><a
  cdl:ref="y"
  /><a cdl:ref="z"/>
</cdl:cdl>""".encode()


def test_value_tells_apart_tags_of_the_same_name_on_one_line() -> None:
    root = etree.fromstring(DATA)
    first, second, third = root
    ref = f"{{{CDL_NS}}}ref"
    assert (first.sourceline, second.sourceline, third.sourceline) == (2, 4, 4)  # libxml2: where each tag ends
    assert attribute_line(DATA, first, ref) == 2
    assert attribute_line(DATA, second, ref, "y") == 3
    assert attribute_line(DATA, third, ref, "z") == 4
    # An attribute that is not there, or text that is not the document: the element's line.
    assert attribute_line(DATA, second, f"{{{CDL_NS}}}lazy") == 4
    assert attribute_line(b"", second, ref) == 4


def test_lines_far_into_a_large_document() -> None:
    """The line is found past many chunks of text (counted a chunk at a time)."""
    padding = b"<x/>\n" * 40_000  # 200 kB
    data = f"<r {CDL_DECL}>\n".encode() + padding + b'<a\n  cdl:ref="y"\n/></r>'
    el = etree.fromstring(data)[-1]
    assert el.sourceline == 40_004
    assert attribute_line(data, el, f"{{{CDL_NS}}}ref", "y") == 40_003


def test_start_line_with_several_tags_on_a_line_and_for_expat() -> None:
    root = etree.fromstring(DATA)
    assert [start_line(DATA, el) for el in root] == [2, 2, 4]  # the second begins on line 2, ends on 4
    assert start_line(b"", root[1]) == 4  # no text: the recorded line
    deep = "<n>" * 300
    lines = ["<S>", deep + "<p", "  y='1'", "  cdl:use='required'/>" + "</n>" * 300, "</S>"]
    with pytest.raises(CdlError) as info:
        resolve_text(document(lines))
    assert (info.value.code, info.value.line) == ("REQUIRED_MISSING", 4)  # expat records the beginning


def test_one_start_tag_scanner_strict_and_tolerant() -> None:
    """The scanner every reader of start tags uses: strict, a well-formed tag
    only; tolerant, also one being typed."""
    text = """<a x="1" p:y='&lt;2' z = "3"/><b c="open <c d=\"4\" e f= >"""
    tag = read_start_tag(text, 0)
    assert tag is not None and (tag.name, tag.empty, tag.end) == ("a", True, text.index("<b"))
    assert [(a.name, a.local, unescape(text[a.value_start : a.value_end])) for a in tag.attrs] == [
        ("x", "x", "1"), ("p:y", "y", "<2"), ("z", "z", "3")
    ]
    assert read_start_tag(text, text.index("<b")) is None  # an unterminated value: not well-formed
    typed = read_start_tag(text, text.index("<b"), tolerant=True)
    assert typed is not None and not typed.terminated and typed.end == text.index("<c")
    [value] = typed.attrs
    assert (value.name, text[value.value_start : value.value_end], value.closed) == ("c", "open ", False)
    tags = scan(text)
    assert [(t.name, t.parent, t.terminated) for t in tags] == [("a", -1, True), ("b", -1, False), ("c", -1, True)]
    assert [(a.name, a.value_start is not None) for a in tags[2].attrs] == [("d", True), ("e", False), ("f", False)]
    # The tags that reach a line: the one begun before it, then those begun on it.
    lines = "<r>\n<s a='1'\n  b='2'><t/>\n</s></r>"
    start = lines.index("  b=")
    assert [t.name for t in tags_reaching(lines, start, lines.index("\n</s"))] == ["s", "t"]


def test_the_tag_index_reads_a_tag_only_when_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """``index_tags`` finds every start tag as ``scan`` does, keeping where
    each is and how they nest: a tag's name and attributes are read when
    that tag is asked for (a request on a large document reads a few)."""
    text = "<r>" + "".join(f'<l{i} a="{i}"><p b="x"/><q/></l{i}>' for i in range(100)) + "</r>"
    read: list[int] = []
    monkeypatch.setattr(tags_module, "read_start_tag", lambda text, pos, **kw: read.append(pos) or read_start_tag(text, pos, **kw))
    index = index_tags(text)
    assert len(index) == 301 and read == []
    tag = index[4]  # <l1 a="1">
    assert (tag.name, tag.parent, tag.children, [a.name for a in tag.attrs]) == ("l1", 0, [5, 6], ["a"]) and len(read) == 1
    assert index.children(0) == list(range(1, 301, 3)) and index.name(299) == "p" and len(read) == 1


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["<a>", "</a>", "<b>", "</b>", "<c/>", "<d x='", "'>", "<!--", "-->", "text", "</", ">"]), max_size=40).map("".join))
def test_the_children_of_an_indexed_tag_are_the_tags_whose_parent_it_is(text: str) -> None:
    """``TagIndex.children`` passes over each child's element to the next
    child: in any text, broken as typed text is, what it finds are the tags
    whose parent is that tag, in order."""
    index = index_tags(text)
    for tag in range(len(index)):
        assert index.children(tag) == [child for child in range(len(index)) if index.parents[child] == tag]


#: An attribute as written: its name, the space around its '=', its quote and a value ('>' and '/>' end no tag).
_WRITTEN_ATTRIBUTE = st.tuples(st.sampled_from(["x", "y", "p:z"]), st.sampled_from(["", " ", "\n "]), st.sampled_from("\"'"), st.sampled_from(["", "v", ">", "/>", "a/>b"]))
#: An element as written: its name, its attributes, its children (None: written empty, ``<name/>``).
_Element = tuple[str, list[tuple[str, str, str, str]], list[Any] | None]
_WRITTEN_ELEMENT: st.SearchStrategy[_Element] = st.recursive(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.lists(_WRITTEN_ATTRIBUTE, max_size=3, unique_by=lambda a: a[0]), st.sampled_from([None, []])),
    lambda inner: st.tuples(st.sampled_from(["a", "b", "c"]), st.lists(_WRITTEN_ATTRIBUTE, max_size=3, unique_by=lambda a: a[0]), st.lists(inner, max_size=4)),
    max_leaves=12,
)


def _written(element: _Element, bare: bool = False) -> str:
    """``element`` as written; ``bare``: an attribute with an empty value as typed, its name alone (not well-formed)."""
    name, attrs, children = element
    tag = "<" + name + "".join(f" {a}" if bare and not value else f" {a}{space}={space}{quote}{value}{quote}" for a, space, quote, value in attrs)
    if children is None:
        return tag + " />" if attrs else tag + "/>"
    return tag + ">" + "t".join(_written(child, bare) for child in children) + f"</{name}>"


@settings(max_examples=300, deadline=None)
@given(_WRITTEN_ELEMENT, st.integers(0, 10**6))
def test_the_index_nests_tags_as_the_parser_and_a_cut_text_as_far_as_it_goes(element: _Element, cut: int) -> None:
    """Where each indexed start tag ends and whether it opens an element (a
    value may hold '>' or '/>'; a tag may be empty): the tags nest as lxml
    nests their elements, each element's text parsing alone, and the index
    of the text cut anywhere, a tag being typed at its end, keeps every tag
    begun before the cut as the whole text's index has it, the elements
    still open at the cut ending there. Attributes written without their
    values (read as typed) change none of it."""
    text = f'<r xmlns:p="urn:p">{_written(element)}</r>'
    index = index_tags(text)
    elements = list(etree.fromstring(text).iter())
    assert len(index) == len(elements)
    position = {el: i for i, el in enumerate(elements)}
    assert list(index.parents) == [position.get(el.getparent(), -1) for el in elements]  # type: ignore[arg-type]
    bare = f'<r xmlns:p="urn:p">{_written(element, bare=True)}</r>'
    as_typed = index_tags(bare)
    assert list(as_typed.parents) == list(index.parents) and [t.empty for t in as_typed] == [t.empty for t in index]
    assert all(bare[end - 1] == ">" for end in as_typed.element_ends)
    for i, el in enumerate(elements[1:], 1):
        alone = etree.fromstring(f'<r xmlns:p="urn:p">{text[index.starts[i] : index.element_ends[i]]}</r>')[0]
        assert (alone.tag, sum(1 for _ in alone.iter())) == (el.tag, sum(1 for _ in el.iter()))
    cut %= len(text) + 1
    typed = index_tags(text[:cut])
    begun = bisect.bisect_left(index.starts, cut - 1)  # a tag is found once its '<' and a letter of its name are
    assert len(typed) == begun
    assert list(typed.parents) == list(index.parents[:begun])
    assert list(typed.element_ends) == [min(end, cut) for end in index.element_ends[:begun]]
    assert [(t.end, t.empty) for t in typed] == [(t.end, t.empty) if t.end <= cut else (cut, False) for t in index[:begun]]


def test_the_encoding_is_the_byte_order_marks_then_the_declarations() -> None:
    declared = "<?xml version='1.0' encoding='ISO-8859-1'?><x>é</x>"
    assert decode(declared.encode("latin-1")) == declared
    assert decode(b"\xef\xbb\xbf" + declared.encode("utf-8")) == declared  # the mark wins, as for libxml2
    assert decode(declared.encode("utf-16")) == declared
    assert decode("<x>é</x>".encode()) == "<x>é</x>"
    assert encode(declared) == declared.encode("latin-1")
    assert encode(declared.replace("é", "€")) == declared.replace("é", "&#8364;").encode("latin-1")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "é😀", "<x/>", "\n", "\r\n", "\r", " "]), max_size=30).map("".join))
def test_the_lines_of_any_text_are_those_of_the_rule(text: str) -> None:
    """``Lines`` finds a text's lines (a text without CR by its LF alone)
    where the rule puts them: an editor's line ends at CR, LF or CRLF, the
    parser's at LF."""
    lines = Lines(text)
    editor = re.split(r"\r\n|\r|\n", text)
    assert [lines.line(n) for n in range(len(lines))] == editor
    at = 0
    for n, line in enumerate(editor):
        assert lines.bounds(n) == (at, at + len(line))
        ending = re.match(r"\r\n|\r|\n", text[at + len(line) :])
        at += len(line) + (len(ending.group()) if ending else 0)
    parser = text.split("\n")
    assert [lines.parser_bounds(n + 1) is not None for n in range(len(parser) + 1)] == [True] * len(parser) + [False]
    assert [text[slice(*lines.parser_bounds(n + 1))] for n in range(len(parser))] == [  # type: ignore[misc]
        line[:-1] if line.endswith("\r") and n < len(parser) - 1 else line for n, line in enumerate(parser)
    ]


_PIECES = ["a", "é😀", "<x/>", "\n", "\r\n", "\r", " "]
#: Without a lone CR (a text with one is indexed whole on each change).
_ONE_LINE_END = [piece for piece in _PIECES if piece != "\r"]


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES), max_size=30).map("".join),
    st.integers(0, 200),
    st.integers(0, 200),
    st.lists(st.sampled_from(_PIECES), max_size=4).map("".join),
)
def test_the_lines_of_an_edited_text_are_those_of_the_text_indexed_whole(text: str, start: int, end: int, inserted: str) -> None:
    """``Lines.edited`` (an editor's change, lines found again only where it
    reaches) holds what ``Lines`` of the whole new text holds: a line end
    the change joins (CR + LF) or parts, a change at either end, one that
    makes a lone CR."""
    start, end = sorted((min(start, len(text)), min(end, len(text))))
    edited = Lines(text).edited(start, end, inserted)
    whole = Lines(text[:start] + inserted + text[end:])
    assert edited.text == whole.text
    assert [edited.bounds(n) for n in range(len(edited))] == [whole.bounds(n) for n in range(len(whole))]
    lines = len(whole.text.split("\n"))
    assert [edited.parser_bounds(n) for n in range(1, lines + 2)] == [whole.parser_bounds(n) for n in range(1, lines + 2)]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 60), max_size=40).map(lambda steps: list(itertools.accumulate(steps))),
    st.integers(1, 4),
    st.lists(
        st.tuples(st.integers(0, 50), st.integers(0, 50), st.lists(st.integers(0, 60), max_size=9), st.integers(-40, 40)),
        max_size=6,
    ),
)
def test_offsets_in_chunks_hold_what_a_list_holds(values: list[int], chunk: int, edits: list[tuple[int, int, list[int], int]]) -> None:
    """``text.offsets.Offsets`` (the lines' starts and ends, in chunks moved a
    chunk at a time) against a list edited the plain way, after each of a
    chain of splices, with chunks of one offset up to four; and the sequence
    spliced from is left as it was."""
    offsets, plain = Offsets(values, chunk=chunk), list(values)
    for low, high, inserted, shift in edits:
        low, high = min(low, len(plain)), min(max(low, high), len(plain))
        before = list(offsets)
        edited = offsets.spliced(low, high, sorted(inserted), shift)
        assert list(offsets) == before
        plain = plain[:low] + sorted(inserted) + [v + shift for v in plain[high:]]
        offsets = edited
        assert list(offsets) == plain and len(offsets) == len(plain)
        assert [offsets[i] for i in range(len(plain))] == plain
        if plain == sorted(plain):
            for probe in range(min(plain, default=0) - 1, max(plain, default=0) + 2):
                assert offsets.bisect_right(probe) == bisect.bisect_right(plain, probe)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from(_ONE_LINE_END), min_size=1, max_size=60).map("".join),
    st.lists(st.tuples(st.integers(0, 400), st.integers(0, 400), st.lists(st.sampled_from(_PIECES), max_size=4).map("".join)), max_size=8),
)
def test_the_lines_of_a_text_edited_again_and_again_are_those_indexed_whole(text: str, edits: list[tuple[int, int, str]]) -> None:
    """A chain of changes, each on the lines the one before left (as an
    editor's changes come), in chunks of a few lines (so that changes reach
    across chunks): the lines of the text indexed whole, after each."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(offsets, "CHUNK", 3)
        lines = Lines(text)
        for start, end, inserted in edits:
            start, end = sorted((start % (len(lines.text) + 1), end % (len(lines.text) + 1)))
            lines = lines.edited(start, end, inserted)
            whole = Lines(lines.text)
            assert [lines.bounds(n) for n in range(len(lines))] == [whole.bounds(n) for n in range(len(whole))]
            assert [lines.position_of(o) for o in range(len(lines.text) + 1)] == [whole.position_of(o) for o in range(len(whole.text) + 1)]


@pytest.mark.parametrize("count", [0, 1, 2, 3, 4, 5, 7])
def test_the_lines_found_in_pieces_are_all_of_them(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """``Lines`` copies a text's line offsets a piece at a time (one C call
    over every line of a large text holds the interpreter): every piece, the
    last full or short, in order."""
    import cdl.text.lines as lines_module

    monkeypatch.setattr(lines_module, "_PIECE", 2)
    text = "".join(f"line {n}\n" for n in range(count)) + "end"
    lines = Lines(text)
    assert [lines.line(n) for n in range(len(lines))] == text.split("\n")
    assert [lines.parser_bounds(n + 1) for n in range(count + 1)] == [lines.bounds(n) for n in range(count + 1)]


def test_the_texts_kept_for_start_lines_are_the_few_last_asked_and_one_can_be_forgotten() -> None:
    texts = [f"<r>\n<a\n x='{k}'/>\n</r>".encode() for k in range(6)]
    for data in texts:
        root = etree.fromstring(data)
        assert tags_module.start_line(data, root[0]) == 2
    kept = tags_module._texts._kept
    assert list(kept) == texts[-tags_module._TEXTS_KEPT :]  # the most recently asked, at most so many
    tags_module.forget_text(texts[-1])
    assert texts[-1] not in kept and texts[-2] in kept
    root = etree.fromstring(texts[-1])
    assert tags_module.start_line(texts[-1], root[0]) == 2 and list(kept)[-1] == texts[-1]  # read again when asked
