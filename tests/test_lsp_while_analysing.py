"""``cdl lsp`` answers while it thinks (issue 31, point 2), end to end
through a real LSP client: analyses run off the request loop, a newer edit
supersedes a stale analysis, requests are answered from the last analysis
with positions carried through the edits since, ``$/cancelRequest`` ends a
request's wait, completion never analyses; an analysis's diagnostics are
published before it is prepared for the requests, a preparation gives way
to the next analysis, and what the worker made is frozen for the cyclic
garbage collector.

The server is ``cdl lsp`` with its analyses and their preparations under
the test's control (tests/data/lsp/held_server.py: held while the test says, and recorded), so
what runs when is counted, never timed. The client's helpers are those of
tests/test_lsp_server.py.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp")
from lsprotocol import types  # noqa: E402
from pygls.exceptions import JsonRpcRequestCancelled  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from conftest import CDL_DECL  # noqa: E402
from test_lsp_server import WAIT, change, ident, open_doc, published, start, where, write  # noqa: E402

HELD = ClientServerConfig(server_command=[sys.executable, str(Path(__file__).parent / "data" / "lsp" / "held_server.py")])


@pytest_lsp.fixture(config=HELD)
async def held(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    yield
    await command(lsp_client, "test.release")
    await command(lsp_client, "test.release_preparing")
    await command(lsp_client, "test.release_resolving")
    await command(lsp_client, "test.release_loaded")
    await lsp_client.shutdown_session()


async def command(client: LanguageClient, name: str) -> Any:
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(command=name))


async def until(client: LanguageClient, check: Any) -> dict[str, Any]:
    """The server's log (see held_server.py) once it passes ``check``."""

    async def wait() -> dict[str, Any]:
        while True:
            found: dict[str, Any] = await command(client, "test.log")
            if check(found):
                return found
            await asyncio.sleep(0.02)

    return await asyncio.wait_for(wait(), WAIT)


TEMPLATES = f"<cdl:cdl {CDL_DECL}>\n  <cdl:configuration>\n    <Server><port>80</port></Server>\n  </cdl:configuration>\n</cdl:cdl>\n"


def system(version: str, body: str = '    <Web cdl:extends="Server"><host>h</host></Web>') -> str:
    return (
        f'<?xml version="1.0"?>\n<cdl:cdl {CDL_DECL}>\n  <!-- {version} -->\n  <cdl:import location="t.cdl"/>\n'
        f"  <cdl:system>\n{body}\n  </cdl:system>\n</cdl:cdl>\n"
    )


async def opened(client: LanguageClient, tmp_path: Path, text: str) -> str:
    write(tmp_path / "t.cdl", TEMPLATES)
    uri = write(tmp_path / "a.cdl", text)
    await start(client, tmp_path)
    open_doc(client, uri, text)
    assert await published(client, uri) == []
    # The diagnostics come before the analysis is prepared for the requests
    # (in the worker); a request waits for that first preparation, so that
    # what a test holds or counts next is its own.
    await client.text_document_hover_async(types.HoverParams(ident(uri), types.Position(0, 0)))
    return uri


def sent(client: LanguageClient, method: str, params: Any) -> asyncio.Future[Any]:
    """The answer to a request sent now (before whatever the test sends next)."""
    return asyncio.wrap_future(client.protocol.send_request(method, params))


#: What a hover says while the resolution with provenance of the version it
#: answers from is being made (the README's contract).
AWAITING = "is being worked out"


def hover_text(found: types.Hover | None) -> str:
    assert found is not None and isinstance(found.contents, types.MarkupContent)
    return found.contents.value


def webs(more: str = "") -> str:
    """200 lists ``Web0``... extending ``Server``, each with its ``host`` (``h0``...) and ``more``, a line each."""
    return "\n".join(f'    <Web{i} cdl:extends="Server"><host>h{i}</host>{more}</Web{i}>' for i in range(200))


async def hovered(client: LanguageClient, uri: str, text: str, needle: str) -> str:
    """The hover's text one character into ``needle`` in ``text``."""
    return hover_text(await client.text_document_hover_async(types.HoverParams(ident(uri), where(text, needle, 1))))


