"""kill -9 while a move is being written, with real processes: ``serve --workers 2`` in
a process of its own, on a database reached through a proxy.  A seat on turn has drawn
and sends its discard; the worker that owns the table is killed (SIGKILL) while the
discard's record is in one of two states:

1. **stored, not told** — PostgreSQL has committed the record, and the proxy holds its
   answer back: the move happened, nobody was told;
2. **never stored** — the proxy withholds the statement from PostgreSQL: the move did
   not happen, and the worker is gone before it could know either way.

Both players reconnect once a worker has taken the table again.  What a player must be
able to rely on (docs/api.md, "Error codes": ``moved``; D32): the snapshot tells the
mover which it was — its discard is in the hand's events (1) or the hand still waits
for it (2); the same signed move sent again is refused as ``stale_head`` and changes
nothing (1), or is accepted as the record the dead worker never wrote (2).  Nobody is
charged for the crash (no timeout in the transcript), the discard is recorded exactly
once, and the hand plays on to its end: settled once, its transcript verifies, the
ledger balances, and the mover's acks hold as evidence against it (§15: the refusal
of (1) is justified, as a stale move).  (``tests/test_store_faults.py`` loses a move's COMMIT answer
in-process; this is the same fault with the process really gone.)"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import asyncpg
import pytest

from tests.conftest import fresh_database, wait_for
from tests.pgproxy import PgProxy
from tests.test_kill_at_hand_end import ServerApi, ready_again, settled_after_the_kill, taken_again, until
from tests.test_one_port import settled_tables
from tests.test_server import draw_and_discard, latest_view, seat_of, through_seeds
from tests.test_siblings import lease_rows
from tests.workerserver import WorkerServer, worker_server
from tests.wsclient import Client
from verifier.signing import load_public_key
from verifier.transcript import verify_transcript

INSTANTS = ("stored, not told", "never stored")
RECORDS = r"INSERT INTO hand_records"  # the group commit's statement (service.tablestore.BATCH_SQL)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("instant", INSTANTS)
async def test_a_worker_killed_while_a_move_is_written_neither_loses_it_nor_charges_the_mover(
    instant: str, pg_dsn: str, tmp_path: Path
) -> None:
    async with fresh_database(pg_dsn, "killmove") as dsn:
        sock_dir = tempfile.mkdtemp(prefix="pgm-", dir="/tmp")  # a short path: Unix sockets have a length limit
        proxy = await PgProxy(pg_dsn, sock_dir).start()
        try:
            proxied = proxy.dsn(urlsplit(dsn).path.lstrip("/"))
            async with (
                worker_server(tmp_path / "data", dsn=proxied, extra=("--lease-seconds", "2")) as server,
                aiohttp.ClientSession() as s,
            ):
                api = ServerApi(server, s)
                [table] = await settled_tables(s, server, 1)
                a, b = await api.player("ann"), await api.player("bo")
                async with (
                    Client(server.url, a["token"], a["signer"], table=table) as ca,
                    Client(server.url, b["token"], b["signer"], table=table) as cb,
                ):
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
                    [(owner, epoch)] = (await lease_rows(dsn, [table])).values()
                    index = int(owner.rsplit("/w", 1)[1])
                    if instant == "stored, not told":
                        proxy.hold_commit_reply(RECORDS, 120)
                    else:
                        proxy.withhold(RECORDS)
                    await mover.send_raw(json.dumps({"id": "the-discard", **discard}))
                    await wait_for(lambda: proxy.holding > 0, timeout=60)
                    stored = await stored_records(dsn, table, hand_no)
                    assert stored == (drawn_i + 2 if instant == "stored, not told" else drawn_i + 1), stored
                    os.kill(server.worker_pids()[index], signal.SIGKILL)
                proxy.let_go()  # the worker is gone: nobody waits for what was held
                await until(f"worker {index} started again", lambda: ready_again(server, index))
                await until("the table taken at a new epoch", lambda: taken_again(dsn, table, epoch))
                # Both come back; the snapshot tells the mover what became of its discard.
                ann_again = Client(server.url, a["token"], a["signer"], table=table)
                bo_again = Client(server.url, b["token"], b["signer"], table=table)
                async with ann_again as ca, bo_again as cb:
                    mover, other = (ca, cb) if mover_is_a else (cb, ca)
                    snap = await rejoined(server, mover, table)
                    await rejoined(server, other, table)
                    again = await mover.request(discard)
                    if instant == "stored, not told":
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
                    assert await stored_records(dsn, table, hand_no) == drawn_i + 2
                    # The hand plays on: the other seat takes its turn, the mover leaves.
                    other_seat = next(x for x in snap["view"]["seats"] if x["seat"] != seat)["seat"]
                    r = await other.act(table, hand_no, other_seat, {"kind": "draw_closed"})
                    assert r["type"] == "reply", r
                    r = await other.act(table, hand_no, other_seat, {"kind": "discard", "card": drawn_card(r)})
                    assert r["type"] == "reply", r
                    await mover.wait_frame(lambda f: f.get("type") == "update" and f.get("i") == drawn_i + 3)
                    assert (await mover.leave(table, hand_no, seat))["type"] == "reply"
                _, t = await settled_after_the_kill(server, api, dsn, table, hand_no, index, epoch)
                moves = [r["action"] for r in t["log"][drawn_i:]]
                assert moves == [
                    {"kind": "draw_closed", "seat": seat},
                    {"kind": "discard", "seat": seat, "card": card},
                    {"kind": "draw_closed", "seat": other_seat},
                    {"kind": "discard", "seat": other_seat, "card": moves[3].get("card")},
                    {"kind": "leave", "seat": seat},
                ], moves
                assert not [r for r in t["log"] if r.get("action", {}).get("kind") == "timeout"]
                # The mover's evidence (§15) — the draw's ack, and the answer to the move
                # sent again: a justified refusal (1) or its acceptance (2) — holds
                # against the published transcript.
                key = load_public_key((await api.call("GET", "/api/fairness/key"))["public_key_hex"])
                report = verify_transcript(t, key, evidence=[drawn["result"]["ack"], kept])
                assert report.ok and "evidence" in report.checks_passed, report.to_json()
        finally:
            await proxy.stop()
            shutil.rmtree(sock_dir, ignore_errors=True)


def signed_discard(c: Client, table: str, hand_no: int, seat: int, card: int) -> dict[str, Any]:
    """The discard as sent on the wire, signed over the client's newest head: the
    same message can be sent again, as a client does after it reconnects."""
    prev = c.head()
    sig = c.sign(table, hand_no, prev, {"kind": "discard", "card": card, "seat": seat})
    action = {"kind": "discard", "card": card}
    return {"type": "action", "table_id": table, "hand_no": hand_no, "action": action, "prev": prev, "sig": sig}


def drawn_card(reply: dict[str, Any]) -> int:
    return int(reply["update"]["changes"]["me"]["drawn_this_turn"])


async def rejoined(server: WorkerServer, c: Client, table: str) -> dict[str, Any]:
    """``join`` answered by the table's new owner: its snapshot's hand."""
    j = await c.request({"type": "join", "table_id": table})
    assert j["type"] == "reply", (j, server.text()[-2000:])
    hand: dict[str, Any] = j["result"]["hand"]
    assert hand is not None, j
    return hand


async def stored_records(dsn: str, table: str, hand_no: int) -> int:
    conn = await asyncpg.connect(dsn)  # not through the proxy
    try:
        return int(
            await conn.fetchval(
                "SELECT count(*) FROM hand_records r JOIN hands h ON h.id = r.hand_id "
                "WHERE h.table_id = $1 AND h.hand_no = $2",
                table,
                hand_no,
            )
        )
    finally:
        await conn.close()
