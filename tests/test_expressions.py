"""cdl.model.expressions: cdl:expression (7.3.6): XPath 1.0 without location paths,
variables bound to the string value of their target, results formatted as
XPath 1.0 string() does."""

from __future__ import annotations

import pytest

import cdl
from cdl import CdlError
from conftest import CDL_DECL, config, list_xml, lists_xml, load_text, resolve_text, system

# ---------------------------------------------------------------------------
# Evaluation through the engine


def evaluate(expr: str, variables: str = "", extra: str = "") -> str:
    """The resolved value of property ``v`` holding ``expr`` in list S."""
    xml = config(
        "<S><x>8080</x><h>www.example.org</h><e/><m><a>1</a><b>2</b></m><sp> 80 </sp>"
        f'{extra}<v><cdl:expression value-of="{expr}">{variables}</cdl:expression></v></S>'
    )
    (s,) = list(resolve_text(xml).tree()[0])
    v = s.find("v")
    assert v is not None and len(v) == 0
    return v.text or ""


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        ("8080 + 1", "8081"),
        ("3 div 2", "1.5"),
        ("10 div 4", "2.5"),
        ("1 = 1", "true"),
        ("1 = 2", "false"),
        ("1 &lt; 2", "true"),
        ("'a' = 'a'", "true"),
        ("true()", "true"),
        ("not(false())", "true"),
        ("boolean('')", "false"),
        ("0 div 0", "NaN"),
        ("1 div 0", "Infinity"),
        ("-1 div 0", "-Infinity"),
        ("-0", "0"),
        ("0 * -1", "0"),
        ("0 div -1", "0"),
        ("1 div (0 div -1)", "-Infinity"),
        ("round(-0.4)", "0"),
        ("1000000 * 1000000 * 1000000 * 1000", "1000000000000000000000"),
        ("1024 * 1024 * 1024 * 1024 * 1024 * 1024 * 1024", "1180591620717411303424"),
        ("1 div 3", "0.3333333333333333"),
        ("2.50", "2.5"),
        ("-1.5", "-1.5"),
        ("0.000001", "0.000001"),
        ("10 mod 3", "1"),
        ("-(1)", "-1"),
        ("2 - -1", "3"),
        ("round(2.5)", "3"),
        ("floor(-1.5)", "-2"),
        ("ceiling(-0.5)", "0"),
        ("'x'", "x"),
        ("concat('a', 'b', 'c')", "abc"),
        ("substring('hello', 2, 3)", "ell"),
        ("substring('12345', 1.5, 2.6)", "234"),
        ("translate('abc', 'b', 'B')", "aBc"),
        ("string-length('abc')", "3"),
        ("normalize-space('  a   b ')", "a b"),
        ("string(12)", "12"),
        ("string(2.0)", "2"),
        ("string(true())", "true"),
        ("number('x')", "NaN"),
        ("number(' 12 ')", "12"),
        ("number('12.50')", "12.5"),
        ("concat(1.0, 2)", "12"),
        # comparisons with a number compare numbers (XPath 1.0, 3.4)
        ("'80' = 80", "true"),
        ("1 = '1.0'", "true"),
        ("' 80 ' != 80", "false"),
        ("'10' &lt; '9'", "false"),
        ("true() = 'x'", "true"),
        # string() inside the expression is XPath 1.0 string() too
        ("string(1 div 0)", "Infinity"),
        ("concat('', -1 div 0)", "-Infinity"),
        ("string(0 div -1)", "0"),
        ("string(round(-0.4))", "0"),
        ("string(1 div 3)", "0.3333333333333333"),
        ("string-length(1 div 3)", "18"),
        ("string(1 div 10000000)", "0.0000001"),
        # XPath 1.0 number(): no exponent, no plus sign
        ("number('1e3')", "NaN"),
        ("number('+1')", "NaN"),
        ("number(' -12 ')", "-12"),
    ],
)
def test_expression_results(expr: str, text: str) -> None:
    assert evaluate(expr) == text


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        # XPath 1.0 numbers are IEEE 754 doubles (XPath 1.0, 3.5), whatever the literal
        ("0.1 + 0.2", "0.30000000000000004"),
        ("100000000000000000000000 + 1", "99999999999999991611392"),
        ("0.1 * 3", "0.30000000000000004"),
    ],
)
def test_arithmetic_is_ieee_double(expr: str, text: str) -> None:
    assert evaluate(expr) == text


