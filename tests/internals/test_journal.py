"""cdl.deployment.journal: the durable record of a deployment session.

Each event is one line after a header line (JSON, a space and a rolling
CRC-32), on disk before ``append`` returns; a torn last line (a prefix of a
record) is dropped with a warning; every refusal (JOURNAL_CORRUPT,
NOT_JOURNAL, JOURNAL_MISMATCH, JOURNAL_LOCKED, BAD_TEXT) leaves the file
byte for byte as it was. Journals of format version 1 are still read."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import zlib
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

import cdl
from cdl.deployment.journal import FORMAT, VERSION, Journal, journal_header
from conftest import journal_line, journal_records

pytestmark = pytest.mark.skipif(os.name != "posix", reason="flock, POSIX permission bits and directory fsync")

ROOT = Path(__file__).resolve().parents[2]
OLD = ROOT / "tests" / "data" / "journal-v1"  # a journal of format version 1, as the previous release wrote it
HEADER = journal_header([("system.cdl", b"<system/>"), ("templates.cdl", b"<templates/>")], [])
DEPLOYED = {"event": "deployed", "path": "/db", "values": {"db/hostname": "db-0"}, "release": []}
SUPPLY = {"event": "supply", "values": {"monitor/hostname": "mon-0"}, "release": ["balancer/certificate"]}
FAILED = {"event": "failed", "path": "/apps/app1", "reason": "no capacity: «zone-b» full"}
RETRY = {"event": "retry", "path": "/apps/app1"}
TIME = "2026-01-01T00:00:00.000000Z"


def _journal(path: Path, *events: dict[str, Any]) -> list[dict[str, Any]]:
    """Begin a journal at ``path`` with HEADER, append ``events``, close it; the stored records."""
    journal, recorded, warnings = Journal.open(path, HEADER)
    assert recorded == [] and warnings == []
    try:
        return [journal.append(event) for event in events]
    finally:
        journal.close()


def _refused(path: Path, header: dict[str, Any] = HEADER) -> cdl.CdlError:
    """Open ``path`` to append and to read, both of which must be refused
    alike, and check the file is unchanged."""
    before = path.read_bytes()
    with pytest.raises(cdl.CdlError) as info:
        Journal.open(path, header)
    assert path.read_bytes() == before
    assert info.value.url == str(path)
    with pytest.raises(cdl.CdlError) as again:
        Journal.read(path, header)
    assert again.value.render() == info.value.render()
    assert path.read_bytes() == before
    return info.value


def _read(path: Path, header: dict[str, Any] = HEADER) -> tuple[list[dict[str, Any]], list[str]]:
    """The events and warnings of ``path``, read to append and read-only
    alike; opening writes nothing (unless a crash cut the header short)."""
    before = path.read_bytes()
    journal, events, warnings = Journal.open(path, header)
    journal.close()
    assert path.read_bytes() == before
    assert Journal.read(path, header) == (events, warnings)
    return events, warnings


def _line(seq: int, event: dict[str, Any], before: bytes, **extra: Any) -> bytes:
    """The line of event ``seq`` after the bytes ``before``, with a valid checksum."""
    return journal_line({"seq": seq, "time": TIME, **event, **extra}, before)


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


# -- the format ----------------------------------------------------------------------


def test_a_new_journal_is_its_header_line_and_checksum(tmp_path: Path) -> None:
    _journal(tmp_path / "j")
    data = (tmp_path / "j").read_bytes()
    text, checksum = data[:-10], data[-9:-1]
    assert data.endswith(b"\n") and data.count(b"\n") == 1 and data[-10:-9] == b" "
    assert checksum == b"%08x" % zlib.crc32(text)
    header = json.loads(text)
    assert header == HEADER
    assert header["format"] == FORMAT and header["version"] == VERSION == 2
    assert header["documents"] == [
        {"url": "system.cdl", "sha256": hashlib.sha256(b"<system/>").hexdigest()},
        {"url": "templates.cdl", "sha256": hashlib.sha256(b"<templates/>").hexdigest()},
    ]
    assert header["catalogs"] == []


def test_each_event_is_one_line_with_seq_utc_time_and_a_rolling_checksum(tmp_path: Path) -> None:
    records = _journal(tmp_path / "j", DEPLOYED, SUPPLY, FAILED, RETRY)
    assert [r["seq"] for r in records] == [1, 2, 3, 4]
    assert [{k: v for k, v in r.items() if k not in ("seq", "time")} for r in records] == [DEPLOYED, SUPPLY, FAILED, RETRY]
    for record in records:
        assert record["time"].endswith("Z")
        when = datetime.strptime(record["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
        assert abs((datetime.now(timezone.utc) - when).total_seconds()) < 60
    assert journal_records(tmp_path / "j") == [HEADER, *records]  # each checksum covers every line so far
    assert "«zone-b»" in (tmp_path / "j").read_text(encoding="utf-8")  # written as UTF-8 text, not escaped


def test_reopening_replays_the_events(tmp_path: Path) -> None:
    records = _journal(tmp_path / "j", DEPLOYED, SUPPLY)
    journal, events, warnings = Journal.open(tmp_path / "j", HEADER)
    try:
        assert events == records and warnings == []
        assert journal.append(RETRY)["seq"] == 3
    finally:
        journal.close()
    assert journal_records(tmp_path / "j")[1:] == [*records, {"seq": 3, "time": journal_records(tmp_path / "j")[3]["time"], **RETRY}]


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
    Journal.read(tmp_path / "j", HEADER)
    assert fsyncs == []  # opening an existing journal writes nothing


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_a_new_journal_gets_0666_less_the_umask(tmp_path: Path, mask: int) -> None:
    saved = os.umask(mask)
    try:
        _journal(tmp_path / "j")
    finally:
        os.umask(saved)
    assert stat.S_IMODE((tmp_path / "j").stat().st_mode) == 0o666 & ~mask


# -- a crash's torn tail: repaired, and nothing else ---------------------------------


def test_a_torn_last_line_is_dropped_with_a_warning_then_cut_off(tmp_path: Path) -> None:
    records = _journal(tmp_path / "j", DEPLOYED, SUPPLY)
    whole = (tmp_path / "j").read_bytes()
    torn = _line(3, FAILED, whole)[:-9]
    (tmp_path / "j").write_bytes(whole + torn)
    events, warnings = _read(tmp_path / "j")
    assert events == records
    assert len(warnings) == 1 and warnings[0].startswith(f"{tmp_path / 'j'}:4: dropped the last line")
    journal, _events, _warnings = Journal.open(tmp_path / "j", HEADER)
    try:
        assert (tmp_path / "j").read_bytes() == whole + torn  # left until the next append
        record = journal.append(RETRY)
    finally:
        journal.close()
    assert record["seq"] == 3
    assert (tmp_path / "j").read_bytes() == whole + journal_line(record, whole)


def test_every_truncation_keeps_exactly_the_whole_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut a small journal at every byte: each cut opens, read-only and to
    append, with the events whose lines are whole (a last line lacking only
    its newline is whole); a cut inside the header begins the journal again."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)  # what is on disk is not the question here
    records = _journal(tmp_path / "full", DEPLOYED, RETRY)
    data = (tmp_path / "full").read_bytes()
    ends = [i + 1 for i, byte in enumerate(data) if byte == 0x0A]  # after each newline
    for cut in range(len(data) + 1):
        path = tmp_path / f"cut-{cut}"  # a new file each time: truncating one is slow where the disk discards blocks
        path.write_bytes(data[:cut])
        whole = sum(1 for end in ends if end <= cut + 1) - 1  # lines whole but perhaps for their newline, less the header
        if whole < 0:  # inside the header: nothing recorded yet
            events, warnings = Journal.read(path, HEADER)
            assert (events, path.read_bytes()) == ([], data[:cut])
            journal, events, warnings = Journal.open(path, HEADER)
            journal.close()
            assert events == [] and path.read_bytes() == data[: ends[0]]
            continue
        events, warnings = _read(path)
        assert events == records[:whole], cut
        torn = cut not in ends and cut + 1 not in ends
        assert len(warnings) == torn, (cut, warnings)
        journal, _events, _warnings = Journal.open(path, HEADER)
        try:
            record = journal.append(RETRY)
        finally:
            journal.close()
        assert record["seq"] == whole + 1
        assert journal_records(path) == [HEADER, *records[:whole], record]


def test_a_line_torn_inside_a_character_or_an_escape_is_torn(tmp_path: Path) -> None:
    _journal(tmp_path / "j", DEPLOYED)
    whole = (tmp_path / "j").read_bytes()
    line = _line(2, {**FAILED, "reason": "«\u0001»"}, whole)
    for cut in (line.index("«".encode()) + 1, line.index(b"\\u0001") + 3, line.index(b"\\u0001") + 6):
        (tmp_path / "j").write_bytes(whole + line[:cut])
        events, warnings = _read(tmp_path / "j")
        assert len(events) == 1 and len(warnings) == 1, cut


def test_a_torn_line_may_end_in_zeroed_bytes(tmp_path: Path) -> None:
    """A crash can leave the blocks of an unfinished write zeroed (the file
    grew, its data never came): a prefix of a record and zeros is torn."""
    _journal(tmp_path / "j", DEPLOYED)
    whole = (tmp_path / "j").read_bytes()
    line = _line(2, FAILED, whole)
    for tail in (line[:30] + b"\0" * 4000, b"\0" * 512, line[:-9] + b"\0" * 9):
        (tmp_path / "j").write_bytes(whole + tail)
        events, warnings = _read(tmp_path / "j")
        assert len(events) == 1 and len(warnings) == 1
    (tmp_path / "j").write_bytes(whole + line[:-1] + b"\0")  # a whole record, then a zero
    assert _refused(tmp_path / "j").code == "JOURNAL_CORRUPT"


def test_a_last_line_lacking_only_its_newline_is_kept(tmp_path: Path) -> None:
    records = _journal(tmp_path / "j", DEPLOYED, SUPPLY)
    (tmp_path / "j").write_bytes((tmp_path / "j").read_bytes()[:-1])
    events, warnings = _read(tmp_path / "j")
    assert events == records and warnings == []
    journal, _events, _warnings = Journal.open(tmp_path / "j", HEADER)
    try:
        journal.append(RETRY)
    finally:
        journal.close()
    assert [r.get("seq") for r in journal_records(tmp_path / "j")] == [None, 1, 2, 3]


@pytest.mark.parametrize("byte", [b"x", b" ", b"}", b"\r", b"\0", b"\xff"])
def test_a_whole_record_followed_by_anything_is_corrupt(tmp_path: Path, byte: bytes) -> None:
    """The last newline changed: the record is whole, so it is not torn (it
    was acknowledged); dropping it would lose it, and the next append would
    overwrite it."""
    _journal(tmp_path / "j", DEPLOYED, SUPPLY)
    (tmp_path / "j").write_bytes((tmp_path / "j").read_bytes()[:-1] + byte)
    error = _refused(tmp_path / "j")
    assert error.code == "JOURNAL_CORRUPT" and error.line == 3


def test_a_header_cut_short_begins_the_journal_again(tmp_path: Path) -> None:
    _journal(tmp_path / "model")
    line = (tmp_path / "model").read_bytes()
    (tmp_path / "j").write_bytes(line[:40])
    assert Journal.read(tmp_path / "j", HEADER) == ([], [f"{tmp_path / 'j'}:1: begins the journal again: its header was cut short by a crash"])
    assert (tmp_path / "j").read_bytes() == line[:40]  # read-only: nothing written
    journal, events, warnings = Journal.open(tmp_path / "j", HEADER)
    journal.close()
    assert events == [] and len(warnings) == 1
    assert (tmp_path / "j").read_bytes() == line


def test_an_empty_file_begins_the_journal(tmp_path: Path) -> None:
    (tmp_path / "j").write_bytes(b"")
    assert Journal.read(tmp_path / "j", HEADER) == ([], [])
    journal, events, warnings = Journal.open(tmp_path / "j", HEADER)
    journal.close()
    assert events == [] and warnings == []
    assert journal_records(tmp_path / "j") == [HEADER]


# -- files that are no journal are never written -------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        b"hello",  # one line without a newline: no torn header, a user's file
        b"hello\nworld\n",
        b'{"hello": "world"}\n',
        b"\x89PNG\r\n\x1a\n\0\0",
        b"{ ",  # "{" alone could be a header cut short; "{ " cannot
        b'{"format": "cdl-deployment-journal", "version": 2}\n',  # not as cdl writes it
    ],
)
def test_a_file_that_is_no_journal_is_refused_and_left_as_it_was(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "j").write_bytes(content)
    error = _refused(tmp_path / "j")
    assert error.code == "NOT_JOURNAL" and error.line == 1
    assert "is not a deployment journal" in error.message and "left as it was" in error.message


def test_a_header_of_other_documents_cut_short_is_refused(tmp_path: Path) -> None:
    other = journal_header([("other.cdl", b"<other/>")], [])
    (tmp_path / "j").write_bytes(json.dumps(other, separators=(",", ":")).encode()[:80])
    error = _refused(tmp_path / "j")
    assert error.code == "JOURNAL_CORRUPT" and error.line == 1 and "header" in error.message


# -- every line is checked exactly ---------------------------------------------------


def test_an_edited_value_is_corrupt_never_replayed(tmp_path: Path) -> None:
    _journal(tmp_path / "j", DEPLOYED, SUPPLY)
    data = (tmp_path / "j").read_bytes()
    (tmp_path / "j").write_bytes(data.replace(b'"db-0"', b'"db-1"'))
    error = _refused(tmp_path / "j")
    assert error.code == "JOURNAL_CORRUPT" and error.line == 2 and "checksum does not match" in error.message


def test_every_changed_byte_is_refused(tmp_path: Path) -> None:
    """Change each byte of a small journal (a bit of it, and to a newline or
    a space): every change is refused, read-only and to append, and leaves
    the file as it was."""
    _journal(tmp_path / "full", DEPLOYED, RETRY)
    data = (tmp_path / "full").read_bytes()
    path = tmp_path / "j"
    path.write_bytes(data)
    fd = os.open(path, os.O_WRONLY)
    try:
        for at, old in enumerate(data):
            for new in (old ^ 0x01, 0x0A if old != 0x0A else 0x20):
                os.pwrite(fd, bytes([new]), at)
                with pytest.raises(cdl.CdlError) as info:
                    Journal.read(path, HEADER)
                assert info.value.code in ("JOURNAL_CORRUPT", "NOT_JOURNAL"), (at, new)
                with pytest.raises(cdl.CdlError):
                    Journal.open(path, HEADER)
                assert path.read_bytes() == data[:at] + bytes([new]) + data[at + 1 :]
            os.pwrite(fd, bytes([old]), at)
    finally:
        os.close(fd)


def test_a_line_moved_from_another_journal_is_corrupt(tmp_path: Path) -> None:
    """The checksum rolls over every line: event 1 of another journal, with
    the same seq, does not fit here."""
    _journal(tmp_path / "a", DEPLOYED)
    other = journal_header([("system.cdl", b"<system/>"), ("templates.cdl", b"<templates/>")], [])
    other["catalogs"] = [{"path": "c.xml", "sha256": "0" * 64}]
    journal, _events, _warnings = Journal.open(tmp_path / "b", other)
    journal.append(SUPPLY)
    journal.close()
    a = (tmp_path / "a").read_bytes().splitlines(keepends=True)
    b = (tmp_path / "b").read_bytes().splitlines(keepends=True)
    (tmp_path / "a").write_bytes(a[0] + b[1])
    error = _refused(tmp_path / "a")
    assert error.code == "JOURNAL_CORRUPT" and error.line == 2


@pytest.mark.parametrize(
    ("line", "words"),
    [
        (b"not json", "not a JSON object"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"seq": 2, "time"', "not a JSON object"),  # cut short, but not the last line: a newline follows
        (_line(5, RETRY, b"")[:-10], "seq is 5 where 2 follows"),
        (json.dumps({"seq": True, "time": TIME, **RETRY}).encode(), "seq is true where 2 follows"),
        (json.dumps({"seq": 2.0, "time": TIME, **RETRY}).encode(), "seq is 2.0 where 2 follows"),
        (b'{"seq":2,"seq":2,"time":"' + TIME.encode() + b'","event":"retry","path":"/db"}', "the key 'seq' twice"),
        (b'{"seq":2,"time":"' + TIME.encode() + b'","event":"supply","values":{"a":"1","a":"2"},"release":[]}', "the key 'a' twice"),
        (json.dumps({"seq": 2, "time": 5, **RETRY}).encode(), "its time is not a UTC time"),
        (json.dumps({"seq": 2, "time": "yesterday", **RETRY}).encode(), "its time is not a UTC time"),
        (json.dumps({"seq": 2, "event": "retry", "path": "/db"}).encode(), "no time"),
        (json.dumps({"seq": 2, "time": TIME, "event": "undeploy", "path": "/db"}).encode(), "unknown event 'undeploy'"),
        (json.dumps({"seq": 2, "time": TIME, "event": "retry"}).encode(), "fields path"),
        (json.dumps({"seq": 2, "time": TIME, "event": "retry", "path": "/db", "why": "x"}).encode(), "fields path"),
        (json.dumps({"seq": 2, "time": TIME, "event": "failed", "path": "/db", "reason": 3}).encode(), "reason is not a string"),
        (json.dumps({"seq": 2, "time": TIME, "event": "retry", "path": True}).encode(), "path is not a string"),
        (json.dumps({"seq": 2, "time": TIME, **DEPLOYED, "later": "db/port"}).encode(), "later is not a list of strings"),
        (json.dumps({"seq": 2, "time": TIME, **RETRY, "later": []}).encode(), "fields path, not later, path"),
        (json.dumps({"seq": 2, "time": TIME, "event": "supply", "values": {"a": 1}, "release": []}).encode(), "values is not an object of strings"),
        (json.dumps({"seq": 2, "time": TIME, "event": "supply", "values": {}, "release": "a"}).encode(), "release is not a list of strings"),
        (b'{"seq":2,"time":"' + TIME.encode() + b'","event":"retry","path":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
        (b'{"seq":2,"time":"' + TIME.encode() + b'","event":"retry","path":"\xff"}', "not UTF-8"),
    ],
    ids=lambda value: value[:60].decode("utf-8", "replace") if isinstance(value, bytes) else None,
)
def test_a_malformed_line_with_a_valid_checksum_is_corrupt_with_its_number(tmp_path: Path, line: bytes, words: str) -> None:
    """What a checksum cannot catch (a line forged with a valid one) the exact
    check of every field does."""
    _journal(tmp_path / "j", DEPLOYED)
    data = (tmp_path / "j").read_bytes()
    bad = journal_line(line, data)
    (tmp_path / "j").write_bytes(data + bad + _line(3, RETRY, data + bad))
    error = _refused(tmp_path / "j")
    assert error.code == "JOURNAL_CORRUPT" and error.line == 3 and words in error.message, error.message
    assert isinstance(error, cdl.errors.JournalError)
    assert error.render().startswith(f"{tmp_path / 'j'}:3: [JOURNAL_CORRUPT]")


@pytest.mark.parametrize(("seq", "written"), [(True, "true"), (1.0, "1.0")])
def test_a_seq_equal_to_its_number_but_not_an_integer_is_corrupt(tmp_path: Path, seq: Any, written: str) -> None:
    """In Python, true == 1 == 1.0: the type is checked, not only the value."""
    _journal(tmp_path / "j")
    data = (tmp_path / "j").read_bytes()
    (tmp_path / "j").write_bytes(data + journal_line({"seq": seq, "time": TIME, **RETRY}, data))
    error = _refused(tmp_path / "j")
    assert error.code == "JOURNAL_CORRUPT" and error.line == 2 and f"seq is {written} where 1 follows" in error.message


def test_a_deeply_nested_last_line_is_corrupt_torn_or_not(tmp_path: Path) -> None:
    _journal(tmp_path / "j", DEPLOYED)
    data = (tmp_path / "j").read_bytes()
    deep = b'{"seq":2,"time":"' + TIME.encode() + b'","event":"retry","path":' + b"[" * 100_000
    for tail in (deep, deep + b"]" * 100_000 + b"}"):
        (tmp_path / "j").write_bytes(data + tail)
        error = _refused(tmp_path / "j")
        assert error.code == "JOURNAL_CORRUPT" and error.line == 3 and "nested too deeply" in error.message


def test_a_line_without_its_checksum_is_corrupt(tmp_path: Path) -> None:
    _journal(tmp_path / "j", DEPLOYED)
    data = (tmp_path / "j").read_bytes()
    (tmp_path / "j").write_bytes(data + json.dumps({"seq": 2, "time": TIME, **RETRY}).encode() + b"\n")
    error = _refused(tmp_path / "j")
    assert error.code == "JOURNAL_CORRUPT" and error.line == 3 and "checksum" in error.message


def test_a_damaged_header_is_corrupt(tmp_path: Path) -> None:
    for header in (
        {**HEADER, "version": True},
        {**HEADER, "documents": [{"url": "system.cdl", "sha256": 5}]},
        {**HEADER, "catalogs": {}},
        {**HEADER, "extra": 1},
    ):
        (tmp_path / "j").write_bytes(journal_line(header, b""))
        error = _refused(tmp_path / "j")
        assert error.code == "JOURNAL_CORRUPT" and error.line == 1 and "header" in error.message


# -- a text that cannot be written ---------------------------------------------------


def test_a_string_that_is_no_text_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    journal, _events, _warnings = Journal.open(tmp_path / "j", HEADER)
    try:
        first = journal.append(DEPLOYED)
        before = (tmp_path / "j").read_bytes()
        bad = "bytes \udcff from a shell"  # what os.fsdecode makes of b"\xff"
        for event in ({**FAILED, "reason": bad}, {**SUPPLY, "values": {"a": bad}}, {**SUPPLY, "release": [bad]}):
            with pytest.raises(cdl.CdlError) as info:
                journal.append(event)
            assert info.value.code == "BAD_TEXT" and "'\\udcff'" in info.value.message
            assert (tmp_path / "j").read_bytes() == before
        second = journal.append(RETRY)
    finally:
        journal.close()
    assert [first["seq"], second["seq"]] == [1, 2]


# -- documents -----------------------------------------------------------------------


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
    assert _read(tmp_path / "j", moved)[0] == records


def test_a_changed_catalog_is_a_mismatch(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.xml"
    catalog.write_bytes(b"<catalog/>")
    header = journal_header([("system.cdl", b"<system/>")], [str(catalog)])
    journal, _events, _warnings = Journal.open(tmp_path / "j", header)
    journal.close()
    catalog.write_bytes(b"<catalog changed='yes'/>")
    error = _refused(tmp_path / "j", journal_header([("system.cdl", b"<system/>")], [str(catalog)]))
    assert error.code == "JOURNAL_MISMATCH" and f"catalog {catalog} changed" in error.message


def test_a_later_format_version_is_a_mismatch(tmp_path: Path) -> None:
    (tmp_path / "j").write_bytes(journal_line({**HEADER, "version": 3, "more": "of version 3"}, b"") + b"anything of version 3\n")
    error = _refused(tmp_path / "j")
    assert error.code == "JOURNAL_MISMATCH" and error.line == 1
    assert "version 3; this cdl reads versions 1, 2" in error.message


# -- the previous format -------------------------------------------------------------


def _old_header() -> dict[str, Any]:
    return journal_header([(name, (OLD / name).read_bytes()) for name in ("system.cdl", "templates.cdl")], [])


def test_a_journal_of_the_previous_format_is_read_and_kept_in_it(tmp_path: Path) -> None:
    shutil.copy(OLD / "farm.journal", tmp_path / "j")
    old = (tmp_path / "j").read_bytes()
    lines = old.decode().splitlines()
    assert json.loads(lines[0])["version"] == 1
    events, warnings = _read(tmp_path / "j", _old_header())
    assert warnings == [] and events == [json.loads(line) for line in lines[1:]]
    assert [e["event"] for e in events] == ["deployed", "failed", "retry", "supply", "deployed"]
    journal, _events, _warnings = Journal.open(tmp_path / "j", _old_header())
    try:
        record = journal.append(RETRY)
    finally:
        journal.close()
    assert (tmp_path / "j").read_bytes() == old + json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def test_the_previous_format_is_checked_exactly_too(tmp_path: Path) -> None:
    old = (OLD / "farm.journal").read_bytes()
    for change, words in (
        (old.replace(b'"seq":3,', b'"seq":3.0,'), "seq is 3.0 where 3 follows"),
        (old.replace(b'"seq":3,', b'"seq":3,"seq":3,'), "the key 'seq' twice"),
        (old.replace(b'"path":"/monitor"}', b'"path":' + b"[" * 50_000 + b"]" * 50_000 + b"}"), "nested too deeply"),
        (old[:-1] + b"x", "a whole record is followed by other bytes"),
    ):
        (tmp_path / "j").write_bytes(change)
        error = _refused(tmp_path / "j", _old_header())
        assert error.code == "JOURNAL_CORRUPT" and words in error.message, error.message
    (tmp_path / "j").write_bytes(old + b'{"seq":6,"time":"20')  # torn, as before
    events, warnings = _read(tmp_path / "j", _old_header())
    assert len(events) == 5 and len(warnings) == 1


def test_a_header_of_either_version_in_the_other_framing_is_corrupt(tmp_path: Path) -> None:
    (tmp_path / "j").write_bytes(journal_line({**HEADER, "version": 1}, b""))
    assert "a version 1 header is written with a checksum" in _refused(tmp_path / "j").message
    (tmp_path / "j").write_bytes(json.dumps(HEADER, separators=(",", ":")).encode() + b"\n")
    assert "a version 2 header is written without a checksum" in _refused(tmp_path / "j").message


# -- files and locks -----------------------------------------------------------------


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
    with pytest.raises(cdl.CdlError) as info:
        Journal.open(tmp_path / "no" / "j", HEADER)
    assert info.value.code == "IO_ERROR" and os.strerror(errno.ENOENT) in info.value.message


def test_reading_creates_nothing(tmp_path: Path) -> None:
    assert Journal.read(tmp_path / "typo", HEADER) == ([], [f"{tmp_path / 'typo'}: no such journal yet: nothing is recorded (the first event begins it)"])
    assert Journal.read(tmp_path / "no" / "typo", HEADER)[0] == []
    assert list(tmp_path.iterdir()) == []


def test_reading_opens_read_only_under_a_shared_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What read-only media need, checked where root would not be stopped by
    permissions: the open's flags, the lock's mode, and no write of any kind."""
    records = _journal(tmp_path / "j", DEPLOYED)
    (tmp_path / "j").write_bytes((tmp_path / "j").read_bytes() + b'{"seq":2,"ti')  # a torn tail, not cut
    calls: list[tuple[str, int]] = []
    real_open, real_flock = os.open, fcntl.flock

    def opening(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
        calls.append(("open", flags))
        return real_open(path, flags, mode, **kw)

    def locking(fd: int, operation: int) -> None:
        calls.append(("flock", operation))
        real_flock(fd, operation)

    def writing(*args: Any) -> None:
        raise AssertionError(f"a read wrote: {args}")

    monkeypatch.setattr(os, "open", opening)
    monkeypatch.setattr(fcntl, "flock", locking)
    for name in ("write", "pwrite", "ftruncate", "truncate", "fsync", "unlink", "rename", "replace"):
        monkeypatch.setattr(os, name, writing)
    events, warnings = Journal.read(tmp_path / "j", HEADER)
    monkeypatch.undo()
    assert events == records and len(warnings) == 1
    (opened, flags), (locked, operation) = calls
    assert opened == "open" and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND) == 0
    assert locked == "flock" and operation & ~fcntl.LOCK_NB == fcntl.LOCK_SH


