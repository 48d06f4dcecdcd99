"""Expressions (7.3.6): XPath 1.0 without location paths.

Entry points: :func:`compile_expression` (at load: parse once with
elementpath's XPath 1.0 parser and refuse location paths, context-dependent
functions and undeclared variables) and :func:`evaluate` (at resolution: bind
each variable to a string and format the result as XPath 1.0 ``string()``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from decimal import Decimal

import elementpath
from elementpath import XPath1Parser, XPathContext
from elementpath.tdop import Token
from lxml import etree

from .errors import ExpressionError

# Symbols that select nodes or read the (absent) context node.
_PATH_SYMBOLS = frozenset(("(name)", "*", ".", "..", "/", "//", "@", "::", "[", "node", "text", "comment", "processing-instruction"))
# Functions that always read the context or return nodes.
_CONTEXT_FUNCTIONS = frozenset(("position", "last", "lang", "id"))
# Functions that read the context node when called without an argument.
_CONTEXT_WITHOUT_ARGUMENT = frozenset(
    ("string", "string-length", "normalize-space", "number", "name", "local-name", "namespace-uri")
)

# Evaluation needs some context item; none of the accepted expressions reads
# it, so one inert element serves every evaluation.
_INERT = etree.Element("cdl-expression-context")
_CONTEXT = XPathContext(root=_INERT)


def compile_expression(text: str, variables: Iterable[str], url: str | None, line: int | None) -> Token:
    """Parse ``text`` and check it may be evaluated without a context node."""
    try:
        token = XPath1Parser().parse(text)
    except elementpath.ElementPathError as exc:
        raise ExpressionError(
            f"value-of {text!r} is not a valid XPath 1.0 expression: {_clean(exc)}", url=url, line=line
        ) from None
    declared = set(variables)
    stack = [token]
    while stack:  # iterative: expressions can nest deeply
        tok = stack.pop()
        symbol = tok.symbol
        if symbol == "$":
            name = tok[0].value
            if name not in declared:
                raise ExpressionError(
                    f"value-of {text!r} uses ${name}, which no cdl:variable declares",
                    code="EXPR_UNDECLARED_VARIABLE",
                    url=url,
                    line=line,
                )
            continue
        if (symbol in _PATH_SYMBOLS and not (symbol == "*" and tok.label == "operator")) or tok.label in (
            "axis",
            "kind test",
        ):
            raise ExpressionError(
                f"value-of {text!r} contains a location path ({_describe(tok)}); expressions may not select nodes (7.3.6)",
                code="EXPR_LOCATION_PATH",
                url=url,
                line=line,
            )
        if tok.label == "function" and (
            symbol in _CONTEXT_FUNCTIONS or (symbol in _CONTEXT_WITHOUT_ARGUMENT and len(tok) == 0)
        ):
            raise ExpressionError(
                f"value-of {text!r} calls {symbol}() which reads the context node; expressions have none (7.3.6)",
                code="EXPR_LOCATION_PATH",
                url=url,
                line=line,
            )
        stack.extend(tok)
    return token


def evaluate(text: str, token: Token, values: Mapping[str, str], parts: tuple[str, ...] | None = None) -> str:
    """Evaluate a compiled expression with string-valued variables.

    ``parts`` is :func:`concat_parts` of the token, when it has that shape.
    Raises ExpressionError without a location; the caller knows where.
    """
    if parts is not None:
        # A string literal, a variable, or concat() of those (the common
        # shape: building URLs and names) has exactly this value; elementpath
        # would take some fifty microseconds to say the same.
        return "".join(values[p[1:]] if p.startswith("$") else p[1:] for p in parts)
    # Building an XPathContext costs more than most evaluations; one serves
    # all, given fresh variables each time (resolution is single-threaded).
    _CONTEXT.variables = dict(values)
    try:
        result = token.evaluate(_CONTEXT)
    except (elementpath.ElementPathError, ArithmeticError, ValueError, TypeError) as exc:
        raise ExpressionError(
            f"value-of {text!r} failed: {_clean(exc)}", code="EXPR_EVALUATION"
        ) from None
    return format_value(result)


def concat_parts(token: Token) -> tuple[str, ...] | None:
    """For a literal, a variable, or concat() of literals and variables: the
    parts ('$name' or "'text"), else None."""
    operands = list(token) if token.symbol == "concat" and token.label == "function" else [token]
    parts: list[str] = []
    for operand in operands:
        if operand.symbol == "(string)":
            parts.append("'" + operand.value)
        elif operand.symbol == "$":
            parts.append("$" + operand[0].value)
        else:
            return None
    return tuple(parts)


def format_value(value: object) -> str:
    """Format an XPath 1.0 result as the string() function does."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, Decimal)):
        return format_number(float(value))
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # a node-set or sequence; accepted expressions yield none
        return format_value(value[0]) if value else ""
    return str(value)


def format_number(x: float) -> str:
    """XPath 1.0 number to string: no exponent, no trailing '.0', 'NaN', 'Infinity'."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"  # also for -0
    if x.is_integer():
        return str(int(x))
    # repr gives the shortest digits that identify the double; write them
    # without an exponent as XPath 1.0 requires.
    text = format(Decimal(repr(x)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _describe(tok: Token) -> str:
    if tok.symbol == "(name)":
        return f"name test {tok.value!r}"
    return repr(tok.symbol)


def _clean(exc: BaseException) -> str:
    msg = str(exc)
    # elementpath prefixes messages with the token and position; the error
    # already says where the expression is.
    if "]" in msg and msg.startswith(("'", "(", "$")) or " at line " in msg:
        cut = msg.find("[err:")
        if cut >= 0:
            msg = msg[cut:]
    return msg
