"""Hypothesis strategies that turn valid CDL documents into hostile ones.

The corpus is every document the project already trusts: the ``main`` of each
conformance case (``src/cdl/conformance_cases/**/case.json``) and every sample
(``samples/**/*.cdl``), each with its directory, so imports keep working.

A :class:`Mutant` is one corpus entry with some of its files changed:

- at the XML level (lxml): drop, duplicate, move and rename elements, add a
  same-named sibling of the other kind (a leaf beside an element with
  children, or the reverse); drop,
  copy and rename attributes (the CDL ones above all: ``cdl:extends``,
  ``cdl:ref``, ``cdl:refroot``, ``cdl:lazy``...); replace a path, a QName or a
  location with garbage; create ``cdl:extends`` and ``cdl:ref`` cycles; move
  elements into other namespaces; add imports and expressions;
- then at the byte level: inject, overwrite, delete or duplicate bytes,
  truncate, swap a namespace URI.

Tests write a Mutant into a fresh directory (:meth:`Mutant.write`) and resolve
it, possibly with deploy-time rounds drawn here as well.
"""

from __future__ import annotations

import copy
import hashlib
import json
import xml.parsers.expat as expat
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from lxml import etree

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "src" / "cdl" / "conformance_cases"
SAMPLES = ROOT / "samples"
CDL_NS = "http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"
C = f"{{{CDL_NS}}}"

# ---------------------------------------------------------------------------
# The corpus


@dataclass(frozen=True)
class Seed:
    """One valid starting point: a directory's .cdl files and which one is main."""

    name: str
    files: tuple[tuple[str, bytes], ...]
    main: str
    rounds: tuple[dict[str, Any], ...] = ()


@cache
def corpus() -> tuple[Seed, ...]:
    seeds: list[Seed] = []
    for case_json in sorted(CASES.glob("**/case.json")):
        case_dir = case_json.parent
        spec = json.loads(case_json.read_text(encoding="utf-8"))
        main = spec.get("main", "main.cdl")
        files = _cdl_files(case_dir, skip={spec.get("expect", "expected.cdl")})
        if main in dict(files):
            seeds.append(Seed(str(case_dir.relative_to(ROOT)), files, main, tuple(spec.get("rounds") or ())))
    for sample_dir in sorted({p.parent for p in SAMPLES.glob("**/*.cdl")}):
        files = _cdl_files(sample_dir, skip=set())
        for name, _ in files:
            seeds.append(Seed(f"{sample_dir.relative_to(ROOT)}/{name}", files, name))
    assert seeds, "the robustness corpus is empty"
    return tuple(seeds)


def _cdl_files(directory: Path, skip: set[str]) -> tuple[tuple[str, bytes], ...]:
    return tuple(
        (str(p.relative_to(directory)), p.read_bytes())
        for p in sorted(directory.glob("**/*.cdl"))
        if p.name not in skip
    )


# ---------------------------------------------------------------------------
# What a test receives


@dataclass
class Mutant:
    """A corpus entry after mutation: the files to write and how to resolve them."""

    seed: str
    main: str
    files: dict[str, bytes]
    rounds: list[dict[str, Any]] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)

    def write(self, directory: Path) -> Path:
        """Write every file under ``directory``; return the main document's path."""
        for name, data in self.files.items():
            target = directory / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        return directory / self.main

    def __repr__(self) -> str:  # what hypothesis prints for a failing example
        lines = [f"Mutant(seed={self.seed!r}, main={self.main!r}, rounds={self.rounds!r})", "  ops:"]
        lines += [f"    {op}" for op in self.ops]
        for name, data in self.files.items():
            lines.append(f"  --- {name} ---")
            lines.append("  " + repr(data))
        return "\n".join(lines)

    @classmethod
    def from_directory(cls, directory: Path, main: str, rounds: list[dict[str, Any]] | None = None) -> Mutant:
        """A saved regression input (tests/data/robustness/NAME/)."""
        files = {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.glob("**/*")) if p.is_file()}
        return cls(f"regression:{directory.name}", main, files, list(rounds or []), ["(saved input)"])


