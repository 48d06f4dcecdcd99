"""cdl.loading.registry: one registry of top level list names over every document (7.1),
unqualified lists under targetNamespace, and the lookup of unprefixed names."""

from __future__ import annotations

from pathlib import Path

import pytest

import cdl
from cdl import CdlError
from conftest import CDL_DECL, cdl_doc, config, list_elements, list_xml, lists_xml, load_text, resolve_text, system


def imp(location: str) -> str:
    return f'<cdl:import location="{location}"/>'


# ---------------------------------------------------------------------------
# Duplicates


@pytest.mark.parametrize(
    ("xml", "name", "first_line", "second_line"),
    [
        (f"<cdl:cdl {CDL_DECL}>\n<cdl:configuration>\n<a/>\n<a/>\n</cdl:configuration></cdl:cdl>", "a", 3, 4),
        (
            f"<cdl:cdl {CDL_DECL}>\n<cdl:configuration>\n<a/>\n</cdl:configuration>\n<cdl:system>\n<a/>\n</cdl:system></cdl:cdl>",
            "a",
            3,
            6,
        ),
        (f"<cdl:cdl {CDL_DECL}>\n<cdl:system>\n<s/>\n<t/>\n\n<s/>\n</cdl:system></cdl:cdl>", "s", 3, 6),
        # an unqualified list is named in the targetNamespace: same name as t:a
        (
            f'<cdl:cdl {CDL_DECL} targetNamespace="urn:t" xmlns:t="urn:t">\n<cdl:configuration>\n<a/>\n<t:a/>\n'
            "</cdl:configuration></cdl:cdl>",
            "t:a",
            3,
            4,
        ),
        # a default namespace and a prefix for one URI name the same list
        (
            f'<cdl:cdl {CDL_DECL} xmlns="urn:d" xmlns:d="urn:d">\n<cdl:configuration>\n<d:a/>\n<a/>\n'
            "</cdl:configuration></cdl:cdl>",
            "a",  # names in the main document's default namespace are written unprefixed
            3,
            4,
        ),
    ],
)
def test_duplicate_names_within_one_document(xml: str, name: str, first_line: int, second_line: int) -> None:
    with pytest.raises(CdlError) as info:
        load_text(xml)
    error = info.value
    assert (error.code, error.url, error.line, error.path) == ("DUPLICATE_NAME", "mem.cdl", second_line, f"/{name}")
    # both places are named
    assert error.message == f"top level list {name} is defined twice: here and at mem.cdl:{first_line}"


def test_duplicate_names_across_documents(write_docs, tmp_path: Path) -> None:
    main = write_docs(
        {
            "main.cdl": cdl_doc(imp("lib.cdl") + '\n<cdl:configuration>\n<t:T/>\n</cdl:configuration>', 'xmlns:t="urn:t"'),
            "lib.cdl": cdl_doc('\n\n<cdl:configuration>\n\n<T/>\n</cdl:configuration>', 'targetNamespace="urn:t"'),
        }
    )
    with pytest.raises(CdlError) as info:
        cdl.load(main)
    error = info.value
    assert (error.code, error.url, error.line) == ("DUPLICATE_NAME", str(tmp_path / "lib.cdl"), 5)
    assert error.message == f"top level list t:T is defined twice: here and at {main}:3"


def test_several_duplicates_are_all_reported() -> None:
    xml = f"<cdl:cdl {CDL_DECL}>\n<cdl:configuration>\n<a/>\n<b/>\n<a/>\n<b/>\n</cdl:configuration></cdl:cdl>"
    with pytest.raises(cdl.CdlErrorGroup) as info:
        load_text(xml)
    assert [(e.code, e.line, e.path) for e in info.value.errors] == [
        ("DUPLICATE_NAME", 5, "/a"),
        ("DUPLICATE_NAME", 6, "/b"),
    ]


@pytest.mark.parametrize(
    "lists",
    [
        "<a/><p:a xmlns:p='urn:p'/>",
        "<p:a xmlns:p='urn:p'/><q:a xmlns:q='urn:q'/>",
        "<a/><A/>",
    ],
)
def test_same_local_name_in_different_namespaces_is_no_duplicate(lists: str) -> None:
    res = resolve_text(config(lists))
    assert len(list_elements(res)) == 2


def test_document_imported_twice_defines_its_names_once(write_docs) -> None:
    main = write_docs(
        {
            "main.cdl": cdl_doc(imp("a.cdl") + imp("b.cdl") + "<cdl:system><s cdl:extends='T'/></cdl:system>"),
            "a.cdl": cdl_doc(imp("t.cdl")),
            "b.cdl": cdl_doc(imp("t.cdl")),
            "t.cdl": config("<T><v>1</v></T>"),
        }
    )
    assert list_xml(cdl.load(main).resolve(), "s") == "<s><v>1</v></s>"


# ---------------------------------------------------------------------------
# targetNamespace, default namespaces and lookup


def test_unqualified_lists_are_named_in_the_target_namespace(write_docs) -> None:
    # 7.2.4: <WebServer> under targetNamespace="urn:tmp-uri1" is tmpl:WebServer to an importer
    main = write_docs(
        {
            "main.cdl": cdl_doc(
                imp("tmpl.cdl")
                + '<cdl:configuration xmlns:tmpl="urn:tmp-uri1"><Tomcat cdl:extends="tmpl:Tomcat">'
                "<hostname>myweb.com</hostname></Tomcat></cdl:configuration>"
            ),
            "tmpl.cdl": config(
                "<WebServer><hostname/><port>80</port></WebServer>"
                '<Tomcat cdl:extends="WebServer"><port>8080</port><maxThreads>200</maxThreads></Tomcat>',
                'targetNamespace="urn:tmp-uri1"',
            ),
        }
    )
    res = cdl.load(main).resolve()
    assert lists_xml(res) == ["<Tomcat><hostname>myweb.com</hostname><port>8080</port><maxThreads>200</maxThreads></Tomcat>"]


