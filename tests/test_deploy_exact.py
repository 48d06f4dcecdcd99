"""Exactness of deployment sessions (issue 24, acceptance): at every point of
a deployment, ``deployment.resolution()`` equals ``doc.resolve(rounds=deployment.rounds)``,
byte for byte, and its ready components are what the plan made again now says.

Checked on the samples driven to the end in several orders, on every
conformance case with rounds (its rounds replayed as ``supply`` events), and
with hypothesis over mutated documents (tests/strategies.py) and random
events, refused ones included.
"""

from __future__ import annotations

import os
import random
import re
import tempfile
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import cdl
from cdl.conformance import Case, load_suite
from strategies import CASES, Mutant, Seed, corpus, mutants
from synthetic import generate

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted(ROOT.glob("samples/*/system.cdl"))

#: How many mutants the property test draws.
EXAMPLES = int(os.environ.get("CDL_DEPLOY_EXAMPLES", "120"))


def assert_exact(doc: cdl.Document, deployment: cdl.Deployment) -> None:
    """The deployment's resolution is the static one with its rounds, and its
    ready components are those the plan made again now has ready."""
    live = deployment.resolution()
    static = doc.resolve(rounds=deployment.rounds)
    assert live.to_bytes() == static.to_bytes()
    assert live.to_bytes(system_only=True) == static.to_bytes(system_only=True)
    assert [(p.path, p.kind, p.waits_on) for p in live.pending] == [(p.path, p.kind, p.waits_on) for p in static.pending]
    assert live.warnings == static.warnings
    try:
        planned = static.plan().to_json()
    except cdl.CdlError as error:  # a cycle the values made: the copy finds it too
        with pytest.raises(cdl.CdlError) as again:
            live.plan()
        assert again.value.code == error.code
    else:
        assert live.plan().to_json() == planned
    expected = ready_again(deployment, static.plan())
    if expected is not None:
        assert deployment.ready() == expected


def ready_again(deployment: cdl.Deployment, plan: cdl.Plan) -> list[str] | None:
    """The oracle: the components that are neither deployed, failed nor
    blocked, whose child components are deployed, and that in ``plan`` (made
    again now) wait for no lazy value and come after no sibling that is not
    deployed. The plan names each component as the deployment does, unless
    a released reference copied in elements named like a component before
    it: the deployment keeps naming its components as when it opened
    (docs/semantics.md), the plan made again counts the copies too. Then
    the names do not tell which is which, and the oracle says None."""
    components = deployment.status().components
    states = {c.path: c.state for c in components}
    now = {c.path: c for c in plan.components()}
    ours, theirs = _by_name(c.path for c in components if c.state not in ("removing", "removed")), _by_name(now)
    if any(theirs.get(name) != paths for name, paths in ours.items()):
        return None

    def deployed(path: str) -> bool:
        return states.get(path, "deployed") == "deployed"

    ready = []
    for comp in components:
        if comp.state in ("deployed", "failed", "blocked", "removing", "removed"):
            continue
        again = now[comp.path]
        # Elements a released reference copied in after the deployment opened
        # are no components of it (docs/semantics.md): they count as deployed.
        children = [c.path for wave in again.waves for c in wave]
        if all(map(deployed, children)) and not again.waits_for and all(map(deployed, again.after)):
            ready.append(comp.path)
    return ready


def _by_name(paths: Iterable[str]) -> dict[str, set[str]]:
    """The components' paths by their path written without ``[k]``."""
    found: dict[str, set[str]] = {}
    for path in paths:
        found.setdefault(re.sub(r"\[\d+\]", "", path), set()).add(path)
    return found


def values_for(deployment: cdl.Deployment, path: str) -> tuple[dict[str, str], list[str]]:
    """What a service reports when ``path`` is deployed: a value for each lazy
    property it supplies, and its lazy references released."""
    comp = deployment.status(path).components[0]
    return {p: f"v{i}:{p}" for i, p in enumerate(comp.supplies)}, list(comp.releases)


def drive(doc: cdl.Document, rng: random.Random) -> cdl.Deployment:
    """Deploy every component as it becomes ready, in a random order among the
    ready ones, checking exactness after each event."""
    deployment = doc.deploy()
    assert_exact(doc, deployment)
    while ready := deployment.ready():
        path = rng.choice(ready)
        values, release = values_for(deployment, path)
        deployment.deployed(path, values, release)
        assert_exact(doc, deployment)
    return deployment


@pytest.mark.parametrize("main", SAMPLES, ids=lambda p: p.parent.name)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_samples_every_order(main: Path, seed: int) -> None:
    doc = cdl.load(main)
    deployment = drive(doc, random.Random(seed))
    assert {c.state for c in deployment.status().components} == {"deployed"}


def cases_with_rounds() -> list[Case]:
    return [case for case in load_suite(CASES) if case.rounds and case.problem is None]