def digest(directory: Path) -> dict[str, str]:
    """sha256 of every file under ``directory`` (inputs must never change)."""
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.glob("**/*"))
        if p.is_file()
    }


def parses_as_xml(data: bytes) -> None:
    """Raise unless ``data`` is well-formed, namespace-well-formed XML.

    lxml first (with huge_tree, since resolution may legitimately deepen a
    tree); expat, which has no depth cap, when lxml refuses only for depth.
    """
    try:
        etree.fromstring(data, etree.XMLParser(huge_tree=True, resolve_entities=False, no_network=True))
        return
    except etree.XMLSyntaxError as exc:
        if "depth" not in str(exc).lower() and "nest" not in str(exc).lower():
            raise
    parser = expat.ParserCreate(namespace_separator=" ")
    parser.Parse(data, True)


# ---------------------------------------------------------------------------
# Values a mutation may write

NAMESPACES = [
    CDL_NS,
    CDL_NS.replace("cddlm", "cddlml"),  # the misspelling of NOTES.md
    "urn:x-other",
    "",
    "http://www.w3.org/XML/1998/namespace",
    "urn:x-cdl-engine:internal",  # the engine's private attributes live here
]
CDL_ATTRIBUTES = [C + n for n in ("extends", "ref", "refroot", "lazy", "type", "use", "unknown")] + [
    "{urn:x-cdl-engine:internal}" + n for n in ("ref", "ext", "expr", "doc")  # spoofing the engine's own marks
]
PLAIN_ATTRIBUTES = ["location", "value-of", "name", "ref", "refroot", "lazy", "targetNamespace", "x"]
CDL_ELEMENTS = [C + n for n in ("cdl", "import", "types", "configuration", "system", "documentation", "expression", "variable", "bogus")]

NASTY_TEXT = [
    "",
    " ",
    "/",
    "//",
    ".",
    "..",
    "../../../../../../..",
    "/" + "/".join(["a"] * 200),
    "/" + "/".join([".."] * 50),
    "a:b:c",
    "undeclared:x",
    "xml:lang",
    "cdl:system",
    ":x",
    "x:",
    "1abc",
    "a b",
    "a[1]",
    "a/*",
    "$x",
    "true",
    "false",
    "yes",
    "TRUE",
    "required",
    "optional",
    "xsd:string",
    "concat(",
    "1 div 0",
    "0 div 0",
    "//x",
    "position()",
    "\u00e9t\u00e9",
    "\U0001f600",
    "%00",
    "main.cdl",
    "missing.cdl",
    "../outside.cdl",
    "../../../../../../etc/passwd",
    "/etc/passwd",
    "file:///etc/passwd",
    "file://otherhost/x.cdl",
    "http://127.0.0.1:9/x.cdl",
    "https://example.invalid/x.cdl",
    "ftp://example.invalid/x.cdl",
    "data:text/xml,<x/>",
    "jar:file:///x!/y",
    "\\\\server\\share\\x.cdl",
    ".",
    "sub/",
]

# XPath for cdl:expression/@value-of: valid, invalid, and hostile within the
# default max_expression_length (10,000 characters).
EXPRESSIONS = [
    "concat($a, $b)",
    "$a + $a",
    "$a * 2",
    "string-length($a)",
    "concat($a, '-', $b)",
    "number($a) + 1",
    "1 div 0",
    "0 div 0",
    "-1 div 0",
    "string(1 div 0)",
    "string(0 div 0)",
    "substring('abc', 0 div 0)",
    "round(1 div 0)",
    "9" * 400,
    "-" + "9" * 400,
    "floor(" + "9" * 400 + ")",
    "1e400",
    "0.1 + 0.2",
    "2 * " * 1100 + "2",
    "1" + " + 1" * 400,
    "-" * 500 + "1",
    "(" * 600 + "1" + ")" * 600,
    "not(" * 400 + "true()" + ")" * 400,
    "concat(" * 300 + "'a'" + ", 'b')" * 300,
    "concat('a', 'b'",
    "'unterminated",
    "$",
    "$a $b",
    "translate($a, 'abc', 'ABC')",
    "sum(1)",
    "id('x')",
    "document('file:///etc/passwd')",
    "unparsed-text('file:///etc/passwd')",
    "doc('/etc/passwd')",
    "'a' = 'a' and 1 < 2",
    "boolean('')",
]

