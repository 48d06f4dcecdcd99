"""Limits and the budget of what resolution may produce.

:class:`Limits` are the bounds a caller sets (``cdl.Limits``); :class:`Budget`
charges every copy that inheritance (7.2) and value references (7.3) make
against them, before it is made, so that documents which multiply their size
stop early with LIMIT_EXCEEDED naming the limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lxml import etree

from ._scan import has_level
from .errors import LimitError

if TYPE_CHECKING:
    from ._model import Context


@dataclass(frozen=True)
class Limits:
    """Bounds that keep hostile input from exhausting the machine.

    Every limit produces a LIMIT_EXCEEDED error that names it.
    """

    max_bytes: int = 64 * 1024 * 1024
    max_depth: int = 10_000
    max_elements: int = 2_000_000
    max_imports: int = 1_000
    max_expression_length: int = 10_000
    max_errors: int = 50
    #: Characters of values that inheritance and references may copy.
    max_text: int = 128 * 1024 * 1024


class Budget:
    """What inheritance and references may produce: elements, text, depth.

    A list holding two children that extend a list holding two children that
    extend ... doubles per level; one value referenced a thousand times copies
    its text a thousand times. Each copy is charged before it is made, so such
    documents stop early with LIMIT_EXCEEDED naming the limit.
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.elements = 0
        self.text = 0

    def check(self, elements: int, text: int, ctx: Context, el: etree._Element) -> None:
        """Refuse now if a copy of this size would exceed a limit (charges nothing)."""
        if self.elements + elements > self.limits.max_elements:
            raise LimitError(
                f"resolution would produce more than {self.limits.max_elements} elements (max_elements); "
                "inheritance or references multiply this document's size",
                at=ctx.where(el),
            )
        if self.text + text > self.limits.max_text:
            raise LimitError(
                f"resolution would copy more than {self.limits.max_text} characters of values (max_text); "
                "references or inheritance multiply this document's text",
                at=ctx.where(el),
            )

    def fits(self, elements: int, text: int) -> bool:
        """Whether a copy of this size is within the limits (charges nothing, never raises)."""
        limits = self.limits
        return self.elements + elements <= limits.max_elements and self.text + text <= limits.max_text

    def charge(self, elements: int, text: int, ctx: Context, el: etree._Element) -> None:
        """Count a copy about to be made."""
        if not self.fits(elements, text):
            self.check(elements, text, ctx, el)  # raises, saying which limit
        self.elements += elements
        self.text += text

    def check_depth(self, landing: int, source: etree._Element, bound: int, ctx: Context, where: etree._Element) -> None:
        """Refuse a copy of ``source``'s subtree that would nest deeper than max_depth.

        ``landing`` is the depth the copy of ``source`` itself will have; an
        element r levels below it lands at ``landing + r``. ``bound`` (the
        copy's element count, at least its height) skips the test when it
        cannot matter, so ordinary documents never pay for it.
        """
        limit = self.limits.max_depth
        if landing + bound <= limit:
            return
        if landing > limit or has_level(source, limit - landing + 1):
            raise LimitError(
                f"resolution would nest elements deeper than the depth limit of {limit} (max_depth)",
                at=ctx.where(where),
            )
