"""Rendering a deployment plan (``cdl/_plan.py``) as text, JSON, DOT and Mermaid.

Entry points: :func:`to_text`, :func:`to_json`, :func:`to_dot` and
:func:`to_mermaid`, each reached through the matching ``Plan`` method. The
formats are public contracts (README.md, "cdl plan"); they walk the plan with
explicit stacks, since systems nest as deep as ``max_depth`` allows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._plan import Plan, PlannedComponent


def to_json(plan: Plan) -> str:
    # One line, written straight from the plan's arrays (Plan._tree), rather
    # than through the dicts of to_data() and an indenting encoder.
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


_Shape = tuple[str, int, int, str, str]


def _drawing(plan: Plan, escape: Callable[[str], str]) -> tuple[list[_Shape], list[tuple[int, int, str]]]:
    """What both pictures draw, in order: ("open", level, id, label, title) for
    a component with child components (a cluster holding its children), ("node",
    ...) for one without, ("close", level, 0, "", "") after a cluster's children;
    and the edges (from, to, label), one per sibling dependency, from the
    sibling deployed first, labelled with the lazy values it waits for.
    Labels are escaped with ``escape``."""
    ids = _numbered(plan)
    shapes: list[_Shape] = []
    edges: list[tuple[int, int, str]] = []
    for level, comp in _walk(plan):
        if comp is None:
            shapes.append(("close", level, 0, "", ""))
            continue
        i = ids[comp.path]
        lines = _label(comp, level)
        shapes.append(("open" if comp.waves else "node", level, i, escape("\n".join(lines)), escape(lines[0])))
        edges.extend((ids[before], i, escape("\n".join(comp.because.get(before, ())))) for before in comp.after)
    return shapes, edges


def _nested(
    shapes: list[_Shape], close: str, opened: Callable[[int, str, str], list[str]], node: Callable[[int, str], str]
) -> list[str]:
    """The lines of the shapes, indented by nesting: ``opened`` starts a
    cluster, ``close`` ends one, ``node`` draws a component without children."""
    out: list[str] = []
    for kind, level, i, label, title in shapes:
        indent = "  " * (level + 1)
        if kind == "close":
            out.append(indent + close)
        elif kind == "open":
            out.extend(indent + line for line in opened(i, label, title))
        else:
            out.append(indent + node(i, label))
    return out


def to_dot(plan: Plan) -> str:
    """Graphviz DOT. A component with child components is a cluster holding a
    node for itself (deployed last, after its children) and its children; each
    edge is clipped to the clusters at its ends."""
    shapes, edges = _drawing(plan, _dot_string)
    clusters = {i for kind, _, i, _, _ in shapes if kind == "open"}
    out = [
        "digraph plan {",
        "  compound=true;",
        "  rankdir=LR;",
        '  node [shape=box, fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    out += _nested(
        shapes,
        "}",
        lambda i, label, title: [f"subgraph cluster_{i} {{", f"  label={title};", f'  c{i} [label={label}, style="rounded,bold"];'],
        lambda i, label: f"c{i} [label={label}];",
    )
    for j, i_, label in edges:
        clip = [f"ltail=cluster_{j}"] if j in clusters else []
        if i_ in clusters:
            clip.append(f"lhead=cluster_{i_}")
        out.append(f"  c{j} -> c{i_} [{', '.join([f'label={label}', *clip])}];")
    out.append("}")
    return "\n".join(out) + "\n"


def _mermaid_string(text: str) -> str:
    return '"' + text.replace('"', "#quot;").replace("\n", "<br/>") + '"'


def to_mermaid(plan: Plan) -> str:
    """A Mermaid flowchart: a component with child components is a subgraph,
    the others are nodes; one labelled edge per sibling dependency."""
    shapes, edges = _drawing(plan, _mermaid_string)
    out = ["flowchart LR"]
    out += _nested(
        shapes,
        "end",
        lambda i, label, _: [f"subgraph c{i}[{label}]", "  direction LR"],
        lambda i, label: f"c{i}[{label}]",
    )
    out.extend(f"  c{j} -->|{label}| c{i}" for j, i, label in edges)
    return "\n".join(out) + "\n"
