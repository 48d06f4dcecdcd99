"""What is still unresolved: the one definition, as XPath and as Python.

Used by phase 5 (``_references``: which elements are items, and which block a
reference) and by path walks (``_paths.walk``: which elements a path must not
pass through yet), following the dependency order of 7.3.3.

An element is *unresolved* (an *item* of the resolver) while its value is not
known yet:

- an unresolved value reference: it carries the parsed ``cdl:ref`` (``P_REF``),
  lazy or not (7.3, 7.5.3);
- a ``cdl:expression``, until it is evaluated and replaced by its result
  (7.3.6);
- a lazy property, ``cdl:lazy="true"`` (7.5.2): without a value it waits for
  one at deployment; with one it is the error ``LAZY_WITH_VALUE``.

A ``cdl:variable`` is never unresolved by itself, lazy or not: it belongs to
its ``cdl:expression``, which is the item (pending while a variable is lazy),
and which a path reaches first (docs/semantics.md, Value references).

The rule is needed in two forms, written here side by side: an XPath
predicate for C-level scans of whole subtrees (:data:`UNRESOLVED_TEST`) and a
Python test of one element (:func:`is_unresolved`), which runs for every step
of every reference path. tests/test_items.py checks that they agree on every
kind of node.
"""

from __future__ import annotations

from lxml import etree

from ._model import A_LAZY, CDL_NS, ENGINE_NS, P_REF, T_EXPRESSION, T_VARIABLE

#: Prefixes :data:`UNRESOLVED_TEST` uses.
NAMESPACES = {"e": ENGINE_NS, "cdl": CDL_NS}

#: The predicate of an XPath step. One location step, never a union: libxml2
#: sorts a union's result into document order, which on trees that
#: inheritance has rearranged costs seconds for large documents.
UNRESOLVED_TEST = "[@e:ref or self::cdl:expression or (@cdl:lazy='true' and not(self::cdl:variable))]"


def is_unresolved(el: etree._Element) -> bool:
    """Whether ``el`` is still unresolved: :data:`UNRESOLVED_TEST` for one element.

    Ordered for the common case, a plain property: two attribute look-ups and
    one tag comparison (the tag test of a variable runs only for lazy elements).
    """
    return el.get(P_REF) is not None or el.tag == T_EXPRESSION or (el.get(A_LAZY) == "true" and el.tag != T_VARIABLE)
