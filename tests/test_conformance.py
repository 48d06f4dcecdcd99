"""The conformance suite through the library, and tests of the harness itself.

The harness tests use the fixture suite in ``tests/data/conformance/suite`` and
a fake processor that echoes its input, so they do not depend on the engine.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

import cdl
from cdl.conformance import Case, CaseRound, bundled_suite, compare, load_suite, run_case, run_suite
from cdl.errors import CdlError

HERE = Path(__file__).resolve().parent
REPO_CASES = HERE.parent / "src" / "cdl" / "conformance_cases"
DATA = HERE / "data" / "conformance"
SUITE = DATA / "suite"
PYTHON = shlex.quote(sys.executable)
PROCESSOR = f"{PYTHON} {shlex.quote(str(DATA / 'fake_processor.py'))} {{input}}"

REPO_SUITE = load_suite(REPO_CASES) if REPO_CASES.is_dir() else []


@pytest.mark.parametrize("case", REPO_SUITE, ids=[c.name for c in REPO_SUITE])
def test_case(case: Case) -> None:
    result = run_case(case)
    assert result.outcome == "passed", f"{case.name} ({case.section}): {result.message}"


@pytest.mark.skipif(not REPO_CASES.is_dir(), reason="no src/cdl/conformance_cases directory")
def test_suite_has_cases() -> None:
    assert REPO_SUITE, f"no case (directory with case.json) under {REPO_CASES}"


# ---------------------------------------------------------------------------
# Discovery


def fixture_case(name: str) -> Case:
    """The case of the fixture suite called ``name``."""
    (case,) = [c for c in load_suite(SUITE) if c.name == name]
    return case


def test_load_suite_sorts_by_section_then_name() -> None:
    assert [(c.section, c.name) for c in load_suite(SUITE)] == [
        ("6", "documents/not-cdl"),
        ("7.2.2.1", "prototypes/fail-text"),
        ("7.2.2.1", "prototypes/pass-prefixes"),
        ("7.3.1", "references/error-missed"),
        ("7.5.2.2", "lazy/rounds"),
        ("B", "appendix/system-only"),
    ]


def test_load_suite_reads_every_field() -> None:
    case = fixture_case("lazy/rounds")
    assert case.directory == SUITE / "lazy" / "rounds"
    assert case.main_path == case.directory / "main.cdl"
    assert (case.expect, case.error, case.problem) == ("expected.cdl", None, None)
    assert case.rounds == (CaseRound((("server1/port", "8080"),), ()),)
    assert case.rounds[0].as_dict() == {"set": {"server1/port": "8080"}, "release": []}
    assert fixture_case("prototypes/pass-prefixes").annotations is False
    assert fixture_case("appendix/system-only").system_only is True
    assert fixture_case("documents/not-cdl").error == "NOT_CDL"


def write_case(directory: Path, data: Any) -> None:
    """A case directory with ``data`` as case.json (a str is written as is)."""
    directory.mkdir(parents=True)
    (directory / "case.json").write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")


def test_sections_sort_numerically(tmp_path: Path) -> None:
    for i, section in enumerate(["B", "10", "7.10", "9", "7.2.1", "7.2"]):
        write_case(tmp_path / f"c{i}", {"section": section, "description": "d", "error": "NOT_CDL"})
    assert [c.section for c in load_suite(tmp_path)] == ["7.2", "7.2.1", "7.10", "9", "10", "B"]


def test_load_suite_needs_a_directory(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        load_suite(tmp_path / "missing")


GOOD = {"section": "7.2", "description": "d", "expect": "expected.cdl"}


@pytest.mark.parametrize(
    ("data", "complaint"),
    [
        ("{", "cannot be read"),
        ('{"section": "7.2", "section": "7.3"}', "appears twice"),
        ([], "JSON object"),
        ({**GOOD, "erorr": "NOT_CDL"}, "unknown key(s) 'erorr'"),
        ({k: v for k, v in GOOD.items() if k != "section"}, "'section'"),
        ({**GOOD, "section": "7.2."}, "'section'"),
        ({**GOOD, "description": "two\nlines"}, "'description'"),
        ({**GOOD, "error": "NOT_CDL"}, "exactly one of"),
        ({k: v for k, v in GOOD.items() if k != "expect"}, "exactly one of"),
        ({**{k: v for k, v in GOOD.items() if k != "expect"}, "error": "NO_SUCH_CODE"}, "'NO_SUCH_CODE'"),
        ({**GOOD, "main": 3}, "'main'"),
        ({**GOOD, "rounds": {"set": {}}}, "'rounds' must be a list"),
        ({**GOOD, "rounds": [{"set": {"a/b": 1}}]}, "round 1: 'set'"),
        ({**GOOD, "rounds": [{"release": "a/b"}]}, "round 1: 'release'"),
        ({**GOOD, "rounds": [{"sett": {}}]}, "round 1 must be"),
        ({**GOOD, "annotations": "no"}, "'annotations'"),
        ({**GOOD, "system_only": 1}, "'system_only'"),
        ({**GOOD, "statements": "S1"}, "'statements'"),
    ],
)
def test_malformed_case_json_fails_that_case(tmp_path: Path, data: Any, complaint: str) -> None:
    write_case(tmp_path / "group" / "bad", data)
    (case,) = load_suite(tmp_path)
    assert case.name == "group/bad"
    assert case.problem is not None and complaint in case.problem
    result = run_case(case, PROCESSOR)
    assert (result.outcome, result.message) == ("failed", case.problem)
    assert result.message.startswith("case.json ")


def test_malformed_case_keeps_readable_section(tmp_path: Path) -> None:
    write_case(tmp_path / "bad", {"section": "7.3.1", "description": "d"})
    write_case(tmp_path / "worse", "not json")
    assert [c.section for c in load_suite(tmp_path)] == ["7.3.1", "?"]


# ---------------------------------------------------------------------------
# External processors


def test_external_passing_case() -> None:
    result = run_case(fixture_case("prototypes/pass-prefixes"), PROCESSOR)
    assert (result.outcome, result.message) == ("passed", "")


def test_external_failing_case_reports_the_difference() -> None:
    result = run_case(fixture_case("prototypes/fail-text"), PROCESSOR)
    assert result.outcome == "failed"
    assert result.message == "at /cdl:configuration/t:Server/t:port[2]: expected text '8081', found text '8080'"


def test_external_error_case_passes_on_failure_status() -> None:
    assert run_case(fixture_case("documents/not-cdl"), PROCESSOR).outcome == "passed"
    missed = run_case(fixture_case("references/error-missed"), PROCESSOR)
    assert missed.outcome == "failed"
    assert "expected an error (REF_NOT_FOUND)" in missed.message


def test_external_system_only() -> None:
    assert run_case(fixture_case("appendix/system-only"), PROCESSOR).outcome == "passed"


def test_external_skips_rounds() -> None:
    # "exit 0" would fail an expect case if it ran: skipped means not run.
    result = run_case(fixture_case("lazy/rounds"), "exit 0 {input}")
    assert result.outcome == "skipped"
    assert "rounds" in result.message


def test_input_is_absolute_quoted_and_run_in_the_case_directory(tmp_path: Path) -> None:
    # The fake processor refuses a relative path and reads the file by its
    # name from the working directory; the quote and space test the quoting.
    target = tmp_path / "a dir" / "it's here"
    shutil.copytree(SUITE / "prototypes" / "pass-prefixes", target)
    (case,) = load_suite(tmp_path)
    assert run_case(case, PROCESSOR).outcome == "passed"


@pytest.mark.parametrize(
    ("name", "command", "complaint"),
    [
        ("prototypes/pass-prefixes", f"{PYTHON} -c 'import sys; sys.stderr.write(\"boom\"); sys.exit(3)' {{input}}",
         "processor exited with status 3:\nboom"),
        ("prototypes/pass-prefixes", f"{PYTHON} -c 'print(\"not xml\")' {{input}}", "processor output is not XML"),
        ("prototypes/pass-prefixes", "no-such-processor-for-cdl {input}", "processor could not be run"),
        # A command that cannot run must not pass the error cases.
        ("documents/not-cdl", "no-such-processor-for-cdl {input}", "processor could not be run"),
    ],
    ids=["status", "not-xml", "not-found", "not-found-error-case"],
)
def test_external_processor_problems(name: str, command: str, complaint: str) -> None:
    result = run_case(fixture_case(name), command)
    assert result.outcome == "failed"
    assert complaint in result.message


def test_external_timeout_kills_the_processor(tmp_path: Path) -> None:
    # The inner shell is a grandchild that holds the output pipe: the whole
    # process group must be killed, not just the outer shell. Were it left
    # alive, run_case would wait for the pipe to close and the grandchild
    # would live to write its marker.
    marker = tmp_path / "survived"
    command = f"sh -c 'sleep 2; touch {marker}'; echo {{input}}"
    result = run_case(fixture_case("prototypes/pass-prefixes"), command, timeout=0.5)
    assert (result.outcome, result.message) == ("failed", "processor timed out after 0.5 s")
    assert not marker.exists()


def test_processor_needs_input_placeholder() -> None:
    with pytest.raises(ValueError, match="{input}"):
        run_case(fixture_case("prototypes/pass-prefixes"), "cat main.cdl")
    with pytest.raises(ValueError, match="{input}"):
        run_suite(SUITE, "cat main.cdl", echo=lambda line: None)


def test_bad_expected_output_fails_the_case(tmp_path: Path) -> None:
    target = tmp_path / "case"
    shutil.copytree(SUITE / "prototypes" / "pass-prefixes", target)
    (target / "expected.cdl").write_text("<cdl/>", encoding="utf-8")
    (case,) = load_suite(tmp_path)
    result = run_case(case, PROCESSOR)
    assert result.outcome == "failed"
    assert result.message.startswith("bad expected output expected.cdl: ")


# ---------------------------------------------------------------------------
# The suite report


def run_fixture_suite(suite: Path = SUITE, **options: Any) -> tuple[int, list[str]]:
    lines: list[str] = []
    status = run_suite(suite, PROCESSOR, echo=lines.append, **options)
    return status, "\n".join(lines).splitlines()


def test_run_suite_report() -> None:
    status, lines = run_fixture_suite()
    assert status == 1
    assert lines[-1] == "3 passed, 2 failed, 1 skipped"
    assert lines[0].split() == ["section", "passed", "failed", "skipped"]
    table = [line.split() for line in lines[1:lines.index("")]]
    assert table == [
        ["6", "1", "0", "0"],
        ["7.2", "1", "1", "0"],
        ["7.3", "0", "1", "0"],
        ["7.5", "0", "0", "1"],
        ["B", "1", "0", "0"],
    ]
    failed = [line for line in lines if line.startswith("FAILED ")]
    assert [line.split()[1] for line in failed] == [
        str(SUITE / "prototypes" / "fail-text"),
        str(SUITE / "references" / "error-missed"),
    ]
    difference = lines[lines.index(failed[0]) + 1]
    assert difference == "  at /cdl:configuration/t:Server/t:port[2]: expected text '8081', found text '8080'"


def test_run_suite_all_passed() -> None:
    status, lines = run_fixture_suite(SUITE / "appendix")
    assert status == 0
    assert lines[-1] == "1 passed, 0 failed"
    assert not any(line.startswith("FAILED") for line in lines)


def test_run_suite_writes_junit(tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    run_fixture_suite(junit=report)
    assert [p.name for p in tmp_path.iterdir()] == ["report.xml"]  # no temporary file left
    root = etree.parse(str(report)).getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("6", "2", "1")
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert list(suites) == ["6", "7.2", "7.3", "7.5", "B"]
    assert (suites["7.2"].get("tests"), suites["7.2"].get("failures"), suites["7.2"].get("skipped")) == ("2", "1", "0")
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["prototypes/fail-text"].get("classname") == "7.2.2.1"
    failure = cases["prototypes/fail-text"].find("failure")
    assert failure is not None and "t:port[2]" in failure.get("message", "")
    assert cases["lazy/rounds"].find("skipped") is not None
    assert len(cases["prototypes/pass-prefixes"]) == 0


def test_run_suite_survives_malformed_cases(tmp_path: Path) -> None:
    write_case(tmp_path / "bad", "[")
    lines: list[str] = []
    assert run_suite(tmp_path, PROCESSOR, echo=lines.append) == 1
    assert lines[-1] == "0 passed, 1 failed"


# ---------------------------------------------------------------------------
# The library path, with a stand-in for the engine


class FakeEngine:
    """Stands in for cdl.load: raises ``error`` or "resolves" to the main document."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error
        self.path: Path | None = None
        self.rounds: list[dict[str, Any]] | None = None
        self.system_only: bool | None = None

    def load(self, path: Path) -> FakeEngine:
        if self.error is not None:
            raise self.error
        self.path = Path(path)
        return self

    def resolve(self, rounds: list[dict[str, Any]]) -> FakeEngine:
        self.rounds = rounds
        return self

    def tree(self, system_only: bool = False) -> etree._Element:
        self.system_only = system_only
        assert self.path is not None
        return etree.parse(str(self.path)).getroot()


