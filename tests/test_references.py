"""cdl.resolution.references: value references (7.3.2), resolved in dependency order
(7.3.3), cycles, and the errors that name the path and where it was written."""

from __future__ import annotations

import pytest

import cdl
from cdl import CdlError
from conftest import CDL_DECL, cdl_doc, config, list_xml, resolve_text, system

XSD = 'xmlns:xsd="http://www.w3.org/2001/XMLSchema"'


def imp(location: str) -> str:
    return f'<cdl:import location="{location}"/>'


def lines_doc(lines: list[str], attrs: str = "", part: str = "configuration") -> str:
    """A configuration (or system) whose lists are ``lines``, one per line from line 3."""
    return f"<cdl:cdl {CDL_DECL} {attrs}>\n<cdl:{part}>\n" + "\n".join(lines) + f"\n</cdl:{part}></cdl:cdl>"


# ---------------------------------------------------------------------------
# 7.3.5 and friends


@pytest.mark.parametrize(
    ("lists", "expected"),
    [
        # 7.3.5, first example
        (
            "<a><b>test</b><c>100</c><d>200</d><e><f>abc</f><g>def</g></e></a>"
            "<aa><b cdl:refroot='a' cdl:ref='/b'/><c>300</c><d cdl:ref='/c'/>"
            "<e><f cdl:refroot='a' cdl:ref='/e/g'/><g cdl:ref='/e/f'/></e></aa>",
            {"aa": "<aa><b>test</b><c>300</c><d>300</d><e><f>def</f><g>def</g></e></aa>"},
        ),
        # 7.3.5, a reference to several nodes
        (
            "<a><portList><port>80</port><port>8080</port></portList></a>"
            "<b><portList><port>8070</port><port cdl:refroot='a' cdl:ref='/portList/port'/></portList></b>",
            {"b": "<b><portList><port>8070</port><port>80</port><port>8080</port></portList></b>"},
        ),
        # 7.3.6.2-like value copy of a whole subtree (children and text)
        (
            "<a><v><x>1</x><y>2</y></v></a><b><w cdl:refroot='a' cdl:ref='v'/></b>",
            {"b": "<b><w><x>1</x><y>2</y></w></b>"},
        ),
        # the target's own attributes are not copied (4.3 copies n's attributes only)
        (
            "<a><v k='target'>1</v></a><b><w cdl:refroot='a' cdl:ref='v'/></b>",
            {"b": "<b><w>1</w></b>"},
        ),
        # a reference to an empty property gives an empty property
        ("<a><v/><w cdl:ref='/v'/></a>", {"a": "<a><v/><w/></a>"}),
        # leaf text is copied exactly, spaces included
        ("<a><v>  spaced  </v><w cdl:ref='/v'/></a>", {"a": "<a><v>  spaced  </v><w>  spaced  </w></a>"}),
    ],
)
def test_reference_examples(lists: str, expected: dict[str, str]) -> None:
    res = resolve_text(config(lists))
    assert {name: list_xml(res, name) for name in expected} == expected


def test_multi_node_target_copies_the_referring_nodes_attributes() -> None:
    res = resolve_text(
        config(
            "<a><portList><port k='z'>80</port><port>8080</port><other>o</other><port><n>9</n></port></portList></a>"
            "<b><portList><port>8070</port>"
            "<port x='1' cdl:type='xsd:int' cdl:use='required' cdl:refroot='a' cdl:ref='/portList/port'/>"
            "<after/></portList></b>",
            XSD,
        )
    )
    assert list_xml(res, "b") == (
        "<b><portList><port>8070</port>"
        '<port cdl:type="xsd:int" cdl:use="required" x="1">80</port>'
        '<port cdl:type="xsd:int" cdl:use="required" x="1">8080</port>'
        '<port cdl:type="xsd:int" cdl:use="required" x="1"><n>9</n></port>'
        "<after/></portList></b>"
    )


