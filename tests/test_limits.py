"""Limits, import confinement and "nothing lost" (issue items 1, 2 and 4).

Every limit of ``cdl.Limits`` is hit through the library and, where the command
line has an option for it, through ``cdl resolve``: the error is
LIMIT_EXCEEDED and its message names the limit. The 40-level doubling
document of the acceptance criteria is refused (the documents are built by
benchmarks/hostile.py, which also holds the time bounds on refusing them:
5 seconds for this one; tests/internals/test_limits.py counts the work done
before a refusal). Imports stay
under the main document's directory and the ``--import-path`` directories
(symlinks resolved first) and remote ones are refused, all without a single
network connection. ``-o FILE`` never leaves a partial, empty or clobbered
file, and input files are never modified.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import cdl
from cdl import CdlError, Limits
from hostile import BILLION_LAUGHS, NS, cdl_doc, chain_document, copied_text_document, doubling_document, entity_document, nested_document
from strategies import CLI_GUARD, digest, parses_as_xml

ROOT = Path(__file__).resolve().parent.parent
WEBAPP = ROOT / "samples" / "webapp" / "system.cdl"


# ---------------------------------------------------------------------------
# Helpers


def run_cli(*args: str | os.PathLike[str], cwd: Path | None = None, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """``cdl ARGS`` in a fresh interpreter with every socket connection refused (exit 97)."""
    proc = subprocess.run(
        [sys.executable, "-c", CLI_GUARD, *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode != 97, f"the CLI tried to open a network connection: {proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr, proc.stderr
    return proc


def assert_refused(proc: subprocess.CompletedProcess[str], code: str, *fragments: str) -> None:
    """Exit 1, nothing on stdout, and one ``file:line: [CODE] ...`` line holding every fragment."""
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert proc.stdout == "", proc.stdout
    assert f"[{code}]" in proc.stderr, proc.stderr
    for fragment in fragments:
        assert fragment in proc.stderr, (fragment, proc.stderr)


def limit_error(excinfo: pytest.ExceptionInfo[CdlError], name: str) -> CdlError:
    error = excinfo.value
    assert error.code == "LIMIT_EXCEEDED", error.render()
    assert name in error.message, error.render()
    return error


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Refuse (and record) every attempt to connect or resolve a host name."""
    attempts: list[Any] = []

    def refuse(*args: Any, **_kwargs: Any) -> Any:
        attempts.append(args)
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    yield attempts
    assert attempts == []


# ---------------------------------------------------------------------------
# Defaults


def test_default_limits_are_documented_values() -> None:
    limits = Limits()
    assert limits.max_bytes > 0 and limits.max_depth > 0 and limits.max_elements > 0
    assert limits.max_imports >= 0 and limits.max_expression_length > 0 and limits.max_errors > 0


@pytest.mark.parametrize("sample", sorted((ROOT / "samples").glob("*/system.cdl")), ids=lambda p: p.parent.name)
def test_samples_are_not_refused_under_default_limits(sample: Path) -> None:
    result = cdl.load(sample).resolve()
    parses_as_xml(result.to_bytes())
    proc = run_cli("resolve", sample)
    assert proc.returncode == 0, proc.stderr
    parses_as_xml(proc.stdout.encode())


def test_large_legitimate_document_is_not_refused_under_default_limits() -> None:
    """200 services of 50 properties each, a 10-deep prototype chain, references and a deep value."""
    protos = ["<base>" + "".join(f"<p{j}>{j}</p{j}>" for j in range(50)) + "</base>"]
    protos += [f'<t{i} cdl:extends="{"base" if i == 0 else f"t{i - 1}"}"><q{i}>{i}</q{i}></t{i}>' for i in range(10)]
    services = [
        f'<svc{k} cdl:extends="t9"><p0>{k}</p0><peer cdl:refroot="svc{(k + 1) % 200}" cdl:ref="/p0"/></svc{k}>'
        for k in range(200)
    ]
    deep = "<deep>" + "<a>" * 1000 + "x" + "</a>" * 1000 + "</deep>"  # past libxml2's 256 levels
    text = cdl_doc(configuration="".join(protos), system="".join(services) + deep)
    data = cdl.load(text.encode()).resolve().to_data(system_only=True)
    system = data["system"]
    assert isinstance(system, dict) and len(system) == 201
    assert system["svc3"]["peer"] == "4" and system["svc3"]["p49"] == "49"


