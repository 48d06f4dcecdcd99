"""Phase 7: the resolved document, as a tree, XML bytes, or plain data.

Entry points: :func:`build_output`, :func:`to_bytes`, :func:`to_data`.

The output round-trips: every namespace used is declared once, on the root,
with the prefixes the documents used where they agree. QName-valued CDL
attributes (cdl:type, and the cdl:ref/cdl:refroot of whatever is still
pending) are written from their resolved form with those prefixes. A default
namespace is declared only when nothing in the output is in no namespace, since
an unqualified element under a default namespace would change meaning.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TypeAlias

from lxml import etree

from ._model import (
    A_CREF,
    A_LAZY,
    A_REFROOT,
    A_TYPE,
    CDL_NS,
    ENGINE_NS,
    P_DOC,
    P_EXPR,
    P_EXT,
    P_REF,
    T_CDL,
    T_CONFIGURATION,
    T_EXPRESSION,
    T_SYSTEM,
    T_TYPES,
    T_VARIABLE,
    UP,
    Ref,
    Workspace,
    split_clark,
    tag_of,
)
from ._naming import relative_text
from ._scan import ListScan

Data: TypeAlias = str | None | dict[str, "Data"] | list["Data"]

_NS = {"e": ENGINE_NS, "cdl": CDL_NS}
#: Elements with any attribute: once the document marks are gone, these are
#: few, and they include all the output rewrites (pending references and
#: expressions, types, lazy="false"). libxml2 tests one attribute axis per
#: element much faster than the four tests that pick those out, which Python
#: then applies to the few found.
_ATTRIBUTED = ListScan("[@*]")
_UNQUALIFIED = etree.XPath("boolean(descendant-or-self::*[namespace-uri()=''])")


class _Names:
    """Output prefixes: one per URI, and maybe one URI written unprefixed."""

    def __init__(self, ws: Workspace, default: str | None) -> None:
        self.prefixes = ws.ctx.prefixes
        self.default = default

    def qname(self, clark: str) -> str:
        uri, local = split_clark(clark)
        if not uri:
            return local
        if uri == self.default:
            return local
        return f"{self.prefixes.prefix(uri)}:{local}"


def build_output(
    ws: Workspace, system_only: bool = False, keep_origins: bool = False, consume: bool = False
) -> etree._Element:
    """A new cdl:cdl tree holding the main document's resolved lists.

    ``keep_origins`` leaves the private document marks in place, for a caller
    (typed validation) that must report where each value was written. With
    ``consume`` the working trees' parts move into the output instead of
    being copied; the workspace is unusable afterwards.
    """
    ctx = ws.ctx
    main = ctx.docs[0]
    source = ws.roots[0]
    parts = [
        child
        for child in source
        if child.tag == T_SYSTEM or (not system_only and child.tag in (T_TYPES, T_CONFIGURATION))
    ]
    body = parts if consume else [copy.deepcopy(part) for part in parts]
    # First find whether any QName value is unqualified (then the main
    # document's default namespace cannot be kept), then rewrite the values
    # in one pass. One C-level scan finds every element the output changes.
    refs: list[tuple[etree._Element, str, Ref]] = []
    typed: list[tuple[etree._Element, str]] = []  # with the type as written
    content = [part for part in body if part.tag != T_TYPES]  # schemas are copied as written
    for part in content:
        etree.strip_attributes(part, P_EXT, *(() if keep_origins else (P_DOC,)))
    for el in _ATTRIBUTED(content, ws.size_bound()):
        attrib = el.attrib
        index = attrib.get(P_REF)
        if index is not None:
            refs.append((el, A_CREF, ctx.tables.refs[int(index)]))
        elif el.tag == T_EXPRESSION:
            parsed = ctx.tables.exprs[int(attrib[P_EXPR])]
            for var, var_el in zip(parsed.variables, el.iterchildren(T_VARIABLE)):
                var_el.set("name", var.name)
                refs.append((var_el, "ref", var.ref))
        if attrib.get(A_LAZY) == "false":
            del attrib[A_LAZY]
        written_type = attrib.get(A_TYPE)
        if written_type is not None:
            typed.append((el, written_type))
    for part in content:
        etree.strip_attributes(part, P_REF, P_EXPR)
    # Asked of one top level list at a time: libxml2 caps an XPath node-set
    # at ten million nodes, which a whole system can exceed.
    lists = [lst for part in content for lst in part]
    default = main.nsmap.get(None) or None
    if default and (
        any(not written_type.startswith("{") for _, written_type in typed)
        or any(_UNQUALIFIED(part) for part in lists)
        or any(_unqualified_value(ref, ws) for _, _, ref in refs)
    ):
        # An unqualified element or QName value under a default namespace
        # would change meaning.
        default = None
    names = _Names(ws, default)
    written: dict[str, str] = {}  # Clark name -> as written; values repeat a lot

    def qname(clark: str) -> str:
        text = written.get(clark)
        if text is None:
            text = written[clark] = names.qname(clark)
        return text

    for el, written_type in typed:
        el.set(A_TYPE, qname(written_type))
    for el, attr, ref in refs:
        if attr == A_CREF:
            _write_ref(el, ref, A_CREF, A_REFROOT, ws, qname)
        else:
            _write_ref(el, ref, "ref", "refroot", ws, qname)
    used_prefixes = {text.split(":", 1)[0] for text in written.values() if ":" in text}

    nsmap: dict[str | None, str] = {}
    for doc in ctx.docs:
        for uri in doc.namespaces:
            if uri and uri != default:
                nsmap[ctx.prefixes.prefix(uri)] = uri
    nsmap[ctx.prefixes.prefix(CDL_NS)] = CDL_NS
    if default:
        nsmap[None] = default
    if consume and all(nsmap.get(p) == u for p, u in source.nsmap.items() if u != ENGINE_NS):
        # The working root already declares what the output root must (the
        # usual case): keep it, so the parts stay where they are. Moving them
        # to a new root costs microseconds per element, since every namespace
        # reference below must be re-pointed at the new root's declarations.
        root = source
        for child in list(root):
            if child not in parts:
                root.remove(child)
        root.attrib.clear()
        root.text = None
    else:
        root = etree.Element(T_CDL, nsmap=nsmap)
        root.extend(body)
    if main.target_ns:
        root.set("targetNamespace", main.target_ns)
    used_prefixes.add(ctx.prefixes.prefix(CDL_NS))
    # First hoist every declaration to the root: elements are rebound to the
    # root's declarations (nsmap holds every URI any document declares), so
    # no declaration remains below the root. Only then keep the prefixes that
    # attribute values alone use: kept earlier, an inner declaration of the
    # same prefix for another URI would survive and shadow them.
    etree.cleanup_namespaces(root, top_nsmap=nsmap)
    values_nsmap = {p: nsmap[p] for p in used_prefixes if p in nsmap}
    etree.cleanup_namespaces(root, top_nsmap=values_nsmap, keep_ns_prefixes=sorted(values_nsmap))
    return root


def _unqualified_value(value: Ref, ws: Workspace) -> bool:
    """Whether a reference to be written names something in no namespace."""
    names = [s for s in value.steps if s != UP]
    if value.refroot is not None:
        names.append(next((c for c in value.refroot.candidates if c in ws.lists), value.refroot.candidates[0]))
    return any(not n.startswith("{") for n in names)


def _write_ref(
    el: etree._Element, ref: Ref, ref_attr: str, root_attr: str, ws: Workspace, qname: Callable[[str], str]
) -> None:
    """Write a pending reference back as attributes, in its relative form."""
    if ref.refroot is not None:
        # The candidate that actually names a list, so the output means what
        # the lookup found.
        found = next((c for c in ref.refroot.candidates if c in ws.lists), ref.refroot.candidates[0])
        el.set(root_attr, qname(found))
    el.set(ref_attr, relative_text([s if s == UP else qname(s) for s in ref.steps]))


def to_bytes(root: etree._Element, pretty: bool = True) -> bytes:
    """Serialize an output tree as UTF-8 XML with a declaration."""
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=pretty)


def to_data(root: etree._Element) -> dict[str, Data]:
    """Plain Python data: {'configuration': {...}, 'system': {...}}.

    A property with child elements becomes a dict (a name that repeats maps
    to a list of values, in order); a leaf becomes its text, or None when it
    has no value. Names are written as in the XML output (prefix:local).
    """
    result: dict[str, Data] = {}
    for part in root:
        if part.tag in (T_CONFIGURATION, T_SYSTEM):
            result[split_clark(part.tag)[1]] = _list_data(part)
    return result


def _qname_of(el: etree._Element) -> str:
    uri, local = split_clark(tag_of(el))
    if not uri:
        return local
    prefix = el.prefix
    return f"{prefix}:{local}" if prefix else local


def _list_data(el: etree._Element) -> Data:
    # Iterative post-order over the subtree: documents can be deep.
    results: dict[etree._Element, Data] = {}
    stack: list[tuple[etree._Element, bool]] = [(el, False)]
    while stack:
        node, expanded = stack.pop()
        if len(node) == 0:
            results[node] = node.text or None
            continue
        if not expanded:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node))
            continue
        value: dict[str, Data] = {}
        for child in node:
            key = _qname_of(child)
            item = results.pop(child)
            if key in value:
                existing = value[key]
                # An element's value is text, None or a dict, never a list: a
                # list is the one made here for a repeated name.
                if isinstance(existing, list):
                    existing.append(item)
                else:
                    value[key] = [existing, item]
            else:
                value[key] = item
        results[node] = value
    return results[el]

