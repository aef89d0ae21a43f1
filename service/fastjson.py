"""JSON for the server's hot path: orjson, byte for byte the verifier's canonical JSON.

:func:`canonical` is what the server's recorder, signer and sealing use for chain
links, signed bodies and sealed records: orjson with sorted keys, whose output is
byte-identical to :func:`verifier.fairness.canonical` (stdlib ``json``, sorted keys,
no spaces, UTF-8) on every value that function accepts without a float —
``tests/test_fastjson.py`` proves it on every test vector and on random data.  What
orjson cannot encode the way the verifier does (an integer beyond 64 bits, a key that
is not a string, a lone surrogate) goes to the verifier's own function, which encodes
it or raises its own error.

It does not scan for floats, which the verifier's function refuses: nothing the
server signs or chains can hold one.  Records are built from the rules kernel's
integers, and whatever comes from a client has passed the wire schemas
(:mod:`service.wire`), which accept integers only where a number may stand.  The
verifier, which reads what others wrote, always scans.

:func:`dumps` is the text of a message to a client (compact, keys in insertion order).
"""

from __future__ import annotations

from typing import Any

import orjson

from verifier.fairness import canonical as checked_canonical

_SORTED = orjson.OPT_SORT_KEYS


def canonical(obj: Any) -> bytes:
    """:func:`verifier.fairness.canonical`, byte for byte, without its float scan."""
    try:
        return orjson.dumps(obj, option=_SORTED)
    except TypeError:  # orjson.JSONEncodeError: big integers, non-string keys, surrogates
        return checked_canonical(obj)


def dumps(message: Any) -> str:
    """A message's compact JSON text."""
    return orjson.dumps(message).decode()


def loads(text: bytes) -> Any:
    """JSON text's value (orjson; a malformed text raises ValueError)."""
    return orjson.loads(text)
