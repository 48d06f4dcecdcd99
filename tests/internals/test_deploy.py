"""Deployment sessions seen from inside: an event whose journal append fails
is undone (the fault injected at ``Journal.append``), an event attempts
only the items that wait on what it gives, counted at the resolver, no
refusal makes the deployment again, what each failure blocks is kept
exactly as a recomputation finds it, and an event's work is counted
(tests/test_deploy.py has the sessions through the public API)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

import cdl
from synthetic import generate
from test_deploy import farm_copy, snapshot

from .inside import counted_attempts, counted_calls, machine_of


def test_a_failed_append_undoes_the_event(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cdl.deployment.journal import Journal

    main = farm_copy(tmp_path)
    journal = tmp_path / "deploy.journal"
    deployment = cdl.load(main).deploy(journal=journal)
    deployment.deployed("/monitor", {"monitor/hostname": "m", "monitor/dashboardUrl": "d"})
    before = snapshot(deployment)
    written = journal.read_bytes()

    def full_disk(self: Journal, event: Mapping[str, object]) -> dict[str, object]:
        raise cdl.CdlError(f"cannot write {self.path}: disk full", code="IO_ERROR")

    monkeypatch.setattr(Journal, "append", full_disk)
    with pytest.raises(cdl.CdlError) as caught:
        deployment.deployed("/db", {"db/hostname": "db1"})
    assert caught.value.code == "IO_ERROR"
    assert snapshot(deployment) == before
    assert journal.read_bytes() == written
    monkeypatch.undo()
    assert deployment.deployed("/db", {"db/hostname": "db1"}) == ["/apps/schema"]
    deployment.close()


def deploy_all_counting(tmp_path: Path, n: int) -> int:
    """Attempts at items over a whole deployment of the synthetic system of
    ``n`` components, after its first event (what no component supplies)."""
    doc = cdl.load(generate(n, tmp_path / str(n), "base")[1])
    deployment = doc.deploy()
    outside = {v: "given" for c in deployment.status().components for v, supplier in c.waits_for if supplier is None}
    queue = deployment.ready() + deployment.supply(outside)
    with counted_attempts() as attempts:
        for path in queue:
            status = deployment.status(path).components[0]
            queue.extend(deployment.deployed(path, dict.fromkeys(status.supplies, "v"), status.releases))
    return attempts[0]


def test_an_event_attempts_only_what_waits_on_it(tmp_path: Path) -> None:
    """Point 2 of issue 24, untimed: the items attempted again over a whole
    deployment grow with the system, not with the system times its events
    (reopening every pending item after each value would)."""
    small, large = deploy_all_counting(tmp_path, 100), deploy_all_counting(tmp_path, 1000)
    assert 0 < small and large < 15 * small  # about 10x; reopening every pending item gives about 100x


# -- issue 30, point 6: cost tracks the event ---------------------------------------------------


def test_no_refusal_makes_the_deployment_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every refusal is found by the checks that run before an event changes
    anything (check_round, then the deployment's own): none of them rebuilds
    the state from the events."""
    from cdl.engine.deployment import Deployment
    from test_deploy import LAZY_CHAIN

    def no_rebuild(self: Deployment, log: object) -> None:
        raise AssertionError("a refusal made the deployment again")

    main = farm_copy(tmp_path)
    deployment = cdl.load(main).deploy()
    chain = cdl.load(LAZY_CHAIN, name="chain.cdl").deploy()
    monkeypatch.setattr(Deployment, "_rebuild", no_rebuild)
    refusals = [
        (lambda: deployment.deployed("/balancer"), "NOT_READY"),
        (lambda: deployment.deployed("/db", {"db/hostname": "a", "db/hostname[1]": "b"}), "SET_CONFLICT"),
        (lambda: deployment.deployed("/db", {"db/nothing": "a"}), "SET_NOT_FOUND"),
        (lambda: deployment.deployed("/db", {"db/image": "a"}), "SET_NOT_LAZY"),
        (lambda: deployment.deployed("/db"), "VALUES_MISSING"),
        (lambda: deployment.deployed("/db", {"db/hostname": "a", "monitor/hostname": "m"}), "NOT_OWNER"),
        (lambda: deployment.supply(release=["balancer/certificate", "balancer/certificate[1]"]), "SET_CONFLICT"),
        (lambda: deployment.retry("/db"), "NOT_FAILED"),
        (lambda: deployment.failed("/nothing", "x"), "COMPONENT_NOT_FOUND"),
        (lambda: chain.supply(release=["b/r"]), "LAZY_UNRESOLVED"),
        (lambda: chain.deployed("/a", {"a/v": "1", "a/w": " "}), "REQUIRED_MISSING"),
        (lambda: chain.deployed("/a", {"a/v": "1", "a/w": "2", "b/r": "3"}), "NOT_OWNER"),
    ]
    for call, code in refusals:
        with pytest.raises(cdl.CdlError) as caught:
            call()
        assert caught.value.code == code, (code, caught.value)
    assert chain.deployed("/a", {"a/v": "1", "a/w": "2"}) == ["/b"]


