"""Expressions (7.3.6): XPath 1.0 without location paths.

Entry points: :func:`compile_expression` (at load: parse once with
elementpath's XPath 1.0 parser, then check the token tree holds only what an
expression without location paths may hold) and :func:`evaluate` (at
resolution: bind each variable to a string and compute the value);
:func:`value_of` binds an expression's variables to the nodes their paths
select and evaluates it; :func:`concat_plan` says when an expression is a
plain join of literals and variables, which ``value_of`` then computes by
joining.

Evaluation follows XPath 1.0 itself rather than elementpath's evaluator, whose
XPath 2 heritage shows in numbers (exact decimals instead of IEEE doubles) and
comparisons (a string compared with a number is not converted). Without
location paths every value is a string, a number (a double) or a boolean, and
the core function library that needs no context node is small and exactly
specified (XPath 1.0, sections 3.4, 3.5 and 4).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, cast

from ..errors import ExpressionError
from .suggest import nearest, suggestion

if TYPE_CHECKING:
    # elementpath is imported where an expression is parsed: importing it
    # costs more than loading a small document, and most documents hold no
    # expression.
    from elementpath import XPathToken
    from lxml import etree

    from .tables import Expression

Value = str | float | bool

# Symbols that select nodes or read the (absent) context node.
_PATH_SYMBOLS = frozenset(
    ("(name)", ":", "*", ".", "..", "/", "//", "@", "::", "[", "|", "node", "text", "comment", "processing-instruction")
)
# Functions that read the context or work on node-sets: meaningless here.
_CONTEXT_FUNCTIONS = frozenset(("position", "last", "lang", "id", "count", "sum", "local-name", "namespace-uri", "name"))
_LITERALS = frozenset(("(string)", "(integer)", "(decimal)"))
_OPERATORS = frozenset(("or", "and", "=", "!=", "<", "<=", ">", ">=", "+", "-", "*", "div", "mod", "("))

_XML_SPACE = " \t\r\n"
_NUMBER = re.compile(r"[ \t\r\n]*(-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))[ \t\r\n]*\Z")


def compile_expression(
    text: str,
    variables: Iterable[str],
    url: str | None,
    line: int | None,
    namespaces: Mapping[str | None, str] | None = None,
) -> XPathToken:
    """Parse ``text`` and check it may be evaluated without a context node.

    ``namespaces`` are those in scope where the expression is written, so a
    prefixed name test is recognised as the location path it is.
    """
    declared = set(variables)
    simple = _simple_concat(text, declared)
    if simple is not None:
        return simple
    import elementpath

    try:
        token = _parse(text, {p: u for p, u in (namespaces or {}).items() if p})
    except elementpath.ElementPathError as exc:
        raise ExpressionError(
            f"value-of {text!r} is not a valid XPath 1.0 expression: {_clean(exc)}", url=url, line=line
        ) from None
    except RecursionError:
        raise ExpressionError(f"value-of {text[:60]!r}... is nested too deeply", url=url, line=line) from None
    stack = [token]
    while stack:  # iterative: expressions can nest deeply
        tok = stack.pop()
        symbol = tok.symbol
        if symbol == "$":
            name = tok[0].value
            if name not in declared:
                raise ExpressionError(
                    f"value-of {text!r} uses ${name}, which no cdl:variable declares"
                    + suggestion([f"${v}" for v in nearest(str(name), sorted(declared))]),
                    code="EXPR_UNDECLARED_VARIABLE",
                    url=url,
                    line=line,
                )
            continue
        if symbol in _LITERALS:
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
        if tok.label == "function":
            if symbol in _CONTEXT_FUNCTIONS or (symbol in _CONTEXT_WITHOUT_ARGUMENT and len(tok) == 0):
                raise ExpressionError(
                    f"value-of {text!r} calls {symbol}() which needs the context node or a node-set; "
                    "expressions have neither (7.3.6)",
                    code="EXPR_LOCATION_PATH",
                    url=url,
                    line=line,
                )
            if symbol not in _FUNCTIONS:
                raise ExpressionError(f"value-of {text!r} calls {symbol}(), which is not an XPath 1.0 function", url=url, line=line)
        elif symbol not in _OPERATORS:
            raise ExpressionError(f"value-of {text!r}: {symbol!r} is not XPath 1.0 syntax", url=url, line=line)
        stack.extend(tok)
    return token


# concat() of two or more declared variables and literals, the common
# expression: ``concat($proto, '://', $host)``. Variables are plain ASCII
# names and literals hold no quote of their kind, so the tokens are exactly
# those elementpath would make.
_CONCAT = re.compile(r"[ \t\r\n]*concat\((.*)\)[ \t\r\n]*\Z", re.DOTALL)
_CONCAT_ARGUMENT = re.compile(
    r"[ \t\r\n]*(?:\$([A-Za-z_][A-Za-z0-9_]*)|'([^']*)'|\"([^\"]*)\")[ \t\r\n]*(,|\Z)"
)


class _Token:
    """A token of elementpath's shape for the expressions ``_simple_concat``
    parses: what ``evaluate`` reads (symbol, value, label, the operands)."""

    __slots__ = ("label", "operands", "symbol", "value")

    def __init__(self, symbol: str, value: str, label: str, operands: tuple[_Token, ...] = ()) -> None:
        self.symbol = symbol
        self.value = value
        self.label = label
        self.operands = operands

    def __len__(self) -> int:
        return len(self.operands)

    def __iter__(self) -> Iterator[_Token]:
        return iter(self.operands)

    def __getitem__(self, index: int) -> _Token:
        return self.operands[index]


def _simple_concat(text: str, declared: set[str]) -> XPathToken | None:
    """The token tree of a ``concat()`` of declared variables and literals,
    made without elementpath (importing it would be a large part of a process
    whose documents hold only such expressions); None for anything else,
    which the full parse compiles and checks, with its messages."""
    call = _CONCAT.match(text)
    if call is None:
        return None
    body = call.group(1)
    operands: list[_Token] = []
    position = 0
    while position < len(body):
        found = _CONCAT_ARGUMENT.match(body, position)
        if found is None:
            return None
        name, single, double, separator = found.groups()
        if name is not None:
            if name not in declared:
                return None  # the full parse reports it
            operands.append(_Token("$", name, "variable", (_Token("(name)", name, "name"),)))
        else:
            operands.append(_Token("(string)", single if single is not None else double, "literal"))
        position = found.end()
        if separator and position == len(body):
            return None  # a trailing comma
    if len(operands) < 2:
        return None
    # Read by evaluate as elementpath's tokens are (symbol, value, label,
    # operands): the type says XPathToken for that reason.
    return cast("XPathToken", _Token("concat", "concat", "function", tuple(operands)))


def _parse(text: str, namespaces: dict[str, str]) -> XPathToken:
    """Parse only. XPath1Parser.parse also evaluates constant parts with
    elementpath's own (XPath 2 flavoured) rules, which can reject valid XPath
    1.0 such as ``'a' < 'b'``; the base parser of elementpath.tdop does not."""
    from elementpath import XPath1Parser
    from elementpath.tdop import Parser

    parser = XPath1Parser(namespaces=namespaces)
    if parser.tokenizer is None:
        parser.tokenizer = parser.create_tokenizer(parser.symbol_table)
    return Parser.parse(parser, text)


def evaluate(text: str, token: XPathToken, values: Mapping[str, str]) -> str:
    """Evaluate a compiled expression with string-valued variables, as XPath 1.0 string().

    Iterative (post-order over the token tree), so nesting never exhausts the
    Python stack. Raises ExpressionError without a location; the caller knows
    where.
    """
    results: list[Value] = []
    stack: list[tuple[XPathToken, bool]] = [(token, False)]
    while stack:
        tok, ready = stack.pop()
        symbol = tok.symbol
        if symbol == "(string)":
            results.append(str(tok.value))  # the literal's text
        elif symbol in ("(integer)", "(decimal)"):
            # XPath 1.0 numbers are doubles; through str, a literal too large
            # for a double becomes Infinity instead of raising.
            results.append(float(str(tok.value)))
        elif symbol == "$":
            results.append(values[str(tok[0].value)])  # the variable's name
        elif not ready:
            stack.append((tok, True))
            stack.extend((child, False) for child in reversed(list(tok)))
        else:
            count = len(tok)
            args = results[len(results) - count :]
            del results[len(results) - count :]
            try:
                results.append(_apply(tok, args))
            except (ArithmeticError, ValueError, TypeError) as exc:  # pragma: no cover - defensive
                raise ExpressionError(f"value-of {text!r} failed: {exc}", code="EXPR_EVALUATION") from None
    return to_string(results[0])


#: An expression as literals and variables to join (:func:`concat_plan`).
ConcatPlan = tuple[tuple[str | None, str], ...]


def value_of(expr: Expression, nodes: Sequence[etree._Element], plan: ConcatPlan | None = None) -> str:
    """7.3.6.1: the value of ``expr`` with each variable bound to the string
    value of its node (``nodes``, one per variable, in order): the one place
    that binds and evaluates. ``plan``, the expression's :func:`concat_plan`
    when the caller has it, makes the join the evaluation. Raises
    ExpressionError without a location; the caller knows where.
    """
    values: dict[str, str] = {}
    for var, node in zip(expr.variables, nodes):
        # The string value (XPath string()): a leaf's is its text, read
        # without an iterator.
        values[var.name] = "".join(node.itertext()) if len(node) else (node.text or "")
    if plan is not None:
        joined: list[str] = []
        for name, part in plan:
            joined.append(part if name is None else values[name])
        return "".join(joined)
    return evaluate(expr.text, expr.token, values)


def concat_plan(token: XPathToken) -> ConcatPlan | None:
    """The common expression, ``concat()`` of string literals and variables
    (or one of them alone), as parts to join: ``(None, literal)`` or
    ``(name, "")`` for a variable. Its value is that join, which is what
    :func:`evaluate` computes for it (string literals and variables are
    strings already); None for any other expression."""
    args = list(token) if token.symbol == "concat" and token.label == "function" else [token]
    parts: list[tuple[str | None, str]] = []
    for arg in args:
        if arg.symbol == "(string)":
            parts.append((None, str(arg.value)))
        elif arg.symbol == "$":
            parts.append((str(arg[0].value), ""))
        else:
            return None
    return tuple(parts)


# -- XPath 1.0 conversions ---------------------------------------------------------


def to_string(value: Value) -> str:
    """The string() function."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_number(value)
    return value


