"""The fast-path switch is read when a resolution starts, not when the document
was loaded: seen on the working state of the first phase (the differential
tests themselves are in tests/test_differential.py)."""

from __future__ import annotations

from pathlib import Path

import cdl
from conftest import fast_paths
from strategies import Mutant, corpus


def test_switch_is_read_when_a_resolution_starts(tmp_path: Path) -> None:
    """A Document loaded with the fast paths on resolves with them off when
    the variable is set later, and the other way round."""
    from cdl.engine.document import loaded_of
    from cdl.engine.phases import RESOLUTION_PHASES, Run

    seed = next(s for s in corpus() if s.name.startswith("samples/webapp"))
    main = Mutant(seed.name, seed.main, dict(seed.files)).write(tmp_path)
    with fast_paths(True):
        doc = cdl.load(main)
    for enabled in (False, True):
        with fast_paths(enabled):
            run = Run(loaded_of(doc), ())
            RESOLUTION_PHASES[0][1](run)  # copies the documents: the resolution starts
            assert run.ws.ctx.fast_paths is enabled
