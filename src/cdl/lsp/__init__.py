"""``cdl lsp``: a Language Server Protocol server for CDL documents.

Holds the server (``server``, entry ``serve``), its state (``_session``),
the open buffers and their analyses (``_buffers``), diagnostics
(``_diagnostics``), navigation (``_navigate`` and the modules it uses) and
the requests in LSP's terms (``_features``).

May import: the public package (``cdl``) and every layer below it, by their
public names, in one module (``_engine``, the server's interface to the
engine; the other modules import the engine from there). Needs pygls (the
``lsp`` extra).
"""
