"""Late is not dead (issue 20, item 5): a sibling worker starved of CPU renews its
leases late, and its siblings must not take its tables while its process lives; a
dead sibling's tables are taken as ever.  Here: the stamp that says a worker lives
(service.siblings) against a real child process — running, stopped, dead, a reused
pid — and two workers' clusters on a real PostgreSQL, one of them late on purpose
(its heartbeat not run at all) while it lives, then dead."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import asyncpg
import psutil
import pytest
import pytest_asyncio

from service import siblings
from service.cluster import Cluster, Lease, NodeSettings
from service.siblings import Stamp
from tests.conftest import fresh_database, fresh_pool
from tests.test_one_port import settled_tables
from tests.test_writer import TABLES, tables_with_hands
from tests.workerserver import worker_server


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    """A child of this process (this process plays the supervisor)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


def stamp_of(proc: subprocess.Popen[bytes]) -> Stamp:
    return Stamp(proc.pid, psutil.Process(proc.pid).create_time())


def wait_for_status(pid: int, status: str) -> None:
    end = time.monotonic() + 30  # only a hang exceeds it
    while psutil.Process(pid).status() != status:
        assert time.monotonic() < end, f"process {pid} never became {status}"
        time.sleep(0.01)


def test_a_stamp_is_written_whole_and_read_back(tmp_path: Path) -> None:
    written = siblings.write_stamp(tmp_path, 3)
    assert written == siblings.own_stamp() and written.pid == os.getpid()
    assert siblings.read_stamp(tmp_path, 3) == written
    assert siblings.read_stamp(tmp_path, 4) is None  # no file: not started
    siblings.stamp_path(tmp_path, 4).write_text("12 x\n")
    assert siblings.read_stamp(tmp_path, 4) is None  # not a stamp
    siblings.stamp_path(tmp_path, 4).write_bytes(b"\xff\xfe")
    assert siblings.read_stamp(tmp_path, 4) is None


def test_a_running_or_stopped_child_is_alive_a_dead_one_is_not(child: subprocess.Popen[bytes]) -> None:
    stamp = stamp_of(child)
    me = os.getpid()
    assert siblings.is_alive(stamp, me)
    os.kill(child.pid, signal.SIGSTOP)  # starved for ever: late, not dead
    try:
        wait_for_status(child.pid, psutil.STATUS_STOPPED)
        assert siblings.is_alive(stamp, me)
    finally:
        os.kill(child.pid, signal.SIGCONT)
    child.kill()
    wait_for_status(child.pid, psutil.STATUS_ZOMBIE)  # exited, not yet reaped by its supervisor
    assert not siblings.is_alive(stamp, me)
    child.wait(30)
    assert not siblings.is_alive(stamp, me)  # reaped: no such process


def test_a_reused_pid_or_another_parent_is_not_the_sibling(child: subprocess.Popen[bytes]) -> None:
    stamp = stamp_of(child)
    assert not siblings.is_alive(Stamp(stamp.pid, stamp.started - 1.0), os.getpid())  # another process, same pid
    assert not siblings.is_alive(stamp, os.getppid())  # not a child of that supervisor
    assert not siblings.is_alive(None, os.getpid())


def test_the_alive_of_a_run_directory_reads_the_stamp(tmp_path: Path, child: subprocess.Popen[bytes]) -> None:
    assert not siblings.alive(tmp_path, 2, os.getpid())  # not started yet
    siblings.stamp_path(tmp_path, 2).write_text(stamp_of(child).text())
    assert siblings.alive(tmp_path, 2, os.getpid())
    child.kill()
    child.wait(30)
    assert not siblings.alive(tmp_path, 2, os.getpid())


# ------------------------------------------------------------------ two workers' leases
@pytest_asyncio.fixture
async def db(pg_dsn: str) -> AsyncIterator[tuple[str, asyncpg.Pool]]:
    async with fresh_pool(pg_dsn, "sib", max_size=4) as (dsn, pool):
        yield dsn, pool


def worker(db: tuple[str, asyncpg.Pool], index: int, alive: set[str]) -> tuple[Cluster, list[Lease], list[str]]:
    """Worker ``index`` of node ``n`` with 1 s leases; ``alive``: the holders its
    siblings' stamps say are alive."""
    dsn, pool = db
    started: list[Lease] = []
    lost: list[str] = []

    async def stop(table_id: str) -> None:
        lost.append(table_id)

    node = NodeSettings(node_id=f"n/w{index}", cluster=True, lease_seconds=1.0, heartbeat_seconds=0.2, node_name="n")
    me = node.node_id
    cluster = Cluster(pool, dsn, node, started.append, stop, live_siblings=lambda: sorted(alive - {me}))
    return cluster, started, lost


