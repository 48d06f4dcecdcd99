"""Tests of cdl.validate: the CDL schema (xsd/cdl.xsd) and typed-value checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from cdl.errors import LoadError, ValidationError
from cdl.validate import check_types, validate_documents

CDL_NS = "http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"
XSD_NS = "http://www.w3.org/2001/XMLSchema"
REPO = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------------------
# helpers


def write(tmp_path: Path, name: str, text: str) -> str:
    """Write a document and return its path as a string."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def cdl_doc(body: str, extra: str = "") -> str:
    """A cdl:cdl document around ``body``, with cdl and xsd declared."""
    return f'<cdl:cdl xmlns:cdl="{CDL_NS}" xmlns:xsd="{XSD_NS}" {extra}>\n{body}\n</cdl:cdl>\n'


def run_check(
    properties: str, types: str = "", extra: str = 'xmlns:t="urn:t"'
) -> tuple[etree._Element, list[ValidationError], list[str]]:
    """check_types over a document whose cdl:types holds ``types`` and whose
    one top level list holds ``properties``. Origins are ``mem.cdl`` and the
    source line; paths come from getpath."""
    text = cdl_doc(
        f"<cdl:types>{types}</cdl:types>\n<cdl:configuration>\n<t:L>\n{properties}\n</t:L>\n</cdl:configuration>",
        extra,
    )
    root = etree.fromstring(text.encode())
    schemas = root.findall(f"{{{CDL_NS}}}types/{{{XSD_NS}}}schema")
    tree = root.getroottree()
    errors, warnings = check_types(root, schemas, lambda el: ("mem.cdl", el.sourceline), tree.getpath)
    return root, errors, warnings


def element_named(root: etree._Element, local: str) -> etree._Element:
    """The only element of the test list with this local name."""
    found = [el for el in root.iter() if isinstance(el.tag, str) and etree.QName(el).localname == local]
    assert len(found) == 1
    return found[0]


# ---------------------------------------------------------------------------
# the schema file

def test_schema_file_compiles_with_the_cdl_namespace() -> None:
    document = etree.parse(str(REPO / "src" / "cdl" / "xsd" / "cdl.xsd"))
    etree.XMLSchema(document)  # raises XMLSchemaParseError if it does not load
    assert document.getroot().get("targetNamespace") == CDL_NS
    # One prefix for XML Schema: every element of the schema is xsd:-prefixed.
    assert {el.prefix for el in document.iter() if isinstance(el.tag, str)} == {"xsd"}


# ---------------------------------------------------------------------------
# validate_documents: good documents

GOOD_DOCUMENTS = {
    "empty": cdl_doc(""),
    "every-part": cdl_doc(
        """<cdl:documentation xml:lang="en">About <b>this</b> document</cdl:documentation>
<cdl:import location="other.cdl"/>
<cdl:import location="http://example.org/more.cdl"><cdl:documentation>why</cdl:documentation></cdl:import>
<cdl:types>
  <xsd:schema targetNamespace="urn:t"><xsd:simpleType name="p"><xsd:restriction base="xsd:int"/></xsd:simpleType></xsd:schema>
</cdl:types>
<cdl:configuration>
  <cdl:documentation>templates</cdl:documentation>
  <t:Server>
    <cdl:documentation>a server</cdl:documentation>
    <t:port cdl:type="xsd:positiveInteger" cdl:use="required">80</t:port>
  </t:Server>
</cdl:configuration>
<cdl:system>
  <t:Mine cdl:extends="t:Server"><t:port cdl:lazy="true"/></t:Mine>
</cdl:system>
<x:extension xmlns:x="urn:x"/>""",
        'xmlns:t="urn:t" targetNamespace="urn:t"',
    ),
    # The spec's own examples (6, 7.1, 7.2.4) write lists and properties unqualified.
    "unqualified-lists": cdl_doc(
        """<cdl:configuration>
  <WebServer><hostname>www.example.com</hostname><port>80</port></WebServer>
  <AppServer><WebServer cdl:extends="WebServer"/><hostname cdl:refroot="WebServer" cdl:ref="/hostname"/></AppServer>
</cdl:configuration>
<cdl:system><server1><port cdl:lazy="1"/></server1></cdl:system>""",
        'targetNamespace="urn:tmp-uri1"',
    ),
    "empty-configuration": cdl_doc("<cdl:configuration/>"),
    "expression": cdl_doc(
        """<cdl:configuration><MyServer>
  <hostname>www.example.org</hostname>
  <url><cdl:expression value-of="concat('http://', $host, '/')">
    <cdl:variable name="host" ref="/hostname"/>
    <cdl:variable name="late" refroot="MyServer" ref="hostname" lazy="true" cdl:lazy="false"/>
  </cdl:expression></url>
</MyServer></cdl:configuration>"""
    ),
}


