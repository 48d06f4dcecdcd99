"""Paths and QNames: parsing them once, and walking parsed paths over a tree.

Entry points: :func:`parse_qname`, :func:`parse_name_ref` and
:func:`parse_path` turn attribute text into resolved names (with the namespace
declarations in scope where the text is written); :func:`walk` follows a
parsed path from a context node (:func:`path_start`: which one), taking its
steps with :func:`parent_step` and ``ChildIndex.named``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from lxml import etree

from .children import ChildIndex
from .items import is_unresolved
from .tables import NameRef, Ref
from .vocabulary import ENGINE_NS, LIST_PARENTS, UP
from .workspace import Workspace

_NCNAME = r"[^\W\d][\w.\-\u00B7\u0300-\u036F\u203F\u2040]*"
_NCNAME_RE = re.compile(_NCNAME + r"\Z")
_QNAME_RE = re.compile(rf"(?:({_NCNAME}):)?({_NCNAME})\Z")
#: A step of a user's path naming one of same-named siblings: ``name[k]``.
_RANKED_RE = re.compile(r"(.*)\[([0-9]+)\]\Z", re.S)


class PathSyntaxError(ValueError):
    """The text is not a path of the 7.3.1 grammar (message says why)."""


class PrefixError(ValueError):
    """A QName is malformed or its prefix is not declared where it is written."""

    def __init__(self, message: str, prefix: str | None = None) -> None:
        super().__init__(message)
        #: The prefix that is not declared (None: the text is no QName).
        self.prefix = prefix


def is_ncname(text: str) -> bool:
    return bool(_NCNAME_RE.match(text))


def parse_qname(text: str, nsmap: dict[str | None, str]) -> tuple[str, str | None]:
    """Resolve ``text`` as an xsd:QName: returns (Clark name, prefix or None).

    An unprefixed name takes the default namespace in scope, as xsd:QName does.
    """
    m = _QNAME_RE.match(text.strip())
    if not m:
        raise PrefixError(f"{text!r} is not a QName")
    prefix, local = m.group(1), m.group(2)
    if prefix is None:
        uri = nsmap.get(None) or ""
    else:
        if prefix == "xml":
            uri = "http://www.w3.org/XML/1998/namespace"
        elif prefix not in nsmap or nsmap[prefix] == ENGINE_NS:
            # The engine's namespace is declared by the engine, never by the
            # document: a prefix bound to it was not declared by the user.
            raise PrefixError(f"prefix {prefix!r} of {text!r} is not declared", prefix)
        else:
            uri = nsmap[prefix]
    return (f"{{{uri}}}{local}" if uri else local), prefix


def parse_name_ref(text: str, nsmap: dict[str | None, str], target_ns: str) -> NameRef:
    """A QName naming a top level list, with its lookup candidates.

    Unprefixed: the default namespace first, then the writing document's
    targetNamespace, then no namespace (NOTES.md, Names).
    """
    clark, prefix = parse_qname(text, nsmap)
    if prefix is not None:
        return NameRef(text.strip(), (clark,))
    local = text.strip()
    candidates = [clark]
    for uri in (target_ns, ""):
        name = f"{{{uri}}}{local}" if uri else local
        if name not in candidates:
            candidates.append(name)
    return NameRef(local, tuple(candidates))


class UserStep(NamedTuple):
    """A step of a path a user gives: the children named ``name`` (Clark
    notation), or with ``rank`` (from 1; 0 for none) the rank-th of them."""

    name: str
    rank: int


def parse_user_path(text: str, nsmap: dict[str | None, str], target_ns: str) -> tuple[NameRef, tuple[UserStep, ...], list[str]]:
    """``LIST/child/...`` as users write it (``--set``, ``--release``, ``explain``,
    ``--select``, a deployment's components; a leading '/' is optional): the
    list's name, the steps below it, and every part as written (for messages).
    A step may name one of same-named siblings as paths are written
    (``model.naming``): ``child[k]``, k from 1.

    Raises PrefixError saying what is wrong; callers give it their own code.
    """
    parts = text.strip().lstrip("/").split("/")
    if not parts or any(not p.strip() for p in parts):
        raise PrefixError("write LIST/child/... with one name per step")
    if _RANKED_RE.match(parts[0].strip()):
        raise PrefixError(f"{parts[0].strip()!r}: a top level list's name is unique, so it takes no [k]")
    list_ref = parse_name_ref(parts[0], nsmap, target_ns)
    return list_ref, tuple(_user_step(p, nsmap) for p in parts[1:]), parts


def _user_step(part: str, nsmap: dict[str | None, str]) -> UserStep:
    ranked = _RANKED_RE.match(part.strip())
    if ranked is None:
        return UserStep(parse_qname(part, nsmap)[0], 0)
    rank = int(ranked.group(2))
    if rank < 1:
        raise PrefixError(f"{part.strip()!r}: [k] counts same-named siblings from 1")
    return UserStep(parse_qname(ranked.group(1), nsmap)[0], rank)


def ranked(same: Sequence[etree._Element], rank: int) -> Sequence[etree._Element]:
    """What a :class:`UserStep` selects among the same-named children of one
    parent (``same``, in document order): all of them, or the rank-th."""
    return same if not rank else same[rank - 1 : rank]


def parse_path(text: str, nsmap: dict[str | None, str]) -> tuple[bool, tuple[str, ...]]:
    """Parse ``Path ::= ('/')? Step ('/' Step)*`` with ``Step ::= '.' | '..' | QName``.

    Returns (absolute, steps) with '.' steps dropped (they do not move).
    """
    body = text.strip()
    if not body:
        raise PathSyntaxError("the path is empty")
    absolute = body.startswith("/")
    if absolute:
        body = body[1:]
    steps: list[str] = []
    for raw in body.split("/"):
        if raw == ".":
            continue
        if raw == "..":
            steps.append(UP)
            continue
        if raw == "":
            raise PathSyntaxError("a step is empty ('//' or a trailing '/')")
        if raw != raw.strip():
            raise PathSyntaxError(f"step {raw!r} contains white space")
        try:
            clark, _ = parse_qname(raw, nsmap)
        except PrefixError as exc:
            # A malformed step is a syntax error; an undeclared prefix is one too
            # for a path, since the path cannot mean anything.
            raise PathSyntaxError(f"step {raw!r}: {exc}") from None
        steps.append(clark)
    return absolute, tuple(steps)


def relative_ref(text: str, refroot: NameRef | None, absolute: bool, steps: tuple[str, ...], depth: int) -> Ref:
    """The equivalent relative reference (7.3.1, NOTES.md formula).

    ``depth`` is the number of steps from the referring property to its top
    level list. An absolute path without refroot at depth d becomes (d-1)
    '..' steps followed by the path; with refroot the root is the context, so
    the steps stand as they are.
    """
    if absolute and refroot is None:
        steps = (UP,) * (depth - 1) + steps
    return Ref(text.strip(), refroot, steps)


class Walk:
    """The outcome of following a path.

    Exactly one holds: ``nodes`` (what the path selects, in document order),
    ``blockers`` (unresolved elements the path must pass through first), or
    ``problem`` ('above' when the path climbs above its top level list,
    'empty' when a step selects nothing) with ``step`` its index.
    """

    # A plain class: this is made once per reference, and a frozen
    # dataclass's __init__ costs several times more.
    __slots__ = ("nodes", "blockers", "problem", "step")

    def __init__(
        self,
        nodes: tuple[etree._Element, ...] = (),
        blockers: tuple[etree._Element, ...] = (),
        problem: str | None = None,
        step: int = -1,
    ) -> None:
        self.nodes = nodes
        self.blockers = blockers
        self.problem = problem
        self.step = step


def path_start(ws: Workspace, ref: Ref, holder: etree._Element) -> etree._Element | None:
    """Where ``ref``, written for the property ``holder``, starts (7.3.1): the
    top level list its cdl:refroot names, else ``holder``'s parent; None if
    there is none (no such list; a holder without a parent)."""
    return path_start_in(ws.lookup, ref, holder.getparent())


def path_start_in(
    lookup: Callable[[NameRef], etree._Element | None], ref: Ref, parent: etree._Element | None
) -> etree._Element | None:
    """:func:`path_start` where the top level lists are found by ``lookup``
    and the property is given by its ``parent``: trees other than a
    workspace's (as written, in an editor), a property the trees do not hold
    yet (one being typed)."""
    if ref.refroot is not None:
        return lookup(ref.refroot)
    return parent


def parent_step(node: etree._Element) -> etree._Element | None:
    """Where a ``..`` step from ``node`` leads: its parent, or None when that
    would leave its top level list (a path stays inside its list, 7.3.1)."""
    parent = node.getparent()
    if parent is None or parent.tag in LIST_PARENTS:
        return None
    return parent


def walk(start: etree._Element, steps: tuple[str, ...], children: ChildIndex | None = None) -> Walk:
    """Follow ``steps`` from ``start`` (iteratively; paths never recurse).

    Every node of a step's set has the same depth, so parents taken in order
    and children concatenated in order keep document order. This runs once
    per reference: while the set holds one node, the common case, it is kept
    as that node, without building sets. A step into a wide element reads
    ``children`` (the workspace's; a fresh one when not given) instead of
    scanning its siblings.
    """
    if children is None:
        children = ChildIndex()
    named = children.named
    node = start
    for i, step in enumerate(steps):
        if step == UP:
            parent = parent_step(node)
            if parent is None:
                return Walk(problem="above", step=i)
            node = parent
            continue
        if is_unresolved(node):  # its children are not known yet
            return Walk(blockers=(node,))
        found = named(node, step)
        if len(found) != 1:
            if not found:
                return Walk(problem="empty", step=i)
            return _walk_set(list(found), steps, i + 1, children)
        node = found[0]
    return Walk(nodes=(node,))


def _walk_set(current: list[etree._Element], steps: tuple[str, ...], first: int, children: ChildIndex) -> Walk:
    """Follow ``steps[first:]`` from a set of nodes, all of the same depth."""
    for i in range(first, len(steps)):
        step = steps[i]
        if step == UP:
            parents: list[etree._Element] = []
            seen: set[etree._Element] = set()
            for node in current:
                parent = parent_step(node)
                if parent is None:
                    return Walk(problem="above", step=i)
                if parent not in seen:
                    seen.add(parent)
                    parents.append(parent)
            current = parents
            continue
        blockers = [node for node in current if is_unresolved(node)]
        if blockers:
            return Walk(blockers=tuple(blockers))
        current = [child for node in current for child in children.named(node, step)]
        if not current:
            return Walk(problem="empty", step=i)
    return Walk(nodes=tuple(current))
