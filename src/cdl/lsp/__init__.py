"""``cdl lsp``: a Language Server Protocol server for CDL documents.

Holds the server's composition (``server``, entry ``serve``), its state
and when documents are analysed (``_session``), one module per feature
(``features``: workspace, documents, diagnostics, definition, hover,
completion, references, symbols, lenses), and what they share: the open
buffers and their analyses (``_buffers``), the problems an analysis found,
placed on the text (``_diagnostics``), what the requests read
(``_navigate``: a loaded document paired with its texts, ``_written``,
``_source``; where names and paths lead, ``_targets``), the requests'
common prologue (``_requests``) and the engine's names (``_engine``).

May import: the public package (``cdl``) and every layer below it, by their
public names, in one module (``_engine``, the server's interface to the
engine; the other modules import the engine from there). Needs pygls (the
``lsp`` extra).
"""
