"""The server's orjson canonical JSON is the verifier's, byte for byte (service/fastjson.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service import fastjson
from verifier.fairness import canonical

VECTORS = Path(__file__).resolve().parent.parent / "verifier" / "vectors"


def _parts(obj: Any) -> Iterator[Any]:
    """The value and every value nested in it."""
    yield obj
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _parts(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _parts(v)


def _no_floats(obj: Any) -> bool:
    return not any(isinstance(v, float) for v in _parts(obj))


def test_every_vector_encodes_byte_for_byte() -> None:
    files = sorted(VECTORS.rglob("*.json"))
    assert len(files) > 20
    compared = 0
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        for part in _parts(data):
            if isinstance(part, dict | list) and _no_floats(part):
                assert fastjson.canonical(part) == canonical(part), path.name
                compared += 1
    assert compared > 1000


TEXT = st.text(
    st.characters(codec="utf-8") | st.sampled_from(["\u2028", "\u2029", "\x7f", "\ufeff", "\x00", '"', "\\"])
)
LEAVES = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | TEXT
VALUES = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(TEXT, inner, max_size=5), max_leaves=30
)


@settings(max_examples=400, deadline=None)
@given(VALUES)
def test_random_values_encode_byte_for_byte(value: Any) -> None:
    assert fastjson.canonical(value) == canonical(value)


@pytest.mark.parametrize(
    "value",
    [{"n": 2**64}, {"n": -(2**63) - 1}, {"n": 10**40}, [2**70, "x"]],
    ids=["u64+1", "i64-1", "huge", "in-a-list"],
)
def test_what_orjson_cannot_encode_goes_to_the_verifier(value: Any) -> None:
    assert fastjson.canonical(value) == canonical(value)


@pytest.mark.parametrize("value", [{1: "x"}, {"s": "\ud800"}], ids=["int-key", "lone-surrogate"])
def test_the_verifier_refuses_what_it_refuses(value: Any) -> None:
    with pytest.raises((ValueError, UnicodeEncodeError)) as mine:
        fastjson.canonical(value)
    with pytest.raises((ValueError, UnicodeEncodeError)) as theirs:
        canonical(value)
    assert type(mine.value) is type(theirs.value)


# ----------------------------------------------------------------------------- to a client
IDS = st.integers(0, 158)  # every card id of a pack of up to three decks (D1)
TEXT = st.text(alphabet='"card:s[]0123456789,{} \\', max_size=20)  # keys' look-alikes inside strings


@st.composite
def client_messages(draw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A message with card ids where the server puts them (a seat's ``cards``, a drawn
    ``card``, ``drawn_this_turn``, a declare's ``finish``), and the same message with
    other ids in the same places."""
    n = draw(st.integers(0, 14))
    a, b = draw(st.lists(IDS, min_size=n, max_size=n)), draw(st.lists(IDS, min_size=n, max_size=n))
    one, other = draw(IDS), draw(IDS)
    words = draw(TEXT)

    def message(cards: list[int], card: int) -> dict[str, Any]:
        return {
            "type": "reply",
            "player_id": words,
            "result": {"seat": 2},
            "update": {
                "events": [{"kind": "draw", "seat": 2, "data": {"source": "closed"}, "card": card}],
                "changes": {"me": {"cards": cards, "faces": ["TH"] * len(cards), "drawn_this_turn": card}},
                "finish": card,
                words: {"cards": cards, "card": card},
            },
        }

    return message(a, one), message(b, other)


@given(client_messages())
@settings(max_examples=300, deadline=None)
def test_a_clients_text_is_the_message_and_its_length_tells_no_card(
    pair: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    """``to_client``: the text parses to the message, and two messages that differ only
    in their card ids have texts of one length (the audit of leaks: a drawn card's id
    of one digit made the mover's reply shorter than one of three).  Strings that look
    like the keys are left alone."""
    m, other = pair
    text = fastjson.to_client(m)
    assert json.loads(text) == m
    assert len(text) == len(fastjson.to_client(other))
    assert len(text) - len(fastjson.dumps(m)) <= 2 * (len(m["update"]["changes"]["me"]["cards"]) * 2 + 4)


@given(st.lists(st.lists(IDS, max_size=13), min_size=1, max_size=5), st.randoms(use_true_random=False))
@settings(max_examples=200, deadline=None)
def test_a_declares_hint_tells_no_card_by_its_length(hint: list[list[int]], rnd: Any) -> None:
    """The ack of a declare echoes its move, ``hint`` and all: the groups of the 13
    cards the declarer keeps, hidden from the table until the hand ends when the declare
    is wrong (audit h87: their ids went out unpadded in the declarer's reply).  Two
    hints of the same shape with other ids have texts of one length."""
    other = [[rnd.randrange(159) for _ in g] for g in hint]

    def message(h: list[list[int]]) -> dict[str, Any]:
        return {"type": "reply", "result": {"ack": {"body": {"move": {"kind": "declare", "card": 5, "hint": h}}}}}

    text = fastjson.to_client(message(hint))
    assert json.loads(text) == message(hint)
    assert len(text) == len(fastjson.to_client(message(other)))
