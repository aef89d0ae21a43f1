"""Strict Ed25519 (docs/fairness.md §9, issue 16): the vectors of
verifier/vectors/ed25519_strict.json against verifier.ed25519, and each vector's
``equation_holds`` against an independent implementation of the curve written here
(extended coordinates, its own decoding, modulo p and ignoring the sign of x = 0: a
lenient verifier)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from verifier import ed25519, vectors
from verifier.signing import Signer, verify

DATA: dict[str, Any] = json.loads((Path(vectors.DIR) / "ed25519_strict.json").read_text(encoding="utf-8"))

# --------------------------------------------------------------------------- an independent curve
Q = 2**255 - 19
ORDER = 2**252 + 27742317777372353535851937790883648493
DD = -121665 * pow(121666, Q - 2, Q) % Q
SQRT_M1 = pow(2, (Q - 1) // 4, Q)
BY = 4 * pow(5, Q - 2, Q) % Q


def recover_x(y: int, sign: int) -> int | None:
    xx = (y * y - 1) * pow(DD * y * y + 1, Q - 2, Q) % Q
    x = pow(xx, (Q + 3) // 8, Q)
    if (x * x - xx) % Q:
        x = x * SQRT_M1 % Q
    if (x * x - xx) % Q:
        return None
    return Q - x if x & 1 != sign else x


Ext = tuple[int, int, int, int]


def padd(p: Ext, q: Ext) -> Ext:
    a = (p[1] - p[0]) * (q[1] - q[0]) % Q
    b = (p[1] + p[0]) * (q[1] + q[0]) % Q
    c = 2 * p[3] * q[3] * DD % Q
    d = 2 * p[2] * q[2] % Q
    e, f, g, h = b - a, d - c, d + c, b + a
    return e * f % Q, g * h % Q, f * g % Q, e * h % Q


def mul(s: int, p: Ext) -> Ext:
    out: Ext = (0, 1, 1, 0)
    while s:
        if s & 1:
            out = padd(out, p)
        p = padd(p, p)
        s >>= 1
    return out


def same_point(p: Ext, q: Ext) -> bool:
    return (p[0] * q[2] - q[0] * p[2]) % Q == 0 and (p[1] * q[2] - q[1] * p[2]) % Q == 0


def lenient(raw: bytes) -> Ext | None:
    """y read modulo p; the sign bit ignored when x = 0."""
    n = int.from_bytes(raw, "little")
    y, sign = (n & ((1 << 255) - 1)) % Q, n >> 255
    x = recover_x(y, sign)
    if x is None:
        return None
    return x, y, 1, x * y % Q


B: Ext = (recover_x(BY, 0) or 0, BY, 1, (recover_x(BY, 0) or 0) * BY % Q)


def equation_holds(public: bytes, message: bytes, sig: bytes) -> bool:
    a, r = lenient(public), lenient(sig[:32])
    if a is None or r is None:
        return False
    k = int.from_bytes(hashlib.sha512(sig[:32] + public + message).digest(), "little") % ORDER
    s = int.from_bytes(sig[32:], "little")
    return same_point(mul(s, B), padd(r, mul(k, a)))


# --------------------------------------------------------------------------- the vectors
def test_the_constants_are_the_curves() -> None:
    assert DATA["constants"] == {"p": str(Q), "L": str(ORDER)}
    assert (ed25519.P, ed25519.L, ed25519.D) == (Q, ORDER, DD)
    assert same_point(mul(ORDER, B), (0, 1, 1, 0))  # B has order L


def test_the_eight_small_order_points_are_the_whole_eight_torsion() -> None:
    """§9's list: eight distinct canonical encodings, each of a point with [8]P = O —
    and the 8-torsion of the curve has exactly eight points, so there are no others."""
    listed = [bytes.fromhex(k["public_key"]) for k in DATA["keys"] if k["reason"] == "small_order"]
    assert len(set(listed)) == 8 and set(listed) == ed25519.SMALL_ORDER
    for raw in listed:
        p = lenient(raw)
        assert p is not None and same_point(mul(8, p), (0, 1, 1, 0))
        assert ed25519.encoding_problem(raw) is None


@pytest.mark.parametrize("case", DATA["keys"], ids=lambda c: f"{c['reason']}-{c['public_key'][:8]}")
def test_key_verdicts(case: dict[str, Any]) -> None:
    raw = bytes.fromhex(case["public_key"])
    problem = ed25519.key_problem(raw)
    assert (problem is None) == (case["verdict"] == "accepted"), problem
    words = {"small_order": "small order", "non_canonical": "not canonical", "not_on_curve": "not a point"}
    if case["reason"] in words:
        assert problem is not None and words[case["reason"]] in problem
    if case["reason"] == "non_canonical":  # what a lenient decoder makes of it
        assert ed25519.decode(raw) is None


@pytest.mark.parametrize("case", DATA["signatures"], ids=lambda c: c["reason"])
def test_signature_verdicts_and_their_equation(case: dict[str, Any]) -> None:
    public, message, sig = (bytes.fromhex(case[k]) for k in ("public_key", "message", "signature"))
    assert equation_holds(public, message, sig) is case["equation_holds"]
    try:
        strict = ed25519.verify(ed25519.strict_key(public), sig, message)
    except ValueError:  # the key is not strict
        strict = False
    assert strict is (case["verdict"] == "valid")
    if case["reason"] == "s_not_below_l":
        assert ed25519.signature_problem(sig) is not None and "S" in str(ed25519.signature_problem(sig))
    if case["reason"] == "r_non_canonical":
        assert "R" in str(ed25519.signature_problem(sig))


def test_the_identity_key_and_its_constant_signature_are_refused_everywhere() -> None:
    """The tester's key (issue 16): under it 01 00…00 verifies every message for a
    plain RFC 8032 verifier; the strict one refuses the key, whatever is signed."""
    identity = bytes.fromhex("01" + "00" * 31)
    constant = "01" + "00" * 63
    for obj in ({"any": "thing"}, {"kind": "drop", "seat": 1}):
        assert equation_holds(identity, b"whatever", bytes.fromhex(constant))
        assert verify(identity, "move", obj, constant, "rummy-pf/v2") is False
    with pytest.raises(ValueError, match="small order"):
        ed25519.strict_key(identity)


def test_generated_keys_are_strict_and_sign_strictly() -> None:
    for n in range(20):
        s = Signer.from_seed(hashlib.sha256(f"k{n}".encode()).digest())
        assert ed25519.key_problem(s.public_bytes) is None
        assert verify(s.public_bytes, "head", {"n": n}, s.sign("head", {"n": n}, "rummy-pf/v2"), "rummy-pf/v2")
