"""Phase 4: prototype resolution, cdl:extends (7.2, with the rules of 7.3.4).

Entry point: :func:`resolve_prototypes`. Each top level list is resolved once,
in place in the working copy; a prototype is completely resolved before any
list inherits from it (a depth-first walk over lists with an explicit stack,
so long chains of prototypes cannot exhaust Python's stack). Within a list,
elements are merged bottom-up: a property's own cdl:extends is resolved before
it inherits attributes from the outer prototype's same-named property, so the
nearest declaration wins (docs/semantics.md).

The rules of the merge (7.2.2) are defined once: :class:`MergeLayout` (which
children the list ends with, which are copies, which own children take
attributes), :func:`_inherit_attributes` and :func:`_merge_rest` (the list's
text and attributes). :func:`_merge` applies them element by element. With
``Context.fast_paths`` (src/cdl/model/switch.py, docs/performance.md) the same rules
do less work: a list whose prototypes are all complete merges without the
stack (:func:`_merge_complete`), and a merge follows the :class:`MergePlan`
kept per (prototype, names of the list's children), whose copies come from
a template (``model.workspace.stamp``) that leaves out the variables of expressions
(``model.workspace.strip_variables``).
"""

from __future__ import annotations

from collections.abc import Sequence

from lxml import etree

from ..errors import InheritanceError
from ..model.elements import copies_mark, depth_of, doc_index_of, has_value, stamp, table_index, tag_of, top_level_of
from ..model.places import located, located_at
from ..model.scan import AttributeScan
from ..model.suggest import near_lists
from ..model.tables import NameRef
from ..model.vocabulary import A_EXTENDS, A_LAZY, P_COPIES, P_DOC, P_EXT, P_PROV, P_REF, T_COPIES
from ..model.workspace import Problems, Recorder, Workspace, strip_variables

_ACTIVE, _DONE = 1, 2
# Attributes never inherited: the document mark says where an element was
# written, and cdl:extends is resolved, never copied (NOTES.md); a
# provenance mark (explain) belongs to the element that carries it.
_NOT_INHERITED = frozenset((P_DOC, P_COPIES, P_EXT, P_PROV))
# Attributes that say how a value is given (7.3.4 and NOTES.md): a property
# with its own value or its own reference does not take the prototype's.
_VALUE_GIVING = frozenset((P_REF, A_LAZY))


class _ListFrame:
    """One list being resolved: its cdl:extends elements and the next to check."""

    __slots__ = ("lst", "elements", "next", "current")

    def __init__(self, lst: etree._Element, elements: list[etree._Element]) -> None:
        self.lst = lst
        self.elements = elements
        self.next = 0
        #: The cdl:extends element whose prototype is being resolved (for cycle messages).
        self.current: etree._Element | None = None


_NS = {"e": P_EXT[1 : P_EXT.index("}")]}
_EXTENDING = AttributeScan("e:ext", _NS)
_SIZE = etree.XPath("count(descendant-or-self::*)")
_TEXT = etree.XPath("string-length(string())")
#: Elements beyond which a plan's copies are made one by one (see MergePlan._templated).
_TEMPLATE_MAX = 256
#: The tag of the elements that carry copies into a list (see MergePlan.insert).
_WRAPPER = T_COPIES


def resolve_prototypes(ws: Workspace, lists: Sequence[etree._Element] | None = None) -> None:
    """Resolve every cdl:extends of every document; raise CdlError on failure.

    ``lists``: only those top level lists, as loaded, every prototype they
    need among them (a resolution that takes the other lists over from an
    earlier one, resolved: ``engine.phases``)."""
    ctx = ws.ctx
    problems = Problems(ctx.limits.max_errors)
    state: dict[etree._Element, int] = {}
    shapes: dict[etree._Element, _Shape] = {}
    extending = _extending_by_list(ws) if lists is None else _extending_in(lists)
    if ws.reads is not None:
        for lst, elements in extending.items():
            for el in elements:  # each is looked up (an unknown name is an error)
                ws.reads.add(lst, ctx.tables.names[table_index(el, P_EXT)])
    #: Prototypes by the value of P_EXT (an index into the names table).
    prototypes: dict[str, etree._Element | None] = {}
    for start in ws.lists.values() if lists is None else lists:
        if state.get(start) == _DONE:
            continue
        if ctx.fast_paths and _merge_complete(extending.get(start), ws, state, shapes, prototypes):
            state[start] = _DONE
            continue
        _resolve_depth_first(start, ws, extending, state, shapes, problems)
    problems.raise_if_any()


