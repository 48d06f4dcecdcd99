"""``cdl lsp`` on text being typed, end to end through a real LSP client
(issue 31, point 3): completion where a document does not load, errors on
the line being typed, code lenses that run, a code on every diagnostic,
symbols over their elements, LSP 3.17's line ends (in ranges a client sends
too), untitled buffers.

The client and its helpers are those of tests/test_lsp_server.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytest_lsp")
from lsprotocol import types
from pytest_lsp import LanguageClient

from cdl.errors import CODES
from conftest import CDL_DECL
from test_lsp_server import (
    change,
    client,
    doc,
    ident,
    open_doc,
    published,
    span,
    start,
    where,
    write,
)

__all__ = ["client"]  # the fixture, used by name

TEMPLATES = (
    f"<cdl:cdl {CDL_DECL} xmlns:t='urn:t' targetNamespace='urn:t'>\n"
    "  <cdl:configuration>\n    <Server><port>80</port></Server>\n    <DB><port>1</port></DB>\n  </cdl:configuration>\n"
    "</cdl:cdl>\n"
)


def system(body: str) -> str:
    return doc(f'  <cdl:import location="t.cdl"/>\n  <cdl:system>\n{body}\n  </cdl:system>\n', extra=" xmlns:t='urn:t'")


LOADS = system("    <Web><a><x>1</x></a><b>2</b></Web>")


async def typed(client: LanguageClient, tmp_path: Path, text: str, loads: str = LOADS) -> str:
    """Open a document that loads (``loads``), then change it to ``text``
    (which need not load) and wait for its diagnostics; its URI."""
    write(tmp_path / "t.cdl", TEMPLATES)
    uri = write(tmp_path / "a.cdl", loads)
    await start(client, tmp_path)
    open_doc(client, uri, loads)
    assert await published(client, uri) == []
    client.diagnostics.pop(uri, None)
    change(client, uri, text, 2)
    await published(client, uri)
    return uri


async def complete(client: LanguageClient, uri: str, text: str, needle: str, shift: int) -> list[types.CompletionItem]:
    found = await client.text_document_completion_async(types.CompletionParams(ident(uri), where(text, needle, shift)))
    assert isinstance(found, types.CompletionList)
    return list(found.items)


def edited(text: str, item: types.CompletionItem) -> str:
    """``text`` with ``item``'s edit applied (one line, ASCII)."""
    edit = item.text_edit
    assert isinstance(edit, types.TextEdit) and edit.range.start.line == edit.range.end.line
    lines = text.split("\n")
    line = lines[edit.range.start.line]
    lines[edit.range.start.line] = line[: edit.range.start.character] + edit.new_text + line[edit.range.end.character :]
    return "\n".join(lines)


@pytest.mark.asyncio
async def test_completion_offers_the_templates_for_an_empty_extends_and_a_prefix_alone(client: LanguageClient, tmp_path: Path) -> None:
    text = system('    <Web cdl:extends=""/>')  # BAD_QNAME: the document does not load
    uri = await typed(client, tmp_path, text)
    items = await complete(client, uri, text, 'extends="', len('extends="'))
    assert [i.label for i in items] == ["t:DB", "t:Server"]  # not Web: a list cannot extend itself
    assert edited(text, items[1]) == text.replace('extends=""', 'extends="t:Server"')
    prefix = system('    <Web cdl:extends="t:')  # not even well-formed
    change(client, uri, prefix, 3)
    await published(client, uri, lambda found: [d.code for d in found] == ["XML_SYNTAX"])
    items = await complete(client, uri, prefix, "t:", 2)
    assert [i.label for i in items] == ["t:DB", "t:Server"]
    assert edited(prefix, items[0]) == prefix.replace('"t:', '"t:DB')  # the prefix typed is replaced, not doubled


