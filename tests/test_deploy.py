"""Deployment sessions (issue 24): Document.deploy and cdl.Deployment, through the public API."""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import cdl
from conftest import append_record, journal_records

WEBFARM = Path(__file__).resolve().parent.parent / "samples" / "webfarm" / "system.cdl"


@pytest.fixture
def farm() -> cdl.Document:
    return cdl.load(WEBFARM)


def states(deployment: cdl.Deployment) -> dict[str, str]:
    return {c.path: c.state for c in deployment.status().components}


def test_webfarm_whole_deployment(farm: cdl.Document) -> None:
    deployment = farm.deploy()
    assert deployment.ready() == ["/db", "/monitor"]
    assert deployment.deployed("/db", {"db/hostname": "db.internal"}) == ["/apps/schema"]
    assert deployment.deployed("monitor", {"monitor/hostname": "mon", "monitor/dashboardUrl": "http://mon"}) == []
    assert deployment.deployed("/apps/schema", {"apps/schema/schemaVersion": "7"}) == ["/apps/app1", "/apps/app2"]
    deployment.deployed("/apps/app1", {"apps/app1/hostname": "a1", "apps/app1/port": "81"})
    # The balancer waits for the servers' values, not for /apps itself: once
    # they are supplied, the plan made again has no edge from /apps.
    assert deployment.deployed("/apps/app2", {"apps/app2/hostname": "a2", "apps/app2/port": "82"}) == ["/apps", "/balancer"]
    assert deployment.deployed("/apps") == []
    deployment.deployed("/balancer", {"balancer/hostname": "lb", "balancer/publicAddress": "1.2.3.4"}, release=["balancer/certificate"])
    assert set(states(deployment).values()) == {"deployed"}
    assert deployment.ready() == []
    assert len(deployment.rounds) == 6
    assert deployment.resolution().to_bytes() == farm.resolve(rounds=deployment.rounds).to_bytes()
    assert not deployment.resolution().system_pending


def test_not_ready_is_refused_and_changes_nothing(farm: cdl.Document) -> None:
    deployment = farm.deploy()
    before = deployment.status().to_data()
    with pytest.raises(cdl.CdlError) as caught:
        deployment.deployed("/balancer", {"db/hostname": "x"})
    assert caught.value.code == "NOT_READY"
    assert "/apps/app1/hostname (from /apps/app1)" in caught.value.message
    assert deployment.status().to_data() == before
    assert deployment.rounds == ()


def test_set_conflict_names_the_event(farm: cdl.Document) -> None:
    deployment = farm.deploy()
    deployment.supply({"monitor/hostname": "m1"})
    deployment.deployed("/db", {"db/hostname": "db1"})
    with pytest.raises(cdl.CdlError) as caught:
        deployment.supply({"/db/hostname": "db2"})
    assert caught.value.code == "SET_CONFLICT"
    assert "event 2" in caught.value.message
    # The same value again changes nothing.
    assert deployment.supply({"/db/hostname": "db1"}) == []
    assert len(deployment.rounds) == 2


def test_unknown_component_suggests(farm: cdl.Document) -> None:
    deployment = farm.deploy()
    with pytest.raises(cdl.CdlError) as caught:
        deployment.deployed("/dbb")
    assert caught.value.code == "COMPONENT_NOT_FOUND"
    assert "did you mean /db?" in caught.value.message


def test_failed_blocks_dependants_and_retry_takes_them_back(farm: cdl.Document) -> None:
    deployment = farm.deploy()
    deployment.deployed("/db", {"db/hostname": "db1"})
    assert deployment.failed("/apps/schema", "image pull") == ["/apps", "/apps/app1", "/apps/app2", "/balancer"]
    status = deployment.status("/apps/app1").components[0]
    assert status.state == "blocked"
    assert status.upstream == (("/apps/schema", "image pull"),)
    assert deployment.ready() == ["/monitor"]
    with pytest.raises(cdl.CdlError) as caught:
        deployment.retry("/monitor")
    assert caught.value.code == "NOT_FAILED"
    with pytest.raises(cdl.CdlError, match=r"it is failed: reason: image pull; retry it first"):
        deployment.deployed("/apps/schema")
    assert deployment.retry("/apps/schema") == ["/apps/schema"]
    assert states(deployment)["/apps/app1"] == "waiting"


# -- refusals leave everything as it was ------------------------------------------------


def snapshot(deployment: cdl.Deployment) -> tuple[object, ...]:
    return (deployment.rounds, deployment.status().to_data(), deployment.resolution().to_bytes(), deployment.ready())


