"""cdl.cli: the ``cdl`` command. Output on stdout only on success, errors as
``file:line: [CODE] message`` on stderr with exit status 1, usage errors exit 2,
``-o`` written atomically, and never a traceback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import cdl
from cdl.cli import main
from conftest import CDL_DECL, PROBE_CODES, cdl_doc, config, probes, system

REPO = Path(__file__).resolve().parent.parent

SERVERS = system(
    "<server1><port cdl:lazy='true'/></server1>"
    "<server2><destination cdl:refroot='server1' cdl:ref='/port'/></server2>",
    configuration="<T><v>1</v></T>",
)


def run(*args: str | os.PathLike[str]):
    return CliRunner().invoke(main, [os.fspath(a) for a in args], catch_exceptions=False)


@pytest.fixture
def servers(write_docs) -> Path:
    return write_docs({"servers.cdl": SERVERS})


# ---------------------------------------------------------------------------
# cdl resolve


def test_resolve_prints_the_library_output(servers: Path) -> None:
    result = run("resolve", servers)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.encode() == cdl.load(servers).resolve().to_bytes()


def test_resolve_system_only(servers: Path) -> None:
    result = run("resolve", "--system-only", servers)
    assert result.exit_code == 0
    assert result.stdout.encode() == cdl.load(servers).resolve().to_bytes(system_only=True)
    assert "cdl:configuration" not in result.stdout and "<cdl:system>" in result.stdout


def test_resolve_set_and_release(write_docs) -> None:
    main_path = write_docs(
        {"m.cdl": system("<S><p cdl:lazy='true'/><r cdl:ref='/p'/><l cdl:ref='/p' cdl:lazy='true'/><q cdl:lazy='true'/></S>")}
    )
    result = run("resolve", main_path, "--set", "S/p=v=1", "--set", "S/q=", "--release", "S/l")
    assert (result.exit_code, result.stderr) == (0, "")
    expected = cdl.load(main_path).resolve({"S/p": "v=1", "S/q": ""}, release=["S/l"]).to_bytes()
    assert result.stdout.encode() == expected
    assert "<p>v=1</p>" in result.stdout and "<r>v=1</r>" in result.stdout and "<l>v=1</l>" in result.stdout


def test_resolve_samples() -> None:
    result = run("resolve", REPO / "samples" / "webapp" / "system.cdl", "--set", "WebApplication/t:DB/t:hostname=db.example.org")
    assert result.exit_code == 0
    assert "<t:hostname>db.example.org</t:hostname>" in result.stdout


# ---------------------------------------------------------------------------
# -o: atomic


def test_output_file(servers: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "resolved.cdl"
    out.parent.mkdir()
    result = run("resolve", servers, "-o", out)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    assert out.read_bytes() == cdl.load(servers).resolve().to_bytes()
    assert os.listdir(out.parent) == ["resolved.cdl"]


def test_output_file_not_created_on_error(write_docs, tmp_path: Path) -> None:
    bad = write_docs({"bad.cdl": system("<S><p cdl:ref='/missing'/></S>")})
    out = tmp_path / "out.cdl"
    result = run("resolve", bad, "-o", out)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.cdl"]


def test_existing_output_file_untouched_on_error(write_docs, tmp_path: Path) -> None:
    bad = write_docs({"bad.cdl": system("<S><p cdl:ref='/missing'/></S>")})
    out = tmp_path / "out.cdl"
    out.write_bytes(b"previous content")
    before = out.stat()
    result = run("resolve", bad, "-o", out, "--set", "S/p=1")
    assert result.exit_code == 1
    assert out.read_bytes() == b"previous content"
    assert out.stat().st_mtime_ns == before.st_mtime_ns
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.cdl", "out.cdl"]


def test_existing_output_file_replaced_on_success(servers: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.cdl"
    out.write_bytes(b"previous content")
    assert run("resolve", servers, "-o", out).exit_code == 0
    assert out.read_bytes() == cdl.load(servers).resolve().to_bytes()


# ---------------------------------------------------------------------------
# cdl pending


def test_pending(servers: Path) -> None:
    result = run("pending", servers)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == "/server1/port\tlazy-property\twaited on by /server2/destination\n/server2/destination\treference\n"


def test_pending_after_set(servers: Path) -> None:
    result = run("pending", servers, "--set", "server1/port=80")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")


def test_pending_lazy_reference(write_docs) -> None:
    path = write_docs({"m.cdl": system("<S><a>1</a><r cdl:ref='/a' cdl:lazy='true'/></S>")})
    assert run("pending", path).stdout == "/S/r\tlazy-reference\n"
    assert run("pending", path, "--release", "S/r").stdout == ""


TEMPLATES = "<T><port cdl:lazy='true'/><host cdl:lazy='true'/></T><U><x cdl:lazy='true'/></U>"
SYSTEM = "<S cdl:extends='T'/><R><p cdl:refroot='T' cdl:ref='/host'/></R>"


def test_pending_lists_what_the_system_waits_for(write_docs) -> None:
    """The system's items, and the template's lazy host that a system reference reads;
    not the templates' own lazy port and x, which no deployment of the system waits for."""
    path = write_docs({"m.cdl": system(SYSTEM, configuration=TEMPLATES)})
    result = run("pending", path)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == (
        "/T/host\tlazy-property\twaited on by /R/p\n"
        "/S/port\tlazy-property\n"
        "/S/host\tlazy-property\n"
        "/R/p\treference\n"
    )
    assert run("pending", path, "--all").stdout == (
        "/T/port\tlazy-property\n"
        "/T/host\tlazy-property\twaited on by /R/p\n"
        "/U/x\tlazy-property\n"
        "/S/port\tlazy-property\n"
        "/S/host\tlazy-property\n"
        "/R/p\treference\n"
    )
    result = cdl.load(path).resolve()
    assert [p.path for p in result.system_pending] == ["/T/host", "/S/port", "/S/host", "/R/p"]
    assert [p.path for p in result.pending] == ["/T/port", "/T/host", "/U/x", "/S/port", "/S/host", "/R/p"]


