"""The engine: where the layers below are composed, once, into the public
classes. ``phases`` runs loading and the resolution phases in order;
``document`` (``cdl.load``, ``cdl.Document``), ``resolution``
(``cdl.Resolution``) and ``deployment`` (``cdl.Deployment``, the session
around ``deployment_state``'s state) are built on it.

May import: every layer below it (``cdl.errors``, ``cdl.text``,
``cdl.model``, ``cdl.loading``, ``cdl.resolution``, ``cdl.planning``,
``cdl.deployment``).
"""
