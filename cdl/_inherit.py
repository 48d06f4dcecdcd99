"""Phase 4: prototype resolution, cdl:extends (7.2, with the rules of 7.3.4).

Entry point: :func:`resolve_prototypes`. Each top level list is resolved once,
in place in the working copy; a prototype is completely resolved before any
list inherits from it (a depth-first walk over lists with an explicit stack,
so long chains of prototypes cannot exhaust Python's stack). Within a list,
elements are merged bottom-up: a property's own cdl:extends is resolved before
it inherits attributes from the outer prototype's same-named property, so the
nearest declaration wins (docs/semantics.md).
"""

from __future__ import annotations

from lxml import etree

from ._lines import located, located_at
from ._model import (
    A_EXTENDS,
    A_LAZY,
    P_COPIES,
    P_DOC,
    P_EXT,
    P_PROV,
    P_REF,
    T_COPIES,
    Problems,
    Workspace,
    copies_mark,
    depth_of,
    doc_index_of,
    has_value,
    stamp,
    strip_variables,
    table_index,
    tag_of,
    top_level_of,
)
from ._scan import AttributeScan
from .errors import InheritanceError

_ACTIVE, _DONE = 1, 2
# Attributes never inherited: the document mark says where an element was
# written, and cdl:extends is resolved, never copied (NOTES.md); a
# provenance mark (explain) belongs to the element that carries it.
_NOT_INHERITED = frozenset((P_DOC, P_COPIES, P_EXT, P_PROV))
# Attributes that say how a value is given (7.3.4 and NOTES.md): a property
# with its own value or its own reference does not take the prototype's.
_VALUE_GIVING = frozenset((P_REF, A_LAZY))


class _Frame:
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
#: Elements beyond which a plan's copies are made one by one (see _Plan.copy).
_TEMPLATE_MAX = 256
#: The tag of the elements that carry copies into a list (see _Plan.insert).
_WRAPPER = T_COPIES


def resolve_prototypes(ws: Workspace) -> None:
    """Resolve every cdl:extends of every document; raise CdlError on failure."""
    ctx = ws.ctx
    problems = Problems(ctx.limits.max_errors)
    state: dict[etree._Element, int] = {}
    shapes: dict[etree._Element, _Shape] = {}
    extending = _extending_by_list(ws)
    #: Prototypes by the value of P_EXT (an index into the names table).
    prototypes: dict[str, etree._Element | None] = {}
    for start in ws.lists.values():
        if state.get(start) == _DONE:
            continue
        elements = extending.get(start)
        if elements:
            # The common case: every prototype named is complete already
            # (a component extending a template): merge, innermost first.
            targets: list[etree._Element] = []
            for el in elements:
                key = el.get(P_EXT)
                assert key is not None  # found by a scan for it
                if key in prototypes:
                    target = prototypes[key]
                else:
                    target = prototypes[key] = ws.lookup(ctx.tables.names[int(key)])
                if target is None or state.get(target) != _DONE:
                    break
                targets.append(target)
            else:
                for el, target in zip(reversed(elements), reversed(targets)):
                    _merge(el, target, ws, shapes)
                state[start] = _DONE
                continue
        # Otherwise prototypes are resolved first, depth first, and unknown
        # names and cycles are reported.
        state[start] = _ACTIVE
        stack = [_Frame(start, extending.get(start, []))]
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
                            f"cdl:extends names {name.text!r}, which is no top level list",
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
                    raise _cycle(ws, stack, target)
                frame.next += 1
                if status is None:
                    state[target] = _ACTIVE
                    stack.append(_Frame(target, extending.get(target, [])))
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
    problems.raise_if_any()