@pytest.mark.asyncio
async def test_requests_are_answered_during_an_analysis_from_the_last_one_positions_carried_through_the_edit(
    held: LanguageClient, tmp_path: Path
) -> None:
    text = system("v1")
    uri = await opened(held, tmp_path, text)
    before = await held.text_document_hover_async(types.HoverParams(ident(uri), where(text, "<host", 1)))
    assert "/Web/host" in hover_text(before)
    await command(held, "test.hold")
    # Two lines typed above the property: its analysis starts, and is held.
    edited = system("v2", '    <Db cdl:extends="Server"/>\n    <Cache cdl:extends="Server"/>\n    <Web cdl:extends="Server"><host>h</host></Web>')
    change(held, uri, edited, 2)
    await until(held, lambda log: log["analysed"] == ["v1", "v2"])
    during = await held.text_document_hover_async(types.HoverParams(ident(uri), where(edited, "<host", 1)))
    assert "/Web/host" in hover_text(during)
    assert during is not None and during.range is not None and during.range.start.line == where(edited, "<host").line
    [found] = await held.text_document_definition_async(types.DefinitionParams(ident(uri), where(edited, '"Server"><host', 1)))
    assert found.uri.endswith("t.cdl") and found.range.start.line == where(TEMPLATES, "<Server").line
    log = await command(held, "test.log")
    assert (log["on_loop"], log["analysed"], len(log["shown"])) == (0, ["v1", "v2"], 1)  # still held, not shown
    # What was typed since the analysis has no place in it: a request there waits for the next.
    typed_since = sent(held, types.TEXT_DOCUMENT_HOVER, types.HoverParams(ident(uri), where(edited, "<Db", 1)))
    await command(held, "test.release")
    assert "/Db" in hover_text(await asyncio.wait_for(typed_since, WAIT))
    assert (await command(held, "test.log"))["analysed"] == ["v1", "v2"]


@pytest.mark.asyncio
async def test_a_newer_edit_supersedes_a_stale_analysis_which_is_never_shown(held: LanguageClient, tmp_path: Path) -> None:
    uri = await opened(held, tmp_path, system("v1"))
    await command(held, "test.hold")
    change(held, uri, system("v2", '    <Web cdl:extends="Servr"/>'), 2)  # an error: UNKNOWN_PROTOTYPE
    await until(held, lambda log: log["analysed"] == ["v1", "v2"])
    for version in (3, 4, 5):  # typing goes on while v2 is analysed
        change(held, uri, system(f"v{version}", f'    <Web{version} cdl:extends="Server"/>'), version)
    held.diagnostics.pop(uri, None)
    await command(held, "test.release")
    assert await published(held, uri) == []
    log = await until(held, lambda log: len(log["analysed"]) == 3)
    assert log["analysed"] == ["v1", "v2", "v5"]  # v3 and v4 never analysed
    assert all(codes == [] for _, codes in log["shown"])  # v2's error never shown: it was stale when done
    assert log["on_loop"] == 0


@pytest.mark.asyncio
async def test_cancel_request_ends_a_request_waiting_for_the_first_analysis(held: LanguageClient, tmp_path: Path) -> None:
    text = system("v1")
    write(tmp_path / "t.cdl", TEMPLATES)
    uri = write(tmp_path / "a.cdl", text)
    await start(held, tmp_path)
    await command(held, "test.hold")
    open_doc(held, uri, text)
    await until(held, lambda log: log["analysed"] == ["v1"])
    params = types.HoverParams(ident(uri), where(text, "<host", 1))
    waiting = asyncio.wrap_future(held.protocol.send_request(types.TEXT_DOCUMENT_HOVER, params, msg_id="hover-1"))
    held.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="hover-1"))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(waiting, WAIT)
    await command(held, "test.release")
    assert "/Web/host" in hover_text(await held.text_document_hover_async(params))  # a request not cancelled waits, then answers
    assert (await command(held, "test.log"))["on_loop"] == 0


