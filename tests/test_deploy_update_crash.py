"""An update killed mid-way (issue 32, point 5): a SIGKILL while
``Deployment.update`` runs leaves the journal at the old version or at the
new one, never a mix, and never a journal that cannot be opened.

A zygote process loads both versions of samples/webfarm once and forks one
updater per kill; each opens a copy of a journal of the whole first version
deployed, says so, and updates it to the second version. The test kills
each at a random moment after it opened (thirty-two kills), and twice in
the middle of writing the update's line. Then exactly one version opens
the journal, and it finds the state an uninterrupted run leaves with it.

Run as a script (``python tests/test_deploy_update_crash.py zygote OLD NEW``)
this file is the zygote.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import cdl
from test_deploy_crash import Lines, say

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL")

ROOT = Path(__file__).resolve().parent.parent
OLD = ROOT / "samples" / "webfarm" / "system.cdl"
NEW = ROOT / "samples" / "webfarm" / "v2" / "system.cdl"
KILLS = 32


def _updater(old: cdl.Document, new: cdl.Document, journal: str, seed: int, midwrite: bool) -> None:
    if midwrite:
        real = os.pwrite

        def pwrite(fd: int, data: bytes, offset: int) -> int:
            if b'"update"' not in data:
                return real(fd, data, offset)
            written = real(fd, data[: random.Random(seed).randrange(1, len(data))], offset)
            say("midwrite")
            time.sleep(60)
            return written

        os.pwrite = pwrite  # type: ignore[assignment]
    with old.deploy(journal=journal) as deployment:
        say("open")
        deployment.update(new)
        say("updated")
    time.sleep(60)


def zygote(old_file: str, new_file: str) -> None:
    """Fork an updater for each ``JOURNAL SEED MODE`` line read; say its pid, then how it ended."""
    old, new = cdl.load(old_file), cdl.load(new_file)
    for command in sys.stdin:
        journal, seed, mode = command.split()
        pid = os.fork()
        if pid == 0:
            try:
                _updater(old, new, journal, int(seed), mode == "midwrite")
            finally:
                os._exit(0)
        say(f"pid {pid}")
        _pid, status = os.waitpid(pid, 0)
        say(f"exit {os.waitstatus_to_exitcode(status)}")


def _state(doc: cdl.Document, journal: Path) -> tuple[Any, bytes] | None:
    """The status and resolution ``doc`` finds in ``journal`` (read only), or
    None when the journal names other documents."""
    try:
        with doc.deploy(journal=journal, read_only=True) as deployment:
            return deployment.status().to_data(), deployment.resolution().to_bytes()
    except cdl.CdlError as error:
        assert error.code == "JOURNAL_MISMATCH", error.render()
        return None


def test_an_update_killed_at_any_moment_leaves_one_version(tmp_path: Path) -> None:
    old, new = cdl.load(OLD), cdl.load(NEW)
    base = tmp_path / "base.journal"
    with old.deploy(journal=base) as deployment:
        while ready := deployment.ready():
            for path in ready:
                comp = deployment.status(path).components[0]
                deployment.deployed(path, {p: f"v:{p}" for p in comp.supplies}, list(comp.releases))
    before = _state(old, base)
    shutil.copy(base, tmp_path / "whole.journal")
    with old.deploy(journal=tmp_path / "whole.journal") as uninterrupted:
        uninterrupted.update(new)
        live = uninterrupted.status().to_data(), uninterrupted.resolution().to_bytes()
    after = _state(new, tmp_path / "whole.journal")
    assert before is not None and after is not None and before != after
    assert after == live

    zygote_process = subprocess.Popen(
        [sys.executable, __file__, "zygote", str(OLD), str(NEW)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert zygote_process.stdin is not None and zygote_process.stdout is not None
    lines = Lines(zygote_process.stdout.fileno())
    rng = random.Random(32)
    outcomes: dict[str, int] = {"old": 0, "new": 0}
    try:
        for n in range(KILLS + 2):
            journal = tmp_path / f"kill-{n}.journal"
            shutil.copy(base, journal)
            mode = "midwrite" if n >= KILLS else "random"
            zygote_process.stdin.write(f"{journal} {n} {mode}\n".encode())
            zygote_process.stdin.flush()
            pid = int(lines.next().split()[1])
            assert lines.next() == "open"
            if mode == "midwrite":
                assert lines.next() == "midwrite"
            else:
                time.sleep(rng.uniform(0, 0.03))  # the update takes about this long
            os.kill(pid, signal.SIGKILL)
            said = lines.next()
            while said == "updated":
                said = lines.next()
            assert said == f"exit {-signal.SIGKILL}", said
            found = (_state(old, journal), _state(new, journal))
            assert (found[0] is None) != (found[1] is None), f"kill {n}: both or neither version opens the journal"
            if found[0] is not None:
                assert found[0] == before
                outcomes["old"] += 1
            else:
                assert found[1] == after
                outcomes["new"] += 1
    finally:
        zygote_process.stdin.close()
        zygote_process.kill()
        zygote_process.wait(timeout=60)
    assert outcomes["old"] >= 2  # the two kills in the middle of the update's line, at least


def test_an_update_pairing_by_name_and_kind_killed_once_done_replays_as_it_ran(tmp_path: Path) -> None:
    """A leaf x goes from beside the component x[2], which is x now, its
    value with it (components and values paired by name and kind,
    docs/semantics.md, "Update"): an updater killed once its update
    returned leaves a journal that replays to the state it had live."""
    cdl_ns = "http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"
    for name, body in (("old", "<x>1</x><x><port cdl:lazy='true'/></x>"), ("new", "<x><port cdl:lazy='true'/></x>")):
        (tmp_path / f"{name}.cdl").write_text(f'<cdl:cdl xmlns:cdl="{cdl_ns}"><cdl:system><farm>{body}</farm></cdl:system></cdl:cdl>\n')
    old, new = cdl.load(tmp_path / "old.cdl"), cdl.load(tmp_path / "new.cdl")
    journal = tmp_path / "farm.journal"
    with old.deploy(journal=journal) as deployment:
        deployment.deployed("/farm/x[2]", {"farm/x[2]/port": "8080"})
        deployment.deployed("/farm")
    shutil.copy(journal, tmp_path / "live.journal")
    with old.deploy(journal=tmp_path / "live.journal") as uninterrupted:
        uninterrupted.update(new)
        live = uninterrupted.status().to_data(), uninterrupted.resolution().to_bytes()
    assert {c["path"]: c["state"] for c in live[0]["components"]} == {"/farm": "changed", "/farm/x": "deployed"}
    zygote_process = subprocess.Popen(
        [sys.executable, __file__, "zygote", str(tmp_path / "old.cdl"), str(tmp_path / "new.cdl")],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert zygote_process.stdin is not None and zygote_process.stdout is not None
    lines = Lines(zygote_process.stdout.fileno())
    try:
        zygote_process.stdin.write(f"{journal} 0 random\n".encode())
        zygote_process.stdin.flush()
        pid = int(lines.next().split()[1])
        assert [lines.next(), lines.next()] == ["open", "updated"]
        os.kill(pid, signal.SIGKILL)
        assert lines.next() == f"exit {-signal.SIGKILL}"
    finally:
        zygote_process.stdin.close()
        zygote_process.kill()
        zygote_process.wait(timeout=60)
    assert _state(old, journal) is None
    assert _state(new, journal) == live


if __name__ == "__main__" and sys.argv[1:2] == ["zygote"]:
    zygote(sys.argv[2], sys.argv[3])