@pytest.mark.parametrize(
    ("name", "error", "outcome", "message"),
    [
        ("prototypes/pass-prefixes", None, "passed", ""),
        ("prototypes/fail-text", None, "failed", "at /cdl:configuration/t:Server/t:port[2]"),
        ("documents/not-cdl", CdlError("wrong namespace", code="NOT_CDL"), "passed", ""),
        ("documents/not-cdl", CdlError("bad XML", code="XML_SYNTAX"), "failed",
         "expected error NOT_CDL, got XML_SYNTAX: <input>: [XML_SYNTAX] bad XML"),
        ("references/error-missed", None, "failed", "expected error REF_NOT_FOUND, but resolution succeeded"),
        ("prototypes/pass-prefixes", CdlError("gone", code="IO_ERROR"), "failed", "unexpected error: "),
        ("prototypes/pass-prefixes", KeyError("oops"), "failed", "crashed with KeyError: 'oops'"),
    ],
    ids=["pass", "difference", "error", "wrong-code", "no-error", "unexpected-error", "crash"],
)
def test_library_outcomes(
    monkeypatch: pytest.MonkeyPatch, name: str, error: BaseException | None, outcome: str, message: str
) -> None:
    monkeypatch.setattr(cdl, "load", FakeEngine(error).load, raising=False)
    result = run_case(fixture_case(name))
    assert result.outcome == outcome
    assert result.message.startswith(message)


