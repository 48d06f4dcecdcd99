"""cdl.loading.parse: reading one document (section 6), its refusals, and the CDL
annotations parsed at load time (cdl:lazy, cdl:use, cdl:ref, cdl:refroot, ...)."""

from __future__ import annotations

from pathlib import Path

import pytest

import cdl
from cdl import CdlError
from conftest import CDL_DECL, CDL_NS, ENGINE_NS, cdl_doc, config, list_xml, lists_xml, load_text, resolve_text, system

MISSPELT_NS = "http://www.gridforum.org/namespaces/2005/02/cddlml/CDL-1.0"

# ---------------------------------------------------------------------------
# The root element


@pytest.mark.parametrize(
    ("xml", "found"),
    [
        (f'<cdl:cdl xmlns:cdl="{MISSPELT_NS}"><cdl:system><s/></cdl:system></cdl:cdl>', f"{{{MISSPELT_NS}}}cdl"),
        ("<cdl><system><s/></system></cdl>", "cdl (no namespace)"),
        ('<cdl xmlns="urn:other"/>', "{urn:other}cdl"),
        (f'<cdl:system {CDL_DECL}><s/></cdl:system>', f"{{{CDL_NS}}}system"),
        (f'<cdl:CDL {CDL_DECL}/>', f"{{{CDL_NS}}}CDL"),
    ],
)
def test_root_must_be_cdl_cdl(xml: str, found: str) -> None:
    with pytest.raises(CdlError) as info:
        load_text(xml)
    error = info.value
    assert (error.code, error.url, error.line) == ("NOT_CDL", "mem.cdl", 1)
    # The message names the expected namespace, and what was found.
    assert error.message == f"the root element must be cdl:cdl in the namespace {CDL_NS}; found {found}"


def test_root_in_default_namespace_is_accepted() -> None:
    res = resolve_text(f'<cdl xmlns="{CDL_NS}"><system><s xmlns=""><p>1</p></s></system></cdl>')
    assert lists_xml(res, "system") == ["<s><p>1</p></s>"]


# ---------------------------------------------------------------------------
# Children of cdl:cdl: import*, types?, configuration?, system?, extensions


EXT = '<x:ext xmlns:x="urn:x"><x:anything/></x:ext>'
IMPORT = '<cdl:import location="lib.cdl"/>'
TYPES = "<cdl:types/>"
CONF = "<cdl:configuration><a/></cdl:configuration>"
SYS = "<cdl:system><s/></cdl:system>"
DOC = "<cdl:documentation>about <b>this</b></cdl:documentation>"


@pytest.mark.parametrize(
    "body",
    [
        "",
        IMPORT,
        IMPORT + IMPORT,
        TYPES,
        CONF,
        SYS,
        IMPORT + TYPES + CONF + SYS,
        IMPORT + IMPORT + TYPES + CONF + SYS + EXT + EXT,
        TYPES + SYS,
        CONF + EXT,
        DOC + IMPORT + TYPES + CONF + SYS,
        EXT,
    ],
)
def test_valid_child_orders(write_docs, body: str) -> None:
    main = write_docs({"main.cdl": cdl_doc(body), "lib.cdl": config("<lib/>")})
    document = cdl.load(main)
    assert document.url == str(main)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (SYS + CONF, "cdl:configuration is out of place"),
        (CONF + TYPES, "cdl:types is out of place"),
        (CONF + IMPORT, "cdl:import is out of place"),
        (SYS + IMPORT, "cdl:import is out of place"),
        (TYPES + IMPORT, "cdl:import is out of place"),
        (CONF + CONF, "cdl:configuration is out of place"),
        (SYS + SYS, "cdl:system is out of place"),
        (TYPES + TYPES, "cdl:types is out of place"),
        (EXT + SYS, "cdl:system must come before extension elements"),
        (CONF + EXT + SYS, "cdl:system must come before extension elements"),
        (EXT + IMPORT, "cdl:import must come before extension elements"),
        # documentation of cdl:cdl comes first, once (6; docs/semantics.md)
        (IMPORT + DOC + SYS, "cdl:documentation"),
        (SYS + DOC, "cdl:documentation"),
        (DOC + DOC + SYS, "cdl:documentation"),
        ("<cdl:foo/>", "cdl:foo is not allowed inside cdl:cdl"),
        ("<cdl:expression value-of='1'/>", "cdl:expression is not allowed inside cdl:cdl"),
        ("<cdl:import/>", "cdl:import needs a location attribute"),
        ("<cdl:import location='  '/>", "cdl:import needs a location attribute"),
        ("text" + SYS, "text is not allowed directly inside cdl:cdl"),
        (SYS + "text", "text is not allowed directly inside cdl:cdl"),
        ("<cdl:configuration>text<a/></cdl:configuration>", "text is not allowed inside cdl:configuration"),
        ("<cdl:system><s/>text</cdl:system>", "text is not allowed inside cdl:system"),
        ("<cdl:configuration><cdl:foo/></cdl:configuration>", "cdl:foo cannot be a top level property list"),
        ("<cdl:system><cdl:expression value-of='1'/></cdl:system>", "cdl:expression cannot be a top level property list"),
        # 8: a system contains one or more property lists
        ("<cdl:system/>", "cdl:system"),
        ("<cdl:system><cdl:documentation>only this</cdl:documentation></cdl:system>", "cdl:system"),
    ],
)
def test_invalid_structure(body: str, message: str) -> None:
    with pytest.raises(CdlError) as info:
        load_text(cdl_doc(body))
    error = info.value
    assert error.code == "STRUCTURE"
    assert message in error.message
    assert (error.url, error.line) == ("mem.cdl", 1)


