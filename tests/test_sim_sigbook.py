"""The simulator's signature book (tests/sim/sigbook.py) skips the curve's equation
only for a signature the world made with that key over that message: it must let
through nothing the curve refuses, and give the verifier the same verdict as the
curve on every transcript, good or tampered."""

from __future__ import annotations

import copy
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from tests.sim.sigbook import BOOK, BookedSigner, booked
from tests.sim.world import World
from verifier import ed25519
from verifier.fairness import PROTOCOL_V2
from verifier.signing import Signer, signed_message, verify
from verifier.transcript import verify_transcript


def _signer(n: int) -> BookedSigner:
    return BookedSigner(Ed25519PrivateKey.from_private_bytes(bytes([n]) * 32))


def test_the_book_lets_through_nothing_the_curve_refuses() -> None:
    a, b = _signer(1), _signer(2)
    sig_a = a.sign("move", {"n": 1})
    sig_b = b.sign("move", {"n": 2})
    real = ed25519.verify
    with booked():
        assert ed25519.verify is not real
        hits = BOOK.hits
        assert verify(a.public_bytes, "move", {"n": 1}, sig_a)
        assert BOOK.hits == hits + 1, "a signature the world made is answered by the book"
        # the same signature over another message, under another key, for another purpose
        assert not verify(a.public_bytes, "move", {"n": 2}, sig_a)
        assert not verify(b.public_bytes, "move", {"n": 1}, sig_a)
        assert not verify(a.public_bytes, "head", {"n": 1}, sig_a)
        assert not verify(a.public_bytes, "move", {"n": 2}, sig_b)
        # S + L: the same point of the equation, not a strict signature (§9)
        raw = bytes.fromhex(sig_a)
        high = raw[:32] + (int.from_bytes(raw[32:], "little") + ed25519.L).to_bytes(32, "little")
        assert not verify(a.public_bytes, "move", {"n": 1}, high.hex())
        # a good signature nobody in the world made goes to the curve, and verifies
        plain = Signer(Ed25519PrivateKey.from_private_bytes(bytes([3]) * 32))
        misses = BOOK.misses
        assert verify(plain.public_bytes, "move", {"n": 3}, plain.sign("move", {"n": 3}))
        assert BOOK.misses == misses + 1
    assert ed25519.verify is real, "the curve is back after the block"
    assert BOOK.holds(a.public_bytes, signed_message("move", {"n": 1}, "rummy-pf/v1"), raw)


def _transcripts() -> tuple[World, list[dict[str, Any]]]:
    w = World(3, tables=3, duration=120_000, fault_rate=0)
    w.run()
    return w, [h.transcript for h in w.store.hands.values() if h.transcript is not None]


def test_the_verifier_gives_the_same_verdict_with_the_book_as_on_the_curve() -> None:
    w, ts = _transcripts()
    assert len(ts) >= 10
    key = w.keys.signer.public_bytes
    t = next(t for t in ts if len(t["log"]) > 5 and t["log"][1]["type"] == "commitments")
    swapped = copy.deepcopy(t)  # seat 0's reveal signed by seat 1's key: both signatures are in the book
    reveals = swapped["log"][2]["reveals"]
    reveals[0]["psig"], reveals[1]["psig"] = reveals[1]["psig"], reveals[0]["psig"]
    moved = copy.deepcopy(t)  # a move's signature, good for another move, under this one
    plays = [r for r in moved["log"] if r["type"] == "action"]
    other = next(r for x in ts if x is not t for r in x["log"] if r["type"] == "action")
    plays[0]["psig"] = {**plays[0]["psig"], "sig": other["psig"]["sig"]}
    for case in (swapped, moved):  # signed again by the server: only the players' signatures are wrong
        del case["signature"]
        case["signature"] = w.keys.signer.sign("transcript", case, PROTOCOL_V2)
    for good, case in ((True, t), (False, swapped), (False, moved)):
        with booked():
            on_book = verify_transcript(case, key)
        with booked(False):
            on_curve = verify_transcript(case, key)
        assert on_book.ok is on_curve.ok is good
        if not good:  # refused where the curve refuses it: at the player's signature
            assert on_book.failure == on_curve.failure
            assert on_book.failure is not None and on_book.failure.check == "player_signatures"
