"""verifier/encoding.py: the texts it cuts and joins are exactly what canonical JSON
(docs/fairness.md §1) writes for the smaller and the larger object, for any JSON
object — also one whose other members or nested values hold the text of the member
that is cut out (a key like ``x"h`` or a nested ``{"h": …}``), where the member's
text occurs more than once."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from verifier.chain import move_body
from verifier.encoding import body_text, move_body_texts, record_texts, without_member
from verifier.fairness import _CANONICAL, canonical_text

# Keys near "h" in sort order, keys that end in the text of the member "h", and values
# that repeat it: the places a search for '"h":value,' could find the wrong one.
NEAR = ["h", "a", "i", "g", "hh", 'x"h', 'x\\"h', "é", "\u0080", "", "log", "signature", "z"]
KEYS = st.sampled_from(NEAR) | st.text(max_size=3)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**60), 2**60),
    st.sampled_from(["", "0", "ab" * 8, '"h":"0",', '","h":1,', "\\", '"', "é"]),
    st.text(max_size=6),
)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3), max_leaves=8
)
OBJECTS = st.dictionaries(KEYS, VALUES, max_size=5)


@settings(max_examples=400, derandomize=True, database=None, deadline=None)
@given(OBJECTS, VALUES, st.booleans())
def test_without_member_is_the_canonical_text_of_the_smaller_object(obj: dict[str, Any], h: Any, echo: bool) -> None:
    obj = {**obj, "h": h}
    if echo:  # the member's own text again, as another member's key and inside a nested object
        obj['x"h'] = obj['a"h'] = h  # after and before it in key order
        obj["i"] = obj["g"] = {"h": h, "z": 0}
    expected = canonical_text({k: v for k, v in obj.items() if k != "h"})
    assert without_member(canonical_text(obj), obj, "h") == expected


@settings(max_examples=200, derandomize=True, database=None, deadline=None)
@given(OBJECTS, st.lists(OBJECTS, max_size=4))
def test_body_text_is_the_canonical_text_without_the_signature(t: dict[str, Any], log: list[dict[str, Any]]) -> None:
    t = {**t, "log": log}
    expected = canonical_text({k: v for k, v in t.items() if k != "signature"})
    assert body_text(t, record_texts(log)) == expected


# Floats, tuples and non-ASCII text too: the encoder made once writes what
# ``json.dumps`` writes with the canonical settings for any value it is given.
ANY_VALUES = st.recursive(
    SCALARS | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(KEYS | st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=600, derandomize=True, database=None, deadline=None)
@given(ANY_VALUES)
def test_canonical_text_is_json_dumps_with_the_canonical_settings(value: Any) -> None:
    assert canonical_text(value) == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _outcome(encode: Any, value: Any) -> tuple[str, str]:
    try:
        return "text", encode(value)
    except (TypeError, ValueError) as e:
        return type(e).__name__, str(e)


def test_canonical_text_refuses_what_the_json_encoder_refuses_with_the_same_error() -> None:
    for value in (b"x", {(1,): 2}, object(), {"a": [set()]}, {1.5: 1}, float("nan"), {2: "x", "1": True}):
        ours, theirs = _outcome(canonical_text, value), _outcome(_CANONICAL.encode, value)
        assert ours == theirs
    assert _outcome(canonical_text, b"x")[0] == "TypeError"


@settings(max_examples=400, derandomize=True, database=None, deadline=None)
@given(st.text(max_size=8), st.integers(0, 2**53 - 1), st.text(max_size=8), OBJECTS)
def test_move_body_text_is_the_canonical_text_of_the_move_body(
    table_id: str, hand_no: int, prev: str, move: Any
) -> None:
    assert move_body_texts(table_id, hand_no)(prev, move) == canonical_text(move_body(table_id, hand_no, prev, move))