@pytest.mark.parametrize(
    ("lists", "message", "path"),
    [
        ("<s><p><cdl:import location='x.cdl'/></p></s>", "cdl:import is not allowed inside a property list", "/s/p/cdl:import"),
        ("<s><cdl:system/></s>", "cdl:system is not allowed inside a property list", "/s/cdl:system"),
        ("<s><p cdl:foo='1'/></s>", "unknown CDL attribute cdl:foo", "/s/p"),
        ("<s cdl:bar='1'/>", "unknown CDL attribute cdl:bar", "/s"),
        ("<s><p cdl:Lazy='true'/></s>", "unknown CDL attribute cdl:Lazy", "/s/p"),
        ("<s><p cdl:location='x'/></s>", "unknown CDL attribute cdl:location", "/s/p"),
    ],
)
def test_unknown_cdl_elements_and_attributes_in_lists(lists: str, message: str, path: str) -> None:
    with pytest.raises(CdlError) as info:
        load_text(system(lists))
    error = info.value
    assert (error.code, error.path) == ("STRUCTURE", path)
    assert message in error.message


@pytest.mark.parametrize(
    "lists",
    [
        f"<e:S xmlns:e='{ENGINE_NS}'><e:v>1</e:v></e:S>",
        f"<S xmlns:e='{ENGINE_NS}'><p e:ref='5'/></S>",
        f"<S><p xmlns:e='{ENGINE_NS}' e:ext='0'/></S>",
        f"<S><p xmlns:e='{ENGINE_NS}' e:doc='99'>1</p></S>",
    ],
)
def test_engine_private_namespace_is_refused(lists: str) -> None:
    # The engine keeps its working data in attributes of a private namespace;
    # a document using it is refused cleanly instead of corrupting that data.
    with pytest.raises(CdlError) as info:
        resolve_text(system(lists))
    assert (info.value.code, info.value.url) == ("STRUCTURE", "mem.cdl")
    assert f"the namespace {ENGINE_NS} is reserved for the engine" in info.value.message


def test_attributes_of_other_namespaces_are_user_attributes() -> None:
    res = resolve_text(system('<s x:a="1" b="2"><p xmlns:x="urn:x" x:c="3">v</p></s>', 'xmlns:x="urn:x"'))
    assert lists_xml(res) == ['<s b="2" x:a="1"><p x:c="3">v</p></s>']


# ---------------------------------------------------------------------------
# cdl:documentation is no property: dropped, its tail text kept


@pytest.mark.parametrize(
    ("lists", "expected"),
    [
        ("<a><b>x<cdl:documentation>doc<q/></cdl:documentation>y</b></a>", "<a><b>xy</b></a>"),
        ("<a><b><cdl:documentation>doc</cdl:documentation>value</b></a>", "<a><b>value</b></a>"),
        ("<a><b>value<cdl:documentation>doc</cdl:documentation></b></a>", "<a><b>value</b></a>"),
        ("<a><cdl:documentation>doc</cdl:documentation><b>1</b></a>", "<a><b>1</b></a>"),
        ("<a><b>1</b><cdl:documentation>d1</cdl:documentation><c>2</c><cdl:documentation>d2</cdl:documentation></a>", "<a><b>1</b><c>2</c></a>"),
        ("<a><b><c>1</c><cdl:documentation>doc</cdl:documentation></b></a>", "<a><b><c>1</c></b></a>"),
        ("<a><cdl:documentation><nested><deep>x</deep></nested></cdl:documentation></a>", "<a/>"),
        # a documentation child does not make a value: a reference may still be placed
        ("<a><b cdl:ref='/c'><cdl:documentation>why</cdl:documentation></b><c>7</c></a>", "<a><b>7</b><c>7</c></a>"),
    ],
)
def test_documentation_is_dropped(lists: str, expected: str) -> None:
    res = resolve_text(config(lists))
    assert lists_xml(res) == [expected]


