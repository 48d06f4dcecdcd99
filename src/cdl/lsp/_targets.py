"""What CDL attributes point at, for the navigation of ``cdl lsp`` (issue 25):
the list a cdl:extends or cdl:refroot names, the elements a cdl:ref selects
(7.3.1), the document a cdl:import loads, and the index of who points at what.

Entry point: :class:`Targets`. Names are looked up in the registry of top level
lists (``loading.registry``) and paths walked with the engine's own path code
(``model.paths.walk`` over parsed references from the loader's tables). A path is
first walked over the loaded trees, where what it selects is written; a path
that passes an inherited child or a reference there is walked again over a
resolution's working trees, and what it selects traced back to where it is
written (:meth:`Resolved.origin`). The resolution is made once, with
provenance recorded (hover explains from it), and only when first needed.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterator

from lxml import etree

from ._engine import (
    P_EXPR,
    P_EXT,
    P_REF,
    T_EXPRESSION,
    T_IMPORT,
    T_VARIABLE,
    CdlError,
    Explanation,
    Loaded,
    Plan,
    Problems,
    Recorder,
    Ref,
    ReferenceResolver,
    Workspace,
    doc_index_of,
    explain,
    holder_of,
    items_in,
    path_start_in,
    releasing,
    releasing_tree,
    resolution_of,
    resolve_working,
    tag_of,
    top_level_of,
    walk,
)
from ._written import Written

#: How often a walk over the resolution may settle what blocks it (a path
#: through references that wait on references): beyond, it selects nothing.
_SETTLE_ROUNDS = 16


class Resolved:
    """One resolution of the document with provenance recorded (what
    ``Resolution.explain`` makes for each call, made once here and reused).

    It resolves a copy of the loaded trees whose every element is marked
    with where it is written (``Recorder.mark_written``, in the recorder's
    own mark): inheritance and references copy the mark with the element,
    so any element of the resolved trees names the loaded element it was
    copied from (:meth:`origin`).
    """

    def __init__(self, written: Written, stop: Callable[[], bool] | None = None) -> None:
        """Resolve ``written``'s documents, recording provenance; with
        ``stop``, end early (raising :class:`Stopped`) once it says so
        (:class:`_Stopping`)."""
        self.written = written
        self.recorder = Recorder() if stop is None else _Stopping(stop)
        self.ws: Workspace
        self.resolver: ReferenceResolver
        stamping = _Stamping.of(written.loaded, self.recorder)
        try:
            self.ws, self.resolver, self._left = resolve_working(stamping, (), self.recorder)
        except Stopped as stopped:
            # Kept to be let go of a piece at a time, not all at once as the
            # resolution's frames end.
            stopped.left = itertools.chain(*(releasing_tree(root) for root in stamping.made), self.recorder.releasing())
            raise
        finally:
            stamping.made.clear()
            if isinstance(self.recorder, _Stopping):
                self.recorder.stop = None  # what ``stop`` holds is not kept with the resolution
        self._loaded: dict[int, list[etree._Element]] = {}
        self._plan: Plan | None = None
        #: The error planning raised (then it is not tried again).
        self._unplanned: CdlError | None = None

    def releasing(self) -> Iterator[None]:
        """Let go of the resolution a piece at a time, yielding between the
        pieces (``model.scan.releasing``): what was recorded, the items
        left, the loaded elements listed for :meth:`origin` (a whole
        document's each), the plan, what the workspace and the resolver
        hold of the trees, then the trees. Nothing may read it afterwards."""
        yield from self.recorder.releasing()
        yield from releasing(self._left)
        for listed in self._loaded.values():
            yield from releasing(listed)
        self._loaded.clear()
        self._plan = None
        yield
        # First what holds elements of the trees: an element still in its
        # tree is not freed with its last holder, and the trees are then
        # freed a piece at a time.
        yield from releasing(self.ws.lists)
        yield from self.resolver.releasing()
        for root in self.ws.roots:
            yield from releasing_tree(root)

    def plan(self) -> Plan | None:
        """The plan of this resolution (None when the system has no order):
        the code lenses read it, and no other resolution is kept for them.
        Made before the requests settle anything (``cdl lsp`` prepares it
        with the resolution): settling resolves only what resolution left
        alone, never a component of the system, but the plan is what static
        resolution leaves pending."""
        if self._plan is None and self._unplanned is None:
            working = (self.ws, self.resolver, self._left)
            try:
                self._plan = resolution_of(self.written.loaded, (), working=working).plan()
            except CdlError as exc:
                self._unplanned = exc
        return self._plan

    def origin(self, el: etree._Element) -> etree._Element | None:
        """The loaded element that ``el``, an element of the resolved trees, was
        copied from (itself as written, or through inheritance or references)."""
        where = self.recorder.written_at(el)
        if where is None:
            return None
        doc, index = where
        loaded = self._loaded.get(doc)
        if loaded is None:
            loaded = self._loaded[doc] = list(self.written.docs[doc].root.iter(etree.Element))
        return loaded[index]

    def settle(self, nodes: list[etree._Element]) -> None:
        """Resolve the items in and below ``nodes`` (raises CdlError). The
        resolver collects errors for the run it is in; each run here starts
        with none, so one that failed does not fail every later one."""
        self.resolver.problems = Problems(self.ws.ctx.limits.max_errors)
        self.resolver.run(items_in(nodes))

    def explain(self, path: str) -> list[Explanation]:
        """``Resolution.explain(path)``, from this resolution (raises CdlError)."""
        resolver = self.resolver
        return explain(self.ws, self.recorder, path, self.settle, resolver.is_pending, resolver.waits_on)

    def settled(self, name: str) -> etree._Element | None:
        """The top level list ``name`` as resolved, its own references and
        expressions resolved too where they can be (resolution resolves only
        what the main document needs)."""
        found = self.ws.lists.get(name)
        if found is not None:
            try:
                self.settle([found])
            except CdlError:
                pass  # what stays unresolved shows as pending
        return found

    def copy_of(self, el: etree._Element) -> etree._Element | None:
        """The element of the working trees that stands where the loaded ``el``
        is written: the same names (and rank among same-named siblings) down
        from its top level list. Own children keep their places through
        inheritance and references, which only add or fill children."""
        top = top_level_of(el)
        name = None if top is None else self.written.list_name(top)
        if top is None or name is None:
            return None
        ranks: list[tuple[str, int]] = []
        cur = el
        while cur is not top:
            parent = cur.getparent()
            assert parent is not None  # below its top level list
            ranks.append((tag_of(cur), self.written.rank(cur)))
            cur = parent
        found: etree._Element | None = self.ws.lists.get(name)
        for tag, rank in reversed(ranks):
            if found is None:
                return None
            named = self.ws.children.named(found, tag)
            found = named[rank] if rank < len(named) else None
        return found

    def select(self, ref: Ref, holder: etree._Element, typed: bool = False) -> tuple[etree._Element, ...]:
        """What ``ref``, written for the loaded property ``holder``, selects in
        the working trees (after settling what blocks the path). ``typed``:
        ``ref`` is written for a property typed since the document last loaded,
        whose parent is the loaded ``holder``: where ``path_start`` starts a
        path, with the parent it gives a property."""
        copy = self.copy_of(holder)
        if copy is None:
            return ()
        start = path_start_in(self.ws.lookup, ref, copy if typed else copy.getparent())
        if start is None:
            return ()
        for _ in range(_SETTLE_ROUNDS):
            result = walk(start, ref.steps, self.ws.children)
            if not result.blockers:
                return result.nodes
            try:
                self.settle(list(result.blockers))
            except CdlError:
                return ()
        return ()


#: A resolution with provenance made apart (:func:`made_apart`): it, or the error it raised.
Made = tuple["Resolved | None", CdlError | None]


def made_apart(written: Written, stop: Callable[[], bool] | None = None) -> Made:
    """The resolution with provenance of ``written``'s documents and its
    plan, made without the :class:`Targets` that will read it (in the worker
    of ``cdl lsp``, while the requests read those targets; it reads only
    the loaded documents, which nothing changes): what :meth:`Targets.attach`
    takes. ``stop``: as :class:`Resolved`'s (raises :class:`Stopped`)."""
    try:
        resolved = Resolved(written, stop)
    except CdlError as exc:
        return None, exc
    resolved.plan()
    return resolved, None


class Stopped(Exception):
    """A resolution with provenance was asked to stop before its end
    (:class:`Resolved`'s ``stop``): a newer analysis waits for the worker.
    ``left`` lets go of what it made, a piece at a time (once the newer
    analysis is shown: freeing it takes a part of an analysis's time)."""

    def __init__(self) -> None:
        super().__init__()
        self.left: Iterator[None] = iter(())


class _Stopping(Recorder):
    """A recorder whose resolution stops (raises :class:`Stopped`) at the
    first document marked, list extended or reference resolved once ``stop()``
    says so. These events come throughout every phase of a resolution (in a
    large system, never far apart), so an analysis asked for while an earlier
    one is prepared waits for a moment, not for a whole resolution with
    provenance (docs/performance.md, "A preparation gives way")."""

    def __init__(self, stop: Callable[[], bool]) -> None:
        super().__init__()
        #: None once the resolution is over.
        self.stop: Callable[[], bool] | None = stop

    def _check(self) -> None:
        if self.stop is not None and self.stop():
            raise Stopped

    def mark_written(self, doc: int, root: etree._Element) -> None:
        self._check()
        super().mark_written(doc, root)

    def extends(self, extending: etree._Element, proto: etree._Element) -> None:
        self._check()
        super().extends(extending, proto)

    def referenced(self, shell: etree._Element, target: etree._Element, ref: Ref) -> None:
        self._check()
        super().referenced(shell, target, ref)


@dataclasses.dataclass(frozen=True, eq=False)
class _Stamping(Loaded):
    """A loaded document set whose working copies are marked with where
    each element is written (see :class:`Resolved`): the copies the
    resolution makes anyway, so the loaded trees are copied once, as for any
    resolution, and never changed."""

    recorder: Recorder | None = None
    #: The working trees made so far (let go of when the resolution stops).
    made: list[etree._Element] = dataclasses.field(default_factory=list)

    @classmethod
    def of(cls, loaded: Loaded, recorder: Recorder) -> _Stamping:
        fields = {f.name: getattr(loaded, f.name) for f in dataclasses.fields(loaded)}
        # No output facts: nothing is written out of these trees.
        return cls(**{**fields, "output_facts": None, "recorder": recorder})

    def workspace(self) -> Workspace:
        ws = super().workspace()
        assert self.recorder is not None  # (a field with a default: Loaded's last ones have one)
        self.made.extend(ws.roots)
        for doc, root in zip(self.docs, ws.roots):  # fresh copies: in the loaded documents' order
            self.recorder.mark_written(doc.index, root)
        return ws


class Targets:
    """Where names and paths lead (see the module docstring)."""

    def __init__(self, written: Written, earlier: Targets | None = None) -> None:
        self.written = written
        #: Targets of the same loaded documents whose resolution this one takes.
        self._earlier = earlier
        self._resolved: Resolved | None = None
        #: The error the resolution raised (then it is not tried again).
        self.failure: CdlError | None = None
        self._extenders: dict[etree._Element, list[etree._Element]] | None = None
        self._referrers: dict[etree._Element, list[etree._Element]] | None = None
        self._by_referrer: dict[etree._Element, list[etree._Element]] | None = None
        #: Whether :meth:`releasing` let go of what these targets made.
        self._released = False
        #: Whether the resolution is made apart (:attr:`awaiting`).
        self._awaiting = False

    def releasing(self) -> Iterator[None]:
        """Let go of what these targets made a piece at a time (see
        :meth:`Resolved.releasing`): the indexes and the resolution, unless
        lent by an earlier one (which keeps them). Nothing may ask these
        targets anything afterwards."""
        indexes = [self._extenders, self._referrers, self._by_referrer]
        resolved, self._resolved, self._released = self._resolved, None, True
        self._extenders = self._referrers = self._by_referrer = None
        if self._earlier is not None:
            return
        for index in indexes:
            if index is not None:
                yield from releasing(index)
        if resolved is not None:
            yield from resolved.releasing()

    def resolved(self, stop: Callable[[], bool] | None = None) -> Resolved | None:
        """The resolution (made when first asked); None when the document does
        not resolve (or these targets let go of it: :meth:`releasing`). With
        ``stop``, one being made stops once it says so (raising
        :class:`Stopped`; asked again, it is made from the start)."""
        if self._resolved is None and self.failure is None and not self._released and not self.awaiting:
            if self._earlier is not None:
                self._resolved, self.failure = self._earlier.resolved(), self._earlier.failure
                return self._resolved
            try:
                self._resolved = Resolved(self.written, stop)
            except CdlError as exc:
                self.failure = exc
        return self._resolved

    @property
    def awaiting(self) -> bool:
        """Whether the resolution is made apart (:func:`made_apart`) to be
        :meth:`attach`-ed (or that of the targets it is lent by): asked for
        meanwhile, there is none."""
        return self._awaiting or (self._earlier is not None and self._earlier.awaiting)

    def attach(self, made: Made) -> None:
        """Take ``made`` (:func:`made_apart`) as the resolution. The indexes
        of who points at what through the resolution are made again from it."""
        self._resolved, self.failure = made
        self._awaiting = False
        self._referrers = self._by_referrer = None

    def detach(self) -> Resolved | None:
        """Forget the resolution (the caller lets go of it), which is then
        made apart (:attr:`awaiting`) until :meth:`attach`-ed again."""
        resolved, self._resolved, self.failure = self._resolved, None, None
        self._awaiting = True
        return resolved

    def prototype(self, el: etree._Element) -> etree._Element | None:
        """The top level list the cdl:extends of loaded ``el`` names."""
        index = el.get(P_EXT)
        return None if index is None else self.written.lookup(self.written.tables.names[int(index)])

    def reference(self, el: etree._Element) -> tuple[Ref, etree._Element] | None:
        """The reference written on loaded ``el`` (a property with cdl:ref, or a
        cdl:variable) and the property it is for."""
        tables = self.written.tables
        index = el.get(P_REF)
        if index is not None:
            return tables.refs[int(index)], el
        expression = el.getparent()
        if el.tag != T_VARIABLE or expression is None or expression.get(P_EXPR) is None:
            return None
        name = (el.get("name") or "").strip()
        variables = tables.exprs[int(expression.get(P_EXPR) or 0)].variables
        found = next((v for v in variables if v.name == name), None)
        return None if found is None else (found.ref, holder_of(expression))

    def selected(self, ref: Ref, holder: etree._Element) -> list[etree._Element]:
        """The loaded elements where what ``ref`` (for ``holder``) selects is written."""
        start = path_start_in(self.written.lookup, ref, holder.getparent())
        if start is not None:
            result = walk(start, ref.steps, self.written.children)
            if result.nodes:
                return list(result.nodes)
        resolved = self.resolved()
        if resolved is None:
            return []
        found: list[etree._Element] = []
        for node in resolved.select(ref, holder):
            written = resolved.origin(node)
            if written is not None and written not in found:
                found.append(written)
        return found

    def imported(self, el: etree._Element) -> int | None:
        """The index of the document the cdl:import ``el`` loaded (as the loader recorded it)."""
        doc = self.written.docs[doc_index_of(el) or 0]  # (the root carries its document's mark)
        position = next((i for i, imp in enumerate(doc.root.iterchildren(T_IMPORT)) if imp is el), None)
        return None if position is None or position >= len(doc.loaded_imports) else doc.loaded_imports[position]

    # -- who points at what (built once, on first use) --------------------------------

    def extenders(self, el: etree._Element) -> list[etree._Element]:
        """The loaded elements whose cdl:extends names the top level list ``el``."""
        if self._extenders is None:
            index: dict[etree._Element, list[etree._Element]] = {}
            for doc in self.written.docs:
                for extending in doc.root.iter(etree.Element):
                    proto = self.prototype(extending) if extending.get(P_EXT) is not None else None
                    if proto is not None:
                        index.setdefault(proto, []).append(extending)
            self._extenders = index
        return self._extenders.get(el, [])

    def referrers(self, el: etree._Element) -> list[etree._Element]:
        """The loaded elements (properties with cdl:ref, cdl:variable) whose
        reference selects where ``el`` is written: walked from where each is
        written, and, when the document resolves, as the resolution resolved
        them wherever they were inherited to (its recorded events)."""
        if self._referrers is None:
            index: dict[etree._Element, dict[etree._Element, None]] = {}
            for referring in self._references():
                found = self.reference(referring)
                if found is not None:
                    for target in self.selected(*found):
                        index.setdefault(target, {})[referring] = None
            for referring, targets in self._inherited().items():
                for target in targets:
                    index.setdefault(target, {})[referring] = None
            self._referrers = {target: list(found) for target, found in index.items()}
        return self._referrers.get(el, [])

    def inherited_selections(self, referring: etree._Element) -> list[etree._Element]:
        """Where what the reference written on loaded ``referring`` selected is
        written, as the resolution resolved it in every list it was inherited
        into (a template's path that selects nothing in the template itself)."""
        return self._inherited().get(referring, [])

    def _inherited(self) -> dict[etree._Element, list[etree._Element]]:
        """Each written reference's targets in the resolution (built once)."""
        if self._by_referrer is None:
            index: dict[etree._Element, dict[etree._Element, None]] = {}
            resolved = self.resolved()
            if resolved is not None:
                for referring, target in self._resolved_references(resolved):
                    index.setdefault(referring, {})[target] = None
            self._by_referrer = {referring: list(found) for referring, found in index.items()}
        return self._by_referrer

    def _resolved_references(self, resolved: Resolved) -> Iterator[tuple[etree._Element, etree._Element]]:
        """(where a reference is written, where what it selected is written) for
        each reference and expression variable the resolution resolved."""
        for event in resolved.recorder.events:
            if event.kind == "reference" and event.via is not None and event.other:
                referring, target = resolved.origin(event.via), resolved.origin(event.other[0])
                if referring is not None and target is not None:
                    yield referring, target
            elif event.kind == "expression" and event.other:
                # The expression has left the tree, its stamp with it.
                expression = resolved.origin(event.other[0])
                if expression is None:
                    continue
                variables = {(v.get("name") or "").strip(): v for v in expression.iterchildren(T_VARIABLE)}
                for name, selected in event.variables.items():
                    target = resolved.origin(selected)
                    if name in variables and target is not None:
                        yield variables[name], target

    def _references(self) -> Iterator[etree._Element]:
        for doc in self.written.docs:
            for el in doc.root.iter(etree.Element):
                if el.get(P_REF) is not None:
                    yield el
            for expression in doc.root.iter(T_EXPRESSION):
                yield from expression.iterchildren(T_VARIABLE)
