"""What the other design would cost: resolving on Python data instead of lxml's trees.

    python benchmarks/sketch.py N [--shape base|fanin|fanout|wide] [--reps 3] [--engine DIR]

A measurement, not an engine. Issue 13 asked whether resolution could come
within 10x of the floor (lxml parsing the input and serializing the output);
eight passes over the engine, which works on lxml's trees, brought it to
10.2-11.2x. The design left untried reads each document once into Python
data, merges prototypes by sharing what templates give instead of copying
it, resolves paths by dictionary lookups, and writes the output once at the
end. This script builds the minimum of that design on a generated system
(``generate.py``) and times each stage in a fresh process, beside the engine
and the floor measured the way ``run.py`` measures them:

- **parse**: lxml, with the engine's parser options (the floor's parse);
- **read**: lxml's trees into nested lists ``[tag, attributes, text,
  children, line]``, with the source line an engine needs for its errors,
  and absolute paths made relative (as the loader does);
- **inherit**: each template flattened once; each component merged by name
  over its prototype, sharing the prototype's leaves and copying only its
  containers (a resolved value replaces a leaf in its own container);
- **references**: every cdl:ref followed by name (an index for wide
  parents), a reference found on the way resolved first; each
  cdl:expression's variables followed the same way and their values joined;
- **write**: the output text built in Python, indented as lxml indents it;
  or an lxml tree built from the data and serialized by lxml (both are run);
- **free**: the data dropped, inside the clock as the engine's trees are.

Everything the engine does beyond that is left out: no namespaces beyond
the prefixes of the root, no checks (names, limits, depth, types, required
properties), no laziness, no errors, no provenance, no XPath; attribute
inheritance is the simplest possible. Each stage is therefore a lower bound
of what a complete engine of that design would spend on it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from generate import SHAPES, generate  # noqa: E402

# The engine's names and parser (nothing else of the engine runs in the sketch).
from cdl._children import WIDE  # noqa: E402
from cdl._load import hardened_parser  # noqa: E402
from cdl._model import A_CREF, A_EXTENDS, A_REFROOT, T_CDL, T_CONFIGURATION, T_EXPRESSION, T_SYSTEM, T_VARIABLE  # noqa: E402

#: A node: [tag, attributes or None, text, children, source line].
Node = list[Any]


def _read(root: Any) -> Node:
    """lxml's tree into nodes, with explicit stacks; absolute paths made relative."""
    top = [root.tag, None, None, [], root.sourceline]
    stack = [(root, top, -2)]  # depth: 0 for a top-level list
    while stack:
        el, node, depth = stack.pop()
        kids = node[3]
        for child in el:
            items = child.items()
            attributes = dict(items) if items else None
            if attributes is not None:
                # A variable's path starts where its expression's holder is.
                key, up = ("ref", depth - 2) if child.tag == T_VARIABLE else (A_CREF, depth)
                path = attributes.get(key)
                if path is not None and path[:1] == "/" and "refroot" not in attributes and A_REFROOT not in attributes:
                    attributes[key] = "../" * up + path[1:]
            made = [child.tag, attributes, child.text, [], child.sourceline]
            kids.append(made)
            if len(child):
                stack.append((child, made, depth + 1))
    return top


def _lists(doc: Node, kind: str) -> list[Node]:
    return [lst for part in doc[3] if part[0] == kind for lst in part[3]]


class _Inherit:
    """Prototype merging on nodes: templates flattened once, leaves shared."""

    def __init__(self, templates: dict[str, Node]) -> None:
        self.templates = templates
        self.flat: dict[str, Node] = {}

    def flatten(self, name: str) -> Node:
        done = self.flat.get(name)
        if done is None:
            written = self.templates[name]
            done = self.flat[name] = self.merge(written)
        return done

    def merge(self, node: Node) -> Node:
        """``node`` with every cdl:extends at or below it merged (recursive: generated documents are shallow)."""
        kids = node[3]
        if kids:
            kids = [self.merge(kid) if kid[3] or (kid[1] and A_EXTENDS in kid[1]) else kid for kid in kids]
        attributes = node[1]
        extends = attributes.get(A_EXTENDS) if attributes else None
        if extends is None:
            return [node[0], attributes, node[2], kids, node[4]] if kids else node
        proto = self.flatten(extends.rpartition(":")[2])
        kept = {k: v for k, v in attributes.items() if k != A_EXTENDS} or None
        return [node[0], kept, node[2], self.children(proto[3], kids), node[4]]

    def children(self, inherited: list[Node], own: list[Node]) -> list[Node]:
        merged = list(inherited)
        where = {child[0]: i for i, child in enumerate(merged)}
        for child in own:
            i = where.get(child[0])
            if i is None:
                merged.append(child)
                continue
            old = merged[i]
            # (A child that extends a prototype of its own was merged with it
            # already, by merge(), and merges here like any other.)
            if child[3] and old[3]:
                merged[i] = [child[0], child[1], child[2], self.children(old[3], child[3]), child[4]]
            else:
                attributes = {**old[1], **child[1]} if old[1] and child[1] else (child[1] or old[1])
                merged[i] = [child[0], attributes, child[2] if child[2] is not None else old[2], child[3] or old[3], child[4]]
        return merged


