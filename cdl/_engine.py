"""The one place where the phases are composed.

load:    read + normalize documents (``_imports`` -> ``_load``), name lists
         (``_names``), what the output and the required check can know
         beforehand (``_serialize.prepare_output``, ``_laziness.required_tags``)
resolve: copy the documents, then prototypes (``_inherit``), references and
         expressions (``_references``), deploy-time rounds and the required
         check (``_laziness``); output by ``_serialize``.
deploy:  ``Document.deploy`` (``_deploy``) keeps one resolution's working trees
         alive and applies each event's round to them; ``live_resolution``
         copies them into a Resolution.
"""

from __future__ import annotations

import copy
import gc
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lxml import etree

from ._explain import Explanation, Recorder, explain, path_namespaces, prune
from ._explain import select as select_paths
from ._files import write_atomically
from ._imports import LoadOptions, Resolver, load_set
from ._inherit import resolve_prototypes
from ._laziness import (
    Pending,
    PendingItem,
    Round,
    apply_round,
    check_required,
    left_unresolved,
    pending_items,
    pending_report,
    required_tags,
)
from ._limits import Budget, Limits
from ._model import (
    T_CONFIGURATION,
    T_SYSTEM,
    T_TYPES,
    XSD_NS,
    Context,
    NameRef,
    Problems,
    SourceDoc,
    Tables,
    Workspace,
)
from ._names import Registry, build_registry
from ._naming import Prefixes, counted
from ._plan import Plan, build_plan
from ._references import ReferenceResolver, copied_resolver, find_candidates, items_in
from ._serialize import Data, OutputFacts, build_output, prepare_output, to_bytes, to_data
from ._switch import fast_paths_enabled
from .errors import CdlError, CdlErrorGroup, DeployValueError

if TYPE_CHECKING:
    from ._deploy import Deployment

RoundLike = Round | Mapping[str, Any]