def test_a_bad_value_refuses_the_whole_event(farm: cdl.Document) -> None:
    """One good value and one naming nothing: neither is applied, the
    component stays ready."""
    deployment = farm.deploy()
    before = snapshot(deployment)
    with pytest.raises(cdl.CdlError) as caught:
        deployment.deployed("/db", {"db/hostname": "db1", "db/nothing": "x"})
    assert caught.value.code == "SET_NOT_FOUND"
    assert snapshot(deployment) == before
    with pytest.raises(cdl.CdlError) as caught:
        deployment.supply({"db/image": "other"})  # not lazy
    assert caught.value.code == "SET_NOT_LAZY"
    with pytest.raises(cdl.CdlError) as caught:
        deployment.supply({"db/hostname": 5})  # type: ignore[dict-item]
    assert caught.value.code == "BAD_SET"
    for bad in ({1: "x"}, {"db/hostname": None}):
        with pytest.raises(cdl.CdlError) as caught:
            deployment.supply(bad)  # type: ignore[arg-type]
        assert caught.value.code == "BAD_SET"
    for release in ([3], "db/hostname"):
        with pytest.raises(cdl.CdlError) as caught:
            deployment.supply(release=release)  # type: ignore[arg-type]
        assert caught.value.code == "BAD_SET"
    with pytest.raises(cdl.CdlError) as caught:
        deployment.supply(release=["db/hostname"])  # a lazy property is not released
    assert caught.value.code == "SET_NOT_LAZY"
    assert snapshot(deployment) == before
    assert deployment.deployed("/db", {"db/hostname": "db1"}) == ["/apps/schema"]


LAZY_CHAIN = b"""<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0">
  <cdl:system>
    <a><v cdl:lazy="true"/><w cdl:lazy="true" cdl:use="required"/></a>
    <b><r cdl:refroot="a" cdl:ref="/v" cdl:lazy="true"/><k>1</k></b>
    <c><x cdl:refroot="b" cdl:ref="/r"/></c>
  </cdl:system>
</cdl:cdl>"""


def test_refusals_of_what_resolving_would_find_come_first() -> None:
    """A released reference that waits for a value still missing
    (LAZY_UNRESOLVED) and a required property left empty (REQUIRED_MISSING)
    are refused before the round changes anything (issue 30, point 6;
    tests/internals/test_deploy.py checks that nothing is made again)."""
    doc = cdl.load(LAZY_CHAIN, name="chain.cdl")
    deployment = doc.deploy()
    assert deployment.ready() == ["/a"]
    before = snapshot(deployment)
    with pytest.raises(cdl.CdlError) as caught:
        deployment.supply(release=["b/r"])
    assert caught.value.code == "LAZY_UNRESOLVED"
    assert snapshot(deployment) == before
    with pytest.raises(cdl.CdlError) as caught:
        deployment.deployed("/a", {"a/v": "1", "a/w": ""})
    assert caught.value.code == "REQUIRED_MISSING"
    assert snapshot(deployment) == before
    assert deployment.deployed("/a", {"a/v": "1", "a/w": "2"}) == ["/b"]
    assert deployment.status("c").components[0].waits_for == (("/b/r", "/b"),)
    assert deployment.deployed("/b", release=["b/r"]) == ["/c"]
    assert deployment.resolution().to_bytes() == doc.resolve(rounds=deployment.rounds).to_bytes()
    assert deployment.configuration("c") == {"system": {"c": {"x": "1"}}}


def test_a_round_naming_one_reference_twice_is_refused_before_it_changes_anything() -> None:
    """A value and a release of one lazy reference in one event (or two
    releases, or two values by two paths) is SET_CONFLICT from the one
    check of a round (issue 30, point 6): before, the check let it through
    and applying it failed half way."""
    doc = cdl.load(LAZY_CHAIN, name="chain.cdl")
    deployment = doc.deploy()
    deployment.deployed("/a", {"a/v": "1", "a/w": "2"})
    before = snapshot(deployment)
    for values, release in (({"b/r": "x"}, ["b/r"]), ({}, ["b/r", "/b/r"]), ({"b/r": "x", "b/r[1]": "y"}, [])):
        with pytest.raises(cdl.CdlError) as caught:
            deployment.deployed("/b", values, release)
        assert caught.value.code == "SET_CONFLICT", caught.value
        assert "is named by" in caught.value.message or "takes one value" in caught.value.message
        assert snapshot(deployment) == before
    # Resolving alone says the same: a round names each property once.
    with pytest.raises(cdl.CdlError) as caught:
        doc.resolve({"a/v": "1", "b/r": "x"}, release=["b/r"])
    assert caught.value.code == "SET_CONFLICT"
    assert deployment.deployed("/b", release=["b/r"]) == ["/c"]


# -- values owed: no silent stall (issue 30, point 2) ----------------------------------------


