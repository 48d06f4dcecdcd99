"""Paths (7.3.1) as users write them: Figure 3's paths with and without
``cdl:refroot``, and paths that leave the list or find nothing (the parsers
and the walk are tested in tests/internals/test_paths.py)."""

from __future__ import annotations

import pytest

from cdl import CdlError
from conftest import config, list_xml, resolve_text, system

# The configuration of 7.3.1 (Figure 3): a reference at node "i" (depth 3).
FIGURE_3 = """
<a>
  <c>
    <g>
      <i {ref}/>
      <j><k>1</k></j>
    </g>
    <h>2</h>
  </c>
  <d>3</d>
</a>
<b>
  <e>4</e>
  <f>5</f>
</b>
"""


@pytest.mark.parametrize(
    ("ref", "value"),
    [
        # without refroot: '/' is the root of a, '.' the parent g of i
        ('cdl:ref="/d"', "3"),
        ('cdl:ref="/c/h"', "2"),
        ('cdl:ref="/c/g/j/k"', "1"),
        ('cdl:ref="j/k"', "1"),
        ('cdl:ref="./j/k"', "1"),
        ('cdl:ref="../h"', "2"),
        ('cdl:ref="../../d"', "3"),
        ('cdl:ref="../../c/h"', "2"),
        ('cdl:ref="j/../../h"', "2"),
        ('cdl:ref="/c/g/j"', "<k>1</k>"),
        # with refroot: '/' and '.' are the root of the named list
        ('cdl:refroot="b" cdl:ref="/e"', "4"),
        ('cdl:refroot="b" cdl:ref="f"', "5"),
        ('cdl:refroot="b" cdl:ref="./f"', "5"),
        ('cdl:refroot="a" cdl:ref="/d"', "3"),
        ('cdl:refroot="a" cdl:ref="c/g/j/k"', "1"),
        ('cdl:refroot="b" cdl:ref="/."', "<e>4</e><f>5</f>"),
    ],
)
def test_figure_3_paths(ref: str, value: str) -> None:
    res = resolve_text(config(FIGURE_3.format(ref=ref)))
    a = list_xml(res, "a")
    assert a == f"<a><c><g><i>{value}</i><j><k>1</k></j></g><h>2</h></c><d>3</d></a>"


@pytest.mark.parametrize(
    ("lists", "code", "path_text"),
    [
        # '..' above the top level list
        ("<a><b cdl:ref='..'/></a>", "REF_ABOVE_TOP", "'..'"),
        ("<a><b cdl:ref='../x'/></a>", "REF_ABOVE_TOP", "'../x'"),
        ("<a><c><b cdl:ref='../../x'/></c></a>", "REF_ABOVE_TOP", "'../../x'"),
        ("<a><b cdl:ref='/..'/></a>", "REF_ABOVE_TOP", "'/..'"),
        ("<a><c><b cdl:ref='/../a'/></c></a>", "REF_ABOVE_TOP", "'/../a'"),
        ("<a><x/></a><t><b cdl:refroot='a' cdl:ref='..'/></t>", "REF_ABOVE_TOP", "'..'"),
        ("<a><x/></a><t><b cdl:refroot='a' cdl:ref='/x/../..'/></t>", "REF_ABOVE_TOP", "'/x/../..'"),
        # steps that select nothing
        ("<a><b cdl:ref='/nothing'/></a>", "REF_NOT_FOUND", "'/nothing'"),
        ("<a><x/><b cdl:ref='x/y'/></a>", "REF_NOT_FOUND", "'x/y'"),
    ],
)
def test_paths_that_leave_the_list_or_find_nothing(lists: str, code: str, path_text: str) -> None:
    with pytest.raises(CdlError) as info:
        resolve_text(system(lists))  # in a system: a template leaves them unresolved (7.6)
    error = info.value
    assert error.code == code
    assert path_text in error.message
