"""The written comparison of two versions (``planning.changes.written_changes``,
the causes of ``cdl diff``) is the same with the specialisations that take the
top level lists written wholly in the bytes both texts begin or end with as
equal and parse only the stretch of the texts that holds every difference:
edits of random places of a document of many lists, some written on one
line, some over several, below a list parent that declares a namespace they
use (documents as written, not loaded: two lists may share a name)."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

import cdl
from cdl.loading.parse import parse_written
from cdl.model.naming import Prefixes
from cdl.planning.changes import Written, written_changes

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


#: Edits of the text: what each is, and the function making the new text from
#: the old, a list's number and the edit's (which names the lists it adds).
EDITS = {
    "value": lambda t, i, j: t.replace(f"<v>{i}</v>", f"<v>{i}x</v>", 1),
    "attribute": lambda t, i, j: t.replace(f"a:x=\"{i}\"", f"a:x=\"{i}y\"", 1).replace(f"a:x='{i}'", f"a:x='{i}y'", 1),
    "a list added after": lambda t, i, j: t.replace(f"</l{i}>", f"</l{i}><l{i}b{j}><v>n</v></l{i}b{j}>", 1),
    "a list added before": lambda t, i, j: t.replace(f"<l{i}>", f"<new{i}e{j}><v>n</v></new{i}e{j}>\n    <l{i}>", 1),
    "a line added": lambda t, i, j: t.replace(f"</l{i}>", f"</l{i}>\n", 1),
    "a line taken out": lambda t, i, j: t.replace(f"\n    <l{i}", f"<l{i}", 1),
    "a twin added before": lambda t, i, j: t.replace(f"<l{i}>", "<l0><v>twin</v></l0>\n    " + f"<l{i}>", 1),
    "a list renamed": lambda t, i, j: t.replace(f"<l{i}>", f"<r{i}>", 1).replace(f"<l{i}\n", f"<r{i}\n", 1).replace(f"</l{i}>", f"</r{i}>", 1),
    "the namespace": lambda t, i, j: t.replace('xmlns:a="urn:a"', 'xmlns:a="urn:b"', 1),
    "the list parent": lambda t, i, j: t.replace("<cdl:system ", '<cdl:system\n  b="1" ', 1),
    "the configuration": lambda t, i, j: t.replace("<c><v>1</v></c>", "<c><v>2</v></c>", 1),
    "the end": lambda t, i, j: t.replace("\n  </cdl:system>", f"<z{j}/>\n  </cdl:system>", 1),
}


class _Written:
    """A document as the written comparison reads it (its ``url``, ``file``,
    bytes, target namespace and tree, from which it finds where to cut the
    stretch it parses): not loaded, so that it may name two lists alike."""

    def __init__(self, url: str, data: bytes) -> None:
        self.url = self.file = url
        self.data = data
        self.target_ns = ""
        self.root = parse_written(data, url, cdl.Limits())


def _changes(old: str, new: str, shortcut: bool) -> list[tuple[str, object, object]]:
    prefixes = Prefixes([{"cdl": CDL, "a": "urn:a"}])
    docs = ([_Written("/v1/main.cdl", old.encode())], [_Written("/v2/main.cdl", new.encode())])
    found = written_changes(docs[0], docs[1], (prefixes, prefixes), cdl.Limits(), shortcut)  # type: ignore[arg-type]
    return [(c.change, c.old, c.new) for c in found]


@settings(max_examples=200, deadline=None)
# The edges: a list on the line where the first or the last difference is,
# after or before it; a list named like one before it, one of them renamed.
@example([0, 0], {1}, [("value", 1)])
@example([0, 0], {1}, [("value", 0)])
@example([0, 0, 0], {1, 2}, [("value", 1)])
@example([1, 1, 1], set(), [("a twin added before", 1), ("a twin added before", 2)])
@example([1, 1, 1], set(), [("a twin added before", 2), ("a list renamed", 0)])
# Stretches: two lists apart changed, the last list changed, one added last.
@example([0, 1, 0, 0, 1], set(), [("value", 2), ("attribute", 3)])
@example([1, 0, 2], set(), [("value", 2)])
@example([2, 1], set(), [("the end", 0)])
@given(
    st.lists(st.integers(0, 2), min_size=1, max_size=8),
    st.sets(st.integers(1, 7)),
    st.lists(st.tuples(st.sampled_from(sorted(EDITS)), st.integers(0, 7)), min_size=1, max_size=2),
)
def test_the_same_with_and_without_the_unchanged_bytes(layouts: list[int], joined: set[int], edits: list[tuple[str, int]]) -> None:
    text = _document(layouts, joined)
    edited = text
    for j, (name, i) in enumerate(edits):
        edited = EDITS[name](edited, i % len(layouts), j)
    assert _changes(text, edited, True) == _changes(text, edited, False)


def test_a_namespace_changed_on_the_list_parent_reaches_every_list() -> None:
    """The lists after the change are written alike, but their attributes
    are in another namespace: each is a change."""
    text = _document([1, 0, 2, 1], set())
    found = _changes(text, EDITS["the namespace"](text, 0, 0), True)
    assert [new.path for _, _, new in found if isinstance(new, Written)] == ["/cdl:system", "/l0/w", "/l1/w", "/l2/w", "/l3/w"]


def test_lists_named_alike_after_the_difference_are_paired_from_the_start() -> None:
    """One of five same-named lists taken out before the others: each of
    the rest is paired with the next one written (the k-th with the k-th),
    not with its own copy after the difference; all of them differ."""
    lists = ["<l0>A</l0>", "<x>mid</x>", "<x>B</x>", "<x>C</x>", "<x>D</x>", "<x>E</x>"]
    text = _document([0], set()).replace("<l0><v>0</v><w a:x=\"0\">t</w></l0>", "\n    ".join(lists))
    edited = text.replace("<x>mid</x>\n    ", "")
    found = _changes(text, edited, True)
    assert found == _changes(text, edited, False)
    assert [(change, old.xml if isinstance(old, Written) else None) for change, old, _ in found] == [
        ("changed", "<x>mid</x>"),
        ("changed", "<x>B</x>"),
        ("changed", "<x>C</x>"),
        ("changed", "<x>D</x>"),
        ("removed", "<x>E</x>"),
    ]
