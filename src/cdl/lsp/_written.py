"""Where the elements of a loaded :class:`cdl.Document` are written, for the
navigation of ``cdl lsp`` (issue 25).

Entry point: :class:`Written`. It pairs each document's text (as the editor
holds it, else the bytes the loader read) with its loaded tree
(:class:`._source.Pairing`), so a cursor finds the element and the
attribute it stands on (:meth:`Written.at`) and an element finds the range
of its start tag's name (:meth:`Written.spot_of`). Everything is computed
when first asked, per document, and the pairing per element: a request
pairs the tags on its way to the one it is about.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from lxml import etree

from ._edits import Edit
from ._engine import (
    CDL_NS,
    ENGINE_NS,
    T_VARIABLE,
    Attr,
    ChildIndex,
    Document,
    Lines,
    Loaded,
    NameRef,
    PrefixError,
    Prefixes,
    SourceDoc,
    Steps,
    Tag,
    decode,
    doc_index_of,
    loaded_of,
    parse_name_ref,
    parse_qname,
    split_clark,
    top_level_of,
)
from ._source import Pairing, Source


@dataclass(frozen=True)
class Spot:
    """A range on one line of one document: ``url`` as :attr:`cdl.Document.urls`
    gives it, a 0-based line, code-point columns on that line."""

    url: str
    line: int
    start: int
    end: int


@dataclass(frozen=True)
class Region:
    """A range of one document over any number of lines: from (``line``,
    ``start``) to (``end_line``, ``end``), code-point columns."""

    url: str
    line: int
    start: int
    end_line: int
    end: int


@dataclass
class Paired:
    """One document's text, scanned, and which tag each loaded element was
    parsed from (found where asked: :class:`._source.Pairing`)."""

    url: str
    source: Source
    pairing: Pairing

    def element_of(self, tag: int) -> etree._Element | None:
        """The loaded element tag ``tag`` was parsed from (None: typed since, or not loaded)."""
        return self.pairing.element_of(tag)

    def tag_of(self, el: etree._Element) -> int | None:
        """The tag loaded ``el`` was parsed from (None: not written in this text)."""
        return self.pairing.tag_of(el)


@dataclass
class Cursor:
    """What a position in a document stands on."""

    doc: Paired
    offset: int
    #: The start tag it is in (index into ``doc.source.tags``), and that tag's loaded element.
    tag: int | None
    element: etree._Element | None
    #: The attribute whose value holds it (up to the closing quote), if any.
    attr: Attr | None
    #: Whether it stands on the tag's name.
    on_name: bool


class Written:
    """The loaded documents paired with their texts (see the module docstring)."""

    def __init__(
        self,
        document: Document,
        texts: Mapping[str, str],
        earlier: Written | None = None,
        lines: Callable[[str], Lines | None] | None = None,
    ) -> None:
        self.document = document
        #: The lines of a text, when they are known already (None: split it).
        self.lines_of: Callable[[str], Lines | None] = lines or (lambda text: None)
        self.loaded = loaded_of(document)
        self.docs: list[SourceDoc] = self.loaded.docs
        self.tables = self.loaded.tables
        self.texts = texts
        self._index = {doc.url: doc.index for doc in self.docs}
        self._files = {doc.file: doc.index for doc in self.docs if doc.file is not None}
        self._paired: dict[int, Paired] = {}
        self._others: dict[str, Paired] = {}
        # What depends on the loaded trees alone, which never change, is
        # ``earlier``'s when it has the same ones.
        same = earlier if earlier is not None and earlier.document is document else None
        self.list_names: ListNames = ListNames(self.loaded) if same is None else same.list_names
        #: Children by name of the loaded trees' wide elements, for path walks over them.
        self.children: ChildIndex = ChildIndex() if same is None else same.children
        if same is None:
            self.prefixes = Prefixes([doc.declared for doc in self.docs], self.docs[0].nsmap.get(None))
        else:
            self.prefixes = same.prefixes
        #: How the engine writes each element as a path step.
        self.steps: Steps = self.prefixes.steps() if same is None else same.steps

    # -- documents and their texts ------------------------------------------------

    def doc_index(self, url: str) -> int | None:
        """The index of the loaded document ``url`` names (as loaded, or its file)."""
        found = self._index.get(url)
        if found is None and "://" not in url:
            try:
                found = self._files.get(os.path.realpath(url))
            except (OSError, ValueError):
                return None
        return found

    def paired(self, index: int) -> Paired:
        """Document ``index``'s text, scanned and paired with its loaded tree."""
        found = self._paired.get(index)
        if found is None:
            doc = self.docs[index]
            text = self.texts.get(doc.url)
            if text is None and doc.file is not None:
                text = next((t for u, t in self.texts.items() if self.doc_index(u) == index), None)
            source = Source(decode(doc.data) if text is None else text, lines=None if text is None else self.lines_of(text))
            found = self._paired[index] = Paired(doc.url, source, Pairing(source, doc.root))
        return found

    def carry(self, index: int, old: Paired, edit: Edit | None) -> Paired:
        """Document ``index``'s text, which ``edit`` made of ``old``'s (None:
        it is ``old``'s), paired from ``old`` with only the start tags around
        what was typed read again (``Source.carried``): what a request at the
        text being typed reads, at the cost of what was typed."""
        if edit is None:
            self._paired[index] = old
            return old
        source, was = Source.carried(old.source, edit.new, edit.new_lines(), (edit.start, edit.old_end, edit.new_end))
        by_tag = {tag: el for tag, earlier in was.items() if (el := old.element_of(earlier)) is not None}
        found = self._paired[index] = Paired(old.url, source, Pairing(source, None, by_tag))
        return found

    def text_only(self, url: str) -> Paired | None:
        """A document that is not loaded (or ``url``'s, when it is): its text, scanned."""
        index = self.doc_index(url)
        if index is not None:
            return self.paired(index)
        text = self.texts.get(url)
        if text is None:
            return None
        found = self._others.get(url)
        if found is None:
            source = Source(text, lines=self.lines_of(text))
            found = self._others[url] = Paired(url, source, Pairing(source, None, {}))
        return found

    # -- positions ------------------------------------------------------------------

    def at(self, url: str, line: int, column: int) -> Cursor | None:
        """What (line, column) of document ``url`` stands on; None outside any start tag."""
        doc = self.text_only(url)
        if doc is None:
            return None
        source = doc.source
        offset = source.offset(line, column)
        index = source.tag_at(offset)
        if index is None:
            return Cursor(doc, offset, None, None, None, False)
        tag = source.tags[index]
        attr = next(
            (a for a in tag.attrs if a.value_start is not None and a.value_start <= offset <= a.value_end),
            None,
        )
        on_name = tag.name_start <= offset <= tag.name_end
        return Cursor(doc, offset, index, doc.element_of(index), attr, on_name)

    def spot(self, doc: Paired, start: int, end: int) -> Spot:
        """The range from ``start`` to ``end`` (cut at the end of ``start``'s line)."""
        return Spot(doc.url, *doc.source.span(start, end))

    def region(self, doc: Paired, start: int, end: int) -> Region:
        """The range from offset ``start`` to ``end``, over as many lines as it takes."""
        lines = doc.source.lines
        return Region(doc.url, *lines.position_of(start), *lines.position_of(max(start, end)))

    def name_spot(self, doc: Paired, tag: Tag) -> Spot:
        return self.spot(doc, tag.name_start, tag.name_end)

    def spot_of(self, el: etree._Element) -> Spot | None:
        """The name of the start tag of ``el``, an element of a loaded tree."""
        index = doc_index_of(el)
        if index is None or index >= len(self.docs):
            return None
        doc = self.paired(index)
        tag = doc.tag_of(el)
        return None if tag is None else self.name_spot(doc, doc.source.tags[tag])

    def attr_spot(self, el: etree._Element, local: str) -> Spot | None:
        """The value of attribute ``local`` (any prefix) of ``el``'s start tag,
        else its name."""
        index = doc_index_of(el)
        if index is None or index >= len(self.docs):
            return None
        doc = self.paired(index)
        tag_index = doc.tag_of(el)
        if tag_index is None:
            return None
        tag = doc.source.tags[tag_index]
        attr = tag.attr(local)
        if attr is None or attr.value_start is None:
            return self.name_spot(doc, tag)
        return self.spot(doc, attr.value_start, attr.value_end)

    def nsmap(self, cursor: Cursor) -> dict[str | None, str]:
        """The namespaces declared where the cursor is (the document's when its
        tag was not loaded), without the engine's own."""
        scope = cursor.element
        if scope is None:
            source, tag = cursor.doc.source, cursor.tag
            while tag is not None and tag >= 0 and scope is None:
                scope = cursor.doc.element_of(tag)
                tag = source.parent(tag)
        if scope is None:
            index = self.doc_index(cursor.doc.url)
            return dict(self.docs[index].nsmap) if index is not None else {}
        return {prefix: uri for prefix, uri in scope.nsmap.items() if uri != ENGINE_NS}

    # -- lists by name ----------------------------------------------------------------

    def lists(self) -> dict[str, etree._Element]:
        """Every top level list of every document, by its (Clark) name."""
        return self.list_names.lists()

    def lookup(self, name: NameRef) -> etree._Element | None:
        """The top level list ``name`` finds, trying its candidates in their order."""
        return self.list_names.lookup(name)

    def list_name(self, el: etree._Element) -> str | None:
        """The (Clark) name of a top level list."""
        return self.list_names.name_of(el)

    def lists_from(self, start: str, uri: str | None = None) -> Iterator[str]:
        """The (Clark) names of the top level lists whose local name starts
        with ``start`` (compared casefolded), in the namespace ``uri`` if
        given: in order of their local names (casefolded), then of their
        namespaces; each costs a step, whatever the number of lists."""
        return self.list_names.starting(start.casefold(), uri)

    def path_of(self, el: etree._Element) -> str | None:
        """``/List/child[2]/...`` of an element of a loaded list, as the engine
        writes paths (``Prefixes.steps_of``) but whole, its list named as the
        registry names it (``explain`` selects by it)."""
        top = top_level_of(el)
        name = None if top is None else self.list_name(top)
        if top is None or name is None:
            return None
        steps = self.prefixes.steps_of(el, self.steps)
        steps[0] = self.prefixes.qname(name)
        return "/" + "/".join(steps)

    def rank(self, el: etree._Element) -> int:
        """How many earlier siblings of loaded ``el`` have its name: the
        ``k`` of its path step (``model.naming.Steps``) counted from 0."""
        parent = el.getparent()
        if parent is None:
            return 0
        return max(self.steps.fix(parent).get(el, 0) - 1, 0)


