"""A table's rules never change (RULES.md D38), and a house that changes them for one
hand is caught: by a directory of the table's transcripts (§14 ``rules``), by a
player's kept headers of two hands (§15 rule 3), and, before any of that, by the
player's client, which signs nothing under a header whose rules are not the table's.

The same for the button, which moves to the next seat each hand (RULES.md D3): the
bot signs nothing under a header of the hand after one it kept that another seat deals.

Found by the audit of 2026-12-07 (helper-55): the house signed one hand's header with
the commission raised from 500 to 10 000 bps, settled the hand by it (the winner got
nothing of the pot), and the hand verified — alone, in a directory beside the table's
earlier hand, and with the winner's evidence holding both headers."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

from service.app import TABLES
from service.bots import Bot
from service.startup import Running
from tests.conftest import Api, wait_for
from tests.test_web_table import start_bots, stop_bots
from verifier.batch import verify_folder
from verifier.hand import TableRules
from verifier.signing import Signer
from verifier.transcript import verify_transcript
from verifier.vectors import TEST_SIGNER, VectorHand, greedy, play_hand
from verifier.vectors_adversarial_rules import RAISED, TABLE

KEY = TEST_SIGNER.public_bytes


def two_hands(name: str, second: TableRules = RAISED) -> tuple[VectorHand, VectorHand]:
    one = play_hand(name, 0, TABLE, [1, 3], 1, greedy)  # D3: a table's first hand is dealt by its lowest seat
    two = play_hand(name, 1, second, [1, 3], 3, greedy, prev_head=str(one.rec.head))  # D3: seat 3 deals next
    assert one.rec.table_id == two.rec.table_id and (one.rec.hand_no, two.rec.hand_no) == (1, 2)
    return one, two


def winners_items(one: VectorHand, two: VectorHand) -> list[dict[str, Any]]:
    winner = two.rec.transcript()["result"]["winner"]
    return [*one.evidence[winner], *two.evidence[winner]]


def test_a_raised_hand_fails_beside_the_tables_earlier_hand(tmp_path: Path) -> None:
    """§14 ``rules``: hands 1 and 2 of one table, chained and signed by one key, under
    two rule sets: both files are named, and each verified alone still passes (the
    check is across the table's hands)."""
    one, two = two_hands("rules-dir")
    settlement = two.rec.transcript()["result"]["settlement"]
    assert settlement["commission"] == settlement["pot"] > 0  # what the house gained
    folder = tmp_path / "table"
    folder.mkdir()
    (folder / "hand-1.json").write_text(json.dumps(one.rec.transcript()))
    (folder / "hand-2.json").write_text(json.dumps(two.rec.transcript()))
    out = verify_folder(folder, KEY, None)
    assert not out.ok
    (rules,) = [f for f in out.findings if f.check == "rules"]
    assert sorted(Path(p).name for p in rules.files) == ["hand-1.json", "hand-2.json"]
    assert "hands 1; hands 2" in rules.message and "D38" in rules.message
    assert all(r.ok for r in out.results)
    same_one, same_two = two_hands("rules-dir-kept", TABLE)
    (folder / "hand-1.json").write_text(json.dumps(same_one.rec.transcript()))
    (folder / "hand-2.json").write_text(json.dumps(same_two.rec.transcript()))
    assert verify_folder(folder, KEY, None).ok


def test_a_raised_hand_fails_against_the_players_header_of_an_earlier_hand() -> None:
    """§15 rule 3: the winner's evidence holds the header of hand 1 (500 bps) the
    server signed; hand 2's transcript (10 000 bps) fails ``evidence`` at record 0,
    the kept rules expected, the transcript's found.  Without hand 1's items the
    same transcript passes with the winner's evidence: nothing else shows it."""
    one, two = two_hands("rules-ev")
    t = two.rec.transcript()
    report = verify_transcript(t, KEY, winners_items(one, two))
    assert report.failure is not None and report.failure.check == "evidence" and report.failure.record == 0
    assert report.failure.expected == TABLE.to_json() and report.failure.found == RAISED.to_json()
    assert "D38" in report.failure.message
    winner = t["result"]["winner"]
    assert verify_transcript(t, KEY, two.evidence[winner]).ok


def test_a_header_of_another_hand_signed_by_another_key_is_another_era() -> None:
    """§15 rule 3: a header item of another hand that the transcript's key did not sign
    (a rotated key, or anyone's) is counted with the other hands and holds nothing —
    else anyone could fail any hand by signing a header with other rules."""
    one, two = two_hands("rules-era")
    forged = Signer.generate()
    header = dict(one.rec.transcript()["log"][0]["header"])
    item = {"purpose": "header", "body": header, "sig": forged.sign("header", header, "rummy-pf/v2")}
    winner = two.rec.transcript()["result"]["winner"]
    report = verify_transcript(two.rec.transcript(), KEY, [item, *two.evidence[winner]])
    assert report.ok, report.failure
    assert report.summary["evidence"]["other_hands"] == 1


def _header(table: str, hand_no: int, rules: TableRules, key: bytes) -> dict[str, Any]:
    return {
        "table_id": table,
        "hand_no": hand_no,
        "rules": rules.to_json(),
        "seats": [{"seat": 0, "player_id": "me", "player_key": key.hex()}],
        "commit_ms": 10_000,
        "reveal_ms": 10_000,
    }


def test_the_bot_signs_nothing_under_a_header_not_of_its_table_hand_or_rules() -> None:
    """The client's side of D38 (``Bot._wrong_header``): another table, another hand,
    other rules than the snapshot showed when it sat — or than a header of the table
    the server signed before, which beats a snapshot (both come from the house, only
    one is signed)."""
    me = Signer.generate()
    bot = Bot("http://127.0.0.1:1", "token", "T", key=me)
    entry = {"seat": 0, "player_id": "me", "player_key": me.public_bytes.hex()}
    bot._rules = TABLE.to_json()
    assert bot._wrong_header(2, _header("T", 2, TABLE, me.public_bytes), entry) is None
    assert "another key" in str(
        bot._wrong_header(2, _header("T", 2, TABLE, me.public_bytes), {**entry, "player_key": "00" * 32})
    )
    assert "table U hand 2" in str(bot._wrong_header(2, _header("U", 2, TABLE, me.public_bytes), entry))
    assert "table T hand 3" in str(bot._wrong_header(2, _header("T", 3, TABLE, me.public_bytes), entry))
    assert "other rules" in str(bot._wrong_header(2, _header("T", 2, RAISED, me.public_bytes), entry))
    # a snapshot that shows the raised rules does not launder them: the signed header of hand 1 is kept
    bot._rules = RAISED.to_json()
    body = _header("T", 1, TABLE, me.public_bytes)
    bot.evidence.append({"purpose": "header", "body": body, "sig": "00" * 64})
    assert "other rules" in str(bot._wrong_header(2, _header("T", 2, RAISED, me.public_bytes), entry))
    assert bot._wrong_header(2, _header("T", 2, TABLE, me.public_bytes), entry) is None
    # the raised header of hand 2, refused and kept as proof, does not become the table's rules
    bot.evidence.append({"purpose": "header", "body": _header("T", 2, RAISED, me.public_bytes), "sig": "00" * 64})
    assert "other rules" in str(bot._wrong_header(3, _header("T", 3, RAISED, me.public_bytes), entry))
    assert bot._wrong_header(3, _header("T", 3, TABLE, me.public_bytes), entry) is None


def test_the_bot_signs_nothing_under_a_header_whose_button_did_not_move() -> None:
    """The client's side of D3 (``Bot._wrong_dealer``): with the kept header of the hand
    before (dealt by seat 3 of seats 0, 1 and 3), the next hand must be dealt by the
    next of its own seats after seat 3, wrapping — seat 0, or seat 1 if seat 0 is not
    dealt in; without that header (an earlier hand, or none) nothing is checked."""
    me = Signer.generate()
    bot = Bot("http://127.0.0.1:1", "token", "T", key=me)
    bot._rules = TABLE.to_json()
    entry = {"seat": 1, "player_id": "me", "player_key": me.public_bytes.hex()}

    def header(hand_no: int, dealer: int, seats: list[int]) -> dict[str, Any]:
        listed = [{"seat": s, "player_id": f"p{s}", "player_key": "00" * 32} for s in seats]
        return {**_header("T", hand_no, TABLE, me.public_bytes), "dealer": dealer, "seats": listed}

    assert bot._wrong_header(5, header(5, 1, [0, 1, 3]), entry) is None  # no header of hand 4 kept
    bot.evidence.append({"purpose": "header", "body": header(3, 0, [0, 1, 3]), "sig": "00" * 64})
    assert bot._wrong_header(5, header(5, 1, [0, 1, 3]), entry) is None  # hand 3 is not the hand before
    bot.evidence.append({"purpose": "header", "body": header(4, 3, [0, 1, 3]), "sig": "00" * 64})
    assert bot._wrong_header(5, header(5, 0, [0, 1, 3]), entry) is None
    assert bot._wrong_header(5, header(5, 1, [1, 3]), entry) is None
    assert "is dealt by seat 3, not seat 0" in str(bot._wrong_header(5, header(5, 3, [0, 1, 3]), entry))
    assert "is dealt by seat 2, not seat 1" in str(bot._wrong_header(5, header(5, 2, [1, 2]), entry))


async def test_bots_sign_nothing_under_rules_the_house_raised_and_their_evidence_proves_it(
    api: Api, server: Running
) -> None:
    """A live server made dishonest between two hands (the table's rules in memory
    raised to 10 000 bps, as a house would to keep a pot): the bots, restarted with the
    evidence of hand 1, commit and move nothing in hand 2, which the clock plays out
    (D16, D21); its transcript verifies alone but fails with either bot's evidence."""
    table = await api.table(seats=4, point_value=1, commission_bps=500, turn_seconds=2, max_missed_turns=1)
    players = [await api.player(f"d38-{n}", deposit=50_000) for n in range(2)]
    first = [Bot(server.url, p["token"], table, fast=True, max_hands=1, key=p["signer"]) for p in players]
    await asyncio.wait_for(asyncio.gather(*(b.run() for b in first)), timeout=240)
    hand_1 = first[0].hands_seen[0]["hand_no"]
    facts = server.app[TABLES][table].core.facts
    assert facts is not None and facts.rules.commission_bps == 500
    facts.rules = dataclasses.replace(facts.rules, commission_bps=10_000)  # the house cheats from here on
    second = [
        Bot(server.url, p["token"], table, fast=True, key=p["signer"], evidence=list(b.evidence))
        for p, b in zip(players, first, strict=True)
    ]
    tasks = start_bots(second)
    try:
        # the first hand dealt after the change (a hand dealt before it, while the first
        # bots were still closing their sockets, is played as any other)
        await wait_for(lambda: all(b.shunned for b in second), timeout=120)
        raised = min(second[0].shunned)
        await wait_for(lambda: any(h["hand_no"] == raised for b in second for h in b.hands_seen), timeout=120)
    finally:
        await stop_bots(tasks)
    assert raised > hand_1 and all("other rules" in b.shunned[raised] for b in second)
    result = next(h for h in second[0].hands_seen if h["hand_no"] == raised)
    t = await api.call("GET", result["transcript"], token=None, expect=200)
    assert t["log"][0]["header"]["rules"]["commission_bps"] == 10_000
    assert [c["commit"] for c in t["log"][1]["commitments"]["commits"]] == [None, None]
    assert not [r for r in t["log"] if r.get("psig")]  # no move of theirs: the clock's alone
    key = bytes.fromhex(t["log"][0]["header"]["public_key"])
    assert verify_transcript(t, key).ok  # alone, the hand looks sound
    for b in second:
        report = verify_transcript(t, key, b.evidence)
        assert report.failure is not None and report.failure.check == "evidence", report.failure
        assert report.failure.expected["commission_bps"] == 500 and report.failure.found["commission_bps"] == 10_000


def test_a_kept_header_of_the_hand_before_or_after_holds_the_dealer() -> None:
    """§15 rule 3, D3: hand 2 (dealt by seat 3 after hand 1's seat 1) passes with seat
    1's evidence of both hands, from either side; hand 2's header dealt by seat 1 again
    (or hand 1's by seat 3) fails hand 1's transcript and hand 2's, the next seat expected; a
    header item of the hand before or after with no integer dealer or no list of
    seats (re-signed: the house's word) has no such dealer, ``null`` expected; and a
    header two hands away holds no dealer."""
    one, two = two_hands("dealer-ev", TABLE)
    items = [*one.evidence[1], *two.evidence[1]]
    assert verify_transcript(one.rec.transcript(), KEY, items).ok
    assert verify_transcript(two.rec.transcript(), KEY, items).ok

    def with_header(hand_no: int, **change: Any) -> list[dict[str, Any]]:
        out = [dict(x) for x in items]
        for x in out:
            if x["purpose"] == "header" and x["body"]["hand_no"] == hand_no:
                x["body"] = {**x["body"], **change}
                x["sig"] = TEST_SIGNER.sign("header", x["body"], "rummy-pf/v2")
        return out

    for t, other in ((one.rec.transcript(), 2), (two.rec.transcript(), 1)):
        r = verify_transcript(t, KEY, with_header(other, dealer=1 if other == 2 else 3))
        assert r.failure is not None and r.failure.check == "evidence" and r.failure.record == 0, r.failure
        assert (r.failure.expected, r.failure.found) == ((3, 1) if other == 2 else (1, 3)) and "D3" in r.failure.message
        for change in ({"dealer": "3"}, {"seats": []}, {"seats": [{"seat": "1"}]}):
            r = verify_transcript(t, KEY, with_header(other, **change))
            assert r.failure is not None and r.failure.check == "evidence" and r.failure.expected is None, change
    first = next(x["body"] for x in items if x["purpose"] == "header")
    far = {**first, "hand_no": 4, "dealer": 1}  # hand 4: two hands after hand 2, not checked
    item = {"purpose": "header", "body": far, "sig": TEST_SIGNER.sign("header", far, "rummy-pf/v2")}
    assert verify_transcript(two.rec.transcript(), KEY, [*items, item]).ok