def _own_containers(node: Node) -> Node:
    """A copy of ``node``'s containers (lists of children); leaves stay shared."""
    top = [node[0], node[1], node[2], list(node[3]), node[4]]
    stack = [top]
    while stack:
        cur = stack.pop()
        kids = cur[3]
        for i, child in enumerate(kids):
            if child[3]:
                kids[i] = copy = [child[0], child[1], child[2], list(child[3]), child[4]]
                stack.append(copy)
    return top


class _Resolve:
    """Paths followed on nodes; a reference found on the way is resolved first."""

    def __init__(self, tops: dict[str, Node]) -> None:
        self.tops = tops
        self.index: dict[int, dict[str, Node]] = {}
        self.steps: dict[str, list[str]] = {}
        self.parts: dict[str, list[str]] = {}
        self.followed = 0

    def child(self, node: Node, name: str) -> Node | None:
        kids: list[Node] = node[3]
        if len(kids) > WIDE:
            table = self.index.get(id(node))
            if table is None:
                table = self.index[id(node)] = {kid[0]: kid for kid in kids}
            return table.get(name)
        for kid in kids:
            if kid[0] == name:
                return kid
        return None

    def target(self, path: str, refroot: str | None, chain: list[Node], depth: int = 0) -> Node | None:
        """The node ``path`` selects from the parent ``chain[-1]`` (or from ``refroot``)."""
        steps = self.steps.get(path)
        if steps is None:
            steps = self.steps[path] = [step for step in path.split("/") if step]
        if refroot is not None:
            top = self.tops.get(refroot.rpartition(":")[2])
            if top is None:
                return None
            chain = [top]
        else:
            chain = list(chain)
        for step in steps:
            if step == "..":
                chain.pop()
                if not chain:
                    return None
            else:
                found = self.child(chain[-1], step)
                if found is None:
                    return None
                chain.append(found)
        found = chain.pop()
        attributes = found[1]
        if attributes and A_CREF in attributes and depth < 8:
            # A reference: resolved first, in its own container.
            value = self.target(attributes[A_CREF], attributes.get(A_REFROOT), chain, depth + 1)
            if value is None:
                return None
            parent = chain[-1][3]
            at = next(i for i, kid in enumerate(parent) if kid is found)
            parent[at] = found = self.resolved(found, value)
        return found

    def resolved(self, item: Node, value: Node) -> Node:
        self.followed += 1
        kept = {k: v for k, v in item[1].items() if k != A_CREF and k != A_REFROOT} or None
        return [item[0], kept, value[2], value[3], item[4]]

    def run(self, top: Node) -> None:
        stack = [[top]]
        while stack:
            chain = stack.pop()
            kids = chain[-1][3]
            for i, kid in enumerate(kids):
                attributes = kid[1]
                if attributes is not None and A_CREF in attributes:
                    value = self.target(attributes[A_CREF], attributes.get(A_REFROOT), chain)
                    if value is not None:
                        kids[i] = self.resolved(kid, value)
                elif kid[3] and kid[3][0][0] == T_EXPRESSION:
                    self.expression(kids, i, chain)
                elif kid[3]:
                    stack.append([*chain, kid])

    def expression(self, kids: list[Node], i: int, chain: list[Node]) -> None:
        holder = kids[i]
        expression = holder[3][0]
        values = {}
        for variable in expression[3]:
            value = self.target(variable[1]["ref"], variable[1].get("refroot"), chain)
            if value is None:
                return
            values[variable[1]["name"]] = value[2] or ""
        parts = self.concat(expression[1]["value-of"])
        self.followed += 1
        kids[i] = [holder[0], holder[1], "".join([values[p[1:]] if p[:1] == "$" else p for p in parts]), [], holder[4]]

    def concat(self, text: str) -> list[str]:
        """The arguments of ``concat(...)``: ``$name`` or a literal's text (parsed once per text)."""
        parts = self.parts.get(text)
        if parts is None:
            inner = text[text.index("(") + 1 : text.rindex(")")]
            parts = self.parts[text] = [a.strip().strip("'") for a in inner.split(",")]
        return parts


