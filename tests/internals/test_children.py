"""cdl.model.children: the index of wide elements' children by name, and the path
steps that read it (7.3.1), kept correct while references, expressions and
deploy-time rounds change the tree.

Every document here has elements wider than ``WIDE``, and the first lookup in
them happens before the change, so a stale index would give a wrong result.
"""

from __future__ import annotations

import random
import signal
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from lxml import etree

from cdl import CdlError
from cdl.model.children import COMPARED_MAX, WIDE, ChildIndex
from cdl.model.paths import walk
from conftest import list_xml, resolve_text, system

FILL = "".join(f"<f{i}>{i}</f{i}>" for i in range(WIDE + 4))


@contextmanager
def _deadline(seconds: int = 20) -> Iterator[None]:
    """Fail instead of hanging: a stale entry naming a removed expression
    makes the resolver find, again and again, a blocker that is done."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def expired(signum: int, frame: object) -> None:
        raise AssertionError(f"no result after {seconds} s (a stale child index?)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_fill_is_wide() -> None:
    assert len(etree.fromstring(f"<h>{FILL}</h>")) > WIDE


def test_shells_of_a_multi_node_reference_are_seen_by_later_steps() -> None:
    # `first` indexes S; `m` then becomes two siblings named m; `later`
    # (blocked on m until then) must select both.
    xml = system(f"<S>{FILL}<first cdl:ref='/f2'/><src><v>1</v><v>2</v></src><m cdl:ref='/src/v'/><later cdl:ref='/m'/></S>")
    out = list_xml(resolve_text(xml), "S")
    assert "<first>2</first>" in out
    assert out.endswith("<m>1</m><m>2</m><later>1</later><later>2</later></S>")


def test_shells_in_the_middle_keep_document_order() -> None:
    # Two multi-node references with the same name, apart: the shells of the
    # second go after the second, not after the first.
    xml = system(
        f"<S><src><v>1</v><v>2</v></src><w><v>3</v><v>4</v></w>{FILL}<first cdl:ref='/f2'/>"
        "<m cdl:ref='/src/v'/><gap/><m cdl:ref='/w/v'/><later cdl:ref='/m'/></S>"
    )
    out = list_xml(resolve_text(xml), "S")
    assert "<m>1</m><m>2</m><gap/><m>3</m><m>4</m><later>1</later><later>2</later><later>3</later><later>4</later>" in out


def test_released_multi_node_reference_seen_by_waiting_reference() -> None:
    # The shells appear in a deploy-time round, after the index was built.
    xml = system(f"<S>{FILL}<first cdl:ref='/f2'/><src><v>1</v><v>2</v></src><m cdl:ref='/src/v' cdl:lazy='true'/><later cdl:ref='/m'/></S>")
    res = resolve_text(xml)
    assert [p.path for p in res.pending] == ["/S/m", "/S/later"]
    out = list_xml(res.supply(release=["S/m"]), "S")
    assert out.endswith("<m>1</m><m>2</m><later>1</later><later>2</later></S>")


def test_evaluated_expression_leaves_the_index() -> None:
    expr = "<cdl:expression value-of='$a * 2'><cdl:variable name='a' ref='/h/f3'/></cdl:expression>"
    for order in ("<q cdl:ref='/h/f19'/><r cdl:ref='/h/cdl:expression'/>", "<r cdl:ref='/h/cdl:expression'/><q cdl:ref='/h/f19'/>"):
        with _deadline(), pytest.raises(CdlError) as info:
            resolve_text(system(f"<S><h>{FILL}{expr}</h>{order}</S>"))
        assert info.value.code == "REF_NOT_FOUND"
        assert "no cdl:expression at step 2" in str(info.value)


def test_expression_given_a_value_leaves_the_index() -> None:
    expr = "<cdl:expression value-of='$a * 2'><cdl:variable name='a' ref='/a' cdl:lazy='true'/></cdl:expression>"
    xml = system(f"<S><a>4</a><e>{FILL}{expr}</e><q cdl:ref='/e/f19'/></S>")
    res = resolve_text(xml)
    assert "<q>19</q>" in list_xml(res, "S")
    # The round removes the expression from its (indexed) holder.
    assert list_xml(res.supply({"S/e": "given"}), "S") == f"<S><a>4</a><e>given{FILL}</e><q>19</q></S>"
    # A reference waiting on the expression looks again after the round:
    # the expression is gone, so it selects nothing.
    waiting = resolve_text(system(f"<S><a>4</a><e>{FILL}{expr}</e><q cdl:ref='/e/f19'/><r cdl:ref='/e/cdl:expression'/></S>"))
    assert [p.path for p in waiting.pending] == ["/S/e", "/S/r"]
    with _deadline(), pytest.raises(CdlError) as info:
        waiting.supply({"S/e": "given"})
    assert info.value.code == "REF_NOT_FOUND"


# -- the index itself, against lxml's own scan, through random changes ----------


def _check(index: ChildIndex, parent: etree._Element, names: list[str]) -> None:
    for name in names:
        found = list(parent.iterchildren(name))
        assert list(index.named(parent, name)) == found, name
        # The step that selects one node, whatever count it is told (a stale
        # count only chooses another way to look).
        for count in (len(parent), 0, COMPARED_MAX + 1, WIDE + 1):
            assert index.only(parent, name, count) is (found[0] if len(found) == 1 else None), (name, count)


@pytest.mark.parametrize("width", [1, COMPARED_MAX, COMPARED_MAX + 1, WIDE, WIDE + 1])
def test_the_one_child_named_is_what_named_selects_at_every_width(width: int) -> None:
    names = ["a", "b", "c"]
    parent = etree.Element("p")
    for i in range(width):
        parent.append(etree.Element(names[i % len(names)] if i < width - 1 else "last"))
    parent.append(etree.Comment("not a property"))
    _check(ChildIndex(), parent, [*names, "last", "none"])


@pytest.mark.parametrize("seed", range(20))
def test_index_agrees_with_a_scan_after_random_changes(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"n{k}" for k in range(6)]
    parent = etree.Element("p")
    for _ in range(rng.randint(WIDE + 1, 3 * WIDE)):
        parent.append(etree.Element(rng.choice(names)))
    parent.append(etree.Comment("not a property"))
    index = ChildIndex()
    _check(index, parent, names)
    assert parent in index.wide
    for _ in range(30):
        children = list(parent)
        el = rng.choice([c for c in children if isinstance(c.tag, str)])
        if rng.random() < 0.5:
            added = [etree.Element(el.tag) for _ in range(rng.randint(1, 3))]
            anchor = el
            for new in added:
                anchor.addnext(new)
                anchor = new
            index.inserted_after(el, added)
        else:
            index.removing(el)
            parent.remove(el)
        _check(index, parent, names)


def test_narrow_elements_are_not_indexed() -> None:
    parent = etree.fromstring("<p><a/><b/><a/></p>")
    index = ChildIndex()
    assert [c.tag for c in index.named(parent, "a")] == ["a", "a"]
    assert index.wide == {}


def test_walk_with_and_without_an_index_agree() -> None:
    root = etree.fromstring(f"<L><x>{FILL}<y><z>1</z></y><y><z>2</z></y></x></L>")
    index = ChildIndex()
    for steps in (("x", "f7"), ("x", "y", "z"), ("x", "y"), ("x", "nothing")):
        with_index, plain = walk(root, steps, index), walk(root, steps)
        assert [n.text for n in with_index.nodes] == [n.text for n in plain.nodes]
        assert (with_index.problem, with_index.step) == (plain.problem, plain.step)
    assert root[0] in index.wide
