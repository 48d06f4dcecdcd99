"""cdl.planning.plan: the deployment plan (issue 14; docs/semantics.md, "Deployment plan")."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cdl
from cdl import CdlError, Plan
from cdl.conformance import load_suite, run_case
from conftest import load_text, system

ROOT = Path(__file__).resolve().parent.parent
WEBAPP = ROOT / "samples" / "webapp" / "system.cdl"

# 7.5.2.2
SERVERS = system(
    "<server1><port cdl:lazy='true'/></server1>"
    "<server2><destination cdl:refroot='server1' cdl:ref='/port'/></server2>"
)


def plan_of(xml: str, values: dict[str, str] | None = None, release: tuple[str, ...] = ()) -> Plan:
    return load_text(xml).resolve(values, release=release).plan()


def table(plan: Plan) -> dict[str, tuple[int, tuple[str, ...]]]:
    """Each component's (wave, after)."""
    return {c.path: (c.wave, c.after) for c in plan.components()}


def by_path(plan: Plan) -> dict[str, cdl.PlannedComponent]:
    return {c.path: c for c in plan.components()}


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cdl", *args], capture_output=True, text=True, timeout=120, cwd=cwd or ROOT, check=False
    )


# ---------------------------------------------------------------------------
# The cases of the issue


def test_servers_7_5_2_2_json_contract() -> None:
    assert plan_of(SERVERS).to_data() == {
        "system": [
            [{"path": "/server1", "supplies": ["/server1/port"], "releases": [], "after": [], "waits_for": [], "waves": []}],
            [
                {
                    "path": "/server2",
                    "supplies": [],
                    "releases": [],
                    "after": ["/server1"],
                    "waits_for": ["/server1/port"],
                    "waves": [],
                }
            ],
        ]
    }


def test_servers_supplied_port_removes_the_dependency() -> None:
    plan = load_text(SERVERS).resolve().supply({"server1/port": "8001"}).plan()
    assert table(plan) == {"/server1": (1, ()), "/server2": (1, ())}
    assert by_path(plan)["/server1"].supplies == ()


def test_webapp_db_before_web() -> None:
    plan = cdl.load(str(WEBAPP)).resolve().plan()
    assert table(plan) == {
        "/WebApplication": (1, ()),
        "/WebApplication/t:DB": (1, ()),
        "/WebApplication/t:Web": (2, ("/WebApplication/t:DB",)),
        "/WebApplication/t:Web/t:dbconnection": (1, ()),
    }
    comps = by_path(plan)
    assert comps["/WebApplication/t:Web"].because == {"/WebApplication/t:DB": ("/WebApplication/t:DB/t:hostname",)}
    assert comps["/WebApplication/t:Web/t:dbconnection"].waits_for == ("/WebApplication/t:DB/t:hostname",)
    assert comps["/WebApplication/t:DB"].supplies == ("/WebApplication/t:DB/t:hostname",)
    assert comps["/WebApplication/t:Web"].supplies == ("/WebApplication/t:Web/t:hostname",)


def test_webapp_text() -> None:
    assert cdl.load(str(WEBAPP)).resolve().plan().to_text() == (
        "[1] /WebApplication\n"
        "    [1] t:DB  supplies t:hostname\n"
        "    [2] t:Web  after t:DB; supplies t:hostname\n"
        "        [1] t:dbconnection  waits for /WebApplication/t:DB/t:hostname\n"
    )


def test_webapp_db_hostname_set_removes_the_constraint() -> None:
    plan = cdl.load(str(WEBAPP)).resolve({"WebApplication/t:DB/t:hostname": "db.example.org"}).plan()
    assert table(plan)["/WebApplication/t:Web"] == (1, ())
    assert table(plan)["/WebApplication/t:DB"] == (1, ())
    assert by_path(plan)["/WebApplication/t:DB"].supplies == ()


LAZY_REFS = system(
    "<db><host cdl:lazy='true'/><version>15</version></db>"
    "<app><dbHost cdl:refroot='db' cdl:ref='/host' cdl:lazy='true'/></app>"
    "<report><dbVersion cdl:refroot='db' cdl:ref='/version' cdl:lazy='true'/></report>"
)