def test_a_component_deployed_without_its_values_is_refused_naming_them(farm: cdl.Document) -> None:
    deployment = farm.deploy()
    before = snapshot(deployment)
    with pytest.raises(cdl.CdlError) as caught:
        deployment.deployed("/monitor", {"monitor/hostname": "mon"})
    error = caught.value
    assert error.code == "VALUES_MISSING"
    assert "/monitor/dashboardUrl" in error.message and "/monitor/hostname" not in error.message.partition(";")[0]
    assert "--set monitor/dashboardUrl=VALUE" in error.message and "--later monitor/dashboardUrl" in error.message
    assert "supply" in error.message
    assert snapshot(deployment) == before
    # A lazy reference it releases counts too.
    for path, values in reports_until(deployment, "/balancer").items():
        deployment.deployed(path, values)
    with pytest.raises(cdl.CdlError) as caught:
        deployment.deployed("/balancer", {"balancer/hostname": "lb", "balancer/publicAddress": "1.2.3.4"})
    assert caught.value.code == "VALUES_MISSING"
    assert "--release balancer/certificate" in caught.value.message


def reports_until(deployment: cdl.Deployment, last: str) -> dict[str, dict[str, str]]:
    """Every component's values, in an order that makes ``last`` ready (it not among them)."""
    order = ["/db", "/monitor", "/apps/schema", "/apps/app1", "/apps/app2", "/apps"]
    return {path: dict.fromkeys(deployment.status(path).components[0].supplies, "v") for path in order if path != last}


def test_values_said_to_come_later_are_shown_until_supplied(farm: cdl.Document, tmp_path: Path) -> None:
    journal = tmp_path / "farm.journal"
    with farm.deploy(journal=journal) as deployment:
        assert deployment.deployed("/db", later=["db/hostname"]) == []  # nothing that waits for it is ready
        db = deployment.status("/db").components[0]
        assert (db.state, db.later, db.why()) == ("deployed", ("/db/hostname",), "later: /db/hostname")
        assert "deployed /db  (later: /db/hostname)" in deployment.status().to_text()
        assert deployment.status().to_data()["components"][0]["later"] == ["/db/hostname"]
    assert '"later":["db/hostname"]' in journal.read_text().replace(" ", "")
    with farm.deploy(journal=journal) as deployment:  # the journal keeps it
        assert deployment.status("/db").components[0].later == ("/db/hostname",)
        assert deployment.supply({"db/hostname": "db1"}) == ["/apps/schema"]
        assert deployment.status("/db").components[0].later == ()


def test_a_component_gives_only_its_own_values(farm: cdl.Document) -> None:
    """Another component's lazy value, or one no component owns, goes through supply (NOT_OWNER)."""
    deployment = farm.deploy()
    before = snapshot(deployment)
    mine = {"monitor/hostname": "m", "monitor/dashboardUrl": "d"}
    for values, later in (({**mine, "db/hostname": "x"}, []), (mine, ["db/hostname"])):
        with pytest.raises(cdl.CdlError) as caught:
            deployment.deployed("/monitor", values, later=later)
        assert caught.value.code == "NOT_OWNER"
        assert "/db/hostname" in caught.value.message and "of /db, not of /monitor" in caught.value.message
        assert "supply" in caught.value.message
        assert snapshot(deployment) == before
    with pytest.raises(cdl.CdlError) as caught:  # a release of another's lazy reference
        deployment.deployed("/monitor", mine, release=["balancer/certificate"])
    assert caught.value.code == "NOT_OWNER"
    assert "release 'balancer/certificate'" in caught.value.message and "of /balancer, not of /monitor" in caught.value.message
    assert snapshot(deployment) == before
    assert deployment.supply({"db/hostname": "x"}) == ["/apps/schema"]  # from elsewhere: accepted


def test_a_templates_lazy_value_is_no_components() -> None:
    doc = cdl.load(
        f"""<cdl:cdl xmlns:cdl="{cdl.CDL_NS}"><cdl:configuration><T><clock cdl:lazy="true"/></T></cdl:configuration>
        <cdl:system><a><k>1</k></a><b><t cdl:refroot="T" cdl:ref="/clock"/><k>1</k></b></cdl:system></cdl:cdl>""".encode(),
        name="t.cdl",
    )
    deployment = doc.deploy()
    assert deployment.ready() == ["/a"]
    with pytest.raises(cdl.CdlError) as caught:
        deployment.deployed("/a", {"T/clock": "1"})
    assert caught.value.code == "NOT_OWNER"
    assert "no component's lazy value" in caught.value.message
    assert deployment.supply({"T/clock": "1"}) == ["/b"]


