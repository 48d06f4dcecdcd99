"""``cdl lsp`` with its analyses under a test's control (tests/test_lsp_while_analysing.py).

Runs the installed server as ``cdl lsp`` does, but with
``cdl.lsp._buffers.analyse`` (the function every analysis of a document
calls) wrapped: each call is recorded with the marker (``<!-- vN -->``) of
the text it reads; one made on the thread of the request loop (the main
thread) is counted there, and runs at once; one made in any other thread
waits while the test holds the analyses. The preparation of an analysis
for the requests is recorded too (its first step, pairing the main
document's text with its tree, and the resolution with provenance), and its
first step waits in the worker while the test holds the preparations; the
resolution with provenance waits at its first list extended while the test
holds the resolutions, and ``resolved vN`` is recorded when one ends. Once
an analysis's documents loaded (``loaded vN``, after the server's own hook),
it waits before resolving them while the test holds the loaded analyses.
Commands (``workspace/executeCommand``): ``test.hold``, ``test.release``,
``test.hold_preparing``, ``test.release_preparing``,
``test.hold_resolving``, ``test.release_resolving``, ``test.hold_loaded``,
``test.release_loaded``, ``test.gc`` (how many
objects the cyclic collector holds frozen, and how many it walks), and
``test.log``, which answers what was recorded: ``analysed`` (the markers,
in order), ``on_loop`` (how many ran on the request loop), ``shown`` (each
publication of diagnostics: the document and the codes shown),
``attempted`` (for each analysis, how many elements its resolution handed
the resolver: what it resolved), ``events``, all of it in one order (``ask vN``: an analysis asked of the
worker; ``analyse vN``, ``show vN [codes]``, ``pair vN``, ``resolve vN``,
``extending`` (a resolution held), ``resolved vN``),
``scanned`` (the length of each text the requests' navigation scanned for
its start tags, ``cdl.lsp._source.scan`` and ``index_tags``) and, on the request loop,
``split`` (the length of each text split into lines) and ``qnames`` (how
many names were written with prefixes); ``read``, how many start tags were
read whole (``text.tags.read_start_tag``), in any thread. ``test.paired``
answers how many tags of each open document's text are paired with their
elements. ``test.log`` also answers ``threads``, the names of the server's threads.
"""

from __future__ import annotations

import gc
import re
import threading
from collections.abc import Mapping
from typing import Any

import cdl.lsp._buffers as buffers_module
import cdl.lsp._source as source_module
import cdl.text.tags as tags_module
from cdl.lsp._navigate import navigation_of
from cdl.lsp._targets import Resolved
from cdl.lsp._written import Written
from cdl.lsp.server import build_server
from cdl.model.naming import Prefixes
from cdl.resolution.explain import Recorder
from cdl.resolution.references import ReferenceResolver
from cdl.text.lines import Lines

#: Set while analyses may run, and while preparations may.
free = threading.Event()
free.set()
preparing = threading.Event()
preparing.set()
resolving = threading.Event()
resolving.set()
#: Set while an analysis whose documents loaded may resolve them.
loading = threading.Event()
loading.set()
log: dict[str, Any] = {"analysed": [], "attempted": [], "on_loop": 0, "shown": [], "events": [], "scanned": [], "split": [], "qnames": 0, "read": 0}
analyse = buffers_module.analyse


def marker_of(text: str | None) -> str | None:
    found = re.search(r"<!-- (v\d+) -->", text or "")
    return found.group(1) if found else None


def held_analyse(path: str, texts: Mapping[str, str], settings: Any, lines: Any = None, earlier: Any = None, on_loaded: Any = None) -> Any:
    marker = marker_of(texts.get(path))
    log["analysed"].append(marker)
    log["events"].append(f"analyse {marker}")
    if threading.current_thread() is threading.main_thread():
        log["on_loop"] += 1
    else:
        free.wait(120)  # a test that forgets to release does not hang the process
    log["attempted"].append(0)
    analysing.active = True

    def loaded() -> None:
        if on_loaded is not None:
            on_loaded()
        log["events"].append(f"loaded {marker}")
        loading.wait(120)

    try:
        return analyse(path, texts, settings, lines, earlier, loaded)
    finally:
        analysing.active = False


#: Whether this thread is in an analysis (what its resolver is handed is counted).
analysing = threading.local()
run = ReferenceResolver.run


def counted_run(self: ReferenceResolver, items: Any, **options: Any) -> None:
    if getattr(analysing, "active", False):
        items = list(items)
        log["attempted"][-1] += len(items)
    run(self, items, **options)


ReferenceResolver.run = counted_run  # type: ignore[method-assign]


def main_text(written: Written) -> str | None:
    return written.texts.get(written.docs[0].url)


paired = Written.paired


