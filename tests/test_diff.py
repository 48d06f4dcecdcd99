"""Document.diff and ``cdl diff`` (issue 32, point 1; docs/semantics.md, "Diff").

Exactness: on the samples, the conformance cases and random edits of them
(tests/strategies.py), the components the diff lists as added, removed and
changed are exactly those whose own resolved configuration differs, as an
oracle written here finds them from each version's resolved system; and the
diff is the same with the specialisations off. Then: the causes, the JSON
contract, the text form, exit statuses, ``--select``, same-named siblings,
pending values and bad input.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

import cdl
from cdl.conformance import load_suite
from conftest import load_text, system
from strategies import CASES, Mutant, Seed, _Drawer, corpus, op_extends_elsewhere, op_make_lazy, op_ref_elsewhere

ROOT = Path(__file__).resolve().parent.parent
#: The switch that turns the specialisations off (docs/performance.md).
VARIABLE = "CDL_NO_FAST_PATHS"
WEBFARM = ROOT / "samples" / "webfarm"
CDL_NS = "http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"
EXPRESSION = f"{{{CDL_NS}}}expression"
EXAMPLES = int(os.environ.get("CDL_DIFF_EXAMPLES", "100"))


@contextmanager
def fast_paths(enabled: bool) -> Iterator[None]:
    before = os.environ.get(VARIABLE)
    if enabled:
        os.environ.pop(VARIABLE, None)
    else:
        os.environ[VARIABLE] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(VARIABLE, None)
        else:
            os.environ[VARIABLE] = before


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cdl", *args], capture_output=True, text=True, timeout=120, cwd=cwd or ROOT, check=False
    )


def webfarm(tmp_path: Path, edits: dict[str, list[tuple[str, str]]]) -> tuple[Path, Path]:
    """The web farm sample as ``old/`` and, edited, as ``new/``."""
    for version in ("old", "new"):
        shutil.copytree(WEBFARM, tmp_path / version)
    for name, replacements in edits.items():
        target = tmp_path / "new" / name
        text = target.read_text(encoding="utf-8")
        for before, after in replacements:
            assert before in text, before
            text = text.replace(before, after)
        target.write_text(text, encoding="utf-8")
    return tmp_path / "old" / "system.cdl", tmp_path / "new" / "system.cdl"


PORT = ('<port cdl:type="xsd:positiveInteger">5432</port>', '<port cdl:type="xsd:positiveInteger">6432</port>')
RELEASE = ("<release>2.4.1</release>", "<release>2.5.0</release>")


# ---------------------------------------------------------------------------
# The oracle: each component's own configuration, from the resolved system


def _components(resolution: cdl.Resolution) -> tuple[dict[str, tuple[Any, ...]], dict[str, str]]:
    """Every component of the resolved system by its pairing name (each step
    ``name[k]``, the k-th sibling of that name and kind: how docs/semantics.md
    pairs the versions), with its own configuration: its attributes, its text,
    and its properties (``name[k]``, k among same-named properties, to their
    XML); and each component's path by the one path rule (k among all
    same-named siblings, as the diff writes it) to its pairing name."""
    root = resolution.tree(system_only=True)
    system_el = root.find(f"{{{CDL_NS}}}system")
    found: dict[str, tuple[Any, ...]] = {}
    paths: dict[str, str] = {}
    if system_el is None:
        return found, paths

    def is_component(el: etree._Element, top: bool) -> bool:
        return top or (len(el) > 0 and el.tag != EXPRESSION and el.find(EXPRESSION) is None)

    def steps(children: list[etree._Element], kinds: list[bool] | None = None) -> list[str]:
        # Every step with its k (the diff leaves out [1] where a name is alone).
        names = [etree.QName(c).localname + "{" + (etree.QName(c).namespace or "") + "}" for c in children]
        keys = names if kinds is None else [f"{name}{kind}" for name, kind in zip(names, kinds)]
        return [f"{name}[{keys[: i + 1].count(keys[i])}]" for i, name in enumerate(names)]

    stack: list[tuple[str, str, etree._Element, bool]] = [("", "", el, True) for el in system_el]
    while stack:
        prefix, rule_prefix, el, top = stack.pop()
        parent = el.getparent()
        assert parent is not None
        siblings = list(parent)
        at = siblings.index(el)
        kinds = [is_component(c, top) for c in siblings]
        path = f"{prefix}/{steps(siblings, kinds)[at]}"
        paths[f"{rule_prefix}/{steps(siblings)[at]}"] = path
        children = list(el)
        props = [c for c in children if not is_component(c, False)]
        text = "".join([el.text or "", *(c.tail or "" for c in el)])
        own = (
            sorted(el.attrib.items()),
            (text if text.strip() else "") if len(el) else (el.text or ""),
            sorted((step, _canonical(p)) for step, p in zip(steps(props), props)),
        )
        found[path] = own
        stack.extend((path, f"{rule_prefix}/{steps(siblings)[at]}", c, False) for c in el if is_component(c, False))
    return found, paths


def _canonical(el: etree._Element, tail: bool = False) -> tuple[Any, ...]:
    """An element's name, attributes, text and children, namespaces by URI."""
    return (el.tag, sorted(el.attrib.items()), el.text, el.tail if tail else None, [_canonical(c, True) for c in el])