@pytest.mark.asyncio
async def test_completion_answers_from_the_text_being_typed_without_analysing(held: LanguageClient, tmp_path: Path) -> None:
    uri = await opened(held, tmp_path, system("v1"))
    await command(held, "test.hold")
    typed = system("v2", '    <Web cdl:extends="Server"><host>h</host></Web>\n    <Db cdl:extends="')  # does not load
    change(held, uri, typed, 2)
    found = await held.text_document_completion_async(types.CompletionParams(ident(uri), where(typed, 'extends="', 9)))
    assert isinstance(found, types.CompletionList) and [i.label for i in found.items] == ["Server"]
    log = await command(held, "test.log")
    assert log["on_loop"] == 0 and log["analysed"][0] == "v1" and len(log["shown"]) == 1


def in_worker(log: dict[str, Any], since: str) -> list[str]:
    """What the worker did, by the server's log, from ``since`` on (the
    publications, on the request loop, may come before or after the worker's
    next step)."""
    found = [event for event in log["events"] if event.split()[0] in ("analyse", "pair", "resolve")]
    return found[found.index(since) :]


@pytest.mark.asyncio
async def test_diagnostics_are_published_before_the_analysis_is_prepared_for_the_requests(held: LanguageClient, tmp_path: Path) -> None:
    write(tmp_path / "t.cdl", TEMPLATES)
    text = system("v1", '    <Web cdl:extends="Servr"/>')
    uri = write(tmp_path / "a.cdl", text)
    await start(held, tmp_path)
    await command(held, "test.hold_preparing")
    open_doc(held, uri, text)
    assert [d.code for d in await published(held, uri)] == ["UNKNOWN_PROTOTYPE"]
    log = await command(held, "test.log")  # the preparation is still held at its first step
    assert in_worker(log, "analyse v1") == ["analyse v1", "pair v1"]


async def typed_while_held(client: LanguageClient, uri: str, text: str, release: str) -> list[str]:
    """``text`` (marked v3) typed while the worker is held; once its analysis
    is asked for (typing paused), ``release`` the worker: the codes of the
    diagnostics then published."""
    change(client, uri, text, 3)
    await until(client, lambda log: "ask v3" in log["events"])
    client.diagnostics.pop(uri, None)
    await command(client, release)
    return [d.code for d in await published(client, uri)]


@pytest.mark.asyncio
async def test_a_preparation_gives_way_to_the_next_analysis_which_supersedes_it(held: LanguageClient, tmp_path: Path) -> None:
    uri = await opened(held, tmp_path, system("v1"))
    await command(held, "test.hold_preparing")
    change(held, uri, system("v2"), 2)
    await until(held, lambda log: "pair v2" in log["events"])  # v2's preparation, held
    assert await typed_while_held(held, uri, system("v3", '    <Web cdl:extends="Servr"/>'), "test.release_preparing") == ["UNKNOWN_PROTOTYPE"]
    log = await until(held, lambda log: "resolve v3" in log["events"])
    # v2's preparation stopped at its next step for v3's analysis, and v3 loaded: v2 is never resolved.
    assert in_worker(log, "pair v2") == ["pair v2", "analyse v3", "pair v3", "resolve v3"]
    hovered = await held.text_document_hover_async(types.HoverParams(ident(uri), where(system("v3", '    <Web cdl:extends="Servr"/>'), "<Web", 1)))
    assert "/Web" in hover_text(hovered)


@pytest.mark.asyncio
async def test_a_preparation_stops_when_its_text_changes_and_waits_for_the_analysis_of_the_change(held: LanguageClient, tmp_path: Path) -> None:
    uri = await opened(held, tmp_path, system("v1"))
    await command(held, "test.hold_preparing")
    change(held, uri, system("v2"), 2)
    await until(held, lambda log: "pair v2" in log["events"])
    typed = system("v3", '    <Web cdl:extends="Servr"/>')
    change(held, uri, typed, 3)
    held.diagnostics.pop(uri, None)
    await command(held, "test.release_preparing")  # before typing pauses: v3 is not asked for yet
    assert [d.code for d in await published(held, uri)] == ["UNKNOWN_PROTOTYPE"]
    log = await until(held, lambda log: "resolve v3" in log["events"])
    assert in_worker(log, "pair v2") == ["pair v2", "analyse v3", "pair v3", "resolve v3"]
    assert "/Web" in hover_text(await held.text_document_hover_async(types.HoverParams(ident(uri), where(typed, "<Web", 1))))


