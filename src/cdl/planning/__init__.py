"""Planning: the deployment plan of a resolved system (spec sections 4 and
7.5; docs/semantics.md, "Deployment plan").

Holds the plan (``plan``, entry ``build_plan``), its components' paths,
each component's one identity (``paths``), and its renderings as text, DOT
and Mermaid (``render``); what differs between two versions of a system
(``diff``, ``changes``) and the one rule pairing their elements
(``pairing``), which a deployment's update follows too.

May import: ``cdl.errors``, ``cdl.text``, ``cdl.model``, ``cdl.loading`` and
``cdl.resolution``.
"""
