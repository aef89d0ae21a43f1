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
from collections.abc import Callable
from typing import Any

import schemathesis
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import strategies as st
from hypothesis.strategies._internal import regex as _hypothesis_regex

HEX64 = re.compile(r"[0-9a-f]{64}")


def public_key_hex(seed: bytes) -> str:
    key = Ed25519PrivateKey.from_private_bytes(seed).public_key()
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def _built_once(build: Callable[..., Any]) -> Callable[..., Any]:
    """Hypothesis's ``base_regex_strategy``, which builds a strategy for a pattern, with
    each strategy kept.  Schemathesis asks ``st.from_regex`` anew for every case it
    draws (with an alphabet it makes anew, so Hypothesis's own strategy cache misses),
    and the name pattern of /api/openapi.json spells every allowed code point
    (service.namepattern): building its strategy took about a second each time, two
    thirds of the whole fuzzing run.  The strategy built is the same for the same
    pattern and alphabet (Hypothesis strategies are immutable), so what is drawn does
    not change; only the rebuilding goes."""
    built: dict[tuple[Any, ...], Any] = {}

    def base_regex_strategy(regex: Any, *, parsed: Any = None, alphabet: Any) -> Any:
        intervals = getattr(alphabet, "intervals", None)
        if alphabet is not None and intervals is None:  # an alphabet we cannot name: build it
            return build(regex, parsed=parsed, alphabet=alphabet)
        key = (regex.pattern, regex.flags, intervals)
        if key not in built:
            built[key] = build(regex, parsed=parsed, alphabet=alphabet)
        return built[key]

    return base_regex_strategy


_hypothesis_regex.base_regex_strategy = _built_once(_hypothesis_regex.base_regex_strategy)

schemathesis.openapi.format("ed25519-public-key", st.binary(min_size=32, max_size=32).map(public_key_hex))


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    body = case.body
    positive = case.meta is not None and case.meta.generation.mode.is_positive
    if positive and isinstance(body, dict) and isinstance(body.get("public_key"), str):
        if HEX64.fullmatch(body["public_key"]):
            case.body = {**body, "public_key": public_key_hex(bytes.fromhex(body["public_key"]))}
    return case
