"""The one composition of the phases: loading (1-3) and resolution (4-6).

Entry points: :func:`load_loaded` (a :class:`Loaded` document set: read and
normalize documents, ``loading.imports`` -> ``loading.parse``; name lists,
``loading.registry``; what the output and the required check can know
beforehand, ``resolution.output.prepare_output`` and
``resolution.laziness.required_tags``) and :func:`resolve_working` (copy the
documents, then prototypes, ``resolution.inherit``; references and
expressions, ``resolution.references``; deploy-time rounds and the required
check, ``resolution.laziness``), which runs :data:`RESOLUTION_PHASES` in
order; :func:`copy_working` copies a live deployment's working trees, and
:func:`copy_main` its main tree for an output (an update's comparison).
The public classes built on them (``Document``, ``Resolution``,
``Deployment``) are in this package's other modules.
"""

from __future__ import annotations

import copy
import gc
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from lxml import etree

from ..loading.imports import LoadOptions, load_set
from ..loading.registry import Registry, build_registry
from ..model.naming import Prefixes
from ..model.reads import ListReads
from ..model.scan import release
from ..model.switch import fast_paths_enabled
from ..model.tables import Tables
from ..model.vocabulary import T_CONFIGURATION, T_SYSTEM
from ..model.workspace import Budget, Context, Problems, SourceDoc, Workspace
from ..resolution.explain import Recorder
from ..resolution.inherit import resolve_prototypes
from ..resolution.laziness import Round, apply_round, check_required, left_unresolved, required_tags
from ..resolution.output import OutputFacts, prepare_output
from ..resolution.references import ReferenceResolver, copied_resolver, find_candidates, record_left_reads

#: Resolved working trees: the workspace, its resolver, and the main
#: document's items left unresolved, in document order.
Working = tuple[Workspace, ReferenceResolver, list[etree._Element]]

#: The parts of the documents that hold top level lists.
LIST_TAGS = (T_CONFIGURATION, T_SYSTEM)


@dataclass(frozen=True, eq=False)
class Loaded:
    """A loaded document set: the documents (the main one first), their
    parsed values, the registry of top level lists and the options they were
    loaded with, and what the output's known path and the required check by
    tags know of them beforehand (None: unknown, the general paths run).
    Never modified."""

    docs: list[SourceDoc]
    tables: Tables
    registry: Registry
    options: LoadOptions
    output_facts: OutputFacts | None = None
    required_tags: frozenset[str] | None = None

    @property
    def url(self) -> str:
        """The main document's path or URL, as given."""
        return self.docs[0].url

    def prefixes(self) -> Prefixes:
        """The prefixes output and messages write names with (the main document's first)."""
        return Prefixes([d.declared for d in self.docs], self.docs[0].nsmap.get(None))

    def workspace(self) -> Workspace:
        """Fresh working copies of the documents, for one resolution."""
        ctx = Context(self.docs, self.tables, self.prefixes(), self.options.limits, fast_paths_enabled())
        roots = [copy.deepcopy(d.root) for d in self.docs]
        # Children as Python lists: indexing an lxml element walks its children.
        parents = [[list(p) for p in d.list_parents(root)] for d, root in zip(self.docs, roots)]
        lists = {name: parents[s.doc][s.parent][s.position] for name, s in self.registry.slots.items()}
        return Workspace(ctx, roots, lists, Budget(self.options.limits), item_tags=set(self.tables.item_tags))


@dataclass
class Run:
    """One resolution as the phases hand it on (see :data:`RESOLUTION_PHASES`)."""

    loaded: Loaded
    rounds: Sequence[Round]
    recorder: Recorder | None = None
    #: Whether to record what each top level list reads (``model.reads``).
    reads: bool = False
    ws: Workspace = field(init=False)
    resolver: ReferenceResolver = field(init=False)
    #: Every item, among other elements of their names (find_candidates).
    items: list[etree._Element] = field(init=False)
    #: The main document's items left unresolved, in document order.
    left: list[etree._Element] = field(init=False)


