"""A hand's records as the recorder holds them while the hand is played.

A record as a dict of dicts and strings costs about five times its canonical JSON
(3.2 KB against 600 bytes for an action record, tracemalloc), and a table holds the
records of its hand in progress for as long as the hand lasts: a room of 333 tables
held about half a hand's records each, the first minutes' rise of a server's memory
(docs/benchmarks.md, "What the first minutes of the memory run hold").

:class:`RecordLog` keeps only the newest record as it was appended (it is read again
and again: its link, its time, the head of the next move).  Every older one is held as
its canonical JSON (the text its chain link is hashed from, with the link), *packed*.
Reading such a record back unpacks and decodes it: a new dict, equal to the one
appended (as canonical JSON: a tuple comes back as a list).

Packing (:func:`pack`, :func:`unpack`) is a substitution that loses nothing: canonical
JSON never holds a raw control byte (it escapes them, and has no whitespace), so the
bytes 0x01–0x1f are free to stand for what recurs in every record — a quoted 64- or
128-digit lowercase hex string (a link, a signature) becomes one byte and its 32 or 64
raw bytes, and each of :data:`FRAGMENTS` (the literal runs that recur most in played
hands) one byte.  Unpacking puts back exactly the text packed, whatever the table
holds; the table only decides how much is saved: an action record packs to about a
third of its text.  A text that does hold a control byte (an encoder other than
canonical JSON) is not packed: that record stays as it was made.

A record stored elsewhere may also be *forgotten* (:meth:`RecordLog.forget`): the
server's tables forget their action records once they are in the database, keeping the
first :data:`FIRST_KEPT` (header, commitments, reveals, deal) and the newest few, and
read the others back when a player's join asks for them (:meth:`RecordLog.fill`, after
the recorder has checked their chain) or, as text, when the hand ends
(:meth:`HandRecorder.transcript_text`, which holds none of them again).  Held for a hand's lifetime, even
packed, they were about 11 KB a table on average (2 MB a worker at 2,000 seats by
tracemalloc; docs/benchmarks.md, "The records of a hand in progress forgotten once
stored", which also says why the server's RSS did not fall with them).  Reading a
forgotten record raises :class:`Forgotten`: nothing is ever made from part of a log.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, overload

from verifier.fairness import Encode, canonical

Decode = Callable[[bytes], Any]  # json.loads, orjson.loads

#: what recurs in the canonical JSON of a hand's records, longest first: the literal runs
#: between numbers and hex strings that took the most bytes in the records of 24 hands
#: played by vectors.play_hand at 4, 6 and 8 seats (and the by-clock twins of the first two)
FRAGMENTS: Final = (
    b'},"events":[{"data":{"by_clock":false,"source":"closed"},"kind":"draw","private":{"card":',
    b'},"events":[{"data":{"by_clock":true,"source":"closed"},"kind":"draw","private":{"card":',
    b']],"valid":true},"kind":"declare","private":{"finish":',
    b',"source":"open"},"kind":"draw","private":{},"seat":',
    b'},"events":[{"data":{"by_clock":false,"card":',
    b'},"events":[{"data":{"by_clock":true,"card":',
    b'{"action":{"kind":"draw_closed","seat":',
    b'},"kind":"discard","private":{},"seat":',
    b'{"action":{"kind":"draw_open","seat":',
    b'},{"data":{"phase":"draw","turn_no":',
    b'},"kind":"hand","private":{"cards":[',
    b'},"kind":"turn","private":{},"seat":',
    b'{"action":{"kind":"drop","seat":',
    b',"status":"revealed"},{"psig":',
    b',"kind":"discard","seat":',
    b'},{"data":{"count":',
    b'{"action":{"card":',
    b',"type":"action"}',
    b',"psig":{"prev":',
    b'":{"groups":[[',
    b']],"loose":[',
    b'],"points":',
    b'},"seat":',
    b',"seat":',
    b'}],"h":',
    b',"sig":',
    b'},"t":',
    b',"i":',
)
_LINK, _SIGNATURE = b"\x01", b"\x02"  # a quoted hex string of 32 and of 64 bytes
_MARKS: Final = tuple(bytes([3 + n]) for n in range(len(FRAGMENTS)))
assert 3 + len(FRAGMENTS) <= 0x20 and all(len(f) > 2 for f in FRAGMENTS)
_PAIRS: Final = tuple(zip(FRAGMENTS, _MARKS, strict=True))
_BY_MARK: Final = {m[0]: f for f, m in _PAIRS}
_CONTROL = re.compile(rb"[\x00-\x1f]")
_HEX = re.compile(rb'"([0-9a-f]{64}|[0-9a-f]{128})"')
_PACKED = re.compile(rb"\x01(.{32})|\x02(.{64})|([\x03-\x1f])", re.DOTALL)


def _raw(m: re.Match[bytes]) -> bytes:
    digits = m[1]
    return (_LINK if len(digits) == 64 else _SIGNATURE) + bytes.fromhex(digits.decode())


def _text(m: re.Match[bytes]) -> bytes:
    raw = m[1] if m[1] is not None else m[2]
    if raw is not None:
        return b'"' + raw.hex().encode() + b'"'
    return _BY_MARK[m[3][0]]


def pack(text: bytes) -> bytes | None:
    """``text`` (canonical JSON) packed, or None if it holds a control byte and cannot be."""
    if _CONTROL.search(text):
        return None
    for fragment, mark in _PAIRS:
        text = text.replace(fragment, mark)
    return _HEX.sub(_raw, text)


def unpack(packed: bytes | bytearray) -> bytes:
    """The text :func:`pack` was given."""
    return _PACKED.sub(_text, packed)


#: a packed text is held in pieces of at most this many bytes, each a ``bytes`` object the
#: interpreter's small-object allocator takes (512 bytes at most, with its header)
PIECE: Final = 448

Held = dict[str, Any] | bytes | tuple[bytes, ...] | None  # as made, packed (in pieces), or forgotten

#: the records never forgotten: header, commitments, reveals, deal (each is read while
#: the hand is played)
FIRST_KEPT: Final = 4


class Forgotten(LookupError):
    """A record the log has forgotten (it is in the store): read it back first."""


def _held(packed: bytes) -> bytes | tuple[bytes, ...]:
    if len(packed) <= PIECE:
        return packed
    return tuple(packed[k : k + PIECE] for k in range(0, len(packed), PIECE))


class RecordLog(Sequence[dict[str, Any]]):
    """The records of one hand, in order (see the module's docstring).  Each older
    record's packed text is a ``bytes`` object of its own (an action record's is about
    160 bytes; a longer text is cut into pieces of :data:`PIECE` bytes): objects the
    interpreter's small-object allocator keeps in its pools of like-sized blocks.
    Unpacked, a record's text is beyond that allocator (600 bytes), and held for a
    hand's lifetime such texts scattered long-lived chunks over the C heap between the
    short-lived pushes and replies (docs/benchmarks.md: a server held more, not less,
    that way).  One growing buffer a hand, packed, did as well as these pieces."""

    __slots__ = ("_decode", "_encode", "_forgotten", "_items", "_links")

    def __init__(self, encode: Encode = canonical, decode: Decode = json.loads) -> None:
        self._items: list[Held] = []
        self._links: dict[str, int] = {}  # each record's ``h`` → its number, forgotten records' too
        self._encode = encode
        self._decode = decode
        self._forgotten = 0  # records FIRST_KEPT … FIRST_KEPT + this - 1 are forgotten

    @property
    def forgotten(self) -> range:
        """The numbers of the records forgotten (an empty range when none is)."""
        return range(FIRST_KEPT, FIRST_KEPT + self._forgotten)

    def forget(self, stop: int) -> None:
        """Forget the records numbered from :data:`FIRST_KEPT` up to ``stop``
        (excluded); never the newest.  The caller knows they are stored."""
        items = self._items
        stop = min(stop, len(items) - 1)
        for k in range(FIRST_KEPT + self._forgotten, stop):
            items[k] = None
        self._forgotten = max(self._forgotten, stop - FIRST_KEPT)

    def fill(self, records: Sequence[dict[str, Any]]) -> None:
        """Hold again the records :attr:`forgotten` names, in order (the caller has
        checked they are those records: their chain, :meth:`HandRecorder.fill`)."""
        gone = self.forgotten
        if len(records) != len(gone):
            raise ValueError(f"{len(gone)} records were forgotten; {len(records)} came back")
        for k, record in zip(gone, records, strict=True):
            packed = pack(self._encode(record))
            self._items[k] = dict(record) if packed is None else _held(packed)
        self._forgotten = 0

    def get(self, i: int) -> dict[str, Any] | None:
        """Record ``i``, or None when it is forgotten or beyond the log."""
        if not -len(self._items) <= i < len(self._items) or self._items[i] is None:
            return None
        return self._read(self._items[i])

    def index_of(self, h: object) -> int | None:
        """The number of the record whose chain link is ``h`` (a forgotten one too), or
        None: a table judges only a move signed over a record of its log (§15)."""
        return self._links.get(h) if isinstance(h, str) else None

    def append(self, record: dict[str, Any]) -> None:
        items = self._items
        link = record.get("h")
        if isinstance(link, str):
            self._links.setdefault(link, len(items))
        if items:
            last = items[-1]
            if type(last) is dict:
                packed = pack(self._encode(last))
                if packed is not None:
                    items[-1] = _held(packed)
        items.append(record)

    def pop(self) -> dict[str, Any]:
        """The newest record, taken off; the one before it becomes the newest and is
        held as a dict again (not when it is forgotten: :class:`Forgotten`)."""
        items = self._items
        if len(items) > 1 and items[-2] is None:
            raise Forgotten("the record before the newest is forgotten: it cannot become the newest")
        record = self[-1]
        del items[-1]
        link = record.get("h")
        if isinstance(link, str) and self._links.get(link) == len(items):
            del self._links[link]
        if items and type(items[-1]) is not dict:
            items[-1] = self._read(items[-1])
        return record

    def _read(self, held: Held) -> dict[str, Any]:
        if held is None:
            raise Forgotten(f"records {self.forgotten.start}–{self.forgotten.stop - 1} are forgotten: read them back")
        if isinstance(held, dict):
            return held
        packed = held if isinstance(held, bytes) else b"".join(held)
        record = self._decode(unpack(packed))
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
        return self._read(self._items[i])

    def __len__(self) -> int:
        return len(self._items)

    def newest(self) -> dict[str, Any] | None:
        """The newest record (always held as a dict), or None while the log is empty:
        ``self[-1]`` without the sequence protocol's checks, for the phase the table
        asks of its hand many times an action."""
        items = self._items
        if not items:
            return None
        held = items[-1]
        return held if type(held) is dict else self._read(held)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for held in self._items:
            yield self._read(held)

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
        return f"RecordLog({[None if h is None else self._read(h) for h in self._items]!r})"

    def held_as_text(self) -> list[int]:
        """The numbers of the records held as their packed canonical JSON."""
        return [i for i, r in enumerate(self._items) if r is not None and type(r) is not dict]

    def packed_bytes(self) -> int:
        """The bytes of packed text held."""
        n = 0
        for held in self._items:
            if isinstance(held, bytes):
                n += len(held)
            elif isinstance(held, tuple):
                n += sum(len(piece) for piece in held)
        return n
