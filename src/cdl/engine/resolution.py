"""The result of resolving a document: :class:`Resolution` (``cdl.Resolution``).

It holds the resolved working trees (``phases.resolve_working``) and
composes what may be asked of them: the pending report
(``resolution.laziness``), the plan (``planning.plan``), outputs
(``resolution.output``), provenance (``resolution.explain``) and type checks
(``loading.schema``).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from typing import Any

from lxml import etree

from ..errors import CdlError, CdlErrorGroup
from ..loading.files import write_atomically
from ..loading.schema import check_types, schemas_of
from ..model.naming import Prefixes, counted
from ..model.tables import NameRef
from ..model.vocabulary import T_SYSTEM
from ..model.workspace import Workspace
from ..planning.plan import Plan, build_plan
from ..resolution.explain import Explanation, Recorder, explain, path_namespaces, prune
from ..resolution.explain import select as select_paths
from ..resolution.laziness import Pending, PendingItem, Round, pending_items, pending_report, still_pending
from ..resolution.output import build_output, to_bytes, to_data
from ..resolution.references import ReferenceResolver, items_in
from .phases import LIST_TAGS, Earlier, Loaded, Working, cyclic_gc_paused, resolve_working


class Resolution:
    """The result of resolving a :class:`Document`, possibly with deploy-time values.

    Made by :meth:`cdl.Document.resolve`, :meth:`supply` and
    :meth:`cdl.Deployment.resolution` (the constructor refuses).
    """

    __slots__ = (
        "_loaded",
        "rounds",
        "validate",
        "warnings",
        "_ws",
        "_left",
        "_resolver",
        "_pending",
        "_pending_items",
        "_plan",
        "_plan_checked",
        "_outputs",
    )

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError(
            "cdl.Resolution is not made by callers: Document.resolve() (or Resolution.supply(), Deployment.resolution()) gives one"
        )

    def _start(self, loaded: Loaded, rounds: Sequence[Round], validate: bool, working: Working | None) -> None:
        """Resolve (or, with ``working``, take a deployment's copied trees): see :func:`resolution_of`."""
        self._loaded = loaded
        self.rounds: tuple[Round, ...] = tuple(rounds)
        self.validate = validate
        #: As ``file:line: message``: references templates leave unresolved
        #: (7.6), then (with validate) types that could not be checked.
        self.warnings: list[str] = []
        ws, resolver, left = resolve_working(loaded, self.rounds) if working is None else working
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
        #: Whether :func:`check_plan` found no error among the lists that can have one.
        self._plan_checked = False
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
        # Counted, not reported: the report reads each item's kind and what it
        # waits on and writes their paths, which waits until ``pending`` is read.
        if self._pending_items is not None:
            left = len(self._pending_items[1])
        else:  # the trees are whole: an output notes the items before it takes them
            items = self._unresolved()
            assert self._resolver is not None  # set with the trees
            left = len(still_pending(self._resolver, items))
        return f"<cdl.Resolution {self._loaded.url!r} ({rounds}{left or 'nothing'} pending)>"

    def check_types(self) -> tuple[list[CdlError], list[str]]:
        """Check each value that has a cdl:type: (errors, warnings), all of them."""
        ws = self._working()
        ctx = ws.ctx

        def origin(el: etree._Element) -> tuple[str | None, int | None]:
            where = ctx.where(el)
            return where.url, where.line

        root = build_output(ws, keep_origins=True)
        errors, warnings = check_types(root, schemas_of(self._loaded.docs), origin, ctx.prefixes.writer())
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
            with cyclic_gc_paused():
                self._plan = build_plan(ws, self._resolver)
        return self._plan

    def supply(self, values: Mapping[str, str] | None = None, release: Sequence[str] = ()) -> Resolution:
        """A new Resolution with one more round of deploy-time values (this one is unchanged).

        It resolves the document and every round again. A deployment service
        that supplies values as components come up uses :meth:`Document.deploy`,
        whose events cost what they touch.
        """
        return resolution_of(self._loaded, [*self.rounds, Round(dict(values or {}), tuple(release))], self.validate)

    def tree(self, system_only: bool = False, select: Sequence[str] = ()) -> etree._Element:
        """The resolved ``cdl:cdl`` document as a new lxml tree.

        ``select`` (paths as for :meth:`explain`) keeps only the properties
        they select, with the elements above them.
        """
        return copy.deepcopy(self._selected(system_only, select))

    def to_bytes(self, system_only: bool = False, pretty: bool = True, select: Sequence[str] = ()) -> bytes:
        """The resolved document as UTF-8 XML (``select``: as for :meth:`tree`)."""
        return to_bytes(self._selected(system_only, select), pretty)

    def to_data(self, system_only: bool = False, select: Sequence[str] = ()) -> dict[str, Any]:
        """The resolved lists as plain Python data (dicts, lists, strings), in
        xmltodict's convention: attributes as ``"@name"`` keys, ``"#text"``,
        ``""`` for an empty value (README.md, "JSON output"; ``select``: as
        for :meth:`tree`).

        Each value is a :data:`cdl.Data`; they are typed ``Any`` so that a
        script can index its way down (``["system"]["db"]["port"]``) without
        narrowing each level, as with ``json.loads``."""
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
        ws, resolver, _ = resolve_working(self._loaded, self.rounds, recorder)
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
        main = self._loaded.docs[0]
        names = self._loaded.prefixes()
        lists = [el for part in out if part.tag in LIST_TAGS for el in part]
        by_tag = {el.tag: el for el in lists}

        def lookup(name: NameRef) -> etree._Element | None:
            return next((by_tag[c] for c in name.candidates if c in by_tag), None)

        list_names = [names.path_of(el).lstrip("/") for el in lists]
        namespaces = path_namespaces(main.nsmap, names.by_uri)
        chosen = [
            el for text in select for el in select_paths(text, lookup, list_names, namespaces, main.target_ns, names.writer(), main.url)
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
            with cyclic_gc_paused():
                self._note_pending()
                out = self._outputs[system_only] = build_output(
                    ws, system_only, consume=True, unresolved=self._unresolved(), facts=self._loaded.output_facts
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
            with cyclic_gc_paused():  # thousands of new objects (see _note_pending)
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
            with cyclic_gc_paused():
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

    def _hand_over(self) -> Earlier | None:
        """:func:`hand_over`."""
        ws, resolver, left = self._ws, self._resolver, self._left
        if ws is None or resolver is None or left is None or ws.reads is None or self.rounds:
            return None
        self._give_up_working_trees()
        return Earlier(self._loaded, (ws, resolver, left), planned=self._plan is not None or self._plan_checked)

    def _working(self) -> Workspace:
        """The resolved working trees, resolved again if an output took them."""
        if self._ws is None:
            again = resolution_of(self._loaded, self.rounds)
            self._ws, self._resolver, self._left = again._working(), again._resolver, again._left
        return self._ws

    def write(self, path: str | os.PathLike[str], system_only: bool = False) -> None:
        """Write the resolved document to ``path`` atomically (never a partial file)."""
        write_atomically(path, self.to_bytes(system_only))


def resolution_after(loaded: Loaded, earlier: Earlier | None = None) -> Resolution:
    """A static resolution of ``loaded`` (as :meth:`cdl.Document.resolve`
    makes) that records what each top level list reads, so that the next
    one may take its lists over (:func:`hand_over`), and that takes over
    what it can of ``earlier``, the working trees of such a resolution of an
    earlier version of the documents (``phases.resolve_working``).

    What ``cdl lsp`` resolves for each version of a document being edited."""
    return resolution_of(loaded, (), working=resolve_working(loaded, (), reads=True, earlier=earlier))


def hand_over(resolution: Resolution) -> Earlier | None:
    """The working trees of ``resolution`` (made by :func:`resolution_after`),
    for the resolution of a later version to take over, given up by it (it
    resolves again if asked for what needs them); None when they cannot be
    handed over (taken apart by an output, or made with deploy-time values
    or without recording what each list reads)."""
    return resolution._hand_over()


def check_plan(resolution: Resolution) -> None:
    """Raise the errors of the plan of ``resolution`` (``PLAN_CYCLE``,
    ``PLAN_ANCESTOR_WAIT``; :meth:`Resolution.plan`), if it has any: what
    ``cdl lsp`` reports of the plan with each version's diagnostics. Only
    the lists that can have one are planned, when that is known
    (``Workspace.plan_within``: never without the fast paths, which take
    nothing over)."""
    ws = resolution._working()
    if ws.plan_within is not None and resolution._plan is None:
        assert resolution._resolver is not None  # set with the trees
        with cyclic_gc_paused():
            build_plan(ws, resolution._resolver, within=ws.plan_within)
        resolution._plan_checked = True
        return
    resolution.plan()


def resolution_of(loaded: Loaded, rounds: Sequence[Round], validate: bool = False, working: Working | None = None) -> Resolution:
    """Resolve ``loaded`` with ``rounds`` (:meth:`cdl.Document.resolve`), or
    take ``working``, copies of a deployment's resolved trees
    (:meth:`cdl.Deployment.resolution`)."""
    resolution = object.__new__(Resolution)
    resolution._start(loaded, rounds, validate, working)
    return resolution