# Text lxml accepts in attributes and text (XML 1.0 characters, no surrogates).
xml_text = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs",),
        blacklist_characters="\x00\ufffe\uffff",
        min_codepoint=0x9,
    ).filter(lambda c: c in "\t\n\r" or ord(c) >= 0x20),
    max_size=40,
)
values = st.one_of(st.sampled_from(NASTY_TEXT), st.sampled_from(EXPRESSIONS), xml_text)
#: Deploy-time values come from the deployment request too: any text at all,
#: control characters and lone surrogates (what invalid UTF-8 in argv becomes) included.
deploy_values = st.one_of(
    values,
    st.sampled_from(["", "a\x00b", "a\x01b", "\x1b[31m", "\ufffe", "\udcff", "\ud800", "]]>", "<x/>", "&amp;"]),
    st.text(alphabet=st.characters(codec=None), max_size=10),
)
expressions = st.integers(0, 3).flatmap(lambda n: values if n == 0 else st.sampled_from(EXPRESSIONS))


# ---------------------------------------------------------------------------
# XML-level mutations. Each takes (tree root, data) and returns a description,
# or None when it did not apply.


def _elements(root: etree._Element) -> list[etree._Element]:
    return [el for el in root.iter() if isinstance(el.tag, str)]


def _non_root(root: etree._Element) -> list[etree._Element]:
    return [el for el in _elements(root) if el is not root]


def _top_level_lists(root: etree._Element) -> list[etree._Element]:
    return [el for parent in root if parent.tag in (C + "configuration", C + "system") for el in parent if isinstance(el.tag, str)]


def _qname_for(el: etree._Element, scope: etree._Element) -> str:
    """``el``'s name as a QName written on ``scope`` (prefixed when a prefix is in scope)."""
    tag = etree.QName(el)
    if tag.namespace is None:
        return tag.localname
    for prefix, uri in scope.nsmap.items():
        if uri == tag.namespace:
            return f"{prefix}:{tag.localname}" if prefix else tag.localname
    return tag.localname


def _path_to(el: etree._Element, scope: etree._Element) -> str:
    """An absolute CDL path from ``el``'s top level list, written on ``scope``."""
    names: list[str] = []
    cur: etree._Element | None = el
    while cur is not None and cur.getparent() is not None and cur.getparent().tag not in (C + "configuration", C + "system"):
        names.append(_qname_for(cur, scope))
        cur = cur.getparent()
    return "/" + "/".join(reversed(names)) if names else "."


class _Drawer:
    """``data.draw(strategy, label=...)`` inside a composite strategy (labels are documentation)."""

    def __init__(self, draw: st.DrawFn) -> None:
        self._draw = draw

    def draw(self, strategy: st.SearchStrategy[Any], label: str | None = None) -> Any:
        return self._draw(strategy)


def _pick(data: _Drawer, items: list[Any], label: str) -> Any:
    return items[data.draw(st.integers(0, len(items) - 1), label=label)]


def op_drop_element(root: etree._Element, data: _Drawer) -> str | None:
    els = _non_root(root)
    if not els:
        return None
    el = _pick(data, els, "element")
    el.getparent().remove(el)
    return f"drop <{el.tag}>"


def op_duplicate_element(root: etree._Element, data: _Drawer) -> str | None:
    els = _non_root(root)
    if not els:
        return None
    el = _pick(data, els, "element")
    el.addnext(copy.deepcopy(el))
    return f"duplicate <{el.tag}>"


def op_move_element(root: etree._Element, data: _Drawer) -> str | None:
    els = _non_root(root)
    if len(els) < 2:
        return None
    el = _pick(data, els, "element")
    targets = [t for t in _elements(root) if t is not el and el not in t.iterancestors()]
    if not targets:
        return None
    target = _pick(data, targets, "new parent")
    target.append(el)
    return f"move <{el.tag}> into <{target.tag}>"


