"""Same-named siblings through every output (issue 30, points 1 and 7; issue
29, point 3): one path rule, ``[k]`` after a name that siblings share, in the
plan's text, JSON, DOT and Mermaid, a deployment's events and status,
``--set``/``--release``, ``--select``, ``explain`` and ``cdl pending`` (the
language server's lenses: tests/internals/test_lsp_navigate.py); each of two same-named components gets and reports
its own values, and is drawn once (docs/semantics.md, "Paths")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import cdl
from cdl.cli import main
from conftest import CDL_DECL

#: Two web servers of one name: the second reads the first's host (so it comes
# after it), and the balancer reads both hosts.
FARM = f"""<cdl:cdl {CDL_DECL}>
  <cdl:system>
    <apps>
      <web><host cdl:lazy="true"/><port>80</port></web>
      <web><host cdl:lazy="true"/><peer cdl:ref="../web/host"/></web>
    </apps>
    <lb><backends cdl:refroot="apps" cdl:ref="/web/host"/></lb>
  </cdl:system>
</cdl:cdl>
"""

W1, W2 = "/apps/web[1]", "/apps/web[2]"


@pytest.fixture
def farm() -> cdl.Document:
    return cdl.load(FARM.encode(), name="farm.cdl")


@pytest.fixture
def farm_file(tmp_path: Path) -> Path:
    path = tmp_path / "farm.cdl"
    path.write_text(FARM)
    return path


def run(*args: object) -> str:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_the_plan_names_each_sibling_in_text_and_json(farm: cdl.Document) -> None:
    plan = farm.resolve().plan()
    assert plan.to_text() == (
        "[1] /apps\n"
        "    [1] web[1]  supplies host\n"
        f"    [2] web[2]  after web[1]; supplies host; waits for {W1}/host\n"
        f"[2] /lb  after apps; waits for {W1}/host, {W2}/host\n"
    )
    [[apps], [lb]] = plan.to_data()["system"]
    first, second = (c for wave in apps["waves"] for c in wave)
    assert (first["path"], first["supplies"]) == (W1, [f"{W1}/host"])
    assert (second["path"], second["supplies"], second["after"], second["waits_for"]) == (W2, [f"{W2}/host"], [W1], [f"{W1}/host"])
    assert lb["waits_for"] == [f"{W1}/host", f"{W2}/host"]
    assert json.loads(plan.to_json()) == plan.to_data()
    # Every component has its own path.
    paths = [c.path for c in plan.components()]
    assert sorted(paths) == ["/apps", W1, W2, "/lb"]


def test_the_pictures_draw_each_sibling_once(farm: cdl.Document) -> None:
    plan = farm.resolve().plan()
    dot = plan.to_dot()
    assert len(re.findall(r"^\s*c\d+ \[label", dot, re.M)) == 3  # web[1], web[2], lb; apps is a cluster
    assert dot.count("subgraph cluster_") == 1
    assert '"web[1] (wave 1)\\nsupplies host"' in dot and '"web[2] (wave 2)\\nsupplies host\\nwaits for /apps/web[1]/host"' in dot
    mermaid = plan.to_mermaid()
    nodes = re.findall(r'^\s*(c\d+)\["', mermaid, re.M)
    assert len(nodes) == len(set(nodes)) == 3
    # A deployment's picture colours each sibling with its own state.
    deployment = farm.deploy()
    deployment.deployed(W1, {"apps/web[1]/host": "a"})
    coloured = deployment.status().to_dot()
    fills = dict(re.findall(r'label="(web\[\d\]) \(wave \d\)[^"]*".*fillcolor="(#[0-9a-f]+)"', coloured))
    assert fills == {"web[1]": "#b9e6b0", "web[2]": "#fff1a8"}  # deployed, ready
    assert len(re.findall(r"^\s*(c\d+)\[", deployment.status().to_mermaid(), re.M)) == 3


def test_each_sibling_gets_and_reports_its_own_values(farm: cdl.Document) -> None:
    deployment = farm.deploy()
    assert deployment.ready() == [W1]
    waiting = deployment.status(W2).components[0]
    assert (waiting.state, waiting.supplies, waiting.after) == ("waiting", (f"{W2}/host",), (W1,))
    assert waiting.waits_for == ((f"{W1}/host", W1),)
    assert deployment.status("/apps").components[0].children == (W1, W2)
    # The first's value is its own: the second's host stays lazy.
    assert deployment.deployed(W1, {"apps/web[1]/host": "a"}) == [W2]
    assert deployment.status(W2).components[0].state == "ready"
    assert deployment.failed(W2, "boom") == ["/apps", "/lb"]
    assert deployment.status("/lb").components[0].upstream == ((W2, "boom"),)
    assert deployment.retry("apps/web[2]") == [W2]
    assert deployment.deployed("apps/web[2]", {"apps/web[2]/host": "b"}) == ["/apps", "/lb"]
    hosts = [deployment.configuration(path)["system"]["apps"]["web"]["host"] for path in (W1, W2)]
    assert hosts == ["a", "b"]
    assert deployment.configuration("/lb")["system"]["lb"]["backends"] == ["a", "b"]
    assert deployment.resolution().to_bytes() == farm.resolve(rounds=deployment.rounds).to_bytes()
    assert [c.path for c in deployment.status().components] == ["/apps", W1, W2, "/lb"]


def test_a_component_path_without_its_rank_names_none(farm: cdl.Document) -> None:
    deployment = farm.deploy()
    with pytest.raises(cdl.CdlError) as caught:
        deployment.status("/apps/web")
    assert caught.value.code == "COMPONENT_NOT_FOUND"
    assert "did you mean /apps/web[" in caught.value.message
    # [1] also names a component that has no same-named sibling.
    assert deployment.status("/lb[1]").components == deployment.status("/lb").components


def test_set_release_select_explain_and_pending_take_and_write_ranks(farm_file: Path) -> None:
    pending = run("pending", farm_file)
    assert f"{W1}/host" in pending and f"{W2}/host" in pending
    # One of the two, by --set: the other stays lazy.
    selected = run("resolve", farm_file, "--system-only", "--set", "apps/web[2]/host=b", "--select", "apps/web[2]/host", "--select", "apps/web[1]/host", "--format", "json")
    hosts = json.loads(selected)["system"]["apps"]["web"]
    assert hosts == [{"host": {"@cdl:lazy": "true"}}, {"host": "b"}]
    explained = json.loads(run("explain", farm_file, "apps/web[2]/host", "--set", "apps/web[2]/host=b", "--format", "json"))
    assert [(e["path"], e["value"], e["steps"][-1]["kind"]) for e in explained] == [(f"{W2}/host", "b", "supplied")]
    everything = json.loads(run("explain", farm_file, "apps/web/host", "--format", "json"))
    assert [e["path"] for e in everything] == [f"{W1}/host", f"{W2}/host"]


def test_the_cli_deploys_one_sibling_by_its_path(farm_file: Path, tmp_path: Path) -> None:
    journal = tmp_path / "farm.journal"
    fresh = f"warning: {journal}: no such journal yet: nothing is recorded (the first event begins it)\n"  # on stderr, mixed in here
    assert run("deploy", "ready", farm_file, "--journal", journal) == f"{fresh}{W1}\n"
    assert run("deploy", "done", farm_file, "apps/web[1]", "--journal", journal, "--set", "apps/web[1]/host=a") == f"{W2}\n"
    status = json.loads(run("deploy", "status", farm_file, "--journal", journal, "--format", "json"))
    assert [(c["path"], c["state"]) for c in status["components"]] == [("/apps", "waiting"), (W1, "deployed"), (W2, "ready"), ("/lb", "waiting")]
    assert status["components"][3]["waits_for"] == [{"value": f"{W2}/host", "supplier": W2}]


#: Same-named properties inside one component, and a lazy reference in each
# of two same-named components: each property's own path, in every field.
HOSTS = f"""<cdl:cdl {CDL_DECL}>
  <cdl:system>
    <apps>
      <web><host cdl:lazy="true"/><host cdl:lazy="true"/><db cdl:lazy="true" cdl:refroot="store" cdl:ref="url"/></web>
      <web><host cdl:lazy="true"/><db cdl:lazy="true" cdl:refroot="store" cdl:ref="url"/></web>
    </apps>
    <store><url>db1</url></store>
    <lb><backends cdl:refroot="apps" cdl:ref="/web/host"/></lb>
  </cdl:system>
