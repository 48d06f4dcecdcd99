"""``cdl lsp`` end to end: a real LSP client (pytest-lsp) starts the server
over stdio and checks what an editor sees (issue 25, points 1, 8 and 9).

Each test starts its own server on documents written to ``tmp_path`` and
initialises it with the capabilities and options it needs.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp")
from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from conftest import CDL_DECL  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: The installed package's server, as the tests' Python runs it.
SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "cdl", "lsp"])
WAIT = 20.0  # seconds a test waits for a notification before failing


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    yield
    await lsp_client.shutdown_session()


async def start(
    client: LanguageClient, root: Path, options: Any = None, encodings: Sequence[str] | None = None
) -> types.InitializeResult:
    capabilities = types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=list(encodings)) if encodings is not None else None,
        text_document=types.TextDocumentClientCapabilities(
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(related_information=True)
        ),
    )
    return await client.initialize_session(
        types.InitializeParams(capabilities=capabilities, root_uri=root.as_uri(), initialization_options=options)
    )


def doc(body: str, *, extra: str = "") -> str:
    return f'<?xml version="1.0"?>\n<cdl:cdl {CDL_DECL}{extra}>\n{body}</cdl:cdl>\n'


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path.resolve().as_uri()


def open_doc(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "cdl", version, text)))


async def opened_written(client: LanguageClient, root: Path, name: str, text: str) -> tuple[str, Sequence[types.Diagnostic]]:
    """Write ``text`` to ``name`` under ``root``, start the server on ``root``
    and open the document: its URI and the diagnostics first published for it."""
    uri = write(root / name, text)
    await start(client, root)
    open_doc(client, uri, text)
    return uri, await published(client, uri)


def change(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=version, uri=uri),
            [types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def published(
    client: LanguageClient, uri: str, check: Callable[[Sequence[types.Diagnostic]], bool] = lambda d: True
) -> Sequence[types.Diagnostic]:
    """The diagnostics of ``uri`` once a publication for it passes ``check``."""

    async def wait() -> Sequence[types.Diagnostic]:
        while True:
            found = client.diagnostics.get(uri)
            if found is not None and check(list(found)):
                return list(found)
            await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)

    return await asyncio.wait_for(wait(), WAIT)


async def next_publication(client: LanguageClient, uri: str) -> Sequence[types.Diagnostic]:
    """The diagnostics of the next publication for ``uri``."""
    client.diagnostics.pop(uri, None)
    return await published(client, uri)


def codes(diagnostics: Sequence[types.Diagnostic]) -> list[str | int | None]:
    return [d.code for d in diagnostics]


def span(d: types.Diagnostic | types.Location) -> tuple[int, int, int]:
    return d.range.start.line, d.range.start.character, d.range.end.character


TEMPLATE = doc('  <cdl:configuration>\n    <Server><port>80</port></Server>\n  </cdl:configuration>\n')
BROKEN = doc('  <cdl:system>\n    <Web cdl:extends="Servr"/>\n  </cdl:system>\n')
FIXED = BROKEN.replace("Servr", "Server").replace("<cdl:system>", '<cdl:import location="t.cdl"/>\n  <cdl:system>')


@pytest.mark.asyncio
async def test_diagnostics_after_open_after_a_pause_in_changes_and_after_save(client: LanguageClient, tmp_path: Path) -> None:
    write(tmp_path / "t.cdl", TEMPLATE)
    uri, [d] = await opened_written(client, tmp_path, "a.cdl", BROKEN)
    assert (d.code, d.source, d.severity) == ("UNKNOWN_PROTOTYPE", "cdl", types.DiagnosticSeverity.Error)
    assert "Servr" in d.message
    line = BROKEN.splitlines()[d.range.start.line]
    assert line[d.range.start.character : d.range.end.character] == "Servr"  # the attribute's value

    # Two changes in quick succession: only the last is analysed, once typing pauses.
    client.diagnostics.clear()
    began = time.monotonic()
    change(client, uri, BROKEN.replace("Servr", "Sv"), 2)
    change(client, uri, FIXED, 3)
    assert await published(client, uri) == []
    assert time.monotonic() - began >= 0.25

    # Saving analyses at once (the file on disk changed: here, still broken).
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
    assert await next_publication(client, uri) == []


@pytest.mark.asyncio
async def test_error_in_an_import_is_shown_in_both_and_fixed_by_editing_the_open_template(
    client: LanguageClient, tmp_path: Path
) -> None:
    bad_template = TEMPLATE.replace("<Server>", '<Server cdl:extends="Nothing">')
    template = write(tmp_path / "lib" / "t.cdl", bad_template)
    text = FIXED.replace('"t.cdl"', '"lib/t.cdl"')
    main, [shown] = await opened_written(client, tmp_path, "a.cdl", text)
    assert shown.code == "UNKNOWN_PROTOTYPE"
    line = text.splitlines()[shown.range.start.line]
    assert line[shown.range.start.character : shown.range.end.character] == "lib/t.cdl"  # on the import
    [related] = shown.related_information or []
    assert related.location.uri == template
    assert span(related.location) == (3, 25, 32)  # Nothing, in the template
    [there] = await published(client, template)
    assert (there.code, span(there)) == ("UNKNOWN_PROTOTYPE", (3, 25, 32))

    # Open the template and fix it without saving: the importer is analysed again.
    open_doc(client, template, bad_template)
    change(client, template, TEMPLATE, 2)
    assert await published(client, main, lambda d: not d) == []
    assert await published(client, template, lambda d: not d) == []
    # Breaking the open template again breaks the importer again.
    change(client, template, bad_template.replace("Nothing", "Nobody"), 3)
    [again] = await published(client, main, lambda d: len(d) == 1)
    assert "Nobody" in again.message


@pytest.mark.asyncio
async def test_an_import_changed_on_disk_and_reported_by_the_client_is_read_again(client: LanguageClient, tmp_path: Path) -> None:
    template = write(tmp_path / "t.cdl", TEMPLATE)
    main, first = await opened_written(client, tmp_path, "a.cdl", FIXED)
    assert first == []
    write(tmp_path / "t.cdl", TEMPLATE.replace("Server", "Renamed"))
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams([types.FileEvent(template, types.FileChangeType.Changed)])
    )
    [d] = await published(client, main, lambda d: len(d) == 1)
    assert d.code == "UNKNOWN_PROTOTYPE"


@pytest.mark.asyncio
async def test_a_templates_unfilled_references_are_warnings_on_their_values(client: LanguageClient, tmp_path: Path) -> None:
    text = doc("  <cdl:configuration>\n    <echo>\n      <msg cdl:ref='host'/>\n      <copy cdl:ref='msg'/>\n    </echo>\n  </cdl:configuration>\n")
    _, found = await opened_written(client, tmp_path, "t.cdl", text)
    assert [(d.severity, d.code, span(d)) for d in found] == [
        (types.DiagnosticSeverity.Warning, "TEMPLATE_UNRESOLVED", (4, 20, 24)),  # host
        (types.DiagnosticSeverity.Warning, "TEMPLATE_UNRESOLVED", (5, 21, 24)),  # msg
    ]
    assert found[0].message.startswith("path 'host' (read as './host') selects nothing")


@pytest.mark.asyncio
async def test_cycle_lists_every_link_as_related_information(client: LanguageClient, tmp_path: Path) -> None:
    text = doc(
        "  <cdl:system>\n"
        '    <A><x cdl:refroot="B" cdl:ref="y"/></A>\n'
        '    <B><y cdl:refroot="A"\n'
        '          cdl:ref="x"/></B>\n'
        "  </cdl:system>\n"
    )
    uri, [d] = await opened_written(client, tmp_path, "a.cdl", text)
    assert d.code == "REF_CYCLE"
    links = [(r.location.uri, span(r.location), r.message) for r in d.related_information or []]
    assert links == [(uri, (3, 35, 36), "/A/x"), (uri, (5, 19, 20), "/B/y")]


@pytest.mark.asyncio
async def test_xml_syntax_at_the_parsers_position_and_no_prefix_stops_the_server(client: LanguageClient, tmp_path: Path) -> None:
    text = FIXED
    write(tmp_path / "t.cdl", TEMPLATE)
    uri = write(tmp_path / "a.cdl", text)
    await start(client, tmp_path)
    broken = text.replace('<Web cdl:extends="Server"/>', '<Web cdl:extends="Server" <x/>')
    open_doc(client, uri, broken)
    [d] = await published(client, uri)
    assert d.code == "XML_SYNTAX"
    assert (d.range.start.line, d.range.start.character) == (4, 30)  # libxml2's column: at the '<' it did not expect
    # Every prefix of the text, each analysed at once (a save), then the whole text again.
    for version, end in enumerate(range(len(text) + 1), 2):
        change(client, uri, text[:end], version)
        client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
    change(client, uri, text, 10_000)
    assert await published(client, uri, lambda d: not d) == []
    # Still answering, on the whole text.
    symbols = await client.text_document_document_symbol_async(types.DocumentSymbolParams(types.TextDocumentIdentifier(uri)))
    assert [s.name for s in symbols or []] == ["Web"]


@pytest.mark.asyncio
async def test_xml_syntax_column_on_an_iso_8859_1_line_with_characters_beyond_ascii(client: LanguageClient, tmp_path: Path) -> None:
    # The template declares ISO-8859-1. On disk (read in its encoding, é one
    # byte) and in a buffer holding €, which ISO-8859-1 has not (a file
    # holding it writes &#8364;, seven columns for libxml2), the column is
    # counted in the text's characters.
    template = TEMPLATE.replace('version="1.0"', 'version="1.0" encoding="ISO-8859-1"')
    template = template.replace("<port>80</port>", '<port note="éé"  <x/>80</port>')
    (tmp_path / "t.cdl").write_bytes(template.encode("latin-1"))
    uri = write(tmp_path / "a.cdl", FIXED)
    await start(client, tmp_path)
    open_doc(client, uri, FIXED)
    template_uri = (tmp_path / "t.cdl").resolve().as_uri()
    [d] = await published(client, template_uri)
    assert (d.code, span(d)) == ("XML_SYNTAX", (3, 29, 30))  # at the '<' libxml2 did not expect
    open_doc(client, template_uri, template.replace("éé", "é€€"))
    [d] = await published(client, template_uri, lambda found: bool(found) and span(found[0]) != (3, 29, 30))
    assert (d.code, span(d)) == ("XML_SYNTAX", (3, 30, 31))


NON_ASCII = (
    '<?xml version="1.0" encoding="UTF-8"?>\r\n'
    f"<cdl:cdl {CDL_DECL}>\r\n"
    "  <cdl:system>\r\n"
    '    <Café note="😀é" cdl:extends="Nöpe"/>\r\n'
    "  </cdl:system>\r\n"
    "</cdl:cdl>\r\n"
)


@pytest.mark.parametrize(
    ("encodings", "negotiated", "columns"),
    [
        (None, "utf-16", (34, 38)),  # 😀 is two UTF-16 code units
        (["utf-8", "utf-16"], "utf-8", (38, 43)),  # é, ö two bytes, 😀 four
        (["utf-32"], "utf-32", (33, 37)),
    ],
)
@pytest.mark.asyncio
async def test_positions_in_the_negotiated_encoding_on_crlf_lines(
    client: LanguageClient, tmp_path: Path, encodings: list[str] | None, negotiated: str, columns: tuple[int, int]
) -> None:
    uri = write(tmp_path / "a.cdl", NON_ASCII)
    result = await start(client, tmp_path, encodings=encodings)
    assert result.capabilities.position_encoding == negotiated
    open_doc(client, uri, NON_ASCII)
    [d] = await published(client, uri)
    assert d.code == "UNKNOWN_PROTOTYPE"
    assert span(d) == (3, *columns)


@pytest.mark.asyncio
async def test_an_attribute_on_a_later_line_of_a_start_tag_is_marked_there(client: LanguageClient, tmp_path: Path) -> None:
    text = doc('  <cdl:system>\n    <Web\n       port="1"\n       cdl:lazy="perhaps"\n    />\n  </cdl:system>\n')
    _, [d] = await opened_written(client, tmp_path, "a.cdl", text)
    assert d.code == "BAD_LAZY"
    assert span(d) == (5, 17, 24)  # perhaps


@pytest.mark.asyncio
async def test_settings_import_paths_catalogs_and_remote(client: LanguageClient, tmp_path: Path) -> None:
    write(tmp_path / "shared" / "t.cdl", TEMPLATE)
    text = FIXED.replace('"t.cdl"', '"../shared/t.cdl"')
    uri = write(tmp_path / "project" / "a.cdl", text)
    remote = doc('  <cdl:import location="http://example.org/t.cdl"/>\n')
    remote_uri = write(tmp_path / "project" / "r.cdl", remote)
    await start(client, tmp_path, options={"importPaths": ["shared"], "allowRemote": False})
    open_doc(client, uri, text)
    assert await published(client, uri) == []  # the import path, relative to the root, allows ../shared
    open_doc(client, remote_uri, remote)
    [d] = await published(client, remote_uri)
    assert d.code == "IMPORT_REFUSED" and "remote" in d.message


@pytest.mark.asyncio
async def test_settings_changed_by_the_client_apply_to_the_open_documents(client: LanguageClient, tmp_path: Path) -> None:
    write(tmp_path / "shared" / "t.cdl", TEMPLATE)
    text = FIXED.replace('"t.cdl"', '"../shared/t.cdl"')
    uri, first = await opened_written(client, tmp_path, "project/a.cdl", text)
    assert codes(first) == ["IMPORT_REFUSED"]
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"cdl": {"importPaths": ["shared"]}}))
    assert await published(client, uri, lambda d: not d) == []


@pytest.mark.asyncio
async def test_without_settings_an_import_outside_is_refused_and_bad_settings_are_named(
    client: LanguageClient, tmp_path: Path
) -> None:
    write(tmp_path / "shared" / "t.cdl", TEMPLATE)
    text = FIXED.replace('"t.cdl"', '"../shared/t.cdl"')
    uri = write(tmp_path / "project" / "a.cdl", text)
    await start(client, tmp_path, options={"importPaths": "shared", "allowRemote": "yes", "colour": 1})
    open_doc(client, uri, text)
    [d] = await published(client, uri)
    assert d.code == "IMPORT_REFUSED"
    logged = " ".join(m.message for m in client.log_messages)
    assert "importPaths must be a list" in logged and "allowRemote must be true or false" in logged and "colour" in logged


@pytest.mark.asyncio
async def test_the_server_survives_garbage(client: LanguageClient, tmp_path: Path) -> None:
    uri = write(tmp_path / "a.cdl", FIXED)
    write(tmp_path / "t.cdl", TEMPLATE)
    await start(client, tmp_path, options=["not", "an", "object"])
    open_doc(client, "untitled:Untitled-1", "<cdl:cdl")  # not a file: held by no analysis
    change(client, tmp_path.joinpath("never-opened.cdl").as_uri(), "x", 2)
    garbage = ["\x00\x01<<<>>>&&&", "<a>" * 300 + "</a>" * 299, "<?xml version='1.0' encoding='nonsense'?><x/>", "\ufffe\U0001f600"]
    open_doc(client, uri, "")
    for version, text in enumerate(garbage, 2):
        change(client, uri, text, version)
        client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
    change(client, uri, FIXED, 100)
    assert await published(client, uri, lambda d: not d) == []
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))


# -- the navigator's requests through the client (their logic: tests/internals/test_lsp_navigate.py) --


@pytest.fixture
def webapp(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """The webapp sample (three documents over imports): name -> (uri, text)."""
    found = {}
    for name in ("system.cdl", "webapp-template.cdl", "component-model.cdl"):
        text = (ROOT / "samples" / "webapp" / name).read_text(encoding="utf-8")
        found[name] = (write(tmp_path / name, text), text)
    return found


def where(text: str, needle: str, shift: int = 0) -> types.Position:
    """The position (UTF-16, ASCII here) of ``needle`` in ``text``, plus ``shift``."""
    offset = text.index(needle) + shift
    return types.Position(text.count("\n", 0, offset), offset - (text.rfind("\n", 0, offset) + 1))


async def opened(client: LanguageClient, tmp_path: Path, webapp: dict[str, tuple[str, str]], name: str = "system.cdl") -> tuple[str, str]:
    await start(client, tmp_path)
    uri, text = webapp[name]
    open_doc(client, uri, text)
    await published(client, uri)
    return uri, text


def ident(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri)


@pytest.mark.asyncio
async def test_definition_of_extends_goes_to_the_prototype_in_the_imported_document(
    client: LanguageClient, tmp_path: Path, webapp: dict[str, tuple[str, str]]
) -> None:
    uri, text = await opened(client, tmp_path, webapp)
    found = await client.text_document_definition_async(types.DefinitionParams(ident(uri), where(text, '"t:WebApp"', 4)))
    template, template_text = webapp["webapp-template.cdl"]
    assert [(loc.uri, span(loc)) for loc in found] == [(template, (where(template_text, "<WebApp ").line, 5, 11))]


@pytest.mark.asyncio
async def test_hover_shows_the_resolved_value_and_its_provenance(
    client: LanguageClient, tmp_path: Path, webapp: dict[str, tuple[str, str]]
) -> None:
    uri, text = await opened(client, tmp_path, webapp)
    found = await client.text_document_hover_async(types.HoverParams(ident(uri), where(text, "<t:application>", 3)))
    assert isinstance(found.contents, types.MarkupContent) and found.contents.kind == types.MarkupKind.Markdown
    assert "/WebApplication/t:application = http://repository.org/test.war" in found.contents.value
    assert "webapp-template.cdl#L46" in found.contents.value  # the step it overrides, linked
    assert found.range is not None and span(found) == (13, 7, 20)


@pytest.mark.asyncio
async def test_completion_offers_templates_in_extends(client: LanguageClient, tmp_path: Path, webapp: dict[str, tuple[str, str]]) -> None:
    uri, text = await opened(client, tmp_path, webapp)
    found = await client.text_document_completion_async(types.CompletionParams(ident(uri), where(text, '"t:WebApp"', 1)))
    assert isinstance(found, types.CompletionList)
    items = {item.label: item for item in found.items}
    assert {"t:WebApp", "t:WebServer", "t:DBServer"} <= set(items)
    assert items["t:WebApp"].kind == types.CompletionItemKind.Class and items["t:WebApp"].insert_text == "t:WebApp"


@pytest.mark.asyncio
async def test_references_of_a_template_are_the_lists_extending_it(
    client: LanguageClient, tmp_path: Path, webapp: dict[str, tuple[str, str]]
) -> None:
    await start(client, tmp_path)
    system, system_text = webapp["system.cdl"]
    uri, text = webapp["webapp-template.cdl"]
    open_doc(client, system, system_text)  # the template's own analysis does not know who imports it
    open_doc(client, uri, text)
    await published(client, uri)
    found = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=ident(uri), position=where(text, "<WebApp ", 2), context=types.ReferenceContext(include_declaration=False)
        )
    )
    assert (system, (12, 5, 19)) in [(loc.uri, span(loc)) for loc in found or []]


@pytest.mark.asyncio
async def test_document_symbols_are_the_lists_and_properties_as_a_tree(
    client: LanguageClient, tmp_path: Path, webapp: dict[str, tuple[str, str]]
) -> None:
    uri, _ = await opened(client, tmp_path, webapp)
    found = await client.text_document_document_symbol_async(types.DocumentSymbolParams(ident(uri)))
    [app] = found
    assert isinstance(app, types.DocumentSymbol)
    assert (app.name, app.kind, app.selection_range.start.line) == ("WebApplication", types.SymbolKind.Object, 12)
    assert [c.name for c in app.children or []][:2] == ["t:application", "t:applicationPath"]


@pytest.mark.asyncio
async def test_code_lens_gives_each_component_its_wave(client: LanguageClient, tmp_path: Path, webapp: dict[str, tuple[str, str]]) -> None:
    uri, _ = await opened(client, tmp_path, webapp)
    found = await client.text_document_code_lens_async(types.CodeLensParams(ident(uri)))
    assert [(span(lens), lens.command.title if lens.command else None) for lens in found] == [((12, 5, 19), "wave 1")]


def test_without_pygls_cdl_lsp_names_the_extra_and_exits_1() -> None:
    hide = "import sys; sys.modules['pygls'] = None; from cdl.cli import main; main(['lsp'])"
    done = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1
    assert "pip install 'cdl[lsp]'" in done.stderr
    assert "Traceback" not in done.stderr
