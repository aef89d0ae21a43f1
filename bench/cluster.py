"""Several nodes on one PostgreSQL (issue 12): a harness, a proof and the figures.

    python bench/cluster.py prove          # the drill of tests/test_cluster.py, with a report
    python bench/cluster.py takeover -n 20 # SIGKILL a node 20 times: takeover time p50/p99
    python bench/cluster.py throughput     # bot tables on 1, 2 and 3 nodes: stored actions/s
    python bench/cluster.py frozen         # SIGSTOP the bots' home node for good: when each
                                           # bot is back at its table's new owner, clock moves

Every node is a real ``rummy-table serve --node-id …`` process on its own port; the
bots connect to node 1 (their home) and follow the redirect to whichever node serves
their table, again after every takeover.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import (  # noqa: E402
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
from service.keys import SEED_KEY_FILE, SIGNING_KEY_FILE, ServerKeys  # noqa: E402
from verifier.signing import load_public_key  # noqa: E402

OPERATOR = "cluster-operator-" + os.urandom(6).hex()


@dataclass
class Node:
    node_id: str
    port: int
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass
class Harness:
    workdir: Path
    lease_seconds: float = 3.0
    nodes: dict[str, Node] = field(default_factory=dict)
    dsn: str = ""
    pg: EmbeddedPostgres | None = None
    bots: list[Bot] = field(default_factory=list)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)

    # -- processes -------------------------------------------------------------------
    def start_pg(self) -> None:
        self.pg = EmbeddedPostgres(self.workdir / "pg")
        self.dsn = self.pg.start()

    def data_dir(self, node_id: str) -> Path:
        """A node's data directory, holding the card room's two keys: every node signs
        with the same key and opens the same sealed seeds (docs/deploy.md)."""
        keys = self.workdir / "keys"
        if not keys.exists():
            ServerKeys.load(keys)
        out = self.workdir / f"data-{node_id}"
        if not out.exists():
            out.mkdir()
            for f in (SIGNING_KEY_FILE, SEED_KEY_FILE):
                shutil.copy2(keys / f, out / f)
        return out

    def start_node(self, node_id: str) -> Node:
        node = self.nodes.get(node_id) or Node(node_id, free_port())
        self.nodes[node_id] = node
        log = open(self.workdir / f"{node_id}.log", "ab")
        env = {**os.environ, OPERATOR_TOKEN_ENV: OPERATOR, "PYTHONUNBUFFERED": "1"}
        node.proc = subprocess.Popen(
            serve_command(
                node.port,
                self.data_dir(node_id),
                self.dsn,
                "--node-id",
                node_id,
                "--public-url",
                node.url,
                "--lease-seconds",
                str(self.lease_seconds),
                verbose=True,
            ),
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=log,
        )
        log.close()
        return node

    def signal(self, node_id: str, sig: int) -> None:
        proc = self.nodes[node_id].proc
        assert proc is not None
        proc.send_signal(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM):
            proc.wait(30)

    def log_of(self, node_id: str) -> str:
        return (self.workdir / f"{node_id}.log").read_text(errors="replace")

    async def ready(self, node_id: str, timeout: float = 60) -> None:
        url = self.nodes[node_id].url + "/healthz"
        end = time.monotonic() + timeout
        async with aiohttp.ClientSession() as s:
            while time.monotonic() < end:
                with contextlib.suppress(aiohttp.ClientError, OSError, asyncio.TimeoutError):
                    async with s.get(url, timeout=aiohttp.ClientTimeout(total=2)) as r:
                        if r.status == 200:
                            return
                await asyncio.sleep(0.05)
        raise RuntimeError(f"node {node_id} did not start:\n{self.log_of(node_id)[-3000:]}")

    async def owners(self) -> dict[str, tuple[str | None, int]]:
        conn = await asyncpg.connect(self.dsn)
        try:
            rows = await conn.fetch("SELECT table_id, owner, epoch, expires_at > now() AS live FROM table_leases")
        finally:
            await conn.close()
        return {r["table_id"]: (r["owner"] if r["live"] else None, int(r["epoch"])) for r in rows}

    async def wait_owned(self, pred: Any, timeout: float = 60) -> float:
        """Seconds until ``pred(owners)`` holds."""
        start = time.monotonic()
        while True:
            if pred(await self.owners()):
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                raise RuntimeError(f"leases did not settle: {await self.owners()}")
            await asyncio.sleep(0.1)

    # -- tables and bots -----------------------------------------------------------------
    async def api(self, method: str, path: str, body: Any = None, node: str = "n1") -> Any:
        async with aiohttp.ClientSession() as s:
            return await operator_call(s, self.nodes[node].url, OPERATOR, method, path, body)

    async def add_tables(self, count: int, bots_each: int, *, fast: bool, turn_seconds: int = 5) -> None:
        for _ in range(count):
            t = await self.api(
                "POST",
                "/api/tables",
                {"seats": 4, "point_value": 5, "commission_bps": 500, "turn_seconds": turn_seconds},
            )
            self.tables.append(t["id"])
            for n in range(bots_each):
                p = await self.api("POST", "/api/players", {"name": f"c{n}", "deposit": 100_000})
                self.bots.append(Bot(self.nodes["n1"].url, p["token"], t["id"], fast=fast))

    def start_bots(self) -> None:
        self.tasks = [asyncio.create_task(b.run()) for b in self.bots]

    async def stop_bots(self) -> None:
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def records(self) -> int:
        conn = await asyncpg.connect(self.dsn)
        try:
            return int(await conn.fetchval("SELECT COUNT(*) FROM hand_records"))
        finally:
            await conn.close()

    async def settle_down(self, timeout: float = 90) -> None:
        await settle_down(self.dsn, timeout)

    # -- the checks ------------------------------------------------------------------------
    async def check(self) -> dict[str, Any]:
        """Nothing lost, nothing forked (bench/common.py: prove_nothing_lost)."""
        key = load_public_key((await self.api("GET", "/api/fairness/key"))["public_key_hex"])
        proof = await prove_nothing_lost(self.dsn, key, self.tables, self.bots, await self.api("GET", "/api/ledger"))
        return {"hands": len(proof.hands), "voided": proof.voided, "problems": proof.problems}

    def close(self) -> None:
        for node in self.nodes.values():
            if node.proc is not None and node.proc.poll() is None:
                with contextlib.suppress(Exception):
                    node.proc.send_signal(signal.SIGCONT)
                    node.proc.send_signal(signal.SIGTERM)
                    node.proc.wait(15)
        if self.pg is not None:
            with contextlib.suppress(Exception):
                self.pg.stop()


async def prove(h: Harness) -> dict[str, Any]:
    """The drill: three nodes; SIGKILL one mid-hand, SIGSTOP one past its lease and
    thaw it, SIGTERM one; afterwards nothing is lost and nothing forks."""
    await asyncio.to_thread(h.start_pg)
    for n in ("n1", "n2", "n3"):
        h.start_node(n)
    for n in ("n1", "n2", "n3"):
        await h.ready(n)
    await h.add_tables(3, 2, fast=False)
    spread = await h.wait_owned(lambda o: len({owner for owner, _ in o.values() if owner}) == 3)
    h.start_bots()
    out: dict[str, Any] = {"spread_after_s": round(spread, 2)}
    await asyncio.sleep(4)

    # 1. SIGKILL a node mid-hand: its table moves within the lease time.
    victim = "n2"
    before = await h.owners()
    mine = [t for t, (o, _) in before.items() if o == victim]
    h.signal(victim, signal.SIGKILL)
    out["kill_takeover_s"] = round(
        await h.wait_owned(lambda o: all(o[t][0] not in (None, victim) for t in mine), timeout=4 * h.lease_seconds),
        2,
    )
    moved = {"kill": (mine, time.time())}
    h.start_node(victim)  # it comes back as a fresh node
    await h.ready(victim)
    await asyncio.sleep(3)

    # 2. SIGSTOP a node past its lease, then SIGCONT: its writes are refused; it lets go.
    frozen = "n3"
    theirs = [t for t, (o, _) in (await h.owners()).items() if o == frozen]
    h.signal(frozen, signal.SIGSTOP)
    out["freeze_takeover_s"] = round(
        await h.wait_owned(lambda o: all(o[t][0] not in (None, frozen) for t in theirs), timeout=4 * h.lease_seconds),
        2,
    )
    moved["freeze"] = (theirs, time.time())
    h.signal(frozen, signal.SIGCONT)
    await asyncio.sleep(2 * h.lease_seconds)
    log = h.log_of(frozen)
    out["frozen_node_let_go"] = "letting go" in log or "lost the lease" in log
    out["frozen_tables"] = theirs

    # 3. SIGTERM a node: it hands over at once (no wait for the lease), no turn missed.
    leaving = "n1"
    theirs = [t for t, (o, _) in (await h.owners()).items() if o == leaving]
    down = time.time()
    h.signal(leaving, signal.SIGTERM)
    out["sigterm_handoff_s"] = round(
        await h.wait_owned(lambda o: all(o[t][0] not in (None, leaving) for t in theirs), timeout=4 * h.lease_seconds),
        2,
    )
    out["sigterm_tables"] = theirs
    moved["sigterm"] = (theirs, time.time())
    out["sigterm_at_ms"] = int(down * 1000)
    # Handed over by SIGTERM's release, not by its leases running out: the node said so.
    released = re.findall(r"leaving; released tables (.*)$", h.log_of(leaving), re.M)
    out["sigterm_released"] = bool(released) and set(theirs) <= set(released[-1].split())
    h.start_node(leaving)
    await h.ready(leaving)
    # The bots play on past any turn the hand-over could have cost (a turn and the
    # resume grace, with room), and clock moves are counted only while they play: a
    # seat left behind when the bots are stopped runs out its clock then, and that is
    # no missed turn of the hand-over's.
    await asyncio.sleep(max(4.0, down + 4 * h.lease_seconds + 5 - time.time()))
    playing_until = time.time()

    await h.stop_bots()
    await h.settle_down()
    out.update(await h.check())
    missed = await missed_turns(h, theirs, down, playing_until)
    out["sigterm_missed_turns"] = len(missed)
    out["sigterm_missed"] = missed
    # The bots followed each table to its new node and played on there: the players'
    # own moves (not the clock's) recorded on the moved tables after each takeover.
    out["moves_after"] = {
        fault: await player_moves(h, tables, since, playing_until) for fault, (tables, since) in moved.items()
    }
    return out


async def actions_between(
    h: Harness, tables: list[str], start: float, end: float
) -> list[tuple[str, int, dict[str, Any]]]:
    """The action records of ``tables`` stored between ``start`` and ``end`` (s since
    1970), from the hands' transcripts: (table, hand, record)."""
    conn = await asyncpg.connect(h.dsn)
    try:
        rows = await conn.fetch(
            "SELECT table_id, id, transcript::text AS t FROM hands"
            " WHERE table_id = ANY($1::text[]) AND transcript IS NOT NULL",
            tables,
        )
    finally:
        await conn.close()
    return [
        (r["table_id"], r["id"], rec)
        for r in rows
        for rec in json.loads(r["t"])["log"]
        if rec["type"] == "action" and start * 1000 <= rec["t"] <= end * 1000
    ]


