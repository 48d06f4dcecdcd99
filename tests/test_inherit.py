"""cdl.resolution.inherit: prototype resolution (7.2) with the special cases of 7.3.4."""

from __future__ import annotations

import itertools

import pytest

import cdl
from cdl import CdlError
from conftest import CDL_DECL, cdl_doc, config, list_xml, lists_xml, load_text, resolve_text, system


def imp(location: str) -> str:
    return f'<cdl:import location="{location}"/>'


# ---------------------------------------------------------------------------
# Inheritance of elements and attributes: the spec's examples as a table


@pytest.mark.parametrize(
    ("lists", "name", "expected"),
    [
        # 7.2.2.1, first example: prototype order, then the list's own new elements
        (
            "<list1><a>1</a><b>2</b></list1><list2 cdl:extends='list1'><c>3</c><a>4</a></list2>",
            "list2",
            "<list2><a>4</a><b>2</b><c>3</c></list2>",
        ),
        # 7.2.2.1, second example: duplicates in n' are totally replaced
        (
            "<list1><a>1</a><a>2</a><a>3</a></list1><list2 cdl:extends='list1'><a>4</a><a>5</a></list2>",
            "list2",
            "<list2><a>4</a><a>5</a></list2>",
        ),
        # the reverse: one own element replaces several inherited ones, keeping the place of the first
        (
            "<list1><x>0</x><a>1</a><b>b</b><a>2</a></list1><list2 cdl:extends='list1'><a>9</a></list2>",
            "list2",
            "<list2><x>0</x><a>9</a><b>b</b></list2>",
        ),
        # several own elements of one name are placed together where the prototype's first one was
        (
            "<list1><a>1</a><b>2</b></list1><list2 cdl:extends='list1'><b>x</b><c>c</c><b>y</b></list2>",
            "list2",
            "<list2><a>1</a><b>x</b><b>y</b><c>c</c></list2>",
        ),
        # an empty list inherits everything; the prototype is a complete copy
        ("<list1><a>1</a><b><c>2</c></b></list1><list2 cdl:extends='list1'/>", "list2", "<list2><a>1</a><b><c>2</c></b></list2>"),
        # an empty own element overrides (its value is "no value")
        ("<list1><a>1</a></list1><list2 cdl:extends='list1'><a/></list2>", "list2", "<list2><a/></list2>"),
        # only immediate children are inherited: values are replaced whole (7.2.4)
        (
            "<AppPlatform><WebServer><hostname>localhost</hostname><port>80</port></WebServer>"
            "<ApplicationServer><hostname>localhost</hostname><port>8080</port></ApplicationServer>"
            "<DatabaseServer><hostname>localhost</hostname><port>6000</port></DatabaseServer></AppPlatform>"
            "<MyApp cdl:extends='AppPlatform'><WebServer><hostname>www.example.com</hostname></WebServer>"
            "<ApplicationServer/></MyApp>",
            "MyApp",
            "<MyApp><WebServer><hostname>www.example.com</hostname></WebServer><ApplicationServer/>"
            "<DatabaseServer><hostname>localhost</hostname><port>6000</port></DatabaseServer></MyApp>",
        ),
        # 7.2.4: hierarchical inheritance with prototype references placed hierarchically
        (
            "<WebServer><hostname>localhost</hostname><port>80</port></WebServer>"
            "<AppPlatform><WebServer cdl:extends='WebServer'/>"
            "<ApplicationServer><hostname>localhost</hostname><port>8080</port></ApplicationServer>"
            "<DatabaseServer><hostname>localhost</hostname><port>6000</port></DatabaseServer></AppPlatform>"
            "<MyApp cdl:extends='AppPlatform'><WebServer cdl:extends='WebServer'>"
            "<hostname>www.example.com</hostname></WebServer></MyApp>",
            "MyApp",
            "<MyApp><WebServer><hostname>www.example.com</hostname><port>80</port></WebServer>"
            "<ApplicationServer><hostname>localhost</hostname><port>8080</port></ApplicationServer>"
            "<DatabaseServer><hostname>localhost</hostname><port>6000</port></DatabaseServer></MyApp>",
        ),
        # 7.2.4: WebServer/Tomcat in one document
        (
            "<WebServer><hostname/><port>80</port></WebServer>"
            "<Tomcat cdl:extends='WebServer'><port>8080</port><maxThreads>200</maxThreads></Tomcat>",
            "Tomcat",
            "<Tomcat><hostname/><port>8080</port><maxThreads>200</maxThreads></Tomcat>",
        ),
        # 7.2.1: cdl:extends on a list and on its descendants at the same time
        (
            "<aT><b>ab</b><e>0</e><f>af</f></aT><bT><c>0</c><g>bg</g></bT><dT><h>dh</h></dT>"
            "<a cdl:extends='aT'><b cdl:extends='bT'><c>100</c><d cdl:extends='dT'/></b><e>200</e></a>",
            "a",
            "<a><b><c>100</c><g>bg</g><d><h>dh</h></d></b><e>200</e><f>af</f></a>",
        ),
        # a property's own cdl:extends is resolved before it meets the outer prototype's property
        (
            "<P><x><q>P</q></x></P><Q><x2>Q</x2></Q>"
            "<L cdl:extends='P'><x cdl:extends='Q'/></L>",
            "L",
            "<L><x><x2>Q</x2></x></L>",
        ),
        # text values are inherited by a list without a value
        ("<T>text</T><L cdl:extends='T'/>", "L", "<L>text</L>"),
        ("<T>text</T><L cdl:extends='T'>own</L>", "L", "<L>own</L>"),
        ("<T>text</T><L cdl:extends='T'><a/></L>", "L", "<L><a/></L>"),
    ],
)
def test_inheritance_of_elements(lists: str, name: str, expected: str) -> None:
    assert list_xml(resolve_text(config(lists)), name) == expected


