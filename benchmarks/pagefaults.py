"""What a fresh page costs the kernel as a process grows (a machine probe, no cdl).

    python benchmarks/pagefaults.py [--gb 8] [--step-mb 128]

Builds lxml trees in steps of about ``--step-mb`` until the process holds
about ``--gb`` GiB, and prints, per step, the user and system CPU seconds, the
minor page faults, and the system microseconds per fault. Building a step's
elements is the same work at every step, so the user time stays flat; on a
machine where the kernel zeroes every page at the same cost, so does the
system time. On the benchmark's virtual machine it does not: past about 3 GiB
each fresh page costs the kernel about four times as much, which the engine
(6 GB at 200k components) pays and the floor mostly does not. ``run.py``
prints the kernel's share of each measurement beside its table.
"""

from __future__ import annotations

import argparse
import resource
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gb", type=float, default=8.0, help="stop once the process holds this many GiB")
    parser.add_argument("--step-mb", type=int, default=128, help="roughly this many MiB of elements per step")
    args = parser.parse_args(argv)

    from lxml import etree

    per_step = max(1, args.step_mb * 2**20 // 280)  # an element with its text costs about 280 bytes
    held: list[etree._Element] = []
    total = 0.0
    print(f"{'step':>4}  {'held GiB':>8}  {'user s':>7}  {'sys s':>6}  {'faults':>7}  {'sys us/fault':>12}")
    step = 0
    while total < args.gb:
        before = resource.getrusage(resource.RUSAGE_SELF)
        root = etree.Element("r")
        for _ in range(per_step):
            etree.SubElement(root, "x").text = "abc"
        held.append(root)
        after = resource.getrusage(resource.RUSAGE_SELF)
        faults = after.ru_minflt - before.ru_minflt
        system = after.ru_stime - before.ru_stime
        total += faults * resource.getpagesize() / 2**30
        per_fault = f"{system / faults * 1e6:12.2f}" if faults else f"{'-':>12}"
        print(
            f"{step:4d}  {total:8.2f}  {after.ru_utime - before.ru_utime:7.3f}  {system:6.3f}  {faults:7d}  {per_fault}",
            flush=True,
        )
        step += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