@pytest.mark.parametrize("name", sorted(GOOD_DOCUMENTS))
def test_good_documents_validate(tmp_path: Path, name: str) -> None:
    # The imports of every-part: one beside it, one by URL mapped by a catalog.
    write(tmp_path, "other.cdl", cdl_doc(""))
    write(tmp_path, "more.cdl", cdl_doc(""))
    catalog = write(
        tmp_path,
        "catalog.xml",
        '<catalog xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog">'
        '<uri name="http://example.org/more.cdl" uri="more.cdl"/></catalog>',
    )
    assert validate_documents([write(tmp_path, f"{name}.cdl", GOOD_DOCUMENTS[name])], catalogs=[catalog]) == []


def test_appendix_b_documents_validate() -> None:
    samples = sorted((REPO / "samples" / "webapp").glob("*.cdl"))
    assert len(samples) == 3, "the three Appendix B documents are expected in samples/webapp"
    assert validate_documents([str(path) for path in samples]) == []


# ---------------------------------------------------------------------------
# validate_documents: cdl:ref paths (7.3.1 grammar)

VALID_PATHS = ["a", "/a", ".", "..", "../..", "./a", "../t:b/c", "/t:DB/t:hostname", "_x.y-z", "a/./../b"]
INVALID_PATHS = ["", "/", "//a", "a/", "...", "a:b:c", ":a", "a:", "a /b", "1a", "..a", "a//b", "a[1]", "@a"]


@pytest.mark.parametrize("path", VALID_PATHS)
def test_path_grammar_accepts(tmp_path: Path, path: str) -> None:
    doc = cdl_doc(f'<cdl:configuration><L><p cdl:ref="{path}"/></L></cdl:configuration>')
    assert validate_documents([write(tmp_path, "p.cdl", doc)]) == []


@pytest.mark.parametrize("path", INVALID_PATHS)
def test_path_grammar_refuses(tmp_path: Path, path: str) -> None:
    doc = cdl_doc(f'<cdl:configuration><L>\n<p cdl:ref="{path}"/></L></cdl:configuration>')
    [error] = validate_documents([write(tmp_path, "p.cdl", doc)])
    assert error.code == "SCHEMA_INVALID"
    assert error.line == 3
    assert "pattern" in error.message


# ---------------------------------------------------------------------------
# validate_documents: violations

BAD_DOCUMENTS = {
    # name: (body, expected line, fragment of the message)
    "import-after-configuration": (
        '<cdl:configuration><L/></cdl:configuration>\n<cdl:import location="x.cdl"/>',
        3,
        "cdl:import",
    ),
    "types-after-system": ("<cdl:system><L/></cdl:system>\n<cdl:types/>", 3, "cdl:types"),
    "two-systems": ("<cdl:system><L/></cdl:system>\n<cdl:system><M/></cdl:system>", 3, "cdl:system"),
    "empty-system": ("<cdl:system>\n</cdl:system>", 2, "Missing child"),
    "import-without-location": ("<cdl:import/>", 2, "location"),
    "unqualified-attribute-on-import": ('<cdl:import location="x" href="x"/>', 2, "href"),
    "unqualified-extension-at-root": ("<cdl:configuration/>\n<extension/>", 3, "extension"),
    "lazy-not-boolean": ('<cdl:configuration><L>\n<p cdl:lazy="maybe"/></L></cdl:configuration>', 3, "boolean"),
    "variable-lazy-not-boolean": (
        '<cdl:configuration><L><p><cdl:expression value-of="$a">\n<cdl:variable name="a" ref="q" lazy="yes"/>'
        "</cdl:expression></p></L></cdl:configuration>",
        3,
        "boolean",
    ),
    "use-not-enumerated": ('<cdl:configuration><L>\n<p cdl:use="always"/></L></cdl:configuration>', 3, "enumeration"),
    "expression-without-value-of": ("<cdl:configuration><L><p>\n<cdl:expression/></p></L></cdl:configuration>", 3, "value-of"),
}


