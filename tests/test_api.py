"""The public API (cdl/__init__.py): load from a path, bytes or URL; resolve one
Document many times; errors carrying code, url, line and path; error groups."""

from __future__ import annotations

import itertools
import re
import shutil
import textwrap
from pathlib import Path

import pytest

import cdl
from cdl import errors
from conftest import CDL_DECL, cdl_doc, config, list_xml, lists_xml, load_text, resolve_text, system

SERVERS = system(
    "<server1><port cdl:lazy='true'/><host cdl:lazy='true'/></server1>"
    "<server2><destination cdl:refroot='server1' cdl:ref='/port'/><h cdl:refroot='server1' cdl:ref='/host'/></server2>"
)


def test_public_names() -> None:
    assert sorted(cdl.__all__) == sorted(
        [
            "CDL_NS", "Cause", "CdlError", "CdlErrorGroup", "ComponentChange", "ComponentState", "ComponentStatus", "Data",
            "Deployment", "DeploymentStatus", "Diff", "Document", "Explanation", "Limits", "Pending", "Plan", "PlannedComponent",
            "Resolution", "Round", "RoundLike", "Step", "ValueChange", "Written", "load",
        ]
    )
    assert cdl.CDL_NS == "http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"
    assert issubclass(cdl.CdlErrorGroup, cdl.CdlError)


@pytest.mark.parametrize(
    ("cls", "maker"), [(cdl.Document, "cdl.load()"), (cdl.Resolution, "Document.resolve()"), (cdl.Deployment, "Document.deploy()")]
)
def test_the_engines_objects_are_made_by_its_functions_not_constructed(cls: type, maker: str) -> None:
    # Their state is the engine's own: a constructor would have to take it.
    for args in ((), ("samples/webapp/system.cdl",)):
        with pytest.raises(TypeError, match=re.escape(f"{cls.__name__} is not made by callers: {maker}")):
            cls(*args)