def _merge_complete(
    elements: list[etree._Element] | None,
    ws: Workspace,
    state: dict[etree._Element, int],
    shapes: dict[etree._Element, _Shape],
    prototypes: dict[str, etree._Element | None],
) -> bool:
    """The common case: when every prototype the ``elements`` name is
    complete already (a component extending a template), merge them,
    innermost first, as :func:`_resolve_depth_first` would, and say so;
    else change nothing and say so. ``prototypes`` remembers each name's
    list by its table index."""
    if not elements:
        return False
    names = ws.ctx.tables.names
    targets: list[etree._Element] = []
    for el in elements:
        key = el.get(P_EXT)
        assert key is not None  # found by a scan for it
        if key in prototypes:
            target = prototypes[key]
        else:
            target = prototypes[key] = ws.lookup(names[int(key)])
        if target is None or state.get(target) != _DONE:
            return False
        targets.append(target)
    for el, target in zip(reversed(elements), reversed(targets)):
        _merge(el, target, ws, shapes)
    return True


def _resolve_depth_first(
    start: etree._Element,
    ws: Workspace,
    extending: dict[etree._Element, list[etree._Element]],
    state: dict[etree._Element, int],
    shapes: dict[etree._Element, _Shape],
    problems: Problems,
) -> None:
    """Resolve list ``start``: the prototypes it needs first, depth first
    (an explicit stack), reporting unknown names and cycles."""
    ctx = ws.ctx
    state[start] = _ACTIVE
    stack = [_ListFrame(start, extending.get(start, []))]
    while stack:
        frame = stack[-1]
        pushed = False
        while frame.next < len(frame.elements):
            el = frame.elements[frame.next]
            name = ctx.tables.names[table_index(el, P_EXT)]
            target = ws.lookup(name)
            if target is None:
                problems.add(
                    InheritanceError(
                        f"cdl:extends names {name.text!r}, which is no top level list" + near_lists(ws, name.text, el, top_level_of(el)),
                        code="UNKNOWN_PROTOTYPE",
                        at=located(ctx, el, A_EXTENDS, name.text),
                    )
                )
                del el.attrib[P_EXT]
                del frame.elements[frame.next]
                continue
            frame.current = el
            status = state.get(target)
            if status == _ACTIVE:
                raise _cycle_error(ws, stack, target)
            frame.next += 1
            if status is None:
                state[target] = _ACTIVE
                stack.append(_ListFrame(target, extending.get(target, [])))
                pushed = True
                break
        if pushed:
            continue
        # Every prototype this list needs is complete: merge, innermost
        # (and last) first so ancestors see their children resolved.
        for el in reversed(frame.elements):
            target = ws.lookup(ctx.tables.names[table_index(el, P_EXT)])
            assert target is not None
            _merge(el, target, ws, shapes)
        state[frame.lst] = _DONE
        stack.pop()


def _extending_by_list(ws: Workspace) -> dict[etree._Element, list[etree._Element]]:
    """The elements with cdl:extends of each top level list, in document order.

    Found by one scan per cdl:configuration or cdl:system rather than one per
    list (an XPath call has a fixed cost before it looks at a node). They
    can be found up front: a list changes only by its own merges, and what it
    copies from a prototype carries no cdl:extends (prototypes are complete
    before they are copied).
    """
    found: dict[etree._Element, list[etree._Element]] = {}
    bound = ws.size_bound()
    for doc, root in zip(ws.ctx.docs, ws.roots):
        for el in _EXTENDING(doc.list_parents(root), bound):
            lst = top_level_of(el)
            # The scan looks below list parents only, so every element found has its list.
            assert lst is not None
            found.setdefault(lst, []).append(el)
    return found


def extended_names(ws: Workspace, lst: etree._Element) -> list[NameRef]:
    """The names the cdl:extends of top level list ``lst`` name, its own
    and those below it, as loaded (before its prototypes are merged)."""
    names = ws.ctx.tables.names
    return [names[table_index(el, P_EXT)] for el in _EXTENDING.within(lst)]