def test_state_refusals(farm: cdl.Document) -> None:
    deployment = farm.deploy()
    deployment.deployed("/db", {"db/hostname": "db1"})
    before = snapshot(deployment)
    for call, code in (
        (lambda: deployment.deployed("/db"), "NOT_READY"),  # deployed already
        (lambda: deployment.failed("/balancer", "x"), "NOT_READY"),
        (lambda: deployment.retry("/db"), "NOT_FAILED"),
        (lambda: deployment.deployed(""), "COMPONENT_NOT_FOUND"),
        (lambda: deployment.status("/apps/nothing"), "COMPONENT_NOT_FOUND"),
    ):
        with pytest.raises(cdl.CdlError) as caught:
            call()
        assert caught.value.code == code
    assert snapshot(deployment) == before
    with pytest.raises(cdl.CdlError, match="it is not ready, it is deployed"):
        deployment.deployed("/db")


# -- failures -----------------------------------------------------------------------------


def test_a_value_supplied_for_a_failed_component_unblocks_its_dependants(farm: cdl.Document) -> None:
    deployment = farm.deploy()
    assert deployment.failed("/db", "disk full") == ["/apps", "/apps/schema", "/apps/app1", "/apps/app2", "/balancer"]
    assert states(deployment)["/apps/schema"] == "blocked"
    # An operator gives the database's hostname by hand: what waited only
    # for that value is no longer blocked.
    assert deployment.supply({"db/hostname": "db.manual"}) == ["/apps/schema"]
    assert states(deployment)["/apps/schema"] == "ready"
    assert states(deployment)["/apps/app1"] == "waiting"
    assert states(deployment)["/db"] == "failed"
    assert deployment.retry("/db") == ["/db"]


# -- reading ------------------------------------------------------------------------------


def test_status_shapes(farm: cdl.Document, tmp_path: Path) -> None:
    deployment = farm.deploy()
    deployment.deployed("/db", {"db/hostname": "db1"})
    deployment.failed("/monitor", "no quota")
    data = deployment.status().to_data()
    assert data["counts"] == {"waiting": 4, "ready": 1, "deployed": 1, "failed": 1, "blocked": 0, "changed": 0, "removing": 0, "removed": 0}
    app1 = next(c for c in data["components"] if c["path"] == "/apps/app1")
    assert app1 == {
        "path": "/apps/app1",
        "state": "waiting",
        "supplies": ["/apps/app1/hostname", "/apps/app1/port"],
        "releases": [],
        "waits_for": [{"value": "/apps/schema/schemaVersion", "supplier": "/apps/schema"}],
        "children": [],
        "after": ["/apps/schema"],
        "upstream": [],
        "reason": None,
        "later": [],
        "changes": [],
        "removal_waits": [],
    }
    text = deployment.status().to_text()
    assert "failed   /monitor  (reason: no quota)" in text
    assert "ready    /apps/schema\n" in text
    dot = deployment.status().to_dot()
    # The palette of README "Deployment plan" (cdl/_plan_render.STATES).
    assert re.search(r'"/monitor[^\n]*fillcolor="#f5a3a3"', dot)  # the failed monitor
    if shutil.which("dot"):
        (tmp_path / "status.dot").write_text(dot)
        rendered = subprocess.run(["dot", "-Tsvg", str(tmp_path / "status.dot")], capture_output=True, check=False)
        assert rendered.returncode == 0, rendered.stderr
    mermaid = deployment.status().to_mermaid()
    assert "flowchart LR\n" in mermaid and "fill:#b9e6b0" in mermaid  # the deployed db
    assert repr(deployment) == f"<cdl.Deployment {farm.url!r} (4 waiting, 1 ready, 1 deployed, 1 failed)>"
    assert deployment.status("apps/app1").components[0].path == "/apps/app1"


def test_configuration_is_the_resolution_cut_down(farm: cdl.Document) -> None:
    deployment = farm.deploy()
    deployment.deployed("/db", {"db/hostname": "db1"})
    resolution = deployment.resolution()
    for path in ("/db", "/apps/app1", "/apps", "/balancer"):
        assert deployment.configuration(path) == resolution.to_data(system_only=True, select=[path])
    xml = deployment.configuration("/apps/schema", format="xml")
    assert b"<schema>" in xml and b"db1" in xml
    with pytest.raises(ValueError):
        deployment.configuration("/db", format="yaml")


def test_resolution_is_a_copy(farm: cdl.Document) -> None:
    """An event after resolution() leaves that Resolution as it was."""
    deployment = farm.deploy()
    earlier = deployment.resolution()
    first = earlier.to_bytes()
    deployment.deployed("/db", {"db/hostname": "db1"})
    assert earlier.to_bytes() == first == farm.resolve().to_bytes()
    assert [p.path for p in earlier.pending] == [p.path for p in farm.resolve().pending]
    assert b"db1" in deployment.resolution().to_bytes()


