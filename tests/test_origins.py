"""Copies say which document they were written in: errors in copies of
copies, across three documents, point at the document and line that wrote
the element (a list that takes copies from another document's prototype
says so once, cdl.model.workspace.copies_mark; the copies themselves are unmarked)."""

from __future__ import annotations

from pathlib import Path

import pytest

import cdl
from conftest import CDL_NS

HEAD = f'<cdl:cdl xmlns:cdl="{CDL_NS}"'


def docs(base: str, middle: str, system: str) -> dict[str, str]:
    """c.cdl (urn:c) holds ``base``, b.cdl (urn:b, imports c) ``middle``,
    a.cdl (imports b) the system ``system``; ``base`` starts on line 3."""
    return {
        "a.cdl": f'{HEAD} xmlns:b="urn:b" xmlns:c="urn:c">\n<cdl:import location="b.cdl"/>\n'
        f"<cdl:system>\n{system}\n</cdl:system></cdl:cdl>",
        "b.cdl": f'{HEAD} xmlns:c="urn:c" targetNamespace="urn:b">\n<cdl:import location="c.cdl"/>\n'
        f"<cdl:configuration>\n{middle}\n</cdl:configuration></cdl:cdl>",
        "c.cdl": f'{HEAD} targetNamespace="urn:c">\n<cdl:configuration>\n{base}\n</cdl:configuration></cdl:cdl>',
    }


BASE = "<Base>\n<y>1</y>\n<g>\n<x cdl:ref='/nope'/>\n</g>\n</Base>"  # the ref on line 6 of c.cdl

CASES = {
    # system list <- b:Mid <- c:Base: the copy of a copy
    "copy-of-copy": (BASE, "<Mid cdl:extends='c:Base'><z>2</z></Mid>", "<S cdl:extends='b:Mid'/>"),
    # the same, the system list with own children around the copies
    "own-children": (BASE, "<Mid cdl:extends='c:Base'><z>2</z></Mid>", "<S cdl:extends='b:Mid'><a/><z>3</z></S>"),
    # a property of the middle list extends the base: a copy inside a copy
    "nested": (BASE, "<Mid><p cdl:extends='c:Base'/><z>2</z></Mid>", "<S cdl:extends='b:Mid'><z>3</z></S>"),
    # a nested property of the system extends the base directly
    "nested-in-system": (BASE, "<Mid><z>2</z></Mid>", "<S cdl:extends='b:Mid'><p cdl:extends='c:Base'/></S>"),
    # a reference copies the copies
    "reference": (BASE, "<Mid cdl:extends='c:Base'><z>2</z></Mid>", "<S><w cdl:refroot='b:Mid' cdl:ref='/g'/></S>"),
    # a reference copies a list that holds a copy
    "reference-nested": (BASE, "<Mid><p cdl:extends='c:Base'/></Mid>", "<S><w cdl:refroot='b:Mid' cdl:ref='/p'/></S>"),
}


@pytest.mark.parametrize("name", [name for name in CASES if not name.startswith("reference")])
def test_an_error_in_a_copy_points_where_it_was_written(name: str, write_docs) -> None:
    main = write_docs(docs(*CASES[name]))
    with pytest.raises(cdl.CdlError) as info:
        cdl.load(main).resolve()
    assert {(e.code, Path(e.url or "").name, e.line) for e in info.value.errors} == {("REF_NOT_FOUND", "c.cdl", 6)}


TYPED = "<Base>\n<y>1</y>\n<g>\n<x xmlns:xsd='http://www.w3.org/2001/XMLSchema' cdl:type='xsd:integer'>abc</x>\n</g>\n</Base>"


@pytest.mark.parametrize("name", list(CASES))
def test_a_type_error_in_a_copy_points_where_it_was_written(name: str, write_docs) -> None:
    """Typed validation reports where each value was written (the output keeps the marks)."""
    _, middle, system = CASES[name]
    main = write_docs(docs(TYPED, middle, system))
    with pytest.raises(cdl.CdlError) as info:
        cdl.load(main).resolve(validate=True)
    assert {(Path(e.url or "").name, e.line) for e in info.value.errors} == {("c.cdl", 6)}


def test_own_children_beside_copies_point_at_their_own_document(write_docs) -> None:
    """A list's own child is not taken for a copy of its prototype."""
    main = write_docs(docs("<Base><y>1</y></Base>", "<Mid cdl:extends='c:Base'/>", "<S cdl:extends='b:Mid'>\n<x cdl:ref='/nope'/></S>"))
    with pytest.raises(cdl.CdlError) as info:
        cdl.load(main).resolve()
    assert {(e.code, Path(e.url or "").name, e.line) for e in info.value.errors} == {("REF_NOT_FOUND", "a.cdl", 5)}