def _escape(text: str) -> str:
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def _write(tops: list[Node], nsmap: dict[str | None, str]) -> bytes:
    """The output text, indented as lxml's pretty_print indents it."""
    prefixes = {uri: prefix for prefix, uri in nsmap.items() if prefix}
    names: dict[str, str] = {}

    def qname(tag: str) -> str:
        name = names.get(tag)
        if name is None:
            uri, _, local = tag[1:].partition("}") if tag[:1] == "{" else ("", "", tag)
            name = names[tag] = f"{prefixes[uri]}:{local}" if uri else local
        return name

    declarations = "".join(f' xmlns:{p}="{u}"' for p, u in nsmap.items() if p)
    out = ["<?xml version='1.0' encoding='UTF-8'?>\n", f"<cdl:cdl{declarations}>\n", "  <cdl:system>\n"]
    add = out.append
    stack: list[tuple[Node, int, bool]] = [(top, 2, False) for top in reversed(tops)]
    while stack:
        node, level, closing = stack.pop()
        indent = "  " * level
        tag = qname(node[0])
        if closing:
            add(f"{indent}</{tag}>\n")
            continue
        attributes = node[1]
        written = "".join([f' {qname(k)}="{_escape(v).replace(chr(34), "&quot;")}"' for k, v in attributes.items()]) if attributes else ""
        kids = node[3]
        if kids:
            add(f"{indent}<{tag}{written}>\n")
            stack.append((node, level, True))
            stack.extend((kid, level + 1, False) for kid in reversed(kids))
        elif node[2]:
            add(f"{indent}<{tag}{written}>{_escape(node[2])}</{tag}>\n")
        else:
            add(f"{indent}<{tag}{written}/>\n")
    out.append("  </cdl:system>\n</cdl:cdl>\n")
    return "".join(out).encode()


def _build_lxml(tops: list[Node], nsmap: dict[str | None, str]) -> bytes:
    from lxml import etree

    root = etree.Element(T_CDL, nsmap=nsmap)
    system = etree.SubElement(root, T_SYSTEM)
    sub = etree.SubElement
    stack = [(top, system) for top in reversed(tops)]
    while stack:
        node, parent = stack.pop()
        el = sub(parent, node[0], node[1]) if node[1] else sub(parent, node[0])
        if node[2]:
            el.text = node[2]
        stack.extend((kid, el) for kid in reversed(node[3]))
    return bytes(etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True))


def sketch(directory: str, with_lxml: bool, output: str) -> dict[str, float]:
    """Time each stage of the sketch once (CPU seconds), and write its output to ``output``;
    the collector is off, as in the engine."""
    from lxml import etree

    gc.disable()
    clock = time.process_time
    times: dict[str, float] = {}
    start = clock()
    # The engine's own parser, with the options its loader passes, on the
    # bytes read first (_load._parse: the parser's resolver refuses every load).
    parser = hardened_parser(remove_blank_text=True, remove_comments=True, remove_pis=True, collect_ids=False)
    roots = []
    for name in ("system.cdl", "templates.cdl"):
        with open(os.path.join(directory, name), "rb") as handle:
            roots.append(etree.fromstring(handle.read(), parser))
    system_root, templates_root = roots
    times["parse"] = clock() - start

    start = clock()
    system, templates = _read(system_root), _read(templates_root)
    nsmap = dict(system_root.nsmap)
    del system_root, templates_root, roots
    times["read"] = clock() - start

    start = clock()
    inherit = _Inherit({t[0]: t for t in _lists(templates, T_CONFIGURATION) + _lists(system, T_CONFIGURATION)})
    configuration = [_own_containers(inherit.merge(top)) for top in _lists(system, T_CONFIGURATION)]
    tops = {top[0]: top for top in configuration}
    # (In the wide shape, one list holds every component: merge() reaches them.)
    components = [_own_containers(inherit.merge(top)) for top in _lists(system, T_SYSTEM)]
    tops.update((top[0], top) for top in components)
    for name in inherit.templates:
        tops.setdefault(name, inherit.flatten(name))
    times["inherit"] = clock() - start

    start = clock()
    resolve = _Resolve(tops)
    # The configuration's own lists first: targets hold no reference when copied
    # (the engine resolves a target's subtree before copying it).
    for top in [*configuration, *components]:
        resolve.run(top)
    times["references"] = clock() - start

    start = clock()
    data = _build_lxml(components, nsmap) if with_lxml else _write(components, nsmap)
    times["write (lxml)" if with_lxml else "write"] = clock() - start
    followed = resolve.followed
    with open(output, "wb") as handle:
        handle.write(data)
    size = len(data)

    # Freed inside the clock, as the engine's measurement frees its trees.
    start = clock()
    del system, templates, inherit, configuration, tops, components, resolve, data
    times["free"] = clock() - start
    times["followed"] = followed
    times["bytes"] = size
    return times


