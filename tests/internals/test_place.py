"""Copies of a reference's targets with children (src/cdl/resolution/references.py,
``ReferenceResolver.place``): made as one copy of each target whose children
move below the reference, they must be exactly those made child by child (as
they still are when provenance is recorded, for ``Resolution.explain``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from lxml import etree

import cdl
from cdl.engine.document import loaded_of
from cdl.engine.phases import resolve_working
from cdl.model.vocabulary import P_PROV
from cdl.resolution.explain import Recorder
from conftest import CDL_NS, system

_CASES = {
    # one target copied several times (the benchmarks' `timeouts`), with
    # attributes, mixed content and tails
    "one": ("<T><a>1</a><b x='2'>t<c>3</c>u</b> <d/></T>", '<r{i} cdl:refroot="T" cdl:ref="."/>'),
    # several targets with children: shells follow the reference
    "several": ("<T><v><a>1</a></v><v><b>2</b></v></T>", '<r{i} cdl:refroot="T" cdl:ref="/v"/>'),
    # children in another namespace, declared on the target, and a CDL attribute
    "namespaced": (
        '<T xmlns:n="urn:n"><n:a>1</n:a><b n:x="2" cdl:type="xsd:string">3</b></T>',
        '<r{i} cdl:refroot="T" cdl:ref="."/>',
    ),
    # children from a prototype of another document beside the target's own
    "mixed-origins": ('<T cdl:extends="t:P"><own>1</own></T>', '<r{i} cdl:refroot="T" cdl:ref="."/>'),
}

_OTHER = f'<cdl:cdl xmlns:cdl="{CDL_NS}" targetNamespace="urn:t"><cdl:configuration><P><p>0</p></P></cdl:configuration></cdl:cdl>'


@pytest.mark.parametrize("case", sorted(_CASES))
def test_copies_of_targets_with_children_are_those_made_child_by_child(case: str, write_docs: Callable[..., Path]) -> None:
    target, ref = _CASES[case]
    refs = "".join(ref.format(i=i) for i in range(3))
    main = system(
        f"<L><g>{refs}</g><s><h>{ref.format(i=9)}</h></s></L>",
        attrs='xmlns:t="urn:t" xmlns:xsd="http://www.w3.org/2001/XMLSchema"',
        configuration=target,
    ).replace("<cdl:configuration>", '<cdl:import location="t.cdl"/><cdl:configuration>', 1)
    doc = cdl.load(write_docs({"main.cdl": main, "t.cdl": _OTHER}))
    plain, _, _ = resolve_working(loaded_of(doc), ())
    recorded, _, _ = resolve_working(loaded_of(doc), (), Recorder())
    # (Recording marks elements with their provenance: not compared.)
    etree.strip_attributes(recorded.roots[0], P_PROV)
    out = etree.tostring(plain.roots[0])
    assert out == etree.tostring(recorded.roots[0])
    assert out.count(b"<r2") == (2 if case == "several" else 1)
    assert b"cdl:ref=" not in out.split(b"<cdl:system>")[1]