@pytest.mark.parametrize(
    ("lists", "name", "expected"),
    [
        # 7.2.2.2: attributes of n' are inserted unless n has one of the same name
        ("<l1 x='1' y='2'/><l2 cdl:extends='l1' y='3'/>", "l2", '<l2 x="1" y="3"/>'),
        # inherited onto each same-named child, e_i
        (
            "<l1><a k='1' j='2'>v</a></l1><l2 cdl:extends='l1'><a j='3'>w</a><a>z</a></l2>",
            "l2",
            '<l2><a j="3" k="1">w</a><a j="2" k="1">z</a></l2>',
        ),
        # attributes in other namespaces and the schema annotations are inherited like any other
        (
            "<l1 xmlns:u='urn:u' u:a='1'><p cdl:type='xsd:int' cdl:use='required'>1</p></l1>"
            "<l2 cdl:extends='l1'><p>2</p></l2>",
            "l2",
            '<l2 u:a="1"><p cdl:type="xsd:int" cdl:use="required">2</p></l2>',
        ),
        # a derived list's own annotation wins
        (
            "<l1><p cdl:use='required'/></l1><l2 cdl:extends='l1'><p cdl:use='optional'>1</p></l2>",
            "l2",
            '<l2><p cdl:use="optional">1</p></l2>',
        ),
        # attributes are never inherited by descendants of overridden properties (values are replaced whole)
        (
            "<l1><p><q k='1'>1</q></p></l1><l2 cdl:extends='l1'><p><q>2</q></p></l2>",
            "l2",
            "<l2><p><q>2</q></p></l2>",
        ),
    ],
)
def test_inheritance_of_attributes(lists: str, name: str, expected: str) -> None:
    xml = config(lists, 'xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:u="urn:u"')
    assert list_xml(resolve_text(xml), name) == expected


# ---------------------------------------------------------------------------
# 7.3.4: references and inheritance


