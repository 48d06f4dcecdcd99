"""What a provenance recorder keeps (src/cdl/resolution/explain.py ``Recorder``,
and the language server's resolution with provenance, src/cdl/lsp/_targets.py
``Resolved``): its events in columns, not an object each, and one mark per
element that says both its latest event and where it is written. Counted here;
the memory it saves is measured by benchmarks/lsp.py (docs/performance.md)."""

from __future__ import annotations

import gc
from pathlib import Path

from lxml import etree

import cdl
from cdl.engine.document import loaded_of
from cdl.engine.phases import resolve_working
from cdl.lsp._navigate import Navigation
from cdl.model.vocabulary import P_PROV
from cdl.resolution.explain import Recorder, _Event, _Events
from synthetic import generate


def _system(tmp_path: Path) -> cdl.Document:
    return cdl.load(generate(30, str(tmp_path), "fanin")[1])


def test_events_read_back_as_recorded() -> None:
    a, b, c, d = (etree.Element(name) for name in "abcd")
    recorded = [
        _Event("written", None, a),
        _Event("inherited", 0, None, via=b, other=(c,)),
        _Event("overrides", None, a, other=[b, c, d]),
        _Event("extends", 2, None, via=a, other=()),
        _Event("reference", 1, None, via=b, other=(c,), round=2),
        _Event("expression", None, d, via=d, other=(a,), at=(1, 7), variables={"x": b}),
        _Event("supplied", 5, None, via=d, round=1, text="L/x", value="v"),
    ]
    events = _Events()
    for event in recorded:
        events.append(event)
    assert len(events) == len(recorded)
    for event, read in zip(recorded, events):
        assert {k: getattr(read, k) for k in _Event.__slots__} == {k: getattr(event, k) for k in _Event.__slots__}


def test_a_recorder_keeps_no_object_per_event(tmp_path: Path) -> None:
    recorder = Recorder()
    kept = resolve_working(loaded_of(_system(tmp_path)), (), recorder)
    gc.collect()
    alive = sum(1 for o in gc.get_objects() if isinstance(o, _Event))
    assert len(recorder.events) > 500
    assert {event.kind for event in recorder.events} >= {"written", "inherited", "overrides", "extends", "reference", "copied"}
    assert alive == 0
    assert kept


def test_the_language_servers_resolution_marks_each_element_once(tmp_path: Path) -> None:
    """Where each element is written rides in the recorder's own mark: the
    resolution with provenance has, element by element, the attributes of
    one that records without it, and its mark on the elements that had none."""
    document = _system(tmp_path)
    resolved = Navigation(document, {}).targets.resolved()
    assert resolved is not None
    plain = resolve_working(loaded_of(document), (), Recorder())[0]
    pairs = [
        (mine, theirs)
        for own, other in zip(resolved.ws.roots, plain.roots, strict=True)
        for mine, theirs in zip(own.iter(etree.Element), other.iter(etree.Element), strict=True)
    ]
    assert len(pairs) > 1000
    for mine, theirs in pairs:
        assert set(mine.attrib) == set(theirs.attrib) | {P_PROV}
    # Each names the loaded element it was copied from, and each loaded element is named.
    origins = [resolved.origin(mine) for mine, _ in pairs]
    assert all(origin is not None and origin.tag == mine.tag for origin, (mine, _) in zip(origins, pairs))
    loaded = [el for doc in loaded_of(document).docs for el in doc.root.iter(etree.Element)]
    assert set(loaded) <= set(origins)