def oracle(old: cdl.Resolution, new: cdl.Resolution) -> set[tuple[str, str]]:
    """Each component added, removed or changed, by its path in the version
    the diff names it in (the new one, the old one for one removed)."""
    (before, old_paths), (after, new_paths) = _components(old), _components(new)
    written = {pair: rule for rule, pair in old_paths.items()} | {pair: rule for rule, pair in new_paths.items()}
    changes = {(written[p], "added") for p in after.keys() - before.keys()}
    changes |= {(written[p], "removed") for p in before.keys() - after.keys()}
    changes |= {(written[p], "changed") for p in before.keys() & after.keys() if before[p] != after[p]}
    return changes


def _normal(diff: cdl.Diff, docs: tuple[cdl.Document, cdl.Document]) -> set[tuple[str, str]]:
    """The diff's components with their names as the oracle writes them."""
    names: dict[str, str] = {}
    for doc in docs:
        for c in doc.resolve().tree(system_only=True).iter():
            if isinstance(c.tag, str):
                for prefix, uri in c.nsmap.items():
                    names[prefix or ""] = uri or ""
    out = set()
    for comp in diff.components:
        steps = []
        for step in comp.path.strip("/").split("/"):
            name, bracket, k = step.partition("[")
            prefix, colon, local = name.rpartition(":")
            uri = names.get(prefix, "") if colon else names.get("", "")
            steps.append(f"{local}{{{uri}}}" + (f"[{k}" if bracket else "[1]"))
        out.add(("/" + "/".join(steps), comp.change))
    return out


def check_exact(old_main: Path, new_main: Path, rounds: list[dict[str, Any]]) -> cdl.Diff | None:
    """The diff of two versions is the oracle's, and the same both ways."""
    try:
        old_doc, new_doc = cdl.load(str(old_main)), cdl.load(str(new_main))
    except cdl.CdlError:
        return None  # a version that does not load has no diff (the command line says why)
    try:
        old, new = old_doc.resolve(rounds=rounds), new_doc.resolve(rounds=rounds)
    except cdl.CdlError as error:
        with pytest.raises(cdl.CdlError) as raised:
            old_doc.diff(new_doc, rounds=rounds)
        assert raised.value.code == error.code
        return None
    diff = old_doc.diff(new_doc, rounds=rounds)
    assert _normal(diff, (old_doc, new_doc)) == oracle(old, new)
    assert bool(diff) == bool(oracle(old, new))
    numbers = [c.number for c in diff.causes]
    assert numbers == list(range(1, len(numbers) + 1))
    for comp in diff.components:
        assert comp.causes, comp.path  # something written differently made each difference
        for value in comp.values:
            assert value.causes and set(value.causes) <= set(comp.causes)
        for n in comp.causes:
            assert comp.path in diff.causes[n - 1].components
    with fast_paths(False):
        slow = cdl.load(str(old_main)).diff(cdl.load(str(new_main)), rounds=rounds)
    assert slow.to_data() == diff.to_data()
    return diff