def test_documentation_in_every_allowed_place() -> None:
    doc = "<cdl:documentation>text <b>markup</b></cdl:documentation>"
    xml = cdl_doc(
        f"{doc}<cdl:types>{doc}</cdl:types><cdl:configuration>{doc}<a>{doc}<p>1</p></a></cdl:configuration>"
        f"<cdl:system>{doc}<s cdl:extends='a'>{doc}</s></cdl:system>"
    )
    res = resolve_text(xml)
    assert lists_xml(res) == ["<a><p>1</p></a>", "<s><p>1</p></s>"]
    assert b"documentation" not in res.to_bytes()
    assert b"markup" not in res.to_bytes()


def test_documentation_is_not_inherited() -> None:
    res = resolve_text(config("<t><cdl:documentation>t doc</cdl:documentation><x>1</x></t><u cdl:extends='t'/>"))
    assert list_xml(res, "u") == "<u><x>1</x></u>"


# ---------------------------------------------------------------------------
# cdl:lazy is an xsd:boolean


@pytest.mark.parametrize(
    ("value", "lazy"),
    [
        ("true", True),
        ("1", True),
        (" true ", True),
        ("\ttrue\n", True),
        (" 1", True),
        ("false", False),
        ("0", False),
        (" false\n", False),
        ("0 ", False),
    ],
)
def test_lazy_boolean_forms(value: str, lazy: bool) -> None:
    res = resolve_text(system(f'<s><p cdl:lazy="{value}"/></s>'))
    if lazy:
        assert lists_xml(res) == ['<s><p cdl:lazy="true"/></s>']
        assert [(p.path, p.kind) for p in res.pending] == [("/s/p", "lazy-property")]
    else:
        assert lists_xml(res) == ["<s><p/></s>"]
        assert res.pending == []


@pytest.mark.parametrize("value", ["yes", "no", "True", "FALSE", "", " ", "2", "on", "t", "true false", "01"])
def test_lazy_bad_values(value: str) -> None:
    with pytest.raises(CdlError) as info:
        load_text(system(f'<s>\n<p cdl:lazy="{value}"/></s>'))
    error = info.value
    assert (error.code, error.line, error.path) == ("BAD_LAZY", 2, "/s/p")
    assert repr(value) in error.message


def test_lazy_on_a_property_with_a_value() -> None:
    with pytest.raises(CdlError) as info:
        load_text(system('<s>\n\n<p cdl:lazy="true">5</p></s>'))
    assert (info.value.code, info.value.line, info.value.path) == ("LAZY_WITH_VALUE", 3, "/s/p")


# Each distinct set of attributes is parsed once and replayed on the elements
# that repeat it: the checks that look at an element's content must still run
# on every one of them, and attributes that need no rewriting stay as written.


def test_repeated_lazy_mark_is_checked_on_every_element() -> None:
    with pytest.raises(CdlError) as info:
        load_text(system('<s>\n<a cdl:lazy="true"/>\n<b cdl:lazy="true"/>\n<c cdl:lazy="true">5</c></s>'))
    assert (info.value.code, info.value.line, info.value.path) == ("LAZY_WITH_VALUE", 4, "/s/c")


def test_repeated_reference_is_checked_on_every_element() -> None:
    with pytest.raises(CdlError) as info:
        load_text(system('<s><v>1</v>\n<a cdl:ref="../v"/>\n<b cdl:ref="../v">5</b></s>'))
    assert (info.value.code, info.value.line, info.value.path) == ("REF_WITH_CHILDREN", 3, "/s/b")