@pytest.mark.asyncio
async def test_completion_offers_the_children_for_an_empty_step_of_a_reference(client: LanguageClient, tmp_path: Path) -> None:
    text = system('    <Web><a><x>1</x></a><b cdl:ref="/a/"/></Web>')  # BAD_PATH
    uri = await typed(client, tmp_path, text)
    items = await complete(client, uri, text, "/a/", 3)
    assert [i.label for i in items] == ["x"]
    assert edited(text, items[0]) == text.replace("/a/", "/a/x")
    empty = system('    <Web><a><x>1</x></a><b cdl:ref=""/></Web>')
    client.diagnostics.pop(uri, None)
    change(client, uri, empty, 3)
    assert [d.code for d in await published(client, uri)] == ["BAD_PATH"]
    assert [i.label for i in await complete(client, uri, empty, 'ref="', 5)] == ["a", "b"]


@pytest.mark.asyncio
async def test_completion_in_an_element_typed_since_the_document_last_loaded(client: LanguageClient, tmp_path: Path) -> None:
    # <n> is new: its path starts from its parent, loaded (/a/ absolute, a/ relative),
    # in the resolved trees (port, which a inherits) ...
    inherits = system("    <Web><a cdl:extends='t:Server'/><b>2</b></Web>")
    text = inherits.replace("<b>2</b></Web>", '<n cdl:ref="/a/')
    uri = await typed(client, tmp_path, text, inherits)
    assert [i.label for i in await complete(client, uri, text, "/a/", 3)] == ["port"]
    versions = iter(range(3, 100))

    async def retyped(text: str) -> None:
        client.diagnostics.pop(uri, None)
        change(client, uri, text, next(versions))
        await published(client, uri)

    async def analysed(text: str, needle: str, shift: int) -> list[types.CompletionItem]:
        # The diagnostics are published before the analysis is prepared for
        # the requests, which until then answer from the one before (where
        # what this completion walks was not loaded yet): a hover where the
        # text was typed waits for the analysis that read it.
        await client.text_document_hover_async(types.HoverParams(ident(uri), where(text, needle, shift)))
        return await complete(client, uri, text, needle, shift)

    text = inherits.replace("<b>2</b>", '<n cdl:ref="a/"/>')
    await retyped(text)
    assert [i.label for i in await analysed(text, '"a/', 3)] == ["port"]
    # ... and with a's own children.
    client.diagnostics.pop(uri, None)
    change(client, uri, LOADS, next(versions))
    assert await published(client, uri) == []
    text = system('    <Web><a><x>1</x></a><n cdl:ref="a/"/></Web>')
    await retyped(text)
    assert [i.label for i in await analysed(text, '"a/', 3)] == ["x"]
    # A variable, in an expression typed too, is for the property around the expression.
    text = system("    <Web><a><x>1</x></a><b><cdl:expression value-of='v'><cdl:variable name='v' cdl:ref='/a/'/>")
    await retyped(text)
    assert [i.label for i in await analysed(text, "'/a/", 4)] == ["x"]
    assert await analysed(text, "<cdl:expression ", 16) == []  # CDL's own element: no CDL attributes
    # A list cannot extend itself, from an element typed inside it either.
    text = system('    <Web><a><x>1</x></a><n cdl:extends=""/></Web>')
    await retyped(text)
    assert [i.label for i in await analysed(text, 'extends="', 9)] == ["t:DB", "t:Server"]


@pytest.mark.asyncio
async def test_completion_offers_cdl_attributes_in_a_tag_being_typed(client: LanguageClient, tmp_path: Path) -> None:
    text = system("    <Web><a><x>1</x></a><b cdl:")
    uri = await typed(client, tmp_path, text)
    items = await complete(client, uri, text, "<b cdl:", 7)
    assert [i.label for i in items][:3] == ["cdl:extends", "cdl:ref", "cdl:refroot"]
    assert edited(text, items[1]) == text.replace("<b cdl:", "<b cdl:ref")