def test_a_change_that_reaches_every_component_is_found_in_each(tmp_path: Path) -> None:
    """One template value every component inherits, below each in a child
    component: the serialization test fails for every child (past the point
    where the walk stops asking it), and every component is still found,
    as with the fast paths off."""
    ns = 'xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"'

    def version(interval: int) -> str:
        comps = "".join(f'<c{i} cdl:extends="T"><name>c{i}</name></c{i}>' for i in range(150))
        template = f"<T><health><interval>{interval}</interval><path>/ok</path></health><port>80</port></T>"
        return f"<cdl:cdl {ns}><cdl:configuration>{template}</cdl:configuration><cdl:system><all>{comps}</all></cdl:system></cdl:cdl>"

    (tmp_path / "old.cdl").write_text(version(10))
    (tmp_path / "new.cdl").write_text(version(15))
    diff = check_exact(tmp_path / "old.cdl", tmp_path / "new.cdl", [])
    assert diff is not None
    assert sorted(c.path for c in diff.components) == sorted(f"/all/c{i}/health" for i in range(150))
    assert len(diff.causes) == 1 and len(diff.causes[0].components) == 150


# ---------------------------------------------------------------------------
# Examples


def test_two_changes_each_with_its_cause(tmp_path: Path) -> None:
    old, new = webfarm(tmp_path, {"templates.cdl": [PORT], "system.cdl": [RELEASE]})
    diff = check_exact(old, new, [])
    assert diff is not None
    assert [(c.path, c.change, c.causes) for c in diff.components] == [
        ("/db", "changed", (2,)),
        ("/apps", "changed", (1, 2)),
        ("/apps/schema", "changed", (1,)),
        ("/apps/app1", "changed", (1,)),
        ("/apps/app2", "changed", (1,)),
    ]
    release, port = diff.causes
    assert (release.old, release.new) == (
        cdl.Written(str(old), 17, "/apps/release", "<release>2.4.1</release>"),
        cdl.Written(str(new), 17, "/apps/release", "<release>2.5.0</release>"),
    )
    assert release.components == ("/apps", "/apps/schema", "/apps/app1", "/apps/app2")
    assert port.new == cdl.Written(str(new.parent / "templates.cdl"), 28, "/Database/port", PORT[1])
    assert port.components == ("/db", "/apps")
    apps = diff.components[1]
    assert [(v.path, v.old, v.new, v.causes) for v in apps.values] == [
        ("/apps/dbPort", {"@cdl:use": "required", "#text": "5432"}, {"@cdl:use": "required", "#text": "6432"}, (2,)),
        ("/apps/release", {"@cdl:use": "required", "#text": "2.4.1"}, {"@cdl:use": "required", "#text": "2.5.0"}, (1,)),
    ]


def test_one_template_value_shows_once_with_every_component_it_reaches(tmp_path: Path) -> None:
    old, new = webfarm(tmp_path, {"templates.cdl": [("<threads cdl:type=\"xsd:positiveInteger\">32</threads>", "<threads cdl:type=\"xsd:positiveInteger\">64</threads>")]})
    diff = check_exact(old, new, [])
    assert diff is not None
    (cause,) = diff.causes
    assert cause.change == "changed" and cause.old is not None and cause.old.path == "/AppServer/threads"
    assert cause.components == ("/apps/app1", "/apps/app2")
    assert [v.path for c in diff.components for v in c.values] == ["/apps/app1/threads", "/apps/app2/threads"]


def test_identical_versions_have_no_difference(tmp_path: Path) -> None:
    old, new = webfarm(tmp_path, {"system.cdl": [("<!-- The orders", "<!-- A comment changed. The orders")]})
    diff = cdl.load(str(old)).diff(cdl.load(str(new)))
    assert not diff and diff.components == () and diff.causes == ()
    assert diff.to_text() == ""
    assert diff.to_data() == {"old": str(old), "new": str(new), "causes": [], "components": []}


def test_a_template_change_that_reaches_no_component_is_no_difference(tmp_path: Path) -> None:
    xml = system("<a><x>1</x></a>", configuration="<T><y>1</y></T>")
    assert not load_text(xml).diff(load_text(xml.replace("<y>1</y>", "<y>2</y>")))