def test_other_attributes_are_kept_beside_and_without_cdl_ones() -> None:
    # Three of each: the first is parsed, the second remembered, the third replayed.
    sets = ['x:unit="s"', 'x:unit="s" cdl:type="xsd:int"', 'cdl:use="optional"']
    body = "".join(f"<p{i}{j} {attributes}>{i}</p{i}{j}>" for i, attributes in enumerate(sets) for j in range(3))
    res = resolve_text(system(f'<s xmlns:x="urn:x" xmlns:xsd="http://www.w3.org/2001/XMLSchema">{body}</s>'))
    out = res.tree()
    s_el = out.find(f"{{{CDL_NS}}}system/s")
    expected = [
        {"{urn:x}unit": "s"},
        {"{urn:x}unit": "s", f"{{{CDL_NS}}}type": "xsd:int"},
        {f"{{{CDL_NS}}}use": "optional"},
    ]
    assert [(el.tag, dict(el.attrib)) for el in s_el] == [(f"p{i}{j}", expected[i]) for i in range(3) for j in range(3)]


def test_repeated_absolute_references_at_several_depths() -> None:
    # The same cdl:ref text means another relative path at each depth.
    refs = "".join(f"<r{j} cdl:ref='/v'/>" for j in range(3))
    res = resolve_text(system(f"<s><v>1</v>{refs}<g>{refs}<h>{refs}</h></g>{refs}</s>"))
    values = [el.text for el in res.tree().iter() if el.tag.startswith("r")]
    assert values == ["1"] * 12


# A reference alone (a path, or a path with its refroot) takes a short path
# the first times it is met, and paths are parsed from steps met before: the
# same checks must run there.


@pytest.mark.parametrize(
    "refs",
    ['cdl:ref="v"', 'cdl:refroot="t" cdl:ref="/v"', 'cdl:ref="/v" cdl:refroot="t"'],
)
def test_lone_reference_with_a_value_is_refused_the_first_time(refs: str) -> None:
    with pytest.raises(CdlError) as info:
        load_text(system(f"<t><v>1</v></t><s><v>1</v>\n<a {refs}>5</a></s>"))
    assert (info.value.code, info.value.line, info.value.path) == ("REF_WITH_CHILDREN", 2, "/s/a")


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("g/ v", "step ' v' contains white space"),
        ("g/v/", "a step is empty"),
        ("g/q:v", "step 'q:v': prefix 'q' of 'q:v' is not declared"),
        ("g//v", "a step is empty"),
    ],
)
def test_path_with_a_bad_step_after_paths_with_good_ones(bad: str, message: str) -> None:
    good = "".join(f'<a{i} cdl:ref="g/v"/><b{i} cdl:refroot="s" cdl:ref="/g/v"/>' for i in range(3))
    with pytest.raises(CdlError) as info:
        load_text(system(f'<s><g><v>1</v></g>{good}\n<c cdl:ref="{bad}"/></s>'))
    assert (info.value.code, info.value.line, info.value.path) == ("BAD_PATH", 2, "/s/c")
    assert message in str(info.value)


def test_peer_reference_with_a_value_after_its_texts_were_met() -> None:
    # The shortest path's content check: a value is reported by the general parse.
    with pytest.raises(CdlError) as info:
        load_text(system('<s><n>1</n><a cdl:refroot="s" cdl:ref="/n"/><b cdl:refroot="t" cdl:ref="/n"/></s>'
                         '<t><n>2</n>\n<c cdl:refroot="s" cdl:ref="/n">5</c></t>'))
    assert (info.value.code, info.value.line, info.value.path) == ("REF_WITH_CHILDREN", 2, "/t/c")
    with pytest.raises(CdlError) as info:
        load_text(system('<s><n>1</n><a cdl:refroot="s" cdl:ref="/n"/></s>'
                         '<t><n>2</n>\n<c cdl:refroot="s" cdl:ref="/n"><d/></c></t>'))
    assert (info.value.code, info.value.line, info.value.path) == ("REF_WITH_CHILDREN", 2, "/t/c")


def test_refroot_with_an_undeclared_prefix_after_its_path_was_parsed() -> None:
    with pytest.raises(CdlError) as info:
        load_text(system('<s><v>1</v><a cdl:refroot="s" cdl:ref="/v"/>\n<b cdl:refroot="q:s" cdl:ref="/v"/></s>'))
    assert (info.value.code, info.value.line, info.value.path) == ("BAD_QNAME", 2, "/s/b")


def test_paths_sharing_steps_resolve_like_paths_parsed_whole() -> None:
    lists = "".join(
        f'<s{i}><n>{i}</n><p cdl:ref="../s{(i + 1) % 4}/n"/><q cdl:refroot="all" cdl:ref="/s{(i + 2) % 4}/n"/></s{i}>'
        for i in range(4)
    )
    res = resolve_text(system(f"<all>{lists}</all>"))
    assert [(el.tag, el.text) for el in res.tree().iter("p", "q")] == [
        ("p", "1"), ("q", "2"), ("p", "2"), ("q", "3"), ("p", "3"), ("q", "0"), ("p", "0"), ("q", "1")
    ]


