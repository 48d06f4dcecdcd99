"""How names and paths are written for people: in messages and output.

:class:`Prefixes` chooses one prefix per namespace URI and writes Clark names,
element paths (``/List/child``) and reference paths with them;
:func:`list_name` gives a top level list its name (the targetNamespace
applies to unqualified lists, section 5 and NOTES.md). The registry of those
names is phase 3, ``loading.registry``.
"""

from __future__ import annotations

from lxml import etree

from .elements import tag_of
from .tables import Ref
from .vocabulary import CDL_NS, LIST_PARENTS, T_CDL, UP, XSD_NS, split_clark

#: Paths in messages longer than this many steps are shortened in the middle.
_PATH_SHOWN = 16


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

    def path_of(self, el: etree._Element) -> str:
        """``/List/child/grandchild`` for an element of a list (its own name for a list)."""
        names: list[str] = []
        cur: etree._Element | None = el
        while cur is not None and cur.tag not in LIST_PARENTS and cur.tag != T_CDL:
            names.append(self.qname(cur.tag) if isinstance(cur.tag, str) else "?")
            cur = cur.getparent()
        names.reverse()
        if len(names) > _PATH_SHOWN:
            # A path thousands of steps deep helps nobody: keep both ends.
            half = _PATH_SHOWN // 2
            names = [*names[:half], f"...({len(names) - 2 * half} more)...", *names[-half:]]
        return "/" + "/".join(names)

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
