"""The pieces of ``cdl lsp`` below the protocol: open buffers read instead of
files (``LoadOptions.overlay``), what an analysis read, position conversion
and the settings (src/cdl/lsp/_buffers.py; text/lines.py, text/encoding.py). The server itself is
tested through a real client in tests/test_lsp_server.py."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

import cdl
from cdl.engine.document import loaded_of
from cdl.lsp._buffers import Buffers, Settings, analyse, settings_from
from cdl.lsp._navigate import navigation_of
from cdl.lsp.features.completion import completion
from cdl.lsp.features.definition import definition
from cdl.lsp.features.hover import hover
from cdl.lsp.features.lenses import code_lenses
from cdl.lsp.features.references import references
from cdl.lsp.features.symbols import symbols
from cdl.model.workspace import SourceDoc, Workspace
from cdl.text.encoding import encode
from cdl.text.lines import UTF8, UTF16, UTF32, Lines
from conftest import CDL_DECL
from synthetic import generate

TEMPLATE = f"<cdl:cdl {CDL_DECL}><cdl:configuration><Base><port>80</port></Base></cdl:configuration></cdl:cdl>"
MAIN = f"<cdl:cdl {CDL_DECL}><cdl:import location='t.cdl'/><cdl:system><S cdl:extends='Base'/></cdl:system></cdl:cdl>"


def codes(analysis: object) -> list[str | None]:
    problems = getattr(analysis, "problems")  # noqa: B009 - a Mapping of url -> problems
    return [p.code for found in problems.values() for p in found]


def test_open_buffers_are_read_instead_of_files_for_the_document_and_its_imports(tmp_path: Path) -> None:
    (tmp_path / "t.cdl").write_text(TEMPLATE.replace("Base", "Gone"))
    (tmp_path / "a.cdl").write_text("not even XML")
    main, template = str((tmp_path / "a.cdl").resolve()), str((tmp_path / "t.cdl").resolve())
    assert codes(analyse(main, {}, Settings())) == ["XML_SYNTAX"]  # the files
    assert set(codes(analyse(main, {main: MAIN}, Settings()))) == {"UNKNOWN_PROTOTYPE"}  # the buffer, the template's file
    analysis = analyse(main, {main: MAIN, template: TEMPLATE}, Settings())
    assert codes(analysis) == []
    assert analysis.reads == {main, template}
    assert analysis.document is not None and analysis.document.resolve().to_data()["system"] == {"S": {"port": "80"}}


def test_an_analysis_that_fails_in_an_import_still_knows_it_read_it(tmp_path: Path) -> None:
    main, template = str(tmp_path.resolve() / "a.cdl"), str(tmp_path.resolve() / "t.cdl")
    (tmp_path / "t.cdl").write_text(TEMPLATE)
    analysis = analyse(main, {main: MAIN, template: "<cdl:cdl"}, Settings())
    assert codes(analysis) == ["XML_SYNTAX", "XML_SYNTAX"]  # in the template, and on the import that reads it
    [here] = analysis.problems[main]
    start = MAIN.index("t.cdl'")
    assert (here.place.line, here.place.start, here.place.end) == (0, start, start + len("t.cdl"))
    assert analysis.reads == {main, template}


def test_a_change_to_an_open_import_finds_the_open_documents_that_read_it(tmp_path: Path) -> None:
    (tmp_path / "t.cdl").write_text(TEMPLATE)
    (tmp_path / "a.cdl").write_text(MAIN)
    buffers = Buffers()
    main_uri, template_uri = (tmp_path / "a.cdl").resolve().as_uri(), (tmp_path / "t.cdl").resolve().as_uri()
    main = buffers.put(main_uri, MAIN)
    assert main is not None
    buffers.analyse(main)
    template = str((tmp_path / "t.cdl").resolve())
    assert buffers.readers_of(template) == {main}  # not open itself: only its reader
    assert buffers.put(template_uri, TEMPLATE.replace("<port>", "<port cdl:extends='Nothing'>")) == template
    assert buffers.readers_of(template) == {main, template}
    changed = buffers.analyse(main)
    assert changed == {main, template}  # the error is in the template, and shown on the import
    assert buffers.uri_of(template) == template_uri
    assert buffers.drop(main) == {main, template}
    assert buffers.readers_of(template) == {template}


def test_the_first_change_after_an_open_splits_no_text_an_analysis_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "t.cdl").write_text(TEMPLATE)
    (tmp_path / "a.cdl").write_text(MAIN)
    buffers = Buffers()
    path = buffers.put((tmp_path / "a.cdl").resolve().as_uri(), MAIN)  # an open: no lines given
    assert path is not None
    buffers.analyse(path)
    assert buffers.analyses[path].lines_of(path) is not None  # the analysis split the text (its diagnostics are placed with them)
    split: list[str] = []

    class Counted(Lines):
        def __init__(self, text: str) -> None:
            split.append(text)
            super().__init__(text)

    monkeypatch.setattr("cdl.lsp._buffers.Lines", Counted)
    lines = buffers.lines(path)
    assert lines is buffers.analyses[path].lines_of(path) and split == []
    buffers.put((tmp_path / "a.cdl").resolve().as_uri(), MAIN + " ")  # another text: split anew
    assert buffers.lines(path) is not lines and len(split) == 1


def test_a_buffer_is_encoded_as_its_declaration_says() -> None:
    text = "<?xml version='1.0' encoding='ISO-8859-1'?><x>é</x>"
    assert encode(text) == text.encode("latin-1")
    assert encode("<x>é</x>") == "<x>é</x>".encode()
    assert encode("<?xml version='1.0' encoding='nonsense'?><x>é</x>") == "<?xml version='1.0' encoding='nonsense'?><x>é</x>".encode()


@pytest.mark.parametrize(
    ("encoding", "units"),
    [(UTF16, [0, 1, 3, 4, 5]), (UTF8, [0, 2, 6, 7, 8]), (UTF32, [0, 1, 2, 3, 4])],
)
def test_columns_in_each_encoding_on_crlf_lines(encoding: str, units: list[int]) -> None:
    lines = Lines("first\r\né😀ab\r\nlast")
    assert len(lines) == 3 and lines.line(1) == "é😀ab"
    assert [lines.to_client(1, column, encoding) for column in range(5)] == [(1, u) for u in units]
    assert [lines.from_client(1, u, encoding) for u in units] == [(1, column) for column in range(5)]
    assert lines.from_client(1, 99, encoding) == (1, 4)  # past the end of the line: its end
    assert lines.from_client(7, 0, encoding) == (2, 4)  # past the last line: the text's end
    assert lines.to_client(1, 99, encoding) == (1, units[-1])


def test_a_position_inside_a_character_falls_on_it() -> None:
    lines = Lines("a😀b")
    assert lines.from_client(0, 2, UTF16) == (0, 1)  # between the surrogates of 😀
    assert lines.from_client(0, 3, UTF8) == (0, 1)  # inside its four bytes
    assert lines.position_of(lines.offset(0, 2)) == (0, 2)


def test_settings_from_the_initialization_options(tmp_path: Path) -> None:
    settings, complaints = settings_from({"catalogs": ["c.xml"], "importPaths": ["/abs", "rel"], "allowRemote": True}, str(tmp_path))
    assert settings == Settings((str(tmp_path / "c.xml"),), ("/abs", str(tmp_path / "rel")), True, str(tmp_path))
    assert complaints == []
    assert settings_from(None, None) == (Settings(), [])
    settings, complaints = settings_from({"allowRemote": 1, "catalogs": "c.xml", "other": 0}, None)
    assert settings == Settings()
    assert len(complaints) == 3


def test_a_buffer_declaring_another_encoding_is_read_as_that_encoding(tmp_path: Path) -> None:
    text = f"<?xml version='1.0' encoding='ISO-8859-1'?>\n<cdl:cdl {CDL_DECL}><cdl:system><S><v>é€</v></S></cdl:system></cdl:cdl>"
    path = str(tmp_path.resolve() / "a.cdl")
    analysis = analyse(path, {path: text}, Settings())
    # é in Latin-1, € (which Latin-1 cannot hold) as a character reference.
    assert analysis.document is not None and analysis.document.resolve().to_data()["system"] == {"S": {"v": "é€"}}


def test_an_error_two_imports_away_is_shown_on_the_first_import_that_leads_to_it(tmp_path: Path) -> None:
    middle = f"<cdl:cdl {CDL_DECL}>\n<cdl:import location='deep.cdl'/>\n</cdl:cdl>"
    deep = f"<cdl:cdl {CDL_DECL}><cdl:configuration>\n<T cdl:extends='Nothing'/>\n</cdl:configuration></cdl:cdl>"
    main = f"<cdl:cdl {CDL_DECL}>\n<cdl:import location='other.cdl'/>\n<cdl:import location='middle.cdl'/>\n</cdl:cdl>"
    for name, text in {"a.cdl": main, "middle.cdl": middle, "deep.cdl": deep, "other.cdl": f"<cdl:cdl {CDL_DECL}/>"}.items():
        (tmp_path / name).write_text(text)
    path = str(tmp_path.resolve() / "a.cdl")
    analysis = analyse(path, {}, Settings())
    [there] = analysis.problems[str(tmp_path.resolve() / "deep.cdl")]
    [here] = analysis.problems[path]
    assert (there.code, there.place.line) == ("UNKNOWN_PROTOTYPE", 1)
    # On the import of middle.cdl (its location's value), which imports deep.cdl.
    assert (here.code, here.place.line, here.place.start, here.place.end) == ("UNKNOWN_PROTOTYPE", 2, 22, 32)
    assert here.related[0] == (there.place, there.message)


def _alive(kind: type) -> int:
    gc.collect()
    return sum(1 for found in gc.get_objects() if isinstance(found, kind))


def test_a_prepared_analysis_keeps_one_copy_of_the_documents_and_one_resolution(tmp_path: Path) -> None:
    """What the requests answer from is all an analysis keeps: the loaded
    documents, and the resolution with provenance (whose plan the lenses
    read) made on the working copies every resolution makes, not a plain
    resolution beside it nor a stamped copy of the documents."""
    _, system = generate(30, tmp_path)
    path = str(Path(system).resolve())
    docs, resolutions = _alive(SourceDoc), _alive(Workspace)
    analysis = analyse(path, {}, Settings())
    navigation = navigation_of(analysis)
    assert navigation is not None and analysis.document is not None
    navigation.prepare()
    assert _alive(SourceDoc) - docs == len(analysis.document.urls) == 2
    assert _alive(Workspace) - resolutions == 1
    plan = navigation.plan()
    assert plan is not None
    assert [c.to_data() for c in plan.components()] == [c.to_data() for c in analysis.document.resolve().plan().components()]


def test_an_analysis_holds_no_reference_cycle(tmp_path: Path) -> None:
    """``cdl lsp`` freezes what its worker made for the cyclic collector
    (``gc.freeze``): an analysis dropped, once it was prepared and answered
    requests, must be freed by reference counting alone, or it would stay
    for as long as the server runs."""
    _, system = generate(30, tmp_path)
    path = str(Path(system).resolve())
    text = Path(path).read_text(encoding="utf-8")
    offset = text.index('cdl:extends="t:', len(text) // 2) + len('cdl:extends="t:')
    line, column = text.count("\n", 0, offset), offset - (text.rfind("\n", 0, offset) + 1)
    gc.collect()
    gc.disable()
    try:
        analysis = analyse(path, {path: text}, Settings())
        navigation = navigation_of(analysis)
        assert navigation is not None
        navigation.prepare()
        url = navigation.written.document.url
        assert hover(navigation, url, line, column) is not None
        assert completion(navigation, url, line, column) and definition(navigation, url, line, column)
        assert symbols(navigation, url) and code_lenses(navigation, url) and references(navigation, url, line, column) is not None
        del analysis, navigation
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_an_analysis_places_its_problems_with_the_lines_the_request_loop_found(tmp_path: Path) -> None:
    # The loop keeps an open buffer's lines as the editor types (Lines.edited):
    # the worker's analysis takes them, and splits no text of an open buffer again.
    (tmp_path / "a.cdl").write_text(MAIN)  # t.cdl missing: a problem on the import
    buffers = Buffers()
    typed = Lines(MAIN.replace("<S ", "<S  ")).edited(0, 0, "")
    main = buffers.put((tmp_path / "a.cdl").resolve().as_uri(), typed.text, typed)
    assert main is not None and buffers.lines(main) is typed
    analysis = buffers.job(main)()
    assert analysis.problems[main]  # placed with the lines of that text
    assert analysis.lines_of(main) is typed


def test_an_analysis_does_not_prepare_an_output_it_never_writes(tmp_path: Path) -> None:
    """``cdl lsp`` never writes an analysis's Document out: its load skips the
    output's known path (types rewritten, a namespace declared on the root:
    work per element, and one long C call). Were it written, the general
    path writes what a Document prepared for it writes."""
    _, system = generate(30, tmp_path)
    path = str(Path(system).resolve())
    analysis = analyse(path, {}, Settings())
    assert analysis.document is not None
    assert loaded_of(analysis.document).output_facts is None
    assert loaded_of(cdl.load(path)).output_facts is not None
    assert analysis.document.resolve().to_bytes() == cdl.load(path).resolve().to_bytes()