class Document:
    """A loaded CDL document with everything it imports. Never modified.

    Create it with :func:`cdl.load`. Each :meth:`resolve` works on fresh
    copies, so one Document can be resolved many times with different
    deploy-time values.
    """

    def __init__(
        self,
        docs: list[SourceDoc],
        tables: Tables,
        registry: Registry,
        options: LoadOptions,
        output_facts: OutputFacts | None = None,
        required: frozenset[str] | None = None,
    ) -> None:
        self._docs = docs
        self._tables = tables
        self._registry = registry
        self._options = options
        self._prefixes_seed = [d.declared for d in docs]
        #: What the output's known path and the required check by tags need
        #: to know of the loaded trees, found by :func:`load` (None: unknown,
        #: the general paths run).
        self._output_facts = output_facts
        self._required_tags = required

    @property
    def url(self) -> str:
        """The main document's path or URL, as given."""
        return self._docs[0].url

    @property
    def urls(self) -> tuple[str, ...]:
        """Every loaded document, the main one first, then imports in load order."""
        return tuple(d.url for d in self._docs)

    def __repr__(self) -> str:
        n = len(self._docs)
        return f"<cdl.Document {self.url!r} ({counted(n, 'document')})>"

    def reads(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` is one of the files this document was loaded from."""
        try:
            real = os.path.realpath(path)
        except (OSError, ValueError):
            return False
        return any(d.file is not None and d.file == real for d in self._docs)

    @property
    def schemas(self) -> list[etree._Element]:
        """The xsd:schema elements found in the documents' cdl:types."""
        found: list[etree._Element] = []
        for doc in self._docs:
            for types in doc.root.iterchildren(T_TYPES):
                found.extend(types.iterchildren(f"{{{XSD_NS}}}schema"))
        return found

    def resolve(
        self,
        values: Mapping[str, str] | None = None,
        *,
        release: Sequence[str] = (),
        rounds: Iterable[RoundLike] = (),
        validate: bool = False,
    ) -> Resolution:
        """Resolve the documents; optionally supply deploy-time values.

        ``values`` (``{"LIST/child": "value"}``) and ``release`` (paths of lazy
        references to release) form one round applied after static
        resolution; ``rounds`` gives several, applied in order. Paths use the
        main document's prefixes. With ``validate``, every resolved value with
        a ``cdl:type`` is checked against its type (warnings for types that
        cannot be found are in ``Resolution.warnings``). Raises
        :class:`cdl.CdlError`.
        """
        steps = [_round(r) for r in rounds]
        if values or release:
            steps.append(Round(dict(values or {}), tuple(release)))
        return Resolution(self, steps, validate)

    def deploy(self, journal: str | os.PathLike[str] | None = None) -> Deployment:
        """Start (or, with an existing ``journal``, resume) a deployment of the
        system: a live :class:`cdl.Deployment` of its plan's components.

        With ``journal`` (a file path), every event is appended to it and
        made durable before the call returns, and opening it again resumes.
        Raises :class:`cdl.CdlError` as :meth:`resolve` and :meth:`Resolution.plan` do.
        """
        from ._deploy import Deployment

        return Deployment(self, journal)

    # -- used by Resolution -------------------------------------------------------

    def _workspace(self) -> Workspace:
        prefixes = Prefixes(self._prefixes_seed, self._docs[0].nsmap.get(None))
        ctx = Context(self._docs, self._tables, prefixes, self._options.limits, fast_paths_enabled())
        roots = [copy.deepcopy(d.root) for d in self._docs]
        # Children as Python lists: indexing an lxml element walks its children.
        parents = [[list(p) for p in d.list_parents(root)] for d, root in zip(self._docs, roots)]
        lists = {name: parents[s.doc][s.parent][s.position] for name, s in self._registry.slots.items()}
        return Workspace(ctx, roots, lists, Budget(self._options.limits), item_tags=set(self._tables.item_tags))


class Resolution:
    """The result of resolving a :class:`Document`, possibly with deploy-time values."""

    def __init__(self, document: Document, rounds: list[Round], validate: bool = False) -> None:
        self._begin(document, rounds, validate, _resolved(document, rounds))

    def _begin(
        self,
        document: Document,
        rounds: Sequence[Round],
        validate: bool,
        resolved: tuple[Workspace, ReferenceResolver, list[etree._Element]],
    ) -> None:
        """Start from working trees ``resolved`` with ``rounds`` (by
        :func:`_resolved`, or a deployment's copies: :func:`live_resolution`)."""
        self.document = document
        self.rounds: tuple[Round, ...] = tuple(rounds)
        self.validate = validate
        #: As ``file:line: message``: references templates leave unresolved
        #: (7.6), then (with validate) types that could not be checked.
        self.warnings: list[str] = []
        ws, resolver, left = resolved
        self.warnings = list(resolver.warnings)
        self._ws: Workspace | None = ws
        #: The items of these working trees still unresolved, in document
        #: order: what the pending report looks at and what the output
        #: writes back.
        self._left: list[etree._Element] | None = left
        self._resolver: ReferenceResolver | None = resolver
        #: The pending report: everything, and what the system's deployment waits for.
        self._pending: tuple[list[Pending], list[Pending]] | None = None
        #: What the report needs, taken before an output takes the trees apart:
        #: the prefixes, everything pending, and what the system waits for
        #: (None: the same, the document having no cdl:system).
        self._pending_items: tuple[Prefixes, list[PendingItem], list[PendingItem] | None] | None = None
        self._plan: Plan | None = None
        #: Output trees built by taking the working trees apart (by system_only).
        self._outputs: dict[bool, etree._Element] = {}
        if validate:
            errors, type_warnings = self.check_types()
            self.warnings += type_warnings
            if errors:
                raise errors[0] if len(errors) == 1 else CdlErrorGroup(errors)

    def __repr__(self) -> str:
        n = len(self.rounds)
        rounds = f"{counted(n, 'round')}, " if n else ""
        left = len(self.pending)
        return f"<cdl.Resolution {self.document.url!r} ({rounds}{left or 'nothing'} pending)>"

    def check_types(self) -> tuple[list[CdlError], list[str]]:
        """Check each value that has a cdl:type: (errors, warnings), all of them."""
        from .validate import check_types

        ws = self._working()
        ctx = ws.ctx

        def origin(el: etree._Element) -> tuple[str | None, int | None]:
            where = ctx.where(el)
            return where.url, where.line

        root = build_output(ws, keep_origins=True)
        errors, warnings = check_types(root, self.document.schemas, origin, ctx.prefixes.path_of)
        return list(errors), warnings

    @property
    def pending(self) -> list[Pending]:
        """What is still unresolved, waiting for deploy-time values, in document order.

        Everything in the main document: its cdl:configuration (templates) and
        its cdl:system. See :attr:`system_pending` for what a deployment waits for.
        """
        self._report_pending()
        assert self._pending is not None
        return list(self._pending[0])

    @property
    def system_pending(self) -> list[Pending]:
        """What the deployment of the main document's cdl:system waits for.

        The system's pending items and the template items they wait on, in
        document order; :attr:`pending` when the document has no cdl:system
        (a template library).
        """
        self._report_pending()
        assert self._pending is not None
        return list(self._pending[1])

    def plan(self) -> Plan:
        """The deployment plan of the system: its components in waves (see :class:`cdl.Plan`).

        Computed once per Resolution from what is still pending, so values
        already supplied create no dependency. Raises :class:`cdl.CdlError`
        (``PLAN_CYCLE``, ``PLAN_ANCESTOR_WAIT``) when no order exists.
        """
        if self._plan is None:
            ws = self._working()
            assert self._resolver is not None
            with _cyclic_gc_paused():
                self._plan = build_plan(ws, self._resolver)
        return self._plan

    def supply(self, values: Mapping[str, str] | None = None, release: Sequence[str] = ()) -> Resolution:
        """A new Resolution with one more round of deploy-time values (this one is unchanged).

        It resolves the document and every round again. A deployment service
        that supplies values as components come up uses :meth:`Document.deploy`,
        whose events cost what they touch.
        """
        return Resolution(self.document, [*self.rounds, Round(dict(values or {}), tuple(release))], self.validate)

    def tree(self, system_only: bool = False, select: Sequence[str] = ()) -> etree._Element:
        """The resolved ``cdl:cdl`` document as a new lxml tree.

        ``select`` (paths as for :meth:`explain`) keeps only the properties
        they select, with the elements above them.
        """
        return copy.deepcopy(self._selected(system_only, select))

    def to_bytes(self, system_only: bool = False, pretty: bool = True, select: Sequence[str] = ()) -> bytes:
        """The resolved document as UTF-8 XML (``select``: as for :meth:`tree`)."""
        return to_bytes(self._selected(system_only, select), pretty)

    def to_data(self, system_only: bool = False, select: Sequence[str] = ()) -> dict[str, Data]:
        """The resolved lists as plain Python data (dicts, lists, strings), in
        xmltodict's convention: attributes as ``"@name"`` keys, ``"#text"``,
        ``""`` for an empty value (README.md, "JSON output"; ``select``: as
        for :meth:`tree`)."""
        return to_data(self._selected(system_only, select))

    # -- provenance and selection (issue 15) ------------------------------------------

    def explain(self, path: str) -> list[Explanation]:
        """Why each property ``path`` selects is what it is: one :class:`cdl.Explanation` each.

        ``path`` is written as ``pending`` writes paths (``LIST/child``, the
        main document's prefixes, a leading ``/`` optional) and may select
        several properties. The same document and rounds are resolved again
        with provenance recorded, so this costs about one and a half resolutions. Raises
        :class:`cdl.CdlError` (``SELECT_NOT_FOUND`` with the nearest paths when
        the path selects nothing).
        """
        recorder = Recorder()
        ws, resolver, _ = _resolved(self.document, self.rounds, recorder)
        return explain(
            ws,
            recorder,
            path,
            lambda nodes: resolver.run(items_in(nodes)),
            resolver.is_pending,
            resolver.waits_on,
        )

    def _selected(self, system_only: bool, select: Sequence[str]) -> etree._Element:
        """The output tree, cut down to what ``select``'s paths select when there are some."""
        out = self._output(system_only)
        if not select:
            return out
        main = self.document._docs[0]
        names = Prefixes(self.document._prefixes_seed, main.nsmap.get(None))
        lists = [el for part in out if part.tag in _LIST_TAGS for el in part]
        by_tag = {el.tag: el for el in lists}

        def lookup(name: NameRef) -> etree._Element | None:
            return next((by_tag[c] for c in name.candidates if c in by_tag), None)

        list_names = [names.path_of(el).lstrip("/") for el in lists]
        namespaces = path_namespaces(main.nsmap, names.by_uri)
        chosen = [
            el for text in select for el in select_paths(text, lookup, list_names, namespaces, main.target_ns, names.path_of, main.url)
        ]
        return prune(out, chosen)

    def _output(self, system_only: bool) -> etree._Element:
        """The output tree, built once and never handed out (callers copy it).

        It is built from the working trees themselves rather than from a copy:
        copying, and later freeing, an output-sized tree costs as much as
        serializing it. Whatever still needs the working trees afterwards
        (another output, type checks) gets them back by resolving again.
        """
        out = self._outputs.get(system_only)
        if out is None:
            ws = self._working()
            with _cyclic_gc_paused():
                self._note_pending()
                out = self._outputs[system_only] = build_output(
                    ws, system_only, consume=True, unresolved=self._unresolved(), facts=self.document._output_facts
                )
                self._give_up_working_trees()
        return out

    def _report_pending(self) -> None:
        """Write the pending report, once, from what :meth:`_note_pending` took."""
        if self._pending is None:
            self._note_pending()
            assert self._pending_items is not None
            prefixes, everything, system = self._pending_items
            paths: dict[etree._Element, str] = {}
            with _cyclic_gc_paused():  # thousands of new objects (see _note_pending)
                report = pending_report(prefixes, everything, paths)
                self._pending = (report, report if system is None else pending_report(prefixes, system, paths))

    def _note_pending(self) -> None:
        """Take what the pending report needs now, while the working trees are whole.

        It reads the resolver's states and the items' kinds, which the
        output takes apart; taken first, ``pending`` never has to resolve
        again after an output. The paths, most of the report's cost, are
        written only if the report is read (the output keeps the holders
        in their places).
        """
        if self._pending_items is None:
            ws = self._working()  # resolved again if an output took the trees
            assert self._resolver is not None  # _working sets it with the trees
            # Everything pending is among the unresolved items, in order.
            left = self._unresolved()
            # Without the collector: the thousands of new objects would set
            # off full collections over the trees' proxies, which find
            # nothing to free.
            with _cyclic_gc_paused():
                everything = pending_items(self._resolver, left)
                system = None if ws.roots[0].find(T_SYSTEM) is None else pending_items(self._resolver, left, True)
            self._pending_items = (ws.ctx.prefixes, everything, system)

    def _unresolved(self) -> list[etree._Element]:
        """The items of the working trees left unresolved, in document order
        (found by :func:`_resolved` with the trees)."""
        self._working()
        assert self._left is not None  # _working sets it with the trees
        return self._left

    def _give_up_working_trees(self) -> None:
        """Forget the working trees once an output has taken them apart.

        The items now live in the output tree (with the engine's attributes
        removed): nothing may read or resolve them again. ``_working`` makes
        new ones by resolving again from the unchanged Document and rounds.
        """
        self._ws, self._resolver, self._left = None, None, None

    def _working(self) -> Workspace:
        """The resolved working trees, resolved again if an output took them."""
        if self._ws is None:
            again = Resolution(self.document, list(self.rounds))
            self._ws, self._resolver, self._left = again._working(), again._resolver, again._left
        return self._ws

    def write(self, path: str | os.PathLike[str], system_only: bool = False) -> None:
        """Write the resolved document to ``path`` atomically (never a partial file)."""
        write_atomically(path, self.to_bytes(system_only))


_LIST_TAGS = (T_CONFIGURATION, T_SYSTEM)


@dataclass
class _Run:
    """One resolution as the phases hand it on (see :data:`RESOLUTION_PHASES`)."""

    document: Document
    rounds: Sequence[Round]
    recorder: Recorder | None = None
    ws: Workspace = field(init=False)
    resolver: ReferenceResolver = field(init=False)
    #: Every item, among other elements of their names (find_candidates).
    items: list[etree._Element] = field(init=False)
    #: The main document's items left unresolved, in document order.
    left: list[etree._Element] = field(init=False)


def _copy_documents(run: _Run) -> None:
    run.ws = run.document._workspace()
    run.ws.recorder = run.recorder


def _prototypes(run: _Run) -> None:
    resolve_prototypes(run.ws)


def _find_items(run: _Run) -> None:
    # Every item, among other elements of their names: the resolver tells
    # them apart as it goes (find_candidates).
    run.items = find_candidates(run.ws, run.ws.roots[0].iterchildren(*_LIST_TAGS))


def _references(run: _Run) -> None:
    run.resolver = ReferenceResolver(run.ws)
    run.resolver.run(run.items, candidates=True)


def _deploy_time_rounds(run: _Run) -> None:
    for number, step in enumerate(run.rounds, 1):
        if run.recorder is not None:
            run.recorder.round = number
        apply_round(run.ws, run.resolver, step)


def _required(run: _Run) -> None:
    check_required(run.ws, run.resolver, run.document._required_tags)


def _left_unresolved(run: _Run) -> None:
    run.left = left_unresolved(run.resolver, run.items)
    # Freed here, while the collector is paused: nothing resolves these
    # trees again (explain resolves its own).
    run.items = []
    run.resolver.forget_targets()


#: The phases of one resolution, in order, with what each does: the one
#: composition, which :func:`_resolved` runs and benchmarks/phases.py times.
RESOLUTION_PHASES: tuple[tuple[str, Callable[[_Run], None]], ...] = (
    ("copy the documents", _copy_documents),
    ("prototypes (cdl:extends)", _prototypes),
    ("find items", _find_items),
    ("references and expressions", _references),
    ("deploy-time rounds", _deploy_time_rounds),
    ("required check", _required),
    ("what is left unresolved", _left_unresolved),
)


def _resolved(
    document: Document, rounds: Sequence[Round], recorder: Recorder | None = None
) -> tuple[Workspace, ReferenceResolver, list[etree._Element]]:
    """Run the resolution phases on fresh copies of ``document``: the resolved
    workspace, its resolver and the main document's items left unresolved,
    in document order. With a ``recorder``, the phases record provenance
    (``Resolution.explain``).

    Only the few items left are kept: holding all of them until an output
    took the trees cost a collection over their proxies once the collector
    was back on."""
    run = _Run(document, rounds, recorder)
    with _cyclic_gc_paused():
        for _, phase in RESOLUTION_PHASES:
            phase(run)
    return run.ws, run.resolver, run.left


def live_resolution(
    document: Document, rounds: Sequence[Round], ws: Workspace, resolver: ReferenceResolver, left: list[etree._Element]
) -> Resolution:
    """A Resolution of copies of a deployment's working trees (``cdl/_deploy.py``),
    which go on living: what ``document.resolve(rounds=rounds)`` gives, made
    by copying the trees rather than by resolving again.

    Every element of the trees is paired with its copy (one walk of both),
    so that the resolver's states, the lists and the items left carry over.
    """
    with _cyclic_gc_paused():
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
        state = (copied, copied_resolver(resolver, copied, twin), [twin[el] for el in left])
    resolution = Resolution.__new__(Resolution)
    resolution._begin(document, rounds, False, state)
    return resolution


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
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


def _round(value: RoundLike) -> Round:
    if isinstance(value, Round):
        return value
    unknown = set(value) - {"set", "release"}
    if unknown:
        raise DeployValueError(f"a round has unknown keys {sorted(unknown)}; use 'set' and 'release'", code="BAD_SET")
    return Round(dict(value.get("set") or {}), tuple(value.get("release") or ()))


def load(
    source: str | os.PathLike[str] | bytes,
    *,
    allow_remote: bool = False,
    import_paths: Sequence[str | os.PathLike[str]] = (),
    resolver: Resolver | None = None,
    limits: Limits | None = None,
    name: str | None = None,
    catalogs: Sequence[str | os.PathLike[str]] = (),
    base: str | os.PathLike[str] | None = None,
) -> Document:
    """Load a CDL document and its imports.

    ``source`` is a file path, a URL (``file:``; ``http(s):`` only with
    ``allow_remote``; other schemes through ``resolver``), or the document's
    bytes (``name`` then labels it in messages; its relative imports resolve
    against ``base``, a directory as a path or ``file:`` URL, the current
    directory by default). Imported files must lie under the main document's
    directory (``base`` for bytes) or one of ``import_paths``. ``resolver``
    (``url -> bytes``) replaces how non-file URLs are read. ``catalogs`` are
    OASIS XML catalog files mapping import locations (``http://...``,
    ``classpath:/...``) to local files, which are then read as files (their
    directories are allowed too). Raises :class:`cdl.CdlError`.
    """
    options = LoadOptions(
        allow_remote=allow_remote,
        import_paths=tuple(os.fspath(p) for p in import_paths),
        resolver=resolver,
        limits=limits or Limits(),
        catalogs=tuple(os.fspath(c) for c in catalogs),
    )
    return load_with(source, options, name, base)


def load_with(
    source: str | os.PathLike[str] | bytes, options: LoadOptions, name: str | None = None, base: str | os.PathLike[str] | None = None
) -> Document:
    """:func:`load` with the options built (``cdl lsp`` adds its open buffers)."""
    with _cyclic_gc_paused():
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
    return Document(docs, tables, registry, options, facts, required)
