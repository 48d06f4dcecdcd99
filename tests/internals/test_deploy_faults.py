"""Deployment sessions under faults injected at internal seams (issue 30, point 4):
an append that fails (``Journal.append``), then the rebuild that makes the
state again from the events failing too (``_event``, how it reads each event
it replays). tests/test_deploy_faults.py has the faults users can cause.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import cdl
from cdl.deployment.journal import Journal
from cdl.engine import deployment as engine
from test_deploy import farm_copy
from test_deploy_faults import snapshot, supplies


@pytest.fixture
def farm(tmp_path: Path) -> Path:
    return farm_copy(tmp_path)


def test_a_rebuild_that_fails_half_way_leaves_nothing_half_done(farm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An append fails (the disk is full), so the deployment is made again
    from its events; that fails too, while replaying them. The deployment
    is then refused whole (no half state answers or takes events), and its
    journal, which holds every acknowledged event, is free to open again."""
    journal = farm.parent / "farm.journal"
    deployment = cdl.load(farm).deploy(journal=journal)
    deployment.deployed("/db", supplies(deployment, "/db"))
    written = journal.read_bytes()

    def full_disk(self: Journal, event: Any) -> dict[str, Any]:
        raise cdl.CdlError(f"cannot write {self.path}: no space left on device", code="IO_ERROR")

    def failing(entry: Any) -> dict[str, Any]:
        raise MemoryError("while replaying")

    monkeypatch.setattr(Journal, "append", full_disk)
    monkeypatch.setattr(engine, "event_of", failing)  # how the rebuild reads each event it replays
    with pytest.raises(MemoryError):
        deployment.deployed("/monitor", supplies(deployment, "/monitor"))
    monkeypatch.undo()
    for call in (deployment.ready, deployment.status, lambda: deployment.supply({"db/hostname": "x"}), lambda: deployment.deployed("/monitor")):
        with pytest.raises(cdl.CdlError) as refused:
            call()
        assert refused.value.code == "DEPLOYMENT_BROKEN" and "open it again" in refused.value.message
    assert journal.read_bytes() == written
    with cdl.load(farm).deploy(journal=journal) as again:
        assert again.ready() == ["/apps/schema", "/monitor"]
    deployment.close()


def test_a_rebuild_is_put_in_place_only_whole(farm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rebuild that succeeds replaces the state at once: the deployment
    answers as before the failed event, and takes the next one."""
    journal = farm.parent / "farm.journal"
    with cdl.load(farm).deploy(journal=journal) as deployment:
        deployment.deployed("/db", supplies(deployment, "/db"))
        deployment.failed("/monitor", "no quota")
        before = snapshot(deployment)

        def full_disk(self: Journal, event: Any) -> dict[str, Any]:
            raise cdl.CdlError(f"cannot write {self.path}: no space left on device", code="IO_ERROR")

        with monkeypatch.context() as patch:
            patch.setattr(Journal, "append", full_disk)
            with pytest.raises(cdl.CdlError):
                deployment.retry("/monitor")
        assert snapshot(deployment) == before
        assert deployment.retry("/monitor") == ["/monitor"]


def test_an_update_whose_append_fails_leaves_the_running_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An update takes the running version's trees apart to compare the two
    versions; when its journal line cannot be written (the disk is full), the
    running version is made again from its events: it answers as before the
    update, its journal unchanged, and the update can be made again."""
    from test_deploy_update import FARM, deploy_all

    journal = tmp_path / "farm.journal"
    old, new = cdl.load(FARM / "system.cdl"), cdl.load(FARM / "v2" / "system.cdl")
    with old.deploy(journal=journal) as deployment:
        deploy_all(deployment)
        before = (snapshot(deployment), deployment.resolution().to_bytes(), journal.read_bytes())

        def full_disk(self: Journal, event: Any) -> dict[str, Any]:
            raise cdl.CdlError(f"cannot write {self.path}: no space left on device", code="IO_ERROR")

        with monkeypatch.context() as patch:
            patch.setattr(Journal, "append", full_disk)
            with pytest.raises(cdl.CdlError):
                deployment.update(new)
        assert (snapshot(deployment), deployment.resolution().to_bytes(), journal.read_bytes()) == before
        deployment.update(new)
        assert "changed" in {c.state for c in deployment.status().components}
    with new.deploy(journal=journal, read_only=True) as reopened:
        assert snapshot(reopened) == snapshot(deployment)


def test_an_update_that_fails_comparing_leaves_the_running_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An update that fails once the running version's trees are taken apart
    (here in the comparison of the two versions: memory) makes the running
    version again: it takes the events that follow as one that never tried
    the update does, and the update afterwards."""
    from cdl.engine import deployment_state
    from test_deploy_update import FARM, deploy_all, values_for

    old, new = cdl.load(FARM / "system.cdl"), cdl.load(FARM / "v2" / "system.cdl")
    deployment, untouched = old.deploy(), old.deploy()
    for each in (deployment, untouched):
        each.deployed("/db", *values_for(each, "/db"))

    def no_memory(*args: Any) -> None:
        raise MemoryError("while comparing")

    with monkeypatch.context() as patch:
        patch.setattr(deployment_state, "diff_systems", no_memory)
        with pytest.raises(MemoryError):
            deployment.update(new)
    for each in (deployment, untouched):
        deploy_all(each)
    assert (snapshot(deployment), deployment.resolution().to_bytes()) == (snapshot(untouched), untouched.resolution().to_bytes())
    deployment.update(new)
    assert "changed" in {c.state for c in deployment.status().components}
