"""Suggestions for a name that names nothing: "did you mean ...?" (issue 26).

Used by every phase, on its error paths only: the unknown prototype of a
cdl:extends (7.2) and the unknown list of a cdl:refroot (7.3.1), a reference
step that selects nothing (7.3.1; for a template's parameter, 7.6, the warning
says it), a ``--set``/``--release``/``explain``/``--select`` path step that
selects nothing (7.5), an unknown CDL attribute or child of cdl:cdl (section
5, Appendix A) and an expression variable no cdl:variable declares (7.3.6).

Entry points: :func:`nearest` (the close names, best first), :func:`suggestion`
and :func:`did_you_mean` (the clause a message ends with: the one wording of a
suggestion); for names written in a document, :func:`near_lists` (top level
lists) and :func:`near_children` (the children where a reference stops), with
:func:`written_name` (a Clark name as a document's declarations let it be
written); for paths users give, :func:`near_paths`.

How names are compared: case-insensitively, each name by the local part of
its last path step (``/List/tmpl:port`` by ``port``), so ``t:WebAp`` finds
``t:WebApp``, ``WebApp`` finds ``t:WebApp`` and ``webapp`` finds ``WebApp``;
among names equally close, those whose whole last step (prefix included) is
closer come first. Closeness is difflib's ratio (twice the matching
characters over the lengths), and a name is close from :data:`CUTOFF` up.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from lxml import etree

from .elements import doc_index_of
from .paths import walk
from .tables import Ref
from .vocabulary import split_clark
from .workspace import Workspace

if TYPE_CHECKING:
    import difflib

#: The least ratio (difflib's, 0 to 1) at which a name counts as close.
CUTOFF = 0.6


def _keys(name: str) -> tuple[str, str]:
    """What ``name`` is compared by: its last path step, and that step's local part (lower case)."""
    step = name.rstrip("/").rpartition("/")[2].lower()
    return step, step.rpartition(":")[2]


def nearest(name: str, candidates: Iterable[str], limit: int = 3) -> list[str]:
    """Up to ``limit`` of ``candidates`` close to ``name``, the closest first
    (candidates equally close keep their order); none equal to ``name``."""
    import difflib  # only errors need it

    whole, local = _keys(name)
    by_whole = difflib.SequenceMatcher()
    by_whole.set_seq2(whole)
    by_local = difflib.SequenceMatcher()
    by_local.set_seq2(local)
    scored: list[tuple[float, float, int, str]] = []
    seen: set[str] = set()
    for candidate in candidates:
        if candidate == name or candidate in seen:
            continue
        seen.add(candidate)
        their_whole, their_local = _keys(candidate)
        score = _ratio(by_local, their_local)
        if score >= CUTOFF:
            # Equally close local names: the one written with the same prefix first.
            by_whole.set_seq1(their_whole)
            scored.append((-score, -by_whole.ratio(), len(scored), candidate))
    scored.sort()
    return [candidate for *_, candidate in scored[:limit]]


def _ratio(matcher: difflib.SequenceMatcher[str], text: str) -> float:
    """The ratio of ``text`` to the matcher's name, or 0 when the cheap upper
    bounds already fall short of the cutoff (as difflib.get_close_matches does)."""
    matcher.set_seq1(text)
    if matcher.real_quick_ratio() < CUTOFF or matcher.quick_ratio() < CUTOFF:
        return 0.0
    return matcher.ratio()


def did_you_mean(name: str, candidates: Iterable[str], limit: int = 3) -> str:
    """``'; did you mean X?'`` (or ``X or Y``, ``X, Y or Z``) with the names
    :func:`nearest` finds, for a message to end with; ``''`` when none is close."""
    return suggestion(nearest(name, candidates, limit))


def suggestion(names: list[str]) -> str:
    """The clause suggesting ``names`` (already chosen), or ``''`` for none."""
    if not names:
        return ""
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    return f"; did you mean {listed}?"


def written_name(
    clark: str, nsmap: Mapping[str | None, str], plain: Collection[str], fallback: Callable[[str], str]
) -> str:
    """``clark`` as it is written where ``nsmap`` is in scope: with a prefix
    declared there; unprefixed when its namespace is one of ``plain`` (those an
    unprefixed name reaches there, "" for none); else as ``fallback`` writes it
    (the run's prefixes, which the user would then declare)."""
    uri, local = split_clark(clark)
    if uri != (nsmap.get(None) or ""):
        for prefix, bound in nsmap.items():
            if prefix is not None and bound == uri:
                return f"{prefix}:{local}"
    if uri in plain:
        return local
    return fallback(clark)


def _scope(ws: Workspace, written: etree._Element) -> tuple[dict[str | None, str], str]:
    """The namespace declarations and the targetNamespace of the document
    that wrote ``written``. The root's declarations come first, as that
    document has them: an element inherited into another document's list
    takes that document's prefixes in the working tree."""
    index = doc_index_of(written)
    if index is None:
        return dict(written.nsmap), ""
    doc = ws.ctx.docs[index]
    nsmap = dict(doc.nsmap)
    for prefix, uri in written.nsmap.items():
        nsmap.setdefault(prefix, uri)
    return nsmap, doc.target_ns


def near_lists(ws: Workspace, name: str, written: etree._Element, besides: etree._Element | None = None) -> str:
    """:func:`did_you_mean` for ``name``, a top level list that does not exist,
    written at ``written`` (cdl:extends, cdl:refroot): the lists there are but
    ``besides``, each as that document would write it (an unprefixed name
    reaches the default namespace, the document's targetNamespace and no
    namespace)."""
    nsmap, target_ns = _scope(ws, written)
    plain = {nsmap.get(None) or "", target_ns, ""}
    qname = ws.ctx.prefixes.qname
    return did_you_mean(name, (written_name(clark, nsmap, plain, qname) for clark, el in ws.lists.items() if el is not besides))


def near_children(ws: Workspace, ref: Ref, start: etree._Element, step: int, written: etree._Element) -> str:
    """:func:`did_you_mean` for step ``step`` of ``ref``'s path (followed from
    ``start``), which selects nothing: the names of the children at that step,
    as the document that writes the path (at ``written``) would write them."""
    before = walk(start, ref.steps[:step], ws.children)  # it got this far before
    names = dict.fromkeys(child.tag for node in before.nodes for child in node.iterchildren(etree.Element))
    nsmap = _scope(ws, written)[0]
    plain = {nsmap.get(None) or ""}  # an unprefixed step is in the default namespace (7.3.1)
    qname = ws.ctx.prefixes.qname

    def write(clark: str) -> str:
        return written_name(clark, nsmap, plain, qname)

    return did_you_mean(write(ref.steps[step]), (write(tag) for tag in names if isinstance(tag, str)))


def near_paths(step: str, parents: Iterable[etree._Element], path_of: Callable[[etree._Element], str]) -> str:
    """:func:`did_you_mean` for ``step`` of a path a user gives (``explain``,
    ``--select``, ``--set``, ``--release``), which no child of ``parents``
    is named: the paths (as ``path_of`` writes them) of their children."""
    firsts: dict[tuple[etree._Element, object], etree._Element] = {}
    for parent in parents:
        for child in parent.iterchildren(etree.Element):
            firsts.setdefault((parent, child.tag), child)
    return did_you_mean(step, (path_of(child) for child in firsts.values()))
