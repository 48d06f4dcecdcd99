"""Positions of ``cdl lsp``: code-point columns <-> the client's position encoding.

Entry point: :class:`Lines`. The engine, the diagnostics and the navigator
speak of 0-based lines and code-point columns on a line; the Language Server
Protocol speaks of columns in the code units of the encoding negotiated at
initialisation (``positionEncoding``: UTF-16 unless the client offers UTF-8
or UTF-32, LSP 3.17). Lines end at ``\\n`` or ``\\r\\n``, as the XML parser
counts them (a lone ``\\r`` ends no line for libxml2, so none here either: a
column past the end of a line is clamped to its end). :func:`encoded` gives
a buffer's text as the bytes a file holding it would have, for the parser.
"""

from __future__ import annotations

import bisect
import re

#: The encodings a client may offer, as LSP names them.
UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"
ENCODINGS = (UTF8, UTF16, UTF32)

_LINE_END = re.compile(r"\r?\n")


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
        #: Where each line starts and where its content ends (before its line end).
        self._starts = [0]
        self._ends: list[int] = []
        for match in _LINE_END.finditer(text):
            self._ends.append(match.start())
            self._starts.append(match.end())
        self._ends.append(len(text))

    def __len__(self) -> int:
        return len(self._starts)

    def line(self, number: int) -> str:
        """The text of line ``number`` (0-based) without its line end; '' past the end."""
        if not 0 <= number < len(self._starts):
            return ""
        return self.text[self._starts[number] : self._ends[number]]

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

    def offset(self, line: int, column: int) -> int:
        """The index into the text of code-point ``column`` on ``line`` (clamped)."""
        line = min(max(line, 0), len(self._starts) - 1)
        return min(self._starts[line] + max(column, 0), self._ends[line])

    def bounds(self, number: int) -> tuple[int, int]:
        """Where line ``number`` (0-based, within the text) starts and where its
        content ends (before its line end), as indices into the text."""
        return self._starts[number], self._ends[number]

    def position_of(self, offset: int) -> tuple[int, int]:
        """(line, code-point column) of the index ``offset`` into the text."""
        line = bisect.bisect_right(self._starts, offset) - 1
        return line, min(offset, self._ends[line]) - self._starts[line]


_DECLARED = re.compile(r"""\A(?:\ufeff)?<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z][A-Za-z0-9._-]*)["']""")


def encoded(text: str) -> bytes:
    """The bytes a file holding ``text`` would have: in the encoding its XML
    declaration names (a character it cannot hold as a character reference,
    which the parser reads back as that character), UTF-8 when it names none
    or one unknown."""
    declared = _DECLARED.match(text)
    if declared is not None:
        try:
            return text.encode(declared.group(1), "xmlcharrefreplace")
        except (LookupError, UnicodeError):
            pass
    return text.encode("utf-8", "surrogatepass")
