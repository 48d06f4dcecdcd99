"""An update's resolution of the new documents takes over the running
version's top level lists that are still in their static form
(``engine.phases.deployed_earlier``; issue 32, point 4: an update costs what
the change reaches): held to a fresh deployment of the new documents with
the values carried over (``test_deploy_update.carried_oracle``), to the
static resolution with the deployment's rounds (``assert_exact``) and to
the same events with the fast paths off, on random documents with lazy
values, deployed part way and updated along chains of random edits.
"""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cdl
from cdl.engine import deployment_state
from cdl.engine.phases import Taken
from test_deploy_exact import assert_exact
from test_deploy_update import carried_oracle, deploy_all, deploy_some
from test_diff import fast_paths
from test_list_reads import documents, write_files

from .inside import counted_attempts
from .test_taking_over import edit

EXAMPLES = int(os.environ.get("CDL_TAKEOVER_EXAMPLES", "60"))
CDL = "http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"


def _updated_along(mains: list[Path], order: int) -> list[Any]:
    """Deploy the first version that deploys part way (events drawn from
    ``order``), then update it to each next version in turn, deploying some
    more after each: what a user sees after each step (or the error code),
    each update checked against the oracles."""
    rng = random.Random(order)
    seen: list[Any] = []
    deployment: cdl.Deployment | None = None
    current: cdl.Document | None = None
    for main in mains:
        try:
            doc = cdl.load(str(main))
            doc.resolve()
            if deployment is None:
                deployment = doc.deploy()
        except cdl.CdlError as error:
            seen.append(error.code)
            continue
        if current is not None:
            try:
                expected: Any = carried_oracle(deployment.rounds, current, doc).to_bytes()
            except cdl.CdlError as error:
                expected = error.code
            try:
                deployment.update(doc)
            except cdl.CdlError as error:
                seen.append(("refused", error.code))
                continue
            assert deployment.resolution().to_bytes() == expected
            assert_exact(doc, deployment)
        current = doc
        deploy_some(deployment, [], rng)
        seen.append((deployment.status().to_data(), deployment.resolution().to_bytes()))
    return seen


