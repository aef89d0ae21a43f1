"""``rummy-table``: serve tables, seat bots, or play a demo.

rummy-table serve [--host 127.0.0.1] [--port 8080] [--data-dir DIR] [--database-url URL]
rummy-table bots --server URL --table ID --count N [--fast] [--operator-token T]
rummy-table demo [--seats 6] [--hands 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from service.app import NEW_OPERATOR_TOKEN, Config, make_app
from service.db import DataDirLock, EmbeddedPostgres, database_url_from_env
from service.keys import ServerKeys
from service.table import Settings

log = logging.getLogger("rummy")
OPERATOR_ENV = "RUMMY_OPERATOR_TOKEN"


@dataclass
class Running:
    """A served app: its base URL, the operator token if it was just created, and
    what to stop."""

    url: str
    runner: web.AppRunner
    embedded: EmbeddedPostgres | None
    new_operator_token: str | None
    app: web.Application
    dir_lock: DataDirLock | None = None

    async def stop(self) -> None:
        """Stop accepting, stop every clock, tell clients, close sockets, stop the
        database (issue 7: within 2 s whatever the number of clients)."""
        try:
            await self.runner.cleanup()
        finally:
            if self.embedded is not None:
                await asyncio.to_thread(self.embedded.stop)
            if self.dir_lock is not None:
                self.dir_lock.release()


async def start_server(
    *,
    host: str,
    port: int,
    data_dir: Path,
    database_url: str | None,
    operator_token: str | None,
    settings: Settings | None = None,
) -> Running:
    """Start the database (embedded unless a URL is given), the keys, the app."""
    embedded = None
    dsn = database_url
    data_dir.mkdir(parents=True, exist_ok=True)
    dir_lock = DataDirLock(data_dir)
    dir_lock.acquire()
    runner: web.AppRunner | None = None
    try:
        if dsn is None:
            embedded = EmbeddedPostgres(data_dir)
            dsn = await asyncio.to_thread(embedded.start)
        keys = ServerKeys.load(data_dir)
        app = make_app(Config(dsn=dsn, keys=keys, settings=settings or Settings(), operator_token=operator_token))
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
    except BaseException:
        if runner is not None:
            await runner.cleanup()
        if embedded is not None:
            await asyncio.to_thread(embedded.stop)
        dir_lock.release()
        raise
    bound = runner.addresses[0]
    url = f"http://{host}:{bound[1]}"
    token = app[NEW_OPERATOR_TOKEN][0] if app[NEW_OPERATOR_TOKEN] else None
    return Running(url, runner, embedded, token, app, dir_lock)


def cmd_serve(args: argparse.Namespace) -> int:
    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)  # from the start: a signal during start-up stops cleanly
        data_dir = Path(args.data_dir).expanduser()
        running = await start_server(
            host=args.host,
            port=args.port,
            data_dir=data_dir,
            database_url=args.database_url or database_url_from_env(),
            operator_token=os.environ.get(OPERATOR_ENV) or None,
            settings=Settings(
                commit_seconds=args.seed_seconds,
                reveal_seconds=args.seed_seconds,
                next_hand_delay=args.next_hand_delay,
                resume_grace=args.resume_grace,
            ),
        )
        signer = ServerKeys.load(data_dir).signer
        print(
            f"rummy-table serving on {running.url}  (data: {data_dir.resolve()}, "
            f"database: {'embedded' if running.embedded else 'DATABASE_URL'})",
            flush=True,
        )
        print(f"fairness key fingerprint: {signer.fingerprint}", flush=True)
        if running.new_operator_token:
            print(f"operator token (shown once, keep it): {running.new_operator_token}", flush=True)
        await stop.wait()
        print("shutting down", flush=True)
        await running.stop()

    asyncio.run(main())
    return 0


def cmd_bots(args: argparse.Namespace) -> int:
    from service.bots import run_bots

    token = args.operator_token or os.environ.get(OPERATOR_ENV)
    if not token:
        print(f"rummy-table bots: give --operator-token or set {OPERATOR_ENV}", file=sys.stderr)
        return 2
    bots = asyncio.run(
        run_bots(args.server, token, args.table, args.count, fast=args.fast, deposit=args.deposit, hands=args.hands)
    )
    for b in bots:
        print(f"bot seat {b.seat}: {len(b.hands_seen)} hands")
    return 0


async def _api(session: aiohttp.ClientSession, method: str, url: str, token: str, body: Any = None) -> Any:
    async with session.request(method, url, json=body, headers={"Authorization": f"Bearer {token}"}) as r:
        data = await r.json()
        if r.status >= 400:
            raise RuntimeError(f"{method} {url}: {r.status} {data}")
        return data


async def run_demo(seats: int, hands: int, out: Any = sys.stdout) -> int:
    """An embedded stack in a temporary directory, a table full of bots, ``hands``
    hands played to the end, each transcript verified, the ledger checked."""
    from service.bots import create_bots, play
    from verifier.signing import load_public_key
    from verifier.transcript import verify_transcript

    failures = 0
    with tempfile.TemporaryDirectory(prefix="rummy-demo-") as tmp:
        token = "demo-operator-" + os.urandom(8).hex()
        running = await start_server(
            host="127.0.0.1",
            port=0,
            data_dir=Path(tmp),
            database_url=None,
            operator_token=token,
            settings=Settings(commit_seconds=5, reveal_seconds=5, next_hand_delay=0.2),
        )
        try:
            async with aiohttp.ClientSession() as session:
                base = running.url
                key = await _api(session, "GET", f"{base}/api/fairness/key", token)
                pinned = load_public_key(key["public_key_hex"])
                table = await _api(
                    session,
                    "POST",
                    f"{base}/api/tables",
                    token,
                    {"seats": seats, "point_value": 10, "commission_bps": 500, "turn_seconds": 30},
                )
                print(
                    f"table {table['id']}: {seats} seats, 10 HT a point, 5% commission; key {key['fingerprint'][:16]}…",
                    file=out,
                    flush=True,
                )
                bots = await create_bots(
                    session, base, token, table["id"], seats, deposit=10_000, fast=True, hands=hands
                )
                await play(bots, timeout=600)
                results = bots[0].hands_seen[:hands]
                for r in results:
                    transcript = await _api(session, "GET", f"{base}{r['transcript']}", token)
                    report = verify_transcript(transcript, pinned)
                    res = r["result"] or {}
                    pts = ", ".join(
                        f"seat {s}: {p} pts {res['settlement']['deltas'][s]:+d} HT"
                        for s, p in sorted(res.get("points", {}).items(), key=lambda x: int(x[0]))
                    )
                    verdict = "verified" if report.ok else f"VERIFY FAILED at {report.failure.check}"  # type: ignore
                    print(
                        f"hand {r['hand_no']}: winner seat {res.get('winner')} ({res.get('reason')}); {pts}; "
                        f"house +{res.get('settlement', {}).get('commission')} HT; transcript {verdict}",
                        file=out,
                        flush=True,
                    )
                    failures += not report.ok
                if len(results) < hands:
                    print(f"only {len(results)} of {hands} hands finished", file=out)
                    failures += 1
                summary = await _api(session, "GET", f"{base}/api/ledger", token)
                print(
                    f"ledger: deposited {summary['deposited']}, players {summary['players_available']} "
                    f"available + {summary['players_held']} held, house {summary['house_commission']}; "
                    f"balanced: {summary['ok']}",
                    file=out,
                    flush=True,
                )
                failures += not summary["ok"]
        finally:
            await running.stop()
    print("demo OK" if failures == 0 else f"demo FAILED ({failures} problems)", file=out, flush=True)
    return 0 if failures == 0 else 1


def cmd_demo(args: argparse.Namespace) -> int:
    return asyncio.run(run_demo(args.seats, args.hands))


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="rummy-table", description="Provably-fair 13-card rummy tables.")
    ap.add_argument("-v", "--verbose", action="store_true")
    sub = ap.add_subparsers(dest="command", required=True)
    sp = sub.add_parser("serve", help="serve tables (embedded PostgreSQL unless --database-url/DATABASE_URL)")
    sp.add_argument("--host", default="127.0.0.1")
    sp.add_argument("--port", type=int, default=8080)
    sp.add_argument("--data-dir", default="./rummy-data", help="keys and the embedded database (default ./rummy-data)")
    sp.add_argument("--database-url", default=None)
    sp.add_argument("--seed-seconds", type=float, default=10.0, help="how long seats have to commit, then reveal")
    sp.add_argument("--next-hand-delay", type=float, default=2.0, help="seconds between a hand's end and the next")
    sp.add_argument(
        "--resume-grace",
        type=float,
        default=10.0,
        help="seconds added to a resumed hand's clock after a restart or a database outage (D32)",
    )
    sp.set_defaults(func=cmd_serve)
    bp = sub.add_parser("bots", help="seat bots that play over the WebSocket")
    bp.add_argument("--server", required=True)
    bp.add_argument("--table", required=True)
    bp.add_argument("--count", type=int, required=True)
    bp.add_argument("--fast", action="store_true", help="no think time")
    bp.add_argument("--deposit", type=int, default=100_000, help="HT minor units deposited for each bot")
    bp.add_argument("--hands", type=int, default=None, help="stop after this many hands")
    bp.add_argument("--operator-token", default=None)
    bp.set_defaults(func=cmd_bots)
    dp = sub.add_parser("demo", help="play a few hands with bots on a throw-away embedded stack")
    dp.add_argument("--seats", type=int, default=6, choices=(4, 6, 8))
    dp.add_argument("--hands", type=int, default=3)
    dp.set_defaults(func=cmd_demo)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    with contextlib.suppress(KeyboardInterrupt):
        code: int = args.func(args)
        return code
    return 130


if __name__ == "__main__":
    sys.exit(main())
