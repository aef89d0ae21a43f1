"""Load benchmark (issues 13 and 20): the table server beside two floors.

    python bench/load.py                       # saturation and human pace: about 25 minutes
    python bench/load.py --quick --json        # a smoke run (the test suite runs this)
    python bench/load.py --tables 16 --seats 2000 --server-workers 2 --rounds 2
    python bench/load.py --scenarios rss --rss-minutes 30      # memory over a long human-pace run
    python bench/load.py --scenarios rss --tracemalloc DIR     # and what grew (bench/tracemem/compare.py DIR)
    python bench/load.py --scenarios starved                   # the server held to a small CPU share

It starts an embedded PostgreSQL in a temporary directory and, for every measurement,
a fresh database and a fresh server on it: ``python -m service.cli serve`` (the
**project**, ``--workers N`` when the server has that flag) with ``--seed-seconds 2
--next-hand-delay 0.3``, or one of the two floors of ``bench/floor.py``: the **bare
floor** (``floor``: a WebSocket frame in, one insert and commit, a frame out) and the
**like-for-like floor** (``floor_like``: that, plus the protocol's unavoidable work — one
Ed25519 verify of the player's signature over the canonical move body, one Ed25519
signature of the new head by the server, and a slim push of a few hundred bytes to each
other socket of the table).  Client processes (``bench/loadclient.py``, about one per
2,000 sockets, at least two) drive real WebSockets against all three with the same
code, the same sockets and the same pacing.  Within a point the three are measured one
after another, and with ``--rounds R`` the order is reversed every other round
(project, floor, floor_like, floor_like, floor, project, …), so that the ratios come
from neighbours in time on a machine whose speed drifts.

Scenarios (``--scenarios``):

* **saturation** — K tables of six seats, no think time; per measurement the
  acknowledged actions/s, latency p50/p99/max (send of an ``action`` to its reply; the
  server replies after the commit), the CPU of the server (all its processes, from
  /proc), of PostgreSQL and of the clients, the server's CPU milliseconds per
  acknowledged action, and the frames and bytes clients received per action (the
  frames' text, by kind of frame, and the bytes read from the sockets: what crossed
  the wire; ``--compress``: the clients offer permessage-deflate as browsers do, and
  the report counts the sockets on which the server took it up);
* **human** — N connected seats, each acting 2–5 s (uniform) after its turn comes; the
  same figures, and the server's RSS per seat;
* **rss** — one long human-pace run (``--rss-seats``, ``--rss-minutes``; a short default)
  sampling the RSS of all the server's processes every ``--rss-every`` seconds: start,
  end, and the least-squares slope in KB per minute and KB per acknowledged action;
* **starved** — human pace with the server pinned by ``taskset`` to one core beside
  ``stress-ng --cpu 2`` pinned to the same core (PostgreSQL and the clients are not
  pinned): leases lost, heartbeats run late (past half a lease) and the latest,
  tables reloaded (and how many after a timeout), handshakes that failed, p50/p99 —
  counted from the server's log and the clients, set-up included.

Every project figure is also given as a ratio to each floor's in the same round.  At
the end: an aligned table on stdout (or the JSON with ``--json``), and a chart of
latency against load (``--chart``, default docs/load.png).  A progress bar goes to
stderr when it is a terminal.  Every measurement records the load average before and
after it, the CPU other processes took, and which code it measured.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import math
import multiprocessing
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import asyncpg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import loadclient, loadreport  # noqa: E402
from bench.procstat import Snapshot, cpu_pct, cpu_seconds, descendants, git_commit, loadavg, machine, rss_kb, slope  # noqa: E402
from service.db import EmbeddedPostgres  # noqa: E402
from service.envnames import OPERATOR_TOKEN_ENV  # noqa: E402

OPERATOR = "load-operator-" + os.urandom(8).hex()
SOCKETS_PER_CLIENT = 2000
KINDS = ("project", "floor", "floor_like")
FLOORS = ("floor", "floor_like")
TARGETS = {
    "saturation_actions_per_s": 1500,
    "saturation_p99_ms": 50,
    "saturation_floor_ratio": 0.5,
    "human_seats": 10_000,
    "human_p99_ms": 100,
    "human_kb_per_seat": 100,
}
# What the server's log says when it struggles (service/cluster.py, service/table.py,
# service/tablecore/core.py, service/telling.py, service/workers.py): counted over a
# measurement, set-up included.
LOG_MARKS = {
    "lost_leases": "lost the lease",
    "reloads": "a write came back",  # the table core, once per reload after a write
    "load_retries": "cannot load",
    "tables_let_go": "letting go",
    "slow_heartbeats": "a heartbeat took",
    "late_heartbeats": "the heartbeat ran",  # the loop kept it waiting past half a lease
    "heartbeat_failures": "heartbeat failed",
    "slow_clients_dropped": "dropping a slow client",
    "database_away": "the database is away",
    "worker_restarts": "starting it again",
    "tracebacks": "Traceback",
}
LATE = re.compile(r"the heartbeat ran ([0-9.]+) s late")
TIMEOUT = re.compile(r"Timeout|timed out|canceling statement", re.IGNORECASE)
WRITE_FAILED = " failed: "  # the table's shell, naming the error of a write that failed


def count_log(path: Path, upto: int) -> dict[str, int]:
    """The LOG_MARKS in the first ``upto`` bytes of a server's log (its shutdown is not
    counted), and ``reload_timeouts``: the writes that failed on a timeout (a write or
    a pool acquire that took too long), each of which sets a reload off; and
    ``late_heartbeat_max_ms``: the latest a heartbeat ran (loop lag, when past half a lease)."""
    out = dict.fromkeys(LOG_MARKS, 0)
    out["reload_timeouts"] = 0
    out["late_heartbeat_max_ms"] = 0
    with contextlib.suppress(OSError), open(path, "rb") as f:
        for line in f.read(upto).decode(errors="replace").splitlines():
            for name, mark in LOG_MARKS.items():
                if mark in line:
                    out[name] += 1
            if WRITE_FAILED in line and TIMEOUT.search(line):
                out["reload_timeouts"] += 1
            late = LATE.search(line)
            if late:
                out["late_heartbeat_max_ms"] = max(out["late_heartbeat_max_ms"], round(float(late.group(1)) * 1000))
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpus_allowed(pid: int) -> str | None:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    return None


def bytes_by_kind(results: dict[Any, dict[str, Any]], acks: int) -> dict[str, int]:
    """Bytes received by clients per acknowledged action, by frame kind, largest first."""
    total: dict[str, int] = {}
    for r in results.values():
        for k, v in r.get("rx_kinds", {}).items():
            total[k] = total.get(k, 0) + v
    return {k: round(v / max(1, acks)) for k, v in sorted(total.items(), key=lambda kv: -kv[1])}


def percentile(values: list[float], q: float) -> float:
    """Nearest rank."""
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, max(0, math.ceil(q * len(v)) - 1))]


def per_action(cpu_s: float, acks: int) -> float | None:
    """CPU milliseconds per acknowledged action."""
    return None if not acks else round(cpu_s * 1000 / acks, 3)


# ----------------------------------------------------------------------------- progress
class Progress:
    def __init__(self) -> None:
        self.on = sys.stderr.isatty()
        self.label = ""

    def show(self, text: str, frac: float | None = None) -> None:
        if not self.on:
            return
        bar = ""
        if frac is not None:
            n = int(24 * max(0.0, min(1.0, frac)))
            bar = "[" + "#" * n + " " * (24 - n) + "] "
        line = f"{self.label} {bar}{text}"
        cols = shutil.get_terminal_size((100, 20)).columns
        sys.stderr.write("\r" + line[: cols - 1].ljust(cols - 1))
        sys.stderr.flush()

    def done(self) -> None:
        if self.on:
            sys.stderr.write("\r" + " " * (shutil.get_terminal_size((100, 20)).columns - 1) + "\r")
            sys.stderr.flush()


# ----------------------------------------------------------------------------- servers
@dataclass
class Server:
    kind: str
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def pids(self) -> list[int]:
        return descendants(self.proc.pid) if self.proc.poll() is None else []

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@dataclass
class Starve:
    """The CPU-starved set-up: the server pinned to ``core``, ``hogs`` CPU hogs of
    stress-ng pinned beside it."""

    core: int
    hogs: int

    def start(self) -> subprocess.Popen[bytes]:
        cmd = ["stress-ng", "--cpu", str(self.hogs), "--taskset", str(self.core), "--quiet"]
        # Its own process group (stopped as a group, never by name) but the bench's
        # session: with the kernel's autogroup scheduling a new session would be a
        # scheduling group of its own, and two hogs would weigh as one.
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, process_group=0)

    @staticmethod
    def stop(hog: subprocess.Popen[bytes]) -> None:
        for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            if hog.poll() is not None:
                return
            with contextlib.suppress(ProcessLookupError):
                os.killpg(hog.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                hog.wait(wait_s)


def serve_workers_flag() -> bool:
    out = subprocess.run(
        [sys.executable, "-m", "service.cli", "serve", "--help"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return "--workers" in out.stdout


@dataclass
class Bench:
    workdir: Path
    args: argparse.Namespace
    progress: Progress = field(default_factory=Progress)
    pg: EmbeddedPostgres | None = None
    dsn: str = ""
    n: int = 0
    server_workers: int = 1
    workers_flag: bool = False

    # -- PostgreSQL --------------------------------------------------------------------
    def start_pg(self) -> None:
        self.pg = EmbeddedPostgres(self.workdir / "pg")
        self.dsn = self.pg.start()

    def postmaster(self) -> int:
        assert self.pg is not None
        return int((self.pg.pgdata / "postmaster.pid").read_text().split()[0])

    def db_dsn(self, name: str) -> str:
        u = urllib.parse.urlsplit(self.dsn)
        return urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + name, u.query, u.fragment))

    def new_database(self) -> str:
        self.n += 1
        name = f"load_{self.n}"

        async def create() -> None:
            conn = await asyncpg.connect(self.dsn)
            try:
                await conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
                await conn.execute(f'CREATE DATABASE "{name}"')
            finally:
                await conn.close()

        asyncio.run(create())
        return name

    def drop_database(self, name: str) -> None:
        async def drop() -> None:
            conn = await asyncpg.connect(self.dsn)
            try:
                await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            finally:
                await conn.close()

        with contextlib.suppress(Exception):
            asyncio.run(drop())

    async def pg_settings(self) -> dict[str, str]:
        conn = await asyncpg.connect(self.dsn)
        try:
            out = {}
            for name in ("server_version", "fsync", "synchronous_commit", "wal_sync_method", "shared_buffers"):
                out[name] = str(await conn.fetchval(f"SHOW {name}"))
            return out
        finally:
            await conn.close()

    # -- the servers -------------------------------------------------------------------
    def start_server(self, kind: str, db: str, pin: int | None = None) -> Server:
        port = free_port()
        point = self.workdir / db
        point.mkdir()
        log = point / f"{kind}.log"
        if kind == "project":
            cmd = [
                sys.executable,
                "-m",
                "service.cli",
                "serve",
                "--port",
                str(port),
                "--data-dir",
                str(point / "data"),
                "--database-url",
                self.db_dsn(db),
                "--seed-seconds",
                "2",
                "--next-hand-delay",
                "0.3",
            ]
            if self.workers_flag:  # always explicit: serve's default is one worker per core
                cmd += ["--workers", str(self.server_workers)]
        else:
            cmd = [sys.executable, str(ROOT / "bench" / "floor.py"), "--port", str(port)]
            cmd += ["--database-url", self.db_dsn(db)]
            if kind == "floor_like":
                cmd.append("--like")
        if pin is not None:  # the server and every process it starts, on one core
            cmd = ["taskset", "-c", str(pin), *cmd]
        env = {**os.environ, OPERATOR_TOKEN_ENV: OPERATOR, "PYTHONUNBUFFERED": "1"}
        env.pop("DATABASE_URL", None)
        if kind == "project" and self.args.tracemalloc:  # bench/tracemem: snapshots of every process
            where = Path(self.args.tracemalloc).resolve() / db
            where.mkdir(parents=True, exist_ok=True)
            path = os.pathsep.join(p for p in (str(ROOT / "bench" / "tracemem"), env.get("PYTHONPATH", "")) if p)
            env |= {
                "PYTHONPATH": path,
                "RUMMY_BENCH_TRACEMALLOC_DIR": str(where),
                "RUMMY_BENCH_TRACEMALLOC_EVERY": str(self.args.tracemalloc_every),
            }
        with open(log, "ab") as out:  # the server's output to a file: never a pipe nobody reads
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=out, stdin=subprocess.DEVNULL)
        server = Server(kind, f"http://127.0.0.1:{port}", proc, log)
        end = time.monotonic() + 90
        while time.monotonic() < end:
            if proc.poll() is not None:
                break
            with contextlib.suppress(OSError), urllib.request.urlopen(server.url + "/healthz", timeout=2) as r:
                if r.status == 200:
                    time.sleep(0.5)  # let --workers children come up too
                    return server
            time.sleep(0.1)
        server.stop()
        raise RuntimeError(f"the {kind} server did not start:\n{log.read_text(errors='replace')[-3000:]}")

    # -- one measurement ---------------------------------------------------------------
    def client_procs(self, sockets: int) -> int:
        if self.args.client_procs:
            return self.args.client_procs
        return max(1 if self.args.quick else 2, math.ceil(sockets / SOCKETS_PER_CLIENT))

    def point(
        self,
        kind: str,
        scenario: str,
        tables: int,
        think: tuple[float, float] | None,
        seconds: float,
        *,
        starve: Starve | None = None,
        sample_every: float = 0.0,
    ) -> dict[str, Any]:
        """One server of ``kind`` under ``tables`` tables of six for a window of
        ``seconds`` after set-up and warm-up; ``starve``: pinned beside CPU hogs;
        ``sample_every``: the server's RSS sampled that often through the window."""
        a = self.args
        seats = tables * loadclient.SEATS
        self.progress.label = f"{scenario} {kind} {seats} seats:"
        self.progress.show("starting the server")
        la0 = loadavg()
        server_at = git_commit()  # others change service/ while this runs: which code each point measured
        db = self.new_database()
        hog = starve.start() if starve is not None else None
        procs: list[multiprocessing.process.BaseProcess] = []
        conns: list[Connection] = []
        samples: list[tuple[float, int, int]] = []  # (s into the window, server RSS KB, acks in the window)
        try:
            server = self.start_server(kind, db, None if starve is None else starve.core)
        except BaseException:
            if hog is not None:
                Starve.stop(hog)
            raise
        try:
            rss0 = rss_kb(server.pids())
            pinned = cpus_allowed(server.pids()[-1]) if starve is not None and server.pids() else None
            nproc = min(self.client_procs(seats), tables)
            ctx = multiprocessing.get_context("spawn")
            for w in range(nproc):
                share = tables // nproc + (1 if w < tables % nproc else 0)
                spec = loadclient.Spec(
                    mode=kind,
                    url=server.url,
                    operator=OPERATOR,
                    tables=share,
                    worker_no=w,
                    think=think,
                    hand_turns=a.hand_turns,
                    turn_seconds=60 if scenario == "saturation" else 30,
                    seed=a.seed,
                    compress=15 if a.compress else 0,
                )
                parent, child = ctx.Pipe()
                p = ctx.Process(target=loadclient.worker_main, args=(spec, child), daemon=True)
                p.start()
                child.close()
                procs.append(p)
                conns.append(parent)
            status: dict[int, dict[str, Any]] = {}
            results: dict[int, dict[str, Any]] = {}

            def pump(until: float, stop_when: Any = None) -> None:
                while True:
                    left = until - time.time()
                    if left <= 0 or (stop_when is not None and stop_when()):
                        return
                    for c in wait(conns, timeout=min(left, 0.25)):
                        with contextlib.suppress(EOFError, OSError):
                            while c.poll():
                                tag, body = c.recv()
                                if tag == "status":
                                    status[body["worker"]] = body
                                elif tag == "result":
                                    results[body["worker"]] = body

            def total(key: str) -> int:
                return sum(int(s.get(key, 0)) for s in status.values())

            # 1. set-up: tables, players, keys; every seat connected, seated, its table dealt
            started = time.time()
            counted = "seated" if kind == "project" else "connected"
            setup_timeout = a.setup_timeout or (
                max(120.0, seats * 0.06) if starve is None else max(300.0, seats * 0.15)
            )
            while time.time() - started < setup_timeout:
                pump(time.time() + 0.5)
                if len(status) == nproc and all(s["ready"] for s in status.values()):
                    break
                if any(p.exitcode is not None for p in procs):
                    raise RuntimeError("a client process died during set-up")
                errs = [e for s in status.values() for e in s.get("setup_errors", [])]
                if errs and not total("seated"):
                    raise RuntimeError(f"set-up failed: {errs[0]}")
                self.progress.show(
                    f"set-up {time.time() - started:4.0f} s: {total(counted)}/{seats} seats,"
                    f" {total('tables_dealt')}/{tables} tables dealt",
                    total(counted) / seats,
                )
            setup_s = time.time() - started
            reached = total(counted)
            # 2. warm-up, then the window
            warm_end = time.time() + a.warmup
            while time.time() < warm_end:
                self.progress.show(f"warm-up, {total('acks')} actions so far")
                pump(min(warm_end, time.time() + 0.5))
            t0 = time.time() + 0.3
            t1 = t0 + seconds
            drain = 30.0
            for c in conns:
                c.send(("window", t0, t1, drain))
            pump(t0)
            s0 = Snapshot.take()
            acks0 = total("acks")
            next_sample = t0
            while time.time() < t1:
                now = time.time()
                if sample_every and now >= next_sample:
                    samples.append((round(now - t0, 1), rss_kb(server.pids()), total("acks") - acks0))
                    next_sample += sample_every
                done = (now - t0) / seconds
                rate = (total("acks") - acks0) / max(0.1, now - t0)
                self.progress.show(f"measuring, {rate:7.0f}/s, {(t1 - now) / 60:5.1f} min left", done)
                pump(min(t1, time.time() + 0.5, next_sample if sample_every else t1))
            s1 = Snapshot.take()
            if sample_every:
                samples.append((round(s1.at - t0, 1), rss_kb(sorted(s1.tree(server.proc.pid))), total("acks") - acks0))
            srv_pids = s0.tree(server.proc.pid) | s1.tree(server.proc.pid)
            postmaster = self.postmaster()
            pg_pids = s0.tree(postmaster) | s1.tree(postmaster)
            client_pids = {x for p in procs if p.pid is not None for x in s0.tree(p.pid) | s1.tree(p.pid)}
            hog_pids = s0.tree(hog.pid) | s1.tree(hog.pid) if hog is not None else set()
            rss1 = rss_kb(sorted(s1.tree(server.proc.pid)))
            self.progress.show("collecting")
            pump(t1 + drain + 15, lambda: len(results) == nproc)
            log_end = server.log.stat().st_size  # the log up to here: set-up and the window, not the shutdown
            if len(results) < nproc:
                raise RuntimeError(f"only {len(results)} of {nproc} client processes reported")
        finally:
            for c in conns:
                with contextlib.suppress(Exception):
                    c.send(("stop",))
            for p in procs:
                p.join(15)
                if p.is_alive():
                    p.kill()
                    p.join(5)
            server.stop()
            if hog is not None:
                Starve.stop(hog)
            self.drop_database(db)
        la1 = loadavg()
        cores = os.cpu_count() or 1
        mtotal = max(1, s1.machine[2] - s0.machine[2])
        mbusy = (s1.machine[0] - s0.machine[0]) / mtotal * 100 * cores
        msteal = (s1.machine[1] - s0.machine[1]) / mtotal * 100 * cores
        mine = srv_pids | pg_pids | client_pids | hog_pids | {os.getpid()}
        others = sorted(
            ((cpu_pct(s0, s1, {p}), p) for p in s1.procs if p not in mine), key=lambda x: x[0], reverse=True
        )
        cpu = {
            "server": cpu_pct(s0, s1, srv_pids),
            "pg": cpu_pct(s0, s1, pg_pids),
            "client": cpu_pct(s0, s1, client_pids),
            "hog": cpu_pct(s0, s1, hog_pids),
        }
        lat = [x for r in results.values() for x in r["lat"]]
        seed_lat = [x for r in results.values() for x in r["seed_lat"]]
        acks = sum(r["acks"] for r in results.values())
        errors: dict[str, int] = {}
        kinds: dict[str, int] = {}
        for r in results.values():
            for k, v in r["errors"].items():
                errors[k] = errors.get(k, 0) + v
            for k, v in r["kinds"].items():
                kinds[k] = kinds.get(k, 0) + v
        own = cpu["server"] + cpu["pg"] + cpu["client"] + cpu["hog"]
        rx_msgs = sum(r["rx_msgs"] for r in results.values())
        rx_bytes = sum(r["rx_bytes"] for r in results.values())
        out = {
            "kind": kind,
            "tables": tables,
            "seats": seats,
            "seats_reached": reached,
            "setup_s": round(setup_s, 1),
            "window_s": round(seconds, 1),
            "actions_per_s": round(acks / seconds, 1),
            "acks": acks,
            "p50_ms": round(percentile(lat, 0.50), 2),
            "p99_ms": round(percentile(lat, 0.99), 2),
            "max_ms": round(max(lat), 2) if lat else float("nan"),
            "samples": len(lat),
            "server_cpu_pct": cpu["server"],
            "server_cpu_ms_per_action": per_action(cpu_seconds(s0, s1, srv_pids), acks),
            "pg_cpu_pct": cpu["pg"],
            "pg_cpu_ms_per_action": per_action(cpu_seconds(s0, s1, pg_pids), acks),
            "client_cpu_pct": cpu["client"],
            "machine_cpu_pct": round(mbusy, 1),
            "other_cpu_pct": round(max(0.0, mbusy - own), 1),
            "steal_cpu_pct": round(msteal, 1),
            "busiest_others": [{"pid": p, "name": s1.procs[p][1], "cpu_pct": c} for c, p in others[:4] if c >= 2.0],
            "server_procs": len(srv_pids),
            "client_procs": nproc,
            "rss_before_kb": rss0,
            "rss_after_kb": rss1,
            "rss_per_seat_kb": round((rss1 - rss0) / max(1, reached), 1),
            "frames_in_per_action": round(rx_msgs / max(1, acks), 2),
            "bytes_in_per_action": round(rx_bytes / max(1, acks)),
            "bytes_in_per_action_by_kind": bytes_by_kind(results, acks),
            "wire_bytes_in_per_action": round(sum(r.get("rx_wire", 0) for r in results.values()) / max(1, acks)),
            "sockets_deflated": sum(r.get("deflated", 0) for r in results.values()),
            "unanswered": sum(r["unanswered"] for r in results.values()),
            "lost": sum(r["lost"] for r in results.values()),
            "errors": errors,
            "handshakes": sum(r.get("handshakes", 0) for r in results.values()),
            "handshakes_failed": sum(r.get("handshakes_failed", 0) for r in results.values()),
            "server_log": count_log(server.log, log_end),
            "load_avg_before": la0,
            "load_avg_after": la1,
            "server_at": server_at,
        }
        if starve is not None:
            out["starved"] = {
                "core": starve.core,
                "hogs": starve.hogs,
                "server_cpus": pinned,
                "hog_cpu_pct": cpu["hog"],
            }
        if sample_every:
            out["rss"] = rss_trend(samples)
        if kind == "project":
            out.update(
                {
                    "action_kinds": kinds,
                    "seed_moves_per_s": round(sum(r["seed_acks"] for r in results.values()) / seconds, 1),
                    "seed_p50_ms": round(percentile(seed_lat, 0.5), 2),
                    "seed_p99_ms": round(percentile(seed_lat, 0.99), 2),
                    "hands_ended": sum(r["hands_ended"] for r in results.values()),
                    "clock_moves": sum(r["clock_moves"] for r in results.values()),
                    "reconnects": sum(r["reconnects"] for r in results.values()),
                    "key_mismatch": sum(r["key_mismatch"] for r in results.values()),
                }
            )
        self.progress.done()
        return out


