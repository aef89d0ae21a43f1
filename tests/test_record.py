"""The v2 recorder (verifier/record.py): player signatures are checked before a move
becomes a record, and a stored log is rebuilt record by record through the same
methods that wrote it (D32), failing at the first record that does not reproduce
(D33)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from verifier import vectors
from verifier.chain import commit_move, move_body
from verifier.errors import RuleError
from verifier.fairness import PROTOCOL_V2, canonical, lp, player_commit
from verifier.hand import DrawClosed, Leave, TableRules, TimeOut, action_to_json
from verifier.record import HandRecorder, RestoreError

V2 = sorted(p.name for p in Path(vectors.DIR).glob("v2-transcript-*.json"))


def load(name: str) -> dict[str, Any]:
    t: dict[str, Any] = json.loads((Path(vectors.DIR) / name).read_text(encoding="utf-8"))["transcript"]
    return t


@pytest.mark.parametrize("name", V2)
def test_a_stored_log_rebuilds_to_the_same_transcript(name: str) -> None:
    t = load(name)
    revealed = bool(t["server_seed"])
    rec = HandRecorder.from_header(
        vectors.TEST_SIGNER, t["log"][0]["header"], bytes.fromhex(t["server_seed"]) if revealed else b""
    )
    if revealed:
        for r in t["log"]:
            rec.restore(r)
    else:  # the seed is lost: records are adopted as far as their chain holds, then voided
        rec.adopt(t["log"][:-1])
        assert len(rec.records) == len(t["log"]) - 1
        rec.void(t["log"][-1]["reason"], t["log"][-1]["t"])
        again = HandRecorder.from_header(vectors.TEST_SIGNER, t["log"][0]["header"], b"")
        again.adopt(t["log"])  # a stored void is adopted with the rest: voiding is never repeated
        assert again.voided and again.records == t["log"]
    assert rec.transcript(seed_revealed=revealed) == t


@pytest.mark.parametrize(
    "where,change",
    [
        (0, lambda r: r["header"].__setitem__("dealer", 3)),
        (1, lambda r: r["commitments"]["commits"][0].__setitem__("commit", "00" * 32)),
        (2, lambda r: r["reveals"][0].__setitem__("status", "withheld")),
        (3, lambda r: r["events"][1]["private"]["cards"].reverse()),
        (5, lambda r: r.__setitem__("t", r["t"] + 1)),
        (6, lambda r: r["psig"].__setitem__("sig", "00" * 64)),
    ],
)
def test_restore_stops_at_the_first_record_that_does_not_reproduce(where: int, change: Any) -> None:
    t = load("v2-transcript-4seat-two-players.json")
    log = copy.deepcopy(t["log"])
    change(log[where])
    rec = HandRecorder.from_header(vectors.TEST_SIGNER, log[0]["header"], bytes.fromhex(t["server_seed"]))
    with pytest.raises(RestoreError) as e:
        for r in log:
            rec.restore(r)
    assert e.value.i == where
    assert len(rec.records) == where  # the verified prefix, nothing more


def fresh_hand() -> tuple[HandRecorder, dict[int, Any]]:
    keys = {s: vectors.player_signer("unit", s) for s in (0, 1)}
    rec = HandRecorder(
        signer=vectors.TEST_SIGNER,
        table_id="t-unit",
        hand_no=1,
        rules=TableRules(seats=4),
        seats=[(s, f"p{s}", keys[s].public_bytes) for s in keys],
        dealer=0,
        server_seed=b"\x07" * 32,
    )
    rec.open(1000)
    return rec, keys


def sign(keys: dict[int, Any], rec: HandRecorder, seat: int, prev: str, move: dict[str, Any]) -> str:
    sig: str = keys[seat].sign("move", move_body(rec.table_id, rec.hand_no, prev, move), PROTOCOL_V2)
    return sig


def test_moves_need_the_seats_own_signature_over_the_current_head() -> None:
    rec, keys = fresh_hand()
    c0, c1 = player_commit(0, b"a" * 32), player_commit(1, b"b" * 32)
    h0 = rec.head
    with pytest.raises(RuleError) as e:  # seat 1's key signing seat 0's commitment
        rec.check_commit(0, c0, sign(keys, rec, 1, h0, commit_move(0, c0)))
    assert e.value.code == "bad_signature"
    sig0 = sign(keys, rec, 0, h0, commit_move(0, c0))
    assert rec.check_commit(0, c0, sig0) is None
    ack = rec.ack(0, commit_move(0, c0), h0, sig0, arrived=1500)
    assert ack["purpose"] == "ack" and ack["body"] == {
        "table_id": "t-unit",
        "hand_no": 1,
        "seat": 0,
        "move": {"kind": "commit", "seat": 0, "commit": c0.hex()},
        "prev": h0,
        "psig": sig0,
        "i": 0,
        "h": h0,
        "arrived": 1500,
        "outcome": "accepted",
        "code": None,
    }
    assert (
        vectors.TEST_SIGNER.public_key.verify(bytes.fromhex(ack["sig"]), lp("rummy-pf/v2/ack") + canonical(ack["body"]))
        is None
    )
    rec.commitments(
        {0: (c0, sign(keys, rec, 0, h0, commit_move(0, c0))), 1: (c1, sign(keys, rec, 1, h0, commit_move(1, c1)))},
        2000,
    )
    with pytest.raises(RuleError) as e:
        rec.check_reveal(0, b"x" * 32, "00" * 64)
    assert e.value.code == "seed_mismatch"
    from verifier.chain import reveal_move

    h1 = rec.head
    rec.reveal(
        {
            0: (b"a" * 32, sign(keys, rec, 0, h1, reveal_move(0, b"a" * 32))),
            1: (b"b" * 32, sign(keys, rec, 1, h1, reveal_move(1, b"b" * 32))),
        },
        3000,
    )
    rec.deal(3005)
    assert rec.state is not None
    seat = rec.state.turn
    head = rec.head
    draw = DrawClosed(seat)
    with pytest.raises(RuleError) as e:  # signed over an older head
        rec.prepare(draw, {"prev": h1, "sig": sign(keys, rec, seat, h1, action_to_json(draw))}, 4000)
    assert e.value.code == "stale_head"
    with pytest.raises(RuleError) as e:  # no signature at all
        rec.prepare(draw, None, 4000)
    assert e.value.code == "bad_signature"
    with pytest.raises(RuleError) as e:  # the clock's move is never signed
        rec.prepare(TimeOut(seat), {"prev": head, "sig": "00" * 64}, 4000)
    assert e.value.code == "bad_signature"
    assert len(rec.records) == 4  # nothing above was recorded
    record, _ = rec.act(draw, {"prev": head, "sig": sign(keys, rec, seat, head, action_to_json(draw))}, 4000)
    ack = rec.ack(seat, action_to_json(draw), head, "ab" * 64, arrived=4000, i=record["i"])
    assert (ack["body"]["i"], ack["body"]["h"]) == (4, record["h"])  # the accepted action's record: its head
    # The same draw sent again (its reply lost: a crash, a cut connection) is stale
    # before it is illegal: judged by the head it was signed over, not by the rules in
    # a state it was not signed for ("already drawn").
    with pytest.raises(RuleError) as e:
        rec.prepare(draw, {"prev": head, "sig": sign(keys, rec, seat, head, action_to_json(draw))}, 4100)
    assert e.value.code == "stale_head"
    # A leave is signed over the record it follows, like every action (issue 16: it
    # used to be allowed over any earlier record, so the server chose when it counted).
    other = 1 - seat
    leave = Leave(other)
    with pytest.raises(RuleError) as e:
        rec.prepare(leave, {"prev": h0, "sig": sign(keys, rec, other, h0, action_to_json(leave))}, 4500)
    assert e.value.code == "stale_head"
    head = rec.head
    refused = rec.ack(other, action_to_json(leave), h0, "cd" * 64, arrived=4400, code="stale_head")
    assert refused["body"]["outcome"] == "refused" and (refused["body"]["i"], refused["body"]["h"]) == (4, head)
    rec.act(leave, {"prev": head, "sig": sign(keys, rec, other, head, action_to_json(leave))}, 4500)
    assert rec.ended and rec.state is not None and rec.state.result is not None
    assert rec.state.result.winner == seat


@pytest.mark.parametrize(
    "key",
    [
        bytes.fromhex("01" + "00" * 31),  # the identity
        bytes.fromhex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"),  # order 8
        (2**255 - 19 + 3).to_bytes(32, "little"),  # not canonical
    ],
)
def test_the_recorder_opens_no_hand_with_a_key_the_verifier_refuses(key: bytes) -> None:
    """§9, §13: strict keys, one key per seat — the server never makes a transcript
    that fails format."""
    good = vectors.player_signer("unit", 0).public_bytes
    rules = TableRules(seats=4)
    for seats in ([(0, "a", good), (1, "b", key)], [(0, "a", good), (1, "b", good)]):
        with pytest.raises(ValueError):
            HandRecorder(vectors.TEST_SIGNER, "t", 1, rules, seats, 0, b"\x01" * 32)


def test_a_hand_voided_after_its_reveals_publishes_its_seed() -> None:
    """§12 (issue 16): once record 2 is made, the seed is published, void or not."""
    rec, keys = fresh_hand()
    rec.commitments({}, 11_000)
    rec.reveal({}, 12_000)
    rec.void("voided by the operator (D33)", 13_000)
    t = rec.transcript(seed_revealed=False)
    assert t["server_seed"] == (b"\x07" * 32).hex() and len(t["deck"]) == 106


def test_a_reload_trusts_only_the_exact_signatures_its_own_recorder_checked() -> None:
    """A table that reloads after a failed write replays its own moves without
    verifying each signature again (HandRecorder.trust) — but a stored move that is
    not exactly one it checked (another card under the same signature) is still
    refused, and a recorder of another hand trusts nothing."""
    t = load("v2-transcript-4seat-two-players.json")
    seed = bytes.fromhex(t["server_seed"])
    checks: list[str] = []

    def counted(_key: bytes, sig: str, _message: bytes) -> bool:
        """The fast check's hook, counting every signature checked (it says False: the
        strict check decides)."""
        checks.append(sig)
        return False

    def recorder(header: dict[str, Any]) -> HandRecorder:
        return HandRecorder.from_header(vectors.TEST_SIGNER, header, seed, accepts=counted)

    first = recorder(t["log"][0]["header"])
    for r in t["log"]:
        first.restore(r)
    signed = [r["psig"]["sig"] for r in t["log"] if r["type"] == "action" and r["psig"]]
    assert signed and set(signed) <= set(checks)

    checks.clear()
    again = recorder(t["log"][0]["header"])
    again.trust(first)
    for r in t["log"]:
        again.restore(r)
    assert again.records == first.records and again.state == first.state
    assert checks == []  # not one signature checked again: commitments, reveals, actions
    again.trust(None)  # the replay done, the old recorder is let go
    assert again._trusted is None

    # A stored discard whose card was changed, its signature kept: checked, refused.
    n = next(i for i, r in enumerate(t["log"]) if r["type"] == "action" and r["action"]["kind"] == "discard")
    log = copy.deepcopy(t["log"])
    seat = log[n]["action"]["seat"]
    before = HandRecorder.from_header(vectors.TEST_SIGNER, t["log"][0]["header"], seed)
    for r in t["log"][:n]:
        before.restore(r)
    assert before.state is not None
    # another card of that seat's hand at the time: a legal discard, but not the one signed
    other = next(c for c in before.state.seat(seat).cards if c != log[n]["action"]["card"])
    log[n]["action"]["card"] = other
    tampered = recorder(t["log"][0]["header"])
    tampered.trust(first)
    checks.clear()
    with pytest.raises(RestoreError) as e:
        for r in log:
            tampered.restore(r)
    assert e.value.i == n and "signed" in e.value.message
    assert checks == [log[n]["psig"]["sig"]]  # the one move not as first checked: checked

    # Another hand's recorder (another hand number) lends no trust.
    header = copy.deepcopy(t["log"][0]["header"])
    header["hand_no"] += 1
    stranger = HandRecorder.from_header(vectors.TEST_SIGNER, header, seed)
    stranger.trust(first)
    assert stranger._verified == set() and stranger._trusted is None