@pytest.mark.parametrize("name", sorted(BAD_DOCUMENTS))
def test_schema_violation_reported_with_line(tmp_path: Path, name: str) -> None:
    body, line, fragment = BAD_DOCUMENTS[name]
    write(tmp_path, "x.cdl", cdl_doc(""))  # what the documents import
    write(tmp_path, "x", cdl_doc(""))
    source = write(tmp_path, f"{name}.cdl", cdl_doc(body))
    [error] = validate_documents([source])
    assert isinstance(error, ValidationError)
    assert error.code == "SCHEMA_INVALID"
    assert (error.url, error.line) == (source, line)
    assert fragment in error.message
    # Written as resolution errors write paths; none for cdl:cdl and the lists' parents.
    assert error.path is None or (error.path.startswith("/") and not error.path.startswith("/cdl:cdl"))


def test_misplaced_import_names_what_was_expected(tmp_path: Path) -> None:
    write(tmp_path, "x.cdl", cdl_doc(""))
    source = write(tmp_path, "m.cdl", cdl_doc(BAD_DOCUMENTS["import-after-configuration"][0]))
    [error] = validate_documents([source])
    assert error.path == "/cdl:import"
    # Clark names are written with the document's prefixes.
    assert "{" + CDL_NS not in error.message
    assert "not expected" in error.message


def test_two_independent_violations_are_both_reported(tmp_path: Path) -> None:
    body = """<cdl:configuration>
  <L>
    <a cdl:ref="//nowhere"/>
    <b>1</b>
    <c cdl:lazy="perhaps"/>
  </L>
</cdl:configuration>"""
    source = write(tmp_path, "two.cdl", cdl_doc(body))
    errors = validate_documents([source])
    assert [(e.code, e.url, e.line) for e in errors] == [("SCHEMA_INVALID", source, 4), ("SCHEMA_INVALID", source, 6)]
    assert "//nowhere" in errors[0].message
    assert "perhaps" in errors[1].message


def test_every_document_is_validated(tmp_path: Path) -> None:
    good = write(tmp_path, "good.cdl", cdl_doc(""))
    bad1 = write(tmp_path, "bad1.cdl", cdl_doc("<cdl:system/>"))
    write(tmp_path, "x", cdl_doc(""))
    bad2 = write(tmp_path, "bad2.cdl", cdl_doc("<cdl:configuration/><cdl:import location='x'/>"))
    assert [e.url for e in validate_documents([bad1, good, bad2])] == [bad1, bad2]


def test_wrong_namespace_names_the_expected_one(tmp_path: Path) -> None:
    wrong = CDL_NS.replace("cddlm", "cddlml")
    source = write(tmp_path, "ns.cdl", f'<cdl:cdl xmlns:cdl="{wrong}"/>')
    [error] = validate_documents([source])
    assert error.code == "SCHEMA_INVALID"
    assert CDL_NS in error.message


def test_unparseable_file_gives_one_syntax_error(tmp_path: Path) -> None:
    source = write(tmp_path, "broken.cdl", f'<cdl:cdl xmlns:cdl="{CDL_NS}">\n<cdl:configuration>\n</cdl:cdl>')
    [error] = validate_documents([source])
    assert isinstance(error, LoadError)
    assert (error.code, error.url, error.line) == ("XML_SYNTAX", source, 3)


def test_missing_file_is_an_io_error(tmp_path: Path) -> None:
    [error] = validate_documents([str(tmp_path / "absent.cdl")])
    assert isinstance(error, LoadError)
    assert error.code == "IO_ERROR"


def test_dtd_is_refused_and_entities_not_expanded(tmp_path: Path) -> None:
    text = (
        '<!DOCTYPE cdl:cdl [<!ENTITY big "expanded">]>\n'
        + cdl_doc("<cdl:configuration><L><p>&big;</p></L></cdl:configuration>")
    )
    errors = validate_documents([write(tmp_path, "dtd.cdl", text)])
    assert [e.code for e in errors] == ["XML_DTD"]


