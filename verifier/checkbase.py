"""What every check of docs/fairness.md §14 shares: the context one verification
carries from check to check (:class:`Ctx`), how a check fails (:class:`Fail`) or is
skipped (:class:`Skip`), JSON equality, and strict signatures (§9).

The checks themselves are in :mod:`verifier.checks` and, for the evidence a player
keeps (§15), :mod:`verifier.evidence`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final, NoReturn

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from verifier import ed25519
from verifier.encoding import record_texts
from verifier.fairness import PROTOCOL_V1, PROTOCOL_V2, canonical_text, lp
from verifier.hand import Event, HandState
from verifier.schema import Shape

KEY_URL_HINT: Final = "GET /api/fairness/key gives the key (public_key_hex)"


class Fail(Exception):
    """A discrepancy; the runner names it after the check that raised it."""

    def __init__(self, message: str, record: int | None = None, expected: Any = None, found: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.record = record
        self.expected = expected
        self.found = found


@dataclass(frozen=True)
class Skip:
    """The check cannot apply (§14: reported as skipped, never as passed)."""

    reason: str


def fail(message: str, record: int | None = None, expected: Any = None, found: Any = None) -> NoReturn:
    raise Fail(message, record, expected, found)


@dataclass
class Ctx:
    """One verification: the transcript, what the user gave, and what each check
    established for the checks after it."""

    t: Any
    pinned: bytes | None = None
    evidence: Any = None
    allow_v1: bool = False  # §14 format: rummy-pf/v1 only when the user asks (--allow-v1)
    # one transcript of a directory: evidence without an item for it is skipped (unless
    # the hand seats the evidence's own key, §14)
    in_folder: bool = False
    parsed: bool = False  # t is what verifier.strictjson.parse returned: JSON data by construction (§2)
    summary: dict[str, Any] = field(default_factory=dict)
    # format
    shape: Shape | None = None
    public: bytes = b""
    # deck
    key: bytes | None = None
    deck: list[int] | None = None
    start: HandState | None = None
    deal_events: list[Event] = field(default_factory=list)
    # replay: the events the rules make for each replayed record, and the state after
    expected: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    state: HandState | None = None
    after: dict[int, HandState] = field(default_factory=dict)  # the state after each replayed record (3, 4, …)
    # signature, chain: the canonical text of each record, encoded once (verifier.encoding)
    texts: list[str] | None = None
    # evidence: (item number, seat, the key the player's item names, the key the header lists) — §15 rule 4
    key_claims: list[tuple[int, int, str, str | None]] = field(default_factory=list)

    @property
    def s(self) -> Shape:
        assert self.shape is not None, "format runs first"
        return self.shape

    @property
    def v2(self) -> bool:
        return isinstance(self.t, dict) and self.t.get("protocol") == PROTOCOL_V2

    @property
    def protocol(self) -> str:
        return PROTOCOL_V2 if self.v2 else PROTOCOL_V1

    def h(self, i: int) -> str:
        return str(self.s.log[i]["h"])

    def record_texts(self) -> list[str]:
        """``canonical(record)`` of each record, as text (after ``format``)."""
        if self.texts is None:
            self.texts = record_texts(self.s.log)
        return self.texts


def canon(x: Any) -> bytes:
    """``canonical(x)`` (§1) for values ``format`` has already found to be JSON data
    (so the float scan of :func:`verifier.fairness.canonical` is not repeated)."""
    return canonical_text(x).encode("utf-8")


_LEAVES: Final = frozenset({str, int, bool, type(None)})  # compared by ==, once their types are the same


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values: ``true`` is not ``1``, ``[1]`` is not ``{"0": 1}``.  (The
    members and items that are strings, integers, booleans or null are compared in
    place: what a call of ``same`` on them would do, without the call.)"""
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is dict:
        if len(a) != len(b):
            return False
        for k, v in a.items():
            if k not in b:
                return False
            w = b[k]
            tv = type(v)
            if tv is not type(w) or (v != w if tv in _LEAVES else not same(v, w)):
                return False
        return True
    if ta is list:
        if len(a) != len(b):
            return False
        for x, y in zip(a, b, strict=True):
            tx = type(x)
            if tx is not type(y) or (x != y if tx in _LEAVES else not same(x, y)):
                return False
        return True
    return bool(a == b)


@lru_cache(maxsize=64)
def domain(protocol: str, purpose: str) -> bytes:
    """``LP(protocol/purpose)``, what every signed message of that purpose begins with (§9)."""
    return lp(f"{protocol}/{purpose}")


def signature_ok(key: Ed25519PublicKey, protocol: str, purpose: str, obj: Any, sig_hex: str) -> bool:
    """§9: ``Ed25519(P, LP(protocol/purpose) ‖ canonical(x))``, strictly (``S < L``,
    ``R`` canonical)."""
    return text_signature_ok(key, protocol, purpose, canonical_text(obj), sig_hex)


def text_signature_ok(key: Ed25519PublicKey, protocol: str, purpose: str, text: str, sig_hex: str) -> bool:
    """:func:`signature_ok` of the object whose canonical text is ``text``.  A text
    holding a lone surrogate (JSON's ``"\\ud800"`` reads as one) has no UTF-8 bytes, so
    nobody signed it: not signed, never an exception (found by the evidence fuzz)."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return ed25519.verify_hex(key, sig_hex, domain(protocol, purpose) + data)


def public_key(raw: bytes, what: str, record: int | None = None) -> Ed25519PublicKey:
    """A strict Ed25519 key (§9), or a failure naming it."""
    try:
        return ed25519.strict_key(raw)
    except ValueError as e:
        fail(f"{what} is not a strict Ed25519 public key: {e}", record, "a strict Ed25519 key", raw.hex())