def _extending_by_list(ws: Workspace) -> dict[etree._Element, list[etree._Element]]:
    """The elements with cdl:extends of each top level list, in document order.

    Found by one scan per cdl:configuration or cdl:system rather than one per
    list (an XPath call costs microseconds before it looks at a node). They
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


def _cycle(ws: Workspace, stack: list[_Frame], target: etree._Element) -> InheritanceError:
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

    __slots__ = ("children", "child_tags", "tags", "sizes", "texts", "attributes", "child_attributes", "plans", "doc", "marks")

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
        #: Merge plans by the names of the extending list's children.
        self.plans: dict[tuple[object, ...], _Plan] = {}
        # Copies must say which document they were written in. A list of
        # another document that takes copies says it once (_mark_copies);
        # children this prototype itself inherited from yet another document
        # are marked here, once, so that every copy carries their mark.
        self.doc = doc_index_of(proto)
        #: The copies_mark of a merge from this prototype, by plan or copied names.
        self.marks: dict[object, str] = {}
        for child in self.children:
            if child.get(P_DOC) is None:
                origin = doc_index_of(child)
                if origin != self.doc and origin is not None:
                    child.set(P_DOC, str(origin))


def _mark_copies(n: etree._Element, shape: _Shape, key: _Plan | tuple[object, ...]) -> None:
    """Say on ``n`` which document its new copies of ``shape``'s children
    come from, when it is another than ``n``'s (``copies_mark``); ``key`` is
    the merge's plan, or the names of the children it copied."""
    if shape.doc is None or doc_index_of(n) == shape.doc:
        return
    mark = shape.marks.get(key)
    if mark is None:
        tags = key if isinstance(key, tuple) else [shape.child_tags[p] for p in key.copies]
        mark = shape.marks[key] = copies_mark(shape.doc, tags)
    n.set(P_COPIES, mark)


def _inheritable(el: etree._Element) -> tuple[tuple[str, str], ...]:
    return tuple((key, value) for key, value in el.attrib.items() if key not in _NOT_INHERITED)


def _shape(proto: etree._Element, shapes: dict[etree._Element, _Shape]) -> _Shape:
    shape = shapes.get(proto)
    if shape is None:
        shape = shapes[proto] = _Shape(proto)
    return shape