</cdl:cdl>
"""


def test_same_named_properties_and_releases_each_have_their_own_path(tmp_path: Path) -> None:
    doc = cdl.load(HOSTS.encode(), name="hosts.cdl")
    assert doc.resolve().plan().to_text() == (
        "[1] /apps\n"
        "    [1] web[1]  supplies host[1], host[2]; releases db\n"
        "    [1] web[2]  supplies host; releases db\n"
        "[1] /store\n"
        f"[2] /lb  after apps; waits for {W1}/host[1], {W1}/host[2], {W2}/host\n"
    )
    deployment = doc.deploy()
    first = deployment.status(W1).components[0]
    assert (first.supplies, first.releases) == ((f"{W1}/host[1]", f"{W1}/host[2]"), (f"{W1}/db",))
    lb = deployment.status("/lb").components[0]
    assert lb.waits_for == ((f"{W1}/host[1]", W1), (f"{W1}/host[2]", W1), (f"{W2}/host", W2))
    # Each of the first's two hosts is its own value; the second web's release is its own.
    file, journal = tmp_path / "hosts.cdl", tmp_path / "hosts.journal"
    file.write_text(HOSTS)
    run("deploy", "done", file, "apps/web[1]", "--journal", journal, "--set", "apps/web[1]/host[1]=a", "--set", "apps/web[1]/host[2]=b", "--release", "apps/web[1]/db")
    assert run("deploy", "done", file, "apps/web[2]", "--journal", journal, "--set", "apps/web[2]/host=c", "--release", "apps/web[2]/db") == "/apps\n/lb\n"
    with cdl.load(file).deploy(journal=journal, read_only=True) as replayed:
        webs = [replayed.configuration(path)["system"]["apps"]["web"] for path in (W1, W2)]
        assert webs == [{"host": ["a", "b"], "db": "db1"}, {"host": "c", "db": "db1"}]
        assert replayed.configuration("/lb")["system"]["lb"]["backends"] == ["a", "b", "c"]


def test_plans_are_made_by_resolutions_not_by_callers(farm: cdl.Document) -> None:
    """No private type in a public signature (issue 29, point 4): the classes
    refuse to be called, with a TypeError saying where one comes from."""
    with pytest.raises(TypeError, match="Resolution.plan"):
        cdl.Plan()
    with pytest.raises(TypeError, match="Plan.components"):
        cdl.PlannedComponent(object(), 1)
    plan = farm.resolve().plan()
    assert [c.path for wave in plan.waves for c in wave] == ["/apps", "/lb"]
