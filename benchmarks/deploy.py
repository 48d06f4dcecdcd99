"""What a live deployment (``Document.deploy``, issue 24) costs, against its targets.

    python benchmarks/deploy.py [--sizes 2000,20000] [--shapes base,wide] [--reps 3] [--no-journal]

For each shape and size it generates the system (``benchmarks/synthetic.py``), loads
it once, and measures, in CPU seconds (``time.process_time``):

- static: ``document.resolve()`` and its ``plan()``, best of ``--reps``;
- open: ``document.deploy()``, best of ``--reps`` (target: at most 1.3x static);
- deployment: a whole deployment driven as a service would, best of ``--reps``, each component
  reported deployed as soon as it is ready (the ready components in a
  queue, in the order they became ready), with a value for each lazy
  property it supplies and its lazy references released, no journal (the
  values no component supplies, the settings' clock, in one first event); the
  events' total (target: at most 3x static), their median (at most 0.5 ms)
  and 99th percentile (at most 5 ms);
- growth: from the smallest size to the largest, of static, open and the
  deployment's total (target: at most 11x for 10x the components).

Unless ``--no-journal``, the smallest size is deployed again with a journal,
counting the ``fsync`` calls per event (target: at most one beyond the
deployment without; a new journal's directory is synced once more).

Unless ``--no-failures``, failures in chains (issue 30, point 6): a system of
``--chains`` groups (default 1,000) of ``--length`` components (default 20:
20,000 components, 21,000 with the groups), each component waiting for the
lazy value of the one before it in its group, deployed with a journal:

- the first of every group fails: 1,000 failures open, each blocking its chain
  and its group; then half of the failed components' values are given from
  elsewhere (``supply``), which unblocks their chains, and the other half are
  retried: ``failed``, ``supply`` and ``retry`` each median at most 1 ms, 99th
  percentile at most 10 ms;
- refused events among the open failures (a blocked component reported
  deployed, a value that conflicts, two values for one property, a value
  left out, another component's value; 250 in all): median and 99th
  percentile at most 1 ms;
- reopening that journal (its 2,000 events replayed) at most 1.5x reopening
  a journal of as many ``deployed`` events.

Python's cyclic collector is collected, untimed, between measurements, as
``benchmarks/plan.py`` does. It prints each figure against its target and
exits 1 if one is missed. On a shared machine run it under ``nice``; the
figures of the run docs/performance.md cites are in benchmarks/results/.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

import cdl
from synthetic import SHAPES, generate

LIMITS = cdl.Limits(max_bytes=1 << 40, max_elements=1 << 40)


def best_of(reps: int, run: Any) -> float:
    times = []
    for _ in range(reps):
        gc.collect()
        start = time.process_time()
        kept = run()
        times.append(time.process_time() - start)
        del kept
    gc.collect()
    return min(times)


def drive(deployment: cdl.Deployment) -> list[float]:
    """Deploy every component as soon as it is ready: each event's CPU time."""
    status = deployment.status().components
    # The service's reports, as tuples and string dicts: objects the cyclic
    # collector does not track, so that its collections during the events
    # are the engine's, not the benchmark's.
    reports = {c.path: ({p: f"value-of-{p}" for p in c.supplies}, tuple(c.releases)) for c in status}
    # What no component supplies (the settings' clock) comes first, in one event.
    outside = {value: "value-of-" + value for c in status for value, supplier in c.waits_for if supplier is None}
    # The status (a ComponentStatus per component) is the benchmark's, not
    # the service's: freed and collected untimed, so that the collector does
    # not walk it (and the live trees with it) during the events.
    del status
    gc.collect()
    times = []
    clock = time.process_time
    start = clock()
    queue = deployment.ready() + deployment.supply(outside)
    times.append(clock() - start)
    at = 0
    while at < len(queue):
        path = queue[at]
        at += 1
        values, release = reports[path]
        start = clock()
        became = deployment.deployed(path, values, release)
        times.append(clock() - start)
        queue.extend(became)
    left = [c.path for c in deployment.status().components if c.state != "deployed"]
    if left:
        raise SystemExit(f"the deployment ended with {len(left)} components not deployed, first {left[0]}")
    return times