SPEC_7_3_4 = [
    # absolute references are translated before prototype resolution: d is 300, not 200
    (
        "<a><b>100</b><c><d cdl:ref='/b'/></c></a><a2><b>200</b><a3 cdl:extends='a'><b>300</b></a3></a2>",
        {
            "a": "<a><b>100</b><c><d>100</d></c></a>",
            "a2": "<a2><b>200</b><a3><b>300</b><c><d>300</d></c></a3></a2>",
        },
    ),
    # case 1: a pair is overridden by a pair, even when refroot is missing
    (
        "<a1><c>1</c><d>2</d></a1><a2><b cdl:refroot='a1' cdl:ref='/c'/><c>3</c><d>4</d></a2>"
        "<a3 cdl:extends='a2'><b cdl:ref='/d'/></a3>",
        {"a2": "<a2><b>1</b><c>3</c><d>4</d></a2>", "a3": "<a3><b>4</b><c>3</c><d>4</d></a3>"},
    ),
    # case 2: a reference is overridden by a value
    (
        "<a><b cdl:ref='/c'/><c>10</c></a><a1 cdl:extends='a'><b>20</b></a1>",
        {"a": "<a><b>10</b><c>10</c></a>", "a1": "<a1><b>20</b><c>10</c></a1>"},
    ),
    # case 2 with text only
    (
        "<a><b cdl:refroot='z' cdl:ref='/v'/></a><z><v>1</v></z><a1 cdl:extends='a'><b>own</b></a1>",
        {"a1": "<a1><b>own</b></a1>"},
    ),
    # case 3 (with the errata's cdl:extends): a value is overridden by a reference
    (
        "<a><b>10</b><c>20</c></a><a1 cdl:extends='a'><b cdl:ref='/c'/></a1>",
        {"a": "<a><b>10</b><c>20</c></a>", "a1": "<a1><b>20</b><c>20</c></a1>"},
    ),
    # case 3 on a node carrying both cdl:extends and cdl:ref: copied children are removed
    (
        "<T><p>1</p></T><L><y>5</y><x cdl:extends='T' cdl:ref='/y'/></L>",
        {"L": "<L><y>5</y><x>5</x></L>"},
    ),
    (
        "<T><p>1</p></T><L><y><q>5</q></y><x cdl:extends='T' cdl:ref='/y'/></L>",
        {"L": "<L><y><q>5</q></y><x><q>5</q></x></L>"},
    ),
    # the top level case (with the errata's refroot="b" ref="/a")
    (
        "<a cdl:refroot='b' cdl:ref='/a'/><b><a><c>10</c><d>30</d></a></b>"
        "<a1 cdl:extends='a'><c>20</c></a1><a2 cdl:extends='a'/>",
        {
            "a": "<a><c>10</c><d>30</d></a>",
            "a1": "<a1><c>20</c></a1>",
            "a2": "<a2><c>10</c><d>30</d></a2>",
        },
    ),
    # 7.6 parameterization
    (
        "<server><hostname>localhost</hostname><port>4567</port></server>"
        "<serverPair><host1>localhost</host1><host2>localhost</host2>"
        "<server1 cdl:extends='server'><hostname cdl:ref='/host1'/></server1>"
        "<server2 cdl:extends='server'><hostname cdl:ref='/host2'/></server2></serverPair>"
        "<myPair cdl:extends='serverPair'><host1>one.example.com</host1><host2>two.example.com</host2></myPair>",
        {
            "myPair": "<myPair><host1>one.example.com</host1><host2>two.example.com</host2>"
            "<server1><hostname>one.example.com</hostname><port>4567</port></server1>"
            "<server2><hostname>two.example.com</hostname><port>4567</port></server2></myPair>",
        },
    ),
]


@pytest.mark.parametrize(("lists", "expected"), SPEC_7_3_4)
def test_references_and_inheritance(lists: str, expected: dict[str, str]) -> None:
    res = resolve_text(config(lists))
    assert {name: list_xml(res, name) for name in expected} == expected


