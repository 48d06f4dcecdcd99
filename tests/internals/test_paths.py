"""cdl.model.paths: the 7.3.1 path grammar, QName resolution, the absolute-to-relative
formula, and walking parsed paths over multi-node sets."""

from __future__ import annotations

import pytest
from lxml import etree

from cdl.model.paths import PathSyntaxError, PrefixError, is_ncname, parse_name_ref, parse_path, parse_qname, relative_ref, walk
from cdl.model.tables import NameRef, Ref
from cdl.model.vocabulary import A_LAZY, P_REF, UP
from conftest import CDL_NS

NSMAP = {None: "urn:d", "p": "urn:p", "q": "urn:q"}
XML_NS = "http://www.w3.org/XML/1998/namespace"

# ---------------------------------------------------------------------------
# NCName / QName


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a", True),
        ("_a", True),
        ("a.b-c_d1", True),
        ("\u00e9t\u00e9", True),
        ("", False),
        ("1a", False),
        ("-a", False),
        (".a", False),
        ("a:b", False),
        ("a b", False),
        ("a*", False),
    ],
)
def test_is_ncname(text: str, expected: bool) -> None:
    assert is_ncname(text) is expected


@pytest.mark.parametrize(
    ("text", "nsmap", "expected"),
    [
        # unprefixed: the default namespace in scope, as xsd:QName
        ("a", NSMAP, ("{urn:d}a", None)),
        ("a", {}, ("a", None)),
        ("a", {"p": "urn:p"}, ("a", None)),
        # a default namespace undeclared with xmlns="" means no namespace
        ("a", {None: ""}, ("a", None)),
        ("p:a", NSMAP, ("{urn:p}a", "p")),
        ("q:long-name.1", NSMAP, ("{urn:q}long-name.1", "q")),
        (" p:a ", NSMAP, ("{urn:p}a", "p")),
        ("xml:lang", {}, (f"{{{XML_NS}}}lang", "xml")),
    ],
)
def test_parse_qname(text: str, nsmap: dict, expected: tuple) -> None:
    assert parse_qname(text, nsmap) == expected


@pytest.mark.parametrize(
    ("text", "nsmap", "message"),
    [
        ("u:a", NSMAP, "prefix 'u' of 'u:a' is not declared"),
        ("u:a", {}, "prefix 'u' of 'u:a' is not declared"),
        ("", NSMAP, "'' is not a QName"),
        ("1a", NSMAP, "'1a' is not a QName"),
        ("p:", NSMAP, "'p:' is not a QName"),
        (":a", NSMAP, "':a' is not a QName"),
        ("p:a:b", NSMAP, "'p:a:b' is not a QName"),
        ("a b", NSMAP, "'a b' is not a QName"),
    ],
)
def test_parse_qname_errors(text: str, nsmap: dict, message: str) -> None:
    with pytest.raises(PrefixError) as info:
        parse_qname(text, nsmap)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("text", "nsmap", "target_ns", "candidates"),
    [
        # unprefixed: default namespace, then targetNamespace, then no namespace
        ("a", {None: "urn:d"}, "urn:t", ("{urn:d}a", "{urn:t}a", "a")),
        ("a", {None: "urn:d"}, "", ("{urn:d}a", "a")),
        ("a", {}, "urn:t", ("a", "{urn:t}a")),
        ("a", {}, "", ("a",)),
        ("a", {None: "urn:t"}, "urn:t", ("{urn:t}a", "a")),
        # a prefixed name means exactly one thing
        ("p:a", {None: "urn:d", "p": "urn:p"}, "urn:t", ("{urn:p}a",)),
        ("p:a", {"p": "urn:t"}, "urn:t", ("{urn:t}a",)),
    ],
)
def test_parse_name_ref_candidates(text: str, nsmap: dict, target_ns: str, candidates: tuple) -> None:
    assert parse_name_ref(text, nsmap, target_ns) == NameRef(text, candidates)


def test_parse_name_ref_undeclared_prefix() -> None:
    with pytest.raises(PrefixError, match="prefix 'x' of 'x:a' is not declared"):
        parse_name_ref("x:a", {}, "urn:t")


