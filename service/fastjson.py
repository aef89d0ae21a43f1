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

:func:`to_client` is the text of a message to a client (compact, keys in insertion order,
card ids padded to one width); :func:`dumps` the same without the padding.
"""

from __future__ import annotations

import re
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
    """A value's compact JSON text (keys in insertion order)."""
    return orjson.dumps(message).decode()


#: a card id as a message to a client carries it: the hand's cards (``cards``), the
#: card drawn (``card``, ``drawn_this_turn``), the card a declare finished with
#: (``finish``), and the groups a declare's ``hint`` shows of the 13 cards kept (the
#: ack of a declare echoes the move: a wrong declare's kept cards are hidden until the
#: hand ends, audit h87).  A JSON text cannot hold ``"<key>":`` inside a string (its
#: quotes would be escaped), so these match only keys of the message.
_CARD_LIST = re.compile(r'"cards":\[([0-9, ]*)\]')
_HINT = re.compile(r'"hint":\[((?:\[[0-9, ]*\],?)*)\]')
_HINT_IDS = re.compile(r"[0-9]+")
_ONE_CARD = re.compile(r'"(card|drawn_this_turn|finish)":([0-9]{1,2})(?=[,}\]])')
#: every card id has at most three digits (159 cards at 3 decks, D1)
WIDTH = 3


def _pad_list(m: re.Match[str]) -> str:
    ids = m[1]
    if not ids:
        return m[0]
    return '"cards":[' + ",".join(x.strip().rjust(WIDTH) for x in ids.split(",")) + "]"


def _pad_hint(m: re.Match[str]) -> str:
    return '"hint":[' + _HINT_IDS.sub(lambda x: x[0].rjust(WIDTH), m[1]) + "]"


def _pad_one(m: re.Match[str]) -> str:
    return f'"{m[1]}":{m[2].rjust(WIDTH)}'


def to_client(message: Any) -> str:
    """A message's compact JSON text as a client gets it: every card id under the keys
    above (a ``hint``'s inside its groups) padded with spaces to three characters (JSON
    allows blanks before a value), so that a text's length says nothing of which cards
    a seat holds or drew.  The sockets' traffic is encrypted, but its lengths are not: a drawn card whose id has
    one digit made the mover's reply a byte or two shorter than one with three (an
    eavesdropper's side channel on a hidden card, found by the audit of leaks of
    2026-12-07).  Faces are two characters each already."""
    text = orjson.dumps(message).decode()
    if "card" not in text and "finish" not in text:
        return text
    if '"hint":' in text:
        text = _HINT.sub(_pad_hint, text)
    return _ONE_CARD.sub(_pad_one, _CARD_LIST.sub(_pad_list, text))


def loads(text: bytes) -> Any:
    """JSON text's value (orjson; a malformed text raises ValueError)."""
    return orjson.loads(text)
