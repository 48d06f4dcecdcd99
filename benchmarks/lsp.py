"""How fast ``cdl lsp`` answers on a large system (issue 25, point 10).

Starts ``cdl lsp`` as an editor would (a pygls client over stdio), opens the
synthetic system of N components (``benchmarks/synthetic.py``) and measures, from
the client's side:

- **open**: from didOpen to the first diagnostics;
- **change**: from the last of a burst of changes to their diagnostics (the
  server waits ``cdl.lsp.server.DEBOUNCE`` seconds for typing to pause, and
  that wait is included);
- **hover, at once**: a hover sent as soon as the diagnostics arrive: it
  waits for what the server prepares for hovers after each analysis (in a
  worker thread: a resolution with provenance);
- **hover, idle**: hovers on other properties a moment later (``--idle``
  seconds after the diagnostics), once the document has been resolved.

Usage (from the repository root, with ``cdl[lsp]`` importable)::

    python benchmarks/lsp.py [N ...] [--reps 3]

Not a test: the figures depend on the machine; the targets of issue 25 are
diagnostics within 1 s of the last change and hovers within 200 ms once the
document has been resolved, at N = 2000.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import BaseLanguageClient

from synthetic import generate


class _Client(BaseLanguageClient):
    def __init__(self) -> None:
        super().__init__("cdl-lsp-benchmark", "1")
        self.published: asyncio.Queue[types.PublishDiagnosticsParams] = asyncio.Queue()

        @self.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _published(params: types.PublishDiagnosticsParams) -> None:
            self.published.put_nowait(params)


async def _diagnostics(client: _Client, uri: str) -> list[types.Diagnostic]:
    while True:
        params = await asyncio.wait_for(client.published.get(), 120)
        if params.uri == uri:
            return list(params.diagnostics)


def _property_positions(text: str, count: int) -> list[types.Position]:
    """Positions on the names of ``count`` property start tags spread over the system."""
    lines = text.splitlines()
    found = [i for i, line in enumerate(lines) if "<value" in line]
    step = max(len(found) // count, 1)
    return [types.Position(i, lines[i].index("<value") + 2) for i in found[::step][:count]]


async def _measure(n: int, directory: str, idle: float) -> dict[str, float]:
    _, system = generate(n, directory)
    path = Path(system).resolve()
    uri, text = path.as_uri(), path.read_text(encoding="utf-8")
    client = _Client()
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    await client.start_io(sys.executable, "-m", "cdl", "lsp", env=env)
    try:
        await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=path.parent.as_uri()))
        client.initialized(types.InitializedParams())
        figures: dict[str, float] = {}

        began = time.perf_counter()
        client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "cdl", 1, text)))
        await _diagnostics(client, uri)
        figures["open"] = time.perf_counter() - began

        await asyncio.sleep(idle)  # what hovers need is prepared meanwhile
        edited = text
        for version in range(2, 7):  # a burst of typing in a comment at the end
            edited = edited + f"<!-- {version} -->"
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(version=version, uri=uri),
                    [types.TextDocumentContentChangeWholeDocument(text=edited)],
                )
            )
            began = time.perf_counter()
        await _diagnostics(client, uri)
        figures["change"] = time.perf_counter() - began

        hovers = []
        for number, position in enumerate(_property_positions(text, 6)):
            if number == 1:
                await asyncio.sleep(idle)
            began = time.perf_counter()
            answer = await client.text_document_hover_async(types.HoverParams(types.TextDocumentIdentifier(uri), position))
            hovers.append(time.perf_counter() - began)
            if answer is None:
                raise SystemExit(f"no hover at {position}")
        figures["hover, at once"] = hovers[0]
        figures["hover, idle"] = statistics.median(hovers[1:])
        return figures
    finally:
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[2000], help="numbers of components (default 2000)")
    parser.add_argument("--reps", type=int, default=3, help="runs per size; the median is shown")
    parser.add_argument("--idle", type=float, default=5.0, help="seconds the editor stays idle before the idle hovers")
    args = parser.parse_args(argv)
    print(f"{'N':>7} {'open':>8} {'change':>8} {'hover, at once':>15} {'hover, idle':>12}   (seconds, median of {args.reps})")
    for n in args.sizes:
        runs = []
        for _ in range(args.reps):
            with tempfile.TemporaryDirectory() as directory:
                runs.append(asyncio.run(_measure(n, directory, args.idle)))
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(f"{n:>7} {med['open']:>8.3f} {med['change']:>8.3f} {med['hover, at once']:>15.3f} {med['hover, idle']:>12.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