def test_documentation_anywhere_in_a_list_is_dropped() -> None:
    # Every cdl:documentation goes, nested ones and those after one that held another.
    res = resolve_text(
        system(
            "<a><cdl:documentation>x</cdl:documentation><c>2</c>"
            "<d>3<cdl:documentation>z<cdl:documentation>w</cdl:documentation></cdl:documentation></d>"
            "<e><cdl:documentation>q</cdl:documentation></e><f><cdl:documentation>q</cdl:documentation></f></a>"
        )
    )
    assert lists_xml(res) == ["<a><c>2</c><d>3</d><e/><f/></a>"]


@pytest.mark.parametrize(
    ("lists", "written", "pending"),
    [
        # Not lazy: the value stands (no LAZY_WITH_VALUE), and the mark goes.
        ('<s><p cdl:lazy="false">5</p></s>', '<s><p>5</p></s>', []),
        # Lazy, holding only white space, which is no value: it waits for deployment.
        ('<s><p cdl:lazy="true">  </p></s>', '<s><p cdl:lazy="true">  </p></s>', [("/s/p", "lazy-property")]),
    ],
)
def test_lazy_with_value_allowed_forms(lists: str, written: str, pending: list[tuple[str, str]]) -> None:
    res = resolve_text(system(lists))
    assert lists_xml(res) == [written]
    assert [(p.path, p.kind) for p in res.pending] == pending


# ---------------------------------------------------------------------------
# cdl:use


@pytest.mark.parametrize(
    ("value", "written"),
    [("required", "required"), ("optional", "optional"), (" required ", "required"), ("optional\n", "optional")],
)
def test_use_values(value: str, written: str) -> None:
    res = resolve_text(system(f'<s><p cdl:use="{value}">1</p></s>'))
    assert lists_xml(res) == [f'<s><p cdl:use="{written}">1</p></s>']


@pytest.mark.parametrize("value", ["Required", "OPTIONAL", "mandatory", "", "true", "required optional"])
def test_use_bad_values(value: str) -> None:
    with pytest.raises(CdlError) as info:
        load_text(system(f'<s>\n<p cdl:use="{value}">1</p></s>'))
    assert (info.value.code, info.value.line, info.value.path) == ("BAD_USE", 2, "/s/p")


# ---------------------------------------------------------------------------
# cdl:ref and cdl:refroot placement


@pytest.mark.parametrize(
    ("lists", "code", "message"),
    [
        ("<s><p cdl:ref='/q'>x</p><q>1</q></s>", "REF_WITH_CHILDREN", "this one has text"),
        ("<s><p cdl:ref='/q'><a/></p><q>1</q></s>", "REF_WITH_CHILDREN", "this one has child elements"),
        ("<s><p cdl:ref='/q'><a/>tail</p><q>1</q></s>", "REF_WITH_CHILDREN", "this one has child elements"),
        ("<s><p cdl:refroot='s' cdl:ref='q'>x</p><q>1</q></s>", "REF_WITH_CHILDREN", "this one has text"),
        (
            "<s><p cdl:ref='/q'><cdl:expression value-of='1'/></p><q>1</q></s>",
            "REF_WITH_CHILDREN",
            "a value reference must be placed on a property without a value",
        ),
        ("<s><p cdl:refroot='s'/><q>1</q></s>", "REFROOT_WITHOUT_REF", "cdl:refroot is given without cdl:ref"),
        ("<s cdl:refroot='t'/>", "REFROOT_WITHOUT_REF", "cdl:refroot is given without cdl:ref"),
        ("<s cdl:ref='/x'/>", "REF_CONTEXT", "'/x' is on a top level list without cdl:refroot"),
        ("<s cdl:ref='x'/>", "REF_CONTEXT", "'x' is on a top level list without cdl:refroot"),
        ("<s><p cdl:ref=''/></s>", "BAD_PATH", "path '' is not valid"),
        ("<s><p cdl:ref='/a/b[1]'/></s>", "BAD_PATH", "path '/a/b[1]' is not valid"),
        ("<s><p cdl:ref='/u:a'/></s>", "BAD_PATH", "prefix 'u' of 'u:a' is not declared"),
        ("<s><p cdl:refroot='u:x' cdl:ref='/a'/></s>", "BAD_QNAME", "prefix 'u' of 'u:x' is not declared"),
        ("<s><p cdl:extends='u:x'/></s>", "BAD_QNAME", "prefix 'u' of 'u:x' is not declared"),
        ("<s><p cdl:extends='1x'/></s>", "BAD_QNAME", "'1x' is not a QName"),
        ("<s><p cdl:type='u:int'>1</p></s>", "BAD_QNAME", "prefix 'u' of 'u:int' is not declared"),
    ],
)
def test_reference_annotation_errors(lists: str, code: str, message: str) -> None:
    with pytest.raises(CdlError) as info:
        load_text(system(lists))
    error = info.value
    assert error.code == code
    assert message in error.message
    assert error.url == "mem.cdl"