def test_doubling_document_of_few_levels_resolves_under_default_limits() -> None:
    """The same shape is fine while it stays small: 2**10 copies."""
    data = cdl.load(doubling_document(10).encode()).resolve().to_data(system_only=True)
    assert data["system"]["app"]["a"]["b"]["a"]["a"]["b"]["a"]["b"]["b"]["a"]["a"]["v"] == "x"


# ---------------------------------------------------------------------------
# The acceptance document: 40 levels of doubling


#: The doubling tests run in a child process capped at this much address space, so that
#: an engine that does not stop the blow-up fails the test instead of the machine.
MEMORY_CAP = 3 << 30


def cap_memory() -> None:  # a subprocess preexec_fn
    if sys.platform == "linux":
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


LIBRARY_CHILD = """
import json, sys
import cdl
document = cdl.load(sys.argv[1])
try:
    document.resolve()
    outcome = {"code": None}
except cdl.CdlError as error:
    outcome = {"code": error.code, "message": error.message, "render": error.render()}
except MemoryError:
    outcome = {"code": "MemoryError"}
print(json.dumps(outcome))
"""


@pytest.mark.parametrize("via", ["extends", "ref"])
def test_forty_level_doubling_refused_by_cli(tmp_path: Path, via: str) -> None:
    main = tmp_path / "doubling.cdl"
    main.write_text(doubling_document(40, via))
    proc = subprocess.run(
        [sys.executable, "-c", CLI_GUARD, "resolve", str(main)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=cap_memory,
    )
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert_refused(proc, "LIMIT_EXCEEDED", "max_elements", str(main))


@pytest.mark.parametrize("via", ["extends", "ref"])
def test_forty_level_doubling_refused_by_library(tmp_path: Path, via: str) -> None:
    main = tmp_path / "doubling.cdl"
    main.write_text(doubling_document(40, via))
    proc = subprocess.run(
        [sys.executable, "-c", LIBRARY_CHILD, str(main)], capture_output=True, text=True, timeout=120, preexec_fn=cap_memory
    )
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout)
    assert outcome["code"] == "LIMIT_EXCEEDED", outcome
    assert "max_elements" in outcome["message"]


@pytest.mark.parametrize("via", ["extends", "ref"])
def test_doubling_refused_early_with_small_max_elements(via: str) -> None:
    with pytest.raises(CdlError) as caught:
        cdl.load(doubling_document(40, via).encode(), limits=Limits(max_elements=1000)).resolve()
    error = limit_error(caught, "max_elements")
    assert "1000" in error.message and error.line is not None


@pytest.mark.skipif(sys.platform != "linux", reason="uses RLIMIT_AS to keep a failure harmless")
@pytest.mark.parametrize("via", ["ref", "extends"])
def test_copied_text_is_bounded(tmp_path: Path, via: str) -> None:
    """max_elements counts elements, but a copy also carries text: one 4 MiB value copied
    2,000 times is 8 GiB from a 4 MiB document (and 1 MiB x 300 copies already needs
    1.4 GB of memory and writes 315 MB). Resolution must refuse it with a limit, not run out
    of memory. The process runs under MEMORY_CAP, so an engine that does not refuse fails
    this test with MemoryError instead of exhausting the machine."""
    main = tmp_path / "amplify.cdl"
    main.write_text(copied_text_document(via))
    proc = subprocess.run(
        [sys.executable, "-c", CLI_GUARD, "resolve", str(main), "-o", str(tmp_path / "out.cdl")],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=cap_memory,
    )
    assert_refused(proc, "LIMIT_EXCEEDED", str(main))
    assert not (tmp_path / "out.cdl").exists()


# ---------------------------------------------------------------------------
# Each limit through the library


def test_max_bytes_main_document() -> None:
    text = nested_document(5).encode()
    cdl.load(text, limits=Limits(max_bytes=len(text)))  # exactly at the limit: accepted
    with pytest.raises(CdlError) as caught:
        cdl.load(text, limits=Limits(max_bytes=len(text) - 1))
    limit_error(caught, "max_bytes")


def test_max_bytes_imported_document(tmp_path: Path) -> None:
    (tmp_path / "big.cdl").write_text(cdl_doc(configuration="<T>" + "<p>x</p>" * 500 + "</T>"))
    main = tmp_path / "main.cdl"
    main.write_text(cdl_doc(imports=("big.cdl",), system='<s cdl:extends="T"/>'))
    with pytest.raises(CdlError) as caught:
        cdl.load(main, limits=Limits(max_bytes=1000))
    error = limit_error(caught, "max_bytes")
    assert "big.cdl" in error.message and error.url == str(main) and error.line == 2


