"""The scans behind the element limits (``model.scan``): the bound from a
document's bytes is never below its element count, and a list scan gives the
same elements whole or list by list (tests/test_limits.py has the limits)."""

from __future__ import annotations

import pytest


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
    """Above the bound (libxml2's node-set cap) each list is scanned alone; same result."""
    from lxml import etree

    from cdl.model.scan import ListScan

    root = etree.fromstring("<r><p><l1><x k='1'/><y/></l1><l2 k='2'><x k='3'/></l2></p><p><l3 k='4'/></p></r>")
    scan = ListScan("[@k]")
    whole = [el.get("k") for el in scan(list(root), 10)]
    per_list = [el.get("k") for el in scan(list(root), 10**9)]
    assert whole == per_list == ["1", "2", "3", "4"]