@pytest.mark.asyncio
async def test_an_error_in_half_typed_text_sits_on_the_line_being_typed(client: LanguageClient, tmp_path: Path) -> None:
    # libxml2 finds an attribute name without its value only at the next line's '<'.
    text = system("    <Web><a><x>1</x></a><b cdl:ref\n    </Web>")
    uri = await typed(client, tmp_path, text)
    at = where(text, "cdl:ref")
    [d] = await published(client, uri)
    assert (d.code, span(d)) == ("XML_SYNTAX", (at.line, at.character, at.character + len("cdl:ref")))
    text = system('    <Web><a><x>1</x></a><b cdl:ref="/a/\n    </Web>')  # a value without its closing quote
    client.diagnostics.pop(uri, None)
    change(client, uri, text, 3)
    [d] = await published(client, uri)
    assert (d.code, span(d)) == ("XML_SYNTAX", (at.line, at.character, at.character + len('cdl:ref="/a/')))
    # An element left open (its content and end tag not typed yet): libxml2 finds it at </Web>.
    text = system('    <Web><a><x>1</x></a><b>1</b><b cdl:ref="/a/x">\n    </Web>')
    client.diagnostics.pop(uri, None)
    change(client, uri, text, 4)
    [d] = await published(client, uri)
    b = where(text, '<b cdl:ref', 1)
    assert (d.code, span(d)) == ("XML_SYNTAX", (b.line, b.character, b.character + 1))
    assert "mismatch: b line" in d.message
    # An end tag misspelt is the one wrong: there, where libxml2 finds it.
    text = system("    <Web><a><x>1</x></a>\n    </Wbe>")
    client.diagnostics.pop(uri, None)
    change(client, uri, text, 5)
    [d] = await published(client, uri)
    assert (d.code, span(d)[0]) == ("XML_SYNTAX", where(text, "</Wbe>").line)


@pytest.mark.asyncio
async def test_a_code_lens_carries_a_command_the_server_runs(client: LanguageClient, tmp_path: Path) -> None:
    text = system("    <a><p cdl:lazy='true'/></a>\n    <b><q cdl:refroot='a' cdl:ref='p'/></b>")
    write(tmp_path / "t.cdl", TEMPLATES)
    uri = write(tmp_path / "a.cdl", text)
    result = await start(client, tmp_path)
    assert result.capabilities.execute_command_provider is not None
    assert list(result.capabilities.execute_command_provider.commands) == ["cdl.showPlanEntry"]
    open_doc(client, uri, text)
    await published(client, uri)
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(ident(uri)))
    assert [(lens.command.title, lens.command.command, list(lens.command.arguments or ())) for lens in lenses if lens.command] == [
        ("wave 1", "cdl.showPlanEntry", [uri, "/a"]),
        ("wave 2 · after /a", "cdl.showPlanEntry", [uri, "/b"]),
    ]
    command = lenses[1].command
    assert command is not None
    entry = await client.workspace_execute_command_async(types.ExecuteCommandParams(command.command, command.arguments))
    assert entry == {"path": "/b", "supplies": [], "releases": [], "after": ["/a"], "waits_for": ["/a/p"], "waves": []}
    assert [m.message for m in client.messages] == ["/b: wave 2; after /a; waits for /a/p"]  # sent before the answer


@pytest.mark.asyncio
async def test_every_diagnostic_has_a_code(client: LanguageClient, tmp_path: Path) -> None:
    # An unknown prototype (an error), and a template's unfilled reference (a warning).
    template_text = TEMPLATES.replace("<port>80</port>", "<port>80</port><h cdl:ref='host'/>")
    template = write(tmp_path / "t.cdl", template_text)
    text = system("    <Web cdl:extends='t:Nope'/>")
    uri = write(tmp_path / "a.cdl", text)
    await start(client, tmp_path)
    open_doc(client, uri, text)
    open_doc(client, template, template_text)
    found = [*await published(client, uri), *await published(client, template, bool)]
    assert {(d.severity, d.code) for d in found} == {
        (types.DiagnosticSeverity.Error, "UNKNOWN_PROTOTYPE"),
        (types.DiagnosticSeverity.Warning, "TEMPLATE_UNRESOLVED"),
    }
    assert all(d.code in CODES for d in found)


