"""cdl.resolution.laziness: lazy properties and references (7.5), deploy-time rounds,
required properties (7.4.2) and the pending report."""

from __future__ import annotations

from pathlib import Path

import pytest

import cdl
from cdl import CdlError, Pending, Round
from conftest import CDL_DECL, list_xml, lists_xml, load_text, resolve_text, system

# 7.5.2.2
SERVERS = system(
    "<server1><port cdl:lazy='true'/></server1>"
    "<server2><destination cdl:refroot='server1' cdl:ref='/port'/></server2>"
)
# 7.5.3.2
DEPLOYMENT_TIME = system(
    "<App><deploymentTime cdl:refroot='sys:systemProperties' cdl:ref='/time' cdl:lazy='true'/></App>",
    'xmlns:sys="urn:sys"',
    configuration="<sys:systemProperties><time>2004-08-01T10:00:00Z</time></sys:systemProperties>",
)


# ---------------------------------------------------------------------------
# The spec's flows


def test_lazy_property_flow_7_5_2_2() -> None:
    document = load_text(SERVERS)
    first = document.resolve()
    assert lists_xml(first) == [
        '<server1><port cdl:lazy="true"/></server1>',
        '<server2><destination cdl:ref="./port" cdl:refroot="server1"/></server2>',
    ]
    assert first.pending == [
        Pending("/server1/port", "lazy-property", waiting=("/server2/destination",)),
        Pending("/server2/destination", "reference", waits_on=("/server1/port",)),
    ]
    deployed = first.supply({"server1/port": "8001"})
    assert lists_xml(deployed) == ["<server1><port>8001</port></server1>", "<server2><destination>8001</destination></server2>"]
    assert deployed.pending == []
    # `first` is unchanged, and the same result comes through resolve() directly
    assert first.pending[0].path == "/server1/port"
    assert lists_xml(document.resolve({"server1/port": "8001"})) == lists_xml(deployed)
    assert lists_xml(document.resolve(rounds=[{"set": {"server1/port": "8001"}}])) == lists_xml(deployed)
    assert lists_xml(document.resolve(rounds=[Round({"server1/port": "8001"})])) == lists_xml(deployed)


def test_lazy_reference_flow_7_5_3_2() -> None:
    document = load_text(DEPLOYMENT_TIME)
    first = document.resolve()
    assert list_xml(first, "App") == '<App><deploymentTime cdl:lazy="true" cdl:ref="./time" cdl:refroot="sys:systemProperties"/></App>'
    assert first.pending == [Pending("/App/deploymentTime", "lazy-reference")]
    released = first.supply(release=["App/deploymentTime"])
    assert list_xml(released, "App") == "<App><deploymentTime>2004-08-01T10:00:00Z</deploymentTime></App>"
    assert released.pending == []
    # a value supplied for a lazy reference replaces it
    given = first.supply({"App/deploymentTime": "2024-01-01T00:00:00Z"})
    assert list_xml(given, "App") == "<App><deploymentTime>2024-01-01T00:00:00Z</deploymentTime></App>"


def test_rounds_apply_in_order() -> None:
    xml = system(
        "<S><a cdl:lazy='true'/><b cdl:lazy='true'/><ra cdl:ref='/a'/><rb cdl:ref='/b' cdl:lazy='true'/>"
        "<sum><cdl:expression value-of='$a + $b'><cdl:variable name='a' ref='/a'/><cdl:variable name='b' ref='/rb'/></cdl:expression></sum></S>"
    )
    document = load_text(xml)
    r0 = document.resolve()
    assert [(p.path, p.kind) for p in r0.pending] == [
        ("/S/a", "lazy-property"),
        ("/S/b", "lazy-property"),
        ("/S/ra", "reference"),
        ("/S/rb", "lazy-reference"),
        ("/S/sum", "expression"),
    ]
    r1 = r0.supply({"S/a": "1"})
    assert [(p.path, p.kind) for p in r1.pending] == [("/S/b", "lazy-property"), ("/S/rb", "lazy-reference"), ("/S/sum", "expression")]
    assert list_xml(r1, "S").startswith("<S><a>1</a><b cdl:lazy=\"true\"/><ra>1</ra>")
    r2 = r1.supply({"S/b": "2"})
    assert [(p.path, p.kind) for p in r2.pending] == [("/S/rb", "lazy-reference"), ("/S/sum", "expression")]
    r3 = r2.supply(release=["S/rb"])
    assert r3.pending == []
    assert list_xml(r3, "S") == "<S><a>1</a><b>2</b><ra>1</ra><rb>2</rb><sum>3</sum></S>"
    assert [r.set for r in r3.rounds] == [{"S/a": "1"}, {"S/b": "2"}, {}]
    # the same in one call
    r3b = document.resolve(rounds=[{"set": {"S/a": "1"}}, {"set": {"S/b": "2"}}, {"release": ["S/rb"]}])
    assert list_xml(r3b, "S") == list_xml(r3, "S")
    # releasing before b has a value cannot resolve
    with pytest.raises(CdlError) as info:
        document.resolve(rounds=[{"set": {"S/a": "1"}, "release": ["S/rb"]}])
    assert (info.value.code, info.value.path) == ("LAZY_UNRESOLVED", "/S/rb")
    assert info.value.message == "released lazy reference still cannot be resolved: /S/rb waits for /S/b"