def recomputed_blocks(deployment: cdl.Deployment) -> dict[int, set[int]]:
    """What each failure blocks, found again from nothing: what reaches it
    through the components that wait for others (the rule of
    docs/semantics.md), not through another failure."""
    machine = machine_of(deployment)
    found: dict[int, set[int]] = {}
    for failed in machine.failed:
        seen: set[int] = set()
        stack = [failed]
        while stack:
            for comp in machine._dependants(stack.pop()):
                if comp not in seen and comp not in machine.failed:
                    seen.add(comp)
                    stack.append(comp)
        found[failed] = seen
    return found


def tangle(n: int, seed: int) -> bytes:
    """``n`` lists, each with a lazy value, a child component with one of its
    own, and references to the values of one to three earlier lists (or their
    children): many components wait for values of others, in chains and fans."""
    import random

    rng = random.Random(seed)
    lists = []
    for i in range(n):
        refs = "".join(
            f"<w{j} cdl:refroot='c{k}' cdl:ref='{rng.choice(['/v', '/sub/u'])}'/>"
            for j, k in enumerate(rng.sample(range(i), min(i, rng.randint(1, 3))))
        )
        lists.append(f"<c{i}><v cdl:lazy='true'/>{refs}<sub><u cdl:lazy='true'/></sub></c{i}>")
    return f"<cdl:cdl xmlns:cdl='{cdl.CDL_NS}'><cdl:system>{''.join(lists)}</cdl:system></cdl:cdl>".encode()


@pytest.mark.parametrize("system", ["synthetic", "tangle"])
def test_what_each_failure_blocks_is_kept_as_a_recomputation_finds_it(tmp_path: Path, system: str) -> None:
    """Random failures, retries, values from elsewhere and deployments over
    the synthetic system, and over a tangle of components waiting for each
    other's values (where values owed by failed components are common):
    after each event, each failure's kept blocked set and each blocked
    component's failures are what a walk from every failure finds again."""
    import random

    rng = random.Random(30)
    doc = cdl.load(generate(60, tmp_path, "base")[1]) if system == "synthetic" else cdl.load(tangle(60, 30), name="tangle.cdl")
    deployment = doc.deploy()
    given = 0
    machine = machine_of(deployment)
    components = [c.path for c in deployment.status().components]
    for _ in range(400):
        status = {c.path: c for c in deployment.status().components}
        ready = [p for p, c in status.items() if c.state == "ready"]
        failed = [p for p, c in status.items() if c.state == "failed"]
        owed = [(v, s) for c in status.values() if c.state in ("blocked", "waiting") for v, s in c.waits_for if s in failed]
        choice = rng.random()
        if owed and choice < 0.15:
            value, _ = rng.choice(owed)
            deployment.supply({value.lstrip("/"): "given"})
            given += 1
        elif failed and choice < 0.35:
            deployment.retry(rng.choice(failed))
        elif ready and choice < 0.7:
            deployment.failed(rng.choice(ready), "no")
        elif ready:
            path = rng.choice(ready)
            c = status[path]
            try:
                deployment.deployed(path, dict.fromkeys(c.supplies, "v"), c.releases)
            except cdl.CdlError as error:  # a value given from elsewhere already, say
                assert error.code in ("SET_CONFLICT", "SET_NOT_LAZY", "LAZY_UNRESOLVED"), error
        kept = {f: set(blocked) for f, blocked in machine.blocks.items()}
        assert kept == recomputed_blocks(deployment)
        by_component: dict[int, set[int]] = {}
        for f, blocked in kept.items():
            for comp in blocked:
                by_component.setdefault(comp, set()).add(f)
        assert machine.blocked == by_component
    assert len(components) > 100
    assert system == "synthetic" or given > 10