def test_lazy_reference_to_a_lazy_property_orders_its_component() -> None:
    comps = by_path(plan_of(LAZY_REFS))
    assert comps["/app"].after == ("/db",)
    assert comps["/app"].wave == 2
    assert comps["/app"].releases == ("/app/dbHost",)
    assert comps["/app"].waits_for == ("/db/host",)


def test_lazy_reference_to_a_static_value_creates_no_dependency() -> None:
    comps = by_path(plan_of(LAZY_REFS))
    assert comps["/report"].after == ()
    assert comps["/report"].wave == 1
    assert comps["/report"].releases == ("/report/dbVersion",)
    assert comps["/report"].waits_for == ()


CHAIN = system(
    "<a><p cdl:lazy='true'/></a>"
    "<b><in cdl:refroot='a' cdl:ref='/p'/><q cdl:lazy='true'/></b>"
    "<c><in cdl:refroot='b' cdl:ref='/q'/></c>"
    "<d><x>1</x></d>"
)


def test_three_stage_chain_with_an_independent_component() -> None:
    plan = plan_of(CHAIN)
    assert [[c.path for c in wave] for wave in plan.waves] == [["/a", "/d"], ["/b"], ["/c"]]
    assert table(plan)["/c"] == (3, ("/b",))


TRANSITIVE = system(
    "<a><p cdl:lazy='true'/></a>"
    "<b><r cdl:refroot='a' cdl:ref='/p'/></b>"
    "<c><s cdl:refroot='b' cdl:ref='/r'/></c>"
)


def test_transitive_wait_through_another_components_reference() -> None:
    # c's reference waits for b's, which waits for a's lazy property: b's
    # resolves the moment a's value arrives, so c depends on a, not on b.
    plan = plan_of(TRANSITIVE)
    assert table(plan) == {"/a": (1, ()), "/b": (2, ("/a",)), "/c": (2, ("/a",))}
    assert by_path(plan)["/c"].waits_for == ("/a/p",)


LIFTED = system(
    "<db><host cdl:lazy='true'/></db>"
    "<tier><app><dbHost cdl:refroot='db' cdl:ref='/host'/></app><cache><size>1</size></cache></tier>"
)


def test_dependency_inside_a_compound_is_lifted_to_its_parents_siblings() -> None:
    plan = plan_of(LIFTED)
    assert table(plan) == {
        "/db": (1, ()),
        "/tier": (2, ("/db",)),
        "/tier/app": (1, ()),
        "/tier/cache": (1, ()),
    }
    comps = by_path(plan)
    assert comps["/tier/app"].waits_for == ("/db/host",)
    assert comps["/tier"].waits_for == ()
    assert comps["/tier"].because == {"/db": ("/db/host",)}


INHERITED = system(
    "<srv><port cdl:lazy='true'/></srv><client cdl:extends='Client'/>",
    configuration="<Client><server cdl:refroot='srv' cdl:ref='/port'/><retries>3</retries></Client>",
)


def test_dependency_arriving_by_inheritance() -> None:
    plan = plan_of(INHERITED)
    assert table(plan) == {"/srv": (1, ()), "/client": (2, ("/srv",))}
    # The template itself takes no part.
    assert "/Client" not in table(plan)


EXPRESSION = system(
    "<db><host cdl:lazy='true'/></db>"
    "<app><url><cdl:expression value-of=\"concat('jdbc://', $h)\">"
    "<cdl:variable name='h' refroot='db' ref='/host'/></cdl:expression></url><n>1</n></app>"
    "<job><at><cdl:expression value-of=\"concat($h, '!')\">"
    "<cdl:variable name='h' refroot='db' ref='/host' cdl:lazy='true'/></cdl:expression></at><n>1</n></job>"
)


def test_expression_whose_variable_waits() -> None:
    plan = plan_of(EXPRESSION)
    comps = by_path(plan)
    assert comps["/app"].after == ("/db",)
    assert comps["/app"].waits_for == ("/db/host",)
    # A property holding an expression is a property, not a component.
    assert "/app/url" not in comps


def test_lazy_expression_is_released_and_orders_its_component() -> None:
    comps = by_path(plan_of(EXPRESSION))
    assert comps["/job"].releases == ("/job/at",)
    assert comps["/job"].after == ("/db",)


