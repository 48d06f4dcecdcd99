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

import logging

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
    build_server().start_io()


__all__ = ["DEBOUNCE", "FEATURES", "CdlServer", "build_server", "serve"]
