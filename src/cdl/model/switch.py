"""The one switch for the engine's specialisations (fast paths).

Some phases have, beside their general code, a specialisation for the common
case: it calls the same rules, decides the same things and only does less
work for them (docs/performance.md lists each, with its invariant and the
test that guards it). ``CDL_NO_FAST_PATHS=1`` in the environment turns every
one of them off, so that the engine runs only its general code: the oracle
that tests hold the specialisations to (tests/test_differential.py).

The variable is read when a load or a resolution starts (``cdl.load``,
``Document.resolve``), never in the middle of one: a phase asks its
``LoadOptions.fast_paths`` or ``Context.fast_paths``.
"""

from __future__ import annotations

import os

#: The environment variable; any value but empty or ``0`` turns the fast paths off.
VARIABLE = "CDL_NO_FAST_PATHS"


def fast_paths_enabled() -> bool:
    """Whether specialisations may run in the load or resolution starting now."""
    return os.environ.get(VARIABLE, "") in ("", "0")