async def player_moves(h: Harness, tables: list[str], start: float, end: float) -> dict[str, int]:
    """The players' own moves (every action but the clock's) on each of ``tables``
    between ``start`` and ``end``."""
    found = dict.fromkeys(tables, 0)
    for table, _, rec in await actions_between(h, tables, start, end):
        if rec["action"]["kind"] != "timeout":
            found[table] += 1
    return found


async def missed_turns(h: Harness, tables: list[str], start: float, end: float) -> list[dict[str, Any]]:
    """Clock moves on ``tables`` between ``start`` and ``end``: which hand, which
    seat, when (ms after ``start``)."""
    return [
        {"hand": hand, "seat": rec["action"]["seat"], "after_ms": rec["t"] - int(start * 1000)}
        for _, hand, rec in await actions_between(h, tables, start, end)
        if rec["action"]["kind"] == "timeout"
    ]


async def takeover(h: Harness, kills: int) -> dict[str, Any]:
    await asyncio.to_thread(h.start_pg)
    for n in ("n1", "n2", "n3"):
        h.start_node(n)
    for n in ("n1", "n2", "n3"):
        await h.ready(n)
    await h.add_tables(6, 2, fast=True)
    await h.wait_owned(lambda o: len({owner for owner, _ in o.values() if owner}) == 3)
    h.start_bots()
    times: list[float] = []
    for k in range(kills):
        await asyncio.sleep(3)  # hands under way
        victim = ("n1", "n2", "n3")[k % 3]
        mine = [t for t, (o, _) in (await h.owners()).items() if o == victim]
        h.signal(victim, signal.SIGKILL)
        times.append(
            await h.wait_owned(lambda o, m=mine, v=victim: all(o[t][0] not in (None, v) for t in m), timeout=60)
        )
        h.start_node(victim)
        await h.ready(victim)
        await h.wait_owned(lambda o: len({owner for owner, _ in o.values() if owner}) == 3, timeout=60)
    await h.stop_bots()
    await h.settle_down()
    result = await h.check()
    return {
        "kills": kills,
        "lease_seconds": h.lease_seconds,
        "takeover_p50_s": round(percentile(times, 0.5), 2),
        "takeover_p99_s": round(percentile(times, 0.99), 2),
        **result,
    }