SHARED_NAMES = b"""<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0">
  <cdl:system>
    <env><var><k>A</k><v cdl:lazy="true"/></var><var><k>B</k></var></env>
  </cdl:system>
</cdl:cdl>"""


def test_components_sharing_a_name_are_numbered() -> None:
    deployment = cdl.load(SHARED_NAMES, name="shared.cdl").deploy()
    assert deployment.ready() == ["/env/var[1]", "/env/var[2]"]
    assert deployment.deployed("env/var[2]") == []
    with pytest.raises(cdl.CdlError) as caught:
        deployment.deployed("/env/var")
    assert caught.value.code == "COMPONENT_NOT_FOUND"
    assert "did you mean /env/var[" in caught.value.message
    assert deployment.deployed("/env/var[1]", {"env/var/v": "x"}) == ["/env"]


def test_no_system_means_no_components() -> None:
    doc = cdl.load(b'<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"><cdl:configuration><a><v cdl:lazy="true"/></a></cdl:configuration></cdl:cdl>', name="lib.cdl")
    with doc.deploy() as deployment:
        assert deployment.ready() == []
        assert deployment.status().components == ()
        assert deployment.supply({"a/v": "1"}) == []
        assert deployment.resolution().to_bytes() == doc.resolve({"a/v": "1"}).to_bytes()


# -- threads ------------------------------------------------------------------------------


