"""The one composition of the phases: loading (1-3) and resolution (4-6).

Entry points: :func:`load_loaded` (a :class:`Loaded` document set: read and
normalize documents, ``loading.imports`` -> ``loading.parse``; name lists,
``loading.registry``; what the output and the required check can know
beforehand, ``resolution.output.prepare_output`` and
``resolution.laziness.required_tags``) and :func:`resolve_working` (copy the
documents, then prototypes, ``resolution.inherit``; references and
expressions, ``resolution.references``; deploy-time rounds and the required
check, ``resolution.laziness``), which runs :data:`RESOLUTION_PHASES` in
order; :func:`copy_working` copies a live deployment's working trees,
:func:`copy_main` its main tree for an output (an update's comparison), and
:func:`deployed_earlier` hands its lists still in their static form to the
resolution of its next version (an update), :func:`restore_lists` putting
back those it did not keep.
The public classes built on them (``Document``, ``Resolution``,
``Deployment``) are in this package's other modules.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import os
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from lxml import etree

from ..errors import CdlError
from ..loading.imports import LoadOptions, load_set
from ..loading.registry import Registry, build_registry
from ..model.elements import top_level_of
from ..model.naming import Prefixes, list_name
from ..model.reads import ListReads, reaching
from ..model.scan import release
from ..model.switch import fast_paths_enabled
from ..model.tables import Tables
from ..model.vocabulary import T_CONFIGURATION, T_SYSTEM
from ..model.workspace import Budget, Context, Problems, SourceDoc, Workspace
from ..planning.changes import lists_in_place
from ..resolution.explain import Recorder
from ..resolution.inherit import extended_names, resolve_prototypes
from ..resolution.laziness import Round, apply_round, check_required, left_unresolved, required_tags
from ..resolution.output import OutputFacts, prepare_output
from ..resolution.references import ReferenceResolver, candidates_in, copied_resolver, find_candidates, record_left_reads

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
        roots = [copy.deepcopy(d.root) for d in self.docs]
        return Workspace(self.context(), roots, self.lists_in(roots), Budget(self.options.limits), item_tags=set(self.tables.item_tags))

    def context(self) -> Context:
        """What the phases of one resolution of these documents consult."""
        return Context(self.docs, self.tables, self.prefixes(), self.options.limits, fast_paths_enabled())

    def lists_in(self, roots: Sequence[etree._Element]) -> dict[str, etree._Element]:
        """The top level lists of working trees of these documents (``roots``), by name."""
        # Children as Python lists: indexing an lxml element walks its children.
        parents = [[list(p) for p in d.list_parents(root)] for d, root in zip(self.docs, roots)]
        return {name: parents[s.doc][s.parent][s.position] for name, s in self.registry.slots.items()}

    def list_as_loaded(self, name: str) -> etree._Element:
        """The top level list ``name`` as loaded (never to be changed)."""
        slot = self.registry.slots[name]
        return self.docs[slot.doc].list_parents()[slot.parent][slot.position]


@dataclass(frozen=True, eq=False)
class Earlier:
    """A resolution of an earlier version of some documents, without
    deploy-time values, whose lists a resolution of the next version may
    take over (:func:`resolve_working`'s ``earlier``): its loaded documents
    and its working trees, which recorded what each list read
    (``Workspace.reads``). The resolution that takes them over takes the
    trees apart (the Loaded is never changed).

    ``changed``: the names of lists that are not in their static form (a
    running deployment's, :func:`deployed_earlier`), never taken over.
    ``live``: the trees go on living (a running deployment's): the lists
    taken over are moved into new trees, each leaving an empty element of
    its name in its place, and the others stay where they are.
    ``planned``: a plan of the trees was made and found no error (or of the
    lists that could have one, :meth:`Taken.plan_within`)."""

    loaded: Loaded
    working: Working
    changed: frozenset[str] = frozenset()
    live: bool = False
    planned: bool = False


def deployed_earlier(
    loaded: Loaded, working: Working, changed: Iterable[etree._Element], read: Mapping[str, set[str]]
) -> Earlier | None:
    """What a resolution of the next version of a running deployment's
    documents (``loaded``, resolved and given deploy-time values in
    ``working``) may take over: its lists, moved out of its trees (``live``),
    but those of ``changed`` (every list that held a pending item when the
    deployment opened, or was given a value or a release since). Every other
    list is as a static resolution made it: deploy-time rounds change only
    what was pending (``resolution.laziness.apply_round``).

    The running trees go on living (an update compares the lists it does not
    take over with the next version's; :func:`restore_lists` puts back those
    it did when the update is refused). The resolver handed on knows nothing:
    the lists that may be taken over hold no pending item and, with no
    warnings, no template's gap, which is all a resolver hands on
    (``copied_resolver``). ``read``: what each list of the trees read
    (``ListReads.by_name``). None when the trees did not record what each
    list reads or the resolver warned."""
    ws, resolver, _ = working
    if ws.reads is None or resolver.warnings:
        return None
    names = {el: name for name, el in ws.lists.items()}
    moved = frozenset(name for el in changed if (top := top_level_of(el)) is not None and (name := names.get(top)) is not None)
    reads = ListReads()
    reads.carry(read, ws.lists)
    trees = Workspace(
        ws.ctx, ws.roots, dict(ws.lists), copy.copy(ws.budget), variables=dict(ws.variables), item_tags=set(ws.item_tags)
    )
    trees.reads = reads
    return Earlier(loaded, (trees, ReferenceResolver(trees), []), moved, live=True)


def list_places(ws: Workspace) -> list[tuple[etree._Element, list[etree._Element]]]:
    """Each list parent of ``ws``'s trees with its lists: where to put them back (:func:`restore_lists`)."""
    return [(part, list(part)) for root in ws.roots for part in root.iterchildren(*LIST_TAGS)]


def restore_lists(places: Sequence[tuple[etree._Element, list[etree._Element]]], taken: Container[etree._Element]) -> None:
    """Put each list of ``places`` (:func:`list_places`) that a resolution
    taking over from live trees moved out of them but did not keep
    (``taken``: the lists it did) back in its place."""
    for part, lists in places:
        for now, was in zip(list(part), lists):
            if now is not was and was not in taken:
                part.replace(now, was)


def _shell(root: etree._Element) -> etree._Element:
    """A copy of the document ``root`` whose list parents hold no list yet."""
    copied = etree.Element(root.tag, dict(root.attrib), nsmap=root.nsmap)
    copied.text = root.text
    for part in root:
        if part.tag in LIST_TAGS:
            shell = etree.SubElement(copied, part.tag, dict(part.attrib), nsmap=part.nsmap)
            shell.text, shell.tail = part.text, part.tail
        else:
            copied.append(copy.deepcopy(part))
    return copied


def take_over(earlier: Earlier, loaded: Loaded, rounds: Sequence[Round], recorder: Recorder | None) -> Taken | None:
    """What a resolution of ``loaded`` takes over from ``earlier``, or None:
    nothing, it resolves everything.

    It takes over only without deploy-time rounds or provenance, with the
    fast paths on, from a resolution that recorded what each list read and
    warned of nothing, when both versions load as many documents, importing
    each other alike, with the same options (wherever they are) into tables
    that agree (``Tables.extends``). Then it takes each top level list
    written where it was (``planning.changes.lists_in_place``) that reads,
    by the earlier version's records, no list that is not
    (``model.reads.reaching``), and nothing when a document writes something
    else differently outside its lists."""
    before = earlier.loaded
    ws, resolver, _ = earlier.working
    if rounds or recorder is not None or ws.reads is None or resolver.warnings:
        return None
    if not (loaded.options.fast_paths and fast_paths_enabled()) or _imports(before) != _imports(loaded):
        return None
    if dataclasses.replace(before.options, overlay={}) != dataclasses.replace(loaded.options, overlay={}):
        return None
    if not loaded.tables.extends(before.tables):
        return None
    kept: set[str] = set()
    for old, new in zip(before.docs, loaded.docs):
        in_place = lists_in_place(old, new)
        if in_place is None:
            return None
        kept |= in_place
    names = set(before.registry.slots) | set(loaded.registry.slots)
    read = ws.reads.by_name(ws.lists)
    kept -= reaching(names - kept, [read])
    # A list not in its static form is resolved again; what reads it read
    # its static form, which the same text resolves to again.
    kept -= earlier.changed
    return Taken(earlier, loaded, kept, read)


def _imports(loaded: Loaded) -> list[tuple[object, ...]]:
    """How the documents import each other (where each was imported, what each imports)."""
    return [(d.importer, tuple(d.loaded_imports)) for d in loaded.docs]


class Taken:
    """The top level lists a resolution takes over from an earlier one
    (:func:`take_over`), and the workspace they make with the others,
    copied from the loaded documents, which it resolves: that earlier
    resolution's trees, each list not taken over replaced by its copy."""

    def __init__(self, earlier: Earlier, loaded: Loaded, kept: set[str], read: Mapping[str, set[str]]) -> None:
        before, self._resolver, left = earlier.working
        self.loaded = loaded
        #: The lists taken over, by name.
        self.kept = {name: before.lists[name] for name in kept}
        self._kept = set(self.kept.values())
        #: The lists copied to be resolved, by name, in the trees.
        self.fresh: dict[str, etree._Element] = {}
        roots = [_shell(root) for root in before.roots] if earlier.live else before.roots
        for doc, root, earlier_root in zip(loaded.docs, roots, before.roots):
            for as_loaded, parent, earlier_parent in zip(doc.list_parents(), doc.list_parents(root), doc.list_parents(earlier_root)):
                if earlier.live:
                    self._move(as_loaded, parent, earlier_parent, doc.target_ns)
                else:
                    self._place(as_loaded, parent, doc.target_ns)
        self.ws = Workspace(
            loaded.context(),
            roots,
            loaded.lists_in(roots),
            copy.copy(before.budget),  # what the lists taken over charged: never less than a whole resolution would
            variables=before.variables,
            item_tags=set(loaded.tables.item_tags) | before.item_tags,
        )
        self.ws.reads = ListReads()
        self.ws.reads.carry(read, kept)
        self._left = [el for el in left if top_level_of(el) in self._kept]
        self._main_fresh: list[etree._Element] | None = None
        self._planned = earlier.planned

    def __repr__(self) -> str:
        return f"<Taken {len(self.kept)} lists, resolving {len(self.fresh)}>"

    def _place(self, as_loaded: etree._Element, parent: etree._Element, target_ns: str) -> None:
        """Give the list parent ``parent`` of the earlier trees the lists of
        ``as_loaded`` (the same parent, loaded): each taken over, or a copy."""
        lists = [self._taken_or_copied(lst, target_ns) for lst in as_loaded]
        current = list(parent)
        if len(current) == len(lists) and all(a is b for a, b in zip(current, lists) if b in self._kept):
            for a, b in zip(current, lists):
                if a is not b:
                    parent.replace(a, b)
        else:
            parent[:] = lists

    def _move(self, as_loaded: etree._Element, parent: etree._Element, earlier_parent: etree._Element, target_ns: str) -> None:
        """Give the new list parent ``parent`` the lists of ``as_loaded`` (the
        same parent, loaded): each taken over, moved out of ``earlier_parent``
        (an empty element of its name left in its place), or a copy."""
        for lst in as_loaded:
            found = self._taken_or_copied(lst, target_ns)
            if found in self._kept:
                held = found.getparent()
                assert held is earlier_parent  # a list taken over is written where it was
                held.replace(found, etree.Element(found.tag))
            parent.append(found)

    def _taken_or_copied(self, lst: etree._Element, target_ns: str) -> etree._Element:
        """The list taken over for ``lst`` (a list as loaded), or a copy of ``lst`` to resolve."""
        name = list_name(lst, target_ns)
        found = self.kept.get(name)
        if found is None:
            found = self.fresh[name] = copy.deepcopy(lst)
        return found

    def resolve_prototypes(self) -> None:
        """Phase 4 for the lists copied: their prototypes merged as a whole
        resolution merges them, from the prototypes as loaded (a list taken
        over is resolved; its references resolve in its own context, where an
        inheritor's resolve in the inheritor's). A prototype taken over is
        copied again, apart from the trees, for the merges."""
        ws = self.ws
        fresh = list(self.fresh.values())
        apart: dict[str, etree._Element] = {}
        merging = set(fresh)
        stack = list(fresh)
        while stack:
            for name in extended_names(ws, stack.pop()):
                target = ws.lookup(name)
                if target is None or target in merging:
                    continue
                found = next(c for c in name.candidates if ws.lists.get(c) is target)
                apart[found] = ws.lists[found] = self._copy_apart(found)
                merging.add(apart[found])
                stack.append(apart[found])
        try:
            resolve_prototypes(ws, [*fresh, *apart.values()])
        finally:
            ws.lists.update((name, self.kept[name]) for name in apart)

    def _copy_apart(self, name: str) -> etree._Element:
        """A copy of list ``name`` as loaded, in a document of its own that has
        its document's root and list parent (where it is, it sees what it would
        see in the trees)."""
        slot = self.loaded.registry.slots[name]
        doc = self.loaded.docs[slot.doc]
        root = etree.Element(doc.root.tag, dict(doc.root.attrib), nsmap=doc.root.nsmap)
        parent = etree.SubElement(root, doc.list_parents()[slot.parent].tag)
        lst = copy.deepcopy(self.loaded.list_as_loaded(name))
        parent.append(lst)
        return lst

    def main_fresh(self) -> list[etree._Element]:
        """The lists copied of the main document, in document order."""
        if self._main_fresh is None:
            fresh = set(self.fresh.values())
            self._main_fresh = [lst for lst in self._main_lists() if lst in fresh]
        return self._main_fresh

    def _main_lists(self) -> list[etree._Element]:
        """The top level lists of the main document, in document order."""
        return [lst for part in self.ws.roots[0].iterchildren(*LIST_TAGS) for lst in part]

    def resolver(self) -> ReferenceResolver:
        """A resolver for the workspace that knows what the earlier one knew
        of the lists taken over (their pending items, what they wait for)."""
        kept = self._kept
        return copied_resolver(self._resolver, self.ws, lambda el: el if top_level_of(el) in kept else None)

    def plan_within(self) -> frozenset[etree._Element] | None:
        """The top level lists of the main document a plan of the trees can
        find an error among: those copied, when the earlier trees' plan
        found none (None: any list). A plan's errors are a cycle of waits
        or a wait for an ancestor's value (``planning.plan``). A list taken
        over reads only lists taken over: what its items wait for, in which
        components, is what it was, and no wait leads from such a list to a
        list copied. So a cycle among the lists passes through lists copied
        only, and a wait within one list is one of those copied."""
        return frozenset(self.main_fresh()) if self._planned else None

    def left_with(self, left: list[etree._Element]) -> list[etree._Element]:
        """The items left unresolved in the main document: those of the lists
        taken over and ``left`` (those of the lists copied), in document order."""
        if not self._left:
            return left
        order = {lst: i for i, lst in enumerate(self._main_lists())}

        def position(item: etree._Element) -> int:
            top = top_level_of(item)
            assert top is not None  # an item left is in a list of the main document
            return order[top]

        # Stable: the items of one list come from one of the two, in order.
        return sorted([*self._left, *left], key=position)


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
    #: An earlier resolution whose lists this one may take over.
    earlier: Earlier | None = None
    #: What was taken over from it (None: nothing, everything is resolved).
    taken: Taken | None = field(default=None, init=False)


def _copy_documents(run: Run) -> None:
    run.taken = None if run.earlier is None else take_over(run.earlier, run.loaded, run.rounds, run.recorder)
    run.ws = run.loaded.workspace() if run.taken is None else run.taken.ws
    run.ws.recorder = run.recorder
    if run.reads and run.ws.reads is None:
        run.ws.reads = ListReads()


def _prototypes(run: Run) -> None:
    if run.taken is None:
        resolve_prototypes(run.ws)
    else:
        run.taken.resolve_prototypes()


def _find_items(run: Run) -> None:
    # Every item, among other elements of their names: the resolver tells
    # them apart as it goes (find_candidates).
    if run.taken is None:
        run.items = find_candidates(run.ws, run.ws.roots[0].iterchildren(*LIST_TAGS))
    else:
        run.items = candidates_in(run.ws, run.taken.main_fresh())


def _references(run: Run) -> None:
    run.resolver = ReferenceResolver(run.ws) if run.taken is None else run.taken.resolver()
    run.resolver.run(run.items, candidates=True)


def _deploy_time_rounds(run: Run) -> None:
    for number, step in enumerate(run.rounds, 1):
        if run.recorder is not None:
            run.recorder.round = number
        apply_round(run.ws, run.resolver, step)


def _required(run: Run) -> None:
    fresh = None if run.taken is None else run.taken.main_fresh()
    check_required(run.ws, run.resolver, run.loaded.required_tags, fresh)


def _left_unresolved(run: Run) -> None:
    run.left = left_unresolved(run.resolver, run.items)
    record_left_reads(run.ws, run.left)
    if run.taken is not None:
        run.ws.plan_within = run.taken.plan_within()
        run.left = run.taken.left_with(run.left)
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


def resolve_working(
    loaded: Loaded, rounds: Sequence[Round], recorder: Recorder | None = None, reads: bool = False, earlier: Earlier | None = None
) -> Working:
    """Run the resolution phases on fresh copies of the ``loaded`` documents: the resolved
    workspace, its resolver and the main document's items left unresolved,
    in document order. With a ``recorder``, the phases record provenance
    (``Resolution.explain``); with ``reads``, what each top level list
    reads of the others (``Workspace.reads``, ``model.reads``).

    With ``earlier``, a resolution of an earlier version of the documents,
    each top level list that is written as it was there and reads no list
    that is not is taken over from it, resolved, instead of being copied
    and resolved again (:func:`take_over`, which says when it does; off
    with ``CDL_NO_FAST_PATHS``): the result is the same (what a list's
    resolution makes of it depends on its text and on what the lists it
    reads make of theirs: ``model.reads``). ``earlier``'s trees are taken
    apart. Should the rest raise an error, the documents are resolved
    again whole, so that the errors are those of a whole resolution.

    Only the few items left are kept: holding all of them until an output
    took the trees cost a collection over their proxies once the collector
    was back on."""
    run = Run(loaded, rounds, recorder, reads, earlier=earlier)
    with cyclic_gc_paused():
        try:
            for _, phase in RESOLUTION_PHASES:
                phase(run)
        except CdlError:
            if run.taken is None:
                raise
            return resolve_working(loaded, rounds, recorder, reads)
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
        return copied, copied_resolver(resolver, copied, twin.__getitem__), [twin[el] for el in left]


def copy_main(working: Working, lists: Callable[[etree._Element], bool] | None = None) -> tuple[Workspace, list[etree._Element]]:
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
    source: str | os.PathLike[str] | bytes,
    options: LoadOptions,
    name: str | None = None,
    base: str | os.PathLike[str] | None = None,
    continuing: Loaded | None = None,
    output: bool = True,
) -> Loaded:
    """Load a document set (``cdl.load``, with the options built): phases 1-3 and
    what the output and the required check can know beforehand.

    ``continuing``: the load of an earlier version of the documents, whose
    tables this one appends to (``Tables.continued``; with the fast paths):
    what both versions write alike then has the same entries, so a
    resolution of this version may take over the lists of one of that
    version wherever they are written alike (:func:`take_over`), not only
    where they come before the first new entry.

    ``output``: whether to prepare the known path of the output
    (``prepare_output``, with the load's switch). Without, an output of
    this Document takes the general path, which writes the same: a Document
    never output (``cdl lsp``'s analyses) need not pay for it."""
    tables = None
    if continuing is not None and options.fast_paths and fast_paths_enabled():
        tables = continuing.tables.continued()
    with cyclic_gc_paused():
        docs, tables = load_set(source, options, name, base, tables)
    problems = Problems(options.limits.max_errors)
    declared = [d.declared for d in docs]
    registry = build_registry(docs, Prefixes(declared, docs[0].nsmap.get(None)), problems)
    problems.raise_if_any()
    # The last step of loading, with the load's switch: the output's known
    # path writes the types in their output form into the loaded trees now,
    # so that copies carry it; the Document never changes afterwards.
    facts = prepare_output(docs, declared, options.fast_paths) if output else None
    required = required_tags(docs) if options.fast_paths else None
    return Loaded(docs, tables, registry, options, facts, required)
