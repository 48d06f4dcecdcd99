"""The deployment journal's own cost (issue 30): reading, checking, appending.

    python benchmarks/journal.py [--events 20000] [--reps 5]

Writes ``--events`` events (``deployed``, each with two values, as a web
farm's servers report them) into a journal of format version 2 (a rolling
CRC-32 per line) and the same events into one of version 1 (no checksum),
then reads each back (``Journal.read``: parse, check every field exactly,
and for version 2 every checksum), best of ``--reps``. It prints the time
per event of each, their ratio, the share of the checksum (``zlib.crc32``
over the whole file), and the cost and fsyncs of appending one event.

Targets: reading version 2 at most 1.5x reading version 1; one fsync per
event. Exits 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

from cdl.deployment.journal import Journal, journal_header


def events(count: int) -> list[dict[str, Any]]:
    return [
        {
            "event": "deployed",
            "path": f"/tier{i % 50}/app{i}",
            "values": {f"tier{i % 50}/app{i}/hostname": f"app-{i}.farm.internal", f"tier{i % 50}/app{i}/port": str(8000 + i % 1000)},
            "release": [],
        }
        for i in range(count)
    ]


def write(path: Path, header: dict[str, Any], batch: list[dict[str, Any]]) -> None:
    """A journal of ``batch``, its fsyncs skipped (what is measured here is the format)."""
    real = os.fsync
    os.fsync = lambda fd: None
    try:
        journal, _events, _warnings = Journal.open(path, header)
        for event in batch:
            journal.append(event)
        journal.close()
    finally:
        os.fsync = real


def as_version_1(source: Path, target: Path) -> None:
    """The same records in format version 1: the header's version 1, no checksums."""
    lines = source.read_bytes().splitlines()
    header = lines[0][:-9].replace(b'"version":2', b'"version":1', 1)
    target.write_bytes(b"\n".join([header, *(line[:-9] for line in lines[1:])]) + b"\n")


def best(reps: int, work: Any) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def appending(path: Path, header: dict[str, Any], count: int) -> tuple[float, float]:
    """(median seconds per append with its fsync, fsyncs per append)."""
    calls = []
    real = os.fsync

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    journal, _events, _warnings = Journal.open(path, header)
    os.fsync = counting
    times = []
    try:
        for event in events(count):
            start = time.perf_counter()
            journal.append(event)
            times.append(time.perf_counter() - start)
    finally:
        os.fsync = real
        journal.close()
    return statistics.median(times), len(calls) / count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    header = journal_header([("system.cdl", b"<system/>")], [])
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        new, old = Path(tmp) / "v2.journal", Path(tmp) / "v1.journal"
        write(new, header, events(args.events))
        as_version_1(new, old)
        read_new = best(args.reps, lambda: Journal.read(new, header))
        read_old = best(args.reps, lambda: Journal.read(old, {**header, "version": 1}))
        data = new.read_bytes()
        checksum = best(args.reps, lambda: zlib.crc32(data))
        append, fsyncs = appending(Path(tmp) / "append.journal", header, min(args.events, 300))
    per = 1e6 / args.events
    ratio = read_new / read_old
    print(f"{args.events} events, {len(data) / 1e6:.1f} MB (version 2), {os.getloadavg()[0]:.2f} load")
    print(f"read version 1: {read_old * per:.2f} us/event ({read_old:.3f} s)")
    print(f"read version 2: {read_new * per:.2f} us/event ({read_new:.3f} s)")
    print(f"version 2 / version 1: {ratio:.2f} (target <= 1.5) {'ok' if ratio <= 1.5 else 'MISSED'}")
    print(f"checksum (crc32 of the whole file): {checksum * per:.3f} us/event, {checksum / read_new:.1%} of reading")
    print(f"append with fsync: {append * 1e3:.2f} ms median; fsyncs per event {fsyncs:g} (target 1) {'ok' if fsyncs == 1 else 'MISSED'}")
    ok &= ratio <= 1.5 and fsyncs == 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