def test_added_and_removed_components_and_properties() -> None:
    old = load_text(system("<a><x>1</x><gone>1</gone></a><b><c><d>1</d></c></b>"))
    new = load_text(system("<a><x>1</x><y>2</y></a><e><f>1</f></e>"))
    diff = old.diff(new)
    assert [(c.path, c.change) for c in diff.components] == [
        ("/a", "changed"),
        ("/e", "added"),
        ("/b", "removed"),
        ("/b/c", "removed"),
    ]
    assert [(v.path, v.change, v.old, v.new) for v in diff.components[0].values] == [
        ("/a/y", "added", None, "2"),
        ("/a/gone", "removed", "1", None),
    ]
    assert [(v.path, v.change) for v in diff.components[1].values] == [("/e/f", "added")]
    kinds = sorted((c.change, c.old.path if c.old else None, c.new.path if c.new else None) for c in diff.causes)
    assert kinds == [("added", None, "/a/y"), ("added", None, "/e"), ("removed", "/a/gone", None), ("removed", "/b", None)]


def test_a_change_inside_a_child_component_changes_only_that_component() -> None:
    old = load_text(system("<a><p>1</p><b><q>1</q></b></a>"))
    new = load_text(system("<a><p>1</p><b><q>2</q></b></a>"))
    assert [(c.path, c.change) for c in old.diff(new).components] == [("/a/b", "changed")]


def test_a_property_that_becomes_a_component() -> None:
    old = load_text(system("<a><p>1</p></a>"))
    new = load_text(system("<a><p><q>1</q></p></a>"))
    diff = old.diff(new)
    assert [(c.path, c.change) for c in diff.components] == [("/a", "changed"), ("/a/p", "added")]
    assert [(v.path, v.change) for v in diff.components[0].values] == [("/a/p", "removed")]


def test_a_components_own_attributes() -> None:
    old = load_text(system("<a kind='x'><p>1</p></a>"))
    new = load_text(system("<a kind='y'><p>1</p></a>"))
    (comp,) = old.diff(new).components
    assert [(v.path, v.old, v.new) for v in comp.values] == [("/a", {"@kind": "x"}, {"@kind": "y"})]


def test_an_extends_changed_is_the_cause() -> None:
    templates = "<A><p>1</p><q>1</q></A><B><p>2</p><q>1</q></B>"
    old = load_text(system("<s cdl:extends='A'/><t cdl:extends='A'/>", configuration=templates))
    new = load_text(system("<s cdl:extends='B'/><t cdl:extends='A'/>", configuration=templates.replace("<q>1</q></A>", "<q>3</q></A>")))
    diff = old.diff(new)
    # Causes are numbered in document order: the template first.
    assert [(c.path, [v.path for v in c.values], c.causes) for c in diff.components] == [
        ("/s", ["/s/p"], (2,)),
        ("/t", ["/t/q"], (1,)),
    ]
    assert diff.causes[0].new is not None and diff.causes[0].new.xml == "<q>3</q>"
    assert diff.causes[1].new is not None and diff.causes[1].new.xml == '<s cdl:extends="B"/>'


def test_a_reference_carries_its_targets_cause() -> None:
    old = load_text(system("<a><p>1</p><other>x</other></a><b><r cdl:refroot='a' cdl:ref='/p'/></b><c><o cdl:refroot='a' cdl:ref='/other'/></c>"))
    new = load_text(system("<a><p>2</p><other>y</other></a><b><r cdl:refroot='a' cdl:ref='/p'/></b><c><o cdl:refroot='a' cdl:ref='/other'/></c>"))
    diff = old.diff(new)
    p, other = diff.causes
    assert p.components == ("/a", "/b") and other.components == ("/a", "/c")
    assert [(c.path, c.causes) for c in diff.components] == [("/a", (1, 2)), ("/b", (1,)), ("/c", (2,))]