# ---------------------------------------------------------------------------
# The grammar of 7.3.1: Path ::= ('/')? Step ('/' Step)*, Step ::= '.' | '..' | QName


@pytest.mark.parametrize(
    ("text", "absolute", "steps"),
    [
        ("a", False, ("{urn:d}a",)),
        ("/a", True, ("{urn:d}a",)),
        ("a/b/c", False, ("{urn:d}a", "{urn:d}b", "{urn:d}c")),
        ("/a/b", True, ("{urn:d}a", "{urn:d}b")),
        (".", False, ()),
        ("..", False, (UP,)),
        ("/.", True, ()),
        ("/..", True, (UP,)),
        ("./a", False, ("{urn:d}a",)),
        ("../b", False, (UP, "{urn:d}b")),
        ("../../b", False, (UP, UP, "{urn:d}b")),
        ("a/./b", False, ("{urn:d}a", "{urn:d}b")),
        ("a/../b", False, ("{urn:d}a", UP, "{urn:d}b")),
        ("./.", False, ()),
        ("p:a/q:b", False, ("{urn:p}a", "{urn:q}b")),
        ("/p:a/b", True, ("{urn:p}a", "{urn:d}b")),
        ("a.b/c-d/_e", False, ("{urn:d}a.b", "{urn:d}c-d", "{urn:d}_e")),
        (" /a ", True, ("{urn:d}a",)),
    ],
)
def test_parse_path_valid(text: str, absolute: bool, steps: tuple) -> None:
    assert parse_path(text, NSMAP) == (absolute, steps)


def test_parse_path_without_default_namespace() -> None:
    assert parse_path("/a/p:b", {"p": "urn:p"}) == (True, ("a", "{urn:p}b"))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "/",
        "//a",
        "a//b",
        "a/",
        "/a/",
        "a/b[1]",
        "a[1]",
        "@a",
        "a/@b",
        "*",
        "a/*",
        "p:*",
        "text()",
        "a/text()",
        "node()",
        "child::a",
        "parent::node()",
        "...",
        "1a",
        "-a",
        "a b",
        "a/ b",
        "a|b",
        "$v",
        "$v/a",
        "u:a",  # undeclared prefix
        "a/u:b",
        "p:a:b",
        "'a'",
        "a,b",
        "a/.../b",
    ],
)
def test_parse_path_invalid(text: str) -> None:
    with pytest.raises(PathSyntaxError):
        parse_path(text, NSMAP)


# ---------------------------------------------------------------------------
# Absolute to relative (7.3.1 with the NOTES.md formula): for a node at depth d
# without refroot the path becomes '..' + (d-2) x '/..' + path, for d = 1 it is
# '.' + path; with refroot it is '.' + path.


@pytest.mark.parametrize(
    ("text", "refroot", "depth", "steps"),
    [
        ("/b", None, 1, ("b",)),
        ("/b", None, 2, (UP, "b")),
        ("/b", None, 3, (UP, UP, "b")),
        ("/b", None, 4, (UP, UP, UP, "b")),
        ("/b/c", None, 3, (UP, UP, "b", "c")),
        ("/.", None, 2, (UP,)),
        # with refroot the root is the context: '.' + path at any depth
        ("/b", "T", 1, ("b",)),
        ("/b", "T", 3, ("b",)),
        ("/b/c", "T", 5, ("b", "c")),
        # relative paths are left as they are
        ("b", None, 3, ("b",)),
        ("../b", None, 3, (UP, "b")),
        ("./b", "T", 2, ("b",)),
    ],
)
def test_relative_ref_formula(text: str, refroot: str | None, depth: int, steps: tuple) -> None:
    absolute, parsed = parse_path(text, {})
    name = NameRef(refroot, (refroot,)) if refroot else None
    assert relative_ref(text, name, absolute, parsed, depth) == Ref(text, name, steps)


# ---------------------------------------------------------------------------
# walk(): node sets, document order, blockers, problems


def tree(xml: str) -> etree._Element:
    """A cdl:configuration holding ``xml``; returns its first list."""
    root = etree.fromstring(f'<cdl:configuration xmlns:cdl="{CDL_NS}">{xml}</cdl:configuration>')
    return root[0]


def texts(nodes) -> list[str]:
    return [n.get("id") or n.text for n in nodes]


