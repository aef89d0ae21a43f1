"""How long ``rummy-table serve`` takes to go down on SIGTERM in the middle of a hand
with clients connected (README: "exit within about two seconds").

    python bench/shutdown.py [--runs 5] [--watchers 60] [--server-workers 2] [--json]

Each run: one server (its own embedded PostgreSQL, reused across runs, as a card room
restarts on its data directory), a four-seat table with two bots and ``--watchers``
spectators on WebSockets; once the hand is under way (record 5), SIGTERM; the time is
from the signal to the process's exit.  Every spectator must have been told
(``shutdown``) and the server must exit 0, else the run counts as a failure.
tests/test_serve_cli.py checks the same shutdown for correctness; the time is measured
only here, because it moves with the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import free_port, operator_call, percentile  # noqa: E402
from service.bots import Bot  # noqa: E402
from service.envnames import OPERATOR_TOKEN_ENV  # noqa: E402

OPERATOR = "shutdown-operator-" + os.urandom(6).hex()


WORKERS = 2  # serve --workers: the default server of a 2-core machine (--server-workers)


def serve(data_dir: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env[OPERATOR_TOKEN_ENV] = OPERATOR
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "service.cli", "serve", "--workers", str(WORKERS), "--port", str(port)]
            + ["--data-dir", str(data_dir), "--seed-seconds", "3", "--resume-grace", "3"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=ROOT,
        )


async def wait_serving(url: str, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    async with aiohttp.ClientSession() as s:
        while time.monotonic() < end:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with {proc.returncode}")
            with contextlib.suppress(aiohttp.ClientError, OSError):
                async with s.get(url + "/healthz") as r:
                    if r.status == 200:
                        return
            await asyncio.sleep(0.05)
    raise RuntimeError("the server did not start")


async def one_run(workdir: Path, watchers: int) -> dict[str, Any]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = serve(workdir / "data", port, workdir / "serve.log")
    try:
        await wait_serving(url, proc)
        async with aiohttp.ClientSession() as s:
            table = (await operator_call(s, url, OPERATOR, "POST", "/api/tables", {"seats": 4, "turn_seconds": 20}))[
                "id"
            ]
            bots = []
            for n in range(2):
                p = await operator_call(s, url, OPERATOR, "POST", "/api/players", {"name": f"b{n}", "deposit": 10_000})
                bots.append(Bot(url, p["token"], table, fast=True, keep_frames=True, drops=False))
            sockets = []
            for n in range(watchers):
                w = await operator_call(s, url, OPERATOR, "POST", "/api/players", {"name": f"w{n}"})
                ws = await s.ws_connect(url + "/ws", headers={"Authorization": f"Bearer {w['token']}"})
                await ws.send_json({"id": "j", "type": "join", "table_id": table})
                sockets.append(ws)
            tasks = [asyncio.create_task(b.run()) for b in bots]
            end = time.monotonic() + 120
            while not any(f.get("type") == "update" and int(f["i"]) >= 5 for b in bots for f in b.frames):
                if time.monotonic() > end:
                    raise RuntimeError("no hand got under way")
                await asyncio.sleep(0.02)
            down = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.to_thread(proc.wait, 60)
            took = time.monotonic() - down
            told = 0
            for ws in sockets:
                async for msg in ws:
                    if msg.type == aiohttp.WSMsgType.TEXT and json.loads(msg.data).get("type") == "shutdown":
                        told += 1
                await ws.close()
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return {"seconds": round(took, 3), "exit": code, "told": told, "watchers": watchers}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def runs(n: int, watchers: int) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="rummy-shutdown-"))
    try:
        done = [await one_run(workdir, watchers) for _ in range(n)]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    times = [r["seconds"] for r in done]
    failed = [r for r in done if r["exit"] != 0 or r["told"] != r["watchers"]]
    return {
        "runs": done,
        "p50_s": percentile(times, 0.5),
        "max_s": max(times),
        "failed": len(failed),
        "load_1min": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> int:
    global WORKERS
    ap = argparse.ArgumentParser(description="Time SIGTERM of rummy-table serve mid-hand with clients connected.")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--watchers", type=int, default=60)
    ap.add_argument("--server-workers", type=int, default=WORKERS, help="serve --workers (default 2)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    WORKERS = args.server_workers
    report = asyncio.run(runs(args.runs, args.watchers))
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        print(
            f"SIGTERM to exit, serve --workers {WORKERS}, {args.runs} runs with {args.watchers} watchers "
            "and a hand under way: "
            f"p50 {report['p50_s']} s, max {report['max_s']} s; failed runs {report['failed']}; "
            f"load {report['load_1min']}"
        )
    return 0 if report["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
