"""The plan's pictures (``Plan.to_dot``, ``Plan.to_mermaid``) and a deployment's
(``DeploymentStatus.to_dot``, ``to_mermaid``: the plan coloured by state),
rendered for real: with Graphviz ``dot`` and with mermaid-cli (``mmdc``) when
they are installed, skipped otherwise (README.md, "Deployment plan")."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest
from lxml import etree

import cdl
from conftest import CDL_DECL, load_text, system

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

#: Each state's colour, in the legend's order (README.md, "Deployment plan").
STATES = {"waiting": "#e4e4e4", "ready": "#fff1a8", "deployed": "#b9e6b0", "failed": "#f5a3a3", "blocked": "#f8cb8c"}


def status_of(plan: cdl.Plan, states: Mapping[str, str] | None) -> cdl.DeploymentStatus:
    """A deployment's status with only the components of ``states`` in those
    states (the others are drawn without one)."""
    return cdl.DeploymentStatus([cdl.ComponentStatus(path, state) for path, state in (states or {}).items()], plan)


def to_dot(plan: cdl.Plan, states: Mapping[str, str] | None = None) -> str:
    """``plan`` drawn by DOT with ``states``, as ``DeploymentStatus.to_dot`` draws it."""
    return status_of(plan, states).to_dot()


def to_mermaid(plan: cdl.Plan, states: Mapping[str, str] | None = None) -> str:
    """``plan`` drawn by Mermaid with ``states``, as ``DeploymentStatus.to_mermaid`` draws it."""
    return status_of(plan, states).to_mermaid()


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
    # Room under every title for the tallest, of two lines (/apps).
    assert text.startswith("---\nconfig:\n  flowchart:\n    subGraphTitleMargin:\n      top: 0\n      bottom: 48\n---\nflowchart LR\n")
    flat = "<cdl:system><a><x cdl:lazy='true'/></a><b><y cdl:refroot='a' cdl:ref='/x'/></b></cdl:system>"
    assert load_text(f"<cdl:cdl {CDL_DECL}>{flat}</cdl:cdl>").resolve().plan().to_mermaid().startswith("flowchart LR\n  c0[")
    assert '  subgraph c2["/apps (wave 2)<br/>waits for /db/hostname"]\n' in text
    assert '  c0 -->|"/db/hostname"| c2\n' in text  # an arrow into a subgraph ends at its border


def test_pictures_nest_deeper_than_python_recursion() -> None:
    depth = 1500
    body = "".join(f"<n{i}>" for i in range(depth)) + "<x>1</x>" + "".join(f"</n{i}>" for i in reversed(range(depth)))
    xml = f'<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"><cdl:system>{body}</cdl:system></cdl:cdl>'
    plan = cdl.load(xml.encode(), limits=cdl.Limits(max_depth=depth + 10)).resolve().plan()
    assert to_dot(plan, {"/n0": "ready"}).count("subgraph cluster_") == depth  # and the legend
    assert to_mermaid(plan).count("subgraph ") == depth - 1


# ---------------------------------------------------------------------------
# Mermaid, rendered with mermaid-cli

MMDC = shutil.which("mmdc")
needs_mmdc = pytest.mark.skipif(MMDC is None, reason="mermaid-cli (mmdc) is not installed")

# Titles of several lines at three levels of nesting, beside nodes.
CROWDED = system(
    "<database><hostname cdl:lazy='true'/><port cdl:lazy='true'/><username cdl:lazy='true'/></database>"
    "<tier><h cdl:refroot='database' cdl:ref='/hostname'/><p cdl:refroot='database' cdl:ref='/port'/>{lazy}"
    "<inner><u cdl:refroot='database' cdl:ref='/username'/>{lazy}"
    "<first><x cdl:lazy='true'/></first><second><y cdl:ref='../first/x'/></second>"
    "<deeper>{lazy}<a><x cdl:lazy='true'/></a><b><y cdl:lazy='true'/></b></deeper>"
    "</inner><alone><z cdl:lazy='true'/></alone></tier>"
    "<after><w cdl:refroot='tier' cdl:ref='/inner/property1'/></after>".format(
        lazy="".join(f"<property{i} cdl:lazy='true'/>" for i in range(6))
    )
)


def mermaid_cases() -> dict[str, str]:
    cases = {sample.parent.name: cdl.load(str(sample)).resolve().plan().to_mermaid() for sample in SAMPLES}
    cases["crowded"] = load_text(CROWDED).resolve().plan().to_mermaid()
    cases["states"] = to_mermaid(plan_of("webfarm"), WEBFARM_STATES)
    return cases


@pytest.fixture(scope="module")
def mermaid_svgs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, etree._Element]]:
    """Each case's Mermaid text and its SVG, rendered by one run of mmdc over
    a markdown file of them all (one browser start)."""
    assert MMDC is not None
    cases = mermaid_cases()
    folder = tmp_path_factory.mktemp("mermaid")
    (folder / "in.md").write_text("".join(f"```mermaid\n{text}```\n\n" for text in cases.values()), encoding="utf-8")
    command = [MMDC, "-q", "-i", str(folder / "in.md"), "-o", str(folder / "out.md"), "-e", "svg"]
    chromium = shutil.which("chromium")
    if chromium:  # Debian's, as root: mermaid-cli installed without its own browser
        config = {"executablePath": chromium, "args": ["--no-sandbox", "--disable-gpu"]}
        (folder / "puppeteer.json").write_text(json.dumps(config), encoding="utf-8")
        command += ["-p", str(folder / "puppeteer.json")]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return {name: (text, etree.parse(str(folder / f"out-{n}.svg")).getroot()) for n, (name, text) in enumerate(cases.items(), 1)}


def offset(element: etree._Element | None) -> tuple[float, float]:
    """Where an SVG element's coordinates start: its and its ancestors' translations."""
    x = y = 0.0
    while element is not None:
        move = re.match(r"translate\(\s*(-?[\d.]+)[ ,]+(-?[\d.]+)\s*\)", element.get("transform") or "")
        if move:
            x, y = x + float(move.group(1)), y + float(move.group(2))
        element = element.getparent()
    return x, y


def placed(element: etree._Element) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of a rect or foreignObject in the picture."""
    x, y = offset(element.getparent())
    left, top = x + float(element.get("x", "0")), y + float(element.get("y", "0"))
    return left, top, left + float(element.get("width", "0")), top + float(element.get("height", "0"))