def test_multi_node_target_through_multi_node_steps() -> None:
    res = resolve_text(
        config("<a><g><p>1</p><p>2</p></g><g><p>3</p></g></a><b><all cdl:refroot='a' cdl:ref='g/p'/></b>")
    )
    assert list_xml(res, "b") == "<b><all>1</all><all>2</all><all>3</all></b>"


def test_multi_node_copies_keep_the_referring_line_for_errors() -> None:
    # every copy of a required reference is checked; the error points at the reference
    xml = (
        f"<cdl:cdl {CDL_DECL}>\n<cdl:configuration><a><p/><p>x</p></a></cdl:configuration>\n<cdl:system>\n"
        "<s>\n<r cdl:use='required' cdl:refroot='a' cdl:ref='p'/>\n</s></cdl:system></cdl:cdl>"
    )
    with pytest.raises(CdlError) as info:
        resolve_text(xml)
    assert [(e.code, e.line, e.path) for e in info.value.errors] == [("REQUIRED_MISSING", 5, "/s/r[1]")]


# ---------------------------------------------------------------------------
# Dependency order (7.3.3)


@pytest.mark.parametrize(
    ("lists", "expected"),
    [
        # the target contains another reference: that one first
        ("<S><a cdl:ref='/b'/><b><c cdl:ref='/d'/></b><d>7</d></S>", "<S><a><c>7</c></a><b><c>7</c></b><d>7</d></S>"),
        # a chain written backwards
        ("<S><a cdl:ref='/b'/><b cdl:ref='/c'/><c cdl:ref='/d'/><d>1</d></S>", "<S><a>1</a><b>1</b><c>1</c><d>1</d></S>"),
        # the path passes through an unresolved reference
        (
            "<S><x cdl:ref='/y/z'/><y cdl:refroot='T' cdl:ref='/w'/></S>",
            "<S><x>9</x><y><z>9</z></y></S>",
        ),
        # ... and through a reference whose own target contains one
        (
            "<S><x cdl:ref='/y/v/z/q'/><y cdl:refroot='T' cdl:ref='/.'/></S>",
            "<S><x>q</x><y><w><z>9</z></w><v><z><q>q</q></z></v></y></S>",
        ),
        # the target contains an expression
        (
            "<S><a cdl:ref='/b'/><b><cdl:expression value-of='$x + 1'><cdl:variable name='x' ref='/d'/></cdl:expression></b><d>7</d></S>",
            "<S><a>8</a><b>8</b><d>7</d></S>",
        ),
        # a multi-node target whose nodes hold references
        (
            "<S><all cdl:ref='/g/p'/><g><p cdl:ref='/one'/><p>2</p><p cdl:ref='/one'/></g><one>1</one></S>",
            "<S><all>1</all><all>2</all><all>1</all><g><p>1</p><p>2</p><p>1</p></g><one>1</one></S>",
        ),
        # a reference to an ancestor's sibling inside a referenced subtree
        ("<S><a><b cdl:ref='../c'/></a><c>3</c><d cdl:ref='/a'/></S>", "<S><a><b>3</b></a><c>3</c><d><b>3</b></d></S>"),
    ],
)
def test_dependency_order(lists: str, expected: str) -> None:
    res = resolve_text(config(lists + "<T><w><z>9</z></w><v><z><q>q</q></z></v></T>"))
    assert list_xml(res, "S") == expected


def test_path_through_a_lazy_property_is_pending() -> None:
    res = resolve_text(system("<S><p cdl:lazy='true'/><x cdl:ref='/p/q'/></S>"))
    assert list_xml(res, "S") == '<S><p cdl:lazy="true"/><x cdl:ref="./p/q"/></S>'
    assert [(p.path, p.kind, p.waits_on) for p in res.pending] == [
        ("/S/p", "lazy-property", ()),
        ("/S/x", "reference", ("/S/p",)),
    ]
    # once p has a value (text), the path p/q selects nothing (7.5.2.1: an error)
    with pytest.raises(CdlError) as info:
        res.supply({"S/p": "v"})
    assert (info.value.code, info.value.path) == ("REF_NOT_FOUND", "/S/x")


