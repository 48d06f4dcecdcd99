"""Diagnostics (``textDocument/publishDiagnostics``; issue 25, points 1 and 8).

Entry point: :func:`register`, which makes :func:`publish` the server's way
of showing an analysis's problems. The problems themselves (each engine
error placed on the text, and on the import that leads to it) are found
with the analysis (``_diagnostics``, ``_buffers``); a document's
diagnostics are those every open document's analysis found in it, each
once. Published after an analysis, for every document whose problems it
changed, and for the analysed documents even when unchanged (the client
then sees they are current).
"""

from __future__ import annotations

from lsprotocol import types

from .._diagnostics import ERROR, Problem
from .._engine import Lines
from .._session import CdlServer


def publish(server: CdlServer, url: str, uri: str | None = None) -> None:
    """Send the problems found in ``url`` to the client (at ``uri``, its own by default)."""
    uri = uri or server.buffers.uri_of(url)
    if uri is None:
        return
    lines = server.lines_of(url)
    diagnostics = [_diagnostic(server, p, lines) for p in server.buffers.problems_in(url)]
    server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))


def _diagnostic(server: CdlServer, problem: Problem, lines: Lines | None) -> types.Diagnostic:
    related = []
    for place, message in problem.related:
        location = server.location_of(place)
        if location is not None:
            related.append(types.DiagnosticRelatedInformation(location, message))
    return types.Diagnostic(
        range=server.range_of(problem.place, lines),
        message=problem.message,
        severity=types.DiagnosticSeverity.Error if problem.severity == ERROR else types.DiagnosticSeverity.Warning,
        code=problem.code,
        source="cdl",
        related_information=related or None,
    )


def register(server: CdlServer) -> None:
    def show(url: str, uri: str | None) -> None:
        publish(server, url, uri)

    server.show_problems = show