def first(group: etree._Element, tag: str) -> etree._Element:
    found = group.find(SVG + tag)
    assert found is not None, f"no {tag} in {group.get('id')}"
    return found


def mermaid_boxes(svg: etree._Element) -> tuple[dict[str, tuple[float, ...]], dict[str, tuple[float, ...]], dict[str, str]]:
    """The subgraphs' titles, the boxes of the nodes and subgraphs, and the
    text of each, all by the id the flowchart gave them."""
    titles: dict[str, tuple[float, ...]] = {}
    boxes: dict[str, tuple[float, ...]] = {}
    words: dict[str, str] = {}
    for g in svg.iter(SVG + "g"):
        kind = (g.get("class") or "").split()
        found = re.search(r"(?:flowchart-)?([a-z]+(?:_[a-z]+|\d+))(?:-\d+)?$", g.get("id") or "")
        if "cluster" in kind and found:
            boxes[found.group(1)] = placed(first(g, "rect"))
        elif "node" in kind and found:
            boxes[found.group(1)] = placed(first(g, "rect"))
            words[found.group(1)] = "".join(g.itertext())
        elif "cluster-label" in kind:
            parent = g.getparent()
            name = re.search(r"([a-z]+\d*)$", "" if parent is None else parent.get("id") or "")
            assert name is not None
            titles[name.group(1)] = placed(first(g, "foreignObject"))
            words[name.group(1)] = "".join(g.itertext())
    return titles, boxes, words


def drawn_labels(text: str) -> dict[str, str]:
    """Each node's and subgraph's label in the flowchart's text, as the SVG shows it."""
    labels = re.findall(r"^\s*(?:subgraph )?(\w+)\[\"(.*)\"\]$", text, re.MULTILINE)
    return {name: label.replace("<br/>", "").replace("#quot;", '"') for name, label in labels}


@needs_mmdc
@pytest.mark.parametrize("case", ["webapp", "webfarm", "shop", "crowded", "states"])
def test_mermaid_renders_every_title_and_label(mermaid_svgs: dict[str, tuple[str, etree._Element]], case: str) -> None:
    text, svg = mermaid_svgs[case]
    labels = drawn_labels(text)
    assert len(labels) >= 3
    assert mermaid_boxes(svg)[2] == labels


@needs_mmdc
@pytest.mark.parametrize("case", ["webapp", "webfarm", "shop", "crowded", "states"])
def test_mermaid_titles_are_not_hidden(mermaid_svgs: dict[str, tuple[str, etree._Element]], case: str) -> None:
    # A title overlaps no node nor subgraph but those that hold it.
    titles, boxes, _ = mermaid_boxes(mermaid_svgs[case][1])
    assert titles
    for name, (left, top, right, bottom) in titles.items():
        for other, (x0, y0, x1, y1) in boxes.items():
            holds = x0 <= left and y0 <= top and right <= x1 and bottom <= y1
            assert holds or not (left < x1 and x0 < right and top < y1 and y0 < bottom), f"{name}'s title under {other}"


@needs_mmdc
def test_mermaid_fills_each_component_with_its_state(mermaid_svgs: dict[str, tuple[str, etree._Element]]) -> None:
    ids = {c.path: f"c{i}" for i, c in enumerate(plan_of("webfarm").components())}
    svg = mermaid_svgs["states"][1]
    fill = {}
    for g in svg.iter(SVG + "g"):
        found = re.search(r"(?:flowchart-)?([a-z]+(?:_[a-z]+|\d+))(?:-\d+)?$", g.get("id") or "")
        rect = g.find(SVG + "rect")
        if found and rect is not None:
            fill[found.group(1)] = re.findall(r"fill:(#[0-9a-f]+)", rect.get("style") or "")
    for path, state in WEBFARM_STATES.items():
        assert fill[ids[path]] == [STATES[state]], path
    assert fill[ids["/apps/app1"]] == []
    assert {name: colours for name, colours in fill.items() if name.startswith("state_")} == {
        f"state_{s}": [STATES[s]] for s in set(WEBFARM_STATES.values())
    }
