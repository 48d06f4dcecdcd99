"""``cdl lsp``: the Language Server Protocol server, on stdio, built on pygls 2.

Entry points: :func:`serve` (what ``cdl lsp`` runs) and :func:`build_server`.
Documents are synchronised whole (``TextDocumentSyncKind.Full``); every open
document is analysed (``_buffers``) after it is opened, after it is saved,
and once typing pauses (:data:`DEBOUNCE` seconds after the last change), and
so is every open document that read it, and every one that read a file
the client reports changed on disk (``workspace/didChangeWatchedFiles``,
asked for at initialisation when the client can). Diagnostics go to the document each
problem is in (``_diagnostics``); the requests (definition, hover,
completion, references, symbols, code lenses) are answered by the
navigator (``_navigate``) over the last analysis, which prepares what
hovers need in a worker thread once an analysis is done. Positions are converted
to the encoding negotiated at initialisation (``_positions``). No input
stops the server: every handler logs what it could not do and answers
nothing.
"""

from __future__ import annotations

import logging

from lsprotocol import types

from ._buffers import SETTING_NAMES, path_of_uri, settings_from
from ._engine import UTF16
from ._features import register_navigation
from ._session import DEBOUNCE, WATCHED, CdlServer, guarded_handler


def build_server() -> CdlServer:
    """The server with its features registered (not started)."""
    server = CdlServer()
    _register_session(server)
    _register_documents(server)
    register_navigation(server)
    return server


def _register_session(server: CdlServer) -> None:
    """Initialisation, shutdown and files changed on disk."""
    buffers = server.buffers

    @server.feature(types.INITIALIZE)
    @guarded_handler(server, "reading the initialization options")
    def initialize(params: types.InitializeParams) -> None:
        # As pygls negotiated it and told the client (ServerCapabilities.positionEncoding).
        encoding = server.workspace.position_encoding or UTF16
        server.encoding = getattr(encoding, "value", encoding)
        root = path_of_uri(params.root_uri) if params.root_uri else params.root_path
        folders = params.workspace_folders or []
        if root is None and folders:
            root = path_of_uri(folders[0].uri)
        server.root = root
        buffers.settings, complaints = settings_from(params.initialization_options, root)
        for complaint in complaints:
            server.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=f"cdl lsp: {complaint}"))

    @server.feature(types.INITIALIZED)
    @guarded_handler(server, "asking to be told of changed files")
    def initialized(params: types.InitializedParams) -> None:
        workspace = server.client_capabilities.workspace
        watched = workspace.did_change_watched_files if workspace is not None else None
        if watched is not None and watched.dynamic_registration:
            watchers = [types.FileSystemWatcher(glob_pattern=WATCHED)]
            options = types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers)
            server.client_register_capability(
                types.RegistrationParams([types.Registration("cdl-watched", types.WORKSPACE_DID_CHANGE_WATCHED_FILES, options)])
            )

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @guarded_handler(server, "taking new settings")
    def configuration_changed(params: types.DidChangeConfigurationParams) -> None:
        # Clients send their whole settings, often under the server's name.
        given = params.settings
        if isinstance(given, dict) and isinstance(given.get("cdl"), dict):
            given = given["cdl"]
        if not isinstance(given, dict) or not any(name in given for name in SETTING_NAMES):
            return  # none of ours
        buffers.settings, complaints = settings_from(given, server.root)
        for complaint in complaints:
            server.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=f"cdl lsp: {complaint}"))
        server.analyse_now(set(buffers.texts))

    @server.feature(types.SHUTDOWN)
    @guarded_handler(server, "shutting down")
    def shutdown(params: None) -> None:
        for timer in server._timers.values():
            timer.cancel()
        server._timers.clear()
        # A preparation under way finishes (a thread cannot be stopped); none starts.
        server.stopping = True
        server._preparer.shutdown(wait=False, cancel_futures=True)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @guarded_handler(server, "taking changed files")
    def watched_files_changed(params: types.DidChangeWatchedFilesParams) -> None:
        readers: set[str] = set()
        for event in params.changes:
            path = path_of_uri(event.uri)
            if path is not None and path not in buffers.texts:  # an open one is read from its buffer
                readers |= buffers.readers_of(path)
        server.analyse_later(readers)



def _register_documents(server: CdlServer) -> None:
    """The open documents: opened, changed, saved, closed."""
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
        if path is None:
            return
        timer = server._timers.pop(path, None)
        if timer is not None:
            timer.cancel()
        readers = buffers.readers_of(path) - {path}
        urls = buffers.drop(path)
        server.publish(path, uri)  # what the documents still open find in it, if any
        server.analyse_now(readers)  # they read the file from disk now
        for url in sorted(urls - {path}):
            server.publish(url)


def serve() -> None:
    """Run the server on stdin and stdout until the client ends it."""
    logging.basicConfig(level=logging.WARNING, format="%(message)s")  # stderr: the client's log
    build_server().start_io()


__all__ = ["DEBOUNCE", "CdlServer", "build_server", "serve"]
