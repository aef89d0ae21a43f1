"""rummy-pf/v1: commitments, the deck derivation and its byte stream.

The byte-exact specification is docs/fairness.md; this module is its reference
implementation.  Only SHA-256 and HMAC-SHA256 are used, so a browser's WebCrypto
reproduces every value.  Integers are big-endian, strings UTF-8, and every variable
field is length-prefixed (``LP``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring
from typing import Any, Final, TypeAlias

PROTOCOL_V1: Final = "rummy-pf/v1"
PROTOCOL_V2: Final = "rummy-pf/v2"
PROTOCOL: Final = PROTOCOL_V1  # the derivation's labels (pcommit, deal) keep "v1" in every version
PROTOCOLS: Final = (PROTOCOL_V1, PROTOCOL_V2)
RULESET: Final = "rummy13/v1"
SEED_BYTES: Final = 32
U32: Final = 1 << 32


# --------------------------------------------------------------------------- encodings
def u32(n: int) -> bytes:
    return n.to_bytes(4, "big")


def u64(n: int) -> bytes:
    return n.to_bytes(8, "big")


def lp(data: bytes | str) -> bytes:
    """``LP(b) = u32be(len(b)) ‖ b``; strings are encoded as UTF-8 first."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return u32(len(raw)) + raw


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def hmac_sha256(key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hashlib.sha256).digest()


#: A canonical JSON encoder: :func:`canonical`, or one proved byte-identical to it
#: (the server's, on data that holds no float by construction).
Encode: TypeAlias = Callable[[Any], bytes]

# json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False), made once.
_CANONICAL: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, check_circular=False)


def _c_encoder() -> Callable[[Any], str]:
    """``_CANONICAL.encode``, with the C encoder it builds on every call built once.

    ``JSONEncoder.encode`` makes a new ``_json.make_encoder`` from its settings for each
    value it encodes (the Python around it costs about 1.5 µs, half a small body's
    encoding); this is the same C encoder, with the same arguments
    (``JSONEncoder.iterencode``'s for these settings: no circular-reference markers,
    ``encode_basestring`` as ``ensure_ascii=False`` picks it, no indent), made once and
    reused, so it writes the same text for every value.  Without the C accelerator
    (another Python), ``_CANONICAL.encode`` itself."""
    try:
        from _json import make_encoder
    except ImportError:  # pragma: no cover - CPython has the accelerator
        return _CANONICAL.encode
    try:
        encoder = make_encoder(None, _CANONICAL.default, encode_basestring, None, ":", ",", True, False, True)
    except TypeError:  # pragma: no cover - another Python's private signature
        return _CANONICAL.encode

    def encode(obj: Any) -> str:
        return "".join(encoder(obj, 0))

    # a Python whose accelerator takes other arguments must not change a byte: checked once
    sample = {"z": [1, -2, True, None, 'é\u2028"\\'], "a": {"b": "", "": [{}]}, "m": 10**30}
    try:
        if encode(sample) != _CANONICAL.encode(sample):  # pragma: no cover
            return _CANONICAL.encode
    except Exception:  # pragma: no cover
        return _CANONICAL.encode
    return encode


_ENCODE: Final = _c_encoder()


def canonical(obj: Any) -> bytes:
    """Canonical JSON: keys sorted, no spaces, UTF-8, integers only (no floats)."""
    _reject_floats(obj)
    return _ENCODE(obj).encode("utf-8")


def canonical_text(obj: Any) -> str:
    """The text of :func:`canonical`, without its float scan: for values already known
    to be JSON data (§2)."""
    return _ENCODE(obj)


_PLAIN = frozenset({str, int, bool, type(None)})  # exactly these types hold nothing to check


def _reject_floats(obj: Any) -> None:
    if type(obj) in _PLAIN:
        return
    if isinstance(obj, float):
        raise ValueError("floats are not allowed in rummy-pf/v1 data")
    if isinstance(obj, dict):
        for k, v in obj.items():
            if type(k) is not str and not isinstance(k, str):
                raise ValueError("object keys must be strings")
            if type(v) not in _PLAIN:
                _reject_floats(v)
    elif isinstance(obj, list | tuple):
        for v in obj:
            if type(v) not in _PLAIN:
                _reject_floats(v)