def test_elements_inside_a_pending_expressions_variable_are_no_components() -> None:
    # Found by the fuzzer: a variable holding an element of its own (which
    # the spec gives no meaning) inside a pending expression made the
    # component walk lose its place (IndexError).
    comps = by_path(
        plan_of(
            system(
                "<db><host cdl:lazy='true'/></db>"
                "<app><url><cdl:expression value-of=\"concat('jdbc://', $h)\">"
                "<cdl:variable name='h' refroot='db' ref='/host'><x><y>1</y></x></cdl:variable>"
                "</cdl:expression></url><n>1</n></app>"
            )
        )
    )
    assert set(comps) == {"/db", "/app"}
    assert comps["/app"].after == ("/db",)


DEADLOCK = system(
    "<a><p cdl:lazy='true'/><in cdl:refroot='b' cdl:ref='/q'/></a>\n"
    "<b><q cdl:lazy='true'/>\n<mid cdl:ref='/in2'/>\n<in2 cdl:refroot='a' cdl:ref='/p'/></b>"
)


def test_deadlock_between_two_siblings() -> None:
    with pytest.raises(CdlError) as info:
        plan_of(DEADLOCK)
    error = info.value
    assert error.code == "PLAN_CYCLE"
    message = error.render()
    # The whole chain, each item with its file and line.
    assert "/a after /b, because /a/in (mem.cdl:1) -> /b/q (mem.cdl:2)" in message
    assert "/b after /a, because /b/mid (mem.cdl:3) -> /b/in2 (mem.cdl:4) -> /a/p (mem.cdl:1)" in message


ANCESTOR = system(
    "<farm><token cdl:lazy='true'/>\n<worker><auth cdl:ref='../token'/></worker></farm>"
)


def test_component_waiting_for_its_ancestors_lazy_property() -> None:
    with pytest.raises(CdlError) as info:
        plan_of(ANCESTOR)
    error = info.value
    assert error.code == "PLAN_ANCESTOR_WAIT"
    assert error.line == 2
    assert error.path == "/farm/worker/auth"
    assert "/farm/worker/auth (mem.cdl:2) -> /farm/token (mem.cdl:1)" in error.render()
    assert "its ancestor /farm" in error.render()


def test_waiting_for_a_descendant_is_no_constraint() -> None:
    plan = plan_of(system("<farm><seen cdl:ref='worker/pid'/><worker><pid cdl:lazy='true'/></worker></farm>"))
    comps = by_path(plan)
    assert comps["/farm"].waits_for == ("/farm/worker/pid",)
    assert comps["/farm/worker"].after == ()


# ---------------------------------------------------------------------------
# Readings of docs/semantics.md


def test_dependency_inside_one_component_is_no_constraint() -> None:
    plan = plan_of(system("<a><p cdl:lazy='true'/><q cdl:ref='p'/></a><b><r cdl:refroot='a' cdl:ref='/q'/></b>"))
    comps = by_path(plan)
    assert comps["/a"].waits_for == ()
    assert comps["/a"].after == ()
    assert comps["/b"].after == ("/a",)
    assert comps["/b"].waits_for == ("/a/p",)


def test_lazy_reference_into_an_imported_template(write_docs) -> None:  # type: ignore[no-untyped-def]
    # The resolver never attempts the template's reference (nothing needs it
    # before the release); the plan follows it to the system's lazy property.
    main = write_docs(
        {
            "main.cdl": system(
                "<db><host cdl:lazy='true'/></db>"
                "<app><h cdl:refroot='Env' cdl:ref='/dbHost' cdl:lazy='true'/></app>",
                configuration="",
            ).replace("<cdl:configuration></cdl:configuration>", '<cdl:import location="env.cdl"/>'),
            "env.cdl": system("").replace("<cdl:system></cdl:system>", "<cdl:configuration><Env><dbHost cdl:refroot='db' cdl:ref='/host'/></Env></cdl:configuration>"),
        }
    )
    comps = by_path(cdl.load(str(main)).resolve().plan())
    assert comps["/app"].after == ("/db",)
    assert comps["/app"].waits_for == ("/db/host",)