def test_set_and_release_in_one_round() -> None:
    xml = system("<S><a cdl:lazy='true'/><r cdl:ref='/a' cdl:lazy='true'/></S>")
    res = resolve_text(xml, {"S/a": "v"}, release=["S/r"])
    assert lists_xml(res) == ["<S><a>v</a><r>v</r></S>"]


def test_set_applies_to_every_selected_property() -> None:
    res = resolve_text(system("<S><p cdl:lazy='true'/><p cdl:lazy='true'/><q cdl:ref='/p'/></S>"), {"S/p": "x"})
    assert lists_xml(res) == ["<S><p>x</p><p>x</p><q>x</q><q>x</q></S>"]


def test_paths_use_the_main_documents_prefixes() -> None:
    xml = system(
        "<t:S><t:p cdl:lazy='true'/></t:S><D><p cdl:lazy='true'/></D>",
        'xmlns:t="urn:t"',
    )
    res = resolve_text(xml, {"t:S/t:p": "1", "/D/p": "2"})
    assert lists_xml(res) == ["<t:S><t:p>1</t:p></t:S>", "<D><p>2</p></D>"]


def test_paths_with_a_default_namespace() -> None:
    xml = system("<S><p cdl:lazy='true'/></S>", 'xmlns="urn:d"')
    res = resolve_text(xml)
    assert [p.path for p in res.pending] == ["/S/p"]
    assert [el.text for el in resolve_text(xml, {"S/p": "1"}).tree().iter("{urn:d}p")] == ["1"]


def test_lazy_expression_release_and_set() -> None:
    xml = system(
        "<S><e><cdl:expression value-of='$a * 2'><cdl:variable name='a' ref='/a' cdl:lazy='true'/></cdl:expression></e><a>4</a></S>"
    )
    res = resolve_text(xml)
    assert res.pending == [Pending("/S/e", "lazy-expression")]
    assert list_xml(res, "S") == (
        '<S><e><cdl:expression value-of="$a * 2"><cdl:variable cdl:lazy="true" name="a" ref="./a"/></cdl:expression></e><a>4</a></S>'
    )
    assert list_xml(res.supply(release=["S/e"]), "S") == "<S><e>8</e><a>4</a></S>"
    assert list_xml(res.supply({"S/e": "given"}), "S") == "<S><e>given</e><a>4</a></S>"


def test_unqualified_lazy_on_a_variable_means_the_same() -> None:
    xml = system("<S><e><cdl:expression value-of='$a'><cdl:variable name='a' ref='/a' lazy='true'/></cdl:expression></e><a>4</a></S>")
    res = resolve_text(xml)
    assert res.pending == [Pending("/S/e", "lazy-expression")]
    assert list_xml(res.supply(release=["S/e"]), "S") == "<S><e>4</e><a>4</a></S>"


# ---------------------------------------------------------------------------
# Errors of deploy-time values


