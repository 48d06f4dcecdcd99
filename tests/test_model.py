"""Errors carry their location from every phase: code, file, line and path
(the typed locations behind them are tested in tests/internals/test_model.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import cdl
from conftest import system

PACKAGE = Path(cdl.__file__).resolve().parent


def test_errors_raised_in_phases_carry_their_location() -> None:
    with pytest.raises(cdl.CdlError) as info:
        cdl.load(system("<S>\n<a cdl:ref='nothing'/></S>").encode(), name="m.cdl").resolve()
    assert (info.value.code, info.value.url, info.value.line, info.value.path) == ("REF_NOT_FOUND", "m.cdl", 2, "/S/a")


def test_no_location_is_spread_as_untyped_keywords() -> None:
    # Locations are passed whole (at=...), so no call needs a type: ignore.
    spread = re.compile(r"\*\*[\w.]*where\(")
    for path in PACKAGE.rglob("*.py"):
        assert not spread.search(path.read_text()), path.name
