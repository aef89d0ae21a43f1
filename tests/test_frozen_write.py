"""A node frozen with a write in flight, whose write reaches PostgreSQL only after
another node has taken its table (the "zombie" write), with real processes: two
nodes of a cluster (``serve --node-id``, ``--lease-seconds 2``) on one database,
reached through a proxy that holds the owner's write of a discard before PostgreSQL.
The owner is frozen (SIGSTOP, every process of it); its lease runs out and the other
node takes the table at a higher epoch; the players find the table there, and the
mover, whose discard was never answered, discards another card.  The proxy sends the
frozen node's write on before the new owner stores that discard, or after.
PostgreSQL must refuse it — the batch's one statement checks the lease, and it is not
that node's any more (``Fenced``) — so before, nothing is stored at the place the new
owner is about to fill (the lease alone stands between the two), and after, the
record the new owner stored stays the only one at its place: no fork, nothing twice.
Thawed (SIGCONT), the old node lets the table go: it answers the discard it held
``moved``, tells the sockets it still had ``moved`` and closes them, and takes nothing
back.  The hand plays on to its end on the new node: settled once, its transcript
verifies with the mover's acks from both nodes as evidence (§15), nobody was timed
out, the ledger balances, and both nodes stop cleanly.  (``tests/test_writer.py``
fences a batch in-process against the real database; this is the whole path.)"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import psutil
import pytest

from service.keys import SEED_KEY_FILE, SIGNING_KEY_FILE, ServerKeys
from tests.conftest import wait_for
from tests.killroom import RECORDS, ServerApi, ended, proxied_database, taken_again, until, value
from tests.pgproxy import PgProxy
from tests.test_kill_mid_write import drawn_card, rejoined, signed_discard, stored_records
from tests.test_server import draw_and_discard, latest_view, seat_of, through_seeds
from tests.test_siblings import lease_rows
from tests.workerserver import WorkerServer, worker_server
from tests.wsclient import Client
from verifier.signing import load_public_key
from verifier.transcript import verify_transcript

LEASE = "2"
#: when the frozen node's write reaches PostgreSQL: before the new owner stores the
#: record at its place (only the lease can refuse it), or after (its place is taken)
BEFORE, AFTER = "before the new owner's record", "after the new owner's record"


def node_dirs(root: Path) -> tuple[Path, Path]:
    """Two nodes' data directories holding the card room's same two keys: every node
    signs with the same key and opens the same sealed seeds (docs/deploy.md)."""
    keys = root / "keys"
    ServerKeys.load(keys)
    out = []
    for name in ("n1", "n2"):
        d = root / name
        d.mkdir()
        for f in (SIGNING_KEY_FILE, SEED_KEY_FILE):
            shutil.copy2(keys / f, d / f)
        out.append(d)
    return out[0], out[1]


def processes(server: WorkerServer) -> list[psutil.Process]:
    top = psutil.Process(server.proc.pid)
    return [top, *top.children(recursive=True)]


@contextlib.contextmanager
def frozen(server: WorkerServer) -> Iterator[None]:
    """Every process of the node stopped (SIGSTOP) until the block ends."""
    procs = processes(server)
    for p in procs:
        p.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        for p in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.send_signal(signal.SIGCONT)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("late", (BEFORE, AFTER))
async def test_a_frozen_nodes_late_write_is_refused_after_the_takeover_and_the_hand_plays_on(
    late: str, pg_dsn: str, tmp_path: Path
) -> None:
    d1, d2 = node_dirs(tmp_path)
    extra = ("--lease-seconds", LEASE)
    async with (
        proxied_database(pg_dsn, "zombie") as (dsn, proxy, proxied),
        worker_server(d1, dsn=proxied, extra=extra, node="n1") as n1,
        aiohttp.ClientSession() as s,
    ):
        api = ServerApi(n1, s)
        table = (await api.call("POST", "/api/tables", body={"seats": 4}, expect=201))["id"]
        await until("n1 holds the table", lambda: owned_by(dsn, table, "n1"))
        a, b = await api.player("ann"), await api.player("bo")
        async with worker_server(d2, dsn=proxied, extra=extra, node="n2", token=n1.token) as n2:
            await play_through_the_freeze(n1, n2, api, dsn, proxy, table, a, b, late)
        assert "letting go" in n1.text() or "lost the lease" in n1.text(), n1.text()[-3000:]


async def play_through_the_freeze(
    n1: WorkerServer,
    n2: WorkerServer,
    api: ServerApi,
    dsn: str,
    proxy: PgProxy,
    table: str,
    a: dict[str, Any],
    b: dict[str, Any],
    late: str,
) -> None:
    def on(node: WorkerServer, player: dict[str, Any]) -> Client:
        return Client(node.url, player["token"], player["signer"], table=table)

    async with on(n1, a) as old_a, on(n1, b) as old_b:
        hand_no = await through_seeds(table, old_a, old_b)
        await draw_and_discard(table, hand_no, old_a, old_b, 1)
        view = latest_view(old_a)
        mover_is_a = view["turn"] == view["me"]["seat"]
        old_mover, old_other = (old_a, old_b) if mover_is_a else (old_b, old_a)
        seat = seat_of(old_mover)
        drawn = await old_mover.act(table, hand_no, seat, {"kind": "draw_closed"})
        assert drawn["type"] == "reply", drawn
        drawn_i = int(drawn["result"]["i"])
        await wait_for(lambda: latest_view(old_mover)["phase"] == "discard")
        cards = latest_view(old_mover)["me"]["cards"]
        held_back = signed_discard(old_mover, table, hand_no, seat, cards[0])
        [(_, epoch)] = (await lease_rows(dsn, [table])).values()
        proxy.withhold(RECORDS, forward=True)
        await old_mover.send_raw(json.dumps({"id": "the-discard", **held_back}))
        await wait_for(lambda: proxy.holding > 0, timeout=60)
        with frozen(n1):
            await until("n2 took the table at a new epoch", lambda: taken_again(dsn, table, epoch))
            assert await owned_by(dsn, table, "n2")
            async with on(n2, a) as ca, on(n2, b) as cb:
                mover, other = (ca, cb) if mover_is_a else (cb, ca)
                snap = await rejoined(n2, mover, table)
                await rejoined(n2, other, table)
                assert snap["i"] == drawn_i and snap["view"]["phase"] == "discard", snap  # never stored
                assert snap["view"]["turn"] == seat
                if late == BEFORE:  # the frozen node's discard reaches PostgreSQL first: refused
                    await the_late_write(proxy)
                    assert await stored_records(dsn, table, hand_no) == drawn_i + 1
                # Told nothing of its first discard, the mover discards another card here.
                instead = signed_discard(mover, table, hand_no, seat, cards[1])
                got = await mover.request(instead)
                assert got["type"] == "reply" and got["result"]["i"] == drawn_i + 1, got
                kept = got["result"]["ack"]
                if late == AFTER:  # now it reaches PostgreSQL, and is refused
                    await the_late_write(proxy)
                assert await stored_records(dsn, table, hand_no) == drawn_i + 2
                assert await stored_card(dsn, table, hand_no, drawn_i + 1) == cards[1]
            # ca and cb closed: both players' sockets on n2 are gone while n1 thaws.
        # Thawed: n1 answers the discard it held `moved`, tells its sockets, closes them.
        # (`waiting` frames may come first: the discard's answer was slow)
        reply = await old_mover.wait_frame(
            lambda f: f.get("id") == "the-discard" and f.get("type") in ("reply", "error"), timeout=60
        )
        assert reply["type"] == "error" and reply["error"]["code"] == "moved", reply
        for c in (old_mover, old_other):
            await wait_for(lambda c=c: c.ws.closed, timeout=60)
        assert await owned_by(dsn, table, "n2")
    async with on(n2, a) as ca, on(n2, b) as cb:
        mover, other = (ca, cb) if mover_is_a else (cb, ca)
        snap = await rejoined(n2, other, table)
        await rejoined(n2, mover, table)
        other_seat = snap["view"]["me"]["seat"]
        assert snap["view"]["turn"] == other_seat, snap
        got = await other.act(table, hand_no, other_seat, {"kind": "draw_closed"})
        assert got["type"] == "reply", got
        assert (await other.act(table, hand_no, other_seat, {"kind": "discard", "card": drawn_card(got)}))[
            "type"
        ] == "reply"
        await mover.wait_frame(lambda f: f.get("type") == "update" and f.get("i") == drawn_i + 3)
        assert (await mover.leave(table, hand_no, seat))["type"] == "reply"
    hand_id = await until("the hand settled", lambda: ended(dsn, table, hand_no))
    t = await api.call("GET", f"/api/hands/{hand_id}/transcript", expect=200)
    key = load_public_key((await api.call("GET", "/api/fairness/key"))["public_key_hex"])
    report = verify_transcript(t, key, evidence=[drawn["result"]["ack"], kept])
    assert report.ok and "evidence" in report.checks_passed, report.to_json()
    moves = [x["action"] for x in t["log"][drawn_i:]]
    assert moves[:2] == [
        {"kind": "draw_closed", "seat": seat},
        {"kind": "discard", "seat": seat, "card": cards[1]},
    ], moves
    assert moves[-1] == {"kind": "leave", "seat": seat}, moves
    assert not [x for x in t["log"] if x.get("action", {}).get("kind") == "timeout"]
    assert await value(dsn, "SELECT count(*) FROM settlements WHERE hand_id = $1", hand_id) == 1
    assert (await api.call("GET", "/api/ledger"))["ok"] is True
    assert await owned_by(dsn, table, "n2")  # n1 took nothing back


async def the_late_write(proxy: PgProxy) -> None:
    """The frozen node's write, held by the proxy, sent on; back once PostgreSQL is done
    with it."""
    proxy.let_go()
    await until("PostgreSQL answered the late write", lambda: answered(proxy))


async def owned_by(dsn: str, table: str, node: str) -> bool:
    rows = await lease_rows(dsn, [table])
    return table in rows and rows[table][0] == node


async def answered(proxy: PgProxy) -> bool:
    await asyncio.sleep(0)
    return proxy.late_answers > 0


async def stored_card(dsn: str, table: str, hand_no: int, i: int) -> int:
    got = await value(
        dsn,
        "SELECT (r.record->'action'->>'card')::int FROM hand_records r JOIN hands h ON h.id = r.hand_id "
        "WHERE h.table_id = $1 AND h.hand_no = $2 AND r.i = $3",
        table,
        hand_no,
        i,
    )
    return int(got)
