"""The planner's walks (``planning.plan``): deep dependencies lifted by one walk,
a deep ancestor wait found, and a chain of references sharing one set of lazy
values (tests/test_plan.py has plans through ``Resolution.plan``)."""

from __future__ import annotations

import pytest

from cdl import CdlError
from conftest import load_text, system
from test_plan import _deep_pair, by_path, plan_of, table

from . import inside


def test_deep_dependencies_are_lifted_by_one_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    from cdl.planning import plan as _plan

    calls = []
    original = _plan._Planner._lift_all
    monkeypatch.setattr(_plan._Planner, "_lift_all", lambda self, *a: calls.append(1) or original(self, *a))
    plan = plan_of(_deep_pair(30))
    assert calls == [1]
    rows = table(plan)
    assert rows["/a"] == (2, ("/b",))
    assert rows["/b"] == (1, ())
    assert all(after == () for path, (_, after) in rows.items() if path not in ("/a",))
    assert by_path(plan)["/a/n1/n2"].waits_for == ("/b/m1/m2/p",)


def test_deep_ancestor_wait_is_found_by_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    from cdl.planning import plan as _plan

    calls = []
    original = _plan._Planner._lift_all
    monkeypatch.setattr(_plan._Planner, "_lift_all", lambda self, *a: calls.append(1) or original(self, *a))
    xml = _deep_pair(30, "<top cdl:lazy='true'/>").replace("<n30>", "<n30><up cdl:refroot='a' cdl:ref='/top'/>")
    with pytest.raises(CdlError) as info:
        plan_of(xml)
    assert calls == [1]
    assert info.value.code == "PLAN_ANCESTOR_WAIT"
    assert "/a/n1/n2/n3/n4/n5/n6/n7/...(16 more).../n24/n25/n26/n27/n28/n29/n30/up" in info.value.render()


def test_a_chain_of_references_shares_one_set_of_lazy_values() -> None:
    # What keeps the closure linear: an item that waits for one thing holds
    # that thing's set, not a copy (docs/semantics.md, Deployment plan, Cost).
    from cdl.planning import plan as _plan

    lists = "<c0><v cdl:lazy='true'/></c0>" + "".join(f"<c{i}><v cdl:refroot='c{i - 1}' cdl:ref='/v'/></c{i}>" for i in range(1, 200))
    resolution = load_text(system(lists)).resolve()
    planner = _plan._Planner(*inside.working_state(resolution))
    plan = planner.run()
    assert len(planner.reach) == 200
    assert len({id(s) for s in planner.reach.values()}) == 1
    assert all(c.after == ("/c0",) for c in plan.components() if c.path != "/c0")