def test_path_through_a_lazy_property_after_supply() -> None:
    res = resolve_text(system("<S><p cdl:lazy='true'/><x cdl:ref='/p'/></S>"))
    assert list_xml(res.supply({"S/p": "v"}), "S") == "<S><p>v</p><x>v</x></S>"


# ---------------------------------------------------------------------------
# Cycles: one error listing every property with file:line


@pytest.mark.parametrize(
    ("lines", "members"),
    [
        (["<S>", "<p cdl:ref='/q'/>", "<q cdl:ref='/p'/>", "</S>"], ["/S/p (mem.cdl:4)", "/S/q (mem.cdl:5)"]),
        # through containment: a's target b contains c, which refers to a
        (["<S>", "<a cdl:ref='/b'/>", "<b><c cdl:ref='/a'/></b>", "</S>"], ["/S/a (mem.cdl:4)", "/S/b/c (mem.cdl:5)"]),
        # a reference to its own ancestor
        (["<S>", "<a>", "<b cdl:ref='/a'/>", "</a>", "</S>"], ["/S/a/b (mem.cdl:5)"]),
        # a reference to its own parent
        (["<S>", "<a>", "<b cdl:ref='.'/>", "</a>", "</S>"], ["/S/a/b (mem.cdl:5)"]),
        # across three lists
        (
            ["<S>", "<a cdl:refroot='T' cdl:ref='/x'/>", "</S>", "<T>", "<x cdl:refroot='U' cdl:ref='/y'/>", "</T>", "<U>", "<y cdl:refroot='S' cdl:ref='/a'/>", "</U>"],
            ["/S/a (mem.cdl:4)", "/T/x (mem.cdl:7)", "/U/y (mem.cdl:10)"],
        ),
        # a cycle through an expression
        (
            ["<S>", "<a><cdl:expression value-of='$b'><cdl:variable name='b' ref='/b'/></cdl:expression></a>", "<b cdl:ref='/a'/>", "</S>"],
            ["/S/a/cdl:expression (mem.cdl:4)", "/S/b (mem.cdl:5)"],
        ),
    ],
)
def test_reference_cycles(lines: list[str], members: list[str]) -> None:
    with pytest.raises(CdlError) as info:
        resolve_text(lines_doc(lines))
    errors = info.value.errors
    assert [e.code for e in errors] == ["REF_CYCLE"]
    message = errors[0].message
    if len(members) == 1:  # one property is no "each other": the message says what it does
        lead = "the reference refers to itself: its path selects it or a property holding it: "
    else:
        lead = "references depend on each other in a cycle: "
    assert message.startswith(lead)
    listed = message.removeprefix(lead).split(", ")
    assert sorted(listed) == sorted(members)
    assert errors[0].url == "mem.cdl"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("<s cdl:ref='s'/>", "the reference refers to itself: its path selects it or a property holding it: /S/s (mem.cdl:4)"),
        (
            "<x><cdl:expression value-of='$v'><cdl:variable name='v' ref='x'/></cdl:expression></x>",
            "the expression refers to itself: a variable selects the property holding it: /S/x/cdl:expression (mem.cdl:4)",
        ),
    ],
)
def test_a_property_referring_to_itself_is_told_so(line: str, message: str) -> None:
    with pytest.raises(CdlError) as info:
        resolve_text(lines_doc(["<S>", line, "</S>"]))
    assert (info.value.code, info.value.message) == ("REF_CYCLE", message)


_HINT = "{s} is a top level list, and a path starts inside its own list: to start at {s}, write {p}refroot=\"{s}\" {p}ref=\"{rest}\""


