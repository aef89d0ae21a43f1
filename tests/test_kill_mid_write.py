"""kill -9 while a write of the table is in flight, with real processes: ``serve
--workers 2`` in a process of its own, on a database reached through a proxy.  The
worker that owns the table is killed (SIGKILL) while a write is in one of two states:

1. **stored, not told** — PostgreSQL has committed it, and the proxy holds its answer
   back: it happened, nobody was told;
2. **never stored** — the proxy withholds the statement from PostgreSQL: it did not
   happen, and the worker is gone before it could know either way.

The writes: a seat's discard, a seat's reveal (lost, it would be charged as withheld,
D29), the reveals and the deal once both seeds are in, the start of a hand (its row,
each seat's hold, its header), and the commitment list as the commit window closes
without a seat (D21, D32).  The players
reconnect once a worker has taken the table again.  What they must be able to rely on
(docs/api.md, "Error codes": ``moved``; D32): the snapshot tells them which it was; the
same signed move sent again is refused as ``stale_head`` and changes nothing (1), or is
accepted as the record the dead worker never wrote (2); nobody is charged for the crash
(no timeout in the transcript), nothing is recorded twice, each stake is held once, and
the hand plays on to its end: settled once, its transcript verifies, the ledger
balances, and the mover's acks hold as evidence against it (§15: the refusal of (1) is
justified, as a stale move).  (``tests/test_store_faults.py`` loses a COMMIT answer
in-process; this is the same fault with the process really gone.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_for
from tests.killroom import NEVER, STORED, Room, room, settled_after_the_kill, value
from tests.test_server import draw_and_discard, latest_view, seat_of, seated, through_seeds
from tests.workerserver import WorkerServer
from tests.wsclient import Client
from verifier.chain import reveal_move
from verifier.fairness import player_commit
from verifier.signing import load_public_key
from verifier.transcript import verify_transcript

INSTANTS = (STORED, NEVER)
HANDS = r"INSERT INTO hands \("  # a hand's start (service.tablestore's _deal)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("instant", INSTANTS)
async def test_a_worker_killed_while_a_move_is_written_neither_loses_it_nor_charges_the_mover(
    instant: str, pg_dsn: str, tmp_path: Path
) -> None:
    async with room(pg_dsn, tmp_path, "killwrite") as r:
        table = r.table
        async with r.client(r.a) as ca, r.client(r.b) as cb:
            hand_no = await through_seeds(table, ca, cb)
            await draw_and_discard(table, hand_no, ca, cb, 1)
            view = latest_view(ca)
            mover_is_a = view["turn"] == view["me"]["seat"]
            mover = ca if mover_is_a else cb
            seat = seat_of(mover)
            drawn = await mover.act(table, hand_no, seat, {"kind": "draw_closed"})
            assert drawn["type"] == "reply", drawn
            drawn_i = int(drawn["result"]["i"])
            await wait_for(lambda: latest_view(mover)["phase"] == "discard")
            card = latest_view(mover)["me"]["cards"][0]
            discard = signed_discard(mover, table, hand_no, seat, card)
            index, epoch = await r.owner()
            r.arm(instant)
            await mover.send_raw(json.dumps({"id": "the-discard", **discard}))
            await wait_for(lambda: r.proxy.holding > 0, timeout=60)
            stored = await stored_records(r.dsn, table, hand_no)
            assert stored == (drawn_i + 2 if instant == STORED else drawn_i + 1), stored
            r.kill(index)
        await r.back(index, epoch)
        # Both come back; the snapshot tells the mover what became of its discard.
        async with r.client(r.a) as ca, r.client(r.b) as cb:
            mover, other = (ca, cb) if mover_is_a else (cb, ca)
            snap = await rejoined(r.server, mover, table)
            await rejoined(r.server, other, table)
            again = await mover.request(discard)
            if instant == STORED:
                assert snap["i"] == drawn_i + 1, snap
                assert [e for e in snap["events"] if e["kind"] == "discard" and e["seat"] == seat][-1:] == [
                    {"kind": "discard", "seat": seat, "card": card, "by_clock": False, "i": drawn_i + 1}
                ], snap["events"]
                assert snap["view"]["turn"] != seat
                assert again["type"] == "error" and again["error"]["code"] == "stale_head", again
                kept = again["error"]["ack"]
            else:
                assert snap["i"] == drawn_i and snap["view"]["phase"] == "discard", snap
                assert snap["view"]["turn"] == seat
                assert again["type"] == "reply" and again["result"]["i"] == drawn_i + 1, again
                assert again["result"]["ack"]["body"]["outcome"] == "accepted"
                kept = again["result"]["ack"]
            assert await stored_records(r.dsn, table, hand_no) == drawn_i + 2
            # The hand plays on: the other seat takes its turn, the mover leaves.
            other_seat = next(x for x in snap["view"]["seats"] if x["seat"] != seat)["seat"]
            got = await other.act(table, hand_no, other_seat, {"kind": "draw_closed"})
            assert got["type"] == "reply", got
            got = await other.act(table, hand_no, other_seat, {"kind": "discard", "card": drawn_card(got)})
            assert got["type"] == "reply", got
            await mover.wait_frame(lambda f: f.get("type") == "update" and f.get("i") == drawn_i + 3)
            assert (await mover.leave(table, hand_no, seat))["type"] == "reply"
        t = await settled(r, hand_no, index, epoch, [drawn["result"]["ack"], kept])
        moves = [x["action"] for x in t["log"][drawn_i:]]
        assert moves == [
            {"kind": "draw_closed", "seat": seat},
            {"kind": "discard", "seat": seat, "card": card},
            {"kind": "draw_closed", "seat": other_seat},
            {"kind": "discard", "seat": other_seat, "card": moves[3].get("card")},
            {"kind": "leave", "seat": seat},
        ], moves


@pytest.mark.timeout(300)
@pytest.mark.parametrize("instant", INSTANTS)
async def test_a_worker_killed_while_a_reveal_is_written_never_charges_it_as_withheld(
    instant: str, pg_dsn: str, tmp_path: Path
) -> None:
    """The same two instants for a seed: bo's reveal, sent in time, is in flight at the
    kill.  Lost, it would be charged as withheld (D29: a first drop, 20 points); bo
    rejoins, sends the same signed reveal again, and the hand deals with both seeds."""
    async with room(pg_dsn, tmp_path, "killwrite") as r:
        table = r.table
        async with r.client(r.a) as ca, r.client(r.b) as cb:
            seeds, hand_no, commitments = await ann_revealed(table, ca, cb, 7)
            bo_seat, bo_seed = seeds[cb]
            sig = cb.sign(table, hand_no, commitments["h"], reveal_move(bo_seat, bo_seed))
            reveal = {"type": "reveal", "table_id": table, "hand_no": hand_no, "seed": bo_seed.hex(), "sig": sig}
            index, epoch = await r.owner()
            r.arm(instant)
            await cb.send_raw(json.dumps({"id": "the-reveal", **reveal}))
            await wait_for(lambda: r.proxy.holding > 0, timeout=60)
            assert await stored_seed(r.dsn, table, hand_no, bo_seat) == (bo_seed if instant == STORED else None)
            r.kill(index)
        await r.back(index, epoch)
        async with r.client(r.a) as ca, r.client(r.b) as cb:
            ann = await rejoined(r.server, ca, table)
            snap = await rejoined(r.server, cb, table)
            if snap["i"] < 3:  # in the reveal phase; else both seeds were in and the new owner dealt
                assert snap["phase"] == "reveal" and snap["revealed"] is (instant == STORED), snap
                again = await cb.request(reveal)
                if instant == NEVER:
                    assert again["type"] == "reply" and again["result"]["ack"]["body"]["outcome"] == "accepted"
                await ca.wait_frame(lambda f: f.get("type") == "update" and f.get("i") == 3, timeout=60)
            else:
                assert instant == STORED and snap["revealed"] is True, snap
            assert (await ca.leave(table, hand_no, ann["seat"]))["type"] == "reply"
        t = await settled(r, hand_no, index, epoch, [])
        assert t["log"][2]["reveals"] == [
            {"seat": s, "seed": seed.hex(), "status": "revealed", "psig": t["log"][2]["reveals"][k]["psig"]}
            for k, (s, seed) in enumerate(sorted(seeds.values()))
        ], t["log"][2]
        assert t["result"]["points"][str(bo_seat)] == 0, t["result"]  # bo was charged nothing: ann left


@pytest.mark.timeout(300)
@pytest.mark.parametrize("instant", INSTANTS)
async def test_a_worker_killed_while_the_deal_is_written_deals_the_same_cards_once(
    instant: str, pg_dsn: str, tmp_path: Path
) -> None:
    """The same two instants for the deal: both seeds are stored, and the reveals and
    the deal (records 2 and 3, one write) are in flight at the kill.  Nobody was shown
    a card before the deal was stored.  Stored, the new owner resumes the hand dealt;
    never stored, it finds both seeds in and deals from them (D32: the resume is
    where the hand went on).  Either way each seat's cards are the ones the seeds
    give (the transcript's deal, which the verifier derives again), nobody is charged
    a withheld seed or a turn, and the hand settles once."""
    async with room(pg_dsn, tmp_path, "killdeal") as r:
        table = r.table
        async with r.client(r.a) as ca, r.client(r.b) as cb:
            seeds, hand_no, commitments = await ann_revealed(table, ca, cb, 3)
            index, epoch = await r.owner()
            r.arm(instant, skip=1)  # bo's seed goes through; the write it leads to is caught
            assert (await cb.reveal(commitments, *seeds[cb]))["type"] == "reply"
            await wait_for(lambda: r.proxy.holding > 0, timeout=60)
            for seat, seed in seeds.values():
                assert await stored_seed(r.dsn, table, hand_no, seat) == seed
            assert await stored_records(r.dsn, table, hand_no) == (4 if instant == STORED else 2)
            for c in (ca, cb):  # told nothing of a deal that was not (known to be) stored
                assert not [f for f in c.frames if f.get("type") == "update"], c.frames[-2:]
            r.kill(index)
        await r.back(index, epoch)
        seat_a, seat_b = seeds[ca][0], seeds[cb][0]
        async with r.client(r.a) as ca, r.client(r.b) as cb:
            shown = {}
            for c, seat in ((ca, seat_a), (cb, seat_b)):
                snap = await rejoined(r.server, c, table)
                if instant == STORED:
                    assert snap["i"] == 3, snap
                else:
                    assert snap["i"] in (1, 3), snap  # the reveal phase with both seeds in, or dealt since
                    assert snap["i"] == 3 or snap["revealed"] is True, snap
                view = snap["view"]
                if snap["i"] < 3:
                    view = (await c.wait_frame(lambda f: f.get("type") == "update" and f.get("i") == 3, 60))["view"]
                assert view["me"]["seat"] == seat, view
                shown[seat] = sorted(view["me"]["cards"])
            assert (await ca.leave(table, hand_no, seat_a))["type"] == "reply"
        t = await settled(r, hand_no, index, epoch, [])
        assert [x["status"] for x in t["log"][2]["reveals"]] == ["revealed", "revealed"], t["log"][2]
        dealt = {e["seat"]: sorted(e["private"]["cards"]) for e in t["log"][3]["events"] if e["kind"] == "hand"}
        assert shown == dealt, (shown, dealt)
        assert t["result"]["points"][str(seat_b)] == 0, t["result"]  # bo was charged nothing: ann left


@pytest.mark.timeout(300)
@pytest.mark.parametrize("instant", INSTANTS)
async def test_a_worker_killed_while_a_hand_starts_holds_each_stake_once_and_deals_it(
    instant: str, pg_dsn: str, tmp_path: Path
) -> None:
    """The same two instants for the start of a hand (one transaction: the hand's row
    with its sealed server seed, each seat's hold, D20, the header as record 0, the
    table's next hand number): stored and not told, the new owner resumes that very
    hand in its commit window; never stored, it starts hand 1 afresh.  Either way there
    is one hand 1, each stake is held once and released once, the hand is played to
    its end and settled once, and the ledger balances."""
    async with room(pg_dsn, tmp_path, "killwrite") as r:
        table = r.table
        async with r.client(r.a) as ca, r.client(r.b) as cb:
            for c in (ca, cb):
                assert (await c.request({"type": "join", "table_id": table}))["type"] == "reply"
            assert (await ca.request({"type": "sit", "table_id": table}))["type"] == "reply"
            index, epoch = await r.owner()
            r.arm(instant, HANDS)
            assert (await cb.request({"type": "sit", "table_id": table}))["type"] == "reply"  # the hand starts
            await wait_for(lambda: r.proxy.holding > 0, timeout=60)
            assert await hands_of(r.dsn, table) == ([1] if instant == STORED else [])
            r.kill(index)
        await r.back(index, epoch)
        async with r.client(r.a) as ca, r.client(r.b) as cb:
            snaps = {c: await rejoined(r.server, c, table, hand=False) for c in (ca, cb)}  # both back: D37
            seeds = {}
            for c, snap in snaps.items():
                if snap is not None and snap["phase"] == "commit":
                    header = snap["header"]  # the stored hand, resumed
                else:
                    frame = await c.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit", 60)
                    header = frame["record"]
                assert header["header"]["hand_no"] == 1
                seat = c.seat_in(header)
                seeds[c] = (seat, bytes([seat + 11]) * 32)
                assert (await c.commit(header, player_commit(*seeds[c])))["type"] == "reply"
            for c in (ca, cb):
                frame = await c.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "reveal", 60)
                assert (await c.reveal(frame["record"], *seeds[c]))["type"] == "reply"
            await ca.wait_frame(lambda f: f.get("type") == "update" and f.get("i") == 3, timeout=60)
            assert (await ca.leave(table, 1, seeds[ca][0]))["type"] == "reply"
        await settled(r, 1, index, epoch, [])
        assert await hands_of(r.dsn, table) in ([1], [1, 2])  # the next hand may have begun since
        held = await value(
            r.dsn,
            "SELECT array_agg(p.player_id ORDER BY p.player_id) FROM hand_players p JOIN hands h ON h.id = p.hand_id "
            "WHERE h.table_id = $1 AND h.hand_no = 1",
            table,
        )
        assert held == sorted([r.a["id"], r.b["id"]])  # one hold a seat
        ann = await r.api.call("GET", f"/api/admin/players/{r.a['id']}")
        bo = await r.api.call("GET", f"/api/admin/players/{r.b['id']}")
        assert (ann["available"], ann["held"]) == (100_000 - 40, 0), ann  # D15: a leave costs 40
        assert bo["available"] + bo["held"] == 100_000 + 40, bo  # what ann paid (no commission); bo may sit in hand 2


@pytest.mark.timeout(300)
@pytest.mark.parametrize("instant", INSTANTS)
async def test_a_worker_killed_while_the_commit_window_closes_gives_the_late_seat_its_window_again(
    instant: str, pg_dsn: str, tmp_path: Path
) -> None:
    """The same two instants for the commitment list (record 1), written as the commit
    window closes with bo's commitment missing (seed windows of 3 s).  Stored, the
    window was closed before the crash: bo plays with the empty seed (D21) and its late
    commitment is refused.  Never stored, the window was not closed: the new owner gives
    it again from the resume (D32), and bo's commitment, sent once it is back, is in
    the list.  Either way the hand is dealt, played to its end and settled once."""
    async with room(pg_dsn, tmp_path, "killcommits", ("--seed-seconds", "3")) as r:
        table = r.table
        async with r.client(r.a) as ca, r.client(r.b) as cb:
            await seated(table, ca, cb)
            header = (await ca.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit"))["record"]
            seat_a, seat_b = ca.seat_in(header), cb.seat_in(header)
            index, epoch = await r.owner()
            assert (await ca.commit(header, player_commit(seat_a, b"a" * 32)))["type"] == "reply"
            r.arm(instant)  # the next write of records: the list, as the window closes without bo
            await wait_for(lambda: r.proxy.holding > 0, timeout=60)
            assert await stored_records(r.dsn, table, 1) == (2 if instant == STORED else 1)
            r.kill(index)
        await r.back(index, epoch)
        async with r.client(r.a) as ca, r.client(r.b) as cb:
            snaps = {c: await rejoined(r.server, c, table) for c in (ca, cb)}
            assert snaps[cb]["phase"] == ("reveal" if instant == STORED else "commit"), snaps[cb]
            late = await cb.commit(header, player_commit(seat_b, b"b" * 32))
            if instant == STORED:
                assert late["type"] == "error", late  # the window had closed: D21
            else:
                assert late["type"] == "reply" and late["result"]["ack"]["body"]["outcome"] == "accepted", late
            commitments = snaps[ca]["commitments"]
            if commitments is None:
                frame = await ca.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "reveal", 60)
                commitments = frame["record"]
            assert (await ca.reveal(commitments, seat_a, b"a" * 32))["type"] == "reply"
            if instant == NEVER:
                assert (await cb.reveal(commitments, seat_b, b"b" * 32))["type"] == "reply"
            await ca.wait_frame(lambda f: f.get("type") == "update" and f.get("i") == 3, timeout=60)
            assert (await ca.leave(table, 1, seat_a))["type"] == "reply"
        t = await settled(r, 1, index, epoch, [])
        listed = {c["seat"]: c["commit"] for c in t["log"][1]["commitments"]["commits"]}
        assert listed[seat_a] == player_commit(seat_a, b"a" * 32).hex()
        bo_commit = None if instant == STORED else player_commit(seat_b, b"b" * 32).hex()
        assert listed[seat_b] == bo_commit, listed


async def ann_revealed(
    table: str, ca: Client, cb: Client, salt: int
) -> tuple[dict[Client, tuple[int, bytes]], int, dict[str, Any]]:
    """Both seated, both commit a seed (the byte ``seat + salt``, 32 times), and ann
    (``ca``) reveals hers: the seats and seeds by client, the hand's number, and the
    commitments (record 1) bo reveals over."""
    await seated(table, ca, cb)
    seeds = {}
    for c in (ca, cb):
        header = (await c.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit"))["record"]
        seat = c.seat_in(header)
        seeds[c] = (seat, bytes([seat + salt]) * 32)
        assert (await c.commit(header, player_commit(*seeds[c])))["type"] == "reply"
    commitments = (await cb.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "reveal"))["record"]
    assert (await ca.reveal(commitments, *seeds[ca]))["type"] == "reply"
    return seeds, int(header["header"]["hand_no"]), commitments


async def settled(r: Room, hand_no: int, index: int, epoch: int, evidence: list[dict[str, Any]]) -> dict[str, Any]:
    """The hand settled once after the kill, its transcript verified (with ``evidence``
    held against it, §15, when there is any); nobody was timed out."""
    _, t = await settled_after_the_kill(r.server, r.api, r.dsn, r.table, hand_no, index, epoch)
    assert not [x for x in t["log"] if x.get("action", {}).get("kind") == "timeout"]
    if evidence:
        key = load_public_key((await r.api.call("GET", "/api/fairness/key"))["public_key_hex"])
        report = verify_transcript(t, key, evidence=evidence)
        assert report.ok and "evidence" in report.checks_passed, report.to_json()
    return t


def signed_discard(c: Client, table: str, hand_no: int, seat: int, card: int) -> dict[str, Any]:
    """The discard as sent on the wire, signed over the client's newest head: the
    same message can be sent again, as a client does after it reconnects."""
    prev = c.head()
    sig = c.sign(table, hand_no, prev, {"kind": "discard", "card": card, "seat": seat})
    action = {"kind": "discard", "card": card}
    return {"type": "action", "table_id": table, "hand_no": hand_no, "action": action, "prev": prev, "sig": sig}


def drawn_card(reply: dict[str, Any]) -> int:
    return int(reply["update"]["changes"]["me"]["drawn_this_turn"])


async def rejoined(server: WorkerServer, c: Client, table: str, *, hand: bool = True) -> Any:
    """``join`` answered by the table's new owner: its snapshot's hand (which must be
    there unless ``hand`` is False)."""
    j = await c.request({"type": "join", "table_id": table})
    assert j["type"] == "reply", (j, server.text()[-2000:])
    assert j["result"]["hand"] is not None or not hand, j
    return j["result"]["hand"]


async def hands_of(dsn: str, table: str) -> list[int]:
    got = await value(dsn, "SELECT array_agg(hand_no ORDER BY hand_no) FROM hands WHERE table_id = $1", table)
    return [] if got is None else [int(x) for x in got]


async def stored_seed(dsn: str, table: str, hand_no: int, seat: int) -> bytes | None:
    seed = await value(
        dsn,
        "SELECT s.seed FROM hand_seeds s JOIN hands h ON h.id = s.hand_id "
        "WHERE h.table_id = $1 AND h.hand_no = $2 AND s.seat = $3",
        table,
        hand_no,
        seat,
    )
    return None if seed is None else bytes(seed)


async def stored_records(dsn: str, table: str, hand_no: int) -> int:
    sql = (
        "SELECT count(*) FROM hand_records r JOIN hands h ON h.id = r.hand_id WHERE h.table_id = $1 AND h.hand_no = $2"
    )
    return int(await value(dsn, sql, table, hand_no))