def test_waiting_for_another_components_lazy_reference() -> None:
    # A lazy reference is released when its component is ready to deploy:
    # whatever waits for it waits for that component.
    xml = system(
        "<clock><now>t</now></clock>"
        "<app><startedAt cdl:refroot='clock' cdl:ref='/now' cdl:lazy='true'/></app>"
        "<audit><appStart cdl:refroot='app' cdl:ref='/startedAt'/></audit>"
    )
    comps = by_path(plan_of(xml))
    assert comps["/audit"].after == ("/app",)
    assert comps["/audit"].waits_for == ("/app/startedAt",)
    assert comps["/app"].after == ()


def test_waiting_for_an_ancestors_lazy_reference_is_refused() -> None:
    xml = system(
        "<clock><now>t</now></clock>"
        "<farm><at cdl:refroot='clock' cdl:ref='/now' cdl:lazy='true'/><w><x cdl:ref='../at'/></w></farm>"
    )
    with pytest.raises(CdlError) as info:
        plan_of(xml)
    assert info.value.code == "PLAN_ANCESTOR_WAIT"


def test_top_level_list_that_is_a_reference_is_its_own_owner() -> None:
    xml = system("<a><p cdl:lazy='true'/></a><b cdl:refroot='a' cdl:ref='/p'/>")
    assert table(plan_of(xml)) == {"/a": (1, ()), "/b": (2, ("/a",))}


def test_templates_take_no_part() -> None:
    xml = system(
        "<a><x>1</x></a>",
        configuration="<T><p cdl:lazy='true'/><q cdl:ref='p'/><sub><r cdl:ref='../p'/></sub></T>",
    )
    assert table(plan_of(xml)) == {"/a": (1, ())}


def test_waiting_for_a_templates_lazy_property_imposes_no_order() -> None:
    xml = system(
        "<a><host cdl:refroot='Env' cdl:ref='/zone'/></a><b><x>1</x></b>",
        configuration="<Env><zone cdl:lazy='true'/></Env>",
    )
    comps = by_path(plan_of(xml))
    assert comps["/a"].waits_for == ("/Env/zone",)
    assert comps["/a"].after == ()


def test_waves_keep_document_order() -> None:
    xml = system(
        "<z><p cdl:lazy='true'/></z><y><i cdl:refroot='z' cdl:ref='/p'/></y>"
        "<x><i cdl:refroot='z' cdl:ref='/p'/></x><w><k>1</k></w>"
    )
    assert [[c.path for c in wave] for wave in plan_of(xml).waves] == [["/z", "/w"], ["/y", "/x"]]


def test_deep_component_paths_are_written_as_pending_writes_them() -> None:
    depth = 40
    inner = "<leaf cdl:refroot='top' cdl:ref='/p'/><own cdl:lazy='true'/>"
    for i in range(depth, 0, -1):
        inner = f"<n{i}>{inner}<k>1</k></n{i}>"
    xml = system(f"<top><p cdl:lazy='true'/></top><deep>{inner}</deep>")
    resolution = load_text(xml).resolve()
    pending = [p.path for p in resolution.pending]
    plan = resolution.plan()
    deepest = [c for c in plan.components() if c.waits_for]
    assert len(deepest) == 1
    names = ["deep", *(f"n{i}" for i in range(1, depth + 1))]
    assert deepest[0].path == "/" + "/".join([*names[:8], f"...({len(names) - 16} more)...", *names[-8:]])
    assert deepest[0].supplies == (pending[-1],)
    assert pending[-1].endswith("/n40/own") and "...(" in pending[-1]
    assert len(list(plan.components())) == depth + 2


def test_plan_after_an_output_was_built() -> None:
    resolution = cdl.load(str(WEBAPP)).resolve()
    resolution.to_bytes()  # takes the working trees apart
    assert table(resolution.plan())["/WebApplication/t:Web"][1] == ("/WebApplication/t:DB",)


# ---------------------------------------------------------------------------
# Pictures