def test_inherited_pending_reference_keeps_its_translated_path() -> None:
    res = resolve_text(
        system(
            "<s cdl:extends='a'><b>2</b></s>",
            configuration="<a><b>1</b><c><d cdl:ref='/b' cdl:lazy='true'/></c></a>",
        )
    )
    assert list_xml(res, "s") == '<s><b>2</b><c><d cdl:lazy="true" cdl:ref="../b"/></c></s>'
    assert list_xml(res.supply(release=["s/c/d"]), "s") == "<s><b>2</b><c><d>2</d></c></s>"


# ---------------------------------------------------------------------------
# cdl:lazy belongs to how a value is given


@pytest.mark.parametrize(
    ("own", "expected", "pending"),
    [
        ("<p>5</p>", "<p>5</p>", []),  # own value: concrete
        ("<p cdl:ref='/x'/>", "<p>7</p>", []),  # own reference: not lazy
        ("<p/>", '<p cdl:lazy="true"/>', ["/S/p"]),  # no value of its own: still lazy
        ("", '<p cdl:lazy="true"/>', ["/S/p"]),  # inherited element
        ("<p cdl:lazy='false'/>", "<p/>", []),  # own cdl:lazy wins
        ("<p attr='1'/>", '<p attr="1" cdl:lazy="true"/>', ["/S/p"]),
    ],
)
def test_lazy_property_inheritance(own: str, expected: str, pending: list[str]) -> None:
    res = resolve_text(system(f"<S cdl:extends='T'>{own}<x>7</x></S>", configuration="<T><p cdl:lazy='true'/></T>"))
    assert list_xml(res, "S") == f"<S>{expected}<x>7</x></S>"
    assert [p.path for p in res.pending if p.path.startswith("/S")] == pending


@pytest.mark.parametrize(
    ("own", "expected", "kind"),
    [
        ("<p>5</p>", "<p>5</p>", None),
        ("<p cdl:ref='/y'/>", "<p>8</p>", None),
        ("<p/>", '<p cdl:lazy="true" cdl:ref="./x"/>', "lazy-reference"),
    ],
)
def test_lazy_reference_inheritance(own: str, expected: str, kind: str | None) -> None:
    res = resolve_text(
        system(f"<S cdl:extends='T'>{own}</S>", configuration="<T><p cdl:ref='/x' cdl:lazy='true'/><x>7</x><y>8</y></T>")
    )
    assert list_xml(res, "S") == f"<S>{expected}<x>7</x><y>8</y></S>"
    assert [p.kind for p in res.pending if p.path == "/S/p"] == ([kind] if kind else [])


# ---------------------------------------------------------------------------
# Resolution order: prototypes first, completely, in any document order


CHAIN = {
    "A": "<A><a>1</a><shared>A</shared></A>",
    "B": "<B cdl:extends='A'><b>2</b><shared>B</shared></B>",
    "C": "<C cdl:extends='B'><c>3</c></C>",
    "D": "<D><inner cdl:extends='C'><c>4</c></inner></D>",
}
EXPECTED_CHAIN = {
    "A": "<A><a>1</a><shared>A</shared></A>",
    "B": "<B><a>1</a><shared>B</shared><b>2</b></B>",
    "C": "<C><a>1</a><shared>B</shared><b>2</b><c>3</c></C>",
    "D": "<D><inner><a>1</a><shared>B</shared><b>2</b><c>4</c></inner></D>",
}


@pytest.mark.parametrize("order", list(itertools.permutations("ABCD")), ids="".join)
def test_chains_in_any_document_order(order: tuple[str, ...]) -> None:
    res = resolve_text(config("".join(CHAIN[name] for name in order)))
    assert lists_xml(res) == [EXPECTED_CHAIN[name] for name in order]