def test_an_event_costs_what_it_touches_not_the_open_failures(tmp_path: Path) -> None:
    """With many failures open in chains (each blocks what waits for it),
    failing, retrying and giving a value owed by one chain walk that chain
    only: counted in the walks' steps (Machine._dependants), whatever the
    number of other failures (before, each event walked from every one)."""
    from cdl.deployment.machine import Machine

    def chains(n: int) -> str:
        # n chains of 5: each link waits for the value of the one before.
        lists = []
        for c in range(n):
            lists.append(f"<c{c}_0><v cdl:lazy='true'/></c{c}_0>")
            lists += [f"<c{c}_{k}><w cdl:refroot='c{c}_{k - 1}' cdl:ref='/v'/><v cdl:lazy='true'/></c{c}_{k}>" for k in range(1, 5)]
        return f"<cdl:cdl xmlns:cdl='{cdl.CDL_NS}'><cdl:system>{''.join(lists)}</cdl:system></cdl:cdl>"

    def steps(n: int) -> list[int]:
        deployment = cdl.load(chains(n).encode(), name="chains.cdl").deploy()
        for c in range(1, n):
            deployment.failed(f"/c{c}_0", "down")
        counted = []
        for event in (
            lambda: deployment.failed("/c0_0", "down"),
            lambda: deployment.supply({"c0_0/v": "up"}),
            lambda: deployment.retry("/c0_0"),
            lambda: deployment.retry("/c1_0"),
        ):
            with counted_calls(Machine, "_dependants") as calls:
                event()
            counted.append(calls[0])
        return counted

    few, many = steps(10), steps(400)
    assert few == many
    assert max(many) <= 10


def test_a_path_among_thousands_of_same_named_siblings_is_found_by_index() -> None:
    """8,000 same-named components: the first ready() ranks the family once
    (one table of its children), and an event names one by a lookup."""
    from cdl.model import naming

    web = "".join("<web><h cdl:lazy='true'/></web>" for _ in range(8000))
    doc = cdl.load(f"<cdl:cdl xmlns:cdl='{cdl.CDL_NS}'><cdl:system><farm>{web}</farm></cdl:system></cdl:cdl>".encode(), name="w.cdl")
    deployment = doc.deploy()
    with counted_calls(naming, "children_by_name") as tables:
        ready = deployment.ready()
        assert deployment.deployed("farm/web[7999]", {"farm/web[7999]/h": "x"}) == []
        status = deployment.status("/farm/web[8000]").components[0]
    assert ready[:2] == ["/farm/web[1]", "/farm/web[2]"] and len(ready) == 8000
    assert status.supplies == ("/farm/web[8000]/h",)
    assert tables[0] <= 1
    # Events naming 100 other siblings: each step is written once, the
    # family indexed once (not a pass over the 8,000 per lookup).
    from cdl.planning.paths import ComponentPaths

    with counted_calls(ComponentPaths, "step") as steps:
        for k in range(1, 101):
            deployment.deployed(f"/farm/web[{k}]", {f"farm/web[{k}]/h": "x"})
    assert steps[0] <= 8000 + 200


