"""Rendering a deployment plan (``src/cdl/planning/plan.py``) as text, JSON, DOT and Mermaid.

Entry points: :func:`to_text`, :func:`to_dot` and :func:`to_mermaid`, each
reached through the matching ``Plan`` method (``Plan.to_json`` writes
straight from the plan's arrays); they read a plan through the public
properties :class:`Shown` and :class:`ShownComponent` name, so this module
needs nothing of ``plan``, which calls it. The
pictures also colour the components by their state in a deployment session
(``to_dot(plan, states)``, issue 24). The formats are public contracts
(README.md, "Deployment plan"); they walk the plan with explicit stacks, since
systems nest as deep as ``max_depth`` allows.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


class ShownComponent(Protocol):
    """What a rendering reads of a component (``cdl.ShownComponent``)."""

    @property
    def path(self) -> str: ...
    @property
    def wave(self) -> int: ...
    @property
    def supplies(self) -> tuple[str, ...]: ...
    @property
    def releases(self) -> tuple[str, ...]: ...
    @property
    def after(self) -> tuple[str, ...]: ...
    @property
    def because(self) -> Mapping[str, tuple[str, ...]]: ...
    @property
    def waits_for(self) -> tuple[str, ...]: ...
    @property
    def waves(self) -> Sequence[Sequence[ShownComponent]]: ...


class Shown(Protocol):
    """What a rendering reads of a plan (``cdl.Plan``)."""

    @property
    def waves(self) -> Sequence[Sequence[ShownComponent]]: ...
    def components(self) -> Iterator[ShownComponent]: ...


def _name(path: str) -> str:
    """The last step of a path: how a component is named among its siblings."""
    return path.rsplit("/", 1)[-1]


def _inside(path: str, owner: str) -> str:
    """``path`` relative to the component ``owner`` when it lies below it."""
    return path[len(owner) + 1 :] if path.startswith(owner + "/") else path


def _walk(plan: Shown) -> Iterator[tuple[int, ShownComponent | None]]:
    """(level, component) depth first in wave order; (level, None) closes a
    component that has children (for formats that nest)."""
    stack: list[tuple[int, ShownComponent | None]] = [(0, c) for wave in reversed(plan.waves) for c in reversed(wave)]
    while stack:
        level, comp = stack.pop()
        yield level, comp
        if comp is not None and comp.waves:
            stack.append((level, None))
            stack.extend((level + 1, c) for wave in reversed(comp.waves) for c in reversed(wave))


def _details(comp: ShownComponent) -> list[str]:
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


def to_text(plan: Shown) -> str:
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


def _label(comp: ShownComponent, level: int) -> str:
    """What a component's picture says: its name (its path at the top level)
    and wave, then what it supplies, releases and waits for (what it comes
    after is drawn as arrows)."""
    name = comp.path if level == 0 else _name(comp.path)
    return "\n".join([f"{name} (wave {comp.wave})", *_details(comp)[1 if comp.after else 0 :]])


#: The states of a deployment (issue 24) a picture colours, in the order the
#: legend lists them, each with its fill colour.
STATES: dict[str, str] = {
    "waiting": "#e4e4e4",
    "ready": "#fff1a8",
    "deployed": "#b9e6b0",
    "failed": "#f5a3a3",
    "blocked": "#f8cb8c",
    "changed": "#a8d4f5",
    "removing": "#c9b3e6",
    "removed": "#9a9a9a",
}


def _checked_states(states: Mapping[str, str] | None, components: Mapping[str, int]) -> dict[str, str]:
    """``states`` (component path to state), refused whole when it names a
    path that is not in ``components`` or a state not in :data:`STATES`."""
    if not states:
        return {}
    for path, state in states.items():
        if state not in STATES:
            raise ValueError(f"unknown state {state!r} for {path}: expected one of {', '.join(STATES)}")
        if path not in components:
            raise ValueError(f"{path} is no component of the plan")
    return dict(states)


@dataclass(frozen=True)
class _Shape:
    """One step of the nested drawing: ``kind`` is "open" for a component with
    child components (a cluster holding its children, drawn as the cluster
    only), "node" for one without, "close" after a cluster's children."""

    kind: str
    level: int
    id: int = 0
    label: str = ""
    state: str | None = None


@dataclass
class _Drawing:
    """What both pictures draw, in order. ``edges`` are (from, to, label), one
    per sibling dependency, from the sibling deployed first, labelled with the
    lazy values it waits for. An edge to or from a cluster is attached to a
    node inside it, and DOT clips it at the cluster's border: ``heads`` maps
    each cluster's id to the node an edge into it enters (the first it
    deploys, so the arrow runs towards the cluster's start), ``tails`` to the
    node an edge out of it leaves (the last it deploys). ``states`` are the
    states the components are in, in the legend's order."""

    shapes: list[_Shape]
    edges: list[tuple[int, int, str]]
    heads: dict[int, int]
    tails: dict[int, int]
    states: list[str]


def _drawing(plan: Shown, states: Mapping[str, str] | None) -> _Drawing:
    ids = {comp.path: i for i, comp in enumerate(plan.components())}
    state_of = _checked_states(states, ids)
    drawing = _Drawing([], [], {}, {}, [s for s in STATES if s in state_of.values()])
    opened: list[int] = []  # the clusters open at this point of the walk
    headless: list[int] = []  # those opened since the last node
    last = 0  # the last node drawn: inside a cluster closing now, its last
    for level, comp in _walk(plan):
        if comp is None:
            drawing.shapes.append(_Shape("close", level))
            drawing.tails[opened.pop()] = last
            continue
        i = ids[comp.path]
        kind = "open" if comp.waves else "node"
        drawing.shapes.append(_Shape(kind, level, i, _label(comp, level), state_of.get(comp.path)))
        if kind == "open":
            opened.append(i)
            headless.append(i)
        else:
            drawing.heads.update((cluster, i) for cluster in headless)
            headless.clear()
            last = i
        drawing.edges.extend((ids[before], i, "\n".join(comp.because.get(before, ()))) for before in comp.after)
    return drawing


