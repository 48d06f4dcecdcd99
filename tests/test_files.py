"""Files the engine writes: ``Resolution.write()``, ``cdl resolve -o`` and the
JUnit report share one writer. A replaced file keeps its permission bits, a
new file gets 0666 less the umask, and the directory is synced after the
rename; nothing partial is ever left."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import cdl
from cdl.cli import main
from conftest import system

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits and directory fsync")

DOC = system("<S><v>1</v></S>")
SetUmask = Callable[[int], None]
WriteDocs = Callable[..., Path]

#: What ``Resolution.write()`` writes of DOC.
RESOLUTION = cdl.load(DOC.encode(), name="doc.cdl").resolve()
WRITTEN = RESOLUTION.to_bytes()


@pytest.fixture
def umask() -> Iterator[SetUmask]:
    """Set the process umask for one test (``umask(0o027)``), restoring it after."""

    def set_umask(value: int) -> None:
        os.umask(value)

    saved = os.umask(0o022)
    try:
        yield set_umask
    finally:
        os.umask(saved)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(
    ("mask", "expected"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600), (0o002, 0o664)], ids=lambda m: f"{m:04o}"
)
def test_a_new_file_gets_0666_less_the_umask(tmp_path: Path, umask: SetUmask, mask: int, expected: int) -> None:
    umask(mask)
    target = tmp_path / "new.cdl"
    RESOLUTION.write(target)
    assert target.read_bytes() == WRITTEN and mode(target) == expected
    assert os.listdir(tmp_path) == ["new.cdl"]


@pytest.mark.parametrize(
    ("before", "mask"), [(0o644, 0o077), (0o600, 0o022), (0o755, 0o022), (0o444, 0o022), (0o664, 0o027)], ids=lambda m: f"{m:04o}"
)
def test_a_replaced_file_keeps_its_mode(tmp_path: Path, umask: SetUmask, before: int, mask: int) -> None:
    target = tmp_path / "old.cdl"
    target.write_bytes(b"old")
    target.chmod(before)
    umask(mask)
    RESOLUTION.write(target)
    assert target.read_bytes() == WRITTEN and mode(target) == before
    assert os.listdir(tmp_path) == ["old.cdl"]


def test_cdl_resolve_o_keeps_a_files_mode_and_gives_a_new_one_the_umasks(write_docs: WriteDocs, tmp_path: Path, umask: SetUmask) -> None:
    source = write_docs({"doc.cdl": DOC})
    existing = tmp_path / "existing.cdl"
    existing.write_bytes(b"old")
    existing.chmod(0o644)
    umask(0o077)
    result = CliRunner().invoke(main, ["resolve", str(source), "-o", str(existing)], catch_exceptions=False)
    assert result.exit_code == 0 and mode(existing) == 0o644
    umask(0o022)
    new = tmp_path / "new.cdl"
    result = CliRunner().invoke(main, ["resolve", str(source), "-o", str(new)], catch_exceptions=False)
    assert result.exit_code == 0 and mode(new) == 0o644
    assert existing.read_bytes() == new.read_bytes() == cdl.load(source).resolve().to_bytes()


def test_resolution_write_keeps_a_files_mode_and_gives_a_new_one_the_umasks(write_docs: WriteDocs, tmp_path: Path, umask: SetUmask) -> None:
    resolution = cdl.load(write_docs({"doc.cdl": DOC})).resolve()
    existing = tmp_path / "existing.cdl"
    existing.write_bytes(b"old")
    existing.chmod(0o644)
    umask(0o077)
    resolution.write(existing)
    assert mode(existing) == 0o644
    umask(0o027)
    new = tmp_path / "new.cdl"
    resolution.write(new, system_only=True)
    assert mode(new) == 0o640 and new.read_bytes() == resolution.to_bytes(system_only=True)


def _recording_fsync(monkeypatch: pytest.MonkeyPatch, target: Path) -> list[tuple[str, bytes | None]]:
    """Record each fsync as (kind of the fd, the target's content at that moment)."""
    synced: list[tuple[str, bytes | None]] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        kind = "directory" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
        synced.append((kind, target.read_bytes() if target.exists() else None))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def test_the_file_is_synced_before_the_rename_and_the_directory_after(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "out.cdl"
    target.write_bytes(b"old")
    synced = _recording_fsync(monkeypatch, target)
    RESOLUTION.write(target)
    assert synced == [("file", b"old"), ("directory", WRITTEN)]


def test_cdl_resolve_o_syncs_the_directory(write_docs: WriteDocs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = write_docs({"doc.cdl": DOC})
    out = tmp_path / "sub" / "out.cdl"
    out.parent.mkdir()
    synced = _recording_fsync(monkeypatch, out)
    assert CliRunner().invoke(main, ["resolve", str(source), "-o", str(out)], catch_exceptions=False).exit_code == 0
    assert [kind for kind, _ in synced] == ["file", "directory"] and synced[-1][1] == out.read_bytes()


def _failing_directory_fsync(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    real = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(code, os.strerror(code))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def test_a_file_system_without_directory_sync_is_no_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _failing_directory_fsync(monkeypatch, errno.EINVAL)
    RESOLUTION.write(tmp_path / "out.cdl")
    assert (tmp_path / "out.cdl").read_bytes() == WRITTEN


def test_a_failing_directory_sync_is_an_io_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _failing_directory_fsync(monkeypatch, errno.EIO)
    with pytest.raises(cdl.CdlError) as info:
        RESOLUTION.write(tmp_path / "out.cdl")
    assert info.value.code == "IO_ERROR" and os.strerror(errno.EIO) in info.value.message
    assert os.listdir(tmp_path) == ["out.cdl"]  # no temporary file left behind
