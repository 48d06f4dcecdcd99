"""The catalog lookup itself (``loading.catalog.Catalogs``): OASIS URI
resolution entry by entry, next catalogs read when first needed and bounded
(catalogs through ``cdl.load`` and ``--catalog`` are in tests/test_catalog.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdl import CdlError
from test_catalog import catalog


@pytest.mark.parametrize(
    ("entries", "uri", "target"),
    [
        # uri: the first exact match, before any rewrite
        (['<rewriteURI uriStartString="http://a/" rewritePrefix="r/"/>', '<uri name="http://a/x" uri="u1"/>', '<uri name="http://a/x" uri="u2"/>'], "http://a/x", "u1"),
        # rewriteURI: the longest prefix
        (['<rewriteURI uriStartString="http://a/" rewritePrefix="short/"/>', '<rewriteURI uriStartString="http://a/b/" rewritePrefix="long/"/>'], "http://a/b/c.cdl", "long/c.cdl"),
        # uriSuffix: the longest suffix, after rewrites
        (['<uriSuffix uriSuffix="c.cdl" uri="s1"/>', '<uriSuffix uriSuffix="/b/c.cdl" uri="s2"/>'], "http://a/b/c.cdl", "s2"),
        (['<uriSuffix uriSuffix="c.cdl" uri="s1"/>', '<rewriteURI uriStartString="http://a/" rewritePrefix="r/"/>'], "http://a/c.cdl", "r/c.cdl"),
        # xml:base on the catalog, a group and an entry; relative to the one in scope
        (['<group xml:base="g/">', '<uri name="http://a/x" uri="u"/>', "</group>"], "http://a/x", "g/u"),
        (['<group xml:base="g/">', '<uri xml:base="h/" name="http://a/x" uri="u"/>', "</group>"], "http://a/x", "g/h/u"),
        # a relative name is relative to the base
        (['<uri name="lib/x.cdl" uri="u"/>'], "{base}lib/x.cdl", "u"),
        # nothing matches
        (['<uri name="http://a/x" uri="u"/>'], "http://a/y", None),
    ],
)
def test_lookup_follows_oasis_uri_resolution(tmp_path: Path, entries: list[str], uri: str, target: str | None) -> None:
    from cdl.loading.catalog import Catalogs

    (tmp_path / "c.xml").write_text(catalog(*entries))
    found = Catalogs((str(tmp_path / "c.xml"),)).lookup(uri.format(base=tmp_path.as_uri() + "/"))
    if target is None:
        assert found is None
    else:
        assert found is not None and found.target == (tmp_path / target).as_uri() + ("/" if target.endswith("/") else "")


def test_next_catalogs_are_consulted_in_order_when_nothing_matched(tmp_path: Path) -> None:
    from cdl.loading.catalog import Catalogs

    (tmp_path / "sub").mkdir()
    (tmp_path / "c.xml").write_text(
        catalog('<nextCatalog catalog="sub/n1.xml"/>', '<nextCatalog catalog="n2.xml"/>', '<uri name="http://a/own" uri="own"/>')
    )
    (tmp_path / "sub/n1.xml").write_text(catalog('<uri name="http://a/x" uri="one"/>', '<nextCatalog catalog="../c.xml"/>'))
    (tmp_path / "n2.xml").write_text(catalog('<uri name="http://a/x" uri="two"/>', '<uri name="http://a/y" uri="two"/>'))
    catalogs = Catalogs((str(tmp_path / "c.xml"),))
    assert catalogs.directories == [tmp_path]  # next catalogs are read when first needed
    own = catalogs.lookup("http://a/own")
    assert own is not None and own.target == (tmp_path / "own").as_uri()
    x, y = catalogs.lookup("http://a/x"), catalogs.lookup("http://a/y")
    assert x is not None and x.target == (tmp_path / "sub/one").as_uri()
    assert y is not None and y.target == (tmp_path / "two").as_uri()
    assert catalogs.lookup("http://a/z") is None  # the cycle back to c.xml ends
    assert set(catalogs.directories) == {tmp_path, tmp_path / "sub"}


@pytest.mark.parametrize(
    ("target", "complaint"),
    [("http://example.com/c.xml", "is not a local file"), ("missing.xml", "cannot read the catalog")],
)
def test_a_next_catalog_that_cannot_be_read_is_named_at_its_entry(tmp_path: Path, target: str, complaint: str) -> None:
    from cdl.loading.catalog import Catalogs

    (tmp_path / "c.xml").write_text(catalog(f'<nextCatalog catalog="{target}"/>'))
    catalogs = Catalogs((str(tmp_path / "c.xml"),))  # read when a lookup needs it
    with pytest.raises(CdlError) as info:
        catalogs.lookup("http://a/x")
    assert (info.value.code, info.value.url, info.value.line) == ("CATALOG_INVALID", str(tmp_path / "c.xml"), 4)
    assert complaint in info.value.message


def test_a_chain_of_next_catalogs_is_bounded(tmp_path: Path) -> None:
    from cdl.loading.catalog import MAX_CATALOGS, Catalogs

    for i in range(MAX_CATALOGS + 5):
        (tmp_path / f"c{i}.xml").write_text(catalog(f'<nextCatalog catalog="c{i + 1}.xml"/>'))
    with pytest.raises(CdlError) as info:
        Catalogs((str(tmp_path / "c0.xml"),)).lookup("http://a/x")
    assert info.value.code == "CATALOG_INVALID" and f"more than {MAX_CATALOGS} catalogs" in info.value.message