def test_threads_deploying_one_wave(farm: cdl.Document) -> None:
    """Each thread reports one component of the apps' second wave; the end
    is the serial run's, whatever the interleaving."""
    def wave(deployment: cdl.Deployment) -> None:
        deployment.deployed("/db", {"db/hostname": "db1"})
        deployment.deployed("/apps/schema", {"apps/schema/schemaVersion": "7"})

    serial = farm.deploy()
    wave(serial)
    for path in ("/apps/app1", "/apps/app2", "/monitor"):
        serial.deployed(path, values_of(serial, path))
    for _ in range(5):
        parallel = farm.deploy()
        wave(parallel)
        barrier = threading.Barrier(3)
        became: list[str] = []
        errors: list[BaseException] = []
        threads = [
            threading.Thread(target=report, args=(parallel, p, barrier, became, errors)) for p in ("/apps/app1", "/apps/app2", "/monitor")
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert sorted(became) == ["/apps", "/balancer"]
        assert parallel.status().to_data() == serial.status().to_data()
        assert parallel.resolution().to_bytes() == serial.resolution().to_bytes()


def report(deployment: cdl.Deployment, path: str, barrier: threading.Barrier, became: list[str], errors: list[BaseException]) -> None:
    """One thread's event: all start together."""
    try:
        barrier.wait()
        became.extend(deployment.deployed(path, values_of(deployment, path)))
    except BaseException as exc:  # shown by the test's assert
        errors.append(exc)


def values_of(deployment: cdl.Deployment, path: str) -> dict[str, str]:
    return {p: p.rsplit("/", 1)[-1] + "-value" for p in deployment.status(path).components[0].supplies}


class SlowValues(Mapping[str, str]):
    """Values whose reading waits until the test lets it go on: an event
    holding them is caught in the middle."""

    def __init__(self, values: dict[str, str], entered: threading.Event, go: threading.Event) -> None:
        self._values, self._entered, self._go = values, entered, go

    def __getitem__(self, key: str) -> str:
        return self._values[key]

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[str]:
        self._entered.set()
        self._go.wait(10)
        return iter(self._values)


def test_events_are_applied_one_at_a_time(farm: cdl.Document) -> None:
    """While one thread's event is being applied, another thread's waits."""
    deployment = farm.deploy()
    entered, go = threading.Event(), threading.Event()
    done: list[str] = []
    first = threading.Thread(target=lambda: done.extend(["db", *deployment.deployed("/db", SlowValues({"db/hostname": "h"}, entered, go))]))
    second = threading.Thread(target=lambda: done.extend(["monitor", *deployment.deployed("/monitor", later=["monitor/hostname", "monitor/dashboardUrl"])]))
    first.start()
    assert entered.wait(10)
    second.start()
    second.join(0.3)
    assert second.is_alive() and done == []  # waiting for the first event
    go.set()
    first.join(10)
    second.join(10)
    assert done == ["db", "/apps/schema", "monitor"]


# -- with a journal -------------------------------------------------------------------------


def farm_copy(tmp_path: Path) -> Path:
    for name in ("system.cdl", "templates.cdl"):
        (tmp_path / name).write_bytes((WEBFARM.parent / name).read_bytes())
    return tmp_path / "system.cdl"


def test_every_refusal_leaves_the_journal_and_the_state_as_they_were(tmp_path: Path) -> None:
    """Issue 30, point 7: each kind of refused event, with a journal, among
    same-named siblings and an open failure: the journal's bytes, the
    status, the rounds and the resolution are unchanged, and the deployment
    goes on."""
    main = tmp_path / "farm.cdl"
    main.write_text(SAME_NAMED)
    journal = tmp_path / "farm.journal"
    with cdl.load(main).deploy(journal=journal) as deployment:
        deployment.deployed("/apps/web[1]", {"apps/web[1]/host": "a"})
        deployment.failed("/apps/web[2]", "down")
        written, before = journal.read_bytes(), snapshot(deployment)
        refusals = {
            "NOT_READY": lambda: deployment.deployed("/lb"),
            "NOT_FAILED": lambda: deployment.retry("/apps/web[1]"),
            "COMPONENT_NOT_FOUND": lambda: deployment.failed("/apps/web", "x"),
            "SET_NOT_FOUND": lambda: deployment.supply({"apps/web[3]/host": "c"}),
            "SET_NOT_LAZY": lambda: deployment.supply({"apps/web[1]/port": "81"}),
            "BAD_SET": lambda: deployment.supply({"apps/web[0]/host": "c"}),
            "SET_CONFLICT": lambda: deployment.supply({"apps/web[1]/host": "b"}),
            "LAZY_UNRESOLVED": lambda: deployment.supply(release=["lb/cert"]),
        }
        for code, call in refusals.items():
            with pytest.raises(cdl.CdlError) as caught:
                call()
            assert caught.value.code == code, caught.value
            assert journal.read_bytes() == written and snapshot(deployment) == before, code
        deployment.retry("/apps/web[2]")
        written, before = journal.read_bytes(), snapshot(deployment)
        for code, call in {
            "VALUES_MISSING": lambda: deployment.deployed("/apps/web[2]"),
            "NOT_OWNER": lambda: deployment.deployed("/apps/web[2]", {"apps/web[2]/host": "b", "apps/web[1]/host": "a"}),
            "SET_CONFLICT": lambda: deployment.deployed("/apps/web[2]", {"apps/web[2]/host": "b", "apps/web/host": "c"}),
        }.items():
            with pytest.raises(cdl.CdlError) as caught:
                call()
            assert caught.value.code == code, caught.value
            assert journal.read_bytes() == written and snapshot(deployment) == before, code
        assert deployment.deployed("/apps/web[2]", {"apps/web[2]/host": "b"}) == ["/apps", "/lb"]


#: Refusals only resolving finds (docs/semantics.md, "Checked before anything
# changes"): b/r resolves to a/v, which may be given empty, though b/r is
# required; b/s selects nothing; c/t copies more text than a small max_text.
LATE = f"""<cdl:cdl xmlns:cdl="{cdl.CDL_NS}">
  <cdl:system>
    <a><v cdl:lazy="true"/></a>
    <b><r cdl:lazy="true" cdl:use="required" cdl:refroot="a" cdl:ref="/v"/><s cdl:lazy="true" cdl:refroot="a" cdl:ref="/nothing"/></b>
    <big><x><y>1</y><y>2</y><y>3</y><y>4</y></x></big>
    <c><t cdl:lazy="true" cdl:refroot="big" cdl:ref="/x"/></c>
  </cdl:system>
</cdl:cdl>
"""


def test_a_refusal_only_resolving_finds_leaves_the_journal_and_the_state_as_they_were(tmp_path: Path) -> None:
    """A released reference that selects nothing, a required property a
    resolved reference leaves empty, a limit: found once the round is
    applied, then the state is made again from the events (issue 30, points 4
    and 7): the journal's bytes and the state are as before, and the
    deployment goes on."""
    main = tmp_path / "late.cdl"
    main.write_text(LATE)
    journal = tmp_path / "late.journal"
    with cdl.load(main, limits=cdl.Limits(max_text=3)).deploy(journal=journal) as deployment:
        assert deployment.deployed("/a", {"a/v": ""}) == ["/b"]
        written, before = journal.read_bytes(), snapshot(deployment)
        for code, call in (
            ("REF_NOT_FOUND", lambda: deployment.deployed("/b", release=["b/r", "b/s"])),
            ("REQUIRED_MISSING", lambda: deployment.deployed("/b", release=["b/r"], later=["b/s"])),
            ("REF_NOT_FOUND", lambda: deployment.supply(release=["b/s"])),
            ("LIMIT_EXCEEDED", lambda: deployment.deployed("/c", release=["c/t"])),
        ):
            with pytest.raises(cdl.CdlError) as caught:
                call()
            assert caught.value.code == code, caught.value
            assert journal.read_bytes() == written and snapshot(deployment) == before, code
        assert deployment.deployed("/big/x") == ["/big"]
    with cdl.load(main, limits=cdl.Limits(max_text=3)).deploy(journal=journal, read_only=True) as replayed:
        assert replayed.ready() == ["/b", "/big", "/c"]


SAME_NAMED = f"""<cdl:cdl xmlns:cdl="{cdl.CDL_NS}">
  <cdl:system>
    <apps>
      <web><host cdl:lazy="true"/><port>80</port></web>
      <web><host cdl:lazy="true"/></web>
    </apps>
    <lb><backends cdl:refroot="apps" cdl:ref="/web/host"/><cert cdl:lazy="true" cdl:refroot="apps" cdl:ref="/web/host"/></lb>
  </cdl:system>
</cdl:cdl>
"""


def test_journal_resumes_where_it_stopped(tmp_path: Path) -> None:
    main = farm_copy(tmp_path)
    journal = tmp_path / "deploy.journal"
    doc = cdl.load(main)
    with doc.deploy(journal=journal) as deployment:
        deployment.deployed("/db", {"db/hostname": "db1"})
        deployment.failed("/monitor", "no quota")
        deployment.supply({"db/hostname": "db1"})  # changes nothing: not recorded
        deployment.retry("/monitor")
        deployment.deployed("/apps/schema", {"apps/schema/schemaVersion": "7"})
        before = snapshot(deployment)
    lines = journal.read_text().splitlines()
    events = journal_records(journal)[1:]
    assert [(e["seq"], e["event"]) for e in events] == [(1, "deployed"), (2, "failed"), (3, "retry"), (4, "deployed")]
    assert events[0]["path"] == "/db" and events[0]["values"] == {"db/hostname": "db1"} and events[0]["release"] == []
    with pytest.raises(cdl.CdlError) as caught:
        deployment.supply({"monitor/hostname": "m"})
    assert caught.value.code == "DEPLOYMENT_CLOSED"
    with cdl.load(main).deploy(journal=journal) as resumed:
        assert snapshot(resumed) == before
        with pytest.raises(cdl.CdlError) as conflict:
            resumed.supply({"/db/hostname": "db2"})
        assert conflict.value.code == "SET_CONFLICT" and "event 1" in conflict.value.message
        assert journal.read_text().splitlines() == lines  # a refusal writes nothing
        assert resumed.deployed("/apps/app1", values_of(resumed, "/apps/app1")) == []
    assert len(journal.read_text().splitlines()) == len(lines) + 1


def test_journal_refusals(tmp_path: Path) -> None:
    main = farm_copy(tmp_path)
    journal = tmp_path / "deploy.journal"
    deployment = cdl.load(main).deploy(journal=journal)
    deployment.deployed("/db", {"db/hostname": "db1"})
    with pytest.raises(cdl.CdlError) as locked:
        cdl.load(main).deploy(journal=journal)
    assert locked.value.code == "JOURNAL_LOCKED"
    deployment.close()
    main.write_text(main.read_text().replace("farm:Monitor", "farm:Monitor "))
    with pytest.raises(cdl.CdlError) as changed:
        cdl.load(main).deploy(journal=journal)
    assert changed.value.code == "JOURNAL_MISMATCH"


def test_a_journal_event_that_does_not_apply_is_corrupt(tmp_path: Path) -> None:
    main = farm_copy(tmp_path)
    journal = tmp_path / "deploy.journal"
    with cdl.load(main).deploy(journal=journal) as deployment:
        deployment.deployed("/db", {"db/hostname": "db1"})
    record = {"seq": 2, "time": "2026-01-01T00:00:00.000000Z", "event": "deployed", "path": "/balancer", "values": {}, "release": []}
    append_record(journal, record)  # with a valid checksum: only replaying finds it wrong
    with pytest.raises(cdl.CdlError) as caught:
        cdl.load(main).deploy(journal=journal)
    assert caught.value.code == "JOURNAL_CORRUPT"
    assert "event 2" in caught.value.message and "NOT_READY" in caught.value.message
    assert (caught.value.url, caught.value.line) == (str(journal), 3)  # the header, event 1, then event 2
    # The journal was let go: it can be opened (and mended) again.
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join(lines[:-1]) + "\n")
    with cdl.load(main).deploy(journal=journal) as resumed:
        assert resumed.ready() == ["/apps/schema", "/monitor"]