def test_the_package_docstring_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``help(cdl)`` shows how to load, resolve, plan and deploy: its examples run."""
    assert cdl.__doc__ is not None
    code = ""
    for block in cdl.__doc__.split("::\n\n")[1:]:  # each example follows a "::" line, indented
        lines = itertools.takewhile(lambda line: not line or line.startswith("    "), block.splitlines())
        code += textwrap.dedent("\n".join(lines)) + "\n"
    assert ".plan()" in code and ".deploy(" in code and ".deployed(" in code
    shutil.copytree(WEBAPP.parent, tmp_path / "samples" / "webapp")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "cdl.__doc__", "exec"), {"__name__": "cdl_docstring"})
    assert (tmp_path / "webapp.journal").is_file()


# ---------------------------------------------------------------------------
# Sources


@pytest.mark.parametrize("as_type", [str, Path])
def test_load_from_path(write_docs, as_type) -> None:
    path = write_docs({"servers.cdl": SERVERS})
    document = cdl.load(as_type(path))
    assert isinstance(document, cdl.Document)
    assert document.url == str(path)
    assert document.urls == (str(path),)


def test_load_from_bytes() -> None:
    document = cdl.load(SERVERS.encode(), name="inline.cdl")
    assert document.url == "inline.cdl"
    assert [p.path for p in document.resolve().pending] == ["/server1/port", "/server1/host", "/server2/destination", "/server2/h"]
    with pytest.raises(cdl.CdlError) as info:
        cdl.load(system("<s>\n<p cdl:lazy='x'/></s>").encode(), name="inline.cdl")
    assert (info.value.url, info.value.line) == ("inline.cdl", 2)


def test_load_from_bytes_without_a_name() -> None:
    with pytest.raises(cdl.CdlError) as info:
        cdl.load(b"<oops")
    assert info.value.url == "<bytes>"
    assert info.value.render().startswith("<bytes>:1: [XML_SYNTAX] ")


def test_load_from_url_through_a_resolver() -> None:
    store = {
        "repo://configs/main.cdl": cdl_doc("<cdl:import location='lib/t.cdl'/><cdl:system><s cdl:extends='T'/></cdl:system>"),
        "repo://configs/lib/t.cdl": config("<T><v>from the repository</v></T>"),
    }
    asked: list[str] = []

    def resolver(url: str) -> bytes:
        asked.append(url)
        return store[url].encode()

    document = cdl.load("repo://configs/main.cdl", resolver=resolver)
    assert asked == ["repo://configs/main.cdl", "repo://configs/lib/t.cdl"]
    assert document.urls == ("repo://configs/main.cdl", "repo://configs/lib/t.cdl")
    assert lists_xml(document.resolve()) == ["<s><v>from the repository</v></s>"]


def test_errors_in_resolver_documents_name_their_url() -> None:
    def resolver(url: str) -> bytes:
        return system("<s>\n\n<p cdl:ref='/nothing'/></s>").encode()

    with pytest.raises(cdl.CdlError) as info:
        cdl.load("repo://x/main.cdl", resolver=resolver).resolve()
    assert (info.value.code, info.value.url, info.value.line, info.value.path) == ("REF_NOT_FOUND", "repo://x/main.cdl", 3, "/s/p")


# ---------------------------------------------------------------------------
# One Document, many resolutions


def test_one_document_resolved_many_times_independently() -> None:
    document = load_text(SERVERS)
    base = document.resolve()
    a = document.resolve({"server1/port": "1", "server1/host": "a"})
    b = document.resolve({"server1/port": "2", "server1/host": "b"})
    c = base.supply({"server1/port": "3"})
    d = c.supply({"server1/host": "d"})
    assert list_xml(a, "server2") == "<server2><destination>1</destination><h>a</h></server2>"
    assert list_xml(b, "server2") == "<server2><destination>2</destination><h>b</h></server2>"
    assert list_xml(d, "server2") == "<server2><destination>3</destination><h>d</h></server2>"
    # nothing earlier changed
    assert list_xml(c, "server2") == '<server2><destination>3</destination><h cdl:ref="./host" cdl:refroot="server1"/></server2>'
    assert [p.path for p in c.pending] == ["/server1/host", "/server2/h"]
    assert list_xml(base, "server1") == '<server1><port cdl:lazy="true"/><host cdl:lazy="true"/></server1>'
    assert len(base.pending) == 4
    assert list_xml(a, "server2") == "<server2><destination>1</destination><h>a</h></server2>"
    assert document.resolve().to_bytes() == base.to_bytes()


def test_outputs_after_the_working_trees_are_taken() -> None:
    """to_bytes builds its tree from the working trees themselves; every later
    call (other outputs, pending, supply, type checks) still sees the same result."""
    doc = cdl_doc(
        "<cdl:configuration><T><port cdl:type='xsd:int'>x</port></T></cdl:configuration>"
        "<cdl:system><s cdl:extends='T'><late cdl:lazy='true'/></s></cdl:system>",
        "xmlns:xsd='http://www.w3.org/2001/XMLSchema'",
    )
    res = load_text(doc).resolve()
    full = res.to_bytes()
    assert b"<T>" in full and b"<late" in full
    system_only = res.to_bytes(system_only=True)
    assert b"<T>" not in system_only and b"<late" in system_only
    assert res.to_bytes() == full and res.to_bytes(system_only=True) == system_only
    tree = res.tree()
    tree.clear()  # a copy: changing it changes nothing else
    assert res.to_bytes() == full
    assert [p.path for p in res.pending] == ["/s/late"]
    assert res.supply({"s/late": "1"}).pending == []
    errors_found, _ = res.check_types()
    assert [e.path for e in errors_found] == ["/T/port", "/s/port"]
    assert res.to_data()["system"]["s"]["port"] == {"@cdl:type": "xsd:int", "#text": "x"}  # type: ignore[index, call-overload]


def test_a_failed_resolution_leaves_the_document_usable() -> None:
    document = load_text(SERVERS)
    with pytest.raises(cdl.CdlError):
        document.resolve({"server2/destination": "x"})
    assert list_xml(document.resolve({"server1/port": "9", "server1/host": "h"}), "server2") == "<server2><destination>9</destination><h>h</h></server2>"


def test_resolution_records_its_rounds() -> None:
    res = load_text(SERVERS).resolve(rounds=[{"set": {"server1/port": "1"}}], values={"server1/host": "h"})
    assert res.rounds == (cdl.Round({"server1/port": "1"}), cdl.Round({"server1/host": "h"}))
    assert res.pending == []


def test_pending_items_are_immutable_values() -> None:
    item = load_text(SERVERS).resolve().pending[0]
    assert item == cdl.Pending("/server1/port", "lazy-property", waiting=("/server2/destination",))
    with pytest.raises(AttributeError):
        item.path = "/x"  # type: ignore[misc]


# ---------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize(
    ("xml", "values", "code", "line", "path", "cls"),
    [
        ("<cdl/>", None, "NOT_CDL", 1, None, errors.LoadError),
        (system("<s>\n<p cdl:lazy='x'/></s>"), None, "BAD_LAZY", 2, "/s/p", errors.LazinessError),
        (system("<s>\n<p cdl:extends='x:y'/></s>"), None, "BAD_QNAME", 2, "/s/p", errors.NameResolutionError),
        (system("<s/>\n<s/>"), None, "DUPLICATE_NAME", 2, "/s", errors.NameResolutionError),
        (system("<s>\n<p cdl:extends='none'/></s>"), None, "UNKNOWN_PROTOTYPE", 2, "/s/p", errors.InheritanceError),
        (system("<s>\n\n<p cdl:ref='/none'/></s>"), None, "REF_NOT_FOUND", 3, "/s/p", errors.ReferenceResolutionError),
        (system("<s>\n<p><cdl:expression value-of='$x'/></p></s>"), None, "EXPR_UNDECLARED_VARIABLE", 2, "/s/p/cdl:expression", errors.ExpressionError),
        (system("<s>\n<p cdl:use='required'/></s>"), None, "REQUIRED_MISSING", 2, "/s/p", errors.RequiredPropertyError),
        (system("<s>\n<p>1</p></s>"), {"s/p": "2"}, "SET_NOT_LAZY", 2, "/s/p", errors.DeployValueError),
        (system("<s><p>1</p></s>"), {"s/q": "2"}, "SET_NOT_FOUND", None, None, errors.DeployValueError),
    ],
)
def test_errors_carry_code_url_line_path(xml: str, values, code: str, line, path, cls) -> None:
    with pytest.raises(cdl.CdlError) as info:
        resolve_text(xml, values)
    error = info.value
    assert isinstance(error, cls)
    assert (error.code, error.url, error.line, error.path) == (code, "mem.cdl", line, path)
    assert code in errors.CODES
    where = "mem.cdl" + (f":{line}" if line else "")
    rendered = f"{where}: [{code}] {error.message}" + (f" (at {path})" if path else "")
    assert error.render() == rendered
    assert str(error) == rendered
    assert error.errors == (error,)


def test_three_unknown_prototypes_are_one_group() -> None:
    xml = f"<cdl:cdl {CDL_DECL}><cdl:system>\n<s cdl:extends='a'/>\n<t cdl:extends='b'/>\n<u><v cdl:extends='c'/></u>\n</cdl:system></cdl:cdl>"
    with pytest.raises(cdl.CdlErrorGroup) as info:
        resolve_text(xml)
    group = info.value
    assert [(e.code, e.url, e.line, e.path) for e in group.errors] == [
        ("UNKNOWN_PROTOTYPE", "mem.cdl", 2, "/s"),
        ("UNKNOWN_PROTOTYPE", "mem.cdl", 3, "/t"),
        ("UNKNOWN_PROTOTYPE", "mem.cdl", 4, "/u/v"),
    ]
    # the group is itself a CdlError with the first error's fields
    assert isinstance(group, cdl.CdlError)
    assert (group.code, group.line, group.path) == ("UNKNOWN_PROTOTYPE", 2, "/s")
    assert group.render() == "\n".join(e.render() for e in group.errors)
    assert all(isinstance(e, errors.InheritanceError) for e in group.errors)


def test_max_errors_bounds_a_group() -> None:
    lists = "".join(f"<s{i} cdl:extends='missing{i}'/>" for i in range(10))
    with pytest.raises(cdl.CdlErrorGroup) as info:
        resolve_text(system(lists), limits=cdl.Limits(max_errors=3))
    assert len(info.value.errors) == 3
    with pytest.raises(cdl.CdlErrorGroup) as info:
        resolve_text(system(lists))
    assert len(info.value.errors) == 10


def test_group_of_groups_is_flat() -> None:
    a = errors.CdlError("a", code="BAD_LAZY")
    b = errors.CdlError("b", code="BAD_USE")
    c = errors.CdlError("c", code="BAD_PATH")
    group = cdl.CdlErrorGroup([a, cdl.CdlErrorGroup([b, c])])
    assert [e.code for e in group.errors] == ["BAD_LAZY", "BAD_USE", "BAD_PATH"]
    with pytest.raises(ValueError):
        cdl.CdlErrorGroup([])


def test_unknown_error_code_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown error code"):
        errors.CdlError("x", code="NOT_A_CODE")


@pytest.mark.parametrize(
    ("cls", "code"),
    [
        (errors.CdlError, "STRUCTURE"),
        (errors.LoadError, "STRUCTURE"),
        (errors.ImportRefusedError, "IMPORT_REFUSED"),
        (errors.NameResolutionError, "BAD_QNAME"),
        (errors.InheritanceError, "UNKNOWN_PROTOTYPE"),
        (errors.ReferenceResolutionError, "REF_NOT_FOUND"),
        (errors.ExpressionError, "BAD_EXPRESSION"),
        (errors.LazinessError, "BAD_LAZY"),
        (errors.RequiredPropertyError, "REQUIRED_MISSING"),
        (errors.DeployValueError, "SET_NOT_FOUND"),
        (errors.LimitError, "LIMIT_EXCEEDED"),
        (errors.ValidationError, "TYPE_INVALID"),
    ],
)
def test_error_class_default_codes(cls, code: str) -> None:
    error = cls("message")
    assert error.code == code
    assert error.render() == f"<input>: [{code}] message"


# ---------------------------------------------------------------------------
# Limits


def test_element_limit_on_references() -> None:
    lists = "<T><a><b>1</b><b>2</b><b>3</b></a></T><S>" + "".join(f"<c{i} cdl:refroot='T' cdl:ref='a'/>" for i in range(20)) + "</S>"
    assert len(resolve_text(config(lists)).to_data()["configuration"]["S"]) == 20
    with pytest.raises(cdl.CdlError) as info:
        resolve_text(config(lists), limits=cdl.Limits(max_elements=30))
    assert info.value.code == "LIMIT_EXCEEDED"
    assert "(max_elements)" in info.value.message


def test_limits_are_frozen() -> None:
    limits = cdl.Limits()
    with pytest.raises(AttributeError):
        limits.max_depth = 1  # type: ignore[misc]
    assert (limits.max_bytes, limits.max_depth, limits.max_errors) == (64 * 1024 * 1024, 10_000, 50)


def test_the_cyclic_collector_is_paused_only_while_working() -> None:
    import gc

    assert gc.isenabled()
    res = load_text(SERVERS).resolve()
    res.to_bytes()
    assert gc.isenabled()
    with pytest.raises(cdl.CdlError):
        load_text(system("<s cdl:extends='Nowhere'/>")).resolve()
    assert gc.isenabled()
    gc.disable()
    try:
        load_text(SERVERS).resolve().to_bytes()
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()


# ---------------------------------------------------------------------------
# Reading the library: reprs, Explanation.to_text, Step.wait_kind, load(base=)

WEBAPP = Path(__file__).resolve().parent.parent / "samples" / "webapp" / "system.cdl"


def test_reprs_say_what_an_object_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(WEBAPP.parent.parent.parent)
    doc = cdl.load("samples/webapp/system.cdl")
    assert repr(doc) == "<cdl.Document 'samples/webapp/system.cdl' (3 documents)>"
    assert repr(load_text(SERVERS)) == "<cdl.Document 'mem.cdl' (1 document)>"
    first = doc.resolve()
    assert repr(first) == "<cdl.Resolution 'samples/webapp/system.cdl' (3 pending)>"
    done = first.supply({"WebApplication/t:DB/t:hostname": "db", "WebApplication/t:Web/t:hostname": "web"})
    assert repr(done) == "<cdl.Resolution 'samples/webapp/system.cdl' (1 round, nothing pending)>"
    plan = first.plan()
    assert repr(plan) == "<cdl.Plan (1 wave, 4 components)>"
    web = plan.waves[0][0].waves[1][0]
    assert repr(web) == "<cdl.PlannedComponent '/WebApplication/t:Web' (wave 2, after /WebApplication/t:DB)>"
    assert repr(plan.waves[0][0]) == "<cdl.PlannedComponent '/WebApplication' (wave 1)>"
    [port] = done.explain("WebApplication/t:Web/t:dbconnection/t:hostname")
    assert repr(port).startswith("<cdl.Explanation '/WebApplication/t:Web/t:dbconnection/t:hostname' = 'db' (")
    [lazy] = first.explain("WebApplication/t:DB/t:hostname")
    assert repr(lazy) == "<cdl.Explanation '/WebApplication/t:DB/t:hostname' pending (4 steps)>"
    # Pending keeps its generated repr: short, and it reads back as the value it is.
    item = load_text(SERVERS).resolve().pending[0]
    assert repr(item) == "Pending(path='/server1/port', kind='lazy-property', waiting=('/server2/destination',), waits_on=())"


def test_explanation_to_text_is_what_cdl_explain_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(WEBAPP.parent.parent.parent)
    from click.testing import CliRunner

    from cdl.cli import main

    path = "WebApplication/t:Web/t:dbconnection/t:hostname"
    explanations = cdl.load("samples/webapp/system.cdl").resolve().explain(path)
    out = CliRunner().invoke(main, ["explain", "samples/webapp/system.cdl", path]).output
    assert out == explanations[0].to_text()
    assert out.startswith("/WebApplication/t:Web/t:dbconnection/t:hostname (pending)\n")


def test_a_pending_step_names_its_kind_wait_kind_and_keeps_the_json_key() -> None:
    [e] = load_text(SERVERS).resolve().explain("server1/port")
    step = e.steps[-1]
    assert step.kind == "pending" and step.wait_kind == "value"
    assert step.to_data()["waiting"] == "value"
    with pytest.warns(DeprecationWarning, match="wait_kind"):
        assert step.waiting == "value"
    with pytest.raises(AttributeError):
        step.waiting = "release"  # type: ignore[misc]


def test_load_bytes_with_a_base_resolves_imports_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "t.cdl").write_text(config("<T><v>from-lib</v></T>"))
    (tmp_path / "outside.cdl").write_text(config("<U/>"))
    main = cdl_doc("<cdl:import location='t.cdl'/><cdl:system><s cdl:extends='T'/></cdl:system>").encode()
    monkeypatch.chdir(tmp_path)  # the old behaviour (the current directory) would not find t.cdl
    for base in (tmp_path / "lib", str(tmp_path / "lib"), (tmp_path / "lib").as_uri(), (tmp_path / "lib").as_uri() + "/"):
        doc = cdl.load(main, base=base, name="main.cdl")
        assert b"<v>from-lib</v>" in doc.resolve().to_bytes()
        assert repr(doc) == "<cdl.Document 'main.cdl' (2 documents)>"  # name still only labels it
    # The base is the allowed root, as a file's directory is.
    escape = cdl_doc("<cdl:import location='../outside.cdl'/><cdl:system><s/></cdl:system>").encode()
    with pytest.raises(cdl.CdlError) as info:
        cdl.load(escape, base=tmp_path / "lib")
    assert "outside the allowed directories" in info.value.message
    with pytest.raises(ValueError, match="neither a directory"):
        cdl.load(main, base="http://example.org/lib/")
    with pytest.raises(TypeError, match="as bytes"):
        cdl.load(WEBAPP, base=tmp_path)
