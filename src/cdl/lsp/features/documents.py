"""The open documents (``textDocument/didOpen``, ``didChange``, ``didSave``,
``didClose``): their texts are held (synchronised whole,
``TextDocumentSyncKind.Full``) and every open document that read one is
analysed again: at once after an open or a save, once typing pauses after a
change (``CdlServer.analyse_later``). A closed document is read from disk
again by those that import it.

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
        # pygls has applied the changes to its copy (whole texts, or ranges from a client that sends them anyway).
        path = buffers.put(uri, server.workspace.get_text_document(uri).source)
        if path is not None:
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