@pytest.mark.asyncio
async def test_a_symbols_range_covers_its_element(client: LanguageClient, tmp_path: Path) -> None:
    text = system("    <Web>\n      <a>1</a>\n      <b\n        x='2'/>\n    </Web>")
    write(tmp_path / "t.cdl", TEMPLATES)
    uri = write(tmp_path / "a.cdl", text)
    await start(client, tmp_path)
    open_doc(client, uri, text)
    await published(client, uri)
    [web] = await client.text_document_document_symbol_async(types.DocumentSymbolParams(ident(uri)))
    assert isinstance(web, types.DocumentSymbol)
    end = where(text, "</Web>", len("</Web>"))
    assert (web.range.start, web.range.end) == (where(text, "<Web>"), end)
    assert span(types.Location(uri, web.selection_range)) == (where(text, "<Web>").line, 5, 8)
    a, b = web.children or []
    assert (a.range.start, a.range.end) == (where(text, "<a>"), where(text, "</a>", 4))
    assert (b.range.start, b.range.end) == (where(text, "<b"), where(text, "x='2'/>", 7))


@pytest.mark.asyncio
async def test_a_lone_carriage_return_ends_a_line(client: LanguageClient, tmp_path: Path) -> None:
    """LSP 3.17 counts CR, LF and CRLF as line ends; libxml2 counts lines by LF."""
    lines = [f"<cdl:cdl {CDL_DECL}>", "<cdl:system>", "<Web cdl:extends='Nope'/>", "<App>", "<p cdl:ref='/q'/><q>1</q>", "</App>", "</cdl:system></cdl:cdl>"]
    text = "\r".join(lines[:3]) + "\n" + "\r\n".join(lines[3:])
    uri = write(tmp_path / "a.cdl", text)
    await start(client, tmp_path)
    open_doc(client, uri, text)
    [d] = await published(client, uri)
    assert (d.code, span(d)) == ("UNKNOWN_PROTOTYPE", (2, 18, 22))  # the third line, though libxml2 says line 1
    found = await client.text_document_definition_async(types.DefinitionParams(ident(uri), types.Position(4, 14)))
    assert [span(loc) for loc in found or []] == [(4, 18, 19)]  # <q on the fifth line


@pytest.mark.asyncio
async def test_untitled_buffers_are_analysed_with_the_workspaces_settings(client: LanguageClient, tmp_path: Path) -> None:
    # Read as if it were in the workspace's root: its relative import resolves
    # there, and reaches the shared directory the settings allow.
    root, shared = tmp_path / "ws", tmp_path / "shared"
    write(shared / "t.cdl", TEMPLATES)
    root.mkdir()
    await start(client, root, {"importPaths": ["../shared"]})  # relative to the workspace's root
    uri = "untitled:Untitled-1"
    text = doc('  <cdl:import location="../shared/t.cdl"/>\n  <cdl:system>\n    <Web cdl:extends="t:Servr"/>\n  </cdl:system>\n', extra=" xmlns:t='urn:t'")
    open_doc(client, uri, text)
    [d] = await published(client, uri)
    assert (d.code, span(d)) == ("UNKNOWN_PROTOTYPE", (4, 22, 29))
    fixed = text.replace("t:Servr", "t:Server")
    change(client, uri, fixed, 2)
    assert await published(client, uri, lambda found: not found) == []
    found = await client.text_document_definition_async(types.DefinitionParams(ident(uri), where(fixed, "t:Server", 3)))
    assert [(loc.uri, span(loc)) for loc in found or []] == [((shared / "t.cdl").resolve().as_uri(), (2, 5, 11))]


def ranged(client: LanguageClient, uri: str, version: int, *edits: tuple[types.Position, types.Position, str]) -> None:
    """Send ``edits`` (start, end, new text) as one change notification of ranges."""
    changes = [types.TextDocumentContentChangePartial(types.Range(start, end), text) for start, end, text in edits]
    client.text_document_did_change(types.DidChangeTextDocumentParams(types.VersionedTextDocumentIdentifier(version=version, uri=uri), changes))


