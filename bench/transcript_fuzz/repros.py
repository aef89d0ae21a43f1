"""One minimal repro of each class found, with the verdict docs/fairness.md gives."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from bench.transcript_fuzz.common import VECTORS
from bench.transcript_fuzz.hands import _vector
from bench.transcript_fuzz.mutant import Mutant
from bench.transcript_fuzz.seal import OTHER_SERVER, reseal


def _vector_t(name: str) -> dict[str, Any]:
    t = _vector(VECTORS / name)["transcript"]
    assert isinstance(t, dict)
    return t


def _repro(name: str, t: Any, *, allow_v1: bool = False, key: str | None = None, players: str = "house") -> Mutant:
    if isinstance(t, dict) and "log" in t:
        reseal(t, players=players)
    return Mutant(0, name, [name], json.dumps(t).encode(), allow_v1, key)


def repro_event_of_an_unlisted_seat() -> Mutant:
    """Record 4's draw event names seat 0, which the header does not list (seats 1, 3)."""
    t = _vector_t("v2-transcript-4seat-two-players.json")
    t["log"][4]["events"][0]["seat"] = 0
    return _repro("event of an unlisted seat", t)


def repro_settlement_beyond_the_rules() -> Mutant:
    """The result's settlement names commission_bps 10 001 (the header's rules say 500)."""
    t = _vector_t("v2-transcript-4seat-two-players.json")
    t["result"]["settlement"]["commission_bps"] = 10_001
    return _repro("settlement commission_bps beyond the rules' bound", t)


def repro_no_protocol() -> Mutant:
    """A transcript without its "protocol" field."""
    t = _vector_t("v2-transcript-4seat-two-players.json")
    del t["protocol"]
    return _repro("a transcript without protocol", t)


def repro_v1_action_without_t() -> Mutant:
    """A rummy-pf/v1 transcript (accepted with allow_v1) whose record 4, an action, has no "t"."""
    t = _vector_t("transcript-4seat-two-players.json")
    del t["log"][4]["t"]
    return _repro("v1 action record without t", t, allow_v1=True)


def repro_pinned_key() -> Mutant:
    """A transcript verified with another key pinned than its header's."""
    return _repro("another key pinned", _vector_t("v2-transcript-4seat-two-players.json"), key=OTHER_SERVER.pub)


def repro_head() -> Mutant:
    """The head is record 0's h, the transcript signed over it."""
    t = _vector_t("v2-transcript-4seat-two-players.json")
    reseal(t, players="house")
    t["head"] = t["log"][0]["h"]
    reseal(t, players="house", chain=False)
    return Mutant(0, "head", ["head"], json.dumps(t).encode(), False)


def repro_two_format_problems() -> Mutant:
    """Two problems of §13: an extra field in an event of record 5, and a dealer the
    header does not list (record 0)."""
    t = _vector_t("v2-transcript-4seat-two-players.json")
    t["log"][5]["events"][0]["extra"] = 0
    t["log"][0]["header"]["dealer"] = 2
    return _repro("two format problems", t)


ANY = "any"  # a record the spec does not name: either is right


def repro_v1_void_mid_hand() -> Mutant:
    """A rummy-pf/v1 hand (accepted with allow_v1) cut after its first action, record
    4, and voided: record 5 is a void, after the deal."""
    t = _vector_t("transcript-4seat-two-players.json")
    del t["log"][5:]
    t["log"].append({"i": 5, "type": "void", "reason": "operator", "h": ""})
    t["result"] = None
    return _repro("v1 void mid-hand", t, allow_v1=True)


#: name -> (the repro, the verdict docs/fairness.md gives: ok, the failing check, its record or ANY)
REPROS: dict[str, tuple[Callable[[], Mutant], tuple[bool, str | None, int | str | None]]] = {
    "event-of-an-unlisted-seat": (repro_event_of_an_unlisted_seat, (False, "replay", 4)),
    "settlement-beyond-the-rules": (repro_settlement_beyond_the_rules, (False, "settlement", None)),
    "no-protocol": (repro_no_protocol, (False, "format", None)),
    "v1-action-without-t": (repro_v1_action_without_t, (True, None, None)),
    "v1-void-mid-hand": (repro_v1_void_mid_hand, (False, "format", 5)),
    "pinned-key": (repro_pinned_key, (False, "signature", ANY)),
    "head": (repro_head, (False, "chain", ANY)),
    "two-format-problems": (repro_two_format_problems, (False, "format", ANY)),
}
