"""The server's libsodium Ed25519 (service.fastsig): the same signatures as the
verifier's Signer, and the verifier's verdicts on every player signature the
recorder checks — libsodium's acceptance is never wider, and where it refuses, the
strict check decides."""

from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from service.fastjson import canonical as fast_canonical
from service.fastsig import SodiumSigner, accepts
from verifier import ed25519, vectors
from verifier.chain import move_body
from verifier.errors import RuleError
from verifier.fairness import PROTOCOL_V2
from verifier.hand import TableRules
from verifier.record import HandRecorder
from verifier.signing import Signer, signed_message

STRICT: dict[str, Any] = json.loads((Path(vectors.DIR) / "ed25519_strict.json").read_text(encoding="utf-8"))
L = ed25519.L


def test_signatures_are_the_verifiers_byte_for_byte() -> None:
    for n in range(40):
        seed = hashlib.sha256(b"fastsig %d" % n).digest()
        plain, fast = Signer.from_seed(seed), SodiumSigner(seed)
        assert fast.public_bytes == plain.public_bytes
        message = secrets.token_bytes(n * 7)
        assert fast.sign_bytes(message) == plain.sign_bytes(message)
        obj = {"n": n, "text": "é" * n, "list": list(range(n))}
        assert fast.sign("head", obj, PROTOCOL_V2) == plain.sign("head", obj, PROTOCOL_V2)


@pytest.mark.parametrize("case", STRICT["signatures"], ids=lambda c: c["how"][:40])
def test_libsodium_accepts_no_vector_the_strict_check_refuses(case: dict[str, Any]) -> None:
    key = bytes.fromhex(case["public_key"])
    strict = ed25519.key_problem(key) is None and ed25519.verify_hex(
        ed25519.strict_key(key), case["signature"], bytes.fromhex(case["message"])
    )
    assert strict == (case["verdict"] == "valid")
    if accepts(key, case["signature"], bytes.fromhex(case["message"])):
        assert strict


def _identity_r_signature(seed: bytes, message: bytes) -> str:
    """A signature with R the identity (small order) that satisfies the cofactorless
    equation: S = k·a, so [S]B = [k]A = R + [k]A.  The signer knows its scalar a."""
    h = hashlib.sha512(seed).digest()
    a = int.from_bytes(h[:32], "little")
    a &= (1 << 254) - 8
    a |= 1 << 254
    r = (1).to_bytes(32, "little")  # the identity (0, 1)
    public = Signer.from_seed(seed).public_bytes
    k = int.from_bytes(hashlib.sha512(r + public + message).digest(), "little") % L
    return (r + (k * a % L).to_bytes(32, "little")).hex()


def test_a_small_order_r_is_refused_by_libsodium_and_decided_by_the_strict_check() -> None:
    seed = hashlib.sha256(b"identity R").digest()
    message = b"a move"
    public = Signer.from_seed(seed).public_bytes
    sig = _identity_r_signature(seed, message)
    assert not accepts(public, sig, message)  # libsodium refuses a small-order R
    strict = ed25519.verify_hex(ed25519.strict_key(public), sig, message)
    # The recorder's verdict is the strict check's, whatever it is (OpenSSL's equation).
    rec = _recorder(seed)
    move = {"kind": "commit", "seat": 0, "commit": "00" * 32}
    prev = str(rec.records[0]["h"])
    body = move_body(rec.table_id, rec.hand_no, prev, move)
    crafted = _identity_r_signature(seed, signed_message("move", body, PROTOCOL_V2, fast_canonical))
    assert (
        ed25519.verify_hex(
            ed25519.strict_key(public), crafted, signed_message("move", body, PROTOCOL_V2, fast_canonical)
        )
        == strict
    )
    plain = _recorder(seed, fast=False)
    for r in (rec, plain):
        try:
            r.check_commit(0, bytes(32), crafted)
        except RuleError as e:
            assert e.code == "bad_signature"
            got = False
        else:
            got = True
        assert got == strict


def _recorder(seed: bytes, *, fast: bool = True) -> HandRecorder:
    server = Signer.from_seed(hashlib.sha256(b"server").digest(), fast_canonical)
    other = Signer.from_seed(hashlib.sha256(b"other").digest())
    rec = HandRecorder(
        signer=server,
        table_id="t1",
        hand_no=1,
        rules=TableRules(seats=4, min_players=2),
        seats=[(0, "p0", Signer.from_seed(seed).public_bytes), (1, "p1", other.public_bytes)],
        dealer=0,
        server_seed=bytes(32),
        encode=fast_canonical,
        accepts=accepts if fast else None,
    )
    rec.open(0)
    return rec


def _verdict(rec: HandRecorder, seat: int, commit: bytes, sig: Any) -> str:
    try:
        rec.check_commit(seat, commit, sig)
    except RuleError as e:
        return e.code
    return "accepted"


def test_the_recorder_accepts_and_refuses_as_the_strict_check_does() -> None:
    seed = hashlib.sha256(b"player").digest()
    player = Signer.from_seed(seed, fast_canonical)
    commit = bytes.fromhex("11" * 32)
    rec = _recorder(seed)
    prev = str(rec.records[0]["h"])
    move = {"kind": "commit", "seat": 0, "commit": commit.hex()}
    good = player.sign("move", move_body(rec.table_id, rec.hand_no, prev, move), PROTOCOL_V2)
    s = int.from_bytes(bytes.fromhex(good[64:]), "little")
    cases = {
        "good": (0, commit, good, "accepted"),
        "upper-case hex of the same bytes": (0, commit, good.upper(), "accepted"),
        "a flipped digit": (0, commit, good[:10] + ("0" if good[10] != "0" else "1") + good[11:], "bad_signature"),
        "S + L (§9: S < L)": (0, commit, good[:64] + (s + L).to_bytes(32, "little").hex(), "bad_signature"),
        "not hex": (0, commit, "zz" * 64, "bad_signature"),
        "short": (0, commit, good[:-2], "bad_signature"),
        "not a string": (0, commit, 7, "bad_signature"),
        "another move": (0, bytes.fromhex("22" * 32), good, "bad_signature"),
        "another seat's key": (1, commit, good, "bad_signature"),
    }
    for name, (seat, c, sig, want) in cases.items():
        fast, plain = _verdict(_recorder(seed), seat, c, sig), _verdict(_recorder(seed, fast=False), seat, c, sig)
        assert (name, fast) == (name, plain) == (name, want)
