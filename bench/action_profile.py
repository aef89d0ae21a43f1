"""The server's CPU per action, measured in-process (issue 20 item 2).

    python bench/action_profile.py                       # 4 tables, 3 windows of 10 s
    python bench/action_profile.py --profile 20          # and a cProfile window: the top 20
    PYTHONPATH=/tmp/old-tree python /work/wt/X/bench/action_profile.py   # another tree's server

One server runs in this process (``start_server``: one worker, its embedded
PostgreSQL, the default settings and, where the tree has it, the collector tuned as
``serve`` tunes it); one client process (``bench/loadclient.py``'s project mode, of the
same tree as the server) plays ``--tables`` six-seat tables as fast as the server
acknowledges, every seat a real player with its own key and socket.  Once every seat is
dealt in and a warm-up has passed, each window reads this process's CPU time
(``time.process_time``: every thread of the server, not PostgreSQL's processes nor the
client's) and the server's own count of stored actions (``rummy_actions_stored``), and
prints CPU milliseconds per action; commits, reveals, deals and results are part of
the cost an action carries, as in bench/load.py.  ``--profile N`` adds one window under
cProfile on CPU time and prints the N functions with the most time of their own and the
N with the most inclusive time (cProfile slows every Python call, so its window's
figure is not the measure; the unprofiled windows are).  ``--spy N`` adds one window
sampled by py-spy (``py-spy record --nonblocking --function``, the venv's; it slows the
server little) and prints the N functions most often on the stack, inclusive and own,
as a share of the busy samples.

The figures move with the machine's load (other processes share the cores and the
caches): compare trees in the same run, alternated, and print the load with them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import multiprocessing
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the tree of PYTHONPATH wins, else this one
    here = str(Path(__file__).resolve().parent.parent)
    if here not in sys.path:
        sys.path.append(here)

from bench import loadclient
from service.startup import start_server
from service.table import Settings

OPERATOR = "bench-action-profile-operator"


def actions_stored(app: Any) -> int:
    """The server's count of stored actions (every kind), from its metrics."""
    total = 0.0
    for value in app.values():
        registry = getattr(value, "registry", None)
        if registry is None or not hasattr(value, "actions"):
            continue
        for family in registry.collect():
            if family.name == "rummy_actions_stored":
                total += sum(s.value for s in family.samples if s.name.endswith("_total"))
        break
    return int(total)


def tune_gc() -> bool:
    try:
        from service import gctune
    except ImportError:
        return False
    gctune.tune()
    return True


class Client:
    """The load client's process and its pipe, read without blocking the server."""

    def __init__(self, url: str, tables: int, seed: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        spec = loadclient.Spec(
            mode="project", url=url, operator=OPERATOR, tables=tables, worker_no=0, think=None, seed=seed
        )
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=loadclient.worker_main, args=(spec, child), daemon=True)
        self.proc.start()
        child.close()
        self.status: dict[str, Any] = {}

    def pump(self) -> None:
        with contextlib.suppress(EOFError, OSError):
            while self.conn.poll():
                tag, body = self.conn.recv()
                if tag == "status":
                    self.status = body

    async def until_ready(self, limit: float) -> None:
        end = time.monotonic() + limit
        while not self.status.get("ready"):
            if time.monotonic() > end:
                raise SystemExit(f"the tables were not all dealt in within {limit:.0f} s: {self.status}")
            if not self.proc.is_alive():
                raise SystemExit(f"the client process ended: {self.status}")
            self.pump()
            await asyncio.sleep(0.25)

    async def idle(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.pump()
            await asyncio.sleep(min(0.25, max(0.0, end - time.monotonic())))

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.send(("stop",))
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)


async def bench_server(data_dir: Path, database_url: str | None) -> Any:
    """The server measured in-process: on 127.0.0.1, a free port, the default settings,
    its embedded PostgreSQL in ``data_dir`` unless ``database_url`` names one."""
    return await start_server(
        host="127.0.0.1",
        port=0,
        data_dir=data_dir,
        database_url=database_url,
        operator_token=OPERATOR,
        settings=Settings(),
    )


async def window(app: Any, client: Client, seconds: float) -> tuple[float, int, float]:
    """(CPU seconds of this process, actions stored, wall seconds) over one window."""
    a0, c0, w0 = actions_stored(app), time.process_time(), time.monotonic()
    await client.idle(seconds)
    c1, w1 = time.process_time(), time.monotonic()
    return c1 - c0, actions_stored(app) - a0, w1 - w0