def op_rename_element(root: etree._Element, data: _Drawer) -> str | None:
    els = _elements(root)
    el = _pick(data, els, "element")
    pool = sorted({e.tag for e in els}) + CDL_ELEMENTS
    new = data.draw(st.one_of(st.sampled_from(pool), st.sampled_from(["a", "v", "{urn:x-other}v", "{}x"])), label="tag")
    try:
        el.tag = new
    except ValueError:
        return None
    return f"rename <{el.tag}>"


def op_change_namespace(root: etree._Element, data: _Drawer) -> str | None:
    el = _pick(data, _elements(root), "element")
    uri = data.draw(st.sampled_from(NAMESPACES), label="namespace")
    local = etree.QName(el).localname
    el.tag = f"{{{uri}}}{local}" if uri else local
    return f"namespace of <{local}> -> {uri!r}"


def op_drop_attribute(root: etree._Element, data: _Drawer) -> str | None:
    els = [el for el in _elements(root) if el.attrib]
    if not els:
        return None
    el = _pick(data, els, "element")
    key = _pick(data, sorted(el.attrib.keys()), "attribute")
    del el.attrib[key]
    return f"drop @{key} of <{el.tag}>"


def op_copy_attribute(root: etree._Element, data: _Drawer) -> str | None:
    els = [el for el in _elements(root) if el.attrib]
    if not els:
        return None
    src = _pick(data, els, "from")
    key = _pick(data, sorted(src.attrib.keys()), "attribute")
    dst = _pick(data, _elements(root), "to")
    dst.set(key, src.get(key))
    return f"copy @{key}={src.get(key)!r} to <{dst.tag}>"


def op_rename_attribute(root: etree._Element, data: _Drawer) -> str | None:
    els = [el for el in _elements(root) if el.attrib]
    if not els:
        return None
    el = _pick(data, els, "element")
    key = _pick(data, sorted(el.attrib.keys()), "attribute")
    new = data.draw(st.sampled_from(CDL_ATTRIBUTES + PLAIN_ATTRIBUTES), label="new name")
    value = el.attrib.pop(key)
    el.set(new, value)
    return f"rename @{key} -> @{new} on <{el.tag}>"


def op_set_attribute(root: etree._Element, data: _Drawer) -> str | None:
    el = _pick(data, _elements(root), "element")
    key = data.draw(st.sampled_from(CDL_ATTRIBUTES + PLAIN_ATTRIBUTES), label="attribute")
    value = data.draw(values, label="value")
    try:
        el.set(key, value)
    except ValueError:
        return None
    return f"set @{key}={value!r} on <{el.tag}>"


def op_garbage_value(root: etree._Element, data: _Drawer) -> str | None:
    """Replace the value of an existing path / QName / location / expression attribute."""
    keys = {C + "extends", C + "ref", C + "refroot", C + "lazy", C + "type", C + "use", "location", "value-of", "ref", "refroot", "name"}
    els = [el for el in _elements(root) if keys & set(el.attrib.keys())]
    if not els:
        return None
    el = _pick(data, els, "element")
    key = _pick(data, sorted(keys & set(el.attrib.keys())), "attribute")
    value = data.draw(values, label="value")
    try:
        el.set(key, value)
    except ValueError:
        return None
    return f"garbage @{key}={value!r} on <{el.tag}>"


def op_set_text(root: etree._Element, data: _Drawer) -> str | None:
    el = _pick(data, _elements(root), "element")
    value = data.draw(values, label="text")
    try:
        el.text = value
    except ValueError:
        return None
    return f"text of <{el.tag}> = {value!r}"


def op_extends_cycle(root: etree._Element, data: _Drawer) -> str | None:
    """Two lists that extend each other, or a list whose descendant extends it."""
    lists = _top_level_lists(root)
    if not lists:
        return None
    a = _pick(data, lists, "list a")
    if data.draw(st.booleans(), label="via a descendant"):
        inner = [d for d in a.iter() if isinstance(d.tag, str)]
        d = _pick(data, inner, "descendant")
        d.set(C + "extends", _qname_for(a, d))
        return f"<{d.tag}> in <{a.tag}> extends it"
    b = _pick(data, lists, "list b")
    a.set(C + "extends", _qname_for(b, a))
    b.set(C + "extends", _qname_for(a, b))
    return f"<{a.tag}> and <{b.tag}> extend each other"


