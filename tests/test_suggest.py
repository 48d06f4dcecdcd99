"""'Did you mean' wherever a name can be wrong (issue 26, point 3).

The helper (src/cdl/model/suggest.py: ranking, the limit, no suggestion when nothing
is close, qualified names), then each place a name can name nothing, through
the public API and the command line: a cdl:extends or cdl:refroot naming no
top level list, a reference step selecting nothing (and a template's
reference left as a parameter), ``--set``/``--release`` paths, unknown CDL
attributes and undeclared expression variables.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import cdl
from conftest import CDL_DECL

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cdl", *args], check=False, capture_output=True, text=True, timeout=120)


def load_text(xml: str) -> cdl.Document:
    return cdl.load(xml.encode(), name="mem.cdl")


def error_of(xml: str, *args: object, **kwargs: object) -> cdl.CdlError:
    """The error resolving ``xml`` raises (one error, not a group)."""
    with pytest.raises(cdl.CdlError) as info:
        load_text(xml).resolve(*args, **kwargs)  # type: ignore[arg-type]
    assert not isinstance(info.value, cdl.CdlErrorGroup)
    return info.value


# ---------------------------------------------------------------------------
# Each site, through the library


def test_extends_suggests_the_templates_in_scope_with_the_documents_prefixes(tmp_path: Path) -> None:
    webapp = SAMPLES / "webapp"
    for name in ("webapp-template.cdl", "component-model.cdl"):
        (tmp_path / name).write_bytes((webapp / name).read_bytes())
    system = (webapp / "system.cdl").read_text()
    assert 'cdl:extends="t:WebApp"' in system
    for written in ("t:WebAp", "WebApp", "t:webapp"):
        (tmp_path / "system.cdl").write_text(system.replace('cdl:extends="t:WebApp"', f'cdl:extends="{written}"'))
        with pytest.raises(cdl.CdlError) as info:
            cdl.load(tmp_path / "system.cdl").resolve()
        assert info.value.code == "UNKNOWN_PROTOTYPE"
        # t:WebApp as the system document writes it; not the list itself (a cycle)
        assert info.value.message == f"cdl:extends names {written!r}, which is no top level list; did you mean t:WebApp?"


def test_names_in_an_imported_document_are_written_with_its_own_prefixes(write_docs) -> None:
    # The run writes urn:T as a: (the main document's prefix); the template
    # document calls it b:, so that is how its suggestions are written.
    main = write_docs(
        {
            "main.cdl": f"<cdl:cdl {CDL_DECL} xmlns:a='urn:T'><cdl:import location='t.cdl'/><cdl:system><S/></cdl:system></cdl:cdl>",
            "t.cdl": (
                f"<cdl:cdl {CDL_DECL} xmlns:b='urn:T'><cdl:configuration>\n<b:Base/>\n<b:Web cdl:extends='b:Bse'/>\n"
                "<b:Other><b:port>1</b:port>\n<b:q cdl:ref='b:prt'/></b:Other></cdl:configuration></cdl:cdl>"
            ),
        }
    )
    with pytest.raises(cdl.CdlError) as info:
        cdl.load(main).resolve()
    assert info.value.message == "cdl:extends names 'b:Bse', which is no top level list; did you mean b:Base?"
    # S inherits b:Other's reference: it is resolved in S, still written in t.cdl
    (main.parent / "t.cdl").write_text((main.parent / "t.cdl").read_text().replace("b:Bse", "b:Base"))
    main.write_text(main.read_text().replace("<S/>", "<S cdl:extends='a:Other'/>"))
    with pytest.raises(cdl.CdlError) as info:
        cdl.load(main).resolve()
    assert info.value.message == "path 'b:prt' (read as './a:prt') selects nothing: no a:prt at step 1; did you mean b:port?"


def test_extends_with_nothing_close_suggests_nothing() -> None:
    xml = f"<cdl:cdl {CDL_DECL}><cdl:system><Server/><S cdl:extends='Zzz'/></cdl:system></cdl:cdl>"
    assert error_of(xml).message == "cdl:extends names 'Zzz', which is no top level list"


def test_refroot_suggests_the_lists() -> None:
    xml = f"<cdl:cdl {CDL_DECL}><cdl:system><Server><port>1</port></Server><S><p cdl:refroot='Sever' cdl:ref='/port'/></S></cdl:system></cdl:cdl>"
    error = error_of(xml)
    assert error.code == "UNKNOWN_REFROOT"
    assert error.message == "path names refroot 'Sever', which is no top level list; did you mean Server?"


def test_a_reference_step_suggests_the_children_at_that_step_as_the_document_writes_them() -> None:
    xml = (
        f"<cdl:cdl {CDL_DECL} xmlns:x='urn:x'><cdl:system><S>"
        "<server><hostname>h</hostname><x:port>1</x:port></server>"
        "<a cdl:ref='server/hostnam'/><b cdl:ref='server/port'/><c cdl:ref='server/zzz'/>"
        "</S></cdl:system></cdl:cdl>"
    )
    with pytest.raises(cdl.CdlErrorGroup) as info:
        load_text(xml).resolve()
    assert [(e.code, e.path, e.message) for e in info.value.errors] == [
        ("REF_NOT_FOUND", "/S/a", "path 'server/hostnam' (read as './server/hostnam') selects nothing: no hostnam at step 2; did you mean hostname?"),
        ("REF_NOT_FOUND", "/S/b", "path 'server/port' (read as './server/port') selects nothing: no port at step 2; did you mean x:port?"),
        ("REF_NOT_FOUND", "/S/c", "path 'server/zzz' (read as './server/zzz') selects nothing: no zzz at step 2"),
    ]


def test_a_variable_path_suggests_too() -> None:
    xml = (
        f"<cdl:cdl {CDL_DECL}><cdl:system><S><port>1</port><e><cdl:expression value-of='$p'>"
        "<cdl:variable name='p' ref='/prot'/></cdl:expression></e></S></cdl:system></cdl:cdl>"
    )
    error = error_of(xml)
    assert (error.code, error.message) == (
        "REF_NOT_FOUND",
        "variable $p '/prot' (read as './prot') selects nothing: no prot at step 1; did you mean port?",
    )


def test_a_templates_parameter_with_a_similar_name_warns_with_the_suggestion() -> None:
    xml = (
        f"<cdl:cdl {CDL_DECL}><cdl:configuration>\n<T><hostname/>\n<a cdl:ref='hostnam'/>\n<b cdl:ref='port'/></T>"
        "</cdl:configuration></cdl:cdl>"
    )
    warnings = load_text(xml).resolve().warnings
    assert warnings == [
        "mem.cdl:3: path 'hostnam' (read as './hostnam') selects nothing: no hostnam at step 1; did you mean hostname?; left unresolved:"
        " a template's parameter, which lists extending T must provide (7.6) (at /T/a)",
        "mem.cdl:4: path 'port' (read as './port') selects nothing: no port at step 1; left unresolved:"
        " a template's parameter, which lists extending T must provide (7.6) (at /T/b)",
    ]


def test_suggestions_are_worked_out_for_as_many_messages_as_errors_are_collected() -> None:
    # Template parameters are warnings, as many as a document has: each
    # suggestion looks at the children where its path stops, so only the
    # first max_errors messages of a resolution get one.
    refs = "".join(f"<r{i} cdl:ref='hostnam'/>" for i in range(3))
    xml = f"<cdl:cdl {CDL_DECL}><cdl:configuration><T><hostname/>{refs}</T></cdl:configuration></cdl:cdl>"
    warnings = cdl.load(xml.encode(), limits=cdl.Limits(max_errors=2)).resolve().warnings
    assert ["did you mean hostname?" in w for w in warnings] == [True, True, False]
    assert all("did you mean" in w for w in load_text(xml).resolve().warnings)


LAZY = f"<cdl:cdl {CDL_DECL}><cdl:system><Server><hostname cdl:lazy='true'/><port>1</port></Server></cdl:system></cdl:cdl>"


@pytest.mark.parametrize(
    ("values", "release", "message"),
    [
        ({"Server/hostnam": "h"}, (), "set 'Server/hostnam': no hostnam at step 2; did you mean /Server/hostname?"),
        ({"Sever/hostname": "h"}, (), "set 'Sever/hostname': no top level list 'Sever'; did you mean /Server?"),
        ({"Server/zzz": "h"}, (), "set 'Server/zzz': no zzz at step 2"),
        ({}, ("Server/Hostname",), "release 'Server/Hostname': no Hostname at step 2; did you mean /Server/hostname?"),
    ],
)
def test_set_and_release_paths_suggest(values: dict[str, str], release: tuple[str, ...], message: str) -> None:
    error = error_of(LAZY, values, release=release)
    assert (error.code, error.message) == ("SET_NOT_FOUND", message)


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ("cdl:extend='T'", "unknown CDL attribute cdl:extend; did you mean cdl:extends?"),
        ("cdl:lazzy='true'", "unknown CDL attribute cdl:lazzy; did you mean cdl:lazy?"),
        ("cdl:lazzy='true' cdl:refRoot='T'", "unknown CDL attribute cdl:lazzy, cdl:refRoot; did you mean cdl:lazy, cdl:refroot or cdl:ref?"),
        ("cdl:zzz='1'", "unknown CDL attribute cdl:zzz"),
    ],
)
def test_unknown_cdl_attributes_suggest_the_known_ones(attributes: str, message: str) -> None:
    xml = f"<cdl:cdl {CDL_DECL}><cdl:system><T/><S><p {attributes}/></S></cdl:system></cdl:cdl>"
    with pytest.raises(cdl.CdlError) as info:
        load_text(xml)
    assert info.value.message == message


def test_unknown_cdl_elements_of_the_root_suggest_the_known_ones() -> None:
    xml = f"<cdl:cdl {CDL_DECL}><cdl:sytem><S/></cdl:sytem></cdl:cdl>"
    with pytest.raises(cdl.CdlError) as info:
        load_text(xml)
    assert info.value.message == "cdl:sytem is not allowed inside cdl:cdl; did you mean cdl:system?"


def test_undeclared_variables_suggest_the_declared_ones() -> None:
    xml = (
        f"<cdl:cdl {CDL_DECL}><cdl:system><S><host>h</host><port>1</port><e>"
        "<cdl:expression value-of=\"concat($hots, ':', $port)\"><cdl:variable name='host' ref='/host'/>"
        "<cdl:variable name='port' ref='/port'/></cdl:expression></e></S></cdl:system></cdl:cdl>"
    )
    with pytest.raises(cdl.CdlError) as info:
        load_text(xml)
    assert info.value.code == "EXPR_UNDECLARED_VARIABLE"
    assert info.value.message == "value-of \"concat($hots, ':', $port)\" uses $hots, which no cdl:variable declares; did you mean $host?"


# ---------------------------------------------------------------------------
# The command line


def test_the_command_line_prints_the_suggestions(tmp_path: Path) -> None:
    path = tmp_path / "s.cdl"
    path.write_text(LAZY.replace("<port>1</port>", "<port>1</port><copy cdl:ref='prot'/>"))
    out = run_cli("resolve", str(path))
    assert out.returncode == 1
    assert "[REF_NOT_FOUND] path 'prot' (read as './prot') selects nothing: no prot at step 1; did you mean port? (at /Server/copy)" in out.stderr
    path.write_text(LAZY)
    out = run_cli("resolve", str(path), "--set", "Server/hostnme=h")
    assert out.returncode == 1
    assert f"{path}: [SET_NOT_FOUND] set 'Server/hostnme': no hostnme at step 2; did you mean /Server/hostname?" in out.stderr
