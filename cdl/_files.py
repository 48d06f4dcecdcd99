"""Writing files: one atomic writer for every file the package writes.

Used by the output step (``Resolution.write``, ``cdl resolve -o``) and by the
conformance harness's JUnit report. It depends on nothing but the errors, so
the harness can use it without importing the engine.
"""

from __future__ import annotations

import os

from .errors import LoadError


def write_atomically(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it into place.

    Raises LoadError (IO_ERROR) when the file cannot be written; the target is
    then untouched.
    """
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    try:
        import tempfile  # here, not at the top: it imports shutil, random, bz2 and lzma, which start-up need not pay for

        fd, tmp = tempfile.mkstemp(prefix=".cdl-", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise LoadError(f"cannot write {target}: {exc.strerror or exc}", code="IO_ERROR", url=target) from None
    try:
        with os.fdopen(fd, "wb") as handle:
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
            raise LoadError(f"cannot write {target}: {exc.strerror or exc}", code="IO_ERROR", url=target) from None
        raise