def test_prototype_with_descendant_extends_is_complete_before_use() -> None:
    # C extends B before B's own descendant is resolved in document order;
    # cdl:extends is never inherited as a plain attribute.
    res = resolve_text(config("<C cdl:extends='B'/><B><w cdl:extends='W'><y>y</y></w></B><W><z>1</z></W>"))
    assert lists_xml(res) == ["<C><w><z>1</z><y>y</y></w></C>", "<B><w><z>1</z><y>y</y></w></B>", "<W><z>1</z></W>"]
    assert b"extends" not in res.to_bytes()


def test_chain_across_documents(write_docs) -> None:
    main = write_docs(
        {
            "main.cdl": cdl_doc(imp("lib.cdl") + "<cdl:configuration><A><a>main</a></A></cdl:configuration><cdl:system><s cdl:extends='B'/></cdl:system>"),
            "lib.cdl": config("<B cdl:extends='A'><b>lib</b></B>"),
        }
    )
    assert list_xml(cdl.load(main).resolve(), "s") == "<s><a>main</a><b>lib</b></s>"


def test_prototypes_are_never_modified() -> None:
    xml = config(
        "<T a='1'><b>1</b><c cdl:ref='/b'/><d cdl:lazy='true'/></T>"
        "<S cdl:extends='T' a='2'><b>2</b><new>n</new><d>x</d></S>"
        "<U cdl:extends='S'><b>3</b></U>"
    )
    document = load_text(xml)
    first = document.resolve()
    second = document.resolve()
    expected = [
        '<T a="1"><b>1</b><c>1</c><d cdl:lazy="true"/></T>',
        '<S a="2"><b>2</b><c>2</c><d>x</d><new>n</new></S>',
        '<U a="2"><b>3</b><c>3</c><d>x</d><new>n</new></U>',
    ]
    assert lists_xml(first) == expected
    assert lists_xml(second) == expected
    assert first.to_bytes() == second.to_bytes()


def test_prototype_shared_by_many_lists_is_copied_for_each() -> None:
    res = resolve_text(config("<T><v><w>1</w></v></T><A cdl:extends='T'/><B cdl:extends='T'/>"))
    a, b = [el for el in res.tree()[0] if el.tag in ("A", "B")]
    assert a.find("v") is not b.find("v")
    assert lists_xml(res) == ["<T><v><w>1</w></v></T>", "<A><v><w>1</w></v></A>", "<B><v><w>1</w></v></B>"]


@pytest.mark.parametrize(
    ("own", "merged"),
    [
        ("", "<a>1</a><b x=\"1\">2</b><c><d>3</d></c><e>4</e>"),
        ("<b>9</b>", "<a>1</a><b x=\"1\">9</b><c><d>3</d></c><e>4</e>"),
        # copies in two runs between own children
        ("<a>0</a><c>7</c>", "<a>0</a><b x=\"1\">2</b><c>7</c><e>4</e>"),
        ("<z>5</z>", "<a>1</a><b x=\"1\">2</b><c><d>3</d></c><e>4</e><z>5</z>"),
        # own children out of the prototype's order
        ("<e>8</e><a>0</a>", "<a>0</a><b x=\"1\">2</b><c><d>3</d></c><e>8</e>"),
    ],
)
def test_lists_sharing_a_merge_plan_merge_alike(own: str, merged: str) -> None:
    # The first list of a plan copies child by child, the later ones from
    # the plan's template: all must come out the same.
    names = [f"L{i}" for i in range(4)]
    res = resolve_text(config("<T><a>1</a><b x='1'>2</b><c><d>3</d></c><e>4</e></T>" + "".join(f"<{n} cdl:extends='T'>{own}</{n}>" for n in names)))
    assert lists_xml(res)[1:] == [f"<{n}>{merged}</{n}>" for n in names]