#: The one font of the DOT picture: its graph (cluster titles), nodes and edges.
_FONT = '"Helvetica"'


def _dot_shapes(drawing: _Drawing) -> list[str]:
    out: list[str] = []
    for shape in drawing.shapes:
        indent = "  " * (shape.level + 1)
        # With states, a component without one is white, not its cluster's colour.
        colour = STATES[shape.state] if shape.state else "#ffffff" if drawing.states else ""
        fill = [f'fillcolor="{colour}"'] if colour else []
        if shape.kind == "close":
            out.append(indent + "}")
        elif shape.kind == "open":
            style = '"rounded,filled"' if fill else '"rounded"'
            attrs = [f"label={_dot_string(shape.label)}", f"style={style}", *fill]
            out.append(f"{indent}subgraph cluster_{shape.id} {{")
            out.extend(f"{indent}  {attr};" for attr in attrs)
        else:
            attrs = [f"label={_dot_string(shape.label)}", *(['style="rounded,filled"'] if fill else []), *fill]
            out.append(f"{indent}c{shape.id} [{', '.join(attrs)}];")
    return out


def _dot_legend(drawing: _Drawing) -> list[str]:
    if not drawing.states:
        return []
    out = ["  subgraph cluster_legend {", '    label="states";', '    style="rounded";']
    out += [f'    state_{s} [label="{s}", style="rounded,filled", fillcolor="{STATES[s]}"];' for s in drawing.states]
    return [*out, "  }"]


def to_dot(plan: Shown, states: Mapping[str, str] | None = None) -> str:
    """Graphviz DOT. A component with child components is drawn as a cluster
    holding its children, titled with its label; an arrow to or from such a
    component ends at its cluster's border (``compound``, ``lhead``/
    ``ltail``). ``states`` maps component paths to one of :data:`STATES`:
    each such component is filled with its state's colour, and a legend lists
    the states present."""
    drawing = _drawing(plan, states)
    out = [
        "digraph plan {",
        "  compound=true;",
        "  rankdir=LR;",
        f"  fontname={_FONT};",
        f"  node [shape=box, style=rounded, fontname={_FONT}];",
        f"  edge [fontname={_FONT}, fontsize=10];",
    ]
    out += _dot_shapes(drawing)
    out += _dot_legend(drawing)
    for j, i, label in drawing.edges:
        clip = [f"label={_dot_string(label)}"]
        if j in drawing.tails:
            clip.append(f"ltail=cluster_{j}")
        if i in drawing.heads:
            clip.append(f"lhead=cluster_{i}")
        out.append(f"  c{drawing.tails.get(j, j)} -> c{drawing.heads.get(i, i)} [{', '.join(clip)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def _mermaid_string(text: str) -> str:
    return '"' + text.replace('"', "#quot;").replace("\n", "<br/>") + '"'


#: The height of a line of a Mermaid subgraph title: its default font of
#: 16px at a line height of 1.5 (titles are not wrapped).
_MERMAID_LINE = 24


def _mermaid_header(drawing: _Drawing) -> list[str]:
    """The flowchart's front matter and first line. Mermaid's layout leaves no
    room for a subgraph's title, so the nodes under a title of several lines
    hid all but its first; the title margin makes room below every title for
    the tallest one."""
    titles = [shape.label.count("\n") + 1 for shape in drawing.shapes if shape.kind == "open"]
    if drawing.states:
        titles.append(1)
    if not titles:
        return ["flowchart LR"]
    margin = _MERMAID_LINE * max(titles)
    config = ["config:", "  flowchart:", "    subGraphTitleMargin:", "      top: 0", f"      bottom: {margin}"]
    return ["---", *config, "---", "flowchart LR"]


def to_mermaid(plan: Shown, states: Mapping[str, str] | None = None) -> str:
    """A Mermaid flowchart: the same picture as :func:`to_dot`, a component
    with child components a titled subgraph, the others nodes; one labelled
    edge per sibling dependency. ``states`` colours as for :func:`to_dot`
    (a class per state)."""
    drawing = _drawing(plan, states)
    out = _mermaid_header(drawing)
    for shape in drawing.shapes:
        indent = "  " * (shape.level + 1)
        if shape.kind == "close":
            out.append(indent + "end")
        elif shape.kind == "open":
            out += [f"{indent}subgraph c{shape.id}[{_mermaid_string(shape.label)}]", f"{indent}  direction LR"]
        else:
            out.append(f"{indent}c{shape.id}[{_mermaid_string(shape.label)}]")
    if drawing.states:
        out += ['  subgraph legend["states"]', *(f'    state_{s}["{s}"]' for s in drawing.states), "  end"]
    out.extend(f"  c{j} -->|{_mermaid_string(label)}| c{i}" for j, i, label in drawing.edges)
    members: dict[str, list[str]] = {s: [] for s in drawing.states}
    for shape in drawing.shapes:
        if shape.state:
            members[shape.state].append(f"c{shape.id}")
    for s, ids in members.items():
        out.append(f"  classDef {s} fill:{STATES[s]},color:#000")
        out.append(f"  class {','.join([*ids, f'state_{s}'])} {s}")
    return "\n".join(out) + "\n"