def _extending_in(lists: Sequence[etree._Element]) -> dict[etree._Element, list[etree._Element]]:
    """:func:`_extending_by_list` for some top level lists only (each list's
    own cdl:extends among them)."""
    found: dict[etree._Element, list[etree._Element]] = {}
    for lst in lists:
        elements = _EXTENDING.within(lst)
        if elements:
            found[lst] = elements
    return found


def _cycle_error(ws: Workspace, stack: list[_ListFrame], target: etree._Element) -> InheritanceError:
    """An error naming every link of the chain that returns to ``target``."""
    ctx = ws.ctx
    start = next(i for i, f in enumerate(stack) if f.lst is target)
    links: list[str] = []
    for frame in stack[start:]:
        el = frame.current
        assert el is not None
        name = ctx.tables.names[table_index(el, P_EXT)]
        links.append(f"{ctx.prefixes.path_of(el)} ({located_at(ctx, el, A_EXTENDS, name.text)}) extends {name.text}")
    first = stack[start].current
    assert first is not None
    return InheritanceError(
        "prototype references form a cycle: " + "; ".join(links),
        code="EXTENDS_CYCLE",
        at=located(ctx, first, A_EXTENDS),
    )


class _Shape:
    """A complete prototype's children, their names, element counts and text
    lengths, computed once: a resolved prototype never changes, however often
    it is extended."""

    __slots__ = ("children", "child_tags", "tags", "sizes", "texts", "attributes", "child_attributes", "plans", "doc")

    def __init__(self, proto: etree._Element) -> None:
        self.children = list(proto)
        self.child_tags = [c.tag for c in self.children]
        self.tags = frozenset(self.child_tags)
        self.sizes = [int(_SIZE(c)) for c in self.children]
        self.texts = [int(_TEXT(c)) for c in self.children]
        #: The attributes each passes on (most children have none): reading
        #: an element's attributes from lxml builds every name anew.
        self.attributes = _inheritable(proto)
        self.child_attributes = [_inheritable(c) for c in self.children]
        #: Merge plans by the names of the extending list's children (fast paths only).
        self.plans: dict[tuple[object, ...], MergePlan] = {}
        # Copies must say which document they were written in. A list of
        # another document that takes copies says it once (_mark_copies);
        # children this prototype itself inherited from yet another document
        # are marked here, once, so that every copy carries their mark.
        self.doc = doc_index_of(proto)
        for child in self.children:
            if child.get(P_DOC) is None:
                origin = doc_index_of(child)
                if origin != self.doc and origin is not None:
                    child.set(P_DOC, str(origin))


def _inheritable(el: etree._Element) -> tuple[tuple[str, str], ...]:
    return tuple((key, value) for key, value in el.attrib.items() if key not in _NOT_INHERITED)


def _shape(proto: etree._Element, shapes: dict[etree._Element, _Shape]) -> _Shape:
    shape = shapes.get(proto)
    if shape is None:
        shape = shapes[proto] = _Shape(proto)
    return shape


