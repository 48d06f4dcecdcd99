"""Deployment sessions (issue 24): Document.deploy and cdl.Deployment, through the public API."""

from __future__ import annotations

from pathlib import Path

import pytest

import cdl

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
    assert deployment.retry("/apps/schema") == ["/apps/schema"]
    assert states(deployment)["/apps/app1"] == "waiting"
