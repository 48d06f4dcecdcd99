"""Planning: the deployment plan of a resolved system (spec sections 4 and
7.5; docs/semantics.md, "Deployment plan").

Holds the plan (``plan``, entry ``build_plan``), its components' paths,
each component's one identity (``paths``), and its renderings as text, DOT
and Mermaid (``render``).

May import: ``cdl.errors``, ``cdl.text``, ``cdl.model``, ``cdl.loading`` and
``cdl.resolution``.
"""
