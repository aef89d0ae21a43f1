"""A dishonest server against the verifier (issue 9): every case the audit found is a
test that fails at its named check, or is unreadable (``read``, exit 2).

Cases that need a signature to pass first are re-signed with the vectors' test keys
(``forge`` of tests/test_tamper.py): the server and the players' keys are public test
keys, so only the check responsible can catch the change.
"""

from __future__ import annotations

import copy
import io
import json
import math
from collections.abc import Callable
from typing import Any

import pytest

from tests.test_tamper import forge, load
from verifier import vectors
from verifier.cards import card_of_id
from verifier.chain import move_body
from verifier.fairness import PROTOCOL_V2, reshuffler
from verifier.hand import Action, Drop, action_to_json, apply
from verifier.record import HandRecorder
from verifier.signing import Signer
from verifier.strictjson import CHUNK, MAX_BYTES, InputError, parse, read_stream
from verifier.transcript import CHECKS, Report, verify_transcript

KEY = vectors.TEST_SIGNER.public_bytes
TWO = "v2-transcript-4seat-two-players.json"
RICH = "v2-transcript-6seat-everything.json"
EIGHT = "v2-transcript-8seat-seeds-and-leaves.json"
HEADSUP = "v2-transcript-headsup-withheld.json"


def verdict(t: Any, evidence: Any = None, key: bytes | None = KEY) -> Report:
    report = verify_transcript(t, key, evidence, debug=True)
    assert report.failure is None or report.failure.check in CHECKS
    return report


def check_of(t: Any, evidence: Any = None) -> str | None:
    r = verdict(t, evidence)
    return None if r.failure is None else r.failure.check


# ----------------------------------------------------------------------------- format (§13)
def test_a_seat_listed_twice_in_the_commitments_fails_format() -> None:
    """The later entry must not silently win: the server could substitute a seed."""
    t = load(TWO)
    commits = t["log"][1]["commitments"]["commits"]
    commits.append(copy.deepcopy(commits[0]))
    commits[-1]["commit"] = "ab" * 32
    r = verdict(forge(t))
    assert r.failure is not None and r.failure.check == "format" and r.failure.record == 1
    assert "one entry per header seat" in r.failure.message


def test_a_seat_listed_twice_in_the_reveals_fails_format() -> None:
    t = load(TWO)
    t["log"][2]["reveals"].append(copy.deepcopy(t["log"][2]["reveals"][1]))
    assert check_of(forge(t)) == "format"


EXTRA_FIELD_AT: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "transcript": lambda t: t,
    "header record": lambda t: t["log"][0],
    "header": lambda t: t["log"][0]["header"],
    "rules": lambda t: t["log"][0]["header"]["rules"],
    "header seat": lambda t: t["log"][0]["header"]["seats"][0],
    "commitments": lambda t: t["log"][1]["commitments"],
    "commitment entry": lambda t: t["log"][1]["commitments"]["commits"][0],
    "reveal entry": lambda t: t["log"][2]["reveals"][0],
    "deal record": lambda t: t["log"][3],
    "event": lambda t: t["log"][3]["events"][0],
    "action record": lambda t: t["log"][4],
    "action": lambda t: t["log"][4]["action"],
    "psig": lambda t: t["log"][4]["psig"],
    "result": lambda t: t["result"],
    "settlement": lambda t: t["result"]["settlement"],
}


@pytest.mark.parametrize("where", sorted(EXTRA_FIELD_AT))
def test_an_extra_field_anywhere_fails_format(where: str) -> None:
    t = load(TWO)
    EXTRA_FIELD_AT[where](t)["extra"] = 1
    assert check_of(forge(t, players=False)) == "format"


