"""Inherited expressions without their cdl:variable children
(``model.workspace.strip_variables``): the copies of an expression made from a plan's
stamp (src/cdl/resolution/inherit.py) leave out its variables, which the tables hold, and
whatever reads them gets them back first (``restore_variables``). Nothing a
user sees may change: each case is resolved with and without the stripping
and compared (output, pending report, deployment plan, errors with their
lines, deploy-time rounds)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from lxml import etree

import cdl
from cdl.engine.document import loaded_of
from cdl.engine.phases import resolve_working
from cdl.model.vocabulary import T_EXPRESSION, T_VARIABLE
from cdl.resolution import inherit as _inherit
from conftest import CDL_NS

_TEMPLATE = """
    <T>
      <a>1</a>
      <b>two</b>
      <url><cdl:expression value-of="concat($a, '-', $b, '-', $c)">
          <cdl:variable name="a" ref="/a"/>
          <cdl:variable name="b" ref="/b"/>
          <cdl:variable name="c" ref="{c}"/>
        </cdl:expression></url>
    </T>"""


def _document(c: str, components: str, extra: str = "") -> str:
    """A system of components extending T, whose expression's third variable reads ``c``."""
    return f"""<?xml version="1.0"?>
<cdl:cdl xmlns:cdl="{CDL_NS}">
  <cdl:configuration>{_TEMPLATE.format(c=c)}{extra}
  </cdl:configuration>
  <cdl:system>
{components}
  </cdl:system>
</cdl:cdl>
"""


def _components(count: int, body: str = "") -> str:
    return "\n".join(f'    <c{i} cdl:extends="T">{body.format(i=i)}</c{i}>' for i in range(count))