def test_readers_share_and_writers_wait(tmp_path: Path) -> None:
    _journal(tmp_path / "j", DEPLOYED)
    reader = os.open(tmp_path / "j", os.O_RDONLY)
    try:
        fcntl.flock(reader, fcntl.LOCK_SH)
        assert len(Journal.read(tmp_path / "j", HEADER)[0]) == 1  # readers share
        with pytest.raises(cdl.CdlError) as info:
            Journal.open(tmp_path / "j", HEADER)  # a writer does not
        assert info.value.code == "JOURNAL_LOCKED" and "--wait" in info.value.message
    finally:
        os.close(reader)
    journal, _events, _warnings = Journal.open(tmp_path / "j", HEADER)
    try:
        with pytest.raises(cdl.CdlError) as info:
            Journal.read(tmp_path / "j", HEADER, wait=0.05)  # nor a reader a writer
        assert info.value.code == "JOURNAL_LOCKED" and "after waiting 0.05 s" in info.value.message
    finally:
        journal.close()
    with pytest.raises(ValueError, match="wait"):
        Journal.read(tmp_path / "j", HEADER, wait=float("nan"))


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


def test_a_journal_held_by_another_process_is_locked_then_waited_for(tmp_path: Path) -> None:
    _journal(tmp_path / "j", DEPLOYED)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path / "j")],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding 1\n"
        error = _refused(tmp_path / "j")
        assert error.code == "JOURNAL_LOCKED" and "in use" in error.message
        assert holder.stdin is not None
        holder.stdin.write("\n")  # let it go; it closes, and this open gets the journal
        holder.stdin.flush()
        journal, events, _warnings = Journal.open(tmp_path / "j", HEADER, wait=60)
        journal.close()
        assert len(events) == 1
    finally:
        holder.communicate("\n", timeout=60)


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
    assert _read(tmp_path / "j") == ([first, second], [])


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
