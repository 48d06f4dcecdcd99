"""Rendering a deployment plan (``cdl/_plan.py``) as text, JSON, DOT and Mermaid.

Entry points: :func:`to_text`, :func:`to_json`, :func:`to_dot` and
:func:`to_mermaid`, each reached through the matching ``Plan`` method. The
formats are public contracts (README.md, "cdl plan"); they walk the plan with
explicit stacks, since systems nest as deep as ``max_depth`` allows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._plan import Plan, PlannedComponent


def to_json(plan: Plan) -> str:
    # One line, written straight from the plan's arrays (Plan._tree): the
    # dicts of to_data() and an indenting encoder cost several times more.
    return plan._tree.json() + "\n"


def _name(path: str) -> str:
    """The last step of a path: how a component is named among its siblings."""
    return path.rsplit("/", 1)[-1]


def _inside(path: str, owner: str) -> str:
    """``path`` relative to the component ``owner`` when it lies below it."""
    return path[len(owner) + 1 :] if path.startswith(owner + "/") else path


def _walk(plan: Plan) -> Iterator[tuple[int, PlannedComponent | None]]:
    """(level, component) depth first in wave order; (level, None) closes a
    component that has children (for formats that nest)."""
    stack: list[tuple[int, PlannedComponent | None]] = [(0, c) for wave in reversed(plan.waves) for c in reversed(wave)]
    while stack:
        level, comp = stack.pop()
        yield level, comp
        if comp is not None and comp.waves:
            stack.append((level, None))
            stack.extend((level + 1, c) for wave in reversed(comp.waves) for c in reversed(wave))


def _details(comp: PlannedComponent) -> list[str]:
    parts = []
    if comp.after:
        parts.append("after " + ", ".join(_name(p) for p in comp.after))
    if comp.supplies:
        parts.append("supplies " + ", ".join(_inside(p, comp.path) for p in comp.supplies))
    if comp.releases:
        parts.append("releases " + ", ".join(_inside(p, comp.path) for p in comp.releases))
    if comp.waits_for:
        parts.append("waits for " + ", ".join(comp.waits_for))
    return parts


def to_text(plan: Plan) -> str:
    """One line per component: ``[wave] name`` indented under its parent, then
    what it comes after, supplies, releases and waits for."""
    lines: list[str] = []
    for level, comp in _walk(plan):
        if comp is None:
            continue
        name = comp.path if level == 0 else _name(comp.path)
        line = f"{'    ' * level}[{comp.wave}] {name}"
        details = _details(comp)
        if details:
            line += "  " + "; ".join(details)
        lines.append(line)
    return "".join(line + "\n" for line in lines)


def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _numbered(plan: Plan) -> dict[str, int]:
    return {comp.path: i for i, comp in enumerate(plan.components())}


def _label(comp: PlannedComponent, level: int) -> list[str]:
    name = comp.path if level == 0 else _name(comp.path)
    return [f"{name} (wave {comp.wave})", *_details(comp)[1 if comp.after else 0 :]]


def to_dot(plan: Plan) -> str:
    """Graphviz DOT. A component with child components is a cluster holding a
    node for itself (deployed last, after its children) and its children; an
    edge runs from a component to each sibling that comes after it, labelled
    with the lazy values it waits for, clipped to the clusters at both ends."""
    ids = _numbered(plan)
    clusters = {c.path for c in plan.components() if c.waves}
    out = [
        "digraph plan {",
        "  compound=true;",
        "  rankdir=LR;",
        '  node [shape=box, fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    edges: list[str] = []
    for level, comp in _walk(plan):
        indent = "  " * (level + 1)
        if comp is None:
            out.append(indent + "}")
            continue
        i = ids[comp.path]
        label = _dot_string("\n".join(_label(comp, level)))
        if comp.waves:
            out.append(f"{indent}subgraph cluster_{i} {{")
            out.append(f"{indent}  label={_dot_string(f'{_name(comp.path)} (wave {comp.wave})')};")
            out.append(f'{indent}  c{i} [label={label}, style="rounded,bold"];')
        else:
            out.append(f"{indent}c{i} [label={label}];")
        for before in comp.after:
            j = ids[before]
            clip = []
            if before in clusters:
                clip.append(f"ltail=cluster_{j}")
            if comp.waves:
                clip.append(f"lhead=cluster_{i}")
            attrs = ", ".join([f"label={_dot_string(chr(10).join(comp.because.get(before, ())))}", *clip])
            edges.append(f"  c{j} -> c{i} [{attrs}];")
    out.extend(edges)
    out.append("}")
    return "\n".join(out) + "\n"


def _mermaid_string(text: str) -> str:
    return '"' + text.replace('"', "#quot;").replace("\n", "<br/>") + '"'


def to_mermaid(plan: Plan) -> str:
    """A Mermaid flowchart: a component with child components is a subgraph,
    the others are nodes; one labelled edge per sibling dependency."""
    ids = _numbered(plan)
    out = ["flowchart LR"]
    edges: list[str] = []
    for level, comp in _walk(plan):
        indent = "  " * (level + 1)
        if comp is None:
            out.append(indent + "end")
            continue
        i = ids[comp.path]
        label = _mermaid_string("\n".join(_label(comp, level)))
        if comp.waves:
            out.append(f"{indent}subgraph c{i}[{label}]")
            out.append(f"{indent}  direction LR")
        else:
            out.append(f"{indent}c{i}[{label}]")
        for before in comp.after:
            edges.append(f"  c{ids[before]} -->|{_mermaid_string(chr(10).join(comp.because.get(before, ())))}| c{i}")
    out.extend(edges)
    return "\n".join(out) + "\n"
