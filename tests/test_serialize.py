"""cdl.resolution.output: the resolved output round-trips (every element, attribute and
QName value means what it meant), declares every namespace it uses, keeps the
annotations it should, and turns into plain data."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

import cdl
from conftest import CDL_NS, ENGINE_NS, XSD_NS, cdl_doc, config, list_xml, lists_xml, resolve_text, system

C = f"{{{CDL_NS}}}"
QNAME_ATTRIBUTES = {f"{C}type", f"{C}refroot"}
PATH_ATTRIBUTES = {f"{C}ref"}


def imp(location: str) -> str:
    return f'<cdl:import location="{location}"/>'


def expand(qname: str, nsmap: dict) -> str:
    """An xsd:QName value as a Clark name, with the declarations in scope."""
    prefix, _, local = qname.rpartition(":")
    uri = nsmap.get(prefix or None) or ""
    if prefix and prefix not in nsmap:
        raise AssertionError(f"prefix {prefix!r} of {qname!r} is not declared in the output")
    return f"{{{uri}}}{local}" if uri else local


def expand_path(path: str, nsmap: dict) -> tuple[str, ...]:
    return tuple(step if step in (".", "..") else expand(step, nsmap) for step in path.split("/"))


def meaning(root: etree._Element) -> list[tuple]:
    """What a resolved tree says: (tag, attributes with QName values expanded, text) per element of its lists."""
    found = []
    for part in root:
        if part.tag not in (f"{C}configuration", f"{C}system"):
            continue
        for el in part.iter():
            if el is part:
                continue
            attrs = {}
            for key, value in el.attrib.items():
                if key in QNAME_ATTRIBUTES or (el.tag == f"{C}variable" and key == "refroot"):
                    value = expand(value, el.nsmap)
                elif key in PATH_ATTRIBUTES or (el.tag == f"{C}variable" and key == "ref"):
                    value = expand_path(value, el.nsmap)
                attrs[key] = value
            found.append((el.tag, attrs, (el.text or "").strip() or None))
    return found


def reparsed(res: cdl.Resolution, system_only: bool = False) -> etree._Element:
    """The output bytes parsed again (fails if a prefix is undeclared)."""
    data = res.to_bytes(system_only)
    assert ENGINE_NS.encode() not in data
    return etree.fromstring(data)


# ---------------------------------------------------------------------------
# Round trips


def test_conflicting_prefixes_across_documents(write_docs) -> None:
    main = write_docs(
        {
            "main.cdl": cdl_doc(
                imp("lib.cdl")
                + '<cdl:system><S cdl:extends="l:T"><own cdl:type="p:int">1</own><x cdl:ref="/own" cdl:lazy="true"/></S></cdl:system>',
                'xmlns="urn:d" xmlns:p="urn:1" xmlns:l="urn:2" targetNamespace="urn:d"',
            ),
            # the same prefix p means urn:2 here, and q means main's urn:1
            "lib.cdl": cdl_doc(
                '<cdl:configuration><p:T><p:a cdl:type="p:int">2</p:a><b cdl:type="q:str">x</b>'
                '<p:c cdl:refroot="p:T" cdl:ref="/p:a" cdl:lazy="true"/></p:T></cdl:configuration>',
                'xmlns:p="urn:2" xmlns="urn:3" xmlns:q="urn:1" targetNamespace="urn:2"',
            ),
        }
    )
    res = cdl.load(main).resolve()
    expected = [
        ("{urn:d}S", {}, None),
        ("{urn:2}a", {f"{C}type": "{urn:2}int"}, "2"),
        ("{urn:3}b", {f"{C}type": "{urn:1}str"}, "x"),
        ("{urn:2}c", {f"{C}lazy": "true", f"{C}refroot": "{urn:2}T", f"{C}ref": (".", "{urn:2}a")}, None),
        ("{urn:d}own", {f"{C}type": "{urn:1}int"}, "1"),
        ("{urn:d}x", {f"{C}lazy": "true", f"{C}ref": (".", "{urn:d}own")}, None),
    ]
    assert meaning(reparsed(res)) == expected
    assert meaning(res.tree()) == expected
    assert reparsed(res).get("targetNamespace") == "urn:d"


def test_no_namespace_elements_under_a_main_document_with_default_namespace(write_docs) -> None:
    main = write_docs(
        {
            "main.cdl": cdl_doc(imp("plain.cdl") + "<cdl:system><S2 cdl:extends='Plain'><own>2</own></S2></cdl:system>", 'xmlns="urn:d"'),
            "plain.cdl": config("<Plain><v>1</v><w cdl:type='int'>1</w></Plain>"),
        }
    )
    res = cdl.load(main).resolve()
    expected = [
        ("{urn:d}S2", {}, None),
        ("v", {}, "1"),
        ("w", {f"{C}type": "int"}, "1"),
        ("{urn:d}own", {}, "2"),
    ]
    assert meaning(reparsed(res)) == expected


def test_no_namespace_qname_values_under_a_default_namespace(write_docs) -> None:
    # Every element of the output is qualified, so a default namespace may be
    # declared; QName values in no namespace must still mean no namespace.
    main = write_docs(
        {
            "main.cdl": cdl_doc(imp("lib.cdl") + "<cdl:system><S cdl:extends='x:T'/></cdl:system>", 'xmlns="urn:d" xmlns:x="urn:x"'),
            "lib.cdl": config(
                "<x:T><x:p cdl:type='int'>1</x:p><x:r cdl:refroot='Y' cdl:ref='/a' cdl:lazy='true'/></x:T><Y><a>1</a></Y>",
                'xmlns:x="urn:x"',
            ),
        }
    )
    res = cdl.load(main).resolve()
    expected = [
        ("{urn:d}S", {}, None),
        ("{urn:x}p", {f"{C}type": "int"}, "1"),
        ("{urn:x}r", {f"{C}lazy": "true", f"{C}refroot": "Y", f"{C}ref": (".", "a")}, None),
    ]
    assert meaning(reparsed(res)) == expected
    # and the pending reference still resolves once released
    assert [(e.tag, e.text) for e in res.supply(release=["S/x:r"]).tree().iter("{urn:x}r")] == [("{urn:x}r", "1")]


def test_private_namespace_never_leaks_into_element_names(write_docs) -> None:
    main = write_docs(
        {
            "main.cdl": cdl_doc(
                imp("plain.cdl") + '<cdl:system><S><x cdl:ref="/y" cdl:lazy="true"/></S><S2 cdl:extends="Plain"/></cdl:system>',
                'xmlns="urn:d"',
            ),
            "plain.cdl": config("<Plain><v>1</v></Plain>"),
        }
    )
    res = cdl.load(main).resolve()
    assert meaning(reparsed(res)) == [
        ("{urn:d}S", {}, None),
        ("{urn:d}x", {f"{C}lazy": "true", f"{C}ref": (".", "{urn:d}y")}, None),
        ("{urn:d}S2", {}, None),
        ("v", {}, "1"),
    ]


@pytest.mark.parametrize(
    ("docs", "expected"),
    [
        # prefix declared on an inner element only
        (
            {"main.cdl": system("<S xmlns:i='urn:i'><i:p cdl:type='i:t'>1</i:p></S>")},
            [("S", {}, None), ("{urn:i}p", {f"{C}type": "{urn:i}t"}, "1")],
        ),
        # one prefix bound to two URIs in different places of one document
        (
            {"main.cdl": system("<S><a xmlns:p='urn:1'><p:v cdl:type='p:t'>1</p:v></a><b xmlns:p='urn:2'><p:v cdl:type='p:t'>2</p:v></b></S>")},
            [
                ("S", {}, None),
                ("a", {}, None),
                ("{urn:1}v", {f"{C}type": "{urn:1}t"}, "1"),
                ("b", {}, None),
                ("{urn:2}v", {f"{C}type": "{urn:2}t"}, "2"),
            ],
        ),
        # the CDL namespace under another prefix, and a default namespace undeclared inside
        (
            {
                "main.cdl": '<c:cdl xmlns:c="' + CDL_NS + '" xmlns="urn:d"><c:system><S><p c:type="xsd:int" xmlns:xsd="' + XSD_NS + '">1</p>'
                "<q xmlns=''>2</q></S></c:system></c:cdl>"
            },
            [("{urn:d}S", {}, None), ("{urn:d}p", {f"{C}type": f"{{{XSD_NS}}}int"}, "1"), ("q", {}, "2")],
        ),
        # a prefix named like the ones the serializer invents
        (
            {"main.cdl": system("<ns1:S xmlns:ns1='urn:n1'><p xmlns='urn:d' cdl:ref='/q' cdl:lazy='true'/></ns1:S>", 'xmlns:ns2="urn:n2"')},
            [("{urn:n1}S", {}, None), ("{urn:d}p", {f"{C}lazy": "true", f"{C}ref": (".", "{urn:d}q")}, None)],
        ),
    ],
    ids=["inner-prefix", "rebound-prefix", "cdl-other-prefix", "ns1-taken"],
)
def test_round_trip_table(write_docs, docs: dict, expected: list) -> None:
    res = cdl.load(write_docs(docs)).resolve()
    data = res.to_bytes()
    assert ENGINE_NS.encode() not in data
    assert meaning(etree.fromstring(data)) == expected


def test_variable_paths_round_trip(write_docs) -> None:
    main = write_docs(
        {
            "main.cdl": system(
                "<S><v><cdl:expression value-of='$a'><cdl:variable name='a' refroot='t:T' ref='/t:x' lazy='true'/>"
                "<cdl:variable name='b' ref='/w'/></cdl:expression></v><w>1</w></S>",
                'xmlns="urn:d" xmlns:t="urn:t"',
                configuration="<t:T><t:x>9</t:x></t:T>",
            )
        }
    )
    res = cdl.load(main).resolve()
    root = reparsed(res)
    variables = [(v.get("name"), expand(v.get("refroot"), v.nsmap) if v.get("refroot") else None, expand_path(v.get("ref"), v.nsmap)) for v in root.iter(f"{C}variable")]
    assert variables == [("a", "{urn:t}T", (".", "{urn:t}x")), ("b", None, (".", "{urn:d}w"))]


# ---------------------------------------------------------------------------
# What the output keeps and drops


@pytest.mark.parametrize(
    ("lists", "expected"),
    [
        # cdl:type and cdl:use are kept
        ("<S><p cdl:type='xsd:int' cdl:use='required'>1</p></S>", '<S><p cdl:type="xsd:int" cdl:use="required">1</p></S>'),
        # cdl:extends and resolved cdl:ref/cdl:refroot are dropped
        ("<S cdl:extends='T'><r cdl:refroot='T' cdl:ref='/v'/></S>", "<S><v>1</v><r>1</r></S>"),
        # resolved cdl:lazy (false) is dropped, pending lazy kept
        ("<S><p cdl:lazy='false'/><q cdl:lazy='1'/></S>", '<S><p/><q cdl:lazy="true"/></S>'),
        # documentation is dropped
        ("<S><cdl:documentation>x</cdl:documentation><p>1<cdl:documentation>y</cdl:documentation></p></S>", "<S><p>1</p></S>"),
        # user attributes are kept
        ("<S a='1' u:b='2'><p c='3'>1</p></S>", '<S a="1" u:b="2"><p c="3">1</p></S>'),
        # an expression is replaced by its value
        ("<S><p><cdl:expression value-of='1 + 1'/></p></S>", "<S><p>2</p></S>"),
    ],
)
def test_output_annotations(lists: str, expected: str) -> None:
    res = resolve_text(system(lists, f'xmlns:xsd="{XSD_NS}" xmlns:u="urn:u"', configuration="<T><v>1</v></T>"))
    assert list_xml(res, "S") == expected
    assert b"extends" not in res.to_bytes()


@pytest.mark.parametrize(
    ("prop", "written"),
    [
        # absolute paths without refroot, written relative (7.3.1)
        ("<p cdl:ref='/b' cdl:lazy='true'/>", 'cdl:ref="./b"'),
        ("<g><p cdl:ref='/b' cdl:lazy='true'/></g>", 'cdl:ref="../b"'),
        ("<g><h><p cdl:ref='/b' cdl:lazy='true'/></h></g>", 'cdl:ref="../../b"'),
        ("<g><p cdl:ref='/.' cdl:lazy='true'/></g>", 'cdl:ref=".."'),
        # with refroot: '.' + path
        ("<g><p cdl:refroot='T' cdl:ref='/v' cdl:lazy='true'/></g>", 'cdl:ref="./v" cdl:refroot="T"'),
        ("<g><p cdl:refroot='T' cdl:ref='/.' cdl:lazy='true'/></g>", 'cdl:ref="." cdl:refroot="T"'),
        # relative paths
        ("<p cdl:ref='b' cdl:lazy='true'/>", 'cdl:ref="./b"'),
        ("<g><p cdl:ref='../b' cdl:lazy='true'/></g>", 'cdl:ref="../b"'),
        ("<g><p cdl:ref='./x/../../b' cdl:lazy='true'/><x/></g>", 'cdl:ref="./x/../../b"'),
        # prefixed steps keep their namespace
        ("<p cdl:ref='/t:b' cdl:lazy='true'/>", 'cdl:ref="./t:b"'),
    ],
)
def test_pending_references_are_written_relative(prop: str, written: str) -> None:
    res = resolve_text(system(f"<S>{prop}<b>1</b><t:b>2</t:b></S>", 'xmlns:t="urn:t"', configuration="<T><v>1</v></T>"))
    rendered = list_xml(res, "S")
    assert f'cdl:lazy="true" {written}' in rendered


def test_system_only_and_types() -> None:
    schema = f'<xsd:schema xmlns:xsd="{XSD_NS}" targetNamespace="urn:t"><xsd:simpleType name="port"><xsd:restriction base="xsd:int"/></xsd:simpleType></xsd:schema>'
    xml = cdl_doc(
        f"<cdl:types>{schema}</cdl:types><cdl:configuration><T><v>1</v></T></cdl:configuration><cdl:system><S cdl:extends='T'/></cdl:system>",
        'targetNamespace="urn:t"',
    )
    res = resolve_text(xml)
    full = reparsed(res)
    assert [child.tag for child in full] == [f"{C}types", f"{C}configuration", f"{C}system"]
    assert full.find(f"{C}types/{{{XSD_NS}}}schema").get("targetNamespace") == "urn:t"
    only = reparsed(res, system_only=True)
    assert [child.tag for child in only] == [f"{C}system"]
    assert only.get("targetNamespace") == "urn:t"
    assert meaning(only) == [("S", {}, None), ("v", {}, "1")]


def test_every_namespace_is_declared_once_on_the_root() -> None:
    res = resolve_text(system("<a:S xmlns:a='urn:a'><b:p xmlns:b='urn:b' cdl:type='c:t' xmlns:c='urn:c'>1</b:p></a:S>"))
    root = reparsed(res)
    assert set(root.nsmap.values()) >= {CDL_NS, "urn:a", "urn:b", "urn:c"}
    assert all(el.nsmap == root.nsmap for el in root.iter())


def test_output_has_an_xml_declaration_and_is_utf8() -> None:
    res = resolve_text(system("<S><p>\u00e9t\u00e9 \u2713</p></S>"))
    data = res.to_bytes()
    assert data.startswith(b"<?xml version='1.0' encoding='UTF-8'?>\n")
    assert "\u00e9t\u00e9 \u2713".encode() in data
    assert b"\n" not in res.to_bytes(pretty=False).split(b"?>", 1)[1].strip()


def test_tree_is_a_fresh_copy_each_time() -> None:
    res = resolve_text(system("<S><p>1</p></S>"))
    first = res.tree()
    first[0][0][0].text = "changed"
    assert lists_xml(res) == ["<S><p>1</p></S>"]


def test_write(tmp_path: Path) -> None:
    res = resolve_text(system("<S><p>1</p></S>"))
    target = tmp_path / "out.cdl"
    res.write(target)
    assert target.read_bytes() == res.to_bytes()
    res.write(target, system_only=True)
    assert target.read_bytes() == res.to_bytes(system_only=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.cdl"]


# ---------------------------------------------------------------------------
# to_data


# The mapping's rules are tested in tests/test_json_mapping.py.


def test_to_data_system_only() -> None:
    res = resolve_text(system("<S cdl:extends='T'/>", configuration="<T><v>1</v></T>"))
    assert res.to_data(system_only=True) == {"system": {"S": {"v": "1"}}}


def test_inherited_children_of_a_list_holding_only_whitespace_are_indented() -> None:
    doc = (
        f'<cdl:cdl xmlns:cdl="{CDL_NS}">\n'
        "  <cdl:configuration>\n"
        "    <base>\n      <a>1</a>\n      <b><c>2</c></b>\n    </base>\n"
        '    <derived cdl:extends="base">\n    </derived>\n'
        "  </cdl:configuration>\n"
        '  <cdl:system>\n    <s cdl:extends="base"> </s>\n  </cdl:system>\n'
        "</cdl:cdl>\n"
    )
    body = b"      <a>1</a>\n      <b>\n        <c>2</c>\n      </b>\n"
    data = resolve_text(doc).to_bytes()
    assert b"    <derived>\n" + body + b"    </derived>\n" in data
    assert b"    <s>\n" + body + b"    </s>\n" in data
