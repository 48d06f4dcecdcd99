"""Time each phase of one resolution, without a profiler's overhead.

    python benchmarks/phases.py N [--shape base|fanin|fanout|wide] [--engine DIR] [--with-gc]

Generates the system (benchmarks/generate.py) and runs the phases that
``cdl.load(system).resolve().to_bytes()`` runs, one at a time, with a clock
around each: load (parse, normalize, imports, names), the working copy,
prototypes, finding items, references and expressions, the required check,
building the output tree, and serializing it. It calls the engine's internal
modules the way ``cdl/_engine.py`` composes them (``Resolution.__init__``),
so it must follow that composition when it changes. cProfile attributes the
C work of lxml (XPath, copies, namespace clean-up) to the Python function that
calls it and slows Python code down several times; these numbers do not.

``--engine DIR`` measures the cdl package in ``DIR/cdl`` (for instance
``git archive COMMIT cdl | tar -x -C DIR``) instead of the installed one.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import os
import resource
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from generate import SHAPES, generate  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int)
    parser.add_argument("--shape", choices=SHAPES, default="base")
    parser.add_argument("--engine", metavar="DIR")
    parser.add_argument(
        "--with-gc",
        action="store_true",
        help="keep Python's cyclic garbage collector on (the engine pauses it while it works)",
    )
    args = parser.parse_args(argv)
    if not args.with_gc:
        import gc

        gc.disable()
    if args.engine:
        sys.path.insert(0, os.path.abspath(args.engine))

    import cdl
    from cdl import _engine
    from cdl._inherit import resolve_prototypes
    from cdl._laziness import check_required
    from cdl._references import ReferenceResolver, find_items
    from cdl._serialize import build_output, to_bytes

    limits = cdl.Limits(max_bytes=1 << 40, max_elements=1 << 40)
    rows: list[tuple[str, float, float, float, int]] = []

    def usage() -> tuple[float, float, float, int]:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return time.perf_counter(), ru.ru_utime, ru.ru_stime, ru.ru_minflt

    def record(label: str, before: tuple[float, float, float, int]) -> None:
        after = usage()
        wall, user, system, faults = (a - b for a, b in zip(after, before))
        rows.append((label, user + system, wall, system, int(faults)))

    def timed(label, func, *fargs):
        before = usage()
        result = func(*fargs)
        record(label, before)
        return result

    with tempfile.TemporaryDirectory(prefix="cdl-phases-") as tmp:
        _, system = generate(args.n, tmp, args.shape)
        gc_note = ", cyclic GC on" if args.with_gc else ""
        print(f"engine: {os.path.dirname(cdl.__file__)}; N = {args.n}, shape {args.shape}{gc_note}")
        doc = timed("load: parse, normalize, imports, names", lambda: cdl.load(system, limits=limits))
        ws = timed("workspace: copy the documents, index lists", doc._workspace)
        timed("prototypes (cdl:extends)", resolve_prototypes, ws)
        parents = ws.roots[0].iterchildren(*_engine._LIST_TAGS)
        # Older engines (--engine) take the parents only and always copy the output.
        newer = len(inspect.signature(find_items).parameters) == 2
        # Newer engines find the items among the other elements of their
        # names, and the resolver tells them apart as it goes (as _engine does).
        import cdl._references as references

        if hasattr(references, "find_candidates"):
            items = timed("find items (and elements of their names)", references.find_candidates, ws, parents)
            resolver = ReferenceResolver(ws)
            timed(f"references and expressions ({len(items)} candidates)", functools.partial(resolver.run, items, candidates=True))
        else:
            items = timed("find items", find_items, *((ws, parents) if newer else (parents,)))
            resolver = ReferenceResolver(ws)
            timed(f"references and expressions ({len(items)} items)", resolver.run, items)
        # Newer engines know from the loaded documents which tags can be
        # required, and tell the output what is left unresolved.
        known = "tags" in inspect.signature(check_required).parameters
        timed("required check", check_required, ws, resolver, *((doc._required_tags,) if known else ()))
        # (The working trees go to the output: nothing reads them after this.)
        if known:
            from cdl._laziness import left_unresolved

            def build_known(ws, resolver, items, facts):
                return build_output(ws, consume=True, unresolved=left_unresolved(resolver, items), facts=facts)

            build = functools.partial(build_known, ws, resolver, items, doc._output_facts)
        else:
            build = functools.partial(build_output, ws, consume=True) if newer else functools.partial(build_output, ws)
        root = timed("build output tree", build)
        data = timed("serialize", to_bytes, root)
        before = usage()
        # (parents too: an lxml tag iterator keeps its document alive even
        # when exhausted, and with it the whole working tree.)
        del root, resolver, ws, doc, items, build, parents
        record("free the trees", before)

    total_cpu = sum(r[1] for r in rows)
    width = max(len(r[0]) for r in rows)
    print(f"{'phase':<{width}}  {'CPU s':>8}  {'wall s':>8}  {'share':>6}  {'of which sys s':>14}  {'page faults':>11}")
    for label, cpu_s, wall_s, sys_s, faults in rows:
        print(f"{label:<{width}}  {cpu_s:8.3f}  {wall_s:8.3f}  {cpu_s / total_cpu:6.1%}  {sys_s:14.3f}  {faults:11d}")
    total_sys, total_faults = sum(r[3] for r in rows), sum(r[4] for r in rows)
    print(f"{'total':<{width}}  {total_cpu:8.3f}  {'':8}  {'':6}  {total_sys:14.3f}  {total_faults:11d}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"output {len(data)} bytes; peak memory {peak:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