@pytest.mark.parametrize(
    ("values", "release", "code", "message", "path"),
    [
        ({"server2/destination": "1"}, (), "SET_NOT_LAZY", "set 'server2/destination': /server2/destination is not lazy", "/server2/destination"),
        ({"server2": "1"}, (), "SET_NOT_LAZY", "set 'server2': /server2 is not lazy", "/server2"),
        ({"server1/nope": "1"}, (), "SET_NOT_FOUND", "set 'server1/nope': no nope at step 2", None),
        ({"nope/port": "1"}, (), "SET_NOT_FOUND", "set 'nope/port': no top level list 'nope'", None),
        ({"server1/port/deeper": "1"}, (), "SET_NOT_FOUND", "set 'server1/port/deeper': no deeper at step 3", None),
        ({"server1//port": "1"}, (), "BAD_SET", "set 'server1//port': write LIST/child/... with one name per step", None),
        ({"": "1"}, (), "BAD_SET", "set '': write LIST/child/... with one name per step", None),
        ({"server1/port/": "1"}, (), "BAD_SET", "write LIST/child/... with one name per step", None),
        ({"u:server1/port": "1"}, (), "BAD_SET", "set 'u:server1/port': prefix 'u' of 'u:server1' is not declared", None),
        ({"server1/port[0]": "1"}, (), "BAD_SET", "set 'server1/port[0]': 'port[0]': [k] counts same-named siblings from 1", None),
        ({"server1/port[2]": "1"}, (), "SET_NOT_FOUND", "set 'server1/port[2]': no port[2] at step 2", None),
        ({"server1[1]/port": "1"}, (), "BAD_SET", "a top level list's name is unique, so it takes no [k]", None),
        ({}, ("server2/destination",), "SET_NOT_LAZY", "release 'server2/destination': /server2/destination cannot be released: it is not a lazy reference", "/server2/destination"),
        ({}, ("server1/port",), "SET_NOT_LAZY", "release 'server1/port': /server1/port cannot be released: a lazy property needs a value (use set)", "/server1/port"),
        ({}, ("server1/nope",), "SET_NOT_FOUND", "release 'server1/nope': no nope at step 2", None),
        # a path through a reference still unresolved cannot name anything inside it
        ({"server2/destination/x": "1"}, (), "SET_NOT_FOUND", "/server2/destination is still an unresolved reference", None),
    ],
)
def test_deploy_value_errors(values: dict, release: tuple, code: str, message: str, path: str | None) -> None:
    with pytest.raises(CdlError) as info:
        resolve_text(SERVERS, values, release=release)
    error = info.value
    assert error.code == code
    assert message in error.message
    assert error.path == path
    assert error.url == "mem.cdl"


def test_deploy_value_errors_are_all_reported() -> None:
    with pytest.raises(cdl.CdlErrorGroup) as info:
        resolve_text(SERVERS, {"server2/destination": "1", "nope/x": "2"}, release=["server1/port"])
    assert [e.code for e in info.value.errors] == ["SET_NOT_LAZY", "SET_NOT_FOUND", "SET_NOT_LAZY"]


def test_round_with_unknown_keys() -> None:
    with pytest.raises(CdlError) as info:
        load_text(SERVERS).resolve(rounds=[{"values": {"server1/port": "1"}}])
    assert info.value.code == "BAD_SET"
    assert "unknown keys ['values']" in info.value.message


def test_released_reference_that_still_cannot_resolve() -> None:
    xml = f"<cdl:cdl {CDL_DECL}><cdl:system>\n<S>\n<p cdl:lazy='true'/>\n<r cdl:ref='/p' cdl:lazy='true'/></S></cdl:system></cdl:cdl>"
    with pytest.raises(CdlError) as info:
        resolve_text(xml, release=["S/r"])
    error = info.value
    assert (error.code, error.line, error.path) == ("LAZY_UNRESOLVED", 4, "/S/r")
    assert error.message == "released lazy reference still cannot be resolved: /S/r waits for /S/p"


def test_released_reference_whose_target_is_missing() -> None:
    xml = system("<S><r cdl:ref='/nothing' cdl:lazy='true'/></S>")
    assert resolve_text(xml).pending == [Pending("/S/r", "lazy-reference")]
    with pytest.raises(CdlError) as info:
        resolve_text(xml, release=["S/r"])
    assert (info.value.code, info.value.path) == ("REF_NOT_FOUND", "/S/r")


def test_value_supplied_then_a_waiting_reference_fails() -> None:
    # 7.5.2.1: it is an error if the reference could not be resolved at the time
    xml = system("<S><p cdl:lazy='true'/><r cdl:ref='/p/q'/></S>")
    with pytest.raises(CdlError) as info:
        resolve_text(xml, {"S/p": "text"})
    assert (info.value.code, info.value.path) == ("REF_NOT_FOUND", "/S/r")


# ---------------------------------------------------------------------------
# Required properties (7.4.2)


