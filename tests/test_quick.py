"""The resolver's specialisation for common items (src/cdl/resolution/shortcuts.py,
``ReferenceShortcuts``) must decide exactly as the general code: each case
here is one the fast path must hand over (or check) rather than resolve on
its own. Removing any of those tests from the fast path makes a test here (or
elsewhere in the suite) fail, except the test for a reference or lazy
property passed through on the way (neither has children when resolution
starts, so a step into one finds nothing and the fast path hands over
anyway). Every test here runs with the fast paths on, whatever the
environment says; the comparisons turn them off with CDL_NO_FAST_PATHS."""

from __future__ import annotations

import pytest
from lxml import etree

import cdl
from conftest import FAST_PATHS_OFF, resolve_text, system

pytestmark = pytest.mark.usefixtures("fast_paths_on")


_EXPR = '<r><cdl:expression value-of="$v"><cdl:variable name="v" {}/></cdl:expression></r>'


def _error(xml: str, **kw: object) -> cdl.CdlError:
    with pytest.raises(cdl.CdlError) as info:
        resolve_text(xml, **kw)  # type: ignore[arg-type]
    return info.value


@pytest.mark.parametrize(
    "item", ['<r cdl:ref="a/cdl:expression"/>', _EXPR.format('ref="a/cdl:expression"'), '<r cdl:refroot="L" cdl:ref="/a/cdl:expression"/>']
)
def test_a_path_ending_on_an_expression_waits_for_it_and_then_selects_nothing(item: str) -> None:
    # The expression is a leaf (no variable) and an item, found before it is
    # evaluated: evaluated first, it leaves the tree, and the path then finds
    # nothing (not an empty value).
    error = _error(system(f"<L>{item}<a><cdl:expression value-of=\"'x'\"/></a></L>"))
    assert error.code == "REF_NOT_FOUND"


@pytest.mark.parametrize("item", ['<r cdl:ref="../L/a"/>', _EXPR.format('ref="../L/a"')])
def test_a_path_climbing_out_of_its_list_and_back_is_refused(item: str) -> None:
    error = _error(system(f"<L><a>1</a>{item}</L>"))
    assert error.code == "REF_ABOVE_TOP"


@pytest.mark.parametrize("item", ['<r cdl:ref="x/c"/>', _EXPR.format('ref="x/c"')])
def test_a_path_through_a_lazy_property_with_inherited_children_waits(item: str) -> None:
    # x, lazy, has a child from its prototype: what the path selects below
    # it is not known before x is (7.3.3), so r waits with it.
    doc = cdl.load(system(f'<L cdl:extends="P"><x cdl:lazy="true"/>{item}</L>', configuration="<P><x><c>1</c></x></P>").encode())
    assert [p.path for p in doc.resolve().pending] == ["/L/x", "/L/r"]


@pytest.mark.parametrize(
    "items",
    [
        '<r1 cdl:ref="a"/><r2 cdl:ref="a"/>',
        '<r1 cdl:refroot="S" cdl:ref="/a"/><r2 cdl:refroot="S" cdl:ref="/a"/>',
        '<r1 cdl:ref="a"/>' + _EXPR.format('ref="a"'),
        '<r1 cdl:refroot="S" cdl:ref="/a"/>' + _EXPR.format('refroot="S" ref="/a"'),
    ],
)
def test_copied_text_over_the_limit_is_refused_by_the_fast_path_too(items: str) -> None:
    # The second copy of an 8-character value passes max_text=12.
    error = _error(system(f"<L><a>12345678</a>{items}</L><S><a>12345678</a></S>"), limits=cdl.Limits(max_text=12))
    assert error.code == "LIMIT_EXCEEDED"
    assert "max_text" in error.message


def test_a_target_resolved_first_into_a_copy_of_children_is_copied_whole() -> None:
    # r's target t is a reference whose target (m, with a child) is already
    # known clean from t0: t resolved first gets the child, and so does r.
    xml = system('<L><t0 cdl:refroot="S" cdl:ref="/m"/><r cdl:ref="t"/><t cdl:refroot="S" cdl:ref="/m"/></L><S><m><c>1</c></m></S>')
    out = resolve_text(xml).to_bytes().decode()
    assert out.count("<c>1</c>") == 4


