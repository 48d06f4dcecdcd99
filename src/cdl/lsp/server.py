"""``cdl lsp``: the Language Server Protocol server, on stdio, built on pygls 2.

Entry points: :func:`serve` (what ``cdl lsp`` runs) and :func:`build_server`,
the one place the server is composed: its state (``_session.CdlServer``:
the open documents, their analyses, positions in the client's encoding)
and one module per feature (``features``), each registering its handlers:

- ``workspace``: initialisation, settings, files changed on disk, shutdown;
- ``documents``: the open documents, analysed again when they change;
- ``diagnostics``: the problems each analysis found, published;
- ``definition``, ``hover``, ``completion``, ``references``, ``symbols``,
  ``lenses``: the requests, answered from the last analysis of the open
  document (``_navigate.Navigation``, ``_requests``).

No input stops the server: every handler logs what it could not do and
answers nothing (``_session.guarded``).
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys

from ._session import DEBOUNCE, CdlServer
from .features import completion, definition, diagnostics, documents, hover, lenses, references, symbols, workspace

#: The features, each a module with ``register(server)``, in the order they are registered.
FEATURES = (workspace, documents, diagnostics, definition, hover, completion, references, symbols, lenses)


def build_server() -> CdlServer:
    """The server with its features registered (not started)."""
    server = CdlServer()
    for feature in FEATURES:
        feature.register(server)
    return server


def serve() -> None:
    """Run the server on stdin and stdout until the client ends it."""
    logging.basicConfig(level=logging.WARNING, format="%(message)s")  # stderr: the client's log
    fast_bins_off()
    sys.setswitchinterval(SWITCH_INTERVAL)
    build_server().start_io()


#: The interpreter's switch interval in ``cdl lsp`` (seconds; Python's default
#: is 0.005). A thread waiting for the interpreter asks its holder to let go
#: only after this long without any switch; but every lxml copy of an element
#: lets go of it for a moment (libxml2 copies without it) and takes it back
#: before the waiting thread wakes, which starts that wait again. So while
#: the analysis worker copies the targets of references, thousands a second,
#: the request loop's wait never ran out and a request waited until it won a
#: race. Asked within this interval, the worker lets go at its next step.
SWITCH_INTERVAL = 2e-5


#: glibc's ``mallopt`` parameter for the largest request served from fast bins.
_M_MXFAST = 1


def fast_bins_off() -> bool:
    """Turn glibc's fast bins off in this process (``mallopt(M_MXFAST, 0)``,
    what ``GLIBC_TUNABLES=glibc.malloc.mxfast=0`` does at start); whether it did.

    An analysis frees millions of small libxml2 nodes. glibc keeps them in
    fast bins and merges them all at once (``malloc_consolidate``) inside a
    later allocation of any thread, which holds the interpreter meanwhile: in
    the analysis worker or on the request loop, a request waited for it.
    ``cdl lsp`` owns its process, so it makes the choice the README leaves to
    a process's owner (the engine, a library, never changes its caller's
    allocator). Elsewhere than glibc, nothing is done.
    """
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return False
        mallopt = ctypes.CDLL(None).mallopt
    except (ValueError, OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(_M_MXFAST, 0))


__all__ = ["DEBOUNCE", "FEATURES", "SWITCH_INTERVAL", "CdlServer", "build_server", "fast_bins_off", "serve"]