def test_library_receives_rounds_and_system_only(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = FakeEngine()
    monkeypatch.setattr(cdl, "load", engine.load, raising=False)
    case = fixture_case("lazy/rounds")
    run_case(case)  # its outcome is the fake's business; what it was given is ours
    assert engine.path == case.main_path
    assert engine.rounds == [{"set": {"server1/port": "8080"}, "release": []}]
    assert engine.system_only is False
    assert run_case(fixture_case("appendix/system-only")).outcome == "passed"
    assert engine.system_only is True



def test_deploy_arguments_expand_one_round() -> None:
    """``{args}`` carries a one-round case's values as cdl resolve options."""
    from dataclasses import replace

    from cdl.conformance import deploy_arguments

    case = next(c for c in load_suite(SUITE) if c.name == "lazy/rounds")
    one = replace(case, rounds=(CaseRound((("S/p", "a b"), ("S/q", "x'y")), ("S/r",)),))
    assert deploy_arguments(one) == "--set 'S/p=a b' --set 'S/q=x'\"'\"'y' --release S/r"
    assert deploy_arguments(replace(case, rounds=())) == ""
    assert deploy_arguments(replace(case, rounds=one.rounds * 2)) is None


def test_suite_runs_through_the_cli_with_deploy_values() -> None:
    """Cases with deploy-time values pass through `cdl resolve` itself."""
    cases = [c for c in REPO_SUITE if len(c.rounds) == 1][:3]
    assert cases, "the suite has cases with one deploy-time round"
    command = f"{shlex.quote(sys.executable)} -m cdl.cli resolve {{input}} {{args}}"
    for case in cases:
        result = run_case(case, command)
        assert result.outcome == "passed", f"{case.name}: {result.message}"


# ---------------------------------------------------------------------------
# Documents as deep as the engine resolves

DEEP = 3000  # beyond libxml2's 256 levels and Python's recursion limit


def _deep_document(body: str) -> str:
    return f'<cdl:cdl xmlns:cdl="{cdl.CDL_NS}"><cdl:configuration>{body}</cdl:configuration></cdl:cdl>'


def _nested(leaf: str) -> str:
    return "<n>" * DEEP + f"<leaf>{leaf}</leaf>" + "</n>" * DEEP


def _deep_case(directory: Path, expected_leaf: str) -> Case:
    directory.mkdir()
    (directory / "main.cdl").write_text(_deep_document(f'<a>{_nested("x")}</a><b cdl:extends="a"/>'))
    (directory / "expected.cdl").write_text(_deep_document(f"<a>{_nested('x')}</a><b>{_nested(expected_leaf)}</b>"))
    (directory / "case.json").write_text(json.dumps({"section": "7.2", "description": "deep", "expect": "expected.cdl"}))
    (case,) = load_suite(directory)
    return case


def test_harness_compares_documents_as_deep_as_the_engine_resolves(tmp_path: Path) -> None:
    result = run_case(_deep_case(tmp_path / "same", "x"))
    assert (result.outcome, result.message) == ("passed", "")
    cli = f"{PYTHON} -m cdl.cli resolve {{input}}"
    result = run_case(_deep_case(tmp_path / "cli", "x"), cli)
    assert (result.outcome, result.message) == ("passed", "")


def test_harness_finds_a_difference_deep_down(tmp_path: Path) -> None:
    result = run_case(_deep_case(tmp_path / "differs", "y"))
    assert result.outcome == "failed"
    path, found = result.message.split("\n")
    assert path == "at /cdl:configuration/b" + "/n" * DEEP + "/leaf"
    assert found == "  expected text 'y', found text 'x'"


def test_compare_walks_deeper_than_the_recursion_limit() -> None:
    def tree(leaf: str) -> etree._Element:
        root = etree.Element(f"{{{cdl.CDL_NS}}}cdl", nsmap={"cdl": cdl.CDL_NS})
        el = etree.SubElement(root, f"{{{cdl.CDL_NS}}}configuration")
        for _ in range(DEEP):
            el = etree.SubElement(el, "n")
        el.text = leaf
        return root

    assert sys.getrecursionlimit() < DEEP
    assert compare(tree("x"), tree("x")) is None
    diff = compare(tree("x"), tree("y"))
    assert diff is not None and diff.path == "/cdl:configuration" + "/n" * DEEP


# ---------------------------------------------------------------------------
# The suite shipped with the package, for implementers of other processors



def _cdl_from(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`cdl ARGS` run in ``cwd`` (the installed package)."""
    return subprocess.run([sys.executable, "-m", "cdl", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _check_listing(stdout: str) -> None:
    """The listing names every case of src/cdl/conformance_cases, in suite order, with
    its section and what it expects."""
    header, *lines = stdout.splitlines()
    assert header.split() == ["section", "case", "expects", "description"]
    assert len(lines) == len(REPO_SUITE)
    for line, case in zip(lines, REPO_SUITE, strict=True):
        section, name, expects = line.split()[:3]
        assert (section, name) == (case.section, case.name)
        assert expects == ("error" if case.error else "output" if case.expect else "plan")
        assert case.expects in line and line.endswith(case.description)


def test_case_says_what_it_expects(tmp_path: Path) -> None:
    cases = {c.name: c for c in REPO_SUITE}
    assert cases["errors/not-cdl-root-element"].expects == "error NOT_CDL"
    assert cases["6/empty-document"].expects == "output expected.cdl"
    assert {c.expects for c in REPO_SUITE if c.plan} >= {"plan expected-plan.json"}
    write_case(tmp_path / "bad", {"section": "7"})
    (bad,) = load_suite(tmp_path)
    assert bad.expects == "malformed case.json"


def test_bundled_suite_holds_the_repository_cases() -> None:
    """The package's suite is the checkout's ``src/cdl/conformance_cases``, installed
    (tests/test_packaging.py checks the wheel holds every file of it)."""
    assert [(c.section, c.name) for c in load_suite(bundled_suite())] == [(c.section, c.name) for c in REPO_SUITE]


@pytest.mark.skipif(not REPO_CASES.is_dir(), reason="no src/cdl/conformance_cases directory")
def test_list_and_default_run_from_any_directory(tmp_path: Path) -> None:
    """Without SUITE_DIR, `cdl conformance` runs the bundled suite, wherever it is run from."""
    listed = _cdl_from(tmp_path, "conformance", "--list")
    assert listed.returncode == 0, listed.stderr
    _check_listing(listed.stdout)
    ran = _cdl_from(tmp_path, "conformance")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.endswith(f"\n{len(REPO_SUITE)} passed, 0 failed\n")
