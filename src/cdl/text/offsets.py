"""Offsets into a text that an edit moves: where the lines of
``text.lines`` start and end, kept as an editor changes the text.

Entry point: :class:`Offsets`, a sorted sequence of integers in chunks. An
edit replaces the offsets it reaches and moves every later one by the same
amount; the later ones are moved by one number per chunk instead of one per
offset, and the chunks an edit does not reach are shared with the sequence
before it (which stays as it was: an analysis may still read it).
"""

from __future__ import annotations

import array
import bisect
import itertools
from collections.abc import Iterable, Iterator, Sequence

#: Offsets per chunk: an edit rewrites the one or two chunks it reaches and
#: moves the others by one number each.
CHUNK = 2048


class Offsets:
    """A non-decreasing sequence of offsets, in chunks, each chunk's values
    stored less its shift. Never modified: :meth:`spliced` makes another."""

    __slots__ = ("_chunk", "_chunks", "_shifts", "_counts", "_firsts")

    def __init__(self, values: Iterable[int] = (), chunk: int | None = None) -> None:
        data = values if isinstance(values, array.array) else array.array("q", values)
        chunk = self._chunk = CHUNK if chunk is None else chunk
        self._set([data[i : i + chunk] for i in range(0, len(data), chunk)], [0] * -(-len(data) // chunk))

    def _set(self, chunks: list[array.array[int]], shifts: list[int]) -> None:
        self._chunks, self._shifts = chunks, shifts
        #: The index of each chunk's first offset (and the length, last).
        self._counts = list(itertools.accumulate((len(c) for c in chunks), initial=0))
        #: Each chunk's first offset, for finding the chunk of an offset.
        self._firsts = [c[0] + s for c, s in zip(chunks, shifts)]

    def __len__(self) -> int:
        return self._counts[-1]

    def __getitem__(self, index: int) -> int:
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("offset index out of range")
        c = bisect.bisect_right(self._counts, index) - 1
        return self._chunks[c][index - self._counts[c]] + self._shifts[c]

    def __iter__(self) -> Iterator[int]:
        for chunk, shift in zip(self._chunks, self._shifts):
            yield from (value + shift for value in chunk)

    def __repr__(self) -> str:
        return f"<Offsets: {len(self)} in {len(self._chunks)} chunks>"

    def bisect_right(self, value: int) -> int:
        """How many offsets are at or before ``value`` (as ``bisect.bisect_right``)."""
        c = bisect.bisect_right(self._firsts, value) - 1
        if c < 0:
            return 0
        return self._counts[c] + bisect.bisect_right(self._chunks[c], value - self._shifts[c])

    def spliced(self, low: int, high: int, values: Sequence[int], shift: int) -> Offsets:
        """These offsets with those from index ``low`` up to ``high`` replaced
        by ``values``, and those from ``high`` on moved by ``shift``: only the
        chunks holding ``low`` and ``high`` are written again."""
        size = len(self)
        low, high = min(max(low, 0), size), min(max(high, low, 0), size)
        chunks, shifts, counts = self._chunks, self._shifts, self._counts
        first = bisect.bisect_right(counts, low) - 1 if low < size else len(chunks)
        last = bisect.bisect_right(counts, high) - 1 if high < size else len(chunks)
        middle = array.array("q")
        if first < len(chunks):
            middle.extend(v + shifts[first] for v in chunks[first][: low - counts[first]])
        middle.extend(values)
        if last < len(chunks):
            moved = shifts[last] + shift
            middle.extend(v + moved for v in chunks[last][high - counts[last] :])
        step = self._chunk
        # A middle within two chunks' length stays one chunk; a longer one (a
        # paste of many lines) is cut as the constructor cuts.
        pieces = [middle] if len(middle) <= 2 * step else [middle[i : i + step] for i in range(0, len(middle), step)]
        pieces = [piece for piece in pieces if piece]
        edited = Offsets.__new__(Offsets)
        edited._chunk = step
        edited._set(
            chunks[:first] + pieces + chunks[last + 1 :],
            shifts[:first] + [0] * len(pieces) + [s + shift for s in shifts[last + 1 :]],
        )
        return edited