def test_deep_components_are_named_as_the_plan_shortens_them() -> None:
    """Past 16 steps a path is shortened in the middle; components whose
    shortened paths coincide get #k, in document order, in the plan too."""
    above = "".join(f"<c{i}>" for i in range(1, 10))
    below = [f"d{i}" for i in range(12, 32)]
    branches = "".join("".join(f"<{n}>" for n in [b, *below]) + "<leaf>x</leaf>" + "".join(f"</{n}>" for n in reversed([b, *below])) for b in "pq")
    system = f"<r>{above}{branches}{''.join(f'</c{i}>' for i in reversed(range(1, 10)))}</r>"
    doc = cdl.load(f'<cdl:cdl xmlns:cdl="{cdl.CDL_NS}"><cdl:system>{system}</cdl:system></cdl:cdl>'.encode(), name="deep.cdl")
    deployment = doc.deploy()
    paths = [c.path for c in deployment.status().components]
    assert len(set(paths)) == len(paths)
    first, second = deployment.ready()
    assert first == "/r/c1/c2/c3/c4/c5/c6/c7/...(15 more).../d24/d25/d26/d27/d28/d29/d30/d31#1"
    assert second == first.replace("#1", "#2")
    assert {first, second} <= {c.path for c in deployment.plan.components()}
    assert deployment.deployed(second) == ["/r/c1/c2/c3/c4/c5/c6/c7/...(14 more).../d23/d24/d25/d26/d27/d28/d29/d30#2"]
    # A deployment that never wrote the names finds them too.
    fresh = doc.deploy()
    fresh.deployed(first)
    assert [fresh.status(p).components[0].state for p in (first, second)] == ["deployed", "ready"]
    assert fresh.deployed("/r/c1/c2/c3/c4/c5/c6/c7/c8/c9/q/d12/d13/d14/d15/d16/d17/d18/d19/d20/d21/d22/d23/d24/d25/d26/d27/d28/d29/d30/d31") == [
        "/r/c1/c2/c3/c4/c5/c6/c7/...(14 more).../d23/d24/d25/d26/d27/d28/d29/d30#2"
    ]
    assert fresh.status(second).components[0].state == "deployed"


