"""The work done before a refusal, counted at the budget (``model.workspace.Budget``),
and the scans behind the element limits (``model.scan``): the bound from a
document's bytes is never below its element count, a list scan gives the
same elements whole or list by list, and what is taken or freed in pieces is
all of it (tests/test_limits.py has the limits
through the public API, benchmarks/hostile.py the time bounds on refusing)."""

from __future__ import annotations

import pytest
from lxml import etree

import cdl
from cdl.errors import LimitError
from cdl.model.workspace import Budget
from hostile import copied_text_document, doubling_document

from . import inside


def _size(root: etree._Element) -> tuple[int, int]:
    """(elements, characters of text) of the tree under ``root``."""
    return sum(1 for _ in root.iter()), sum(len(text) for text in root.itertext())


@pytest.mark.parametrize(
    ("document", "limits"),
    [
        (doubling_document(40, "extends"), cdl.Limits(max_elements=1000)),
        (doubling_document(40, "ref"), cdl.Limits(max_elements=1000)),
        (doubling_document(60, "extends"), cdl.Limits(max_elements=10_000)),
        (doubling_document(60, "ref"), cdl.Limits(max_elements=10_000)),
        (copied_text_document("ref", size=1000, copies=2000), cdl.Limits(max_text=100_000)),
        (copied_text_document("extends", size=1000, copies=2000), cdl.Limits(max_text=100_000)),
    ],
    ids=["doubling-extends", "doubling-ref", "doubling-60-extends", "doubling-60-ref", "text-ref", "text-extends"],
)
def test_a_refusal_comes_before_the_work_it_guards(document: str, limits: cdl.Limits, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each copy is charged before it is made: whenever the budget refuses one,
    the working tree holds at most what was written plus the limit, in
    elements and in characters of text (so a refusal costs what the limit
    allows, whatever the document would have grown to)."""
    at_refusal: list[tuple[int, int]] = []
    check = Budget.check

    def counted(self: Budget, elements: int, text: int, ctx: object, el: etree._Element) -> None:
        try:
            check(self, elements, text, ctx, el)  # type: ignore[arg-type]
        except LimitError:
            at_refusal.append(_size(el.getroottree().getroot()))
            raise

    monkeypatch.setattr(Budget, "check", counted)
    loaded = cdl.load(document.encode(), limits=limits)
    written = _size(inside.sources(loaded)[0].root)
    with pytest.raises(cdl.CdlError) as caught:
        loaded.resolve()
    assert {error.code for error in caught.value.errors} == {"LIMIT_EXCEEDED"}
    assert at_refusal  # refused by the budget (references one by one: each refusal counts)
    for elements, text in at_refusal:
        assert elements <= written[0] + limits.max_elements
        assert text <= written[1] + limits.max_text


@pytest.mark.parametrize(
    "text",
    [
        "<a/>",
        "<?xml version='1.0'?><!-- <x> </y> --><a><b>t</b><![CDATA[<<</]]><?pi <z/>?></a>",
        "<a>" + "<b c='&lt;'/>" * 50 + "</a>",
        "\n  <a><b/></a>",
    ],
)
@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-16-le"])
def test_element_bound_is_never_below_the_element_count(text: str, encoding: str) -> None:
    from lxml import etree

    from cdl.model.scan import elements_bound

    if not text.startswith("<?xml"):
        text = "<?xml version='1.0'?>" + text
    data = text.replace("version='1.0'", f"version='1.0' encoding='{encoding}'").encode(encoding)
    root = etree.fromstring(data)
    assert elements_bound(data) >= sum(1 for _ in root.iter(tag=etree.Element))


def test_element_bound_without_ascii_angle_brackets() -> None:
    from cdl.model.scan import elements_bound

    data = "<a><b/><b/></a>".encode("cp500")  # EBCDIC: '<' is not the byte 0x3C
    assert elements_bound(data) == len(data) // 4 >= 3


def test_list_scans_agree_whole_and_per_list() -> None:
    """Above the bound (a large system) each list is scanned alone; same result."""
    from lxml import etree

    from cdl.model.scan import ListScan

    root = etree.fromstring("<r><p><l1><x k='1'/><y/></l1><l2 k='2'><x k='3'/></l2></p><p><l3 k='4'/></p></r>")
    scan = ListScan("[@k]")
    whole = [el.get("k") for el in scan(list(root), 10)]
    per_list = [el.get("k") for el in scan(list(root), 10**9)]
    assert whole == per_list == ["1", "2", "3", "4"]


@pytest.mark.parametrize("count", [0, 1, 2, 3, 4, 6, 7])
def test_what_is_taken_and_freed_in_pieces_is_all_of_it(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """``collect`` takes an iteration a piece at a time, and ``release`` frees
    a list a piece at a time (one C call over a large system holds the
    interpreter): every piece, the last full or short, in order."""
    from cdl.model import scan

    monkeypatch.setattr(scan, "_PIECE", 3)
    root = etree.fromstring("<r>" + "".join(f"<a n='{n}'><b/></a>" for n in range(count)) + "</r>")
    found = scan.collect([root], root.iterdescendants("a"))
    assert found == [root, *root.iterdescendants("a")]
    assert [el.get("n") for el in found[1:]] == [str(n) for n in range(count)]
    scan.release(found)
    assert found == []
    held = {n: [n] for n in range(count)}
    scan.release(held)
    assert held == {}
