"""What moving a running deployment to new documents costs (``Deployment.update``,
``cdl deploy update``; issue 32, point 4).

    python benchmarks/update.py N [--shape base|fanin|fanout|wide] [--change kind|all|one] [--reps 3]

Generates the system (``benchmarks/synthetic.py``) twice, as the running and
the next version, edits the next one (``--change``, as ``benchmarks/diff.py``:
``kind``, one template value a tenth of the components inherit; ``all``, one
every component inherits; ``one``, one value of one component: what an
update costs besides its changed components), loads both, and deploys the running version
whole (every component reported deployed as it becomes ready, with its
values), untimed. Then, ``--reps`` times, in user CPU seconds: one
resolution of the next version (``Document.resolve()``), one with its output
(``resolve().to_bytes()``, what ``cdl resolve`` does), a fresh deployment of
it (``Document.deploy()``: resolution and plan, what a service without update
begins again from), and the update of a copy of the running deployment
(``Deployment.update``, no journal). It prints each run, the medians, the
update's ratio to one resolution (the target of issue 32: at most 1.5, plus
what the changed components cost) and to the others, and how many components
the update left ``changed``.
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

import cdl
from synthetic import SHAPES, generate

#: Each change: the file of the next version edited, and its first occurrence of a text replaced.
EDITS: dict[str, tuple[str, str, str]] = {
    "kind": ("templates.cdl", "<workers>8</workers>", "<workers>16</workers>"),
    "all": ("templates.cdl", "<interval>10</interval>", "<interval>15</interval>"),
    "one": ("system.cdl", "<replicas>1</replicas>", "<replicas>2</replicas>"),
}
TARGET = 1.5


def _user() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_utime


def _deployed(doc: cdl.Document) -> cdl.Deployment:
    """``doc`` deployed whole, as a service would report it."""
    deployment = doc.deploy()
    planned = {c.path: c for c in deployment.plan.components()}
    queue = list(deployment.ready())
    while queue:
        path = queue.pop()
        component = planned[path]
        values = {p: f"v-{p}" for p in component.supplies}
        queue += deployment.deployed(path, values, component.releases)
    return deployment


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("n", type=int)
    parser.add_argument("--shape", choices=SHAPES, default="base")
    parser.add_argument("--change", choices=sorted(EDITS), default="kind")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    limits = cdl.Limits(max_bytes=1 << 40, max_elements=1 << 40)
    with tempfile.TemporaryDirectory(prefix="cdl-update-") as tmp:
        old_dir, new_dir = os.path.join(tmp, "old"), os.path.join(tmp, "new")
        generate(args.n, old_dir, args.shape)
        shutil.copytree(old_dir, new_dir)
        edited, before, after = EDITS[args.change]
        edited = os.path.join(new_dir, edited)
        with open(edited, encoding="utf-8") as handle:
            text = handle.read()
        assert before in text, before
        with open(edited, "w", encoding="utf-8") as handle:
            handle.write(text.replace(before, after, 1 if args.change == "one" else -1))
        old = cdl.load(os.path.join(old_dir, "system.cdl"), limits=limits)
        new = cdl.load(os.path.join(new_dir, "system.cdl"), limits=limits)
    print(f"engine: {os.path.dirname(cdl.__file__)}; N = {args.n}, shape {args.shape}, change {args.change}")
    resolves: list[float] = []
    outputs: list[float] = []
    opens: list[float] = []
    updates: list[float] = []
    changed = 0
    for _ in range(args.reps):
        gc.collect()
        start = _user()
        new.resolve()
        resolves.append(_user() - start)
        gc.collect()
        start = _user()
        new.resolve().to_bytes()
        outputs.append(_user() - start)
        gc.collect()
        start = _user()
        new.deploy()
        opens.append(_user() - start)
        deployment = _deployed(old)  # untimed: a running deployment to update
        gc.collect()
        start = _user()
        deployment.update(new)
        updates.append(_user() - start)
        changed = sum(1 for c in deployment.status().components if c.state == "changed")
        del deployment
    ratios = [u / r for u, r in zip(updates, resolves)]
    print(f"resolve  user s: {' '.join(f'{t:.2f}' for t in resolves)}   median {statistics.median(resolves):.2f}")
    print(f"resolve + output user s: {' '.join(f'{t:.2f}' for t in outputs)}   median {statistics.median(outputs):.2f}")
    print(f"deploy (open) user s: {' '.join(f'{t:.2f}' for t in opens)}   median {statistics.median(opens):.2f}")
    print(f"update   user s: {' '.join(f'{t:.2f}' for t in updates)}   median {statistics.median(updates):.2f}")
    runs = " ".join(f"{r:.2f}" for r in ratios)
    print(f"update / resolve, each run: {runs}; median {statistics.median(ratios):.2f} (target <= {TARGET} plus the changed components)")
    for label, base in (("resolve + output", outputs), ("deploy (open)", opens)):
        print(f"update / {label}, median: {statistics.median(u / b for u, b in zip(updates, base)):.2f}")
    print(f"changed components: {changed}; load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