def test_a_shortened_path_no_component_has_is_refused_and_the_real_ones_still_found() -> None:
    """Asking for a shortened path not handed out writes them all once; a miss
    neither hides those nor makes the next lookup walk the system again."""
    above = "".join(f"<c{i}>" for i in range(1, 10))
    below = "".join(f"<d{i}>" for i in range(12, 32)) + "<leaf>x</leaf>" + "".join(f"</d{i}>" for i in reversed(range(12, 32)))
    system = f"<r>{above}<p>{below}</p>{''.join(f'</c{i}>' for i in reversed(range(1, 10)))}</r>"
    doc = cdl.load(f'<cdl:cdl xmlns:cdl="{cdl.CDL_NS}"><cdl:system>{system}</cdl:system></cdl:cdl>'.encode(), name="deep.cdl")
    (deepest,) = doc.deploy().ready()
    assert "...(" in deepest
    fresh = doc.deploy()
    for _ in range(2):
        with pytest.raises(cdl.CdlError) as caught:
            fresh.deployed(deepest.replace("d31", "d99"))
        assert caught.value.code == "COMPONENT_NOT_FOUND"
    (parent,) = fresh.deployed(deepest)
    assert parent.endswith("/d29/d30") and fresh.status(parent).components[0].state == "ready"
    assert fresh.status(deepest).components[0].state == "deployed"


def test_a_system_without_an_order_cannot_be_deployed() -> None:
    cycle = b"""<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"><cdl:system>
      <a><v cdl:lazy="true"/><w cdl:refroot="b" cdl:ref="/v"/></a>
      <b><v cdl:lazy="true"/><w cdl:refroot="a" cdl:ref="/v"/></b>
    </cdl:system></cdl:cdl>"""
    with pytest.raises(cdl.CdlError) as caught:
        cdl.load(cycle, name="cycle.cdl").deploy()
    assert caught.value.code == "PLAN_CYCLE"


def test_structure_a_released_reference_copies_in_is_no_new_component() -> None:
    """The components are the plan's when the deployment opens: a lazy
    reference released to a list with children gives its holder that
    structure as configuration, not components of its own."""
    text = b"""<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0">
      <cdl:configuration><Site><tls><cert>c</cert><key>k</key></tls></Site></cdl:configuration>
      <cdl:system><web><port>80</port><tls cdl:refroot="Site" cdl:ref="/tls" cdl:lazy="true"/></web></cdl:system>
    </cdl:cdl>"""
    doc = cdl.load(text, name="tls.cdl")
    deployment = doc.deploy()
    assert deployment.deployed("/web", release=["web/tls"]) == []
    assert [c.path for c in deployment.status().components] == ["/web"]
    assert deployment.configuration("/web") == {"system": {"web": {"port": "80", "tls": {"cert": "c", "key": "k"}}}}
    again = doc.resolve(rounds=deployment.rounds)
    assert [c.path for c in again.plan().components()] == ["/web", "/web/tls"]
    assert deployment.resolution().to_bytes() == again.to_bytes()


