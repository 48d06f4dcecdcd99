"""Deployment sessions seen from inside: an event whose journal append fails
is undone (the fault injected at ``Journal.append``), and an event attempts
only the items that wait on what it gives, counted at the resolver
(tests/test_deploy.py has the sessions through the public API)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

import cdl
from synthetic import generate
from test_deploy import farm_copy, snapshot

from .inside import counted_attempts


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
