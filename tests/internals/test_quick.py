"""The resolver's specialisation (``resolution.shortcuts``) from inside: its
passable set stays bounded, and the switch leaves only the general code
(tests/test_quick.py compares both ways through the public API)."""

from __future__ import annotations

import pytest
from lxml import etree

from conftest import FAST_PATHS_OFF, system
from test_quick import _outcome


def test_emptying_the_passable_set_keeps_the_wide_elements_only() -> None:
    # A wide list forgotten would have its children counted again at each
    # emptying: O(N) per O(N) items (the wide benchmark shape at 200k).
    from cdl.resolution.shortcuts import _PASSABLE_MAX, _make_room

    wide_one, narrow = etree.Element("w"), [etree.Element(f"n{i}") for i in range(3)]
    passable = {wide_one: 20, **dict.fromkeys(narrow, 2)}
    wide = {wide_one: 20}
    _make_room(passable, wide)
    assert passable == {wide_one: 20} and wide == {wide_one: 20}
    # When most elements are wide, everything goes: memory stays bounded.
    many = {etree.Element(f"w{i}"): 20 for i in range(_PASSABLE_MAX // 2)}
    passable, wide = dict(many), dict(many)
    _make_room(passable, wide)
    assert passable == {} and wide == {}


def test_the_switch_leaves_only_the_general_code(monkeypatch: pytest.MonkeyPatch) -> None:
    # With CDL_NO_FAST_PATHS the resolver never asks the specialisation,
    # which otherwise resolves the common items itself.
    from cdl.resolution.shortcuts import ReferenceShortcuts

    asked: list[bool] = []
    resolved = ReferenceShortcuts.resolved

    def counted(self: ReferenceShortcuts, item: etree._Element, depth: int = 0) -> bool:
        done = resolved(self, item, depth)
        asked.append(done)
        return done

    monkeypatch.setattr(ReferenceShortcuts, "resolved", counted)
    monkeypatch.delenv(FAST_PATHS_OFF, raising=False)  # the suite may run with the switch on
    xml = system('<L><a>1</a><r cdl:ref="a"/><s cdl:refroot="L" cdl:ref="/r"/></L>')
    fast = _outcome(xml)
    assert any(asked)
    asked.clear()
    monkeypatch.setenv(FAST_PATHS_OFF, "1")
    assert _outcome(xml) == fast and not asked