def test_max_depth_small_limit() -> None:
    cdl.load(nested_document(8).encode(), limits=Limits(max_depth=8))
    with pytest.raises(CdlError) as caught:
        cdl.load(nested_document(9).encode(), limits=Limits(max_depth=8))
    limit_error(caught, "max_depth")


def test_max_depth_beyond_the_xml_parser_cap() -> None:
    """Above libxml2's 256 levels the limit is still exact."""
    cdl.load(nested_document(300).encode(), limits=Limits(max_depth=300))
    with pytest.raises(CdlError) as caught:
        cdl.load(nested_document(301).encode(), limits=Limits(max_depth=300))
    limit_error(caught, "max_depth")


def test_max_depth_default_limit() -> None:
    depth = Limits().max_depth
    cdl.load(nested_document(depth).encode())
    with pytest.raises(CdlError) as caught:
        cdl.load(nested_document(depth + 1).encode())
    limit_error(caught, "max_depth")


@pytest.mark.parametrize("via", ["extends", "ref"])
def test_max_depth_holds_for_trees_built_by_resolution(via: str) -> None:
    """Each level nests the previous one a step deeper: 60 levels make a tree ~63 deep
    from a document 5 deep. A depth limit that only looks at the input lets the
    resolved output (and whatever reads it) go arbitrarily deep."""
    text = chain_document(60, via).encode()
    cdl.load(text).resolve()  # fine under the default limits
    with pytest.raises(CdlError) as caught:
        cdl.load(text, limits=Limits(max_depth=30)).resolve()
    limit_error(caught, "max_depth")


def test_max_elements_boundary() -> None:
    text = doubling_document(4).encode()  # app gets 2**4 copies of <v> and 30 list elements
    cdl.load(text, limits=Limits(max_elements=10_000)).resolve()
    with pytest.raises(CdlError) as caught:
        cdl.load(text, limits=Limits(max_elements=20)).resolve()
    limit_error(caught, "max_elements")


def test_max_elements_counts_deploy_time_rounds() -> None:
    """A released lazy reference is a copy like any other."""
    lists = ["<l0><v>x</v></l0>"]
    lists += [f'<l{i}><a cdl:refroot="l{i - 1}" cdl:ref="."/><b cdl:refroot="l{i - 1}" cdl:ref="."/></l{i}>' for i in range(1, 15)]
    lists.append('<top><r cdl:refroot="l14" cdl:ref="." cdl:lazy="true"/></top>')
    # Static resolution copies 98,242 elements; releasing top/r copies l14 (~2**15) once more.
    document = cdl.load(cdl_doc(system="".join(lists)).encode(), limits=Limits(max_elements=120_000))
    first = document.resolve()
    assert [p.path for p in first.pending] == ["/top/r"]
    with pytest.raises(CdlError) as caught:
        first.supply(release=["top/r"])  # copying l14 once more goes over
    limit_error(caught, "max_elements")


def _import_chain(tmp_path: Path, length: int) -> Path:
    for i in range(length):
        nxt = (f"i{i + 1}.cdl",) if i + 1 < length else ()
        (tmp_path / f"i{i}.cdl").write_text(cdl_doc(imports=nxt, configuration=f"<T{i}><v>{i}</v></T{i}>"))
    main = tmp_path / "main.cdl"
    main.write_text(cdl_doc(imports=("i0.cdl",), system='<s cdl:extends="T2"/>'))
    return main


def test_max_imports(tmp_path: Path) -> None:
    main = _import_chain(tmp_path, 3)
    assert len(cdl.load(main, limits=Limits(max_imports=3)).urls) == 4
    with pytest.raises(CdlError) as caught:
        cdl.load(main, limits=Limits(max_imports=2))
    limit_error(caught, "max_imports")
    with pytest.raises(CdlError) as caught:
        cdl.load(main, limits=Limits(max_imports=0))
    limit_error(caught, "max_imports")


def test_max_imports_counts_documents_not_import_elements(tmp_path: Path) -> None:
    """One document imported many times, or in a cycle, is loaded (and counted) once."""
    (tmp_path / "t.cdl").write_text(cdl_doc(imports=("main.cdl",), configuration="<T><v>1</v></T>"))
    main = tmp_path / "main.cdl"
    main.write_text(cdl_doc(imports=("t.cdl",) * 20, system='<s cdl:extends="T"/>'))
    assert cdl.load(main, limits=Limits(max_imports=1)).resolve().to_data()["system"] == {"s": {"v": "1"}}


