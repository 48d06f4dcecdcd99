"""What the dead-code clean-up kept: one atomic writer (the JUnit report
included), the output step's assumptions, plain data for repeated names, and
no second public Round."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import pytest

import cdl
from cdl.conformance import run_suite
from conftest import resolve_text, system

DATA = Path(__file__).resolve().parent / "data" / "conformance"
APPENDIX = DATA / "suite" / "appendix"
PROCESSOR = f"{shlex.quote(sys.executable)} {shlex.quote(str(DATA / 'fake_processor.py'))} {{input}}"


# -- one atomic writer ---------------------------------------------------------


def test_the_junit_report_is_written_through_the_atomic_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    report = tmp_path / "report.xml"
    assert run_suite(APPENDIX, PROCESSOR, junit=report, echo=lambda _line: None) == 0
    assert synced, "the report reached the disk without fsync"
    assert report.read_bytes().startswith(b"<?xml") and [p.name for p in tmp_path.iterdir()] == ["report.xml"]


def test_a_junit_report_that_cannot_be_written_leaves_the_old_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = tmp_path / "report.xml"
    report.write_text("old")

    def replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(cdl.CdlError) as info:
        run_suite(APPENDIX, PROCESSOR, junit=report, echo=lambda _line: None)
    assert info.value.code == "IO_ERROR" and "No space left on device" in info.value.message
    assert report.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.xml"]  # the temporary file is gone


def test_a_junit_report_in_a_missing_directory_is_a_clean_cli_error(tmp_path: Path) -> None:
    import subprocess

    report = tmp_path / "missing" / "report.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "cdl", "conformance", str(APPENDIX), "--processor", PROCESSOR, "--junit", str(report)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "[IO_ERROR] cannot write" in proc.stderr


# -- the output step ---------------------------------------------------------------


# -- plain data, and dead code gone ------------------------------------------------


def test_repeated_names_become_plain_lists() -> None:
    data = resolve_text(system("<S><a>1</a><a><b>2</b><b>3</b></a><a/></S>")).to_data()["system"]
    assert data == {"S": {"a": ["1", {"b": ["2", "3"]}, ""]}}
    assert type(data["S"]["a"]) is list


