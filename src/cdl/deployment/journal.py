"""Deployment journals: the durable record of a deployment session (issue 24).

Entry points: :meth:`Journal.open` (create, or open and read back, a journal)
and :func:`journal_header` (what identifies the documents a journal belongs
to). ``Document.deploy(journal=PATH)`` (src/cdl/engine/deployment.py) appends one event per
call through :meth:`Journal.append` and replays the events ``open`` returns.

The format (docs/semantics.md, "Deployment sessions"): UTF-8 text, one JSON
object per line. Line 1 is the header: the format and its version, and the
SHA-256 of every loaded document (in load order) and catalog file. Every
other line is one event: ``seq`` (1, 2, ...), ``time`` (UTC, ISO 8601),
``event`` and the event's fields (:data:`EVENT_FIELDS`). A line is on disk
(file fsynced; the directory too when the file is new) before ``append``
returns, so an acknowledged event survives a crash. A crash while writing
can leave only the last line cut short, with no newline: it was never
acknowledged, so it is dropped with a warning and cut off before the next
append. Any other malformed line is refused (``JOURNAL_CORRUPT``); so are
other documents than the header's (``JOURNAL_MISMATCH``) and a journal
another open holds (``JOURNAL_LOCKED``, an advisory ``flock``). A refusal
leaves the file as it was.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from ..errors import JournalError
from ..loading.files import io_error, sync_directory

#: What line 1 of every journal says it is.
FORMAT = "cdl-deployment-journal"
#: The version of the format this module reads and writes.
VERSION = 1

#: For each event, its fields and what each holds: "path" a string, "values"
#: an object of strings, "release" a list of strings.
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "deployed": ("path", "values", "release"),
    "supply": ("values", "release"),
    "failed": ("path", "reason"),
    "retry": ("path",),
}

#: Fields an event may leave out: a ``deployed`` event's ``later`` (written only when not empty).
OPTIONAL_FIELDS: dict[str, tuple[str, ...]] = {"deployed": ("later",)}

_FIELD_KINDS = {
    "path": "a string",
    "reason": "a string",
    "values": "an object of strings",
    "release": "a list of strings",
    "later": "a list of strings",
}


def journal_header(sources: Sequence[tuple[str, bytes]], catalogs: Sequence[str]) -> dict[str, Any]:
    """The header of a journal for these documents (url and bytes, in load
    order) and catalog files: the format, its version and their SHA-256.

    Raises LoadError (IO_ERROR) when a catalog file cannot be read.
    """
    return {
        "format": FORMAT,
        "version": VERSION,
        "documents": [{"url": url, "sha256": hashlib.sha256(data).hexdigest()} for url, data in sources],
        "catalogs": [{"path": path, "sha256": _file_digest(path)} for path in catalogs],
    }


def _file_digest(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError as exc:
        raise io_error(path, exc, "cannot read") from None


class Journal:
    """One open, locked journal file. Create it with :meth:`open`."""

    def __init__(self, path: str, fd: int, data: bytes, keep: int, seq: int) -> None:
        """The journal open on ``fd``, whose bytes are ``data``, of which the
        first ``keep`` are whole lines (the last one perhaps without its newline)."""
        self.path = path
        self._fd: int | None = fd
        self._end = keep  # where the next line goes
        self._seq = seq
        self._torn = keep < len(data)  # bytes after _end to cut off before the next append
        self._newline = keep > 0 and data[keep - 1 : keep] != b"\n"  # write the last line's newline first
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path: str | os.PathLike[str], header: Mapping[str, Any]) -> tuple[Journal, list[dict[str, Any]], list[str]]:
        """Create the journal at ``path`` (writing ``header``), or open it and
        read it back.

        Returns the journal (locked until :meth:`close`), the recorded events
        in order (each a dict with ``seq``, ``time``, ``event`` and its fields)
        and warnings (a torn last line dropped). Raises JournalError:
        JOURNAL_LOCKED (another open holds it), JOURNAL_CORRUPT (a malformed
        line, with its line number), JOURNAL_MISMATCH (begun with other
        documents than ``header`` names); LoadError (IO_ERROR) when it cannot
        be read or written. A refusal leaves the file unchanged.
        """
        name = os.fspath(path)
        fd = _open_file(name)
        try:
            _lock(fd, name)
            data = _read_all(fd, name)
            recorded, events, keep, warnings = _parse(name, data)
            if recorded is None:
                # New, or its header was cut short by a crash as it was begun.
                return cls._begin(name, fd, data, header), [], warnings
            _check_header(name, recorded, header)
        except BaseException:
            os.close(fd)  # closing the file releases the lock
            raise
        return cls(name, fd, data, keep, len(events)), events, warnings

    @classmethod
    def _begin(cls, name: str, fd: int, data: bytes, header: Mapping[str, Any]) -> Journal:
        journal = cls(name, fd, data, 0, 0)  # a torn header is cut off
        journal._write(_line(header))
        # The file is new (or was, when a crash cut its header short): its name
        # must survive a crash too.
        sync_directory(name, os.path.dirname(os.path.abspath(name)))
        return journal

    def append(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """Record ``event`` (``{"event": KIND, ...fields}``) as the next line,
        with ``seq`` and ``time`` added, and return the stored record once it
        is on disk. Raises LoadError (IO_ERROR) when it cannot be written; the
        journal then ends as it did before."""
        kind = event.get("event")
        problem = _event_problem(dict(event)) if isinstance(kind, str) else "it has no event kind"
        if problem is not None:
            raise ValueError(f"not a journal event ({problem}): {event!r}")  # the caller's bug, not the user's
        with self._lock:
            if self._fd is None:
                raise ValueError(f"the journal {self.path} is closed")
            time = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            record = {"seq": self._seq + 1, "time": time, **event}
            self._write(_line(record))
            self._seq += 1
            return record

    def close(self) -> None:
        """Release the lock and close the file (again: nothing)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _write(self, line: bytes) -> None:
        """Put ``line`` after the last whole line and fsync; on failure cut
        the file back so it ends as before."""
        fd = self._fd
        assert fd is not None
        try:
            if self._torn:
                os.ftruncate(fd, self._end)
                self._torn = False
            if self._newline:
                line = b"\n" + line
            written = 0
            while written < len(line):
                written += os.pwrite(fd, line[written:], self._end + written)
            os.fsync(fd)
        except OSError as exc:
            # Whatever part was written goes: now if the file lets us, else
            # before the next append (or as a torn line when it is opened again).
            self._torn = True
            with contextlib.suppress(OSError):
                os.ftruncate(fd, self._end)
            raise io_error(self.path, exc) from None
        self._end += len(line)
        self._newline = False