def test_unprefixed_name_without_default_namespace_finds_target_namespace_list() -> None:
    # Inside the document, an unprefixed name also finds a list of its targetNamespace.
    res = resolve_text(config("<A><v>1</v></A><B cdl:extends='A'/><C><x cdl:refroot='A' cdl:ref='v'/></C>", 'targetNamespace="urn:t"'))
    assert lists_xml(res) == ["<A><v>1</v></A>", "<B><v>1</v></B>", "<C><x>1</x></C>"]


LOOKUP_LIBS = {
    "d": cdl_doc('<cdl:configuration><x xmlns="urn:d"><v xmlns="">from default ns</v></x></cdl:configuration>'),
    "t": config("<x><v>from target ns</v></x>", 'targetNamespace="urn:t"'),
    "n": config("<x><v>from no ns</v></x>"),
}


@pytest.mark.parametrize(
    ("libs", "found"),
    [
        ("dtn", "from default ns"),
        ("ntd", "from default ns"),
        ("tn", "from target ns"),
        ("nt", "from target ns"),
        ("n", "from no ns"),
        ("d", "from default ns"),
        ("t", "from target ns"),
    ],
)
def test_unprefixed_lookup_order(write_docs, libs: str, found: str) -> None:
    # default namespace in scope, then targetNamespace, then no namespace
    docs = {
        "main.cdl": cdl_doc(
            "".join(imp(f"{k}.cdl") for k in libs)
            + '<cdl:system><s cdl:extends="x"/><u><w cdl:refroot="x" cdl:ref="."/></u></cdl:system>',
            'xmlns="urn:d" targetNamespace="urn:t"',
        )
    }
    docs.update({f"{k}.cdl": LOOKUP_LIBS[k] for k in libs})
    res = cdl.load(write_docs(docs)).resolve()
    s, u = list_elements(res, "system")
    assert [(c.tag, c.text) for c in s] == [("v", found)]
    assert [(w.tag, [(c.tag, c.text) for c in w]) for w in u] == [("{urn:d}w", [("v", found)])]


def test_unprefixed_name_with_no_candidate_is_unknown() -> None:
    with pytest.raises(CdlError) as info:
        resolve_text(system("<s cdl:extends='x'/>", 'xmlns:p="urn:p"', configuration="<p:x/>"))
    assert info.value.code == "UNKNOWN_PROTOTYPE"
    assert "'x'" in info.value.message


def test_template_without_namespace_found_from_importer_with_default_namespace(write_docs) -> None:
    main = write_docs(
        {
            "main.cdl": cdl_doc(
                imp("plain.cdl") + "<cdl:system><S cdl:extends='T'><own>2</own></S></cdl:system>", 'xmlns="urn:d"'
            ),
            "plain.cdl": config("<T><p>1</p></T>"),
        }
    )
    res = cdl.load(main).resolve()
    (s,) = list_elements(res, "system")
    # the list is in the importer's default namespace; the template's
    # properties keep their own (empty) namespace
    assert [s.tag] + [c.tag for c in s] == ["{urn:d}S", "p", "{urn:d}own"]
    assert [c.text for c in s] == ["1", "2"]


def test_prefixed_name_finds_only_its_namespace(write_docs) -> None:
    main = write_docs(
        {
            "main.cdl": cdl_doc(imp("plain.cdl") + "<cdl:system><S cdl:extends='p:T'/></cdl:system>", 'xmlns:p="urn:p"'),
            "plain.cdl": config("<T><p>1</p></T>"),
        }
    )
    with pytest.raises(CdlError) as info:
        cdl.load(main).resolve()
    assert info.value.code == "UNKNOWN_PROTOTYPE"


def test_prefix_is_resolved_where_the_name_is_written() -> None:
    # the root declares p=urn:1, the list redeclares p=urn:2
    res = resolve_text(
        system(
            "<s xmlns:p='urn:2'><a cdl:extends='p:T'/><b xmlns:p='urn:1' cdl:extends='p:T'/></s>",
            'xmlns:p="urn:1"',
            configuration="<p:T><v>one</v></p:T><T2 xmlns:p='urn:2'><p:T><v>two</v></p:T></T2><q:T xmlns:q='urn:2'><v>two</v></q:T>",
        )
    )
    assert list_xml(res, "s") == "<s><a><v>two</v></a><b><v>one</v></b></s>"


def test_system_lists_are_top_level_names() -> None:
    # cdl:extends and cdl:refroot can name a list of cdl:system (7.5.2.2 does)
    res = resolve_text(system("<server1><port>8001</port></server1><server2 cdl:extends='server1'><d cdl:refroot='server1' cdl:ref='/port'/></server2>"))
    assert lists_xml(res) == ["<server1><port>8001</port></server1>", "<server2><port>8001</port><d>8001</d></server2>"]


def test_imported_configuration_can_name_main_system_list(write_docs) -> None:
    main = write_docs(
        {
            "main.cdl": cdl_doc(imp("lib.cdl") + "<cdl:system><env><host>h</host></env><s cdl:extends='T'/></cdl:system>"),
            "lib.cdl": config("<T><h cdl:refroot='env' cdl:ref='/host'/></T>"),
        }
    )
    assert list_xml(cdl.load(main).resolve(), "s") == "<s><h>h</h></s>"
