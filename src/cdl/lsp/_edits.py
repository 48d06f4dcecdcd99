"""Positions through the edits made since an analysis, for ``cdl lsp``
(issue 31, point 2): the requests answer from the last complete analysis
while the next one runs, so what they are asked and what they answer is
carried between the text that analysis read and the text the editor holds.

Entry point: :class:`Edit` (and :meth:`Edit.new_lines`, the lines of the
new text made from the old's and the window's). The two texts differ in one stretch (the
stretch from the first character that differs to the last: several edits
since the analysis make one); the lines around it are split again (by
``text.lines.Lines``, the one rule for line ends), the rest of each text
keeps its lines, shifted. A position in the stretch is *stale*: it has no
place in the other text (a request there is not answered; an answer there
is placed at the stretch's start). Finding the stretch compares the texts
(in C, by slices); nothing else is linear in the text.
"""

from __future__ import annotations

from collections.abc import Callable

from ._engine import Lines

#: Characters compared at a time while finding where two texts part.
_CHUNK = 1 << 16


def _common_prefix(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` start with in common."""
    limit = min(len(a), len(b))
    low = 0
    while low < limit and a[low : low + _CHUNK] == b[low : low + _CHUNK]:
        low += _CHUNK
    high = min(low + _CHUNK, limit)
    low = min(low, limit)
    while low < high:  # the first difference is in [low, high]
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: str, b: str, limit: int) -> int:
    """How many characters (at most ``limit``) ``a`` and ``b`` end with in common."""
    low = 0
    while low + _CHUNK <= limit and a[len(a) - low - _CHUNK : len(a) - low] == b[len(b) - low - _CHUNK : len(b) - low]:
        low += _CHUNK
    high = min(low + _CHUNK, limit)
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle : len(a) - low] == b[len(b) - middle : len(b) - low]:
            low = middle
        else:
            high = middle - 1
    return low


class Edit:
    """How the text ``old`` (its lines) became ``new``: positions both ways,
    and the client's columns on ``new`` (see the module docstring).

    Positions are (0-based line, code-point column), as ``Lines`` counts them.
    """

    def __init__(self, old: Lines, new: str) -> None:
        self.old = old
        self.new = new
        text = old.text
        same = _common_prefix(text, new)
        if same and text[same - 1] == "\r":
            same -= 1  # a line end CR LF is not split between the stretch and what stays
        tail = _common_suffix(text, new, min(len(text), len(new)) - same)
        if tail and text[len(text) - tail] == "\n":
            tail -= 1
        #: The stretch that differs: [start, old_end) of ``old``, [start, new_end) of ``new``.
        self.start, self.old_end, self.new_end = same, len(text) - tail, len(new) - tail
        # The lines around it, whole: from the start of the line before the
        # stretch's first character (a line start in both texts) to the start
        # of the line after its last (one too, its line end being common).
        self.first_line = old.position_of(max(same - 1, 0))[0]
        window_start = old.bounds(self.first_line)[0]
        after = old.position_of(self.old_end)[0] + 1
        to_end = after >= len(old)
        window_end = len(text) if to_end else old.bounds(after)[0]
        shift = len(new) - len(text)
        self._offset = window_start
        self._old = Lines(text[window_start:window_end])
        self._new = Lines(new[window_start : window_end + shift])
        #: Lines of each window that are wholly in it (without the line after it).
        self._old_count = len(self._old) - (0 if to_end else 1)
        self._new_count = len(self._new) - (0 if to_end else 1)
        self._new_lines: _NewLines | None = None

    def new_lines(self) -> Lines:
        """The lines of ``new``, made from ``old``'s and the window's (not split again)."""
        if self._new_lines is None:
            self._new_lines = _NewLines(self)
        return self._new_lines

    def new_count(self) -> int:
        """How many lines ``new`` has."""
        return len(self.old) - self._old_count + self._new_count

    def new_position(self, offset: int) -> tuple[int, int]:
        """(line, code-point column) in ``new`` of its ``offset``."""
        if offset < self._offset:
            return self.old.position_of(offset)
        line, column = self._new.position_of(offset - self._offset)
        if line < self._new_count:
            return self.first_line + line, column
        line, column = self.old.position_of(offset - self.new_end + self.old_end)
        return line - self._old_count + self._new_count, column

    def new_line(self, line: int) -> tuple[Lines, int, int]:
        """Where ``new``'s ``line`` is: (the Lines it is a line of, its number
        there, how far that Lines' offsets are from ``new``'s)."""
        first, count = self.first_line, self._new_count
        if line < first:
            return self.old, line, 0
        if line < first + count:
            return self._new, line - first, self._offset
        return self.old, line - count + self._old_count, self.new_end - self.old_end

    def to_old(self, line: int, column: int) -> tuple[int, int] | None:
        """The position in ``old`` of ``new``'s (line, column); None in the stretch."""

        def carry(offset: int) -> int | None:
            if offset <= self.start:
                return offset
            return offset - self.new_end + self.old_end if offset >= self.new_end else None

        return self._across(line, column, (self._new, self._new_count), (self._old, self._old_count), carry)

    def to_new(self, line: int, column: int) -> tuple[int, int]:
        """The position in ``new`` of ``old``'s (line, column) (the stretch's start for one in it)."""

        def carry(offset: int) -> int:
            return offset - self.old_end + self.new_end if offset >= self.old_end else min(offset, self.start)

        found = self._across(line, column, (self._old, self._old_count), (self._new, self._new_count), carry)
        assert found is not None  # every position of old has one in new
        return found

    def _across(
        self, line: int, column: int, source: tuple[Lines, int], target: tuple[Lines, int], carry: Callable[[int], int | None]
    ) -> tuple[int, int] | None:
        """(line, column) of one text in the other: the lines before the
        windows stay, those after shift by the difference of the windows'
        counts, and in the windows ``carry`` takes an offset across."""
        first = self.first_line
        (lines, count), (other, other_count) = source, target
        if line < first:
            return line, column
        if line >= first + count:
            return line - count + other_count, column
        offset = carry(self._offset + lines.offset(line - first, column))
        if offset is None:
            return None
        found = other.position_of(offset - self._offset)
        return first + found[0], found[1]

    def to_client(self, line: int, column: int, encoding: str) -> tuple[int, int]:
        """``old``'s (line, column) as the client counts it in ``new``."""
        line, column = self.to_new(line, column)
        first, count = self.first_line, self._new_count
        if first <= line < first + count:
            found = self._new.to_client(line - first, column, encoding)
            return first + found[0], found[1]
        old_line = line if line < first else line - count + self._old_count
        return line, self.old.to_client(old_line, column, encoding)[1]

    def from_client(self, line: int, units: int, encoding: str) -> tuple[int, int] | None:
        """The position in ``old`` of the client's (line, units) in ``new``; None in the stretch."""
        first, count = self.first_line, self._new_count
        if first <= line < first + count:
            found = self._new.from_client(line - first, units, encoding)
            return self.to_old(first + found[0], found[1])
        old_line = line if line < first else line - count + self._old_count
        return self.old.from_client(old_line, units, encoding)


class _NewLines(Lines):
    """The lines of an edit's new text as ``Lines`` gives them, each found in
    the old text's lines or the window's (:meth:`Edit.new_line`): making
    them costs nothing, whatever the size of the text."""

    def __init__(self, edit: Edit) -> None:  # Lines' own would split the text: not called
        self.text = edit.new
        self._edit = edit
        self._count = edit.new_count()
        self._whole: Lines | None = None

    def __len__(self) -> int:
        return self._count

    def line(self, number: int) -> str:
        if not 0 <= number < self._count:
            return ""
        start, end = self.bounds(number)
        return self.text[start:end]

    def bounds(self, number: int) -> tuple[int, int]:
        lines, there, shift = self._edit.new_line(number)
        start, end = lines.bounds(there)
        return start + shift, end + shift

    def offset(self, line: int, column: int) -> int:
        start, end = self.bounds(min(max(line, 0), self._count - 1))
        return min(start + max(column, 0), end)

    def position_of(self, offset: int) -> tuple[int, int]:
        return self._edit.new_position(offset)

    def to_client(self, line: int, column: int, encoding: str) -> tuple[int, int]:
        if line >= self._count:  # past the end: the end of the last line
            line, column = self._count - 1, len(self.text)
        line = max(line, 0)
        lines, there, _ = self._edit.new_line(line)
        return line, lines.to_client(there, column, encoding)[1]

    def from_client(self, line: int, units: int, encoding: str) -> tuple[int, int]:
        if line >= self._count:
            return self._count - 1, len(self.line(self._count - 1))
        line = max(line, 0)
        lines, there, _ = self._edit.new_line(line)
        return line, lines.from_client(there, units, encoding)[1]

    # The parser's lines: never asked of the text being typed; split when they are.

    def parser_bounds(self, number: int) -> tuple[int, int] | None:
        return self._split().parser_bounds(number)

    def parser_line_of(self, offset: int) -> int:
        return self._split().parser_line_of(offset)

    def _split(self) -> Lines:
        if self._whole is None:
            self._whole = Lines(self.text)
        return self._whole