def test_an_override_removed_names_the_removed_value() -> None:
    templates = "<T><port>80</port><x>1</x></T>"
    old = load_text(system("<s cdl:extends='T'><port>8080</port></s>", configuration=templates + "<U><y>1</y></U>"))
    new = load_text(system("<s cdl:extends='T'/>", configuration=templates + "<U><y>2</y></U>"))
    (comp,) = old.diff(new).components
    (value,) = comp.values
    assert (value.old, value.new) == ("8080", "80")
    diff = old.diff(new)
    (cause,) = diff.causes
    assert cause.change == "removed" and cause.old is not None and cause.old.xml == "<port>8080</port>"


def test_same_named_siblings_have_k() -> None:
    old = load_text(system("<farm><app><v>1</v></app><app><v>1</v></app><label>a</label><label>b</label></farm>"))
    new = load_text(system("<farm><app><v>1</v></app><app><v>2</v></app><label>a</label><label>c</label></farm>"))
    diff = old.diff(new)
    assert [(c.path, [v.path for v in c.values]) for c in diff.components] == [
        ("/farm", ["/farm/label[2]"]),
        ("/farm/app[2]", ["/farm/app[2]/v"]),
    ]
    assert [c.path for c in old.diff(new, select="farm/app[2]").components] == ["/farm/app[2]"]
    assert not old.diff(new, select="/farm/app[1]")


def test_pending_values_on_both_sides() -> None:
    xml = system("<a><h cdl:lazy='true'/><p>1</p></a><b><r cdl:refroot='a' cdl:ref='/h'/></b>")
    # Pending alike in both: no difference, though the value to come is unknown.
    assert not load_text(xml).diff(load_text(xml))
    # A value that becomes pending changes.
    old = load_text(xml)
    new = load_text(xml.replace("<p>1</p>", "<p cdl:lazy='true'/>"))
    (comp,) = old.diff(new).components
    assert [(v.path, v.old, v.new) for v in comp.values] == [("/a/p", "1", {"@cdl:lazy": "true"})]
    # With the same values supplied to both, the reference resolves alike.
    rounds = [{"set": {"a/h": "h.example.org"}}]
    assert not old.diff(load_text(xml), rounds=rounds)
    # A reference whose target changed while both are pending: same pending form.
    moved = load_text(xml.replace("cdl:ref='/h'", "cdl:ref='/h' kind='x'"))
    assert [v.path for c in old.diff(moved).components for v in c.values] == ["/b/r"]


def test_deploy_time_values_reach_both_versions(tmp_path: Path) -> None:
    old, new = webfarm(tmp_path, {"templates.cdl": [PORT]})
    rounds = [{"set": {"db/hostname": "db.example.org"}}]
    diff = check_exact(old, new, rounds)
    assert diff is not None
    # With the database's hostname known, the schema's database URL resolves, and changes.
    assert "/apps/schema/databaseUrl" in [v.path for c in diff.components for v in c.values]


def test_a_deep_chain() -> None:
    depth = 3000
    inner = "<v>1</v>"
    for i in range(depth):
        inner = f"<n{i % 3}>{inner}<w>1</w></n{i % 3}>"
    old = load_text(system(f"<top>{inner}</top>"), limits=cdl.Limits(max_depth=20000))
    new = load_text(system(f"<top>{inner.replace('<v>1</v>', '<v>2</v>')}</top>"), limits=cdl.Limits(max_depth=20000))
    (comp,) = old.diff(new).components
    assert "...(" in comp.path  # shortened in the middle, as the plan writes deep paths
    assert [v.old for v in comp.values] == ["1"]


# ---------------------------------------------------------------------------
# Exactness on the samples, the conformance cases and random edits


SAMPLE_EDITS = {
    "webfarm": {"templates.cdl": [PORT], "system.cdl": [RELEASE]},
    "webapp": {"webapp-template.cdl": [("<port>8080</port>", "<port>8081</port>")]},
    "shop": {"system.cdl": [("<apiReplicas>4</apiReplicas>", "<apiReplicas>5</apiReplicas>")]},
}


@pytest.mark.parametrize("sample", sorted(SAMPLE_EDITS))
def test_exact_on_the_samples(sample: str, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "samples" / sample, tmp_path / "old")
    shutil.copytree(ROOT / "samples" / sample, tmp_path / "new")
    for name, replacements in SAMPLE_EDITS[sample].items():
        target = tmp_path / "new" / name
        text = target.read_text(encoding="utf-8")
        for before, after in replacements:
            assert before in text, (sample, before)
            text = text.replace(before, after)
        target.write_text(text, encoding="utf-8")
    diff = check_exact(tmp_path / "old" / "system.cdl", tmp_path / "new" / "system.cdl", [])
    assert diff


