"""Expression internals (``model.expressions``): XPath 1.0 ``string()`` of a
number, and the simple-concat parse that must give elementpath's own tokens
(tests/test_expressions.py evaluates expressions through the engine)."""

from __future__ import annotations

import pytest

from cdl.model.expressions import format_number


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (8081.0, "8081"),
        (8081, "8081"),
        (1.5, "1.5"),
        (-1.5, "-1.5"),
        (0.5, "0.5"),
        (2.0, "2"),
        (-7.0, "-7"),
        (0.0, "0"),
        (-0.0, "0"),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        (1e21, "1000000000000000000000"),
        (1e22, "10000000000000000000000"),
        (2.0**70, "1180591620717411303424"),
        (-1e21, "-1000000000000000000000"),
        (1e-7, "0.0000001"),
        (1.5e-10, "0.00000000015"),
        (123456.789, "123456.789"),
        (1 / 3, "0.3333333333333333"),
        (0.1 + 0.2, "0.30000000000000004"),
        (9007199254740993.0, "9007199254740992"),
        (5e-324, "0." + "0" * 323 + "5"),
    ],
)
def test_format_number(value: float, text: str) -> None:
    assert format_number(float(value)) == text


def _tokens(tok: object) -> tuple[object, ...]:
    return (tok.symbol, str(tok.value), tok.label, tuple(_tokens(c) for c in tok))  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "text",
    [
        "concat($proto, '://', $host, ':', $port, $path)",
        "concat('a',\"b\")",
        " concat( $a ,'x' ) ",
        "concat('(', ')')",
        "concat('', \"'\")",
    ],
)
def test_simple_concat_gives_elementpaths_tokens(text: str) -> None:
    from cdl.model.expressions import _parse, _simple_concat

    fast = _simple_concat(text, {"proto", "host", "port", "path", "a"})
    assert fast is not None
    assert _tokens(fast) == _tokens(_parse(text, {}))


@pytest.mark.parametrize(
    "text",
    ["concat($a)", "concat($a,)", "concat($a,,'b')", "concat($undeclared, 'a')", "concat('a', 'b') = 'ab'",
     "concat($a-b, 'x')", "concat ($a, 'x')", "concat('it''s', 'x')", "substring($a, 1)"],
)
def test_other_expressions_take_the_full_parse(text: str) -> None:
    from cdl.model.expressions import _simple_concat

    assert _simple_concat(text, {"a"}) is None
