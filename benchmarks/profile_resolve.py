"""Profile one resolution of a generated system with cProfile (or pyinstrument).

    python benchmarks/profile_resolve.py N [--shape base|fanin|fanout|wide] [--sort cumulative|tottime]
                                   [--top 40] [--pyinstrument] [--keep DIR]

Generates the system (``benchmarks/synthetic.py``), then profiles
``cdl.load(system).resolve().to_bytes()`` as benchmarks/run.py times it, and
prints the top functions. ``--pyinstrument`` uses pyinstrument instead
(``pip install pyinstrument``; it is a profiling aid, not a dependency of the
project). Profilers slow Python code down, C code (lxml) much less: read the
shares, not the absolute times.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time

import cdl
from synthetic import SHAPES, generate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int)
    parser.add_argument("--shape", choices=SHAPES, default="base")
    parser.add_argument("--sort", choices=("cumulative", "tottime"), default="cumulative")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--pyinstrument", action="store_true")
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR (and save the raw profile there)")
    args = parser.parse_args(argv)
    limits = cdl.Limits(max_bytes=1 << 40, max_elements=1 << 40)
    with tempfile.TemporaryDirectory(prefix="cdl-profile-") as tmp:
        workdir = args.keep or tmp
        _, system = generate(args.n, workdir, args.shape)

        def work() -> bytes:
            return cdl.load(system, limits=limits).resolve().to_bytes()

        start = time.perf_counter()
        if args.pyinstrument:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.001)
            profiler.start()
            work()
            profiler.stop()
            print(profiler.output_text(unicode=True, color=False, show_all=False))
        else:
            prof = cProfile.Profile()
            prof.enable()
            work()
            prof.disable()
            if args.keep:
                prof.dump_stats(os.path.join(workdir, "profile.pstats"))
            stats = pstats.Stats(prof)
            stats.sort_stats(args.sort).print_stats(args.top)
        print(f"total under the profiler: {time.perf_counter() - start:.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