@pytest.mark.parametrize(
    ("line", "hint"),
    [
        ("<p cdl:ref='/T/port'/>", _HINT.format(s="T", p="cdl:", rest="port")),
        ("<q><p cdl:ref='/T'/></q>", _HINT.format(s="T", p="cdl:", rest=".")),
        ("<p cdl:ref='./T/port/x'/>", _HINT.format(s="T", p="cdl:", rest="port/x")),
        ("<p><cdl:expression value-of='$v'><cdl:variable name='v' ref='/T/port'/></cdl:expression></p>", _HINT.format(s="T", p="", rest="port")),
        # not the first named step, or not a top level list: no hint
        ("<p cdl:ref='/b/T'/>", None),
        ("<p cdl:ref='/U/port'/>", None),
        ("<p cdl:refroot='T' cdl:ref='/T/port'/>", None),
    ],
)
def test_a_path_naming_a_top_level_list_first_suggests_refroot(line: str, hint: str | None) -> None:
    with pytest.raises(CdlError) as info:
        resolve_text(lines_doc(["<S>", "<b/>", line, "</S>", "<T><port>80</port></T>"], part="system"))
    assert info.value.code == "REF_NOT_FOUND"
    if hint is None:
        assert "refroot=" not in info.value.message
    else:
        assert info.value.message.endswith("; " + hint)


def test_cycle_and_independent_error_are_both_reported() -> None:
    with pytest.raises(cdl.CdlErrorGroup) as info:
        resolve_text(lines_doc(["<S>", "<p cdl:ref='/q'/>", "<q cdl:ref='/p'/>", "<r cdl:ref='/nothing'/>", "<ok cdl:ref='/z'/>", "<z>1</z>", "</S>"], part="system"))
    assert sorted((e.code, e.line) for e in info.value.errors) == [("REF_CYCLE", 4), ("REF_NOT_FOUND", 6)]


def test_things_waiting_on_a_cycle_are_not_reported_as_more_errors() -> None:
    with pytest.raises(CdlError) as info:
        resolve_text(lines_doc(["<S>", "<p cdl:ref='/q'/>", "<q cdl:ref='/p'/>", "<w cdl:ref='/p'/>", "</S>"]))
    assert [e.code for e in info.value.errors] == ["REF_CYCLE"]


# ---------------------------------------------------------------------------
# Errors naming the path


@pytest.mark.parametrize(
    ("line", "code", "message"),
    [
        ("<p cdl:ref='/nope'/>", "REF_NOT_FOUND", "path '/nope' (read as './nope') selects nothing: no nope at step 1"),
        ("<p cdl:ref='/b/c'/>", "REF_NOT_FOUND", "path '/b/c' (read as './b/c') selects nothing: no c at step 2"),
        ("<q><p cdl:ref='/b/c'/></q>", "REF_NOT_FOUND", "path '/b/c' (read as '../b/c') selects nothing: no c at step 3"),
        ("<p cdl:ref='x:b' xmlns:x='urn:x'/>", "REF_NOT_FOUND", "path 'x:b' (read as './x:b') selects nothing: no x:b at step 1; did you mean b?"),
        ("<p cdl:refroot='T' cdl:ref='/b'/>", "REF_NOT_FOUND", "path '/b' (read as './b') selects nothing: no b at step 1"),
        (
            "<p cdl:ref='../x'/>",
            "REF_ABOVE_TOP",
            "path '../x' (read as '../x') climbs above its top level list:"
            " it starts at /S (the property's parent), 0 levels below its top level list, so it may climb at most 0 steps ('..')"
            '; to start at another top level list, name it: cdl:refroot="LIST" cdl:ref="PATH"',
        ),
        (
            "<q><p cdl:ref='/../x'/></q>",
            "REF_ABOVE_TOP",
            "path '/../x' (read as '../../x') climbs above its top level list:"
            " it starts at /S/q (the property's parent), 1 level below its top level list, so it may climb at most 1 step ('..')"
            '; to start at another top level list, name it: cdl:refroot="LIST" cdl:ref="PATH"',
        ),
        (
            "<p cdl:refroot='T' cdl:ref='..'/>",
            "REF_ABOVE_TOP",
            "path '..' (read as '..') climbs above its top level list: it starts at its cdl:refroot list /T,"
            " so it may climb at most 0 steps ('..') from there",
        ),
        ("<p cdl:refroot='Nope' cdl:ref='/b'/>", "UNKNOWN_REFROOT", "path names refroot 'Nope', which is no top level list"),
    ],
)
def test_reference_errors_name_the_path(line: str, code: str, message: str) -> None:
    xml = lines_doc(["<S>", "<b/>", line, "</S>", "<T/>"], part="system")
    with pytest.raises(CdlError) as info:
        resolve_text(xml)
    error = info.value
    assert (error.code, error.url, error.line, error.message) == (code, "mem.cdl", 5, message)
    assert error.path in ("/S/p", "/S/q/p")
    assert error.render() == f"mem.cdl:5: [{code}] {message} (at {error.path})"