class _Plan:
    """How a list whose children have given names merges with one prototype.

    Lists that extend one template mostly override the same names in the same
    order (a component sets its name, a few settings), so everything that
    depends only on the names is computed once per (prototype, names): which
    prototype children are copied and where they land, what the copies
    charge to the budget, and which own children take attributes.
    """

    __slots__ = ("copies", "elements", "text", "height", "runs", "inherit", "order", "template", "used", "indices")

    def __init__(self, shape: _Shape, tags: tuple[object, ...]) -> None:
        groups: dict[object, list[int]] = {}
        for i, tag in enumerate(tags):
            groups.setdefault(tag, []).append(i)
        # The merged children (7.2.2.1): each prototype child in its place,
        # copied unless overridden (all own children of that name replace it,
        # at the first one's place), then own children the prototype lacks.
        #: (True, prototype index) for a copy, (False, own index) for an own child.
        merged: list[tuple[bool, int]] = []
        placed: set[object] = set()
        #: Own children that take attributes from the child they override,
        #: and whether none of those attributes depends on the own child's value.
        self.inherit: list[tuple[int, tuple[tuple[str, str], ...], bool]] = []
        for p, (tag, attributes) in enumerate(zip(shape.child_tags, shape.child_attributes)):
            group = groups.get(tag)
            if group is None:
                merged.append((True, p))
            elif tag not in placed:
                placed.add(tag)
                merged.extend((False, i) for i in group)
                if attributes:
                    plain = not any(key in _VALUE_GIVING for key, _ in attributes)
                    self.inherit.extend((i, attributes, plain) for i in group)
        merged.extend((False, i) for i, tag in enumerate(tags) if tag not in shape.tags)
        #: Prototype indices copied, in prototype order.
        self.copies = [p for is_copy, p in merged if is_copy]
        self.elements = sum(shape.sizes[p] for p in self.copies)
        self.text = sum(shape.texts[p] for p in self.copies)
        self.height = max((shape.sizes[p] for p in self.copies), default=0)
        own_order = [i for is_copy, i in merged if not is_copy]
        #: When own children keep their order, the copies are inserted among
        #: them (runs of (final position, number of copies)); else None and
        #: ``order`` says how to rebuild the whole list.
        self.runs: list[tuple[int, int]] | None = None
        self.order = merged
        if own_order == sorted(own_order):
            runs: list[tuple[int, int]] = []
            for position, (is_copy, _) in enumerate(merged):
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

    def copy(self, children: list[etree._Element], ws: Workspace) -> list[etree._Element]:
        """New copies of the prototype's ``children`` this plan copies, in
        order, for a plan whose own children move (see ``insert`` for the
        others): from the template once the plan is used again."""
        if not self.used or self.elements > _TEMPLATE_MAX:
            self.used = True
            return self._each(children)
        if self.template is None:
            self.template = self._template(children, [(0, len(self.copies))], ws)
        return list(self.template.__deepcopy__(None))  # type: ignore[attr-defined]

    def _each(self, children: list[etree._Element]) -> list[etree._Element]:
        """New copies of the children this plan copies, made one by one."""
        return [children[p].__deepcopy__(None) for p in self.copies]  # type: ignore[attr-defined]  # lxml has it, the stubs lack it

    def insert(self, n: etree._Element, children: list[etree._Element], ws: Workspace) -> None:
        """Insert new copies of the prototype's ``children`` into ``n`` at the
        plan's runs (own children stay linked).

        lxml makes a document for every copy it makes, and fixes the
        namespaces of each element it moves in, one call per element moved:
        a plan used again keeps its copies as the children of wrapper
        elements (one per run) in one template element, and one copy of
        the template makes them all; each run goes in as one element, and
        one C call (strip_tags) puts the copies in their wrappers' places.
        A plan used once (a list of its own), or whose copies are large
        (the document's cost is then small beside them, and a document
        that multiplies its size must not copy more than the budget
        charges), copies the children one by one.
        """
        runs = self.runs
        assert runs is not None
        template = self.template
        if template is None:
            if not self.used or self.elements > _TEMPLATE_MAX:
                self.used = True
                made = self._each(children)
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
        template = stamp(self._each(children), scope)
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
    """Inherit elements then attributes from ``proto`` into ``n`` (7.2.2).

    The common case (no recorder, no reference on ``n``, no copy near the
    depth limit) follows a :class:`_Plan`: copies are inserted between the
    own children, which stay where they are; the rest goes to
    :func:`_merge_general`, which does the same merge element by element.
    """
    if ws.recorder is not None or n.get(P_REF) is not None:
        _merge_general(n, proto, ws, shapes)
        return
    shape = _shape(proto, shapes)
    own_children = list(n)
    tags = tuple([child.tag for child in own_children])
    plan = shape.plans.get(tags)
    if plan is None:
        plan = shape.plans[tags] = _Plan(shape, tags)
    copies = plan.copies
    if copies:
        # Charged before any copy is made: the budget refuses an oversized
        # document before it is built.
        ws.budget.charge(plan.elements, plan.text, ws.ctx, n)
        if depth_of(n) + 1 + plan.height > ws.ctx.limits.max_depth:
            # A copy may be too deep: the general merge checks each (the
            # budget above is not charged twice: it only charges copies it makes).
            ws.budget.elements -= plan.elements
            ws.budget.text -= plan.text
            _merge_general(n, proto, ws, shapes)
            return
    own_value = bool(own_children) or bool(n.text and n.text.strip())
    for i, attributes, plain in plan.inherit:
        own = own_children[i]
        attrib = own.attrib
        if plain and not attrib:
            # Nothing to keep and nothing that depends on a value: take them all.
            attrib.update(attributes)
        else:
            _inherit_attributes(attributes, own, ws.item_tags)
    if copies:
        _mark_copies(n, shape, plan)
    if plan.runs is not None:
        if copies:
            # Own children stay linked; each run of copies goes in with one call.
            plan.insert(n, shape.children, ws)
    else:
        made = plan.copy(shape.children, ws) if copies else []
        made.reverse()
        n[:] = [made.pop() if is_copy else own_children[i] for is_copy, i in plan.order]
    if not own_value and proto.text and proto.text.strip():
        # A list whose prototype's value is text inherits it like any value.
        n.text = proto.text
    if n.text is not None and len(n) and not n.text.strip():
        # Whitespace the list held when it had no children is formatting (see _merge_general).
        n.text = None
    if shape.attributes:
        _inherit_attributes(shape.attributes, n, ws.item_tags, own_value=own_value, own_ref=False)
    del n.attrib[P_EXT]


