"""Deployment sessions' parts (docs/semantics.md, "Deployment sessions"):
the states of the components (``machine``), their names (``names``), what
a session reports (``status``) and the durable journal (``journal``). The
session itself, ``cdl.Deployment``, composes them in ``cdl.engine``.

May import: ``cdl.errors``, ``cdl.text``, ``cdl.model``, ``cdl.loading``,
``cdl.resolution`` and ``cdl.planning``.
"""
