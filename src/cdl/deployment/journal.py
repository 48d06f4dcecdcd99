"""Deployment journals: the durable record of a deployment session (issue 24, issue 30).

Entry points: :meth:`Journal.open` (create, or open and read back, a journal
to append to), :meth:`Journal.read` (read one back without writing or
creating anything) and :func:`journal_header` (what identifies the
documents a journal belongs to). ``Document.deploy(journal=PATH)``
(src/cdl/engine/deployment.py) appends one event per call through
:meth:`Journal.append` and replays the events ``open`` returns.

The format (docs/semantics.md, "Deployment sessions"): UTF-8 text, one line
per record. Line 1 is the header: the format and its version, and the
SHA-256 of every loaded document (in load order) and catalog file. Every
other line is one event: ``seq`` (1, 2, ...), ``time`` (UTC, ISO 8601),
``event`` and the event's fields (:data:`EVENT_FIELDS`, the one place that
says which kinds and fields there are). In version 2 each line is a JSON
object, a space and 8 hexadecimal digits: the CRC-32 of the JSON text of
every line so far, this one's included (a rolling checksum, as etcd's WAL
records carry), so a line edited, decayed or moved from elsewhere is found;
version 1 (written by earlier releases) has the JSON alone, and a journal
keeps the version it was begun with.

A line is on disk (file fsynced; the directory too when the journal is
begun) before ``append`` returns, so an acknowledged event survives a crash.
A crash while writing can leave only the last line cut short: a prefix of a
record (perhaps followed by zeroed bytes, a block the crash never wrote),
never acknowledged, so it is dropped with a warning and cut off before the
next append; a file holding only a prefix of the header this module would
write begins the journal again. Nothing else is ever repaired: a whole record
followed by anything, a wrong checksum, a field of the wrong type or a
repeated key is ``JOURNAL_CORRUPT``; a file that is no journal is
``NOT_JOURNAL``; other documents than the header's are ``JOURNAL_MISMATCH``;
a journal another open holds (an advisory ``flock``, exclusive to write,
shared to read) is ``JOURNAL_LOCKED`` once ``wait`` seconds have passed.
A refusal leaves the file as it was.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import threading
import time
import warnings
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, NamedTuple

from ..errors import DeploymentError, JournalError
from ..loading.files import io_error, sync_directory

#: What line 1 of every journal says it is.
FORMAT = "cdl-deployment-journal"
#: The version of the format new journals are written in.
VERSION = 2
#: The versions this module reads (and appends to, each in its own format).
VERSIONS = (1, 2)

#: For each event, its fields. What a field holds is in :data:`FIELD_KINDS`;
#: a new kind of event is a new entry here (and its fields' kinds there).
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "deployed": ("path", "values", "release"),
    "supply": ("values", "release"),
    "failed": ("path", "reason"),
    "retry": ("path",),
    # issue 32: a deployment moved to other documents, with everything it
    # carries over (replay begins here: the earlier events need the old
    # documents); taking the system down, and each component removed.
    "update": ("documents", "catalogs", "values", "release", "deployed", "failed", "later_values", "changed", "removing"),
    "teardown": (),
    "removed": ("path",),
}

#: Fields an event may leave out: a ``deployed`` event's ``later`` (written only when not empty).
OPTIONAL_FIELDS: dict[str, tuple[str, ...]] = {"deployed": ("later",)}


def _is_text(value: Any) -> bool:
    return type(value) is str


def _is_texts(value: Any) -> bool:
    return type(value) is list and all(type(v) is str for v in value)


def _is_text_map(value: Any) -> bool:
    return type(value) is dict and all(type(v) is str for v in value.values())


def _is_texts_map(value: Any) -> bool:
    return type(value) is dict and all(_is_texts(v) for v in value.values())


def _is_digests(key: str) -> Callable[[Any], bool]:
    def holds(value: Any) -> bool:
        return type(value) is list and all(
            type(e) is dict and set(e) == {key, "sha256"} and all(type(v) is str for v in e.values()) for e in value
        )

    return holds


#: Each field of an event: what it holds, in words, and the exact test of it.
FIELD_KINDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "path": ("a string", _is_text),
    "reason": ("a string", _is_text),
    "values": ("an object of strings", _is_text_map),
    "release": ("a list of strings", _is_texts),
    "later": ("a list of strings", _is_texts),
    "documents": ("a list of {url, sha256} objects of strings", _is_digests("url")),
    "catalogs": ("a list of {path, sha256} objects of strings", _is_digests("path")),
    "deployed": ("a list of strings", _is_texts),
    "failed": ("an object of strings", _is_text_map),
    "later_values": ("an object of lists of strings", _is_texts_map),
    "changed": ("an object of lists of strings", _is_texts_map),
    "removing": ("an object of lists of strings", _is_texts_map),
}

#: Every header begins with these bytes (both versions): a file that does not is no journal.
_MAGIC = b'{"format":"' + FORMAT.encode() + b'",'
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")
_CHECKSUM_PREFIX = re.compile(r" [0-9a-f]{0,8}")
_ESCAPE_PREFIX = re.compile(r"u[0-9a-fA-F]{0,4}")


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


def check_text(event: Mapping[str, Any], url: str | None = None) -> None:
    """Refuse (``BAD_TEXT``, about ``url``) an event holding a string that
    cannot be written as UTF-8: a lone surrogate, which is what bytes that
    are not UTF-8 become when the shell hands them to Python."""
    for field, value in event.items():
        for where, text in _texts(field, value):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise DeploymentError(
                    f"{where} holds {text[exc.start : exc.end]!r}, which is not a character (bytes that are not"
                    " UTF-8, as a shell passes them on); give it as UTF-8 text",
                    code="BAD_TEXT",
                    url=url,
                    path=event.get("path"),
                ) from None


def _texts(field: str, value: Any) -> Iterator[tuple[str, str]]:
    """Each string in an event's ``field``, with words saying where it is."""
    if isinstance(value, str):
        yield f"the {field}", value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield f"the {field} path {key!r}", str(key)
            yield f"the value of {key!r}", str(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield f"the {field} path {item!r}", str(item)


class _Read(NamedTuple):
    """What a journal's bytes hold."""

    header: dict[str, Any] | None  # None: no header yet (an empty file, or one a crash cut short)
    version: int  # the format of its lines (new journals: VERSION)
    events: list[dict[str, Any]]
    keep: int  # the bytes of its whole lines; any after them are a torn last line
    newline: bool  # the last whole line lacks its newline: write it first
    checksum: int  # the rolling checksum after the last whole line
    notes: list[str]  # warnings: a torn last line dropped


class Journal:
    """One open, locked journal file. Create it with :meth:`open`."""

    def __init__(self, path: str, fd: int, read: _Read, size: int) -> None:
        """The journal open on ``fd``, its bytes (``size`` of them) read as ``read``."""
        self.path = path
        self._fd: int | None = fd
        self._pid = os.getpid()  # the process that may append
        self._version = read.version
        self._checksum = read.checksum
        self._end = read.keep  # where the next line goes
        self._seq = len(read.events)
        self._torn = read.keep < size  # bytes after _end to cut off before the next append
        self._newline = read.newline
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        state = "closed" if self._fd is None else f"{self._seq} events"
        return f"<cdl journal {self.path!r} (version {self._version}, {state})>"

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], header: Mapping[str, Any], wait: float = 0.0
    ) -> tuple[Journal, list[dict[str, Any]], list[str]]:
        """Create the journal at ``path`` (writing ``header``), or open it and
        read it back, to append to it.

        Returns the journal (locked until :meth:`close`), the recorded events
        in order (each a dict with ``seq``, ``time``, ``event`` and its fields)
        and warnings (a torn last line dropped). Waits up to ``wait`` seconds
        for another open to let the journal go. Raises JournalError:
        JOURNAL_LOCKED (another open still holds it), JOURNAL_CORRUPT (a
        malformed line, with its line number), NOT_JOURNAL (the file is no
        journal), JOURNAL_MISMATCH (begun with other documents than ``header``
        names); LoadError (IO_ERROR) when it cannot be read or written. A
        refusal leaves the file unchanged.
        """
        name = os.fspath(path)
        fd = _open_file(name, os.O_RDWR | os.O_CREAT)
        try:
            _lock(fd, name, fcntl.LOCK_EX, wait)
            data = _read_all(fd, name)
            read = _parse(name, data, header)
            journal = cls(name, fd, read, len(data))
        except BaseException:
            os.close(fd)  # closing the file releases the lock
            raise
        try:
            if read.header is None:
                journal._begin(header)
            else:
                _check_header(name, read.header, read.events, header)
        except BaseException:
            journal.close()
            raise
        return journal, read.events, read.notes

    @classmethod
    def read(cls, path: str | os.PathLike[str], header: Mapping[str, Any], wait: float = 0.0) -> tuple[list[dict[str, Any]], list[str]]:
        """The events recorded in the journal at ``path`` and warnings, as
        :meth:`open` returns them, read under a shared lock from a read-only
        open and let go at once: nothing is created, cut or written. A
        journal that does not exist has no events (a warning says so)."""
        name = os.fspath(path)
        try:
            fd = _open_file(name, os.O_RDONLY)
        except FileNotFoundError:
            return [], [f"{name}: no such journal yet: nothing is recorded (the first event begins it)"]
        try:
            _lock(fd, name, fcntl.LOCK_SH, wait)
            data = _read_all(fd, name)
        finally:
            os.close(fd)
        read = _parse(name, data, header)
        if read.header is not None:
            _check_header(name, read.header, read.events, header)
        return read.events, read.notes

    @classmethod
    def documents(cls, path: str | os.PathLike[str], wait: float = 0.0) -> list[str]:
        """The documents the deployment recorded at ``path`` runs now (those
        of its header, or of its last update), the main one first, as their
        URLs were given; read as :meth:`read` reads. Raises JournalError
        (NOT_JOURNAL, JOURNAL_CORRUPT, JOURNAL_LOCKED); LoadError (IO_ERROR)
        when it cannot be read, a missing file included."""
        name = os.fspath(path)
        try:
            fd = _open_file(name, os.O_RDONLY)
        except FileNotFoundError as exc:
            raise io_error(name, exc, "cannot open the journal") from None
        try:
            _lock(fd, name, fcntl.LOCK_SH, wait)
            data = _read_all(fd, name)
        finally:
            os.close(fd)
        read = _parse(name, data, {"format": FORMAT, "version": VERSION, "documents": [], "catalogs": []})
        if read.header is None:
            return []
        return [d["url"] for d in _running(read.header, read.events)[0]["documents"]]

    def _begin(self, header: Mapping[str, Any]) -> None:
        line, checksum = _encode(header, VERSION, 0)
        self._write(line)  # after cutting off a header cut short, if there was one
        self._version, self._checksum = VERSION, checksum
        # The file is new (or was, when a crash cut its header short): its name
        # must survive a crash too.
        sync_directory(self.path, os.path.dirname(os.path.abspath(self.path)))

    def check_process(self) -> None:
        """Refuse (JOURNAL_FORKED) to append from a process forked after the
        journal was opened: parent and child would write at the same place."""
        if os.getpid() != self._pid:
            raise JournalError(
                f"the journal {self.path} was opened by process {self._pid}, of which this process"
                f" ({os.getpid()}) is a fork; a fork cannot append to it: open the deployment again in this"
                " process, once the other has closed it",
                code="JOURNAL_FORKED",
                url=self.path,
            )

    def append(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """Record ``event`` (``{"event": KIND, ...fields}``) as the next line,
        with ``seq`` and ``time`` added, and return the stored record once it
        is on disk. Raises DeploymentError (BAD_TEXT) for a string that cannot
        be written, JournalError (JOURNAL_FORKED) in a forked process, LoadError
        (IO_ERROR) when it cannot be written; the journal then ends as it did
        before."""
        problem = _event_problem(event)
        if problem is not None:
            raise ValueError(f"not a journal event ({problem}): {event!r}")  # the caller's bug, not the user's
        self.check_process()  # before the lock: in a fork, a thread that held it is gone
        with self._lock:
            if self._fd is None:
                raise ValueError(f"the journal {self.path} is closed")
            stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            record = {"seq": self._seq + 1, "time": stamp, **event}
            try:
                line, checksum = _encode(record, self._version, self._checksum)
            except UnicodeEncodeError:
                check_text(event, self.path)
                raise
            self._write(line)
            self._seq += 1
            self._checksum = checksum
            return record

    def close(self) -> None:
        """Release the lock and close the file (again: nothing). In a forked
        process, only that process's copy of the file is closed."""
        if os.getpid() != self._pid:  # a fork has one thread, and a thread of the parent may have held the lock
            fd, self._fd = self._fd, None
            if fd is not None:
                os.close(fd)
            return
        with self._lock:
            if self._fd is not None:
                fd, self._fd = self._fd, None
                os.close(fd)

    def __del__(self) -> None:
        # A journal dropped unclosed (its Deployment collected) lets the file
        # go, with a warning as Python's own files give.
        fd = getattr(self, "_fd", None)
        if fd is None:
            return
        self._fd = None
        if os.getpid() == self._pid:
            warnings.warn(f"unclosed deployment journal {self.path!r}: close the Deployment", ResourceWarning, source=self, stacklevel=1)
        with contextlib.suppress(OSError):
            os.close(fd)

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


def _open_file(name: str, flags: int) -> int:
    """Open ``name`` with ``flags`` (a new file gets mode 0666 less the umask,
    as every file the package writes). A missing file with a read-only open
    raises FileNotFoundError."""
    try:
        return os.open(name, flags | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError) and not flags & os.O_CREAT:
            raise
        raise io_error(name, exc, "cannot open the journal") from None


def _lock(fd: int, name: str, mode: int, wait: float) -> None:
    """Take the ``flock`` (LOCK_EX or LOCK_SH), polling for up to ``wait`` seconds."""
    if not wait >= 0:  # NaN too
        raise ValueError(f"wait must be a number of seconds, 0 or more, not {wait!r}")
    deadline = time.monotonic() + wait
    pause = 0.002
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise io_error(name, exc, "cannot lock the journal") from None
        left = deadline - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.05)
    waited = f" after waiting {wait:g} s" if wait > 0 else ""
    raise JournalError(
        f"the journal {name} is in use by another deployment (a process, or another open in this one){waited};"
        " close that one first, wait longer (cdl deploy --wait SECONDS, Document.deploy(wait=...)), or use another journal",
        code="JOURNAL_LOCKED",
        url=name,
    )


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