def op_ref_cycle(root: etree._Element, data: _Drawer) -> str | None:
    """Two properties of one list that refer to each other (or one to itself)."""
    lists = _top_level_lists(root)
    if not lists:
        return None
    lst = _pick(data, lists, "list")
    props = [d for d in lst.iter() if isinstance(d.tag, str) and d is not lst and not d.tag.startswith(C)]
    if not props:
        return None
    x = _pick(data, props, "x")
    y = _pick(data, props, "y")
    for el, other in ((x, y), (y, x)):
        for child in list(el):
            el.remove(child)
        el.text = None
        el.attrib.pop(C + "refroot", None)
        el.set(C + "ref", _path_to(other, el))
    return f"<{x.tag}> and <{y.tag}> refer to each other"


def op_ref_elsewhere(root: etree._Element, data: _Drawer) -> str | None:
    """A property refers to some other element, possibly through cdl:refroot."""
    lists = _top_level_lists(root)
    props = [d for lst in lists for d in lst.iter() if isinstance(d.tag, str) and d is not lst]
    if not props:
        return None
    el = _pick(data, props, "referrer")
    target = _pick(data, props + lists, "target")
    if data.draw(st.booleans(), label="clear value"):
        for child in list(el):
            el.remove(child)
        el.text = None
    top = next((a for a in [target, *target.iterancestors()] if a.getparent() is not None and a.getparent().tag in (C + "configuration", C + "system")), None)
    if top is not None and data.draw(st.booleans(), label="with refroot"):
        el.set(C + "refroot", _qname_for(top, el))
    el.set(C + "ref", _path_to(target, el))
    return f"<{el.tag}> refers to <{target.tag}>"


def op_extends_elsewhere(root: etree._Element, data: _Drawer) -> str | None:
    lists = _top_level_lists(root)
    if not lists:
        return None
    el = _pick(data, _non_root(root), "element")
    target = _pick(data, lists, "prototype")
    el.set(C + "extends", _qname_for(target, el))
    return f"<{el.tag}> extends <{target.tag}>"


def op_add_import(root: etree._Element, data: _Drawer) -> str | None:
    location = data.draw(st.one_of(st.sampled_from(NASTY_TEXT), xml_text), label="location")
    imp = etree.Element(C + "import")
    try:
        imp.set("location", location)
    except ValueError:
        return None
    root.insert(data.draw(st.integers(0, len(root)), label="position"), imp)
    return f"import {location!r}"


def op_add_expression(root: etree._Element, data: _Drawer) -> str | None:
    lists = _top_level_lists(root)
    props = [d for lst in lists for d in lst.iter() if isinstance(d.tag, str) and d is not lst and not d.tag.startswith(C)]
    if not props:
        return None
    holder = _pick(data, props, "holder")
    if data.draw(st.integers(0, 3), label="clear holder"):
        for child in list(holder):
            holder.remove(child)
        holder.text = None
        holder.attrib.pop(C + "ref", None)
        holder.attrib.pop(C + "refroot", None)
        holder.attrib.pop(C + "lazy", None)
    value_of = data.draw(expressions, label="value-of")
    expr = etree.SubElement(holder, C + "expression")
    if data.draw(st.integers(0, 5), label="well-formed variables"):
        names = data.draw(st.lists(st.sampled_from(["a", "b"]), unique=True, min_size=1, max_size=2), label="variables")
    else:
        names = data.draw(st.lists(st.sampled_from(["a", "b", "a", "", "1x"]), max_size=3), label="variables")
    try:
        expr.set("value-of", value_of)
        for name in names:
            var = etree.SubElement(expr, C + "variable", name=name)
            var.set("ref", _path_to(_pick(data, props, "variable target"), holder))
            if not data.draw(st.integers(0, 4), label="lazy variable"):
                var.set(C + "lazy", "true")
    except ValueError:
        return None
    return f"expression {value_of!r} with ${names} in <{holder.tag}>"


