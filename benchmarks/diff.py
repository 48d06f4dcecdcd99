"""What a diff costs (``Document.diff``, ``cdl diff``; issue 32, point 4).

    python benchmarks/diff.py N [--shape base|fanin|fanout|wide] [--change kind|all|two] [--reps 3]

Generates the system (``benchmarks/synthetic.py``) twice, as the old and the
new version, edits the new one, and loads both (untimed). Then it times one
resolution of the new version (``Document.resolve()``; and with its output,
``resolve().to_bytes()``, what ``cdl resolve`` does), and the diff of the two
(``old.diff(new)``), ``--reps`` times each, in user CPU seconds: the
machine is shared, and other processes' load shows in wall time, hardly in
user time. It prints each run, the best and the median, the diff's ratio to
one resolution (the target of issue 32: at most 2.5 at N = 20,000 for one
template value), and what the diff found.

The edits (``--change``):

- ``kind`` (the default): one template value, ``Frontend``'s ``workers``,
  which the components of that kind and its variants inherit (a tenth of
  them);
- ``all``: one template value every component inherits (``Component``'s
  health ``interval``);
- ``two``: two values written apart (``Frontend``'s ``workers`` and
  ``Postgres``' ``version``), so that the causes are told apart through the
  versions' provenance (each resolved again with a recorder).

Exit status 1 when ``--check`` is given and the ratio is over the target.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable

import cdl
from synthetic import SHAPES, generate

#: The edits of the new version's templates: what each --change replaces.
EDITS: dict[str, list[tuple[str, str]]] = {
    "kind": [("<workers>8</workers>", "<workers>16</workers>")],
    "all": [("<interval>10</interval>", "<interval>15</interval>")],
    "two": [("<workers>8</workers>", "<workers>16</workers>"), ("<version>16.3</version>", "<version>16.4</version>")],
}
TARGET = 2.5


def _user() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_utime


def _timed(reps: int, action: Callable[[], object]) -> tuple[list[float], object]:
    times: list[float] = []
    result: object = None
    for _ in range(reps):
        result = None
        gc.collect()
        start = _user()
        result = action()
        times.append(_user() - start)
    return times, result


def _shown(label: str, times: list[float]) -> str:
    runs = " ".join(f"{t:.2f}" for t in times)
    return f"{label:18} user s: {runs}   best {min(times):.2f}   median {statistics.median(times):.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("n", type=int)
    parser.add_argument("--shape", choices=SHAPES, default="base")
    parser.add_argument("--change", choices=sorted(EDITS), default="kind")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--check", action="store_true", help=f"exit 1 when the diff costs over {TARGET} resolutions")
    args = parser.parse_args(argv)
    limits = cdl.Limits(max_bytes=1 << 40, max_elements=1 << 40)
    with tempfile.TemporaryDirectory(prefix="cdl-diff-") as tmp:
        old_dir, new_dir = os.path.join(tmp, "old"), os.path.join(tmp, "new")
        generate(args.n, old_dir, args.shape)
        shutil.copytree(old_dir, new_dir)
        templates = os.path.join(new_dir, "templates.cdl")
        with open(templates, encoding="utf-8") as handle:
            text = handle.read()
        for before, after in EDITS[args.change]:
            assert before in text, before
            text = text.replace(before, after)
        with open(templates, "w", encoding="utf-8") as handle:
            handle.write(text)
        old = cdl.load(os.path.join(old_dir, "system.cdl"), limits=limits)
        new = cdl.load(os.path.join(new_dir, "system.cdl"), limits=limits)
    print(f"engine: {os.path.dirname(cdl.__file__)}; N = {args.n}, shape {args.shape}, change {args.change}")
    # Interleaved, so that the machine's load weighs on each alike.
    times: dict[str, list[float]] = {"resolve": [], "resolve + output": [], "diff": []}
    found: object = None
    for _ in range(args.reps):
        times["resolve"] += _timed(1, new.resolve)[0]
        times["resolve + output"] += _timed(1, lambda: new.resolve().to_bytes())[0]
        spent, found = _timed(1, lambda: old.diff(new))
        times["diff"] += spent
    assert isinstance(found, cdl.Diff)
    for label, runs in times.items():
        print(_shown(label, runs))
    ratios = [d / r for d, r in zip(times["diff"], times["resolve"])]
    ratio = statistics.median(ratios)
    ratio_out = statistics.median(d / r for d, r in zip(times["diff"], times["resolve + output"]))
    values = sum(len(c.values) for c in found.components)
    print(f"diff / resolve, each run: {' '.join(f'{r:.2f}' for r in ratios)}; median {ratio:.2f} (target <= {TARGET})")
    print(f"diff / (resolve + output), median: {ratio_out:.2f}; load average {os.getloadavg()[0]:.1f}")
    print(f"found: {len(found.components)} components changed, {values} values, {len(found.causes)} causes")
    return 1 if args.check and ratio > TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
