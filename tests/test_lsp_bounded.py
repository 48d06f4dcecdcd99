"""``cdl lsp``'s answers that could list a whole large document are bounded
(issue 31, point 2), end to end through a real LSP client: document symbols
up to ``symbolLimit``, the user told once when they are cut; completion
filtered by what is typed, at most ``completionLimit`` items, marked
incomplete when cut.

The client and its helpers are those of tests/test_lsp_server.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytest_lsp")
from lsprotocol import types
from pytest_lsp import LanguageClient

from test_lsp_server import client, doc, ident, open_doc, published, start, write

__all__ = ["client"]  # the fixture, used by name

LISTS = doc(
    "  <cdl:system>\n"
    "    <A><a1>1</a1><a2><x>2</x></a2></A>\n"
    "    <B><cdl:documentation>not a property</cdl:documentation><b1>3</b1></B>\n"
    "    <C><c1>4</c1><c2>5</c2></C>\n"
    "  </cdl:system>\n"
)


async def outline(client: LanguageClient, tmp_path: Path, options: Any, text: str = LISTS) -> tuple[str, list[tuple[str, Any]]]:
    """Start the server with ``options``, open ``text``: its URI and its symbols as (name, children) trees."""
    uri = write(tmp_path / "a.cdl", text)
    await start(client, tmp_path, options)
    open_doc(client, uri, text)
    await published(client, uri)
    return uri, await symbols(client, uri)


async def symbols(client: LanguageClient, uri: str) -> list[tuple[str, Any]]:
    found = await client.text_document_document_symbol_async(types.DocumentSymbolParams(ident(uri)))

    def tree(symbol: Any) -> tuple[str, Any]:
        assert isinstance(symbol, types.DocumentSymbol)
        return symbol.name, [tree(child) for child in symbol.children or []]

    return [tree(symbol) for symbol in found or []]


@pytest.mark.asyncio
async def test_symbols_list_every_list_then_whole_lists_properties_up_to_the_limit(client: LanguageClient, tmp_path: Path) -> None:
    uri, found = await outline(client, tmp_path, {"symbolLimit": 6})
    # 3 lists, then A's 3 properties; B's would pass 6: B and C are listed without theirs.
    assert found == [("A", [("a1", []), ("a2", [("x", [])])]), ("B", []), ("C", [])]
    [told] = client.messages
    assert told.type == types.MessageType.Info
    assert "a.cdl has more than symbolLimit (6) symbols" in told.message and "properties of the first 1" in told.message
    assert await symbols(client, uri) == found
    assert len(client.messages) == 1  # told once per document, not at every request


@pytest.mark.asyncio
async def test_symbols_past_the_limit_are_the_first_lists_alone(client: LanguageClient, tmp_path: Path) -> None:
    uri, found = await outline(client, tmp_path, None)
    assert len(found) == 3 and client.messages == []
    # Settings changed later: the limit applies to the next answer.
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"cdl": {"symbolLimit": 2}}))
    assert await symbols(client, uri) == [("A", []), ("B", [])]
    [told] = client.messages
    assert "its first 2 top level lists are listed, without their properties" in told.message


@pytest.mark.asyncio
async def test_symbols_within_the_default_limit_or_without_one_are_all_listed(client: LanguageClient, tmp_path: Path) -> None:
    whole = [("A", [("a1", []), ("a2", [("x", [])])]), ("B", [("b1", [])]), ("C", [("c1", []), ("c2", [])])]
    _, found = await outline(client, tmp_path, None)
    assert found == whole and client.messages == []


@pytest.mark.asyncio
async def test_a_wrong_symbol_limit_is_named_and_the_default_stands(client: LanguageClient, tmp_path: Path) -> None:
    _, found = await outline(client, tmp_path, {"symbolLimit": -1, "completionLimit": "ten"})
    assert len(found) == 3 and client.messages == []
    complaints = [m.message for m in client.log_messages if "Limit" in m.message]
    assert any("symbolLimit must be a whole number, 0 for no limit; 5000 stands" in m for m in complaints)
    assert any("completionLimit must be a whole number, 0 for no limit; 100 stands" in m for m in complaints)