def test_network_is_not_used(tmp_path: Path) -> None:
    [error] = validate_documents(["http://example.invalid/none.cdl"])
    assert error.code == "IMPORT_REFUSED"  # as cdl.load refuses it


# ---------------------------------------------------------------------------
# check_types: built-in types

BUILTIN_CASES = [
    # (type, valid value, invalid value, fragment naming the rule)
    ("xsd:positiveInteger", " 80 ", "-3", "minInclusive 1"),
    ("xsd:nonNegativeInteger", "0", "-1", "minInclusive 0"),
    ("xsd:int", "-2147483648", "2147483648", "maxInclusive 2147483647"),
    ("xsd:byte", "127", "300", "maxInclusive 127"),
    ("xsd:integer", "+7", "1.5", "not an integer"),
    ("xsd:decimal", "-1.50", "1,5", "decimal"),
    ("xsd:double", "1E3", "abc", "number"),
    ("xsd:boolean", "1", "yes", "true, false, 1 or 0"),
    ("xsd:anyURI", "http://repository.org/test.war", "http://[::1", "URI"),
    ("xsd:dateTime", "2004-08-01T10:00:00Z", "2004-08-01", "CCYY-MM-DDThh:mm:ss"),
    ("xsd:date", "2004-02-29", "2004-02-30", "CCYY-MM-DD"),
    ("xsd:time", "10:00:00", "25:00:00", "hh:mm:ss"),
    ("xsd:duration", "P1DT2H", "1 day", "P1Y2M3DT4H5M6S"),
    ("xsd:NCName", "host", "a:b", "colon"),
    ("xsd:language", "en-GB", "english language", "language tag"),
    ("xsd:hexBinary", "0aFF", "abc", "hexadecimal"),
    ("xsd:ENTITY", "name", "a b", "colon"),
]


@pytest.mark.parametrize(("type_name", "good", "bad", "rule"), BUILTIN_CASES)
def test_builtin_type(type_name: str, good: str, bad: str, rule: str) -> None:
    root, errors, warnings = run_check(
        f'<good cdl:type="{type_name}">{good}</good>\n<bad cdl:type="{type_name}">{bad}</bad>'
    )
    assert warnings == []
    [error] = errors
    bad_element = element_named(root, "bad")
    assert error.code == "TYPE_INVALID"
    assert (error.url, error.line, error.path) == ("mem.cdl", bad_element.sourceline, "/cdl:cdl/cdl:configuration/t:L/bad")
    assert f"value {bad!r} is not a valid {type_name}" in error.message
    assert rule in error.message


def test_positive_integer_message() -> None:
    _, [error], _ = run_check('<port cdl:type="xsd:positiveInteger">-3</port>')
    assert error.message == "value '-3' is not a valid xsd:positiveInteger (minInclusive 1)"


def test_qname_prefix_resolves_in_the_property_scope() -> None:
    root, errors, warnings = run_check(
        """<declared cdl:type="xsd:QName">t:x</declared>
<local xmlns:p="urn:p" cdl:type="xsd:QName">p:x</local>
<unprefixed cdl:type="xsd:QName">x</unprefixed>
<undeclared cdl:type="xsd:QName">q:x</undeclared>
<outside cdl:type="xsd:QName">p:x</outside>"""
    )
    assert warnings == []
    assert [e.path.rsplit("/", 1)[1] for e in errors] == ["undeclared", "outside"]
    assert "no corresponding namespace declaration" in errors[0].message
    assert errors[0].line == element_named(root, "undeclared").sourceline


def test_type_prefix_may_be_any_declared_prefix() -> None:
    _, errors, _ = run_check('<p xmlns:s="http://www.w3.org/2001/XMLSchema" cdl:type="s:int">x</p>')
    [error] = errors
    assert "not a valid s:int" in error.message


def test_any_type_accepts_everything() -> None:
    _, errors, warnings = run_check(
        '<a cdl:type="xsd:anyType"><x>1</x></a><b cdl:type="xsd:anySimpleType">?</b><c cdl:type="xsd:string">x</c>'
    )
    assert (errors, warnings) == ([], [])


def test_simple_type_refuses_child_elements() -> None:
    _, [error], _ = run_check('<list cdl:type="xsd:int"><x>1</x></list>')
    assert "child elements" in error.message and "xsd:int" in error.message


# ---------------------------------------------------------------------------
# check_types: user-defined simple types, facet by facet