class MergeLayout:
    """What the merge of 7.2.2 decides from the names alone: the children of
    a list whose own children have names ``tags`` (in order) once it has
    inherited from one prototype (``shape``), which prototype children are
    copied, which own children take attributes, and what the copies weigh.

    The one definition of those rules: the general merge computes it for
    each merge, a :class:`MergePlan` once per (prototype, names).
    """

    __slots__ = ("order", "copies", "inherit", "elements", "text", "height", "mark")

    def __init__(self, shape: _Shape, tags: tuple[object, ...], own_ref: bool = False) -> None:
        #: The merged children (7.2.2.1), as (True, prototype index) for a
        #: copy and (False, own index) for an own child: each prototype child
        #: in its place, copied unless overridden (all own children of that
        #: name replace it, at the first one's place), then own children the
        #: prototype lacks. A list with its own reference copies nothing
        #: (7.3.4 case 3).
        self.order: list[tuple[bool, int]] = []
        #: Own children that take attributes from the child they override,
        #: and whether none of those attributes depends on the own child's value.
        self.inherit: list[tuple[int, tuple[tuple[str, str], ...], bool]] = []
        if not own_ref:
            groups: dict[object, list[int]] = {}
            for i, tag in enumerate(tags):
                groups.setdefault(tag, []).append(i)
            placed: set[object] = set()
            for p, (tag, attributes) in enumerate(zip(shape.child_tags, shape.child_attributes)):
                group = groups.get(tag)
                if group is None:
                    self.order.append((True, p))
                elif tag not in placed:
                    placed.add(tag)
                    self.order.extend((False, i) for i in group)
                    if attributes:
                        plain = not any(key in _VALUE_GIVING for key, _ in attributes)
                        self.inherit.extend((i, attributes, plain) for i in group)
        self.order.extend((False, i) for i, tag in enumerate(tags) if tag not in shape.tags)
        #: Prototype indices copied, in prototype order.
        self.copies = [p for is_copy, p in self.order if is_copy]
        #: What the copies charge to the budget, and the largest one's elements.
        self.elements = sum(shape.sizes[p] for p in self.copies)
        self.text = sum(shape.texts[p] for p in self.copies)
        self.height = max((shape.sizes[p] for p in self.copies), default=0)
        #: The copies_mark of these copies, once asked (see _mark_copies).
        self.mark: str | None = None

    def copy_each(self, children: list[etree._Element]) -> list[etree._Element]:
        """New copies of the prototype's ``children`` this layout copies, in order, made one by one."""
        return [children[p].__deepcopy__(None) for p in self.copies]  # type: ignore[attr-defined]  # lxml has it, the stubs lack it


def _mark_copies(n: etree._Element, shape: _Shape, layout: MergeLayout) -> None:
    """Say on ``n`` which document its new copies of ``shape``'s children
    come from, when it is another than ``n``'s (``copies_mark``)."""
    if shape.doc is None or doc_index_of(n) == shape.doc:
        return
    mark = layout.mark
    if mark is None:
        mark = layout.mark = copies_mark(shape.doc, [shape.child_tags[p] for p in layout.copies])
    n.set(P_COPIES, mark)


class MergePlan:
    """A :class:`MergeLayout` kept for every list whose children have the
    same names and that extends the same prototype, with how its copies go
    in (a fast path: ``Context.fast_paths``).

    Lists that extend one template mostly override the same names in the
    same order (a component sets its name, a few settings): the layout is
    computed once, and a plan used again keeps its copies as a template
    (see ``insert``).
    """

    __slots__ = ("layout", "runs", "template", "used", "indices")

    def __init__(self, layout: MergeLayout) -> None:
        self.layout = layout
        own_order = [i for is_copy, i in layout.order if not is_copy]
        #: When own children keep their order, the copies are inserted among
        #: them (runs of (final position, number of copies)); else None and
        #: the layout's order says how to rebuild the whole list.
        self.runs: list[tuple[int, int]] | None = None
        if own_order == sorted(own_order):
            runs: list[tuple[int, int]] = []
            for position, (is_copy, _) in enumerate(layout.order):
                if not is_copy:
                    continue
                if runs and sum(runs[-1]) == position:
                    runs[-1] = (runs[-1][0], runs[-1][1] + 1)
                else:
                    runs.append((position, 1))
            self.runs = runs
        #: The copies, in wrappers, once the plan is used a second time (see ``insert``).
        self.template: etree._Element | None = None
        self.used = False
        self.indices: list[int] = []

    def _templated(self) -> bool:
        """Whether the copies come from the template: from the plan's second
        use on, unless they are large (the document's cost is then small
        beside them, and a document that multiplies its size must not copy
        more than the budget charges)."""
        if not self.used or self.layout.elements > _TEMPLATE_MAX:
            self.used = True
            return False
        return True

    def copy(self, children: list[etree._Element], ws: Workspace) -> list[etree._Element]:
        """New copies of the prototype's ``children`` this plan copies, in
        order, for a plan whose own children move (see ``insert`` for the
        others)."""
        if self.template is None:
            if not self._templated():
                return self.layout.copy_each(children)
            self.template = self._template(children, [(0, len(self.layout.copies))], ws)
        return list(self.template.__deepcopy__(None))  # type: ignore[attr-defined]

    def insert(self, n: etree._Element, children: list[etree._Element], ws: Workspace) -> None:
        """Insert new copies of the prototype's ``children`` into ``n`` at the
        plan's runs (own children stay linked).

        lxml makes a document for every copy it makes, and fixes the
        namespaces of each element it moves in, one call per element moved:
        a plan used again keeps its copies as the children of wrapper
        elements (one per run) in one template element, and one copy of
        the template makes them all; each run goes in as one element, and
        one C call (strip_tags) puts the copies in their wrappers' places.
        """
        runs = self.runs
        assert runs is not None
        template = self.template
        if template is None:
            if not self._templated():
                made = self.layout.copy_each(children)
                start = 0
                for position, count in runs:
                    n[position:position] = made[start : start + count]
                    start += count
                return
            template = self.template = self._template(children, runs, ws)
        copied = template.__deepcopy__(None)  # type: ignore[attr-defined]
        if len(runs) == 1:
            n.insert(runs[0][0], copied)
        else:
            for index, wrapper in zip(self.indices, list(copied)):
                n.insert(index, wrapper)
        etree.strip_tags(n, _WRAPPER)

    def _template(self, children: list[etree._Element], runs: list[tuple[int, int]], ws: Workspace) -> etree._Element:
        """The element whose copy ``insert`` puts in: the run's copies as
        its children (_model.stamp), or for several runs a wrapper per run;
        without the variables of expressions (_model.strip_variables)."""
        scope = children[0].getparent()
        assert scope is not None  # a prototype's child
        template = stamp(self.layout.copy_each(children), scope)
        strip_variables(ws, template)
        if len(runs) > 1:
            #: Where each run's wrapper goes: before it, the own children
            #: of the final list and one wrapper for each earlier run.
            self.indices = []
            before = 0
            rest = iter(list(template))
            for j, (position, count) in enumerate(runs):
                self.indices.append(position - before + j)
                before += count
                etree.SubElement(template, _WRAPPER).extend(next(rest) for _ in range(count))
        return template