def test_max_expression_length() -> None:
    def doc(expr: str) -> bytes:
        return cdl_doc(system=f'<s><v><cdl:expression value-of="{expr}"/></v></s>').encode()

    expr = "1 + 2 + 3 + 4 + 5"
    assert cdl.load(doc(expr), limits=Limits(max_expression_length=len(expr))).resolve().to_data()["system"] == {"s": {"v": "15"}}
    with pytest.raises(CdlError) as caught:
        cdl.load(doc(expr), limits=Limits(max_expression_length=len(expr) - 1))
    limit_error(caught, "max_expression_length")


def test_long_expression_within_the_default_limit_is_not_a_crash() -> None:
    """Expressions under max_expression_length: a long flat one is evaluated
    (the XPath parser loops over its operators), one nested far deeper than
    Python recurses is refused with a CdlError on its line, never a crash."""

    def doc(expr: str) -> bytes:
        return cdl_doc(system=f'<s><v><cdl:expression value-of="{expr}"/></v></s>').encode()

    flat = " + ".join(["1"] * 1500)  # 5,997 characters, under the default 10,000
    deep = "(" * 4999 + "1" + ")" * 4999  # 9,999 characters
    assert len(flat) < len(deep) < Limits().max_expression_length
    assert cdl.load(doc(flat)).resolve().to_data()["system"] == {"s": {"v": "1500"}}
    assert cdl.load(doc("(" * 50 + "1" + ")" * 50)).resolve().to_data()["system"] == {"s": {"v": "1"}}
    with pytest.raises(CdlError) as caught:
        cdl.load(doc(deep)).resolve()
    assert caught.value.code == "BAD_EXPRESSION" and "nested too deeply" in caught.value.message
    written_on = next(n for n, text in enumerate(doc(deep).decode().splitlines(), 1) if "value-of" in text)
    assert caught.value.line == written_on


def test_limits_refuse_documents_far_beyond_them() -> None:
    """Each limit refuses a document far beyond it (the work done first is
    counted in tests/internals/test_limits.py, the time bound of one second
    is in benchmarks/hostile.py)."""
    cases = [
        (nested_document(2000).encode(), Limits(max_depth=100)),
        (doubling_document(60).encode(), Limits(max_elements=10_000)),
        (doubling_document(60, "ref").encode(), Limits(max_elements=10_000)),
        (("<!--" + "x" * 2_000_000 + "-->" + nested_document(5)).encode(), Limits(max_bytes=1_000_000)),
    ]
    for (text, limits), limit in zip(cases, ("max_depth", "max_elements", "max_elements", "max_bytes")):
        with pytest.raises(CdlError) as caught:
            cdl.load(text, limits=limits).resolve()
        limit_error(caught, limit)


# ---------------------------------------------------------------------------
# Each limit through the command line


def test_cli_max_elements(tmp_path: Path) -> None:
    main = tmp_path / "d.cdl"
    main.write_text(doubling_document(12))
    assert run_cli("resolve", main).returncode == 0
    assert_refused(run_cli("resolve", "--max-elements", "100", main), "LIMIT_EXCEEDED", "max_elements", "100", f"{main}:")


def test_cli_max_depth(tmp_path: Path) -> None:
    main = tmp_path / "d.cdl"
    main.write_text(nested_document(40))
    assert run_cli("resolve", "--max-depth", "40", main).returncode == 0
    assert_refused(run_cli("resolve", "--max-depth", "39", main), "LIMIT_EXCEEDED", "max_depth", "39", str(main))


def test_cli_max_bytes(tmp_path: Path) -> None:
    main = tmp_path / "d.cdl"
    main.write_text(nested_document(10))
    size = main.stat().st_size
    assert run_cli("resolve", "--max-bytes", str(size), main).returncode == 0
    assert_refused(run_cli("resolve", "--max-bytes", str(size - 1), main), "LIMIT_EXCEEDED", "max_bytes", str(main))


def test_cli_max_imports(tmp_path: Path) -> None:
    main = _import_chain(tmp_path, 3)
    assert run_cli("resolve", "--max-imports", "3", main).returncode == 0
    assert_refused(run_cli("resolve", "--max-imports", "2", main), "LIMIT_EXCEEDED", "max_imports", f"{tmp_path / 'i1.cdl'}:2:")


