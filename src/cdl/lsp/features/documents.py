"""The open documents (``textDocument/didOpen``, ``didChange``, ``didSave``,
``didClose``): their texts are held (``TextDocumentSyncKind.Incremental``:
a change replaces its range, read as every position is, with LSP 3.17's
line ends, and the text's lines are found again only where it reaches; a
change without a range, which a client may send, replaces the whole text)
and every open document that read one is analysed again: at once after an
open or a save, once typing pauses after a change
(``CdlServer.analyse_later``). A closed document is read from disk again by
those that import it.

Entry point: :func:`register`.
"""

from __future__ import annotations

from lsprotocol import types

from .._buffers import path_of_uri
from .._engine import Lines
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
        # Ranges are read as every position is (LSP 3.17's line ends, not
        # str.splitlines'), and the lines are found again only where a change reaches.
        for content in params.content_changes:
            if isinstance(content, types.TextDocumentContentChangePartial):
                lines = _changed(server, path, content)
                buffers.put(uri, lines.text, lines)
            else:
                buffers.put(uri, content.text)
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


def _changed(server: CdlServer, path: str, change: types.TextDocumentContentChangePartial) -> Lines:
    """The lines of the open document ``path`` once ``change``'s range is replaced."""
    lines = server.buffers.lines(path)
    assert lines is not None  # an open document's text is held
    start, end = (lines.offset(*lines.from_client(at.line, at.character, server.encoding)) for at in (change.range.start, change.range.end))
    return lines.edited(start, end, change.text)