def restriction(name: str, base: str, facets: str) -> str:
    return f'<xsd:simpleType name="{name}"><xsd:restriction base="{base}">{facets}</xsd:restriction></xsd:simpleType>'


FACET_CASES = [
    # (facets, base, valid, invalid, fragments expected in the message)
    (
        '<xsd:enumeration value="red"/><xsd:enumeration value="green"/>',
        "xsd:string",
        "green",
        "purple",
        ["enumeration", "{'red', 'green'}"],
    ),
    ('<xsd:pattern value="[A-Z]{3}-[0-9]+"/>', "xsd:string", "ABC-12", "abc-12", ["pattern", "[A-Z]{3}-[0-9]+"]),
    ('<xsd:length value="3"/>', "xsd:string", "abc", "abcd", ["length", "'3'"]),
    ('<xsd:minLength value="2"/>', "xsd:string", "ab", "a", ["minLength"]),
    ('<xsd:maxLength value="2"/>', "xsd:string", "ab", "abc", ["maxLength"]),
    ('<xsd:minInclusive value="1024"/>', "xsd:int", "1024", "80", ["minInclusive", "1024"]),
    ('<xsd:maxInclusive value="65535"/>', "xsd:int", "65535", "65536", ["maxInclusive", "65535"]),
    ('<xsd:minExclusive value="0"/>', "xsd:decimal", "0.1", "0", ["minExclusive"]),
    ('<xsd:maxExclusive value="1"/>', "xsd:decimal", "0.99", "1", ["maxExclusive"]),
    ('<xsd:totalDigits value="3"/>', "xsd:decimal", "12.3", "12.34", ["totalDigits"]),
    ('<xsd:fractionDigits value="1"/>', "xsd:decimal", "12.3", "1.25", ["fractionDigits"]),
]


@pytest.mark.parametrize(("facets", "base", "good", "bad", "fragments"), FACET_CASES)
def test_user_type_facet(facets: str, base: str, good: str, bad: str, fragments: list[str]) -> None:
    schema = f'<xsd:schema targetNamespace="urn:t">{restriction("v", base, facets)}</xsd:schema>'
    root, errors, warnings = run_check(f'<good cdl:type="t:v">{good}</good>\n<bad cdl:type="t:v">{bad}</bad>', schema)
    assert warnings == []
    [error] = errors
    assert error.line == element_named(root, "bad").sourceline
    assert f"value {bad!r} is not a valid t:v" in error.message
    for fragment in fragments:
        assert fragment in error.message


def test_user_type_base_rule_is_named() -> None:
    schema = f'<xsd:schema targetNamespace="urn:t">{restriction("port", "xsd:positiveInteger", "")}</xsd:schema>'
    _, [error], _ = run_check('<p cdl:type="t:port">0</p>', schema)
    assert error.message == "value '0' is not a valid t:port (derived from xsd:positiveInteger: minInclusive 1)"


def test_types_across_namespaces_import_each_other() -> None:
    # urn:a uses urn:b and urn:b uses urn:a; imports give a namespace only, or
    # a location that must not be read.
    schemas = f"""
<xsd:schema targetNamespace="urn:a" xmlns:b="urn:b">
  <xsd:import namespace="urn:b" schemaLocation="http://example.invalid/b.xsd"/>
  {restriction("small", "b:port", '<xsd:maxInclusive value="100"/>')}
  {restriction("code", "xsd:string", '<xsd:pattern value="[a-z]+"/>')}
</xsd:schema>
<xsd:schema targetNamespace="urn:b" xmlns:a="urn:a">
  <xsd:import namespace="urn:a"/>
  {restriction("port", "xsd:positiveInteger", "")}
  {restriction("tag", "a:code", '<xsd:maxLength value="3"/>')}
</xsd:schema>"""
    _, errors, warnings = run_check(
        """<ok1 cdl:type="a:small">50</ok1><bad1 cdl:type="a:small">500</bad1><bad2 cdl:type="a:small">0</bad2>
<ok2 cdl:type="b:tag">abc</ok2><bad3 cdl:type="b:tag">ABC</bad3><bad4 cdl:type="b:tag">abcd</bad4>""",
        schemas,
        'xmlns:t="urn:t" xmlns:a="urn:a" xmlns:b="urn:b"',
    )
    assert warnings == []
    assert [e.path.rsplit("/", 1)[1] for e in errors] == ["bad1", "bad2", "bad3", "bad4"]
    assert "maxInclusive" in errors[0].message
    assert "pattern" in errors[2].message
    assert "maxLength" in errors[3].message