@cache
def system_seeds() -> list[Seed]:
    """The seeds that resolve, with a system (the others have nothing to compare)."""
    found = []
    for seed in corpus():
        if b"cdl:system" not in dict(seed.files)[seed.main]:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            main = Mutant(seed.name, seed.main, dict(seed.files)).write(Path(tmp))
            try:
                cdl.load(str(main)).resolve(rounds=[dict(r) for r in seed.rounds])
            except cdl.CdlError:
                continue
        found.append(seed)
    return found
C = f"{{{CDL_NS}}}"


def _in_lists(root: etree._Element) -> list[etree._Element]:
    """The elements inside top level lists (the lists included), CDL's own left out."""
    lists = [el for part in root if part.tag in (C + "configuration", C + "system") for el in part if isinstance(el.tag, str)]
    return [el for lst in lists for el in lst.iter() if isinstance(el.tag, str) and not el.tag.startswith(C)]


def _set_value(root: etree._Element, data: _Drawer) -> str | None:
    leaves = [el for el in _in_lists(root) if not len(el)]
    if not leaves:
        return None
    el = leaves[data.draw(st.integers(0, len(leaves) - 1))]
    el.text = data.draw(st.sampled_from(["1", "2", "x", "", " y ", "80"]))
    return f"text of <{el.tag}> = {el.text!r}"


def _add_property(root: etree._Element, data: _Drawer) -> str | None:
    inside = _in_lists(root)
    if not inside:
        return None
    el = inside[data.draw(st.integers(0, len(inside) - 1))]
    name = data.draw(st.sampled_from(["extra", "port", "label"]))
    child = etree.SubElement(el, name)
    child.text = data.draw(st.sampled_from(["1", "2"]))
    return f"add <{name}> to <{el.tag}>"


def _drop_or_duplicate(root: etree._Element, data: _Drawer) -> str | None:
    inside = _in_lists(root)
    if not inside:
        return None
    el = inside[data.draw(st.integers(0, len(inside) - 1))]
    parent = el.getparent()
    assert parent is not None
    if data.draw(st.booleans()):
        parent.remove(el)
        return f"drop <{el.tag}>"
    el.addnext(copy.deepcopy(el))
    return f"duplicate <{el.tag}>"


#: Edits that mostly leave a document valid, so that versions differ.
EDITS = [_set_value, _set_value, _add_property, _drop_or_duplicate, op_ref_elsewhere, op_extends_elsewhere, op_make_lazy]


@st.composite
def edited(draw: st.DrawFn) -> tuple[Seed, Mutant]:
    """A seed with a system, and a new version of it: one to three edits of its files."""
    seed: Seed = draw(st.sampled_from(system_seeds()))
    files = dict(seed.files)
    data = _Drawer(draw)
    ops = []
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(sorted(files)))
        root = etree.fromstring(files[name], etree.XMLParser(resolve_entities=False, no_network=True))
        done = draw(st.sampled_from(EDITS))(root, data)
        if done:
            ops.append(f"{name}: {done}")
            files[name] = etree.tostring(root, xml_declaration=True, encoding="UTF-8")
    return seed, Mutant(seed.name, seed.main, files, [dict(r) for r in seed.rounds], ops)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(edited())
def test_exact_on_random_edits(pair: tuple[Seed, Mutant]) -> None:
    seed, mutant = pair
    with tempfile.TemporaryDirectory() as tmp:
        original = Mutant(seed.name, seed.main, dict(seed.files)).write(Path(tmp) / "old")
        check_exact(original, mutant.write(Path(tmp) / "new"), mutant.rounds)


CASES_WITH_SYSTEMS = [c for c in load_suite(CASES) if c.error is None and c.expect is not None and "<cdl:system" in c.main_path.read_text(encoding="utf-8", errors="replace")]