# ---------------------------------------------------------------------------
# Variables


@pytest.mark.parametrize(
    ("expr", "variables", "text"),
    [
        ("$x + 1", "<cdl:variable name='x' ref='/x'/>", "8081"),
        ("concat('http://', $host, '/')", "<cdl:variable name='host' ref='/h'/>", "http://www.example.org/"),
        # the string value of the target: all descendant text, concatenated
        ("$m", "<cdl:variable name='m' ref='/m'/>", "12"),
        ("string-length($m)", "<cdl:variable name='m' ref='/m'/>", "2"),
        ("$m = '12'", "<cdl:variable name='m' ref='/m'/>", "true"),
        ("$m", "<cdl:variable name='m' ref='/m/a/..'/>", "12"),
        # an empty property is the empty string (so false), not a node (which would be true)
        ("boolean($e)", "<cdl:variable name='e' ref='/e'/>", "false"),
        ("string-length($e)", "<cdl:variable name='e' ref='/e'/>", "0"),
        # a string: '=' compares strings, arithmetic converts
        ("$sp + 1", "<cdl:variable name='sp' ref='/sp'/>", "81"),
        ("$sp = ' 80 '", "<cdl:variable name='sp' ref='/sp'/>", "true"),
        ("$sp = 80", "<cdl:variable name='sp' ref='/sp'/>", "true"),
        ("$x = 8080", "<cdl:variable name='x' ref='/x'/>", "true"),
        ("$x = '8080'", "<cdl:variable name='x' ref='/x'/>", "true"),
        ("$x &gt; $sp", "<cdl:variable name='x' ref='/x'/><cdl:variable name='sp' ref='/sp'/>", "true"),
        # refroot on a variable
        ("$p * 2", "<cdl:variable name='p' refroot='T' ref='/p'/>", "42"),
        ("$p", "<cdl:variable name='p' refroot='T' ref='q/r'/>", "deep"),
        # a variable declared but not used is fine
        ("1", "<cdl:variable name='unused' ref='/x'/>", "1"),
        # the same variable used twice
        ("$x + $x", "<cdl:variable name='x' ref='/x'/>", "16160"),
    ],
)
def test_variables(expr: str, variables: str, text: str) -> None:
    xml = config(
        "<T><p>21</p><q><r>deep</r></q></T>"
        "<S><x>8080</x><h>www.example.org</h><e/><m><a>1</a><b>2</b></m><sp> 80 </sp>"
        f'<v><cdl:expression value-of="{expr}">{variables}</cdl:expression></v></S>'
    )
    res = resolve_text(xml)
    s = [el for el in res.tree()[0] if el.tag == "S"][0]
    assert s.find("v").text == text
    assert len(s.find("v")) == 0


def test_spec_example_7_3_6_2() -> None:
    res = resolve_text(
        config(
            "<MyServer><hostname>www.example.org</hostname><url><cdl:expression value-of=\"concat('http://', $host, '/')\">"
            "<cdl:variable name='host' ref='/hostname'/></cdl:expression></url></MyServer>"
        )
    )
    assert lists_xml(res) == ["<MyServer><hostname>www.example.org</hostname><url>http://www.example.org/</url></MyServer>"]