def rss_trend(samples: list[tuple[float, int, int]]) -> dict[str, Any]:
    """Start, end and least-squares slopes of the server's RSS over a window."""
    ts = [s[0] / 60 for s in samples]
    kb = [float(s[1]) for s in samples]
    acks = [float(s[2]) for s in samples]
    per_min = slope(ts, kb)
    per_ack = slope(acks, kb)
    # the second half alone: growth that goes on after the first minutes' ramp (caches, pools)
    half = [k for k, t in enumerate(ts) if t - ts[0] >= (ts[-1] - ts[0]) / 2] if ts else []
    late_min = slope([ts[k] for k in half], [kb[k] for k in half])
    late_ack = slope([acks[k] for k in half], [kb[k] for k in half])
    return {
        "samples": [list(s) for s in samples],
        "minutes": round(ts[-1] - ts[0], 2) if ts else 0,
        "start_kb": samples[0][1] if samples else None,
        "end_kb": samples[-1][1] if samples else None,
        "acks": samples[-1][2] - samples[0][2] if samples else 0,
        "slope_kb_per_min": None if per_min is None else round(per_min, 1),
        "slope_kb_per_action": None if per_ack is None else round(per_ack, 3),
        "late_slope_kb_per_min": None if late_min is None else round(late_min, 1),
        "late_slope_kb_per_action": None if late_ack is None else round(late_ack, 3),
    }


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or not b or math.isnan(a) or math.isnan(b):
        return None
    return round(a / b, 3)


