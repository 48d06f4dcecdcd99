"""The composition of a diff (``Document.diff``, ``cdl diff``; issue 32).

Entry point: :func:`diff_loaded`. Both versions are resolved with the same
deploy-time rounds (``phases.resolve_working``) and their systems written as
output trees (``resolution.output.build_output``, taking the working trees
apart, as ``Resolution.to_bytes`` does); ``planning.diff.compare_systems``
finds the components whose configuration differs. Only when something
differs are the versions' documents compared as written
(``planning.changes.written_changes``, the causes), and only when there is
more than one written change is provenance asked, and only of what differs:
each version resolved again with a recorder (``resolution.explain``), the
elements that differ explained (``explain_elements``), and each value given
the written changes its explanations name (``planning.diff.build_diff``).
With a single written change every difference has it as its cause, which is
what the rule gives, so nothing is recorded (a specialisation: off with
``CDL_NO_FAST_PATHS``).
"""

from __future__ import annotations

from collections.abc import Sequence

from lxml import etree

from ..model.switch import fast_paths_enabled
from ..model.vocabulary import T_SYSTEM
from ..planning.changes import Place, written_changes
from ..planning.diff import Diff, IndexPath, Kept, build_diff, compare_systems, explanation_places
from ..resolution.explain import Recorder, explain_elements
from ..resolution.laziness import Round
from ..resolution.output import build_output
from ..resolution.references import items_in
from .phases import Loaded, cyclic_gc_paused, resolve_working


def diff_loaded(old: Loaded, new: Loaded, rounds: Sequence[Round], select: str | None = None) -> Diff:
    """What differs between the systems of ``old`` and ``new``, each resolved
    with ``rounds``, and why (``select``: only that component)."""
    warnings: dict[str, None] = {}
    kept = (_kept(old, rounds, warnings), _kept(new, rounds, warnings, keep=True))
    return diff_kept((old, new), (rounds, rounds), kept, list(warnings), select)


def diff_systems(
    versions: tuple[Loaded, Loaded],
    rounds: tuple[Sequence[Round], Sequence[Round]],
    systems: tuple[etree._Element | None, etree._Element | None],
) -> Diff:
    """What differs between two versions already resolved, each with its own
    ``rounds``: their systems as output trees (``build_output``'s cdl:system
    elements, None for a version without one), and why. A deployment's
    update (``engine.deployment``) compares its running version with the
    new one so."""
    limits = versions[1].options.limits
    kept = (Kept(systems[0], limits), Kept(systems[1], limits, keep=True))
    return diff_kept(versions, rounds, kept, [])


def diff_kept(
    versions: tuple[Loaded, Loaded],
    rounds: tuple[Sequence[Round], Sequence[Round]],
    kept: tuple[Kept, Kept],
    warnings: list[str],
    select: str | None = None,
) -> Diff:
    """The diff of two versions' systems kept as :class:`Kept`, each resolved with its ``rounds``."""
    old, new = versions
    fast = fast_paths_enabled()
    prefixes = (old.prefixes(), new.prefixes())
    with cyclic_gc_paused():
        comparison = compare_systems(kept, prefixes, fast, select, new.url)
    del kept  # the new version's trees: a recorded resolution (below) need not run beside them
    urls = (old.url, new.url)
    if not comparison.found:
        return Diff(*urls, (), (), warnings)
    changes = written_changes(old.docs, new.docs, prefixes, new.options.limits, fast)
    explainer = None if fast and len(changes) <= 1 else _Explainer((old, new), rounds)
    with cyclic_gc_paused():
        return build_diff(comparison, changes, explainer, urls, warnings)


def _kept(loaded: Loaded, rounds: Sequence[Round], warnings: dict[str, None], keep: bool = False) -> Kept:
    """``loaded`` resolved with ``rounds``, its system kept as serializations
    (with ``keep``, its trees too: the old version's are freed before the new
    one resolves, since resolving beside them cost up to a third more); its
    warnings added to ``warnings``."""
    ws, resolver, left = resolve_working(loaded, rounds)
    warnings.update(dict.fromkeys(resolver.warnings))
    with cyclic_gc_paused():
        out = build_output(ws, system_only=True, consume=True, unresolved=left, facts=loaded.output_facts)
        return Kept(out.find(T_SYSTEM), loaded.options.limits, keep)


class _Explainer:
    """The places on the explanations of elements of either version, each
    version resolved once more with a recorder, when first asked."""

    def __init__(self, versions: tuple[Loaded, Loaded], rounds: tuple[Sequence[Round], Sequence[Round]]) -> None:
        self.versions = versions
        self.rounds = rounds

    def __call__(self, side: int, paths: Sequence[IndexPath]) -> list[set[Place]]:
        if not paths:
            return []
        recorder = Recorder()
        ws, resolver, _ = resolve_working(self.versions[side], self.rounds[side], recorder)
        system = ws.roots[0].find(T_SYSTEM)
        assert system is not None  # something of it differs
        children: dict[etree._Element, list[etree._Element]] = {}
        elements = []
        for path in paths:
            el = system
            for position in path:
                family = children.get(el)
                if family is None:
                    family = children[el] = list(el)  # indexing an lxml element walks its children
                el = family[position]
            elements.append(el)
        explanations = explain_elements(
            ws, recorder, elements, lambda nodes: resolver.run(items_in(nodes)), resolver.is_pending, resolver.waits_on
        )
        return [explanation_places([e]) for e in explanations]