def op_make_lazy(root: etree._Element, data: _Drawer) -> str | None:
    lists = _top_level_lists(root)
    props = [d for lst in lists for d in lst.iter() if isinstance(d.tag, str) and d is not lst]
    if not props:
        return None
    el = _pick(data, props, "property")
    if data.draw(st.booleans(), label="clear value"):
        for child in list(el):
            el.remove(child)
        el.text = None
    el.set(C + "lazy", data.draw(st.sampled_from(["true", "false", "1", "0", " true ", "yes", ""]), label="lazy"))
    return f"<{el.tag}> lazy"


def op_add_namesake(root: etree._Element, data: _Drawer) -> str | None:
    """A sibling of the same name and the other kind beside an element below a
    top level list: a leaf beside an element with children, an element with a
    child beside a leaf (the ``[k]`` of the element's path changes when it
    goes before it; pairing by name and kind keeps the element's pair)."""
    lists = _top_level_lists(root)
    els = [d for lst in lists for d in lst.iterdescendants() if isinstance(d.tag, str) and not d.tag.startswith(C)]
    if not els:
        return None
    el = _pick(data, els, "element")
    namesake = etree.Element(el.tag)
    if len(el):
        namesake.text = "1"
    else:
        etree.SubElement(namesake, "v").text = "1"
    namesake.tail = el.tail
    where = data.draw(st.sampled_from(["before", "after"]), label="where")
    (el.addprevious if where == "before" else el.addnext)(namesake)
    return f"namesake of <{el.tag}> of the other kind {where} it"


XML_OPS: list[Callable[[etree._Element, _Drawer], str | None]] = [
    op_drop_element,
    op_duplicate_element,
    op_move_element,
    op_rename_element,
    op_change_namespace,
    op_drop_attribute,
    op_copy_attribute,
    op_rename_attribute,
    op_set_attribute,
    op_garbage_value,
    op_set_text,
    op_extends_cycle,
    op_ref_cycle,
    op_ref_elsewhere,
    op_extends_elsewhere,
    op_add_import,
    op_add_expression,
    op_add_expression,  # listed twice: expressions are where evaluation happens
    op_make_lazy,
    op_add_namesake,
]


# ---------------------------------------------------------------------------
# Byte-level mutations


def _byte_op(data: _Drawer, blob: bytes) -> tuple[bytes, str]:
    kind = data.draw(st.sampled_from(["inject", "overwrite", "delete", "duplicate", "truncate", "namespace", "prefix"]), label="byte op")
    n = len(blob)
    at = data.draw(st.integers(0, n), label="offset")
    if kind == "inject":
        junk = data.draw(
            st.one_of(
                st.binary(min_size=1, max_size=16),
                st.sampled_from([b"<", b">", b"&", b"&amp;", b"&e;", b"]]>", b"<!--", b"<?x?>", b"\xff\xfe", b"\xef\xbb\xbf", b"\x00", b'"', b"<![CDATA[", b"<!DOCTYPE x [<!ENTITY e SYSTEM 'file:///etc/passwd'>]>"]),
            ),
            label="junk",
        )
        return blob[:at] + junk + blob[at:], f"inject {junk!r} at {at}"
    if kind == "overwrite":
        junk = data.draw(st.binary(min_size=1, max_size=8), label="junk")
        return blob[:at] + junk + blob[at + len(junk) :], f"overwrite {junk!r} at {at}"
    if kind == "delete":
        size = data.draw(st.integers(1, 32), label="size")
        return blob[:at] + blob[at + size :], f"delete {size} bytes at {at}"
    if kind == "duplicate":
        size = data.draw(st.integers(1, 64), label="size")
        return blob[:at] + blob[at : at + size] + blob[at:], f"duplicate {size} bytes at {at}"
    if kind == "truncate":
        return blob[:at], f"truncate at {at}"
    if kind == "namespace":
        new = data.draw(st.sampled_from([u.encode() for u in NAMESPACES if u != CDL_NS] + [b"urn:x"]), label="namespace")
        return blob.replace(CDL_NS.encode(), new, 1), f"CDL namespace -> {new!r}"
    # prefix: rename the cdl prefix in one place only, leaving it undeclared elsewhere
    return blob.replace(b"cdl:", b"cdX:", 1), "one cdl: prefix -> cdX:"


# ---------------------------------------------------------------------------
# The strategies


