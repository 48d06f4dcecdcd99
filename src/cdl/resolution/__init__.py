"""Resolution: phases 4-6 of the specification (section 7) and what is made
of resolved trees.

Holds prototypes (``inherit``, 7.2), references and expressions in
dependency order (``references``, with its specialisation ``shortcuts``,
7.3), laziness and required properties (``laziness``, 7.4-7.5), the
resolved output (``output``) and provenance (``explain``). The order in
which they run is composed in ``cdl.engine.phases``.

May import: ``cdl.errors``, ``cdl.text``, ``cdl.model`` and ``cdl.loading``.
"""