def _merge(
    n: etree._Element, proto: etree._Element, ws: Workspace, shapes: dict[etree._Element, _Shape]
) -> None:
    """Inherit elements then attributes from ``proto`` into ``n`` (7.2.2),
    element by element, with the provenance hooks; the rules are those of
    :class:`MergeLayout`, :func:`_inherit_attributes` and :func:`_merge_rest`.
    """
    shape = _shape(proto, shapes)
    if ws.ctx.fast_paths and ws.recorder is None and _merge_by_plan(n, proto, shape, ws):
        return
    own_value = has_value(n)
    own_ref = n.get(P_REF) is not None
    own_children = list(n)
    layout = MergeLayout(shape, tuple([child.tag for child in own_children]), own_ref)
    _charge_copies(n, shape, layout, ws)
    made = layout.copy_each(shape.children)
    for i, attributes, _ in layout.inherit:
        _inherit_attributes(attributes, own_children[i], ws.item_tags)
    rec = ws.recorder  # provenance (explain): None in plain resolution
    if rec is not None:  # provenance hook
        _record_merge(rec, n, shape, layout, own_children, made)
    if layout.copies:
        _mark_copies(n, shape, layout)
    made.reverse()
    n[:] = [made.pop() if is_copy else own_children[i] for is_copy, i in layout.order]
    _merge_rest(n, proto, shape, ws, own_value, own_ref)
    if rec is not None:  # provenance hook
        rec.extends(n, proto)


def _charge_copies(n: etree._Element, shape: _Shape, layout: MergeLayout, ws: Workspace) -> None:
    """Charge the copies ``layout`` makes in ``n`` before any is made (the
    budget refuses an oversized document before it is built), and refuse one
    that would nest deeper than the depth limit."""
    if not layout.copies:
        return
    ws.budget.charge(layout.elements, layout.text, ws.ctx, n)
    landing = depth_of(n) + 1
    if landing + layout.height > ws.ctx.limits.max_depth:  # else no copy can matter
        for p in layout.copies:
            ws.budget.check_depth(landing, shape.children[p], shape.sizes[p], ws.ctx, n)


