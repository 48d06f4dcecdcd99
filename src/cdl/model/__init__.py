"""The data model every phase shares.

Holds the names of CDL (``vocabulary``), parsed values (``tables``),
questions about one element (``elements``), the working state of a run
(``workspace``: documents, context, working copies, budget, problems),
what is still unresolved (``items``), the children index (``children``),
paths and QNames (``paths``), how names and paths are written for people
(``naming``), where an element is written (``places``), expressions
(``expressions``), suggestions (``suggest``), limits (``limits``), C-level
scans (``scan``) and the switch for fast paths (``switch``).

May import: ``cdl.errors`` and ``cdl.text``.
"""