def _child(args: list[str]) -> dict[str, float]:
    """Run one measurement in this (fresh) process."""
    if args[0] == "sketch":
        return sketch(args[1], with_lxml=args[2] == "lxml", output=args[3])
    # The engine and the floor exactly as run.py measures them.
    import run

    if args[0] == "engine":
        return {k: v for k, v in run.child_engine(args[1], args[2]).items() if isinstance(v, (int, float))}
    return {k: v for k, v in run.child_floor(args[1:-1], args[-1]).items() if isinstance(v, (int, float))}


def _fresh(args: list[str], engine: str | None) -> dict[str, float]:
    env = dict(os.environ)
    if engine:
        env["PYTHONPATH"] = os.path.abspath(engine) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", *args], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"child exited {proc.returncode}")
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        print(json.dumps(_child(argv[1:])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int)
    parser.add_argument("--shape", choices=SHAPES, default="base")
    parser.add_argument("--reps", type=int, default=3, help="fresh processes per measurement; the best is shown")
    parser.add_argument("--engine", metavar="DIR", help="measure DIR/cdl instead of the installed engine")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        system = os.path.join(work, "system.cdl")
        generate(args.n, work, shape=args.shape)
        output = os.path.join(work, "out.xml")
        engine = floor = None
        best: dict[str, dict[str, float]] = {}
        for _ in range(args.reps):
            # Interleaved, so that a slow minute on a shared machine touches all of them.
            run_engine = _fresh(["engine", system, output], args.engine)
            engine = run_engine["time"] if engine is None else min(engine, run_engine["time"])
            run_floor = _fresh(["floor", system, os.path.join(work, "templates.cdl"), output], None)
            floor = run_floor["time"] if floor is None else min(floor, run_floor["time"])
            for kind in ("python", "lxml"):
                stages = _fresh(["sketch", work, kind, os.path.join(work, f"sketch-{kind}.xml")], None)
                total = sum(v for k, v in stages.items() if k not in ("followed", "bytes"))
                if kind not in best or total < best[kind]["total"]:
                    best[kind] = {**stages, "total": total}
        compared = {kind: _compare(os.path.join(work, f"sketch-{kind}.xml"), output) for kind in best}
    assert engine is not None and floor
    print(f"N = {args.n}, shape {args.shape}, best of {args.reps} fresh processes (CPU seconds)")
    print(f"floor (lxml parse + serialize)   {floor:7.3f}")
    print(f"engine (cdl, end to end)         {engine:7.3f}   {engine / floor:5.1f}x the floor")
    for kind, stages in best.items():
        print(f"sketch, output written with {kind}:")
        for stage, seconds in stages.items():
            if stage in ("followed", "bytes", "total"):
                continue
            print(f"  {stage:30s} {seconds:7.3f}")
        print(f"  {'total':30s} {stages['total']:7.3f}   {stages['total'] / floor:5.1f}x the floor")
        print(f"  ({int(stages['followed'])} references and expressions followed, {int(stages['bytes'])} bytes written)")
        print(f"  {compared[kind]}")
    return 0


def _compare(sketch_output: str, engine_output: str) -> str:
    """How the sketch's output differs from the engine's: the lines of the
    system, compared in order (the sketch writes no configuration)."""
    with open(sketch_output, "rb") as a, open(engine_output, "rb") as b:
        ours, theirs = (data[data.index(b"<cdl:system>") :].splitlines() for data in (a.read(), b.read()))
    differ = [t for o, t in zip(ours, theirs) if o != t]
    lazy = sum(1 for line in differ if b"cdl:lazy" in line or b"cdl:ref" in line)
    if len(ours) != len(theirs):
        return f"output: {len(ours)} lines of the system, the engine's {len(theirs)}"
    return (
        f"output: {len(differ)} of {len(theirs)} lines of the system differ from the engine's, "
        f"{lazy} of them references the engine leaves unresolved (lazy; the sketch has no laziness)"
    )


if __name__ == "__main__":
    sys.exit(main())
