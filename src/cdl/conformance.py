"""The conformance suite: finding its cases, running them, comparing results.

A case is a directory holding ``case.json``, the document to resolve
(``main.cdl`` unless ``case.json`` says otherwise), the documents it imports,
and, for a case that expects output, the expected resolved document. A case
either expects that output or expects resolution to fail with an error code
from :data:`cdl.errors.CODES`.

Cases run through this engine's library API, or through any external
processor given as a shell command template (``"java -jar other.jar {input}"``).
Resolved documents are compared with :func:`compare`, which looks at what a
document means rather than how it is spelt.

This module deliberately parses QNames and paths itself instead of using the
engine's parsers: a bug there must not hide in the yardstick as well.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from lxml import etree

from .errors import CODES, CdlError
from .loading.files import write_atomically
from .loading.parse import hardened_parser, parse_deep
from .model.limits import Limits

__all__ = [
    "CDL_NS",
    "DEFAULT_TIMEOUT",
    "Case",
    "CaseResult",
    "Difference",
    "CaseRound",
    "bundled_suite",
    "compare",
    "list_suite",
    "load_suite",
    "run_case",
    "run_suite",
    "section_key",
]

CDL_NS = "http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"
_XML_NS = "http://www.w3.org/XML/1998/namespace"

#: How long an external processor may run on one case, in seconds.
DEFAULT_TIMEOUT = 60.0

Outcome = Literal["passed", "failed", "skipped"]

# A resolved XML name: (namespace URI or "", local name).
_Name = tuple[str, str]


# ---------------------------------------------------------------------------
# Cases


@dataclass(frozen=True)
class CaseRound:
    """One deploy-time round of a case as ``case.json`` writes it: values to
    set, then lazy references to release (``as_dict`` gives what
    ``Document.resolve(rounds=...)`` takes; ``cdl.Round`` is the engine's own)."""

    set: tuple[tuple[str, str], ...] = ()
    release: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The round in the form ``Document.resolve(rounds=...)`` takes."""
        return {"set": dict(self.set), "release": list(self.release)}


@dataclass(frozen=True)
class Case:
    """One conformance case, as described by its ``case.json``.

    ``name`` is the case directory relative to the suite directory, with
    ``/`` separators. ``problem`` is set when ``case.json`` is malformed; such
    a case keeps whatever fields could be read and always fails with
    ``problem`` as its message.
    """

    name: str
    directory: Path
    section: str
    description: str = ""
    main: str = "main.cdl"
    expect: str | None = None
    error: str | None = None
    #: File holding the expected deployment plan (``cdl plan --format json``).
    plan: str | None = None
    rounds: tuple[CaseRound, ...] = ()
    system_only: bool = False
    annotations: bool = True
    statements: tuple[str, ...] = ()
    problem: str | None = None

    @property
    def main_path(self) -> Path:
        """The document to resolve."""
        return self.directory / self.main

    @property
    def plans(self) -> bool:
        """Whether the case needs the deployment plan: it expects one, or a
        PLAN_* error, which only computing the plan can raise."""
        return self.plan is not None or (self.error is not None and self.error.startswith("PLAN_"))

    @property
    def expects(self) -> str:
        """What the case expects, in a few words: ``output expected.cdl``,
        ``error REF_UNRESOLVED``, ``output expected.cdl, plan expected-plan.json``."""
        if self.problem is not None:
            return "malformed case.json"
        if self.error is not None:
            return f"error {self.error}"
        parts = [] if self.expect is None else [f"output {self.expect}"]
        if self.plan is not None:
            parts.append(f"plan {self.plan}")
        return ", ".join(parts)

    @property
    def group(self) -> str:
        """The top two levels of the section (``7.2.2.1`` -> ``7.2``)."""
        return ".".join(self.section.split(".")[:2])


@dataclass(frozen=True)
class CaseResult:
    """The outcome of running one case; ``message`` says why it did not pass."""

    case: Case
    outcome: Outcome
    message: str = ""
    seconds: float = 0.0


# A section is a chapter number or appendix letter, then dot-separated numbers.
_SECTION_RE = re.compile(r"(?:[0-9]+|[A-Z])(?:\.[0-9]+)*\Z")

_CASE_KEYS = {
    "section", "description", "main", "expect", "error", "plan", "rounds",
    "system_only", "annotations", "statements",
}


class _Malformed(ValueError):
    """case.json does not follow the case format (message says how)."""


def section_key(section: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key putting ``7.2`` before ``7.10`` and chapters before appendices."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in section.split("."))


def load_suite(suite_dir: str | os.PathLike[str]) -> list[Case]:
    """Every case under ``suite_dir`` (any directory holding a ``case.json``).

    Cases come sorted by section (numerically: ``7.2`` before ``7.10``), then
    name. A malformed ``case.json`` gives a case whose ``problem`` says what
    is wrong; it does not stop discovery.

    Raises:
        NotADirectoryError: ``suite_dir`` is not a directory, which would
            otherwise look like an empty, passing suite.
    """
    root = Path(suite_dir)
    if not root.is_dir():
        raise NotADirectoryError(f"conformance suite directory not found: {root}")
    cases = [_read_case(root, spec.parent) for spec in root.rglob("case.json") if spec.is_file()]
    return sorted(cases, key=lambda c: (section_key(c.section), c.name))


def bundled_suite() -> Path:
    """The directory of the conformance suite that comes with this package.

    The cases live in the package, ``cdl/conformance_cases`` (in a checkout,
    ``src/cdl/conformance_cases``, their one source). The result need not
    exist (a package imported from a zip has no directory to run the cases
    in): :func:`load_suite` says so.
    """
    return Path(str(resources.files("cdl") / "conformance_cases"))


def list_suite(cases: Iterable[Case]) -> str:
    """One line per case: its section, name, what it expects and its
    description, in columns under a header (what ``cdl conformance --list`` prints)."""
    rows = [("section", "case", "expects", "description")]
    rows += [(c.section, c.name, c.expects, c.problem or c.description) for c in cases]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths)) + "  " + row[3] + "\n" for row in rows
    )


def _read_case(root: Path, directory: Path) -> Case:
    name = directory.relative_to(root).as_posix()
    if name == ".":  # the suite directory is itself a case
        name = directory.resolve().name
    try:
        data = json.loads(
            (directory / "case.json").read_text(encoding="utf-8"),
            object_pairs_hook=_no_duplicate_keys,
        )
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return Case(name, directory, "?", problem=f"case.json cannot be read: {exc}")
    # Keep the section of a malformed case when it is readable, so the case
    # is counted where its author meant it to be.
    section = "?"
    if isinstance(data, dict) and isinstance(data.get("section"), str) and _SECTION_RE.match(data["section"]):
        section = data["section"]
    try:
        return _case_from_json(name, directory, data)
    except _Malformed as exc:
        return Case(name, directory, section, problem=f"case.json is malformed: {exc}")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json would silently keep the last of two equal keys, hiding a typo.
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice")
        out[key] = value
    return out


def _case_from_json(name: str, directory: Path, data: object) -> Case:
    if not isinstance(data, dict):
        raise _Malformed("the top level must be a JSON object")
    unknown = sorted(set(data) - _CASE_KEYS)
    if unknown:
        raise _Malformed(f"unknown key(s) {', '.join(map(repr, unknown))}")
    section = data.get("section")
    if not isinstance(section, str) or not _SECTION_RE.match(section):
        raise _Malformed(f"'section' must be a section number like \"7.2.2.1\" or \"B\", not {section!r}")
    description = data.get("description")
    if not isinstance(description, str) or not description.strip() or "\n" in description:
        raise _Malformed("'description' must be one non-empty line")
    main = data.get("main", "main.cdl")
    if not isinstance(main, str) or not main:
        raise _Malformed("'main' must be a file name")
    expect, error, plan = data.get("expect"), data.get("error"), data.get("plan")
    if (expect is None and plan is None) == (error is None):
        raise _Malformed("exactly one of 'expect' and 'error' must be given ('plan' may come with 'expect', or instead of it)")
    if expect is not None and (not isinstance(expect, str) or not expect):
        raise _Malformed("'expect' must be a file name")
    if plan is not None and (not isinstance(plan, str) or not plan):
        raise _Malformed("'plan' must be a file name")
    if error is not None and error not in CODES:
        raise _Malformed(f"'error' must be an error code of cdl.errors.CODES, not {error!r}")
    return Case(
        name=name,
        directory=directory,
        section=section,
        description=description,
        main=main,
        expect=expect,
        error=error,
        plan=plan,
        rounds=_rounds(data.get("rounds", [])),
        system_only=_flag(data, "system_only", False),
        annotations=_flag(data, "annotations", True),
        statements=_strings(data.get("statements", []), "'statements'"),
    )


def _flag(data: Mapping[str, Any], key: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise _Malformed(f"{key!r} must be true or false, not {value!r}")
    return value


def _strings(value: object, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _Malformed(f"{what} must be a list of non-empty strings")
    return tuple(value)


def _rounds(value: object) -> tuple[CaseRound, ...]:
    if not isinstance(value, list):
        raise _Malformed("'rounds' must be a list")
    rounds = []
    for i, item in enumerate(value, 1):
        where = f"round {i}"
        if not isinstance(item, dict) or set(item) - {"set", "release"}:
            raise _Malformed(f"{where} must be an object with only 'set' and 'release'")
        values = item.get("set", {})
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            raise _Malformed(f"{where}: 'set' must map LIST/path to a string value")
        rounds.append(CaseRound(tuple(values.items()), _strings(item.get("release", []), f"{where}: 'release'")))
    return tuple(rounds)


# ---------------------------------------------------------------------------
# Comparison


@dataclass(frozen=True)
class Difference:
    """The first place where two resolved documents differ.

    ``path`` locates it in XPath style with the expected document's prefixes
    (``/cdl:configuration/t:List/child[2]``, ``.../b/@cdl:type``);
    ``expected`` and ``actual`` describe what each document has there.
    """

    path: str
    expected: str
    actual: str

    def __str__(self) -> str:
        what = f"expected {self.expected}, found {self.actual}"
        one_line = f"at {self.path}: {what}"
        return one_line if len(one_line) <= 100 else f"at {self.path}\n  {what}"


_CDL_ROOT: _Name = (CDL_NS, "cdl")
_LAZY: _Name = (CDL_NS, "lazy")
_REF: _Name = (CDL_NS, "ref")
_VARIABLE: _Name = (CDL_NS, "variable")
_QNAME_ATTRIBUTES = {(CDL_NS, "type"), (CDL_NS, "refroot"), (CDL_NS, "extends")}
_ANNOTATIONS = {(CDL_NS, "type"), (CDL_NS, "use")}
_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}


def compare(
    expected: etree._Element,
    actual: etree._Element,
    *,
    annotations: bool = True,
    system_only: bool = False,
) -> Difference | None:
    """The first semantic difference between two ``cdl:cdl`` documents, or None.

    Only the ``cdl:configuration`` and ``cdl:system`` children are compared
    (just ``cdl:system`` when ``system_only``); an absent one equals an empty
    one. Names are compared by namespace URI and local name; whitespace-only
    text is ignored and other text compared exactly; comments are ignored;
    element order matters; attributes are a set. ``cdl:lazy`` is compared as
    an xsd:boolean, ``cdl:type``, ``cdl:refroot`` and ``cdl:extends`` as
    resolved QNames, ``cdl:ref`` by its steps with ``.`` dropped (so ``./b``
    equals ``b``); a ``cdl:variable``'s ``refroot`` and ``ref`` likewise. With
    ``annotations`` false, ``cdl:type`` and ``cdl:use`` are ignored.

    Raises:
        ValueError: ``expected`` is not a ``cdl:cdl`` element; comparing
            against it would find every document equal.
    """
    if _name(expected) != _CDL_ROOT:
        raise ValueError(f"the expected document's root is {_clark(_name(expected))}, not cdl:cdl")
    if _name(actual) != _CDL_ROOT:
        return Difference("/", "element " + _label_of(expected), "element " + _other_label(actual, expected))
    for part in ("system",) if system_only else ("configuration", "system"):
        tag = f"{{{CDL_NS}}}{part}"
        e, a = expected.find(tag), actual.find(tag)
        if e is None and a is None:
            continue
        # An absent part compares as an empty one, with its document's
        # declarations in scope so names below it are labelled as usual.
        e = etree.Element(tag, nsmap=expected.nsmap) if e is None else e
        a = etree.Element(tag, nsmap=actual.nsmap) if a is None else a
        diff = _compare_elements(e, a, "/" + _label_of(e), annotations)
        if diff is not None:
            return diff
    return None


class _Pair:
    """Two elements being compared, and how far through their content."""

    __slots__ = ("a", "a_items", "e", "e_items", "next")

    def __init__(self, e: etree._Element, a: etree._Element) -> None:
        self.e, self.a = e, a
        self.e_items, self.a_items = _content(e), _content(a)
        self.next = 0


def _compare_elements(e: etree._Element, a: etree._Element, path: str, annotations: bool) -> Difference | None:
    """Compare two elements of the same name: attributes, then content, depth first.

    An explicit stack, not recursion: resolved documents nest as deep as the
    engine allows (thousands of levels, more than Python's recursion limit).
    The stack holds the pairs being compared from ``e`` down, so a path is
    spelt only when a difference is found (spelling one counts siblings).
    """
    diff = _compare_attributes(e, a, path, annotations)
    if diff is not None:
        return diff
    stack = [_Pair(e, a)]

    def where(child: etree._Element | None = None, parent: etree._Element | None = None, label: str = "") -> str:
        """The path of the innermost pair, or of its ``child`` (of ``parent``, spelt ``label``)."""
        spelt = path
        for outer, pair in itertools.pairwise(stack):
            spelt = _child_path(spelt, outer.e, pair.e, _label_of(pair.e))
        return spelt if child is None or parent is None else _child_path(spelt, parent, child, label)

    while stack:
        top = stack[-1]
        e_items, a_items = top.e_items, top.a_items
        if top.next < min(len(e_items), len(a_items)):
            x, y = e_items[top.next], a_items[top.next]
            top.next += 1
            if isinstance(x, str) and isinstance(y, str):
                if x != y:
                    return Difference(where(), *_texts(x, y))
            elif isinstance(x, str) or isinstance(y, str):
                at = where() if isinstance(x, str) else where(x, top.e, _label_of(x))
                return Difference(at, _describe(x), _describe(y, top.e))
            elif _name(x) != _name(y):
                x_label, y_label = _label_of(x), _other_label(y, top.e)
                if x_label == y_label:  # same spelling, different namespaces
                    x_label, y_label = _clark(_name(x)), _clark(_name(y))
                return Difference(where(x, top.e, _label_of(x)), "element " + x_label, "element " + y_label)
            else:
                stack.append(_Pair(x, y))
                diff = _compare_attributes(x, y, "", annotations)
                if diff is not None:
                    return Difference(where() + diff.path, diff.expected, diff.actual)
            continue
        if len(e_items) > len(a_items):
            x = e_items[len(a_items)]
            return Difference(where() if isinstance(x, str) else where(x, top.e, _label_of(x)), _describe(x), "nothing")
        if len(a_items) > len(e_items):
            y = a_items[len(e_items)]
            at = where() if isinstance(y, str) else where(y, top.a, _other_label(y, top.e))
            return Difference(at, "nothing", _describe(y, top.e))
        stack.pop()
    return None


def _content(el: etree._Element) -> list[etree._Element | str]:
    """Child elements and text runs in order, without comments, PIs or blank text."""
    items: list[etree._Element | str] = []
    text = el.text or ""
    for child in el:
        if isinstance(child.tag, str):
            if text.strip():
                items.append(text)
            items.append(child)
            text = ""
        # Text on both sides of a comment is one run: the comment is not data.
        text += child.tail or ""
    if text.strip():
        items.append(text)
    return items


def _compare_attributes(e: etree._Element, a: etree._Element, path: str, annotations: bool) -> Difference | None:
    e_attrs, a_attrs = _attributes(e, annotations), _attributes(a, annotations)
    for name in sorted(e_attrs.keys() | a_attrs.keys()):
        if name not in a_attrs:
            raw = e_attrs[name][0]
            return Difference(f"{path}/@{_label(name, e.nsmap, attribute=True)}", repr(raw), "nothing")
        if name not in e_attrs:
            raw = a_attrs[name][0]
            label = _label(name, {**a.nsmap, **e.nsmap}, attribute=True)
            return Difference(f"{path}/@{label}", "nothing", repr(raw))
        (e_raw, e_value), (a_raw, a_value) = e_attrs[name], a_attrs[name]
        if e_value != a_value:
            shown = [repr(e_raw), repr(a_raw)]
            if e_raw == a_raw:  # same text meaning different things: show what
                shown = [f"{repr(e_raw)} meaning {_show(e_value)}", f"{repr(a_raw)} meaning {_show(a_value)}"]
            return Difference(f"{path}/@{_label(name, e.nsmap, attribute=True)}", *shown)
    return None


def _attributes(el: etree._Element, annotations: bool) -> dict[_Name, tuple[str, object]]:
    """Attributes by resolved name: (text as written, value to compare)."""
    out: dict[_Name, tuple[str, object]] = {}
    variable = _name(el) == _VARIABLE
    for key, raw in el.attrib.items():
        name = _name_of(key)
        if not annotations and name in _ANNOTATIONS:
            continue
        value: object = raw
        if name == _LAZY:
            value = _BOOLEANS.get(raw.strip(), raw)
        elif name in _QNAME_ATTRIBUTES or (variable and name == ("", "refroot")):
            value = _qname(raw, el.nsmap) or raw
        elif name == _REF or (variable and name == ("", "ref")):
            value = _path(raw, el.nsmap) or raw
        out[name] = (raw, value)
    return out


def _qname(text: str, nsmap: Mapping[str | None, str]) -> _Name | None:
    """Resolve an xsd:QName where it is written; None if malformed or undeclared.

    An unprefixed name takes the default namespace, as xsd:QName does.
    """
    text = text.strip()
    prefix, colon, local = text.rpartition(":")
    if not local or (colon and not prefix) or ":" in prefix or any(c.isspace() for c in text):
        return None
    if not colon:
        return (nsmap.get(None) or "", local)
    if prefix == "xml":
        return (_XML_NS, local)
    uri = nsmap.get(prefix)
    return None if uri is None else (uri, local)


def _path(text: str, nsmap: Mapping[str | None, str]) -> tuple[bool, tuple[_Name | str, ...]] | None:
    """A 7.3.1 path as (absolute?, steps), ``.`` steps dropped; None if malformed."""
    text = text.strip()
    absolute = text.startswith("/")
    steps: list[_Name | str] = []
    for step in (text[1:] if absolute else text).split("/"):
        if step == ".":
            continue
        if step == "..":
            steps.append(step)
            continue
        name = _qname(step, nsmap)
        if name is None:
            return None
        steps.append(name)
    return absolute, tuple(steps)


def _show(value: object) -> str:
    """A compared value in words, for when two equal spellings differ in meaning."""
    if isinstance(value, tuple) and isinstance(value[0], bool):  # a path
        absolute, steps = value
        text = "/".join(s if isinstance(s, str) else _clark(s) for s in steps)
        return ("/" if absolute else "") + (text or ".")
    if isinstance(value, tuple):  # a QName
        return _clark(value)
    return repr(value)


_WIDTH = 60  # longest text quoted whole in a Difference


def _texts(x: str, y: str, width: int = _WIDTH) -> tuple[str, str]:
    """Describe two differing texts, clipped around where they first differ."""
    if len(x) <= width and len(y) <= width:
        return f"text {x!r}", f"text {y!r}"
    start = len(os.path.commonprefix([x, y]))
    lo = max(0, start - width // 3)

    def clip(s: str) -> str:
        return f"text {'...' if lo else ''}{s[lo:lo + width]!r}{'...' if len(s) > lo + width else ''}"

    return clip(x), clip(y)


def _describe(item: etree._Element | str, context: etree._Element | None = None) -> str:
    """Describe a content item: of the expected document, or of the actual one
    when ``context`` (the expected element it is compared under) is given."""
    if isinstance(item, str):
        return f"text {item!r}" if len(item) <= _WIDTH else f"text {item[:_WIDTH]!r}..."
    return "element " + (_label_of(item) if context is None else _other_label(item, context))


def _child_path(path: str, parent: etree._Element, child: etree._Element, label: str) -> str:
    """``path/label``, with ``[k]`` when ``parent`` has several children so named."""
    name = _name(child)
    same = [c for c in parent if isinstance(c.tag, str) and _name(c) == name]
    return f"{path}/{label}" if len(same) == 1 else f"{path}/{label}[{same.index(child) + 1}]"


def _name(el: etree._Element) -> _Name:
    tag = el.tag  # elements only: callers skip comments and processing instructions
    return _name_of(tag) if isinstance(tag, str) else ("", "")


def _name_of(clark: str) -> _Name:
    uri, _, local = clark[1:].partition("}") if clark.startswith("{") else ("", "", clark)
    return (uri, local)


def _clark(name: _Name) -> str:
    return f"{{{name[0]}}}{name[1]}" if name[0] else f"{name[1]} (no namespace)"


def _label(name: _Name, nsmap: Mapping[str | None, str], prefer: str | None = None, *, attribute: bool = False) -> str:
    """Spell ``name`` with the prefixes of ``nsmap`` (``prefer`` first), else in Clark notation."""
    uri, local = name
    if not uri:
        return local
    if prefer is not None and nsmap.get(prefer) == uri:
        return f"{prefer}:{local}"
    if not attribute and nsmap.get(None) == uri:  # attributes never take the default namespace
        return local
    prefixes = sorted(p for p, u in nsmap.items() if p is not None and u == uri)
    if prefixes:
        return f"{prefixes[0]}:{local}"
    return f"xml:{local}" if uri == _XML_NS else _clark(name)


def _label_of(el: etree._Element) -> str:
    """An element of the expected document, spelt as it is written there."""
    return _label(_name(el), el.nsmap, el.prefix)


def _other_label(el: etree._Element, context: etree._Element) -> str:
    """An element of the actual document, spelt with the expected document's
    prefixes in scope at ``context`` where they cover its namespace."""
    return _label(_name(el), {**el.nsmap, **context.nsmap}, None)


# ---------------------------------------------------------------------------
# Running cases

def _parse_xml(data: bytes, url: str) -> etree._Element:
    """Parse a resolved or expected document, as deep as the engine nests.

    libxml2 refuses nesting deeper than 256 levels; such documents take the
    engine's own deep path (expat). Both refuse DTDs and entities and never
    touch the network.

    Raises:
        ValueError: the document is not well-formed XML (or has a DTD).
    """
    try:
        return etree.fromstring(data, hardened_parser(), base_url=url)
    except etree.XMLSyntaxError as exc:
        if not any(e.type_name == "ERR_RESOURCE_LIMIT" and "depth" in e.message for e in exc.error_log):
            raise ValueError(str(exc)) from None
    try:
        return parse_deep(data, url, Limits())
    except CdlError as exc:
        raise ValueError(exc.render()) from None


def run_case(
    case: Case,
    processor: str | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    plan_processor: str | None = None,
) -> CaseResult:
    """Run one case and judge it; never raises because of what the processor does.

    Without ``processor`` the case runs through this engine's library API
    (``cdl.load(...).resolve(rounds=...).tree(system_only=...)``); an error
    case passes when a :class:`~cdl.errors.CdlError` with the expected code
    is raised. ``processor`` is a shell command template in which ``{input}``
    stands for the absolute path of the main document; it runs in the case
    directory and must print the resolved document on stdout. ``{args}``, if
    present, stands for a one-round case's deploy-time values as ``--set P=V``
    and ``--release P`` options (the options of ``cdl resolve``); cases with
    rounds the command cannot take are skipped. For an error case only a
    non-zero exit status is checked, since error codes are this engine's own.

    A case with a ``plan`` (or a PLAN_* error) also needs the deployment
    plan: through the library, ``resolution.plan().to_data()``; with an
    external processor, ``plan_processor``, a command template like
    ``processor`` that prints the plan as JSON (``cdl plan {input} {args}
    --format json``). Without ``plan_processor`` those checks are skipped.

    Raises:
        ValueError: ``processor`` or ``plan_processor`` has no ``{input}`` placeholder.
    """
    for template in (processor, plan_processor):
        if template is not None:
            _check_template(template)
    start = time.perf_counter()
    outcome: Outcome
    if case.problem is not None:
        outcome, message = "failed", case.problem
    elif processor is None:
        outcome, message = _run_library(case)
    else:
        outcome, message = _run_external_with_plan(case, processor, plan_processor, timeout)
    return CaseResult(case, outcome, message, time.perf_counter() - start)


def _check_template(processor: str) -> None:
    if "{input}" not in processor:
        raise ValueError(f"the processor command must contain {{input}}: {processor!r}")


def _run_library(case: Case) -> tuple[Outcome, str]:
    try:
        import cdl  # here, not at the top: the engine may be unfinished, the harness is not

        document = cdl.load(str(case.main_path))
        resolution = document.resolve(rounds=[r.as_dict() for r in case.rounds])
        # The plan first: the output takes the working trees apart.
        planned = json.loads(resolution.plan().to_json()) if case.plans else None
        output = None
        if case.expect is not None or case.error is not None:
            output = etree.tostring(resolution.tree(system_only=case.system_only))
    except CdlError as exc:
        if case.error is None:
            return "failed", f"unexpected error: {exc.render()}"
        if exc.code != case.error:
            return "failed", f"expected error {case.error}, got {exc.code}: {exc.render()}"
        return "passed", ""
    except Exception as exc:
        return "failed", f"crashed with {type(exc).__name__}: {exc}"
    if case.error is not None:
        return "failed", f"expected error {case.error}, but resolution succeeded"
    actual = None
    if output is not None:
        try:
            # Judge the serialized output, as a user receives it: it must
            # round-trip (NOTES.md, Output), which an in-memory tree need not.
            actual = _parse_xml(output, "<output>")
        except ValueError as exc:
            return "failed", f"the resolved output is not XML: {exc}"
    return _judge_all(case, actual, planned)


def _judge_all(case: Case, actual: etree._Element | None, planned: object) -> tuple[Outcome, str]:
    """Judge the resolved output (if the case expects one), then the plan (if it expects one)."""
    if case.expect is not None:
        assert actual is not None
        outcome, message = _judge_output(case, actual)
        if outcome != "passed":
            return outcome, message
    if case.plan is not None:
        return _judge_plan(case, planned)
    return "passed", ""


def _judge_plan(case: Case, planned: object) -> tuple[Outcome, str]:
    """Compare a plan (parsed JSON) with the case's expected plan, exactly:
    waves and lists are ordered (document order, README.md)."""
    assert case.plan is not None
    try:
        expected = json.loads((case.directory / case.plan).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return "failed", f"bad expected plan {case.plan}: {exc}"
    if planned == expected:
        return "passed", ""
    return "failed", f"the plan differs from {case.plan}: expected {_short(expected)}, found {_short(planned)}"


def _short(data: object, width: int = 300) -> str:
    text = json.dumps(data, separators=(",", ":"))
    return text if len(text) <= width else text[:width] + "..."


def _run_external_with_plan(
    case: Case, processor: str, plan_processor: str | None, timeout: float
) -> tuple[Outcome, str]:
    """An external run: the resolved output through ``processor``, the plan
    through ``plan_processor`` (skipped without one)."""
    plan_error = case.plans and case.error is not None
    if case.expect is not None or (case.error is not None and not plan_error):
        outcome, message = _run_external(case, processor, timeout)
        if outcome != "passed" or not case.plans:
            return outcome, message
    if plan_processor is None:
        if case.expect is not None:
            return "passed", ""  # the plan part needs a plan processor
        return "skipped", "a plan case needs a plan processor (--plan-processor)"
    args = deploy_arguments(case) if "{args}" in plan_processor else ("" if not case.rounds else None)
    if args is None:
        return "skipped", "deploy-time rounds the plan processor cannot take"
    ran = _run_template(case, plan_processor, args, timeout, "plan processor", case.error if plan_error else None)
    if isinstance(ran, tuple):
        return ran
    stdout = ran
    try:
        planned = json.loads(stdout)
    except ValueError as exc:
        return "failed", f"plan processor output is not JSON: {exc}"
    return _judge_plan(case, planned)


# What a POSIX shell exits with when the command is not executable / not found.
_SHELL_CANNOT_RUN = {126, 127}


def deploy_arguments(case: Case) -> str | None:
    """The case's deploy-time values as ``--set P=V`` / ``--release P`` options
    (shell-quoted), or None when they need more than one round."""
    if len(case.rounds) > 1:
        return None
    parts: list[str] = []
    for step in case.rounds:
        parts += [f"--set {shlex.quote(f'{path}={value}')}" for path, value in step.set]
        parts += [f"--release {shlex.quote(path)}" for path in step.release]
    return " ".join(parts)


def _run_template(
    case: Case, template: str, args: str, timeout: float, who: str, error: str | None
) -> bytes | tuple[Outcome, str]:
    """Run a command template on ``case``: its stdout when it succeeded and
    output is to be judged, else the verdict (an expected ``error`` passes on a
    non-zero status)."""
    # str.replace, not str.format: commands often hold braces of their own.
    command = template.replace("{input}", shlex.quote(str(case.main_path.resolve()))).replace("{args}", args)
    try:
        status, stdout, stderr = _run_command(command, case.directory.resolve(), timeout)
    except subprocess.TimeoutExpired:
        return "failed", f"{who} timed out after {timeout:g} s"
    except OSError as exc:
        return "failed", f"{who} could not be run: {exc}"
    if status in _SHELL_CANNOT_RUN:
        # Checked first: otherwise a mistyped command would pass every error case.
        return "failed", f"{who} could not be run (shell status {status}){_tail(stderr)}"
    if error is not None:
        if status == 0:
            return "failed", f"expected an error ({error}), but the {who} exited with status 0"
        return "passed", ""
    if status != 0:
        return "failed", f"{who} exited with status {status}{_tail(stderr)}"
    return stdout


def _run_external(case: Case, processor: str, timeout: float) -> tuple[Outcome, str]:
    args = deploy_arguments(case) if "{args}" in processor else ("" if not case.rounds else None)
    if args is None:
        why = "several deploy-time rounds" if "{args}" in processor else "deploy-time rounds, and the command has no {args}"
        return "skipped", f"{why}: cannot be given to an external processor"
    ran = _run_template(case, processor, args, timeout, "processor", case.error)
    if isinstance(ran, tuple):
        return ran
    stdout = ran
    try:
        actual = _parse_xml(stdout, "<processor output>")
    except ValueError as exc:
        return "failed", f"processor output is not XML: {exc}"
    return _judge_output(case, actual)


def _run_command(command: str, cwd: Path, timeout: float) -> tuple[int, bytes, str]:
    """Run ``command`` in a shell; kill its whole process group on timeout.

    subprocess.run(timeout=...) kills only the shell: a processor it started
    would keep the output pipes open and the wait would never end.
    """
    with subprocess.Popen(
        command,
        shell=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            if hasattr(os, "killpg"):
                os.killpg(proc.pid, signal.SIGKILL)
            else:  # pragma: no cover - Windows has no process groups to kill
                proc.kill()
            proc.communicate()
            raise
    return proc.returncode, stdout, stderr.decode("utf-8", "replace")


def _tail(stderr: str, lines: int = 5) -> str:
    last = stderr.strip().splitlines()[-lines:]
    return (":\n" + "\n".join(last)) if last else ""


def _judge_output(case: Case, actual: etree._Element) -> tuple[Outcome, str]:
    assert case.expect is not None  # error cases are judged before
    expected_path = case.directory / case.expect
    try:
        expected = _parse_xml(expected_path.read_bytes(), str(expected_path))
        diff = compare(expected, actual, annotations=case.annotations, system_only=case.system_only)
    except (OSError, etree.XMLSyntaxError, ValueError) as exc:
        return "failed", f"bad expected output {case.expect}: {exc}"
    return ("passed", "") if diff is None else ("failed", str(diff))


# ---------------------------------------------------------------------------
# Running the suite


def run_suite(
    suite_dir: str | os.PathLike[str],
    processor: str | None = None,
    junit: str | os.PathLike[str] | None = None,
    echo: Callable[[str], object] = print,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    plan_processor: str | None = None,
) -> int:
    """Run every case under ``suite_dir`` and report; return 1 if any failed, else 0.

    Prints a table of passed / failed / skipped counts per section (its top
    two levels), then each failure with its case directory and the reason,
    then ``N passed, M failed`` (with ``, K skipped`` when some were).
    ``junit`` names a JUnit XML report to write, one testsuite per section.
    ``processor``, ``plan_processor`` and ``timeout`` are as for :func:`run_case`.

    Raises:
        NotADirectoryError: ``suite_dir`` is not a directory.
        ValueError: ``processor`` has no ``{input}`` placeholder.
    """
    for template in (processor, plan_processor):
        if template is not None:
            _check_template(template)  # before any case runs, not once per case
    start = time.perf_counter()
    cases = load_suite(suite_dir)
    results = [run_case(case, processor, timeout=timeout, plan_processor=plan_processor) for case in cases]
    elapsed = time.perf_counter() - start

    if not cases:
        echo(f"no cases found under {suite_dir}")
    by_group = _by_group(results)
    width = max([len("section"), *map(len, by_group)])
    echo(f"{'section':<{width}}  passed  failed  skipped")
    for group, group_results in by_group.items():
        n = _counts(group_results)
        echo(f"{group:<{width}}  {n['passed']:>6}  {n['failed']:>6}  {n['skipped']:>7}")
    failures = [r for r in results if r.outcome == "failed"]
    for r in failures:
        echo("")
        echo(f"FAILED {r.case.directory} ({r.case.section}) {r.case.description}".rstrip())
        echo("\n".join("  " + line for line in r.message.splitlines()))
    n = _counts(results)
    echo("")
    echo(f"{n['passed']} passed, {n['failed']} failed" + (f", {n['skipped']} skipped" if n["skipped"] else ""))
    if junit is not None:
        _write_junit(Path(junit), by_group, elapsed)
    return 1 if failures else 0


def _by_group(results: Iterable[CaseResult]) -> dict[str, list[CaseResult]]:
    groups: dict[str, list[CaseResult]] = {}
    for r in sorted(results, key=lambda r: section_key(r.case.group)):
        groups.setdefault(r.case.group, []).append(r)
    return groups


def _counts(results: Sequence[CaseResult]) -> dict[Outcome, int]:
    counts: dict[Outcome, int] = {"passed": 0, "failed": 0, "skipped": 0}
    for r in results:
        counts[r.outcome] += 1
    return counts


# Characters XML 1.0 cannot carry, which a processor's stderr may contain.
_NOT_XML_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML_CHAR.sub("\ufffd", text)


def _write_junit(path: Path, by_group: Mapping[str, Sequence[CaseResult]], seconds: float) -> None:
    """Write the JUnit report atomically, so a reader never sees half of one.

    Raises LoadError (IO_ERROR) when it cannot be written."""
    all_results = [r for rs in by_group.values() for r in rs]
    total = _counts(all_results)
    suites = etree.Element(
        "testsuites", name="cdl conformance", tests=str(len(all_results)),
        failures=str(total["failed"]), skipped=str(total["skipped"]), errors="0", time=f"{seconds:.3f}",
    )
    for group, results in by_group.items():
        n = _counts(results)
        suite = etree.SubElement(
            suites, "testsuite", name=group, tests=str(len(results)), failures=str(n["failed"]),
            skipped=str(n["skipped"]), errors="0", time=f"{sum(r.seconds for r in results):.3f}",
        )
        for r in results:
            case = etree.SubElement(
                suite, "testcase", classname=r.case.section, name=r.case.name, time=f"{r.seconds:.3f}",
            )
            message = _xml_text(r.message)
            if r.outcome == "failed":
                etree.SubElement(case, "failure", message=message.splitlines()[0] if message else "").text = message
            elif r.outcome == "skipped":
                etree.SubElement(case, "skipped", message=message)
    write_atomically(path, etree.tostring(suites, xml_declaration=True, encoding="UTF-8", pretty_print=True))