@pytest.mark.parametrize("case", cases_with_rounds(), ids=lambda c: c.name)
def test_conformance_rounds_as_events(case: Case) -> None:
    """Each round of the case is one supply event: the deployment ends where
    the case's resolution does, or refuses the round the case fails on, with
    its code, and stays as it was."""
    try:
        doc = cdl.load(case.main_path)
        deployment = doc.deploy()
    except cdl.CdlError as error:
        assert case.error is not None, error
        return
    for n, step in enumerate(case.rounds):
        before = deployment.rounds
        try:
            deployment.supply(dict(step.set), list(step.release))
        except cdl.CdlError as error:
            assert error.code == case.error
            assert deployment.rounds == before
            assert_exact(doc, deployment)
            with pytest.raises(cdl.CdlError) as static:
                doc.resolve(rounds=[r.as_dict() for r in case.rounds[: n + 1]])
            assert static.value.code == error.code
            return
        assert_exact(doc, deployment)
    assert case.error is None
    if case.expect is not None:
        expected = doc.resolve(rounds=[r.as_dict() for r in case.rounds])
        assert deployment.resolution().to_bytes() == expected.to_bytes()


@st.composite
def events(draw: st.DrawFn) -> list[tuple[str, int, int]]:
    """Abstract events: (kind, pick, subset); each is made concrete against
    the deployment's state when it is applied (see :func:`apply`)."""
    kinds = st.sampled_from(["deployed", "deployed", "deployed", "partial", "supply", "round", "failed", "retry", "bogus"])
    return draw(st.lists(st.tuples(kinds, st.integers(0, 1 << 16), st.integers(0, 1 << 16)), max_size=30))


def apply(deployment: cdl.Deployment, kind: str, pick: int, subset: int, round_paths: list[str], rounds: list[dict[str, Any]]) -> None:
    """One concrete event (refused ones included) made from an abstract one."""
    comps = [c.path for c in deployment.status().components]
    ready = deployment.ready()
    failed = [c.path for c in deployment.status().components if c.state == "failed"]
    if kind in ("deployed", "partial") and ready:
        path = ready[pick % len(ready)]
        values, release = values_for(deployment, path)
        if kind == "partial":  # some values only, or one made to conflict later
            values = {p: v for i, (p, v) in enumerate(values.items()) if subset >> i & 1}
        deployment.deployed(path, values, release)
    elif kind == "supply" and round_paths:
        path = round_paths[pick % len(round_paths)]
        deployment.supply({path: f"s{subset % 3}"})
    elif kind == "round" and rounds:  # one of the document's own rounds, whole
        step = rounds[pick % len(rounds)]
        deployment.supply(step.get("set", {}), step.get("release", []))
    elif kind == "failed" and ready:
        deployment.failed(ready[pick % len(ready)], f"reason {subset}")
    elif kind == "retry" and failed:
        deployment.retry(failed[pick % len(failed)])
    elif kind == "bogus" and comps:  # a component that may not be ready
        deployment.deployed(comps[pick % len(comps)])


def unmutated(seed: Seed) -> Mutant:
    return Mutant(seed.name, seed.main, dict(seed.files), [dict(r) for r in seed.rounds])


@cache
def deployable() -> list[Seed]:
    """The seeds of the corpus that open a deployment with components or rounds."""
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, seed in enumerate(corpus()):
            try:
                deployment = cdl.load(unmutated(seed).write(Path(tmp) / str(n))).deploy()
            except cdl.CdlError:
                continue
            if seed.rounds or deployment.status().components:
                found.append(seed)
    return found


#: The corpus as written half of the time (seeds that deploy), mutated otherwise.
DOCUMENTS = st.one_of(st.deferred(lambda: st.sampled_from(deployable())).map(unmutated), mutants(byte_ops=False, max_xml_ops=4))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(DOCUMENTS, events())
def test_random_documents_and_events(tmp_path_factory: pytest.TempPathFactory, mutant: Mutant, drawn: list[tuple[str, int, int]]) -> None:
    directory = tmp_path_factory.mktemp("deploy")
    try:
        doc = cdl.load(mutant.write(directory))
        deployment = doc.deploy()
    except cdl.CdlError:
        assume(False)
        return
    round_paths = [p for r in mutant.rounds for p in r.get("set", {})]
    round_paths += [c.supplies[0] for c in deployment.plan.components() if c.supplies]
    assert_exact(doc, deployment)
    for kind, pick, subset in drawn:
        before = (deployment.rounds, deployment.status().to_data(), deployment.resolution().to_bytes())
        try:
            apply(deployment, kind, pick, subset, round_paths, mutant.rounds)
        except cdl.CdlError:
            # A refusal changes nothing.
            assert (deployment.rounds, deployment.status().to_data(), deployment.resolution().to_bytes()) == before
        assert_exact(doc, deployment)


@pytest.mark.parametrize("shape", ["base", "wide", "fanin"])
def test_synthetic_systems(tmp_path: Path, shape: str) -> None:
    """The benchmarks' systems, small: what no component supplies first, then
    every component as it becomes ready; exact at every tenth event and at the end."""
    doc = cdl.load(generate(25, tmp_path, shape)[1])
    deployment = doc.deploy()
    outside = {v: "given" for c in deployment.status().components for v, supplier in c.waits_for if supplier is None}
    queue = deployment.ready() + deployment.supply(outside)
    assert_exact(doc, deployment)
    for n, path in enumerate(queue):  # grows as components become ready
        values, release = values_for(deployment, path)
        queue.extend(deployment.deployed(path, values, release))
        if n % 10 == 0:
            assert_exact(doc, deployment)
    assert_exact(doc, deployment)
    assert {c.state for c in deployment.status().components} == {"deployed"}
