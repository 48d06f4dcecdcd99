"""The collector pause around the engine's phases (engine.phases.cyclic_gc_paused)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import pytest

from cdl.engine.phases import cyclic_gc_paused


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_survivors_skip_the_young_collections_but_cycles_are_still_freed() -> None:
    assert gc.isenabled()
    with cyclic_gc_paused():
        assert not gc.isenabled()
        kept = [_Node() for _ in range(5000)]
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        dead = weakref.ref(a)
        del a, b
    assert gc.isenabled()
    # What the phase left alive is no longer young: a young collection walks none of it.
    assert gc.get_count()[0] < 100
    assert gc.get_freeze_count() == 0
    assert dead() is not None  # a cycle: reference counting alone cannot free it
    gc.collect()
    assert dead() is None  # a full collection still does
    assert len(kept) == 5000


def test_objects_the_caller_froze_stay_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with cyclic_gc_paused():
            made = [_Node() for _ in range(100)]
        assert gc.get_freeze_count() == frozen
        assert gc.isenabled() and len(made) == 100
    finally:
        gc.unfreeze()


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    try:
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_update_runs_with_the_collector_paused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Deployment.update, from resolving the new documents to the record
    (a full collection came in the middle of each one), and not after."""
    import cdl
    import cdl.engine.deployment_state as deployment_state

    text = '<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"><cdl:system><a><v>1</v></a></cdl:system></cdl:cdl>'
    (tmp_path / "v1.cdl").write_text(text)
    (tmp_path / "v2.cdl").write_text(text.replace("<v>1</v>", "<v>2</v>"))
    seen: list[bool] = []
    record = deployment_state.update_record

    def watched(*args: Any) -> dict[str, Any]:
        seen.append(gc.isenabled())
        return record(*args)

    monkeypatch.setattr(deployment_state, "update_record", watched)
    deployment = cdl.load(tmp_path / "v1.cdl").deploy()
    deployment.deployed("/a")
    deployment.update(cdl.load(tmp_path / "v2.cdl"))
    assert seen == [False] and gc.isenabled()