def test_an_inherited_expression_with_a_lazy_variable_waits() -> None:
    # The fast path reads the variables only when a loaded one is lazy
    # (Tables.lazy_variables): here only the prototype's is, and its copy waits.
    expr = '<u><cdl:expression value-of="$v"><cdl:variable name="v" ref="a" lazy="true"/></cdl:expression></u>'
    doc = cdl.load(system('<L cdl:extends="P"/>', configuration=f"<P><a>1</a>{expr}</P>").encode())
    assert [p.path for p in doc.resolve().pending] == ["/P/u", "/L/u"]


def _filler(count: int) -> str:
    return "".join(f"<f{i}>{i}</f{i}>" for i in range(count))


#: Paths through elements of every width the fast path tells apart (a few
#: children tested one by one, more filtered by lxml, a wide list indexed),
#: with names that repeat, references and lazy properties among them.
_WIDTHS = [
    system(f"<L><x>{_filler(width)}<a>1</a>{dup}</x>{item}</L>")
    for width in (1, 3, 6, 20)
    for dup in ("", "<a>2</a>")
    for item in (
        '<r cdl:ref="x/a"/><s cdl:ref="x/f0"/>',
        '<u><cdl:expression value-of="concat($a, $b)"><cdl:variable name="a" ref="x/a"/>'
        '<cdl:variable name="b" ref="x/f0"/></cdl:expression></u>',
    )
] + [
    system(f"<L><x>{_filler(width)}<a cdl:ref=\"../y\"/></x><y>7</y><r cdl:ref=\"x/a\"/><s cdl:ref=\"x/f0\"/></L>")
    for width in (1, 3, 12)
] + [
    system(f"<L><x>{_filler(width)}<a cdl:lazy=\"true\"/></x><r cdl:ref=\"x/a\"/><s cdl:ref=\"x/f0\"/></L>")
    for width in (1, 3, 12)
] + [
    system(f"<L><x>{_filler(width)}<cdl:expression value-of=\"'e'\"/></x><r cdl:ref=\"x/f0\"/></L>")
    for width in (1, 3)
]


def _outcome(xml: str) -> tuple[str, ...]:
    try:
        resolution = resolve_text(xml)
    except cdl.CdlError as error:
        return ("error", str(error))
    return ("ok", resolution.to_bytes().decode(), repr(resolution.pending))


@pytest.mark.parametrize("xml", _WIDTHS)
def test_the_fast_path_decides_as_the_general_code_at_every_width(xml: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _outcome(xml)
    assert fast[0] == "ok" or "MULTIPLE" in fast[1]  # each case is about what gets resolved
    monkeypatch.setenv(FAST_PATHS_OFF, "1")
    assert fast == _outcome(xml)


def test_a_step_remembered_before_the_children_changed_is_taken_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # r1 and r2 pass x (remembered, with its number of children) before b, a
    # reference with two targets, becomes two shells: r3 must then select both.
    xml = system(
        '<L><x><a>1</a><b cdl:ref="../s/v"/></x><r1 cdl:ref="x/a"/><r2 cdl:ref="x/b"/><r3 cdl:ref="x/b"/>'
        "<s><v>1</v><v>2</v></s></L>"
    )
    fast = _outcome(xml)
    assert fast[0] == "ok" and fast[1].count("<r3>") == 2
    monkeypatch.setenv(FAST_PATHS_OFF, "1")
    assert fast == _outcome(xml)


def test_a_target_copied_many_times_gives_the_same_copies_each_time() -> None:
    # The first copy is made child by child, the second makes a stamp of the
    # children, later ones copy the stamp (ReferenceShortcuts.copied_from_stamp): every
    # copy must come out the same, namespaces and attributes included.
    target = (
        '<T xmlns:x="urn:x" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><m>'
        '<x:a cdl:type="xsd:string" x:at="1">v</x:a><b><c>2</c></b><x:d/></m></T>'
    )
    refs = "".join(f'<r{i} cdl:refroot="T" cdl:ref="/m"/>' for i in range(4))
    out = resolve_text(system(f"<L>{refs}</L>", configuration=target)).tree()
    lists = {el.tag: el for part in out for el in part}
    copies = [[etree.tostring(child) for child in lists["L"][i]] for i in range(4)]
    assert copies[0] == copies[1] == copies[2] == copies[3]
    assert copies[0] == [etree.tostring(child) for child in lists["T"][0]]
    assert len(copies[0]) == 3


