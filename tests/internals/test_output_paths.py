"""The output's known path (types written at load, unresolved items from the
resolver, required properties by tag) against its general path (scans of the
whole tree, as with CDL_NO_FAST_PATHS=1): the same bytes and the same errors
for every document the conformance cases, the samples and the test data hold.

These tests check the fast paths, so they turn them on whatever the
environment says (the general side turns them off itself)."""

from __future__ import annotations

import os
from pathlib import Path
from unittest import mock

import pytest
from lxml import etree

import cdl
from cdl.conformance import Case, load_suite
from cdl.engine.phases import LIST_TAGS
from cdl.model.switch import VARIABLE
from cdl.model.workspace import SourceDoc
from cdl.resolution.laziness import check_required, left_unresolved
from cdl.resolution.output import build_output, may_be_written, to_bytes
from conftest import CDL_NS as CDL
from conftest import system

from . import inside

ROOT = Path(__file__).resolve().parents[2]
CASES = [c for c in load_suite(ROOT / "src" / "cdl" / "conformance_cases") if c.main_path.is_file() and not c.rounds]
SAMPLES = sorted((ROOT / "samples").glob("*/system.cdl"))


@pytest.fixture(autouse=True)
def _fast_paths_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VARIABLE, raising=False)


def _both_ways(document: cdl.Document, system_only: bool) -> tuple[bytes, bytes]:
    """The output built the known way and the general way (the whole
    resolution without fast paths), from two resolutions."""
    built = []
    for known in (True, False):
        with mock.patch.dict(os.environ, {} if known else {VARIABLE: "1"}):
            ws, resolver, items = inside.resolved(document)
        assert ws.ctx.fast_paths is known
        root = build_output(
            ws, system_only, consume=True, unresolved=left_unresolved(resolver, items), facts=inside.output_facts(document)
        )
        built.append(to_bytes(root))
    return built[0], built[1]


def _check(path: Path, strict: bool = False) -> None:
    try:
        document = cdl.load(path)
        known, general = _both_ways(document, False)
    except cdl.CdlError:
        if strict:
            raise
        return  # an error case: the required check's own test covers its errors
    assert known == general
    known, general = _both_ways(document, True)
    assert known == general


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_conformance_documents(case: Case) -> None:
    _check(case.main_path)


@pytest.mark.parametrize("path", SAMPLES, ids=[p.parent.name for p in SAMPLES])
def test_samples(path: Path) -> None:
    _check(path)


def _required_errors(document: cdl.Document, tags: frozenset[str] | None) -> list[str]:
    ws = inside.working_copy(document)
    from cdl.resolution.inherit import resolve_prototypes
    from cdl.resolution.references import ReferenceResolver, find_items

    resolve_prototypes(ws)
    resolver = ReferenceResolver(ws)
    resolver.run(find_items(ws, ws.roots[0].iterchildren(*LIST_TAGS)))
    try:
        check_required(ws, resolver, tags)
    except cdl.CdlError as exc:
        return [str(exc)]
    return []


@pytest.mark.parametrize(
    "templates, components",
    [
        # A required prototype property, given by some components only.
        ('<P><a cdl:use="required"/><b/></P>', '<s1 cdl:extends="P"><a>1</a></s1><s2 cdl:extends="P"/><s3 cdl:extends="P"/>'),
        # A required top level list: its mark goes to every list that extends it.
        ('<P cdl:use="required"><a/></P>', '<s1 cdl:extends="P"/><s2 cdl:extends="P">x</s2>'),
        # Nothing required.
        ("<P><a/></P>", '<s1 cdl:extends="P"/>'),
    ],
)
def test_required_by_tag_as_by_scan(tmp_path: Path, templates: str, components: str) -> None:
    main = tmp_path / "main.cdl"
    main.write_text(system(components, configuration=templates))
    document = cdl.load(main)
    known = _required_errors(document, inside.required_tags(document))
    with mock.patch.dict(os.environ, {VARIABLE: "1"}):
        assert known == _required_errors(document, inside.required_tags(document))
    assert known == _required_errors(document, None)
    assert (inside.required_tags(document) is None) == templates.startswith('<P cdl:use')


def _doc(data: bytes) -> SourceDoc:
    root = etree.fromstring(data)
    return SourceDoc(index=0, url="x", root=root, target_ns="", nsmap={}, data=data)


