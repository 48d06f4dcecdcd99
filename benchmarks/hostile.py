"""Hostile and worst-case documents, and the time bounds on handling them.

    python benchmarks/hostile.py [--reps 3]

The documents (the tests build theirs with these functions too):

- :func:`doubling_document`: level i holds two children that each take all of
  level i-1, through ``cdl:extends`` or whole-list references: 2**levels copies
  (40 levels is the acceptance document of the limits);
- :func:`copied_text_document`: one 4 MiB value copied 2,000 times (8 GiB of text);
- :func:`nested_document`: one element nested ``depth`` deep;
- :func:`entity_document`: a DTD of nested entities (the "billion laughs");
- :func:`long_chain_document`: 1,000 lists, each extending the next, written
  newest first (not hostile: the longest chain a user may write).

The bounds, each checked on the best of ``--reps`` runs, in CPU seconds (a
busy machine must not change the verdict): the 40-level doubling document
refused by ``cdl resolve`` within 5 s, interpreter start-up included, and by
the library within 5 s; the copied text refused by ``cdl resolve`` within
5 s; each of the other refusals (a small ``max_elements`` or ``max_depth``
or ``max_bytes``, an entity DTD) within 1 s; the long chain resolved within
60 s. The tests check what is refused and count the work done before a
refusal; the time bounds live here. It prints each figure against its bound
and exits 1 if one is missed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

NS = 'xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"'

#: The child processes run under this address-space cap (Linux), so that an
#: engine that does not stop a blow-up fails instead of exhausting the machine.
MEMORY_CAP = 3 << 30


def cdl_doc(system: str = "", configuration: str = "", imports: tuple[str, ...] = ()) -> str:
    """A ``cdl:cdl`` document with these imports, configuration and system, one part a line."""
    parts = [f"<cdl:cdl {NS}>"]
    parts += [f'<cdl:import location="{loc}"/>' for loc in imports]
    if configuration:
        parts.append(f"<cdl:configuration>{configuration}</cdl:configuration>")
    if system:
        parts.append(f"<cdl:system>{system}</cdl:system>")
    parts.append("</cdl:cdl>")
    return "\n".join(parts) + "\n"


def _levels(levels: int, via: str, children: str) -> str:
    """Lists l0 .. l{levels}, one a line: each child of l{i} (one per letter of
    ``children``) takes all of l{i-1}, through ``cdl:extends`` (``via="extends"``)
    or a reference to the whole list (``via="ref"``, cdl:refroot + cdl:ref=".")."""
    lists = ["<l0><v>x</v></l0>"]
    for i in range(1, levels + 1):
        take = f'cdl:extends="l{i - 1}"' if via == "extends" else f'cdl:refroot="l{i - 1}" cdl:ref="."'
        lists.append(f"<l{i}>" + "".join(f"<{name} {take}/>" for name in children) + f"</l{i}>")
    return "\n".join(lists)


def doubling_document(levels: int, via: str = "extends") -> str:
    """Level i holds two children that each take all of level i-1: 2**levels copies.

    ``via="extends"`` uses prototypes (the acceptance document: the levels are
    templates a system list extends), ``via="ref"`` value references of whole lists.
    """
    if via == "extends":
        return cdl_doc(configuration=_levels(levels, via, "ab"), system=f'<app cdl:extends="l{levels}"/>')
    return cdl_doc(system=_levels(levels, via, "ab"))


def chain_document(levels: int, via: str = "extends") -> str:
    """Level i holds one child that takes all of level i-1: depth grows by one per level."""
    return cdl_doc(system=_levels(levels, via, "c"))


def nested_document(depth: int) -> str:
    """A document whose deepest element is at ``depth`` (cdl:cdl is at depth 1)."""
    inner = depth - 3  # cdl:cdl / cdl:system / s / a...
    return cdl_doc(system="<s>" + "<a>" * inner + "x" + "</a>" * inner + "</s>")


def copied_text_document(via: str, size: int = 4 << 20, copies: int = 2000) -> str:
    """One value of ``size`` characters taken ``copies`` times, by reference or by extends."""
    big = "x" * size
    if via == "ref":
        takers = "".join(f'<r{i} cdl:refroot="blob" cdl:ref="/v"/>' for i in range(copies))
        return cdl_doc(system=f"<blob><v>{big}</v></blob><s>{takers}</s>")
    takers = "".join(f'<e{i} cdl:extends="blob"/>' for i in range(copies))
    return cdl_doc(system=f"<blob><v>{big}</v></blob>{takers}")


#: Ten levels of entities, each ten of the one below: 10**9 characters expanded.
BILLION_LAUGHS = (
    '<?xml version="1.0"?>\n<!DOCTYPE cdl:cdl [<!ENTITY a "aaaaaaaaaa">'
    + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(9))
    + "]>\n"
)


def entity_document(doctype: str = BILLION_LAUGHS, depth: int = 4, body: str = "&j;") -> bytes:
    """``doctype`` before a document using ``body`` at ``depth`` (past 256: the deep parser)."""
    inner = max(depth - 3, 1)
    return (doctype + f"<cdl:cdl {NS}><cdl:system><s>" + "<a>" * inner + body + "</a>" * inner + "</s></cdl:system></cdl:cdl>").encode()


def long_chain_document(n: int = 1000) -> str:
    """``n`` lists, L{i} extending L{i-1} with one property of its own, written newest first."""
    lists = "".join(f"<L{i} cdl:extends='L{i - 1}'><p{i}>{i}</p{i}></L{i}>" for i in range(n, 0, -1))
    return cdl_doc(configuration=lists + "<L0><base>0</base></L0>")


# ---------------------------------------------------------------------------
# Measuring


def _cap_memory() -> None:  # a subprocess preexec_fn
    if sys.platform == "linux":
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cli_refusal(text: str, *options: str) -> float:
    """CPU seconds of ``cdl resolve`` refusing ``text`` (exit 1), start-up included."""
    with tempfile.TemporaryDirectory() as tmp:
        main = os.path.join(tmp, "hostile.cdl")
        with open(main, "w", encoding="utf-8") as out:
            out.write(text)
        before = _children_cpu()
        proc = subprocess.run(
            [sys.executable, "-m", "cdl", "resolve", main, "-o", os.path.join(tmp, "out.cdl"), *options],
            capture_output=True,
            text=True,
            timeout=600,
            preexec_fn=_cap_memory,
        )
        spent = _children_cpu() - before
    if proc.returncode != 1 or "[LIMIT_EXCEEDED]" not in proc.stderr:
        raise SystemExit(f"cdl resolve did not refuse the document: exit {proc.returncode}\n{proc.stderr}")
    return spent


def library_refusal(source: str | bytes, code: str, **limits: int) -> float:
    """CPU seconds of ``cdl.load(source).resolve()`` refusing with ``code``, in this process."""
    import cdl

    data = source.encode() if isinstance(source, str) else source
    start = time.process_time()
    try:
        cdl.load(data, limits=cdl.Limits(**limits)).resolve()
    except cdl.CdlError as error:
        if error.code != code:
            raise
        return time.process_time() - start
    raise SystemExit(f"the library did not refuse the document with {code}")


def library_resolution(text: str) -> float:
    """CPU seconds of ``cdl.load(text).resolve().to_bytes()``."""
    import cdl

    start = time.process_time()
    cdl.load(text.encode()).resolve().to_bytes()
    return time.process_time() - start


def bounds() -> list[tuple[str, float, Callable[[], float]]]:
    """(what, bound in seconds, one measurement) for every bound."""
    cases: list[tuple[str, float, Callable[[], float]]] = []
    for via in ("extends", "ref"):
        doubling, sixty = doubling_document(40, via), doubling_document(60, via)
        cases += [
            (f"40-level doubling ({via}) refused by cdl resolve", 5.0, lambda d=doubling: cli_refusal(d)),
            (f"40-level doubling ({via}) refused by the library", 5.0, lambda d=doubling: library_refusal(d, "LIMIT_EXCEEDED")),
            (f"4 MiB copied 2,000 times ({via}) refused by cdl resolve", 5.0, lambda v=via: cli_refusal(copied_text_document(v))),
            (
                f"40-level doubling ({via}), max_elements 1,000",
                1.0,
                lambda d=doubling: library_refusal(d, "LIMIT_EXCEEDED", max_elements=1000),
            ),
            (
                f"60-level doubling ({via}), max_elements 10,000",
                1.0,
                lambda d=sixty: library_refusal(d, "LIMIT_EXCEEDED", max_elements=10_000),
            ),
        ]
    padded = ("<!--" + "x" * 2_000_000 + "-->" + nested_document(5)).encode()
    cases += [
        ("2,000 levels deep, max_depth 100", 1.0, lambda: library_refusal(nested_document(2000), "LIMIT_EXCEEDED", max_depth=100)),
        ("2 MB, max_bytes 1,000,000", 1.0, lambda: library_refusal(padded, "LIMIT_EXCEEDED", max_bytes=1_000_000)),
        ("billion laughs refused (libxml2)", 1.0, lambda: library_refusal(entity_document(depth=4), "XML_DTD")),
        ("billion laughs refused (deep parser)", 1.0, lambda: library_refusal(entity_document(depth=400), "XML_DTD")),
        ("1,000-long extends chain resolved", 60.0, lambda: library_resolution(long_chain_document(1000))),
    ]
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    ok = True
    for what, bound, measure in bounds():
        best = min(measure() for _ in range(args.reps))
        met = best <= bound
        ok &= met
        print(f"  {what:<56} {best:8.3f} s  bound <= {bound:g} s  {'ok' if met else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