def test_pending_of_a_template_library_lists_the_templates(write_docs) -> None:
    path = write_docs({"m.cdl": config(TEMPLATES)})
    expected = "/T/port\tlazy-property\n/T/host\tlazy-property\n/U/x\tlazy-property\n"
    assert run("pending", path).stdout == expected
    assert run("pending", path, "--all").stdout == expected


# ---------------------------------------------------------------------------
# Usage errors: exit 2


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["resolve"],
        ["pending"],
        ["resolve", "{file}", "--set", "no-equals-sign"],
        ["resolve", "{file}", "--set", "=value"],
        ["resolve", "{file}", "--no-such-option"],
        ["resolve", "{file}", "--max-depth", "0"],
        ["resolve", "{file}", "--max-elements", "lots"],
        ["resolve", "{file}", "-o"],
        ["frobnicate", "{file}"],
        ["validate"],
    ],
)
def test_usage_errors_exit_2(servers: Path, args: list[str]) -> None:
    result = run(*[a.replace("{file}", str(servers)) for a in args])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "Usage:" in result.stderr or result.stderr.startswith("Error: ")


# ---------------------------------------------------------------------------
# Every error: exit 1, `file:line: [CODE] message` on stderr, nothing on stdout


ERRORS = [
    ("not-cdl.cdl", "<cdl xmlns='urn:x'/>", [], "NOT_CDL", 1),
    ("syntax.cdl", f"<cdl:cdl {CDL_DECL}>\n<cdl:system>\n<s>", [], "XML_SYNTAX", 3),
    ("dtd.cdl", "<!DOCTYPE x>\n" + system("<s/>"), [], "XML_DTD", 1),
    ("structure.cdl", cdl_doc("\n<cdl:system><s/></cdl:system>\n<cdl:configuration/>"), [], "STRUCTURE", 3),
    ("lazy.cdl", system("<s>\n<p cdl:lazy='maybe'/></s>"), [], "BAD_LAZY", 2),
    ("use.cdl", system("<s>\n<p cdl:use='always'/></s>"), [], "BAD_USE", 2),
    ("path.cdl", system("<s>\n<p cdl:ref='a//b'/></s>"), [], "BAD_PATH", 2),
    ("qname.cdl", system("<s>\n<p cdl:extends='u:x'/></s>"), [], "BAD_QNAME", 2),
    ("dup.cdl", system("<s/>\n<s/>"), [], "DUPLICATE_NAME", 2),
    ("proto.cdl", system("<s>\n<p cdl:extends='nothing'/></s>"), [], "UNKNOWN_PROTOTYPE", 2),
    ("cycle.cdl", system("<s cdl:extends='t'/>\n<t cdl:extends='s'/>"), [], "EXTENDS_CYCLE", 1),
    ("notfound.cdl", system("<s>\n\n<p cdl:ref='/x'/></s>"), [], "REF_NOT_FOUND", 3),
    ("above.cdl", system("<s>\n<p cdl:ref='../x'/></s>"), [], "REF_ABOVE_TOP", 2),
    ("refcycle.cdl", system("<s>\n<p cdl:ref='/q'/><q cdl:ref='/p'/></s>"), [], "REF_CYCLE", 2),
    ("refroot.cdl", system("<s>\n<p cdl:refroot='nope' cdl:ref='/x'/></s>"), [], "UNKNOWN_REFROOT", 2),
    ("children.cdl", system("<s>\n<p cdl:ref='/x'>1</p></s>"), [], "REF_WITH_CHILDREN", 2),
    ("expr.cdl", system("<s>\n<p><cdl:expression value-of='concat('/></p></s>"), [], "BAD_EXPRESSION", 2),
    ("exprpath.cdl", system("<s>\n<p><cdl:expression value-of='a/b'/></p></s>"), [], "EXPR_LOCATION_PATH", 2),
    ("exprvar.cdl", system("<s>\n<p><cdl:expression value-of='$v'/></p></s>"), [], "EXPR_UNDECLARED_VARIABLE", 2),
    ("required.cdl", system("<s>\n<p cdl:use='required'/></s>"), [], "REQUIRED_MISSING", 2),
    ("notlazy.cdl", system("<s>\n<p>1</p></s>"), ["--set", "s/p=2"], "SET_NOT_LAZY", 2),
    ("setnotfound.cdl", system("<s><p>1</p></s>"), ["--set", "s/q=2"], "SET_NOT_FOUND", None),
    ("badset.cdl", system("<s><p>1</p></s>"), ["--set", "s//p=2"], "BAD_SET", None),
    ("unresolved.cdl", system("<s><p cdl:lazy='true'/>\n<r cdl:ref='/p' cdl:lazy='true'/></s>"), ["--release", "s/r"], "LAZY_UNRESOLVED", 2),
    ("import.cdl", cdl_doc("\n<cdl:import location='missing.cdl'/><cdl:system><s/></cdl:system>"), [], "IMPORT_NOT_FOUND", 2),
    ("remote.cdl", cdl_doc("\n<cdl:import location='http://127.0.0.1:9/x.cdl'/><cdl:system><s/></cdl:system>"), [], "IMPORT_REFUSED", 2),
]


