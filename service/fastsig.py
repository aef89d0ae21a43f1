"""Ed25519 through libsodium (PyNaCl) on the server's hot path, with the verifier's verdicts.

Every action costs the server one player-signature check and two signatures (the
ack and the head, docs/fairness.md §15).  libsodium does them in about half the time
of ``cryptography``'s OpenSSL here (bench/action_profile.py; docs/benchmarks.md).
The verifier keeps ``cryptography`` alone (it imports nothing else); the server's
results must be exactly the verifier's, and they are:

- **Signing** is deterministic (RFC 8032): :class:`SodiumSigner` makes the very bytes
  :class:`verifier.signing.Signer` makes for the same key and message
  (tests/test_fastsig.py).
- **Verifying**: :func:`accepts` says True only when libsodium accepts, and
  libsodium accepts only what the strict rules (§9) and OpenSSL accept too — its check
  is the same cofactorless equation with ``S < L``, compared against the canonical
  encoding of the computed ``R``, and it refuses more (an ``R`` of small order, which
  OpenSSL lets through).  So :class:`verifier.record.HandRecorder` asks this first and,
  on a refusal, asks the verifier's own strict check, whose word is final: a
  signature libsodium refuses and the verifier accepts (a crafted one with a
  small-order ``R``) is accepted, as the verifier would.
"""

from __future__ import annotations

from typing import Any, Final

from nacl._sodium import ffi, lib

from verifier.fairness import PROTOCOL_V1, Encode, canonical
from verifier.signing import Signer, signed_message

SIG: Final = 64


def accepts(public_key: bytes, sig_hex: str, message: bytes) -> bool:
    """libsodium's verdict on a hex signature of ``message`` under the raw 32-byte
    ``public_key``: True only if it verifies (False is not final: see the module)."""
    if not isinstance(sig_hex, str) or len(sig_hex) != 2 * SIG:
        return False
    try:
        sm = bytes.fromhex(sig_hex) + message
    except ValueError:
        return False
    out = ffi.new("unsigned char[]", len(sm))
    return bool(lib.crypto_sign_open(out, ffi.NULL, sm, len(sm), public_key) == 0)


class SodiumSigner(Signer):
    """A :class:`Signer` whose signatures libsodium makes (the same bytes)."""

    def __init__(self, seed: bytes, encode: Encode = canonical) -> None:
        mine = Signer.from_seed(seed, encode)
        super().__init__(mine._key, encode)
        pk = ffi.new("unsigned char[]", 32)
        sk = ffi.new("unsigned char[]", 64)
        if lib.crypto_sign_seed_keypair(pk, sk, seed) != 0:  # pragma: no cover - libsodium never fails here
            raise ValueError("libsodium refused the signing key")
        if ffi.buffer(pk, 32)[:] != self.public_bytes:  # pragma: no cover - one key, two libraries
            raise ValueError("libsodium derives another public key from the signing key")
        self._sk = sk

    def sign(self, purpose: str, obj: Any, protocol: str = PROTOCOL_V1) -> str:
        return self.sign_bytes(signed_message(purpose, obj, protocol, self.encode)).hex()

    def sign_bytes(self, message: bytes) -> bytes:
        n = len(message)
        out = ffi.new("unsigned char[]", n + SIG)
        lib.crypto_sign(out, ffi.NULL, message, n, self._sk)
        return bytes(ffi.buffer(out, SIG))