def with_ratios(row: dict[str, Any]) -> dict[str, Any]:
    """The project over each floor measured in the same round; ``ratio`` is over the
    bare floor (as before issue 20)."""
    row["ratios"] = {}
    p = row.get("project")
    for f in FLOORS:
        if p is None or f not in row:
            continue
        fl = row[f]
        row["ratios"][f] = {
            "actions_per_s": ratio(p["actions_per_s"], fl["actions_per_s"]),
            "server_cpu_ms_per_action": ratio(p["server_cpu_ms_per_action"], fl["server_cpu_ms_per_action"]),
            "p50": ratio(p["p50_ms"], fl["p50_ms"]),
            "p99": ratio(p["p99_ms"], fl["p99_ms"]),
        }
    row["ratio"] = row["ratios"].get("floor", {"actions_per_s": None, "p50": None, "p99": None})
    return row


def summary(rows: list[dict[str, Any]], kinds: list[str]) -> list[dict[str, Any]]:
    """Per point (seats), the range over rounds of each kind's figures and ratios."""
    out = []
    for seats in sorted({r["seats"] for r in rows}):
        these = [r for r in rows if r["seats"] == seats]
        entry: dict[str, Any] = {"seats": seats, "tables": these[0]["tables"], "rounds": len(these)}
        for kind in kinds:
            for key in ("actions_per_s", "server_cpu_ms_per_action", "p50_ms", "p99_ms", "frames_in_per_action"):
                vals = [r[kind][key] for r in these if kind in r and r[kind].get(key) is not None]
                entry[f"{kind}.{key}"] = [min(vals), max(vals)] if vals else None
        for f in FLOORS:
            for key in ("actions_per_s", "server_cpu_ms_per_action", "p99"):
                vals = [r["ratios"][f][key] for r in these if f in r["ratios"] and r["ratios"][f][key] is not None]
                entry[f"ratio_{f}.{key}"] = [min(vals), max(vals)] if vals else None
        out.append(entry)
    return out