@pytest.mark.parametrize(("name", "text", "extra", "code", "line"), ERRORS, ids=[e[3] for e in ERRORS])
@pytest.mark.parametrize("command", ["resolve", "pending"])
def test_errors_exit_1_with_one_line_format(write_docs, command: str, name: str, text: str, extra: list[str], code: str, line: int | None) -> None:
    path = write_docs({name: text})
    result = run(command, path, *extra)
    assert result.exit_code == 1
    assert result.stdout == ""
    where = f"{path}:{line}" if line else f"{path}"
    lines = result.stderr.splitlines()
    assert lines, "nothing on stderr"
    assert re.match(rf"{re.escape(where)}: \[{code}\] \S", lines[0]), lines[0]
    assert "Traceback" not in result.stderr


def test_missing_file_is_an_error_not_usage(tmp_path: Path) -> None:
    result = run("resolve", tmp_path / "nope.cdl")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"{tmp_path / 'nope.cdl'}: [IO_ERROR] ")


def test_several_errors_one_line_each(write_docs) -> None:
    path = write_docs({"m.cdl": system("<s>\n<a cdl:extends='n1'/>\n<b cdl:extends='n2'/>\n<c cdl:extends='n3'/></s>")})
    result = run("resolve", path)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"{path}:2: [UNKNOWN_PROTOTYPE] cdl:extends names 'n1', which is no top level list (at /s/a)",
        f"{path}:3: [UNKNOWN_PROTOTYPE] cdl:extends names 'n2', which is no top level list (at /s/b)",
        f"{path}:4: [UNKNOWN_PROTOTYPE] cdl:extends names 'n3', which is no top level list (at /s/c)",
    ]


