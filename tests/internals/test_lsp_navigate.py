"""Navigation of ``cdl lsp`` (issue 25, points 2-7 and 9): definitions, hovers,
completion, references, symbols and code lenses, from a loaded Document and
the editor's texts (src/cdl/lsp/_navigate.py), in code-point columns."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cdl
from cdl.lsp._navigate import Navigation, Spot
from cdl.lsp._source import Source
from cdl.lsp._written import Region
from cdl.lsp.features import symbols as symbols_module
from cdl.lsp.features.completion import Completion, completion
from cdl.lsp.features.definition import definition
from cdl.lsp.features.hover import hover
from cdl.lsp.features.lenses import code_lenses
from cdl.lsp.features.references import references
from cdl.lsp.features.symbols import listed, symbols
from cdl.text.lines import Lines
from cdl.text.tags import TagIndex, scan
from conftest import CDL_DECL, CDL_NS

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def find(text: str, needle: str, shift: int = 0, nth: int = 0) -> tuple[int, int]:
    """(line, column) of the ``nth`` ``needle`` in ``text``, plus ``shift``
    code points: as an editor holding ``text`` counts (lines end at \\n)."""
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(needle, offset + 1)
    offset += shift
    line = text.count("\n", 0, offset)
    return line, offset - (text.rfind("\n", 0, offset) + 1)


def spot(url: str, text: str, needle: str, length: int | None = None, shift: int = 1, nth: int = 0) -> Spot:
    """The Spot of ``needle[shift:shift+length]`` (by default a start tag's
    name: ``needle`` is ``<name``)."""
    line, column = find(text, needle, shift, nth)
    size = len(needle) - shift if length is None else length
    return Spot(url, line, column, column + size)


@pytest.fixture
def webapp(tmp_path: Path) -> tuple[cdl.Document, dict[str, str]]:
    """The webapp sample (three documents over imports), and its texts by url."""
    for name in ("system.cdl", "webapp-template.cdl", "component-model.cdl"):
        shutil.copy(SAMPLES / "webapp" / name, tmp_path / name)
    doc = cdl.load(tmp_path / "system.cdl")
    return doc, {url: Path(url).read_text(encoding="utf-8") for url in doc.urls}


def in_memory(text: str) -> tuple[cdl.Document, Navigation]:
    """``text`` loaded from memory, and a navigator over it (no open buffers)."""
    doc = cdl.load(text.encode(), name="mem.cdl")
    return doc, Navigation(doc, {})


def labels(found: list[Completion]) -> list[str]:
    return [c.label for c in found]


# -- definition ------------------------------------------------------------------------


def test_definition_of_extends_goes_to_the_prototype_in_the_imported_document(webapp: tuple[cdl.Document, dict[str, str]]) -> None:
    doc, texts = webapp
    main, template = doc.urls[0], doc.urls[1]
    line, column = find(texts[main], 'cdl:extends="t:WebApp"', len('cdl:extends="t:W'))
    assert definition(Navigation(doc, {}), main, line, column) == [spot(template, texts[template], "<WebApp ", 6)]
    # Outside the value (on the attribute's name) it leads nowhere.
    assert definition(Navigation(doc, {}), main, line, column - 16) == []


def test_definition_of_a_reference_through_inheritance_is_where_the_target_is_written(
    webapp: tuple[cdl.Document, dict[str, str]],
) -> None:
    doc, texts = webapp
    template = texts[doc.urls[1]]
    line, column = find(template, 'cdl:ref="/DB/port"', len('cdl:ref="/DB/p'))
    # WebApp/DB extends DBServer, which writes port: the path passes an
    # inherited child, so only the resolution knows where it leads.
    assert definition(Navigation(doc, texts), doc.urls[1], line, column) == [spot(doc.urls[1], template, "<port>3306", 4)]


def test_definition_of_refs_refroot_variables_and_imports(write_docs: Callable[..., Path]) -> None:
    lib = f"<cdl:cdl {CDL_DECL}><cdl:configuration><Base><port>80</port><host>h</host></Base></cdl:configuration></cdl:cdl>"
    main_text = (
        f"<cdl:cdl {CDL_DECL}>\n<cdl:import location='lib/base.cdl'/>\n<cdl:system>\n"
        "<S cdl:extends='Base'>\n"
        "  <copy cdl:ref='port'/>\n"
        "  <other cdl:refroot='Base' cdl:ref='/host'/>\n"
        "  <sum><cdl:expression value-of='$p + 1'><cdl:variable name='p' ref='./port'/></cdl:expression></sum>\n"
        "</S>\n</cdl:system></cdl:cdl>"
    )
    path = write_docs({"main.cdl": main_text, "lib/base.cdl": lib})
    doc = cdl.load(path)
    nav = Navigation(doc, {})
    main, base = doc.urls
    port = spot(base, lib, "<port", 4)
    assert definition(nav, main, *find(main_text, "'port'", 2)) == [port]  # inherited: through the resolution
    assert definition(nav, main, *find(main_text, "'./port'", 2)) == [port]  # a cdl:variable's ref
    assert definition(nav, main, *find(main_text, "'/host'", 2)) == [spot(base, lib, "<host", 4)]
    assert definition(nav, main, *find(main_text, "refroot='Base'", 10)) == [spot(base, lib, "<Base", 4)]
    assert definition(nav, main, *find(main_text, "lib/base", 2)) == [Spot(base, 0, 0, 0)]


def test_definition_of_a_templates_reference_that_selects_only_where_inherited() -> None:
    text = (
        f"<cdl:cdl {CDL_DECL}><cdl:configuration>\n<T><x cdl:ref='/name'/></T>\n</cdl:configuration>"
        "<cdl:system>\n<S cdl:extends='T'><name>s</name></S>\n<U cdl:extends='T'><name>u</name></U>\n</cdl:system></cdl:cdl>"
    )
    doc = cdl.load(text.encode(), name="mem.cdl")
    # T has no name: the path selects in each list that extends T.
    assert definition(Navigation(doc, {}), doc.url, *find(text, "'/name'", 2)) == [
        spot(doc.url, text, "<name>s", 4),
        spot(doc.url, text, "<name>u", 4),
    ]


def test_definition_follows_catalogs(write_docs: Callable[..., Path], tmp_path: Path) -> None:
    lib = f"<cdl:cdl {CDL_DECL}><cdl:configuration><Server><port>80</port></Server></cdl:configuration></cdl:cdl>"
    main_text = (
        f"<cdl:cdl {CDL_DECL}><cdl:import location='http://example.com/server.cdl'/>"
        "<cdl:system><S cdl:extends='Server'/></cdl:system></cdl:cdl>"
    )
    catalog = (
        '<catalog xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog">'
        '<uri name="http://example.com/server.cdl" uri="site/server.cdl"/></catalog>'
    )
    path = write_docs({"app/main.cdl": main_text, "repo/site/server.cdl": lib, "repo/catalog.xml": catalog})
    doc = cdl.load(path, catalogs=[tmp_path / "repo" / "catalog.xml"])
    nav = Navigation(doc, {})
    assert definition(nav, doc.url, *find(main_text, "'Server'", 2)) == [spot(doc.urls[1], lib, "<Server", 6)]
    assert definition(nav, doc.url, *find(main_text, "example.com", 2)) == [Spot(doc.urls[1], 0, 0, 0)]


def test_positions_on_crlf_non_ascii_and_start_tags_over_several_lines(write_docs: Callable[..., Path]) -> None:
    # A line of astral and accented characters before the tags, CRLF line
    # ends, and start tags spread over lines: columns count code points.
    text = (
        f"<cdl:cdl {CDL_DECL}>\r\n<cdl:configuration>\r\n"
        "<Tëmplate\r\n   kind='x'>\r\n  <pört>é</pört>\r\n</Tëmplate>\r\n"
        "</cdl:configuration>\r\n<cdl:system>\r\n"
        "<Ünit><nöte>𝄞 ça</nöte><Wëb\r\n    cdl:extends='Tëmplate'\r\n    ><pört\r\n cdl:ref='../nöte'/></Wëb></Ünit>\r\n"
        "</cdl:system></cdl:cdl>\r\n"
    )
    path = write_docs({"main.cdl": text.encode("utf-8")})
    doc = cdl.load(path)
    for texts in ({}, {doc.url: text}):
        nav = Navigation(doc, texts)
        assert definition(nav, doc.url, *find(text, "'Tëmplate'", 3)) == [spot(doc.url, text, "<Tëmplate", 8)]
        assert definition(nav, doc.url, *find(text, "'../nöte'", 6)) == [spot(doc.url, text, "<nöte>", 4)]
        shown = hover(nav, doc.url, *find(text, "<Wëb", 2))
        assert shown is not None and shown.spot == spot(doc.url, text, "<Wëb", 3)
        assert "/Ünit/Wëb" in shown.markdown
        names = [(s.name, s.selection) for s in symbols(nav, doc.url)[1].children]
        assert names == [("nöte", spot(doc.url, text, "<nöte", 4)), ("Wëb", spot(doc.url, text, "<Wëb", 3))]
        # A symbol's range is its whole element, over as many lines as it takes ("\r\n" one line end).
        start, end = find(text, "<Wëb", 0), find(text, "</Wëb>", len("</Wëb>"))
        assert symbols(nav, doc.url)[1].children[1].region == Region(doc.url, *start, *end)


# -- hover ------------------------------------------------------------------------------


def test_hover_on_a_property_shows_its_value_and_its_provenance_with_links(webapp: tuple[cdl.Document, dict[str, str]]) -> None:
    doc, texts = webapp
    template = texts[doc.urls[1]]
    line, column = find(template, "<port>3306", 2)
    shown = hover(Navigation(doc, texts), doc.urls[1], line, column)
    assert shown is not None
    assert "/t:DBServer/t:port = 3306" in shown.markdown
    uri = Path(doc.urls[1]).resolve().as_uri()
    assert f"[{doc.urls[1]}:{line + 1}]({uri}#L{line + 1})" in shown.markdown


def test_hover_links_the_steps_of_a_references_target_too() -> None:
    text = f"<cdl:cdl {CDL_DECL}><cdl:system>\n<a><p>1</p></a>\n<b><q cdl:refroot='a' cdl:ref='/p'/></b>\n</cdl:system></cdl:cdl>"
    doc, nav = in_memory(text)
    shown = hover(nav, doc.url, *find(text, "<q", 1))
    assert shown is not None and "/b/q = 1" in shown.markdown
    uri = Path("mem.cdl").resolve().as_uri()
    # q is written on line 3; the value it copies, p, on line 2.
    assert f"- written: [mem.cdl:3]({uri}#L3)" in shown.markdown
    assert f"- written: [mem.cdl:2]({uri}#L2)" in shown.markdown


def test_a_hover_that_cannot_be_explained_leaves_the_next_ones_alone(write_docs: Callable[..., Path]) -> None:
    # The imported template's references form a cycle nothing of the main
    # document needs: the document resolves, explaining them fails.
    lib = f"<cdl:cdl {CDL_DECL}><cdl:configuration>\n<T><a cdl:ref='b'/><b cdl:ref='a'/>\n<c>1</c></T>\n</cdl:configuration></cdl:cdl>"
    text = f"<cdl:cdl {CDL_DECL}><cdl:import location='lib.cdl'/><cdl:system><S><x>1</x></S></cdl:system></cdl:cdl>"
    doc = cdl.load(write_docs({"main.cdl": text, "lib.cdl": lib}))
    nav = Navigation(doc, {})
    failed = hover(nav, doc.urls[1], *find(lib, "<a ", 1))
    assert failed is not None and "No explanation: `REF_CYCLE`" in failed.markdown
    shown = hover(nav, doc.urls[1], *find(lib, "<c>", 1))
    assert shown is not None and "/T/c = 1" in shown.markdown


def test_hover_on_a_pending_property_says_what_it_waits_for() -> None:
    text = (
        f"<cdl:cdl {CDL_DECL}><cdl:system>\n<db><host cdl:lazy='true'/></db>\n"
        "<app><url cdl:refroot='db' cdl:ref='/host'/></app>\n</cdl:system></cdl:cdl>"
    )
    doc, nav = in_memory(text)
    shown = hover(nav, doc.url, *find(text, "<url", 2))
    assert shown is not None
    assert "/app/url (pending)" in shown.markdown
    assert "waits for /db/host" in shown.markdown


def test_hover_on_extends_shows_the_prototype_abbreviated(write_docs: Callable[..., Path]) -> None:
    # A reference of the imported template itself: resolved for the hover,
    # though resolution resolves only what the main document needs.
    children = "<r cdl:ref='p0'/>" + "".join(f"<p{i}>{i}</p{i}>" for i in range(12))
    lib = f"<cdl:cdl {CDL_DECL}><cdl:configuration>\n<T>{children}</T>\n</cdl:configuration></cdl:cdl>"
    text = f"<cdl:cdl {CDL_DECL}><cdl:import location='lib.cdl'/><cdl:system><S cdl:extends='T'><p0>zero</p0></S></cdl:system></cdl:cdl>"
    doc = cdl.load(write_docs({"main.cdl": text, "lib.cdl": lib}))
    shown = hover(Navigation(doc, {}), doc.url, *find(text, "'T'", 1))
    assert shown is not None
    assert shown.markdown.startswith(f"**`T`** in [{doc.urls[1]}:2]")
    assert "- `r` = `0`" in shown.markdown
    assert "- `p8` = `8`" in shown.markdown and "p9" not in shown.markdown
    assert "... and 3 more" in shown.markdown
    assert shown.spot == spot(doc.url, text, "'T'", 1)


def test_a_document_that_does_not_resolve_still_navigates() -> None:
    text = (
        f"<cdl:cdl {CDL_DECL}><cdl:configuration><T><a>1</a></T></cdl:configuration>"
        "<cdl:system><S cdl:extends='T'><b cdl:ref='missing'/><c cdl:ref='b'/></S></cdl:system></cdl:cdl>"
    )
    doc = cdl.load(text.encode(), name="mem.cdl")
    with pytest.raises(cdl.CdlError):
        doc.resolve()
    nav = Navigation(doc, {})
    assert definition(nav, doc.url, *find(text, "'T'", 1)) == [spot(doc.url, text, "<T>", 1)]
    assert definition(nav, doc.url, *find(text, "'b'", 1)) == [spot(doc.url, text, "<b ", 1)]
    assert [s.name for s in symbols(nav, doc.url)] == ["T", "S"]
    # Without a resolution, the children written in the loaded tree.
    assert labels(completion(nav, doc.url, *find(text, "'missing'", 1))) == ["b", "c"]
    shown = hover(nav, doc.url, *find(text, "<b ", 1))
    assert shown is not None and "does not resolve: `REF_NOT_FOUND`" in shown.markdown
    assert code_lenses(nav, doc.url) == []


# -- completion ---------------------------------------------------------------------------


def test_completion_of_templates_uses_the_documents_prefixes(webapp: tuple[cdl.Document, dict[str, str]]) -> None:
    doc, texts = webapp
    found = completion(Navigation(doc, texts), doc.url, *find(texts[doc.url], 't:WebApp"', 2))
    # system.cdl declares t: for the template document, not c: for the
    # component model, whose lists it therefore cannot name; WebApplication,
    # which the cursor is in, cannot extend itself.
    assert labels(found) == ["t:DBConnection", "t:DBServer", "t:WebApp", "t:WebServer"]  # in order of their names
    assert {c.kind for c in found} == {"template"}


def test_completion_of_reference_paths_offers_the_children_at_the_step(webapp: tuple[cdl.Document, dict[str, str]]) -> None:
    doc, texts = webapp
    template = texts[doc.urls[1]]
    nav = Navigation(doc, texts)
    # "/DB/|": the children of DB, its own and those it inherits from DBServer.
    found = completion(nav, doc.urls[1], *find(template, 'cdl:ref="/DB/port"', len('cdl:ref="/DB/')))
    assert {"port", "hostname", "username", "cmp:CommandPath"} <= set(labels(found))
    # "/|": the children of the top level list WebApp.
    top = labels(completion(nav, doc.urls[1], *find(template, 'cdl:ref="/DB/port"', len('cdl:ref="/'))))
    assert {"DB", "Web", "dbname"} <= set(top) and "port" not in top


def test_completion_of_attributes_and_lazy_values() -> None:
    text = f"<cdl:cdl {CDL_DECL}><cdl:system><S cdl:extends='T' ><v cdl:lazy='true'/></S></cdl:system><cdl:configuration/></cdl:cdl>"
    text = text.replace("<cdl:configuration/>", "").replace("<cdl:system>", "<cdl:configuration><T/></cdl:configuration><cdl:system>")
    doc, nav = in_memory(text)
    found = completion(nav, doc.url, *find(text, "'T' >", 4))
    assert labels(found)[:4] == ["cdl:ref", "cdl:refroot", "cdl:lazy", "cdl:use"]
    assert "cdl:extends" not in labels(found) and {c.kind for c in found} == {"attribute"}
    assert labels(completion(nav, doc.url, *find(text, "lazy='true'", 6))) == ["true", "false"]
    assert completion(nav, doc.url, *find(text, "<S", 1)) == []  # on a name: nothing


def test_completion_while_typing_an_unterminated_value(webapp: tuple[cdl.Document, dict[str, str]]) -> None:
    doc, texts = webapp
    main = texts[doc.url]
    typing = main.replace('<t:dbuser>myapp</t:dbuser>', '<extra cdl:lazy="false" cdl:extends="t:W\n<t:dbuser>myapp</t:dbuser>')
    found = completion(Navigation(doc, {doc.url: typing}), doc.url, *find(typing, '"t:W\n', 4))
    assert "t:WebApp" in labels(found)


# -- references ------------------------------------------------------------------------------


def test_references_to_a_template_and_to_a_property(webapp: tuple[cdl.Document, dict[str, str]]) -> None:
    doc, texts = webapp
    url = doc.urls[1]
    template = texts[url]
    nav = Navigation(doc, texts)
    assert references(nav, url, *find(template, "<DBConnection>", 3)) == [
        spot(url, template, "<dbconnection cdl:extends", 12),
        spot(url, template, "<dbconnection cdl:extends", 12, nth=1),
    ]
    # DBServer's port is selected by Web's reference to /DB/port (DB extends DBServer).
    assert references(nav, url, *find(template, "<port>3306", 2)) == [spot(url, template, '"/DB/port"', 8)]
    # On a cdl:extends value: the lists that extend the list it names.
    assert references(nav, url, *find(template, 'cdl:extends="DBServer"', 14)) == [spot(url, template, "<DB cdl", 2)]


def test_references_count_those_a_template_hands_down_to_the_lists_extending_it() -> None:
    text = (
        f"<cdl:cdl {CDL_DECL}><cdl:configuration>\n<T><name>t</name><x cdl:ref='/name'/>\n"
        "<y><cdl:expression value-of='$n'><cdl:variable name='n' ref='/name'/></cdl:expression></y></T>\n"
        "</cdl:configuration><cdl:system>\n<S cdl:extends='T'><name>s</name></S>\n</cdl:system></cdl:cdl>"
    )
    doc, nav = in_memory(text)
    both = sorted([spot(doc.url, text, "'/name'", 5), spot(doc.url, text, "'/name'", 5, nth=1)], key=str)
    # Written in T, they select T's name there, and S's name in S, which inherits them.
    assert sorted(references(nav, doc.url, *find(text, "<name>t", 1)), key=str) == both
    assert sorted(references(nav, doc.url, *find(text, "<name>s", 1)), key=str) == both
    assert references(nav, doc.url, *find(text, "<T>", 1)) == [spot(doc.url, text, "<S ", 1)]


# -- symbols ------------------------------------------------------------------------------------


def test_symbols_are_the_lists_and_properties_as_a_tree(webapp: tuple[cdl.Document, dict[str, str]]) -> None:
    doc, texts = webapp
    found = symbols(Navigation(doc, texts), doc.urls[1])
    assert [s.name for s in found] == ["DBConnection", "WebServer", "DBServer", "WebApp"]
    assert {s.kind for s in found} == {"list"}
    web = next(s for s in found[3].children if s.name == "Web")
    assert web.kind == "property"
    assert [c.name for c in web.children] == ["cmp:CodeBase", "applicationPath", "dbconnection"]
    assert [c.name for c in web.children[2].children] == ["JNDIName", "hostname", "port", "username", "password"]


def test_symbols_up_to_a_limit_read_only_what_they_list(monkeypatch: pytest.MonkeyPatch) -> None:
    body = "".join(f"<L{i}>" + "".join(f"<p{j}>{j}</p{j}>" for j in range(10)) + f"</L{i}>" for i in range(300))
    doc, nav = in_memory(f"<cdl:cdl {CDL_DECL}><cdl:system>{body}</cdl:system></cdl:cdl>")
    made: list[str] = []
    make = symbols_module._symbol
    monkeypatch.setattr(symbols_module, "_symbol", lambda *args: made.append(args[3]) or make(*args))
    # 300 lists, then the properties of 10 of them: the 11th list's first is not made.
    found = listed(nav, doc.url, 400)
    assert (len(made), made.count("list"), found.whole, found.cut, found.lists_cut) == (400, 300, 10, True, False)
    made.clear()
    found = listed(nav, doc.url, 50)
    assert (len(made), len(found.symbols), found.whole, found.lists_cut) == (50, 50, 0, True)


def test_symbols_of_a_deep_document_need_no_recursion() -> None:
    depth = 5000
    body = "".join(f"<e{i}>" for i in range(depth)) + "".join(f"</e{i}>" for i in reversed(range(depth)))
    doc = cdl.load(f"<cdl:cdl {CDL_DECL}><cdl:system><S/></cdl:system></cdl:cdl>".encode(), name="mem.cdl")
    text = f"<cdl:cdl {CDL_DECL}><cdl:system>{body}</cdl:system></cdl:cdl>"
    symbol = symbols(Navigation(doc, {"deep.cdl": text}), "deep.cdl")[0]
    levels = 1
    while symbol.children:
        symbol = symbol.children[0]
        levels += 1
    assert levels == depth and symbol.name == f"e{depth - 1}"


# -- code lenses --------------------------------------------------------------------------------


def test_code_lenses_show_each_components_wave_and_what_it_comes_after() -> None:
    text = (
        f"<cdl:cdl {CDL_DECL}><cdl:system>\n<db><host cdl:lazy='true'/></db>\n"
        "<app><url cdl:refroot='db' cdl:ref='/host'/><part><x>1</x></part></app>\n</cdl:system></cdl:cdl>"
    )
    doc = cdl.load(text.encode(), name="mem.cdl")
    expected = [
        (spot(doc.url, text, "<db>", 2), "wave 1"),
        (spot(doc.url, text, "<app>", 3), "wave 2 · after /db"),
        (spot(doc.url, text, "<part>", 4), "wave 1"),
    ]
    assert [(lens.spot, lens.title) for lens in code_lenses(Navigation(doc, {}), doc.url)] == expected
    # With the server's own resolution, the plan is that resolution's; after
    # a deploy-time value for /db/host, nothing waits for it any more.
    supplied = doc.resolve({"db/host": "h"})
    lenses = code_lenses(Navigation(doc, {}, resolution=supplied), doc.url)
    assert [lens.title for lens in lenses] == ["wave 1", "wave 1", "wave 1"]


def test_a_text_changed_since_loading_pairs_what_still_matches(webapp: tuple[cdl.Document, dict[str, str]]) -> None:
    doc, texts = webapp
    main = texts[doc.url]
    # A documentation element and a new property, neither in the loaded tree.
    edited = main.replace(
        "<t:application>", f"<cdl:documentation>notes</cdl:documentation><new xmlns:cdl='{CDL_NS}'/><t:application>"
    )
    nav = Navigation(doc, {doc.url: edited})
    template = doc.urls[1]
    assert definition(nav, doc.url, *find(edited, "t:WebApp", 3)) == [spot(template, texts[template], "<WebApp ", 6)]
    assert [s.name for s in symbols(nav, doc.url)[0].children][:2] == ["new", "t:application"]
    shown = hover(nav, doc.url, *find(edited, "<t:dbuser>", 2))
    assert shown is not None and "/WebApplication/t:dbuser = myapp" in shown.markdown


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["<a>", "</a>", "<b x='/>'>", "</b>", "<c/>", "<d x='", "'>", "<!--", "-->", "t"]), max_size=30).map("".join))
def test_a_source_of_read_tags_nests_as_one_of_the_index(text: str) -> None:
    """A Source reads its tags' nesting from the text's ``TagIndex`` when it
    has one, from the tags themselves when given them (those carried around
    what was typed): the two tell the same elements open at every offset."""
    indexed, read = Source(text), Source(text, scan(text))
    assert [read.open_at(offset) for offset in range(len(text) + 1)] == [indexed.open_at(offset) for offset in range(len(text) + 1)]


def test_hover_and_definitions_tell_elements_of_one_name_apart() -> None:
    # Everything on one line: lines alone cannot tell the two p apart.
    text = (
        f"<cdl:cdl {CDL_DECL}><cdl:configuration><T><p>1</p></T><U><p>2</p></U></cdl:configuration>"
        "<cdl:system><S cdl:extends='U'/><R><v cdl:refroot='S' cdl:ref='/p'/><a>x</a><a>y</a></R></cdl:system></cdl:cdl>"
    )
    doc, nav = in_memory(text)
    assert definition(nav, doc.url, *find(text, "'/p'", 2)) == [spot(doc.url, text, "<p>", 1, nth=1)]
    shown = hover(nav, doc.url, *find(text, "<a>y", 1))
    assert shown is not None and "/R/a[2] = y" in shown.markdown


def test_a_reference_in_a_later_same_named_sibling_is_followed_from_that_sibling() -> None:
    # The targets are inherited, so the definition is found in the resolved
    # trees, where the two a are told apart by their rank among same-named
    # siblings (model.naming's [k]): the second a's reference leads to U's p.
    text = (
        f"<cdl:cdl {CDL_DECL}><cdl:configuration><T><p>1</p></T><U><p>2</p></U></cdl:configuration>"
        "<cdl:system><R>\n<a cdl:extends='T'><v cdl:ref='p'/></a>\n"
        "<a cdl:extends='U'><v cdl:ref='p'/></a>\n</R></cdl:system></cdl:cdl>"
    )
    doc, nav = in_memory(text)
    assert definition(nav, doc.url, *find(text, "'p'", 1, nth=1)) == [spot(doc.url, text, "<p>", 1, nth=1)]
    assert definition(nav, doc.url, *find(text, "'p'", 1)) == [spot(doc.url, text, "<p>", 1)]


def test_every_request_answers_on_every_prefix_of_a_text_being_typed(webapp: tuple[cdl.Document, dict[str, str]]) -> None:
    # The editor's text is often not well-formed while being typed, and no
    # longer the text the Document was loaded from: every request answers.
    doc, texts = webapp
    answered = 0
    for url in doc.urls[:2]:
        text = texts[url]
        for end in range(0, len(text), 17):
            typed = text[:end]
            nav = Navigation(doc, {url: typed})
            line, column = find(typed + "\n", "\n", 0, typed.count("\n"))
            for position in ((line, column), (max(line - 1, 0), 3)):
                definition(nav, url, *position)
                completion(nav, url, *position)
                references(nav, url, *position)
                hover(nav, url, *position)
            symbols(nav, url)
            answered += 1
    assert answered > 150


def _sample_documents() -> list[Path]:
    """The samples' and the conformance suite's main documents."""
    suite = Path(__file__).resolve().parents[1] / "data" / "conformance" / "suite"
    return sorted(SAMPLES.glob("*/system.cdl")) + sorted(suite.glob("*/*/main.cdl"))


def test_definitions_and_symbols_land_on_the_names_they_name_in_the_samples() -> None:
    checked = 0
    for path in _sample_documents():
        try:
            doc = cdl.load(path)
        except cdl.CdlError:
            continue  # a conformance case of an error at load time
        nav = Navigation(doc, {})
        lines = {url: Path(url).read_text(encoding="utf-8").split("\n") for url in doc.urls}
        for url in doc.urls:
            text = "\n".join(lines[url])
            for written in re.finditer(r"""cdl:extends\s*=\s*["']([^"']+)["']""", text):
                line, column = find(text, written.group(0), written.start(1) - written.start(0), nth=text.count(written.group(0), 0, written.start()))
                for target in definition(nav, url, line, column):
                    name = lines[target.url][target.line][target.start : target.end]
                    assert name.rpartition(":")[2] == written.group(1).rpartition(":")[2], (url, written.group(0))
                    checked += 1
            stack = list(symbols(nav, url))
            while stack:
                symbol = stack.pop()
                selection = symbol.selection
                assert lines[url][selection.line][selection.start : selection.end] == symbol.name
                stack.extend(symbol.children)
    assert checked >= 20, checked


def test_the_lenses_of_same_named_siblings_are_each_on_its_own() -> None:
    from test_same_names import FARM, W1

    farm = cdl.load(FARM.encode(), name="farm.cdl")
    lenses = code_lenses(Navigation(farm, {}), farm.url)
    lines = FARM.splitlines()
    shown = [(lines[lens.spot.line].strip()[:6], lens.title) for lens in lenses]
    assert shown == [
        ("<apps>", "wave 1"),
        ("<web><", "wave 1"),
        ("<web><", f"wave 2 · after {W1}"),
        ("<lb><b", "wave 2 · after /apps"),
    ]


# -- text being typed ---------------------------------------------------------------------

#: What a user types, inserted at each place of TYPED_IN (half-written, as typed).
TYPINGS = ('<n cdl:extends="', ' cdl:', '<v cdl:ref="/a/', 'x', '"/>\n<m cdl:ref="', '</Web>', "<c cdl:l", "\n")


def test_completion_where_text_was_typed_reads_it_as_reading_the_whole_text_would(webapp: tuple[cdl.Document, dict[str, str]]) -> None:
    """The text being typed is paired from the last analysis's through the
    edit, only around what was typed (``Source.carried``): completion there
    answers what pairing the whole text again answers, at every position of
    what was typed and of the tags it touches."""
    from cdl.lsp._buffers import Buffers, Settings, analyse
    from cdl.lsp._edits import Edit
    from cdl.lsp._navigate import navigation_now
    from cdl.text.lines import Lines

    doc, texts = webapp
    path = doc.urls[0]
    # Markup written in a comment, a CDATA section and a processing instruction is none.
    text = texts[path].replace("<t:application>", "<t:application><!-- a <b> --><?pi <c?><![CDATA[ <d ]]>", 1)
    analysis = analyse(path, {path: text}, Settings())
    places = [m.end() for m in re.finditer(r'<t:application>|cdl:extends="t:|<WebApplication|</t:dbname>|\n  </cdl:system>|-->|\?>|]]>', text)]
    checked = 0
    for place in places:
        for typing in TYPINGS:
            new = text[:place] + typing + text[place:]
            buffers = Buffers()
            buffers.texts[path] = new
            now = buffers.texts_now(analysis.document)  # type: ignore[arg-type]
            edit = Edit(Lines(text), new)
            carried = navigation_now(analysis, now, edit)
            whole = navigation_now(analysis, now)
            assert carried is not None and whole is not None
            assert len(carried.written.paired(0).source.tags) < len(whole.written.paired(0).source.tags)  # not read whole
            lines = Lines(new)
            for offset in range(max(edit.start - 30, 0), min(edit.new_end + 30, len(new))):
                line, column = lines.position_of(offset)
                assert completion(carried, path, line, column) == completion(whole, path, line, column), (typing, new[offset - 20 : offset])
                checked += 1
    assert checked > 1000


def test_text_typed_in_a_wide_list_parent_lists_the_children_only_of_the_tags_around_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # The tags that hold the stretch typed are read again, not their children:
    # those of cdl:system are every list of the system.
    lists = "".join(f"<S{k}><v>{k}</v></S{k}>" for k in range(300))
    old = f"<cdl:cdl {CDL_DECL}><cdl:system>{lists}</cdl:system></cdl:cdl>"
    at = old.index("<v>150</v>") + len("<v>1")
    new = old[:at] + "x" + old[at:]
    listed: list[int] = []
    children = TagIndex.children

    def counted(self: TagIndex, index: int) -> list[int]:
        found = children(self, index)
        listed.append(len(found))
        return found

    monkeypatch.setattr(TagIndex, "children", counted)
    source, was = Source.carried(Source(old), new, Lines(new), (at, at, at + 1))
    assert max(listed, default=0) < 10
    assert [source.tags[i].name for i in was] == [Source(old).tags[j].name for j in was.values()]
    assert any(source.tags[i].name == "v" for i in was)  # the tag typed in is matched with its old self


def test_completion_reads_what_each_writing_of_a_list_names_once_per_place(monkeypatch: pytest.MonkeyPatch) -> None:
    lists = "".join(f"<T{k}><v>{k}</v></T{k}>" for k in range(20))
    text = f"<cdl:cdl {CDL_DECL}><cdl:configuration>{lists}</cdl:configuration><cdl:system><S cdl:extends='T'/></cdl:system></cdl:cdl>"
    doc, nav = in_memory(text)
    read: list[str] = []
    parse = cdl.lsp._written.parse_name_ref

    def counted(written: str, *args: object) -> object:
        read.append(written)
        return parse(written, *args)  # type: ignore[arg-type]

    monkeypatch.setattr("cdl.lsp._written.parse_name_ref", counted)
    first = labels(completion(nav, doc.url, *find(text, "cdl:extends='T'", len("cdl:extends='T"))))
    assert first == [f"T{k}" for k in sorted(range(20), key=str)] and len(read) == 20
    again = labels(completion(nav, doc.url, *find(text, "cdl:extends='T'", len("cdl:extends='T"))))
    assert again == first and len(read) == 20  # the same place: nothing read again