@pytest.mark.parametrize(
    ("lists", "values", "missing"),
    [
        ("<S><p cdl:use='required'/></S>", {}, ["/S/p"]),
        ("<S><p cdl:use='required'>  </p></S>", {}, ["/S/p"]),
        ("<S><p cdl:use='required'/><q cdl:use='required'/><r cdl:use='optional'/></S>", {}, ["/S/p", "/S/q"]),
        ("<S><g><p cdl:use='required'/></g></S>", {}, ["/S/g/p"]),
        # a reference resolving to an empty value leaves it empty
        ("<S><p cdl:use='required' cdl:ref='/q'/><q/></S>", {}, ["/S/p"]),
        # a required lazy property given an empty value
        ("<S><p cdl:use='required' cdl:lazy='true'/></S>", {"S/p": ""}, ["/S/p"]),
        ("<S><p cdl:use='required' cdl:lazy='true'/></S>", {"S/p": "   "}, ["/S/p"]),
        # required inherited from a template and not given a value
        ("<S cdl:extends='T'/>", {}, ["/S/p"]),
        ("<S cdl:extends='T'><p>given</p></S>", {}, []),
        ("<S><p cdl:use='required'>1</p></S>", {}, []),
        ("<S><p cdl:use='required'><x/></p></S>", {}, []),
        ("<S><p cdl:use='required' cdl:ref='/q'/><q>1</q></S>", {}, []),
        ("<S><p cdl:use='required' cdl:lazy='true'/></S>", {"S/p": "1"}, []),
        ("<S><p cdl:use='optional'/></S>", {}, []),
    ],
)
def test_required_properties(lists: str, values: dict, missing: list[str]) -> None:
    xml = system(lists, configuration="<T><p cdl:use='required'/></T>")
    if not missing:
        assert resolve_text(xml, values).pending == []
        return
    with pytest.raises(CdlError) as info:
        resolve_text(xml, values)
    errors = info.value.errors
    assert [(e.code, e.path) for e in errors] == [("REQUIRED_MISSING", p) for p in missing]
    # one inherited from the template also says where (test_required_missing_points_at_the_inheriting_list)
    assert all(e.message.startswith('this property is marked cdl:use="required" but has no value') for e in errors)


def test_required_missing_names_file_and_line() -> None:
    xml = f"<cdl:cdl {CDL_DECL}><cdl:system>\n<S>\n\n<port cdl:use='required'/></S></cdl:system></cdl:cdl>"
    with pytest.raises(CdlError) as info:
        resolve_text(xml)
    assert info.value.render() == 'mem.cdl:4: [REQUIRED_MISSING] this property is marked cdl:use="required" but has no value (at /S/port)'


@pytest.mark.parametrize(
    ("lists", "pending"),
    [
        # lazy required: pending, not an error
        ("<S><p cdl:use='required' cdl:lazy='true'/></S>", [("/S/p", "lazy-property")]),
        # a required reference waiting for a lazy value
        ("<S><p cdl:use='required' cdl:ref='/q'/><q cdl:lazy='true'/></S>", [("/S/p", "reference"), ("/S/q", "lazy-property")]),
        # a required lazy reference
        ("<S><p cdl:use='required' cdl:ref='/q' cdl:lazy='true'/><q>1</q></S>", [("/S/p", "lazy-reference")]),
    ],
)
def test_required_but_pending_is_no_error(lists: str, pending: list[tuple[str, str]]) -> None:
    res = resolve_text(system(lists))
    assert [(p.path, p.kind) for p in res.pending] == pending


def test_required_check_ignores_configuration() -> None:
    xml = system("<S><ok>1</ok></S>", configuration="<T><p cdl:use='required'/><g><q cdl:use='required'/></g></T>")
    res = resolve_text(xml)
    assert list_xml(res, "T") == '<T><p cdl:use="required"/><g><q cdl:use="required"/></g></T>'


def test_required_check_ignores_imported_templates(write_docs) -> None:
    main = write_docs(
        {
            "main.cdl": system("<S><ok>1</ok></S>").replace("<cdl:system>", '<cdl:import location="t.cdl"/><cdl:system>'),
            "t.cdl": system("<T><p cdl:use='required'/></T>").replace("cdl:system", "cdl:configuration"),
        }
    )
    res = cdl.load(main).resolve()
    assert (res.pending, lists_xml(res)) == ([], ["<S><ok>1</ok></S>"])


def test_required_is_checked_after_the_last_round() -> None:
    xml = system("<S><p cdl:use='required' cdl:lazy='true'/><q cdl:use='required' cdl:lazy='true'/></S>")
    document = load_text(xml)
    r1 = document.resolve({"S/p": "1"})
    assert [p.path for p in r1.pending] == ["/S/q"]
    with pytest.raises(CdlError) as info:
        r1.supply({"S/q": ""})
    assert [(e.code, e.path) for e in info.value.errors] == [("REQUIRED_MISSING", "/S/q")]


# ---------------------------------------------------------------------------
# The pending report


