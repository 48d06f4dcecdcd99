"""``cdl.lsp._edits.Edit`` (internals): positions carried between the text an
analysis read and the text the editor holds now (issue 31, point 2), on
every line end LSP 3.17 counts and characters beyond the BMP."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cdl.lsp._edits import Edit
from cdl.text.lines import UTF8, UTF16, Lines

TEXTS = st.text(alphabet="ab<\n\r\u00e9\U0001f600", max_size=40)


def placed(lines: Lines, offset: int) -> bool:
    """Whether ``offset`` is a position of its own (not inside a line end)."""
    return lines.offset(*lines.position_of(offset)) == offset


def edited(old: str, data: st.DataObject) -> str:
    """``old`` with one stretch replaced by another text, both drawn."""
    start = data.draw(st.integers(0, len(old)))
    end = data.draw(st.integers(start, len(old)))
    return old[:start] + data.draw(TEXTS) + old[end:]


@given(old=TEXTS, data=st.data())
def test_every_position_outside_the_edit_is_carried_both_ways(old: str, data: st.DataObject) -> None:
    new = edited(old, data)
    if new == old:
        return
    before, after = Lines(old), Lines(new)
    edit = Edit(before, new)
    for offset in filter(lambda o: placed(after, o), range(len(new) + 1)):
        found = edit.to_old(*after.position_of(offset))
        if edit.start < offset < edit.new_end:
            assert found is None  # typed since: stale
            continue
        expected = offset if offset <= edit.start else offset - edit.new_end + edit.old_end
        assert found is not None and before.offset(*found) == expected
        for encoding in (UTF8, UTF16):
            assert edit.from_client(*after.to_client(*after.position_of(offset), encoding), encoding) == found
    for offset in filter(lambda o: placed(before, o), range(len(old) + 1)):
        expected = offset - edit.old_end + edit.new_end if offset >= edit.old_end else min(offset, edit.start)
        carried = edit.to_new(*before.position_of(offset))
        assert after.offset(*carried) == expected
        for encoding in (UTF8, UTF16):
            assert edit.to_client(*before.position_of(offset), encoding) == after.to_client(*carried, encoding)


def test_a_long_text_edited_in_the_middle() -> None:
    old = "".join(f"<line{i}/>\r\n" for i in range(50_000))
    new = old.replace("<line25000/>", "<line25000 a='1'/>\n<x/>")
    edit = Edit(Lines(old), new)
    assert edit.to_old(25_002, 3) == (25_001, 3)  # the lines after: one more before them
    assert edit.to_old(24_999, 2) == (24_999, 2)
    assert edit.to_old(25_001, 1) is None  # <x/>, typed since
    assert edit.to_new(40_000, 0) == (40_001, 0)


@given(old=TEXTS, data=st.data())
def test_the_new_texts_lines_made_from_the_old_ones_are_its_own(old: str, data: st.DataObject) -> None:
    new = edited(old, data)
    if new == old:
        return
    carried, split = Edit(Lines(old), new).new_lines(), Lines(new)
    assert len(carried) == len(split)
    for line in range(-1, len(split) + 2):
        assert carried.line(line) == split.line(line)
        for column in range(-1, 6):
            assert carried.offset(line, column) == split.offset(line, column)
            for encoding in (UTF8, UTF16):
                assert carried.to_client(line, column, encoding) == split.to_client(line, column, encoding)
                assert carried.from_client(line, column, encoding) == split.from_client(line, column, encoding)
    for offset in range(len(new) + 1):
        assert carried.position_of(offset) == split.position_of(offset)
        assert carried.span(offset, offset + 3) == split.span(offset, offset + 3)
    assert [carried.parser_line_of(offset) for offset in range(len(new) + 1)] == [split.parser_line_of(offset) for offset in range(len(new) + 1)]
