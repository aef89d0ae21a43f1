"""A hand's records as the recorder holds them while the hand is played.

A record as a dict of dicts and strings costs about five times its canonical JSON
(3.2 KB against 600 bytes for an action record, tracemalloc), and a table holds the
records of its hand in progress for as long as the hand lasts: a room of 333 tables
held about half a hand's records each, the first minutes' rise of a server's memory
(docs/benchmarks.md, "What the first minutes of the memory run hold").

:class:`RecordLog` keeps the records that are read again and again as they were
appended — the first :data:`KEPT_AS_MADE` (the header, the commitments, the reveals,
the deal) and the newest — and every other record as its canonical JSON (the text
its chain link is hashed from, with the link), in one buffer per hand.  Reading such
a record back decodes it: a new dict, equal to the one appended (as canonical JSON: a
tuple comes back as a list).  A record's text is what the hand stores and publishes,
so nothing is lost.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, overload

from verifier.fairness import Encode, canonical

#: records kept as they were made: the header, the commitments, the reveals, the deal
KEPT_AS_MADE: Final = 4

Decode = Callable[[bytearray], Any]  # json.loads, orjson.loads: both take a bytearray


class RecordLog(Sequence[dict[str, Any]]):
    """The records of one hand, in order (see the module's docstring).  The texts are
    appended to one buffer per hand (``_text``, record i's from ``_at[i - KEPT_AS_MADE]``
    on): one growing allocation, freed with the hand, where a text object per record
    (600 bytes, beyond the interpreter's small-object allocator) scattered long-lived
    chunks over the C heap between the short-lived pushes and kept its pages from being
    given back (a server held more, not less, that way: docs/benchmarks.md)."""

    __slots__ = ("_at", "_decode", "_encode", "_items", "_text")

    def __init__(self, encode: Encode = canonical, decode: Decode = json.loads) -> None:
        self._items: list[dict[str, Any] | None] = []  # None: held as text
        self._text = bytearray()
        self._at = array("Q")
        self._encode = encode
        self._decode = decode

    def append(self, record: dict[str, Any]) -> None:
        items = self._items
        if len(items) > KEPT_AS_MADE:
            last = items[-1]
            if last is not None:
                self._at.append(len(self._text))
                self._text += self._encode(last)
                items[-1] = None
        items.append(record)

    def pop(self) -> dict[str, Any]:
        """The newest record, taken off; the one before it becomes the newest and is
        held as a dict again."""
        record = self[-1]
        del self._items[-1]
        if self._items and self._items[-1] is None:
            self._items[-1] = self._read(len(self._items) - 1)
            del self._text[self._at.pop() :]
        return record

    def _read(self, i: int) -> dict[str, Any]:
        k = i - KEPT_AS_MADE
        at = self._at
        end = at[k + 1] if k + 1 < len(at) else len(self._text)
        record = self._decode(self._text[at[k] : end])  # one copy, the slice
        if not isinstance(record, dict):
            raise TypeError("a record's text does not decode to a JSON object")
        return record

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            return [self[n] for n in range(len(self._items))[i]]
        r = self._items[i]
        if r is not None:
            return r
        return self._read(i if i >= 0 else i + len(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i, r in enumerate(self._items):
            yield r if r is not None else self._read(i)

    def __eq__(self, other: object) -> bool:
        """The same records, as canonical JSON, as another log or a list of records."""
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)) or len(other) != len(self):
            return False
        try:
            return all(canonical(a) == canonical(b) for a, b in zip(self, other, strict=True))
        except (TypeError, ValueError):
            return False

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RecordLog({list(self)!r})"

    def held_as_text(self) -> list[int]:
        """The numbers of the records held as their canonical JSON."""
        return [i for i, r in enumerate(self._items) if r is None]