def test_dot_has_one_edge_per_dependency_and_nested_clusters() -> None:
    dot = plan_of(CHAIN + "").to_dot()
    assert len(re.findall(r" -> ", dot)) == 2
    dot = cdl.load(str(WEBAPP)).resolve().plan().to_dot()
    assert len(re.findall(r" -> ", dot)) == 1
    assert dot.count("subgraph cluster_") == 2
    assert 'label="/WebApplication/t:DB/t:hostname", lhead=cluster_2' in dot


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot is not installed")
@pytest.mark.parametrize("xml", [CHAIN, LIFTED, EXPRESSION, "webapp", "webfarm"])
def test_dot_is_valid_graphviz(xml: str) -> None:
    sample = ROOT / "samples" / xml / "system.cdl"
    plan = cdl.load(str(sample)).resolve().plan() if sample.is_file() else plan_of(xml)
    dot = plan.to_dot()
    proc = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no warning either (a clipped edge to a missing cluster warns)
    assert "<svg" in proc.stdout
    # One edge per sibling dependency.
    assert proc.stdout.count('class="edge"') == sum(len(c.after) for c in plan.components())


def test_dot_clips_edges_to_clusters_at_both_ends() -> None:
    dot = cdl.load(str(ROOT / "samples" / "webfarm" / "system.cdl")).resolve().plan().to_dot()
    edges = [line.strip() for line in dot.splitlines() if " -> " in line]
    # apps (a cluster) before balancer (a node); inside apps, schema before app1 and app2.
    assert len(edges) == 4
    assert sum("ltail=cluster_" in e for e in edges) == 1
    assert sum("lhead=cluster_" in e for e in edges) == 1


def test_mermaid_has_one_edge_per_dependency_and_nested_subgraphs() -> None:
    text = plan_of(LIFTED).to_mermaid()
    # Front matter makes room under the subgraphs' titles (README.md, "Deployment plan").
    assert text.startswith("---\nconfig:\n  flowchart:\n    subGraphTitleMargin:\n")
    assert "\n---\nflowchart LR\n" in text
    edges = [line for line in text.splitlines() if "-->" in line]
    assert edges == ['  c0 -->|"/db/host"| c1']
    assert text.count("subgraph ") == 1
    assert text.count("subgraph ") == len(re.findall(r"^\s*end$", text, re.MULTILINE))


# ---------------------------------------------------------------------------
# Command line