def test_a_journal_of_the_first_version_with_values_left_out_is_read(tmp_path: Path) -> None:
    """A ``deployed`` event that journals of version 1 recorded without all of
    its component's values (nothing asked for them then) is replayed: the
    values it left out count as said to come later, and status shows them."""
    import json

    from cdl.deployment.journal import journal_header

    from .inside import sources

    main = farm_copy(tmp_path)
    doc = cdl.load(main)
    header = {**journal_header([(d.url, d.data) for d in sources(doc)], []), "version": 1}
    event = {"seq": 1, "time": "2026-01-01T00:00:00.000000Z", "event": "deployed", "path": "/db", "values": {}, "release": []}
    journal = tmp_path / "v1.journal"
    compact = {"separators": (",", ":")}  # as version 1 was written: a header begins '{"format":"cdl-deployment-journal",'
    journal.write_text(json.dumps(header, **compact) + "\n" + json.dumps(event, **compact) + "\n")
    with doc.deploy(journal=journal) as deployment:
        db = deployment.status("/db").components[0]
        assert (db.state, db.later) == ("deployed", ("/db/hostname",))
        assert deployment.supply({"db/hostname": "db1"}) == ["/apps/schema"]


def test_an_event_copies_nothing_as_long_as_the_deployment() -> None:
    """An event late in a long deployment allocates what an early one does:
    nothing it does grows with the events before it (the log was copied at
    each event, for a rebuild that seldom comes: 212,000 events at 20k made
    the whole deployment quadratic). Counted in bytes allocated, untimed."""
    import tracemalloc

    n = 2000
    body = "".join(f"<c{i}><v cdl:lazy='true'/></c{i}>" for i in range(n))
    doc = cdl.load(f"<cdl:cdl xmlns:cdl='{cdl.CDL_NS}'><cdl:system>{body}</cdl:system></cdl:cdl>".encode(), name="flat.cdl")
    deployment = doc.deploy()
    peaks = {}
    for i in range(n):
        measured = i in (100, n - 1)
        if measured:
            tracemalloc.start()
        deployment.deployed(f"/c{i}", {f"c{i}/v": "x"})
        if measured:
            peaks[i] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    assert peaks[n - 1] < peaks[100] + 4000  # the log of 2,000 events, copied: 16,000 bytes more


def test_an_update_compares_only_the_lists_whose_values_do_not_carry_to_the_same_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """An update compares the lists written differently and those whose
    deploy-time values or released references do not carry over to the
    same place of the new version (then those that read them): values and
    a release carried each to its property's pair at the same path leave
    their lists out, whichever order they were given in."""
    import cdl.engine.deployment_state as state_module

    def system(edited: str) -> cdl.Document:
        lists = (
            "<A><p cdl:lazy='true'/></A><B><q cdl:lazy='true'/></B><C><r cdl:refroot='E' cdl:ref='w' cdl:lazy='true'/></C>"
            f"<D><v>{edited}</v></D><E><w>1</w></E>"
        )
        return cdl.load(f"<cdl:cdl xmlns:cdl='{cdl.CDL_NS}'><cdl:system>{lists}</cdl:system></cdl:cdl>".encode(), name="s.cdl")

    deployment = system("1").deploy()
    for path in ("/B", "/C", "/A", "/D", "/E"):
        comp = deployment.status(path).components[0]
        deployment.deployed(path, dict.fromkeys(comp.supplies, "x"), list(comp.releases))
    assert [(dict(r.set), r.release) for r in deployment.rounds] == [({"/B/q": "x"}, ()), ({}, ("/C/r",)), ({"/A/p": "x"}, ())]
    reached: list[set[str]] = []
    real = state_module.reaching
    monkeypatch.setattr(state_module, "reaching", lambda changed, reads: reached.append(set(changed)) or real(changed, reads))
    deployment.update(system("2"))
    assert reached == [{"D"}]
    assert {c.path: c.state for c in deployment.status().components} == {"/A": "deployed", "/B": "deployed", "/C": "deployed", "/D": "changed", "/E": "deployed"}