@pytest.mark.parametrize("option", ["--max-elements", "--max-depth", "--max-bytes"])
def test_cli_limit_options_reject_nonsense(tmp_path: Path, option: str) -> None:
    main = tmp_path / "d.cdl"
    main.write_text(nested_document(5))
    for value in ("0", "-1", "many"):
        proc = run_cli("resolve", option, value, main)
        assert proc.returncode == 2 and proc.stdout == "" and option in proc.stderr, proc.stderr


# ---------------------------------------------------------------------------
# Import confinement


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """tmp/app/main.cdl (imports are written per test), tmp/app/sub/inner.cdl,
    tmp/lib/t.cdl and tmp/app-evil/t.cdl (a sibling whose name starts like app's)."""
    for d in ("app/sub", "lib", "app-evil"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "app/sub/inner.cdl").write_text(cdl_doc(configuration="<T><v>inner</v></T>"))
    (tmp_path / "lib/t.cdl").write_text(cdl_doc(configuration="<T><v>lib</v></T>"))
    (tmp_path / "app-evil/t.cdl").write_text(cdl_doc(configuration="<T><v>evil</v></T>"))
    return tmp_path


def write_main(tree: Path, location: str) -> Path:
    main = tree / "app" / "main.cdl"
    main.write_text(cdl_doc(imports=(location,), system='<s cdl:extends="T"/>'))
    return main


def resolved_v(main: Path, **options: Any) -> Any:
    return cdl.load(main, **options).resolve().to_data()["system"]["s"]["v"]


def refused(main: Path, **options: Any) -> CdlError:
    with pytest.raises(CdlError) as caught:
        cdl.load(main, **options)
    error = caught.value
    assert error.code == "IMPORT_REFUSED", error.render()
    assert (error.url, error.line) == (str(main), 2), error.render()
    return error


def test_import_under_the_main_directory_is_allowed(tree: Path) -> None:
    assert resolved_v(write_main(tree, "sub/inner.cdl")) == "inner"
    assert resolved_v(write_main(tree, "./sub/../sub/inner.cdl")) == "inner"


@pytest.mark.parametrize("location", ["../lib/t.cdl", "sub/../../lib/t.cdl", "LIB_ABSOLUTE", "LIB_FILE_URL"])
def test_import_outside_is_refused_naming_location_and_reason(tree: Path, location: str) -> None:
    location = location.replace("LIB_ABSOLUTE", str(tree / "lib/t.cdl")).replace("LIB_FILE_URL", (tree / "lib/t.cdl").as_uri())
    main = write_main(tree, location)
    error = refused(main)
    assert repr(location) in error.message and "outside the allowed directories" in error.message
    assert str(tree / "lib" / "t.cdl") in error.message  # where it really points
    proc = run_cli("resolve", main)
    assert_refused(proc, "IMPORT_REFUSED", f"{main}:2:", location, "--import-path")


def test_import_of_a_sibling_directory_sharing_a_name_prefix_is_refused(tree: Path) -> None:
    """app-evil/ starts with the same characters as app/ but is not under it."""
    refused(write_main(tree, "../app-evil/t.cdl"))
    refused(write_main(tree, str(tree / "app-evil" / "t.cdl")))


def test_outside_import_is_refused_before_it_is_read(tree: Path) -> None:
    """A missing file outside gives the same answer as an existing one: nothing leaks about it."""
    a = refused(write_main(tree, "../lib/t.cdl"))
    b = refused(write_main(tree, "../lib/missing.cdl"))
    assert a.code == b.code == "IMPORT_REFUSED"
    refused(write_main(tree, "/etc/passwd"))
    refused(write_main(tree, "../../../../../../../../etc/passwd"))


def test_import_path_allows_a_directory(tree: Path) -> None:
    main = write_main(tree, "../lib/t.cdl")
    assert resolved_v(main, import_paths=[tree / "lib"]) == "lib"
    proc = run_cli("resolve", "--import-path", tree / "lib", main)
    assert proc.returncode == 0, proc.stderr
    assert "<v>lib</v>" in proc.stdout


def test_import_path_allows_only_its_own_directory(tree: Path) -> None:
    main = write_main(tree, "../app-evil/t.cdl")
    refused(main, import_paths=[tree / "lib"])
    assert_refused(run_cli("resolve", "--import-path", tree / "lib", main), "IMPORT_REFUSED", "../app-evil/t.cdl")


def test_import_path_given_relative_to_the_working_directory(tree: Path) -> None:
    main = write_main(tree, "../lib/t.cdl")
    proc = run_cli("resolve", "--import-path", "lib", main, cwd=tree)
    assert proc.returncode == 0, proc.stderr


