"""No traceback, ever: hostile variations of valid documents (issue items 3 and 5).

Property: for any mutant of a valid document (see ``tests/strategies.py``),
``cdl.load(...).resolve(...)``, with or without deploy-time rounds, either

- succeeds, and then ``to_bytes()`` is well-formed XML again, ``to_data()`` and
  ``pending`` work; or
- raises ``cdl.CdlError`` whose ``render()`` is non-empty, every member of a
  group carrying a known code and no more members than ``max_errors``;

and never raises anything else, never hangs, and never modifies its input
files. A smaller sample goes through the ``cdl`` command as a subprocess: exit
0 when the library resolves the same document with the same values, else 1
with the library's error code (2 for a usage error), never a traceback nor an
"internal error" on stderr.

Inputs that once broke the engine live in ``tests/data/robustness/`` (one
directory each, ``case.json`` naming the main document) and run first, both
as explicit examples of the property and as their own parametrized tests.

Budget (CI, 2 cores; pytest uses one): 800 library examples of all mutations
(``LIBRARY_EXAMPLES``, ~12.5 s measured on one core), 300 of structural mutations
only (``STRUCTURAL_EXAMPLES``, ~5.5 s) and 30 CLI examples (``CLI_EXAMPLES``,
~14 s): about 32 s in all. The runs are derandomized (no example database), so CI sees
the same examples every time. Set ``CDL_FUZZ_EXAMPLES`` /
``CDL_FUZZ_CLI_EXAMPLES`` to run more locally, e.g.
``CDL_FUZZ_EXAMPLES=20000 python -m pytest tests/test_robustness.py``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings

import cdl
from cdl.errors import CODES
from conftest import PROBE_CODES, probes
from strategies import CLI_GUARD, Mutant, digest, mutants, parses_as_xml

HERE = Path(__file__).resolve().parent
REGRESSIONS = HERE / "data" / "robustness"

#: Library examples per run: 800 mutants (all mutations) take ~12.5 s on one core
#: here, plus 300 structural-only mutants (~5.5 s). pytest runs them on one core.
LIBRARY_EXAMPLES = int(os.environ.get("CDL_FUZZ_EXAMPLES", "800"))
STRUCTURAL_EXAMPLES = max(1, (LIBRARY_EXAMPLES * 3) // 8)
#: Each CLI example starts a Python process (~0.5 s): 30 take ~14 s.
CLI_EXAMPLES = int(os.environ.get("CDL_FUZZ_CLI_EXAMPLES", "30"))
#: A resolution of a corpus-sized document that takes longer than this hangs.
HANG_SECONDS = 20.0


# ---------------------------------------------------------------------------
# Saved regressions


def _regressions() -> list[tuple[str, Mutant]]:
    found = []
    for case_json in sorted(REGRESSIONS.glob("*/case.json")):
        spec = json.loads(case_json.read_text(encoding="utf-8"))
        mutant = Mutant.from_directory(case_json.parent, spec.get("main", "main.cdl"), spec.get("rounds"))
        mutant.files.pop("case.json", None)
        found.append((case_json.parent.name, mutant))
    return found


REGRESSION_CASES = _regressions()


def with_regressions(test: Any) -> Any:
    """Run every saved regression as an explicit example of the property."""
    for _, mutant in reversed(REGRESSION_CASES):
        test = example(mutant)(test)
    return test


# ---------------------------------------------------------------------------
# Guards


class Hang(BaseException):
    """Resolution took longer than HANG_SECONDS (BaseException: nothing may swallow it)."""


@contextmanager
def no_hang(seconds: float = HANG_SECONDS) -> Iterator[None]:
    def fire(_signum: int, _frame: Any) -> None:
        raise Hang(f"resolution did not finish within {seconds} s")

    if not hasattr(signal, "setitimer"):  # pragma: no cover - not POSIX
        yield
        return
    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(autouse=True, scope="module")
def no_network() -> Iterator[None]:
    """Nothing in this module may open a connection: remote imports are refused by default."""
    import socket

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the engine tried to open a network connection")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", refuse)
        mp.setattr(socket.socket, "connect_ex", refuse)
        mp.setattr(socket, "create_connection", refuse)
        mp.setattr(socket, "getaddrinfo", refuse)
        yield


# ---------------------------------------------------------------------------
# The property, through the library


def check_library(mutant: Mutant, directory: Path) -> str:
    """Resolve ``mutant`` written under ``directory``; return 'ok' or the error code."""
    main = mutant.write(directory)
    before = digest(directory)
    try:
        with no_hang():
            document = cdl.load(main)
            result = document.resolve(rounds=mutant.rounds)
            output = result.to_bytes()
            result.to_bytes(system_only=True)
            result.to_data()
            result.pending  # noqa: B018 - computing it must not fail
            plan = result.plan()  # the deployment plan and its formats must not fail either
            assert json.loads(plan.to_json()) == plan.to_data()
            plan.to_text(), plan.to_dot(), plan.to_mermaid()
        parses_as_xml(output)
        outcome = "ok"
    except cdl.CdlError as error:
        text = error.render()
        assert text.strip(), f"empty message for {error.code}"
        assert error.errors, "an error group with no member"
        assert len(error.errors) <= cdl.Limits().max_errors
        for member in error.errors:
            assert member.code in CODES, member.code
            assert member.render().strip()
            assert "Traceback" not in member.render()
        outcome = error.code
    assert digest(directory) == before, "an input file was modified"
    return outcome


@with_regressions
@settings(
    max_examples=LIBRARY_EXAMPLES,
    derandomize=True,  # the same examples on every CI run
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    print_blob=True,
)
@given(mutants())
def test_library_never_raises_anything_but_cdl_error(mutant: Mutant) -> None:
    with tempfile.TemporaryDirectory(prefix="cdl-fuzz-") as tmp:
        check_library(mutant, Path(tmp))


@settings(
    max_examples=STRUCTURAL_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
@given(mutants(byte_ops=False, max_xml_ops=6))
def test_structural_mutations_never_raise_anything_but_cdl_error(mutant: Mutant) -> None:
    """Only XML-level mutations: the input stays well-formed, so the later phases are reached."""
    with tempfile.TemporaryDirectory(prefix="cdl-fuzz-") as tmp:
        check_library(mutant, Path(tmp))


@pytest.mark.parametrize("name,mutant", REGRESSION_CASES, ids=[n for n, _ in REGRESSION_CASES])
def test_saved_regression_library(name: str, mutant: Mutant, tmp_path: Path) -> None:
    check_library(mutant, tmp_path)


# ---------------------------------------------------------------------------
# The property, through the command line


def run_cli(args: list[str], cwd: Path | None = None, timeout: float = 60.0) -> subprocess.CompletedProcess[bytes]:
    """``cdl ARGS`` in a fresh interpreter whose sockets refuse to connect (see strategies.CLI_GUARD)."""
    return subprocess.run(
        [sys.executable, "-c", CLI_GUARD, *args],
        cwd=cwd,
        capture_output=True,
        timeout=timeout,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )


def _argv_safe(text: str) -> bool:
    """Whether ``text`` can be a command-line argument at all (no NUL, encodable)."""
    try:
        return b"\0" not in os.fsencode(text)
    except UnicodeError:
        return False


def library_outcome(main: Path, values: dict[str, str], release: list[str]) -> str:
    """What ``cdl resolve`` with these ``--set`` and ``--release`` options
    must do, found through the library: 'ok' or the error code."""
    try:
        with no_hang():
            cdl.load(main).resolve(values, release=release).to_bytes()
    except cdl.CdlError as error:
        return error.code
    return "ok"


def check_cli(mutant: Mutant, directory: Path) -> int:
    main = mutant.write(directory)
    before = digest(directory)
    out = directory.parent / (directory.name + "-out.cdl")
    args = ["resolve", str(main)]
    # The CLI takes one round of --set/--release (paths stripped, as it does).
    values: dict[str, str] = {}
    release: list[str] = []
    if len(mutant.rounds) == 1:
        for path, value in mutant.rounds[0].get("set", {}).items():
            if path.strip() and "=" not in path and _argv_safe(path + value):
                args += ["--set", f"{path}={value}"]
                values[path.strip()] = value
        for path in mutant.rounds[0].get("release", []):
            if path.strip() and not path.startswith("-") and _argv_safe(path):
                args += ["--release", path]
                release.append(path)
    expected = library_outcome(main, values, release)
    use_output = mutant.ops and len(mutant.ops) % 2 == 0  # half the time through -o
    if use_output:
        args += ["-o", str(out)]
    proc = run_cli(args)
    stderr = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    assert "internal error" not in stderr, stderr  # the CLI's last-resort catch hides an engine bug
    assert proc.returncode != 97, "the CLI tried to open a network connection"
    if proc.returncode == 2:  # a usage error (e.g. a --set value click refuses): still no traceback
        assert stderr.strip()
    else:  # exactly what the library does: 0 when it resolves, else 1 with its error's code
        assert proc.returncode == (0 if expected == "ok" else 1), (expected, proc.returncode, stderr)
        assert expected == "ok" or f"[{expected}]" in stderr, (expected, stderr)
    if proc.returncode == 0:
        if use_output:
            assert proc.stdout == b""
            parses_as_xml(out.read_bytes())
        else:
            parses_as_xml(proc.stdout)
    else:
        assert proc.stdout == b"", "output on stdout although the run failed"
        assert not out.exists(), "-o FILE written although the run failed"
        if proc.returncode == 1:  # every refusal is a `file[:line]: [CODE] message` line
            assert re.search(r"^\S.*: \[[A-Z_]+\] \S", stderr, re.M), f"no `file:line: [CODE] message` line: {stderr!r}"
    assert digest(directory) == before, "an input file was modified"
    return proc.returncode


@with_regressions
@settings(
    max_examples=CLI_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
@given(mutants())
def test_cli_exits_0_or_1_without_traceback(mutant: Mutant) -> None:
    with tempfile.TemporaryDirectory(prefix="cdl-fuzz-cli-") as tmp:
        directory = Path(tmp) / "case"
        directory.mkdir()
        check_cli(mutant, directory)


@pytest.mark.parametrize("name,mutant", REGRESSION_CASES, ids=[n for n, _ in REGRESSION_CASES])
def test_saved_regression_cli(name: str, mutant: Mutant, tmp_path: Path) -> None:
    directory = tmp_path / "case"
    directory.mkdir()
    check_cli(mutant, directory)


# ---------------------------------------------------------------------------
# The probes of the acceptance criteria


@pytest.mark.parametrize("name", sorted(PROBE_CODES))
def test_probe_refused_cleanly(name: str, tmp_path: Path) -> None:
    probe = probes() / name  # (tests/test_cli.py checks that these are all the probes)
    copy = tmp_path / probe.name  # run on a copy: the shared probe must stay as it is
    copy.write_bytes(probe.read_bytes())
    proc = run_cli(["resolve", str(copy)])
    stderr = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 1, stderr
    assert proc.stdout == b""
    assert str(copy) in stderr and "[" in stderr, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    assert copy.read_bytes() == probe.read_bytes()


# ---------------------------------------------------------------------------
# Complete reports (issue item 5)

NS = 'xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"'


def _unknown_prototypes(count: int) -> bytes:
    lines = [f"<cdl:cdl {NS}>", "<cdl:system>"]
    lines += [f'<s{i} cdl:extends="missing{i}"/>' for i in range(count)]
    lines += ["</cdl:system>", "</cdl:cdl>"]
    return "\n".join(lines).encode()


def test_three_unknown_prototypes_reported_together(tmp_path: Path) -> None:
    main = tmp_path / "three.cdl"
    main.write_bytes(_unknown_prototypes(3))
    with pytest.raises(cdl.CdlError) as caught:
        cdl.load(main).resolve()
    errors = caught.value.errors
    assert isinstance(caught.value, cdl.CdlErrorGroup)
    assert [e.code for e in errors] == ["UNKNOWN_PROTOTYPE"] * 3
    assert [(e.url, e.line) for e in errors] == [(str(main), 3), (str(main), 4), (str(main), 5)]
    for i, error in enumerate(errors):
        assert f"missing{i}" in error.message
        assert error.render().startswith(f"{main}:{3 + i}: [UNKNOWN_PROTOTYPE]")

    proc = run_cli(["resolve", str(main)])
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 1 and proc.stdout == b""
    assert lines == [e.render() for e in errors]
    assert [line.split(": [", 1)[0] for line in lines] == [f"{main}:{n}" for n in (3, 4, 5)]


def test_independent_errors_of_different_phases_at_load_reported_together(tmp_path: Path) -> None:
    """Load-time problems of different kinds, in one document, arrive in one report."""
    main = tmp_path / "mixed.cdl"
    main.write_text(
        f"<cdl:cdl {NS}>\n<cdl:system>\n<s>\n"
        '<a cdl:lazy="yes"/>\n'
        '<b cdl:ref="/x[1]"/>\n'
        '<c cdl:extends="nope:x"/>\n'
        "</s>\n</cdl:system>\n</cdl:cdl>\n"
    )
    with pytest.raises(cdl.CdlError) as caught:
        cdl.load(main)
    assert [(e.code, e.line) for e in caught.value.errors] == [("BAD_LAZY", 4), ("BAD_PATH", 5), ("BAD_QNAME", 6)]


def test_number_of_errors_reported_is_capped_by_max_errors(tmp_path: Path) -> None:
    main = tmp_path / "many.cdl"
    main.write_bytes(_unknown_prototypes(30))
    with pytest.raises(cdl.CdlError) as caught:
        cdl.load(main, limits=cdl.Limits(max_errors=5)).resolve()
    assert len(caught.value.errors) == 5
    assert [e.line for e in caught.value.errors] == [3, 4, 5, 6, 7]
    with pytest.raises(cdl.CdlError) as caught:
        cdl.load(main, limits=cdl.Limits(max_errors=1)).resolve()
    assert len(caught.value.errors) == 1 and caught.value.code == "UNKNOWN_PROTOTYPE"
    with pytest.raises(cdl.CdlError) as caught:
        cdl.load(main).resolve()  # the default (50) reports all 30
    assert len(caught.value.errors) == 30


# ---------------------------------------------------------------------------
# The engine's private marks cannot be forged


@pytest.mark.parametrize("attribute", ["ref", "ext", "expr", "doc"])
@pytest.mark.parametrize("where", ["property", "list", "types"])
def test_engine_private_namespace_refused(attribute: str, where: str) -> None:
    """The engine keeps parsed references in attributes of its own namespace; a document
    that writes them itself (to point at another table entry, say) is refused."""
    mark = f'e:{attribute}="0"'
    lists = {
        "property": f"<s><v>1</v><p {mark}/><q cdl:ref='/v'/></s>",
        "list": f"<s {mark}><v>1</v><q cdl:ref='/v'/></s>",
        "types": "<s><v>1</v><q cdl:ref='/v'/></s>",
    }[where]
    types = f"<cdl:types><x {mark}/></cdl:types>" if where == "types" else ""
    text = f'<cdl:cdl {NS} xmlns:e="urn:x-cdl-engine:internal">{types}<cdl:system>{lists}</cdl:system></cdl:cdl>'
    with pytest.raises(cdl.CdlError) as caught:
        cdl.load(text.encode()).resolve()
    assert caught.value.code == "STRUCTURE" and "urn:x-cdl-engine:internal" in caught.value.message