async def spy(app: Any, client: Client, seconds: float, n: int) -> None:
    """A window sampled by py-spy: the functions most often on the stack (inclusive)
    and at its top (own), as shares of the samples in which the server was busy."""
    exe = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if exe is None:
        print("py-spy not found: no sampled window")
        return
    with tempfile.NamedTemporaryFile(suffix=".txt") as out:
        cmd = [exe, "record", "--pid", str(os.getpid()), "--duration", str(int(seconds)), "--rate", "250"]
        proc = subprocess.Popen(
            [*cmd, "--nonblocking", "--function", "--format", "raw", "--output", out.name],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        await client.idle(0.5)
        cpu, acts, _ = await window(app, client, seconds - 1)
        while proc.poll() is None:
            await client.idle(0.25)
        inclusive: dict[str, int] = {}
        own: dict[str, int] = {}
        total = 0
        for line in Path(out.name).read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            frames = stack.split(";")
            if not frames or frames[-1].startswith("select ") or "(selectors.py)" in frames[-1]:
                continue  # idle: waiting in epoll
            k = int(count)
            total += k
            own[frames[-1]] = own.get(frames[-1], 0) + k
            for f in set(frames):
                inclusive[f] = inclusive.get(f, 0) + k
    print(f"\nsampled window: {acts} actions, {1000 * cpu / max(acts, 1):.3f} ms/action; {total} busy samples")
    for title, table in (("inclusive", inclusive), ("own", own)):
        print(f"\n-- top {n} by {title} share of busy samples --")
        for f, k in sorted(table.items(), key=lambda kv: -kv[1])[:n]:
            print(f"{100 * k / max(total, 1):5.1f} %  {f}")


def top(profile: cProfile.Profile, n: int, key: str) -> str:
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats(key).print_stats(n)
    lines = out.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
    return "\n".join(lines[start:])


async def run(args: argparse.Namespace) -> None:
    import service

    print(f"server code: {Path(service.__file__).resolve().parent.parent}")
    with tempfile.TemporaryDirectory(prefix="action-profile-") as tmp:
        running = await bench_server(Path(tmp) / "data", args.database_url)
        client: Client | None = None
        try:
            tuned = tune_gc() if not args.no_gc_tune else False
            client = Client(running.url, args.tables, args.seed)
            t0 = time.monotonic()
            await client.until_ready(args.setup_timeout)
            print(
                f"{args.tables} six-seat tables dealt in after {time.monotonic() - t0:.1f} s; gc tuned: {tuned};"
                f" warm-up {args.warmup:.0f} s"
            )
            await client.idle(args.warmup)
            per: list[float] = []
            for k in range(args.windows):
                load0 = os.getloadavg()[0]
                cpu, acts, wall = await window(running.app, client, args.seconds)
                ms = 1000 * cpu / acts if acts else float("nan")
                per.append(ms)
                print(
                    f"window {k + 1}: {acts} actions in {wall:.1f} s ({acts / wall:.0f}/s), server CPU {cpu:.2f} s"
                    f" ({100 * cpu / wall:.0f} % of a core) = {ms:.3f} ms/action; load {load0:.1f}->"
                    f"{os.getloadavg()[0]:.1f}"
                )
            if per:
                print(f"CPU ms/action: median {statistics.median(per):.3f}, min {min(per):.3f}, max {max(per):.3f}")
            if args.spy:
                await spy(running.app, client, args.seconds, args.spy)
            if args.profile:
                prof = cProfile.Profile(time.process_time)
                prof.enable()
                cpu, acts, wall = await window(running.app, client, args.seconds)
                prof.disable()
                print(f"\nprofiled window: {acts} actions, {1000 * cpu / max(acts, 1):.3f} ms/action under cProfile")
                print(f"\n-- top {args.profile} by own time --")
                print(top(prof, args.profile, "tottime"))
                print(f"\n-- top {args.profile} by inclusive time --")
                print(top(prof, args.profile, "cumulative"))
                if args.dump:
                    prof.dump_stats(args.dump)
        finally:
            if client is not None:
                client.stop()
            await running.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=4, help="six-seat tables (default 4)")
    ap.add_argument("--seconds", type=float, default=10.0, help="each window (default 10)")
    ap.add_argument("--windows", type=int, default=3, help="unprofiled windows (default 3)")
    ap.add_argument("--warmup", type=float, default=5.0, help="seconds of play before the first window")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="then a cProfile window: the top N")
    ap.add_argument("--spy", type=int, default=0, metavar="N", help="then a py-spy window: the top N")
    ap.add_argument("--dump", default=None, help="write the cProfile stats to this file")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--setup-timeout", type=float, default=120.0)
    ap.add_argument("--no-gc-tune", action="store_true", help="leave the collector as Python sets it")
    ap.add_argument("--database-url", default=None, help="an existing PostgreSQL (default: embedded)")
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