MULTI = """
<L>
  <p id="p1"><x>1</x><x>2</x><y>y1</y></p>
  <q id="q"><x>q</x></q>
  <p id="p2"><x>3</x></p>
  <p id="p3"><y>y3</y></p>
</L>
"""


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ((), ["L"]),
        (("p",), ["p1", "p2", "p3"]),
        (("p", "x"), ["1", "2", "3"]),
        (("p", "y"), ["y1", "y3"]),
        (("q", "x"), ["q"]),
        # '..' from several nodes: each parent once, in document order
        (("p", "x", UP), ["p1", "p2"]),
        (("p", "x", UP, "y"), ["y1"]),
        (("p", UP), ["L"]),
        (("p", UP, "q"), ["q"]),
        (("p", "x", UP, UP, "q", "x"), ["q"]),
    ],
)
def test_walk_multi_node_sets(steps: tuple, expected: list[str]) -> None:
    L = tree(MULTI)
    L.set("id", "L")
    result = walk(L, steps)
    assert (result.problem, result.blockers) == (None, ())
    assert texts(result.nodes) == expected


@pytest.mark.parametrize(
    ("steps", "problem", "step"),
    [
        (("r",), "empty", 0),
        (("p", "z"), "empty", 1),
        (("p", "y", "z"), "empty", 2),
        ((UP,), "above", 0),
        (("p", UP, UP), "above", 2),
        (("p", "x", UP, UP, UP), "above", 4),
    ],
)
def test_walk_problems(steps: tuple, problem: str, step: int) -> None:
    result = walk(tree(MULTI), steps)
    assert (result.nodes, result.blockers, result.problem, result.step) == ((), (), problem, step)


def test_walk_above_a_detached_element() -> None:
    el = etree.fromstring("<a><b/></a>")
    assert walk(el, (UP,)).problem == "above"


def test_walk_stops_at_unresolved_elements_on_the_way() -> None:
    L = tree("<L><p id='r1'/><p id='v'><x>1</x></p><p id='lz'/><p id='lzv'><x>2</x></p></L>")
    L[0].set(P_REF, "0")  # an unresolved reference
    L[2].set(A_LAZY, "true")  # a lazy property without a value
    L[3].set(A_LAZY, "true")  # lazy but valued: LAZY_WITH_VALUE, still unresolved
    result = walk(L, ("p", "x"))
    assert result.nodes == () and result.problem is None
    assert texts(result.blockers) == ["r1", "lz", "lzv"]
    # The path that ends on them is not blocked: a target is checked by the caller.
    assert texts(walk(L, ("p",)).nodes) == ["r1", "v", "lz", "lzv"]


def test_walk_is_iterative_for_long_paths() -> None:
    depth = 5000
    root = etree.Element("L")
    cur = root
    for _ in range(depth):
        cur = etree.SubElement(cur, "n")
    cur.text = "leaf"
    wrapper = etree.Element(f"{{{CDL_NS}}}configuration")
    wrapper.append(root)
    result = walk(root, ("n",) * depth)
    assert [n.text for n in result.nodes] == ["leaf"]
    back = walk(cur, (UP,) * (depth - 1))
    assert [n.tag for n in back.nodes] == ["n"] and back.nodes[0].getparent() is root


def test_user_paths_are_parsed_one_way_for_set_and_explain() -> None:
    # --set/--release and explain/--select share parse_user_path: the same
    # text is refused with the same reason by both.
    from cdl.model.paths import PrefixError, UserStep, parse_user_path

    ns = {"t": "urn:t"}
    assert parse_user_path("/L/t:a/b", ns, "") == (parse_user_path("L", ns, "")[0], (UserStep("{urn:t}a", 0), UserStep("b", 0)), ["L", "t:a", "b"])
    # One of same-named siblings, as paths are written: name[k], k from 1; a list's name is unique.
    assert parse_user_path("L/t:a[2]/b[10]", ns, "")[1] == (UserStep("{urn:t}a", 2), UserStep("b", 10))
    for bad in ("L//a", "L/", "L/x:a", "", "L/a[0]", "L[1]/a", "L/a[x]", "L/a[1"):
        with pytest.raises(PrefixError):
            parse_user_path(bad, ns, "")
