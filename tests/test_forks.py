"""A fork seen on receipt (docs/fairness.md §15, "On receipt"; :mod:`verifier.forks`):
two signed items that give one record of a hand two links prove by themselves that
the house signed two histories.  The client that holds both says so at once; honest
play never makes one."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.async_api import Browser

from service.startup import Running
from service.tablecore.io import TellUpdate
from service.telling import Teller
from tests.conftest import Api
from tests.test_ack_echo import flip, person_beside_a_bot, two_bots_play_a_hand
from tests.test_recovery import key_of
from tests.test_web_table import MY_MOVE, play_my_turn
from verifier.chain import head_body
from verifier.forks import Link, fork_with, forks, links, note
from verifier.record import PROTOCOL
from verifier.transcript import verify_transcript

H = {i: f"{i:02x}" * 32 for i in range(8)}  # record i's link, in the examples below


def head(i: int, h: str, hand_no: int = 4) -> dict[str, Any]:
    return {"purpose": "head", "body": {"table_id": "t", "hand_no": hand_no, "i": i, "h": h}, "sig": "00" * 64}


def ack(i: int, h: str, prev: str, outcome: str = "accepted", kind: str = "discard") -> dict[str, Any]:
    body = {"table_id": "t", "hand_no": 4, "seat": 1, "i": i, "h": h, "prev": prev, "psig": "11" * 64}
    body |= {"move": {"kind": kind, "seat": 1}, "arrived": 5, "outcome": outcome, "code": None}
    return {"purpose": "ack", "body": body, "sig": "00" * 64}


def receipt(kind: str, prev: str) -> dict[str, Any]:
    body = {"table_id": "t", "hand_no": 4, "seat": 1, "kind": kind, "value": "22" * 32, "prev": prev}
    return {"purpose": "receipt", "body": body, "sig": "00" * 64}


def test_what_each_item_says_the_records_are() -> None:
    assert links(head(5, H[5])) == (Link("t", 4, 5, H[5]),)
    # an accepted action is recorded right after the record it was signed over
    assert links(ack(5, H[5], H[4])) == (Link("t", 4, 5, H[5]), Link("t", 4, 4, H[4]))
    # an accepted seed is taken over record 0 (commit) or 1 (reveal), which its ack is the head of
    assert links(ack(0, H[0], H[0], kind="commit")) == (Link("t", 4, 0, H[0]), Link("t", 4, 0, H[0]))
    assert links(ack(1, H[1], H[1], kind="reveal"))[1] == Link("t", 4, 1, H[1])
    # a refusal's prev may be stale (that is what justifies it): it names no record
    assert links(ack(5, H[5], H[2], outcome="refused")) == (Link("t", 4, 5, H[5]),)
    assert links(receipt("commit", H[0])) == (Link("t", 4, 0, H[0]),)
    assert links(receipt("reveal", H[1])) == (Link("t", 4, 1, H[1]),)
    header = {"purpose": "header", "body": {"table_id": "t", "hand_no": 4}, "sig": "00" * 64}
    for nothing in (
        header,
        {"purpose": "player", "body": {"table_id": "t", "hand_no": 4, "seat": 1}, "sig": ""},
        head(-1, H[0]),
        {"purpose": "head", "body": {"table_id": "t", "hand_no": True, "i": 1, "h": H[1]}},
        {"purpose": "head", "body": {"table_id": "t", "hand_no": 4, "i": 1.0, "h": H[1]}},
        {"purpose": "head", "body": ["t", 4, 1]},
    ):
        assert links(nothing) == (), nothing


@pytest.mark.parametrize(
    ("earlier", "later", "i"),
    [
        (head(5, H[5]), head(5, H[6]), 5),
        (head(4, H[4]), ack(5, H[5], H[6]), 4),  # the ack's prev says record 4 is another
        (ack(5, H[5], H[4]), head(4, H[3]), 4),
        (receipt("commit", H[0]), head(0, H[7]), 0),
        (ack(1, H[1], H[1], kind="reveal"), receipt("reveal", H[2]), 1),
    ],
)
def test_two_links_for_one_record_are_a_fork(earlier: dict[str, Any], later: dict[str, Any], i: int) -> None:
    (fork,) = forks([earlier, later])
    assert (fork.table_id, fork.hand_no, fork.i) == ("t", 4, i)
    assert fork.expected != fork.found and fork.first is earlier and fork.second is later
    assert f"record {i} " in str(fork) and "two histories" in str(fork)


def test_what_is_not_a_fork() -> None:
    same = [head(5, H[5]), head(5, H[5]), ack(5, H[5], H[4]), head(4, H[4]), receipt("commit", H[0])]
    assert forks(same) == []
    assert forks([head(5, H[5]), head(5, H[6], hand_no=5)]) == []  # another hand's record 5
    assert forks([ack(5, H[5], H[4]), ack(6, H[6], H[0], outcome="refused")]) == []  # a stale refusal
    seen: dict[tuple[str, int, int], tuple[str, Any]] = {}
    note(seen, head(5, H[5]))
    note(seen, head(5, H[6]))  # the first word on a record stays
    assert seen[("t", 4, 5)][0] == H[5]
    assert fork_with(seen, head(5, H[6])) is not None and fork_with(seen, head(6, H[6])) is None


async def test_honest_play_makes_no_fork(api: Api, server: Running) -> None:
    """Everything two bots keep over a hand names one link a record, and names many."""
    table, bots = await two_bots_play_a_hand(api, server, "no-fork")
    for b in bots:
        assert b.forks == []
        kept = b.evidence_of(table, b.hands_seen[0]["hand_no"])
        named = {(x.i, x.h) for item in kept for x in links(item)}
        assert len({i for i, _ in named}) > 4 and forks(kept) == []
        t = await api.call("GET", b.hands_seen[0]["transcript"], expect=200)
        assert all(t["log"][i]["h"] == h for i, h in named)


FORK = 4  # the record the house shows a second time, with another link


def forking_house(monkeypatch: pytest.MonkeyPatch, record: int = FORK) -> list[dict[str, Any]]:
    """After ``record`` + 1 of each hand is told, the house pushes every connection a
    second update for ``record`` whose link is another, its head signed with the hand's
    key: it shows the table two histories.  Returns the forged frames, of every table
    the server is playing (a table an earlier test left playing at the same server is
    forged too: a test takes its own table's, :func:`forged_at`)."""
    forged: list[dict[str, Any]] = []
    tell = Teller.tell_update

    def forking(self: Teller, u: TellUpdate, mover: Any = None) -> dict[str, Any] | None:
        mine = tell(self, u, mover)
        if u.record["i"] == record + 1:
            rec = u.hand.recorder
            h = flip(str(rec.records[record]["h"]))
            body = head_body(self.table_id, u.hand.hand_no, record, h)
            frame = {"type": "update", "table_id": self.table_id, "hand_no": u.hand.hand_no, "i": record, "h": h}
            frame |= {"head_sig": rec.signer.sign("head", body, PROTOCOL), "events": [], "changes": {}}
            frame["deadline"] = None
            forged.append(frame)
            for c in list(self.by_player.values()):
                c.push(frame)
        return mine

    monkeypatch.setattr(Teller, "tell_update", forking)
    return forged


def forged_at(forged: list[dict[str, Any]], table: str) -> list[dict[str, Any]]:
    """The frames :func:`forking_house` forged at ``table``."""
    return [f for f in forged if f["table_id"] == table]


async def test_the_bots_see_a_fork_at_once(api: Api, server: Running, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both bots hold the two heads of record FORK, each verified: each says so at once.
    The evidence then fails against the transcript whichever history is published —
    and the two heads need no transcript to prove it."""
    forged = forking_house(monkeypatch)
    table, bots = await two_bots_play_a_hand(api, server, "fork")
    t = await api.call("GET", bots[0].hands_seen[0]["transcript"], expect=200)
    mine = [f for f in forged_at(forged, table) if f["hand_no"] == t["log"][0]["header"]["hand_no"]]
    assert len(mine) == 1, forged
    true_h = t["log"][FORK]["h"]
    key = await key_of(api)
    for b in bots:
        assert [(f.i, f.expected, f.found) for f in b.forks] == [(FORK, true_h, mine[0]["h"])]
        kept = b.evidence_of(table, t["log"][0]["header"]["hand_no"])
        assert len(forks(kept)) == 1 and b.rejected == []  # both heads verify: both are evidence
        report = verify_transcript(t, key, kept)
        assert not report.ok and report.failure is not None and report.failure.check == "evidence"
        honest = [x for x in kept if not (x["purpose"] == "head" and x["body"]["h"] == mine[0]["h"])]
        assert verify_transcript(t, key, honest).ok  # what failed was the forged head


async def test_the_page_sees_a_fork_at_once(
    server: Running, api: Api, browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same house against a person: the page keeps both heads (each verifies), says
    in the table's log and the hand's checks that the server signed two histories, and
    plays on."""
    forged = forking_house(monkeypatch)
    async with person_beside_a_bot(server, api, browser, "Forked") as (page, held):
        while not forged_at(forged, held.table_id):
            await page.wait_for_function(MY_MOVE, timeout=60_000)
            if forged_at(forged, held.table_id):
                break
            await play_my_turn(page, declare=False)  # the hand must reach the record
        await page.wait_for_selector("#fork-check", timeout=30_000)
        assert f"record {FORK}" in (await page.text_content("#fork-check") or "")
        log = await page.evaluate("RummyTable.state.t.log.map((l) => l.text)")
        assert any(f"two different records {FORK} of hand" in x for x in log), log
        kept = json.loads(
            await page.evaluate(
                """(() => { const h = RummyTable.state.t.hand;
                    return JSON.stringify(RummyTable.evidence(h.hand_no)); })()"""
            )
        )
        heads = {x["body"]["h"] for x in kept if x["purpose"] == "head" and x["body"]["i"] == FORK}
        assert forged_at(forged, held.table_id)[0]["h"] in heads and len(heads) == 2
        assert len(forks(kept)) == 1
        await page.wait_for_function(MY_MOVE, timeout=60_000)  # the hand goes on
