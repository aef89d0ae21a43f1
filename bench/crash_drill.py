"""The crash drill (issue 7): bot tables play while the server, and separately its
PostgreSQL, are killed with SIGKILL at random moments and restarted.  Afterwards
nothing may be lost:

* every hand ended, or was voided by rule (D33) — none left in progress;
* every transcript verifies (pinned key), and every ack and signed head a bot
  kept agrees with the published transcript;
* each table's hands are numbered 1, 2, … with no gap, and hand n+1 starts from
  hand n's head;
* accounts sum to the deposits, no balance is negative, no hold is left on an ended
  hand, no hand was settled twice;
* the cashier (bench.common.Cashier), an operator depositing 1 HT again and again
  through every kill, each deposit sent with its own Idempotency-Key until answered:
  the balance moved by exactly the deposits answered, none lost and none twice.

    python bench/crash_drill.py --quick      # ≥ 50 kills and ≥ 20 hands (the drill step of .ci/run)
    python bench/crash_drill.py --long       # ≥ 200 kills; figures for docs/benchmarks.md
    python bench/crash_drill.py --kills N --min-hands H --tables T --seed S [--json]

The kills go on past N until at least H hands have been dealt (a busy machine plays
fewer hands between two kills), up to ten times N.

It prints kills, hands, how many were resumed across a kill, how many voided, and the
recovery time p50/p99 — after a server kill, from the restart to every table loaded and
its clock running again; after a PostgreSQL kill, from PostgreSQL being back to every
table running again — and exits 1 if any check fails.  Kill moments come from ``random.Random(seed)``: a run is
repeatable in what it tries, if not in where each kill lands.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import (  # noqa: E402
    Cashier,
    free_port,
    operator_call,
    percentile,
    prove_nothing_lost,
    serve_command,
    settle_down,
)
from service.bots import Bot  # noqa: E402
from service.db import EmbeddedPostgres  # noqa: E402
from service.envnames import OPERATOR_TOKEN_ENV  # noqa: E402
from verifier.signing import load_public_key  # noqa: E402

OPERATOR = "drill-operator-" + os.urandom(6).hex()


class Drill:
    def __init__(self, workdir: Path, tables: int, seats: int, rng: random.Random) -> None:
        self.workdir = workdir
        self.tables_n = tables
        self.seats = seats
        self.rng = rng
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.pg = EmbeddedPostgres(workdir / "pg", restart=False)  # away as long as the drill says
        self.dsn = ""
        self.server: subprocess.Popen[bytes] | None = None
        self.log = open(workdir / "server.log", "ab")
        self.recoveries: list[float] = []
        self.recovery_by: dict[str, list[float]] = {"server": [], "postgres": []}
        self.kills: dict[str, int] = {"server": 0, "postgres": 0}
        self.kill_times: list[float] = []
        self.bots: list[Bot] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.table_ids: list[str] = []

    # -- processes -------------------------------------------------------------------
    def start_pg(self) -> None:
        self.dsn = self.pg.start()

    def kill_pg(self) -> None:
        pid = int((self.pg.pgdata / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGKILL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.02)

    def start_server(self) -> None:
        env = {**os.environ, OPERATOR_TOKEN_ENV: OPERATOR, "PYTHONUNBUFFERED": "1"}
        self.server = subprocess.Popen(
            serve_command(self.port, self.workdir / "data", self.dsn),
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=self.log,
        )

    def kill_server(self) -> None:
        assert self.server is not None
        self.server.send_signal(signal.SIGKILL)
        self.server.wait(10)

    async def wait_ready(self, session: aiohttp.ClientSession, timeout: float = 60) -> None:
        """Every table loaded (its hand resumed or voided) and none paused."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with contextlib.suppress(aiohttp.ClientError, OSError, asyncio.TimeoutError):
                async with session.get(self.url + "/healthz", timeout=aiohttp.ClientTimeout(total=2)) as r:
                    if r.status == 200:
                        h = await r.json()
                        if h["tables"] == len(self.table_ids) and h["paused"] == 0:
                            return
            await asyncio.sleep(0.05)
        raise RuntimeError(f"the server did not recover within {timeout} s; see {self.workdir / 'server.log'}")

    async def api(self, session: aiohttp.ClientSession, method: str, path: str, body: Any = None) -> Any:
        return await operator_call(session, self.url, OPERATOR, method, path, body)

    # -- the drill ---------------------------------------------------------------------
    async def hands_dealt(self) -> int:
        conn = await asyncpg.connect(self.dsn)
        try:
            return int(await conn.fetchval("SELECT COUNT(*) FROM hands"))
        finally:
            await conn.close()

    async def run(self, kills: int, pg_share: float, min_hands: int = 0) -> dict[str, Any]:
        await asyncio.to_thread(self.start_pg)
        self.start_server()
        async with aiohttp.ClientSession() as session:
            await self.wait_ready(session)
            for _ in range(self.tables_n):
                t = await self.api(
                    session,
                    "POST",
                    "/api/tables",
                    {"seats": self.seats, "point_value": 5, "commission_bps": 500, "turn_seconds": 5},
                )
                self.table_ids.append(t["id"])
                for n in range(3):
                    p = await self.api(session, "POST", "/api/players", {"name": f"d{n}", "deposit": 100_000})
                    self.bots.append(Bot(self.url, p["token"], t["id"], fast=self.rng.random() < 0.7))
            self.tasks = [asyncio.create_task(b.run()) for b in self.bots]
            cashier = await Cashier(self.url, OPERATOR).open(session)  # keyed deposits through every kill
            started = time.monotonic()
            k = 0
            while k < kills or (k < 10 * kills and await self.hands_dealt() < min_hands):
                k += 1
                await asyncio.sleep(self.rng.uniform(0.2, 1.6))
                what = "postgres" if self.rng.random() < pg_share else "server"
                self.kill_times.append(time.time())
                t0 = time.monotonic()
                if what == "server":
                    self.kill_server()
                    self.start_server()
                else:
                    await asyncio.to_thread(self.kill_pg)
                    await asyncio.sleep(self.rng.uniform(0.0, 1.0))  # the database stays away a while
                    await asyncio.to_thread(self.start_pg)
                    # The server's part starts when PostgreSQL is back (how long the kill
                    # and the restart of PostgreSQL took is this machine's, not ours).
                    t0 = time.monotonic()
                await self.wait_ready(session)
                self.recoveries.append(time.monotonic() - t0)
                self.recovery_by[what].append(self.recoveries[-1])
                self.kills[what] += 1
                if sys.stderr.isatty():
                    sys.stderr.write(f"\r[{'#' * (30 * min(k, kills) // kills):<30}] {k}/{kills} kills")
                    sys.stderr.flush()
            if sys.stderr.isatty():
                sys.stderr.write("\n")
            played = time.monotonic() - started
            cash = await cashier.close(session)
            # Stop the bots as a person would (Ctrl-C): each leaves its seat.
            for t in self.tasks:
                t.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
            await settle_down(self.dsn)
            key = load_public_key((await self.api(session, "GET", "/api/fairness/key"))["public_key_hex"])
            report = await self.check(session, key)
            report["seconds_played"] = round(played, 1)
            report["cashier"] = cash
            report["problems"] += [f"cashier: {p}" for p in cash["problems"]]
            report["ok"] = report["ok"] and not cash["problems"]
        return report

    async def check(self, session: aiohttp.ClientSession, key: bytes) -> dict[str, Any]:
        proof = await prove_nothing_lost(
            self.dsn, key, self.table_ids, self.bots, await self.api(session, "GET", "/api/ledger")
        )
        conn = await asyncpg.connect(self.dsn)
        try:
            statuses = {
                r["status"]: int(r["n"])
                for r in await conn.fetch(
                    "SELECT e->>'status' AS status, COUNT(*) AS n FROM hand_records r, "
                    "jsonb_array_elements(r.record->'reveals') e WHERE r.i = 2 GROUP BY 1"
                )
            }
        finally:
            await conn.close()
        resumed = sum(
            1
            for h in proof.hands
            if h["ended_at"] is not None
            and any(h["started_at"].timestamp() < k < h["ended_at"].timestamp() for k in self.kill_times)
        )
        ledger = proof.ledger
        return {
            "kills": sum(self.kills.values()),
            "server_kills": self.kills["server"],
            "postgres_kills": self.kills["postgres"],
            "tables": len(self.table_ids),
            "bots": len(self.bots),
            "hands": len(proof.hands),
            "ended": proof.ended,
            "voided": proof.voided,
            "void_reasons": sorted({str(h["void_reason"]) for h in proof.hands if h["status"] == "void"}),
            "resumed": resumed,
            "quarantined_records": proof.quarantined_records,
            "reveals": statuses,  # revealed / no_commit / withheld: do reconnecting bots keep adding seeds?
            "evidence_items_checked": proof.evidence_items_checked,
            "recovery_p50_s": round(percentile(self.recoveries, 0.5), 3),
            "recovery_p99_s": round(percentile(self.recoveries, 0.99), 3),
            "recovery_max_s": round(max(self.recoveries, default=float("nan")), 3),
            "recovery_after_server_kill_p50_p99_s": [
                round(percentile(self.recovery_by["server"], q), 3) for q in (0.5, 0.99)
            ],
            "recovery_after_postgres_kill_p50_p99_s": [
                round(percentile(self.recovery_by["postgres"], q), 3) for q in (0.5, 0.99)
            ],
            "ledger": {k: ledger[k] for k in ("deposited", "players_available", "players_held", "house_commission")},
            "problems": proof.problems,
            "ok": not proof.problems,
        }

    def close(self) -> None:
        if self.server is not None and self.server.poll() is None:
            self.server.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.server.wait(10)
        with contextlib.suppress(Exception):
            self.pg.stop()
        self.log.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Kill the server and PostgreSQL at random moments; lose nothing.")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="50 kills and 20 hands, 2 tables (the drill step runs this)")
    mode.add_argument("--long", action="store_true", help="200 kills, 3 tables")
    ap.add_argument("--kills", type=int)
    ap.add_argument("--min-hands", type=int, help="kill on until this many hands were dealt (--quick: 20)")
    ap.add_argument("--tables", type=int)
    ap.add_argument("--seats", type=int, default=4, choices=(4, 6, 8))
    ap.add_argument("--postgres-share", type=float, default=0.25, help="the share of kills that hit PostgreSQL")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (logs, database)")
    args = ap.parse_args(argv)
    kills = args.kills or (200 if args.long else 50)
    tables = args.tables or (3 if args.long else 2)
    workdir = Path(tempfile.mkdtemp(prefix="rummy-drill-"))
    drill = Drill(workdir, tables, args.seats, random.Random(args.seed))
    try:
        min_hands = args.min_hands if args.min_hands is not None else (20 if args.quick else 0)
        report = asyncio.run(drill.run(kills, args.postgres_share, min_hands))
    finally:
        drill.close()
    report["workdir"] = str(workdir) if args.keep else None
    if not args.keep:
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        print(
            f"kills {report['kills']} (server {report['server_kills']}, postgres {report['postgres_kills']}) "
            f"in {report['seconds_played']} s; hands {report['hands']} (ended {report['ended']}, "
            f"voided {report['voided']}, resumed across a kill {report['resumed']}); "
            f"recovery p50 {report['recovery_p50_s']} s, p99 {report['recovery_p99_s']} s, "
            f"max {report['recovery_max_s']} s (after a server kill p50/p99 "
            f"{report['recovery_after_server_kill_p50_p99_s']} s, after a PostgreSQL kill "
            f"{report['recovery_after_postgres_kill_p50_p99_s']} s); "
            f"evidence items checked {report['evidence_items_checked']}"
        )
        c = report["cashier"]
        print(
            f"cashier: {c['deposits_answered']} deposits answered, the balance moved by {c['balance_moved']}; "
            f"{c['answered_from_the_store']} answered from the store; sent again after {c['sent_again_after']}"
        )
        for reason in report["void_reasons"]:
            print("voided:", reason)
        for p in report["problems"]:
            print("PROBLEM:", p)
        print("drill OK" if report["ok"] else "drill FAILED")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
