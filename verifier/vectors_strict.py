"""The strict Ed25519 vectors (``verifier/vectors/ed25519_strict.json``,
docs/fairness.md §9): the keys and signatures plain RFC 8032 verification may accept
and a rummy-pf verifier refuses, each with its verdict and how it was made.

Two signatures need the signer's secret scalar ``a`` (``A = [a]B``): with ``R`` the
identity point and ``S = k·a mod L``, ``k = SHA-512(R ‖ A ‖ M) mod L``, the equation
``[S]B = R + [k]A`` holds; written with a non-canonical ``R`` (``y = p + 1``, or the
sign bit set on ``x = 0``) it still holds for a verifier that reads ``y`` modulo ``p``
or ignores that sign bit.  The scalar is the vectors' test key's, which is public.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

from verifier.ed25519 import SMALL_ORDER, L, P
from verifier.signing import Signer

MESSAGE: Final = b"rummy-pf/v2 strict Ed25519 vector"
CHECKED_BY: Final = [
    "tests/test_ed25519.py (verifier.ed25519; the equation by an independent pure-Python implementation)",
    "the browser verifier's tests (service/web/rummypf)",
]


def scalar_of(signer: Signer) -> int:
    """RFC 8032 §5.1.5: the secret scalar, from the first half of SHA-512(seed), clamped."""
    h = bytearray(hashlib.sha512(signer.private_bytes()).digest()[:32])
    h[0] &= 248
    h[31] &= 127
    h[31] |= 64
    return int.from_bytes(h, "little")


def identity_r_signature(signer: Signer, message: bytes, r: bytes) -> bytes:
    """``R ‖ S`` with ``S = k·a``: valid when ``r`` encodes the identity point."""
    k = int.from_bytes(hashlib.sha512(r + signer.public_bytes + message).digest(), "little") % L
    return r + (k * scalar_of(signer) % L).to_bytes(32, "little")


def _enc(y: int, sign: int = 0) -> str:
    return (y | sign << 255).to_bytes(32, "little").hex()


def strict_vectors(signer: Signer) -> dict[str, Any]:
    """Every case with its verdict; ``signer`` is the vectors' test server key."""
    keys: list[dict[str, Any]] = [
        {
            "public_key": k.hex(),
            "verdict": "refused",
            "reason": "small_order",
            "how": "one of the eight points of small order, canonically encoded (docs/fairness.md §9)",
        }
        for k in sorted(SMALL_ORDER)
    ]
    noncanonical = [
        (_enc(P), "y = p, read modulo p as y = 0 (a point of order 4)"),
        (_enc(P + 1), "y = p + 1, read modulo p as the identity"),
        (_enc(P + 3), "y = p + 3, read modulo p as a point of large order: lenient decoders accept it"),
        (_enc(2**255 - 1), "y = 2^255 - 1 = p + 18, read modulo p as a point of large order"),
        (_enc(1, 1), "the identity (x = 0, y = 1) with the sign bit set"),
        (_enc(P - 1, 1), "the point (0, -1) with the sign bit set"),
    ]
    keys += [{"public_key": k, "verdict": "refused", "reason": "non_canonical", "how": how} for k, how in noncanonical]
    keys.append(
        {
            "public_key": _enc(2),
            "verdict": "refused",
            "reason": "not_on_curve",
            "how": "y = 2: (y² - 1)/(d·y² + 1) has no square root modulo p",
        }
    )
    keys.append(
        {
            "public_key": signer.public_bytes.hex(),
            "verdict": "accepted",
            "reason": "strict",
            "how": "the vectors' test server key (Ed25519 from a fixed seed)",
        }
    )

    good = signer.sign_bytes(MESSAGE)
    s_plus_l = good[:32] + (int.from_bytes(good[32:], "little") + L).to_bytes(32, "little")
    pub = signer.public_bytes.hex()
    identity = bytes.fromhex(_enc(1))

    def sig(signature: bytes, verdict: str, reason: str, how: str, key: str = pub) -> dict[str, Any]:
        return {
            "public_key": key,
            "message": MESSAGE.hex(),
            "signature": signature.hex(),
            "verdict": verdict,
            "reason": reason,
            "equation_holds": True,
            "how": how,
        }

    signatures = [
        sig(good, "valid", "strict", "Ed25519 (RFC 8032) by the test server key"),
        sig(s_plus_l, "invalid", "s_not_below_l", "the valid signature with L added to S: [S + L]B = [S]B"),
        sig(
            identity_r_signature(signer, MESSAGE, bytes.fromhex(_enc(P + 1))),
            "invalid",
            "r_non_canonical",
            "R = the identity written with y = p + 1, S = k·a mod L (k over that R): the equation holds when y is "
            "read modulo p",
        ),
        sig(
            identity_r_signature(signer, MESSAGE, bytes.fromhex(_enc(1, 1))),
            "invalid",
            "r_non_canonical",
            "R = the identity with the sign bit set (x = 0), S = k·a mod L: the equation holds when that bit is "
            "ignored",
        ),
        sig(
            identity_r_signature(signer, MESSAGE, identity),
            "valid",
            "strict",
            "R = the identity, canonically encoded, S = k·a mod L: strictness is about encodings, not about which "
            "point R is",
        ),
        sig(
            bytes.fromhex(_enc(1)) + bytes(32),
            "invalid",
            "key_small_order",
            "the constant signature 01 00…00 under the identity key: [0]B = O + [k]O for every message",
            identity.hex(),
        ),
    ]
    return {
        "_about": {
            "what": "strict Ed25519 (docs/fairness.md §9): public keys and signatures that RFC 8032 verification may "
            "accept and a rummy-pf verifier refuses, and the strict ones it accepts. A key's verdict: accepted or "
            "refused (small_order, non_canonical, not_on_curve); a signature's: valid or invalid (s_not_below_l, "
            "r_non_canonical, key_small_order). equation_holds: [S]B = R + [k]A with R's y read modulo p and its "
            "sign bit ignored for x = 0 — what a lenient verifier would accept",
            "produced_by": "python -m verifier.vectors --write (verifier/vectors_strict.py)",
            "checked_by": CHECKED_BY,
        },
        "constants": {"p": str(P), "L": str(L)},
        "keys": keys,
        "signatures": signatures,
    }