def test_cli_json_matches_the_library() -> None:
    proc = run_cli("plan", str(WEBAPP), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == cdl.load(str(WEBAPP)).resolve().plan().to_data()


def test_cli_set_removes_the_constraint() -> None:
    proc = run_cli("plan", str(WEBAPP), "--set", "WebApplication/t:DB/t:hostname=db.example.org")
    assert proc.returncode == 0, proc.stderr
    assert "    [1] t:Web  supplies t:hostname\n" in proc.stdout


@pytest.mark.parametrize("xml, code", [(DEADLOCK, "PLAN_CYCLE"), (ANCESTOR, "PLAN_ANCESTOR_WAIT")])
def test_cli_refuses_with_the_chain_and_nothing_on_stdout(tmp_path: Path, xml: str, code: str) -> None:
    path = tmp_path / "system.cdl"
    path.write_text(xml, encoding="utf-8")
    for fmt in ("text", "json", "dot", "mermaid"):
        proc = run_cli("plan", str(path), "--format", fmt)
        assert proc.returncode == 1
        assert proc.stdout == ""
        assert f"[{code}]" in proc.stderr
        assert f"{path}:1" in proc.stderr
        assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------------------
# Deep systems: the climbs to common ancestors add up, and one walk over all
# components answers every dependency instead (_Planner._lift_all).


def _deep_pair(levels: int, extra: str = "") -> str:
    """``a`` and ``b`` nest ``levels`` deep; level i of ``a`` waits for level i of ``b``."""
    a_inner = b_inner = ""
    for i in range(levels, 0, -1):
        steps = "/".join(f"m{j}" for j in range(1, i + 1))
        a_inner = f"<n{i}><w cdl:refroot='b' cdl:ref='/{steps}/p'/>{a_inner}</n{i}>"
        b_inner = f"<m{i}><p cdl:lazy='true'/>{b_inner}</m{i}>"
    return system(f"<a>{extra}{a_inner}</a><b>{b_inner}</b>")


def _plan_or_errors(xml: str) -> object:
    """The plan's data, or every error as rendered."""
    try:
        return plan_of(xml).to_data()
    except CdlError as exc:
        return [e.render() for e in getattr(exc, "errors", [exc])]


# Several cycles and ancestor waits at once, each with several reasons.
_TANGLED = system(
    "<a><p cdl:lazy='true'/><p2 cdl:lazy='true'/><in cdl:refroot='b' cdl:ref='/q'/><in2 cdl:refroot='b' cdl:ref='/q2'/></a>"
    "<b><q cdl:lazy='true'/><q2 cdl:lazy='true'/><in cdl:refroot='a' cdl:ref='/p2'/><in2 cdl:refroot='a' cdl:ref='/p'/></b>"
    "<farm><token cdl:lazy='true'/><worker><auth cdl:ref='../token'/><x><y cdl:ref='../../token'/></x></worker></farm>"
)


@pytest.mark.parametrize(
    "xml",
    [SERVERS, CHAIN, LIFTED, EXPRESSION, DEADLOCK, ANCESTOR, _TANGLED, _deep_pair(30), _deep_pair(4)],
    ids=["servers", "chain", "lifted", "expression", "deadlock", "ancestor", "tangled", "deep", "shallow"],
)
def test_lifting_by_climbing_is_the_walk(monkeypatch: pytest.MonkeyPatch, xml: str) -> None:
    # _Planner._lift_by_climbing (fast paths) answers as _lift_all does,
    # errors in the same order and words included.
    monkeypatch.delenv("CDL_NO_FAST_PATHS", raising=False)
    fast = _plan_or_errors(xml)
    monkeypatch.setenv("CDL_NO_FAST_PATHS", "1")
    assert _plan_or_errors(xml) == fast


# ---------------------------------------------------------------------------
# Samples: the plan is one a deployment service can follow


SAMPLES = sorted((ROOT / "samples").glob("*/system.cdl"))


def _deploy_order(plan: Plan) -> list[cdl.PlannedComponent]:
    """Components in the order the plan allows: each wave in turn, a
    component after its children's waves."""
    order: list[cdl.PlannedComponent] = []
    stack: list[tuple[cdl.PlannedComponent, bool]] = [(c, False) for wave in reversed(plan.waves) for c in reversed(wave)]
    while stack:
        comp, children_done = stack.pop()
        if children_done:
            order.append(comp)
            continue
        stack.append((comp, True))
        stack.extend((c, False) for wave in reversed(comp.waves) for c in reversed(wave))
    return order


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.parent.name)
def test_deploying_by_the_plan_resolves_everything(sample: Path) -> None:
    resolution = cdl.load(str(sample)).resolve()
    plan = resolution.plan()
    supplied = 0
    for comp in _deploy_order(plan):
        if comp.releases:
            resolution = resolution.supply(release=list(comp.releases))
        # Ready to deploy: everything it waits for has arrived, and what is
        # still pending in its subtree is exactly what it supplies.
        pending = [p.path for p in resolution.pending]
        assert not set(comp.waits_for) & set(pending), comp.path
        assert [p for p in pending if p.startswith(comp.path + "/")] == list(comp.supplies), comp.path
        if comp.supplies:
            resolution = resolution.supply({path: f"value-of-{path}" for path in comp.supplies})
            supplied += len(comp.supplies)
    assert resolution.pending == []
    assert supplied > 0


def _console_examples(readme: Path) -> list[tuple[str, str]]:
    """(command, output) of each ``$ cdl plan ...`` in a console block."""
    text = readme.read_text(encoding="utf-8")
    examples = []
    for block in re.findall(r"```console\n(.*?)```", text, re.DOTALL):
        command, _, output = block.partition("\n")
        if command.startswith("$ cdl plan "):
            examples.append((command[2:], output))
    return examples


@pytest.mark.parametrize("readme", [ROOT / "README.md", ROOT / "samples" / "webfarm" / "README.md"], ids=lambda p: str(p.relative_to(ROOT)))
def test_readme_plan_examples_are_what_cdl_prints(readme: Path) -> None:
    examples = _console_examples(readme)
    assert examples, f"{readme} shows no cdl plan example"
    for command, output in examples:
        proc = run_cli(*command.split()[1:])
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == output, command