def _open_file(name: str) -> int:
    """Open ``name`` for reading and writing, creating it (mode 0666 less the
    umask, as for every file the package writes) if it does not exist."""
    try:
        return os.open(name, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        raise io_error(name, exc, "cannot open the journal") from None


def _lock(fd: int, name: str) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise JournalError(
                f"the journal {name} is in use by another deployment (a process, or another open in this one);"
                " close that one first, or use another journal",
                code="JOURNAL_LOCKED",
                url=name,
            ) from None
        raise io_error(name, exc, "cannot lock the journal") from None


def _read_all(fd: int, name: str) -> bytes:
    chunks = []
    offset = 0
    try:
        while chunk := os.pread(fd, 1 << 20, offset):
            chunks.append(chunk)
            offset += len(chunk)
    except OSError as exc:
        raise io_error(name, exc, "cannot read the journal") from None
    return b"".join(chunks)


def _line(record: Mapping[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _parse(name: str, data: bytes) -> tuple[dict[str, Any] | None, list[dict[str, Any]], int, list[str]]:
    """The header (None when there is none yet), the events, how many bytes
    to keep (the whole lines), and the warnings, of a journal's bytes ``data``."""
    lines = data.split(b"\n")
    tail = lines.pop()  # after the last newline: b"" when the file ends with one
    warnings: list[str] = []
    end = len(data)
    if tail and _decode(tail) is None:
        end -= len(tail)
        warnings.append(
            f"{name}:{len(lines) + 1}: dropped the last line, cut short by a crash while it was written"
            " (its event was never acknowledged)"
        )
    elif tail:
        lines.append(tail)  # whole but for its newline, which the next append writes first
    if not lines:
        return None, [], end, warnings
    records = []
    for number, raw in enumerate(lines, start=1):
        record = _decode(raw)
        if record is None:
            raise JournalError("this line is not a JSON object; the journal was changed by hand or damaged", url=name, line=number)
        records.append(record)
    header = records[0]
    if header.get("format") != FORMAT or not isinstance(header.get("version"), int):
        raise JournalError(f"the first line is not the header of a {FORMAT}", url=name, line=1)
    for number, record in enumerate(records[1:], start=2):
        problem = _record_problem(record, number - 1)
        if problem is not None:
            raise JournalError(f"this line is not a journal event: {problem}", url=name, line=number)
    return header, records[1:], end, warnings


def _decode(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _record_problem(record: dict[str, Any], seq: int) -> str | None:
    if record.get("seq") != seq:
        return f"its seq is {record.get('seq')!r} where {seq} follows"
    if not isinstance(record.get("time"), str):
        return "it has no time"
    if not isinstance(record.get("event"), str):
        return "it has no event kind"
    return _event_problem({k: v for k, v in record.items() if k not in ("seq", "time")})


def _event_problem(event: dict[str, Any]) -> str | None:
    """What is wrong with ``event`` (``{"event": KIND, fields...}``), or None."""
    kind = event.pop("event")
    fields = EVENT_FIELDS.get(kind)
    if fields is None:
        return f"unknown event {kind!r} (known: {', '.join(EVENT_FIELDS)})"
    optional = OPTIONAL_FIELDS.get(kind, ())
    if not set(fields) <= set(event) <= {*fields, *optional}:
        return f"a {kind!r} event has the fields {', '.join(fields)}, not {', '.join(sorted(event)) or 'none'}"
    for field in event:
        if not _holds(field, event[field]):
            return f"its {field} is not {_FIELD_KINDS[field]}"
    return None


def _holds(field: str, value: Any) -> bool:
    if field == "values":
        return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    if field in ("release", "later"):
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, str)


def _check_header(name: str, recorded: Mapping[str, Any], header: Mapping[str, Any]) -> None:
    """Refuse a journal begun with other documents or catalogs than ``header`` names."""
    if recorded.get("version") != header["version"]:
        raise JournalError(
            f"the journal has format version {recorded.get('version')!r}; this cdl reads version {header['version']}",
            code="JOURNAL_MISMATCH",
            url=name,
            line=1,
        )
    changes = _changes("document", recorded.get("documents"), header["documents"], "url")
    changes += _changes("catalog", recorded.get("catalogs"), header["catalogs"], "path")
    if changes:
        raise JournalError(
            "the journal was begun with other documents: " + "; ".join(changes)
            + ". Finish that deployment with those documents, or begin a new journal",
            code="JOURNAL_MISMATCH",
            url=name,
            line=1,
        )


def _changes(what: str, recorded: Any, now: Sequence[Mapping[str, str]], key: str) -> list[str]:
    """What differs between the digests the header recorded and those of now,
    position by position (the same file reached by another path is the same)."""
    if not isinstance(recorded, list) or not all(isinstance(r, dict) for r in recorded):
        return [f"the header's {what}s are unreadable"]
    changes = []
    for then, current in zip(recorded, now):
        if then.get("sha256") != current["sha256"]:
            changes.append(f"{what} {current[key]} changed since the journal began")
    for then in recorded[len(now) :]:
        changes.append(f"{what} {then.get(key)} is no longer loaded")
    for current in now[len(recorded) :]:
        changes.append(f"{what} {current[key]} was not loaded when the journal began")
    return changes