_MERGE_CASES = [
    # copies between own children, an own child the prototype lacks, own children out of order
    "<T><a>1</a><b x='1'>2</b><c><d>3</d></c><e>4</e></T>"
    + "".join(f"<L{i} cdl:extends='T'>{own}</L{i}>" for i, own in enumerate(["", "<b>9</b>", "<a>0</a><c>7</c>", "<z>5</z>", "<e>8</e><a>0</a>"] * 2)),
    # attributes on own children, a value-giving one (cdl:lazy), text inherited, whitespace dropped
    "<T y='2'><a w='1'>1</a><p cdl:lazy='true'/><q cdl:lazy='true'/></T><t>text</t>"
    + "".join(f"<M{i} cdl:extends='T'><a>0</a><p>5</p><q v='3'/></M{i}><N{i} cdl:extends='t'> </N{i}>" for i in range(3)),
    # a reference on the extending list, nested cdl:extends, a chain of prototypes
    "<T><a>1</a><b><c cdl:extends='U'/></b></T><U><u>u</u></U><V cdl:extends='T'><d>2</d></V>"
    + "".join(f"<W{i} cdl:extends='V'><a>{i}</a></W{i}><R{i} cdl:extends='T' cdl:ref='/V/a' cdl:refroot='V'/>" for i in range(3)),
]


@pytest.mark.parametrize("lists", _MERGE_CASES)
def test_merge_plans_agree_with_the_general_merge(lists: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The merge plans, their templates and the shortcut for complete
    # prototypes (fast paths) against the general merge (CDL_NO_FAST_PATHS).
    monkeypatch.delenv("CDL_NO_FAST_PATHS", raising=False)
    fast = resolve_text(config(lists)).to_bytes()
    monkeypatch.setenv("CDL_NO_FAST_PATHS", "1")
    assert resolve_text(config(lists)).to_bytes() == fast


@pytest.mark.parametrize("limits", [cdl.Limits(max_elements=8), cdl.Limits(max_depth=6)])
def test_merge_plans_meet_limits_where_the_general_merge_does(limits: cdl.Limits, monkeypatch: pytest.MonkeyPatch) -> None:
    # Copies over the budget are refused at the same list with or without
    # plans; a plan whose copies may nest too deep declines, and the general
    # merge checks each copy.
    lists = "<T><a><b><c/></b></a></T>" + "".join(f"<L{i} cdl:extends='T'/>" for i in range(5)) + "<M><d cdl:extends='T'/></M>"
    outcomes = []
    for switch in ("0", "1"):
        monkeypatch.setenv("CDL_NO_FAST_PATHS", switch)
        with pytest.raises(CdlError) as info:
            resolve_text(config(lists), limits=limits)
        outcomes.append((info.value.code, info.value.line, info.value.path, info.value.message))
    assert outcomes[0] == outcomes[1]


# ---------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize(
    ("lines", "chain", "line", "path"),
    [
        (["<x cdl:extends='y'/>", "<y cdl:extends='x'/>"], "/x (mem.cdl:3) extends y; /y (mem.cdl:4) extends x", 3, "/x"),
        (["<x cdl:extends='x'/>"], "/x (mem.cdl:3) extends x", 3, "/x"),
        (
            ["<x cdl:extends='y'/>", "<y cdl:extends='z'/>", "<z cdl:extends='x'/>"],
            "/x (mem.cdl:3) extends y; /y (mem.cdl:4) extends z; /z (mem.cdl:5) extends x",
            3,
            "/x",
        ),
        # a list containing a descendant that extends the list itself
        (["<x>", "<a>", "<b cdl:extends='x'/>", "</a>", "</x>"], "/x/a/b (mem.cdl:5) extends x", 5, "/x/a/b"),
        # through a descendant of another list
        (
            ["<x cdl:extends='y'/>", "<y>", "<c cdl:extends='x'/>", "</y>"],
            "/x (mem.cdl:3) extends y; /y/c (mem.cdl:5) extends x",
            3,
            "/x",
        ),
    ],
)
def test_extends_cycles_name_the_chain(lines: list[str], chain: str, line: int, path: str) -> None:
    xml = f"<cdl:cdl {CDL_DECL}>\n<cdl:configuration>\n" + "\n".join(lines) + "\n</cdl:configuration></cdl:cdl>"
    with pytest.raises(CdlError) as info:
        resolve_text(xml)
    error = info.value
    assert (error.code, error.line, error.path) == ("EXTENDS_CYCLE", line, path)
    assert error.message == f"prototype references form a cycle: {chain}"