def test_import_path_and_limits_options(write_docs, tmp_path: Path) -> None:
    path = write_docs(
        {
            "proj/m.cdl": cdl_doc("<cdl:import location='../lib/t.cdl'/><cdl:system><s cdl:extends='T'/></cdl:system>"),
            "lib/t.cdl": cdl_doc("<cdl:configuration><T><v>1</v></T></cdl:configuration>"),
        }
    )
    refused = run("resolve", path)
    assert refused.exit_code == 1 and "[IMPORT_REFUSED]" in refused.stderr
    allowed = run("resolve", path, "--import-path", tmp_path / "lib")
    assert allowed.exit_code == 0 and "<v>1</v>" in allowed.stdout
    limited = run("resolve", path, "--import-path", tmp_path / "lib", "--max-imports", "0")
    assert limited.exit_code == 1 and "[LIMIT_EXCEEDED]" in limited.stderr and "(max_imports)" in limited.stderr


# ---------------------------------------------------------------------------
# The probes, through a real process: exit 1, the file named, no traceback


def test_every_probe_has_an_expected_code() -> None:
    assert sorted(p.name for p in probes().glob("*.cdl")) == sorted(PROBE_CODES)


@pytest.mark.parametrize(("name", "code"), sorted(PROBE_CODES.items()))
@pytest.mark.parametrize("command", ["resolve", "pending"])
def test_probe(command: str, name: str, code: str, tmp_path: Path) -> None:
    probe = probes() / name
    out = tmp_path / "out.cdl"
    args = [sys.executable, "-m", "cdl", command, str(probe)] + (["-o", str(out)] if command == "resolve" else [])
    proc = subprocess.run(args, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"{probe}:")
    assert f"[{code}]" in proc.stderr.splitlines()[0]
    assert not out.exists()


#: Saved inputs of ours refused the way the probes are (tests/data/robustness/NAME/main.cdl).
OWN_PROBES = {"expression-in-variable": ("BAD_EXPRESSION", 5, "/S/v/cdl:expression")}


@pytest.mark.parametrize(("name", "refusal"), sorted(OWN_PROBES.items()))
@pytest.mark.parametrize("command", ["resolve", "pending", "plan"])
def test_own_probe(command: str, name: str, refusal: tuple[str, int, str], tmp_path: Path) -> None:
    code, line, path = refusal
    probe = Path(__file__).resolve().parent / "data" / "robustness" / name / "main.cdl"
    proc = subprocess.run([sys.executable, "-m", "cdl", command, str(probe)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"{probe}:{line}: [{code}] ")
    assert proc.stderr.splitlines()[0].endswith(f"(at {path})")
    assert "Traceback" not in proc.stderr


def test_console_script_module_entry(servers: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "cdl", "resolve", str(servers)], capture_output=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout == cdl.load(servers).resolve().to_bytes()


# ---------------------------------------------------------------------------
# help text


def _commands(command: click.Command, name: str = "cdl") -> list[tuple[str, click.Command]]:
    """``command`` and every command under it, by full name (``cdl resolve``)."""
    found = [(name, command)]
    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name=name)
        for sub in command.list_commands(ctx):
            subcommand = command.get_command(ctx, sub)
            assert subcommand is not None
            found += _commands(subcommand, f"{name} {sub}")
    return found


def _summary(command: click.Command) -> str:
    """The docstring's first paragraph, which ``cdl --help`` must show whole."""
    return " ".join((command.help or "").partition("\n\n")[0].split())