# -- lines ---------------------------------------------------------------------------


class _Damaged(Exception):
    """What is wrong with one line (the caller adds the file and line number)."""


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record = dict(pairs)
    if len(record) < len(pairs):
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise _Damaged(f"it has the key {key!r} twice")
            seen.add(key)
    return record


_DECODER = json.JSONDecoder(object_pairs_hook=_no_repeats)


def _encode(record: Mapping[str, Any], version: int, checksum: int) -> tuple[bytes, int]:
    """``record`` as a line of a journal of ``version``, and the rolling
    checksum after it (after ``checksum``). Raises UnicodeEncodeError for a
    string that is no text."""
    data = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if version < 2:
        return data + b"\n", checksum
    checksum = zlib.crc32(data, checksum)
    return b"%s %08x\n" % (data, checksum), checksum


def _decode(raw: bytes, version: int, checksum: int) -> tuple[dict[str, Any], int]:
    """The object on a whole line ``raw`` (without its newline) and the
    rolling checksum after it; _Damaged when it is not one, or changed."""
    data = raw
    if version >= 2:
        if len(raw) < 10 or raw[-9] != 0x20:
            raise _Damaged("it does not end in its checksum (a space and 8 hexadecimal digits)")
        data = raw[:-9]
        checksum = zlib.crc32(data, checksum)
        if raw[-8:] != b"%08x" % checksum:
            raise _Damaged("its checksum does not match: it was changed after it was written (by hand, or the disk damaged it)")
    try:
        text = data.decode("utf-8")
        value, end = _DECODER.raw_decode(text)
    except UnicodeDecodeError:
        raise _Damaged("it is not UTF-8 text") from None
    except RecursionError:
        raise _Damaged("it is nested too deeply to be a journal record") from None
    except ValueError:
        raise _Damaged("it is not a JSON object") from None
    if type(value) is not dict or end != len(text):
        raise _Damaged("it is not a JSON object")
    return value, checksum


