"""The one definition of "still unresolved" (src/cdl/model/items.py): its XPath and its
Python forms agree on every kind of node, and every phase that asks uses it."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from lxml import etree

import cdl
from cdl.model.items import NAMESPACES, UNRESOLVED_TEST, is_unresolved
from cdl.model.paths import walk
from cdl.model.vocabulary import A_LAZY, P_EXPR, P_REF, T_EXPRESSION, T_VARIABLE
from cdl.model.vocabulary import cdl as cdl_name
from cdl.resolution.inherit import resolve_prototypes
from cdl.resolution.references import ReferenceResolver, find_candidates, find_items
from conftest import list_xml, resolve_text, system

from . import inside

_MATCHES = etree.XPath("descendant-or-self::*" + UNRESOLVED_TEST, namespaces=NAMESPACES)
ROOT = Path(__file__).resolve().parents[2]


def _agree(root: etree._Element) -> list[etree._Element]:
    """Assert both forms select the same elements of ``root``; return them."""
    by_xpath = _MATCHES(root)
    by_python = [el for el in root.iter(etree.Element) if is_unresolved(el)]
    assert by_xpath == by_python
    return by_python


# Every combination of what the definition looks at: the element's name, a
# parsed reference, cdl:lazy as written after loading, and a value.
_TAGS = {
    "plain": "p",
    "namespaced": "{urn:x}p",
    "expression": T_EXPRESSION,
    "variable": T_VARIABLE,
    "other-cdl": cdl_name("documentation"),
}
_LAZY = {"absent": None, "true": "true", "false": "false"}
_VALUES = {"none": None, "text": "text", "blank": "  ", "child": "child"}


def _node(tag: str, ref: bool, lazy: str | None, value: str | None) -> etree._Element:
    el = etree.Element(tag)
    if ref:
        el.set(P_REF, "0")
    if tag == T_EXPRESSION:
        el.set(P_EXPR, "0")
    if lazy is not None:
        el.set(A_LAZY, lazy)
    if value == "child":
        etree.SubElement(el, "c")
    elif value is not None:
        el.text = value
    return el


def _expected(kind: str, ref: bool, lazy: str | None) -> bool:
    # The definition in words (src/cdl/model/items.py): a reference, an expression, or
    # a lazy element other than a variable; a value changes nothing.
    return ref or kind == "expression" or (lazy == "true" and kind != "variable")


@pytest.mark.parametrize(
    ("kind", "ref", "lazy", "value"),
    list(itertools.product(_TAGS, (False, True), _LAZY, _VALUES)),
)
def test_both_forms_agree_on_every_kind_of_node(kind: str, ref: bool, lazy: str, value: str) -> None:
    el = _node(_TAGS[kind], ref, _LAZY[lazy], _VALUES[value])
    holder = etree.Element("L")
    holder.append(el)
    found = _agree(holder)
    assert (el in found) == _expected(kind, ref, _LAZY[lazy])
    assert is_unresolved(el) == _expected(kind, ref, _LAZY[lazy])


def test_both_forms_agree_on_one_tree_of_every_kind() -> None:
    root = etree.Element("L")
    kinds = list(itertools.product(_TAGS.values(), (False, True), _LAZY.values(), _VALUES.values()))
    for tag, ref, lazy, value in kinds:
        # Each node below a plain one and holding one of each kind: nesting
        # must not change the answer.
        wrapper = etree.SubElement(root, "w")
        el = _node(tag, ref, lazy, value)
        wrapper.append(el)
        el.append(_node(T_EXPRESSION, False, None, None))
    etree.SubElement(root, "x").append(etree.Comment("a comment is no element"))
    found = _agree(root)
    assert len(found) == len(kinds) + sum(_expected(k, r, lz) for k, r, lz, _ in itertools.product(_TAGS, (False, True), _LAZY.values(), _VALUES))


def _corpus() -> list[Path]:
    cases = sorted((ROOT / "src" / "cdl" / "conformance_cases").glob("*/*/main.cdl"))
    samples = sorted((ROOT / "samples").glob("**/*.cdl"))
    return cases + samples


def test_both_forms_agree_on_the_working_trees_of_every_trusted_document() -> None:
    """Real trees as the resolver sees them: after loading, after prototypes and
    after resolution (what is left is pending)."""
    checked = unresolved = 0
    for path in _corpus():
        try:
            document = cdl.load(path)
        except cdl.CdlError:
            continue  # a case about a load error, or an import-only document
        ws = inside.working_copy(document)
        for root in ws.roots:
            _agree(root)
        try:
            resolve_prototypes(ws)
            for root in ws.roots:
                _agree(root)
            resolver = ReferenceResolver(ws)
            items = find_items(ws, ws.roots[0])
            # Found by name (Tables.item_tags), they are what the XPath form finds.
            assert items == [el for part in ws.roots[0] for el in _MATCHES(part) if el is not part]
            unresolved += len(items)
            resolver.run(items)
        except cdl.CdlError:
            pass  # the trees as far as resolution got are still checked
        for root in ws.roots:
            _agree(root)
            _named_as_items(root, ws.item_tags)
        checked += 1
    assert checked > 40 and unresolved > 100  # the corpus really was read


def _named_as_items(root: etree._Element, item_tags: set[str]) -> None:
    """What find_items and the resolver's specialisation
    (``resolution.shortcuts``) assume: an unresolved element has one of the
    names of Workspace.item_tags, or is a cdl:expression; they read no
    attribute of any other element."""
    for el in _MATCHES(root):
        assert el.tag in item_tags or el.tag == T_EXPRESSION, el.tag


# -- every phase asks the one definition -------------------------------------


def test_walk_and_the_leaf_test_use_the_definition() -> None:
    L = etree.fromstring("<L><a/><b><c/></b></L>")
    for el, expected in ((L[0], True), (L[1], True)):
        el.set(A_LAZY, "true")
        assert walk(L, ("a",)).nodes == (L[0],)  # a target is the caller's to check
        assert walk(L, (el.tag, "c")).blockers == ((el,) if expected else ())
        el.attrib.pop(A_LAZY)
    # A lazy reference target is pending, and what refers to it too.
    assert list_xml(resolve_text(system('<S><a cdl:ref="b"/><b cdl:lazy="true"/></S>')), "S") == '<S><a cdl:ref="./b"/><b cdl:lazy="true"/></S>'


# -- item kinds and resolver states --------------------------------------------

_ALL_KINDS = system(
    "<S>"
    '<lp cdl:lazy="true"/>'
    '<lr cdl:ref="lp2" cdl:lazy="true"/><lp2>1</lp2>'
    '<le><cdl:expression value-of="$a"><cdl:variable name="a" ref="lp2" cdl:lazy="true"/></cdl:expression></le>'
    '<r cdl:ref="lp"/>'
    '<e><cdl:expression value-of="$a"><cdl:variable name="a" ref="lp"/></cdl:expression></e>'
    "</S>"
)


def test_every_item_kind_is_a_public_string() -> None:
    from cdl.model.items import ItemKind

    pending = resolve_text(_ALL_KINDS).pending
    assert [(p.path, p.kind) for p in pending] == [
        ("/S/lp", "lazy-property"),
        ("/S/lr", "lazy-reference"),
        ("/S/le", "lazy-expression"),
        ("/S/r", "reference"),
        ("/S/e", "expression"),
    ]
    # Plain strings, as documented; the enum stays private.
    assert all(type(p.kind) is str for p in pending)
    assert {p.kind for p in pending} == {kind.value for kind in ItemKind}
    readme = (ROOT / "README.md").read_text()
    for kind in ItemKind:
        assert f"`{kind.value}`" in readme


def test_resolver_states_are_an_enum_changed_through_its_methods() -> None:
    from cdl.model.items import State

    ws = inside.working_copy(cdl.load(_ALL_KINDS.encode(), name="m.cdl"))
    resolver = ReferenceResolver(ws)
    items = find_items(ws, ws.roots[0])
    resolver.run(items)
    by_path = {ws.ctx.prefixes.path_of(el): el for el in items}
    assert all(resolver.is_pending(el) for el in items)
    assert resolver.waits_on(by_path["/S/r"]) == [by_path["/S/lp"]]
    resolver.waits_on(by_path["/S/r"]).clear()  # a copy: the resolver's own stays
    assert resolver.waits_on(by_path["/S/r"]) == [by_path["/S/lp"]]
    resolver.settled(by_path["/S/lp"])
    assert not resolver.is_pending(by_path["/S/lp"]) and resolver.waits_on(by_path["/S/lp"]) == []
    # Reopening forgets the pending ones only.
    reopened = resolver.reopen_pending()
    assert by_path["/S/lp"] not in reopened and set(reopened) == set(items) - {by_path["/S/lp"]}
    assert [s.value for s in State] == ["active", "done", "pending", "failed", "template"]


def test_an_item_is_about_its_holder() -> None:
    # pending paths, plan owners and explanations all name this property
    from cdl.model.items import holder_of

    root = etree.fromstring(
        f'<L xmlns:cdl="{cdl.CDL_NS}"><p><cdl:expression value-of="1"/></p><q cdl:lazy="true"/></L>'
    )
    expression, lazy = root[0][0], root[1]
    assert holder_of(expression) is root[0]
    assert holder_of(lazy) is lazy
    root[0].remove(expression)
    assert holder_of(expression) is expression  # detached: itself, never None


def test_items_of_very_many_names_are_found_by_the_scan() -> None:
    """Beyond _MAX_ITEM_TAGS names, find_items asks the XPath form instead;
    both ways find the same items in the same order."""
    from cdl.resolution.references import _MAX_ITEM_TAGS

    count = _MAX_ITEM_TAGS + 2
    props = "".join(f'<p{i} cdl:lazy="true"/>' for i in range(count))
    ws = inside.working_copy(cdl.load(system(f"<L><x>1</x>{props}</L>").encode(), name="m.cdl"))
    assert len(ws.item_tags) > _MAX_ITEM_TAGS
    items = find_items(ws, ws.roots[0])
    assert [el.tag for el in items] == [f"p{i}" for i in range(count)]
    assert items == [el for part in ws.roots[0] for el in _MATCHES(part) if el is not part]


def test_resolving_among_candidates_is_resolving_the_items() -> None:
    """The engine hands the resolver every element of an item's name
    (find_candidates) and lets it tell the items apart as it goes: the
    trees and the states it leaves must be those of the items alone."""
    compared = 0
    for path in _corpus():
        try:
            document = cdl.load(path)
        except cdl.CdlError:
            continue
        outcomes = []
        for candidates in (False, True):
            ws = inside.working_copy(document)
            resolver = ReferenceResolver(ws)
            try:
                resolve_prototypes(ws)
                parents = list(ws.roots[0])
                found = find_candidates(ws, parents) if candidates else find_items(ws, parents)
                resolver.run(found, candidates=candidates)
                error = None
            except cdl.CdlError as exc:
                error = str(exc)
            trees = [etree.tostring(root) for root in ws.roots]
            pending = sorted(etree.tostring(el) for el in resolver.pending_items())
            outcomes.append((error, trees, pending))
        assert outcomes[0] == outcomes[1], path
        compared += 1
    assert compared > 40
    assert set(find_items(ws, list(ws.roots[0]))) <= set(find_candidates(ws, list(ws.roots[0])))