async def leases(dsn: str) -> dict[str, tuple[str, int]]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("SELECT table_id, owner, epoch FROM table_leases ORDER BY 1")
    finally:
        await conn.close()
    return {r["table_id"]: (r["owner"], r["epoch"]) for r in rows}


@pytest.mark.timeout(120)
async def test_a_late_sibling_keeps_its_tables_while_it_lives_and_loses_them_once_dead(
    db: tuple[str, asyncpg.Pool],
) -> None:
    dsn, pool = db
    await tables_with_hands(pool, "n/w1")
    alive = {"n/w1", "n/w2"}
    w1, started1, lost1 = worker(db, 1, alive)
    w2, started2, lost2 = worker(db, 2, alive)
    await w1.join()
    assert len(w1.owned) == TABLES
    held = await leases(dsn)
    assert set(held.values()) == {("n/w1", 2)}  # w1 took them (a new epoch each)
    async with pool.acquire() as conn:  # w1's leases ran out long ago: its heartbeat never ran
        await conn.execute("UPDATE table_leases SET expires_at = now() - interval '3 seconds'")
    await w2.join()
    for _ in range(12):  # a dozen of w2's beats, each of which would take an expired lease
        await w2.beat()
        async with pool.acquire() as conn:  # w1 still 3 s late by the database's clock, within the patience
            await conn.execute("UPDATE table_leases SET expires_at = now() - interval '3 seconds'")
    # (by wall time, a dozen beats of a starved w2 took ~29 s: 32 s late, past the
    # patience of 12 lease periods, w1 was wedged and its tables rightly taken)
    assert started2 == [] and await leases(dsn) == held
    beat2 = asyncio.create_task(w2.run())
    try:
        # a client asking where such a table is served is sent to w1, late as it is
        assert await w2.owner_of("t_w000") == ("n/w1", "")
        await w1.renew()  # w1 runs again: its late renewal keeps every table
        assert lost1 == [] and len(w1.owned) == TABLES
        async with pool.acquire() as conn:
            await conn.execute("UPDATE table_leases SET expires_at = now() - interval '3 seconds'")
        alive.discard("n/w1")  # w1's process is gone: its tables are taken
        end = time.monotonic() + 60  # only a hang exceeds it
        while len(w2.owned) < TABLES:
            assert time.monotonic() < end, f"w2 took {len(w2.owned)} of {TABLES} tables of its dead sibling"
            await asyncio.sleep(0.1)
    finally:
        beat2.cancel()
        await asyncio.gather(beat2, return_exceptions=True)
    assert set((await leases(dsn)).values()) == {("n/w2", 3)}
    assert lost2 == []
    await w2.leave()
    await w1.leave()


@pytest.mark.timeout(120)
async def test_a_wedged_sibling_loses_its_tables_after_the_patience(db: tuple[str, asyncpg.Pool]) -> None:
    """Alive but overdue by more than SIBLING_PATIENCE_LEASES lease periods: wedged,
    not starved; its tables are taken (fencing stops its writes)."""
    dsn, pool = db
    await tables_with_hands(pool, "n/w1")
    alive = {"n/w1", "n/w2"}
    w2, started2, _ = worker(db, 2, alive)
    async with pool.acquire() as conn:
        await conn.execute("UPDATE table_leases SET expires_at = now() - interval '11 seconds'")
    await w2.join()
    assert started2 == []  # 11 s overdue at 1 s leases: within the patience of 12
    async with pool.acquire() as conn:
        await conn.execute("UPDATE table_leases SET expires_at = now() - interval '13 seconds'")
    await w2.acquire()
    assert len(started2) == TABLES
    assert set((await leases(dsn)).values()) == {("n/w2", 2)}
    await w2.leave()


# ------------------------------------------------------------- a real serve --workers 2
async def lease_rows(dsn: str, tables: list[str]) -> dict[str, tuple[str, int]]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("SELECT table_id, owner, epoch FROM table_leases WHERE table_id = ANY($1)", tables)
    finally:
        await conn.close()
    return {r["table_id"]: (r["owner"], r["epoch"]) for r in rows}


async def sibling_of(dsn: str, worker: str) -> str:
    """The other worker of ``worker``'s server (node ids ``NODE/wN``)."""
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT node_id FROM nodes WHERE node_id LIKE $1 AND node_id <> $2",
            worker.rsplit("/w", 1)[0] + "/w%",
            worker,
        )
    finally:
        await conn.close()
    assert len(rows) == 1, rows
    return str(rows[0]["node_id"])