def test_ref_on_whitespace_only_property_is_allowed() -> None:
    res = resolve_text(system("<s><p cdl:ref='/q'>  \n </p><q>1</q></s>"))
    assert lists_xml(res) == ["<s><p>1</p><q>1</q></s>"]


# ---------------------------------------------------------------------------
# Refusals: DTDs, entities, non-XML input


DTD_DOCS = [
    "<!DOCTYPE cdl:cdl>\n" + system("<s/>"),
    '<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/hostname">]>\n' + system("<s><v>&e;</v></s>"),
    '<!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
    '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>\n' + system("<s><v>&c;</v></s>"),
    '<!DOCTYPE x SYSTEM "http://127.0.0.1:9/x.dtd">\n' + system("<s/>"),
    '<!DOCTYPE x [<!ENTITY % p SYSTEM "http://127.0.0.1:9/p.dtd"> %p;]>\n' + system("<s/>"),
]


@pytest.mark.parametrize("xml", DTD_DOCS)
def test_dtd_and_entities_are_refused(xml: str) -> None:
    with pytest.raises(CdlError) as info:
        load_text(xml)
    assert info.value.code == "XML_DTD"
    assert info.value.url == "mem.cdl"
    assert "DOCTYPE" in info.value.message


@pytest.mark.parametrize(
    "template",
    [
        '<!DOCTYPE x SYSTEM "{uri}">\n',
        '<!DOCTYPE x PUBLIC "-//x//x" "{uri}">\n',
        '<!DOCTYPE x [<!ENTITY % p SYSTEM "{uri}"> %p;]>\n',
    ],
)
def test_external_dtd_files_are_never_read(tmp_path: Path, template: str) -> None:
    # The DTD file is not XML: had the parser read it, the error would be a
    # syntax error about its content instead of the refusal.
    dtd = tmp_path / "evil.dtd"
    dtd.write_text("this is <<< not a DTD", encoding="utf-8")
    with pytest.raises(CdlError) as info:
        load_text(template.format(uri=dtd.as_uri()) + system("<s/>"))
    assert info.value.code == "XML_DTD"
    assert "DOCTYPE" in info.value.message


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (b"", 1),
        (b"   \n  ", None),
        (b"\x00\xff\xfe garbage \x01", 1),
        (b"\x89PNG\r\n\x1a\n\x00\x00", 1),
        (b"not xml at all", 1),
        (f"<cdl:cdl {CDL_DECL}>\n<cdl:system>\n<s><a><b>1</b></a>\n".encode(), 4),
        (f"<cdl:cdl {CDL_DECL}>\n<cdl:system>\n<s></t>\n</cdl:system></cdl:cdl>".encode(), 3),
        (f"<cdl:cdl {CDL_DECL}>\n<cdl:system><s/></cdl:system></cdl:cdl>\n<second/>".encode(), 3),
        (f"<cdl:cdl {CDL_DECL}>\n<cdl:system><s a='1' a='2'/></cdl:system></cdl:cdl>".encode(), 2),
        (b"<cdl:cdl><cdl:system><s/></cdl:system></cdl:cdl>", 1),  # undeclared prefix
    ],
)
def test_not_well_formed_input(data: bytes, line: int | None) -> None:
    with pytest.raises(CdlError) as info:
        load_text(data)
    error = info.value
    assert error.code == "XML_SYNTAX"
    assert error.message.startswith("XML syntax error: ")
    assert error.url == "mem.cdl"
    if line is not None:
        assert error.line == line


def test_empty_file_names_the_file(write_docs) -> None:
    main = write_docs({"empty.cdl": b""})
    with pytest.raises(CdlError) as info:
        cdl.load(main)
    assert (info.value.code, info.value.url) == ("XML_SYNTAX", str(main))
    assert info.value.render().startswith(f"{main}:1: [XML_SYNTAX] XML syntax error: not an XML document")