def _tail_torn(tail: bytes, version: int) -> bool:
    """Whether ``tail``, a last line without its newline, is a record cut
    short (a prefix of one, perhaps followed by zeroed bytes: True) or whole
    but for its newline (False); _Damaged when it is neither."""
    body = tail.rstrip(b"\0")
    zeroed = len(body) < len(tail)
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        text = decoder.decode(body, final=False)
    except UnicodeDecodeError:
        raise _Damaged("it is not UTF-8 text") from None
    cut_in_character = bool(decoder.getstate()[0])
    try:
        _value, end = _DECODER.raw_decode(text)
    except RecursionError:
        raise _Damaged("it is nested too deeply to be a journal record") from None
    except json.JSONDecodeError as exc:
        if _cut_short(text, exc) and (not cut_in_character or exc.msg.startswith("Unterminated string")):
            return True
        raise _Damaged("it is neither a record nor the beginning of one") from None
    rest = text[end:]
    if not cut_in_character:
        if version >= 2 and (rest == "" or (len(rest) < 9 and _CHECKSUM_PREFIX.fullmatch(rest))):
            return True  # the record, its checksum cut short
        if not zeroed and (rest == "" if version < 2 else len(rest) == 9 and _CHECKSUM_PREFIX.fullmatch(rest)):
            return False
    raise _Damaged("a whole record is followed by other bytes")


