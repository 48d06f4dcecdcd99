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

from collections.abc import Callable, Sequence

from lxml import etree

from ..model.naming import list_name
from ..model.reads import reaching
from ..model.switch import fast_paths_enabled
from ..model.vocabulary import T_SYSTEM
from ..planning.changes import Place, WrittenChange, changed_lists, written_changes
from ..planning.diff import Diff, IndexPath, Kept, build_diff, compare_systems, explanation_places
from ..resolution.explain import Recorder, explain_elements
from ..resolution.laziness import Round
from ..resolution.output import build_output
from ..resolution.references import items_in
from .phases import Earlier, Loaded, copy_main, cyclic_gc_paused, resolve_working


def diff_loaded(old: Loaded, new: Loaded, rounds: Sequence[Round], select: str | None = None) -> Diff:
    """What differs between the systems of ``old`` and ``new``, each resolved
    with ``rounds``, and why (``select``: only that component)."""
    warnings: dict[str, None] = {}
    changes: list[WrittenChange] | None = None
    changed: set[str] | None = None
    if fast_paths_enabled() and select is None:
        # Known first, so that only the lists they reach are compared (a
        # specialisation: CDL_NO_FAST_PATHS compares every list).
        changes = written_changes(old.docs, new.docs, (old.prefixes(), new.prefixes()), new.options.limits)
        changed = changed_names((old, new), changes)
    kept_old, reached, earlier = _kept(old, rounds, warnings, changed, hand_over=True)
    kept_new, _, _ = _kept(new, rounds, warnings, changed, reached, keep=True, earlier=earlier)
    return diff_kept((old, new), (rounds, rounds), (kept_old, kept_new), list(warnings), select, changes)


def changed_names(versions: tuple[Loaded, Loaded], changes: Sequence[WrittenChange]) -> set[str] | None:
    """The names of the top level lists written differently in the two
    versions (``changed_lists``), or None when something may change what every
    list means: a change written outside the lists, or other namespace
    declarations (the prefixes every output and path is written with)."""
    old, new = versions
    naming = [
        ([list(d.declared.items()) for d in loaded.docs], loaded.docs[0].nsmap.get(None), loaded.docs[0].target_ns)
        for loaded in versions
    ]
    if naming[0] != naming[1] or len(old.docs) != len(new.docs):
        return None
    return changed_lists(changes)


def compared_lists(loaded: Loaded, reached: set[str] | None) -> Callable[[etree._Element], bool] | None:
    """Which top level lists of ``loaded``'s resolved system a comparison
    must look at: those ``reached`` names (``model.reads.reaching``: the
    lists written differently and those that read one); the others are
    equal by construction. None (every list) when ``reached`` is None."""
    if reached is None:
        return None
    target_ns = loaded.docs[0].target_ns
    return lambda top: list_name(top, target_ns) in reached


def diff_systems(
    versions: tuple[Loaded, Loaded],
    rounds: tuple[Sequence[Round], Sequence[Round]],
    systems: tuple[etree._Element | None, etree._Element | None],
    compared: Callable[[etree._Element], bool] | None = None,
    changes: Sequence[WrittenChange] | None = None,
) -> Diff:
    """What differs between two versions already resolved, each with its own
    ``rounds``: their systems as output trees (``build_output``'s cdl:system
    elements, None for a version without one), and why. A deployment's
    update (``engine.deployment``) compares its running version with the
    new one so; ``compared`` (:func:`compared_lists`): the lists to look at,
    the others equal by construction; ``changes``: the versions'
    ``written_changes``, when known."""
    limits = versions[1].options.limits
    kept = (Kept(systems[0], limits, compared=compared), Kept(systems[1], limits, keep=True, compared=compared))
    return diff_kept(versions, rounds, kept, [], changes=changes)


def diff_kept(
    versions: tuple[Loaded, Loaded],
    rounds: tuple[Sequence[Round], Sequence[Round]],
    kept: tuple[Kept, Kept],
    warnings: list[str],
    select: str | None = None,
    changes: Sequence[WrittenChange] | None = None,
) -> Diff:
    """The diff of two versions' systems kept as :class:`Kept`, each resolved
    with its ``rounds`` (``changes``: their ``written_changes``, when known)."""
    old, new = versions
    fast = fast_paths_enabled()
    prefixes = (old.prefixes(), new.prefixes())
    with cyclic_gc_paused():
        comparison = compare_systems(kept, prefixes, fast, select, new.url)
    del kept  # the new version's trees: a recorded resolution (below) need not run beside them
    urls = (old.url, new.url)
    if not comparison.found:
        return Diff(*urls, (), (), warnings)
    if changes is None:
        changes = written_changes(old.docs, new.docs, prefixes, new.options.limits, fast)
    explainer = None if fast and len(changes) <= 1 else _Explainer((old, new), rounds)
    with cyclic_gc_paused():
        return build_diff(comparison, changes, explainer, urls, warnings)


def _kept(
    loaded: Loaded,
    rounds: Sequence[Round],
    warnings: dict[str, None],
    changed: set[str] | None,
    reached: set[str] | None = None,
    keep: bool = False,
    earlier: Earlier | None = None,
    hand_over: bool = False,
) -> tuple[Kept, set[str] | None, Earlier | None]:
    """``loaded`` resolved with ``rounds``, its system kept as serializations
    (with ``keep``, its trees too: the old version's are freed before the new
    one resolves, since resolving beside them cost up to a third more), only
    of the lists ``reached`` (None: every list); its warnings added to
    ``warnings``. With ``changed`` and no ``reached``, what each list reads
    is recorded, and the lists reached are those ``changed`` and those that
    read one (``model.reads.reaching``), which it returns.

    With ``hand_over`` (the old version), and what each list reads recorded
    without rounds, the trees are handed on whole, for the new version's
    resolution to take over what the changes do not reach (``earlier``:
    ``phases.resolve_working``); the lists compared are copied for the
    output instead.

    One version's reads decide for both: a list whose text is the same in
    both, and reads none of the lists written differently, reads the same
    in both (what a list reads is named by its text and by what the lists
    it reads name), so the other version's reads reach no other list of it."""
    working = resolve_working(loaded, rounds, reads=changed is not None and reached is None, earlier=earlier)
    ws, resolver, left = working
    warnings.update(dict.fromkeys(resolver.warnings))
    if ws.reads is not None and changed is not None:
        reached = reaching(changed, [ws.reads.by_name(ws.lists)])
    handed = None
    with cyclic_gc_paused():
        if hand_over and ws.reads is not None and not rounds:
            handed = Earlier(loaded, working)
            ws, left = copy_main(working, compared_lists(loaded, reached))
        # Else written out whole: a consuming output of every list costs less
        # than copying those compared for an output of them (callgrind at 2,000).
        out = build_output(ws, system_only=True, consume=True, unresolved=left, facts=loaded.output_facts)
        return Kept(out.find(T_SYSTEM), loaded.options.limits, keep, compared_lists(loaded, reached)), reached, handed


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
