"""The plan's pictures (cdl/_plan_render.py to_dot, to_mermaid), rendered for
real: with Graphviz ``dot`` and with mermaid-cli (``mmdc``) when they are
installed, skipped otherwise (README.md, "Deployment plan")."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest
from lxml import etree

import cdl
from cdl._plan_render import STATES, to_dot, to_mermaid

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "samples").glob("*/system.cdl"))
SVG = "{http://www.w3.org/2000/svg}"

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot is not installed")


def plan_of(sample: str) -> cdl.Plan:
    return cdl.load(str(ROOT / "samples" / sample / "system.cdl")).resolve().plan()


def render_dot(dot: str) -> etree._Element:
    proc = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no warning either: a clipped edge to a missing cluster warns
    return etree.fromstring(proc.stdout.encode())


def groups(svg: etree._Element, kind: str) -> dict[str, etree._Element]:
    """The SVG groups dot draws for its nodes, edges or clusters, by title."""
    return {g.findtext(SVG + "title", ""): g for g in svg.iter(SVG + "g") if g.get("class") == kind}


def texts(group: etree._Element) -> list[str]:
    return [t.text or "" for t in group.iter(SVG + "text")]


def compound(plan: cdl.Plan) -> list[cdl.PlannedComponent]:
    return [c for c in plan.components() if c.waves]


# ---------------------------------------------------------------------------
# DOT, rendered with dot


@needs_dot
@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.parent.name)
def test_dot_draws_a_component_with_children_as_its_cluster_only(sample: Path) -> None:
    plan = cdl.load(str(sample)).resolve().plan()
    svg = render_dot(plan.to_dot())
    nodes, clusters = groups(svg, "node"), groups(svg, "cluster")
    components = list(plan.components())
    assert len(nodes) == len(components) - len(compound(plan))
    assert len(clusters) == len(compound(plan)) > 0
    # Each cluster's title says the component's name and wave; no node says it again.
    node_lines = {line for g in nodes.values() for line in texts(g)}
    for comp in compound(plan):
        title = texts(clusters[f"cluster_{components.index(comp)}"])
        name = comp.path if comp.path.count("/") == 1 else comp.path.rsplit("/", 1)[1]
        assert title[0] == f"{name} (wave {comp.wave})"
        assert title[0] not in node_lines
    assert len(groups(svg, "edge")) == sum(len(c.after) for c in components)


@needs_dot
@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.parent.name)
def test_dot_uses_one_font(sample: Path) -> None:
    svg = render_dot(cdl.load(str(sample)).resolve().plan().to_dot())
    fonts = {t.get("font-family") for t in svg.iter(SVG + "text")}
    assert fonts == {"Helvetica,sans-Serif"}


def box(group: etree._Element) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of the first polygon or path of a group."""
    return extent(next(e for e in group if e.tag in (SVG + "polygon", SVG + "path")))


