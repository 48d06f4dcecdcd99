"""``cdl lsp`` with its analyses under a test's control (tests/test_lsp_while_analysing.py).

Runs the installed server as ``cdl lsp`` does, but with
``cdl.lsp._buffers.analyse`` (the function every analysis of a document
calls) wrapped: each call is recorded with the marker (``<!-- vN -->``) of
the text it reads; one made on the thread of the request loop (the main
thread) is counted there, and runs at once; one made in any other thread
waits while the test holds the analyses. Commands (``workspace/executeCommand``):
``test.hold``, ``test.release``, and ``test.log``, which answers what was
recorded: ``analysed`` (the markers, in order), ``on_loop`` (how many ran
on the request loop), ``shown`` (each publication of diagnostics: the
document and the codes shown), ``scanned`` (the length of each text the
requests' navigation scanned for its start tags, ``cdl.lsp._source.scan``),
and, on the request loop, ``split`` (the length of each text split into lines)
and ``qnames`` (how many names were written with prefixes).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

import cdl.lsp._buffers as buffers_module
import cdl.lsp._source as source_module
from cdl.lsp.server import build_server
from cdl.model.naming import Prefixes
from cdl.text.lines import Lines

#: Set while analyses may run.
free = threading.Event()
free.set()
log: dict[str, Any] = {"analysed": [], "on_loop": 0, "shown": [], "scanned": [], "split": [], "qnames": 0}
analyse = buffers_module.analyse


def held_analyse(path: str, texts: Mapping[str, str], settings: Any) -> Any:
    marker = re.search(r"<!-- (v\d+) -->", texts.get(path, ""))
    log["analysed"].append(marker.group(1) if marker else None)
    if threading.current_thread() is threading.main_thread():
        log["on_loop"] += 1
    else:
        free.wait(120)  # a test that forgets to release does not hang the process
    return analyse(path, texts, settings)


buffers_module.analyse = held_analyse  # type: ignore[assignment]
scan = source_module.scan


def counted_scan(text: str) -> Any:
    log["scanned"].append(len(text))
    return scan(text)


source_module.scan = counted_scan  # type: ignore[assignment]
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
server = build_server()
show = server.show_problems


def shown(url: str, uri: str | None) -> None:
    log["shown"].append([url, [problem.code for problem in server.buffers.problems_in(url)]])
    show(url, uri)


server.show_problems = shown


@server.command("test.hold")
def hold(*arguments: Any) -> None:
    free.clear()


@server.command("test.release")
def release(*arguments: Any) -> None:
    free.set()


@server.command("test.log")
def answer_log(*arguments: Any) -> dict[str, Any]:
    return log


server.start_io()