def _cut_short(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether JSON ``text`` failed only because it ends too soon."""
    if exc.msg.startswith("Unterminated string"):
        return True
    if exc.msg.startswith("Invalid \\uXXXX escape"):
        return _ESCAPE_PREFIX.fullmatch(text, exc.pos) is not None
    return exc.pos >= len(text)


def _parse(name: str, data: bytes, header: Mapping[str, Any]) -> _Read:
    """What the journal ``name``, whose bytes are ``data``, holds; ``header``
    is the one this module would begin it with. Raises JournalError."""
    if not data or (b"\n" not in data and _begun_header(data.rstrip(b"\0"), header)):
        notes = [f"{name}:1: begins the journal again: its header was cut short by a crash"] if data else []
        return _Read(None, VERSION, [], 0, False, 0, notes)
    if not data.startswith(_MAGIC):
        raise JournalError(
            f"{name} is not a deployment journal (its first line is no {FORMAT} header); it was left as it was:"
            " give a journal, or a new file",
            code="NOT_JOURNAL",
            url=name,
            line=1,
        )
    lines = data.split(b"\n")
    tail = lines.pop()  # after the last newline: b"" when the file ends with one
    if not lines:  # the header alone, lacking its newline
        lines, tail = [tail], b""
    recorded, version, checksum = _header(name, lines[0])
    events: list[dict[str, Any]] = []  # event N is on line N + 1: the failing line is len(events) + 2
    try:
        for raw in lines[1:]:
            checksum = _take(raw, version, checksum, events)
        torn = bool(tail) and _tail_torn(tail, version)
        if tail and not torn:
            checksum = _take(tail, version, checksum, events)  # whole but for its newline, written first next time
    except _Damaged as exc:
        raise JournalError(f"this line is not a journal record: {exc}", url=name, line=len(events) + 2) from None
    if torn:
        note = (
            f"{name}:{len(events) + 2}: dropped the last line, cut short by a crash while it was written"
            " (its event was never acknowledged)"
        )
        return _Read(recorded, version, events, len(data) - len(tail), False, checksum, [note])
    return _Read(recorded, version, events, len(data), not data.endswith(b"\n"), checksum, [])


def _take(raw: bytes, version: int, checksum: int, events: list[dict[str, Any]]) -> int:
    """Add the event on the whole line ``raw`` to ``events``; the checksum after it."""
    record, checksum = _decode(raw, version, checksum)
    problem = _record_problem(record, len(events) + 1)
    if problem is not None:
        raise _Damaged(problem)
    events.append(record)
    return checksum


def _begun_header(data: bytes, header: Mapping[str, Any]) -> bool:
    """Whether ``data`` is the header line this module would write for
    ``header`` (or an earlier release would have), cut short."""
    lines = (_encode(header, VERSION, 0)[0], _encode({**header, "version": 1}, 1, 0)[0])
    return any(len(data) < len(line) - 1 and line.startswith(data) for line in lines)


def _version_of(first: bytes) -> int:
    """The format of a journal's lines, by how its first line ends."""
    return 2 if len(first) > 9 and first[-9] == 0x20 else 1


def _header(name: str, raw: bytes) -> tuple[dict[str, Any], int, int]:
    """The header on line 1 ``raw``, its version and the checksum after it."""
    framing = _version_of(raw)
    try:
        recorded, checksum = _decode(raw, framing, 0)
    except _Damaged as exc:
        raise JournalError(f"the header is damaged: {exc}", url=name, line=1) from None
    version = recorded.get("version")
    if type(version) is int and version not in VERSIONS:
        raise JournalError(
            f"the journal has format version {version}; this cdl reads versions {', '.join(map(str, VERSIONS))}",
            code="JOURNAL_MISMATCH",
            url=name,
            line=1,
        )
    problem = _header_problem(recorded)
    if problem is None and (version == 1) != (framing == 1):
        problem = f"a version {version} header is written {'without' if framing == 1 else 'with'} a checksum"
    if problem is not None:
        raise JournalError(f"the header is damaged: {problem}", url=name, line=1)
    return recorded, framing, checksum


def _header_problem(header: dict[str, Any]) -> str | None:
    if set(header) != {"format", "version", "documents", "catalogs"}:
        return f"a header has the fields format, version, documents, catalogs, not {', '.join(header)}"
    if header["format"] != FORMAT or type(header["version"]) is not int:
        return "its format or version is wrong"
    for field, key in (("documents", "url"), ("catalogs", "path")):
        entries = header[field]
        if type(entries) is not list or not all(
            type(e) is dict and set(e) == {key, "sha256"} and all(type(v) is str for v in e.values()) for e in entries
        ):
            return f"its {field} are not a list of {{{key}, sha256}} objects of strings"
    return None


def _record_problem(record: dict[str, Any], seq: int) -> str | None:
    if "seq" not in record or type(record["seq"]) is not int or record["seq"] != seq:
        return f"its seq is {json.dumps(record.get('seq'))} where {seq} follows"
    if "time" not in record:
        return "it has no time"
    if type(record["time"]) is not str or not _TIME.fullmatch(record["time"]):
        return "its time is not a UTC time (YYYY-MM-DDTHH:MM:SS.ffffffZ)"
    return _event_problem(record, ("seq", "time", "event"))


def _event_problem(event: Mapping[str, Any], own: tuple[str, ...] = ("event",)) -> str | None:
    """What is wrong with ``event`` (``{"event": KIND, fields...}``, and the
    other keys ``own`` names), or None."""
    kind = event.get("event")
    if type(kind) is not str:
        return "it has no event kind"
    fields = EVENT_FIELDS.get(kind)
    if fields is None:
        return f"unknown event {kind!r} (known: {', '.join(EVENT_FIELDS)})"
    optional = OPTIONAL_FIELDS.get(kind, ())
    if not {*own, *fields} <= event.keys() <= {*own, *fields, *optional}:
        given = sorted(key for key in event if key not in own)
        return f"a {kind!r} event has the fields {', '.join(fields)}, not {', '.join(given) or 'none'}"
    for field in event:
        if field not in own:
            words, holds = FIELD_KINDS[field]
            if not holds(event[field]):
                return f"its {field} is not {words}"
    return None


def _running(header: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any], int | None]:
    """The documents and catalogs a journal's deployment runs now (its last
    update's, else its header's), and the number of that update (None: none)."""
    for event in reversed(events):
        if event["event"] == "update":
            return event, event["seq"]
    return header, None


