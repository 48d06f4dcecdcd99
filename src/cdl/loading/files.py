"""Writing files: one atomic writer for every file the package writes.

Used by the output step (``Resolution.write``, ``cdl resolve -o``) and by the
conformance harness's JUnit report. It depends on nothing but the errors, so
the harness can use it without importing the engine.
"""

from __future__ import annotations

import errno
import os
import stat

from ..errors import LoadError

# A directory fsync these errors refuse is one the file system does not offer;
# the rename itself has succeeded, so there is nothing to report.
_NO_DIRECTORY_SYNC = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF})


def write_atomically(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it into place.

    The file keeps the permission bits of the file it replaces; a new file gets
    ``0666`` less the umask (the temporary file is created with that mode, so
    the kernel applies the umask and any default ACL), as editors do. After the
    rename the directory is synced, so the new name survives a crash.

    Raises LoadError (IO_ERROR) when the file cannot be written; the target is
    then untouched (or, if only the directory sync failed, already replaced).
    """
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mode = None  # a new file (or one we cannot stat; os.replace reports that case)
    try:
        fd, tmp = _create_beside(target, directory)
    except OSError as exc:
        raise io_error(target, exc) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.chmod(tmp, mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise io_error(target, exc) from None
        raise
    sync_directory(target, directory)


def _create_beside(target: str, directory: str) -> tuple[int, str]:
    """Create a new, uniquely named file in ``directory``, mode 0666 less the umask."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
    for _attempt in range(100):
        tmp = os.path.join(directory, f".cdl-{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"no free temporary name beside {target}")


def sync_directory(target: str, directory: str) -> None:
    """fsync ``directory`` so the rename into it is on disk (POSIX only)."""
    if not hasattr(os, "O_DIRECTORY"):
        return  # Windows cannot open a directory; its rename is not synced this way
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return  # e.g. a directory we may write but not read: nothing to sync with
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _NO_DIRECTORY_SYNC:
            raise io_error(target, exc) from None
    finally:
        os.close(fd)


def io_error(target: str, exc: OSError, doing: str = "cannot write") -> LoadError:
    """IO_ERROR for ``exc``, raised while ``doing`` ("cannot read the journal", say) ``target``."""
    return LoadError(f"{doing} {target}: {exc.strerror or exc}", code="IO_ERROR", url=target)