@pytest.mark.parametrize("case", CASES_WITH_SYSTEMS, ids=[c.name for c in CASES_WITH_SYSTEMS])
def test_each_case_against_itself_and_without_its_rounds(case) -> None:  # type: ignore[no-untyped-def]
    doc = cdl.load(str(case.main_path))
    rounds = [r.as_dict() for r in case.rounds]
    assert not doc.diff(doc, rounds=rounds)
    check_exact(case.main_path, case.main_path, rounds)


# ---------------------------------------------------------------------------
# The JSON contract and the text form


def test_json_contract(tmp_path: Path) -> None:
    old, new = webfarm(tmp_path, {"templates.cdl": [PORT]})
    data = json.loads(cdl.load(str(old)).diff(cdl.load(str(new))).to_json())
    assert data == {
        "old": str(old),
        "new": str(new),
        "causes": [
            {
                "id": 1,
                "change": "changed",
                "old": {"url": str(old.parent / "templates.cdl"), "line": 28, "path": "/Database/port", "written": PORT[0]},
                "new": {"url": str(new.parent / "templates.cdl"), "line": 28, "path": "/Database/port", "written": PORT[1]},
                "components": ["/db", "/apps"],
            }
        ],
        "components": [
            {
                "path": "/db",
                "change": "changed",
                "causes": [1],
                "values": [
                    {
                        "path": "/db/port",
                        "change": "changed",
                        "old": {"@cdl:type": "xsd:positiveInteger", "#text": "5432"},
                        "new": {"@cdl:type": "xsd:positiveInteger", "#text": "6432"},
                        "causes": [1],
                    }
                ],
            },
            {
                "path": "/apps",
                "change": "changed",
                "causes": [1],
                "values": [
                    {
                        "path": "/apps/dbPort",
                        "change": "changed",
                        "old": {"@cdl:use": "required", "#text": "5432"},
                        "new": {"@cdl:use": "required", "#text": "6432"},
                        "causes": [1],
                    }
                ],
            },
        ],
    }


def test_text_form(tmp_path: Path) -> None:
    old = load_text(system("<a><p>1</p><q>x</q></a><b><c>1</c></b>"), name="old.cdl")
    new = load_text(system("<a><p>2</p></a><b><c>1</c></b><n><m>1</m></n>"), name="new.cdl")
    assert old.diff(new).to_text() == (
        "--- old.cdl\n"
        "+++ new.cdl\n"
        "[1] changed /a/p, reaching 1 component:\n"
        "    - old.cdl:1  <p>1</p>\n"
        "    + new.cdl:1  <p>2</p>\n"
        "    /a\n"
        "[2] removed /a/q, reaching 1 component:\n"
        "    - old.cdl:1  <q>x</q>\n"
        "    /a\n"
        "[3] added /n, reaching 1 component:\n"
        "    + new.cdl:1  <n>…</n>\n"
        "    /n\n"
        "@@ /a changed @@\n"
        '- p: "1"\n'
        '+ p: "2"  [1]\n'
        '- q: "x"  [2]\n'
        "@@ /n added @@ [3]\n"
        '+ m: "1"  [3]\n'
    )


# ---------------------------------------------------------------------------
# The command line


def test_cli_exit_statuses_and_formats(tmp_path: Path) -> None:
    old, new = webfarm(tmp_path, {"templates.cdl": [PORT]})
    same = run_cli("diff", str(old), str(old))
    assert (same.returncode, same.stdout, same.stderr) == (0, "", "")
    text = run_cli("diff", str(old), str(new))
    assert text.returncode == 2, text.stderr
    assert text.stdout == cdl.load(str(old)).diff(cdl.load(str(new))).to_text()
    as_json = run_cli("diff", str(old), str(new), "--format", "json")
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout) == cdl.load(str(old)).diff(cdl.load(str(new))).to_data()
    values = run_cli("diff", str(old), str(new), "--set", "db/hostname=db.example.org", "--format", "json")
    assert values.returncode == 2
    assert "/apps/schema" in [c["path"] for c in json.loads(values.stdout)["components"]]


