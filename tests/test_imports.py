"""cdl.loading.imports: loading the main document and what it imports (section 9):
relative locations, file: URIs, each document once, refusals and confinement."""

from __future__ import annotations

import os
import socket
import urllib.request
from pathlib import Path

import pytest

import cdl
from cdl import CdlError
from conftest import cdl_doc, config, list_xml, lists_xml, system


def imp(location: str) -> str:
    return f'<cdl:import location="{location}"/>'


def real(paths) -> list[Path]:
    return [Path(p).resolve() for p in paths]


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fail the test if anything tries to open a URL or a socket connection."""
    calls: list[str] = []

    def refuse(*args, **kwargs):
        calls.append(repr(args[:1]))
        raise AssertionError(f"network access attempted: {args[:1]!r}")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    return calls


# ---------------------------------------------------------------------------
# Locations


@pytest.mark.parametrize(
    ("docs", "order"),
    [
        # relative to the importing document, not the current directory
        (
            {
                "main.cdl": cdl_doc(imp("lib/a.cdl") + "<cdl:system><s cdl:extends='A'/></cdl:system>"),
                "lib/a.cdl": cdl_doc(imp("b.cdl") + "<cdl:configuration><A cdl:extends='B'/></cdl:configuration>"),
                "lib/b.cdl": cdl_doc(imp("../c/c.cdl") + "<cdl:configuration><B cdl:extends='C'/></cdl:configuration>"),
                "c/c.cdl": config("<C><v>c</v></C>"),
            },
            ["main.cdl", "lib/a.cdl", "lib/b.cdl", "c/c.cdl"],
        ),
        # depth first, in declaration order
        (
            {
                "main.cdl": cdl_doc(imp("a.cdl") + imp("b.cdl") + "<cdl:system><s cdl:extends='C'/></cdl:system>"),
                "a.cdl": cdl_doc(imp("a2.cdl") + "<cdl:configuration><A/></cdl:configuration>"),
                "a2.cdl": config("<A2/>"),
                "b.cdl": cdl_doc(imp("c.cdl") + "<cdl:configuration><B/></cdl:configuration>"),
                "c.cdl": config("<C><v>c</v></C>"),
            },
            ["main.cdl", "a.cdl", "a2.cdl", "b.cdl", "c.cdl"],
        ),
        # one document imported twice (diamond) is loaded once
        (
            {
                "main.cdl": cdl_doc(imp("a.cdl") + imp("b.cdl") + imp("c.cdl") + "<cdl:system><s cdl:extends='C'/></cdl:system>"),
                "a.cdl": cdl_doc(imp("c.cdl") + "<cdl:configuration><A/></cdl:configuration>"),
                "b.cdl": cdl_doc(imp("./c.cdl") + "<cdl:configuration><B/></cdl:configuration>"),
                "c.cdl": config("<C><v>c</v></C>"),
            },
            ["main.cdl", "a.cdl", "c.cdl", "b.cdl"],
        ),
        # a cycle of imports: each loaded once, the main document never twice
        (
            {
                "main.cdl": cdl_doc(imp("a.cdl") + "<cdl:system><s cdl:extends='C'/></cdl:system>"),
                "a.cdl": cdl_doc(imp("b.cdl") + "<cdl:configuration><A/></cdl:configuration>"),
                "b.cdl": cdl_doc(imp("a.cdl") + imp("main.cdl") + "<cdl:configuration><C><v>c</v></C></cdl:configuration>"),
            },
            ["main.cdl", "a.cdl", "b.cdl"],
        ),
        # a document importing itself
        (
            {
                "main.cdl": cdl_doc(imp("main.cdl") + imp("c.cdl") + "<cdl:system><s cdl:extends='C'/></cdl:system>"),
                "c.cdl": cdl_doc(imp("c.cdl") + "<cdl:configuration><C><v>c</v></C></cdl:configuration>"),
            },
            ["main.cdl", "c.cdl"],
        ),
    ],
    ids=["relative", "depth-first", "diamond", "cycle", "self"],
)
def test_import_order_and_once(write_docs, tmp_path: Path, docs: dict, order: list[str]) -> None:
    main = write_docs(docs)
    document = cdl.load(main)
    assert real(document.urls) == real(tmp_path / name for name in order)
    assert list_xml(document.resolve(), "s") == "<s><v>c</v></s>"


def test_import_by_file_uri(write_docs, tmp_path: Path) -> None:
    lib = tmp_path / "lib" / "t.cdl"
    main = write_docs(
        {
            "main.cdl": cdl_doc(imp(lib.as_uri()) + "<cdl:system><s cdl:extends='T'/></cdl:system>"),
            "lib/t.cdl": config("<T><v>1</v></T>"),
        }
    )
    document = cdl.load(main)
    assert real(document.urls) == real([main, lib])
    assert list_xml(document.resolve(), "s") == "<s><v>1</v></s>"


def test_file_uri_and_relative_path_to_one_file_load_it_once(write_docs, tmp_path: Path) -> None:
    lib = tmp_path / "t.cdl"
    main = write_docs(
        {
            "main.cdl": cdl_doc(imp(lib.as_uri()) + imp("t.cdl") + imp("./sub/../t.cdl") + "<cdl:system><s cdl:extends='T'/></cdl:system>"),
            "t.cdl": config("<T><v>1</v></T>"),
        }
    )
    document = cdl.load(main)
    assert real(document.urls) == real([main, lib])


def test_main_document_by_file_uri(write_docs, tmp_path: Path) -> None:
    main = write_docs(
        {"main.cdl": cdl_doc(imp("t.cdl") + "<cdl:system><s cdl:extends='T'/></cdl:system>"), "t.cdl": config("<T><v>1</v></T>")}
    )
    document = cdl.load(main.as_uri())
    assert document.url == main.as_uri()
    assert list_xml(document.resolve(), "s") == "<s><v>1</v></s>"


def test_relative_main_path_gives_relative_import_names(write_docs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_docs(
        {
            "proj/main.cdl": cdl_doc(imp("lib/t.cdl") + "<cdl:system><s cdl:extends='T'/></cdl:system>"),
            "proj/lib/t.cdl": config("<T>\n<x cdl:extends='nothing'/></T>"),
        }
    )
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CdlError) as info:
        cdl.load(os.path.join("proj", "main.cdl")).resolve()
    assert (info.value.code, info.value.url, info.value.line) == ("UNKNOWN_PROTOTYPE", os.path.join("proj", "lib", "t.cdl"), 2)


def test_bytes_main_document_imports_relative_to_current_directory(write_docs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_docs({"t.cdl": config("<T><v>1</v></T>")})
    monkeypatch.chdir(tmp_path)
    document = cdl.load(cdl_doc(imp("t.cdl") + "<cdl:system><s cdl:extends='T'/></cdl:system>").encode(), name="inline")
    assert document.url == "inline"
    assert list_xml(document.resolve(), "s") == "<s><v>1</v></s>"


# ---------------------------------------------------------------------------
# Errors


def test_imported_document_with_system(write_docs, tmp_path: Path) -> None:
    main = write_docs(
        {
            "main.cdl": cdl_doc("\n" + imp("lib.cdl") + "\n<cdl:system><s/></cdl:system>"),
            "lib.cdl": cdl_doc("<cdl:configuration><T/></cdl:configuration>\n<cdl:system><u/></cdl:system>"),
        }
    )
    with pytest.raises(CdlError) as info:
        cdl.load(main)
    error = info.value
    assert (error.code, error.url, error.line) == ("IMPORT_SYSTEM", str(main), 2)
    assert "lib.cdl" in error.message and "cdl:system (line 2)" in error.message


def test_system_in_a_nested_import(write_docs) -> None:
    main = write_docs(
        {
            "main.cdl": cdl_doc(imp("a.cdl") + "<cdl:system><s/></cdl:system>"),
            "a.cdl": cdl_doc("\n\n" + imp("b.cdl")),
            "b.cdl": system("<u/>"),
        }
    )
    with pytest.raises(CdlError) as info:
        cdl.load(main)
    assert (info.value.code, Path(info.value.url).name, info.value.line) == ("IMPORT_SYSTEM", "a.cdl", 3)


@pytest.mark.parametrize("location", ["missing.cdl", "sub/missing.cdl", "dir"])
def test_missing_import(write_docs, tmp_path: Path, location: str) -> None:
    (tmp_path / "dir").mkdir()
    main = write_docs({"main.cdl": cdl_doc("\n\n" + imp(location) + "<cdl:system><s/></cdl:system>")})
    with pytest.raises(CdlError) as info:
        cdl.load(main)
    error = info.value
    assert (error.code, error.url, error.line) == ("IMPORT_NOT_FOUND", str(main), 3)
    assert f"cannot read {tmp_path / location}" in error.message


def test_missing_main_document(tmp_path: Path) -> None:
    with pytest.raises(CdlError) as info:
        cdl.load(tmp_path / "nope.cdl")
    assert (info.value.code, info.value.url) == ("IO_ERROR", str(tmp_path / "nope.cdl"))
    assert "no such file" in info.value.message


def test_error_in_imported_document_names_it(write_docs, tmp_path: Path) -> None:
    main = write_docs({"main.cdl": cdl_doc(imp("lib.cdl")), "lib.cdl": system("<s>\n<p cdl:lazy='x'/></s>")})
    with pytest.raises(CdlError) as info:
        cdl.load(main)
    assert (info.value.code, info.value.url, info.value.line) == ("BAD_LAZY", str(tmp_path / "lib.cdl"), 2)


def test_imported_document_that_is_not_cdl(write_docs, tmp_path: Path) -> None:
    main = write_docs({"main.cdl": cdl_doc(imp("lib.xml")), "lib.xml": "<html/>"})
    with pytest.raises(CdlError) as info:
        cdl.load(main)
    assert (info.value.code, info.value.url) == ("NOT_CDL", str(tmp_path / "lib.xml"))


@pytest.mark.parametrize(
    "location",
    ["http://127.0.0.1:9/none.cdl", "https://example.org/t.cdl", "HTTP://example.org/t.cdl", "http://[::1]:9/x.cdl"],
)
def test_remote_import_refused_without_network(write_docs, no_network: list[str], location: str) -> None:
    main = write_docs({"main.cdl": cdl_doc("\n" + imp(location) + "<cdl:system><s/></cdl:system>")})
    with pytest.raises(CdlError) as info:
        cdl.load(main)
    error = info.value
    assert (error.code, error.url, error.line) == ("IMPORT_REFUSED", str(main), 2)
    assert "remote" in error.message and "--allow-remote" in error.message
    assert no_network == []


def test_remote_main_document_refused(no_network: list[str]) -> None:
    with pytest.raises(CdlError) as info:
        cdl.load("http://127.0.0.1:9/main.cdl")
    assert info.value.code == "IMPORT_REFUSED"
    assert no_network == []


@pytest.mark.parametrize("location", ["ftp://example.org/t.cdl", "data:text/xml,%3Cx/%3E", "repo:templates/t.cdl", "jar:file:/x!/t.cdl"])
def test_other_schemes_refused_without_resolver(write_docs, no_network: list[str], location: str) -> None:
    main = write_docs({"main.cdl": cdl_doc(imp(location) + "<cdl:system><s/></cdl:system>")})
    with pytest.raises(CdlError) as info:
        cdl.load(main)
    assert info.value.code == "IMPORT_REFUSED"
    assert "scheme" in info.value.message


def test_remote_import_through_a_resolver(write_docs, no_network: list[str]) -> None:
    store = {
        "http://example.org/cdl/t.cdl": cdl_doc(imp("base/b.cdl") + "<cdl:configuration><T cdl:extends='B'/></cdl:configuration>"),
        "http://example.org/cdl/base/b.cdl": config("<B><v>remote</v></B>"),
    }
    asked: list[str] = []

    def resolver(url: str) -> bytes:
        asked.append(url)
        return store[url].encode()

    main = write_docs({"main.cdl": cdl_doc(imp("http://example.org/cdl/t.cdl") + "<cdl:system><s cdl:extends='T'/></cdl:system>")})
    with pytest.raises(CdlError) as info:  # a resolver alone does not allow remote documents
        cdl.load(main, resolver=resolver)
    assert info.value.code == "IMPORT_REFUSED"
    assert asked == []
    document = cdl.load(main, allow_remote=True, resolver=resolver)
    assert asked == ["http://example.org/cdl/t.cdl", "http://example.org/cdl/base/b.cdl"]
    assert document.urls[1:] == ("http://example.org/cdl/t.cdl", "http://example.org/cdl/base/b.cdl")
    assert list_xml(document.resolve(), "s") == "<s><v>remote</v></s>"
    assert no_network == []


def test_remote_import_allowed_reads_the_url(write_docs, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []

    class Response:
        def __init__(self, data: bytes) -> None:
            self.data = data

        def read(self, limit: int = -1) -> bytes:
            return self.data

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            return None

    def fake_urlopen(url, timeout=None):
        opened.append(url)
        return Response(config("<T><v>over http</v></T>").encode())

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: pytest.fail("real connection"))
    main = write_docs({"main.cdl": cdl_doc(imp("http://example.org/t.cdl") + "<cdl:system><s cdl:extends='T'/></cdl:system>")})
    document = cdl.load(main, allow_remote=True)
    assert opened == ["http://example.org/t.cdl"]
    assert list_xml(document.resolve(), "s") == "<s><v>over http</v></s>"


def test_custom_scheme_through_a_resolver(write_docs) -> None:
    main = write_docs({"main.cdl": cdl_doc(imp("repo:t.cdl") + "<cdl:system><s cdl:extends='T'/></cdl:system>")})
    document = cdl.load(main, resolver=lambda url: config(f"<T><v>{url}</v></T>").encode())
    assert list_xml(document.resolve(), "s") == "<s><v>repo:t.cdl</v></s>"


def test_resolver_failure_is_import_not_found(write_docs) -> None:
    def resolver(url: str) -> bytes:
        raise OSError("repository offline")

    main = write_docs({"main.cdl": cdl_doc("\n" + imp("repo:t.cdl") + "<cdl:system><s/></cdl:system>")})
    with pytest.raises(CdlError) as info:
        cdl.load(main, resolver=resolver)
    assert (info.value.code, info.value.line) == ("IMPORT_NOT_FOUND", 2)
    assert "repository offline" in info.value.message


def test_resolver_returning_text_is_an_error(write_docs) -> None:
    main = write_docs({"main.cdl": cdl_doc(imp("repo:t.cdl") + "<cdl:system><s/></cdl:system>")})
    with pytest.raises(CdlError) as info:
        cdl.load(main, resolver=lambda url: config("<T/>"))  # str, not bytes
    assert info.value.code == "IMPORT_NOT_FOUND"
    assert "bytes" in info.value.message


# ---------------------------------------------------------------------------
# Confinement: the main document's directory and the import paths only


def test_import_outside_the_main_directory_is_refused(write_docs, tmp_path: Path) -> None:
    main = write_docs(
        {"proj/main.cdl": cdl_doc("\n" + imp("../shared/t.cdl") + "<cdl:system><s cdl:extends='T'/></cdl:system>"), "shared/t.cdl": config("<T><v>1</v></T>")}
    )
    with pytest.raises(CdlError) as info:
        cdl.load(main)
    error = info.value
    assert (error.code, error.url, error.line) == ("IMPORT_REFUSED", str(main), 2)
    assert f"resolves to {tmp_path / 'shared' / 't.cdl'}, outside the allowed directories" in error.message
    # allowed with an import path
    document = cdl.load(main, import_paths=[tmp_path / "shared"])
    assert list_xml(document.resolve(), "s") == "<s><v>1</v></s>"
    document = cdl.load(main, import_paths=[str(tmp_path / "shared")])
    assert real(document.urls) == real([main, tmp_path / "shared" / "t.cdl"])


@pytest.mark.parametrize(
    "location",
    [
        "../../../../../../../../etc/passwd",
        "file:///etc/passwd",
        "/etc/passwd",
        "file://otherhost/etc/passwd",
    ],
)
def test_traversal_refused_before_reading(write_docs, location: str) -> None:
    main = write_docs({"main.cdl": cdl_doc(imp(location) + "<cdl:system><s/></cdl:system>")})
    with pytest.raises(CdlError) as info:
        cdl.load(main)
    assert info.value.code == "IMPORT_REFUSED"


def test_import_path_does_not_allow_its_parent(write_docs, tmp_path: Path) -> None:
    main = write_docs(
        {"proj/main.cdl": cdl_doc(imp("../shared/t.cdl") + "<cdl:system><s/></cdl:system>"), "shared/t.cdl": config("<T/>")}
    )
    with pytest.raises(CdlError) as info:
        cdl.load(main, import_paths=[tmp_path / "shared" / "sub"])
    assert info.value.code == "IMPORT_REFUSED"


def test_nested_imports_are_confined_too(write_docs, tmp_path: Path) -> None:
    main = write_docs(
        {
            "proj/main.cdl": cdl_doc(imp("lib/a.cdl") + "<cdl:system><s/></cdl:system>"),
            "proj/lib/a.cdl": cdl_doc("\n" + imp("../../secret/b.cdl")),
            "secret/b.cdl": config("<B/>"),
        }
    )
    with pytest.raises(CdlError) as info:
        cdl.load(main)
    assert (info.value.code, Path(info.value.url).name, info.value.line) == ("IMPORT_REFUSED", "a.cdl", 2)


def test_symlink_escaping_the_directory_is_refused(write_docs, tmp_path: Path) -> None:
    main = write_docs({"proj/main.cdl": cdl_doc(imp("link.cdl") + "<cdl:system><s cdl:extends='T'/></cdl:system>"), "outside/t.cdl": config("<T><v>1</v></T>")})
    (tmp_path / "proj" / "link.cdl").symlink_to(tmp_path / "outside" / "t.cdl")
    with pytest.raises(CdlError) as info:
        cdl.load(main)
    assert info.value.code == "IMPORT_REFUSED"
    assert str(tmp_path / "outside" / "t.cdl") in info.value.message


def test_symlinked_directory_escaping_is_refused(write_docs, tmp_path: Path) -> None:
    main = write_docs({"proj/main.cdl": cdl_doc(imp("lib/t.cdl") + "<cdl:system><s/></cdl:system>"), "outside/t.cdl": config("<T/>")})
    (tmp_path / "proj" / "lib").symlink_to(tmp_path / "outside", target_is_directory=True)
    with pytest.raises(CdlError) as info:
        cdl.load(main)
    assert info.value.code == "IMPORT_REFUSED"


def test_symlink_inside_the_directory_is_allowed(write_docs, tmp_path: Path) -> None:
    main = write_docs({"proj/main.cdl": cdl_doc(imp("link.cdl") + "<cdl:system><s cdl:extends='T'/></cdl:system>"), "proj/lib/t.cdl": config("<T><v>1</v></T>")})
    (tmp_path / "proj" / "link.cdl").symlink_to(tmp_path / "proj" / "lib" / "t.cdl")
    document = cdl.load(main)
    assert list_xml(document.resolve(), "s") == "<s><v>1</v></s>"
    assert real(document.urls) == real([main, tmp_path / "proj" / "lib" / "t.cdl"])


def test_symlinked_main_document_confines_to_its_real_directory(write_docs, tmp_path: Path) -> None:
    # The main document is reached through a symlink: its imports are relative
    # to, and confined to, the directory the document really lives in.
    write_docs({"real/main.cdl": cdl_doc(imp("t.cdl") + "<cdl:system><s cdl:extends='T'/></cdl:system>"), "real/t.cdl": config("<T><v>1</v></T>")})
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "main.cdl").symlink_to(tmp_path / "real" / "main.cdl")
    document = cdl.load(tmp_path / "elsewhere" / "main.cdl")
    assert list_xml(document.resolve(), "s") == "<s><v>1</v></s>"


def test_import_limit(write_docs) -> None:
    docs = {"main.cdl": cdl_doc("".join(imp(f"t{i}.cdl") for i in range(5)) + "<cdl:system><s/></cdl:system>")}
    docs.update({f"t{i}.cdl": config(f"<T{i}/>") for i in range(5)})
    main = write_docs(docs)
    assert len(cdl.load(main, limits=cdl.Limits(max_imports=5)).urls) == 6
    with pytest.raises(CdlError) as info:
        cdl.load(main, limits=cdl.Limits(max_imports=4))
    assert info.value.code == "LIMIT_EXCEEDED"
    assert "(max_imports)" in info.value.message


def test_imported_templates_are_available_in_order(write_docs) -> None:
    main = write_docs(
        {
            "main.cdl": cdl_doc(imp("a.cdl") + "<cdl:system><s cdl:extends='A'/><u cdl:extends='B'/></cdl:system>"),
            "a.cdl": cdl_doc(imp("b.cdl") + "<cdl:configuration><A cdl:extends='B'><a>1</a></A></cdl:configuration>"),
            "b.cdl": config("<B><b>2</b></B>"),
        }
    )
    res = cdl.load(main).resolve()
    assert lists_xml(res, "system") == ["<s><b>2</b><a>1</a></s>", "<u><b>2</b></u>"]
    # only the main document's lists are in the output
    assert lists_xml(res, "configuration") == []