async def frozen(h: Harness, seconds: float) -> dict[str, Any]:
    """Two nodes; the bots' home node, which serves half their tables, stops for good
    (SIGSTOP, never thawed: it tells its clients nothing).  The figures: when its
    tables were taken, when each of their bots was back at the new owner (it must hear
    the silence, docs/api.md), and every clock move on those tables from the freeze
    while the bots play on (D37 gives a player the reach and the grace)."""
    await asyncio.to_thread(h.start_pg)
    for n in ("n1", "n2"):
        h.start_node(n)
    for n in ("n1", "n2"):
        await h.ready(n)
    await h.add_tables(4, 2, fast=False)
    await h.wait_owned(lambda o: len({owner for owner, _ in o.values() if owner}) == 2, timeout=60)
    h.start_bots()
    await asyncio.sleep(6)  # hands under way
    victim = "n1"  # the bots' home
    theirs = [t for t, (o, _) in (await h.owners()).items() if o == victim]
    bots = [b for b in h.bots if b.table_id in theirs]
    before = {id(b): b.connections for b in bots}
    other = h.nodes["n2"].url
    stopped = time.time()
    h.signal(victim, signal.SIGSTOP)
    back: dict[int, float] = {}
    taken: float | None = None
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        now = time.time()
        owners = await h.owners()
        if taken is None and all(owners[t][0] not in (None, victim) for t in theirs):
            taken = now - stopped
        for b in bots:
            if id(b) not in back and b.connections > before[id(b)] and b.server == other and b._ws is not None:
                back[id(b)] = now - stopped
        await asyncio.sleep(0.1)
    playing_until = time.time()
    await h.stop_bots()
    h.signal(victim, signal.SIGKILL)
    await h.settle_down()
    missed = await missed_turns(h, theirs, stopped, playing_until)
    return {
        "tables_frozen": len(theirs),
        "bots": len(bots),
        "takeover_s": None if taken is None else round(taken, 2),
        "bots_back_s": sorted(round(v, 2) for v in back.values()),
        "bots_never_back": len(bots) - len(back),
        "missed_turns": len(missed),
        "missed": missed,
        "moves_after": await player_moves(h, theirs, stopped, playing_until),
        "lease_seconds": h.lease_seconds,
    }


