"""The lines of a text: positions as (line, column) and as offsets, both ways.

Entry point: :class:`Lines`. Two counts of lines meet here. The XML parser's
(libxml2's ``sourceline``, the lines of the engine's errors, 1-based) ends a
line at ``\\n`` only (``\\r\\n`` is one line end; a lone ``\\r`` ends none).
An editor's, as the Language Server Protocol 3.17 counts them (0-based
lines, columns in code units of the encoding the client and the server
agreed on: UTF-16 unless the client offers UTF-8 or UTF-32), ends a line at
``\\n``, ``\\r\\n`` or a lone ``\\r``: the two differ only in a text with lone
``\\r``, where the parser's lines are indexed apart.
Columns here count code points (a ``str``'s indexes);
:meth:`Lines.to_client` and :meth:`Lines.from_client` convert them.
"""

from __future__ import annotations

import array
import bisect
import itertools
import operator
import re

from .offsets import Offsets

#: The encodings a client may count columns in, as LSP names them.
UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"
ENCODINGS = (UTF8, UTF16, UTF32)

#: An editor's line end (LSP 3.17), and the parser's.
_LINE_END = re.compile(r"\r\n|\r|\n")
_NEWLINE = re.compile(r"\n")
#: How many lines' offsets are copied in one C call.
_PIECE = 16384


def _units(text: str, encoding: str) -> int:
    """How many code units of ``encoding`` ``text`` takes."""
    if encoding == UTF32 or text.isascii():
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


class Lines:
    """The lines of one text, to convert positions on them.

    Built once per text (linear); each conversion looks at one line.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        starts, ends = array.array("q", [0]), array.array("q")
        lone = False
        if "\r" not in text:
            # Only LF ends a line: found by a pattern of one literal, which
            # the regular expression engine finds by a search, where it tries
            # the alternation of every line end at every character.
            found = [match.start() for match in _NEWLINE.finditer(text)]
            # Copied a piece at a time: one C call over every line of a
            # large text holds the interpreter (``cdl lsp``'s requests wait).
            for first in range(0, len(found), _PIECE):
                piece = found[first : first + _PIECE]
                ends.extend(piece)
                starts.extend(map(operator.add, piece, itertools.repeat(1)))
        else:
            for match in _LINE_END.finditer(text):
                ends.append(match.start())
                starts.append(match.end())
                lone = lone or match.group() == "\r"
        ends.append(len(text))
        #: Where each line starts and where its content ends (before its line end).
        self._starts, self._ends = Offsets(starts), Offsets(ends)
        #: Where each of the parser's lines starts, when they are not the editor's.
        self._parser: array.array[int] | None = None
        if lone:
            self._parser = array.array("q", [0])
            self._parser.extend(match.end() for match in _NEWLINE.finditer(text))

    def edited(self, start: int, end: int, inserted: str) -> Lines:
        """The lines of this text with ``start:end`` replaced by ``inserted``
        (an editor's change): the lines the change reaches are found again,
        the others kept, those after it moved by the change's length (a line
        end joined or parted by the change is in the lines it reaches; the
        lines are kept in chunks, moved a chunk at a time, ``text.offsets``).
        A text with a lone CR, whose parser's lines are apart, is indexed whole."""
        end = max(start, end)
        text = self.text[:start] + inserted + self.text[end:]
        if self._parser is not None:
            return Lines(text)
        count = len(self._starts)
        first = self._starts.bisect_right(start) - 1  # the line start is on
        after = self._starts.bisect_right(end)  # the line after end's
        shift = len(text) - len(self.text)
        stop = len(text) if after == count else self._starts[after] + shift
        found = list(_LINE_END.finditer(text, self._starts[first], stop))
        if any(match.group() == "\r" for match in found):
            return Lines(text)
        lines = Lines.__new__(Lines)
        lines.text, lines._parser = text, None
        # The line after the change starts where the last line end found ends.
        lines._starts = self._starts.spliced(first + 1, after + 1, [match.end() for match in found], shift)
        ends = [match.start() for match in found] + ([len(text)] if after == count else [])
        lines._ends = self._ends.spliced(first, after, ends, shift)
        return lines

    def __len__(self) -> int:
        return len(self._starts)

    def line(self, number: int) -> str:
        """The text of line ``number`` (0-based) without its line end; '' past the end."""
        if not 0 <= number < len(self._starts):
            return ""
        return self.text[self._starts[number] : self._ends[number]]

    def bounds(self, number: int) -> tuple[int, int]:
        """Where line ``number`` (0-based, within the text) starts and where its
        content ends (before its line end), as offsets into the text."""
        return self._starts[number], self._ends[number]

    def offset(self, line: int, column: int) -> int:
        """The offset of code-point ``column`` on ``line`` (both clamped to the text)."""
        line = min(max(line, 0), len(self._starts) - 1)
        return min(self._starts[line] + max(column, 0), self._ends[line])

    def position_of(self, offset: int) -> tuple[int, int]:
        """(line, code-point column) of ``offset`` (in a line end: the end of its line)."""
        line = self._starts.bisect_right(offset) - 1
        return line, min(offset, self._ends[line]) - self._starts[line]

    def span(self, start: int, end: int) -> tuple[int, int, int]:
        """(line, first column, column after the last) of the text from
        ``start`` to ``end``, cut at the end of ``start``'s line: a range on
        one line, as the ranges of errors and names are."""
        line, column = self.position_of(start)
        first, stop = self.bounds(line)
        return line, column, max(column, min(end, stop) - first)

    # -- the XML parser's lines ------------------------------------------------------

    def parser_bounds(self, number: int) -> tuple[int, int] | None:
        """Where the parser's line ``number`` (1-based, as an element's
        ``sourceline`` or an error's line counts) starts and where its content
        ends (before its ``\\n`` or ``\\r\\n``); None past the text."""
        starts = self._starts if self._parser is None else self._parser
        if not 0 < number <= len(starts):
            return None
        if self._parser is None:
            return self.bounds(number - 1)
        start = starts[number - 1]
        if number == len(starts):
            return start, len(self.text)
        end = starts[number] - 1  # its '\n'
        return start, end - 1 if end > start and self.text[end - 1] == "\r" else end

    def parser_line_of(self, offset: int) -> int:
        """The parser's line (1-based) that ``offset`` is on."""
        if self._parser is None:
            return self.position_of(offset)[0] + 1
        return bisect.bisect_right(self._parser, offset)

    # -- the client's columns --------------------------------------------------------

    def to_client(self, line: int, column: int, encoding: str) -> tuple[int, int]:
        """(line, column in code units) of code-point ``column`` on ``line``, clamped to the text."""
        if line >= len(self._starts):
            return len(self._starts) - 1, _units(self.line(len(self._starts) - 1), encoding)
        line = max(line, 0)
        return line, _units(self.line(line)[: max(column, 0)], encoding)

    def from_client(self, line: int, units: int, encoding: str) -> tuple[int, int]:
        """(line, code-point column) of the position ``units`` code units into ``line``.

        A position inside a character (half of a surrogate pair, part of a
        UTF-8 sequence) falls on that character; one past the end of the line
        on its end.
        """
        if line >= len(self._starts):
            last = len(self._starts) - 1
            return last, len(self.line(last))
        line = max(line, 0)
        text = self.line(line)
        if encoding == UTF32 or text.isascii():
            return line, min(max(units, 0), len(text))
        count = 0
        for column, char in enumerate(text):
            step = _units(char, encoding)
            if count + step > units:
                return line, column
            count += step
        return line, len(text)
