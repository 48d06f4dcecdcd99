"""Time each phase of one resolution, without a profiler's overhead.

    python benchmarks/phases.py N [--shape base|fanin|fanout|wide] [--with-gc]

Generates the system (``benchmarks/synthetic.py``), loads it, and runs the resolution
phases the engine lists in ``cdl.engine.document.RESOLUTION_PHASES`` (the one
composition, which ``Document.resolve`` runs) one at a time, with a clock
around each. Then it times the output as ``cdl.load(system).resolve().to_bytes()``
makes it (``Resolution.to_bytes``: the output tree built from the working
trees, and serialized) on a resolution of its own, made untimed, and freeing
that resolution and the document. cProfile attributes the C work of lxml
(XPath, copies, namespace clean-up) to the Python function that calls it and
slows Python code down several times; these numbers do not.

The engine pauses Python's cyclic garbage collector while it works; this
script turns it off for the whole run unless ``--with-gc`` is given.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from typing import TypeVar

import cdl
from cdl.engine.document import loaded_of
from cdl.engine.phases import RESOLUTION_PHASES, Run
from synthetic import SHAPES, generate

T = TypeVar("T")

#: What ``resource`` and the clock say at one moment: wall, user, system seconds, minor faults.
Usage = tuple[float, float, float, int]


def _usage() -> Usage:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter(), ru.ru_utime, ru.ru_stime, ru.ru_minflt


class Phases:
    """The rows of the table: one per timed phase."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float, float, int]] = []

    def record(self, label: str, before: Usage) -> None:
        wall, user, system, faults = (after - start for after, start in zip(_usage(), before))
        self.rows.append((label, user + system, wall, system, int(faults)))

    def timed(self, label: str, func: Callable[[], T]) -> T:
        before = _usage()
        result = func()
        self.record(label, before)
        return result

    def print(self) -> None:
        total_cpu = sum(r[1] for r in self.rows)
        width = max(len(r[0]) for r in self.rows)
        print(f"{'phase':<{width}}  {'CPU s':>8}  {'wall s':>8}  {'share':>6}  {'of which sys s':>14}  {'page faults':>11}")
        for label, cpu_s, wall_s, sys_s, faults in self.rows:
            print(f"{label:<{width}}  {cpu_s:8.3f}  {wall_s:8.3f}  {cpu_s / total_cpu:6.1%}  {sys_s:14.3f}  {faults:11d}")
        total_sys, total_faults = sum(r[3] for r in self.rows), sum(r[4] for r in self.rows)
        print(f"{'total':<{width}}  {total_cpu:8.3f}  {'':8}  {'':6}  {total_sys:14.3f}  {total_faults:11d}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int)
    parser.add_argument("--shape", choices=SHAPES, default="base")
    parser.add_argument(
        "--with-gc",
        action="store_true",
        help="keep Python's cyclic garbage collector on (the engine pauses it while it works)",
    )
    args = parser.parse_args(argv)
    if not args.with_gc:
        gc.disable()

    limits = cdl.Limits(max_bytes=1 << 40, max_elements=1 << 40)
    phases = Phases()
    with tempfile.TemporaryDirectory(prefix="cdl-phases-") as tmp:
        _, system = generate(args.n, tmp, args.shape)
        gc_note = ", cyclic GC on" if args.with_gc else ""
        print(f"engine: {os.path.dirname(cdl.__file__)}; N = {args.n}, shape {args.shape}{gc_note}")
        document = phases.timed("load: parse, normalize, imports, names", lambda: cdl.load(system, limits=limits))
        run = Run(loaded_of(document), ())
        for label, phase in RESOLUTION_PHASES:
            phases.timed(label, functools.partial(phase, run))
        del run
        resolution = document.resolve()  # untimed: the output takes its working trees apart
        data = phases.timed("output: build the tree and serialize it", resolution.to_bytes)
        before = _usage()
        del resolution, document
        phases.record("free the trees", before)

    phases.print()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"output {len(data)} bytes; peak memory {peak:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