def test_an_extra_field_in_an_event_fails_the_check_that_judges_the_event() -> None:
    """Event contents are judged by ``deal`` and ``replay`` (§13), exactly."""
    t = load(TWO)
    t["log"][3]["events"][0]["data"]["extra"] = 1
    assert check_of(forge(t)) == "deal"
    t = load(TWO)
    t["log"][4]["events"][0]["private"]["extra"] = 1
    assert check_of(forge(t)) == "replay"


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t["result"].__setitem__("winner", True),
        lambda t: t["result"]["settlement"].__setitem__("pot", True),
        lambda t: t["log"][0]["header"]["rules"].__setitem__("point_value", True),
        lambda t: t["log"][4].__setitem__("t", False),
        lambda t: t["log"][4]["action"].__setitem__("seat", True),
    ],
)
def test_true_where_an_integer_belongs_fails_format(change: Callable[[dict[str, Any]], None]) -> None:
    t = load(TWO)
    change(t)
    assert check_of(forge(t)) == "format"


def test_a_hand_number_as_a_string_fails_format() -> None:
    t = load(TWO)
    t["hand_no"] = "1"
    t["log"][0]["header"]["hand_no"] = "1"
    t["log"][1]["commitments"]["hand_no"] = "1"
    assert check_of(forge(t)) == "format"


def test_a_dealer_who_is_not_seated_fails_format() -> None:
    t = load(TWO)  # seats 1 and 3 at a 4-seat table
    t["log"][0]["header"]["dealer"] = 0
    r = verdict(forge(t))
    assert r.failure is not None and r.failure.check == "format" and "dealer" in r.failure.message


def test_empty_rules_are_not_read_as_defaults() -> None:
    t = load(TWO)
    t["log"][0]["header"]["rules"] = {}
    r = verdict(forge(t))
    assert r.failure is not None and r.failure.check == "format" and "rules" in r.failure.message


@pytest.mark.parametrize("seed", ["", "ab", "00" * 31, "AB" * 32, "zz" * 32])
def test_short_or_malformed_server_seeds_fail_format(seed: str) -> None:
    t = load(TWO)
    t["server_seed"] = seed
    assert check_of(forge(t)) == "format"


@pytest.mark.parametrize("seed", ["", "ab", "00" * 31, "0g" * 32])
def test_short_or_malformed_player_seeds_fail_format(seed: str) -> None:
    t = load(TWO)
    t["log"][2]["reveals"][0]["seed"] = seed
    assert check_of(forge(t)) == "format"


def test_the_published_deck_is_judged_by_deck() -> None:
    """§12: the deck is the derived one when the reveals are recorded and the seed
    revealed, else []; §13 only asks for [] or a permutation of the pack."""
    t = load(TWO)
    t["deck"], t["deck_faces"] = [], []
    assert check_of(forge(t)) == "deck"
    t = load("v2-transcript-void-seed-lost.json")
    rich = load(RICH)
    t["deck"], t["deck_faces"] = rich["deck"], rich["deck_faces"]
    assert check_of(forge(t)) == "deck"
    t = load(TWO)
    t["deck"], t["deck_faces"] = t["deck"][:-1], t["deck_faces"][:-1]
    assert check_of(forge(t)) == "format"


def test_points_for_a_seat_that_does_not_exist_fail_format() -> None:
    t = load(TWO)
    t["result"]["points"]["2"] = 0
    assert check_of(forge(t)) == "format"
    t = load(TWO)
    t["result"]["settlement"]["deltas"]["7"] = 0
    assert check_of(forge(t)) == "format"


def test_a_seat_number_written_otherwise_fails_format() -> None:
    t = load(TWO)
    t["result"]["points"]["01"] = t["result"]["points"].pop("1")
    assert check_of(forge(t)) == "format"


@pytest.mark.parametrize(
    "value",
    [
        5,
        None,
        [],
        "rummy-pf/v2",
        {},
        {"protocol": "rummy-pf/v3"},
        {"protocol": True},
        {"protocol": "rummy-pf/v2"},
        {"protocol": "rummy-pf/v1"},
    ],
)
def test_what_is_not_a_transcript_fails_format(value: Any) -> None:
    assert check_of(value) == "format"


def _nested(depth: int) -> Any:
    v: Any = 0
    for _ in range(depth):
        v = [v]
    return v