def test_symlinked_file_pointing_outside_is_refused(tree: Path) -> None:
    (tree / "app" / "link.cdl").symlink_to(tree / "lib" / "t.cdl")
    main = write_main(tree, "link.cdl")
    error = refused(main)
    assert "'link.cdl'" in error.message and str(tree / "lib" / "t.cdl") in error.message
    assert_refused(run_cli("resolve", main), "IMPORT_REFUSED", "link.cdl")
    # The real location decides: allowing lib/ allows the link.
    assert resolved_v(main, import_paths=[tree / "lib"]) == "lib"


def test_symlinked_directory_pointing_outside_is_refused(tree: Path) -> None:
    (tree / "app" / "libs").symlink_to(tree / "lib", target_is_directory=True)
    main = write_main(tree, "libs/t.cdl")
    refused(main)
    assert_refused(run_cli("resolve", main), "IMPORT_REFUSED", "libs/t.cdl")


def test_symlink_pointing_inside_is_allowed(tree: Path) -> None:
    (tree / "app" / "alias.cdl").symlink_to(tree / "app" / "sub" / "inner.cdl")
    assert resolved_v(write_main(tree, "alias.cdl")) == "inner"


def test_import_path_that_is_a_symlink_allows_its_target(tree: Path) -> None:
    (tree / "liblink").symlink_to(tree / "lib", target_is_directory=True)
    main = write_main(tree, "../lib/t.cdl")
    assert resolved_v(main, import_paths=[tree / "liblink"]) == "lib"


def test_nested_import_is_confined_too(tree: Path) -> None:
    """An allowed document cannot reach further out than its importer."""
    (tree / "app" / "sub" / "inner.cdl").write_text(cdl_doc(imports=("../../lib/t.cdl",), configuration="<U/>"))
    main = write_main(tree, "sub/inner.cdl")
    with pytest.raises(CdlError) as caught:
        cdl.load(main)
    assert caught.value.code == "IMPORT_REFUSED"
    assert caught.value.url is not None and caught.value.url.endswith("inner.cdl") and caught.value.line == 2


@pytest.mark.parametrize(
    "location",
    [
        "http://127.0.0.1:9/t.cdl",
        "https://templates.example.org/t.cdl",
        "HTTP://templates.example.org/t.cdl",
        "//templates.example.org/t.cdl",
    ],
)
def test_remote_import_refused_without_network(tree: Path, location: str, no_network: list[Any]) -> None:
    main = write_main(tree, location)
    error = refused(main)
    assert location in error.message or "templates.example.org" in error.message
    assert "--allow-remote" in error.message or "another host" in error.message
    assert no_network == []


def test_remote_import_refused_by_cli_without_network(tree: Path) -> None:
    main = write_main(tree, "http://127.0.0.1:9/t.cdl")
    assert_refused(run_cli("resolve", main), "IMPORT_REFUSED", "http://127.0.0.1:9/t.cdl", "remote", "--allow-remote")


@pytest.mark.parametrize("location", ["ftp://example.org/t.cdl", "data:text/xml,%3Cx/%3E", "jar:file:///t.jar!/t.cdl", "gopher://x/t"])
def test_other_schemes_refused_even_when_remote_is_allowed(tree: Path, location: str, no_network: list[Any]) -> None:
    main = write_main(tree, location)
    for allow in (False, True):
        error = refused(main, allow_remote=allow)
        assert "scheme" in error.message


def test_remote_main_document_refused_without_network(no_network: list[Any]) -> None:
    with pytest.raises(CdlError) as caught:
        cdl.load("http://127.0.0.1:9/main.cdl")
    assert caught.value.code == "IMPORT_REFUSED" and "--allow-remote" in caught.value.message


def test_remote_import_through_a_resolver_when_allowed(tree: Path, no_network: list[Any]) -> None:
    """A deployment service that allows remote templates reads them its own way."""
    asked: list[str] = []

    def resolver(url: str) -> bytes:
        asked.append(url)
        return cdl_doc(configuration="<T><v>remote</v></T>").encode()

    main = write_main(tree, "https://templates.example.org/t.cdl")
    refused(main, resolver=resolver)  # a resolver alone does not allow http(s)
    assert asked == []
    assert resolved_v(main, allow_remote=True, resolver=resolver) == "remote"
    assert asked == ["https://templates.example.org/t.cdl"]


