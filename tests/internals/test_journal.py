"""cdl.deployment.journal: the durable record of a deployment session.

Each event is one JSON line after a header line, on disk before ``append``
returns; a torn last line is dropped with a warning; every refusal
(JOURNAL_CORRUPT, JOURNAL_MISMATCH, JOURNAL_LOCKED) leaves the file byte for
byte as it was."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

import cdl
from cdl.deployment.journal import FORMAT, VERSION, Journal, journal_header

pytestmark = pytest.mark.skipif(os.name != "posix", reason="flock, POSIX permission bits and directory fsync")

ROOT = Path(__file__).resolve().parents[2]
HEADER = journal_header([("system.cdl", b"<system/>"), ("templates.cdl", b"<templates/>")], [])
DEPLOYED = {"event": "deployed", "path": "/db", "values": {"db/hostname": "db-0"}, "release": []}
SUPPLY = {"event": "supply", "values": {"monitor/hostname": "mon-0"}, "release": ["balancer/certificate"]}
FAILED = {"event": "failed", "path": "/apps/app1", "reason": "no capacity: «zone-b» full"}
RETRY = {"event": "retry", "path": "/apps/app1"}


def _journal(path: Path, *events: dict[str, Any]) -> list[dict[str, Any]]:
    """Begin a journal at ``path`` with HEADER, append ``events``, close it; the stored records."""
    journal, recorded, warnings = Journal.open(path, HEADER)
    assert recorded == [] and warnings == []
    try:
        return [journal.append(event) for event in events]
    finally:
        journal.close()


def _refused(path: Path, header: dict[str, Any] = HEADER) -> cdl.CdlError:
    """Open ``path``, which must be refused, and check the file is unchanged."""
    before = path.read_bytes()
    with pytest.raises(cdl.CdlError) as info:
        Journal.open(path, header)
    assert path.read_bytes() == before
    assert info.value.url == str(path)
    return info.value


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every os.fsync call, as "file" or "directory"."""
    calls: list[str] = []
    real = os.fsync

    def counting(fd: int) -> None:
        calls.append("directory" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    yield calls


def test_a_new_journal_is_its_header_line(tmp_path: Path) -> None:
    _journal(tmp_path / "j")
    lines = (tmp_path / "j").read_bytes().split(b"\n")
    assert lines[1:] == [b""]
    header = json.loads(lines[0])
    assert header == HEADER
    assert header["format"] == FORMAT and header["version"] == VERSION
    assert header["documents"] == [
        {"url": "system.cdl", "sha256": hashlib.sha256(b"<system/>").hexdigest()},
        {"url": "templates.cdl", "sha256": hashlib.sha256(b"<templates/>").hexdigest()},
    ]
    assert header["catalogs"] == []


def test_each_event_is_one_json_line_with_seq_and_utc_time(tmp_path: Path) -> None:
    records = _journal(tmp_path / "j", DEPLOYED, SUPPLY, FAILED, RETRY)
    assert [r["seq"] for r in records] == [1, 2, 3, 4]
    assert [{k: v for k, v in r.items() if k not in ("seq", "time")} for r in records] == [DEPLOYED, SUPPLY, FAILED, RETRY]
    for record in records:
        assert record["time"].endswith("Z")
        when = datetime.strptime(record["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
        assert abs((datetime.now(timezone.utc) - when).total_seconds()) < 60
    lines = (tmp_path / "j").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines[1:]] == records
    assert "«zone-b»" in lines[3]  # written as UTF-8 text, not escaped


def test_reopening_replays_the_events(tmp_path: Path) -> None:
    records = _journal(tmp_path / "j", DEPLOYED, SUPPLY)
    journal, events, warnings = Journal.open(tmp_path / "j", HEADER)
    try:
        assert events == records and warnings == []
        assert journal.append(RETRY)["seq"] == 3
    finally:
        journal.close()


def test_append_is_durable_before_it_returns(tmp_path: Path, fsyncs: list[str]) -> None:
    journal, _events, _warnings = Journal.open(tmp_path / "j", HEADER)
    assert fsyncs == ["file", "directory"]  # the header, then the new name
    try:
        for count in range(1, 4):
            journal.append(DEPLOYED)
            assert fsyncs[2:] == ["file"] * count  # one fsync per event, no directory sync
    finally:
        journal.close()
    fsyncs.clear()
    journal, _events, _warnings = Journal.open(tmp_path / "j", HEADER)
    journal.close()
    assert fsyncs == []  # opening an existing journal writes nothing


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_a_new_journal_gets_0666_less_the_umask(tmp_path: Path, mask: int) -> None:
    saved = os.umask(mask)
    try:
        _journal(tmp_path / "j")
    finally:
        os.umask(saved)
    assert stat.S_IMODE((tmp_path / "j").stat().st_mode) == 0o666 & ~mask


def test_a_torn_last_line_is_dropped_with_a_warning_then_cut_off(tmp_path: Path) -> None:
    records = _journal(tmp_path / "j", DEPLOYED, SUPPLY)
    whole = (tmp_path / "j").read_bytes()
    torn = _line(3, FAILED)[:-9]
    (tmp_path / "j").write_bytes(whole + torn)
    journal, events, warnings = Journal.open(tmp_path / "j", HEADER)
    try:
        assert events == records
        assert len(warnings) == 1 and warnings[0].startswith(f"{tmp_path / 'j'}:4: dropped the last line")
        assert (tmp_path / "j").read_bytes() == whole + torn  # left until the next append
        record = journal.append(RETRY)
    finally:
        journal.close()
    assert record["seq"] == 3
    assert (tmp_path / "j").read_bytes() == whole + _line(3, RETRY, record["time"])


def test_a_line_torn_inside_a_character_is_torn(tmp_path: Path) -> None:
    _journal(tmp_path / "j", DEPLOYED)
    whole = (tmp_path / "j").read_bytes()
    line = _line(2, FAILED)
    cut = line.index("«".encode()) + 1  # half of the two bytes of «
    (tmp_path / "j").write_bytes(whole + line[:cut])
    journal, events, warnings = Journal.open(tmp_path / "j", HEADER)
    journal.close()
    assert len(events) == 1 and len(warnings) == 1


def test_a_last_line_lacking_only_its_newline_is_kept(tmp_path: Path) -> None:
    records = _journal(tmp_path / "j", DEPLOYED, SUPPLY)
    (tmp_path / "j").write_bytes((tmp_path / "j").read_bytes()[:-1])
    journal, events, warnings = Journal.open(tmp_path / "j", HEADER)
    try:
        assert events == records and warnings == []
        journal.append(RETRY)
    finally:
        journal.close()
    lines = (tmp_path / "j").read_bytes().split(b"\n")
    assert [json.loads(line)["seq"] for line in lines[1:-1]] == [1, 2, 3] and lines[-1] == b""


def test_a_header_cut_short_begins_the_journal_again(tmp_path: Path) -> None:
    (tmp_path / "j").write_bytes(b'{"format":"cdl-deploym')
    journal, events, warnings = Journal.open(tmp_path / "j", HEADER)
    journal.close()
    assert events == [] and len(warnings) == 1
    assert json.loads((tmp_path / "j").read_bytes()) == HEADER


def test_an_empty_file_begins_the_journal(tmp_path: Path) -> None:
    (tmp_path / "j").write_bytes(b"")
    journal, events, warnings = Journal.open(tmp_path / "j", HEADER)
    journal.close()
    assert events == [] and warnings == []
    assert json.loads((tmp_path / "j").read_bytes()) == HEADER


def _line(seq: int, event: dict[str, Any], time: str = "2026-01-01T00:00:00.000000Z") -> bytes:
    return (json.dumps({"seq": seq, "time": time, **event}, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


@pytest.mark.parametrize(
    ("line", "number", "words"),
    [
        (b"not json\n", 3, "not a JSON object"),
        (b"[1, 2]\n", 3, "not a JSON object"),
        (b'{"seq": 2, "time"\n', 3, "not a JSON object"),  # cut short, but not the last line: a newline follows
        (_line(5, RETRY), 3, "seq is 5 where 2 follows"),
        (_line(2, {"event": "undeploy", "path": "/db"}), 3, "unknown event 'undeploy'"),
        (_line(2, {"event": "retry"}), 3, "fields path"),
        (_line(2, {"event": "retry", "path": "/db", "why": "x"}), 3, "fields path"),
        (_line(2, {"event": "failed", "path": "/db", "reason": 3}), 3, "reason is not a string"),
        (_line(2, {"event": "supply", "values": {"a": 1}, "release": []}), 3, "values is not an object of strings"),
        (_line(2, {"event": "supply", "values": {}, "release": "a"}), 3, "release is not a list of strings"),
        (b'{"seq": 2, "event": "retry", "path": "/db"}\n', 3, "no time"),
    ],
)
def test_a_malformed_line_is_corrupt_with_its_number(tmp_path: Path, line: bytes, number: int, words: str) -> None:
    _journal(tmp_path / "j", DEPLOYED)
    with open(tmp_path / "j", "ab") as handle:
        handle.write(line + _line(3, RETRY))
    error = _refused(tmp_path / "j")
    assert error.code == "JOURNAL_CORRUPT" and error.line == number and words in error.message
    assert isinstance(error, cdl.errors.JournalError)
    assert error.render().startswith(f"{tmp_path / 'j'}:{number}: [JOURNAL_CORRUPT]")


def test_a_file_that_is_no_journal_is_corrupt(tmp_path: Path) -> None:
    (tmp_path / "j").write_bytes(b'{"hello": "world"}\n')
    error = _refused(tmp_path / "j")
    assert error.code == "JOURNAL_CORRUPT" and error.line == 1


def test_changed_documents_are_a_mismatch_naming_them(tmp_path: Path) -> None:
    _journal(tmp_path / "j", DEPLOYED)
    changed = journal_header([("system.cdl", b"<system/>"), ("templates.cdl", b"<templates changed=''/>")], [])
    error = _refused(tmp_path / "j", changed)
    assert error.code == "JOURNAL_MISMATCH" and error.line == 1
    assert "document templates.cdl changed" in error.message and "system.cdl changed" not in error.message
    more = journal_header([("system.cdl", b"<system/>"), ("templates.cdl", b"<templates/>"), ("more.cdl", b"")], [])
    assert "document more.cdl was not loaded when the journal began" in _refused(tmp_path / "j", more).message
    fewer = journal_header([("system.cdl", b"<system/>")], [])
    assert "document templates.cdl is no longer loaded" in _refused(tmp_path / "j", fewer).message


def test_the_same_documents_by_another_path_are_no_mismatch(tmp_path: Path) -> None:
    records = _journal(tmp_path / "j", DEPLOYED)
    moved = journal_header([("/elsewhere/system.cdl", b"<system/>"), ("/elsewhere/templates.cdl", b"<templates/>")], [])
    journal, events, _warnings = Journal.open(tmp_path / "j", moved)
    journal.close()
    assert events == records


def test_a_changed_catalog_is_a_mismatch(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.xml"
    catalog.write_bytes(b"<catalog/>")
    header = journal_header([("system.cdl", b"<system/>")], [str(catalog)])
    journal, _events, _warnings = Journal.open(tmp_path / "j", header)
    journal.close()
    catalog.write_bytes(b"<catalog changed='yes'/>")
    error = _refused(tmp_path / "j", journal_header([("system.cdl", b"<system/>")], [str(catalog)]))
    assert error.code == "JOURNAL_MISMATCH" and f"catalog {catalog} changed" in error.message


def test_another_format_version_is_a_mismatch(tmp_path: Path) -> None:
    (tmp_path / "j").write_text(json.dumps({**HEADER, "version": VERSION + 1}) + "\n")
    error = _refused(tmp_path / "j")
    assert error.code == "JOURNAL_MISMATCH" and f"version {VERSION + 1}" in error.message


def test_an_unreadable_catalog_is_an_io_error(tmp_path: Path) -> None:
    with pytest.raises(cdl.CdlError) as info:
        journal_header([], [str(tmp_path / "missing.xml")])
    assert info.value.code == "IO_ERROR" and info.value.url == str(tmp_path / "missing.xml")
    assert info.value.message == f"cannot read {tmp_path / 'missing.xml'}: {os.strerror(errno.ENOENT)}"


def test_a_journal_that_cannot_be_opened_is_an_io_error(tmp_path: Path) -> None:
    with pytest.raises(cdl.CdlError) as info:
        Journal.open(tmp_path, HEADER)  # a directory
    assert info.value.code == "IO_ERROR" and info.value.url == str(tmp_path)
    assert info.value.message == f"cannot open the journal {tmp_path}: {os.strerror(errno.EISDIR)}"


def test_a_second_open_in_the_same_process_is_locked(tmp_path: Path) -> None:
    journal, _events, _warnings = Journal.open(tmp_path / "j", HEADER)
    try:
        journal.append(DEPLOYED)
        error = _refused(tmp_path / "j")
        assert error.code == "JOURNAL_LOCKED"
    finally:
        journal.close()
    again, events, _warnings = Journal.open(tmp_path / "j", HEADER)  # released by close
    again.close()
    assert len(events) == 1


def test_a_journal_held_by_another_process_is_locked(tmp_path: Path) -> None:
    _journal(tmp_path / "j", DEPLOYED)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path / "j")],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding 1\n"
        error = _refused(tmp_path / "j")
        assert error.code == "JOURNAL_LOCKED" and "in use" in error.message
    finally:
        holder.communicate("\n", timeout=60)
    journal, events, _warnings = Journal.open(tmp_path / "j", HEADER)  # the holder exited: free again
    journal.close()
    assert len(events) == 1


_HOLDER = f"""
import sys
from cdl.deployment.journal import Journal, journal_header
journal, events, _ = Journal.open(sys.argv[1], journal_header({[("system.cdl", b"<system/>"), ("templates.cdl", b"<templates/>")]!r}, []))
print("holding", len(events), flush=True)
sys.stdin.readline()
"""


def test_a_failed_write_leaves_the_journal_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    journal, _events, _warnings = Journal.open(tmp_path / "j", HEADER)
    try:
        first = journal.append(DEPLOYED)
        before = (tmp_path / "j").read_bytes()

        def failing(fd: int) -> None:
            raise OSError(errno.EIO, os.strerror(errno.EIO))

        with monkeypatch.context() as patch:
            patch.setattr(os, "fsync", failing)
            with pytest.raises(cdl.CdlError) as info:
                journal.append(SUPPLY)
        assert info.value.code == "IO_ERROR" and info.value.url == str(tmp_path / "j")
        assert info.value.message == f"cannot write {tmp_path / 'j'}: {os.strerror(errno.EIO)}"
        assert (tmp_path / "j").read_bytes() == before  # the line written but not synced is gone
        second = journal.append(RETRY)
    finally:
        journal.close()
    assert second["seq"] == 2  # the failed event took no number
    reopened, events, warnings = Journal.open(tmp_path / "j", HEADER)
    reopened.close()
    assert events == [first, second] and warnings == []


def test_misuse_is_a_programming_error(tmp_path: Path) -> None:
    journal, _events, _warnings = Journal.open(tmp_path / "j", HEADER)
    with pytest.raises(ValueError, match="not a journal event"):
        journal.append({"event": "deployed", "path": "/db"})
    with pytest.raises(ValueError, match="not a journal event"):
        journal.append({"path": "/db"})
    journal.close()
    journal.close()  # closing twice is harmless
    with pytest.raises(ValueError, match="closed"):
        journal.append(DEPLOYED)
    assert len((tmp_path / "j").read_bytes().splitlines()) == 1