class ListNames:
    """The top level lists of a loaded set by name, both ways, and their names
    sorted for completion (each made when first asked; the trees never change)."""

    def __init__(self, loaded: Loaded) -> None:
        self._loaded = loaded
        self._lists: dict[str, etree._Element] | None = None
        self._names: dict[etree._Element, str] | None = None
        #: (casefolded local name, namespace, Clark name), sorted; and by namespace first.
        self._by_local: list[tuple[str, str, str]] | None = None
        self._by_uri: list[tuple[str, str, str]] | None = None
        #: What each text written as a list's name finds, by the namespaces in
        #: scope and the document's target namespace (see :meth:`named_by`).
        self._found: dict[tuple[frozenset[tuple[str | None, str]], str], dict[str, etree._Element | None]] = {}

    def made(self) -> None:
        """Make now what is made when first asked (the worker of ``cdl lsp``
        does, before the requests read it in another thread)."""
        self._names_of()
        next(self.starting("", None), None)

    def lists(self) -> dict[str, etree._Element]:
        if self._lists is None:
            parents = [[list(p) for p in doc.list_parents()] for doc in self._loaded.docs]
            slots = self._loaded.registry.slots
            self._lists = {name: parents[s.doc][s.parent][s.position] for name, s in slots.items()}
        return self._lists

    def name_of(self, el: etree._Element) -> str | None:
        return self._names_of().get(el)

    def _names_of(self) -> dict[etree._Element, str]:
        if self._names is None:
            self._names = {el: name for name, el in self.lists().items()}
        return self._names

    def named_by(self, nsmap: dict[str | None, str], target_ns: str) -> Callable[[str], etree._Element | None]:
        """The top level list a text names, written where ``nsmap`` is in
        scope in a document whose target namespace is ``target_ns`` (None:
        none, or it does not parse): ``model.paths.parse_name_ref`` and the
        lookup, each text read once per such place (completion asks the same
        of every list at every request)."""
        found = self._found.setdefault((frozenset(nsmap.items()), target_ns), {})

        def named(text: str) -> etree._Element | None:
            if text not in found:
                try:
                    found[text] = self.lookup(parse_name_ref(text, nsmap, target_ns))
                except PrefixError:
                    found[text] = None
            return found[text]

        return named

    def lookup(self, name: NameRef) -> etree._Element | None:
        """See :meth:`Written.lookup`."""
        lists = self.lists()
        return next((lists[c] for c in name.candidates if c in lists), None)

    def starting(self, start: str, uri: str | None) -> Iterator[str]:
        """See :meth:`Written.lists_from` (``start`` casefolded)."""
        if self._by_local is None or self._by_uri is None:
            keyed = [(local.casefold(), ns, name) for name in self.lists() for ns, local in (split_clark(name),)]
            self._by_local = sorted(keyed)
            self._by_uri = sorted((ns, local, name) for local, ns, name in keyed)
        if uri is None:
            index = self._by_local
            position = bisect.bisect_left(index, (start,))
            while position < len(index) and index[position][0].startswith(start):
                yield index[position][2]
                position += 1
            return
        index = self._by_uri
        position = bisect.bisect_left(index, (uri, start))
        while position < len(index) and index[position][0] == uri and index[position][1].startswith(start):
            yield index[position][2]
            position += 1


#: A cdl:variable's own attributes (Appendix A: unqualified).
VARIABLE_ATTRIBUTES = ("name", "ref", "refroot", "lazy")


def is_variable(written_name: str, nsmap: dict[str | None, str]) -> bool:
    """Whether an element's name as written, with ``nsmap`` in scope, is cdl:variable."""
    try:
        return parse_qname(written_name, nsmap)[0] == T_VARIABLE
    except PrefixError:
        return False


def attribute_name(written_name: str, nsmap: dict[str | None, str], variable: bool) -> str | None:
    """The Clark name of an attribute as written (a cdl:variable's unqualified
    ``ref``, ``refroot`` and ``lazy`` count as the CDL ones)."""
    prefix, colon, local = written_name.rpartition(":")
    if not colon:
        return f"{{{CDL_NS}}}{local}" if variable and local in VARIABLE_ATTRIBUTES else local
    uri = nsmap.get(prefix)
    return None if uri is None else f"{{{uri}}}{local}"