def _merge_general(
    n: etree._Element, proto: etree._Element, ws: Workspace, shapes: dict[etree._Element, _Shape]
) -> None:
    """Inherit elements then attributes from ``proto`` into ``n`` (7.2.2): every
    case, with the provenance hooks (see :func:`_merge` for the common one)."""
    own_value = has_value(n)
    own_ref = n.get(P_REF) is not None
    own_children = list(n)
    # Keyed by tag as lxml returns it (a str for every parsed element).
    groups: dict[object, list[etree._Element]] = {}
    for child in own_children:
        groups.setdefault(child.tag, []).append(child)
    shape = _shape(proto, shapes)
    proto_children, proto_tags = shape.children, shape.tags
    merged: list[etree._Element] = []
    rec = ws.recorder  # provenance (explain): None in plain resolution
    same_named: dict[object, list[etree._Element]] = {}
    if rec is not None:  # provenance hook: the prototype's children by name, once per merge
        for child in proto_children:
            same_named.setdefault(child.tag, []).append(child)
    if not own_ref:  # 7.3.4 case 3: a reference replaces the inherited value
        placed: set[object] = set()
        # Charge every copy this merge makes before making any: the budget
        # refuses an oversized document before it is built.
        inherited = [i for i, tag in enumerate(shape.child_tags) if tag not in groups]
        if inherited:
            sizes = shape.sizes
            ws.budget.charge(sum(sizes[i] for i in inherited), sum(shape.texts[i] for i in inherited), ws.ctx, n)
            landing = depth_of(n) + 1
            if landing + max(sizes[i] for i in inherited) > ws.ctx.limits.max_depth:  # else no copy can matter
                for i in inherited:
                    ws.budget.check_depth(landing, proto_children[i], sizes[i], ws.ctx, n)
        for e, tag, attributes in zip(proto_children, shape.child_tags, shape.child_attributes):
            group = groups.get(tag)
            if group is None:
                merged.append(e.__deepcopy__(None))  # type: ignore[attr-defined]  # lxml has it, the stubs lack it; its document: _mark_copies
                if rec is not None:  # provenance hook
                    rec.inherited(merged[-1], e, n)
            elif tag not in placed:
                placed.add(tag)
                if rec is not None:  # provenance hook
                    for own in group:
                        rec.overrides(own, same_named[tag])
                if attributes:
                    for own in group:
                        _inherit_attributes(attributes, own, ws.item_tags)
                merged.extend(group)
        if inherited:
            _mark_copies(n, shape, tuple([shape.child_tags[i] for i in inherited]))
        if not own_value and proto.text and proto.text.strip():
            # A list whose prototype's value is text inherits it like any value.
            n.text = proto.text
    merged.extend(child for child in own_children if child.tag not in proto_tags)
    n[:] = merged
    if merged and n.text is not None and not n.text.strip():
        # Whitespace the list held when it had no children is formatting, as
        # the loader treats it between elements; kept, it would be mixed
        # content, which the pretty printer leaves on one line.
        n.text = None
    if shape.attributes:
        _inherit_attributes(shape.attributes, n, ws.item_tags, own_value=own_value, own_ref=own_ref)
    del n.attrib[P_EXT]
    if rec is not None:  # provenance hook
        rec.extends(n, proto)


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
    if own_value is None:
        own_value = has_value(dst)
    if own_ref is None:
        own_ref = dst.get(P_REF) is not None
    attrib = dst.attrib
    for key, value in attributes:
        if key in attrib:
            continue
        if key in _VALUE_GIVING:
            if own_value or own_ref:
                continue
            item_tags.add(tag_of(dst))  # dst is now a reference or a lazy property
        attrib[key] = value
