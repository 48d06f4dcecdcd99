"""Errors about an attribute point at the line where the attribute is written,
also when its start tag spans several lines (libxml2 records the line where
the tag ends, expat where it begins)."""

from __future__ import annotations

import pytest

from cdl import CdlError
from conftest import CDL_DECL, resolve_text


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


def test_deep_documents_parsed_by_expat_too() -> None:
    """expat records where a start tag begins: the attribute further down is found as well."""
    deep = "<n>" * 300
    lines = ["<S>", deep + "<p", "  y='1'", "  cdl:ref='/nope'/>" + "</n>" * 300, "</S>"]
    with pytest.raises(CdlError) as info:
        resolve_text(document(lines))
    assert (info.value.code, info.value.line) == ("REF_NOT_FOUND", 6)


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


def test_a_lone_carriage_return_ends_no_line_of_an_error() -> None:
    """libxml2 counts lines by LF: a lone CR (which an editor counts, LSP 3.17)
    is no line end in the lines errors give."""
    lines = ["<S>", "<p\r   x='1'\r   cdl:ref='/nope'", "   y='2'/>", "</S>"]
    with pytest.raises(CdlError) as info:
        resolve_text(document(lines))
    assert (info.value.code, info.value.line) == ("REF_NOT_FOUND", 4)  # where <p and its cdl:ref are, by LF