@pytest.mark.asyncio
async def test_a_preparation_gives_way_part_way_through_its_resolution(held: LanguageClient, tmp_path: Path) -> None:
    uri = await opened(held, tmp_path, system("v1"))
    await command(held, "test.hold_resolving")
    change(held, uri, system("v2", webs()), 2)
    await until(held, lambda log: "extending" in log["events"])  # v2's resolution with provenance, held at its first list
    typed = system("v3", '    <Web cdl:extends="Servr"/>')
    assert await typed_while_held(held, uri, typed, "test.release_resolving") == ["UNKNOWN_PROTOTYPE"]
    log = await until(held, lambda log: "resolve v3" in log["events"])
    # v2's resolution stopped at its next list, never ended: v3 did not wait for it.
    assert in_worker(log, "resolve v2") == ["resolve v2", "analyse v3", "pair v3", "resolve v3"]
    assert "resolved v2" not in log["events"]
    assert "/Web" in hover_text(await held.text_document_hover_async(types.HoverParams(ident(uri), where(typed, "<Web", 1))))


@pytest.mark.asyncio
async def test_a_preparation_that_gave_way_to_an_analysis_that_did_not_load_goes_on(held: LanguageClient, tmp_path: Path) -> None:
    uri = await opened(held, tmp_path, system("v1"))
    await command(held, "test.hold_preparing")
    edited = system("v2", '    <Web cdl:extends="Server"><host>h</host></Web>\n    <Db cdl:extends="Server"/>')
    change(held, uri, edited, 2)
    await until(held, lambda log: "pair v2" in log["events"])
    assert await typed_while_held(held, uri, system("v3", "    <Web"), "test.release_preparing") == ["XML_SYNTAX"]  # does not load
    log = await until(held, lambda log: "resolve v2" in log["events"])
    # What v2's preparation made went when v3's analysis began, and is made again.
    assert in_worker(log, "pair v2") == ["pair v2", "analyse v3", "pair v2", "resolve v2"]
    # The requests answer from v2, the last that loaded, once it is prepared.
    change(held, uri, edited, 4)
    hovered = await held.text_document_hover_async(types.HoverParams(ident(uri), where(edited, "<Db", 1)))
    assert "/Db" in hover_text(hovered)


async def explained(client: LanguageClient, uri: str, text: str, needle: str) -> str:
    """The hover's text at ``needle`` once it says where the value comes from
    (until the resolution with provenance is attached it says it is being
    worked out)."""

    async def wait() -> str:
        while AWAITING in (found := await hovered(client, uri, text, needle)):
            await asyncio.sleep(0.02)
        return found

    return await asyncio.wait_for(wait(), WAIT)


@pytest.mark.asyncio
async def test_the_requests_answer_from_a_newer_analysis_once_its_text_is_prepared_its_provenance_made_after(
    held: LanguageClient, tmp_path: Path
) -> None:
    text = system("v1")
    uri = await opened(held, tmp_path, text)
    assert AWAITING not in await hovered(held, uri, text, "<host")
    await command(held, "test.hold_resolving")
    edited = system("v2", webs())
    change(held, uri, edited, 2)
    await until(held, lambda log: "extending" in log["events"])  # v2's resolution with provenance, held
    # Answered at once, from v2 (v1 has no Web7), without its provenance yet.
    during = await asyncio.wait_for(hovered(held, uri, edited, "<host>h7<"), WAIT)
    assert "/Web7/host" in during and AWAITING in during
    log = await command(held, "test.log")
    assert in_worker(log, "analyse v2") == ["analyse v2", "pair v2", "resolve v2"]
    await command(held, "test.release_resolving")
    assert AWAITING not in await explained(held, uri, edited, "<host>h7<")


