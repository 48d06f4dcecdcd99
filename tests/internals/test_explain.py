"""Provenance against the working state: a plain resolution records nothing in
its trees, and every property's explanation agrees with the element the
resolution holds for it (tests/test_explain.py has ``explain`` as users call it)."""

from __future__ import annotations

import json
from pathlib import Path

import cdl
from conftest import ENGINE_NS, load_text
from test_explain import PAIR, SAMPLES

from . import inside


def test_plain_resolution_records_nothing() -> None:
    res = load_text(PAIR).resolve()
    ws = inside.working_state(res)[0]
    assert ws.recorder is None
    assert not any(el.get(f"{{{ENGINE_NS}}}prov") is not None for root in ws.roots for el in root.iter())


def _documents(tmp_path: Path) -> list[tuple[cdl.Document, dict[str, str]]]:
    from synthetic import generate

    _, bench = generate(6, str(tmp_path), "fanin")
    webapp = cdl.load(SAMPLES / "webapp" / "system.cdl")
    return [
        (cdl.load(bench), {}),
        (cdl.load(SAMPLES / "shop" / "system.cdl"), {}),
        (webapp, {}),
        (webapp, {"WebApplication/t:DB/t:hostname": "db", "WebApplication/t:Web/t:hostname": "web"}),
    ]


def test_every_property_explained_agrees_with_the_resolution(tmp_path: Path) -> None:
    from lxml import etree

    for document, values in _documents(tmp_path):
        res = document.resolve(values)
        ws = inside.working_state(res)[0]
        pending = {p.path for p in res.pending}
        by_path: dict[str, list[etree._Element]] = {}
        for part in ws.roots[0]:
            if part.tag in (f"{{{cdl.CDL_NS}}}system", f"{{{cdl.CDL_NS}}}configuration"):
                for el in part.iter(etree.Element):
                    if el is not part and el.tag != f"{{{cdl.CDL_NS}}}expression" and el.tag != f"{{{cdl.CDL_NS}}}variable":
                        by_path.setdefault(ws.ctx.prefixes.path_of(el), []).append(el)
        assert len(by_path) > 20
        for path, elements in by_path.items():
            found = res.explain(path)
            assert [e.path for e in found] == [path] * len(elements)
            for e, el in zip(found, elements):
                if e.status == "pending":
                    assert path in pending and e.value is None
                    assert [s.kind for s in e.steps][:2] == ["written", "pending"]
                else:
                    assert e.value == (None if len(el) else (el.text or "")), path
                    assert e.steps and e.steps[0].kind in ("written", "reference")
                data = json.dumps(e.to_data())  # plain data all the way down
                assert '"kind"' in data