@pytest.mark.asyncio
async def test_a_change_of_a_range_is_placed_by_lsp_line_ends(client: LanguageClient, tmp_path: Path) -> None:
    """A client may send ranges though the server takes whole texts: each
    replaces its range, in order, read with LSP 3.17's line ends (U+2028 and
    NEL, line ends to str.splitlines, end none)."""
    write(tmp_path / "t.cdl", TEMPLATES)
    text = system("    <!-- a\u2028b\x85c -->\n    <Web cdl:extends='t:Servr'/>\n    <App cdl:extends='t:DBx'/>")
    uri = write(tmp_path / "a.cdl", text)
    await start(client, tmp_path)
    open_doc(client, uri, text)
    found = await published(client, uri)
    servr, dbx = where(text, "t:Servr"), where(text, "t:DBx")
    assert sorted((d.code, span(d)) for d in found) == [
        ("UNKNOWN_PROTOTYPE", (servr.line, servr.character, servr.character + 7)),
        ("UNKNOWN_PROTOTYPE", (dbx.line, dbx.character, dbx.character + 5)),
    ]
    after = types.Position(servr.line, servr.character + 7)
    ranged(client, uri, 2, (servr, after, "t:Server"), (where(text, "DBx", 2), where(text, "DBx", 3), ""))
    assert await published(client, uri, lambda found: not found) == []
    fixed = text.replace("t:Servr", "t:Server").replace("t:DBx", "t:DB")
    found_at = await client.text_document_definition_async(types.DefinitionParams(ident(uri), where(fixed, "t:DB'", 3)))
    assert [span(loc) for loc in found_at or []] == [(3, 5, 7)]  # <DB in t.cdl


def _applied(text: str, start: types.Position, end: types.Position, new: str) -> str:
    """``text`` (ASCII, lines ending at LF or CRLF) with the range ``start:end`` replaced."""
    lines = text.split("\n")
    starts = [sum(len(line) + 1 for line in lines[:n]) for n in range(len(lines))]

    def offset(at: types.Position) -> int:
        return starts[at.line] + min(at.character, len(lines[at.line].removesuffix("\r")))

    return text[: offset(start)] + new + text[offset(end) :]


@pytest.mark.asyncio
async def test_changes_are_synchronised_by_their_ranges(client: LanguageClient, tmp_path: Path) -> None:
    """The server asks for incremental changes, so a keystroke sends what
    was typed, not the document: a series of them (lines added, joined,
    parted and removed, CRLF and LF) leaves the server's text the editor's,
    as its diagnostics and definitions show."""
    write(tmp_path / "t.cdl", TEMPLATES)
    text = system("    <Web cdl:extends='t:Server'/>\r\n    <App cdl:extends='t:DB'/>")
    uri = write(tmp_path / "a.cdl", text)
    result = await start(client, tmp_path)
    sync = result.capabilities.text_document_sync
    assert isinstance(sync, types.TextDocumentSyncOptions) and sync.change == types.TextDocumentSyncKind.Incremental
    open_doc(client, uri, text)
    assert await published(client, uri) == []
    web = where(text, "<Web")
    end_of_web = types.Position(web.line + 1, len("    <Web cdl:extends='t:Server'/>"))
    edits = [
        (web, web, "<Bad cdl:extends='t:Nope'/>\r\n    "),  # a line added above Web
        (end_of_web, types.Position(web.line + 2, 0), ""),  # Web's line joined with App's
        (end_of_web, end_of_web, "\n"),  # and parted again
        (types.Position(0, 0), types.Position(1, 0), ""),  # the first line removed
    ]
    for version, (start_at, end_at, new) in enumerate(edits, 2):
        ranged(client, uri, version, (start_at, end_at, new))
        text = _applied(text, start_at, end_at, new)
    [found] = await published(client, uri, lambda found: bool(found))
    nope = where(text, "t:Nope")
    assert (found.code, span(found)) == ("UNKNOWN_PROTOTYPE", (nope.line, nope.character, nope.character + 6))
    fix = (nope, types.Position(nope.line, nope.character + 6), "t:DB")
    ranged(client, uri, len(edits) + 2, fix)
    text = _applied(text, *fix)
    assert await published(client, uri, lambda found: not found) == []
    for needle, target in (("<App cdl:extends='t:DB'", (3, 5, 7)), ("<Web cdl:extends='t:Server'", (2, 5, 11))):
        at = await client.text_document_definition_async(types.DefinitionParams(ident(uri), where(text, needle, 20)))
        assert [span(loc) for loc in at or []] == [target], needle
