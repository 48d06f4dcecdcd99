"""Loading: phases 1-3 of the specification (sections 6, 9 and 7.1).

Holds reading files and URLs safely (``files``, ``urls``, ``parse``'s
hardened parser), XML catalogs (``catalog``), the main document and its
imports (``imports``, entry ``load_set``), one document's normalization
(``parse``, entry ``load_document``), the registry of top level lists
(``registry``) and the CDL schema (``schema``).

May import: ``cdl.errors``, ``cdl.text`` and ``cdl.model``.
"""