def test_utf16_document_is_read() -> None:
    xml = '<?xml version="1.0" encoding="UTF-16"?>' + system("<s><p>\u00e9t\u00e9</p></s>")
    res = resolve_text(xml.encode("utf-16"))
    assert lists_xml(res) == ["<s><p>\u00e9t\u00e9</p></s>"]


# ---------------------------------------------------------------------------
# Line numbers: every load-time error says where


@pytest.mark.parametrize(
    ("lines", "code", "line"),
    [
        (["<cdl:system>", "<s>", "<p cdl:lazy='maybe'/>", "</s>", "</cdl:system>"], "BAD_LAZY", 4),
        (["<cdl:system>", "<s>", "", "", "<p cdl:use='never'>1</p>", "</s>", "</cdl:system>"], "BAD_USE", 6),
        (["<cdl:system>", "<s>", "", "<p cdl:ref='/a//b'/>", "</s>", "</cdl:system>"], "BAD_PATH", 5),
        (["<cdl:system>", "<s>", "<p cdl:refroot='s'/>", "</s>", "</cdl:system>"], "REFROOT_WITHOUT_REF", 4),
        (["<cdl:system>", "<s>", "<p cdl:ref='/q'>x</p>", "</s>", "</cdl:system>"], "REF_WITH_CHILDREN", 4),
        (["<cdl:system>", "<s/>", "</cdl:system>", "<cdl:configuration/>"], "STRUCTURE", 5),
        (["<cdl:system>", "<s>", "<v><cdl:expression value-of='concat('/></v>", "</s>", "</cdl:system>"], "BAD_EXPRESSION", 4),
    ],
)
def test_error_lines(lines: list[str], code: str, line: int) -> None:
    xml = f"<cdl:cdl {CDL_DECL}>\n" + "\n".join(lines) + "\n</cdl:cdl>"
    with pytest.raises(CdlError) as info:
        load_text(xml)
    assert (info.value.code, info.value.line) == (code, line)
    assert info.value.render().startswith(f"mem.cdl:{line}: [{code}] ")


def test_independent_load_errors_are_all_reported() -> None:
    xml = system("<s>\n<p cdl:lazy='x'/>\n<q cdl:use='y'/>\n<r cdl:ref='//'/>\n<t cdl:foo='1'/></s>")
    with pytest.raises(cdl.CdlErrorGroup) as info:
        load_text(xml)
    assert [(e.code, e.line, e.path) for e in info.value.errors] == [
        ("BAD_LAZY", 2, "/s/p"),
        ("BAD_USE", 3, "/s/q"),
        ("BAD_PATH", 4, "/s/r"),
        ("STRUCTURE", 5, "/s/t"),
    ]


# ---------------------------------------------------------------------------
# Deep documents: no RecursionError anywhere


def deep_system(depth: int, leaf: str, extra: str = "") -> str:
    """A system list ``s`` with ``depth`` nested ``n`` elements around ``leaf``; one element per line."""
    opening = "\n".join(["<n>"] * depth)
    closing = "\n".join(["</n>"] * depth)
    return (
        f"<cdl:cdl {CDL_DECL}>\n<cdl:configuration><T><z>from T</z></T></cdl:configuration>\n<cdl:system>\n"
        f"<s><x>top</x>{extra}\n{opening}\n{leaf}\n{closing}\n</s>\n</cdl:system>\n</cdl:cdl>\n"
    )


def test_3000_deep_document_loads_and_resolves() -> None:
    depth = 3000
    leaf = (
        "<v cdl:ref='/x'/><w cdl:extends='T'/><u><cdl:documentation>d</cdl:documentation>kept</u>"
        "<e><cdl:expression value-of='concat($x, \"!\")'><cdl:variable name='x' ref='/x'/></cdl:expression></e>"
    )
    res = resolve_text(deep_system(depth, leaf))
    data = res.to_data(system_only=True)
    node = data["system"]["s"]
    assert node["x"] == "top"
    for _ in range(depth):
        node = node["n"]
    assert node == {"v": "top", "w": {"z": "from T"}, "u": "kept", "e": "top!"}
    xml = res.to_bytes(system_only=True)
    assert xml.count(b"<n>") == depth
    assert b"<v>top</v>" in xml and b"<e>top!</e>" in xml