def test_cli_select(tmp_path: Path) -> None:
    old, new = webfarm(tmp_path, {"templates.cdl": [PORT], "system.cdl": [RELEASE]})
    one = run_cli("diff", str(old), str(new), "--select", "/apps/app1", "--format", "json")
    assert one.returncode == 2, one.stderr
    data = json.loads(one.stdout)
    assert [c["path"] for c in data["components"]] == ["/apps/app1"]
    assert [c["components"] for c in data["causes"]] == [["/apps/app1"]]
    unchanged = run_cli("diff", str(old), str(new), "--select", "monitor")
    assert (unchanged.returncode, unchanged.stdout) == (0, "")
    wrong = run_cli("diff", str(old), str(new), "--select", "apps/ap1")
    assert wrong.returncode == 1 and wrong.stdout == ""
    assert wrong.stderr == (
        f"{new}: [COMPONENT_NOT_FOUND] 'apps/ap1' names no component of either version: /apps has no component 'ap1'; "
        "did you mean /apps/app1? (at apps/ap1)\n"
    )


@pytest.mark.parametrize(
    "broken, code",
    [("<cdl:cdl", "XML_SYNTAX"), (None, "IO_ERROR"), ('<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"><cdl:system><a cdl:extends="Nope"/></cdl:system></cdl:cdl>', "UNKNOWN_PROTOTYPE")],
)
def test_cli_an_unloadable_new_version_is_an_error(tmp_path: Path, broken: str | None, code: str) -> None:
    old, _ = webfarm(tmp_path, {})
    new = tmp_path / "broken.cdl"
    if broken is not None:
        new.write_text(broken, encoding="utf-8")
    proc = run_cli("diff", str(old), str(new))
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert f"[{code}]" in proc.stderr and str(new) in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_cli_usage_errors_exit_1_not_2(tmp_path: Path) -> None:
    old, _ = webfarm(tmp_path, {})
    for args in (["diff", str(old)], ["diff", str(old), str(old), "--format", "yaml"], ["diff", str(old), str(old), "--nope"]):
        proc = run_cli(*args)
        assert proc.returncode == 1, args
        assert "Usage:" in proc.stderr and proc.stdout == ""
        assert re.search(r"Error: \S", proc.stderr), proc.stderr  # click's own message, kept
    assert run_cli("diff", "--help").returncode == 0


def test_cli_values_that_one_version_refuses(tmp_path: Path) -> None:
    old, new = webfarm(tmp_path, {"templates.cdl": [("<port cdl:type=\"xsd:positiveInteger\" cdl:lazy=\"true\"/>", "<port cdl:type=\"xsd:positiveInteger\">9000</port>")]})
    proc = run_cli("diff", str(old), str(new), "--set", "apps/app1/port=8080")
    assert proc.returncode == 1
    assert "[SET_NOT_LAZY]" in proc.stderr and proc.stdout == ""


# ---------------------------------------------------------------------------
# The README's examples


def _readme_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## `cdl diff`")
    return text[start : text.index("\n## ", start + 1)]


def test_readme_console_example_is_what_cdl_prints() -> None:
    block = re.search(r"```console\n\$ (cdl diff [^\n]*)\n(.*?)```", _readme_section(), re.DOTALL)
    assert block is not None
    proc = run_cli(*block.group(1).split()[1:])
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == block.group(2)


def test_readme_json_is_part_of_what_cdl_prints() -> None:
    block = re.search(r"```json\n(.*?)```", _readme_section(), re.DOTALL)
    assert block is not None
    shown = json.loads(block.group(1))
    proc = run_cli("diff", shown["old"], shown["new"], "--format", "json")
    assert proc.returncode == 2, proc.stderr
    data = json.loads(proc.stdout)
    assert list(shown) == list(data) == ["old", "new", "causes", "components"]
    assert (shown["old"], shown["new"]) == (data["old"], data["new"])
    causes = {c["id"]: c for c in data["causes"]}
    for cause in shown["causes"]:
        assert cause == causes[cause["id"]]
    components = {c["path"]: c for c in data["components"]}
    for comp in shown["components"]:
        real = components[comp["path"]]
        assert list(comp) == list(real)
        assert {k: v for k, v in comp.items() if k != "values"} == {k: v for k, v in real.items() if k != "values"}
        for value in comp["values"]:
            assert value in real["values"]
