"""What is still unresolved: the one definition, as XPath and as Python.

Used by phase 5 (``resolution.references``: which elements are items, and which block a
reference) and by path walks (``model.paths.walk``: which elements a path must not
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
of every reference path. tests/internals/test_items.py checks that they agree on every
kind of node. The kinds of items (:class:`ItemKind`) are told apart here
too.
"""

from __future__ import annotations

import enum
from collections.abc import Container

from lxml import etree

from .vocabulary import A_LAZY, CDL_NS, ENGINE_NS, P_REF, T_EXPRESSION, T_VARIABLE

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


#: What :func:`leaf_size` says of a leaf that is still unresolved.
UNRESOLVED_LEAF = -1


def leaf_size(leaf: etree._Element, item_tags: Container[str] | None = None) -> int:
    """The test of a path's target that is one element without children (7.3.2,
    7.3.3): the characters of its value, which a copy of it costs (the
    budget decides whether it may be made, before anything waits for it),
    or :data:`UNRESOLVED_LEAF` when it is still unresolved: it is resolved
    first, then the path is followed again.

    ``item_tags``, the names items have in these trees (``Workspace.item_tags``;
    cdl:expression is one too), spares reading the attributes of a leaf of
    another name, which cannot be unresolved (find_items relies on the same).
    """
    if item_tags is not None:
        tag = leaf.tag
        if tag not in item_tags and tag != T_EXPRESSION:
            value = leaf.text
            return len(value) if value else 0
    if is_unresolved(leaf):
        return UNRESOLVED_LEAF
    value = leaf.text
    return len(value) if value else 0


def is_lazy(el: etree._Element) -> bool:
    """Whether ``el`` is marked ``cdl:lazy="true"`` (the loader writes it so)."""
    return el.get(A_LAZY) == "true"


def has_lazy_variables(expression: etree._Element) -> bool:
    """Whether a ``cdl:expression`` has a lazy variable (it is then pending)."""
    return any(var.get(A_LAZY) == "true" for var in expression.iterchildren(T_VARIABLE))


class ItemKind(enum.Enum):
    """What an unresolved element is. The values are public: they are
    :attr:`cdl.Pending.kind` and what ``cdl pending`` prints (README.md)."""

    REFERENCE = "reference"
    LAZY_REFERENCE = "lazy-reference"
    EXPRESSION = "expression"
    LAZY_EXPRESSION = "lazy-expression"
    LAZY_PROPERTY = "lazy-property"


def holder_of(item: etree._Element) -> etree._Element:
    """The property an item is about: a cdl:expression's parent, else the item
    itself (paths of pending items, plan owners and explanations all name it)."""
    parent = item.getparent() if item.tag == T_EXPRESSION else None
    return parent if parent is not None else item


def item_kind(el: etree._Element) -> ItemKind:
    """The kind of an element :func:`is_unresolved` holds true for."""
    if el.get(P_REF) is not None:
        return ItemKind.LAZY_REFERENCE if is_lazy(el) else ItemKind.REFERENCE
    if el.tag == T_EXPRESSION:
        return ItemKind.LAZY_EXPRESSION if has_lazy_variables(el) else ItemKind.EXPRESSION
    return ItemKind.LAZY_PROPERTY


class State(enum.Enum):
    """Where an item is. Absent from the resolver's states: not visited yet,
    or resolved by the specialisation straight from a static ``run``."""

    ACTIVE = "active"  # on the stack
    DONE = "done"
    PENDING = "pending"  # waits for a deploy-time value, or for an item that does
    FAILED = "failed"
    #: A template's reference that selects nothing where the template is
    #: written, or an item of a template waiting for one: a parameter its
    #: inheritors fill (7.6). Left unresolved, with a warning; not pending.
    TEMPLATE = "template"
