"""Errors about an attribute point at the line where the attribute is written,
also when its start tag spans several lines (libxml2 records the line where
the tag ends, expat where it begins)."""

from __future__ import annotations

import pytest
from lxml import etree

from cdl import CdlError
from cdl.text.encoding import decode, encode
from cdl.text.tags import attribute_line, read_start_tag, scan, start_line, tags_reaching, unescape
from conftest import CDL_DECL, CDL_NS, resolve_text


def document(lines: list[str], part: str = "system", after: str = "") -> str:
    """Lists in ``part``, one per line from line 3, then ``after``. A system by
    default: a template's reference that selects nothing is no error (7.6)."""
    return f"<cdl:cdl {CDL_DECL}>\n<cdl:{part}>\n" + "\n".join(lines) + f"\n</cdl:{part}>{after}</cdl:cdl>"


# Each case: lines from line 3, the code, the line the attribute is on.
CASES = {
    "extends": (["<S>", "<p", '   x="1"', '   cdl:extends="Nope"', '   y="2">', "</p>", "</S>"], "UNKNOWN_PROTOTYPE", 6),
    "extends-bad-qname": (["<S>", "<p", '   cdl:extends="no:pe"', "   y='2'/>", "</S>"], "BAD_QNAME", 5),
    "extends-cycle": (["<A", "  cdl:extends='B'", "/>", "<B cdl:extends='A'/>"], "EXTENDS_CYCLE", 4),
    "ref": (["<S>", "<p", "   cdl:ref='/nope'", "   y='2'/>", "</S>"], "REF_NOT_FOUND", 5),
    "ref-bad-path": (["<S>", "<p", "   cdl:ref='a//b'", "   y='2'/>", "</S>"], "BAD_PATH", 5),
    "ref-above-top": (["<S>", "<p y='1'", "", "   cdl:ref='../x'", "   />", "</S>"], "REF_ABOVE_TOP", 6),
    "ref-cycle": (["<S>", "<p", "   cdl:ref='/p'", "/>", "</S>"], "REF_CYCLE", 5),
    "ref-with-children": (["<S>", "<p", "   cdl:ref='/q'", "><c/></p>", "</S>"], "REF_WITH_CHILDREN", 5),
    "refroot": (["<S>", "<p", "   cdl:refroot='Nope'", "   cdl:ref='/x'/>", "</S>"], "UNKNOWN_REFROOT", 5),
    "refroot-without-ref": (["<S>", "<p", "   cdl:refroot='S'", "   y='1'/>", "</S>"], "REFROOT_WITHOUT_REF", 5),
    "lazy": (["<S>", "<p", "   cdl:lazy='maybe'", "   y='1'/>", "</S>"], "BAD_LAZY", 5),
    "lazy-with-value": (["<S>", "<p", "   cdl:lazy='true'", "   y='1'>1</p>", "</S>"], "LAZY_WITH_VALUE", 5),
    "variable-ref": (
        ["<S>", "<p><cdl:expression value-of='$v'><cdl:variable name='v'", "  ref='/nope'", "/></cdl:expression></p>", "</S>"],
        "REF_NOT_FOUND",
        5,
    ),
    "variable-lazy": (
        ["<S>", "<p><cdl:expression value-of='$v'><cdl:variable name='v'", "  ref='/q' lazy='perhaps'", "/></cdl:expression></p>", "</S>"],
        "BAD_LAZY",
        5,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_an_error_points_at_the_attributes_line(name: str) -> None:
    lines, code, line = CASES[name]
    with pytest.raises(CdlError) as info:
        resolve_text(document(lines))
    assert (info.value.code, info.value.line) == (code, line)
    assert info.value.render().startswith(f"mem.cdl:{line}: [{code}]")


def test_a_template_error_points_at_the_templates_attribute() -> None:
    """An inherited reference fails in the inheritor, and is reported where the template writes it."""
    lines = ["<T>", "<p", "   cdl:ref='/nope'", "   y='1'/>", "</T>"]
    with pytest.raises(CdlError) as info:
        resolve_text(document(lines, "configuration", "<cdl:system><S cdl:extends='T'/></cdl:system>"))
    assert {(e.code, e.line) for e in info.value.errors} == {("REF_NOT_FOUND", 5)}


def test_cycle_links_name_the_attributes_lines() -> None:
    with pytest.raises(CdlError) as info:
        resolve_text(document(["<S>", "<p", "  cdl:ref='/q'/>", "<q", "  cdl:ref='/p'", "/>", "</S>"]))
    assert "(mem.cdl:5)" in info.value.message and "(mem.cdl:7)" in info.value.message


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


def test_deep_documents_parsed_by_expat_too() -> None:
    """expat records where a start tag begins: the attribute further down is found as well."""
    deep = "<n>" * 300
    lines = ["<S>", deep + "<p", "  y='1'", "  cdl:ref='/nope'/>" + "</n>" * 300, "</S>"]
    with pytest.raises(CdlError) as info:
        resolve_text(document(lines))
    assert (info.value.code, info.value.line) == ("REF_NOT_FOUND", 6)


def test_lines_far_into_a_large_document() -> None:
    """The line is found past many chunks of text (counted a chunk at a time)."""
    padding = b"<x/>\n" * 40_000  # 200 kB
    data = f"<r {CDL_DECL}>\n".encode() + padding + b'<a\n  cdl:ref="y"\n/></r>'
    el = etree.fromstring(data)[-1]
    assert el.sourceline == 40_004
    assert attribute_line(data, el, f"{{{CDL_NS}}}ref", "y") == 40_003


# An element's own line: where its start tag begins (``<name``), for errors
# about the element and for every explain step, also when the tag spans lines.
SPREAD = f"""<cdl:cdl {CDL_DECL}>
<cdl:configuration>
<T
  a='1'>
<p>t</p><w>i</w>
</T>
</cdl:configuration><cdl:system>
<S
  cdl:extends='T'
>
<q
  b='2'
  cdl:ref='/r'
/>
<r
  c='3'
>v</r>
<e
  d='4'
><cdl:expression
  value-of='concat($x, "!")'
><cdl:variable name='x' ref='/r'/></cdl:expression></e>
<p
  e='5'
>u</p>
<z
  f='6'
  cdl:lazy='true'
/>
</S>
</cdl:system></cdl:cdl>"""


def test_an_error_about_an_element_points_where_its_start_tag_begins() -> None:
    lines = ["<S>", "<p", "  x='1'", '  cdl:use="required"', "/>", "</S>"]
    with pytest.raises(CdlError) as info:
        resolve_text(document(lines))
    assert (info.value.code, info.value.line) == ("REQUIRED_MISSING", 4)  # libxml2 says 7


def test_a_deploy_error_points_where_its_start_tag_begins() -> None:
    """The error of a --set on a property that is not lazy (located by ``Context.where``)."""
    with pytest.raises(CdlError) as info:
        resolve_text(SPREAD, {"S/p": "w"})
    assert (info.value.code, info.value.line) == ("SET_NOT_LAZY", 23)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("S/q", [("written", 11), ("reference", 11)]),
        ("S/p", [("written", 23), ("overrides", 5)]),
        ("S/w", [("written", 5), ("inherited", 8)]),
        ("S/e", [("written", 18), ("expression", 20)]),
        ("S/z", [("written", 26), ("pending", 26)]),
    ],
)
def test_explain_steps_point_where_start_tags_begin(path: str, expected: list[tuple[str, int]]) -> None:
    resolution = resolve_text(SPREAD)
    (explanation,) = resolution.explain(path)
    assert [(step.kind, step.line) for step in explanation.steps] == expected
    (target,) = [step.source for step in explanation.steps if step.source is not None] or [None]
    if target is not None:
        assert [step.line for step in target.steps] == [15]