def test_probes_remote_and_traversal_imports(tmp_path: Path) -> None:
    """The two import probes, on copies (same texts as ../shared/probes/bad, beside the repository)."""
    remote = tmp_path / "remote-import.cdl"
    remote.write_text(cdl_doc(imports=("http://127.0.0.1:9/none.cdl",), system="<s/>"))
    traversal = tmp_path / "traversal-import.cdl"
    traversal.write_text(cdl_doc(imports=("../../../../../../etc/passwd",), system="<s/>"))
    assert_refused(run_cli("resolve", remote), "IMPORT_REFUSED", f"{remote}:2:", "http://127.0.0.1:9/none.cdl")
    assert_refused(run_cli("resolve", traversal), "IMPORT_REFUSED", f"{traversal}:2:", "/etc/passwd", "outside")


# ---------------------------------------------------------------------------
# The XML parser: no DTD, no entities, no network, on both parsing paths

@pytest.mark.parametrize("depth", [4, 400], ids=["libxml2", "deep-expat-path"])
def test_entity_expansion_refused(depth: int) -> None:
    with pytest.raises(CdlError) as caught:
        cdl.load(entity_document(BILLION_LAUGHS, depth))
    assert caught.value.code == "XML_DTD"


@pytest.mark.parametrize("depth", [4, 400], ids=["libxml2", "deep-expat-path"])
def test_external_entities_and_dtds_refused_without_reading(tmp_path: Path, depth: int, no_network: list[Any]) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    cases = [
        f'<!DOCTYPE cdl:cdl [<!ENTITY j SYSTEM "{secret.as_uri()}">]>',
        '<!DOCTYPE cdl:cdl [<!ENTITY j SYSTEM "http://127.0.0.1:9/x">]>',
        '<!DOCTYPE cdl:cdl SYSTEM "http://127.0.0.1:9/x.dtd">',
        '<!DOCTYPE cdl:cdl [<!ENTITY % p SYSTEM "http://127.0.0.1:9/x.dtd"> %p;]>',
    ]
    for doctype in cases:
        with pytest.raises(CdlError) as caught:
            cdl.load(entity_document(doctype, depth))
        assert caught.value.code in ("XML_DTD", "XML_SYNTAX"), caught.value.render()
        assert "TOP-SECRET" not in caught.value.render()


def test_xinclude_is_not_processed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    text = cdl_doc(
        system=f'<s><v><xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="{secret.as_uri()}" parse="text"/></v></s>'
    )
    assert b"TOP-SECRET" not in cdl.load(text.encode()).resolve().to_bytes()


# ---------------------------------------------------------------------------
# Nothing lost: -o and the input files


@pytest.fixture
def bad(tmp_path: Path) -> Path:
    main = tmp_path / "bad.cdl"
    main.write_text(cdl_doc(system='<s cdl:extends="Missing"/>'))
    return main


def test_output_file_untouched_on_error(tmp_path: Path, bad: Path) -> None:
    out = tmp_path / "out.cdl"
    out.write_text("precious earlier result\n")
    os.utime(out, (1_000_000_000, 1_000_000_000))
    before = sorted(os.listdir(tmp_path))
    assert_refused(run_cli("resolve", bad, "-o", out), "UNKNOWN_PROTOTYPE")
    assert out.read_text() == "precious earlier result\n"
    assert out.stat().st_mtime == 1_000_000_000
    assert sorted(os.listdir(tmp_path)) == before  # no temporary file left behind


def test_output_file_not_created_on_error(tmp_path: Path, bad: Path) -> None:
    before = sorted(os.listdir(tmp_path))
    assert_refused(run_cli("resolve", bad, "-o", tmp_path / "out.cdl"), "UNKNOWN_PROTOTYPE")
    assert not (tmp_path / "out.cdl").exists()
    assert sorted(os.listdir(tmp_path)) == before  # no temporary file either


def test_output_file_untouched_when_a_limit_is_hit(tmp_path: Path) -> None:
    main = tmp_path / "d.cdl"
    main.write_text(doubling_document(40))
    out = tmp_path / "out.cdl"
    out.write_text("precious\n")
    assert_refused(run_cli("resolve", main, "--max-elements", "1000", "-o", out), "LIMIT_EXCEEDED", "max_elements")
    assert out.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.cdl", "out.cdl"]


def test_output_written_completely_on_success(tmp_path: Path) -> None:
    out = tmp_path / "out.cdl"
    out.write_text("old\n")
    proc = run_cli("resolve", WEBAPP, "-o", out)
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    expected = cdl.load(WEBAPP).resolve().to_bytes()
    assert out.read_bytes() == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.cdl"]