def _copy_documents(run: Run) -> None:
    run.ws = run.loaded.workspace()
    run.ws.recorder = run.recorder
    if run.reads:
        run.ws.reads = ListReads()


def _prototypes(run: Run) -> None:
    resolve_prototypes(run.ws)


def _find_items(run: Run) -> None:
    # Every item, among other elements of their names: the resolver tells
    # them apart as it goes (find_candidates).
    run.items = find_candidates(run.ws, run.ws.roots[0].iterchildren(*LIST_TAGS))


def _references(run: Run) -> None:
    run.resolver = ReferenceResolver(run.ws)
    run.resolver.run(run.items, candidates=True)


def _deploy_time_rounds(run: Run) -> None:
    for number, step in enumerate(run.rounds, 1):
        if run.recorder is not None:
            run.recorder.round = number
        apply_round(run.ws, run.resolver, step)


def _required(run: Run) -> None:
    check_required(run.ws, run.resolver, run.loaded.required_tags)


def _left_unresolved(run: Run) -> None:
    run.left = left_unresolved(run.resolver, run.items)
    record_left_reads(run.ws, run.left)
    # Freed here, while the collector is paused: nothing resolves these
    # trees again (explain resolves its own).
    release(run.items)
    run.resolver.forget_targets()


#: The phases of one resolution, in order, with what each does: the one
#: composition, which :func:`resolve_working` runs and benchmarks/phases.py times.
RESOLUTION_PHASES: tuple[tuple[str, Callable[[Run], None]], ...] = (
    ("copy the documents", _copy_documents),
    ("prototypes (cdl:extends)", _prototypes),
    ("find items", _find_items),
    ("references and expressions", _references),
    ("deploy-time rounds", _deploy_time_rounds),
    ("required check", _required),
    ("what is left unresolved", _left_unresolved),
)


def resolve_working(loaded: Loaded, rounds: Sequence[Round], recorder: Recorder | None = None, reads: bool = False) -> Working:
    """Run the resolution phases on fresh copies of the ``loaded`` documents: the resolved
    workspace, its resolver and the main document's items left unresolved,
    in document order. With a ``recorder``, the phases record provenance
    (``Resolution.explain``); with ``reads``, what each top level list
    reads of the others (``Workspace.reads``, ``model.reads``).

    Only the few items left are kept: holding all of them until an output
    took the trees cost a collection over their proxies once the collector
    was back on."""
    run = Run(loaded, rounds, recorder, reads)
    with cyclic_gc_paused():
        for _, phase in RESOLUTION_PHASES:
            phase(run)
    return run.ws, run.resolver, run.left


def copy_working(working: Working) -> Working:
    """Copies of a deployment's working trees (``engine.deployment``), which
    go on living: what resolving again would give, made by copying the trees.

    Every element of the trees is paired with its copy (one walk of both),
    so that the resolver's states, the lists and the items left carry over.
    """
    ws, resolver, left = working
    with cyclic_gc_paused():
        roots = [copy.deepcopy(root) for root in ws.roots]
        twin: dict[etree._Element, etree._Element] = {}
        for old, new in zip(ws.roots, roots):
            twin.update(zip(old.iter(), new.iter()))
        copied = Workspace(
            ws.ctx,
            roots,
            {name: twin[el] for name, el in ws.lists.items()},
            copy.copy(ws.budget),
            variables=dict(ws.variables),
            item_tags=set(ws.item_tags),
        )
        return copied, copied_resolver(resolver, copied, twin), [twin[el] for el in left]