def order(kinds: list[str], round_no: int) -> list[str]:
    """The kinds in their order for a round: reversed every other round."""
    return list(kinds) if round_no % 2 == 0 else list(reversed(kinds))


def run(args: argparse.Namespace) -> dict[str, Any]:
    soft = loadclient.raise_nofile()
    workdir = Path(tempfile.mkdtemp(prefix="rummy-load-"))
    b = Bench(workdir, args)
    b.workers_flag = serve_workers_flag()
    if args.server_workers == "auto":
        b.server_workers = (os.cpu_count() or 1) if b.workers_flag else 1
    else:
        b.server_workers = int(args.server_workers)
        if b.server_workers > 1 and not b.workers_flag:
            raise SystemExit("this server has no serve --workers")
    report: dict[str, Any] = {
        "machine": machine(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python bench/load.py " + " ".join(shlex.quote(x) for x in args.argv),
        "commit": git_commit(),
        "settings": {
            "scenarios": args.scenarios,
            "kinds": args.kinds,
            "rounds": args.rounds,
            "tables": args.tables,
            "seats": args.seats,
            "window_s": {"saturation": args.seconds, "human": args.human_seconds},
            "warmup_s": args.warmup,
            "think_s": list(args.think),
            "hand_turns": args.hand_turns,
            "server_workers": b.server_workers,
            "nofile": soft,
            "server_flags": "--seed-seconds 2 --next-hand-delay 0.3",
            "rss": {"seats": args.rss_seats, "minutes": args.rss_minutes, "every_s": args.rss_every},
            "starved": {
                "seats": args.starve_seats,
                "seconds": args.starve_seconds,
                "core": args.starve_core,
                "hogs": args.starve_hogs,
            },
        },
        "saturation": [],
        "human": [],
        "rss": [],
        "starved": [],
        "load_avg_before": loadavg(),
    }
    try:
        b.progress.label = "PostgreSQL:"
        b.progress.show("starting")
        b.start_pg()
        report["postgres"] = asyncio.run(b.pg_settings())
        for scenario, points, think, seconds in (
            ("saturation", args.tables, None, args.seconds),
            ("human", [max(1, n // 6) for n in args.seats], tuple(args.think), args.human_seconds),
        ):
            if scenario not in args.scenarios:
                continue
            for k in points:
                for r in range(args.rounds):
                    row: dict[str, Any] = {"tables": k, "seats": 6 * k, "round": r + 1}
                    for kind in order(args.kinds, r):
                        row[kind] = b.point(kind, scenario, k, think, seconds)
                    report[scenario].append(with_ratios(row))
        if "rss" in args.scenarios:
            for kind in args.rss_kinds:
                k = max(1, args.rss_seats // 6)
                report["rss"].append(
                    b.point(kind, "rss", k, tuple(args.think), args.rss_minutes * 60, sample_every=args.rss_every)
                )
        if "starved" in args.scenarios:
            starve = Starve(args.starve_core, args.starve_hogs)
            k = max(1, args.starve_seats // 6)
            for r in range(args.rounds):
                row = {"tables": k, "seats": 6 * k, "round": r + 1}
                for kind in order(args.kinds, r):
                    row[kind] = b.point(kind, "starved", k, tuple(args.think), args.starve_seconds, starve=starve)
                report["starved"].append(with_ratios(row))
    finally:
        if b.pg is not None:
            b.pg.stop()
        if args.keep:
            report["workdir"] = str(workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    report["load_avg_after"] = loadavg()
    report["summary"] = {s: summary(report[s], args.kinds) for s in ("saturation", "human") if report[s]}
    report["targets"] = targets(report)
    return report


def targets(report: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"wanted": TARGETS}
    sat = [r for r in report["saturation"] if "project" in r]
    if sat:
        best = max(sat, key=lambda r: r["project"]["actions_per_s"])
        ok = [r for r in sat if r["project"]["p99_ms"] <= TARGETS["saturation_p99_ms"]]
        best_ok = max(ok, key=lambda r: r["project"]["actions_per_s"]) if ok else None
        out["saturation"] = {
            "peak_actions_per_s": best["project"]["actions_per_s"],
            "peak_p99_ms": best["project"]["p99_ms"],
            "peak_tables": best["tables"],
            "best_within_p99": None if best_ok is None else best_ok["project"]["actions_per_s"],
            "floor_ratio_at_peak": best["ratio"]["actions_per_s"],
            "floor_like_ratio_at_peak": best["ratios"].get("floor_like", {}).get("actions_per_s"),
            "met": bool(
                best_ok is not None
                and best_ok["project"]["actions_per_s"] >= TARGETS["saturation_actions_per_s"]
                and (best_ok["ratio"]["actions_per_s"] or 0) >= TARGETS["saturation_floor_ratio"]
            ),
        }
    hum = [r for r in report["human"] if "project" in r]
    if hum:
        top = max(hum, key=lambda r: r["project"]["seats_reached"])
        p = top["project"]
        out["human"] = {
            "largest_seats": p["seats_reached"],
            "p99_ms": p["p99_ms"],
            "kb_per_seat": p["rss_per_seat_kb"],
            "met": bool(
                # whole tables of six: 10,000 seats asked are 1,666 tables, 9,996 seats
                p["seats_reached"] >= TARGETS["human_seats"] // loadclient.SEATS * loadclient.SEATS
                and p["p99_ms"] <= TARGETS["human_p99_ms"]
                and p["rss_per_seat_kb"] <= TARGETS["human_kb_per_seat"]
            ),
        }
    return out


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def names(allowed: tuple[str, ...]) -> Any:
    def parse(text: str) -> list[str]:
        out = [x.strip() for x in text.split(",") if x.strip()]
        bad = [x for x in out if x not in allowed]
        if bad or not out:
            raise argparse.ArgumentTypeError(f"{text!r}: choose from {', '.join(allowed)}")
        return out

    return parse


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument(
        "--compress",
        action="store_true",
        help="the clients offer permessage-deflate, as browsers do (bytes on the wire are reported either way)",
    )
    ap.add_argument("--quick", action="store_true", help="a short smoke run: tiny K and N, a few seconds")
    ap.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")
    ap.add_argument("--json-out", default=None, help="also write the JSON to this file")
    ap.add_argument("--chart", default=str(ROOT / "docs" / "load.png"), help="the PNG to draw (default docs/load.png)")
    ap.add_argument(
        "--scenarios",
        type=names(("saturation", "human", "rss", "starved")),
        default=None,
        help="saturation,human (default), rss, starved",
    )
    ap.add_argument(
        "--kinds",
        type=names(KINDS),
        default=list(KINDS),
        help="the servers measured: project,floor,floor_like (default all three)",
    )
    ap.add_argument(
        "--rounds", type=int, default=1, help="measure each point R times, the order reversed every other round"
    )
    ap.add_argument("--tables", type=ints, default=None, help="saturation: K tables of 6, e.g. 4,16,48")
    ap.add_argument("--seats", type=ints, default=None, help="human pace: N seats, e.g. 1000,3000,10000")
    ap.add_argument("--seconds", type=float, default=None, help="saturation window (default 15)")
    ap.add_argument("--human-seconds", type=float, default=None, help="human-pace window (default 30)")
    ap.add_argument("--warmup", type=float, default=None, help="seconds after set-up before the window (default 5)")
    ap.add_argument("--think", type=float, nargs=2, default=(2.0, 5.0), metavar=("LO", "HI"))
    ap.add_argument("--hand-turns", type=int, default=30, help="mean turns before every seat drops (default 30)")
    ap.add_argument("--rss-seats", type=int, default=None, help="rss: seats at human pace (default 2,000)")
    ap.add_argument("--rss-minutes", type=float, default=None, help="rss: the window in minutes (default 3)")
    ap.add_argument("--rss-every", type=float, default=None, help="rss: seconds between samples (default 10)")
    ap.add_argument("--rss-kinds", type=names(KINDS), default=["project"], help="rss: the servers (default project)")
    ap.add_argument("--starve-seats", type=int, default=None, help="starved: seats at human pace (default 2,000)")
    ap.add_argument("--starve-seconds", type=float, default=None, help="starved: the window (default 60)")
    ap.add_argument("--starve-core", type=int, default=None, help="starved: the core (default the last one)")
    ap.add_argument("--starve-hogs", type=int, default=2, help="starved: stress-ng --cpu N on that core (default 2)")
    ap.add_argument("--server-workers", default="auto", help="serve --workers N; auto: the cores, if serve has it")
    ap.add_argument("--client-procs", type=int, default=0, help="client processes (default ~1 per 2,000 sockets)")
    ap.add_argument("--setup-timeout", type=float, default=0, help="seconds for set-up (default max(120, 0.06 × N))")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the work directory (server logs)")
    ap.add_argument(
        "--tracemalloc", default=None, metavar="DIR", help="tracemalloc snapshots of the project's processes into DIR"
    )
    ap.add_argument("--tracemalloc-every", type=float, default=120.0, help="seconds between snapshots (default 120)")
    args = ap.parse_args(argv)
    args.argv = argv
    q = args.quick
    args.scenarios = args.scenarios or ["saturation", "human"]
    args.tables = args.tables or ([2] if q else [4, 16, 48])
    args.seats = args.seats or ([24] if q else [1000, 3000, 10_000])
    args.seconds = args.seconds or (4.0 if q else 15.0)
    args.human_seconds = args.human_seconds or (8.0 if q else 30.0)
    args.warmup = args.warmup if args.warmup is not None else (1.0 if q else 5.0)
    args.rss_seats = args.rss_seats or (24 if q else 2000)
    args.rss_minutes = args.rss_minutes or (0.25 if q else 3.0)
    args.rss_every = args.rss_every or (2.0 if q else 10.0)
    args.starve_seats = args.starve_seats or (24 if q else 2000)
    args.starve_seconds = args.starve_seconds or (5.0 if q else 60.0)
    args.starve_core = args.starve_core if args.starve_core is not None else (os.cpu_count() or 1) - 1
    if args.rounds < 1:
        raise SystemExit("--rounds must be at least 1")
    if "starved" in args.scenarios and shutil.which("stress-ng") is None:
        raise SystemExit("the starved scenario needs stress-ng (apt-get install stress-ng)")
    report = run(args)
    if args.chart and (report["saturation"] or report["human"]):
        loadreport.chart(report, Path(args.chart), TARGETS)
        report["chart"] = str(args.chart)
    text = json.dumps(loadreport.clean(report), indent=2, sort_keys=True)
    if args.json_out:
        Path(args.json_out).write_text(text + "\n")
    print(text if args.json else loadreport.table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
