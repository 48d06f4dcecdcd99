"""The loader's shortcuts against its general parse (``CDL_NO_FAST_PATHS``):
the same references indexed, the same tables, and element bounds equal to
the element count, read from the loaded documents' state (tests/test_load.py
has loading through ``cdl.load``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

import cdl
from cdl import CdlError
from cdl.loading.parse import parse_deep, parse_written
from conftest import CDL_NS, ENGINE_NS, load_text, system

from . import inside


def _loaded_refs(doc: cdl.Document) -> list[tuple[str, dict[str, str], object]]:
    """Each element of the lists: its name, attributes and the reference its index names."""
    tables = inside.tables(doc)
    found = []
    for el in inside.sources(doc)[0].root.iter(etree.Element):
        index = el.get(f"{{{ENGINE_NS}}}ref")
        # cdl:type is the output's: with the fast paths on, cdl.load writes it
        # in its output form after the loader (_serialize.prepare_output).
        attributes = {key: value for key, value in el.attrib.items() if key != f"{{{CDL_NS}}}type"}
        found.append((el.tag, attributes, tables.refs[int(index)] if index is not None else None))
    return found


def test_peer_references_met_once_load_like_the_general_parse() -> None:
    # A cdl:ref with its cdl:refroot alone, in either order, takes the
    # loader's shortest path (_reference_alone); with another attribute beside
    # them, the general parse. All must leave the same tree and references,
    # and a set met a second time is replayed with the same result.
    def peers(order: str, extra: str = "") -> str:
        lists = []
        for i in range(6):
            a, b = f'cdl:refroot="s{(i + 1) % 6}"', 'cdl:ref="/n"'
            attributes = (f"{a} {b}" if order == "refroot first" else f"{b} {a}") + extra
            lists.append(f"<s{i}><n>{i}</n><h {attributes}/><p {attributes}/><q {attributes}/></s{i}>")
        return system("".join(lists) + "<t><n>x</n><r cdl:refroot='s0' cdl:ref='/n'/><u cdl:ref='/n' cdl:refroot='s0'/></t>")

    fast, general = load_text(peers("refroot first")), load_text(peers("ref first"))
    assert _loaded_refs(fast) == _loaded_refs(general)
    parsed = load_text(peers("refroot first", ' w="1"'))
    assert [(tag, ref) for tag, _, ref in _loaded_refs(fast)] == [(tag, ref) for tag, _, ref in _loaded_refs(parsed)]
    res = fast.resolve()
    assert [el.text for el in res.tree().iter("h", "p", "q", "r", "u")] == [str((i + 1) % 6) for i in range(6) for _ in "hpq"] + ["0", "0"]


@pytest.mark.parametrize("refroot", ["s1", "x:s1", "y"])
def test_peer_refroots_met_for_the_first_time_load_like_the_general_parse(refroot: str) -> None:
    # A refroot met for the first time is parsed by the shortest path
    # (_reference_alone); one that does not parse is reported by the general
    # parse, as with another attribute beside it.
    def peers(extra: str) -> str:
        lists = f'<s0><n>0</n><a cdl:refroot="s1" cdl:ref="/n"/><b cdl:refroot="{refroot}" cdl:ref="/n"{extra}/></s0><s1><n>1</n></s1>'
        return system(lists, 'xmlns:x="urn:x"')

    try:
        fast = _loaded_refs(load_text(peers("")))
    except CdlError as exc:
        with pytest.raises(CdlError) as info:
            load_text(peers(' u="1"'))
        assert (exc.code, exc.line, exc.path, str(exc)) == (info.value.code, info.value.line, info.value.path, str(info.value))
        return
    general = _loaded_refs(load_text(peers(' u="1"')))
    assert [(tag, ref) for tag, _, ref in fast] == [(tag, ref) for tag, _, ref in general]


def test_relative_references_met_once_load_like_the_general_parse() -> None:
    # A relative cdl:ref alone takes the loader's shortest path; with another
    # attribute beside it, the general parse. Paths with '.', '..', prefixed
    # and new steps, met once and again.
    paths = ["../s1/n", "../s2/n", "./../s1/n", "../x:s3/n", "../s1/./n", " ../s2/n ", "../s1/n", "../s3/../s1/n"]

    def refs(extra: str) -> str:
        body = "".join(f'<p{i} cdl:ref="{path}"{extra}/>' for i, path in enumerate(paths))
        lists = f"<s0><n>0</n>{body}</s0><s1><n>1</n></s1><s2><n>2</n></s2><x:s3><n>3</n></x:s3>"
        return system(lists, 'xmlns:x="urn:x"')

    fast, general = _loaded_refs(load_text(refs(""))), _loaded_refs(load_text(refs(' u="1"')))
    assert [(tag, ref) for tag, _, ref in fast] == [(tag, ref) for tag, _, ref in general]
    assert [ref is not None for _, _, ref in fast].count(True) == len(paths)
    assert all(source.uniform_namespaces for source in inside.sources(load_text(refs(""))))


@pytest.mark.parametrize("order", ["refroot first", "ref first", "declared below the root"])
def test_the_loaders_shortcuts_agree_with_its_general_parse(order: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Attribute forms replayed, cached parses and the root's namespaces
    # (fast paths) against the general parse of every element (CDL_NO_FAST_PATHS).
    lists = []
    for i in range(6):
        a, b = f'cdl:refroot="s{(i + 1) % 6}"', 'cdl:ref="/n"'
        attributes = f"{a} {b}" if order == "refroot first" else f"{b} {a}"
        declaration = ' xmlns:n="urn:n"' if order == "declared below the root" else ""
        lists.append(
            f"<s{i} cdl:extends='s9'{declaration}><n>{i}</n><h {attributes}/><p {attributes} w='1'/><q cdl:ref='/n'/><r cdl:ref='../n'/>"
            f"<k><m cdl:ref='/n'/><o cdl:lazy='1'/><t cdl:type='xsd:string' cdl:use=' required '>v</t></k></s{i}>"
        )
    text = system("".join(lists), 'xmlns:xsd="http://www.w3.org/2001/XMLSchema"', configuration="<s9><x>1</x></s9>")
    monkeypatch.delenv("CDL_NO_FAST_PATHS", raising=False)
    fast = load_text(text)
    monkeypatch.setenv("CDL_NO_FAST_PATHS", "1")
    general = load_text(text)
    assert _loaded_refs(fast) == _loaded_refs(general)
    assert inside.tables(fast).names == inside.tables(general).names
    assert inside.tables(fast).item_tags == inside.tables(general).item_tags


def test_element_bound_is_the_element_count() -> None:
    doc = load_text(system('<s><cdl:documentation>x</cdl:documentation><a cdl:ref="../b"/><b>1</b></s><t/>',
                           configuration="<c><d/></c>"))
    for source in inside.sources(doc):
        assert source.element_bound == sum(1 for _ in source.root.iter(etree.Element))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "p:c"]), st.sampled_from(["", " x='1'", '\n  x="1"', " x='>\n'", "\n  x='1'\n  y=\"2\"\n"]), st.booleans()),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(["", "\n", "\n\n  "]),
)
def test_both_parsers_record_the_line_where_each_start_tag_ends(elements: list[tuple[str, str, bool]], gap: str) -> None:
    # libxml2 records it; the expat path (documents deeper than libxml2
    # parses) is made to, so that what reads lines (the written comparison's
    # shortcuts, an error's line) reads them alike whichever parsed.
    body = ""
    for name, attributes, empty in elements:
        body += f"{gap}<{name}{attributes}/>" if empty else f"{gap}<{name}{attributes}>t</{name}>"
    data = f'<?xml version="1.0"?>\n<r xmlns:p="urn:p"\n   z="0">{body}{gap}<s\n/></r>'.encode()
    libxml2 = parse_written(data, "t.xml", cdl.Limits())
    deep = parse_deep(data, "t.xml", cdl.Limits())
    assert [el.sourceline for el in deep.iter()] == [el.sourceline for el in libxml2.iter()]
