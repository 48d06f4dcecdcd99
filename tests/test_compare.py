"""The semantic comparison of resolved documents used by the conformance suite."""

from __future__ import annotations

import pytest
from lxml import etree

from cdl.conformance import CDL_NS, Difference, compare

XSD = "http://www.w3.org/2001/XMLSchema"


def cfg(body: str, decls: str = "", prefix: str = "cdl") -> str:
    """A cdl:cdl document whose configuration holds ``body``."""
    return (
        f'<{prefix}:cdl xmlns:{prefix}="{CDL_NS}" xmlns:xsd="{XSD}" {decls}>'
        f"<{prefix}:configuration>{body}</{prefix}:configuration></{prefix}:cdl>"
    )


def sysdoc(body: str) -> str:
    """A cdl:cdl document whose system holds ``body``."""
    return f'<cdl:cdl xmlns:cdl="{CDL_NS}"><cdl:system>{body}</cdl:system></cdl:cdl>'


EMPTY = f'<cdl:cdl xmlns:cdl="{CDL_NS}"/>'

# (id, expected, actual, annotations, where the first difference is or None if equal)
CASES: list[tuple[str, str, str, bool, str | None]] = [
    # names: namespace URI + local name, prefixes free
    ("prefix-free", cfg('<t:A xmlns:t="urn:t"><t:b/></t:A>'),
     cfg('<x:A xmlns:x="urn:t"><x:b/></x:A>', prefix="c"), True, None),
    ("default-ns-vs-prefix", cfg('<A xmlns="urn:t"><b/></A>'), cfg('<t:A xmlns:t="urn:t"><t:b/></t:A>'), True, None),
    ("same-prefix-other-uri", cfg('<t:A xmlns:t="urn:t"/>'), cfg('<t:A xmlns:t="urn:u"/>'), True,
     "/cdl:configuration/t:A"),
    ("no-ns-vs-default-ns", cfg("<A/>"), cfg('<A xmlns="urn:t"/>'), True, "/cdl:configuration/A"),
    ("local-name", cfg("<A><b/></A>"), cfg("<A><c/></A>"), True, "/cdl:configuration/A/b"),
    # text
    ("whitespace-only-text", cfg("<A>\n  <b>1</b>\n  <c/>\n</A>"), cfg("<A><b>1</b><c/></A>"), True, None),
    ("text-differs", cfg("<A><b>1</b></A>"), cfg("<A><b>2</b></A>"), True, "/cdl:configuration/A/b"),
    ("text-not-trimmed", cfg("<A><b>1</b></A>"), cfg("<A><b> 1 </b></A>"), True, "/cdl:configuration/A/b"),
    ("text-vs-empty", cfg("<A><b>1</b></A>"), cfg("<A><b/></A>"), True, "/cdl:configuration/A/b"),
    ("text-vs-element", cfg("<A><b>1</b></A>"), cfg("<A><b><c/></b></A>"), True, "/cdl:configuration/A/b"),
    ("comment-ignored", cfg("<A><b>12</b></A>"), cfg("<A><b>1<!-- c -->2</b><!-- d --></A>"), True, None),
    ("cdata-is-text", cfg("<A><b>a&lt;b</b></A>"), cfg("<A><b><![CDATA[a<b]]></b></A>"), True, None),
    # order, extra and missing elements
    ("order", cfg("<A><b/><c/></A>"), cfg("<A><c/><b/></A>"), True, "/cdl:configuration/A/b"),
    ("extra-element", cfg("<A><b/></A>"), cfg("<A><b/><c/></A>"), True, "/cdl:configuration/A/c"),
    ("missing-element", cfg("<A><b/><c/></A>"), cfg("<A><b/></A>"), True, "/cdl:configuration/A/c"),
    ("repeated-name", cfg("<A><child>1</child><child>2</child></A>"),
     cfg("<A><child>1</child><child>3</child></A>"), True, "/cdl:configuration/A/child[2]"),
    ("extra-repeated", cfg("<A><child/></A>"), cfg("<A><child/><child/></A>"), True,
     "/cdl:configuration/A/child[2]"),
    ("path-uses-expected-prefixes", cfg('<t:A xmlns:t="urn:t"><t:b>1</t:b></t:A>'),
     cfg('<x:A xmlns:x="urn:t"><x:b>2</x:b></x:A>'), True, "/cdl:configuration/t:A/t:b"),
    # configuration and system only; absent equals empty
    ("absent-equals-empty", EMPTY, f'<cdl:cdl xmlns:cdl="{CDL_NS}"><cdl:configuration/><cdl:system/></cdl:cdl>',
     True, None),
    ("empty-equals-absent", cfg(""), EMPTY, True, None),
    ("absent-vs-list", EMPTY, cfg("<A/>"), True, "/cdl:configuration/A"),
    ("other-children-ignored", cfg("<A/>"),
     f'<cdl:cdl xmlns:cdl="{CDL_NS}"><cdl:documentation>x</cdl:documentation><cdl:types><y/></cdl:types>'
     f"<cdl:configuration><A/></cdl:configuration></cdl:cdl>", True, None),
    ("system-compared", sysdoc("<S><p>1</p></S>"), sysdoc("<S><p>2</p></S>"), True, "/cdl:system/S/p"),
    ("root-not-cdl", cfg("<A/>"), "<cdl/>", True, "/"),
    # attributes: a set, by namespace URI + local name
    ("attribute-order", cfg('<A x="1" y="2"/>'), cfg('<A y="2" x="1"/>'), True, None),
    ("attribute-value", cfg('<A x="1"/>'), cfg('<A x="2"/>'), True, "/cdl:configuration/A/@x"),
    ("attribute-missing", cfg('<A x="1"/>'), cfg("<A/>"), True, "/cdl:configuration/A/@x"),
    ("attribute-extra", cfg("<A/>"), cfg('<A x="1"/>'), True, "/cdl:configuration/A/@x"),
    ("attribute-prefix-free", cfg('<A u:x="1" xmlns:u="urn:u"/>'), cfg('<A v:x="1" xmlns:v="urn:u"/>'), True, None),
    ("attribute-namespace", cfg('<A u:x="1" xmlns:u="urn:u"/>'), cfg('<A u:x="1" xmlns:u="urn:v"/>'), True,
     "/cdl:configuration/A/@u:x"),
    ("attribute-no-default-ns", cfg('<A xmlns="urn:t" x="1"/>'), cfg('<t:A xmlns:t="urn:t" t:x="1"/>'), True,
     "/cdl:configuration/A/@x"),
    # cdl:lazy is an xsd:boolean
    ("lazy-1-true", cfg('<A><b cdl:lazy="1"/></A>'), cfg('<A><b cdl:lazy="true"/></A>'), True, None),
    ("lazy-0-false", cfg('<A><b cdl:lazy="false"/></A>'), cfg('<A><b cdl:lazy=" 0 "/></A>'), True, None),
    ("lazy-differs", cfg('<A><b cdl:lazy="true"/></A>'), cfg('<A><b cdl:lazy="0"/></A>'), True,
     "/cdl:configuration/A/b/@cdl:lazy"),
    # QName-valued attributes by resolved QName
    ("type-qname", cfg('<A><b cdl:type="xsd:string"/></A>'),
     cfg(f'<A><b cdl:type="xs:string" xmlns:xs="{XSD}"/></A>'), True, None),
    ("type-default-ns", cfg(f'<A><b xmlns="{XSD}" cdl:type="string"/></A>'),
     cfg('<A><xsd:b cdl:type="xsd:string"/></A>'), True, None),
    ("type-local", cfg('<A><b cdl:type="xsd:string"/></A>'), cfg('<A><b cdl:type="xsd:int"/></A>'), True,
     "/cdl:configuration/A/b/@cdl:type"),
    ("type-same-text-other-uri", cfg('<A><b cdl:type="t:T" xmlns:t="urn:t"/></A>'),
     cfg('<A><b cdl:type="t:T" xmlns:t="urn:u"/></A>'), True, "/cdl:configuration/A/b/@cdl:type"),
    ("extends-qname", cfg('<A cdl:extends="p:B" xmlns:p="urn:t"/>'), cfg('<A cdl:extends="q:B" xmlns:q="urn:t"/>'),
     True, None),
    ("refroot-qname", cfg('<A><p:b cdl:refroot="p:B" cdl:ref="p:c" xmlns:p="urn:t"/></A>'),
     cfg('<A><b cdl:refroot="B" cdl:ref="c" xmlns="urn:t"/></A>'), True, None),
    ("refroot-differs", cfg('<A><b cdl:refroot="p:B" cdl:ref="c" xmlns:p="urn:t"/></A>'),
     cfg('<A><b cdl:refroot="p:C" cdl:ref="c" xmlns:p="urn:t"/></A>'), True, "/cdl:configuration/A/b/@cdl:refroot"),
    # cdl:ref by the steps it walks
    ("ref-dot-dropped", cfg('<A><b cdl:ref="./c"/></A>'), cfg('<A><b cdl:ref="c"/></A>'), True, None),
    ("ref-inner-dots", cfg('<A><b cdl:ref="./../c/."/></A>'), cfg('<A><b cdl:ref="../c"/></A>'), True, None),
    ("ref-parent", cfg('<A><b cdl:ref="c"/></A>'), cfg('<A><b cdl:ref="../c"/></A>'), True,
     "/cdl:configuration/A/b/@cdl:ref"),
    ("ref-absolute", cfg('<A><b cdl:ref="/c"/></A>'), cfg('<A><b cdl:ref="./c"/></A>'), True,
     "/cdl:configuration/A/b/@cdl:ref"),
    ("ref-step-qname", cfg('<A><b cdl:ref="p:c/p:d" xmlns:p="urn:t"/></A>'),
     cfg('<A><b cdl:ref="q:c/./q:d" xmlns:q="urn:t"/></A>'), True, None),
    ("ref-step-default-ns", cfg('<A><p:b cdl:ref="p:c" xmlns:p="urn:t"/></A>'),
     cfg('<A><p:b cdl:ref="c" xmlns:p="urn:t" xmlns="urn:t"/></A>'), True, None),
    ("ref-step-no-default-ns", cfg('<A><p:b cdl:ref="c" xmlns:p="urn:t"/></A>'),
     cfg('<A><p:b cdl:ref="c" xmlns:p="urn:t" xmlns="urn:t"/></A>'), True, "/cdl:configuration/A/p:b/@cdl:ref"),
    ("ref-step-namespace", cfg('<A><b cdl:ref="p:c" xmlns:p="urn:t"/></A>'),
     cfg('<A><b cdl:ref="p:c" xmlns:p="urn:u"/></A>'), True, "/cdl:configuration/A/b/@cdl:ref"),
    ("variable-ref", cfg('<A><b><cdl:expression value-of="$v"><cdl:variable name="v" ref="./c"/>'
                         "</cdl:expression></b></A>"),
     cfg('<A><b><cdl:expression value-of="$v"><cdl:variable name="v" ref="c"/></cdl:expression></b></A>'), True, None),
    # annotations on and off
    ("annotations-on", cfg('<A><b cdl:type="xsd:string" cdl:use="required">1</b></A>'), cfg("<A><b>1</b></A>"), True,
     "/cdl:configuration/A/b/@cdl:type"),
    ("annotations-off", cfg('<A><b cdl:type="xsd:string" cdl:use="required">1</b></A>'), cfg("<A><b>1</b></A>"),
     False, None),
    ("annotations-off-extra", cfg("<A><b>1</b></A>"), cfg('<A><b cdl:use="optional">1</b></A>'), False, None),
    ("annotations-off-others-kept", cfg('<A><b cdl:lazy="true"/></A>'), cfg("<A><b/></A>"), False,
     "/cdl:configuration/A/b/@cdl:lazy"),
]