@pytest.mark.parametrize(
    ("prototype", "derived", "expected"),
    [
        # the variable's path is read from the property holding the expression, in the inheriting list
        (
            "<T><p>1</p><v><cdl:expression value-of='$p * 2'><cdl:variable name='p' ref='/p'/></cdl:expression></v></T>",
            "<S cdl:extends='T'><p>5</p></S>",
            ("<T><p>1</p><v>2</v></T>", "<S><p>5</p><v>10</v></S>"),
        ),
        # one level deeper: '/p' is translated to '../p' before inheritance
        (
            "<T><p>1</p><c><v><cdl:expression value-of='$p * 2'><cdl:variable name='p' ref='/p'/></cdl:expression></v></c></T>",
            "<S cdl:extends='T'><p>7</p></S>",
            ("<T><p>1</p><c><v>2</v></c></T>", "<S><p>7</p><c><v>14</v></c></S>"),
        ),
        # relative variable paths also evaluate where the expression is inherited
        (
            "<T><p>1</p><v><cdl:expression value-of='$p + 1'><cdl:variable name='p' ref='p'/></cdl:expression></v></T>",
            "<S cdl:extends='T'><p>41</p></S>",
            ("<T><p>1</p><v>2</v></T>", "<S><p>41</p><v>42</v></S>"),
        ),
        # a derived value replaces an inherited expression
        (
            "<T><p>1</p><v><cdl:expression value-of='$p'><cdl:variable name='p' ref='/p'/></cdl:expression></v></T>",
            "<S cdl:extends='T'><v>own</v></S>",
            ("<T><p>1</p><v>1</v></T>", "<S><p>1</p><v>own</v></S>"),
        ),
    ],
)
def test_inherited_expression_evaluates_in_the_inheriting_list(prototype: str, derived: str, expected: tuple[str, str]) -> None:
    res = resolve_text(config(prototype + derived))
    assert tuple(lists_xml(res)) == expected


def test_expression_keeps_surrounding_text() -> None:
    res = resolve_text(
        config("<S><n>3</n><v>before <cdl:expression value-of='$n * 2'><cdl:variable name='n' ref='/n'/></cdl:expression> after</v></S>")
    )
    assert lists_xml(res) == ["<S><n>3</n><v>before 6 after</v></S>"]


def test_expression_waits_for_a_reference_in_its_variable_target() -> None:
    res = resolve_text(
        config(
            "<S><v><cdl:expression value-of='$a + $b'><cdl:variable name='a' ref='/a'/><cdl:variable name='b' ref='/b'/>"
            "</cdl:expression></v><a cdl:ref='/b'/><b cdl:refroot='T' cdl:ref='/n'/></S><T><n>20</n></T>"
        )
    )
    assert list_xml(res, "S") == "<S><v>40</v><a>20</a><b>20</b></S>"


def test_expression_waits_for_another_expression() -> None:
    res = resolve_text(
        config(
            "<S><v><cdl:expression value-of='$w * 10'><cdl:variable name='w' ref='/w'/></cdl:expression></v>"
            "<w><cdl:expression value-of='1 + 2'/></w></S>"
        )
    )
    assert list_xml(res, "S") == "<S><v>30</v><w>3</w></S>"


# ---------------------------------------------------------------------------
# Refusals


@pytest.mark.parametrize(
    "expr",
    [
        "a",
        "/a",
        "//a",
        "/",
        ".",
        "..",
        "@x",
        "child::a",
        "ancestor-or-self::node()",
        "text()",
        "node()",
        "comment()",
        "processing-instruction()",
        "a[1]",
        "*",
        "p:a",
        "count(a)",
        "sum(/a/b)",
        "sum(1)",
        "count(1)",
        "1 | 2",
        "$x/a",
        "string(.)",
        "concat(a, 'x')",
        "position()",
        "last()",
        "string()",
        "name()",
        "string-length()",
        "normalize-space()",
        "number()",
        "local-name()",
        "namespace-uri()",
        "lang('en')",
        "id('x')",
    ],
)
def test_location_paths_and_context_functions_are_refused(expr: str) -> None:
    xml = system(f"<S><x>1</x>\n<v><cdl:expression value-of=\"{expr}\"><cdl:variable name='x' ref='/x'/></cdl:expression></v></S>", 'xmlns:p="urn:p"')
    with pytest.raises(CdlError) as info:
        load_text(xml)
    error = info.value
    assert (error.code, error.line) == ("EXPR_LOCATION_PATH", 2)
    assert error.message.startswith(f"value-of {expr!r} ")


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("2 * 3", "6"),
        ("string(1)", "1"),
        ("string-length('a')", "1"),
        ("normalize-space(' a ')", "a"),
        ("number('1')", "1"),
        ("boolean(0)", "false"),
        ("concat($x, 'a')", "1a"),
    ],
)
def test_operators_and_functions_with_arguments_are_not_location_paths(expr: str, value: str) -> None:
    # Accepted at load (no EXPR_LOCATION_PATH), and evaluated to their value.
    xml = config(f"<S><x>1</x><v><cdl:expression value-of=\"{expr}\"><cdl:variable name='x' ref='/x'/></cdl:expression></v></S>")
    res = resolve_text(xml)
    assert lists_xml(res) == [f"<S><x>1</x><v>{value}</v></S>"]
    assert res.pending == []


