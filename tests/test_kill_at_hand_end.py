"""kill -9 at the worst instants of a hand's end, with real processes: ``serve
--workers 2`` in a process of its own, on a database reached through a proxy that
holds back PostgreSQL's answer (1) to the hand's end reading its log, before anything
is settled, or (2) to the COMMIT of the hand's settlement, which PostgreSQL has made;
the worker that owns the table is killed (SIGKILL) while that answer is held.  The
supervisor starts a worker again, the table is taken at a new epoch (D32), and the
hand is published and settled exactly once — by the new owner in (1), by the dead one
in (2); its transcript holds every stored record and verifies, the ledger balances,
and the table deals its next hand.  (``tests/test_forgotten_records.py`` crashes the table core at
three instants of a hand's end; ``tests/test_recovery.py`` restarts a table in-process
while the read is held.  This is the same fault with the process really gone.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.killroom import room, settled_after_the_kill, value
from tests.test_server import draw_and_discard, seat_of, through_seeds

#: instant -> (what the proxy holds back, the hand's row when the worker is killed)
INSTANTS = {
    "reading the log": ("statement", r"SELECT i, sealed FROM hand_records", "playing"),
    "settled, not told": ("commit", r"INSERT INTO settlements", "ended"),
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("instant", list(INSTANTS))
async def test_a_worker_killed_at_its_hands_end_leaves_the_hand_settled_once(
    instant: str, pg_dsn: str, tmp_path: Path
) -> None:
    from verifier.recordlog import FIRST_KEPT

    async with room(pg_dsn, tmp_path, "killend") as r:
        table = r.table
        async with r.client(r.a) as ca, r.client(r.b) as cb:
            hand_no = await through_seeds(table, ca, cb)
            await draw_and_discard(table, hand_no, ca, cb, FIRST_KEPT + 4)  # past what memory keeps
            index, epoch = await r.owner()
            kind, pattern, status = INSTANTS[instant]
            if kind == "statement":
                r.proxy.hold_reply(pattern, 120)
            else:
                r.proxy.hold_commit_reply(pattern, 120)
            assert (await cb.leave(table, hand_no, seat_of(cb)))["type"] == "reply"  # the hand is over
            await wait_for(lambda: r.proxy.holding > 0, timeout=60)  # PostgreSQL answered: held back
            assert await hand_row(r.dsn, table, hand_no) == status
            r.kill(index)
        r.proxy.let_go()  # the worker is gone: nobody waits for the held answer any more
        hand_id, t = await settled_after_the_kill(r.server, r.api, r.dsn, table, hand_no, index, epoch)
        stored = await value(r.dsn, "SELECT count(*) FROM hand_records WHERE hand_id = $1", hand_id)
        assert [x["i"] for x in t["log"]] == list(range(stored)) and t["log"][-1]["action"]["kind"] == "leave"
        # The table deals on: a new player sits beside ann, and the next hand begins.
        c = await r.api.player("cy")
        async with r.client(r.a) as ca, r.client(c) as cc:
            for x in (ca, cc):
                j = await x.request({"type": "join", "table_id": table})
                assert j["type"] == "reply", j
                await x.request({"type": "sit", "table_id": table})  # ann may still hold her seat
            nxt = await cc.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit")
            assert nxt["hand_no"] == hand_no + 1


async def hand_row(dsn: str, table: str, hand_no: int) -> str | None:
    got = await value(dsn, "SELECT status FROM hands WHERE table_id = $1 AND hand_no = $2", table, hand_no)
    return None if got is None else str(got)
