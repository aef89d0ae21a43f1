"""The simulator's signature book: real Ed25519 signatures, checked once.

Every signature in a simulated world is a real Ed25519 signature, made by a real
private key (the players' moves with :class:`BookedSigner`, the server's headers,
commitments, heads and transcripts with the server's :class:`BookedSigner`).  The
book remembers, for each signature the world made, the SHA-256 of the public key and
the exact message it signed.  While :func:`booked` is active, ``verifier.ed25519``'s
``verify`` answers a signature the book holds *for that key and that message* with
what the curve would answer (True: a signature made by the key over the message
verifies, RFC 8032), after the same strict checks of its encoding; anything else —
another message, another key, a signature nobody in the world made, one the book has
forgotten — goes to the curve as ever.  So the core's checks of the players'
signatures and ``verify_transcript`` run every line of their code on every
signature; only the curve's equation is skipped for a signature known to be good,
and a wrong one is never let through (a forged, altered or misplaced signature is not
in the book under that key and message, and the curve refuses it).

The equation costs about 0.2 ms a signature; a hand has about twenty checks (the
core's, then the verifier's over the transcript), which was a third of the
simulator's CPU time.  :func:`booked` can be switched off for a run
(``World(real_curve_every=...)`` verifies a sample of transcripts on the curve alone).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from verifier import ed25519
from verifier.fairness import PROTOCOL_V1
from verifier.signing import Signer, signed_message

_real_verify = ed25519.verify


class SignatureBook:
    """signature -> SHA-256(public key ‖ message), for the signatures a world made;
    at most ``limit`` of them (the oldest half is forgotten when full: a forgotten
    signature is checked on the curve)."""

    def __init__(self, limit: int = 200_000) -> None:
        self.limit = limit
        self.entries: dict[bytes, bytes] = {}
        self.hits = 0
        self.misses = 0

    def add(self, public: bytes, message: bytes, sig: bytes) -> None:
        if len(self.entries) >= self.limit:
            for k in list(self.entries)[: self.limit // 2]:
                del self.entries[k]
        self.entries[sig] = hashlib.sha256(public + message).digest()

    def holds(self, public: bytes, message: bytes, sig: bytes) -> bool:
        want = self.entries.get(sig)
        return want is not None and want == hashlib.sha256(public + message).digest()


BOOK = SignatureBook()


class BookedSigner(Signer):
    """A :class:`Signer` (a real Ed25519 key) that writes each signature in the book."""

    def __init__(self, private_key: Ed25519PrivateKey, book: SignatureBook = BOOK) -> None:
        super().__init__(private_key)
        self.book = book

    def sign(self, purpose: str, obj: Any, protocol: str = PROTOCOL_V1) -> str:
        message = signed_message(purpose, obj, protocol)
        sig = self._key.sign(message)
        self.book.add(self.public_bytes, message, sig)
        return sig.hex()


def _booked_verify(key: Ed25519PublicKey, sig: bytes, message: bytes) -> bool:
    if BOOK.holds(key.public_bytes_raw(), message, sig):
        BOOK.hits += 1
        # a signature made by this key over this message: the curve would say yes; the
        # strict encoding rules are checked all the same
        return ed25519.signature_problem(sig) is None
    BOOK.misses += 1
    return _real_verify(key, sig, message)


@contextmanager
def booked(on: bool = True) -> Iterator[None]:
    """``verifier.ed25519.verify`` answers from the book inside the block (``on``), or
    checks every signature on the curve (not ``on``); restored afterwards."""
    before = ed25519.verify
    ed25519.verify = _booked_verify if on else _real_verify
    try:
        yield
    finally:
        ed25519.verify = before
