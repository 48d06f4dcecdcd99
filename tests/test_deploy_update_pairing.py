"""How an update pairs the running version with the new one (issue 32,
point 2; docs/semantics.md, "Update"): by the one rule of ``cdl diff``,
by name and kind, so that a same-named sibling of another kind that comes or
goes changes what the diff says and nothing else: the state of each
component whose configuration is the same carries over, and each value goes
to its property's pair, whatever the ``[k]`` of its path becomes; the
journal replays it so, after a reopening; a journal written when updates
paired by path replays as it was recorded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import cdl

ROOT = Path(__file__).resolve().parent.parent
OLD_RULE = ROOT / "tests" / "data" / "journal-pairing"  # a journal an update wrote when it paired by path
CDL_NS = "http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"


def farm(tmp_path: Path, name: str, body: str) -> cdl.Document:
    """A system of one top level list ``farm`` holding ``body``."""
    path = tmp_path / f"{name}.cdl"
    path.write_text(f'<cdl:cdl xmlns:cdl="{CDL_NS}"><cdl:system><farm>{body}</farm></cdl:system></cdl:cdl>\n')
    return cdl.load(path)


def states(deployment: cdl.Deployment) -> dict[str, str]:
    return {c.path: c.state for c in deployment.status().components}


def deploy_all(deployment: cdl.Deployment, values: dict[str, str] | None = None) -> None:
    while ready := deployment.ready():
        for path in ready:
            supplies = deployment.status(path).components[0].supplies
            deployment.deployed(path, {p: (values or {})[p.lstrip("/")] for p in supplies})


def snapshot(deployment: cdl.Deployment) -> tuple[object, bytes]:
    """What a deployment says of itself: its status and its resolution."""
    return deployment.status().to_data(), deployment.resolution().to_bytes()


def replayed(doc: cdl.Document, journal: Path) -> tuple[object, bytes]:
    with doc.deploy(journal=journal, read_only=True) as deployment:
        return snapshot(deployment)


def update_replayed(deployment: cdl.Deployment, to: cdl.Document, journal: Path, expected: dict[str, str]) -> None:
    """Update ``deployment`` (of ``journal``) to ``to``: the components'
    states are ``expected``, and the journal, once closed, replays to what
    the deployment says (which it still says: closed, it can be read)."""
    deployment.update(to)
    assert states(deployment) == expected
    live = snapshot(deployment)
    deployment.close()
    assert replayed(to, journal) == live


@pytest.mark.parametrize(
    ("old_body", "new_body", "expected"),
    [
        # The leaf x goes: the component x (x[2] before) is x's pair; only farm's own configuration changed.
        ("<x>1</x><x><port>80</port></x>", "<x><port>80</port></x>", {"/farm": "changed", "/farm/x": "deployed"}),
        # A leaf x comes before it: the component is x[2] now, and still deployed.
        ("<x><port>80</port></x>", "<x>1</x><x><port>80</port></x>", {"/farm": "changed", "/farm/x[2]": "deployed"}),
        # A component x comes before the leaf x: it is added, the leaf is the leaf's pair (x[2] now).
        ("<x>1</x>", "<x><port>80</port></x><x>1</x>", {"/farm": "deployed", "/farm/x[1]": "ready"}),
    ],
)
def test_a_namesake_of_another_kind_changes_what_the_diff_says(tmp_path: Path, old_body: str, new_body: str, expected: dict[str, str]) -> None:
    old, new = farm(tmp_path, "old", old_body), farm(tmp_path, "new", new_body)
    diff = old.diff(new)
    assert {c.path: c.change for c in diff.components} == {
        path: "changed" if state == "changed" else "added" for path, state in expected.items() if state != "deployed"
    }  # what is not deployed afresh is what the diff lists
    journal = tmp_path / "farm.journal"
    with old.deploy(journal=journal) as deployment:
        deploy_all(deployment)
        update_replayed(deployment, new, journal, expected)  # nothing removing: the diff removes nothing


def test_a_value_goes_to_its_property_pair_whatever_its_path_becomes(tmp_path: Path) -> None:
    old = farm(tmp_path, "old", '<x>1</x><x><port cdl:lazy="true"/></x>')
    new = farm(tmp_path, "new", '<x><port cdl:lazy="true"/></x>')
    journal = tmp_path / "farm.journal"
    with old.deploy(journal=journal) as deployment:
        deploy_all(deployment, {"farm/x[2]/port": "8080"})
    # There (x[2] is x, the value with it), and back (the value goes to x[2]/port).
    for running, to, component in ((old, new, "/farm/x"), (new, old, "/farm/x[2]")):
        with running.deploy(journal=journal) as deployment:
            update_replayed(deployment, to, journal, {"/farm": "changed", component: "deployed"})
            assert deployment.configuration(component)["system"]["farm"]["x"]["port"] == "8080"
            # The value by its path in the new version: the update event's round.
            assert [dict(r.set) for r in deployment.rounds] == [{f"{component[1:]}/port": "8080"}]


def test_a_value_still_to_come_goes_to_its_property_pair(tmp_path: Path) -> None:
    old = farm(tmp_path, "old", '<x>1</x><x><port cdl:lazy="true"/></x>')
    new = farm(tmp_path, "new", '<x><port cdl:lazy="true"/></x>')
    journal = tmp_path / "farm.journal"
    with old.deploy(journal=journal) as deployment:
        deployment.deployed("/farm/x[2]", later=["farm/x[2]/port"])
        update_replayed(deployment, new, journal, {"/farm": "ready", "/farm/x": "deployed"})
        assert deployment.status("/farm/x").components[0].later == ("/farm/x/port",)
    with new.deploy(journal=journal) as deployment:
        assert deployment.status("/farm/x").components[0].later == ("/farm/x/port",)
        deployment.supply({"farm/x/port": "8080"})
        assert deployment.status("/farm/x").components[0].later == ()


def test_a_journal_of_an_update_that_paired_by_path_replays_as_recorded(tmp_path: Path) -> None:
    """Its update event names each component by its path in the new version
    (by path then, that was the running version's path too) with the state
    it carried, and each value by its new path: replay reads them as they
    are, without pairing again, so it finds the state that update left (the
    component x not deployed, x[2] removing, the value dropped), not the one
    an update of this release would leave."""
    for name in ("old.cdl", "new.cdl", "update.journal"):
        shutil.copy(OLD_RULE / name, tmp_path / name)
    old, new = cdl.load(tmp_path / "old.cdl"), cdl.load(tmp_path / "new.cdl")
    with new.deploy(journal=tmp_path / "update.journal") as deployment:
        assert states(deployment) == {"/farm": "changed", "/farm/x": "ready", "/farm/x[2]": "removing"}
        assert deployment.rounds == ()
        deployment.removed("/farm/x[2]")
        deployment.deployed("/farm/x", {"farm/x/port": "8081"})
    with new.deploy(journal=tmp_path / "update.journal") as deployment:
        assert states(deployment) == {"/farm": "changed", "/farm/x": "deployed", "/farm/x[2]": "removed"}
    # This release, from the same events: the component and its value carry over.
    with old.deploy() as deployment:
        deployment.deployed("/farm/x[2]", {"farm/x[2]/port": "8080"})
        deployment.deployed("/farm")
        deployment.update(new)
        assert states(deployment) == {"/farm": "changed", "/farm/x": "deployed"}


def test_a_template_value_goes_to_its_property_pair(tmp_path: Path) -> None:
    """Outside the system, where no component is, an element with child
    elements counts as one: the template's x[2] is x once the leaf x goes."""
    texts = {
        "old": '<T><x>1</x><x><p cdl:lazy="true"/></x></T>',
        "new": '<T><x><p cdl:lazy="true"/></x></T>',
    }
    docs = {}
    for name, template in texts.items():
        path = tmp_path / f"{name}.cdl"
        path.write_text(
            f'<cdl:cdl xmlns:cdl="{CDL_NS}"><cdl:configuration>{template}</cdl:configuration>'
            "<cdl:system><farm><size>1</size></farm></cdl:system></cdl:cdl>\n"
        )
        docs[name] = cdl.load(path)
    with docs["old"].deploy() as deployment:
        deployment.supply({"T/x[2]/p": "5"})
        deployment.update(docs["new"])
        assert [dict(r.set) for r in deployment.rounds] == [{"T/x/p": "5"}]
        assert b"<p>5</p>" in deployment.resolution().to_bytes()