def _round_paths(root: etree._Element) -> list[str]:
    """LIST/child/... paths of the main document, as a deployer would write them."""
    paths = []
    for lst in _top_level_lists(root):
        for el in lst.iter():
            if not isinstance(el.tag, str) or el.tag.startswith(C):
                continue
            names = [_qname_for(a, root) for a in reversed([el, *el.iterancestors()]) if a.getparent() is not None and a.tag not in (C + "configuration", C + "system")]
            paths.append("/".join(names))
    return paths


@st.composite
def mutants(
    draw: st.DrawFn,
    max_xml_ops: int = 4,
    byte_ops: bool = True,
    seed: Seed | None = None,
    xml_ops: list[Callable[[etree._Element, _Drawer], str | None]] | None = None,
) -> Mutant:
    """A corpus entry (or ``seed``) edited: XML operations (of ``xml_ops``,
    all by default), byte damage (``byte_ops``), and deploy-time rounds."""
    if seed is None:
        seed = draw(st.sampled_from(corpus()))
    data = _Drawer(draw)
    files = dict(seed.files)
    ops: list[str] = []
    names = sorted(files)
    # The main document most of the time, an import sometimes.
    target = seed.main if len(names) == 1 or data.draw(st.integers(0, 3), label="main?") else _pick(data, names, "file")
    parsed: etree._Element | None
    try:
        parsed = etree.fromstring(files[target], etree.XMLParser(remove_comments=False, resolve_entities=False, no_network=True))
    except etree.XMLSyntaxError:
        parsed = None
    if parsed is not None:
        for _ in range(data.draw(st.integers(0 if byte_ops else 1, max_xml_ops), label="xml ops")):
            op = data.draw(st.sampled_from(xml_ops or XML_OPS), label="op")
            done = op(parsed, data)
            if done:
                ops.append(f"{target}: {done}")
        files[target] = etree.tostring(parsed, xml_declaration=True, encoding="UTF-8")
    if byte_ops:
        # Byte damage mostly ends in XML_SYNTAX; one mutant in three gets some.
        for _ in range(data.draw(st.sampled_from([0, 0, 0, 0, 1, 2]), label="byte ops")):
            files[target], done = _byte_op(data, files[target])
            ops.append(f"{target}: {done}")
    # Deploy-time rounds: the case's own, or drawn from the main document's paths.
    rounds: list[dict[str, Any]] = []
    choice = data.draw(st.sampled_from(["none", "case", "random"]), label="rounds")
    if choice == "case":
        rounds = [dict(r) for r in seed.rounds]
    elif choice == "random":
        try:
            main_root = etree.fromstring(files[seed.main], etree.XMLParser(resolve_entities=False, no_network=True))
            paths = _round_paths(main_root)
        except (etree.XMLSyntaxError, ValueError):
            paths = []
        path_st = st.one_of(st.sampled_from(paths), values) if paths else values
        for _ in range(data.draw(st.integers(1, 2), label="round count")):
            rounds.append(
                {
                    "set": data.draw(st.dictionaries(path_st, deploy_values, max_size=3), label="set"),
                    "release": data.draw(st.lists(path_st, max_size=2), label="release"),
                }
            )
    return Mutant(seed.name, seed.main, files, rounds, ops)


# ---------------------------------------------------------------------------
# Running the command line with the network cut off

#: ``python -c CLI_GUARD ARGS`` runs ``cdl ARGS`` with every socket connection
#: refused: an attempt exits at once with status 97, which tests check for.
CLI_GUARD = """
import os, socket, sys
def _refuse(*args, **kwargs):
    sys.stderr.write("network connection attempted\\n")
    sys.stderr.flush()
    os._exit(97)
socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse
from cdl.cli import main
if os.environ.get("CDL_TEST_READY"):  # lets a test wait until the command resolves
    import cdl
    _resolve = cdl.Document.resolve
    def _resolving(*args, **kwargs):
        sys.stderr.write("cdl-test-resolving\\n")
        sys.stderr.flush()
        return _resolve(*args, **kwargs)
    cdl.Document.resolve = _resolving
sys.argv[0] = "cdl"
main()
"""
