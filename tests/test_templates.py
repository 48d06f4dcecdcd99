"""A template (a list of cdl:configuration) gets one verdict wherever it lives:
a reference or expression variable that selects nothing where the template is
written is a parameter its inheritors fill (7.6), left unresolved with a
warning; a system that inherits it unfilled, or reads it, is the error."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import cdl
from cdl import CdlError
from cdl.cli import main
from conftest import CDL_DECL, list_xml, resolve_text

ECHO = "<echo>\n<msg cdl:ref='host'/>\n<copy cdl:ref='msg'/>\n</echo>"


def doc(configuration: str, system: str | None = None, imports: str = "") -> str:
    part = "" if system is None else f"<cdl:system>{system}</cdl:system>"
    return f"<cdl:cdl {CDL_DECL}>{imports}\n<cdl:configuration>\n{configuration}</cdl:configuration>{part}</cdl:cdl>"


def test_a_templates_unfilled_reference_stays_unresolved_with_a_warning() -> None:
    res = resolve_text(doc(ECHO))
    assert list_xml(res, "echo") == '<echo><msg cdl:ref="./host"/><copy cdl:ref="./msg"/></echo>'
    assert res.warnings == [
        (
            "mem.cdl:4: path 'host' (read as './host') selects nothing: no host at step 1; left unresolved: "
            "a template's parameter, which lists extending echo must provide (7.6) (at /echo/msg)"
        ),
        "mem.cdl:5: left unresolved: it waits for /echo/msg (mem.cdl:4), which its template leaves unresolved (at /echo/copy)",
    ]
    # Not waiting for deployment: no deploy-time value is asked for it.
    assert res.pending == [] and res.system_pending == []


def test_the_same_template_imported_or_in_the_main_document(write_docs) -> None:
    lib = doc(ECHO)
    filled = "<S cdl:extends='echo'><host>h</host></S>"
    unfilled = "<S cdl:extends='echo'/>"
    here = write_docs({"here.cdl": doc(ECHO, filled)})
    there = write_docs({"there.cdl": doc("", filled, "<cdl:import location='lib.cdl'/>"), "lib.cdl": lib})
    for path in (here, there):
        assert list_xml(cdl.load(path).resolve(), "S") == "<S><msg>h</msg><copy>h</copy><host>h</host></S>"
    here = write_docs({"here2.cdl": doc(ECHO, unfilled)})
    there = write_docs({"there2.cdl": doc("", unfilled, "<cdl:import location='lib.cdl'/>")})
    for path, template in ((here, "here2.cdl"), (there, "lib.cdl")):
        with pytest.raises(CdlError) as info:
            cdl.load(path).resolve()
        # The inherited reference fails where the template writes it.
        assert [(e.code, Path(e.url or "").name, e.line, e.path) for e in info.value.errors] == [
            ("REF_NOT_FOUND", template, 4, "/S/msg")
        ]


def test_an_expression_variable_is_a_parameter_too() -> None:
    template = "<T>\n<n><cdl:expression value-of='$p + 1'><cdl:variable name='p' ref='port'/></cdl:expression></n>\n</T>"
    res = resolve_text(doc(template, "<S cdl:extends='T'><port>80</port></S>"))
    assert list_xml(res, "S") == "<S><n>81</n><port>80</port></S>"
    assert len(res.warnings) == 1 and "variable $p 'port'" in res.warnings[0] and "(at /T/n/cdl:expression/cdl:variable)" in res.warnings[0]


def test_a_system_property_reading_a_template_parameter_gets_its_own_error() -> None:
    with pytest.raises(CdlError) as info:
        resolve_text(doc(ECHO, "<S>\n<m cdl:refroot='echo' cdl:ref='/copy'/></S>"))
    (error,) = info.value.errors
    assert (error.code, error.line, error.path) == ("REF_NOT_FOUND", 7, "/S/m")
    assert error.message.startswith("this reference needs /echo/copy (mem.cdl:5), a reference its template leaves unresolved: ")


def test_a_template_reading_a_template_parameter_waits_with_it() -> None:
    res = resolve_text(doc(ECHO + "<T><m cdl:refroot='echo' cdl:ref='/msg'/></T>"))
    assert list_xml(res, "T") == '<T><m cdl:ref="./msg" cdl:refroot="echo"/></T>'
    assert [w.split(": ", 1)[1] for w in res.warnings][2] == (
        "left unresolved: it waits for /echo/msg (mem.cdl:4), which its template leaves unresolved (at /T/m)"
    )


def test_above_the_top_in_a_template_is_a_parameter_a_deeper_inheritor_fills() -> None:
    res = resolve_text(doc("<T><p cdl:ref='../x'/></T>", "<S><inner cdl:extends='T'/><x>1</x></S>"))
    assert list_xml(res, "T") == '<T><p cdl:ref="../x"/></T>'
    assert list_xml(res, "S") == "<S><inner><p>1</p></inner><x>1</x></S>"
    assert "climbs above its top level list: it starts at /T (the property's parent)" in res.warnings[0]
    assert "; left unresolved: a template's parameter" in res.warnings[0]


def test_other_reference_errors_in_templates_stay_errors() -> None:
    for template, code in [
        ("<T><p cdl:refroot='Nope' cdl:ref='x'/></T>", "UNKNOWN_REFROOT"),
        ("<T><p cdl:ref='q'/><q cdl:ref='p'/></T>", "REF_CYCLE"),
    ]:
        with pytest.raises(CdlError) as info:
            resolve_text(doc(template))
        assert info.value.code == code


def test_deploy_time_rounds_resolve_what_they_touch() -> None:
    """A released template reference that selects nothing is an error: a deployment asked for it."""
    with pytest.raises(CdlError) as info:
        resolve_text(doc("<T><p cdl:ref='nothing' cdl:lazy='true'/></T>"), release=["T/p"])
    assert info.value.code == "REF_NOT_FOUND"


def test_the_cli_warns_on_stderr_and_prints_the_template(write_docs) -> None:
    path = write_docs({"m.cdl": doc(ECHO)})
    for command in ("resolve", "pending"):
        result = CliRunner().invoke(main, [command, str(path)], catch_exceptions=False)
        assert result.exit_code == 0
        assert result.stderr.splitlines()[0].startswith(f"warning: {path}:4: path 'host' (read as './host') selects nothing")
    result = CliRunner().invoke(main, ["resolve", str(path)], catch_exceptions=False)
    assert '<msg cdl:ref="./host"/>' in result.stdout