def _deployable(seed: int, tmp: Path) -> dict[str, str]:
    """Random documents (``test_list_reads.documents``, on lines of their
    own) that deploy: the first of those drawn from ``seed`` on (most of
    them name a list with no such value)."""
    for number in range(seed, seed + 50):
        files = documents(random.Random(number), lines=True)
        try:
            cdl.load(str(write_files(files, tmp / "try"))).deploy()
        except cdl.CdlError:
            continue
        return files
    raise AssertionError(f"no documents drawn from {seed} on deploy")


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 1 << 30), st.lists(st.integers(0, 1 << 30), min_size=1, max_size=3), st.integers(0, 1 << 16))
def test_updates_taking_over_the_running_lists_are_exact(seed: int, edits: list[int], order: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        files = _deployable(seed, Path(tmp))
        mains = [write_files(files, Path(tmp) / "v0")]
        for step, number in enumerate(edits, 1):
            files = edit(random.Random(number), files)
            mains.append(write_files(files, Path(tmp) / f"v{step}"))
        taking = _updated_along(mains, order)
        with fast_paths(False):
            whole = _updated_along(mains, order)
    assert taking == whole


def _farm(n: int, port: int) -> str:
    """``n`` components over a few lines each, each reading the port of the
    one before it; every tenth has a lazy pid, the others nothing lazy."""
    lists = []
    for i in range(n):
        ref = f'<peer cdl:refroot="S{i - 1}" cdl:ref="/port"/>' if i else ""
        pid = '<pid cdl:lazy="true"/>' if i % 10 == 0 else ""
        lists.append(f'  <S{i} cdl:extends="T">\n    <port>{port if i == n // 2 else i}</port>{ref}{pid}\n  </S{i}>\n')
    return (
        f'<cdl:cdl xmlns:cdl="{CDL}">\n<cdl:configuration>\n  <T>\n    <host>h</host>\n  </T>\n'
        f"</cdl:configuration>\n<cdl:system>\n{''.join(lists)}</cdl:system>\n</cdl:cdl>\n"
    )


def test_an_update_resolves_what_the_change_reaches_and_what_was_given_values(tmp_path: Path) -> None:
    # S50's port is read by S51, which S52 reads, ...: those lists are
    # resolved again, and the ten with a pid (given a value: not in their
    # static form); the 45 others before S50 are taken over.
    # (A specialisation: counted with the fast paths on, whatever the environment says.)
    (tmp_path / "a.cdl").write_text(_farm(100, 7))
    (tmp_path / "b.cdl").write_text(_farm(100, 8))
    with fast_paths(True):
        old, new = cdl.load(str(tmp_path / "a.cdl")), cdl.load(str(tmp_path / "b.cdl"))
        deployment = old.deploy()
        deploy_all(deployment)
        expected = carried_oracle(deployment.rounds, old, new).to_bytes()
        with counted_attempts() as whole:
            new.deploy()
        with counted_attempts() as taking:
            deployment.update(new)
    assert deployment.resolution().to_bytes() == expected
    assert [c.path for c in deployment.status().components if c.state == "changed"] == ["/S50", "/S51"]
    assert taking[0] < whole[0] * 0.65


def test_a_refused_update_puts_back_what_it_took_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The new documents resolve, taking over the running lists, but do not
    # plan (simulated: a plan cycle): the update is refused, and the lists it
    # had moved out of the running trees are back; the deployment goes on as it was.
    (tmp_path / "a.cdl").write_text(_farm(100, 7))
    (tmp_path / "b.cdl").write_text(_farm(100, 8))
    real = deployment_state.build_plan_facts

    def no_plan(*args: Any) -> Any:
        raise cdl.CdlError("no plan", code="PLAN_CYCLE")

    with fast_paths(True):
        old, new = cdl.load(str(tmp_path / "a.cdl")), cdl.load(str(tmp_path / "b.cdl"))
        deployment = old.deploy()
        deploy_all(deployment)
        before = (deployment.status().to_data(), deployment.resolution().to_bytes())
        monkeypatch.setattr(deployment_state, "build_plan_facts", no_plan)
        with counted_attempts() as taking, pytest.raises(cdl.CdlError) as refused:
            deployment.update(new)
        monkeypatch.setattr(deployment_state, "build_plan_facts", real)
        assert refused.value.code == "PLAN_CYCLE" and 0 < taking[0]
        assert (deployment.status().to_data(), deployment.resolution().to_bytes()) == before
        expected = carried_oracle(deployment.rounds, old, new).to_bytes()
        deployment.update(new)
        assert deployment.resolution().to_bytes() == expected


@pytest.mark.parametrize("whole", [False, True], ids=["taking over", "taking over fails half way"])
def test_a_changed_component_deployed_with_another_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, whole: bool) -> None:
    # S50 changed, then deployed again with another pid: one update of the
    # same documents, whose values moved in S50 only. Every list that reads
    # S50 is compared, S51 to S59 among them, which that update takes over
    # from the running trees (they hold nothing lazy): the same lists in
    # both versions, equal, so nothing else changes. When taking over fails
    # half way (simulated: as when what it resolves finds an error a whole
    # resolution would not), the new version is resolved whole and every
    # list moved out of the running trees goes back before they are compared.
    (tmp_path / "a.cdl").write_text(_farm(100, 7))
    (tmp_path / "b.cdl").write_text(_farm(100, 8))
    real = Taken.resolve_prototypes

    def failing(self: Taken) -> None:
        raise cdl.CdlError("taking over failed", code="LIMIT_EXCEEDED")

    with fast_paths(True):
        new = cdl.load(str(tmp_path / "b.cdl"))
        deployment = cdl.load(str(tmp_path / "a.cdl")).deploy()
        deploy_all(deployment)
        deployment.update(new)
        assert [c.path for c in deployment.status().components if c.state == "changed"] == ["/S50", "/S51"]
        if whole:
            monkeypatch.setattr(Taken, "resolve_prototypes", failing)
        with counted_attempts() as again:
            deployment.deployed("/S50", {"S50/pid": "another"})
        monkeypatch.setattr(Taken, "resolve_prototypes", real)
        assert_exact(new, deployment)
        assert [c.path for c in deployment.status().components if c.state == "changed"] == ["/S51"]
        assert b"another" in deployment.resolution().to_bytes()
        assert 0 < again[0]