def held_paired(self: Written, index: int) -> Any:
    if index == 0 and index not in self._paired and threading.current_thread() is not threading.main_thread():
        log["events"].append(f"pair {marker_of(main_text(self))}")
        preparing.wait(120)
    return paired(self, index)


resolved_init = Resolved.__init__


def logged_resolved_init(self: Resolved, written: Written, stop: Any = None) -> None:
    log["events"].append(f"resolve {marker_of(main_text(written))}")
    resolved_init(self, written, stop)
    log["events"].append(f"resolved {marker_of(main_text(written))}")


extends = Recorder.extends


def held_extends(self: Recorder, extending: Any, proto: Any) -> None:
    if not resolving.is_set() and threading.current_thread() is not threading.main_thread():
        log["events"].append("extending")
        resolving.wait(120)
    extends(self, extending, proto)


buffers_module.analyse = held_analyse  # type: ignore[assignment]
scan, index_tags = source_module.scan, source_module.index_tags


def counted_scan(text: str) -> Any:
    log["scanned"].append(len(text))
    return scan(text)


def counted_index(text: str) -> Any:
    log["scanned"].append(len(text))
    return index_tags(text)


read_start_tag = tags_module.read_start_tag


def counted_read(text: str, pos: int, **options: Any) -> Any:
    log["read"] += 1
    return read_start_tag(text, pos, **options)


source_module.scan = counted_scan  # type: ignore[assignment]
tags_module.read_start_tag = counted_read  # type: ignore[assignment]
source_module.index_tags = counted_index  # type: ignore[assignment]
split, qname = Lines.__init__, Prefixes.qname


def counted_split(self: Lines, text: str) -> None:
    if threading.current_thread() is threading.main_thread():
        log["split"].append(len(text))
    split(self, text)


def counted_qname(self: Prefixes, name: str) -> str:
    if threading.current_thread() is threading.main_thread():
        log["qnames"] += 1
    return qname(self, name)


Lines.__init__ = counted_split  # type: ignore[method-assign]
Prefixes.qname = counted_qname  # type: ignore[method-assign]
Written.paired = held_paired  # type: ignore[method-assign]
Resolved.__init__ = logged_resolved_init  # type: ignore[method-assign]
Recorder.extends = held_extends  # type: ignore[method-assign]
server = build_server()
show = server.show_problems
analyse_now = server.analyse_now


def shown(url: str, uri: str | None) -> None:
    codes = [problem.code for problem in server.buffers.problems_in(url)]
    log["shown"].append([url, codes])
    analysis = server.buffers.analyses.get(url)
    log["events"].append(f"show {marker_of(None if analysis is None else analysis.seen.get(url))} {codes}")
    show(url, uri)


def asked(paths: Any) -> None:
    log["events"].extend(f"ask {marker_of(server.buffers.texts.get(path))}" for path in sorted(paths))
    analyse_now(paths)


server.show_problems = shown
server.analyse_now = asked  # type: ignore[method-assign]


@server.command("test.hold")
def hold(*arguments: Any) -> None:
    free.clear()


@server.command("test.release")
def release(*arguments: Any) -> None:
    free.set()


@server.command("test.hold_preparing")
def hold_preparing(*arguments: Any) -> None:
    preparing.clear()


@server.command("test.release_preparing")
def release_preparing(*arguments: Any) -> None:
    preparing.set()


@server.command("test.hold_resolving")
def hold_resolving(*arguments: Any) -> None:
    resolving.clear()


@server.command("test.release_resolving")
def release_resolving(*arguments: Any) -> None:
    resolving.set()


@server.command("test.hold_loaded")
def hold_loaded(*arguments: Any) -> None:
    loading.clear()


@server.command("test.release_loaded")
def release_loaded(*arguments: Any) -> None:
    loading.set()


@server.command("test.gc")
def collector(*arguments: Any) -> dict[str, int]:
    return {"frozen": gc.get_freeze_count(), "walked": len(gc.get_objects())}


@server.command("test.answering")
def answering(*arguments: Any) -> list[list[Any]]:
    """Each open document's analysis the requests answer from: its marker, and
    whether its resolution with provenance is being made (not there)."""
    found = ((analysis, navigation_of(analysis)) for analysis in server.buffers.answering.values())
    return [[marker_of(analysis.texts.get(analysis.path)), navigation.targets.awaiting] for analysis, navigation in found if navigation is not None]


@server.command("test.paired")
def paired_now(*arguments: Any) -> list[int]:
    """How many tags of each open document's main text are paired with their elements, in the analysis its requests answer from."""
    navigations = (navigation_of(analysis) for analysis in server.buffers.answering.values())
    return [len(navigation.written.paired(0).pairing) for navigation in navigations if navigation is not None]


@server.command("test.log")
def answer_log(*arguments: Any) -> dict[str, Any]:
    return {**log, "threads": sorted(thread.name for thread in threading.enumerate())}


server.start_io()
