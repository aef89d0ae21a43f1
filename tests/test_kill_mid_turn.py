"""kill -9 in the middle of a turn, with real processes (D32, D37): ``serve --workers
2`` in a process of its own; a hand is dealt to two players; the worker that owns the
table is killed (SIGKILL) while the first seat's turn runs, and neither player comes
back.  A worker of the same server takes the table and resumes the hand from the
store.  Nobody is charged for the downtime: the clock's move for the seat comes no
earlier than the turn's stored deadline plus the whole grace, nor than a whole turn
after the kill (the table resumed after it).  And the table is not left hanging:
that seat is charged, dropped (``max_missed_turns`` 1) and the hand settled once;
its transcript verifies and the ledger balances.  The simulator (tests/test_sim.py) checks D32 and D37 exactly on
virtual time; this is the same rule across a real process's death and a new
process's clock."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import aiohttp
import pytest

from tests.conftest import fresh_database
from tests.killroom import ServerApi, settled_after_the_kill
from tests.test_one_port import settled_tables
from tests.test_server import latest_view, through_seeds
from tests.test_siblings import lease_rows
from tests.workerserver import worker_server
from tests.wsclient import Client

TURN = 4  # seconds: turn_seconds of the table
GRACE = 3  # seconds: the server's --resume-grace (D32)


@pytest.mark.timeout(300)
async def test_a_worker_killed_mid_turn_charges_nobody_for_its_downtime_and_the_hand_ends(
    pg_dsn: str, tmp_path: Path
) -> None:
    extra = ("--lease-seconds", "2", "--resume-grace", str(GRACE))
    async with (
        fresh_database(pg_dsn, "killturn") as dsn,
        worker_server(tmp_path / "data", dsn=dsn, extra=extra) as server,
        aiohttp.ClientSession() as s,
    ):
        api = ServerApi(server, s)
        [table] = await settled_tables(s, server, 1, {"turn_seconds": TURN, "max_missed_turns": 1})
        # the owner and its pid looked up before the deal (settled: no hand-over comes),
        # so that nothing but the kill comes between the deal and the kill, which must
        # come inside the turn (4 s): a look at the database there, on a busy machine,
        # ate into it
        [(owner, epoch)] = (await lease_rows(dsn, [table])).values()
        index = int(owner.rsplit("/w", 1)[1])
        pid = server.worker_pids()[index]
        a, b = await api.player("ann"), await api.player("bo")
        async with (
            Client(server.url, a["token"], a["signer"], table=table) as ca,
            Client(server.url, b["token"], b["signer"], table=table) as cb,
        ):
            hand_no = await through_seeds(table, ca, cb)
            killed_at = time.time() * 1000  # ms, the clock the server stamps records with
            os.kill(pid, signal.SIGKILL)
            turn = latest_view(ca)["turn"]
        _, t = await settled_after_the_kill(server, api, dsn, table, hand_no, index, epoch)
        assert t["log"][0]["header"]["rules"]["turn_seconds"] == TURN
        played = t["log"][4:]  # after the deal
        assert played, "the hand ended with no move after the deal"
        first = played[0]
        assert first["action"] == {"kind": "timeout", "seat": turn}, first
        # The dead worker made no move after the deal (the kill came well inside the turn).
        assert first["t"] > killed_at, (first["t"], killed_at)
        # D32: the clock is re-armed at the stored deadline (the turn began with the deal)
        # or later, plus the grace; and it gives the seat at least a whole turn from the
        # moment the table resumed, which was after the kill.
        deal = t["log"][3]
        assert first["t"] >= deal["t"] + 1000 * (TURN + GRACE), (first["t"] - deal["t"], TURN, GRACE)
        assert first["t"] >= killed_at + 1000 * TURN, (first["t"] - killed_at, TURN)