def test_no_namespace_schema_and_split_namespace() -> None:
    schemas = f"""
<xsd:schema>{restriction("plain", "xsd:int", '<xsd:minInclusive value="5"/>')}</xsd:schema>
<xsd:schema targetNamespace="urn:t">{restriction("one", "xsd:int", '<xsd:maxInclusive value="1"/>')}</xsd:schema>
<xsd:schema targetNamespace="urn:t">{restriction("two", "xsd:int", '<xsd:maxInclusive value="2"/>')}</xsd:schema>"""
    _, errors, warnings = run_check(
        '<a cdl:type="plain">4</a><b cdl:type="t:one">2</b><c cdl:type="t:two">3</c><d cdl:type="t:two">2</d>', schemas
    )
    assert warnings == []
    assert [e.path.rsplit("/", 1)[1] for e in errors] == ["a", "b", "c"]


def test_schema_prefixes_come_from_the_enclosing_document() -> None:
    # The schema uses prefixes declared only on cdl:cdl (xsd:, t:); its copy must keep them.
    derived = restriction("derived", "t:base", '<xsd:maxInclusive value="9"/>')
    schema = f'<xsd:schema targetNamespace="urn:t">{restriction("base", "xsd:int", "")}{derived}</xsd:schema>'
    _, [error], warnings = run_check('<p cdl:type="t:derived">10</p>', schema)
    assert warnings == []
    assert "maxInclusive" in error.message


RED_ONLY = restriction("c", "xsd:string", '<xsd:enumeration value="red"/>')


def test_all_violations_are_reported_in_document_order() -> None:
    schema = f'<xsd:schema targetNamespace="urn:t">{RED_ONLY}</xsd:schema>'
    _, errors, _ = run_check(
        """<a cdl:type="xsd:int">x</a>
<n><b cdl:type="t:c">blue</b></n>
<c cdl:type="xsd:boolean">maybe</c>
<d cdl:type="xsd:int">3</d>""",
        schema,
    )
    assert [(e.code, e.path.rsplit("/", 1)[1]) for e in errors] == [
        ("TYPE_INVALID", "a"),
        ("TYPE_INVALID", "b"),
        ("TYPE_INVALID", "c"),
    ]


def test_each_type_is_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[object] = []
    real = etree.XMLSchema

    def counting(*args: object, **kwargs: object) -> etree.XMLSchema:
        compiled.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(etree, "XMLSchema", counting)
    schema = f'<xsd:schema targetNamespace="urn:t">{RED_ONLY}</xsd:schema>'
    properties = "".join(f'<p cdl:type="t:c">{"red" if i % 2 else "blue"}</p>' for i in range(200))
    _, errors, _ = run_check(properties, schema)
    assert len(errors) == 100
    assert len(compiled) == 1


# ---------------------------------------------------------------------------
# check_types: warnings for types that cannot be checked


WARNING_CASES = [
    # (cdl:type, fragment of the warning)
    ("t:missing", "defines no type 'missing'"),
    ("u:thing", "no cdl:types schema has namespace urn:u"),
    ("zz:thing", "prefix is declared"),
    ("t:complex", "complex type"),
    ("xsd:dateTimeStamp", "not an XML Schema 1.0 built-in"),
    ("xsd:NOTATION", "notations"),
    ("not a qname", "not a QName"),
]


@pytest.mark.parametrize(("type_name", "fragment"), WARNING_CASES)
def test_unknown_type_is_a_warning(type_name: str, fragment: str) -> None:
    schema = (
        '<xsd:schema targetNamespace="urn:t"><xsd:complexType name="complex"><xsd:sequence/></xsd:complexType>'
        f'{restriction("known", "xsd:int", "")}</xsd:schema>'
    )
    root, errors, warnings = run_check(f'<p cdl:type="{type_name}">1</p>', schema, 'xmlns:t="urn:t" xmlns:u="urn:u"')
    assert errors == []
    [warning] = warnings
    assert warning.startswith(f"mem.cdl:{element_named(root, 'p').sourceline}: ")
    assert fragment in warning


