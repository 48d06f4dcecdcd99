"""Phase 3: one registry of top level lists over all documents (7.1).

Entry point: :func:`build_registry`. Lists of cdl:configuration and
cdl:system alike are named by a QName: the element's own namespace, or the
document's targetNamespace for an unqualified element. Two lists with one name
are an error naming both places.
"""

from __future__ import annotations

from typing import NamedTuple

from ._model import Problems, SourceDoc
from ._naming import Prefixes, list_name
from .errors import NameResolutionError


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
    lines: dict[str, int | None] = {}
    for doc in docs:
        for p_index, parent in enumerate(doc.list_parents()):
            for position, el in enumerate(parent):
                name = list_name(el, doc.target_ns)
                if name in slots:
                    first = slots[name]
                    problems.add(
                        NameResolutionError(
                            f"top level list {prefixes.qname(name)} is defined twice: here and at "
                            f"{docs[first.doc].url}:{lines[name]}",
                            code="DUPLICATE_NAME",
                            url=doc.url,
                            line=el.sourceline,
                            path=f"/{prefixes.qname(name)}",
                        )
                    )
                    continue
                slots[name] = Slot(doc.index, p_index, position)
                lines[name] = el.sourceline
    return Registry(slots)