def test_output_into_a_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    out = tmp_path / "no-such-dir" / "out.cdl"
    proc = run_cli("resolve", WEBAPP, "-o", out)
    assert proc.returncode == 1 and proc.stdout == ""
    assert str(out) in proc.stderr or "no-such-dir" in proc.stderr, proc.stderr
    assert not out.parent.exists()


def test_interrupted_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Interrupted between writing and renaming: the old file stays, the temporary one goes."""
    out = tmp_path / "out.cdl"
    out.write_text("precious\n")
    result = cdl.load(WEBAPP).resolve()

    def interrupted(_fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        result.write(out)
    assert out.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.cdl"]
    with pytest.raises(KeyboardInterrupt):
        result.write(tmp_path / "fresh.cdl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.cdl"]


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or sys.platform == "win32", reason="POSIX signals")
def test_cli_interrupted_while_resolving_leaves_output_untouched(tmp_path: Path) -> None:
    main = tmp_path / "d.cdl"
    main.write_text(doubling_document(40))
    out = tmp_path / "out.cdl"
    out.write_text("precious\n")
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI_GUARD, "resolve", str(main), "-o", str(out), "--max-elements", "100000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CDL_TEST_READY": "1"},
    )
    assert proc.stderr is not None
    assert proc.stderr.readline() == "cdl-test-resolving\n"  # the command is inside Document.resolve
    proc.send_signal(signal.SIGINT)  # long before 2**40 copies (or the limit) are made
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert stdout == "" and "Traceback" not in stderr, stderr
    assert out.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.cdl", "out.cdl"]


def test_input_files_never_modified(tmp_path: Path) -> None:
    """Library and CLI, success and failure, with imports and deploy-time values."""
    for name in ("system.cdl", "webapp-template.cdl", "component-model.cdl"):
        (tmp_path / name).write_bytes((WEBAPP.parent / name).read_bytes())
    (tmp_path / "broken.cdl").write_text(cdl_doc(imports=("webapp-template.cdl",), system='<s cdl:extends="Nope"/>'))
    main = tmp_path / "system.cdl"
    before = digest(tmp_path)
    os.chmod(tmp_path / "webapp-template.cdl", 0o444)  # a write attempt would fail loudly

    result = cdl.load(main).resolve()
    result.supply({"WebApplication/t:DB/t:hostname": "db"}).to_bytes()
    with pytest.raises(CdlError):
        cdl.load(tmp_path / "broken.cdl").resolve()
    assert run_cli("resolve", main, "--set", "WebApplication/t:DB/t:hostname=db").returncode == 0
    assert run_cli("pending", main).returncode == 0
    assert_refused(run_cli("resolve", tmp_path / "broken.cdl"), "UNKNOWN_PROTOTYPE")
    assert_refused(run_cli("resolve", tmp_path / "broken.cdl", "-o", tmp_path / "broken.cdl"), "UNKNOWN_PROTOTYPE")
    assert digest(tmp_path) == before


def _large_value_referenced(times: int, size: int) -> str:
    refs = "".join(f'<r{i} cdl:refroot="big" cdl:ref="/v"/>' for i in range(times))
    return (
        f'<cdl:cdl {NS}><cdl:configuration><big><v>{"x" * size}</v></big></cdl:configuration>'
        f"<cdl:system><s>{refs}</s></cdl:system></cdl:cdl>"
    )


def test_max_text_library() -> None:
    """One value copied many times is bounded by characters, not elements."""
    doc = _large_value_referenced(times=50, size=1000).encode()
    assert cdl.load(doc, name="t.cdl", limits=cdl.Limits(max_text=50_000)).resolve().pending == []
    with pytest.raises(cdl.CdlError) as info:
        cdl.load(doc, name="t.cdl", limits=cdl.Limits(max_text=49_999)).resolve()
    assert info.value.code == "LIMIT_EXCEEDED"
    assert "max_text" in info.value.message
    assert info.value.url == "t.cdl" and info.value.line == 1


def test_max_text_cli(tmp_path: Path) -> None:
    path = tmp_path / "t.cdl"
    path.write_text(_large_value_referenced(times=20, size=1000), encoding="utf-8")
    proc = run_cli("resolve", str(path), "--max-text", "19999")
    assert_refused(proc, "LIMIT_EXCEEDED", "max_text")
    assert run_cli("resolve", str(path), "--max-text", "20000").returncode == 0