def test_start_line_with_several_tags_on_a_line_and_for_expat() -> None:
    root = etree.fromstring(DATA)
    assert [start_line(DATA, el) for el in root] == [2, 2, 4]  # the second begins on line 2, ends on 4
    assert start_line(b"", root[1]) == 4  # no text: the recorded line
    deep = "<n>" * 300
    lines = ["<S>", deep + "<p", "  y='1'", "  cdl:use='required'/>" + "</n>" * 300, "</S>"]
    with pytest.raises(CdlError) as info:
        resolve_text(document(lines))
    assert (info.value.code, info.value.line) == ("REQUIRED_MISSING", 4)  # expat records the beginning


@pytest.mark.parametrize("encoding", ["utf-16", "iso-8859-1"])
def test_an_error_points_at_the_attributes_line_in_any_encoding(encoding: str) -> None:
    """The text is read in the document's encoding: a UTF-16 document (no
    ASCII byte is a character of it) and one in ISO-8859-1 with names beyond
    ASCII point at the attribute too, not at the line where the tag ends."""
    lines = ["<Sé>", "<pé", "   x='é'", "   cdl:extends='Nope'", "   y='2'>", "</pé>", "</Sé>"]
    text = f'<?xml version="1.0" encoding="{encoding}"?>\n' + document(lines)
    with pytest.raises(CdlError) as info:
        resolve_text(text.encode(encoding))
    assert (info.value.code, info.value.line) == ("UNKNOWN_PROTOTYPE", 7)


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


def test_the_encoding_is_the_byte_order_marks_then_the_declarations() -> None:
    declared = "<?xml version='1.0' encoding='ISO-8859-1'?><x>é</x>"
    assert decode(declared.encode("latin-1")) == declared
    assert decode(b"\xef\xbb\xbf" + declared.encode("utf-8")) == declared  # the mark wins, as for libxml2
    assert decode(declared.encode("utf-16")) == declared
    assert decode("<x>é</x>".encode()) == "<x>é</x>"
    assert encode(declared) == declared.encode("latin-1")
    assert encode(declared.replace("é", "€")) == declared.replace("é", "&#8364;").encode("latin-1")
