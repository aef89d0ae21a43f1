"""Strict Ed25519 (docs/fairness.md §9): what RFC 8032 leaves to the verifier, checked
before any signature is verified.

RFC 8032 verification alone accepts keys no honest signer has: under the identity
point the constant signature ``01 00…00`` verifies every message, and the other
small-order points are nearly as bad.  Here, in pure Python over the curve's field:

- a **public key** is 32 bytes whose ``y`` (the low 255 bits, little-endian) is less
  than ``p``, which decodes to a point of the curve (RFC 8032 §5.1.3, ``x = 0`` only
  with the sign bit clear), and whose point is not of small order (``[8]P`` is not the
  identity);
- a **signature** ``R ‖ S`` has ``S < L`` and a canonical ``R`` (``y < p``, and not
  ``x = 0`` with the sign bit set).

Only then is the signature equation checked, by ``cryptography``.  The server's
registration of a player's key uses :func:`key_problem` (``bad_key``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

P: Final = 2**255 - 19
L: Final = 2**252 + 27742317777372353535851937790883648493  # the order of the base point
D: Final = -121665 * pow(121666, P - 2, P) % P
SQRT_M1: Final = pow(2, (P - 1) // 4, P)
Y_MASK: Final = (1 << 255) - 1

#: The eight points of small order, canonically encoded (docs/fairness.md §9): with
#: the encoding canonical, exactly the keys whose ``[8]P`` is the identity.
SMALL_ORDER: Final = frozenset(
    bytes.fromhex(h)
    for h in (
        "0100000000000000000000000000000000000000000000000000000000000000",  # the identity (order 1)
        "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  # (0, -1), order 2
        "0000000000000000000000000000000000000000000000000000000000000000",  # (sqrt(-1), 0), order 4
        "0000000000000000000000000000000000000000000000000000000000000080",  # (-sqrt(-1), 0), order 4
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",  # order 8
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",  # order 8
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",  # order 8
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",  # order 8
    )
)

Point = tuple[int, int]  # affine (x, y)


def decode(raw: bytes) -> Point | None:
    """The point a 32-byte encoding names, or None when the encoding is not canonical
    or names no point of the curve (RFC 8032 §5.1.3, with ``y < p`` required)."""
    if len(raw) != 32:
        return None
    n = int.from_bytes(raw, "little")
    y, sign = n & Y_MASK, n >> 255
    if y >= P:
        return None
    u = (y * y - 1) % P
    v = (D * y * y + 1) % P
    x = u * pow(v, 3, P) * pow(u * pow(v, 7, P), (P - 5) // 8, P) % P
    vx2 = v * x * x % P
    if vx2 == (-u) % P:
        x = x * SQRT_M1 % P
    elif vx2 != u:
        return None
    if x == 0 and sign:
        return None
    if x & 1 != sign:
        x = P - x
    return x, y


def small_order(point: Point) -> bool:
    """``[8]P`` is the identity: three doublings in extended coordinates (no
    inversion; RFC 8032 §5.1.4's doubling for a = -1), then ``X = 0`` and ``Y = Z``."""
    x, y = point
    z = 1
    for _ in range(3):
        a, b, c = x * x % P, y * y % P, 2 * z * z % P
        h = (a + b) % P
        e = (h - (x + y) * (x + y)) % P
        g = (a - b) % P
        f = (c + g) % P
        x, y, z = e * f % P, g * h % P, f * g % P
    return x == 0 and (y - z) % P == 0


def encoding_problem(raw: bytes) -> str | None:
    """Why a 32-byte point encoding is not canonical (§9), or None: ``y < p``, and not
    ``x = 0`` (the points with ``y = ±1``) with the sign bit set."""
    n = int.from_bytes(raw, "little")
    y = n & Y_MASK
    if y >= P:
        return "y is not less than p = 2^255 - 19"
    if n >> 255 and y in (1, P - 1):
        return "x = 0 with the sign bit set"
    return None


@lru_cache(maxsize=4096)
def key_problem(raw: bytes) -> str | None:
    """Why ``raw`` is not a strict Ed25519 public key (§9), or None when it is one
    (remembered: a verifier meets the same keys in hand after hand)."""
    if len(raw) != 32:
        return f"a public key is 32 bytes, not {len(raw)}"
    problem = encoding_problem(raw)
    if problem is not None:
        return f"its encoding is not canonical ({problem})"
    point = decode(raw)
    if point is None:
        return "it is not a point of the curve"
    if small_order(point):
        return "it is a point of small order, under which signatures prove nothing"
    return None


def signature_problem(sig: bytes) -> str | None:
    """Why ``sig`` is not a strict signature (§9: ``S < L``, ``R`` canonical), or None."""
    if len(sig) != 64:
        return f"a signature is 64 bytes, not {len(sig)}"
    if int.from_bytes(sig[32:], "little") >= L:
        return "its S is not less than the group order L"
    problem = encoding_problem(sig[:32])
    if problem is not None:
        return f"its R is not a canonical encoding ({problem})"
    return None


class StrictKeyError(ValueError):
    """A public key that breaks the strict rules of §9."""


@lru_cache(maxsize=4096)
def _loaded(raw: bytes) -> Ed25519PublicKey | str:
    problem = key_problem(raw)
    return problem if problem is not None else Ed25519PublicKey.from_public_bytes(raw)


def strict_key(raw: bytes) -> Ed25519PublicKey:
    """The key ``raw`` names, for :func:`verify`; :class:`StrictKeyError` (a
    ``ValueError``) naming the problem when it is not a strict key."""
    loaded = _loaded(bytes(raw))
    if isinstance(loaded, str):
        raise StrictKeyError(loaded)
    return loaded


def verify(key: Ed25519PublicKey, sig: bytes, message: bytes) -> bool:
    """The strict signature rules, then RFC 8032's equation.  ``key`` comes from
    :func:`strict_key`, so it has been checked already."""
    if signature_problem(sig) is not None:
        return False
    try:
        key.verify(sig, message)
    except InvalidSignature:
        return False
    return True


def verify_hex(key: Ed25519PublicKey, sig_hex: str, message: bytes) -> bool:
    """:func:`verify` of a signature written in hex (anything else is invalid)."""
    try:
        sig = bytes.fromhex(sig_hex)
    except (ValueError, TypeError):
        return False
    return verify(key, sig, message)