def test_cycle_across_documents_names_each_file(write_docs, tmp_path) -> None:
    main = write_docs(
        {
            "main.cdl": cdl_doc(imp("lib.cdl") + "\n<cdl:configuration><x cdl:extends='y'/></cdl:configuration>"),
            "lib.cdl": cdl_doc("<cdl:configuration>\n<y cdl:extends='x'/></cdl:configuration>"),
        }
    )
    with pytest.raises(CdlError) as info:
        cdl.load(main).resolve()
    assert info.value.code == "EXTENDS_CYCLE"
    assert info.value.message == (
        f"prototype references form a cycle: /x ({main}:2) extends y; /y ({tmp_path / 'lib.cdl'}:2) extends x"
    )


def test_unknown_prototypes_are_all_reported() -> None:
    xml = f"<cdl:cdl {CDL_DECL}>\n<cdl:configuration>\n<a cdl:extends='n1'/>\n<b>\n<c cdl:extends='n2'/></b>\n<d cdl:extends='n3'/>\n</cdl:configuration></cdl:cdl>"
    with pytest.raises(cdl.CdlErrorGroup) as info:
        resolve_text(xml)
    assert [(e.code, e.line, e.path, e.message) for e in info.value.errors] == [
        ("UNKNOWN_PROTOTYPE", 3, "/a", "cdl:extends names 'n1', which is no top level list"),
        ("UNKNOWN_PROTOTYPE", 5, "/b/c", "cdl:extends names 'n2', which is no top level list"),
        ("UNKNOWN_PROTOTYPE", 6, "/d", "cdl:extends names 'n3', which is no top level list"),
    ]


def test_exponential_inheritance_hits_the_element_limit() -> None:
    lists = "<L0><v>1</v><w>2</w></L0>" + "".join(f"<L{i}><a cdl:extends='L{i - 1}'/><b cdl:extends='L{i - 1}'/></L{i}>" for i in range(1, 40))
    with pytest.raises(CdlError) as info:
        resolve_text(config(lists), limits=cdl.Limits(max_elements=100_000))
    assert info.value.code == "LIMIT_EXCEEDED"
    assert "(max_elements)" in info.value.message


# ---------------------------------------------------------------------------
# Scale: long chains never recurse


def test_1000_long_extends_chain() -> None:
    n = 1000
    # written newest first, so every list needs the whole chain below it resolved first
    lists = "".join(f"<L{i} cdl:extends='L{i - 1}'><p{i}>{i}</p{i}></L{i}>" for i in range(n, 0, -1)) + "<L0><base>0</base></L0>"
    # The work, counted: L{i} receives i inherited properties, each copied
    # once, and max_elements counts every element inheritance produces, so
    # exactly that many fit (a list resolved again, or a chain copied more
    # than once, would not). The time bound is in benchmarks/bounds.py.
    copies = n * (n + 1) // 2
    res = resolve_text(config(lists), limits=cdl.Limits(max_elements=copies))
    data = res.to_data()["configuration"]
    assert list(data["L1000"]) == ["base"] + [f"p{i}" for i in range(1, n + 1)]
    assert data["L1000"]["base"] == "0" and data["L1000"]["p1000"] == "1000"
    assert data["L1"] == {"base": "0", "p1": "1"}


def test_1000_long_nested_extends_chain() -> None:
    # each list's child extends the previous list: nesting grows with the chain
    n = 1000
    lists = "<L0><v>0</v></L0>" + "".join(f"<L{i}><c cdl:extends='L{i - 1}'/></L{i}>" for i in range(1, n + 1))
    res = resolve_text(config(lists))
    node = res.to_data()["configuration"][f"L{n}"]
    for _ in range(n):
        node = node["c"]
    assert node == {"v": "0"}
