"""Ed25519 signatures over canonical JSON, with domain separation (docs/fairness.md §9).

``sign(purpose, obj, protocol)`` signs ``LP(protocol + "/" + purpose) ‖ canonical(obj)``.
The server's purposes are ``header``, ``commitments``, ``transcript`` and, from
rummy-pf/v2 on, ``ack``, ``head`` (and ``receipt``, before acks); a player signs its
moves with purpose ``move`` and its key with ``player``.  Verification is strict
(:mod:`verifier.ed25519`).  Key storage is the caller's business: this module only takes and returns
bytes.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from verifier import ed25519
from verifier.fairness import PROTOCOL_V1, Encode, canonical, lp, sha256


def signed_message(purpose: str, obj: Any, protocol: str = PROTOCOL_V1, encode: Encode = canonical) -> bytes:
    return signed_text(purpose, encode(obj), protocol)


def signed_text(purpose: str, text: bytes, protocol: str = PROTOCOL_V1) -> bytes:
    """What is signed over ``text``, an object's canonical JSON already made."""
    return lp(f"{protocol}/{purpose}") + text


class Signer:
    """Holds a signing key; the server creates one per process from its key file.
    ``encode``: the canonical JSON encoder of what it signs (:func:`canonical`, or
    the server's byte-identical one)."""

    def __init__(self, private_key: Ed25519PrivateKey, encode: Encode = canonical) -> None:
        self._key = private_key
        self.encode = encode
        self.public_key = private_key.public_key()
        self.public_bytes = public_key_bytes(self.public_key)

    @classmethod
    def from_seed(cls, seed: bytes, encode: Encode = canonical) -> Signer:
        return cls(Ed25519PrivateKey.from_private_bytes(seed), encode)

    @classmethod
    def generate(cls) -> Signer:
        return cls(Ed25519PrivateKey.generate())

    def private_bytes(self) -> bytes:
        return self._key.private_bytes(
            serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
        )

    def sign(self, purpose: str, obj: Any, protocol: str = PROTOCOL_V1) -> str:
        return self._key.sign(signed_message(purpose, obj, protocol, self.encode)).hex()

    def sign_text(self, purpose: str, text: bytes, protocol: str = PROTOCOL_V1) -> str:
        """:meth:`sign` of the object whose canonical JSON is ``text`` (the caller made it)."""
        return self._key.sign(signed_text(purpose, text, protocol)).hex()

    def sign_bytes(self, message: bytes) -> bytes:
        """A plain RFC 8032 signature of ``message`` (test vectors)."""
        return self._key.sign(message)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public_bytes)


def public_key_bytes(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def fingerprint(public_bytes: bytes) -> str:
    """SHA-256 of the raw 32-byte public key, hex."""
    return sha256(public_bytes).hex()


def fingerprint_text(fingerprint_hex: str) -> str:
    """How a fingerprint is shown to a person, on every page and by every command: the
    64 lowercase hex digits in groups of four, ``"3f2a 9c01 …"``."""
    return " ".join(fingerprint_hex[k : k + 4] for k in range(0, len(fingerprint_hex), 4))


def verify(public_bytes: bytes, purpose: str, obj: Any, signature_hex: str, protocol: str = PROTOCOL_V1) -> bool:
    """Strictly (§9, :mod:`verifier.ed25519`): a key that is not strict, or a signature
    with ``S ≥ L`` or a non-canonical ``R``, never verifies."""
    try:
        key = ed25519.strict_key(public_bytes)
        return ed25519.verify_hex(key, signature_hex, signed_message(purpose, obj, protocol))
    except (ValueError, TypeError):
        return False


def load_public_key(text: str) -> bytes:
    """A pinned key: 64 hex digits, base64 of 32 bytes, or a PEM file (path or text)."""
    t = text.strip()
    if len(t) == 64:
        try:
            return bytes.fromhex(t)
        except ValueError:
            pass
    try:
        raw = base64.b64decode(t, validate=True)
        if len(raw) == 32:
            return raw
    except (binascii.Error, ValueError):
        pass
    pem = t
    if "BEGIN" not in t:
        path = Path(t)
        if not path.is_file():
            raise ValueError(f"not a key (hex, base64 or PEM) nor a file: {text!r}")
        pem = path.read_text(encoding="utf-8")
    key = serialization.load_pem_public_key(pem.encode("utf-8"))
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError("the PEM key is not an Ed25519 public key")
    return public_key_bytes(key)


def public_pem(public_bytes: bytes) -> str:
    key = Ed25519PublicKey.from_public_bytes(public_bytes)
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
