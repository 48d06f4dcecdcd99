"""Phase 3: one registry of top level lists over all documents (7.1).

Entry point: :func:`build_registry`. Lists of cdl:configuration and
cdl:system alike are named by a QName: the element's own namespace, or the
document's targetNamespace for an unqualified element. Two lists with one name
are an error naming both places.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import NameResolutionError
from ..model.elements import tag_of
from ..model.naming import Prefixes
from ..model.workspace import Problems, SourceDoc


class Slot(NamedTuple):
    """Where a top level list lives: document index and position among its siblings.

    A named tuple: one is made per top level list, and a frozen dataclass
    costs several times more to make."""

    doc: int
    parent: int  # index of its cdl:configuration / cdl:system among the list parents
    position: int


class Registry:
    """Top level list names (Clark) to their places."""

    def __init__(self, slots: dict[str, Slot]) -> None:
        self.slots = slots


def build_registry(docs: list[SourceDoc], prefixes: Prefixes, problems: Problems) -> Registry:
    """Name every top level list; record duplicates in ``problems``."""
    slots: dict[str, Slot] = {}
    for doc in docs:
        target_ns = doc.target_ns
        index = doc.index
        for p_index, parent in enumerate(doc.list_parents()):
            for position, el in enumerate(parent):
                # list_name, inlined: one call fewer per list.
                tag = tag_of(el)
                name = f"{{{target_ns}}}{tag}" if target_ns and not tag.startswith("{") else tag
                first = slots.get(name)
                if first is not None:
                    # The first one's line is looked up only here: reading
                    # every list's line costs more than finding one again.
                    line = docs[first.doc].list_parents()[first.parent][first.position].sourceline
                    problems.add(
                        NameResolutionError(
                            f"top level list {prefixes.qname(name)} is defined twice: here and at "
                            f"{docs[first.doc].url}:{line}",
                            code="DUPLICATE_NAME",
                            url=doc.url,
                            line=el.sourceline,
                            path=f"/{prefixes.qname(name)}",
                        )
                    )
                    continue
                slots[name] = Slot(index, p_index, position)
    return Registry(slots)