async def beaten_again(dsn: str, worker: str) -> None:
    """Until ``worker`` has begun two more beats than it had: the first of them
    whole (its renewals done).  A hang guard of 60 s only."""
    conn = await asyncpg.connect(dsn)
    try:
        deadline = time.monotonic() + 60
        seen = {await conn.fetchval("SELECT seen_at FROM nodes WHERE node_id = $1", worker)}
        while len(seen) < 3:
            seen.add(await conn.fetchval("SELECT seen_at FROM nodes WHERE node_id = $1", worker))
            assert time.monotonic() < deadline, f"{worker} did not beat again: hung"
            await asyncio.sleep(0.1)
    finally:
        await conn.close()


async def sibling_beat_past(dsn: str, sibling: str, stopped: str, seconds: float) -> None:
    """Until ``sibling`` has beaten twice after ``stopped``'s last lease had been
    expired ``seconds``: the first of those beats ran its whole acquire (a beat marks
    ``seen_at`` first, and the next one begins only after it), at a moment the
    database's clock put past that point.  A hang guard of 60 s of this test's clock
    only."""
    conn = await asyncpg.connect(dsn)
    try:
        deadline = time.monotonic() + 60
        beats: set[object] = set()
        while len(beats) < 2:
            row = await conn.fetchrow(
                "SELECT n.seen_at, n.seen_at > (SELECT max(expires_at) FROM table_leases WHERE owner = $2)"
                " + make_interval(secs => $3) AS past FROM nodes n WHERE n.node_id = $1",
                sibling,
                stopped,
                seconds,
            )
            assert row is not None, f"no node {sibling}"
            if row["past"]:
                beats.add(row["seen_at"])
            assert time.monotonic() < deadline, "the sibling did not beat: hung"
            await asyncio.sleep(0.1)
    finally:
        await conn.close()


#: the leases of the server below: short, so that two lease periods stopped take seconds
#: (the default's 5 s made the test wait 11 s stopped and 5 s more for the takeover)
SERVER_LEASE = 2.0


@pytest.mark.timeout(300)
async def test_a_stopped_worker_keeps_its_tables_and_a_killed_one_loses_them(pg_dsn: str, tmp_path: Path) -> None:
    """``serve --workers 2`` (a server alone, ``--lease-seconds 2``): the worker holding tables
    is stopped (SIGSTOP) until its sibling has beaten twice more than two lease
    periods after the stopped worker's leases ran out — each beat tries to take
    expired leases — and the sibling took none of them; once it runs again it has
    lost none; killed (SIGKILL), its tables are taken again (a new epoch) within a
    bound only a hang exceeds.  The stop lasts as long as the sibling needs, told by
    the database's clock (the sibling's ``nodes.seen_at`` against the leases'
    ``expires_at``), not a window of this test's clock that a starved sibling might
    not beat in."""
    async with (
        fresh_database(pg_dsn, "sibstop") as dsn,
        worker_server(tmp_path / "data", dsn=dsn, extra=("--lease-seconds", str(SERVER_LEASE))) as server,
        aiohttp.ClientSession() as s,
    ):
        tables = await settled_tables(s, server, 4)
        held = await lease_rows(dsn, tables)
        owner = max({o for o, _ in held.values()}, key=lambda o: sum(1 for x, _ in held.values() if x == o))
        index = int(owner.rsplit("/w", 1)[1])
        pid = server.worker_pids()[index]
        mine = {t: e for t, (o, e) in held.items() if o == owner}
        sibling = await sibling_of(dsn, owner)
        os.kill(pid, signal.SIGSTOP)
        try:
            await sibling_beat_past(dsn, sibling, owner, 2 * SERVER_LEASE)
            now = await lease_rows(dsn, tables)
            assert {t: now[t] for t in mine} == {t: (owner, e) for t, e in mine.items()}
        finally:
            os.kill(pid, signal.SIGCONT)
        await beaten_again(dsn, owner)  # it runs again and renews
        now = await lease_rows(dsn, tables)
        assert {t: now[t] for t in mine} == {t: (owner, e) for t, e in mine.items()}
        assert f"{owner}: lost the lease" not in server.text()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 60  # only a hang exceeds it
        while True:
            now = await lease_rows(dsn, tables)
            if all(now[t][1] > e for t, e in mine.items()):
                break
            assert time.monotonic() < deadline, (now, mine)
            await asyncio.sleep(0.2)
