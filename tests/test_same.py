"""verifier.checkbase.same and the replay's event comparison: JSON equality, where
``true`` is not ``1`` and ``[1]`` is not ``{"0": 1}``, compared against the plain
recursive definition on values built to be nearly equal (a leaf swapped for an equal
one of another type, a member dropped or renamed, a list for an object)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from verifier.checkbase import same
from verifier.checks import _same_but

LEAVES = st.sampled_from([0, 1, -1, 2**53 - 1, True, False, None, "", "1", "true", "a"])
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from("abcde"), inner, max_size=4),
    max_leaves=16,
)


def swapped(leaf: Any) -> Any:
    """An equal-looking leaf of another type: 1 for true, false for 0, "" for null."""
    if type(leaf) is bool:
        return int(leaf)
    if type(leaf) is int:
        return bool(leaf) if leaf in (0, 1) else str(leaf)
    return {None: "", "": None, "1": 1}.get(leaf, 0)


def reference(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return a.keys() == b.keys() and all(reference(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(reference(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def nearly(value: Any, draw: Any) -> Any:
    """``value`` with one change, or none."""
    out = copy.deepcopy(value)
    change = draw(st.sampled_from(["none", "swap", "drop", "rename", "wrap"]))
    holder, key = None, None
    node = out
    while type(node) in (dict, list) and node and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(node) if type(node) is dict else range(len(node))))
        holder, node = node, node[key]
    if change == "none" or holder is None:
        return (
            out if change == "none" or type(out) not in (dict, list) else ([out] if type(out) is dict else {"a": out})
        )
    if change == "swap":
        holder[key] = swapped(node) if type(node) not in (dict, list) else []
    elif change == "drop":
        del holder[key]
    elif change == "rename" and type(holder) is dict:
        holder["z"] = holder.pop(key)
    else:
        holder[key] = [node]
    return out


#: equal under Python's ``==`` and not as JSON, where a member or an item is compared in
#: place (the cases a shortcut that forgets the types gets wrong)
EQUAL_IN_PYTHON_ONLY = [
    ({"a": True}, {"a": 1}),
    ({"a": 0}, {"a": False}),
    ([1, True], [1, 1]),
    ({"b": [{"c": False}]}, {"b": [{"c": 0}]}),
]


def test_a_leaf_of_another_type_is_never_the_same() -> None:
    for a, b in EQUAL_IN_PYTHON_ONLY:
        assert a == b and not reference(a, b)
        assert same(a, b) is False and same(b, a) is False, (a, b)
        assert _same_but(a, b, {}) is False if type(a) is dict else True


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(VALUES, st.data())
def test_same_is_json_equality(a: Any, data: st.DataObject) -> None:
    b = nearly(a, data.draw)
    assert same(a, b) is reference(a, b)
    assert same(b, a) is reference(b, a)


@settings(max_examples=200, derandomize=True, database=None, deadline=None)
@given(st.dictionaries(st.sampled_from("abcde"), VALUES, max_size=4), st.data())
def test_same_but_with_nothing_masked_is_json_equality(a: dict[str, Any], data: st.DataObject) -> None:
    b = nearly(a, data.draw)
    if type(b) is dict:
        assert _same_but(a, b, {}) is reference(a, b)
        assert _same_but(a, b, {"a": "penalties"}) is reference(
            {k: v for k, v in a.items() if k != "a"}, {k: v for k, v in b.items() if k != "a"}
        )
