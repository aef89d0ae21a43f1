"""``rummy-table demo``: a throw-away embedded stack, a table of bots, a few hands
played, every transcript verified and the ledger checked."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import aiohttp

from service.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError
from service.interrupt import Interrupt, run_interruptible
from service.startup import start_server
from service.table import Settings
from verifier.signing import fingerprint_text


# ----------------------------------------------------------------------------- demo
async def api_call(session: aiohttp.ClientSession, method: str, url: str, token: str, body: Any = None) -> Any:
    async with session.request(method, url, json=body, headers={"Authorization": f"Bearer {token}"}) as r:
        data = await r.json()
        if r.status >= 400:
            raise RuntimeError(f"{method} {url}: {r.status} {data}")
        return data


async def play_all(bots: list[Any], timeout: float) -> None:
    """Run the bots until each has played its hands or ``timeout`` passes; then, or
    when cancelled (Ctrl-C), stop every one (each leaves its seat) and wait for it."""
    tasks = [asyncio.create_task(b.run(), name=f"bot-{n + 1}") for n, b in enumerate(bots)]
    try:
        await asyncio.wait(tasks, timeout=timeout)
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t


async def run_demo(seats: int, hands: int, out: Any = sys.stdout) -> int:
    """An embedded stack in a temporary directory, a table full of bots, ``hands``
    hands played to the end, each transcript verified, the ledger checked."""
    from service.bots import create_bots
    from verifier.signing import load_public_key
    from verifier.transcript import verify_transcript

    if hands < 1:
        raise CliError(EXIT_USAGE, f"--hands {hands}: the demo plays at least 1 hand")
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
                key = await api_call(session, "GET", f"{base}/api/fairness/key", token)
                pinned = load_public_key(key["public_key_hex"])
                table = await api_call(
                    session,
                    "POST",
                    f"{base}/api/tables",
                    token,
                    {"seats": seats, "point_value": 10, "commission_bps": 500, "turn_seconds": 30},
                )
                print(f"table {table['id']}: {seats} seats, 10 HT a point, 5% commission", file=out, flush=True)
                print(f"server key fingerprint: {fingerprint_text(key['fingerprint'])}", file=out, flush=True)
                bots = await create_bots(
                    session, base, token, table["id"], seats, deposit=10_000, fast=True, hands=hands
                )
                await play_all(bots, timeout=600)
                results = bots[0].hands_seen[:hands]
                for r in results:
                    transcript = await api_call(session, "GET", f"{base}{r['transcript']}", token)
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
                summary = await api_call(session, "GET", f"{base}/api/ledger", token)
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
    return EXIT_OK if failures == 0 else EXIT_FAILED


def cmd_demo(args: argparse.Namespace) -> int:
    if args.hands < 1:
        raise CliError(EXIT_USAGE, f"--hands {args.hands}: the demo plays at least 1 hand")

    async def main(_: Interrupt) -> int:
        return await run_demo(args.seats, args.hands)

    return run_interruptible(main)