@pytest.mark.parametrize(("expected", "actual", "annotations", "where"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_compare(expected: str, actual: str, annotations: bool, where: str | None) -> None:
    diff = compare(etree.fromstring(expected), etree.fromstring(actual), annotations=annotations)
    assert (diff and diff.path) == where, diff


def test_compare_is_symmetric_in_equality() -> None:
    for name, expected, actual, annotate, where in CASES:
        if name == "root-not-cdl":  # the expected side must be a CDL document
            continue
        back = compare(etree.fromstring(actual), etree.fromstring(expected), annotations=annotate)
        assert (back is None) == (where is None), name


def test_system_only_ignores_configuration() -> None:
    expected = etree.fromstring(sysdoc("<S/>"))
    actual = etree.fromstring(
        f'<cdl:cdl xmlns:cdl="{CDL_NS}"><cdl:configuration><T/></cdl:configuration>'
        f"<cdl:system><S/></cdl:system></cdl:cdl>"
    )
    assert compare(expected, actual, system_only=True) is None
    assert compare(expected, actual) == Difference("/cdl:configuration/T", "nothing", "element T")


def test_expected_must_be_cdl() -> None:
    with pytest.raises(ValueError, match="not cdl:cdl"):
        compare(etree.fromstring("<cdl/>"), etree.fromstring(cfg("")))


@pytest.mark.parametrize(
    ("expected", "actual", "rendered"),
    [
        (cfg("<A><b>1</b></A>"), cfg("<A><b>2</b></A>"),
         "at /cdl:configuration/A/b: expected text '1', found text '2'"),
        (cfg("<A><b/></A>"), cfg('<A><b/><u:c xmlns:u="urn:u"/></A>'),
         "at /cdl:configuration/A/u:c: expected nothing, found element u:c"),
        (cfg('<t:A xmlns:t="urn:t"/>'), cfg('<t:A xmlns:t="urn:u"/>'),
         "at /cdl:configuration/t:A: expected element {urn:t}A, found element {urn:u}A"),
        (cfg('<A><b cdl:type="t:T" xmlns:t="urn:t"/></A>'), cfg('<A><b cdl:type="t:T" xmlns:t="urn:u"/></A>'),
         "at /cdl:configuration/A/b/@cdl:type: expected 't:T' meaning {urn:t}T, found 't:T' meaning {urn:u}T"),
        (cfg("<A><b>" + "x" * 100 + "1</b></A>"), cfg("<A><b>" + "x" * 100 + "2</b></A>"),
         "at /cdl:configuration/A/b\n  expected text ...'" + "x" * 20 + "1', found text ...'" + "x" * 20 + "2'"),
    ],
    ids=["text", "extra-element", "same-label", "same-qname-text", "long-text"],
)
def test_difference_rendering(expected: str, actual: str, rendered: str) -> None:
    diff = compare(etree.fromstring(expected), etree.fromstring(actual))
    assert diff is not None
    assert str(diff) == rendered
    assert len(str(diff).splitlines()) <= 2
