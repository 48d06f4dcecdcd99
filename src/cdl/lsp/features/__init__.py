"""The features of ``cdl lsp``, one module each, composed by ``lsp.server``.

Each has ``register(server)``, which registers its handlers on a
``_session.CdlServer``; the requests' modules also hold their answer in
code points, without LSP types (``definition.definition``, ``hover.hover``,
``completion.completion``, ``references.references``, ``symbols.symbols``,
``lenses.code_lenses``), computed from a ``_navigate.Navigation``.
"""