MALFORMED: dict[str, Callable[[dict[str, Any]], None]] = {
    "deep nesting": lambda t: t["log"][4]["events"][0]["data"].__setitem__("x", _nested(10_000)),
    "5000-digit integer": lambda t: t.__setitem__("hand_no", 10**5000),
    "huge integer in an event": lambda t: t["log"][4]["events"][0]["data"].__setitem__("by_clock", 10**5000),
    "float in rules": lambda t: t["log"][0]["header"]["rules"].__setitem__("seats", 6.0),
    "NaN": lambda t: t["log"][0]["header"]["rules"].__setitem__("seats", math.nan),
    "seats not a list": lambda t: t["log"][0]["header"].__setitem__("seats", {"1": "x"}),
    "deck: 5": lambda t: t.__setitem__("deck", 5),
    "non-hex seed": lambda t: t["log"][2]["reveals"][0].__setitem__("seed", "xyz"),
    "lone surrogate": lambda t: t["log"][0]["header"].__setitem__("table_id", "\ud800"),
    "integer key": lambda t: t["log"][4]["events"][0]["data"].__setitem__(1, 2),
    "tuple": lambda t: t.__setitem__("deck", tuple(t["deck"])),
    "bytes": lambda t: t.__setitem__("signature", b"\x00" * 64),
    "log not a list": lambda t: t.__setitem__("log", {"0": t["log"][0]}),
    "record not an object": lambda t: t["log"].__setitem__(4, [1, 2]),
    "events not a list": lambda t: t["log"][4].__setitem__("events", "draw"),
    "deck with a bool": lambda t: t["deck"].__setitem__(0, False),
    "card id out of range": lambda t: t["deck"].__setitem__(0, 10**6),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_values_name_format_never_a_traceback(case: str) -> None:
    t = load(TWO)
    MALFORMED[case](t)
    r = verdict(t)
    assert r.failure is not None and r.failure.check == "format", r.failure
    json.dumps(r.to_json())  # the report itself is always JSON


# ----------------------------------------------------------------------------- the strict reader (§2)
def test_the_reader_takes_integers_up_to_2_53_minus_1_and_nesting_up_to_64() -> None:
    assert parse(b'{"a": 9007199254740991, "b": -9007199254740991}') == {
        "a": 9007199254740991,
        "b": -9007199254740991,
    }
    assert parse(b'{"a": ' + b"[" * 63 + b"]" * 63 + b"}")
    for bad in (
        b'{"a": 9007199254740992}',
        b'{"a": -0}',
        b'{"a": 1.0}',
        b'{"a": 1e2}',
        b'{"a": ' + b"[" * 64 + b"]" * 64 + b"}",
        b'{"a": 1, "a": 1}',
        b"\xef\xbb\xbf{}",
        b"[]",
        b'{"a": Infinity}',
    ):
        with pytest.raises(InputError):
            parse(bad)


class Endless(io.RawIOBase):
    """An input that never ends, counting what is read of it."""

    def __init__(self) -> None:
        self.given = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = len(b)
        b[:n] = b" " * n
        self.given += n
        return n


def test_input_is_read_in_pieces_and_refused_past_the_limit() -> None:
    """Issue 9: a 200 MB input was read whole before the limit applied."""
    stream = Endless()
    with pytest.raises(InputError, match="larger than"):
        read_stream(io.BufferedReader(stream, CHUNK), "standard input")
    assert stream.given <= MAX_BYTES + 2 * CHUNK


# ----------------------------------------------------------------------------- time (§14 check 9)
def test_a_timeout_1_ms_after_the_turn_began_fails_time() -> None:
    t = load(RICH)
    log = t["log"]
    n = next(i for i, r in enumerate(log) if r["type"] == "action" and r["action"]["kind"] == "timeout")
    began = max(i for i in range(n) if any(e["kind"] == "turn" for e in log[i].get("events", [])))
    log[n]["t"] = log[began]["t"] + 1
    assert all(log[i]["t"] <= log[i + 1]["t"] for i in range(len(log) - 1))
    r = verdict(forge(t))
    assert r.failure is not None and r.failure.check == "time" and r.failure.record == n


def test_record_times_that_go_backwards_fail_time() -> None:
    t = load(TWO)
    t["log"][6]["t"] = t["log"][5]["t"] - 1
    r = verdict(forge(t))
    assert r.failure is not None and r.failure.check == "time" and r.failure.record == 6


def test_time_is_judged_in_a_void_hand_too() -> None:
    t = load("v2-transcript-void-mid-hand.json")
    t["log"][-1]["t"] = t["log"][-2]["t"] - 1
    assert check_of(forge(t)) == "time"


def test_a_commit_window_closed_early_fails_time() -> None:
    t = load(EIGHT)  # seat 2 sent no commitment: the window must have run its course
    assert any(c["commit"] is None for c in t["log"][1]["commitments"]["commits"])
    t["log"][1]["t"] -= 1
    r = verdict(forge(t))
    assert r.failure is not None and r.failure.check == "time" and r.failure.record == 1


def test_a_reveal_window_closed_early_fails_time() -> None:
    t = load(EIGHT)  # seat 5 withheld its reveal
    t["log"][2]["t"] -= 1
    r = verdict(forge(t))
    assert r.failure is not None and r.failure.check == "time" and r.failure.record == 2


# ----------------------------------------------------------------------------- warnings (§14)
def test_a_hand_where_no_player_seed_counted_warns() -> None:
    hand = vectors.VectorHand("noseed", 0, vectors.TableRules(seats=4), [0, 1], 0)
    hand.seed_phases(no_commit=(0, 1))
    hand.play(vectors.greedy)
    r = verdict(hand.rec.transcript())
    assert r.ok, r.failure
    assert [w["code"] for w in r.warnings] == ["no_player_seed"]
    assert "the server alone chose the deck" in r.warnings[0]["message"]
    assert verdict(load(TWO)).warnings == []


# ----------------------------------------------------------------------------- forged moves (§9)
def forged_drop(signer: Signer | None, prev: str | None = None) -> dict[str, Any]:
    """The two-player vector cut after the deal, with a drop put in the mouth of seat 3
    (first on turn: seat 1 deals hand 1, D3): a transcript consistent in every other
    respect, signed by the server."""
    t = load(TWO)
    rec = HandRecorder.from_header(vectors.TEST_SIGNER, t["log"][0]["header"], bytes.fromhex(t["server_seed"]))
    for r in t["log"][:4]:
        rec.restore(r)
    assert rec.state is not None and rec.state.turn == 3
    action: Action = Drop(3)
    state, events = apply(rec.state, action, reshuffler(rec.key))
    at = prev or rec.head
    body = move_body(rec.table_id, rec.hand_no, at, action_to_json(action))
    psig = None if signer is None else {"prev": at, "sig": signer.sign("move", body, PROTOCOL_V2)}
    record = rec._link(
        {
            "type": "action",
            "action": action_to_json(action),
            "psig": psig,
            "events": [e.to_json() for e in events],
            "t": rec.records[-1]["t"] + 700,
        }
    )
    rec.accept(state, record)
    return rec.transcript()


def test_a_drop_signed_by_the_player_verifies() -> None:
    """The control: the same drop, signed by seat 3's own key, is a valid hand."""
    r = verdict(forged_drop(vectors.player_signer("two", 3)))
    assert r.ok, r.failure
    assert r.summary["winner"] == 1 and r.summary["points"] == {"1": 0, "3": 20}


def test_a_drop_signed_by_nobody_fails_player_signatures() -> None:
    r = verdict(forged_drop(None))
    assert r.failure is not None and r.failure.check == "player_signatures" and r.failure.record == 4
    assert "no player signature" in r.failure.message


@pytest.mark.parametrize(
    "signer", [vectors.player_signer("two", 1), vectors.TEST_SIGNER, Signer.from_seed(b"\x09" * 32)]
)
def test_a_drop_signed_by_another_key_fails_player_signatures(signer: Signer) -> None:
    r = verdict(forged_drop(signer))
    assert r.failure is not None and r.failure.check == "player_signatures" and r.failure.record == 4
    assert "not signed by seat 3's player key" in r.failure.message


def test_a_move_signed_over_another_record_fails_player_signatures() -> None:
    t = load(TWO)
    r = verdict(forged_drop(vectors.player_signer("two", 3), prev=t["log"][2]["h"]))
    assert r.failure is not None and r.failure.check == "player_signatures" and r.failure.record == 4


def test_a_timeout_with_a_player_signature_fails_player_signatures() -> None:
    t = load(RICH)
    n = next(i for i, r in enumerate(t["log"]) if r["type"] == "action" and r["action"]["kind"] == "timeout")
    t["log"][n]["psig"] = copy.deepcopy(t["log"][n - 1]["psig"])
    assert check_of(forge(t, players=False)) == "player_signatures"


def test_a_commitment_the_player_did_not_sign_fails_player_signatures() -> None:
    t = load(TWO)
    t["log"][1]["commitments"]["commits"][0]["commit"] = "cd" * 32
    assert check_of(forge(t, players=False)) == "player_signatures"


# ----------------------------------------------------------------------------- evidence (§15)
def evidence() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((vectors.DIR / "v2-evidence-4seat-two-players-seat1.json").read_text())[
        "evidence"
    ]
    return items


def signed(purpose: str, body: dict[str, Any], signer: Signer = vectors.TEST_SIGNER) -> dict[str, Any]:
    return {"purpose": purpose, "body": body, "sig": signer.sign(purpose, body, PROTOCOL_V2)}


def receipts(t: dict[str, Any], seat: int = 1) -> list[dict[str, Any]]:
    """Seat's commit and reveal receipts, as the server signed them before acks (§15)."""
    commit = next(c for c in t["log"][1]["commitments"]["commits"] if c["seat"] == seat)["commit"]
    seed = next(r for r in t["log"][2]["reveals"] if r["seat"] == seat)["seed"]
    body = {"table_id": t["table_id"], "hand_no": t["hand_no"], "seat": seat}
    return [
        signed("receipt", {**body, "kind": "commit", "value": commit, "prev": t["log"][0]["h"]}),
        signed("receipt", {**body, "kind": "reveal", "value": seed, "prev": t["log"][1]["h"]}),
    ]


def test_an_ack_with_a_bad_signature_fails_evidence_naming_its_position() -> None:
    items = evidence()
    n = next(i for i, e in enumerate(items) if e["purpose"] == "ack")
    sig = bytearray(bytes.fromhex(items[n]["sig"]))
    sig[0] ^= 1
    items[n]["sig"] = sig.hex()
    r = verdict(load(TWO), items)
    assert r.failure is not None and r.failure.check == "evidence"
    assert r.failure.message.startswith(f"evidence item {n} (ack)")
    assert "not signed by the header's key" in r.failure.message


def test_a_well_signed_commit_receipt_that_disagrees_fails_evidence() -> None:
    """The server accepted one commitment and published another."""
    t = load(TWO)
    items = receipts(t)
    assert verdict(t, items).ok
    items[0] = signed("receipt", {**items[0]["body"], "value": "ee" * 32})
    r = verdict(t, items)
    assert r.failure is not None and r.failure.check == "evidence" and r.failure.record == 1
    assert r.failure.message.startswith("evidence item 0 (receipt):")


def test_a_reveal_receipt_for_a_seat_marked_withheld_fails_evidence() -> None:
    """The server cannot claim a seat withheld when the player holds a receipt."""
    t = load(HEADSUP)
    seat = next(r["seat"] for r in t["log"][2]["reveals"] if r["status"] == "withheld")
    seed = vectors.label(f"vector/headsup/player/{seat}")
    body = {"table_id": t["table_id"], "hand_no": t["hand_no"], "seat": seat, "kind": "reveal"}
    item = signed("receipt", {**body, "value": seed.hex(), "prev": t["log"][1]["h"]})
    r = verdict(t, [item])
    assert r.failure is not None and r.failure.check == "evidence" and r.failure.record == 2


def test_a_commit_receipt_for_a_seat_marked_no_commit_fails_evidence() -> None:
    t = load(EIGHT)
    seat = next(c["seat"] for c in t["log"][1]["commitments"]["commits"] if c["commit"] is None)
    body = {"table_id": t["table_id"], "hand_no": t["hand_no"], "seat": seat, "kind": "commit"}
    r = verdict(t, [signed("receipt", {**body, "value": "12" * 32, "prev": t["log"][0]["h"]})])
    assert r.failure is not None and r.failure.check == "evidence" and r.failure.record == 1


def test_a_receipt_over_another_header_fails_evidence() -> None:
    t = load(TWO)
    items = receipts(t)
    items[0] = signed("receipt", {**items[0]["body"], "prev": "77" * 32})
    assert check_of(t, items) == "evidence"


def test_a_divergent_saved_head_fails_evidence() -> None:
    """The server showed the player another record than it published."""
    items = evidence()
    n = next(i for i, e in enumerate(items) if e["purpose"] == "head" and e["body"]["i"] == 6)
    items[n] = signed("head", {**items[n]["body"], "h": "66" * 32})
    r = verdict(load(TWO), items)
    assert r.failure is not None and r.failure.check == "evidence" and r.failure.record == 6
    assert r.failure.expected == "66" * 32 and r.failure.message.startswith(f"evidence item {n} (head):")


def test_a_head_for_a_record_the_transcript_lacks_fails_evidence() -> None:
    t = load(TWO)
    item = signed("head", {"table_id": t["table_id"], "hand_no": t["hand_no"], "i": len(t["log"]), "h": "55" * 32})
    assert check_of(t, [item]) == "evidence"


def test_evidence_of_other_hands_and_of_records_a_void_came_before_is_counted() -> None:
    t = load("v2-transcript-void-seed-lost.json")  # voided right after the header
    body = {"table_id": t["table_id"], "hand_no": t["hand_no"], "seat": 0, "kind": "commit"}
    items = [
        signed("receipt", {**body, "value": "12" * 32, "prev": t["log"][0]["h"]}),
        signed("head", {"table_id": t["table_id"], "hand_no": t["hand_no"], "i": 0, "h": t["log"][0]["h"]}),
        *evidence(),
    ]
    r = verdict(t, items)
    assert r.ok, r.failure
    assert r.summary["evidence"] == {"items": len(items), "checked": 1, "other_hands": len(items) - 2, "after_void": 1}


@pytest.mark.parametrize(
    "items",
    [
        {"not": "a list"},
        [1],
        [{"purpose": "head", "body": {}, "sig": "00" * 64}],
        [{"purpose": "gift", "body": {}, "sig": "00" * 64}],
        [
            {
                "purpose": "head",
                "body": {"table_id": "t", "hand_no": 1, "i": 0, "h": "00" * 32},
                "sig": "00" * 64,
                "x": 1,
            }
        ],
    ],
)
def test_malformed_evidence_fails_evidence(items: Any) -> None:
    assert check_of(load(TWO), items) == "evidence"


# ----------------------------------------------------------------------------- arrangements (Appendix B.3)
def faces(t: dict[str, Any], ids: list[int]) -> list[str]:
    decks = 3 if t["log"][0]["header"]["rules"]["seats"] == 8 else 2
    return [str(card_of_id(c, decks)) for c in ids]


def end_counted(t: dict[str, Any]) -> dict[str, Any]:
    counted: dict[str, Any] = t["log"][-1]["events"][-1]["data"]["counted"]
    return counted


def valid_declare(t: dict[str, Any]) -> dict[str, Any]:
    return next(
        e["data"] for r in t["log"] for e in r.get("events", []) if e["kind"] == "declare" and e["data"]["valid"]
    )


def test_a_counted_hand_shown_in_another_order_verifies() -> None:
    """B.3: arrangements are judged by validity, never by equality with the recorder's."""
    t = load(RICH)
    entry = end_counted(t)["4"]
    entry["groups"] = [list(reversed(g)) for g in reversed(entry["groups"])]
    assert check_of(forge(t)) is None


def test_a_different_best_arrangement_verifies() -> None:
    """A counted hand shown with a card of a group swapped for the loose card of the same
    face from another deck reaches the same count: Appendix B.3 judges the groups shown,
    not their equality with the server's own search (the search may change; it did)."""
    swaps = 0
    for path in sorted((vectors.DIR / "adversarial").glob("*.json")) + sorted(vectors.DIR.glob("v2-*.json")):
        data = json.loads(path.read_text())
        t = data.get("transcript", data)
        if not isinstance(t, dict) or "log" not in t or t["log"][-1].get("events") is None:
            continue
        if not t["log"][-1]["events"] or "counted" not in t["log"][-1]["events"][-1].get("data", {}):
            continue
        if check_of(t) is not None or check_of(forge(copy.deepcopy(t))) is not None:
            continue  # a case whose point is another failure, or whose keys forge does not hold
        for seat, entry in end_counted(t).items():
            loose = {faces(t, [c])[0]: c for c in entry["loose"]}
            pair = next(
                ((gi, c, loose[f]) for gi, g in enumerate(entry["groups"]) for c in g
                 if (f := faces(t, [c])[0]) in loose and loose[f] != c),
                None,
            )  # fmt: skip
            if pair is None:
                continue
            gi, mine, other = pair
            group = entry["groups"][gi]
            group[group.index(mine)] = other
            entry["loose"][entry["loose"].index(other)] = mine
            assert check_of(forge(t)) is None, (path.name, seat)
            swaps += 1
            break
    assert swaps >= 1, swaps  # the vectors hold such a hand (two decks, a face both grouped and loose)


def test_a_valid_declare_shown_otherwise_verifies() -> None:
    """8H 9H JK | 4D 4C 6C, sixes wild: the joker and the wild six trade places (8H 9H 6C |
    4D 4C JK), still a valid declare, and the verifier judges the groups shown."""
    t = load(TWO)
    groups = valid_declare(t)["groups"]
    shown = [faces(t, g) for g in groups]
    with_joker = next(i for i, f in enumerate(shown) if "JK" in f)
    with_six = next(i for i, f in enumerate(shown) if i != with_joker and "6C" in f)
    j, k = shown[with_joker].index("JK"), shown[with_six].index("6C")
    groups[with_joker][j], groups[with_six][k] = groups[with_six][k], groups[with_joker][j]
    assert check_of(forge(t)) is None


def test_a_counted_hand_that_is_not_the_minimum_fails_points() -> None:
    t = load(RICH)
    entry = end_counted(t)["4"]
    pure = next(g for g in entry["groups"] if faces(t, g) == ["6H", "7H", "8H", "9H"])
    entry["groups"].remove(pure)
    entry["loose"] += pure
    r = verdict(forge(t))
    assert r.failure is not None and r.failure.check == "points" and "Appendix B.3" in r.failure.message


def test_a_counted_hand_with_an_invalid_group_fails_points() -> None:
    t = load(RICH)
    entry = end_counted(t)["4"]
    g = next(g for g in entry["groups"] if faces(t, g) == ["4S", "5S", "KC", "7S"])
    entry["groups"].remove(g)
    entry["groups"].append([c for c in g if faces(t, [c]) != ["KC"]])
    entry["loose"].append(next(c for c in g if faces(t, [c]) == ["KC"]))
    r = verdict(forge(t))
    assert r.failure is not None and r.failure.check == "points" and "not a valid group" in r.failure.message


def test_a_counted_hand_missing_a_card_fails_points() -> None:
    t = load(RICH)
    end_counted(t)["4"]["loose"] = []
    end_counted(t)["4"]["points"] = 0
    assert check_of(forge(t)) == "points"


def test_a_valid_declare_without_a_pure_sequence_fails_replay() -> None:
    t = load(TWO)
    groups = valid_declare(t)["groups"]
    merged = groups[0] + groups[1]  # 8H…KH 6C: one impure sequence; no pure one left
    valid_declare(t)["groups"] = [merged, groups[2], groups[3]]
    r = verdict(forge(t))
    assert r.failure is not None and r.failure.check == "replay" and "Appendix B.3" in r.failure.message
