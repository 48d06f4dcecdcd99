"""OASIS XML catalogs (--catalog, cdl.load(catalogs=...)): import locations
such as http://example.com/serverconfig.cdl (section 9) and SmartFrog's
classpath:/org/smartfrog/... are read from the local files a catalog names."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import cdl
from cdl import CdlError
from cdl.cli import main
from conftest import CDL_DECL, list_xml

CATALOG_NS = "urn:oasis:names:tc:entity:xmlns:xml:catalog"
DOCTYPE = (
    '<!DOCTYPE catalog PUBLIC "-//OASIS//DTD XML Catalogs V1.1//EN" '
    '"http://www.oasis-open.org/committees/entity/release/1.1/catalog.dtd">'
)


def catalog(*entries: str, attrs: str = "", doctype: str = DOCTYPE) -> str:
    """A catalog file: one entry per line, from line 4."""
    return f'<?xml version="1.0"?>\n{doctype}\n<catalog xmlns="{CATALOG_NS}" {attrs}>\n' + "\n".join(entries) + "\n</catalog>\n"


def cdl_text(body: str, imports: tuple[str, ...] = ()) -> str:
    imps = "".join(f"<cdl:import location='{i}'/>" for i in imports)
    return f"<cdl:cdl {CDL_DECL}>{imps}{body}</cdl:cdl>"


SERVER = cdl_text("<cdl:configuration><Server><port>80</port></Server></cdl:configuration>")
ECHO = cdl_text("<cdl:configuration><Echo><msg cdl:ref='host'/></Echo></cdl:configuration>")
HTTP = "http://example.com/serverconfig.cdl"
CLASSPATH = "classpath:/org/smartfrog/echo.cdl"
MAIN = cdl_text("<cdl:system><S cdl:extends='Server'/><E cdl:extends='Echo'><host>h</host></E></cdl:system>", (HTTP, CLASSPATH))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A main document in app/, and a template repository with its catalog in repo/."""
    for name, text in {
        "app/main.cdl": MAIN,
        "repo/site/serverconfig.cdl": SERVER,
        "repo/classes/org/smartfrog/echo.cdl": ECHO,
        "repo/catalog.xml": catalog(
            f'<uri name="{HTTP}" uri="site/serverconfig.cdl"/>',
            '<group xml:base="classes/">',
            '  <rewriteURI uriStartString="classpath:/" rewritePrefix="./"/>',
            "</group>",
        ),
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def resolved(res: cdl.Resolution) -> tuple[str, str]:
    return list_xml(res, "S"), list_xml(res, "E")


def test_http_and_classpath_locations_are_read_from_the_catalogs_files(repo: Path) -> None:
    res = cdl.load(repo / "app/main.cdl", catalogs=[repo / "repo/catalog.xml"]).resolve()
    assert resolved(res) == ("<S><port>80</port></S>", "<E><msg>h</msg><host>h</host></E>")
    result = CliRunner().invoke(
        main, ["resolve", str(repo / "app/main.cdl"), "--catalog", str(repo / "repo/catalog.xml")], catch_exceptions=False
    )
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.encode() == res.to_bytes()


def test_without_a_catalog_the_refusals_mention_catalog(repo: Path) -> None:
    for location in (HTTP, CLASSPATH):
        (repo / "app/one.cdl").write_text(cdl_text("", (location,)))
        with pytest.raises(CdlError) as info:
            cdl.load(repo / "app/one.cdl")
        assert info.value.code == "IMPORT_REFUSED"
        assert "(--catalog)" in info.value.message


def test_the_catalogs_directory_is_allowed_and_no_other(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/serverconfig.cdl").write_text(SERVER)
    (repo / "repo/outside.xml").write_text(catalog(f'<uri name="{HTTP}" uri="../elsewhere/serverconfig.cdl"/>'))
    (repo / "app/one.cdl").write_text(cdl_text("", (HTTP,)))
    with pytest.raises(CdlError) as info:
        cdl.load(repo / "app/one.cdl", catalogs=[repo / "repo/outside.xml"])
    assert info.value.code == "IMPORT_REFUSED" and "--import-path" in info.value.message
    doc = cdl.load(repo / "app/one.cdl", catalogs=[repo / "repo/outside.xml"], import_paths=[tmp_path / "elsewhere"])
    assert doc.urls[1].endswith("serverconfig.cdl")


def test_a_mapped_file_that_is_missing_names_the_catalog_entry(repo: Path) -> None:
    (repo / "repo/missing.xml").write_text(catalog("<!-- line 4 -->", f'<uri name="{HTTP}" uri="site/gone.cdl"/>'))
    (repo / "app/one.cdl").write_text(cdl_text("", (HTTP,)))
    with pytest.raises(CdlError) as info:
        cdl.load(repo / "app/one.cdl", catalogs=[repo / "repo/missing.xml"])
    error = info.value
    assert (error.code, Path(error.url or "").name, error.line) == ("IMPORT_NOT_FOUND", "one.cdl", 1)
    assert f"{repo / 'repo/missing.xml'}:5 (uri '{HTTP}')" in error.message
    assert error.message.endswith(f"{repo / 'repo/site/gone.cdl'}, which does not exist")


def test_relative_imports_of_a_mapped_document_are_relative_to_its_file(repo: Path) -> None:
    (repo / "repo/site/serverconfig.cdl").write_text(
        cdl_text("<cdl:configuration><Server cdl:extends='Base'/></cdl:configuration>", ("base.cdl",))
    )
    (repo / "repo/site/base.cdl").write_text(cdl_text("<cdl:configuration><Base><port>81</port></Base></cdl:configuration>"))
    res = cdl.load(repo / "app/main.cdl", catalogs=[repo / "repo/catalog.xml"]).resolve()
    assert list_xml(res, "S") == "<S><port>81</port></S>"


def test_the_main_document_can_be_a_mapped_location(repo: Path) -> None:
    (repo / "repo/main.xml").write_text(catalog('<uri name="http://example.com/main.cdl" uri="../app/main.cdl"/>'))
    doc = cdl.load("http://example.com/main.cdl", catalogs=[repo / "repo/main.xml", repo / "repo/catalog.xml"])
    assert resolved(doc.resolve())[0] == "<S><port>80</port></S>"


@pytest.mark.parametrize(
    ("text", "line", "complaint"),
    [
        (catalog('<uri name="http://a/x" uri="u">'), 5, "not well-formed"),
        ('<catalog xmlns="urn:wrong">\n<uri name="a" uri="b"/></catalog>', 1, "the root element must be catalog"),
        (catalog('<uri name="http://a/x"/>'), 4, "uri needs a uri attribute"),
        (catalog('<rewriteURI uriStartString="http://a/"/>'), 4, "rewriteURI needs a rewritePrefix attribute"),
        (catalog("<group>", '<delegateURI uriStartString="http://a/" catalog="d.xml"/>', "</group>"), 5, "delegateURI is not supported"),
        (catalog("<urri/>"), 4, "urri is not an element of XML catalogs"),
        (catalog(doctype='<!DOCTYPE catalog [\n<!ENTITY e "x">]>'), 2, "internal subset"),
    ],
)
def test_a_malformed_catalog_is_an_error_with_its_file_and_line(tmp_path: Path, text: str, line: int, complaint: str) -> None:
    (tmp_path / "c.xml").write_text(text)
    (tmp_path / "main.cdl").write_text(cdl_text(""))
    with pytest.raises(CdlError) as info:
        cdl.load(tmp_path / "main.cdl", catalogs=[tmp_path / "c.xml"])
    assert (info.value.code, info.value.url, info.value.line) == ("CATALOG_INVALID", str(tmp_path / "c.xml"), line)
    assert complaint in info.value.message
    result = CliRunner().invoke(main, ["resolve", str(tmp_path / "main.cdl"), "--catalog", str(tmp_path / "c.xml")])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith(f"{tmp_path / 'c.xml'}:{line}: [CATALOG_INVALID] ")


def test_a_missing_catalog_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "main.cdl").write_text(cdl_text(""))
    with pytest.raises(CdlError) as info:
        cdl.load(tmp_path / "main.cdl", catalogs=[tmp_path / "nope.xml"])
    assert info.value.code == "CATALOG_INVALID" and "cannot read the catalog" in info.value.message


def test_a_catalog_mapping_to_a_remote_location_still_needs_allow_remote(tmp_path: Path) -> None:
    (tmp_path / "c.xml").write_text(catalog('<uri name="classpath:/x.cdl" uri="https://mirror.example/x.cdl"/>'))
    (tmp_path / "main.cdl").write_text(cdl_text("", ("classpath:/x.cdl",)))
    with pytest.raises(CdlError) as info:
        cdl.load(tmp_path / "main.cdl", catalogs=[tmp_path / "c.xml"])
    assert info.value.code == "IMPORT_REFUSED" and "'https://mirror.example/x.cdl' is remote" in info.value.message


def test_the_input_size_limit_applies_to_catalogs(tmp_path: Path) -> None:
    (tmp_path / "c.xml").write_text(catalog("<!--" + "x" * 2000 + "-->"))
    (tmp_path / "main.cdl").write_text(cdl_text(""))
    with pytest.raises(CdlError) as info:
        cdl.load(tmp_path / "main.cdl", catalogs=[tmp_path / "c.xml"], limits=cdl.Limits(max_bytes=1000))
    assert info.value.code == "LIMIT_EXCEEDED" and "(max_bytes)" in info.value.message


@pytest.mark.parametrize(
    ("command", "extra"), [("resolve", []), ("pending", []), ("plan", []), ("plan", ["--format", "json"]), ("explain", ["E/msg"])]
)
def test_every_command_that_loads_a_document_takes_catalogs(repo: Path, command: str, extra: list[str]) -> None:
    # Each command shares the load options; one that dropped --catalog would
    # refuse the http: and classpath: imports.
    args = [command, str(repo / "app/main.cdl"), *extra, "--catalog", str(repo / "repo/catalog.xml")]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout or command == "pending"