def test_readme_json_contract_is_what_the_plan_gives() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Deployment plan") :]
    block = re.search(r"```json\n(.*?)```", section, re.DOTALL)
    assert block is not None
    assert json.loads(block.group(1)) == plan_of(SERVERS).to_data()
    # The command prints the same data.
    assert json.loads(plan_of(SERVERS).to_json()) == plan_of(SERVERS).to_data()


# ---------------------------------------------------------------------------
# Conformance cases with a plan expectation ("plan": "expected-plan.json")

CASES = ROOT / "src" / "cdl" / "conformance_cases"
PLAN_CASES = [c for c in load_suite(CASES) if c.plans]
PY = sys.executable
RESOLVE_CMD = f"{PY} -m cdl.cli resolve {{input}} {{args}}"
PLAN_CMD = f"{PY} -m cdl.cli plan {{input}} {{args}} --format json"


def test_the_suite_has_plan_cases() -> None:
    names = {c.name for c in PLAN_CASES}
    assert {"appendix-b/webapp-plan", "errors/plan-cycle", "errors/plan-ancestor-wait"} <= names
    assert any(c.expect is not None and c.plan is not None for c in PLAN_CASES)


@pytest.mark.parametrize("case", PLAN_CASES, ids=[c.name for c in PLAN_CASES])
def test_plan_cases_through_the_command_line(case) -> None:  # type: ignore[no-untyped-def]
    result = run_case(case, RESOLVE_CMD, plan_processor=PLAN_CMD)
    assert (result.outcome, result.message) == ("passed", "")


def test_plan_cases_without_a_plan_processor() -> None:
    by_name = {c.name: c for c in PLAN_CASES}
    # A plan-only case, or a PLAN_* error, cannot be judged: "exit 0" would fail them if run.
    for name in ("appendix-b/webapp-plan", "errors/plan-cycle"):
        result = run_case(by_name[name], "exit 0 {input}")
        assert result.outcome == "skipped", name
        assert "plan processor" in result.message
    # A case that also expects a resolved document is judged on that.
    assert run_case(by_name["7.5/plan-supplied-value"], RESOLVE_CMD).outcome == "passed"


def _copy_case(tmp_path: Path, name: str):  # type: ignore[no-untyped-def]
    target = tmp_path / "case"
    shutil.copytree(CASES / name, target)
    (case,) = load_suite(tmp_path)
    return target, case


def test_a_different_plan_fails_the_case(tmp_path: Path) -> None:
    target, case = _copy_case(tmp_path, "appendix-b/webapp-plan")
    expected = json.loads((target / "expected-plan.json").read_text())
    inner = expected["system"][0][0]["waves"]
    inner[0], inner[1] = inner[1], inner[0]  # Web before DB
    (target / "expected-plan.json").write_text(json.dumps(expected))
    for result in (run_case(case), run_case(case, RESOLVE_CMD, plan_processor=PLAN_CMD)):
        assert result.outcome == "failed"
        assert "the plan differs from expected-plan.json" in result.message


def test_a_plan_processor_that_finds_no_cycle_fails_the_case(tmp_path: Path) -> None:
    _, case = _copy_case(tmp_path, "errors/plan-cycle")
    result = run_case(case, RESOLVE_CMD, plan_processor=f"{PY} -c 'print(1)' {{input}}")
    assert result.outcome == "failed"
    assert "expected an error (PLAN_CYCLE)" in result.message
    result = run_case(case, RESOLVE_CMD, plan_processor=PLAN_CMD)
    assert result.outcome == "passed"


def test_a_plan_processor_that_prints_no_json_fails_the_case(tmp_path: Path) -> None:
    _, case = _copy_case(tmp_path, "7.5/plan-7.5.2.2-servers")
    result = run_case(case, RESOLVE_CMD, plan_processor=f"{PY} -c 'print(\"[\")' {{input}}")
    assert result.outcome == "failed"
    assert "plan processor output is not JSON" in result.message


@pytest.mark.parametrize("value", [3, "", None])
def test_malformed_plan_key(tmp_path: Path, value: object) -> None:
    target, _ = _copy_case(tmp_path, "7.5/plan-7.5.2.2-servers")
    data = json.loads((target / "case.json").read_text())
    data["plan"] = value
    if value is None:
        del data["plan"]  # neither expect, plan nor error
    (target / "case.json").write_text(json.dumps(data))
    (case,) = load_suite(tmp_path)
    assert case.problem is not None
    assert run_case(case).outcome == "failed"