def measure(n: int, shape: str, reps: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        _, main = generate(n, tmp, shape)
        document = cdl.load(main, limits=LIMITS)
    figures: dict[str, float] = {"components": 0}
    figures["static"] = best_of(reps, lambda: (lambda r: (r, r.plan()))(document.resolve()))
    figures["open"] = best_of(reps, document.deploy)
    # The whole deployment, like static and open, is the best of ``reps``
    # runs (each on a new deployment): one run at the small size is short
    # enough for the machine's noise to move the growth figure.
    times: list[float] = []
    for _ in range(reps):
        deployment = document.deploy()
        gc.collect()
        run = drive(deployment)
        if not times or sum(run) < sum(times):
            times = run
    figures["components"] = len(deployment.status().components)
    figures["events"] = len(times)
    figures["total"] = sum(times)
    figures["median_ms"] = statistics.median(times) * 1000
    figures["p99_ms"] = statistics.quantiles(times, n=100)[98] * 1000 if len(times) > 1 else times[0] * 1000
    figures["max_ms"] = max(times) * 1000
    figures["values"] = sum(len(r.set) for r in deployment.rounds)
    del deployment
    gc.collect()
    return figures


def fsyncs_per_event(n: int, shape: str) -> tuple[float, int]:
    """(fsync calls per event, events) of a whole deployment with a journal."""
    calls = 0
    real = os.fsync

    def counting(fd: int) -> None:
        nonlocal calls
        calls += 1
        real(fd)

    with tempfile.TemporaryDirectory() as tmp:
        _, main = generate(n, tmp, shape)
        document = cdl.load(main, limits=LIMITS)
        os.fsync = counting
        try:
            with document.deploy(journal=os.path.join(tmp, "journal.jsonl")) as deployment:
                opened = calls
                times = drive(deployment)
        finally:
            os.fsync = real
    return (calls - opened) / len(times), len(times)


def chains_system(groups: int, length: int) -> bytes:
    """``groups`` lists of ``length`` components, each waiting for the lazy
    value of the one before it (a chain of deployments per group), one
    component a line, as people write them."""
    parts = []
    for g in range(groups):
        links = ["<c0><v cdl:lazy='true'/></c0>"]
        links += [f"<c{k}><w cdl:ref='../c{k - 1}/v'/><v cdl:lazy='true'/></c{k}>" for k in range(1, length)]
        parts.append(f"<g{g}>\n  " + "\n  ".join(links) + f"\n</g{g}>")
    return (f"<cdl:cdl xmlns:cdl='{cdl.CDL_NS}'><cdl:system>\n" + "\n".join(parts) + "\n</cdl:system></cdl:cdl>\n").encode()


def timed(clock: Any, times: list[float], call: Any, *args: Any) -> Any:
    start = clock()
    result = call(*args)
    times.append(clock() - start)
    return result


def refused(clock: Any, times: list[float], call: Any, *args: Any) -> None:
    start = clock()
    try:
        call(*args)
    except cdl.CdlError:
        times.append(clock() - start)
    else:
        raise SystemExit("an event the benchmark expects refused was accepted")


def failures(groups: int, length: int) -> dict[str, float]:
    """Failures in chains, refusals among them, and reopening their journal (see the module)."""
    clock = time.process_time
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        document = cdl.load(chains_system(groups, length), name=os.path.join(tmp, "chains.cdl"), limits=LIMITS)
        journal = os.path.join(tmp, "failures.journal")
        times: dict[str, list[float]] = {"failed": [], "supply": [], "retry": [], "refused": []}
        with document.deploy(journal=journal) as deployment:
            figures["components"] = len(deployment.status().components)
            gc.collect()
            for g in range(groups):
                blocked = timed(clock, times["failed"], deployment.failed, f"/g{g}/c0", "down")
                assert len(blocked) == length, blocked
            no = times["refused"]
            for g in range(0, min(50, groups)):
                refused(clock, no, deployment.deployed, f"/g{g}/c1", {f"g{g}/c1/v": "x"})  # NOT_READY
            for g in range(0, groups, 2):
                timed(clock, times["supply"], deployment.supply, {f"g{g}/c0/v": "up"})
            for g in range(0, min(100, groups), 2):
                c1, c2 = f"g{g}/c1", f"g{g}/c2"
                refused(clock, no, deployment.supply, {f"g{g}/c0/v": "other"})  # SET_CONFLICT
                refused(clock, no, deployment.deployed, "/" + c1)  # VALUES_MISSING
                refused(clock, no, deployment.deployed, "/" + c1, {f"{c1}/v": "a", f"{c1}/v[1]": "b"})  # SET_CONFLICT
                refused(clock, no, deployment.deployed, "/" + c1, {f"{c1}/v": "a", f"{c2}/v": "b"})  # NOT_OWNER
            for g in range(1, groups, 2):
                timed(clock, times["retry"], deployment.retry, f"/g{g}/c0")
        events = len(times["failed"]) + len(times["supply"]) + len(times["retry"])
        for kind in ("failed", "supply", "retry"):
            figures[f"{kind}_median_ms"] = statistics.median(times[kind]) * 1000
            figures[f"{kind}_p99_ms"] = statistics.quantiles(times[kind], n=100)[98] * 1000
        figures["refused_median_ms"] = statistics.median(times["refused"]) * 1000
        figures["refused_p99_ms"] = statistics.quantiles(times["refused"], n=100)[98] * 1000
        figures["refused_max_ms"] = max(times["refused"]) * 1000
        figures["events"] = events
        # As many deployed events, each group's chain from its start.
        plain = os.path.join(tmp, "deployed.journal")
        with document.deploy(journal=plain) as deployment:
            done = 0
            for k in range(length):
                for g in range(groups):
                    if done == events:
                        break
                    deployment.deployed(f"/g{g}/c{k}", {f"g{g}/c{k}/v": "up"})
                    done += 1
        figures["reopen_failures_s"] = best_of(3, lambda: document.deploy(journal=journal).close())
        figures["reopen_deployed_s"] = best_of(3, lambda: document.deploy(journal=plain).close())
    return figures


def check(label: str, value: float, target: float, unit: str = "x") -> bool:
    ok = value <= target
    print(f"  {label:<44} {value:9.3f}{unit:<3} target <= {target:g}{unit:<3} {'ok' if ok else 'MISSED'}")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2000,20000")
    parser.add_argument("--shapes", default="base,wide")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-journal", dest="journal", action="store_false", help="skip counting fsyncs per event with a journal")
    parser.add_argument("--no-failures", dest="failures", action="store_false", help="skip the failures in chains")
    parser.add_argument("--chains", type=int, default=1000, help="groups of the failures' system (each a chain)")
    parser.add_argument("--length", type=int, default=20, help="components in each chain")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    shapes = args.shapes.split(",")
    for shape in shapes:
        if shape not in SHAPES:
            parser.error(f"unknown shape {shape!r}")
    results: dict[str, dict[str, Any]] = {}
    ok = True
    if args.failures:
        f = results["failures"] = failures(args.chains, args.length)
        print(
            f"failures in chains: {f['components']:.0f} components, {args.chains} chains of {args.length}, {f['events']:.0f} events; "
            f"reopening {f['reopen_failures_s']:.3f} s, as many deployed events {f['reopen_deployed_s']:.3f} s"
        )
        for kind in ("failed", "supply", "retry"):
            ok &= check(f"{kind}: median event", f[f"{kind}_median_ms"], 1.0, " ms")
            ok &= check(f"{kind}: 99th percentile event", f[f"{kind}_p99_ms"], 10.0, " ms")
        ok &= check("refused event: median", f["refused_median_ms"], 1.0, " ms")
        ok &= check("refused event: 99th percentile", f["refused_p99_ms"], 1.0, " ms")
        print(f"  (slowest refused event {f['refused_max_ms']:.3f} ms: the first to find a line in the document's text)")
        ok &= check("reopen / reopen of as many deployed events", f["reopen_failures_s"] / f["reopen_deployed_s"], 1.5)
    for shape in shapes:
        for n in sizes:
            f = results[f"{shape}-{n}"] = measure(n, shape, args.reps)
            print(
                f"{shape} N={n}: {f['components']:.0f} components, {f['events']:.0f} events, {f['values']:.0f} values; "
                f"static {f['static']:.3f} s, open {f['open']:.3f} s, deployment {f['total']:.3f} s "
                f"(median {f['median_ms']:.3f} ms, p99 {f['p99_ms']:.3f} ms, max {f['max_ms']:.1f} ms)"
            )
            if n == sizes[-1]:
                ok &= check("open / static", f["open"] / f["static"], 1.3)
                ok &= check("whole deployment / static", f["total"] / f["static"], 3.0)
                ok &= check("median event", f["median_ms"], 0.5, " ms")
                ok &= check("99th percentile event", f["p99_ms"], 5.0, " ms")
        if len(sizes) > 1:
            small, large = results[f"{shape}-{sizes[0]}"], results[f"{shape}-{sizes[-1]}"]
            for key, label in (("static", "static"), ("open", "open"), ("total", "whole deployment")):
                ok &= check(f"growth {sizes[0]} -> {sizes[-1]}, {label}", large[key] / small[key], 11.0 * sizes[-1] / sizes[0] / 10)
        if args.journal:
            per_event, events = fsyncs_per_event(sizes[0], shape)
            results[f"{shape}-{sizes[0]}"]["fsyncs_per_event"] = per_event
            print(f"{shape} N={sizes[0]} with a journal: {events} events")
            ok &= check("fsyncs per event with a journal", per_event, 1.0, "")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(results, out, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
