"""How long the language server's analysis holds the interpreter at a time
(issue 31, point 2: a request waits for the interpreter while the analysis
worker is inside one C call, which does not let go of it).

    python benchmarks/gaps.py N [--shape base|fanin|fanout|wide] [--over 0.015] [--top 12] [--reps 1] [--switch S] [--fast-bins]

Generates the synthetic system (``benchmarks/synthetic.py``) and runs one
analysis of it as ``cdl lsp``'s worker does (``cdl.lsp._buffers.analyse``:
load, resolve, plan; then ``Navigation.prepare``: the text paired, the
resolution with provenance, its plan), in a thread, without the cyclic
garbage collector and glibc's fast bins, with ``cdl lsp``'s switch interval
(as the server runs). Beside it a sampler thread sleeps
1 ms at a time and measures how long each sleep took to come back past the
1 ms (**waits**: what a request waits for the interpreter, the machine's
other work included), and the analysis thread's CPU time meanwhile
(**held**: what it ran while the sampler waited, which the machine's load
does not lengthen). Prints the maximum, the 99th percentile and the counts
over 20 and 50 ms of both, and for each hold over ``--over`` seconds the
analysis thread's stack as the sampler found it once back
(``sys._current_frames``: the line just after the long call) and where it
stood at the sample before.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from pathlib import Path
from types import FrameType

from cdl.lsp._buffers import Settings, analyse
from cdl.lsp._navigate import navigation_of
from cdl.lsp.server import SWITCH_INTERVAL, fast_bins_off
from synthetic import SHAPES, generate

#: How many frames of the analysis thread's stack a gap is told by.
_DEPTH = 5


class Sampler(threading.Thread):
    """Sleeps 1 ms at a time while ``target`` runs; each wait past the sleep, and the stack of ``target`` at the long ones."""

    def __init__(self, target: threading.Thread, over: float) -> None:
        super().__init__(daemon=True)
        self.target, self.over = target, over
        self.waits: list[float] = []
        #: The analysis thread's CPU time over each wait: what it ran while
        #: the sampler waited (the rest of a wait is the machine's other work).
        self.holds: list[float] = []
        self.gaps: list[tuple[float, str]] = []

    def run(self) -> None:
        try:  # woken late by a busy machine, the sampler would let the analysis run on and count it
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), -10)
        except OSError:
            pass
        before = "(not started)"
        clock = time.pthread_getcpuclockid(self.target.ident or 0)
        while self.target.is_alive():
            began, ran = time.perf_counter(), time.clock_gettime(clock)
            time.sleep(0.001)
            waited = time.perf_counter() - began - 0.001
            try:
                held = time.clock_gettime(clock) - ran
            except OSError:  # the analysis thread has ended
                return
            self.waits.append(waited)
            self.holds.append(held)
            frame = sys._current_frames().get(self.target.ident or 0)
            if held > self.over:
                self.gaps.append((held, f"{_where(frame)} (waited {waited * 1000:.1f} ms)\n             sample before: {before}"))
            before = f"{_line(frame)} < {_line(frame and frame.f_back)}"


def _where(frame: object) -> str:
    """The innermost frames of the stack at ``frame``, file:line function, innermost first."""
    if frame is None:
        return "(done)"
    summary = traceback.extract_stack(frame)[-_DEPTH:]  # type: ignore[arg-type]
    return " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(summary))


def _line(frame: FrameType | None) -> str:
    """Where ``frame`` stands: file:line function."""
    if frame is None:
        return "-"
    return f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno} {frame.f_code.co_name}"


def _analyse(system: str, text: str) -> None:
    gc.disable()  # as the server's worker runs (``_session._collector_off``)
    analysis = analyse(system, {system: text}, Settings())
    navigation = navigation_of(analysis)
    assert navigation is not None, analysis.problems
    navigation.prepare()


def measure(n: int, over: float, shape: str = "base") -> Sampler:
    with tempfile.TemporaryDirectory(prefix="cdl-gaps-") as tmp:
        _, system = generate(n, tmp, shape)
        system = os.path.realpath(system)
        text = Path(system).read_text(encoding="utf-8")
        worker = threading.Thread(target=_analyse, args=(system, text), name="analysis")
        sampler = Sampler(worker, over)
        worker.start()
        sampler.start()
        worker.join()
        sampler.join()
    return sampler


def _summary(label: str, times: list[float]) -> str:
    ordered = sorted(times)
    p99 = statistics.quantiles(ordered, n=100)[98] if len(ordered) > 1 else ordered[-1]
    over20, over50 = sum(w > 0.02 for w in ordered), sum(w > 0.05 for w in ordered)
    return f"{label}: max {ordered[-1] * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, {over20} over 20 ms, {over50} over 50 ms"


def report(sampler: Sampler, top: int) -> None:
    print(f"  {len(sampler.waits)} samples; {_summary('waits', sampler.waits)}")
    print(f"  {_summary('held (the analysis thread ran)', sampler.holds)}")
    for waited, where in sorted(sampler.gaps, reverse=True)[:top]:
        print(f"  {waited * 1000:7.1f} ms  {where}")
    by_place = Counter(where.split(" < ")[0] for _, where in sampler.gaps)

    print("  holds over the threshold, by the innermost line:")
    for where, count in by_place.most_common():
        longest = max(w for w, place in sampler.gaps if place.split(" < ")[0] == where)
        print(f"    {count:4d}  longest {longest * 1000:6.1f} ms  {where}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("n", type=int)
    parser.add_argument("--over", type=float, default=0.015, help="record the stack at gaps longer than this (seconds)")
    parser.add_argument("--top", type=int, default=12, help="how many of the largest gaps to show")
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--shape", choices=SHAPES, default="base", help="the synthetic system's shape (benchmarks/synthetic.py)")
    parser.add_argument(
        "--switch",
        type=float,
        help="the interpreter's switch interval (seconds; default cdl lsp's, lsp.server.SWITCH_INTERVAL; Python's is 0.005)",
    )
    parser.add_argument("--fast-bins", action="store_true", help="keep glibc's fast bins (cdl lsp turns them off: server.fast_bins_off)")
    args = parser.parse_args(argv)
    if not args.fast_bins:
        fast_bins_off()
    sys.setswitchinterval(SWITCH_INTERVAL if args.switch is None else args.switch)
    for rep in range(args.reps):
        print(f"N = {args.n}, shape {args.shape}, run {rep + 1}; load {os.getloadavg()[0]:.1f} (1 min), {os.cpu_count()} cores", flush=True)
        report(measure(args.n, args.over, args.shape), args.top)
    print(f"load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
