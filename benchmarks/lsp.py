"""How fast ``cdl lsp`` answers on a large system, also while it analyses
(issue 25, point 10; issue 31, point 2).

Starts ``cdl lsp`` as an editor would (a pygls client over stdio), opens the
synthetic system of N components (``benchmarks/synthetic.py``) and measures, from
the client's side:

- **open**: from didOpen to the first diagnostics;
- **ready**: from didOpen to the first hover answered (the requests wait for
  the document's first analysis and what the server prepares from it);
- **symbols**: a ``documentSymbol`` request (the server lists at most
  ``symbolLimit`` symbols, 5,000 by default; **symbols listed** counts them);
- **change**: from the last of a burst of changes (a value typed in the
  middle of the system) to their diagnostics (the server waits
  ``cdl.lsp.server.DEBOUNCE`` seconds for typing to pause, and that wait is
  included);
- **change, typing on**: the same, for a burst typed 2.5 s after the
  first's diagnostics, while the server prepares what it analysed for the
  requests (at 20,000, by then in its resolution with provenance, which
  takes several seconds and gives way to the newer analysis);
- **hover / definition / completion, during**: the slowest of these
  requests sent one after another while that analysis runs (from the
  burst's first change to its diagnostics), on components away from the edit;
  **answered during** counts them (the server's interpreter answers them
  while it analyses: the more answered, the longer the change takes);
- **completion, typed**: completion in a ``cdl:extends`` value just typed
  (its quote is the trigger character), answered from the text being typed;
- **hover / definition / completion, idle**: the slowest of a few once the
  analysis is done;
- **memory**: the server's peak and final resident memory (``VmHWM``,
  ``VmRSS``) once the last analysis is prepared for the requests (a hover
  where text was typed waits for that), and the peak of one static
  resolution of the same system in a fresh process
  (``cdl.load(system).resolve()``), for the ratio.

Usage (from the repository root, with ``cdl[lsp]`` importable)::

    python benchmarks/lsp.py [N ...] [--reps 1] [--json FILE]

Not a test: the figures depend on the machine. Targets (issue 31, point 2),
at N = 2,000 and 20,000: hover, definition and completion within 100 ms at
any moment, during an analysis too; ``documentSymbol`` within 1 s at 20,000;
diagnostics within 1 s of a change at 2,000 and 4 s at 20,000; the server's
memory within 3x one static resolution's peak.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import BaseLanguageClient

from synthetic import generate

ROOT = Path(__file__).resolve().parent.parent
#: The figures, in the order they are shown, and their targets (seconds, or a ratio) by N.
FIGURES = (
    "open", "ready", "symbols", "symbols listed", "change", "change, typing on", "answered during",
    "hover, during", "definition, during", "completion, during", "completion, typed",
    "hover, idle", "definition, idle", "completion, idle",
    "peak MB", "resident MB", "resolution MB", "peak / resolution",
)  # fmt: skip
TARGETS = {
    "symbols": {20000: 1.0},
    "change": {2000: 1.0, 20000: 4.0},
    "change, typing on": {2000: 1.0, 20000: 4.0},
    "peak / resolution": {2000: 3.0, 20000: 3.0},
    **{f"{request}, {when}": {2000: 0.1, 20000: 0.1} for request in ("hover", "definition", "completion") for when in ("during", "idle")},
    "completion, typed": {2000: 0.1, 20000: 0.1},
}


class _Client(BaseLanguageClient):
    def __init__(self) -> None:
        super().__init__("cdl-lsp-benchmark", "1")
        self.published: asyncio.Queue[types.PublishDiagnosticsParams] = asyncio.Queue()

        @self.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _published(params: types.PublishDiagnosticsParams) -> None:
            self.published.put_nowait(params)

        @self.feature(types.WINDOW_SHOW_MESSAGE)
        def _shown(params: types.ShowMessageParams) -> None:
            pass  # the notice that the symbols were cut (symbolLimit)


def _position(text: str, offset: int) -> types.Position:
    """The position of ``offset`` in ``text`` (ASCII, lines ending at LF)."""
    return types.Position(text.count("\n", 0, offset), offset - (text.rfind("\n", 0, offset) + 1))


def _difference(old: str, new: str) -> tuple[int, int, int]:
    """Where ``old`` and ``new`` differ: the offset both start differing at,
    and where that stretch ends in each (their common prefix and suffix,
    found by halving: slices compared in C)."""
    low, high = 0, min(len(old), len(new))
    while low < high:
        mid = (low + high + 1) // 2
        if old[:mid] == new[:mid]:
            low = mid
        else:
            high = mid - 1
    start = low
    low, high = 0, min(len(old), len(new)) - start
    while low < high:
        mid = (low + high + 1) // 2
        if old[len(old) - mid :] == new[len(new) - mid :]:
            low = mid
        else:
            high = mid - 1
    return start, len(old) - low, len(new) - low


def _at(text: str, needle: str, nth: int, shift: int) -> types.Position:
    """The position ``shift`` characters into the ``nth`` occurrence of ``needle`` (ASCII text)."""
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(needle, offset + 1)
    return _position(text, offset + shift)


class _Session:
    """One server on one system: the requests a user makes, timed."""

    def __init__(self, client: _Client, uri: str, text: str, n: int) -> None:
        self.client, self.uri, self.text, self.n = client, uri, text, n
        self.version = 1
        self._spots: dict[tuple[int, str, int, int], types.Position] = {}

    def ident(self) -> types.TextDocumentIdentifier:
        return types.TextDocumentIdentifier(self.uri)

    async def diagnostics(self) -> None:
        while (await asyncio.wait_for(self.client.published.get(), 600)).uri != self.uri:
            pass

    def change(self, text: str) -> None:
        """Send ``text`` as an editor does under incremental sync: the one
        range that differs from the text before, and what replaces it."""
        self.version += 1
        start, old_end, new_end = _difference(self.text, text)
        change = types.TextDocumentContentChangePartial(
            range=types.Range(_position(self.text, start), _position(self.text, old_end)), text=text[start:new_end]
        )
        self.text = text
        params = types.DidChangeTextDocumentParams(types.VersionedTextDocumentIdentifier(version=self.version, uri=self.uri), [change])
        self.client.text_document_did_change(params)

    def spot(self, needle: str, k: int, shift: int) -> types.Position:
        """``needle`` in component k of the spread ones (k-th of 8, away from
        the middle's edit), found once per version of the text: the search
        reads the text up to the spot, which at 20,000 components took the
        client longer than the server took to answer."""
        key = (self.version, needle, k, shift)
        if key not in self._spots:
            count = self.text.count(needle)
            self._spots[key] = _at(self.text, needle, (count * (2 * k + 1)) // 17 if count > 1 else 0, shift)
        return self._spots[key]

    async def timed(self, kind: str, k: int) -> float:
        """The time ``kind`` takes to answer at spread component k, from
        sending it (the position is found before the clock starts)."""
        client, ident = self.client, self.ident()
        if kind == "hover":
            position = self.spot("<name>", k, 2)
        else:
            position = self.spot('cdl:extends="t:', k, 16 if kind == "definition" else 13)
        began = time.perf_counter()
        if kind == "hover":
            answer: object = await client.text_document_hover_async(types.HoverParams(ident, position))
        elif kind == "definition":
            answer = await client.text_document_definition_async(types.DefinitionParams(ident, position))
        else:
            answer = await client.text_document_completion_async(types.CompletionParams(ident, position))
        took = time.perf_counter() - began
        if not answer:
            raise SystemExit(f"no {kind} answered at N = {self.n}")
        return took


async def _during(session: _Session, analysed: asyncio.Task[None]) -> dict[str, float]:
    """The slowest hover, definition and completion sent one after another until ``analysed`` is done."""
    times: dict[str, list[float]] = {"hover": [], "definition": [], "completion": []}
    k = 0
    while not analysed.done():
        for kind, found in times.items():
            found.append(await session.timed(kind, k % 8))
        k += 1
    await analysed
    figures = {f"{kind}, during": max(found) for kind, found in times.items() if found}
    figures["answered during"] = sum(len(found) for found in times.values())
    return figures


async def _measure(n: int, directory: str) -> dict[str, float]:
    _, system = generate(n, directory)
    path = Path(system).resolve()
    uri, text = path.as_uri(), path.read_text(encoding="utf-8")
    client = _Client()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    await client.start_io(sys.executable, "-m", "cdl", "lsp", env=env)
    session = _Session(client, uri, text, n)
    figures: dict[str, float] = {}
    try:
        await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=path.parent.as_uri()))
        client.initialized(types.InitializedParams())
        began = time.perf_counter()
        client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "cdl", 1, text)))
        await session.diagnostics()
        figures["open"] = time.perf_counter() - began
        await session.timed("hover", 0)
        figures["ready"] = time.perf_counter() - began
        began = time.perf_counter()
        listed = await client.text_document_document_symbol_async(types.DocumentSymbolParams(session.ident()))
        figures["symbols"] = time.perf_counter() - began
        figures["symbols listed"] = _count(listed or [])

        # A value typed in the middle of the system, a character at a time.
        middle = text.index("<name>", len(text) // 2) + len("<name>")
        for typed in range(1, 6):
            session.change(text[:middle] + "x" * typed + text[middle:])
            if typed == 1:
                analysed = asyncio.ensure_future(session.diagnostics())
                during = asyncio.ensure_future(_during(session, analysed))
            began = time.perf_counter()
        await analysed
        figures["change"] = time.perf_counter() - began
        figures.update(await during)

        # Typing goes on a moment later, while the server prepares for the
        # requests what it just analysed.
        await asyncio.sleep(2.5)
        typed_on = session.text
        for typed in range(1, 6):
            session.change(typed_on[:middle] + "y" * typed + typed_on[middle:])
        began = time.perf_counter()
        await session.diagnostics()
        figures["change, typing on"] = time.perf_counter() - began

        # A component being typed after the middle one: completion at its trigger character.
        before = session.text
        typing = before[:middle] + before[middle:].replace("\n    <svc", '\n    <typed cdl:extends=""/>\n    <svc', 1)
        session.change(typing)
        began = time.perf_counter()
        position = _at(typing, '<typed cdl:extends="', 0, len('<typed cdl:extends="'))
        answer = await client.text_document_completion_async(types.CompletionParams(session.ident(), position))
        figures["completion, typed"] = time.perf_counter() - began
        if not answer:
            raise SystemExit(f"no completion where typed at N = {n}")
        await session.diagnostics()

        for kind in ("hover", "definition", "completion"):
            figures[f"{kind}, idle"] = max([await session.timed(kind, k) for k in range(4)])
        # A hover where the text was typed waits until the requests answer
        # from the last analysis; then until it says where a value comes from,
        # the last analysis's resolution with provenance is made: the peak
        # includes that.
        await client.text_document_hover_async(types.HoverParams(session.ident(), position))
        await _explained(session)
        figures.update(_memory(client))
    finally:
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
    figures["resolution MB"] = _resolution_peak(system)
    figures["peak / resolution"] = figures["peak MB"] / figures["resolution MB"]
    return figures


async def _explained(session: _Session) -> None:
    """Return once a hover says where a value comes from (after an edit it
    says that is being worked out until the resolution with provenance of
    the version it answers from is made)."""
    for _ in range(1200):
        answer = await session.client.text_document_hover_async(types.HoverParams(session.ident(), session.spot("<name>", 0, 2)))
        if answer is not None and "written" in str(answer.contents):
            return
        await asyncio.sleep(0.1)
    raise SystemExit(f"no hover explained a value at N = {session.n}")


def _count(symbols: Sequence[object]) -> int:
    """How many symbols ``symbols`` holds, at every depth."""
    stack, total = list(symbols), 0
    while stack:
        symbol = stack.pop()
        total += 1
        stack.extend(getattr(symbol, "children", None) or [])
    return total


def _memory(client: _Client) -> dict[str, float]:
    """The server process's peak and current resident memory (Linux: /proc)."""
    server = client._server  # the pygls client's process: the only handle on it
    assert server is not None
    status = Path(f"/proc/{server.pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {"peak MB": int(fields["VmHWM"].split()[0]) / 1024, "resident MB": int(fields["VmRSS"].split()[0]) / 1024}


def _resolution_peak(system: str) -> float:
    """The peak resident memory (MB) of one static resolution of ``system``, in a fresh process.

    Its ``VmHWM``, not ``getrusage``'s ``ru_maxrss``: Linux carries the
    forking process's peak through ``exec`` into the child's ``ru_maxrss``,
    which then measured this client (at 20,000, 1,086 MB where the
    resolution's own peak is 461 MB)."""
    code = (
        "import sys, cdl; cdl.load(sys.argv[1]).resolve(); "
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code, system], check=True, capture_output=True, text=True, env=env).stdout
    return int(out.split()[-1]) / 1024


def _row(n: int, figures: dict[str, float]) -> str:
    cells = []
    for name in FIGURES:
        value = figures.get(name)
        target = TARGETS.get(name, {}).get(n)
        mark = "" if target is None or value is None else (" ok" if value <= target else " MISSED")
        cells.append(f"{name}: {'-' if value is None else f'{value:.3f}'}{mark}")
    return f"N = {n}\n  " + "\n  ".join(cells)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[2000, 20000], help="numbers of components (default 2000 20000)")
    parser.add_argument("--reps", type=int, default=1, help="runs per size; the median of each figure is shown")
    parser.add_argument("--json", help="write the figures of every run to this file")
    args = parser.parse_args(argv)
    print(f"load: {os.getloadavg()[0]:.1f} (1 min), {os.cpu_count()} cores; seconds unless said, median of {args.reps}")
    results: dict[str, list[dict[str, float]]] = {}
    missed = False
    for n in args.sizes:
        runs = results[str(n)] = []
        for _ in range(args.reps):
            with tempfile.TemporaryDirectory() as directory:
                runs.append(asyncio.run(_measure(n, directory)))
        median = {name: statistics.median(run[name] for run in runs) for name in runs[0]}
        print(_row(n, median), flush=True)
        missed = missed or any(median[name] > by_n[n] for name, by_n in TARGETS.items() if n in by_n and name in median)
    print(f"load: {os.getloadavg()[0]:.1f} (1 min)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
