"""The shared data model and the modules beside it: typed locations for
errors, and one home for limits, list scans and naming."""

from __future__ import annotations

import pytest

import cdl
from cdl.errors import LimitError, ReferenceResolutionError
from cdl.model import limits as _limits
from cdl.model import naming as _naming
from cdl.model import scan as _scan
from cdl.model import workspace as _model
from cdl.model.workspace import Location
from conftest import system

from . import inside


def _workspace(xml: str) -> _model.Workspace:
    return inside.working_copy(cdl.load(xml.encode(), name="m.cdl"))


def test_where_is_a_typed_location() -> None:
    ws = _workspace(system("<S>\n<a>\n<b/></a></S>"))
    b = ws.lists["S"][0][0]
    where = ws.ctx.where(b)
    assert isinstance(where, Location)
    assert where == Location("m.cdl", 3, "/S/a/b")
    assert (where.url, where.line, where.path) == ("m.cdl", 3, "/S/a/b")
    assert ws.ctx.at(b) == "m.cdl:3"
    # Outside the lists there is no property path.
    assert ws.ctx.where(ws.roots[0]).path is None


def test_errors_take_a_location() -> None:
    error = ReferenceResolutionError("no", at=Location("f.cdl", 7, "/L/p"))
    assert (error.url, error.line, error.path) == ("f.cdl", 7, "/L/p")
    assert error.render() == "f.cdl:7: [REF_NOT_FOUND] no (at /L/p)"
    # What is given by name wins over the location.
    error = LimitError("big", at=Location("f.cdl", 7, None), line=9, path="/L")
    assert (error.url, error.line, error.path) == ("f.cdl", 9, "/L")
    error.locate(Location("g.cdl", 1, "/M"))
    assert (error.url, error.line, error.path) == ("f.cdl", 9, "/L")


def test_limits_scans_and_naming_live_in_their_own_modules() -> None:
    assert cdl.Limits is _limits.Limits
    moved = {
        "Limits": _limits,
        "ListScan": _scan,
        "has_level": _scan,
        "elements_bound": _scan,
        "Prefixes": _naming,
        "relative_text": _naming,
        "list_name": _naming,
    }
    for name, module in moved.items():
        assert getattr(module, name).__module__ == module.__name__, name


def test_tags_and_table_indexes_are_read_with_their_assumptions_checked() -> None:
    from lxml import etree

    from cdl.model.elements import table_index, tag_of
    from cdl.model.vocabulary import P_EXT

    el = etree.fromstring("<a><!--c--><b/></a>")
    assert tag_of(el[1]) == "b"
    with pytest.raises(TypeError):
        tag_of(el[0])  # a comment has no name; the loader removes them
    el[1].set(P_EXT, "3")
    assert table_index(el[1], P_EXT) == 3
    with pytest.raises(KeyError):
        table_index(el, P_EXT)