# --------------------------------------------------------------------------- commitments
def server_commit(server_seed: bytes) -> bytes:
    """``commit_S = SHA-256(server_seed)``."""
    return sha256(server_seed)


def player_commit(seat: int, seed: bytes) -> bytes:
    """``c_i = SHA-256(LP("rummy-pf/v1/pcommit") ‖ u32(seat) ‖ seed_i)``."""
    return sha256(lp(PROTOCOL + "/pcommit") + u32(seat) + seed)


def rules_id(rules: dict[str, int]) -> str:
    """The rules a hand is played under, as one string: SHA-256 hex of the canonical
    JSON ``{"ruleset": "rummy13/v1", "table": {...settings...}}``."""
    return sha256(canonical({"ruleset": RULESET, "table": rules})).hex()


# --------------------------------------------------------------------------- derivation
def transcript_input(table_id: str, hand_no: int, rules_id_: str, seats: Sequence[tuple[int, str, bytes]]) -> bytes:
    """``T = LP("rummy-pf/v1/deal") ‖ LP(table_id) ‖ u64(hand_no) ‖ LP(rules_id) ‖ u32(n)``
    then, for each dealt seat in ascending order, ``u32(seat) ‖ LP(player_id) ‖ LP(seed)``."""
    out = lp(PROTOCOL + "/deal") + lp(table_id) + u64(hand_no) + lp(rules_id_) + u32(len(seats))
    for seat, player_id, seed in sorted(seats):
        out += u32(seat) + lp(player_id) + lp(seed)
    return out


def derive_key(server_seed: bytes, t: bytes) -> bytes:
    """``K = HMAC-SHA256(key = server_seed, msg = T)``."""
    return hmac_sha256(server_seed, t)


class Stream:
    """The byte stream for one label: ``block_j = HMAC-SHA256(K, LP(label) ‖ u64(j))``,
    j = 0, 1, …; bytes are consumed in order."""

    def __init__(self, key: bytes, label: str) -> None:
        self._key = key
        self._prefix = lp(label)
        self._j = 0
        self._buf = b""
        self.blocks_used = 0

    def block(self, j: int) -> bytes:
        return hmac_sha256(self._key, self._prefix + u64(j))

    def read(self, n: int) -> bytes:
        while len(self._buf) < n:
            self._buf += self.block(self._j)
            self._j += 1
            self.blocks_used += 1
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def next_u32(self) -> int:
        """Four fresh bytes, big-endian."""
        return int.from_bytes(self.read(4), "big")

    def uniform(self, n: int) -> int:
        """An unbiased integer in [0, n): ``limit = 2³² − (2³² mod n)``; draw until
        ``u < limit``; return ``u mod n``.  No floats, no fallback value."""
        if not 1 <= n <= U32:
            raise ValueError(f"uniform({n}) is out of range")
        limit = U32 - (U32 % n)
        while True:
            u = self.next_u32()
            if u < limit:
                return u % n


def shuffle(items: Sequence[int], stream: Stream) -> list[int]:
    """Fisher–Yates (Durstenfeld) from the top index down; ``a[0]`` is the top card."""
    a = list(items)
    for i in range(len(a) - 1, 0, -1):
        j = stream.uniform(i + 1)
        a[i], a[j] = a[j], a[i]
    return a


def deal_deck(key: bytes, pack_size: int) -> list[int]:
    """The deal: the pack in id order, shuffled with label ``"deal"``."""
    return shuffle(range(pack_size), Stream(key, "deal"))


def reshuffle_cards(key: bytes, k: int, cards: Sequence[int]) -> list[int]:
    """Reshuffle number k (RULES.md D17): the cards (open pile but its top) sorted by
    id, shuffled with label ``"reshuffle/k"``; the result is the new closed pile."""
    return shuffle(sorted(cards), Stream(key, f"reshuffle/{k}"))


def reshuffler(key: bytes) -> Callable[[int, list[int]], list[int]]:
    """The state machine's reshuffle hook for a hand with key ``K``."""

    def reshuffle(k: int, cards: list[int]) -> list[int]:
        return reshuffle_cards(key, k, cards)

    return reshuffle