def test_deep_document_error_line_numbers() -> None:
    depth = 3000
    xml = deep_system(depth, "<v cdl:lazy='nope'/>")
    line = xml.split("\n").index("<v cdl:lazy='nope'/>") + 1
    with pytest.raises(CdlError) as info:
        load_text(xml)
    assert (info.value.code, info.value.line) == ("BAD_LAZY", line)
    assert line > depth


def test_deep_document_with_dtd_is_refused() -> None:
    xml = "<!DOCTYPE x [<!ENTITY e 'boom'>]>\n" + deep_system(3000, "<v>&e;</v>")
    with pytest.raises(CdlError) as info:
        load_text(xml)
    assert info.value.code == "XML_DTD"


def test_deep_document_syntax_error() -> None:
    xml = deep_system(3000, "<v></w>")
    line = xml.split("\n").index("<v></w>") + 1
    with pytest.raises(CdlError) as info:
        load_text(xml)
    assert (info.value.code, info.value.line) == ("XML_SYNTAX", line)


@pytest.mark.parametrize("depth", [3, 3000])
def test_an_invalid_namespace_uri_is_a_syntax_error_however_deep(depth: int) -> None:
    # libxml2 refuses it for a document it parses; lxml's tree builder, which
    # the deep path (expat) feeds, raised ValueError.
    xml = deep_system(depth, '<v xmlns:x="urn:a b"><x:w/></v>')
    with pytest.raises(CdlError) as info:
        load_text(xml)
    assert info.value.code == "XML_SYNTAX" and "a b" in info.value.message


@pytest.mark.parametrize(("depth", "limit"), [(150, 100), (3000, 2000)])
def test_depth_limit(depth: int, limit: int) -> None:
    with pytest.raises(CdlError) as info:
        load_text(deep_system(depth, "<v/>"), limits=cdl.Limits(max_depth=limit))
    assert info.value.code == "LIMIT_EXCEEDED"
    assert f"depth limit of {limit} (max_depth)" in info.value.message


def test_size_limit(write_docs) -> None:
    xml = system("<s><p>" + "x" * 2000 + "</p></s>")
    with pytest.raises(CdlError) as info:
        load_text(xml, limits=cdl.Limits(max_bytes=1000))
    assert info.value.code == "LIMIT_EXCEEDED"
    assert "(max_bytes)" in info.value.message
    main = write_docs({"big.cdl": xml})
    with pytest.raises(CdlError) as info:
        cdl.load(main, limits=cdl.Limits(max_bytes=1000))
    assert (info.value.code, info.value.url) == ("LIMIT_EXCEEDED", str(main))


def test_source_document_is_read_once_and_not_kept_open(write_docs) -> None:
    main = write_docs({"main.cdl": system("<s><p>1</p></s>")})
    document = cdl.load(main)
    Path(main).write_text(system("<s><p>2</p></s>"), encoding="utf-8")
    assert lists_xml(document.resolve()) == ["<s><p>1</p></s>"]


@pytest.mark.parametrize(
    ("lists", "message"),
    [
        (
            "<s><p cdl:extends='u:x'/></s>",
            "cdl:extends: prefix 'u' of 'u:x' is not declared: add xmlns:u=\"...\" to this element or an enclosing one",
        ),
        (
            "<s><p cdl:refroot='u:x' cdl:ref='/a'/></s>",
            "refroot: prefix 'u' of 'u:x' is not declared: add xmlns:u=\"...\" to this element or an enclosing one",
        ),
        (
            "<s><v><cdl:expression value-of='$a'><cdl:variable name='a' refroot='u:T' ref='/x'/></cdl:expression></v></s>",
            "refroot: prefix 'u' of 'u:T' is not declared: add xmlns:u=\"...\" to this element or an enclosing one",
        ),
        # declared on another element: the message names the namespace that declaration binds
        (
            "<s><a xmlns:u='urn:u'/><p cdl:type='u:int'>1</p></s>",
            "cdl:type: prefix 'u' of 'u:int' is not declared:"
            ' add xmlns:u="urn:u" (as declared elsewhere in this document) to this element or an enclosing one',
        ),
        # no QName at all: no declaration can help
        ("<s><p cdl:extends='1x'/></s>", "cdl:extends: '1x' is not a QName"),
    ],
)
def test_bad_qname_says_which_declaration_is_missing(lists: str, message: str) -> None:
    with pytest.raises(CdlError) as info:
        load_text(system(lists))
    assert (info.value.code, info.value.message) == ("BAD_QNAME", message)