def test_outside_schema_locations_are_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.xsd"
    outside.write_text(
        f'<xsd:schema xmlns:xsd="{XSD_NS}" targetNamespace="urn:o">{restriction("o", "xsd:int", "")}</xsd:schema>'
    )
    schema = (
        f'<xsd:schema targetNamespace="urn:t" xmlns:o="urn:o"><xsd:import namespace="urn:o" schemaLocation="{outside.as_uri()}"/>'
        f'<xsd:include schemaLocation="{outside.as_uri()}"/>{restriction("mine", "xsd:int", "")}</xsd:schema>'
    )
    _, errors, warnings = run_check(
        '<a cdl:type="o:o">x</a><b cdl:type="t:mine">x</b>', schema, 'xmlns:t="urn:t" xmlns:o="urn:o"'
    )
    assert [e.path.rsplit("/", 1)[1] for e in errors] == ["b"]
    [warning] = warnings
    assert "urn:o" in warning


# ---------------------------------------------------------------------------
# check_types: what is skipped


@pytest.mark.parametrize(
    "properties",
    [
        '<p cdl:type="xsd:int" cdl:lazy="true"/>',
        '<p cdl:type="xsd:int" cdl:lazy=" 1 ">x</p>',
        '<p cdl:type="xsd:int" cdl:ref="/q"/>',
        '<p cdl:type="xsd:int" cdl:refroot="t:L" cdl:ref="/q">x</p>',
        '<p cdl:type="xsd:int"/>',
        '<p cdl:type="xsd:int"></p>',
        '<p cdl:type="xsd:int">  \n  </p>',
        '<p cdl:type="xsd:int"><!-- nothing yet --></p>',
        '<p cdl:type="xsd:int"><cdl:expression value-of="$v"><cdl:variable name="v" ref="q" lazy="true"/></cdl:expression></p>',
        '<p cdl:type="xsd:int"><cdl:ref ref="q" lazy="true"/></p>',
        '<cdl:documentation><p cdl:type="xsd:int">x</p></cdl:documentation>',
    ],
)
def test_properties_without_a_value_are_skipped(properties: str) -> None:
    assert run_check(properties)[1:] == ([], [])


def test_lazy_false_is_checked() -> None:
    _, errors, _ = run_check('<p cdl:type="xsd:int" cdl:lazy="false">x</p><q cdl:type="xsd:int" cdl:lazy="0">y</q>')
    assert len(errors) == 2


def test_comments_are_not_part_of_the_value() -> None:
    _, errors, _ = run_check('<p cdl:type="xsd:int">1<!-- one -->2</p><q cdl:type="xsd:int">1<!-- x -->a</q>')
    [error] = errors
    assert "'1a'" in error.message


def test_types_inside_cdl_types_are_not_properties() -> None:
    schema = '<xsd:schema targetNamespace="urn:t"><xsd:annotation><xsd:appinfo><x cdl:type="xsd:int">no</x></xsd:appinfo></xsd:annotation></xsd:schema>'
    assert run_check("", schema)[1:] == ([], [])


# -- typed values through resolution (Document.resolve(validate=True)) ------------------

_TYPED = """<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"
  xmlns:xsd="http://www.w3.org/2001/XMLSchema">
  <cdl:configuration>
    <server><port cdl:type="xsd:positiveInteger" cdl:lazy="true"/></server>
    <settings><good>8080</good><bad>-3</bad></settings>
  </cdl:configuration>
  <cdl:system>
    <s cdl:extends="server"/>
    <t cdl:extends="server"><port cdl:refroot="settings" cdl:ref="/good"/></t>
  </cdl:system>
</cdl:cdl>"""


def test_lazy_value_is_checked_when_supplied() -> None:
    import cdl

    doc = cdl.load(_TYPED.encode(), name="typed.cdl")
    assert doc.resolve(validate=True).pending  # still lazy: nothing to check yet
    # The template's own lazy port stays pending; the system's was supplied.
    assert [p.path for p in doc.resolve({"s/port": "443"}, validate=True).pending] == ["/server/port"]
    with pytest.raises(cdl.CdlError) as info:
        doc.resolve({"s/port": "-3"}, validate=True)
    assert info.value.code == "TYPE_INVALID"
    assert info.value.path == "/s/port"
    assert "'-3'" in info.value.message and "positiveInteger" in info.value.message