def last_update(events: Sequence[Mapping[str, Any]]) -> int:
    """The position in ``events`` of the last update (replay begins there: it
    carries over everything before it), or 0."""
    for i in range(len(events) - 1, -1, -1):
        if events[i]["event"] == "update":
            return i
    return 0


def _check_header(name: str, recorded: Mapping[str, Any], events: Sequence[Mapping[str, Any]], header: Mapping[str, Any]) -> None:
    """Refuse a journal whose deployment runs other documents or catalogs
    than ``header`` names (those it was begun with, or last updated to)."""
    running, update = _running(recorded, events)
    changes = _changes("document", running["documents"], header["documents"], "url")
    changes += _changes("catalog", running["catalogs"], header["catalogs"], "path")
    if changes:
        since = "was begun with" if update is None else f"was updated (event {update}) to"
        raise JournalError(
            f"the journal {since} other documents: " + "; ".join(changes)
            + ". Open it with the documents it runs; to move the deployment to these, update it"
            " (cdl deploy update FILE --journal J; Deployment.update); or begin a new journal",
            code="JOURNAL_MISMATCH",
            url=name,
            line=1 if update is None else update + 1,
        )


def _changes(what: str, recorded: Sequence[Mapping[str, str]], now: Sequence[Mapping[str, str]], key: str) -> list[str]:
    """What differs between the digests the header recorded and those of now,
    position by position (the same file reached by another path is the same)."""
    changes = []
    for then, current in zip(recorded, now):
        if then["sha256"] != current["sha256"]:
            changes.append(f"{what} {current[key]} changed (its SHA-256 is not the one the journal recorded)")
    for then in recorded[len(now) :]:
        changes.append(f"{what} {then[key]} is no longer loaded")
    for current in now[len(recorded) :]:
        changes.append(f"{what} {current[key]} was not loaded when the journal began")
    return changes
