"""What users install is what is tested.

The package lives in ``src/cdl`` (the src layout), so the tests import the
installed copy, never the checkout. Here: the wheel built from the checkout
holds every module and data file of ``src/cdl``; the installed package
works from a directory outside the checkout (``cdl lsp`` answers
``initialize``, ``cdl conformance`` passes, ``python -m cdl --help``); and,
under ``.ci/run`` (``CDL_TEST_INSTALLED=1``), the tests themselves run
against an installed, non-editable copy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

import cdl
from cdl.conformance import load_suite

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "cdl"

pytestmark = pytest.mark.skipif(not SOURCE.is_dir(), reason="needs the source tree (src/cdl)")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `pip wheel` builds from a copy of the project (the copy keeps
    build/ and *.egg-info out of the checkout)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / part, source / part)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(source), "-w", str(tmp / "out")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if built.returncode != 0 and "satisfies the requirement" in built.stderr:
        pytest.skip(f"pip cannot fetch the build backend (offline?): {built.stderr.strip()[-300:]}")
    assert built.returncode == 0, built.stderr
    (found,) = (tmp / "out").glob("cdl-*.whl")
    return found


def _tracked(pattern: str) -> set[str]:
    """Files of src/cdl (relative to src/), as git tracks them, else as on disk."""
    listed = subprocess.run(["git", "ls-files", "src/cdl"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode == 0 and listed.stdout:
        files = {Path(line).relative_to("src").as_posix() for line in listed.stdout.splitlines()}
    else:
        files = {p.relative_to(ROOT / "src").as_posix() for p in SOURCE.rglob("*") if p.is_file()}
    return {f for f in files if Path(f).match(pattern) and "__pycache__" not in f}


def test_the_wheel_holds_every_module_of_the_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    modules = _tracked("*.py")
    assert {"cdl/__init__.py", "cdl/__main__.py", "cdl/lsp/server.py", "cdl/engine/phases.py"} <= modules
    assert modules - shipped == set()


def test_the_wheel_holds_every_data_file(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    data = {f for f in _tracked("*") if not f.endswith(".py")}
    assert {"cdl/py.typed", "cdl/xsd/cdl.xsd"} <= data
    assert any(f.startswith("cdl/conformance_cases/") and f.endswith("case.json") for f in data)
    assert data - shipped == set()


def _installed(tmp: Path, wheel: Path) -> Path:
    """A directory the wheel is unpacked onto (a pure-Python wheel installs so)."""
    site = tmp / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


def _run_from(cwd: Path, site: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """``python ARGS`` in ``cwd`` with only ``site`` (the unpacked wheel) adding to the path."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, input=stdin, capture_output=True, timeout=300)


def test_the_installed_package_works_from_another_directory(tmp_path: Path, wheel: Path) -> None:
    site = _installed(tmp_path, wheel)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = _run_from(elsewhere, site, "-c", "import cdl, cdl.lsp.server; print(cdl.__file__)")
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.decode().strip()) == site / "cdl" / "__init__.py"
    helped = _run_from(elsewhere, site, "-m", "cdl", "--help")
    assert helped.returncode == 0, helped.stderr
    assert b"Usage: " in helped.stdout and b"conformance" in helped.stdout and b"lsp" in helped.stdout
    ran = _run_from(elsewhere, site, "-m", "cdl", "conformance")
    cases = len(load_suite(SOURCE / "conformance_cases"))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.decode().endswith(f"\n{cases} passed, 0 failed\n")


def _message(body: dict[str, object]) -> bytes:
    data = json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def _messages(stream: bytes) -> list[dict[str, object]]:
    found = []
    while stream:
        head, _, rest = stream.partition(b"\r\n\r\n")
        length = int(head.split(b"Content-Length:")[1].split(b"\r\n")[0])
        found.append(json.loads(rest[:length]))
        stream = rest[length:]
    return found


def test_the_installed_language_server_answers_initialize(tmp_path: Path, wheel: Path) -> None:
    pytest.importorskip("pygls")
    site = _installed(tmp_path, wheel)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    session = b"".join(
        _message(m)
        for m in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {}}},
            {"jsonrpc": "2.0", "method": "initialized", "params": {}},
            {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
            {"jsonrpc": "2.0", "method": "exit"},
        )
    )
    served = _run_from(elsewhere, site, "-m", "cdl", "lsp", stdin=session)
    assert served.returncode == 0, served.stderr
    answers = {m.get("id"): m for m in _messages(served.stdout) if "id" in m}
    info = answers[1]["result"]["serverInfo"]  # type: ignore[index]
    assert info == {"name": "cdl", "version": cdl.__version__}
    assert "hoverProvider" in answers[1]["result"]["capabilities"]  # type: ignore[index]


def test_console_script_cdl_is_installed() -> None:
    scripts = {e.name: e.value for e in metadata.distribution("cdl").entry_points if e.group == "console_scripts"}
    assert scripts == {"cdl": "cdl.cli:main"}


@pytest.mark.skipif(os.environ.get("CDL_TEST_INSTALLED") != "1", reason="only under .ci/run, which installs the wheel")
def test_the_tests_import_an_installed_non_editable_copy() -> None:
    here = Path(cdl.__file__).resolve()
    assert ROOT not in here.parents, f"the tests imported {here}, from the checkout"
    direct = metadata.distribution("cdl").read_text("direct_url.json")
    assert direct is None or not json.loads(direct).get("dir_info", {}).get("editable", False)
