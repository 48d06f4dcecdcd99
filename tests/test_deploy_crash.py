"""A deployment killed mid-way resumes from its journal (issue 24, acceptance).

A real Python process drives samples/webfarm with a journal, one event per
token it reads from stdin, and prints each component once ``deployed``
returned (acknowledged). The test lets it run some events, SIGKILLs it, and
resumes in this process: every acknowledged event must be there, and the
deployment finished from there must end as an uninterrupted run does.

Run as a script (``python tests/test_deploy_crash.py FILE JOURNAL``) this
file is that driver.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

import cdl

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL")

ROOT = Path(__file__).resolve().parent.parent
FARM = ROOT / "samples" / "webfarm" / "system.cdl"
TOTAL = 7  # the farm's components


def drive(deployment: cdl.Deployment, turns: Iterable[object]) -> None:
    """One event per turn: deploy the first ready component, supplying a value
    for each lazy property it supplies and releasing what it releases; print
    its path once the event is acknowledged."""
    planned = {c.path: c for c in deployment.plan.components()}
    for _turn in turns:
        ready = deployment.ready()
        if not ready:
            return
        component = planned[ready[0]]
        values = {path: f"{path.rsplit('/', 1)[-1]}-of-{component.path}" for path in component.supplies}
        deployment.deployed(component.path, values, component.releases)
        print(component.path, flush=True)


def test_a_killed_deployment_resumes_with_every_acknowledged_event(tmp_path: Path) -> None:
    uninterrupted = cdl.load(FARM).deploy()
    drive(uninterrupted, range(TOTAL + 1))
    assert uninterrupted.ready() == [] and len(uninterrupted.rounds) > 0
    expected = uninterrupted.resolution().to_bytes()
    for granted in (1, 3, 5):
        journal = tmp_path / f"farm-{granted}.journal"
        acknowledged = _killed_after(journal, granted)
        assert granted - 1 <= len(acknowledged) <= granted  # the last event may be cut by the kill
        with cdl.load(FARM).deploy(journal=journal) as resumed:
            states = {c.path: c.state for c in resumed.status().components}
            deployed = [path for path in states if states[path] == "deployed"]
            assert set(acknowledged) <= set(deployed), (acknowledged, deployed)
            assert len(deployed) <= granted  # no event beyond the granted ones
            drive(resumed, range(TOTAL + 1))
            assert resumed.ready() == [] and {c.state for c in resumed.status().components} == {"deployed"}
            assert resumed.resolution().to_bytes() == expected
            assert resumed.rounds == uninterrupted.rounds
        with cdl.load(FARM).deploy(journal=journal) as replayed:  # and what was finished is there too
            assert replayed.resolution().to_bytes() == expected


def _killed_after(journal: Path, granted: int) -> list[str]:
    """Run the driver on ``journal``, let it make ``granted`` events, SIGKILL
    it as soon as it acknowledges all but the last; what it acknowledged."""
    child = subprocess.Popen(
        [sys.executable, __file__, str(FARM), str(journal)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        child.stdin.write("go\n" * granted)
        child.stdin.flush()
        acknowledged = [child.stdout.readline().strip() for _ in range(granted - 1)]
        os.kill(child.pid, signal.SIGKILL)  # while it makes the last granted event, or just after
    finally:
        child.kill()
        rest, _ = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL
    return acknowledged + rest.split()


if __name__ == "__main__":
    with cdl.load(sys.argv[1]).deploy(journal=sys.argv[2]) as session:
        drive(session, sys.stdin)