@pytest.mark.asyncio
async def test_the_provenance_answered_from_goes_once_a_newer_analysis_loads_and_is_made_again_if_none_is_shown(
    held: LanguageClient, tmp_path: Path
) -> None:
    text = system("v1")
    uri = await opened(held, tmp_path, text)
    await command(held, "test.hold_loaded")
    loads = system("v2", '    <Web cdl:extends="Server"><host>h</host></Web>\n    <Db cdl:extends="Server"/>')
    change(held, uri, loads, 2)
    await until(held, lambda log: "loaded v2" in log["events"])  # v2 loaded, held before it resolves
    # v1's resolution with provenance is gone before v2's resolution: one at a time.
    assert await command(held, "test.answering") == [["v1", True]]
    # v2 is stale once done (typed on meanwhile), and what was typed does not load.
    typed = system("v3", '    <Web cdl:extends="Server"><host>h</host></Web>\n    <Db')
    change(held, uri, typed, 3)
    held.diagnostics.pop(uri, None)
    await command(held, "test.release_loaded")
    assert [d.code for d in await published(held, uri)] == ["XML_SYNTAX"]
    # v1 answers still (v2 was never shown), and its provenance is made again.
    log = await until(held, lambda log: "resolved v1" in log["events"][log["events"].index("loaded v2") :])
    assert "resolve v2" not in log["events"]
    assert log["analysed"] == ["v1", "v2", "v3"] and [codes for _, codes in log["shown"]] == [[], ["XML_SYNTAX"]]
    assert await command(held, "test.answering") == [["v1", False]]


@pytest.mark.asyncio
async def test_what_the_worker_made_is_frozen_for_the_cyclic_collector(held: LanguageClient, tmp_path: Path) -> None:
    text = system("v1")
    uri = await opened(held, tmp_path, text)
    assert "/Web/host" in hover_text(await held.text_document_hover_async(types.HoverParams(ident(uri), where(text, "<host", 1))))
    found = await command(held, "test.gc")
    assert found["frozen"] > found["walked"]  # the analysis, and the server's own objects before it


@pytest.mark.asyncio
async def test_completion_where_text_was_typed_reads_only_what_was_typed(held: LanguageClient, tmp_path: Path) -> None:
    body = "\n".join(f'    <Web{i} cdl:extends="Server"><host>h</host></Web{i}>' for i in range(200))
    uri = await opened(held, tmp_path, system("v1", body))
    await command(held, "test.hold")
    typed = system("v1", body.replace("<Web100 ", '<Db cdl:extends="S"/>\n    <Web100 '))
    change(held, uri, typed, 2)
    before = len((await command(held, "test.log"))["scanned"])
    found = await held.text_document_completion_async(types.CompletionParams(ident(uri), where(typed, '<Db cdl:extends="S', 18)))
    assert isinstance(found, types.CompletionList) and [i.label for i in found.items] == ["Server"]
    log = await command(held, "test.log")
    # The last analysis's text, paired with its trees, is carried through the
    # edit: only the tags around what was typed are read again.
    assert 0 < sum(log["scanned"][before:]) < 200 and log["on_loop"] == 0


@pytest.mark.asyncio
async def test_a_hover_reads_what_it_explains_not_the_whole_document(held: LanguageClient, tmp_path: Path) -> None:
    text = system("v1", webs())
    uri = await opened(held, tmp_path, text)
    assert "/Web7/host" in await hovered(held, uri, text, "<host>h7<")
    before = await command(held, "test.log")
    assert "/Web150/host" in await hovered(held, uri, text, "<host>h150<")
    log = await command(held, "test.log")
    # No text split into lines on the request loop, not every list's name written.
    assert log["split"] == before["split"] == [] and log["qnames"] - before["qnames"] < 50


@pytest.mark.asyncio
async def test_an_analysis_is_prepared_reading_only_its_top_level_and_a_request_what_it_is_about(held: LanguageClient, tmp_path: Path) -> None:
    text = system("v1", webs("<a>1</a><b>2</b><c>3</c>"))
    uri = await opened(held, tmp_path, text)
    assert "/Web150/host" in await hovered(held, uri, text, "<host>h150<")
    definition = await held.text_document_definition_async(types.DefinitionParams(ident(uri), where(text, 'Web7 cdl:extends="', 18)))
    assert isinstance(definition, list) and definition[0].uri.endswith("t.cdl")
    log, [paired] = await command(held, "test.log"), await command(held, "test.paired")
    # The 1,000 properties are neither read nor paired: the lists, and what the requests were about.
    assert log["read"] < 100 and 200 < paired < 230