def test_bytes_tell_which_attributes_a_document_can_hold() -> None:
    data = b'<a xmlns:c="urn:c"><b c:type="t" c:lazy=" true "/><d subtype="x" c:lazy="1"/></a>'
    assert may_be_written(_doc(data), b"type")
    assert not may_be_written(_doc(data), b"use")
    assert not may_be_written(_doc(data.replace(b"c:type", b"c:kind")), b"type")  # "subtype" is another name
    assert not may_be_written(_doc(data), b"lazy", rb"""(?:"(?!\s*(?:true|1)\s*")|'(?!\s*(?:true|1)\s*'))""")
    written_false = data.replace(b'c:lazy="1"', b"c:lazy = 'false'")
    assert may_be_written(_doc(written_false), b"lazy", rb"""(?:"(?!\s*(?:true|1)\s*")|'(?!\s*(?:true|1)\s*'))""")
    # In UTF-16 the bytes hold the names two bytes per letter: anything may be there.
    utf16 = '<?xml version="1.0" encoding="UTF-16"?><a/>'.encode("utf-16")
    assert may_be_written(_doc(utf16), b"type")


@pytest.mark.parametrize(
    "prototype, on_root",
    [
        # The import's prefix is written in values only: no declaration below the root.
        ('<P><a cdl:type="x:t">1</a><b cdl:ref="/a"/></P>', True),
        # An element in the import's namespace: copies carry its declaration.
        ("<P><x:a>1</x:a></P>", False),
        # An attribute in it.
        ('<P><a x:note="n">1</a></P>', False),
    ],
)
def test_namespaces_only_the_import_declares(tmp_path: Path, prototype: str, on_root: bool) -> None:
    (tmp_path / "lib.cdl").write_text(
        f'<cdl:cdl xmlns:cdl="{CDL}" xmlns:x="urn:x"><cdl:configuration>{prototype}</cdl:configuration></cdl:cdl>'
    )
    main = tmp_path / "main.cdl"
    main.write_text(
        f'<cdl:cdl xmlns:cdl="{CDL}"><cdl:import location="lib.cdl"/>'
        '<cdl:system><s cdl:extends="P"/><r cdl:extends="P"><q cdl:lazy="true"/></r></cdl:system></cdl:cdl>'
    )
    document = cdl.load(main)
    assert inside.output_facts(document).declared_on_root is on_root
    _check(main, strict=True)


@pytest.mark.parametrize(
    "main_decls, lib_decls, prototype, added",
    [
        # One namespace only values use, which the main document lacks: declared on its root at load.
        ("", 'xmlns:x="urn:x"', '<P><a cdl:type="x:t">1</a></P>', (("x", "urn:x"),)),
        # Two: the output orders them, nothing is added.
        ("", 'xmlns:x="urn:x" xmlns:y="urn:y"', '<P><a cdl:type="x:t">1</a><b cdl:type="y:t">2</b></P>', ()),
        # The main document declares it, unused by its names: the output moves it last.
        ('xmlns:x="urn:x" xmlns:z="urn:z"', 'xmlns:x="urn:x"', '<P><a cdl:type="x:t">1</a></P>', ()),
        # The same namespace under another prefix in the import.
        ('xmlns:x="urn:x"', 'xmlns:w="urn:x"', '<P><a cdl:type="w:t">1</a></P>', ()),
    ],
)
def test_value_namespaces(tmp_path: Path, main_decls: str, lib_decls: str, prototype: str, added: tuple) -> None:
    (tmp_path / "lib.cdl").write_text(
        f'<cdl:cdl xmlns:cdl="{CDL}" {lib_decls}><cdl:configuration>{prototype}</cdl:configuration></cdl:cdl>'
    )
    main = tmp_path / "main.cdl"
    main.write_text(
        f'<cdl:cdl xmlns:cdl="{CDL}" {main_decls}><cdl:import location="lib.cdl"/>'
        '<cdl:system><s cdl:extends="P"/></cdl:system></cdl:cdl>'
    )
    document = cdl.load(main)
    assert inside.output_facts(document).added == added
    _check(main, strict=True)
    out = document.resolve().to_bytes()
    assert b'xmlns:x="urn:x"' in out or b'xmlns:w="urn:x"' in out