def copy_main(
    working: Working, lists: Callable[[etree._Element], bool] | None = None
) -> tuple[Workspace, list[etree._Element]]:
    """A copy of the main document's working tree, with the copies of its
    items left unresolved: what a consuming output (``build_output``'s
    ``consume``) may take apart while the working trees go on living (a
    deployment's new version, compared with the running one). With
    ``lists``, only the system and those of its lists ``lists`` accepts are
    copied; each other list is an empty element of its name, which holds its
    place for a comparison that leaves it out (``planning.diff.Kept``).

    The tree is copied in C; each item is found in the copy by its positions
    on the way down from the root or its list (each family listed once, in
    each tree): what it costs besides the copy is the items' ancestors, not the tree.
    """
    ws, _, left = working
    root = ws.roots[0]
    if lists is None:
        copied = copy.deepcopy(root)
        tops = {root: copied}
    else:
        copied = etree.Element(root.tag, dict(root.attrib), nsmap=root.nsmap)
        tops = {}
        for part in root.iterchildren(T_SYSTEM):
            shell = etree.SubElement(copied, part.tag, dict(part.attrib))
            for lst in part:
                if lists(lst):
                    tops[lst] = twin = copy.deepcopy(lst)
                else:
                    twin = etree.Element(lst.tag)
                shell.append(twin)
    families: dict[etree._Element, dict[etree._Element, int]] = {}
    copied_families: dict[etree._Element, list[etree._Element]] = {}
    items = []
    for item in left:
        steps = []
        el, parent = item, item.getparent()
        while el not in tops and parent is not None:
            family = families.get(parent)
            if family is None:
                family = families[parent] = {child: i for i, child in enumerate(parent)}
            steps.append(family[el])
            el, parent = parent, parent.getparent()
        found = tops.get(el)
        if found is None:
            continue  # outside the lists copied
        for position in reversed(steps):
            children = copied_families.get(found)
            if children is None:
                children = copied_families[found] = list(found)
            found = children[position]
        items.append(found)
    workspace = Workspace(ws.ctx, [copied], ws.lists, copy.copy(ws.budget), variables=ws.variables, item_tags=ws.item_tags)
    return workspace, items


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Run a phase without Python's cyclic garbage collector.

    Loading and resolving keep millions of element proxies and index entries
    alive until the phase ends, and they form no cycles. Each full collection
    walks all of them, and collections come more often the more objects
    there are, so with the collector on, time grew faster than the system
    (docs/performance.md).
    Reference counting still frees everything as usual; the collector is
    switched back on (if it was on) when the phase ends, even on error.

    What the phase leaves alive goes straight to the oldest generation, where
    the young collections that follow each phase would have moved it
    (``gc.freeze()`` then ``gc.unfreeze()``: two list splices). Those
    collections would walk every survivor and find nothing to free. The
    young objects from before the phase
    are collected first, as the collector would have done, so only what the
    phase made skips the young collections; a full collection still walks
    (and frees) all of it. Skipped when the caller froze objects of its own,
    which ``unfreeze`` would release.
    """
    enabled = gc.isenabled()
    promote = enabled and gc.get_freeze_count() == 0
    if promote:
        gc.collect(1)
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if promote and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def load_loaded(
    source: str | os.PathLike[str] | bytes, options: LoadOptions, name: str | None = None, base: str | os.PathLike[str] | None = None
) -> Loaded:
    """Load a document set (``cdl.load``, with the options built): phases 1-3 and
    what the output and the required check can know beforehand."""
    with cyclic_gc_paused():
        docs, tables = load_set(source, options, name, base)
    problems = Problems(options.limits.max_errors)
    declared = [d.declared for d in docs]
    registry = build_registry(docs, Prefixes(declared, docs[0].nsmap.get(None)), problems)
    problems.raise_if_any()
    # The last step of loading, with the load's switch: the output's known
    # path writes the types in their output form into the loaded trees now,
    # so that copies carry it; the Document never changes afterwards.
    facts = prepare_output(docs, declared, options.fast_paths)
    required = required_tags(docs) if options.fast_paths else None
    return Loaded(docs, tables, registry, options, facts, required)
