"""The benchmark scripts still run, on tiny systems.

They are not tests of speed (nothing here is timed): they read the engine's
list of phases and its public API, and a rename there must show up here rather
than at the next measurement. They run as the README says, from the
repository root, in processes of their own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not (ROOT / "benchmarks").is_dir(), reason="needs the source tree (benchmarks/)")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.parametrize(
    "args",
    [
        ("benchmarks/explain_cost.py", "30", "--reps", "1"),
        ("benchmarks/plan.py", "30", "--reps", "1"),
        ("benchmarks/plan.py", "--chain", "30", "--reps", "1"),
        ("benchmarks/profile_resolve.py", "30", "--top", "3"),
        ("benchmarks/diff.py", "60", "--reps", "1"),
        ("benchmarks/diff.py", "60", "--reps", "1", "--change", "two", "--shape", "wide"),
        ("benchmarks/update.py", "60", "--reps", "1", "--change", "one"),
    ],
    ids=["explain_cost", "plan", "plan-chain", "profile_resolve", "diff", "diff-two-wide", "update-one"],
)
def test_script_runs(args: tuple[str, ...]) -> None:
    proc = _run(*args)
    assert proc.returncode == 0, proc.stderr


def test_run_checks_the_targets() -> None:
    # At 30 components the interpreters' own cost decides the ratios, so the
    # verdicts may go either way; what matters is that each target is checked
    # and that the exit status says whether one was missed (1) or none (0).
    proc = _run("benchmarks/run.py", "--sizes", "30,60", "--shapes", "fanin", "--reps", "1")
    verdicts = [line for line in proc.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert proc.returncode == (1 if any(line.startswith("FAIL") for line in verdicts) else 0), proc.stderr
    assert [line.split(":", 1)[1].split(",")[0].strip() for line in verdicts] == [
        "linear growth 30 -> 60",
        "at 60",
        "at 60",
    ]
    assert "the floor (at most 12x)" in verdicts[1] and "the floor's (at most 2x)" in verdicts[2]


def test_synthetic_cli_writes_both_documents(tmp_path: Path) -> None:
    proc = _run("benchmarks/synthetic.py", "3", str(tmp_path), "--shape", "fanout")
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["system.cdl", "templates.cdl"]


def test_deploy_runs_and_prints_every_target() -> None:
    """benchmarks/deploy.py drives whole deployments and checks every target
    (tiny systems may miss one: nothing here is timed), exit 1 exactly when
    one was missed."""
    proc = _run("benchmarks/deploy.py", "--sizes", "30,60", "--shapes", "base,wide", "--reps", "1", "--chains", "10", "--length", "5")
    assert not proc.stderr, proc.stderr
    verdicts = [line.split()[-1] for line in proc.stdout.splitlines() if line.startswith("  ") and "target <=" in line]
    # Each shape: 4 at the size, 3 growths, fsyncs; failures in chains: 3 events x 2, refusals x 2, reopening.
    assert set(verdicts) <= {"ok", "MISSED"} and len(verdicts) == 2 * 8 + 9
    assert proc.returncode == (1 if "MISSED" in verdicts else 0)
    for label in ("open / static", "whole deployment / static", "median event", "99th percentile event", "growth 30 -> 60", "fsyncs per event"):
        assert label in proc.stdout
    for label in ("failed: median event", "supply: 99th percentile event", "retry: median event", "refused event: median", "reopen / reopen"):
        assert label in proc.stdout


def test_hostile_checks_every_bound() -> None:
    """benchmarks/hostile.py holds the time bounds the unit tests no longer
    assert: it measures each and exits 1 exactly when one was missed."""
    proc = _run("benchmarks/hostile.py", "--reps", "1")
    assert not proc.stderr, proc.stderr
    verdicts = [line.split()[-1] for line in proc.stdout.splitlines() if "bound <=" in line]
    assert set(verdicts) <= {"ok", "MISSED"} and len(verdicts) == 15
    assert proc.returncode == (1 if "MISSED" in verdicts else 0)
    for what in ("40-level doubling (extends) refused by cdl resolve", "billion laughs refused (deep parser)", "1,000-long extends chain resolved"):
        assert what in proc.stdout


def test_journal_checks_every_target() -> None:
    """benchmarks/journal.py reads journals of both formats and appends, and
    checks its two targets (nothing here is timed), exit 1 exactly when one
    was missed."""
    proc = _run("benchmarks/journal.py", "--events", "50", "--reps", "1")
    assert not proc.stderr, proc.stderr
    verdicts = [line.split()[-1] for line in proc.stdout.splitlines() if "(target" in line]
    assert set(verdicts) <= {"ok", "MISSED"} and len(verdicts) == 2
    assert proc.returncode == (1 if "MISSED" in verdicts else 0)
    for label in ("read version 1", "read version 2", "version 2 / version 1", "checksum", "fsyncs per event 1"):
        assert label in proc.stdout