async def throughput(h: Harness, seconds: float) -> dict[str, Any]:
    await asyncio.to_thread(h.start_pg)
    out: dict[str, Any] = {}
    for count in (1, 2, 3):
        for n in [f"n{i}" for i in range(1, count + 1)]:
            if n not in h.nodes or h.nodes[n].proc is None or h.nodes[n].proc.poll() is not None:  # type: ignore[union-attr]
                h.start_node(n)
                await h.ready(n)
        if not h.tables:
            await h.add_tables(12, 3, fast=True, turn_seconds=30)
            h.start_bots()
        await h.wait_owned(
            lambda o, c=count: (
                len({owner for owner, _ in o.values() if owner}) == c and all(owner for owner, _ in o.values())
            ),
            timeout=120,
        )
        await asyncio.sleep(3)
        r0, t0 = await h.records(), time.monotonic()
        await asyncio.sleep(seconds)
        out[f"{count}_nodes_actions_per_s"] = round((await h.records() - r0) / (time.monotonic() - t0), 1)
    await h.stop_bots()
    await h.settle_down()
    out.update(await h.check())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("what", choices=("prove", "takeover", "throughput", "frozen"))
    ap.add_argument("-n", "--kills", type=int, default=12)
    ap.add_argument(
        "--seconds", type=float, default=None, help="throughput: each count's (20); frozen: after the stop (45)"
    )
    ap.add_argument("--lease-seconds", type=float, default=3.0)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    h = Harness(Path(tempfile.mkdtemp(prefix="rummy-cluster-")), lease_seconds=args.lease_seconds)
    try:
        if args.what == "prove":
            report = asyncio.run(prove(h))
        elif args.what == "takeover":
            report = asyncio.run(takeover(h, args.kills))
        elif args.what == "frozen":
            report = asyncio.run(frozen(h, args.seconds or 45))
        else:
            report = asyncio.run(throughput(h, args.seconds or 20))
    finally:
        h.close()
    report["workdir"] = str(h.workdir) if args.keep else None
    if not args.keep:
        shutil.rmtree(h.workdir, ignore_errors=True)
    print(json.dumps(report, sort_keys=True))
    return 0 if not report.get("problems") else 1


if __name__ == "__main__":
    sys.exit(main())