def test_pending_report_contents() -> None:
    xml = system(
        "<A><host cdl:lazy='true'/><port>80</port></A>"
        "<B><url><cdl:expression value-of=\"concat($h, ':', $p)\"><cdl:variable name='h' refroot='A' ref='/host'/>"
        "<cdl:variable name='p' refroot='A' ref='/port'/></cdl:expression></url>"
        "<copy cdl:ref='/url'/><later cdl:refroot='A' cdl:ref='/port' cdl:lazy='true'/><done cdl:refroot='A' cdl:ref='/port'/></B>"
    )
    res = resolve_text(xml)
    assert res.pending == [
        Pending("/A/host", "lazy-property", waiting=("/B/url",)),
        Pending("/B/url", "expression", waiting=("/B/copy",), waits_on=("/A/host",)),
        Pending("/B/copy", "reference", waits_on=("/B/url",)),
        Pending("/B/later", "lazy-reference"),
    ]
    assert list_xml(res, "B") == (
        "<B><url><cdl:expression value-of=\"concat($h, ':', $p)\"><cdl:variable name=\"h\" ref=\"./host\" refroot=\"A\"/>"
        '<cdl:variable name="p" ref="./port" refroot="A"/></cdl:expression></url>'
        '<copy cdl:ref="./url"/><later cdl:lazy="true" cdl:ref="./port" cdl:refroot="A"/><done>80</done></B>'
    )
    deployed = res.supply({"A/host": "h.example.org"}, release=["B/later"])
    assert deployed.pending == []
    assert list_xml(deployed, "B") == "<B><url>h.example.org:80</url><copy>h.example.org:80</copy><later>80</later><done>80</done></B>"


def test_pending_report_only_lists_the_main_document(write_docs) -> None:
    main = write_docs(
        {
            "main.cdl": system("<S><x cdl:lazy='true'/></S>").replace("<cdl:system>", '<cdl:import location="t.cdl"/><cdl:system>'),
            "t.cdl": system("<T><p cdl:lazy='true'/><r cdl:ref='/p'/></T>").replace("cdl:system", "cdl:configuration"),
        }
    )
    res = cdl.load(main).resolve()
    assert res.pending == [Pending("/S/x", "lazy-property")]


def test_pending_chain_through_lists() -> None:
    res = resolve_text(system("<A><a cdl:lazy='true'/></A><B><b cdl:refroot='A' cdl:ref='/a'/></B><C><c cdl:refroot='B' cdl:ref='/b'/></C>"))
    assert res.pending == [
        Pending("/A/a", "lazy-property", waiting=("/B/b",)),
        Pending("/B/b", "reference", waiting=("/C/c",), waits_on=("/A/a",)),
        Pending("/C/c", "reference", waits_on=("/B/b",)),
    ]
    assert lists_xml(res.supply({"A/a": "v"})) == ["<A><a>v</a></A>", "<B><b>v</b></B>", "<C><c>v</c></C>"]


def test_lazy_false_is_not_lazy() -> None:
    res = resolve_text(system("<S><p cdl:lazy='false'/><r cdl:ref='/p' cdl:lazy='0'/></S>"))
    assert res.pending == []
    assert lists_xml(res) == ["<S><p/><r/></S>"]
    with pytest.raises(CdlError) as info:
        resolve_text(system("<S><p cdl:lazy='false'/></S>"), {"S/p": "1"})
    assert info.value.code == "SET_NOT_LAZY"


def test_required_missing_points_at_the_inheriting_list(write_docs) -> None:
    main = write_docs(
        {
            "main.cdl": system("\n<S cdl:extends='T'>\n</S>\n<U cdl:extends='T'><g><p>1</p></g>\n<q/></U>").replace(
                "<cdl:system>", '<cdl:import location="t.cdl"/><cdl:system>'
            ),
            "t.cdl": system("<T>\n<g>\n<p cdl:use='required'/></g>\n<q cdl:use='required'/></T>").replace("cdl:system", "cdl:configuration"),
        }
    )
    with pytest.raises(CdlError) as info:
        cdl.load(main).resolve()
    base = 'this property is marked cdl:use="required" but has no value'
    assert [(Path(e.url).name, e.line, e.path, e.message) for e in info.value.errors] == [
        # inherited unfilled: at the system list, saying where the template declares it
        ("main.cdl", 2, "/S/g/p", f"{base}: S inherits it without one (declared required at {Path(main).parent / 't.cdl'}:3); give it a value in S"),
        ("main.cdl", 2, "/S/q", f"{base}: S inherits it without one (declared required at {Path(main).parent / 't.cdl'}:4); give it a value in S"),
        # written in the system list: at the element, as before
        ("main.cdl", 5, "/U/q", base),
    ]