def to_number(value: Value) -> float:
    """The number() function: an optional minus, digits and a point; anything else is NaN."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, float):
        return value
    match = _NUMBER.match(value)
    return float(match.group(1)) if match else math.nan


def to_boolean(value: Value) -> bool:
    """The boolean() function."""
    if isinstance(value, bool):
        return value
    if isinstance(value, float):
        return not (value == 0 or math.isnan(value))
    return len(value) > 0


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
    from decimal import Decimal  # here: few expressions format a fraction

    text = format(Decimal(repr(x)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


# -- operators and functions -----------------------------------------------------------


def _equal(a: Value, b: Value) -> bool:
    # XPath 1.0 section 3.4, for objects that are not node-sets.
    if isinstance(a, bool) or isinstance(b, bool):
        return to_boolean(a) == to_boolean(b)
    if isinstance(a, float) or isinstance(b, float):
        return to_number(a) == to_number(b)
    return a == b


def _divide(a: float, b: float) -> float:
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _modulo(a: float, b: float) -> float:
    # Truncating remainder, as Java's % (XPath 1.0 section 3.5).
    if b == 0 or math.isnan(a) or math.isnan(b) or math.isinf(a):
        return math.nan
    if math.isinf(b):
        return a
    return math.fmod(a, b)


def _round(x: float) -> float:
    if math.isnan(x) or math.isinf(x):
        return x
    result = float(math.floor(x + 0.5))
    return -0.0 if result == 0 and x < 0 else result


def _floor(x: float) -> float:
    return x if math.isnan(x) or math.isinf(x) else float(math.floor(x))


def _ceiling(x: float) -> float:
    if math.isnan(x) or math.isinf(x):
        return x
    result = float(math.ceil(x))
    return -0.0 if result == 0 and x < 0 else result


def _substring(s: str, start: float, length: float | None = None) -> str:
    # Characters at positions p with round(start) <= p < round(start) + round(length);
    # comparisons with NaN are false (XPath 1.0 section 4.2).
    first = _round(start)
    end = math.inf if length is None else first + _round(length)
    return "".join(c for p, c in enumerate(s, 1) if p >= first and p < end)


def _after(s: str, sub: str) -> str:
    index = s.find(sub)
    return s[index + len(sub) :] if index >= 0 else ""


def _before(s: str, sub: str) -> str:
    index = s.find(sub)
    return s[:index] if index >= 0 else ""


def _translate(s: str, source: str, target: str) -> str:
    table: dict[str, str | None] = {}
    for i, c in enumerate(source):
        if c not in table:  # the first occurrence decides
            table[c] = target[i] if i < len(target) else None
    return "".join(c if c not in table else (table[c] or "") for c in s)


_XML_SPACES = re.compile(r"[ \t\r\n]+")


def _normalize_space(s: str) -> str:
    # Only XML white space counts (a no-break space is a character).
    return _XML_SPACES.sub(" ", s).strip(_XML_SPACE)


_S, _N, _B = to_string, to_number, to_boolean
_FUNCTIONS: dict[str, Callable[..., Value]] = {
    "string": lambda v: _S(v),
    "concat": lambda *vs: "".join(_S(v) for v in vs),
    "starts-with": lambda a, b: _S(a).startswith(_S(b)),
    "contains": lambda a, b: _S(b) in _S(a),
    "substring-before": lambda a, b: _before(_S(a), _S(b)),
    "substring-after": lambda a, b: _after(_S(a), _S(b)),
    "substring": lambda s, start, *length: _substring(_S(s), _N(start), *(_N(x) for x in length)),
    "string-length": lambda v: float(len(_S(v))),
    "normalize-space": lambda v: _normalize_space(_S(v)),
    "translate": lambda s, a, b: _translate(_S(s), _S(a), _S(b)),
    "boolean": lambda v: _B(v),
    "not": lambda v: not _B(v),
    "true": lambda: True,
    "false": lambda: False,
    "number": lambda v: _N(v),
    "floor": lambda v: _floor(_N(v)),
    "ceiling": lambda v: _ceiling(_N(v)),
    "round": lambda v: _round(_N(v)),
}
# Functions that read the context node when called without an argument.
_CONTEXT_WITHOUT_ARGUMENT = frozenset(("string", "string-length", "normalize-space", "number"))

_BINARY: dict[str, Callable[[Value, Value], Value]] = {
    "or": lambda a, b: _B(a) or _B(b),
    "and": lambda a, b: _B(a) and _B(b),
    "=": _equal,
    "!=": lambda a, b: not _equal(a, b),
    "<": lambda a, b: _N(a) < _N(b),
    "<=": lambda a, b: _N(a) <= _N(b),
    ">": lambda a, b: _N(a) > _N(b),
    ">=": lambda a, b: _N(a) >= _N(b),
    "+": lambda a, b: _N(a) + _N(b),
    "-": lambda a, b: _N(a) - _N(b),
    "*": lambda a, b: _N(a) * _N(b),
    "div": lambda a, b: _divide(_N(a), _N(b)),
    "mod": lambda a, b: _modulo(_N(a), _N(b)),
}


def _apply(tok: XPathToken, args: list[Value]) -> Value:
    symbol = tok.symbol
    if tok.label == "function":
        return _FUNCTIONS[symbol](*args)
    if symbol == "(":
        return args[0]
    if symbol == "-" and len(args) == 1:
        return -_N(args[0])
    return _BINARY[symbol](args[0], args[1])


def _describe(tok: XPathToken) -> str:
    if tok.symbol == "(name)":
        return f"name test {tok.value!r}"
    return repr(tok.symbol)


def _clean(exc: BaseException) -> str:
    msg = str(exc)
    # elementpath prefixes messages with the token and position; the error
    # already says where the expression is.
    cut = msg.find("[err:")
    return msg[cut:] if cut >= 0 else msg
