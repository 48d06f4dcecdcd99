"""The specialisations against the general code: one oracle (issue 23).

Every fast path of the engine (docs/performance.md lists them) must decide
exactly what the general code decides. ``CDL_NO_FAST_PATHS=1`` switches them
all off (src/cdl/model/switch.py); these tests resolve each document both ways and
require the same observable result: output bytes (whole and system only),
the JSON view, errors (code, file, line, path, message), warnings, the
pending reports, the deployment plan and explanations.

The documents: every conformance case and sample as written (with its
rounds), mutations of them (tests/strategies.py) with drawn deploy-time
rounds, and the synthetic systems the benchmarks measure, at small sizes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from lxml import etree

import cdl
from cdl.conformance import Case, load_suite, run_case
from conftest import fast_paths
from strategies import CASES, Mutant, corpus, mutants
from synthetic import SHAPES, generate

#: How many mutants the property test draws (CI runs the default).
EXAMPLES = int(os.environ.get("CDL_DIFFERENTIAL_EXAMPLES", "150"))

#: Explanations asked per document, at most (each resolves again).
EXPLAINED = 6


def _error(error: cdl.CdlError) -> list[tuple[str, str | None, int | None, str | None, str]]:
    """Every error of ``error`` (a group has several) as plain data."""
    errors = error.errors if isinstance(error, cdl.CdlErrorGroup) else [error]
    return [(e.code, e.url, e.line, e.path, e.message) for e in errors]


def _attempt(what: str, observed: dict[str, Any], action: Any) -> Any:
    """Record ``action()``'s error under ``what``, or return its result."""
    try:
        return action()
    except cdl.CdlError as error:
        observed[what] = _error(error)
        return None


def _property_paths(resolution: cdl.Resolution) -> list[str]:
    """Paths of some properties of the resolved main document, to explain."""
    root = etree.fromstring(resolution.to_bytes())
    paths: list[str] = []
    for part in root:
        for lst in part:
            for el in lst.iter():
                if len(el) == 0 and isinstance(el.tag, str):
                    names = [a for a in reversed([el, *el.iterancestors()]) if a.getparent() is not None and a.getparent() is not root]
                    paths.append("/".join(_qname(a) for a in names if a is not part))
    # Spread over the document: the first, the last and some between.
    if len(paths) > EXPLAINED:
        step = len(paths) / EXPLAINED
        paths = [paths[int(i * step)] for i in range(EXPLAINED - 1)] + [paths[-1]]
    return paths


def _qname(el: etree._Element) -> str:
    qname = etree.QName(el)
    prefix = next((p for p, uri in el.nsmap.items() if uri == qname.namespace and p), None)
    return f"{prefix}:{qname.localname}" if prefix else qname.localname


def observe(main: Path, rounds: list[dict[str, Any]], fast: bool) -> dict[str, Any]:
    """Everything a user can see of resolving ``main`` with ``rounds``."""
    observed: dict[str, Any] = {}
    with fast_paths(fast):
        doc = _attempt("load", observed, lambda: cdl.load(main))
        if doc is None:
            return observed
        resolution = _attempt("resolve", observed, lambda: doc.resolve(rounds=rounds))
        if resolution is None:
            return observed
        observed["warnings"] = list(resolution.warnings)
        observed["pending"] = resolution.pending
        observed["system_pending"] = resolution.system_pending
        plan = _attempt("plan", observed, resolution.plan)
        if plan is not None:
            observed["plan"] = plan.to_data()
        observed["output"] = resolution.to_bytes()
        observed["system"] = resolution.to_bytes(system_only=True)
        observed["data"] = resolution.to_data()
        for path in _property_paths(resolution):
            observed[f"explain {path}"] = _attempt(
                f"explain error {path}", observed, lambda p=path: [e.to_data() for e in resolution.explain(p)]
            )
    return observed


def assert_same_both_ways(main: Path, rounds: list[dict[str, Any]]) -> None:
    fast, general = observe(main, rounds, True), observe(main, rounds, False)
    assert fast.keys() == general.keys()
    for key in fast:
        assert fast[key] == general[key], f"{key} differs with the fast paths off"


# ---------------------------------------------------------------------------
# The corpus as written


@pytest.mark.parametrize("seed", corpus(), ids=[s.name for s in corpus()])
def test_corpus_same_both_ways(seed: Any, tmp_path: Path) -> None:
    mutant = Mutant(seed.name, seed.main, dict(seed.files), [dict(r) for r in seed.rounds])
    assert_same_both_ways(mutant.write(tmp_path), mutant.rounds)


# ---------------------------------------------------------------------------
# The systems the benchmarks measure, small (with and without their values)


@pytest.mark.parametrize("shape", SHAPES)
def test_synthetic_same_both_ways(shape: str, tmp_path: Path) -> None:
    _, system = generate(40, tmp_path, shape)
    assert_same_both_ways(Path(system), [])
    # Then every deploy-time value supplied and every lazy reference released.
    pending = cdl.load(system).resolve().pending
    values = {p.path: f"value-{i}" for i, p in enumerate(pending) if p.kind == "lazy-property"}
    released = [p.path for p in pending if p.kind == "lazy-reference"]
    assert values or released
    assert_same_both_ways(Path(system), [{"set": values, "release": released}])


# ---------------------------------------------------------------------------
# The conformance suite with the general code only (tests/test_conformance.py
# runs it with the fast paths on)

SUITE = load_suite(CASES)


@pytest.mark.parametrize("case", SUITE, ids=[c.name for c in SUITE])
def test_conformance_case_without_fast_paths(case: Case) -> None:
    with fast_paths(False):
        result = run_case(case)
    assert result.outcome == "passed", f"{case.name} ({case.section}): {result.message}"


# ---------------------------------------------------------------------------
# Mutations, with drawn rounds


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(mutants(byte_ops=False, max_xml_ops=6))
def test_mutants_same_both_ways(tmp_path_factory: pytest.TempPathFactory, mutant: Mutant) -> None:
    directory = tmp_path_factory.mktemp("differential")
    assert_same_both_ways(mutant.write(directory), mutant.rounds)