def test_typed_value_arriving_by_reference_is_checked() -> None:
    import cdl

    text = _TYPED.replace('cdl:ref="/good"', 'cdl:ref="/bad"')
    with pytest.raises(cdl.CdlError) as info:
        cdl.load(text.encode(), name="typed.cdl").resolve({"s/port": "1"}, validate=True)
    assert (info.value.code, info.value.path) == ("TYPE_INVALID", "/t/port")


# -- validate_documents follows imports as cdl.load does (issue 26, point 6) -----------


def test_imported_document_is_validated_with_its_name_and_line(tmp_path: Path) -> None:
    write(tmp_path, "lib.cdl", cdl_doc('<cdl:configuration>\n<L>\n<p cdl:lazy="perhaps"/></L></cdl:configuration>'))
    main = write(tmp_path, "main.cdl", cdl_doc('<cdl:import location="lib.cdl"/>'))
    [error] = validate_documents([main])
    assert (error.code, error.url, error.line, error.path) == ("SCHEMA_INVALID", str(tmp_path / "lib.cdl"), 4, "/L/p")


def test_missing_file_and_import_are_reported_as_load_reports_them(tmp_path: Path) -> None:
    import cdl

    absent = str(tmp_path / "absent.cdl")
    with pytest.raises(cdl.CdlError) as info:
        cdl.load(absent)
    [error] = validate_documents([absent])
    assert (error.code, error.message, error.url) == (info.value.code, info.value.message, info.value.url)
    main = write(tmp_path, "main.cdl", cdl_doc('\n<cdl:import location="gone.cdl"/>'))
    [error] = validate_documents([main])
    assert (error.code, error.url, error.line) == ("IMPORT_NOT_FOUND", main, 3)


def test_imports_are_refused_as_load_refuses_them(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    write(tmp_path, "lib.cdl", cdl_doc(""))
    main = write(tmp_path, "app/main.cdl", cdl_doc('<cdl:import location="../lib.cdl"/><cdl:import location="http://example.org/x.cdl"/>'))
    assert [e.code for e in validate_documents([main])] == ["IMPORT_REFUSED", "IMPORT_REFUSED"]
    # --import-path allows the directory; a catalog maps the URL.
    write(tmp_path, "x.cdl", cdl_doc("<cdl:system/>"))
    catalog = write(
        tmp_path,
        "catalog.xml",
        '<catalog xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog"><uri name="http://example.org/x.cdl" uri="x.cdl"/></catalog>',
    )
    [error] = validate_documents([main], import_paths=[str(tmp_path)], catalogs=[catalog])
    assert (error.code, error.url) == ("SCHEMA_INVALID", str(tmp_path / "x.cdl"))


def test_a_document_imported_twice_is_validated_once(tmp_path: Path) -> None:
    write(tmp_path, "lib.cdl", cdl_doc("<cdl:system/>"))
    a = write(tmp_path, "a.cdl", cdl_doc('<cdl:import location="lib.cdl"/>'))
    b = write(tmp_path, "b.cdl", cdl_doc('<cdl:import location="lib.cdl"/><cdl:import location="a.cdl"/>'))
    assert [e.url for e in validate_documents([a, b])] == [str(tmp_path / "lib.cdl")]


def test_path_is_written_from_the_list(tmp_path: Path) -> None:
    body = '<cdl:configuration><t:L><t:child cdl:use="always"/></t:L></cdl:configuration>'
    [error] = validate_documents([write(tmp_path, "p.cdl", cdl_doc(body, 'xmlns:t="urn:t"'))])
    assert error.path == "/t:L/t:child"


def test_path_of_an_error_among_many_siblings_far_down(tmp_path: Path) -> None:
    # Only the elements on the log's lines get a node path (a path for every
    # element counted each one's same-named siblings: the square of a wide list).
    siblings = "\n".join("<p><q>v</q></p>" for _ in range(70000))
    body = f'<cdl:configuration><L>\n{siblings}\n<p cdl:lazy="maybe"/></L></cdl:configuration>'
    [error] = validate_documents([write(tmp_path, "wide.cdl", cdl_doc(body))])
    assert (error.code, error.line, error.path) == ("SCHEMA_INVALID", 70003, "/L/p[70001]")
