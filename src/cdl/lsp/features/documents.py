"""The open documents (``textDocument/didOpen``, ``didChange``, ``didSave``,
``didClose``): their texts are held (synchronised whole,
``TextDocumentSyncKind.Full``; a change with a range, which a client may send
anyway, replaces that range, its positions read as every position is:
``CdlServer.position``, LSP 3.17's line ends) and every open document that
read one is analysed again: at once after an open or a save, once typing
pauses after a change (``CdlServer.analyse_later``). A closed document is
read from disk again by those that import it.

Entry point: :func:`register`.
"""

from __future__ import annotations

from lsprotocol import types

from .._buffers import path_of_uri
from .._session import CdlServer, guarded_handler


def register(server: CdlServer) -> None:
    buffers = server.buffers

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @guarded_handler(server, "opening a document")
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        path = buffers.put(params.text_document.uri, params.text_document.text)
        if path is not None:
            server.analyse_now(buffers.readers_of(path))

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @guarded_handler(server, "taking a change")
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = buffers.path_of(uri)
        if path is None:
            return  # not open, or of a scheme not analysed
        # Not pygls's copy: under Full sync it takes a range's text for the whole
        # text, and it splits lines as str.splitlines does (at U+2028, ...).
        for content in params.content_changes:
            buffers.put(uri, _changed(server, path, content))
        server.analyse_later(buffers.readers_of(path))

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    @guarded_handler(server, "taking a save")
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        path = path_of_uri(params.text_document.uri)
        if path is not None:
            server.analyse_now(buffers.readers_of(path))

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @guarded_handler(server, "closing a document")
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = buffers.path_of(uri)
        if path is not None:
            server.close(path, uri)


def _changed(server: CdlServer, path: str, change: types.TextDocumentContentChangeEvent) -> str:
    """The text of the open document ``path`` once ``change`` is made: its
    whole new text, or its range replaced."""
    if not isinstance(change, types.TextDocumentContentChangePartial):
        return change.text
    lines = server.buffers.lines(path)
    assert lines is not None  # an open document's text is held
    start, end = (lines.offset(*server.position(path, at)) for at in (change.range.start, change.range.end))
    return lines.text[:start] + change.text + lines.text[max(start, end) :]
