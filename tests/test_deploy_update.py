"""Changing a running system (issue 32, points 2, 3 and 5): ``Deployment.update``
and ``cdl deploy update``, what carries over and what becomes ``changed``,
components removed by an update (``removing``, ``removed``), teardown, and
the journal's update event (docs/semantics.md, "Deployment sessions")."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from lxml import etree

import cdl
from cdl.cli import main
from cdl.conformance import Case
from strategies import Mutant, Seed, mutants, op_add_namesake, op_drop_element, op_duplicate_element
from test_deploy_exact import assert_exact, cases_with_rounds, deployable, unmutated

#: How many edits the property test draws.
EXAMPLES = int(os.environ.get("CDL_DEPLOY_EXAMPLES", "60"))

ROOT = Path(__file__).resolve().parent.parent
FARM = ROOT / "samples" / "webfarm"


def values_for(deployment: cdl.Deployment, path: str, tag: str = "v") -> tuple[dict[str, str], list[str]]:
    """A value for each lazy property ``path`` supplies, and its references released."""
    comp = deployment.status(path).components[0]
    return {p: f"{tag}:{p}" for p in comp.supplies}, list(comp.releases)


def deploy_all(deployment: cdl.Deployment, tag: str = "v") -> None:
    while ready := deployment.ready():
        for path in ready:
            deployment.deployed(path, *values_for(deployment, path, tag))


def states(deployment: cdl.Deployment) -> dict[str, str]:
    return {c.path: c.state for c in deployment.status().components}


CDL_NS = "http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"
LIST_PARENTS = (f"{{{CDL_NS}}}configuration", f"{{{CDL_NS}}}system")
EXPRESSION = f"{{{CDL_NS}}}expression"


class Paired:
    """The oracle of the one pairing rule (docs/semantics.md, "Diff",
    "Update"), from its text: two versions' elements are paired step by step
    from their top level lists (by name), the children of a pair by name and
    kind (a component: a top level list, or an element with child elements
    that is no cdl:expression and holds none; the rest are properties), the
    k-th of a name among its kind with the k-th. Read on each version
    resolved without values (as a deployment opens it), the main document's
    lists only: a path it cannot read (an imported template's) it leaves as
    it is."""

    def __init__(self, old: cdl.Document, new: cdl.Document) -> None:
        self.trees = (old.resolve().tree(), new.resolve().tree())
        self.nsmaps = tuple(etree.parse(doc.url).getroot().nsmap for doc in (old, new))

    def elements(self, side: int, path: str) -> list[etree._Element] | None:
        """What ``path`` (``LIST/child[k]/...``, as for ``--set``) names in
        version ``side``, or None when it is no path of its main document."""
        steps = path.strip("/").split("/")
        tops = [el for parent in self.trees[side] if parent.tag in LIST_PARENTS for el in parent]
        current = [el for el in tops if self._is(el, steps[0], side, top=True)]
        if not current:
            return None
        for step in steps[1:]:
            name, _, k = step.partition("[")
            same = [[c for c in el if self._is(c, name, side)] for el in current]
            current = [c for family in same for c in (family if not k else family[int(k[:-1]) - 1 : int(k[:-1])])]
        return current

    def _is(self, el: etree._Element, name: str, side: int, top: bool = False) -> bool:
        if not isinstance(el.tag, str):
            return False
        prefix, _, local = name.rpartition(":")
        qname = etree.QName(el)
        if prefix:
            return qname.localname == local and qname.namespace == self.nsmaps[side].get(prefix)
        return qname.localname == local and (top or qname.namespace == self.nsmaps[side].get(None))

    @staticmethod
    def is_component(el: etree._Element) -> bool:
        parent = el.getparent()
        top = parent is not None and parent.tag in LIST_PARENTS
        return top or (len(el) > 0 and el.tag != EXPRESSION and el.find(EXPRESSION) is None)

    def pair(self, el: etree._Element, side: int) -> etree._Element | None:
        """The other version's element paired with ``el`` (of version ``side``)."""
        chain = [el, *el.iterancestors()]
        chain = chain[: next(i for i, a in enumerate(chain) if a.tag in LIST_PARENTS)]
        chain.reverse()
        others = [t for parent in self.trees[1 - side] if parent.tag in LIST_PARENTS for t in parent]
        there = next((t for t in others if t.tag == chain[0].tag), None)
        for child in chain[1:]:
            if there is None:
                return None
            kind = self.is_component(child)
            ours = [c for c in child.getparent() if c.tag == child.tag and self.is_component(c) == kind]  # type: ignore[union-attr]
            theirs = [c for c in there if c.tag == child.tag and self.is_component(c) == kind]
            k = ours.index(child)
            there = theirs[k] if k < len(theirs) else None
        return there

    def path(self, el: etree._Element, side: int) -> str:
        """``el``'s path in version ``side``, every step below its list with its ``[k]``."""
        names = {uri: prefix for prefix, uri in self.nsmaps[side].items() if prefix}
        steps = []
        for a in [el, *el.iterancestors()]:
            if a.tag in LIST_PARENTS:
                break
            qname = etree.QName(a)
            name = f"{names[qname.namespace]}:{qname.localname}" if qname.namespace in names else qname.localname
            parent = a.getparent()
            assert parent is not None
            if parent.tag not in LIST_PARENTS:
                name += f"[{[c for c in parent if c.tag == a.tag].index(a) + 1}]"
            steps.append(name)
        return "/".join(reversed(steps))

    def carried(self, path: str) -> list[str]:
        """The paths in the new version of the pairs of what ``path`` names in the old one."""
        named = self.elements(0, path)
        if named is None:
            return [path]
        return [self.path(pair, 1) for el in named if (pair := self.pair(el, 0)) is not None]


def carried_oracle(rounds: tuple[cdl.RoundLike, ...], old: cdl.Document, new: cdl.Document) -> cdl.Resolution:
    """The new documents deployed afresh, with each value supplied so far
    given to the pair of its property, when the new documents have one and
    it is still lazy: what an update must equal."""
    paired = Paired(old, new)
    values: dict[str, str] = {}
    release: list[str] = []
    for step in rounds:
        assert not isinstance(step, dict)
        values.update({carried: value for path, value in step.set.items() for carried in paired.carried(path)})
        release += [carried for path in step.release for carried in paired.carried(path)]
    kept: dict[str, str] = {}
    for path, value in values.items():
        try:
            new.resolve(rounds=[{"set": {path: value}}])
        except cdl.CdlError as error:
            if error.code == "SET_NOT_FOUND":
                continue
            raise
        kept[path] = value
    fresh = new.deploy()
    fresh.supply(kept, [r for r in release if _has(new, r)])
    return fresh.resolution()


def _has(doc: cdl.Document, path: str) -> bool:
    try:
        doc.resolve(rounds=[{"release": [path]}])
    except cdl.CdlError as error:
        return error.code != "SET_NOT_FOUND"
    return True


@pytest.fixture
def farm(tmp_path: Path) -> Path:
    """A copy of the web farm, version 1 in ``v1/``, version 2 in ``v2/``."""
    shutil.copytree(FARM, tmp_path / "v1", ignore=shutil.ignore_patterns("v2"))
    shutil.copytree(FARM / "v2", tmp_path / "v2")
    return tmp_path


def edited(farm: Path, name: str, edits: dict[str, list[tuple[str, str]]]) -> Path:
    """A version ``name`` of the farm: version 1 with ``edits`` per file."""
    shutil.copytree(farm / "v1", farm / name)
    for file, pairs in edits.items():
        text = (farm / name / file).read_text()
        for before, after in pairs:
            assert before in text, before
            text = text.replace(before, after)
        (farm / name / file).write_text(text)
    return farm / name / "system.cdl"


def test_an_update_carries_values_and_states_and_marks_what_changed(farm: Path) -> None:
    old = cdl.load(farm / "v1" / "system.cdl")
    deployment = old.deploy()
    deploy_all(deployment)
    new = cdl.load(farm / "v2" / "system.cdl")
    rounds = deployment.rounds
    ready = deployment.update(new)
    assert states(deployment) == {
        "/db": "deployed",
        "/monitor": "deployed",
        "/apps": "changed",
        "/apps/schema": "changed",
        "/apps/app1": "changed",
        "/apps/app2": "changed",
        "/balancer": "deployed",
    }
    # Ready by the usual rules, with the values carried over: the children first.
    assert ready == deployment.ready() == ["/apps/schema", "/apps/app1", "/apps/app2"]
    app1 = deployment.status("/apps/app1").components[0]
    assert any(line.startswith('/apps/app1/threads "32" -> "48"') for line in app1.changes), app1.changes
    assert any("templates.cdl:45" in line and "threads" in line for line in app1.changes), app1.changes
    assert "changed: " in app1.why()
    assert deployment.resolution().to_bytes() == carried_oracle(rounds, old, new).to_bytes()
    # Deployed again (the same values): deployed, and the tier after its children.
    for path in ready:
        deployment.deployed(path, *values_for(deployment, path))
    assert deployment.ready() == ["/apps"]
    deployment.deployed("/apps")
    assert set(states(deployment).values()) == {"deployed"}


def test_a_value_supplied_anew_reaches_what_uses_it(farm: Path) -> None:
    deployment = cdl.load(farm / "v1" / "system.cdl").deploy()
    deploy_all(deployment)
    # Version 3 changes the database: everything that uses its hostname runs with the old one.
    new = cdl.load(edited(farm, "v3", {"templates.cdl": [('<port cdl:type="xsd:positiveInteger">5432</port>', '<port cdl:type="xsd:positiveInteger">5433</port>')]}))
    deployment.update(new)
    assert states(deployment)["/db"] == "changed"
    assert states(deployment)["/monitor"] == "deployed"
    before = states(deployment)
    became = deployment.deployed("/db", {"db/hostname": "db-2"})
    after = states(deployment)
    assert after["/db"] == "deployed"
    # Every deployed component whose configuration reads the new hostname is changed now.
    users = {"/apps", "/apps/schema", "/apps/app1", "/apps/app2"}
    assert {p for p, s in after.items() if s == "changed"} >= users
    assert after["/monitor"] == "deployed"
    assert set(became) <= set(deployment.ready())
    assert before != after
    schema = deployment.status("/apps/schema").components[0]
    assert any("db-2" in line for line in schema.changes), schema.changes
    config = deployment.configuration("/apps/app1")["system"]["apps"]["app1"]
    assert "db-2" in str(config["databaseUrl"])
    # The same value again is no change.
    ready = deployment.ready()
    assert deployment.deployed(ready[0], *values_for(deployment, ready[0])) is not None


def test_added_and_removed_components(farm: Path) -> None:
    deployment = cdl.load(farm / "v1" / "system.cdl").deploy()
    deploy_all(deployment)
    new = cdl.load(
        edited(
            farm,
            "v3",
            {"system.cdl": [('<monitor cdl:extends="farm:Monitor"/>', "<cache><size>64</size></cache>")]},
        )
    )
    ready = deployment.update(new)
    assert "/cache" in ready and states(deployment)["/cache"] == "ready"
    gone = deployment.status("/monitor").components[0]
    assert gone.state == "removing"
    assert deployment.removable() == ["/monitor"]
    assert deployment.removed("/monitor") == []
    assert deployment.status("/monitor").components[0].state == "removed"
    with pytest.raises(cdl.CdlError) as again:
        deployment.removed("/monitor")
    assert again.value.code == "NOT_READY"
    with pytest.raises(cdl.CdlError) as nothing:
        deployment.removed("/db")
    assert nothing.value.code == "NOT_REMOVING"


def test_a_refused_update_changes_nothing(farm: Path, tmp_path: Path) -> None:
    journal = tmp_path / "farm.journal"
    deployment = cdl.load(farm / "v1" / "system.cdl").deploy(journal=journal)
    deploy_all(deployment)
    before_bytes = journal.read_bytes()
    before = deployment.status().to_data()
    resolved = deployment.resolution().to_bytes()
    # A value supplied so far that the new documents no longer take as lazy.
    not_lazy = cdl.load(
        edited(farm, "v3", {"templates.cdl": [('<hostname cdl:type="xsd:string" cdl:lazy="true"/>', "<hostname>fixed</hostname>")]})
    )
    with pytest.raises(cdl.CdlError) as caught:
        deployment.update(not_lazy)
    assert caught.value.code == "SET_NOT_LAZY"
    assert "update: a value supplied so far does not fit the new documents" in caught.value.message
    # New documents that do not resolve.
    broken = cdl.load(edited(farm, "v4", {"system.cdl": [('cdl:ref="/hostname"', 'cdl:ref="/hostnme"')]}))
    with pytest.raises(cdl.CdlError):
        deployment.update(broken)
    assert journal.read_bytes() == before_bytes
    assert deployment.status().to_data() == before
    assert deployment.resolution().to_bytes() == resolved
    deployment.close()


def test_the_journal_after_an_update_needs_only_the_new_documents(farm: Path, tmp_path: Path) -> None:
    journal = tmp_path / "farm.journal"
    old, new = cdl.load(farm / "v1" / "system.cdl"), cdl.load(farm / "v2" / "system.cdl")
    with old.deploy(journal=journal) as deployment:
        deploy_all(deployment)
        deployment.update(new)
        deployment.deployed("/apps/schema", *values_for(deployment, "/apps/schema", "w"))
        expected = (deployment.status().to_data(), deployment.resolution().to_bytes())
    with new.deploy(journal=journal) as reopened:
        assert (reopened.status().to_data(), reopened.resolution().to_bytes()) == expected
    with pytest.raises(cdl.CdlError) as caught:
        old.deploy(journal=journal)
    assert caught.value.code == "JOURNAL_MISMATCH"
    assert "update it (cdl deploy update" in caught.value.message


def test_documents_with_the_same_bytes_are_no_change(farm: Path, tmp_path: Path) -> None:
    journal = tmp_path / "farm.journal"
    with cdl.load(farm / "v1" / "system.cdl").deploy(journal=journal) as deployment:
        deploy_all(deployment)
        before = journal.read_bytes()
        assert deployment.update(cdl.load(farm / "v1" / "system.cdl")) == []
        assert journal.read_bytes() == before


def test_teardown_goes_in_the_reverse_order(farm: Path) -> None:
    doc = cdl.load(farm / "v1" / "system.cdl")
    deployment = doc.deploy()
    deploy_all(deployment)
    first = deployment.teardown()
    assert set(states(deployment).values()) == {"removing"}
    # Nothing waits on the balancer and the monitor; the database goes last.
    assert first == ["/balancer", "/monitor"]
    with pytest.raises(cdl.CdlError) as early:
        deployment.removed("/db")
    assert early.value.code == "NOT_READY" and "/apps" in early.value.message
    assert "/apps" in deployment.status("/db").components[0].removal_waits
    order: list[str] = []
    while removable := deployment.removable():
        for path in removable:
            order.append(path)
            deployment.removed(path)
    assert set(states(deployment).values()) == {"removed"}
    # Each component after everything that waits on it: the plan's teardown order.
    teardown = [c.path for c in doc.resolve().plan().teardown().components()]
    assert order.index("/balancer") < order.index("/apps/app1") < order.index("/db")
    assert order.index("/apps") < order.index("/apps/app1")
    assert set(order) == set(teardown)
    for refused in (lambda: deployment.supply({"db/hostname": "x"}), lambda: deployment.update(doc)):
        with pytest.raises(cdl.CdlError) as caught:
            refused()
        assert caught.value.code == "TORN_DOWN"
    assert deployment.ready() == []


def run(*args: object, code: int = 0) -> str:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def test_the_cli_updates_and_tears_down(farm: Path, tmp_path: Path) -> None:
    journal = tmp_path / "farm.journal"
    v1, v2 = farm / "v1" / "system.cdl", farm / "v2" / "system.cdl"
    with cdl.load(v1).deploy(journal=journal) as deployment:
        deploy_all(deployment)
    assert run("deploy", "update", v2, "--journal", journal).split() == ["/apps/schema", "/apps/app1", "/apps/app2"]
    status = run("deploy", "status", v2, "--journal", journal)
    assert "changed  /apps/app1" in status and "threads" in status
    failed = CliRunner().invoke(main, ["deploy", "status", str(v1), "--journal", str(journal)])
    assert failed.exit_code == 1 and "[JOURNAL_MISMATCH]" in failed.output and "cdl deploy update" in failed.output
    assert run("deploy", "teardown", v2, "--journal", journal).split() == ["/balancer", "/monitor"]
    assert run("deploy", "removed", v2, "/monitor", "--journal", journal) == ""
    assert run("deploy", "removable", v2, "--journal", journal).split() == ["/balancer"]


# -- exactness: an update equals a fresh deployment of the new documents with the values carried over


def deploy_some(deployment: cdl.Deployment, rounds: list[dict[str, Any]], rng: random.Random) -> None:
    """The document's own rounds as supply events (refused ones skipped), then
    some ready components deployed, in a random order."""
    for step in rounds:
        try:
            deployment.supply(step.get("set", {}), step.get("release", []))
        except cdl.CdlError:
            pass
    for _ in range(rng.randrange(0, 40)):
        ready = deployment.ready()
        if not ready:
            break
        path = rng.choice(ready)
        try:  # a value the rounds gave already, say: refused, as a service may be
            deployment.deployed(path, *values_for(deployment, path))
        except cdl.CdlError:
            pass


def assert_update_exact(old_doc: cdl.Document, new_doc: cdl.Document, rng: random.Random, rounds: list[dict[str, Any]]) -> str:
    """Deploy ``old_doc`` part way, update it to ``new_doc`` and check the
    result against :func:`carried_oracle`; what happened, in a few words."""
    deployment = old_doc.deploy()
    deploy_some(deployment, rounds, rng)
    carried = deployment.rounds
    before = (deployment.status().to_data(), deployment.resolution().to_bytes())
    try:
        expected = carried_oracle(carried, old_doc, new_doc)
    except cdl.CdlError as error:
        with pytest.raises(cdl.CdlError) as refused:
            deployment.update(new_doc)
        assert refused.value.code == error.code
        assert (deployment.status().to_data(), deployment.resolution().to_bytes()) == before
        return "refused: a carried value does not fit"
    try:
        deployment.update(new_doc)
    except cdl.CdlError as error:  # the new documents do not plan (a cycle): refused, nothing changed
        assert error.code in ("CYCLE", "PLAN_CYCLE", "LAZY_CYCLE"), error.render()
        assert (deployment.status().to_data(), deployment.resolution().to_bytes()) == before
        return "refused: the new documents do not plan"
    assert deployment.resolution().to_bytes() == expected.to_bytes()
    assert_exact(new_doc, deployment)
    # A component is deployed after the update only if its pair was; one that
    # was is deployed after, or changed (its configuration is not the same).
    paired = Paired(old_doc, new_doc)
    old_states = _states_by_element(paired, 0, before[0]["components"])
    new_states = _states_by_element(paired, 1, deployment.status().to_data()["components"])
    for el, state in new_states.items():
        if state == "deployed":
            pair = paired.pair(el, 1)
            assert pair is not None and old_states.get(pair) == "deployed", paired.path(el, 1)
    for el, state in old_states.items():
        pair = paired.pair(el, 0)
        if state == "deployed" and pair in new_states:
            assert new_states[pair] in ("deployed", "changed"), paired.path(el, 0)
    return "updated, " + ("some changed" if any(c.state == "changed" for c in deployment.status().components) else "none changed")


def _states_by_element(paired: Paired, side: int, components: list[dict[str, Any]]) -> dict[etree._Element, str]:
    """Each component's state (``status().to_data()``'s) by its element in version ``side`` of ``paired``."""
    found: dict[etree._Element, str] = {}
    for comp in components:
        if "...(" not in comp["path"] and comp["state"] not in ("removing", "removed"):
            found.update(dict.fromkeys(paired.elements(side, comp["path"]) or (), comp["state"]))
    return found


@pytest.mark.parametrize("sample", sorted(ROOT.glob("samples/*/system.cdl")), ids=lambda p: p.parent.name)
def test_samples_updated_to_the_next_version(sample: Path) -> None:
    nxt = sample.parent / "v2" / "system.cdl"
    new = cdl.load(nxt if nxt.exists() else sample)
    for seed in range(3):
        assert assert_update_exact(cdl.load(sample), new, random.Random(seed), []).startswith("updated")


@pytest.mark.parametrize("case", cases_with_rounds(), ids=lambda c: c.name)
def test_conformance_cases_with_rounds_updated(case: Case, tmp_path: Path) -> None:
    """Each conformance case with rounds, its rounds given as events and some
    components deployed, then updated to its next version (the same
    documents with a comment added: every value carries over, nothing
    changes), then to a version whose main document writes one more
    configuration value: exact each time, or refused with nothing changed."""
    home = Path(case.main_path).parent
    versions = [tmp_path / "v1", tmp_path / "v2", tmp_path / "v3"]
    for n, version in enumerate(versions):
        shutil.copytree(home, version)
        main_file = version / Path(case.main_path).name
        text = main_file.read_text(encoding="utf-8")
        if n >= 1:
            text += "\n<!-- the next version -->\n"
        if n == 2:
            text = text.replace("</cdl:configuration>", "<Added><value>1</value></Added></cdl:configuration>", 1)
        main_file.write_text(text, encoding="utf-8")
    try:
        docs = [cdl.load(version / Path(case.main_path).name) for version in versions]
        docs[0].deploy()
    except cdl.CdlError:
        pytest.skip("the case refuses a deployment")
    rounds = [r.as_dict() for r in case.rounds]
    assert assert_update_exact(docs[0], docs[1], random.Random(0), rounds) == "updated, none changed"
    assert not assert_update_exact(docs[0], docs[2], random.Random(1), rounds).startswith("refused: the new")


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_random_documents_updated_to_random_edits(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    """The conformance cases with rounds and the samples (a seed of the
    corpus that deploys), deployed part way, then updated to an edit of
    themselves, or an edit updated back to the seed (what an edit added,
    a same-named sibling of another kind say, goes): exact, or refused with
    nothing changed."""
    seed: Seed = data.draw(st.sampled_from(deployable()))
    # Half of the edits only add, drop or copy elements: same-named siblings of either kind.
    ops = data.draw(st.sampled_from([None, [op_add_namesake, op_drop_element, op_duplicate_element]]))
    edit: Mutant = data.draw(mutants(byte_ops=False, max_xml_ops=3, seed=seed, xml_ops=ops))
    base = tmp_path_factory.mktemp("update")
    old_main, new_main = unmutated(seed).write(base / "old"), edit.write(base / "new")
    if data.draw(st.booleans()):
        old_main, new_main = new_main, old_main
        try:
            cdl.load(old_main).deploy()
        except cdl.CdlError:
            assume(False)
    try:
        new_doc = cdl.load(new_main)
        new_doc.resolve()
    except cdl.CdlError:
        assume(False)
    rng = random.Random(data.draw(st.integers(0, 1 << 16)))
    event(assert_update_exact(cdl.load(old_main), new_doc, rng, [dict(r) for r in seed.rounds]))


def test_a_pending_reference_of_a_deployed_component_is_no_change(tmp_path: Path) -> None:
    """A component deployed with its lazy reference still to be released
    (``later``): the new version's output writes the reference back as the
    running version's does, so an update to the same system leaves it
    deployed."""
    text = (
        '<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"><cdl:system>'
        '<db><host>h</host></db><app><dbhost cdl:refroot="db" cdl:ref="/host" cdl:lazy="true"/></app>'
        "</cdl:system></cdl:cdl>\n"
    )
    (tmp_path / "v1.cdl").write_text(text)
    (tmp_path / "v2.cdl").write_text(text + "<!-- the next version -->\n")
    deployment = cdl.load(tmp_path / "v1.cdl").deploy()
    deployment.deployed("/db")
    deployment.deployed("/app", later=["app/dbhost"])
    assert deployment.update(cdl.load(tmp_path / "v2.cdl")) == []
    assert states(deployment) == {"/db": "deployed", "/app": "deployed"}
    assert b'cdl:ref="./host"' in deployment.configuration("/app", format="xml")  # still pending


def test_an_update_takes_a_document(farm: Path) -> None:
    deployment = cdl.load(farm / "v1" / "system.cdl").deploy()
    with pytest.raises(TypeError, match="cdl.Document"):
        deployment.update(str(farm / "v2" / "system.cdl"))
