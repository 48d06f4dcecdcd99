"""Deployment sessions under faults (issue 30, points 3 to 5 and 7).

A Deployment dropped unclosed, a fork, threads, read-only media, strings
that are no text, through the public API. Every refusal must leave the
journal byte for byte and the deployment's state as they were. The killed
processes are in tests/test_deploy_crash.py; a rebuild that fails half way
(a fault injected at an internal seam) in tests/internals/test_deploy_faults.py.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import cdl
from conftest import journal_records
from test_deploy import SlowValues, farm_copy

pytestmark = pytest.mark.skipif(os.name != "posix", reason="fork, flock and POSIX permissions")

WEBFARM = Path(__file__).resolve().parent.parent / "samples" / "webfarm"
NOBODY = 65534


@pytest.fixture
def farm(tmp_path: Path) -> Path:
    """A copy of the web farm's documents in ``tmp_path``; its main document."""
    return farm_copy(tmp_path)


def supplies(deployment: cdl.Deployment, path: str) -> dict[str, str]:
    """A value for each lazy property component ``path`` supplies."""
    return {p: p.rsplit("/", 1)[-1] + "-of-" + path for p in deployment.status(path).components[0].supplies}


def snapshot(deployment: cdl.Deployment) -> tuple[object, ...]:
    return (deployment.rounds, deployment.status().to_data(), deployment.ready())


def wide(count: int) -> bytes:
    """A system of ``count`` components that wait for nothing, each supplying one value."""
    parts = "".join(f"<c{i}><v cdl:lazy='true'/></c{i}>" for i in range(count))
    return f'<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"><cdl:system>{parts}</cdl:system></cdl:cdl>'.encode()


# -- resources ------------------------------------------------------------------------


def test_a_deployment_dropped_unclosed_lets_its_journal_go(farm: Path) -> None:
    journal = farm.parent / "farm.journal"
    deployment = cdl.load(farm).deploy(journal=journal)
    deployment.deployed("/db", supplies(deployment, "/db"))
    with pytest.warns(ResourceWarning, match="unclosed deployment journal"):
        del deployment
        gc.collect()
    with cdl.load(farm).deploy(journal=journal) as again:  # no wait: it is free
        assert again.status("/db").components[0].state == "deployed"


def test_a_closed_deployment_gives_no_warning(farm: Path, recwarn: pytest.WarningsRecorder) -> None:
    with cdl.load(farm).deploy(journal=farm.parent / "farm.journal") as deployment:
        deployment.deployed("/db", supplies(deployment, "/db"))
    del deployment
    gc.collect()
    assert [w for w in recwarn if issubclass(w.category, ResourceWarning)] == []


# -- processes ------------------------------------------------------------------------