def extent(shape: etree._Element) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of a polygon or path."""
    numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", shape.get("points") or shape.get("d") or "")]
    xs, ys = numbers[0::2], numbers[1::2]
    return min(xs), min(ys), max(xs), max(ys)


@needs_dot
def test_dot_arrows_end_at_the_cluster_borders() -> None:
    # webfarm: db -> apps (a cluster) -> balancer; both arrows are clipped at
    # the border of apps' cluster, and run left to right (rankdir=LR).
    plan = plan_of("webfarm")
    ids = {c.path: f"c{i}" for i, c in enumerate(plan.components())}
    svg = render_dot(plan.to_dot())
    left, _, right, _ = box(groups(svg, "cluster")[f"cluster_{list(ids).index('/apps')}"])
    edges = list(groups(svg, "edge").values())
    into = next(e for e in edges if "/db/hostname" in texts(e))
    out_of = next(e for e in edges if "/apps/app1/hostname" in texts(e))
    arrow_tip = extent(next(e for e in into if e.tag == SVG + "polygon"))[2]
    assert arrow_tip == pytest.approx(left, abs=1.0)
    out_start = extent(next(e for e in out_of if e.tag == SVG + "path"))[0]
    assert out_start == pytest.approx(right, abs=1.0)
    assert box(groups(svg, "node")[ids["/db"]])[2] < left < right < box(groups(svg, "node")[ids["/balancer"]])[0]


def test_dot_edges_to_and_from_clusters_name_them() -> None:
    lines = [line.strip() for line in plan_of("webfarm").to_dot().splitlines()]
    edges = [line for line in lines if " -> " in line]
    assert edges[0] == 'c0 -> c3 [label="/db/hostname", lhead=cluster_2];'
    assert edges[-1].startswith("c5 -> c6 [") and edges[-1].endswith(", ltail=cluster_2];")
    assert "c2 [" not in "\n".join(lines)  # apps is its cluster, no node
    assert 'fontname="Helvetica";' in lines


# ---------------------------------------------------------------------------
# States (deployment sessions colour the plan by state)


WEBFARM_STATES = {"/db": "deployed", "/apps": "waiting", "/apps/schema": "failed", "/balancer": "blocked", "/monitor": "ready"}


def fills(svg: etree._Element, kind: str) -> dict[str, str | None]:
    return {title: box_fill(g) for title, g in groups(svg, kind).items()}


def box_fill(group: etree._Element) -> str | None:
    shape = next(e for e in group if e.tag in (SVG + "polygon", SVG + "path"))
    return shape.get("fill")


@needs_dot
def test_dot_fills_each_component_with_its_state() -> None:
    plan = plan_of("webfarm")
    ids = {c.path: i for i, c in enumerate(plan.components())}
    svg = render_dot(to_dot(plan, WEBFARM_STATES))
    nodes, clusters = fills(svg, "node"), fills(svg, "cluster")
    for path, state in WEBFARM_STATES.items():
        drawn = clusters.get(f"cluster_{ids[path]}") or nodes[f"c{ids[path]}"]
        assert drawn == STATES[state], path
    assert nodes[f"c{ids['/apps/app1']}"] == "#ffffff"  # no state: white, not its cluster's grey
    # The legend lists the states present, in the palette's order, each in its colour.
    legend = groups(svg, "cluster")["cluster_legend"]
    assert texts(legend) == ["states"]
    assert [(t, f) for t, f in nodes.items() if t.startswith("state_")] == [
        (f"state_{s}", STATES[s]) for s in STATES if s in WEBFARM_STATES.values()
    ]
    # Labels keep the path.
    assert texts(groups(svg, "node")[f"c{ids['/db']}"])[0] == "/db (wave 1)"


def test_states_leave_the_picture_alone_when_absent() -> None:
    plan = plan_of("webfarm")
    assert to_dot(plan) == to_dot(plan, {}) == plan.to_dot()
    assert to_mermaid(plan) == to_mermaid(plan, None) == plan.to_mermaid()
    assert "legend" not in plan.to_dot() and "fillcolor" not in plan.to_dot()
    partial = to_dot(plan, {"/db": "ready"})
    assert partial.count("state_") == 1 and 'fillcolor="#ffffff"' in partial


@pytest.mark.parametrize(
    ("states", "message"),
    [({"/db": "done"}, "unknown state 'done' for /db: expected one of waiting, ready"), ({"/nope": "ready"}, "/nope is no component")],
)
def test_states_refuse_unknown_states_and_paths(states: Mapping[str, str], message: str) -> None:
    plan = plan_of("webfarm")
    for render in (to_dot, to_mermaid):
        with pytest.raises(ValueError, match=re.escape(message)):
            render(plan, states)


def test_mermaid_classes_each_component_by_state() -> None:
    plan = plan_of("webfarm")
    ids = {c.path: f"c{i}" for i, c in enumerate(plan.components())}
    text = to_mermaid(plan, WEBFARM_STATES)
    for state in set(WEBFARM_STATES.values()):
        assert f"  classDef {state} fill:{STATES[state]},color:#000\n" in text
        members = {ids[p] for p, s in WEBFARM_STATES.items() if s == state}
        line = re.search(rf"^  class (\S+) {state}$", text, re.MULTILINE)
        assert line is not None and set(line.group(1).split(",")) == {*members, f"state_{state}"}
    assert text.count("subgraph legend") == 1


def test_mermaid_draws_clusters_as_titled_subgraphs() -> None:
    text = plan_of("webfarm").to_mermaid()
    assert '  subgraph c2["/apps (wave 2)<br/>waits for /db/hostname"]\n' in text
    assert '  c0 -->|"/db/hostname"| c2\n' in text  # an arrow into a subgraph ends at its border


def test_pictures_nest_deeper_than_python_recursion() -> None:
    depth = 1500
    body = "".join(f"<n{i}>" for i in range(depth)) + "<x>1</x>" + "".join(f"</n{i}>" for i in reversed(range(depth)))
    xml = f'<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"><cdl:system>{body}</cdl:system></cdl:cdl>'
    plan = cdl.load(xml.encode(), limits=cdl.Limits(max_depth=depth + 10)).resolve().plan()
    assert to_dot(plan, {"/n0": "ready"}).count("subgraph cluster_") == depth  # and the legend
    assert to_mermaid(plan).count("subgraph ") == depth - 1
