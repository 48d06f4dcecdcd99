"""The collector pause around the engine's phases (engine.phases.cyclic_gc_paused)."""

from __future__ import annotations

import gc
import weakref

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