@pytest.mark.asyncio
async def test_symbols_read_each_start_tag_they_list_once(held: LanguageClient, tmp_path: Path) -> None:
    body = "\n".join(f'    <Web{i} cdl:extends="Server"><host>h{i}</host><a>1</a></Web{i}>' for i in range(100))
    uri = await opened(held, tmp_path, system("v1", body))
    await held.text_document_hover_async(types.HoverParams(ident(uri), where(system("v1", body), "<host>h5<", 1)))  # prepared
    before = (await command(held, "test.log"))["read"]
    found = await held.text_document_document_symbol_async(types.DocumentSymbolParams(ident(uri)))
    assert found is not None and len(found) == 100 and all(len(symbol.children or []) == 2 for symbol in found)  # type: ignore[union-attr]
    # 300 listed, their parents and the root: a tag is read when asked for (text.tags.TagIndex), once here.
    assert (await command(held, "test.log"))["read"] - before <= 310


@pytest.mark.asyncio
async def test_an_edit_resolves_again_only_what_it_reaches(held: LanguageClient, tmp_path: Path) -> None:
    body = "\n".join(f'    <Web{i} cdl:extends="Server"><host>h{i}</host><url cdl:ref="host"/></Web{i}>' for i in range(200))
    uri = await opened(held, tmp_path, system("v1", body))
    first = (await command(held, "test.log"))["attempted"]
    # Typed into a list that no other reads (the marker outside the lists
    # stays: a change there may change what any list means): the next
    # analysis takes every other list over from the last one, resolved.
    change(held, uri, system("v1", body.replace("<host>h100<", "<host>x100<")), 2)
    log = await until(held, lambda log: len(log["attempted"]) == 2)
    assert first[0] >= 200 and log["attempted"][1] < 10
    # An error: the documents are resolved whole again, for the errors a
    # whole resolution finds, and the next has nothing to take over.
    change(held, uri, system("v1", body.replace("<host>h100</host>", '<host cdl:ref="nowhere"/>')), 3)
    await published(held, uri, lambda found: [d.code for d in found] == ["REF_NOT_FOUND"])
    change(held, uri, system("v1", body.replace("<host>h100<", "<host>y100<")), 4)
    await published(held, uri, lambda found: found == [])
    log = await until(held, lambda log: len(log["attempted"]) == 4)
    assert log["attempted"][2] >= 200 and log["attempted"][3] >= 200
    change(held, uri, system("v1", body.replace("<host>h100<", "<host>z100<")), 5)
    log = await until(held, lambda log: len(log["attempted"]) == 5)
    assert log["attempted"][4] < 10
    # A reference no list wrote before, ahead of every other: loaded afresh,
    # its parsed form would take the first entry of the tables and move the
    # others; the load continues the last one's tables and adds it after
    # them, so the lists after it are taken over all the same. (Written on
    # a line of the first list below its start tag's: an edit on the line
    # where a list parent's first list begins takes nothing after it over.)
    spread = body.replace("<host>h100<", "<host>z100<").replace('<Web0 cdl:extends="Server">', '<Web0 cdl:extends="Server">\n      ')
    change(held, uri, system("v1", spread), 6)
    await until(held, lambda log: len(log["attempted"]) == 6)
    typed = spread.replace("<host>h0</host>", '<host>h0</host><seen cdl:ref="url"/>')
    assert typed.count("<seen ") == 1
    change(held, uri, system("v1", typed), 7)
    log = await until(held, lambda log: len(log["attempted"]) == 7)
    assert log["attempted"][6] < 10, log["attempted"]


@pytest.mark.asyncio
async def test_the_client_is_read_on_the_request_loop_not_by_a_thread_of_its_own(held: LanguageClient, tmp_path: Path) -> None:
    text = system("v1")
    uri = await opened(held, tmp_path, text)
    assert "/Web/host" in await hovered(held, uri, text, "<host>h<")
    log = await command(held, "test.log")
    # The request loop and the analysis worker: no thread of pygls's pool
    # reading stdin, handing each line and each body back to the loop.
    assert log["threads"] == ["MainThread", "cdl-lsp-analysis_0"]
