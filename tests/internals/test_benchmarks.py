"""benchmarks/phases.py times every phase the engine composes
(``engine.phases.RESOLUTION_PHASES``): a phase added there shows up in the
benchmark (the other benchmark scripts are run in tests/test_benchmarks.py)."""

from __future__ import annotations

from test_benchmarks import _run


def test_phases_times_every_phase_the_engine_lists() -> None:
    from cdl.engine.phases import RESOLUTION_PHASES

    proc = _run("benchmarks/phases.py", "30", "--shape", "wide")
    assert proc.returncode == 0, proc.stderr
    for label, _ in RESOLUTION_PHASES:
        assert f"\n{label} " in proc.stdout
    assert "output: build the tree and serialize it" in proc.stdout