def _record_merge(
    rec: Recorder,
    n: etree._Element,
    shape: _Shape,
    layout: MergeLayout,
    own_children: list[etree._Element],
    made: list[etree._Element],
) -> None:
    """Tell the provenance recorder of each copy ``made`` and each own child
    that overrides, in the merged order."""
    same_named: dict[object, list[etree._Element]] = {}
    for child in shape.children:
        same_named.setdefault(child.tag, []).append(child)
    copies = iter(made)
    for is_copy, i in layout.order:
        if is_copy:
            rec.inherited(next(copies), shape.children[i], n)
        elif own_children[i].tag in shape.tags:
            rec.overrides(own_children[i], same_named[own_children[i].tag])


def _merge_by_plan(n: etree._Element, proto: etree._Element, shape: _Shape, ws: Workspace) -> bool:
    """The merge of :func:`_merge` following the :class:`MergePlan` of the
    names of ``n``'s children (a fast path: copies go in between the own
    children, which stay where they are, or from the plan's template).

    Declines (False, nothing changed) for a list with its own reference.
    Copies over a limit raise what the general merge raises, at the same
    point (:func:`_charge_copies`, before anything is changed).
    """
    if n.get(P_REF) is not None:
        return False
    own_children = list(n)
    tags = tuple([child.tag for child in own_children])
    plan = shape.plans.get(tags)
    if plan is None:
        plan = shape.plans[tags] = MergePlan(MergeLayout(shape, tags))
    layout = plan.layout
    copies = layout.copies
    _charge_copies(n, shape, layout, ws)
    own_value = has_value(n)
    for i, attributes, plain in layout.inherit:
        attrib = own_children[i].attrib
        if plain and not attrib:
            # Nothing to keep and nothing that depends on a value
            # (_VALUE_GIVING): _inherit_attributes would take them all, in order.
            attrib.update(attributes)
        else:
            _inherit_attributes(attributes, own_children[i], ws.item_tags)
    if copies:
        _mark_copies(n, shape, layout)
        if plan.runs is not None:
            # Own children stay linked; each run of copies goes in with one call.
            plan.insert(n, shape.children, ws)
        else:
            made = plan.copy(shape.children, ws)
            made.reverse()
            n[:] = [made.pop() if is_copy else own_children[i] for is_copy, i in layout.order]
    elif plan.runs is None:
        n[:] = [own_children[i] for _, i in layout.order]
    _merge_rest(n, proto, shape, ws, own_value, False)
    return True


def _merge_rest(
    n: etree._Element, proto: etree._Element, shape: _Shape, ws: Workspace, own_value: bool, own_ref: bool
) -> None:
    """The rest of 7.2.2 once ``n`` holds its merged children: its text, its
    attributes, and its cdl:extends gone. ``own_value`` and ``own_ref`` say
    whether ``n`` had a value or a reference of its own before the merge."""
    if not own_ref and not own_value and proto.text and proto.text.strip():
        # A list whose prototype's value is text inherits it like any value.
        n.text = proto.text
    if n.text is not None and len(n) and not n.text.strip():
        # Whitespace the list held when it had no children is formatting, as
        # the loader treats it between elements; kept, it would be mixed
        # content, which the pretty printer leaves on one line.
        n.text = None
    if shape.attributes:
        _inherit_attributes(shape.attributes, n, ws.item_tags, own_value=own_value, own_ref=own_ref)
    del n.attrib[P_EXT]


def _inherit_attributes(
    attributes: tuple[tuple[str, str], ...],
    dst: etree._Element,
    item_tags: set[str],
    own_value: bool | None = None,
    own_ref: bool | None = None,
) -> None:
    """7.2.2.2 with the special cases of 7.3.4 and NOTES.md for cdl:lazy:
    ``dst`` takes those of the prototype's ``attributes`` it lacks (the name
    of one that becomes an item goes to ``item_tags``)."""
    attrib = dst.attrib
    if own_value is None:
        own_value = has_value(dst)
    if own_ref is None:
        own_ref = dst.get(P_REF) is not None
    for key, value in attributes:
        if key in attrib:
            continue
        if key in _VALUE_GIVING:
            if own_value or own_ref:
                continue
            item_tags.add(tag_of(dst))  # dst is now a reference or a lazy property
        attrib[key] = value
