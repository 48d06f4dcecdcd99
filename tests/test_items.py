"""What is still unresolved, as users see it: paths through expressions,
lazy variables and lazy properties with values wait or fail as 7.3.1 and 7.5
say, and items made by inheritance are found whatever their name (the one
definition of "unresolved" is tested in tests/internals/test_items.py)."""

from __future__ import annotations

import pytest

import cdl
from conftest import resolve_text, system


def test_a_path_through_an_expression_waits_for_it_in_any_order() -> None:
    # A path may name cdl:expression and cdl:variable (they are QNames). The
    # expression is unresolved until it is replaced by its value, so a path
    # through it waits, then selects nothing, whichever comes first.
    expression = '<e><cdl:expression value-of="$a"><cdl:variable name="a" ref="a"/></cdl:expression></e><a>1</a>'
    for body in (f'<r cdl:ref="e/cdl:expression/cdl:variable"/>{expression}', f'{expression}<r cdl:ref="e/cdl:expression/cdl:variable"/>'):
        with pytest.raises(cdl.CdlError) as info:
            resolve_text(system(f"<S>{body}</S>"))
        assert info.value.code == "REF_NOT_FOUND" and info.value.path == "/S/r"
        assert "no cdl:expression at step 2" in info.value.message


def test_a_path_to_a_lazy_variable_waits_for_its_expression() -> None:
    # A lazy variable is not pending by itself: its expression is.
    body = (
        '<S><r cdl:ref="e/cdl:expression/cdl:variable"/>'
        '<e><cdl:expression value-of="$a"><cdl:variable name="a" ref="a" cdl:lazy="true"/></cdl:expression></e><a>1</a></S>'
    )
    res = resolve_text(system(body))
    assert res.pending == [
        cdl.Pending("/S/r", "reference", waits_on=("/S/e",)),
        cdl.Pending("/S/e", "lazy-expression", waiting=("/S/r",)),
    ]
    # Once the expression has its value, the path selects nothing.
    with pytest.raises(cdl.CdlError) as info:
        res.supply({"S/e": "5"})
    assert info.value.code == "REF_NOT_FOUND"


def test_a_lazy_property_with_a_value_blocks_the_paths_through_it() -> None:
    # Only inheritance can give a lazy property a value (the loader refuses
    # one written so): that is LAZY_WITH_VALUE, and the references through it
    # wait for it and fail with it (the error is reported once, for it).
    body = '<T><x>1</x></T><S><p cdl:extends="T" cdl:lazy="true"/><r cdl:ref="p/x"/></S>'
    with pytest.raises(cdl.CdlError) as info:
        resolve_text(system(body))
    assert [(e.code, e.path) for e in info.value.errors] == [("LAZY_WITH_VALUE", "/S/p")]


def test_items_made_by_inheritance_are_found_whatever_their_name() -> None:
    """find_items looks for items by name: a list that inherits cdl:lazy from
    a prototype of another name, and the copies of a lazy property and of an
    expression, are found as the XPath form finds them."""
    res = resolve_text(
        system(
            '<Q cdl:extends="P"/><R cdl:extends="S"><w/></R>',
            configuration='<P cdl:lazy="true"/><S><lz cdl:lazy="true"/><e><cdl:expression value-of="1"/></e></S>',
        )
    )
    assert [p.path for p in res.pending] == ["/P", "/S/lz", "/Q", "/R/lz"]
