"""The JSON view of the output (issue 26, point 2): ``Resolution.to_data()``
and ``cdl resolve --format json`` follow xmltodict's convention and lose
nothing the XML output says about the lists (README.md, "JSON output";
docs/semantics.md, "JSON mapping").

The mapping's rules one by one, then a round trip: from the JSON of every
sample and of every conformance case, XML is rebuilt (a small
xmltodict-style unparse written here, independent of the engine) and
compared canonically with the XML output.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

import cdl
from cdl.conformance import Case, bundled_suite, load_suite
from conftest import CDL_NS, config, resolve_text, system

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "samples").glob("*/system.cdl"))
XML_NS = "http://www.w3.org/XML/1998/namespace"
T_TYPES = f"{{{CDL_NS}}}types"


# ---------------------------------------------------------------------------
# The round trip: JSON back to XML, compared canonically with the XML output


def _clark(name: str, nsmap: dict[str | None, str], attribute: bool = False) -> str:
    """The Clark name of ``prefix:local`` under the output root's declarations
    (an unprefixed attribute is in no namespace; an unprefixed element is in
    the default namespace, if any)."""
    prefix, _, local = name.rpartition(":")
    uri = XML_NS if prefix == "xml" else nsmap[prefix] if prefix else None if attribute else nsmap.get(None)
    return f"{{{uri}}}{local}" if uri else local


def unparse(data: dict[str, Any], nsmap: dict[str | None, str]) -> etree._Element:
    """A ``cdl:cdl`` tree from ``to_data``'s dict: xmltodict's unparse, with
    the namespace declarations (which the JSON leaves out) given."""
    root = etree.Element(f"{{{CDL_NS}}}cdl", nsmap=nsmap)
    stack: list[tuple[etree._Element, str, Any]] = [(root, f"{{{CDL_NS}}}{part}", value) for part, value in reversed(data.items())]
    while stack:
        parent, name, value = stack.pop()
        el = etree.SubElement(parent, name if name.startswith("{") else _clark(name, nsmap))
        if isinstance(value, str):
            el.text = value
            continue
        assert isinstance(value, dict), value
        children: list[tuple[etree._Element, str, Any]] = []
        for key, item in value.items():
            if key.startswith("@"):
                assert isinstance(item, str)
                el.set(_clark(key[1:], nsmap, attribute=True), item)
            elif key == "#text":
                assert isinstance(item, str) and item
                el.text = item
            else:
                items = item if isinstance(item, list) else [item]
                assert items and not any(isinstance(i, list) for i in items)
                children.extend((el, key, i) for i in items)
        stack.extend(reversed(children))
    return root


def canonical_output(xml: bytes) -> etree._Element:
    """The XML output as the JSON view represents it: its lists (no
    ``cdl:types``, no root attributes), the text pieces of an element with
    children joined before them (dropped when blank: indentation), and
    children grouped by name in the order of each name's first occurrence.
    The last two are what the mapping documents it does not keep."""
    root = etree.fromstring(xml)
    for part in root.findall(T_TYPES):
        root.remove(part)
    root.attrib.clear()
    for part in root:
        if not len(part) and not (part.text or "").strip():
            part.text = None  # a part's blank text is layout (the loader refuses text there)
    for el in list(root.iter()):
        if len(el):
            text = "".join([el.text or "", *(child.tail or "" for child in el)])
            el.text = text if text.strip() else None
            first: dict[str, int] = {}
            for child in el:
                child.tail = None
                first.setdefault(child.tag, len(first))
            el[:] = sorted(el, key=lambda child: first[child.tag])
    return root


def assert_round_trip(data: dict[str, Any], xml: bytes) -> None:
    expected = canonical_output(xml)
    rebuilt = unparse(json.loads(json.dumps(data)), dict(expected.nsmap))
    assert etree.tostring(rebuilt, method="c14n").decode() == etree.tostring(expected, method="c14n").decode()


# ---------------------------------------------------------------------------
# The rules, one by one

PENDING_REFROOT = system(
    "<S><r cdl:ref='/t:v' cdl:refroot='t:T'/><lr cdl:ref='/S/r' cdl:lazy='true'/></S>",
    'xmlns:t="urn:t"',
    configuration="<t:T><t:v cdl:lazy='true'/></t:T>",
)

RULES = [
    # an empty value is "", not null; so is an empty list
    (system("<S><p>1</p><q/><e></e></S>"), {"system": {"S": {"p": "1", "q": "", "e": ""}}}),
    (system("<S/>"), {"system": {"S": ""}}),
    # a leaf without attributes is its text, exactly
    (system("<S><p>  a  b </p><w> </w></S>"), {"system": {"S": {"p": "  a  b ", "w": " "}}}),
    # a pending lazy property keeps its CDL attribute
    (system("<S><p cdl:lazy='true'/></S>"), {"system": {"S": {"p": {"@cdl:lazy": "true"}}}}),
    # cdl:lazy="false" is not in the XML output, so not in the JSON either
    (system("<S><p cdl:lazy='false'>1</p></S>"), {"system": {"S": {"p": "1"}}}),
    # a pending reference keeps cdl:ref (and cdl:refroot), as the output writes them
    (
        PENDING_REFROOT,
        {
            "configuration": {"t:T": {"t:v": {"@cdl:lazy": "true"}}},
            "system": {"S": {"r": {"@cdl:refroot": "t:T", "@cdl:ref": "./t:v"}, "lr": {"@cdl:lazy": "true", "@cdl:ref": "./S/r"}}},
        },
    ),
    # attributes: unprefixed, prefixed as the output writes them, xml:, on a list
    (
        system("<S a='1' x:b='2'><p xml:lang='en' z=''>v</p></S>", 'xmlns:x="urn:x"'),
        {"system": {"S": {"@a": "1", "@x:b": "2", "p": {"@xml:lang": "en", "@z": "", "#text": "v"}}}},
    ),
    # the text as #text beside attributes; absent when empty; kept exactly
    (
        system("<S><p a='1'>x</p><q a='2'/><r a='3'>  </r></S>"),
        {"system": {"S": {"p": {"@a": "1", "#text": "x"}, "q": {"@a": "2"}, "r": {"@a": "3", "#text": "  "}}}},
    ),
    # repeated names stay lists, in order, whether the values are text or objects
    (
        system("<S><p>1</p><q>x</q><p>2</p><p/><p a='b'/></S>"),
        {"system": {"S": {"p": ["1", "2", "", {"@a": "b"}], "q": "x"}}},
    ),
    (
        system("<S><g><v>1</v></g><g><v>2</v><w/></g></S><S2/>"),
        {"system": {"S": {"g": [{"v": "1"}, {"v": "2", "w": ""}]}, "S2": ""}},
    ),
    # mixed content: the pieces of text joined, as #text after the children
    (system("<S> a <p>1</p> b <q/></S>"), {"system": {"S": {"p": "1", "q": "", "#text": " a  b "}}}),
    # indentation between children is no text
    (system("<S>\n  <p>1</p>\n  <q c='d'>\n    <r/>\n  </q>\n</S>"), {"system": {"S": {"p": "1", "q": {"@c": "d", "r": ""}}}}),
    # names as the output writes them: a prefix, or none in the default namespace
    (
        system("<t:S><t:a><t:b>1</t:b></t:a><c>2</c></t:S>", 'xmlns:t="urn:t"'),
        {"system": {"t:S": {"t:a": {"t:b": "1"}, "c": "2"}}},
    ),
    (system("<S><p>1</p></S>", 'xmlns="urn:d"'), {"system": {"S": {"p": "1"}}}),
    # a pending expression keeps its element and its variables'
    (
        system("<S><x><cdl:expression value-of='concat($a, 1)'><cdl:variable name='a' ref='/y'/></cdl:expression></x><y cdl:lazy='true'/></S>"),
        {
            "system": {
                "S": {
                    "x": {"cdl:expression": {"@value-of": "concat($a, 1)", "cdl:variable": {"@name": "a", "@ref": "./y"}}},
                    "y": {"@cdl:lazy": "true"},
                }
            }
        },
    ),
    # both parts, each always an object of its lists
    (system("<S cdl:extends='T'/>", configuration="<T><v>1</v></T>"), {"configuration": {"T": {"v": "1"}}, "system": {"S": {"v": "1"}}}),
    (config("<T><v>1</v></T>"), {"configuration": {"T": {"v": "1"}}}),
    (system("<S/>").replace("<cdl:system>", "<cdl:system a='1'>"), {"system": {"@a": "1", "S": ""}}),
    # a part without lists is still an object (its blank text is layout)
    (system("<S/>", configuration=" "), {"configuration": {}, "system": {"S": ""}}),
]


@pytest.mark.parametrize(("xml", "data"), RULES)
def test_rule(xml: str, data: dict[str, Any]) -> None:
    res = resolve_text(xml)
    assert res.to_data() == data
    assert_round_trip(res.to_data(), res.to_bytes())


def test_keys_are_in_order_attributes_children_text() -> None:
    # Attributes in the order written, children by first occurrence, #text last.
    res = resolve_text(system("<S><p z='1' a='2' m='3'><c/>t<b/><c/></p></S>"))
    p = res.to_data()["system"]["S"]["p"]  # type: ignore[index, call-overload]
    assert list(p) == ["@z", "@a", "@m", "c", "b", "#text"]
    webapp = cdl.load(str(ROOT / "samples" / "webapp" / "system.cdl")).resolve()
    app = webapp.to_data()["system"]["WebApplication"]  # type: ignore[index, call-overload]
    assert list(app)[:4] == ["cmp:CodeBase", "cmp:CommandPath", "cmp:Delegate", "cmp:sequence"]


def test_values_are_plain_json_types() -> None:
    res = resolve_text(system("<S a='1'><p>1</p><p>2</p><q/></S>"))
    s = res.to_data()["system"]["S"]  # type: ignore[index, call-overload]
    assert type(s) is dict and type(s["p"]) is list and type(s["q"]) is str
    assert "null" not in json.dumps(res.to_data())


def test_webapp_keeps_its_attributes_through_the_command_line() -> None:
    # The example: cmp:sequence lifecycle="initialization", pending values.
    out = _cli("resolve", "samples/webapp/system.cdl", "--format", "json")
    app = json.loads(out)["system"]["WebApplication"]
    assert app["cmp:sequence"] == [{"@lifecycle": "initialization", "#text": "true"}, {"@lifecycle": "execution", "#text": "true"}]
    assert app["t:DB"]["t:hostname"] == {"@cdl:lazy": "true"}
    assert app["t:Web"]["t:dbconnection"]["t:hostname"] == {"@cdl:ref": "../../t:DB/t:hostname"}
    assert app["cmp:CodeBase"] == {"@cdl:type": "xsd:anyURI"}
    assert app["cmp:Delegate"] == ""
    assert json.loads(out) == cdl.load(str(ROOT / "samples" / "webapp" / "system.cdl")).resolve().to_data()


def test_deep_documents_need_no_recursion() -> None:
    depth = 5000
    res = resolve_text(system("<S>" + "<a x='1'>" * depth + "v" + "</a>" * depth + "</S>"))
    node: Any = res.to_data()["system"]["S"]
    for _ in range(depth - 1):
        node = node["a"]
        assert list(node) == ["@x", "a"]
    assert node["a"] == {"@x": "1", "#text": "v"}


def test_command_line_writes_json_as_deep_as_the_document(tmp_path: Path) -> None:
    # The json module's encoder recurses per level and gave up near 1000.
    depth = 3000
    path = tmp_path / "deep.cdl"
    path.write_text(system("<S>" + "<a>" * depth + "v" + "</a>" * depth + "</S>"), encoding="utf-8")
    out = _cli("resolve", str(path), "--format", "json")
    assert out.endswith("}\n") and out.count('"a": {') == depth - 1 and '"a": "v"' in out


# ---------------------------------------------------------------------------
# Every sample and every conformance case, both ways


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.parent.name)
@pytest.mark.parametrize("system_only", [False, True])
def test_samples_round_trip(sample: Path, system_only: bool) -> None:
    res = cdl.load(str(sample)).resolve()
    assert_round_trip(res.to_data(system_only), res.to_bytes(system_only))


def _output_cases() -> list[Case]:
    return [case for case in load_suite(bundled_suite()) if case.expect is not None]


@pytest.mark.parametrize("case", _output_cases(), ids=lambda case: case.name)
def test_conformance_outputs_round_trip(case: Case) -> None:
    res = cdl.load(str(case.main_path)).resolve(rounds=[r.as_dict() for r in case.rounds])
    assert_round_trip(res.to_data(case.system_only), res.to_bytes(case.system_only))


def test_the_canonical_form_keeps_what_the_mapping_must_keep() -> None:
    # The comparison itself can fail: an attribute, a text, an empty value
    # or a repeated value lost from the JSON is seen.
    res = resolve_text(system("<S><p a='1'>x</p><p/><q/></S>"))
    data = res.to_data()
    for broken in (
        {"system": {"S": {"p": [{"#text": "x"}, ""], "q": ""}}},
        {"system": {"S": {"p": [{"@a": "1"}, ""], "q": ""}}},
        {"system": {"S": {"p": {"@a": "1", "#text": "x"}, "q": ""}}},
        {"system": {"S": {"p": [{"@a": "1", "#text": "x"}, ""]}}},
        {"system": {"S": {"p": [{"@a": "1", "#text": "x"}, ""], "q": " "}}},
    ):
        with pytest.raises(AssertionError):
            assert_round_trip(broken, res.to_bytes())
    assert_round_trip(data, res.to_bytes())


# ---------------------------------------------------------------------------
# The README shows the mapping on a sample, as the command prints it


def _cli(*args: str) -> str:
    """``cdl ARGS`` run from the repository, as the README's commands are."""
    proc = subprocess.run([sys.executable, "-m", "cdl", *args], cwd=ROOT, check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_readme_json_example_is_real() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("### JSON output")
    section = text[start : text.index("\n#", start + 1)]
    for term in ('"@name"', '"#text"', '""'):
        assert term in section
    [session] = re.findall(r"```console\n(.*?)```", section, re.DOTALL)
    command, _, expected = session.partition("\n")
    assert command.startswith("$ cdl ")
    assert _cli(*command[len("$ cdl ") :].split()) == expected
