"""A deployment killed mid-way resumes from its journal (issue 24, acceptance; issue 30).

A real Python process drives samples/webfarm with a journal, one event per
token it reads from stdin, and prints each component once ``deployed``
returned (acknowledged). The test lets it run some events, SIGKILLs it, and
resumes in this process: every acknowledged event must be there, and the
deployment finished from there must end as an uninterrupted run does.

Then forty kills at random moments (while the journal is replayed, while
values of up to 1.5 MB are written, between events) and at a chosen one (in
the middle of writing a large value's line): no acknowledged event is ever
lost, no value changed, and no kill leaves a journal that cannot be opened.

Run as a script (``python tests/test_deploy_crash.py FILE JOURNAL``) this
file is the first driver; ``python tests/test_deploy_crash.py zygote FILE``
the second's parent, which forks one writer per kill (so each costs a fork,
not a Python start).
"""

from __future__ import annotations

import hashlib
import os
import random
import select
import signal
import subprocess
import sys
import time
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


# -- forty kills --------------------------------------------------------------------------

WIDE = 60  # components in the system the writers deploy
KILLS = 40


def wide_system(count: int) -> bytes:
    """``count`` components that wait for nothing, each supplying one value."""
    parts = "".join(f"<c{i}><v cdl:lazy='true'/></c{i}>" for i in range(count))
    return f'<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"><cdl:system>{parts}</cdl:system></cdl:cdl>'.encode()


def value_for(path: str, seed: int, large: bool) -> str:
    """The value a writer of ``seed`` supplies for ``path``: text that needs
    escaping and is not ASCII; 100 kB to 1.5 MB when ``large``."""
    rng = random.Random(f"{seed}{path}")
    size = rng.randrange(100_000, 1_500_000) if large else rng.randrange(1, 300)
    token = f"{path} «{rng.random()}» \"quoted\" back\\slash\ttab\n"
    return (token * (size // len(token) + 1))[:size]


def is_large(path: str, seed: int, first: bool) -> bool:
    return first or random.Random(f"size{seed}{path}").random() < 0.2


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())  # unbuffered: a fork copies no buffer, a kill loses none


def _writer(doc: cdl.Document, journal: str, seed: int, midwrite: bool) -> None:
    """Deploy every ready component with its value, saying each acknowledged
    one; with ``midwrite``, write only part of the first large line, say so
    and wait to be killed."""
    if midwrite:
        real = os.pwrite

        def pwrite(fd: int, data: bytes, offset: int) -> int:
            if len(data) < 100_000:
                return real(fd, data, offset)
            written = real(fd, data[: random.Random(seed).randrange(1, len(data))], offset)
            say("midwrite")
            time.sleep(60)
            return written

        os.pwrite = pwrite  # type: ignore[assignment]
    with doc.deploy(journal=journal) as deployment:
        for number, path in enumerate(deployment.ready()):
            value = value_for(path, seed, is_large(path, seed, midwrite and number == 0))
            deployment.deployed(path, {path[1:] + "/v": value})
            say(f"ack {path} {hashlib.sha256(value.encode()).hexdigest()}")
    say("done")
    time.sleep(60)


def zygote(file: str) -> None:
    """Fork a writer for each ``JOURNAL SEED MODE`` line read; say its pid,
    then how it ended."""
    doc = cdl.load(file)
    for command in sys.stdin:
        journal, seed, mode = command.split()
        pid = os.fork()
        if pid == 0:
            try:
                _writer(doc, journal, int(seed), mode == "midwrite")
            finally:
                os._exit(0)
        say(f"pid {pid}")
        _pid, status = os.waitpid(pid, 0)
        say(f"exit {os.waitstatus_to_exitcode(status)}")


class Lines:
    """The lines of a pipe, read with a deadline."""

    def __init__(self, fd: int) -> None:
        self._fd, self._buffer = fd, b""

    def next(self) -> str:
        deadline = time.monotonic() + 120
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self._fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(self._fd, 1 << 16) if ready else b""
            assert chunk, "the zygote stopped talking"
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()


def test_forty_kills_at_random_moments_lose_nothing_acknowledged(tmp_path: Path) -> None:
    (tmp_path / "wide.cdl").write_bytes(wide_system(WIDE))
    zygote_process = subprocess.Popen(
        [sys.executable, __file__, "zygote", str(tmp_path / "wide.cdl")], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert zygote_process.stdin is not None and zygote_process.stdout is not None
    lines = Lines(zygote_process.stdout.fileno())
    rng = random.Random(30)
    doc = cdl.load(tmp_path / "wide.cdl")
    journal, seeds, acknowledged = tmp_path / "wide-0.journal", [], {}
    torn = 0
    try:
        for kill in range(KILLS):
            seed, midwrite = rng.randrange(1 << 30), kill % 4 == 3
            seeds.append(seed)
            zygote_process.stdin.write(f"{journal} {seed} {'midwrite' if midwrite else 'random'}\n".encode())
            zygote_process.stdin.flush()
            said = [lines.next()]
            while not said[-1].startswith("pid "):
                said.append(lines.next())
            if midwrite:
                while said[-1] not in ("midwrite", "done"):
                    said.append(lines.next())
                assert said[-1] == "midwrite"
            else:
                time.sleep(rng.uniform(0, 0.25))
            os.kill(int(next(s for s in said if s.startswith("pid ")).split()[1]), signal.SIGKILL)
            while not said[-1].startswith("exit "):
                said.append(lines.next())
            assert said[-1] == f"exit {-signal.SIGKILL}"
            for line in said:
                if line.startswith("ack "):
                    _ack, path, digest = line.split()
                    acknowledged[path] = digest
            warned = _check_journal(doc, journal, acknowledged, seeds)
            assert warned or not midwrite  # a kill mid-write leaves a torn line, dropped
            torn += warned
            if len(acknowledged) == WIDE:  # all deployed: the next kills begin another journal
                journal, seeds, acknowledged = tmp_path / f"wide-{kill}.journal", [], {}
    finally:
        zygote_process.kill()
        zygote_process.wait(60)
    assert torn >= KILLS // 4


def _check_journal(doc: cdl.Document, journal: Path, acknowledged: dict[str, str], seeds: list[int]) -> bool:
    """Every acknowledged event is in ``journal`` with its value, every
    other recorded value is one a writer made, and at most one event per
    kill was recorded without being acknowledged; whether a torn line was
    dropped."""
    if not journal.exists():
        return False
    before = journal.read_bytes()
    with doc.deploy(journal=journal, read_only=True) as replayed:
        recorded = {key: value for r in replayed.rounds for key, value in r.set.items()}
        warnings = replayed.warnings
    assert journal.read_bytes() == before
    for path, digest in acknowledged.items():
        assert hashlib.sha256(recorded[path[1:] + "/v"].encode()).hexdigest() == digest, path
    unacknowledged = {key for key in recorded if "/" + key[: -len("/v")] not in acknowledged}
    assert len(unacknowledged) <= len(seeds)
    for key in unacknowledged:
        path = "/" + key[: -len("/v")]
        assert any(recorded[key] == value_for(path, seed, large) for seed in seeds for large in (True, False)), key
    for path in unacknowledged:
        acknowledged["/" + path[: -len("/v")]] = hashlib.sha256(recorded[path].encode()).hexdigest()
    assert len(warnings) <= 1 and all("dropped the last line" in w for w in warnings)
    return bool(warnings)


if __name__ == "__main__":
    if sys.argv[1] == "zygote":
        zygote(sys.argv[2])
    else:
        with cdl.load(sys.argv[1]).deploy(journal=sys.argv[2]) as session:
            drive(session, sys.stdin)