def _in_child(work: Any) -> dict[str, Any]:
    """Run ``work()`` in a forked process; what it returns (JSON), or the
    error it raised."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, and never return into pytest
        try:
            os.close(read)
            try:
                report = {"result": work()}
            except BaseException as exc:  # reported to the parent, which asserts on it
                report = {"error": type(exc).__name__, "code": getattr(exc, "code", None), "message": str(exc)}
            os.write(write, json.dumps(report).encode())
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    _pid, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    report: dict[str, Any] = json.loads(b"".join(chunks))
    return report


def test_a_forked_child_cannot_append_to_its_parents_journal(farm: Path) -> None:
    journal = farm.parent / "farm.journal"
    deployment = cdl.load(farm).deploy(journal=journal)
    try:
        deployment.deployed("/db", supplies(deployment, "/db"))
        written, before = journal.read_bytes(), snapshot(deployment)

        def child() -> Any:
            try:
                deployment.deployed("/monitor", supplies(deployment, "/monitor"))
            except cdl.CdlError as error:
                unchanged = snapshot(deployment) == before
                deployment.close()  # closes the child's copy only: the parent keeps its lock
                return [error.code, error.message, unchanged]
            return "appended"

        code, message, unchanged = _in_child(child)["result"]
        assert code == "JOURNAL_FORKED" and "open the deployment again" in message and unchanged
        assert journal.read_bytes() == written
        with pytest.raises(cdl.CdlError) as locked:
            cdl.load(farm).deploy(journal=journal)  # the parent still holds it
        assert locked.value.code == "JOURNAL_LOCKED"
        deployment.deployed("/monitor", supplies(deployment, "/monitor"))  # and appends as before
    finally:
        deployment.close()
    assert [r["path"] for r in journal_records(journal)[1:]] == ["/db", "/monitor"]


def test_a_forked_child_reopens_the_journal_once_the_parent_let_it_go(farm: Path) -> None:
    journal = farm.parent / "farm.journal"
    doc = cdl.load(farm)
    with doc.deploy(journal=journal) as deployment:
        deployment.deployed("/db", supplies(deployment, "/db"))

    def child() -> Any:
        with doc.deploy(journal=journal) as reopened:
            return reopened.deployed("/monitor", supplies(reopened, "/monitor"))

    assert _in_child(child) == {"result": []}
    assert [r["path"] for r in journal_records(journal)[1:]] == ["/db", "/monitor"]


def test_a_fork_in_the_middle_of_another_threads_event_is_refused_not_hung(farm: Path) -> None:
    """Another thread is inside an event (its lock held) when this one
    forks: the child has a half made state and no thread to let the lock
    go. Every call there is refused; none hangs. The parent goes on."""
    journal = farm.parent / "farm.journal"
    with cdl.load(farm).deploy(journal=journal) as deployment:
        entered, go = threading.Event(), threading.Event()
        event = threading.Thread(target=lambda: deployment.deployed("/db", SlowValues({"db/hostname": "h"}, entered, go)))
        event.start()
        try:
            assert entered.wait(10)

            def child() -> Any:
                signal.alarm(30)  # a hang ends the child, and fails the test
                codes = []
                for call in (deployment.ready, lambda: deployment.deployed("/monitor", supplies_of_monitor)):
                    try:
                        call()
                        codes.append("answered")
                    except cdl.CdlError as error:
                        codes.append(error.code)
                deployment.close()
                return codes

            supplies_of_monitor = {"monitor/hostname": "m", "monitor/dashboardUrl": "u"}
            assert _in_child(child) == {"result": ["DEPLOYMENT_BROKEN", "DEPLOYMENT_BROKEN"]}
        finally:
            go.set()
            event.join(10)
        assert deployment.ready() == ["/apps/schema", "/monitor"]
        assert deployment.deployed("/monitor", supplies_of_monitor) == []
    assert [r["path"] for r in journal_records(journal)[1:]] == ["/db", "/monitor"]


# -- threads --------------------------------------------------------------------------


def test_threads_appending_to_one_journal(tmp_path: Path) -> None:
    """Eight threads, 48 components, each deployed or failed and retried:
    every event is one whole line, numbered without a gap, and replaying
    them gives the state the threads left."""
    doc = cdl.load(wide(48), name="wide.cdl")
    journal = tmp_path / "wide.journal"
    errors: list[BaseException] = []
    with doc.deploy(journal=journal) as deployment:
        barrier = threading.Barrier(8)

        def work(start: int) -> None:
            try:
                barrier.wait()
                for i in range(start, 48, 8):
                    if i % 3 == 0:
                        deployment.failed(f"/c{i}", f"attempt {i} failed")
                        deployment.retry(f"/c{i}")
                    deployment.deployed(f"/c{i}", {f"c{i}/v": f"value {i}"})
            except BaseException as exc:  # shown by the test's assert
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(start,)) for start in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        final = snapshot(deployment)
    records = journal_records(journal)[1:]
    assert [r["seq"] for r in records] == list(range(1, 48 + 2 * 16 + 1))
    assert sorted(r["path"] for r in records if r["event"] == "deployed") == sorted(f"/c{i}" for i in range(48))
    with doc.deploy(journal=journal, read_only=True) as replayed:
        assert snapshot(replayed) == final


# -- read-only ------------------------------------------------------------------------


def test_a_read_only_deployment_creates_and_writes_nothing(farm: Path) -> None:
    journal = farm.parent / "farm.journal"
    doc = cdl.load(farm)
    with doc.deploy(journal=journal, read_only=True) as fresh:
        assert fresh.ready() == ["/db", "/monitor"]
        assert fresh.warnings == [f"{journal}: no such journal yet: nothing is recorded (the first event begins it)"]
    assert not journal.exists()
    with doc.deploy(journal=journal) as deployment:
        deployment.deployed("/db", supplies(deployment, "/db"))
    written = journal.read_bytes()
    with doc.deploy(journal=journal, read_only=True) as reader:
        before = snapshot(reader)
        for event in (lambda: reader.deployed("/monitor", supplies(reader, "/monitor")), lambda: reader.supply({"db/hostname": "x"})):
            with pytest.raises(cdl.CdlError) as refused:
                event()
            assert refused.value.code == "DEPLOYMENT_READ_ONLY"
        assert snapshot(reader) == before and reader.warnings == []
        with doc.deploy(journal=journal) as writer:  # a reader holds no lock once it has read
            writer.deployed("/monitor", supplies(writer, "/monitor"))
    assert journal.read_bytes().startswith(written)


def test_a_file_that_is_no_journal_is_never_written(farm: Path) -> None:
    notes = farm.parent / "notes.txt"
    for content in (b"remember the milk", b"line one\nline two\n"):
        notes.write_bytes(content)
        for read_only in (True, False):
            with pytest.raises(cdl.CdlError) as refused:
                cdl.load(farm).deploy(journal=notes, read_only=read_only)
            assert refused.value.code == "NOT_JOURNAL" and notes.read_bytes() == content


@pytest.fixture
def read_only_media() -> Iterator[Path]:
    """A directory (mode 0555) holding the web farm and its journal (0444),
    in a place any user can reach: the test's child drops to user nobody,
    for whom (unlike root) the permissions hold."""
    base = Path(tempfile.mkdtemp(prefix="cdl-read-only-"))
    try:
        base.chmod(0o755)
        for name in ("system.cdl", "templates.cdl"):
            shutil.copy(WEBFARM / name, base / name)
        with cdl.load(base / "system.cdl").deploy(journal=base / "farm.journal") as deployment:
            deployment.deployed("/db", supplies(deployment, "/db"))
        for name in ("system.cdl", "templates.cdl", "farm.journal"):
            (base / name).chmod(0o444)
        base.chmod(0o555)
        yield base
    finally:
        base.chmod(0o755)
        shutil.rmtree(base)


def test_read_only_media_can_be_inspected(read_only_media: Path) -> None:
    """Root ignores permission bits, so the child becomes user nobody (with
    setgid/setuid, no mount needed) before it touches the journal; an
    unprivileged run needs no change of user."""
    journal = read_only_media / "farm.journal"
    written = journal.read_bytes()
    doc = cdl.load(read_only_media / "system.cdl")
    with doc.deploy(journal=journal, read_only=True) as warm:  # everything imported before the fork
        warm.status()

    def child() -> Any:
        if os.getuid() == 0:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
        assert not os.access(journal, os.W_OK) and not os.access(read_only_media, os.W_OK)
        seen = {}
        with doc.deploy(journal=journal, read_only=True) as reader:
            seen["ready"] = reader.ready()
        with doc.deploy(journal=read_only_media / "typo.journal", read_only=True) as missing:
            seen["missing"] = missing.warnings
        for target in (journal, read_only_media / "new.journal"):
            try:
                doc.deploy(journal=target).close()
            except cdl.CdlError as error:
                seen[target.name] = [error.code, error.message]
        return seen

    seen = _in_child(child)["result"]
    assert seen["ready"] == ["/apps/schema", "/monitor"]
    assert "no such journal yet" in seen["missing"][0]
    assert seen["farm.journal"] == ["IO_ERROR", f"cannot open the journal {journal}: {os.strerror(13)}"]
    assert seen["new.journal"][0] == "IO_ERROR"
    assert journal.read_bytes() == written and stat.S_IMODE(journal.stat().st_mode) == 0o444
    assert sorted(p.name for p in read_only_media.iterdir()) == ["farm.journal", "system.cdl", "templates.cdl"]


# -- strings that are no text ---------------------------------------------------------


def test_a_reason_or_value_that_is_no_text_is_refused_and_changes_nothing(farm: Path) -> None:
    journal = farm.parent / "farm.journal"
    bad = os.fsdecode(b"disk \xff full")  # as the shell hands Python bytes that are not UTF-8
    for path in (journal, None):
        with cdl.load(farm).deploy(journal=path) as deployment:
            before = snapshot(deployment)
            written = journal.read_bytes() if path else b""
            for event in (
                lambda: deployment.failed("/db", bad),
                lambda: deployment.deployed("/db", {"db/hostname": bad}),
                lambda: deployment.supply(release=[bad]),
            ):
                with pytest.raises(cdl.CdlError) as refused:
                    event()
                assert refused.value.code == "BAD_TEXT" and "'\\udcff'" in refused.value.message
                assert refused.value.url == str(farm)
            assert snapshot(deployment) == before
            assert (journal.read_bytes() if path else b"") == written
            assert "/apps/schema" in deployment.failed("/db", "disk full")  # the same event in text is taken
