"""Schemathesis hooks for tests/test_schemathesis.py (loaded with ``SCHEMATHESIS_HOOKS``):
a rule of /api/openapi.json that no JSON Schema can express, followed as a client
follows it.

``ed25519-public-key`` (``public_key`` of ``POST /api/players`` and ``PUT /api/me/key``):
a strict Ed25519 key (docs/fairness.md §9).  64 hex digits say only its spelling; about
half of all spellings are no point of the curve, and eight are points of small order,
which the server refuses (400 ``bad_key``) as it should.  A client makes its key from a
private key, so a request meant to be valid gets the public key of the private key its
drawn digits spell; a request meant to be invalid is left as drawn."""

from __future__ import annotations

import re
from typing import Any

import schemathesis
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import strategies as st

HEX64 = re.compile(r"[0-9a-f]{64}")


def public_key_hex(seed: bytes) -> str:
    key = Ed25519PrivateKey.from_private_bytes(seed).public_key()
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


schemathesis.openapi.format("ed25519-public-key", st.binary(min_size=32, max_size=32).map(public_key_hex))


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    body = case.body
    positive = case.meta is not None and case.meta.generation.mode.is_positive
    if positive and isinstance(body, dict) and isinstance(body.get("public_key"), str):
        if HEX64.fullmatch(body["public_key"]):
            case.body = {**body, "public_key": public_key_hex(bytes.fromhex(body["public_key"]))}
    return case
