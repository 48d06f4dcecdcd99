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

from test_lsp_server import change, client, doc, ident, open_doc, published, start, write

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


MANY = doc(
    "  <cdl:configuration>\n"
    + "".join(f"    <L{i:02d}><p>{i}</p></L{i:02d}>\n" for i in range(30))
    + "    <Other><port>1</port><path>/</path><host>h</host></Other>\n"
    "  </cdl:configuration>\n"
    "  <cdl:system>\n    <Web cdl:extends='Other'/>\n  </cdl:system>\n"
)


async def completions(client: LanguageClient, uri: str, text: str, version: int, needle: str) -> tuple[list[str], bool]:
    """The labels offered where ``needle`` ends in ``text`` (sent as version ``version``) and whether the list is incomplete."""
    change(client, uri, text, version)
    offset = text.index(needle) + len(needle)
    position = types.Position(text.count("\n", 0, offset), offset - text.rfind("\n", 0, offset) - 1)
    found = await client.text_document_completion_async(types.CompletionParams(ident(uri), position))
    assert isinstance(found, types.CompletionList)
    return [item.label for item in found.items], found.is_incomplete


@pytest.mark.asyncio
async def test_completion_offers_what_matches_what_is_typed_up_to_the_limit_marked_incomplete_when_cut(
    client: LanguageClient, tmp_path: Path
) -> None:
    uri = write(tmp_path / "a.cdl", MANY)
    await start(client, tmp_path, {"completionLimit": 5})
    open_doc(client, uri, MANY)
    await published(client, uri)
    in_extends = MANY.replace("<Web cdl:extends='Other'/>", "<Web cdl:extends='{}'/>")
    # Empty: the first 5 in order of their names, and more left out.
    assert await completions(client, uri, in_extends.format(""), 2, "cdl:extends='") == (["L00", "L01", "L02", "L03", "L04"], True)
    assert await completions(client, uri, in_extends.format("L2"), 3, "cdl:extends='L2") == (["L20", "L21", "L22", "L23", "L24"], True)
    assert await completions(client, uri, in_extends.format("L29"), 4, "cdl:extends='L29") == (["L29"], False)
    assert await completions(client, uri, in_extends.format("oth"), 5, "cdl:extends='oth") == (["Other"], False)  # case aside
    assert await completions(client, uri, in_extends.format("x"), 6, "cdl:extends='x") == ([], False)
    # A path's last step, and attribute names, filtered alike.
    in_ref = MANY.replace("<Web cdl:extends='Other'/>", "<Web cdl:extends='Other'><q cdl:ref='/p'/></Web>")
    assert await completions(client, uri, in_ref, 7, "cdl:ref='/p") == (["port", "path"], False)  # in document order
    in_tag = MANY.replace("<Web cdl:extends='Other'/>", "<Web cdl:l/>")
    assert await completions(client, uri, in_tag, 8, "<Web cdl:l") == (["cdl:lazy"], False)


@pytest.mark.asyncio
async def test_completion_finds_a_list_by_its_local_name_or_its_prefix(client: LanguageClient, tmp_path: Path) -> None:
    templates = doc("  <cdl:configuration>\n    <Server/>\n    <Store/>\n  </cdl:configuration>\n", extra=" xmlns:t='urn:t' targetNamespace='urn:t'")
    system = doc("  <cdl:import location='t.cdl'/>\n  <cdl:system>\n    <Web cdl:extends='t:Server'/>\n  </cdl:system>\n", extra=" xmlns:t='urn:t'")
    write(tmp_path / "t.cdl", templates)
    uri = write(tmp_path / "a.cdl", system)
    await start(client, tmp_path)
    open_doc(client, uri, system)
    await published(client, uri)
    typed = system.replace("'t:Server'", "'{}'")
    assert await completions(client, uri, typed.format("se"), 2, "extends='se") == (["t:Server"], False)
    assert await completions(client, uri, typed.format("t"), 3, "extends='t") == (["t:Server", "t:Store"], False)
    assert await completions(client, uri, typed.format("t:st"), 4, "extends='t:st") == (["t:Store"], False)