def test_error_in_an_inherited_reference_points_at_the_template(write_docs, tmp_path) -> None:
    main = write_docs(
        {
            "main.cdl": cdl_doc(imp("lib.cdl") + "<cdl:system>\n<s cdl:extends='T'/></cdl:system>"),
            "lib.cdl": cdl_doc("<cdl:configuration>\n<T>\n<p cdl:ref='/missing'/></T></cdl:configuration>"),
        }
    )
    with pytest.raises(CdlError) as info:
        cdl.load(main).resolve()
    error = info.value
    assert (error.code, error.url, error.line, error.path) == ("REF_NOT_FOUND", str(tmp_path / "lib.cdl"), 3, "/s/p")


@pytest.mark.parametrize("copies", [1, 3])
def test_values_copied_by_reference_keep_their_document(write_docs, tmp_path, copies: int) -> None:
    # Checked by typed validation, which reports where a bad value was written:
    # in the imported document, however many times it was copied.
    xsd = 'xmlns:xsd="http://www.w3.org/2001/XMLSchema"'
    holders = "".join(f"<c{i} cdl:refroot='Lib' cdl:ref='/conf'/>" for i in range(copies))
    main = write_docs(
        {
            "main.cdl": cdl_doc(imp("lib.cdl") + f"<cdl:system><s>{holders}</s></cdl:system>"),
            "lib.cdl": cdl_doc(
                f"<cdl:configuration>\n<Lib><conf>\n<port {xsd} cdl:type='xsd:positiveInteger'>-3</port>"
                "</conf></Lib></cdl:configuration>"
            ),
        }
    )
    with pytest.raises(CdlError) as info:
        cdl.load(main).resolve(validate=True)
    errors = getattr(info.value, "errors", [info.value])
    assert [(e.code, e.url, e.line, e.path) for e in errors] == [
        ("TYPE_INVALID", str(tmp_path / "lib.cdl"), 3, f"/s/c{i}/port") for i in range(copies)
    ]


def test_several_reference_errors_are_all_reported() -> None:
    with pytest.raises(cdl.CdlErrorGroup) as info:
        resolve_text(lines_doc(["<S>", "<a cdl:ref='/x'/>", "<b cdl:ref='/y'/>", "<c cdl:ref='..'/>", "</S>"], part="system"))
    assert [(e.code, e.line, e.path) for e in info.value.errors] == [
        ("REF_NOT_FOUND", 4, "/S/a"),
        ("REF_NOT_FOUND", 5, "/S/b"),
        ("REF_ABOVE_TOP", 6, "/S/c"),
    ]


# ---------------------------------------------------------------------------
# Across documents and at scale


def test_refroot_into_another_documents_list(write_docs) -> None:
    main = write_docs(
        {
            "main.cdl": cdl_doc(
                imp("lib.cdl") + "<cdl:system><S><x cdl:refroot='t:T' cdl:ref='/p'/><y cdl:refroot='t:T' cdl:ref='p/q'/></S></cdl:system>",
                'xmlns:t="urn:t"',
            ),
            "lib.cdl": config("<T><p><q>1</q></p></T>", 'targetNamespace="urn:t"'),
        }
    )
    res = cdl.load(main).resolve()
    assert list_xml(res, "S") == "<S><x><q>1</q></x><y>1</y></S>"


