"""Load benchmark (issue 13, items 5 and 8): the table server beside the floor.

    python bench/load.py                       # the full run: about 15 minutes
    python bench/load.py --quick --json        # a smoke run (the test suite runs this)
    python bench/load.py --tables 4,16,48 --seats 1000,3000,10000 --chart docs/load.png

It starts an embedded PostgreSQL in a temporary directory and, for every measurement
point, a fresh database and a fresh server on it — ``python -m service.cli serve``
(``--workers N`` when the server has that flag) with ``--seed-seconds 2
--next-hand-delay 0.3``, or **the floor**, ``bench/floor.py``: a bare aiohttp WebSocket
+ asyncpg server that inserts and commits one row per message.  Client processes
(``bench/loadclient.py``, about one per 2,000 sockets, at least two) drive real
WebSockets against both, with the same code, the same sockets and the same pacing:

* **saturation** — K tables of six seats, no think time; per point the acknowledged
  actions/s, latency p50/p99/max (send of an ``action`` to its reply; the server
  replies after the commit), and the CPU of the server process(es), of PostgreSQL (the
  postmaster and all its children) and of the client processes, over a fixed window
  after a warm-up;
* **human pace** — N connected seats, each acting 2–5 s (uniform) after its turn
  comes; p50/p99, and the server's RSS per seat (RSS when every seat is playing, less
  the fresh server's, over N).

Every project figure is also given as a ratio to the floor's at the same point.  At the
end: an aligned table on stdout (or the JSON with ``--json``), and a chart of latency
against load (``--chart``, default docs/load.png).  A progress bar goes to stderr when
it is a terminal.
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
import platform
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

from bench import loadclient  # noqa: E402
from service.db import EmbeddedPostgres  # noqa: E402

OPERATOR = "load-operator-" + os.urandom(8).hex()
CLK_TCK = os.sysconf("SC_CLK_TCK")
SOCKETS_PER_CLIENT = 2000
TARGETS = {
    "saturation_actions_per_s": 1500,
    "saturation_p99_ms": 50,
    "saturation_floor_ratio": 0.5,
    "human_seats": 10_000,
    "human_p99_ms": 100,
    "human_kb_per_seat": 100,
}


# ----------------------------------------------------------------------------- /proc
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Snapshot:
    """Every process's CPU ticks (utime + stime), name and parent, and the machine's."""

    at: float
    procs: dict[int, tuple[int, str, int]]  # pid -> (ticks, comm, ppid)
    machine: tuple[int, int, int]

    @classmethod
    def take(cls) -> Snapshot:
        procs = {}
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                text = (d / "stat").read_text()
            except OSError:
                continue
            f = text[text.rindex(")") + 2 :].split()  # fields from 3 (state) on
            procs[int(d.name)] = (int(f[11]) + int(f[12]), text[text.index("(") + 1 : text.rindex(")")], int(f[1]))
        return cls(time.time(), procs, machine_ticks())

    def tree(self, pid: int) -> set[int]:
        """``pid`` and every process below it."""
        children: dict[int, list[int]] = {}
        for p, (_t, _c, ppid) in self.procs.items():
            children.setdefault(ppid, []).append(p)
        out, todo = set(), [pid]
        while todo:
            p = todo.pop()
            if p in self.procs and p not in out:
                out.add(p)
                todo.extend(children.get(p, ()))
        return out


def cpu_pct(s0: Snapshot, s1: Snapshot, pids: set[int]) -> float:
    """CPU of ``pids`` between two snapshots, in % of one core (a process born in
    between counts from its birth; one that died in between is not counted)."""
    t = sum(s1.procs[p][0] - (s0.procs[p][0] if p in s0.procs else 0) for p in pids if p in s1.procs)
    return round(100 * t / CLK_TCK / max(1e-6, s1.at - s0.at), 1)


def descendants(pid: int) -> list[int]:
    return sorted(Snapshot.take().tree(pid))


def rss_kb(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


def machine_ticks() -> tuple[int, int, int]:
    """(busy, stolen, total) clock ticks of the whole machine, from /proc/stat: busy
    is user + nice + system + irq + softirq; stolen is the hypervisor's steal time."""
    parts = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]] + [0] * 8
    user, nice, system, _idle, _iowait, irq, softirq, steal = parts[:8]
    return user + nice + system + irq + softirq, steal, sum(parts[:8])


def loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def machine() -> dict[str, Any]:
    model = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "kernel": platform.release(),
        "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
    }


def git_commit() -> str:
    """HEAD, and whether service/ differs from it (the server measured is the work tree)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "service"], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return "unknown"
    return head.stdout.strip() + (" + uncommitted changes in service/" if dirty.stdout.strip() else "")


def percentile(values: list[float], q: float) -> float:
    """Nearest rank."""
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, max(0, math.ceil(q * len(v)) - 1))]


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
    def start_server(self, kind: str, db: str) -> Server:
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
        env = {**os.environ, "RUMMY_OPERATOR_TOKEN": OPERATOR, "PYTHONUNBUFFERED": "1"}
        env.pop("DATABASE_URL", None)
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

    # -- one point ---------------------------------------------------------------------
    def client_procs(self, sockets: int) -> int:
        if self.args.client_procs:
            return self.args.client_procs
        return max(1 if self.args.quick else 2, math.ceil(sockets / SOCKETS_PER_CLIENT))

    def point(self, kind: str, scenario: str, tables: int, think: tuple[float, float] | None) -> dict[str, Any]:
        a = self.args
        seconds = a.seconds if scenario == "saturation" else a.human_seconds
        seats = tables * loadclient.SEATS
        self.progress.label = f"{scenario} {kind} {seats} seats:"
        self.progress.show("starting the server")
        la0 = loadavg()
        server_at = git_commit()  # others change service/ while this runs: which code each point measured
        db = self.new_database()
        server = self.start_server(kind, db)
        procs: list[multiprocessing.process.BaseProcess] = []
        conns: list[Connection] = []
        try:
            rss0 = rss_kb(server.pids())
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
            setup_timeout = a.setup_timeout or max(120.0, seats * 0.06)
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
            while time.time() < t1:
                done = (time.time() - t0) / seconds
                self.progress.show(f"measuring, {(total('acks') - acks0) / max(0.1, time.time() - t0):7.0f}/s", done)
                pump(min(t1, time.time() + 0.5))
            s1 = Snapshot.take()
            srv_pids = s0.tree(server.proc.pid) | s1.tree(server.proc.pid)
            postmaster = self.postmaster()
            pg_pids = s0.tree(postmaster) | s1.tree(postmaster)
            client_pids = {x for p in procs if p.pid is not None for x in s0.tree(p.pid) | s1.tree(p.pid)}
            rss1 = rss_kb(sorted(s1.tree(server.proc.pid)))
            self.progress.show("collecting")
            pump(t1 + drain + 15, lambda: len(results) == nproc)
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
            self.drop_database(db)
        la1 = loadavg()
        cores = os.cpu_count() or 1
        mtotal = max(1, s1.machine[2] - s0.machine[2])
        mbusy = (s1.machine[0] - s0.machine[0]) / mtotal * 100 * cores
        msteal = (s1.machine[1] - s0.machine[1]) / mtotal * 100 * cores
        mine = srv_pids | pg_pids | client_pids | {os.getpid()}
        others = sorted(
            ((cpu_pct(s0, s1, {p}), p) for p in s1.procs if p not in mine), key=lambda x: x[0], reverse=True
        )
        cpu = {
            "server": cpu_pct(s0, s1, srv_pids),
            "pg": cpu_pct(s0, s1, pg_pids),
            "client": cpu_pct(s0, s1, client_pids),
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
        own = cpu["server"] + cpu["pg"] + cpu["client"]
        out = {
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
            "pg_cpu_pct": cpu["pg"],
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
            "frames_in_per_action": round(sum(r["rx_msgs"] for r in results.values()) / max(1, acks), 2),
            "bytes_in_per_action": round(sum(r["rx_bytes"] for r in results.values()) / max(1, acks)),
            "unanswered": sum(r["unanswered"] for r in results.values()),
            "lost": sum(r["lost"] for r in results.values()),
            "errors": errors,
            "load_avg_before": la0,
            "load_avg_after": la1,
            "server_at": server_at,
        }
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


def ratio(a: float, b: float) -> float | None:
    if not b or math.isnan(a) or math.isnan(b):
        return None
    return round(a / b, 3)


def with_ratios(row: dict[str, Any]) -> dict[str, Any]:
    p, f = row["project"], row["floor"]
    row["ratio"] = {
        "actions_per_s": ratio(p["actions_per_s"], f["actions_per_s"]),
        "p50": ratio(p["p50_ms"], f["p50_ms"]),
        "p99": ratio(p["p99_ms"], f["p99_ms"]),
    }
    return row


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
            "tables": args.tables,
            "seats": args.seats,
            "window_s": {"saturation": args.seconds, "human": args.human_seconds},
            "warmup_s": args.warmup,
            "think_s": list(args.think),
            "hand_turns": args.hand_turns,
            "server_workers": b.server_workers,
            "nofile": soft,
            "server_flags": "--seed-seconds 2 --next-hand-delay 0.3",
        },
        "saturation": [],
        "human": [],
        "load_avg_before": loadavg(),
    }
    try:
        b.progress.label = "PostgreSQL:"
        b.progress.show("starting")
        b.start_pg()
        report["postgres"] = asyncio.run(b.pg_settings())
        if "saturation" in args.scenarios:
            for k in args.tables:
                row: dict[str, Any] = {"tables": k, "seats": 6 * k}
                for kind in ("project", "floor"):
                    row[kind] = b.point(kind, "saturation", k, None)
                report["saturation"].append(with_ratios(row))
        if "human" in args.scenarios:
            for n in args.seats:
                k = max(1, n // 6)
                row = {"tables": k, "seats": 6 * k}
                for kind in ("project", "floor"):
                    row[kind] = b.point(kind, "human", k, tuple(args.think))
                report["human"].append(with_ratios(row))
    finally:
        if b.pg is not None:
            b.pg.stop()
        if args.keep:
            report["workdir"] = str(workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    report["load_avg_after"] = loadavg()
    report["targets"] = targets(report)
    return report


def targets(report: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"wanted": TARGETS}
    sat = report["saturation"]
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
            "met": bool(
                best_ok is not None
                and best_ok["project"]["actions_per_s"] >= TARGETS["saturation_actions_per_s"]
                and (best_ok["ratio"]["actions_per_s"] or 0) >= TARGETS["saturation_floor_ratio"]
            ),
        }
    hum = report["human"]
    if hum:
        top = max(hum, key=lambda r: r["project"]["seats_reached"])
        p = top["project"]
        out["human"] = {
            "largest_seats": p["seats_reached"],
            "p99_ms": p["p99_ms"],
            "kb_per_seat": p["rss_per_seat_kb"],
            "met": bool(
                p["seats_reached"] >= TARGETS["human_seats"]
                and p["p99_ms"] <= TARGETS["human_p99_ms"]
                and p["rss_per_seat_kb"] <= TARGETS["human_kb_per_seat"]
            ),
        }
    return out


# ----------------------------------------------------------------------------- output
def table(report: dict[str, Any]) -> str:
    lines = []
    m = report["machine"]
    lines.append(f"{m['cpu']}, {m['cores']} cores, Python {m['python']}; {report['date']}")
    lines.append(
        f"server workers: {report['settings']['server_workers']}; load average before {report['load_avg_before']}"
    )
    lines.append(f"after {report['load_avg_after']}")

    def fmt(rows: list[list[str]]) -> list[str]:
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]

    def n(x: Any, d: int = 0) -> str:
        if x is None or (isinstance(x, float) and math.isnan(x)):
            return "-"
        return f"{x:,.{d}f}"

    if report["saturation"]:
        rows = [
            [
                "tables",
                "seats",
                "who",
                "actions/s",
                "p50 ms",
                "p99 ms",
                "max ms",
                "server CPU%",
                "PG CPU%",
                "client CPU%",
                "other CPU%",
                "steal%",
                "x floor (tput)",
                "x floor (p99)",
            ]
        ]
        for r in report["saturation"]:
            for kind in ("project", "floor"):
                p = r[kind]
                rows.append(
                    [
                        str(r["tables"]),
                        str(r["seats"]),
                        kind,
                        n(p["actions_per_s"]),
                        n(p["p50_ms"], 1),
                        n(p["p99_ms"], 1),
                        n(p["max_ms"], 1),
                        n(p["server_cpu_pct"]),
                        n(p["pg_cpu_pct"]),
                        n(p["client_cpu_pct"]),
                        n(p["other_cpu_pct"]),
                        n(p["steal_cpu_pct"]),
                        n(r["ratio"]["actions_per_s"], 2) if kind == "project" else "",
                        n(r["ratio"]["p99"], 2) if kind == "project" else "",
                    ]
                )
        lines += ["", "saturation (no think time)", *fmt(rows)]
    if report["human"]:
        rows = [
            [
                "seats",
                "reached",
                "who",
                "actions/s",
                "p50 ms",
                "p99 ms",
                "max ms",
                "server CPU%",
                "PG CPU%",
                "RSS MB",
                "KB/seat",
                "set-up s",
                "x floor (p99)",
            ]
        ]
        for r in report["human"]:
            for kind in ("project", "floor"):
                p = r[kind]
                rows.append(
                    [
                        str(r["seats"]),
                        str(p["seats_reached"]),
                        kind,
                        n(p["actions_per_s"]),
                        n(p["p50_ms"], 1),
                        n(p["p99_ms"], 1),
                        n(p["max_ms"], 1),
                        n(p["server_cpu_pct"]),
                        n(p["pg_cpu_pct"]),
                        n(p["rss_after_kb"] / 1024),
                        n(p["rss_per_seat_kb"], 1),
                        n(p["setup_s"]),
                        n(r["ratio"]["p99"], 2) if kind == "project" else "",
                    ]
                )
        lines += ["", f"human pace (each action {report['settings']['think_s']} s after the turn comes)", *fmt(rows)]
    noisy = []
    for scenario in ("saturation", "human"):
        for r in report[scenario]:
            for kind in ("project", "floor"):
                p = r[kind]
                if p["other_cpu_pct"] >= 25 or p["steal_cpu_pct"] >= 10:
                    who = ", ".join(f"{o['name']} {o['cpu_pct']:.0f}%" for o in p["busiest_others"][:3])
                    noisy.append(
                        f"  {scenario} {r['seats']} seats {kind}: other processes {p['other_cpu_pct']:.0f}%"
                        f" of a core, steal {p['steal_cpu_pct']:.0f}%" + (f" ({who})" if who else "")
                    )
    if noisy:
        lines += ["", "disturbed by other work on the machine:", *noisy]
    t = report["targets"]
    if "saturation" in t:
        s = t["saturation"]
        lines.append(
            f"\nsaturation target (≥ 1,500 actions/s, p99 ≤ 50 ms, ≥ 0.5× floor): peak {n(s['peak_actions_per_s'])}/s"
            f" at p99 {n(s['peak_p99_ms'], 1)} ms, {n(s['floor_ratio_at_peak'], 2)}× floor; best within p99 50 ms:"
            f" {n(s['best_within_p99'])}/s — {'met' if s['met'] else 'missed'}"
        )
    if "human" in t:
        h = t["human"]
        lines.append(
            f"human-pace target (10,000 seats, p99 ≤ 100 ms, ≤ 100 KB/seat): {n(h['largest_seats'])} seats,"
            f" p99 {n(h['p99_ms'], 1)} ms, {n(h['kb_per_seat'], 1)} KB/seat — {'met' if h['met'] else 'missed'}"
        )
    return "\n".join(lines)


def chart(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    fig, axes = plt.subplots(1, 2, figsize=(13, 5.6))
    style = {"project": ("tab:red", "the table server"), "floor": ("tab:blue", "floor (aiohttp + asyncpg insert)")}
    panels = [
        (
            axes[0],
            report["saturation"],
            "actions_per_s",
            "acknowledged actions/s (K tables × 6 seats, no think time)",
            "saturation",
            TARGETS["saturation_p99_ms"],
        ),
        (
            axes[1],
            report["human"],
            "seats_reached",
            f"connected seats (tables of 6, each action {report['settings']['think_s']} s after its turn comes)",
            "human pace",
            TARGETS["human_p99_ms"],
        ),
    ]
    for ax, rows, xkey, xlabel, title, target in panels:
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("latency, send of an action → its reply (ms)")
        usable = [r for r in rows if all(r[k]["samples"] and r[k][xkey] > 0 for k in style)]
        if not usable:
            ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes)
            continue
        for kind, (color, label) in style.items():
            xs = [r[kind][xkey] for r in usable]
            ax.plot(xs, [r[kind]["p50_ms"] for r in usable], "o-", color=color, label=f"{label} p50")
            ax.plot(xs, [r[kind]["p99_ms"] for r in usable], "s--", color=color, label=f"{label} p99")
            if xkey == "actions_per_s":
                for r, x in zip(usable, xs, strict=True):
                    ax.annotate(
                        f"K={r['tables']}",
                        (x, r[kind]["p99_ms"]),
                        textcoords="offset points",
                        xytext=(4, 4),
                        fontsize=8,
                    )
        ax.axhline(target, color="grey", lw=0.8, ls=":", label=f"target p99 {target} ms")
        if xkey == "actions_per_s":
            ax.axvline(TARGETS["saturation_actions_per_s"], color="grey", lw=0.8, ls="-.", label="target 1,500/s")
        ax.set_xscale("log")
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
            axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    m = report["machine"]
    fig.suptitle(
        f"{m['cpu']}, {m['cores']} cores (server, PostgreSQL and load generator on one machine) — {report['date']}\n"
        f"{report['command']}",
        fontsize=9,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def clean(x: Any) -> Any:
    """NaN (no sample) as null: the JSON stays JSON."""
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [clean(v) for v in x]
    return x


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a short smoke run: tiny K and N, a few seconds")
    ap.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")
    ap.add_argument("--json-out", default=None, help="also write the JSON to this file")
    ap.add_argument("--chart", default=str(ROOT / "docs" / "load.png"), help="the PNG to draw (default docs/load.png)")
    ap.add_argument("--tables", type=ints, default=None, help="saturation: K tables of 6, e.g. 4,16,48")
    ap.add_argument("--seats", type=ints, default=None, help="human pace: N seats, e.g. 1000,3000,10000")
    ap.add_argument("--seconds", type=float, default=None, help="saturation window (default 15)")
    ap.add_argument("--human-seconds", type=float, default=None, help="human-pace window (default 30)")
    ap.add_argument("--warmup", type=float, default=None, help="seconds after set-up before the window (default 5)")
    ap.add_argument("--think", type=float, nargs=2, default=(2.0, 5.0), metavar=("LO", "HI"))
    ap.add_argument("--hand-turns", type=int, default=30, help="mean turns before every seat drops (default 30)")
    ap.add_argument("--scenarios", default="saturation,human", help="saturation,human")
    ap.add_argument("--server-workers", default="auto", help="serve --workers N; auto: the cores, if serve has it")
    ap.add_argument("--client-procs", type=int, default=0, help="client processes (default ~1 per 2,000 sockets)")
    ap.add_argument("--setup-timeout", type=float, default=0, help="seconds for set-up (default max(120, 0.06 × N))")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the work directory (server logs)")
    args = ap.parse_args(argv)
    args.argv = argv
    q = args.quick
    args.tables = args.tables or ([2] if q else [4, 16, 48])
    args.seats = args.seats or ([24] if q else [1000, 3000, 10_000])
    args.seconds = args.seconds or (4.0 if q else 15.0)
    args.human_seconds = args.human_seconds or (8.0 if q else 30.0)
    args.warmup = args.warmup if args.warmup is not None else (1.0 if q else 5.0)
    args.scenarios = [s.strip() for s in args.scenarios.split(",")]
    report = run(args)
    if args.chart:
        chart(report, Path(args.chart))
        report["chart"] = str(args.chart)
    text = json.dumps(clean(report), indent=2, sort_keys=True)
    if args.json_out:
        Path(args.json_out).write_text(text + "\n")
    print(text if args.json else table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