@pytest.fixture(autouse=True)
def _fast_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stripping is a specialisation: these tests need the fast paths on."""
    monkeypatch.delenv("CDL_NO_FAST_PATHS", raising=False)


@contextmanager
def _without_stripping() -> Iterator[None]:
    saved = _inherit.strip_variables
    _inherit.strip_variables = lambda ws, copies: None  # type: ignore[assignment]
    try:
        yield
    finally:
        _inherit.strip_variables = saved


def _outcome(text: str, action: Callable[[cdl.Document], Any]) -> Any:
    doc = cdl.load(text.encode(), name="strip.cdl")
    try:
        return action(doc)
    except cdl.CdlError as exc:
        errors = exc.errors if isinstance(exc, cdl.CdlErrorGroup) else [exc]
        return [(e.code, e.line, e.path, e.message) for e in errors]


def _both(text: str, action: Callable[[cdl.Document], Any]) -> Any:
    stripped = _outcome(text, action)
    with _without_stripping():
        plain = _outcome(text, action)
    assert stripped == plain
    return stripped


def test_nothing_is_stripped_without_fast_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _document("/a", _components(4))
    monkeypatch.setenv("CDL_NO_FAST_PATHS", "1")
    assert not _stripped_some(text)


def _stripped_some(text: str, rounds: Sequence[Any] = ()) -> bool:
    ws, _, _ = resolve_working(loaded_of(cdl.load(text.encode(), name="strip.cdl")), list(rounds))
    return bool(ws.variables)


def test_evaluated_copies_equal_those_with_variables() -> None:
    text = _document("/a", _components(4))
    out = _both(text, lambda doc: doc.resolve().to_bytes())
    assert out.count(b"<url>1-two-1</url>") == 5  # the template and its four inheritors
    assert _stripped_some(text)


def test_pending_copies_are_written_back_with_their_variables() -> None:
    # The third variable reads a lazy property: each inheritor's expression
    # waits for it and is written back as written, variables and all.
    text = _document("/d", _components(4, "<d cdl:lazy='true'/>"))
    out = _both(text, lambda doc: doc.resolve().to_bytes())
    system = etree.fromstring(out).find(f"{{{CDL_NS}}}system")
    assert system is not None
    for component in system:
        (expression,) = component.iter(T_EXPRESSION)
        assert list(expression.attrib.items()) == [("value-of", "concat($a, '-', $b, '-', $c)")]
        variables = [v.attrib for v in component.iter(T_VARIABLE)]
        assert [dict(v) for v in variables] == [{"name": "a", "ref": "./a"}, {"name": "b", "ref": "./b"}, {"name": "c", "ref": "./d"}]
    assert _both(text, lambda doc: [str(p) for p in doc.resolve().pending])
    assert _both(text, lambda doc: doc.resolve().plan().to_data())
    assert _stripped_some(text)


def test_deploy_time_values_reach_stripped_copies() -> None:
    text = _document("/d", _components(4, "<d cdl:lazy='true'/>"))
    values = {f"c{i}/d": f"v{i}" for i in range(4)}
    out = _both(text, lambda doc: doc.resolve(values).to_bytes())
    assert b"<url>1-two-v3</url>" in out and b"cdl:variable" not in out.split(b"<cdl:system>")[1]
    # One round releases two of them; the other two stay pending.
    half = {f"c{i}/d": f"v{i}" for i in range(2)}
    out = _both(text, lambda doc: doc.resolve().supply(half).to_bytes())
    assert out.split(b"<cdl:system>")[1].count(b"<cdl:variable") == 6


def test_errors_name_the_variable_line_in_every_copy() -> None:
    # The third variable selects two properties in every inheritor: the
    # general resolution reports it at the variable's line, copies from
    # the stamp included.
    text = _document("/p", _components(4, "<p>x</p><p>y</p>"))
    errors = _both(text, lambda doc: doc.resolve().to_bytes())
    line = text.splitlines().index(next(s for s in text.splitlines() if 'name="c"' in s)) + 1
    assert [(code, at) for code, at, _, _ in errors] == [("VARIABLE_MULTIPLE", line)] * 4
    assert _stripped_some(_document("/a", _components(4)))


def test_a_reference_blocked_on_a_stripped_copy_waits_for_it() -> None:
    # A property reads an inheritor's expression before it is evaluated: the
    # expression is resolved first (out of document order), then copied.
    components = _components(4) + '\n    <r cdl:refroot="c3" cdl:ref="/url"/>'
    out = _both(_document("/a", components.replace("<c0 ", "<r0 cdl:refroot='c2' cdl:ref='/url'/><c0 ")), lambda doc: doc.resolve().to_bytes())
    assert out.count(b"1-two-1") == 7


def test_nothing_is_stripped_where_a_variable_may_be_lazy() -> None:
    extra = """
    <U><e>5</e><f><cdl:expression value-of="$e"><cdl:variable name="e" ref="/e" cdl:lazy="true"/></cdl:expression></f></U>"""
    text = _document("/a", _components(4), extra)
    assert not _stripped_some(text)
    _both(text, lambda doc: doc.resolve().to_bytes())


@pytest.mark.parametrize("count", [1, 2, 3])
def test_every_stripped_expression_is_restored_or_gone(count: int) -> None:
    # After resolution no expression in the main document lacks variables
    # its table entry has: each was evaluated (gone) or restored.
    text = _document("/d", _components(count, "<d cdl:lazy='true'/>"))
    ws, _, _ = resolve_working(loaded_of(cdl.load(text.encode(), name="strip.cdl")), ())
    expressions = list(ws.roots[0].iter(T_EXPRESSION))
    assert len(expressions) == count + 1  # the template's and each inheritor's wait
    assert all(len(e) == 3 for e in expressions)


def test_expressions_with_attributes_of_their_own_or_no_variables() -> None:
    # An attribute of another namespace stays where it is written (such an
    # expression is copied whole: h waits in every user, and is written
    # back); an expression without variables is stripped of its value-of alone.
    extra = """
    <U xmlns:n="urn:n"><e>5</e>
      <f><cdl:expression value-of="concat($e, '!')"><cdl:variable name="e" ref="/e"/></cdl:expression></f>
      <g><cdl:expression value-of="1 + 1"/></g>
      <h><cdl:expression n:note="x" value-of="concat($e, $z)"><cdl:variable name="e" ref="/e"/><cdl:variable name="z" ref="/z"/></cdl:expression></h>
    </U>"""
    users = "\n".join(f'    <u{i} cdl:extends="U"><z cdl:lazy="true"/></u{i}>' for i in range(3))
    text = _document("/a", _components(3) + "\n" + users, extra)
    out = _both(text, lambda doc: doc.resolve().to_bytes())
    assert out.count(b"<f>5!</f>") == 4 and out.count(b"<g>2</g>") == 4
    assert out.count(b'n:note="x" value-of="concat($e, $z)"') == 4 and out.count(b'<cdl:variable name="z" ref="./z"/>') == 3 + 1
