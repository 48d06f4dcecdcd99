"""The session and the workspace: ``initialize`` (the position encoding, the
workspace's root, the settings in ``initializationOptions``),
``initialized`` (asking to be told of files changed on disk, when the
client can register watchers), ``workspace/didChangeConfiguration`` (new
settings: every open document analysed again when where imports come from changed), ``workspace/didChangeWatchedFiles``
(the open documents that read a changed file analysed again) and
``shutdown``.

Entry point: :func:`register`.
"""

from __future__ import annotations

from lsprotocol import types

from .._buffers import SETTING_NAMES, path_of_uri, settings_from
from .._engine import UTF16
from .._session import CdlServer, guarded_handler

#: The files whose changes on disk the client is asked to report (an import
#: that is not open, changed by another program or a checkout).
WATCHED = "**/*.{cdl,xml}"


def _complain(server: CdlServer, complaints: list[str]) -> None:
    for complaint in complaints:
        server.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=f"cdl lsp: {complaint}"))


def register(server: CdlServer) -> None:
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
        _complain(server, complaints)

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
        before = buffers.settings
        buffers.settings, complaints = settings_from(given, server.root)
        _complain(server, complaints)
        if buffers.settings.imports() != before.imports():
            server.analyse_now(set(buffers.texts))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @guarded_handler(server, "taking changed files")
    def watched_files_changed(params: types.DidChangeWatchedFilesParams) -> None:
        readers: set[str] = set()
        for event in params.changes:
            path = path_of_uri(event.uri)
            if path is not None and path not in buffers.texts:  # an open one is read from its buffer
                readers |= buffers.readers_of(path)
        server.analyse_later(readers)

    @server.feature(types.SHUTDOWN)
    @guarded_handler(server, "shutting down")
    def shutdown(params: None) -> None:
        server.stop()
