"""Plan.teardown() and ``cdl plan --teardown`` (issue 32, point 3): the
reverse order, each component after everything that waits on it, checked
against the deployment plan on the samples, the conformance cases with a plan
and mutated documents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import cdl
from cdl.conformance import load_suite
from conftest import load_text, system
from strategies import CASES, Mutant, mutants

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted(ROOT.glob("samples/*/system.cdl"))
PLAN_CASES = [c for c in load_suite(CASES) if c.plans and c.error is None]
EXAMPLES = int(os.environ.get("CDL_TEARDOWN_EXAMPLES", "80"))


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cdl", *args], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)


def _sequence(plan: cdl.Plan) -> list[cdl.PlannedComponent]:
    """One order the plan allows, one component at a time: each wave in turn;
    for a teardown a component before its children (it waits on them), for
    a deployment after them."""
    order: list[cdl.PlannedComponent] = []
    stack: list[tuple[cdl.PlannedComponent, bool]] = [(c, False) for wave in reversed(plan.waves) for c in reversed(wave)]
    while stack:
        comp, expanded = stack.pop()
        if expanded:
            order.append(comp)
            continue
        if plan.is_teardown:
            order.append(comp)
        else:
            stack.append((comp, True))
        stack.extend((c, False) for wave in reversed(comp.waves) for c in reversed(wave))
    return order


def check_teardown(plan: cdl.Plan) -> None:
    """The teardown of ``plan`` takes each component down after everything
    that waits on it: its parent, and every component one of whose
    properties waits for a lazy value it supplies or releases."""
    down = plan.teardown()
    assert down.is_teardown and not plan.is_teardown
    assert down.teardown().to_data() == plan.to_data()
    up = list(plan.components())
    shared = {p for p, n in Counter(c.path for c in up).items() if n > 1}  # same-named siblings: one path
    by_path = {c.path: c for c in up}
    down_by_path = {c.path: c for c in down.components()}
    assert sorted(by_path) == sorted(down_by_path)
    for path, comp in by_path.items():
        other = down_by_path[path]
        assert (other.supplies, other.releases, other.waits_for) == (comp.supplies, comp.releases, comp.waits_for)
        if path in shared:
            continue
        # The siblings it comes after are exactly those that came after it.
        assert set(other.after) == {c.path for c in up if path in c.after and c.path not in shared}
        for later in other.after:
            assert other.because[later] == by_path[later].because[path]
            assert other.wave > down_by_path[later].wave
        # The fewest waves: a component not in wave 1 follows one of the wave before.
        if other.wave > 1:
            assert any(down_by_path[b].wave == other.wave - 1 for b in other.after), path
    position = {c.path: i for i, c in enumerate(_sequence(down))}
    owner = {value: c.path for c in up for value in (*c.supplies, *c.releases)}
    for comp in up:
        parent = comp.path.rsplit("/", 1)[0]
        if parent:
            assert position[parent] < position[comp.path], comp.path
        for value in comp.waits_for:
            supplier = owner.get(value)
            if supplier is None or comp.path.startswith(supplier + "/") or supplier.startswith(comp.path + "/"):
                continue  # a template's value, or one inside its own family line: no order
            if {comp.path, supplier} & shared:
                continue
            assert position[comp.path] < position[supplier], (comp.path, value, supplier)


# ---------------------------------------------------------------------------
# Examples


def test_webfarm_teardown() -> None:
    plan = cdl.load(str(ROOT / "samples" / "webfarm" / "system.cdl")).resolve().plan()
    down = plan.teardown()
    assert repr(down) == "<cdl.Plan teardown (3 waves, 7 components)>"
    assert [[c.path for c in wave] for wave in down.waves] == [["/balancer", "/monitor"], ["/apps"], ["/db"]]
    apps = down.waves[1][0]
    assert [[c.path for c in wave] for wave in apps.waves] == [["/apps/app1", "/apps/app2"], ["/apps/schema"]]
    assert apps.after == ("/balancer",)
    assert apps.because == {"/balancer": ("/apps/app1/hostname", "/apps/app1/port", "/apps/app2/hostname", "/apps/app2/port")}
    assert apps.waves[1][0].after == ("/apps/app1", "/apps/app2")
    assert down.waves[2][0].after == ("/apps",)
    check_teardown(plan)


def test_a_component_nothing_waits_on_goes_in_the_first_wave() -> None:
    # c waits on a; b on nothing: b need not wait for c to go.
    xml = system("<a><p cdl:lazy='true'/></a><b><q>1</q></b><c><r cdl:refroot='a' cdl:ref='/p'/></c>")
    plan = load_text(xml).resolve().plan()
    assert [[c.path for c in wave] for wave in plan.waves] == [["/a", "/b"], ["/c"]]
    assert [[c.path for c in wave] for wave in plan.teardown().waves] == [["/b", "/c"], ["/a"]]


def test_a_system_without_components_tears_down_in_no_wave() -> None:
    plan = load_text('<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"/>').resolve().plan()
    assert plan.teardown().to_data() == {"system": []}
    assert plan.teardown().to_text() == ""


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.parent.name)
def test_teardown_of_each_sample(sample: Path) -> None:
    check_teardown(cdl.load(str(sample)).resolve().plan())


@pytest.mark.parametrize("case", PLAN_CASES, ids=[c.name for c in PLAN_CASES])
def test_teardown_of_each_plan_case(case) -> None:  # type: ignore[no-untyped-def]
    check_teardown(cdl.load(str(case.main_path)).resolve(rounds=[r.as_dict() for r in case.rounds]).plan())


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutants(byte_ops=False))
def test_teardown_of_mutated_documents(mutant: Mutant) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        main = mutant.write(Path(tmp))
        try:
            plan = cdl.load(str(main)).resolve(rounds=mutant.rounds).plan()
        except cdl.CdlError:
            return
        check_teardown(plan)


# ---------------------------------------------------------------------------
# The command line


@pytest.mark.parametrize("fmt", ["text", "json", "dot", "mermaid"])
def test_cli_teardown_in_every_format(fmt: str) -> None:
    sample = ROOT / "samples" / "webfarm" / "system.cdl"
    proc = run_cli("plan", str(sample), "--teardown", "--format", fmt)
    assert proc.returncode == 0, proc.stderr
    down = cdl.load(str(sample)).resolve().plan().teardown()
    expected = {"text": down.to_text, "json": down.to_json, "dot": down.to_dot, "mermaid": down.to_mermaid}[fmt]()
    assert proc.stdout == expected
    if fmt == "json":
        assert json.loads(proc.stdout)["system"][0][0]["path"] == "/balancer"
    # Not the deployment order.
    assert proc.stdout != run_cli("plan", str(sample), "--format", fmt).stdout
