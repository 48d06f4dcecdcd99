"""The written comparison of two versions (``planning.changes.written_changes``,
the causes of ``cdl diff``) is the same with the specialisation that takes the
top level lists written wholly in the bytes both texts begin or end with as
equal: edits of random places of a document of many lists, some written on
one line, some over several, below a list parent that declares a namespace
they use."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import cdl
from cdl.engine.document import loaded_of
from cdl.planning.changes import written_changes

CDL = "http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"


def _list(i: int, layout: int) -> str:
    body = f'<v>{i}</v><w a:x="{i}">t</w>'
    if layout == 0:
        return f"<l{i}>{body}</l{i}>"
    if layout == 1:
        return f"<l{i}>\n      <v>{i}</v>\n      <w a:x='{i}'>t</w>\n    </l{i}>"
    return f'<l{i}\n        k="{i}">{body}</l{i}>'


def _document(layouts: list[int], joined: set[int]) -> str:
    """Lists ``l0``, ``l1``, ... (each laid out as ``layouts`` says; a list
    in ``joined`` written on the line of the one before it)."""
    text = ""
    for i, layout in enumerate(layouts):
        text += ("" if i in joined else "\n    ") + _list(i, layout)
    return (
        f'<?xml version="1.0"?>\n<cdl:cdl xmlns:cdl="{CDL}">\n  <cdl:configuration>\n    <c><v>1</v></c>\n  </cdl:configuration>\n'
        f'  <cdl:system xmlns:a="urn:a">{text}\n  </cdl:system>\n</cdl:cdl>\n'
    )


#: Edits of the text: (what it is, the function making the new text from the old and a list's number).
EDITS = {
    "value": lambda t, i: t.replace(f"<v>{i}</v>", f"<v>{i}x</v>", 1),
    "attribute": lambda t, i: t.replace(f"a:x=\"{i}\"", f"a:x=\"{i}y\"", 1).replace(f"a:x='{i}'", f"a:x='{i}y'", 1),
    "a list added after": lambda t, i: t.replace(f"</l{i}>", f"</l{i}><l{i}b><v>n</v></l{i}b>", 1),
    "a list added before": lambda t, i: t.replace(f"<l{i}>", f"<new{i}><v>n</v></new{i}>\n    <l{i}>", 1),
    "a line added": lambda t, i: t.replace(f"</l{i}>", f"</l{i}>\n", 1),
    "a line taken out": lambda t, i: t.replace(f"\n    <l{i}", f"<l{i}", 1),
    "the namespace": lambda t, i: t.replace('xmlns:a="urn:a"', 'xmlns:a="urn:b"', 1),
    "the list parent": lambda t, i: t.replace("<cdl:system ", '<cdl:system\n  b="1" ', 1),
    "the configuration": lambda t, i: t.replace("<c><v>1</v></c>", "<c><v>2</v></c>", 1),
    "the end": lambda t, i: t.replace("\n  </cdl:system>", "<z/>\n  </cdl:system>", 1),
}


def _changes(old: Path, new: Path, shortcut: bool) -> list[tuple[str, object, object]]:
    docs = [loaded_of(cdl.load(str(path))) for path in (old, new)]
    prefixes = (docs[0].prefixes(), docs[1].prefixes())
    found = written_changes(docs[0].docs, docs[1].docs, prefixes, docs[1].options.limits, shortcut)
    return [(c.change, c.old, c.new) for c in found]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 2), min_size=1, max_size=8),
    st.sets(st.integers(1, 7)),
    st.lists(st.tuples(st.sampled_from(sorted(EDITS)), st.integers(0, 7)), min_size=1, max_size=2),
)
def test_the_same_with_and_without_the_unchanged_bytes(
    tmp_path_factory: object, layouts: list[int], joined: set[int], edits: list[tuple[str, int]]
) -> None:
    base = tmp_path_factory.mktemp("written")  # type: ignore[attr-defined]
    text = _document(layouts, joined)
    edited = text
    for name, i in edits:
        edited = EDITS[name](edited, i % len(layouts))
    (base / "old.cdl").write_text(text, encoding="utf-8")
    (base / "new.cdl").write_text(edited, encoding="utf-8")
    fast = _changes(base / "old.cdl", base / "new.cdl", True)
    assert fast == _changes(base / "old.cdl", base / "new.cdl", False)


def test_a_namespace_changed_on_the_list_parent_reaches_every_list(tmp_path: Path) -> None:
    """The lists after the change are written alike, but their attributes
    are in another namespace: each is a change."""
    text = _document([1, 0, 2, 1], set())
    (tmp_path / "old.cdl").write_text(text, encoding="utf-8")
    (tmp_path / "new.cdl").write_text(EDITS["the namespace"](text, 0), encoding="utf-8")
    found = _changes(tmp_path / "old.cdl", tmp_path / "new.cdl", True)
    assert [c[2].path for c in found] == ["/cdl:system", "/l0/w", "/l1/w", "/l2/w", "/l3/w"]  # type: ignore[union-attr]
