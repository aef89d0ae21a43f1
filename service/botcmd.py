"""``rummy-table bots``: seat bots at a table and report each hand they play.

Before any player is created the server, the operator token, the table, its free
seats and the deposit are checked, each failure one line with its exit code."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp

from service import admin
from service.botverify import HandChecker, key_line, receipt_lines, served_key
from service.envnames import OPERATOR_TOKEN_ENV
from service.errors import EXIT_FAILED, EXIT_OK, EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_USAGE, CliError
from service.httpclient import Refused, Rest, Unreachable, reason
from service.interrupt import Interrupt, run_interruptible
from verifier.signing import load_public_key

REQUEST_SECONDS = 15.0  # every REST request of `bots` and `admin`


SEAT_SECONDS = 60.0  # bots that have not sat down by then are reported
KEEP_HANDS = 16  # without --evidence, each bot keeps the evidence of its newest 16 hands only


# ----------------------------------------------------------------------------- bots
def check_server_url(server: str, flag: str = "--server") -> str:
    """An http(s) URL with a host; returned without a trailing slash."""
    try:
        return admin.check_server_url(server, flag)
    except admin.AdminError as e:
        raise CliError(e.exit_code, e.message) from None


async def rest(
    session: aiohttp.ClientSession, server: str, method: str, path: str, token: str | None = None, body: Any = None
) -> Any:
    """One request with a timeout (:mod:`service.httpclient`: a node's 307 followed);
    failures as :class:`CliError`."""
    try:
        return await Rest(session, server, REQUEST_SECONDS).call(method, path, token, body)
    except Unreachable as e:
        raise CliError(e.exit_code, e.message) from None
    except Refused as e:
        what = f"{e.message} ({e.server_code})" if e.error is not None else f"HTTP {e.status}"
        raise CliError(e.exit_code, f"the server refused {method} {path}: {what}", e.server_code) from None


async def preflight_bots(
    session: aiohttp.ClientSession, server: str, token: str, table_id: str, count: int, deposit: int
) -> dict[str, Any]:
    """Before any player is created: the server answers, the token is the operator's,
    the table exists, is open, has room for ``count`` bots, and ``deposit`` lets a bot
    sit.  Returns the table."""
    health = await rest(session, server, "GET", "/healthz")
    if not (isinstance(health, dict) and health.get("ok") is True):
        raise CliError(EXIT_UNREACHABLE, f"{server}/healthz does not answer like a rummy-table server: {health!r:.80}")
    try:
        await rest(session, server, "GET", "/api/ledger", token)
    except CliError as e:
        if e.exit_code == EXIT_REFUSED:
            raise CliError(
                EXIT_REFUSED,
                f"the server at {server} refused the operator token; "
                f"give the right --operator-token or {OPERATOR_TOKEN_ENV}",
            ) from None
        raise
    table: dict[str, Any] | None = None
    try:
        table = await rest(session, server, "GET", f"/api/tables/{quote(table_id, safe='')}")
    except CliError as e:
        if e.server_code not in ("no_such_table", "bad_request", "not_found"):
            raise
    if table is None:
        tables = (await rest(session, server, "GET", "/api/tables")).get("tables", [])
        table = next((t for t in tables if t.get("id") == table_id), None)  # a server without GET /api/tables/{id}
        if table is None:
            known = ", ".join(str(t.get("id")) for t in tables[:5]) or "none yet"
            raise CliError(
                EXIT_REFUSED,
                f"no table {table_id!r} on {server} (tables: {known}); `rummy-table admin tables` lists them",
            )
    status = table.get("status", "open")
    if status != "open":
        raise CliError(EXIT_REFUSED, f"table {table_id} is {status}: it takes no new players")
    seats, taken = int(table["seats"]), len(table.get("seated", []))
    if count > seats - taken:
        raise CliError(
            EXIT_USAGE,
            f"table {table_id} has {seats} seats, {taken} taken: room for {seats - taken} bots, not {count}; "
            "lower --count",
        )
    hold = int(table.get("hold", 0))
    if deposit < hold:
        raise CliError(
            EXIT_USAGE, f"a seat at table {table_id} needs {hold} HT available (D20); give --deposit {hold} or more"
        )
    return dict(table)


def hands_played(bot: Any, seat: int | None) -> int:
    """The ended hands the bot was dealt into (its seat scored)."""
    if seat is None:
        return 0
    hands = {
        r.get("hand_no")
        for r in bot.hands_seen
        if str(seat) in ((r.get("result") or {}).get("points") or {})
        or str(seat) in (((r.get("result") or {}).get("settlement") or {}).get("deltas") or {})
    }
    return len(hands)


SIT_REFUSALS = {
    "table_full",
    "table_closed",
    "seat_taken",
    "insufficient_balance",
    "no_player_key",
    "no_such_table",
    "bad_message",
}


async def drive_bots(
    bots: list[Any], table_id: str, server: str, out: Any = sys.stdout, checker: HandChecker | None = None
) -> None:
    """Run the bots until they are done; report each hand (and, with a ``checker``,
    verify it with each bot's evidence); refuse to wait silently for bots that cannot
    sit.  Whatever happens — done, an error, Ctrl-C — every bot is stopped (and leaves
    its seat) and each one's seat and hands are printed."""
    from service.bots import BotStop

    tasks = [asyncio.create_task(b.run(), name=f"bot-{n + 1}") for n, b in enumerate(bots)]
    labelled = [(f"bot-{n + 1}", b) for n, b in enumerate(bots)]
    seats: dict[int, int] = {}
    reported: set[int] = set()
    loop = asyncio.get_running_loop()
    start = loop.time()
    announced = False
    try:
        while True:
            for n, b in enumerate(bots):
                if b.seat is not None:
                    seats[n] = b.seat
                refused = [e for e in b.errors if e.get("error", {}).get("code") in SIT_REFUSALS]
                if refused and n not in seats:
                    err = refused[-1]["error"]
                    raise CliError(
                        EXIT_REFUSED, f"bot-{n + 1} could not sit at table {table_id}: {err['message']} ({err['code']})"
                    )
            if not announced and len(seats) == len(bots):
                announced = True
                print(f"bots seated at table {table_id}: seats {', '.join(map(str, sorted(seats.values())))}", file=out)
            for b in bots:
                for r in b.hands_seen:
                    if r.get("hand_no") not in reported:
                        reported.add(r.get("hand_no"))
                        res = r.get("result") or {}
                        what = (
                            f"void ({r.get('void_reason')})"
                            if r.get("void")
                            else f"winner seat {res.get('winner')} ({res.get('reason')})"
                        )
                        print(f"hand {r.get('hand_no')}: {what}", file=out, flush=True)
                        if checker is not None:
                            for v in await checker.check(r, labelled):
                                print(v.line(), file=out, flush=True)
            for n, t in enumerate(tasks):
                if t.done() and not t.cancelled() and t.exception() is not None:
                    e = t.exception()
                    code = EXIT_REFUSED if isinstance(e, BotStop) else EXIT_UNREACHABLE
                    raise CliError(code, f"bot-{n + 1} stopped: {e}") from e
            if all(t.done() for t in tasks):
                return
            if len(seats) < len(bots) and loop.time() - start > SEAT_SECONDS:
                raise CliError(
                    EXIT_UNREACHABLE,
                    f"only {len(seats)} of {len(bots)} bots sat down at table {table_id} within {SEAT_SECONDS:g} s; "
                    f"is {server} answering? (-v shows the bots' errors)",
                )
            await asyncio.sleep(0.2)
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:  # Bot.run leaves its seat when cancelled
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        for n, b in enumerate(bots):
            seat = seats.get(n)
            where = f"seat {seat}" if seat is not None else "never sat"
            print(
                f"bot-{n + 1} ({b.player_id or 'not connected'}): {where}, {hands_played(b, seat)} hands played",
                file=out,
                flush=True,
            )
        if checker is not None:
            for line in receipt_lines(labelled):
                print(line, file=out, flush=True)


def write_evidence(bots: list[Any], folder: Path) -> None:
    """Each bot's evidence file, DIR/PLAYER_ID.json (docs/fairness.md §15)."""
    folder.mkdir(parents=True, exist_ok=True)
    for b in bots:
        if b.player_id:
            n = b.write_evidence(folder / f"{b.player_id}.json")
            print(f"{b.player_id}: {n} evidence items in {folder / (b.player_id + '.json')}", flush=True)


def cmd_bots(args: argparse.Namespace) -> int:
    from service.bots import create_bots

    server = check_server_url(args.server)
    token = args.operator_token or os.environ.get(OPERATOR_TOKEN_ENV)
    if not token:
        raise CliError(EXIT_USAGE, f"give --operator-token or set {OPERATOR_TOKEN_ENV}")
    if args.count < 1:
        raise CliError(EXIT_USAGE, f"--count {args.count}: give at least 1 bot")
    if args.hands is not None and args.hands < 1:
        raise CliError(EXIT_USAGE, f"--hands {args.hands}: give at least 1 hand, or leave it out to play on")
    if args.deposit < 1:
        raise CliError(EXIT_USAGE, f"--deposit {args.deposit}: give a positive amount of HT")

    if args.server_key and not args.verify:
        raise CliError(EXIT_USAGE, "--server-key pins the key --verify checks hands under; give --verify too")
    pinned: bytes | None = None
    if args.server_key:
        try:
            pinned = load_public_key(args.server_key)
        except (ValueError, OSError) as e:
            raise CliError(EXIT_USAGE, f"--server-key: not a public key ({e})") from None

    async def main(_: Interrupt) -> int:
        timeout = aiohttp.ClientTimeout(total=REQUEST_SECONDS)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            await preflight_bots(session, server, token, args.table, args.count, args.deposit)
            key: bytes | None = None
            if args.verify:
                try:
                    key = pinned or await served_key(session, server, REQUEST_SECONDS)
                except (Refused, Unreachable, KeyError, ValueError) as e:
                    raise CliError(EXIT_UNREACHABLE, f"{server} did not give its fairness key: {e}") from None
            try:
                bots = await create_bots(
                    session,
                    server,
                    token,
                    args.table,
                    args.count,
                    deposit=args.deposit,
                    fast=args.fast,
                    hands=args.hands,
                )
            except (aiohttp.ClientError, TimeoutError) as e:
                raise CliError(EXIT_UNREACHABLE, f"lost {server} while creating the bots ({reason(e)})") from e
            except RuntimeError as e:
                raise CliError(EXIT_REFUSED, str(e)) from e
        if not args.evidence:  # nothing is written out: keep what --verify needs, not every hand's items
            for b in bots:
                b.keep_hands = KEEP_HANDS
        until = f"for {args.hands} hands" if args.hands else "until Ctrl-C"
        print(f"{len(bots)} bots joining table {args.table} at {server}, playing {until}", flush=True)
        checker = None
        async with contextlib.AsyncExitStack() as stack:
            if key is not None:
                session = await stack.enter_async_context(aiohttp.ClientSession(timeout=timeout))
                checker = HandChecker(session, server, args.table, key, REQUEST_SECONDS)
                print(key_line(key), flush=True)
            try:
                await drive_bots(bots, args.table, server, checker=checker)
            finally:
                if args.evidence:
                    write_evidence(bots, Path(args.evidence))
        if checker is not None:
            failed = [v for v in checker.verdicts if not v.ok]
            if failed:
                raise CliError(EXIT_FAILED, f"{len(failed)} of {len(checker.verdicts)} hand verdicts failed (above)")
        return EXIT_OK

    return run_interruptible(main)