@pytest.mark.parametrize(
    ("expr", "variables", "name", "suggested"),
    [
        ("$x + 1", "", "x", ""),
        ("$y", "<cdl:variable name='x' ref='/x'/>", "y", ""),
        ("concat($x, $z)", "<cdl:variable name='x' ref='/x'/>", "z", ""),
        ("$X", "<cdl:variable name='x' ref='/x'/>", "X", "; did you mean $x?"),
    ],
)
def test_undeclared_variables(expr: str, variables: str, name: str, suggested: str) -> None:
    xml = system(f"<S><x>1</x>\n\n<v><cdl:expression value-of=\"{expr}\">{variables}</cdl:expression></v></S>")
    with pytest.raises(CdlError) as info:
        load_text(xml)
    error = info.value
    assert (error.code, error.line) == ("EXPR_UNDECLARED_VARIABLE", 3)
    assert error.message == f"value-of {expr!r} uses ${name}, which no cdl:variable declares{suggested}"


@pytest.mark.parametrize(
    "expr",
    [
        "concat(",
        "1 +",
        "",
        "foo()",
        "concat('a')",
        "upper-case('a')",
        "if (1) then 2 else 3",
        "1 to 3",
        "(1, 2)",
        "3 idiv 2",
        "1 eq 1",
        "xs:integer(1)",
        "format-number(1, '0')",
        "1e3",
        "'unterminated",
    ],
)
def test_bad_xpath_1_expressions(expr: str) -> None:
    xml = system(f"<S>\n<v><cdl:expression value-of=\"{expr}\"/></v></S>")
    with pytest.raises(CdlError) as info:
        load_text(xml)
    assert (info.value.code, info.value.line) == ("BAD_EXPRESSION", 2)
    assert info.value.message.startswith(f"value-of {expr!r}")


@pytest.mark.parametrize(
    ("content", "code", "message"),
    [
        ("<v><cdl:expression/></v>", "BAD_EXPRESSION", "cdl:expression needs a value-of attribute"),
        ("<v><cdl:expression value-of='1'>text</cdl:expression></v>", "BAD_EXPRESSION", "holds only cdl:variable elements, not text"),
        ("<v><cdl:expression value-of='1'><x/></cdl:expression></v>", "BAD_EXPRESSION", "holds only cdl:variable elements"),
        ("<v><cdl:expression value-of='$a'><cdl:variable ref='/x'/></cdl:expression></v>", "BAD_EXPRESSION", "cdl:variable needs a name that is an NCName"),
        ("<v><cdl:expression value-of='1'><cdl:variable name='a:b' ref='/x'/></cdl:expression></v>", "BAD_EXPRESSION", "NCName"),
        ("<v><cdl:expression value-of='1'><cdl:variable name='1a' ref='/x'/></cdl:expression></v>", "BAD_EXPRESSION", "NCName"),
        ("<v><cdl:expression value-of='$a'><cdl:variable name='a'/></cdl:expression></v>", "BAD_EXPRESSION", "cdl:variable $a needs a ref attribute"),
        (
            "<v><cdl:expression value-of='$a'><cdl:variable name='a' ref='/x'/><cdl:variable name='a' ref='/x'/></cdl:expression></v>",
            "BAD_EXPRESSION",
            "variable $a is declared twice",
        ),
        ("<v><cdl:variable name='a' ref='/x'/></v>", "BAD_EXPRESSION", "cdl:variable must be a child of cdl:expression"),
        (  # found by the fuzzer: a traceback (the inner expression taken out with the variable)
            "<v><cdl:expression value-of='$a'><cdl:variable name='a' ref='/x'><y><cdl:expression value-of='1'/></y></cdl:variable></cdl:expression></v>",
            "BAD_EXPRESSION",
            "a cdl:variable holds no cdl:expression",
        ),
        ("<v><cdl:expression value-of='$a'><cdl:variable name='a' ref='/x//y'/></cdl:expression></v>", "BAD_PATH", "path '/x//y' is not valid"),
        ("<v><cdl:expression value-of='$a'><cdl:variable name='a' refroot='u:T' ref='/x'/></cdl:expression></v>", "BAD_QNAME", "prefix 'u'"),
        ("<v><cdl:expression value-of='$a'><cdl:variable name='a' ref='/x' lazy='maybe'/></cdl:expression></v>", "BAD_LAZY", "'maybe'"),
        ("<v><cdl:expression value-of='$a'><cdl:variable name='a' ref='/x' cdl:lazy='maybe'/></cdl:expression></v>", "BAD_LAZY", "'maybe'"),
        ("<v cdl:ref='/x'><cdl:expression value-of='1'/></v>", "REF_WITH_CHILDREN", "a value reference must be placed on a property without a value"),
    ],
)
def test_malformed_expressions(content: str, code: str, message: str) -> None:
    xml = system(f"<S><x>1</x>\n{content}</S>")
    with pytest.raises(CdlError) as info:
        load_text(xml)
    assert info.value.code == code
    assert message in info.value.message
    assert info.value.line == 2