def _listed_summaries(help_text: str) -> dict[str, str]:
    """The Commands section of ``cdl --help``: name -> summary, wrapped lines joined."""
    listed: dict[str, str] = {}
    name = ""
    for line in help_text.partition("\nCommands:\n")[2].splitlines():
        first, _, rest = line.strip().partition(" ")
        if line.startswith("  ") and not line.startswith("   "):
            name, listed[first] = first, rest.strip()
        elif line.strip():
            listed[name] += " " + line.strip()
    return listed


@pytest.mark.parametrize("width", [80, 50])
def test_cdl_help_shows_each_commands_whole_summary(width: int) -> None:
    result = CliRunner().invoke(main, ["--help"], terminal_width=width)
    assert result.exit_code == 0
    expected = {name: _summary(command) for name, command in main.commands.items()}
    assert all(summary.endswith(".") and summary.count(". ") == 0 for summary in expected.values()), expected
    assert _listed_summaries(result.stdout) == expected
    assert "..." not in result.stdout.partition("\nCommands:\n")[2]
    if width == 80:  # a one-line summary on the usual terminal
        assert len(result.stdout.partition("\nCommands:\n")[2].splitlines()) == len(expected)


@pytest.mark.parametrize(("name", "command"), _commands(main), ids=[name for name, _ in _commands(main)])
def test_every_option_has_help_and_none_sends_the_reader_to_the_readme(name: str, command: click.Command) -> None:
    options = [p for p in command.get_params(click.Context(command, info_name=name)) if isinstance(p, click.Option)]
    assert options
    for option in options:
        assert option.help and option.help.strip(), f"{name} {option.opts[0]} has no help"
        assert "README" not in option.help, f"{name} {option.opts[0]}: {option.help}"
    assert _summary(command), f"{name} has no summary"
    result = CliRunner().invoke(main, [*name.split()[1:], "--help"])
    assert result.exit_code == 0 and "README" not in result.stdout


# ---------------------------------------------------------------------------
# cdl validate agrees with cdl resolve (issue 26, point 6)


def test_validate_reports_a_missing_file_as_resolve_does(tmp_path: Path) -> None:
    absent = tmp_path / "absent.cdl"
    resolved, validated = run("resolve", absent), run("validate", absent)
    assert (validated.exit_code, validated.stdout) == (1, "")
    assert validated.stderr == resolved.stderr
    assert "[IO_ERROR]" in validated.stderr and "Traceback" not in validated.stderr


def test_validate_follows_imports_and_writes_list_paths(write_docs, tmp_path: Path) -> None:
    main_cdl = write_docs(
        {
            "app/main.cdl": cdl_doc('<cdl:import location="lib.cdl"/>'),
            "app/lib.cdl": cdl_doc("<cdl:configuration>\n<List>\n<child cdl:use='always'/></List></cdl:configuration>"),
        }
    )
    result = run("validate", main_cdl)
    assert result.exit_code == 1
    lib = main_cdl.parent / "lib.cdl"
    assert result.stderr.startswith(f"{lib}:3: [SCHEMA_INVALID] ")
    assert result.stderr.rstrip().endswith("(at /List/child)")


def test_validate_takes_catalog_and_import_path_as_resolve_does(write_docs, tmp_path: Path) -> None:
    main_cdl = write_docs(
        {
            "app/main.cdl": cdl_doc(
                '<cdl:import location="http://example.com/t.cdl"/><cdl:import location="../shared/s.cdl"/>'
            ),
            "repo/t.cdl": cdl_doc("<cdl:configuration><T/></cdl:configuration>"),
            "repo/catalog.xml": '<catalog xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog">'
            '<uri name="http://example.com/t.cdl" uri="t.cdl"/></catalog>',
            "shared/s.cdl": cdl_doc("<cdl:configuration><S/></cdl:configuration>"),
        }
    )
    refused = run("validate", main_cdl)
    assert refused.exit_code == 1
    assert refused.stderr.count("[IMPORT_REFUSED]") == 2
    options = ["--catalog", tmp_path / "repo/catalog.xml", "--import-path", tmp_path / "shared"]
    assert run("resolve", main_cdl, *options).exit_code == 0
    result = run("validate", main_cdl, *options)
    assert (result.exit_code, result.stderr) == (0, "1 document(s) valid\n")
