"""Where an element or one of its attributes is written, for errors and
explanations: the document, the line (read from the text by ``text.tags``)
and the property path.

Entry points: :func:`element_line`, :func:`located` and :func:`located_at`
(an attribute's own line), :func:`written_as` (how cdl:ref is spelt where it
is written).
"""

from __future__ import annotations

from lxml import etree

from ..text.tags import attribute_line
from .elements import doc_index_of
from .vocabulary import T_VARIABLE
from .workspace import Context, Location


def element_line(ctx: Context, el: etree._Element) -> int | None:
    """The line of the start tag of ``el`` in the document it was written in,
    for an error or an explanation about ``el``."""
    return ctx.line_in_document(doc_index_of(el), el)


def written_as(el: etree._Element, attribute: str) -> str:
    """How cdl:ref or cdl:refroot is written on ``el``: unqualified on a
    cdl:variable (Appendix A), as a Clark name otherwise."""
    return etree.QName(attribute).localname if el.tag == T_VARIABLE else attribute


def located(ctx: Context, el: etree._Element, attribute: str, value: str | None = None) -> Location:
    """``ctx.where(el)`` for an error about ``attribute`` of ``el``: its own line."""
    where = ctx.where(el)
    index = doc_index_of(el)
    if index is not None and index < len(ctx.docs):
        where = where._replace(line=attribute_line(ctx.docs[index].data, el, attribute, value))
    return where


def located_at(ctx: Context, el: etree._Element, attribute: str, value: str | None = None) -> str:
    """``file:line`` of ``attribute`` of ``el``, for messages that list several places."""
    where = located(ctx, el, attribute, value)
    return f"{where.url}:{where.line}" if where.line else str(where.url)

