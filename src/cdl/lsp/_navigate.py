"""What the navigation requests of ``cdl lsp`` share (issue 25, points 2-7
and 9): one loaded :class:`cdl.Document` with the texts the editor holds.

Entry points: :class:`Navigation` and :func:`navigation_of`. Each request is
answered by its own module in ``features`` (definition, hover, completion,
references, symbols, lenses) from a Navigation: the documents' texts paired
with their loaded trees (:mod:`._written`), where names and paths lead
(:mod:`._targets`), and the plan of the resolution there. Construction is
cheap: each text is scanned and paired when first asked; a resolution is
made only for what needs one (hovers, references and definitions through
inherited children, lenses) and at most once per Navigation. Positions are
0-based lines and code-point columns; the features convert them to LSP's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import cast

from ._buffers import Analysis
from ._edits import Edit
from ._engine import CdlError, Document, Lines, Plan, Resolution, released, start_line
from ._targets import Made, Stopped, Targets, made_apart
from ._written import Cursor, Spot, Written, attribute_name, is_variable

#: How far below a document's root its top level lists are (cdl:cdl, then
#: cdl:configuration and cdl:system, 4.1).
_LISTS_DEPTH = 2

__all__ = ["Made", "Navigation", "Spot", "Stopped", "drop_navigation", "navigation_now", "navigation_of"]


class Navigation:
    """One loaded Document and the texts of its documents (see the module docstring).

    ``texts`` maps urls (as :attr:`cdl.Document.urls` gives them, or a file's
    path) to the text the editor holds; a document without one is read from
    the bytes it was loaded from. ``resolution``, a resolution of
    ``document`` the caller has (with deploy-time values, say), gives the
    code lenses their plan (else the resolution with provenance does).

    Keep one Navigation per Document: the first request that needs a
    resolution makes one with provenance recorded (one resolution's time)
    and later ones reuse it, so a hover then costs milliseconds. Requests
    change what it keeps (they resolve what they look at): make them from
    one thread at a time.
    """

    def __init__(
        self,
        document: Document,
        texts: Mapping[str, str],
        *,
        resolution: Resolution | None = None,
        earlier: Navigation | None = None,
        lines: Callable[[str], Lines | None] | None = None,
    ) -> None:
        self.written: Written = Written(document, texts, None if earlier is None else earlier.written, lines)
        #: ``earlier``, a navigation of the same document over other texts,
        #: lends its resolution and its indexes of the loaded trees (neither
        #: depends on the texts).
        self.targets: Targets = Targets(self.written, None if earlier is None else earlier.targets)
        self._plain: Resolution | None = resolution
        #: What a resolution stopped part way made (``Stopped.left``), to let go of.
        self._stopped: Iterator[None] = iter(())

    def prepare(self, yielding: Callable[[], bool] = lambda: False) -> bool:
        """Build now what the first hover and the first lens of the main
        document would (``cdl lsp`` calls it in its worker thread, so that
        they answer at once): what :meth:`prepare_text` builds, then the
        resolution with provenance and its plan. Before each of these steps,
        stop if ``yielding()`` says so (other work is waiting); whether all
        are done. What is done is kept: calling it again goes on from there.
        The resolution, by far the longest step, also stops part way once
        ``yielding()`` says so (``Targets.resolved``), and is made again
        from the start."""
        released(self._stopped)  # going on: what a stop left goes first
        if not self.prepare_text(yielding):
            return False
        for step in (functools.partial(self.targets.resolved, yielding), self.plan):
            if yielding():
                return False
            try:
                step()
            except Stopped as stopped:
                self._stopped = stopped.left
                return False
        return True

    def prepare_text(self, yielding: Callable[[], bool] = lambda: False) -> bool:
        """The steps of :meth:`prepare` that read the texts: the main text's
        start tags found and its top level lists paired with their elements
        (the rest is paired where a request asks: ``_source.Pairing``), the
        lines of its text that an explanation places its steps at
        (``start_line``, which keeps them per text), and the indexes of its
        lists' names (``ListNames.made``). After them the
        navigation may answer requests in another thread while its
        resolution is made apart (:meth:`made_apart`)."""
        main = self.written.docs[0]
        for step in (self._pair_lists, functools.partial(start_line, main.data, main.root), self.written.list_names.made):
            if yielding():
                return False
            step()
        return True

    def made_apart(self, yielding: Callable[[], bool] = lambda: False) -> Made:
        """The resolution with provenance and its plan, made without changing
        this navigation, which may answer requests meanwhile in another thread
        (``_targets.made_apart``; raises ``Stopped`` once ``yielding()`` says
        so, whose ``left`` is for the caller to let go of): what
        :meth:`attach` takes."""
        return made_apart(self.written, yielding)

    def attach(self, made: Made) -> None:
        """Answer from ``made`` (:meth:`made_apart`) from now on."""
        self.targets.attach(made)

    def detach(self) -> Iterator[None]:
        """Forget the resolution with provenance, which is made apart again
        (:meth:`made_apart`, then :meth:`attach`): the requests answer
        without it meanwhile. What lets go of it, a piece at a time."""
        resolved = self.targets.detach()
        return iter(()) if resolved is None else resolved.releasing()

    def releasing(self) -> Iterator[None]:
        """Let go of what this navigation made a piece at a time, yielding
        between the pieces (:meth:`Targets.releasing`): freed at once, the
        resolution with provenance of a large system holds the interpreter
        until all of it is freed. Nothing may ask it anything afterwards."""
        yield from self._stopped
        yield from self.targets.releasing()

    def _pair_lists(self) -> None:
        """The main document's text scanned for its start tags, and the tags
        of its top level lists paired with their elements (a request pairs
        the rest of its way in the one list it is about)."""
        self.written.paired(0).pairing.match_top(_LISTS_DEPTH)

    def at(self, url: str, line: int, column: int) -> Cursor | None:
        """What (line, column) of document ``url`` stands on (see :meth:`Written.at`)."""
        return self.written.at(url, line, column)

    def attribute(self, cursor: Cursor | None) -> str | None:
        """The Clark name of the attribute whose value holds the cursor."""
        if cursor is None or cursor.attr is None or cursor.tag is None:
            return None
        nsmap = self.written.nsmap(cursor)
        tag = cursor.doc.source.tags[cursor.tag]
        return attribute_name(cursor.attr.name, nsmap, is_variable(tag.name, nsmap))

    def plan(self) -> Plan | None:
        """The plan of the document (None when it does not resolve or plan):
        the given resolution's, else that of the resolution with provenance."""
        if self._plain is None:
            resolved = self.targets.resolved()
            return None if resolved is None else resolved.plan()
        try:
            return self._plain.plan()
        except CdlError:
            return None


def navigation_of(analysis: Analysis) -> Navigation | None:
    """The navigation over ``analysis``, built on first use (None: it did not load)."""
    found = analysis.memo.get("navigation")
    if found is None:
        if analysis.document is None:
            return None
        found = analysis.memo["navigation"] = Navigation(analysis.document, analysis.texts, lines=analysis.lines_for())
    return cast("Navigation", found)


def drop_navigation(analysis: Analysis) -> Navigation | None:
    """Forget the navigation over ``analysis`` (a later :func:`navigation_of`
    builds it again); the navigation forgotten, if any, for its caller to
    let go of (:meth:`Navigation.releasing`)."""
    found = analysis.memo.pop("navigation", None)
    return found if isinstance(found, Navigation) else None


def navigation_now(analysis: Analysis, texts: Mapping[str, str], edit: Edit | None = None) -> Navigation | None:
    """A navigation over the documents ``analysis`` loaded paired with
    ``texts``, the editor's texts of them as they are now (a document being
    typed that does not load yet): its resolution is that of ``analysis``'s
    navigation. ``edit``: how the main document's text changed since
    ``analysis`` read it, which its text is paired through
    (``Written.carry``) instead of read again."""
    earlier = navigation_of(analysis)
    if earlier is None or analysis.document is None:
        return None
    now = Navigation(analysis.document, texts, earlier=earlier)
    old = earlier.written.paired(0)
    if texts.get(old.url) is old.source.text:
        now.written.carry(0, old, None)  # not changed: paired as it was
    elif edit is not None and old.source.text is edit.old.text:
        now.written.carry(0, old, edit)
    return now