def test_refroot_into_a_template_whose_target_holds_a_reference(write_docs) -> None:
    # the imported template's own reference is resolved because the main document depends on it
    main = write_docs(
        {
            "main.cdl": cdl_doc(imp("lib.cdl") + "<cdl:system><S><x cdl:refroot='T' cdl:ref='/p'/></S></cdl:system>"),
            "lib.cdl": config("<T><p><q cdl:ref='/r'/></p><r>deep</r></T>"),
        }
    )
    assert list_xml(cdl.load(main).resolve(), "S") == "<S><x><q>deep</q></x></S>"


def test_5000_long_reference_chain() -> None:
    n = 5000
    # written so that the first reference met needs every other one first
    lists = "<S>" + "".join(f"<v{i} cdl:ref='/v{i - 1}'/>" for i in range(n - 1, 0, -1)) + "<v0>x</v0></S>"
    data = resolve_text(config(lists)).to_data()["configuration"]["S"]
    assert len(data) == n
    assert set(data.values()) == {"x"}


def test_5000_long_reference_chain_across_lists() -> None:
    n = 5000
    lists = "".join(f"<L{i}><v cdl:refroot='L{i - 1}' cdl:ref='/v'/></L{i}>" for i in range(n - 1, 0, -1)) + "<L0><v>x</v></L0>"
    data = resolve_text(config(lists)).to_data()["configuration"]
    assert data[f"L{n - 1}"] == {"v": "x"}
    assert all(value == {"v": "x"} for value in data.values())


def test_5000_long_reference_cycle() -> None:
    n = 5000
    lists = "<S>" + "".join(f"<v{i} cdl:ref='/v{(i + 1) % n}'/>" for i in range(n)) + "</S>"
    with pytest.raises(CdlError) as info:
        resolve_text(config(lists))
    assert [e.code for e in info.value.errors] == ["REF_CYCLE"]
    assert "/S/v0 (mem.cdl:1)" in info.value.message and "/S/v4999 (mem.cdl:1)" in info.value.message


def test_the_refroot_hint_finds_a_list_named_in_the_target_namespace() -> None:
    with pytest.raises(CdlError) as info:
        resolve_text(lines_doc(["<S>", "<p cdl:ref='/T/port'/>", "</S>", "<T><port>80</port></T>"], "targetNamespace='urn:t'", part="system"))
    assert info.value.message.endswith('write cdl:refroot="T" cdl:ref="port"')


@pytest.mark.parametrize(
    ("line", "hint"),
    [
        # two levels down, a path may climb one step; the next named step is a top level list
        (
            "<g><p cdl:ref='../../T/port'/></g>",
            ": it starts at /S/g (the property's parent), 1 level below its top level list, so it may climb at most 1 step ('..')"
            '; T is a top level list, and a path starts inside its own list: to start at T, write cdl:refroot="T" cdl:ref="port"',
        ),
        # no top level list is named: the general way out
        (
            "<p cdl:ref='../nope'/>",
            ": it starts at /S (the property's parent), 0 levels below its top level list, so it may climb at most 0 steps ('..')"
            '; to start at another top level list, name it: cdl:refroot="LIST" cdl:ref="PATH"',
        ),
    ],
)
def test_ref_above_top_says_how_far_a_path_may_climb(line: str, hint: str) -> None:
    with pytest.raises(CdlError) as info:
        resolve_text(lines_doc(["<S>", line, "</S>", "<T><port>80</port></T>"], part="system"))
    error = info.value
    assert (error.code, error.line) == ("REF_ABOVE_TOP", 4)
    assert error.message.endswith("climbs above its top level list" + hint)


def test_ref_above_top_in_a_variable_suggests_unqualified_refroot() -> None:
    body = "<v><cdl:expression value-of='$p'><cdl:variable name='p' ref='../T/port'/></cdl:expression></v>"
    with pytest.raises(CdlError) as info:
        resolve_text(lines_doc(["<S>", body, "</S>", "<T><port>80</port></T>"], part="system"))
    assert info.value.code == "REF_ABOVE_TOP"
    assert info.value.message.endswith('to start at T, write refroot="T" ref="port"')