def test_expression_length_limit() -> None:
    expr = " + ".join(["1"] * 100)
    xml = system(f"<S><v><cdl:expression value-of='{expr}'/></v></S>")
    assert lists_xml(resolve_text(xml)) == ["<S><v>100</v></S>"]
    with pytest.raises(CdlError) as info:
        load_text(xml, limits=cdl.Limits(max_expression_length=50))
    assert info.value.code == "LIMIT_EXCEEDED"
    assert "(max_expression_length)" in info.value.message


# ---------------------------------------------------------------------------
# Variable targets


def test_variable_selecting_several_nodes() -> None:
    xml = f"<cdl:cdl {CDL_DECL}><cdl:configuration>\n<S><p>1</p><p>2</p>\n<v><cdl:expression value-of='$p'>\n<cdl:variable name='p' ref='/p'/></cdl:expression></v></S></cdl:configuration></cdl:cdl>"
    with pytest.raises(CdlError) as info:
        resolve_text(xml)
    error = info.value
    assert (error.code, error.line) == ("VARIABLE_MULTIPLE", 4)
    assert error.message == "variable $p path '/p' selects 2 properties; it must select one"


@pytest.mark.parametrize(
    ("ref", "code", "message"),
    [
        ("/nothing", "REF_NOT_FOUND", "variable $p '/nothing' (read as './nothing') selects nothing: no nothing at step 1"),
        (
            "../up",
            "REF_ABOVE_TOP",
            "variable $p '../up' (read as '../up') climbs above its top level list:"
            " it starts at /S (the property's parent), 0 levels below its top level list, so it may climb at most 0 steps ('..')"
            '; to start at another top level list, name it: refroot="LIST" ref="PATH"',
        ),
    ],
)
def test_variable_path_errors(ref: str, code: str, message: str) -> None:
    xml = system(f"<S>\n<v><cdl:expression value-of='$p'><cdl:variable name='p' ref='{ref}'/></cdl:expression></v></S>")
    with pytest.raises(CdlError) as info:
        resolve_text(xml)
    assert (info.value.code, info.value.message, info.value.line) == (code, message, 2)


def test_variable_refroot_names_no_list() -> None:
    xml = system("<S>\n<v><cdl:expression value-of='$p'><cdl:variable name='p' refroot='Nope' ref='/p'/></cdl:expression></v></S>")
    with pytest.raises(CdlError) as info:
        resolve_text(xml)
    assert (info.value.code, info.value.line) == ("UNKNOWN_REFROOT", 2)


def test_nan_comparisons() -> None:
    # NaN compares unequal to everything, itself included (XPath 1.0, 3.4)
    assert evaluate("number('x') = number('x')") == "false"
    assert evaluate("number('x') != number('x')") == "true"
