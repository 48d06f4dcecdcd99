"""Deployment sessions' parts (docs/semantics.md, "Deployment sessions"):
the states of the components (``machine``), whose lazy values an event
gives (``owners``), what a session reports (``status``) and the durable
journal (``journal``); the components' paths are the plan's
(``planning.paths``). The
session itself, ``cdl.Deployment``, composes them in ``cdl.engine``.

May import: ``cdl.errors``, ``cdl.text``, ``cdl.model``, ``cdl.loading``,
``cdl.resolution`` and ``cdl.planning``.
"""
