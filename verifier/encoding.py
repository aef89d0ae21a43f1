"""The canonical text (docs/fairness.md §1) of a transcript, each record encoded once.

Two checks hash or sign nearly the same bytes: ``chain`` hashes every record without
its ``"h"`` (§11), ``signature`` verifies the transcript signature over the whole
transcript without its ``"signature"`` (§9, §12), whose log holds every record with
its ``"h"``.  Encoding each record once serves both: the text of the body is put
together from the records' texts, and a record's text without ``"h"`` is cut out of
its text with it.  Both are exactly what :func:`verifier.fairness.canonical` writes,
for any JSON object, by how canonical JSON is built: ``{`` the members in key order,
joined by ``,`` ``}`` — so a member can be taken out, or an array's items put in, by
splitting at the right places: a member followed by another is ``"key":value,``
in the text, found where it occurs once, else after the text of the members that
follow it.

A player's move signature (§9) is over ``canonical(move_body(…))``: its text is put
together from the move's text and the hand's members, encoded once a hand
(:func:`move_body_texts`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from verifier.fairness import canonical_text


def record_texts(log: Sequence[Mapping[str, Any]]) -> list[str]:
    """``canonical(record)``, as text, for each record of the log (JSON data)."""
    return [canonical_text(rec) for rec in log]


def _plain(text: str) -> bool:
    """``text`` is ASCII letters and digits only: its JSON string is ``"text"``."""
    return text.isascii() and text.isalnum()


def without_member(text: str, obj: Mapping[str, Any], key: str) -> str:
    """``canonical(obj without key)`` from ``text`` = ``canonical(obj)``: the member
    ``"key":value,`` is cut out — where it stands when it occurs once in ``text``, else
    located by the members after it."""
    if not obj or max(obj) <= key:  # the last member (no record has one after "h"): encode it again
        return canonical_text({k: v for k, v in obj.items() if k != key})
    value = obj[key]
    if type(value) is str and _plain(key) and _plain(value):  # a record's "h": nothing to escape
        member = '"' + key + '":"' + value + '",'
    else:
        member = canonical_text({key: value})[1:-1] + ","
    if text.count(member) == 1:
        at = text.index(member)
        return text[:at] + text[at + len(member) :]
    tail = canonical_text({k: v for k, v in obj.items() if k > key})[1:]  # the members after it, and "}"
    cut = len(text) - len(tail)
    if not text.endswith(tail) or text[cut - len(member) : cut] != member:  # pragma: no cover - canonical JSON
        raise ValueError("not the canonical text of the object")
    return text[: cut - len(member)] + tail


def body_text(t: Mapping[str, Any], records: Sequence[str]) -> str:
    """``canonical(t without "signature")`` (§12), the log written from ``records``
    (the canonical text of each record of ``t["log"]``)."""
    before = {k: v for k, v in t.items() if k < "log"}
    after = {k: v for k, v in t.items() if k > "log" and k != "signature"}
    log = '"log":[' + ",".join(records) + "]"
    head = canonical_text(before)[:-1] + ("," if before else "")
    return head + log + ("," + canonical_text(after)[1:] if after else "}")


def move_body_texts(table_id: str, hand_no: int) -> Callable[[str, Mapping[str, Any]], str]:
    """``text(prev, move)`` = ``canonical(move_body(table_id, hand_no, prev, move))``
    (§9), put together from its members in key order (``hand_no``, ``move``,
    ``prev``, ``table_id``), the hand's own encoded once: a hand verifies a body for
    every signed move."""
    head = '{"hand_no":' + canonical_text(hand_no) + ',"move":'
    tail = ',"table_id":' + canonical_text(table_id) + "}"

    def text(prev: str, move: Mapping[str, Any]) -> str:
        return head + canonical_text(move) + ',"prev":' + canonical_text(prev) + tail

    return text