def test_cli_conformance_plan_processor(tmp_path: Path) -> None:
    for case in PLAN_CASES:  # the plan cases only: one process per case is slow
        shutil.copytree(case.directory, tmp_path / case.name)
    proc = run_cli("conformance", str(tmp_path), "--processor", RESOLVE_CMD, "--plan-processor", PLAN_CMD)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert proc.stdout.splitlines()[-1] == f"{len(PLAN_CASES)} passed, 0 failed"
    bad = run_cli("conformance", str(tmp_path), "--plan-processor", PLAN_CMD)
    assert bad.returncode == 2


@pytest.mark.parametrize(
    "xml",
    [SERVERS, CHAIN, LIFTED, EXPRESSION, system("<café><ñ cdl:lazy='true'/><x><y>1</y></x></café><b><r cdl:refroot='café' cdl:ref='/ñ'/></b>")],
)
def test_json_text_is_the_data_as_json_writes_it(xml: str) -> None:
    # to_json writes the text straight from the plan; it must be exactly
    # json.dumps of to_data (one line, non-ASCII kept).
    plan = plan_of(xml)
    assert plan.to_json() == json.dumps(plan.to_data(), ensure_ascii=False) + "\n"


def test_every_impossible_order_is_reported_together() -> None:
    xml = system(
        "<a><p cdl:lazy='true'/><in cdl:refroot='b' cdl:ref='/q'/></a>"
        "<b><q cdl:lazy='true'/><in cdl:refroot='a' cdl:ref='/p'/></b>"
        "<farm><token cdl:lazy='true'/><worker><auth cdl:ref='../token'/></worker></farm>"
    )
    with pytest.raises(CdlError) as info:
        plan_of(xml)
    assert sorted(e.code for e in info.value.errors) == ["PLAN_ANCESTOR_WAIT", "PLAN_CYCLE"]


def test_released_lazy_references_are_no_longer_released() -> None:
    plan = plan_of(LAZY_REFS, release=("report/dbVersion",))
    assert by_path(plan)["/report"].releases == ()
    assert by_path(plan)["/app"].releases == ("/app/dbHost",)
    # Releasing one whose target still waits is refused (7.5.3.1), as for resolve.
    with pytest.raises(CdlError) as info:
        plan_of(LAZY_REFS, release=("app/dbHost",))
    assert info.value.code == "LAZY_UNRESOLVED"


def test_wait_through_a_template_of_the_main_document() -> None:
    # a's reference reads the template T, whose own reference waits for b's
    # lazy property: the chain passes through the template, a depends on b.
    xml = system(
        "<a><x cdl:refroot='T' cdl:ref='/y'/></a><b><p cdl:lazy='true'/></b>",
        configuration="<T><y cdl:refroot='b' cdl:ref='/p'/></T>",
    )
    comps = by_path(plan_of(xml))
    assert comps["/a"].after == ("/b",)
    assert comps["/a"].waits_for == ("/b/p",)
    assert "/T" not in comps


def test_sample_readme_mermaid_is_what_cdl_prints() -> None:
    text = (ROOT / "samples" / "webfarm" / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```mermaid\n(.*?)```", text, re.DOTALL)
    assert block is not None
    assert block.group(1) == cdl.load(str(ROOT / "samples" / "webfarm" / "system.cdl")).resolve().plan().to_mermaid()


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.parent.name)
def test_each_picture_has_one_edge_per_dependency(sample: Path) -> None:
    plan = cdl.load(str(sample)).resolve().plan()
    dependencies = sum(len(c.after) for c in plan.components())
    assert dependencies > 0
    assert plan.to_dot().count(" -> ") == dependencies
    mermaid = plan.to_mermaid()
    assert mermaid.count(" -->|") == dependencies
    # Subgraphs are closed, and every component is drawn once.
    assert mermaid.count("subgraph ") == len(re.findall(r"^\s*end$", mermaid, re.MULTILINE))
    assert len(re.findall(r"^\s*(?:subgraph )?c\d+\[", mermaid, re.MULTILINE)) == len(list(plan.components()))
