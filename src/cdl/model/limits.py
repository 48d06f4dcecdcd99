"""Limits: the bounds a caller sets (``cdl.Limits``) on what loading and
resolution may read and produce. The budget that charges each copy against
them is the workspace's (``workspace.Budget``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Bounds that keep hostile input from exhausting the machine.

    Every limit produces a LIMIT_EXCEEDED error that names it.
    """

    max_bytes: int = 64 * 1024 * 1024
    max_depth: int = 10_000
    max_elements: int = 2_000_000
    max_imports: int = 1_000
    max_expression_length: int = 10_000
    max_errors: int = 50
    #: Characters of values that inheritance and references may copy.
    max_text: int = 128 * 1024 * 1024
