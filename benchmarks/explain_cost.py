"""What provenance costs: plain resolution, and explaining one property.

    python benchmarks/explain_cost.py N [--shape base|fanin|fanout|wide] [--reps 5] [--path svc000000/env/var/value]

Generates the system (``benchmarks/synthetic.py``), loads it once, then resolves it
``--reps`` times (``Document.resolve()``: prototypes, references, the required
check; no output), then explains one property as many
times (``Resolution.explain`` of a resolution: one more resolution with the
recorder on, then the explanation). It prints the user CPU seconds of each run, then the best
and the median. User CPU rather than wall time: the machine is shared, and
other processes' load shows in wall time, hardly in user time.

Plain resolution passes no recorder, so the first number is what the
recorder's hooks cost it (issue 15 allows 5 %, compared with an engine
without them); the second is what ``cdl explain`` costs.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import sys
import tempfile

import cdl
from synthetic import SHAPES, generate


def _user() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_utime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int)
    parser.add_argument("--shape", choices=SHAPES, default="base")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--path", default="svc000000/env/var/value", help="the property to explain")
    args = parser.parse_args(argv)
    limits = cdl.Limits(max_bytes=1 << 40, max_elements=1 << 40)
    with tempfile.TemporaryDirectory(prefix="cdl-explain-") as tmp:
        _, system = generate(args.n, tmp, args.shape)
        document = cdl.load(system, limits=limits)
    print(f"engine: {os.path.dirname(cdl.__file__)}; N = {args.n}, shape {args.shape}")
    results: dict[str, list[float]] = {"resolve": [], "explain": []}
    for _ in range(args.reps):
        gc.collect()
        start = _user()
        result = document.resolve()
        results["resolve"].append(_user() - start)
        del result
    for _ in range(args.reps):
        result = document.resolve()
        gc.collect()
        start = _user()
        found = result.explain(args.path)
        results["explain"].append(_user() - start)
        assert found
        del result, found
    for label, times in results.items():
        if times:
            shown = " ".join(f"{t:.2f}" for t in times)
            print(f"{label:8} user s: {shown}   best {min(times):.2f}   median {statistics.median(times):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
