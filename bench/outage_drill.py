"""The database-outage drill (issue 17): bot tables play on ``rummy-table serve
--workers 2`` while their PostgreSQL fails under them, on real processes.

Part one, a PostgreSQL of the drill's own (the server's ``--database-url``, as an
external one would be):

* killed (SIGKILL of the postmaster) and kept down ``--down`` seconds (20), twice;
* frozen (SIGSTOP of the postmaster and every backend) ``--freeze`` seconds (30);
* stalled: frozen ``--stall`` seconds (3), running as long again, for ``--stalls-for``
  seconds (60);
* its disk full ``--disk-full`` seconds (30): its data directory is on a small tmpfs
  of its own (``mount -t tmpfs``, so the drill runs as root), filled to the last byte
  with a ballast file that is then deleted.  PostgreSQL refuses what needs new space
  (SQLSTATE 53100, ``could not extend file``) and keeps running;
* its disk full again, and a WAL segment switch forced meanwhile: PostgreSQL cannot
  create the next WAL file, PANICs and cannot recover while the disk is full, so it
  stays down until the ballast is gone (then the drill starts it again, as a service
  manager would an external PostgreSQL).

A drill that cannot mount the tmpfs says so in one line and fails: the full disk is
never skipped in silence.

Part two, the server's own embedded PostgreSQL (the server's data directory on a
tmpfs of its own): its disk full with a WAL switch forced, so it PANICs and ``serve``
starts it again once the space is back; then its postmaster killed, which ``serve``
starts again by itself (service/embedded.py).

It reports, and exits 1 unless each is as it must be:

* **clock charges inside fault windows** — a ``timeout`` action, a null commitment, a
  withheld reveal — made from a fault's start to its end plus the resume grace
  (D37): must be 0 (the bots always act at once, so charges outside the windows are
  reported too, and are 0 when the house never fails them);
* **tables that stopped** — a table with no new record within ``--stop-bound``
  seconds (120) of a fault's end: must be 0;
* **time to recover** — per fault, from its end until every table made a record;
* **while the disk is full** — ``/healthz`` sampled: every answer from the first
  refusal the server logs (it cannot know before a write meets the full disk) must be
  503 ``degraded``; ``paused`` must reach the clients; the
  tables' reloads are counted (from the server's log): backoff, not a storm (fewer
  than one reload a second per table); an operator's REST write is answered 201 or
  503, never 500;
* **the cashier** — an operator depositing 1 HT to one player again and again
  through every fault, each deposit sent with its own ``Idempotency-Key`` until it is
  answered 200: the balance must move by exactly the deposits answered (none lost,
  none moved twice), and no answer may be other than 200 or 503;
* and, after the bots leave, that nothing was lost (bench/common.py): every hand ended
  or voided by rule, every transcript verifies, the chains have no gap, the ledger sums
  to zero and no hand was settled twice.

    python bench/outage_drill.py                # the whole drill, about 7 minutes
    python bench/outage_drill.py --quick        # short faults (the drill-marked test)
    python bench/outage_drill.py --only-disk    # the full disks alone
    python bench/outage_drill.py --json
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import Cashier, free_port, operator_call, prove_nothing_lost, settle_down  # noqa: E402
from bench.fulldisk import Disk  # noqa: E402
from service.bots import Bot  # noqa: E402
from service.db import EmbeddedPostgres  # noqa: E402
from service.envnames import OPERATOR_TOKEN_ENV  # noqa: E402
from verifier.signing import load_public_key  # noqa: E402

OPERATOR = "outage-operator-" + os.urandom(6).hex()
RESUME_GRACE = 5.0  # the server's --resume-grace (D32, D37)


@dataclass
class Fault:
    kind: str
    start: float  # time.time()
    end: float = 0.0
    recovered_s: float | None = None  # from the end until every table made a record
    problem: str | None = None  # the fault could not be made as it should, or a must did not hold
    seen: dict[str, Any] = field(default_factory=dict)  # what was watched during it (the full disk's)


@dataclass
class Plan:
    down: float = 20.0
    kills: int = 2
    freeze: float = 30.0
    stall: float = 3.0
    stalls_for: float = 60.0
    embedded_kills: int = 1
    disk_full: float = 30.0
    disk_panic: float = 15.0
    disk_mb: int = 384
    tables: int = 3
    stop_bound: float = 120.0
    only_disk: bool = False  # the full disks alone (to work on them)


@dataclass
class Part:
    """One server, its tables and bots."""

    name: str
    workdir: Path
    dsn: str
    external: bool
    port: int = field(default_factory=free_port)
    server: subprocess.Popen[bytes] | None = None
    bots: list[Bot] = field(default_factory=list)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    table_ids: list[str] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    stopped: set[str] = field(default_factory=set)  # tables that did not move again within the bound

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start_server(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        env.update({OPERATOR_TOKEN_ENV: OPERATOR, "PYTHONUNBUFFERED": "1"})
        command = [sys.executable, "-m", "service.cli", "serve", "--workers", "2", "--port", str(self.port)]
        command += ["--data-dir", str(self.workdir / "data"), "--seed-seconds", "2", "--next-hand-delay", "0.3"]
        command += ["--resume-grace", str(RESUME_GRACE)]
        if self.external:
            command += ["--database-url", self.dsn]
        with open(self.workdir / "server.log", "ab") as log:
            self.server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)

    async def wait_serving(self, session: aiohttp.ClientSession, timeout: float = 120) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            assert self.server is not None and self.server.poll() is None, f"see {self.workdir / 'server.log'}"
            with contextlib.suppress(aiohttp.ClientError, OSError, asyncio.TimeoutError):
                async with session.get(self.url + "/healthz", timeout=aiohttp.ClientTimeout(total=2)) as r:
                    if r.status == 200:
                        return
            await asyncio.sleep(0.1)
        raise RuntimeError(f"{self.name}: the server did not start; see {self.workdir / 'server.log'}")

    async def seat_bots(self, session: aiohttp.ClientSession, tables: int) -> None:
        for _ in range(tables):
            body = {"seats": 4, "point_value": 5, "commission_bps": 500, "turn_seconds": 5}
            t = await operator_call(session, self.url, OPERATOR, "POST", "/api/tables", body)
            self.table_ids.append(t["id"])
            for n in range(3):
                p = await operator_call(
                    session, self.url, OPERATOR, "POST", "/api/players", {"name": f"o{n}", "deposit": 100_000}
                )
                self.bots.append(Bot(self.url, p["token"], t["id"], fast=True, drops=False))
        self.tasks = [asyncio.create_task(b.run()) for b in self.bots]

    async def last_records(self) -> dict[str, float]:
        """Each table's latest record (epoch seconds); the database must be up."""
        conn = await asyncpg.connect(self.dsn, timeout=5)
        try:
            rows = await conn.fetch(
                "SELECT h.table_id, extract(epoch FROM max(r.created_at))::float8 AS at "
                "FROM hand_records r JOIN hands h ON h.id = r.hand_id GROUP BY h.table_id"
            )
        finally:
            await conn.close()
        return {str(r["table_id"]): float(r["at"]) for r in rows}

    async def every_table_moves(self, since: float, bound: float) -> float | None:
        """Seconds from ``since`` until every table made a record after it; None if
        one did not within ``bound`` (it is counted as stopped)."""
        end = time.time() + bound
        last: dict[str, float] = {}
        while time.time() < end:
            with contextlib.suppress(OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
                last = await self.last_records()
                if all(last.get(t, 0.0) > since for t in self.table_ids):
                    return max(last[t] for t in self.table_ids) - since
            await asyncio.sleep(0.2)
        self.stopped.update(t for t in self.table_ids if last.get(t, 0.0) <= since)
        return None

    async def new_hands(self, since: float, bound: float) -> float | None:
        """Seconds from ``since`` until every table dealt a hand after it; None if one
        did not within ``bound``."""
        end = time.time() + bound
        first: dict[str, float] = {}
        while time.time() < end:
            with contextlib.suppress(OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
                conn = await asyncpg.connect(self.dsn, timeout=5)
                try:
                    rows = await conn.fetch(
                        "SELECT table_id, extract(epoch FROM min(started_at))::float8 AS at FROM hands "
                        "WHERE started_at > to_timestamp($1) GROUP BY table_id",
                        since,
                    )
                finally:
                    await conn.close()
                first = {str(r["table_id"]): float(r["at"]) for r in rows}
                if all(t in first for t in self.table_ids):
                    return max(first.values()) - since
            await asyncio.sleep(0.2)
        self.stopped.update(t for t in self.table_ids if t not in first)
        return None

    async def finish(self, session: aiohttp.ClientSession, bound: float) -> dict[str, Any]:
        last = max(f.end for f in self.faults)
        dealing = await self.new_hands(last, bound)  # no table stopped dealing for good
        # The bots play on through the last fault's grace before they leave: a seat that
        # leaves charges itself (D36: a hand begun as it goes gets no commitment from it),
        # and a charge of that kind inside [end, end + grace] would be counted as the
        # house's.  (Written for a CI failure first read so; that failure was the house's
        # own — a stalled write told a header after its commit window: D35, fixed in
        # service/tablecore/steps.py — but the bots' leaving can still race the grace.)
        await asyncio.sleep(max(0.0, last + RESUME_GRACE + 1.0 - time.time()))
        left = time.time()
        for t in self.tasks:
            t.cancel()  # each bot leaves its seat, as a person would
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await settle_down(self.dsn)
        key_body = await operator_call(session, self.url, OPERATOR, "GET", "/api/fairness/key")
        ledger = await operator_call(session, self.url, OPERATOR, "GET", "/api/ledger")
        proof = await prove_nothing_lost(
            self.dsn, load_public_key(key_body["public_key_hex"]), self.table_ids, self.bots, ledger
        )
        charges = clock_charges(proof.transcripts.values())
        inside = [c for c in charges if any(f.start <= c[1] <= f.end + RESUME_GRACE for f in self.faults)]
        # The bots leave at the end (D36: a seat that leaves in the seed phases misses its
        # seeds, and the clock plays out a hand it leaves): those charges are theirs.
        after_leaving = [c for c in charges if c[1] >= left and c not in inside]
        stopped = len(self.stopped)
        recovered = [f.recovered_s for f in self.faults if f.recovered_s is not None]
        return {
            "faults": [
                {
                    "kind": f.kind,
                    "start": round(f.start, 1),  # epoch seconds, as the charges are given
                    "end": round(f.end, 1),
                    "seconds": round(f.end - f.start, 1),
                    "recovered_s": f.recovered_s,
                    "problem": f.problem,
                    **f.seen,
                }
                for f in self.faults
            ],
            "every_table_dealt_again_s": None if dealing is None else round(dealing, 2),
            "tables": len(self.table_ids),
            "hands": len(proof.hands),
            "ended": proof.ended,
            "voided": proof.voided,
            "charges_inside_fault_windows": len(inside),
            "charges_inside": [f"{kind} at {at:.1f}" for kind, at in inside],
            "charges_outside_fault_windows": len(charges) - len(inside) - len(after_leaving),
            "charges_outside": [f"{k} at {at:.1f}" for k, at in charges if (k, at) not in inside + after_leaving],
            "charges_after_the_bots_left": len(after_leaving),
            "bots_left_at": round(left, 1),
            "tables_stopped": stopped,
            "recovery_max_s": round(max(recovered, default=float("nan")), 2),
            "ledger_ok": bool(ledger.get("ok")),
            "transcripts_verified": len(proof.transcripts),
            "problems": proof.problems + [f"{f.kind}: {f.problem}" for f in self.faults if f.problem],
            "ok": not proof.problems and not inside and not stopped and not any(f.problem for f in self.faults),
        }

    def close(self) -> None:
        if self.server is not None and self.server.poll() is None:
            self.server.send_signal(signal.SIGTERM)
            try:
                self.server.wait(60)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()


async def with_cashier(part: Part, session: aiohttp.ClientSession, faults: Any, plan: Plan) -> dict[str, Any]:
    """``faults()`` with the cashier depositing all through them, then the report of
    :meth:`Part.finish` with the cashier's."""
    cashier = await Cashier(part.url, OPERATOR, REST_ANSWER_S).open(session)
    try:
        await faults()
    finally:
        cash = await cashier.close(session)
    report = await part.finish(session, plan.stop_bound)
    report["cashier"] = cash
    report["problems"] += [f"cashier: {p}" for p in cash["problems"]]
    report["ok"] = report["ok"] and not cash["problems"]
    return report


def clock_charges(transcripts: Any) -> list[tuple[str, float]]:
    """(what, when in epoch seconds) for every charge the clock made to a seat."""
    out: list[tuple[str, float]] = []
    for t in transcripts:
        for rec in t["log"]:
            at = rec["t"] / 1000
            if rec["type"] == "commitments":
                out += [("no_commit", at) for c in rec["commitments"]["commits"] if c["commit"] is None]
            elif rec["type"] == "reveals":
                out += [("withheld", at) for r in rec["reveals"] if r["status"] == "withheld"]
            elif rec["type"] == "action" and rec["action"]["kind"] == "timeout":
                out.append(("timeout", at))
    return out


def processes_of(pid: int) -> list[int]:
    import psutil

    try:
        p = psutil.Process(pid)
        return [pid, *(c.pid for c in p.children(recursive=True))]
    except psutil.NoSuchProcess:
        return []


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


async def warm_up(part: Part, bound: float) -> None:
    """Until every table has dealt a hand."""
    if await part.every_table_moves(0.0, bound) is None:
        raise RuntimeError(f"{part.name}: a table never dealt; see {part.workdir / 'server.log'}")


async def after(part: Part, fault: Fault, plan: Plan) -> None:
    fault.end = time.time()
    part.faults.append(fault)
    fault.recovered_s = await part.every_table_moves(fault.end, plan.stop_bound)
    if fault.recovered_s is not None:
        fault.recovered_s = round(fault.recovered_s, 2)
    took = fault.end - fault.start
    say(f"{part.name}: {fault.kind} ({took:.1f} s); every table moved again after {fault.recovered_s} s")
    await asyncio.sleep(3)  # play a little between two faults


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# What the server logs once for each failed write or load, each followed by one reload
# (service.tablecore.core, service.table).
RELOAD = re.compile(r"a write came back \w+; reloading$|: cannot load \(")


SAMPLE_SLACK = 0.5  # s: a refusal logged reaches its table's state within this (the table's queue, D37)


def logged_at(line: str) -> float | None:
    """The epoch time of a server log line (``2026-12-01 12:34:53,900 WARNING …``, local time)."""
    with contextlib.suppress(ValueError):
        return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    return None


async def sample_health(part: Part, session: aiohttp.ClientSession, out: list[tuple[float, int]]) -> None:
    """(when, status) of /healthz every half second, until cancelled."""
    while True:
        status = 0  # no answer at all
        with contextlib.suppress(aiohttp.ClientError, OSError, asyncio.TimeoutError):
            async with session.get(part.url + "/healthz", timeout=aiohttp.ClientTimeout(total=5)) as r:
                status = r.status
        out.append((time.time(), status))
        await asyncio.sleep(0.5)


#: how long a REST write may take: longer than any bound of the server's own (a pooled
#: connection within 10 s, a statement within 30 s, service.db), so that no answer in
#: this time is a hang, not a race with the server's answer
REST_ANSWER_S = 45.0


async def rest_write(part: Part, session: aiohttp.ClientSession) -> int:
    """An operator's REST write (a new player): its status (0: no answer).  On a full
    disk it may fit in a page with room left (201), or be refused (503), never 500."""
    body = {"name": "disk", "deposit": 1}
    headers = {"Authorization": f"Bearer {OPERATOR}"}
    with contextlib.suppress(aiohttp.ClientError, OSError, asyncio.TimeoutError):
        async with session.post(
            part.url + "/api/players", json=body, headers=headers, timeout=aiohttp.ClientTimeout(total=REST_ANSWER_S)
        ) as r:
            return r.status
    return 0


async def switch_wal(dsn: str) -> str:
    """Force a WAL segment switch: the next WAL record needs a new WAL file."""
    try:
        conn = await asyncpg.connect(dsn, timeout=5)
        try:
            return "WAL switched at " + str(await conn.fetchval("SELECT pg_switch_wal()::text", timeout=5))
        finally:
            await conn.close(timeout=2)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as e:
        return f"the WAL switch failed ({type(e).__name__}: {str(e)[:100]})"


def postmaster_pid(pgdata: Path) -> int | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int((pgdata / "postmaster.pid").read_text().split()[0])
    return None


async def ensure_up(pg: EmbeddedPostgres | None, dsn: str, pgdata: Path, before: int | None, bound: float) -> str:
    """After the ballast is gone: PostgreSQL serving again.  The drill's own (``pg``)
    is started again if the full disk stopped it, as a service manager would start an
    external PostgreSQL that died; the embedded one (``pg`` None) is serve's to start."""
    end = time.time() + bound
    while time.time() < end:
        if pg is not None and pg.pid is None:
            await asyncio.to_thread(pg.start)
            return "stopped by the full disk; started again once the space was back"
        with contextlib.suppress(OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
            conn = await asyncpg.connect(dsn, timeout=2)
            await conn.close(timeout=2)
            if postmaster_pid(pgdata) == before:
                return "kept running"
            return "stopped by the full disk; serve started it again once the space was back"
        await asyncio.sleep(0.5)
    return f"not serving {bound:g} s after the space was back"


async def full_disk(
    part: Part,
    pg: EmbeddedPostgres | None,
    pgdata: Path,
    disk: Disk,
    why_not: str | None,
    plan: Plan,
    session: aiohttp.ClientSession,
    *,
    panic: bool,
) -> None:
    """The disk under PostgreSQL full for a while (with a WAL switch forced: it PANICs),
    then space again.  While it is full, /healthz must say degraded (from the first
    refusal in the server's log on: before it no write of the server met it), every table's
    clients must be told ``paused``, and the tables must back off (fewer than one
    reload a second each)."""
    seconds = plan.disk_panic if panic else plan.disk_full
    fault = Fault(f"disk full {seconds:g} s" + (", a WAL switch forced (PANIC)" if panic else ""), time.time())
    if why_not is not None:
        say(f"{part.name}: {fault.kind}: CANNOT BE MADE: {why_not}")
        fault.problem = f"the full disk could not be made: {why_not}"
        fault.end = time.time()
        part.faults.append(fault)
        return
    log_file = part.workdir / "server.log"
    log_from = log_file.stat().st_size
    postmaster = postmaster_pid(pgdata)
    told_before = [collections.Counter(b.told) for b in part.bots]
    health: list[tuple[float, int]] = []
    sampler = asyncio.create_task(sample_health(part, session, health))
    filled = await asyncio.to_thread(disk.fill)
    switched = None
    rest: collections.Counter[int] = collections.Counter()
    writing: asyncio.Task[int] | None = None  # one REST write at a time, beside the disk's keeping full
    end = fault.start + seconds
    while time.time() < end:
        await asyncio.sleep(0.5)
        await asyncio.to_thread(disk.fill)  # what PostgreSQL freed meanwhile is taken back
        if panic and time.time() >= fault.start + seconds / 3:
            # Again until PostgreSQL needs a WAL file it has not got (a recycled one
            # would do without new space) and stops.
            switched = await switch_wal(part.dsn)
        if writing is None or writing.done():
            if writing is not None:
                rest[writing.result()] += 1
            writing = asyncio.create_task(rest_write(part, session))
    sampler.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await sampler
    full_until = time.time()
    disk.empty()
    if writing is not None:  # sent while the disk was full; its answer may come after
        rest[await writing] += 1
    postgres = await ensure_up(pg, part.dsn, pgdata, postmaster, plan.stop_bound)
    with open(log_file, "rb") as f:
        f.seek(log_from)
        lines = f.read().decode(errors="replace").splitlines()
    reloads = sum(1 for line in lines if RELOAD.search(line))
    refusals = [line for line in lines if "No space left on device" in line or "DiskFullError" in line]
    disk_full_errors = len(refusals)
    first = next((t for t in map(logged_at, refusals) if t is not None), None)  # from here on the server knows
    told = [collections.Counter(b.told) - before for b, before in zip(part.bots, told_before, strict=True)]
    unpaused = sorted(
        {b.table_id for b, t in zip(part.bots, told, strict=True)}
        - {b.table_id for b, t in zip(part.bots, told, strict=True) if t["paused"]}
    )
    judged = [st for at, st in health if first is not None and first + SAMPLE_SLACK <= at <= full_until]
    healthy = sum(1 for st in judged if st == 200)
    rate = reloads / max(1, len(part.table_ids)) / max(0.001, full_until - fault.start)
    fault.seen = {
        "ballast_mb": round(filled / (1 << 20)),
        "postgres": postgres,
        "wal_switch": switched,
        "disk_full_errors_logged": disk_full_errors,
        "first_refusal_s": None if first is None else round(first - fault.start, 2),
        "healthz_samples": len(judged),
        "healthz_ok_at_s": [round(at - fault.start, 1) for at, st in health if st == 200 and at <= full_until],
        "healthz_ok_while_full": healthy,
        "reloads": reloads,
        "reloads_per_table_per_s": round(rate, 2),
        "paused_told": sum(t["paused"] for t in told),
        "resumed_told": sum(t["resumed"] for t in told),
        "tables_not_told_paused": len(unpaused),
        "rest_writes": {str(k): v for k, v in sorted(rest.items())},
    }
    musts = []
    if first is None:
        musts.append("the server never met the full disk (no refusal in its log)")
    if healthy or not judged:
        musts.append(f"/healthz said ok {healthy} of {len(judged)} times while the disk was full")
    if unpaused:
        musts.append(f"{len(unpaused)} table(s) never told their clients paused")
    if rate >= 1.0:
        musts.append(f"{rate:.2f} reloads a second per table: a storm, not a backoff")
    if rest[0]:
        musts.append(f"{rest[0]} REST write(s) got no answer in {REST_ANSWER_S:.0f} s while the disk was full: a hang")
    if any(status >= 500 and status != 503 for status in rest):
        musts.append(f"a REST write was answered {sorted(rest)} while the disk was full (503 or a success, never 500)")
    if not postgres.startswith(("kept running", "stopped by the full disk")):
        musts.append(f"PostgreSQL {postgres}")
    fault.problem = "; ".join(musts) or None
    say(f"{part.name}: {fault.kind}: {json.dumps(fault.seen)}" + (f" PROBLEM: {fault.problem}" if musts else ""))
    await after(part, fault, plan)


async def external_part(workdir: Path, plan: Plan, session: aiohttp.ClientSession) -> dict[str, Any]:
    disk = Disk(workdir / "pg", plan.disk_mb)  # its data directory on a tmpfs of its own: a disk to fill
    why_not = disk.mount()
    pg = EmbeddedPostgres(workdir / "pg", restart=False)  # ours: down as long as the drill says
    dsn = await asyncio.to_thread(pg.start)
    part = Part("external PostgreSQL", workdir, dsn, external=True)
    try:
        part.start_server()
        await part.wait_serving(session)
        await part.seat_bots(session, plan.tables)
        await warm_up(part, plan.stop_bound)

        async def faults() -> None:
            for panic in (False, True):  # first: the tmpfs is small, and the WAL grows as the tables play
                await full_disk(part, pg, pg.pgdata, disk, why_not, plan, session, panic=panic)
            if not plan.only_disk:
                await kills_and_freezes(part, pg, plan)

        return await with_cashier(part, session, faults, plan)
    finally:
        part.close()
        disk.empty()
        await asyncio.to_thread(pg.stop)
        disk.unmount()


async def kills_and_freezes(part: Part, pg: EmbeddedPostgres, plan: Plan) -> None:
    """The external PostgreSQL killed and kept down, frozen, and stalled again and again."""
    for _ in range(plan.kills):
        fault = Fault(f"killed, down {plan.down:g} s", time.time())
        assert pg.pid is not None
        os.kill(pg.pid, signal.SIGKILL)
        await asyncio.sleep(plan.down)
        await asyncio.to_thread(pg.start)
        await after(part, fault, plan)
    assert pg.pid is not None
    frozen = processes_of(pg.pid)
    fault = Fault(f"frozen {plan.freeze:g} s", time.time())
    signal_all(frozen, signal.SIGSTOP)
    await asyncio.sleep(plan.freeze)
    signal_all(frozen, signal.SIGCONT)
    await after(part, fault, plan)
    fault = Fault(f"stalls of {plan.stall:g} s for {plan.stalls_for:g} s", time.time())
    end = time.time() + plan.stalls_for
    while time.time() < end and pg.pid is not None:
        stalled = processes_of(pg.pid)
        signal_all(stalled, signal.SIGSTOP)
        await asyncio.sleep(plan.stall)
        signal_all(stalled, signal.SIGCONT)
        await asyncio.sleep(plan.stall)
    await after(part, fault, plan)


async def embedded_part(workdir: Path, plan: Plan, session: aiohttp.ClientSession) -> dict[str, Any]:
    data = workdir / "data"
    disk = Disk(data, plan.disk_mb)  # the server's data directory, its PostgreSQL's with it, on a tmpfs
    why_not = disk.mount()
    part = Part("embedded PostgreSQL", workdir, f"postgresql://postgres:@/postgres?host={data.resolve()}/pgdata", False)
    try:
        part.start_server()
        await part.wait_serving(session)
        await part.seat_bots(session, plan.tables)
        await warm_up(part, plan.stop_bound)

        async def faults() -> None:
            await full_disk(part, None, data / "pgdata", disk, why_not, plan, session, panic=True)
            await postmaster_kills(part, data, plan)

        return await with_cashier(part, session, faults, plan)
    finally:
        part.close()
        disk.unmount()


async def postmaster_kills(part: Part, data: Path, plan: Plan) -> None:
    """The embedded postmaster killed, which serve starts again by itself."""
    for _ in range(0 if plan.only_disk else plan.embedded_kills):
        pid = int((data / "pgdata" / "postmaster.pid").read_text().split()[0])
        fault = Fault("postmaster killed (serve starts it again)", time.time())
        os.kill(pid, signal.SIGKILL)
        while True:  # the fault lasts until serve has it running again
            assert time.time() < fault.start + plan.stop_bound, "serve did not start its PostgreSQL again"
            assert part.server is not None and part.server.poll() is None, "serve exited"
            with contextlib.suppress(OSError, ValueError, IndexError):
                lines = (data / "pgdata" / "postmaster.pid").read_text().split("\n")
                if int(lines[0]) != pid and lines[7].strip() == "ready":
                    break
            await asyncio.sleep(0.05)
        say(f"{part.name}: the postmaster is back after {time.time() - fault.start:.1f} s")
        await after(part, fault, plan)


async def drill(workdir: Path, plan: Plan) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session:
        (workdir / "a").mkdir()
        (workdir / "b").mkdir()
        a = await external_part(workdir / "a", plan, session)
        b = await embedded_part(workdir / "b", plan, session)
    return {"external": a, "embedded": b, "ok": a["ok"] and b["ok"], "load": os.getloadavg(), "plan": vars(plan)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="PostgreSQL killed, frozen and stalled under bot tables.")
    quick = "short faults: kills of 5 s, a freeze of 8 s, 12 s of stalls, full disks of 15 s"
    ap.add_argument("--quick", action="store_true", help=quick)
    ap.add_argument("--only-disk", action="store_true", help="the full disks alone (to work on them)")
    ap.add_argument("--tables", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs, databases)")
    args = ap.parse_args(argv)
    plan = Plan(tables=args.tables)
    if args.quick:
        plan = Plan(down=5, kills=1, freeze=8, stall=2, stalls_for=12, disk_full=15, disk_panic=15, tables=args.tables)
    plan.only_disk = args.only_disk
    workdir = Path(tempfile.mkdtemp(prefix="rummy-outage-"))
    started = time.monotonic()
    try:
        report = asyncio.run(drill(workdir, plan))
    finally:
        if not args.keep:
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)
    report["seconds"] = round(time.monotonic() - started, 1)
    report["workdir"] = str(workdir) if args.keep else None
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        for name in ("external", "embedded"):
            r = report[name]
            hands = f"{r['hands']} hands ({r['ended']} ended, {r['voided']} voided)"
            print(f"{name} PostgreSQL: {r['tables']} tables, {hands}")
            for f in r["faults"]:
                print(f"  {f['kind']}: every table moved again {f['recovered_s']} s after it")
                if "healthz_samples" in f:
                    print(
                        f"    while full: /healthz ok {f['healthz_ok_while_full']} of {f['healthz_samples']} times; "
                        f"{f['reloads']} reloads ({f['reloads_per_table_per_s']} a second per table); "
                        f"paused told {f['paused_told']}, resumed {f['resumed_told']}; "
                        f"REST writes answered {f['rest_writes']}; PostgreSQL {f['postgres']}"
                    )
            print(f"  every table dealt a new hand {r['every_table_dealt_again_s']} s after the last fault")
            print(
                f"  clock charges inside fault windows {r['charges_inside_fault_windows']}, outside "
                f"{r['charges_outside_fault_windows']} (after the bots left {r['charges_after_the_bots_left']}); "
                f"tables stopped {r['tables_stopped']}; "
                f"ledger {'balances' if r['ledger_ok'] else 'DOES NOT BALANCE'}; "
                f"{r['transcripts_verified']} transcripts verified"
            )
            c = r["cashier"]
            print(
                f"  cashier: {c['deposits_answered']} deposits answered, the balance moved by {c['balance_moved']}; "
                f"{c['answered_from_the_store']} answered from the store; sent again after {c['sent_again_after']}"
            )
            for c in r["charges_inside"]:
                print("  CHARGED IN A FAULT WINDOW:", c)
            for c in r["charges_outside"]:
                print("  charged while the bots played, outside the fault windows:", c)
            for p in r["problems"]:
                print("  PROBLEM:", p)
        print(f"load average {' '.join(f'{x:.1f}' for x in report['load'])}; {report['seconds']} s")
        print("drill OK" if report["ok"] else "drill FAILED")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
