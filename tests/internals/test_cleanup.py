"""A Resolution's working state after an output (pending read without
resolving again, what needs the trees resolves again), its repr counting
what is pending without writing the report, and names removed from the
engine's modules staying gone (tests/test_cleanup.py has the rest)."""

from __future__ import annotations

import pytest

import cdl
from cdl import conformance
from cdl.engine import document as _engine
from cdl.engine import phases as _phases
from cdl.engine import resolution as _resolution
from cdl.loading import registry as _names
from cdl.loading import schema as validate
from cdl.model import expressions as _expressions
from cdl.resolution import output as _serialize
from conftest import resolve_text, system

LAZY = system('<S><p cdl:lazy="true"/><r cdl:ref="p"/><v>1</v></S>')


def _resolutions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the resolutions made from now on."""
    made: list[int] = []
    real = _phases.resolve_prototypes

    def counting(ws: object) -> None:
        made.append(1)
        real(ws)  # type: ignore[arg-type]

    monkeypatch.setattr(_phases, "resolve_prototypes", counting)
    return made


def test_pending_stays_readable_after_an_output_without_resolving_again(monkeypatch: pytest.MonkeyPatch) -> None:
    res = resolve_text(LAZY)
    made = _resolutions(monkeypatch)
    res.to_bytes()  # takes the working trees apart
    assert [(p.path, p.kind) for p in res.pending] == [("/S/p", "lazy-property"), ("/S/r", "reference")]
    assert made == []  # the report was made before the trees were taken


def test_what_needs_the_working_trees_after_an_output_resolves_again(monkeypatch: pytest.MonkeyPatch) -> None:
    res = resolve_text(LAZY)
    first = res.to_bytes()
    made = _resolutions(monkeypatch)
    assert res.to_bytes() == first and made == []  # the same output: built once
    system_only = res.to_bytes(system_only=True)  # another output needs the trees again
    assert made == [1] and b"<S>" in system_only
    assert res.check_types() == ([], [])
    assert res.to_bytes() == first and res.pending[0].path == "/S/p"


def test_dead_code_is_gone() -> None:
    assert not hasattr(_expressions, "format_value")
    assert not hasattr(_names.Registry, "lookup")
    assert not hasattr(_serialize, "_Repeated") and not hasattr(_serialize, "_plain")
    assert not [name for name in vars(validate) if name in ("_CDL_NS", "_XSD_NS", "_CDL_ROOT", "_CDL_TYPE")]
    # One public Round: the deploy-time round of cdl; a case's round is CaseRound.
    assert "Round" not in conformance.__all__ and "CaseRound" in conformance.__all__
    assert cdl.Round is _engine.Round


def test_the_repr_counts_what_is_pending_without_writing_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    # The report writes every pending item's path (most of its cost on a
    # large system); a repr, in a debugger or a log line, only counts them.
    reports: list[int] = []
    real = _resolution.pending_report

    def counted(*args: object, **kwargs: object) -> list[cdl.Pending]:
        reports.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_resolution, "pending_report", counted)
    res = resolve_text(LAZY)
    assert repr(res) == "<cdl.Resolution 'mem.cdl' (2 pending)>"
    assert reports == []
    res.to_bytes()  # an output takes the trees: the count is still there
    assert repr(res) == "<cdl.Resolution 'mem.cdl' (2 pending)>" and reports == []
    assert len(res.pending) == 2 and reports == [1, 1]  # everything, and what the system waits for
