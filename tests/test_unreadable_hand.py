"""A hand whose stored records cannot be read at all (its header is not a rummy-pf/v2
header: a damaged row) is voided without a transcript (D33, ``io.VoidUnreadableOp``).
Its holds are released, and — as when a hand ends with a transcript — the seats asked
to stand up as it ended stand up: a player who left during the seed phases (D36), or
one the operator stood up for after the hand.  Before (the audit h74's reading, not
tested then), such a void stood nobody up: the leaver stayed seated at a table it had
left, to be dealt in again — and, its page gone or believing it had left, charged
for the seeds it never sent (D29)."""

from __future__ import annotations

from typing import Any

import pytest

from service.app import POOL, TABLES
from service.startup import Running
from service.tablecore import io
from service.tablecore.phase import HandPhase
from tests.conftest import Api, wait_for
from tests.test_audit_crash_slow_answer import seed_move
from tests.test_recovery import restart_table
from tests.test_server import seat_two, seated
from tests.test_tablecore import CFG, Harness
from tests.wsclient import Client


def damage_the_header(h: Harness) -> None:
    """The store's copy of the hand's record 0 no longer holds a rummy-pf/v2 header."""
    hand = h.core.hand
    assert hand is not None
    stored = h.store.hands[hand.hand_id]
    header = stored.records[0]
    stored.records[0] = {**header, "header": {**header["header"], "protocol": "rummy-pf/v0"}}


def test_a_hand_voided_as_unreadable_stands_up_the_seat_that_left_in_its_seed_phases() -> None:
    h = Harness(players=3)
    h.advance(h.now + CFG.next_hand_ms + 500)
    hand = h.core.hand
    assert hand is not None and hand.phase is HandPhase.COMMIT and set(hand.players.values()) == {"p0", "p1", "p2"}
    h.send("p1", "leave", {})  # D36: no move of the hand; the seat stands up when it ends
    h.answer_all()
    (reply,) = [e for e in h.of(io.Reply) if e.cmd_id == h.ids]
    assert reply.error is None and reply.result == {"left": 1, "charged": False, "after_hand": True}
    damage_the_header(h)
    # a write fails: the table reloads, and finds the hand unreadable
    h.send("p0", "commit", seed_move(h, "p0", 0, "commit", b"s" * 32))
    for op_id, e in sorted(h.inflight.items()):
        h.answer(op_id, io.Result.FAILED if isinstance(e, io.Write) else io.Result.COMMITTED)
    h.advance(h.now + 30_000)
    voids = [e.op for e in h.of(io.Write) if isinstance(e.op, io.VoidUnreadableOp)]
    assert len(voids) == 1 and "cannot be read" in voids[0].reason
    assert h.store.hands[hand.hand_id].status == "void"
    facts = h.core.facts
    assert facts is not None and "p1" not in facts.seats.values(), "the leaver is still seated"
    assert "p1" not in h.store.tables["t0"].facts.seats.values()
    told = [s for e in h.of(io.TellSeats) for s in (e.stood or []) if s["hand_no"] == hand.hand_no]
    assert [(s["player_id"], s["reason"], s["rule"]) for s in told] == [("p1", "left", "D36")]
    assert {p: h.store.held[p] for p in ("p0", "p1", "p2")} == {"p0": 0, "p1": 0, "p2": 0}
    later = h.core.hand
    assert later is None or "p1" not in later.players.values(), "the leaver was dealt in again"


@pytest.mark.timeout(120)
async def test_on_a_real_server_a_hand_voided_as_unreadable_stands_up_the_seat_that_left(
    api: Api, server: Running
) -> None:
    table, a, b = await seat_two(api, server)
    async with Client(server.url, a["token"], a["signer"]) as ca, Client(server.url, b["token"], b["signer"]) as cb:
        await seated(table, ca, cb)
        header = await ca.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit", timeout=30)
        hand_no = int(header["hand_no"])
        left: dict[str, Any] = await cb.request({"type": "leave", "table_id": table})
        assert left["type"] == "reply" and left["result"]["after_hand"] is True, left
        await server.app[TABLES][table].stop()
    async with server.app[POOL].acquire() as conn:
        hand_id = await conn.fetchval("SELECT id FROM hands WHERE table_id = $1 AND hand_no = $2", table, hand_no)
        assert await conn.fetchval(
            "SELECT stand_after_hand FROM seats WHERE table_id = $1 AND player_id = $2", table, b["id"]
        )
        await conn.execute(
            "UPDATE hand_records SET record = jsonb_set(record, '{header,protocol}', '\"rummy-pf/v0\"') "
            "WHERE hand_id = $1 AND i = 0",
            hand_id,
        )
    actor = await restart_table(server, table)
    await wait_for(lambda: actor.core.hand is None and actor.core.facts is not None, timeout=30)
    async with server.app[POOL].acquire() as conn:
        row = await conn.fetchrow("SELECT status, void_reason FROM hands WHERE id = $1", hand_id)
        sitting = {r["player_id"] for r in await conn.fetch("SELECT player_id FROM seats WHERE table_id = $1", table)}
    assert row["status"] == "void" and "cannot be read" in row["void_reason"], row
    assert sitting == {a["id"]}, f"the leaver is still seated: {sitting}"
    facts = actor.core.facts
    assert facts is not None and set(facts.seats.values()) == {a["id"]}
    for p in (a, b):
        me = await api.call("GET", "/api/me", token=p["token"])
        assert me["held"] == 0 and me["available"] == 100_000, me
    assert (await api.call("GET", "/api/ledger"))["ok"] is True
