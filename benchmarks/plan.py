"""What the deployment plan adds to resolution.

    python benchmarks/plan.py N [N ...] [--shape base|fanin|fanout|wide] [--reps 3]
    python benchmarks/plan.py --chain N [N ...] [--reps 3]

For each size it generates the system (``benchmarks/synthetic.py``; with
``--chain``, a chain of N top level lists, each referring to the previous
one's value, the first lazy: one long chain of references, and N components
waiting for one lazy property), loads it once, and then, best of ``--reps``:

- resolve: ``document.resolve()`` (CPU seconds);
- plan: ``resolution.plan()`` on that resolution;
- to_json: ``plan.to_json()``, what ``cdl plan --format json`` adds to print it.

Times are CPU seconds (``time.process_time``), which other processes on a
shared machine inflate less than wall-clock time. Python's cyclic garbage
collector is collected, untimed, between resolving and planning: the engine
pauses it while it works, and the first allocation after resolution pays one
collection of everything resolution made, whatever runs next; that is
resolution's cost, not the plan's (docs/performance.md, "Deployment plan").
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time

import cdl
from cdl import CDL_NS
from synthetic import SHAPES, generate


def chain_system(n: int) -> bytes:
    lists = ["<c0><v cdl:lazy='true'/><k>0</k></c0>"]
    lists += [f"<c{i}><v cdl:refroot='c{i - 1}' cdl:ref='/v'/><k>{i}</k></c{i}>" for i in range(1, n)]
    return f"<cdl:cdl xmlns:cdl='{CDL_NS}'><cdl:system>{''.join(lists)}</cdl:system></cdl:cdl>".encode()


def measure(source: str | bytes, reps: int) -> dict[str, float]:
    limits = cdl.Limits(max_bytes=1 << 40, max_elements=1 << 40)
    document = cdl.load(source, limits=limits, name="chain.cdl" if isinstance(source, bytes) else None)
    best: dict[str, float] = {}
    for _ in range(reps):
        start = time.process_time()
        resolution = document.resolve()
        resolved = time.process_time()
        gc.collect()
        planning = time.process_time()
        plan = resolution.plan()
        planned = time.process_time()
        plan.to_json()
        printed = time.process_time()
        for key, value in (("resolve", resolved - start), ("plan", planned - planning), ("to_json", printed - planned)):
            best[key] = min(best.get(key, value), value)
        best["components"] = sum(1 for _ in plan.components())
        best["pending"] = len(resolution.pending)
        best["edges"] = sum(len(c.after) for c in plan.components())
        del resolution, plan
        gc.collect()
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", type=int, nargs="+")
    parser.add_argument("--shape", choices=SHAPES, default="base")
    parser.add_argument("--chain", action="store_true", help="a chain of references instead of the synthetic system")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"{'N':>8} {'components':>10} {'pending':>8} {'edges':>6} {'resolve s':>10} {'plan s':>8} {'plan %':>7} "
          f"{'us/comp':>8} {'to_json s':>9}")
    for n in args.sizes:
        if args.chain:
            numbers = measure(chain_system(n), args.reps)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                generate(n, tmp, args.shape)
                numbers = measure(os.path.join(tmp, "system.cdl"), args.reps)
        share = 100 * numbers["plan"] / numbers["resolve"]
        per = 1e6 * numbers["plan"] / numbers["components"]
        print(f"{n:>8} {int(numbers['components']):>10} {int(numbers['pending']):>8} {int(numbers['edges']):>6} "
              f"{numbers['resolve']:>10.2f} {numbers['plan']:>8.3f} {share:>6.1f}% {per:>8.2f} {numbers['to_json']:>9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
