"""How names and paths are written for people: in messages and output.

:class:`Prefixes` chooses one prefix per namespace URI and writes Clark names,
element paths (``/List/child``) and reference paths with them;
:func:`list_name` gives a top level list its name (the targetNamespace
applies to unqualified lists, section 5 and NOTES.md). The registry of those
names is phase 3, ``loading.registry``.

The one rule of an element's path (docs/semantics.md, "Output", Paths), used
by messages, ``cdl pending``, explanations, the plan, a deployment and the
language server: each step is the element's name with the main document's
prefixes (:class:`Steps`), followed by ``[k]`` when its parent has other
child elements of that name, ``k`` its place among them from 1 in document
order; a path deeper than :data:`PATH_SHOWN` steps is shortened in the middle
(:func:`shortened`). ``model.paths.parse_user_path`` reads such steps back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

from lxml import etree

from .children import WIDE, children_by_name
from .elements import tag_of
from .tables import Ref
from .vocabulary import CDL_NS, LIST_PARENTS, T_CDL, UP, XSD_NS, split_clark

#: Paths longer than this many steps are shortened in the middle: a path
#: thousands of steps deep helps nobody, so both ends are kept.
PATH_SHOWN = 16
#: The steps a shortened path keeps at each end.
PATH_KEPT = PATH_SHOWN // 2

_NO_RANKS: dict[etree._Element, int] = {}


def _step(name: str, k: int) -> str:
    """A step: ``name``, with ``[k]`` when it is the k-th of several (0: the only one)."""
    return f"{name}[{k}]" if k else name


def shortened(head: Sequence[str], depth: int, tail: Sequence[str]) -> str:
    """The path ``depth`` steps deep (more than :data:`PATH_SHOWN`) whose
    first steps are ``head`` and last ``tail`` (:data:`PATH_KEPT` each)."""
    return "/" + "/".join([*head, f"...({depth - len(head) - len(tail)} more)...", *tail])


def joined(steps: Sequence[str]) -> str:
    """``/a/b/c`` from its steps, shortened in the middle past :data:`PATH_SHOWN`."""
    if len(steps) > PATH_SHOWN:
        return shortened(steps[:PATH_KEPT], len(steps), steps[-PATH_KEPT:])
    return "/" + "/".join(steps)


class Steps:
    """How each element is written as a step of a path: its name as ``qname``
    writes it, with ``[k]`` when its parent has other child elements of that
    name (``k`` counts them from 1, in document order). A top level list's
    name is unique: it never takes ``[k]``.

    An element among few siblings is compared with them (in C); the children
    of a wide parent, or of one :meth:`fix` names, are ranked once, when the
    first of them is asked for, and keep that rank while this object lives:
    a writer of many paths (a report, a plan) makes one and shares it, so no
    sibling list is scanned per path. :meth:`of_children` writes several
    children of one parent at once (a plan's family of components).
    """

    __slots__ = ("_qname", "_ranks")

    def __init__(self, qname: Callable[[str], str]) -> None:
        self._qname = qname
        #: Per parent ranked: its children that share a name, to their k.
        self._ranks: dict[etree._Element, dict[etree._Element, int]] = {}

    def __call__(self, el: etree._Element) -> str:
        tag = el.tag
        if not isinstance(tag, str):
            return "?"
        name = self._qname(tag)
        parent = el.getparent()
        if parent is None or parent.tag in LIST_PARENTS:
            return name
        ranks = self._ranks.get(parent)
        if ranks is None:
            if len(parent) > WIDE:
                ranks = self.fix(parent)
            else:
                before = sum(1 for _ in el.itersiblings(tag, preceding=True))
                if before:
                    return _step(name, before + 1)
                return _step(name, 0 if next(el.itersiblings(tag), None) is None else 1)
        return _step(name, ranks.get(el, 0))

    def of_children(self, parent: etree._Element, children: Sequence[etree._Element]) -> list[str]:
        """The steps of ``children``, some of ``parent``'s child elements in
        document order (a plan's family of components): ranked among
        themselves when they are all of its children, else among all of them
        (:meth:`fix`)."""
        qname = self._qname
        if parent.tag in LIST_PARENTS:
            return [qname(cast(str, el.tag)) for el in children]
        ranks = self._ranks.get(parent)
        if ranks is None and len(parent) > len(children):
            tags = [child.tag for child in parent]
            if len(set(tags)) == len(tags):  # no two children share a name: no [k]
                return [qname(cast(str, el.tag)) for el in children]
        elif ranks is None:
            counts: dict[str, int] = {}
            for el in children:
                tag = cast(str, el.tag)
                counts[tag] = counts.get(tag, 0) + 1
            seen: dict[str, int] = {}
            written = []
            for el in children:
                tag = cast(str, el.tag)
                k = 0
                if counts[tag] > 1:
                    k = seen[tag] = seen.get(tag, 0) + 1
                written.append(_step(qname(tag), k))
            return written
        if ranks is None:
            ranks = self.fix(parent)
        return [_step(qname(cast(str, el.tag)), ranks.get(el, 0)) for el in children]

    def fix(self, parent: etree._Element) -> dict[etree._Element, int]:
        """Rank the children of ``parent`` now: their steps stay as they are
        now while this object lives, whatever siblings are added later (a
        reference resolved to several targets adds some)."""
        ranks = self._ranks.get(parent)
        if ranks is None:
            ranks = _NO_RANKS
            for same in children_by_name(parent).values():
                if len(same) > 1:
                    if ranks is _NO_RANKS:
                        ranks = {}
                    ranks.update((child, k) for k, child in enumerate(same, 1))
            self._ranks[parent] = ranks
        return ranks


def list_name(el: etree._Element, target_ns: str) -> str:
    """The QName (Clark) of a top level list: unqualified lists take the targetNamespace."""
    tag = tag_of(el)
    if not tag.startswith("{") and target_ns:
        return f"{{{target_ns}}}{tag}"
    return tag


class Prefixes:
    """Chooses one prefix per namespace URI, for output and for messages.

    The main document's own prefixes come first, then those of the other
    documents, so paths in messages and output read as the user wrote them.
    A default namespace gets a prefix too (output never relies on a default
    namespace, see the serializer), preferring one the documents declare.
    """

    def __init__(self, nsmaps: list[dict[str | None, str]], main_default: str | None = None) -> None:
        #: Names in the main document's default namespace are written
        #: unprefixed in messages, as the user writes them in --set paths.
        self.main_default = main_default or None
        self.by_uri: dict[str, str] = {}
        taken: set[str] = set()
        pending_defaults: list[str] = []
        for nsmap in nsmaps:
            for prefix, uri in nsmap.items():
                if prefix is None:
                    pending_defaults.append(uri)
                elif "#" in prefix:  # a URI whose prefix another declaration took
                    pending_defaults.append(uri)
                elif uri not in self.by_uri and prefix not in taken and uri:
                    self.by_uri[uri] = prefix
                    taken.add(prefix)
        self._taken = taken
        for uri in pending_defaults:
            self.prefix(uri)

    def prefix(self, uri: str) -> str:
        """The prefix for ``uri``, inventing ``nsN`` when no document offers one."""
        found = self.by_uri.get(uri)
        if found is None:
            if uri == CDL_NS and "cdl" not in self._taken:
                found = "cdl"
            elif uri == XSD_NS and "xsd" not in self._taken:
                found = "xsd"
            else:
                n = 1
                while f"ns{n}" in self._taken:
                    n += 1
                found = f"ns{n}"
            self.by_uri[uri] = found
            self._taken.add(found)
        return found

    def qname(self, clark: str) -> str:
        uri, local = split_clark(clark)
        return f"{self.prefix(uri)}:{local}" if uri and uri != self.main_default else local

    def steps(self) -> Steps:
        """A :class:`Steps` writing names with these prefixes: one for each
        writer of many paths over trees that do not change meanwhile."""
        return Steps(self.qname)

    def steps_of(self, el: etree._Element, steps: Steps | None = None) -> list[str]:
        """The steps of ``el``'s path, from its top level list down (``steps``
        shared by a writer of many paths; a fresh one otherwise)."""
        step = steps if steps is not None else self.steps()
        names: list[str] = []
        cur: etree._Element | None = el
        while cur is not None and cur.tag not in LIST_PARENTS and cur.tag != T_CDL:
            names.append(step(cur))
            cur = cur.getparent()
        names.reverse()
        return names

    def path_of(self, el: etree._Element, steps: Steps | None = None) -> str:
        """``/List/child[2]/grandchild`` for an element of a list (its own name
        for a list), shortened in the middle when deep (:func:`joined`)."""
        return joined(self.steps_of(el, steps))

    def writer(self) -> Callable[[etree._Element], str]:
        """:meth:`path_of` with one :class:`Steps` for all the paths it writes
        (while the trees do not change)."""
        steps = self.steps()
        return lambda el: joined(self.steps_of(el, steps))

    def steps_text(self, ref: Ref) -> str:
        """A reference path written back with these prefixes (relative form)."""
        return relative_text([s if s == UP else self.qname(s) for s in ref.steps])


def relative_text(steps: list[str]) -> str:
    """Written steps as the relative path of 7.3.1: '.' + path unless it climbs."""
    if not steps:
        return "."
    text = "/".join(steps)
    return text if steps[0] == UP else "./" + text


def counted(n: int, noun: str) -> str:
    """``1 document``, ``3 documents``: a count as reprs and messages write it."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
