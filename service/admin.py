"""``rummy-table admin``: operate the card room over the REST API with the operator
token (docs/api.md, "Operating the card room").

Every command is one or two REST requests with a timeout.  Output is aligned columns
for a person (amounts as integers of HT), or the server's JSON with ``--json``.  A
refusal by the server is one line with the server's own message and code (exit 4); a
server that cannot be reached, or does not answer like rummy-table, exit 3; bad
arguments exit 2 — the exit codes of ``rummy-table`` (service/cli.py).

Its requests go through :mod:`service.httpclient` (aiohttp; a command for a table
another node serves follows that node's 307, whatever the method).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote, urlsplit

from service.envnames import OPERATOR_TOKEN_ENV
from service.errors import EXIT_OK, EXIT_USAGE, ServiceError
from service.wire import IDEMPOTENCY_HEADER, IDEMPOTENCY_KEY

if TYPE_CHECKING:  # aiohttp only when a command runs: ``rummy-table`` parses its arguments without it
    from service.httpclient import Refused, Rest

DEFAULT_SERVER = "http://127.0.0.1:8080"
TIMEOUT = 15.0
MAX_AMOUNT = 10**15
HAND_STATUSES = ("seeding", "playing", "ended", "void")
#: ``create-table``'s options: the fields of ``POST /api/tables`` (the server checks them)
NEW_TABLE_FIELDS = {
    "seats": "4, 6 or 8 (default 6; D1: two decks for 4 or 6, three for 8)",
    "point_value": "HT a point: the stake (default 1)",
    "commission_bps": "the house commission in basis points of the pot, 0-10000 (default 0; D18)",
    "turn_seconds": "the clock: seconds a turn (default 30)",
    "max_missed_turns": "clock expiries in a row before a seat is dropped (default 3; D15)",
    "min_players": "players needed to deal a hand, 2 to the seats (default 2; D2)",
    "max_away_hands": "hands a seat may sit out before it stands up (default 3)",
}


DESCRIPTION = """\
Operate the card room over the REST API with the operator token.

  players [--q TEXT]            players, their balances and seats
  player ID                     one player: balances, holds, seats, last hands
  tables / table ID             tables, their seats and the hand in progress
  create-table [--seats N] [--point-value HT] [--commission-bps BPS] [--turn-seconds S] …
                                a new table (the server's defaults for what is not given)
  hands [--table T] [--status S] [--player P] [--limit N]
  deposit ID AMOUNT             add AMOUNT HT to a player's available balance
  withdraw ID AMOUNT            take AMOUNT HT from it (never from what is held)
  close TABLE                   no new hand; the hand in progress finishes, then every seat stands up
  stand TABLE SEAT              stand a seat up (now, or as its hand ends)
  void HAND --reason TEXT       void a stuck hand by decision D33
  rotate-token                  a new operator token; the old one stops working at once
  reset-token [--data-dir DIR]  on the server's machine, without the API: a new token for a lost one
  audit                         the operator actions (the audit log)
  ledger                        the ledger check

The token comes from --token or RUMMY_OPERATOR_TOKEN."""


class AdminError(ServiceError):
    """One line for the person, and the exit code."""

    def __init__(self, exit_code: int, message: str) -> None:
        super().__init__(message, exit_code=exit_code)


# ----------------------------------------------------------------------------- arguments
def _amount(text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text.strip()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of HT")
    n = int(text)
    if not 1 <= n <= MAX_AMOUNT:
        raise argparse.ArgumentTypeError(f"{text} is out of range: give 1 to {MAX_AMOUNT} HT")
    return n


def _idempotency_key(text: str) -> str:
    if not IDEMPOTENCY_KEY.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a key: 8-100 letters, digits and . _ : -")
    return text


def new_idempotency_key() -> str:
    """A key for one command (service.once): 128 random bits."""
    return "admin-" + secrets.token_hex(16)


def _count(text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text.strip()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    return int(text)


def add_arguments(
    parser: argparse.ArgumentParser, common: Callable[[argparse.ArgumentParser], None] | None = None
) -> None:
    """The admin options and commands on ``parser`` (``rummy-table admin``).  The
    connection options are accepted before or after the command; ``common`` adds any
    other options every command takes (-v, --debug)."""

    def connection(p: argparse.ArgumentParser, defaults: bool) -> None:
        kw: Callable[[Any], dict[str, Any]] = (
            (lambda d: {"default": d}) if defaults else (lambda d: {"default": argparse.SUPPRESS})
        )
        p.add_argument("--server", help=f"the server's URL (default {DEFAULT_SERVER})", **kw(DEFAULT_SERVER))
        p.add_argument("--token", help=f"the operator token (default: {OPERATOR_TOKEN_ENV})", **kw(None))
        p.add_argument("--json", action="store_true", help="print the server's JSON", **kw(False))
        p.add_argument("--timeout", type=float, help=f"seconds per request (default {TIMEOUT:g})", **kw(TIMEOUT))

    connection(parser, True)
    sub = parser.add_subparsers(dest="admin_command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        connection(p, False)
        if common is not None:
            common(p)
        return p

    def keyed(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--idempotency-key",
            metavar="KEY",
            type=_idempotency_key,
            default=None,
            help="the key an earlier try printed: sent with it, the command is done at most once (default: a new key)",
        )

    def paging(p: argparse.ArgumentParser) -> None:
        p.add_argument("--limit", type=_count, default=None, help="at most this many (server: 1-500, default 50)")
        p.add_argument("--offset", type=_count, default=None, help="skip this many")

    p = command("players", "list players, their balances and seats")
    p.add_argument("--q", default=None, help="only those whose name or id contains TEXT")
    paging(p)
    p = command("player", "one player: balances, holds, seats, last hands")
    p.add_argument("player_id", metavar="ID")
    command("tables", "list tables")
    p = command("table", "one table: rules, status, seats, the hand in progress")
    p.add_argument("table_id", metavar="ID")
    p = command("hands", "list hands")
    p.add_argument("--table", default=None)
    p.add_argument("--status", choices=HAND_STATUSES, default=None)
    p.add_argument("--player", default=None)
    paging(p)
    for name, verb in (("deposit", "add AMOUNT HT to"), ("withdraw", "take AMOUNT HT from")):
        p = command(name, f"{verb} a player's available balance")
        p.add_argument("player_id", metavar="ID")
        p.add_argument("amount", metavar="AMOUNT", type=_amount, help="whole HT, 1-10^15")
        keyed(p)
    p = command(
        "reset-token",
        "on the server's machine, without the server's API: set a new operator token (for a lost one; audited). "
        "Uses the embedded database of --data-dir (stop the server first) or --database-url / DATABASE_URL",
    )
    p.add_argument("--data-dir", type=Path, default=Path("rummy-data"), help="the server's (default ./rummy-data)")
    p.add_argument("--database-url", default=None, help="PostgreSQL URL (default: DATABASE_URL, else embedded)")
    p = command("create-table", "create a table; what is not given takes the server's default (docs/api.md)")
    for name, help_text in NEW_TABLE_FIELDS.items():
        p.add_argument("--" + name.replace("_", "-"), type=_count, default=None, help=help_text)
    keyed(p)
    p = command("close", "close a table: no new hand, the hand in progress finishes, then every seat stands up")
    p.add_argument("table_id", metavar="TABLE")
    p = command("stand", "stand a seat up (now, or as the hand it plays ends)")
    p.add_argument("table_id", metavar="TABLE")
    p.add_argument("seat", metavar="SEAT", type=_count)
    p = command("void", "void a hand in progress by decision D33 (holds released, transcript published)")
    p.add_argument("hand_id", metavar="HAND", type=_count)
    p.add_argument("--reason", required=True, help="why (1-500 characters; published in the transcript)")
    command("rotate-token", "make a new operator token; the old one stops working at once")
    p = command("audit", "the operator actions")
    paging(p)
    command("ledger", "the ledger check: balances, holds, settlement")


# ----------------------------------------------------------------------------- the client
#: A command the server answers ``unavailable`` (503: the table is between servers, or
#: the database away, docs/api.md) is sent again after these pauses (seconds), then
#: reported — only a command that a second sending cannot make do a second thing.
UNAVAILABLE_PAUSES = (0.25, 0.5, 1.0, 2.0, 4.0)
#: The answers a command that may be sent again is sent again after: ``unavailable``
#: (nothing was done) and ``outcome_unknown`` (it may have been: a read changes
#: nothing, a close done answers ``closed`` again, a void done is refused the second
#: time, a keyed command is answered as the first time).
AGAIN_AFTER = frozenset({"unavailable", "outcome_unknown"})


class Client:
    """Requests with the operator token and a timeout (:mod:`service.httpclient`: a
    307 from a node to another is followed, POST included); failures as AdminError.
    A read, or a command with ``again`` (closing a table: closed, it answers so again;
    voiding a hand: done once, refused after), refused as ``unavailable`` or ``outcome_unknown`` is tried again
    (:data:`UNAVAILABLE_PAUSES`, through ``pause``): a table handed from one worker
    to another between hands is served again a moment later.  Any other command is
    reported at once: when the database's connection broke during the COMMIT, the
    server cannot know whether it was stored, so a token rotated again could lock the
    operator out, a seat stood up again stand up whoever sat down meanwhile.  A deposit,
    a withdrawal or a new table carries an ``Idempotency-Key`` (service.once): the server answers a
    second sending with the same key from what it stored, so it is sent again after
    ``unavailable`` and after ``outcome_unknown`` too, and a failure names the key, so
    that the operator can send it once more with ``--idempotency-key``."""

    def __init__(self, rest: Rest, token: str, pause: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.rest, self.token, self.pause = rest, token, pause

    @property
    def server(self) -> str:
        return self.rest.server

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
        again: bool = False,
        key: str | None = None,
    ) -> Any:
        from service.httpclient import Refused, Unreachable

        pauses = UNAVAILABLE_PAUSES if method == "GET" or again or key else ()
        extra = {IDEMPOTENCY_HEADER: key} if key else None
        retry = f"; to learn whether it was done, send it again with --idempotency-key {key}" if key else ""
        for wait in (*pauses, None):
            try:
                return await self.rest.call(method, path, self.token, body, query, extra)
            except Unreachable as e:
                raise AdminError(e.exit_code, e.message + retry) from None
            except Refused as e:
                if e.server_code not in AGAIN_AFTER or wait is None:
                    err = self._refusal(e)
                    if e.server_code in AGAIN_AFTER:
                        err = AdminError(err.exit_code, err.message + retry)
                    raise err from None
            await self.pause(wait)
        raise AssertionError("unreachable: the last try returns or raises")

    def _refusal(self, e: Refused) -> AdminError:
        code = e.exit_code
        if e.error is None:
            return AdminError(code, f"{self.server} answered {e.method} {e.path} with HTTP {e.status} {e.reason}")
        hint = ""
        if e.server_code == "not_found":  # no such route, rather than no such player, table or hand
            return AdminError(
                code, f"{self.server} has no {e.method} {e.path.split('?')[0]} (not_found): is it an older rummy-table?"
            )
        if e.server_code in ("unauthorized", "token_rotated"):
            hint = f"; give the operator token with --token or {OPERATOR_TOKEN_ENV}"
        return AdminError(code, f"{e.message} ({e.server_code}){hint}")


def _id(value: str) -> str:
    """A path segment: quoted, so an id can never walk the path."""
    return quote(str(value), safe="")


def check_server_url(server: str, flag: str = "--server") -> str:
    """An http(s) URL with a host and a numeric port if any; returned without a trailing
    slash.  rummy-table's other commands use it too."""
    p = urlsplit(server)
    if p.scheme not in ("http", "https") or not p.netloc:
        raise AdminError(
            EXIT_USAGE, f"{flag} {server!r} is not a URL; give it with http:// or https:// (e.g. {DEFAULT_SERVER})"
        )
    try:
        p.port  # noqa: B018 - parsing the port is the check
    except ValueError:
        raise AdminError(EXIT_USAGE, f"{flag} {server!r} has a port that is not a number") from None
    if not p.hostname:
        raise AdminError(EXIT_USAGE, f"{flag} {server!r} names no host")
    return server.rstrip("/")


# ----------------------------------------------------------------------------- output
def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def _when(value: Any) -> str:
    """An ISO time to the second, as the server sent it (its zone kept)."""
    if not isinstance(value, str):
        return _text(value)
    m = re.fullmatch(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:\.\d+)?(.*)", value)
    if not m:
        return value
    zone = m.group(3)
    return f"{m.group(1)} {m.group(2)}" + ("" if zone in ("Z", "+00:00", "") else zone)


def _num(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Aligned columns; a column of whole numbers is right-aligned."""
    cells = [[_text(c) for c in row] for row in rows]
    numeric = [
        any(_num(row[i]) for row in rows) and all(_num(row[i]) or row[i] is None for row in rows)
        for i in range(len(headers))
    ]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        out = [v.rjust(w) if numeric[i] else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths, strict=True))]
        return "  ".join(out).rstrip()

    return "\n".join([line(list(headers)), *(line(r) for r in cells)])


def fields(pairs: Sequence[tuple[str, Any]]) -> str:
    width = max(len(k) for k, _ in pairs)
    return "\n".join(f"{k.ljust(width)}  {_text(v)}" for k, v in pairs)


def _seats(seats: Any) -> str:
    if not seats:
        return "-"
    return " ".join(f"{s.get('table_id')}:{s.get('seat')}" for s in seats)


SINGULAR = {"players": "player", "tables": "table", "hands": "hand", "entries": "entry"}


def _more(shown: int, total: Any, what: str) -> str:
    if _num(total) and total > shown:
        return f"{shown} of {total} {what} (--limit, --offset for more)"
    return f"{shown} {SINGULAR.get(what, what) if shown == 1 else what}"


def _section(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    return f"\n{title}: none" if not rows else f"\n{title}\n" + table(headers, rows)


def show_players(data: dict[str, Any]) -> str:
    players = data.get("players", [])
    rows = [
        [
            p.get("id"),
            p.get("name"),
            p.get("bot"),
            p.get("available"),
            p.get("held"),
            _seats(p.get("seats")),
            _when(p.get("created_at")),
        ]
        for p in players
    ]
    head = ("ID", "NAME", "BOT", "AVAILABLE HT", "HELD HT", "SEATS", "CREATED")
    return table(head, rows) + "\n" + _more(len(players), data.get("total"), "players")


def show_player(p: dict[str, Any]) -> str:
    out = [
        fields(
            [
                ("player", p.get("id")),
                ("name", p.get("name")),
                ("bot", p.get("bot")),
                ("available HT", p.get("available")),
                ("held HT", p.get("held")),
                ("seats", _seats(p.get("seats"))),
                ("created", _when(p.get("created_at"))),
            ]
        )
    ]
    holds = p.get("holds") or []
    out.append(
        _section(
            "holds", ("HAND", "TABLE", "HT"), [[h.get("hand_id"), h.get("table_id"), h.get("amount")] for h in holds]
        )
    )
    hands = p.get("hands") or []
    out.append(
        _section(
            f"hands (the last {len(hands)})",
            ("HAND", "TABLE", "NO", "STATUS", "SEAT", "POINTS", "DELTA HT"),
            [
                [
                    h.get("hand_id"),
                    h.get("table_id"),
                    h.get("hand_no"),
                    h.get("status"),
                    h.get("seat"),
                    h.get("points"),
                    h.get("delta"),
                ]
                for h in hands
            ],
        )
    )
    return "\n".join(out)


def _seated(t: dict[str, Any]) -> str:
    return f"{len(t.get('seated') or [])}/{t.get('seats')}"


def show_tables(data: dict[str, Any]) -> str:
    tables = data.get("tables", [])
    rows = [
        [
            t.get("id"),
            t.get("status", "open"),
            _seated(t),
            t.get("point_value"),
            t.get("commission_bps"),
            t.get("turn_seconds"),
            t.get("hold"),
            t.get("next_hand_no"),
        ]
        for t in tables
    ]
    head = ("ID", "STATUS", "SEATED", "POINT HT", "COMMISSION BPS", "TURN S", "HOLD HT", "NEXT HAND")
    return table(head, rows) + "\n" + _more(len(tables), data.get("total"), "tables")


def show_table(t: dict[str, Any]) -> str:
    hand = t.get("hand")
    in_progress = (
        f"hand {hand.get('hand_id')} (no. {hand.get('hand_no')}), {hand.get('phase')}"
        if isinstance(hand, dict)
        else "none"
    )
    out = [
        fields(
            [
                ("table", t.get("id")),
                ("status", t.get("status", "open")),
                ("seats", _seated(t)),
                ("point value HT", t.get("point_value")),
                ("commission bps", t.get("commission_bps")),
                ("turn seconds", t.get("turn_seconds")),
                ("max missed turns", t.get("max_missed_turns")),
                ("min players", t.get("min_players")),
                ("max away hands", t.get("max_away_hands")),
                ("hold per seat HT", t.get("hold")),
                ("next hand no.", t.get("next_hand_no")),
                ("hand in progress", in_progress),
            ]
        )
    ]
    seated = t.get("seated") or []
    rows = [[s.get("seat"), s.get("player_id"), s.get("name")] for s in seated]
    out.append(_section("seated", ("SEAT", "PLAYER", "NAME"), rows))
    return "\n".join(out)


def show_created(t: dict[str, Any]) -> str:
    return (
        f"table {t.get('id')} created: {t.get('seats')} seats, {t.get('point_value')} HT a point, "
        f"commission {t.get('commission_bps')} bps, {t.get('turn_seconds')} s a turn, "
        f"dealt with {t.get('min_players')} players or more"
    )


def show_hands(data: dict[str, Any]) -> str:
    hands = data.get("hands", [])
    rows = [
        [
            h.get("hand_id"),
            h.get("table_id"),
            h.get("hand_no"),
            h.get("status"),
            _when(h.get("started_at")),
            _when(h.get("ended_at")),
            " ".join(f"{p.get('seat')}:{p.get('player_id')}" for p in h.get("players") or []) or "-",
            h.get("void_reason"),
        ]
        for h in hands
    ]
    head = ("HAND", "TABLE", "NO", "STATUS", "STARTED", "ENDED", "SEAT:PLAYER", "VOID REASON")
    return table(head, rows) + "\n" + _more(len(hands), data.get("total"), "hands")


def show_audit(data: dict[str, Any]) -> str:
    entries = data.get("audit", [])
    rows = [
        [a.get("id"), _when(a.get("at")), a.get("action"), a.get("target"), a.get("outcome"), a.get("params")]
        for a in entries
    ]
    head = ("ID", "AT", "ACTION", "TARGET", "OUTCOME", "PARAMS")
    return table(head, rows) + "\n" + _more(len(entries), data.get("total"), "entries")


def show_balance(data: dict[str, Any], verb: str, amount: int) -> str:
    return (
        f"{verb} {amount} HT: player {data.get('id')} has {data.get('available')} HT available, "
        f"{data.get('held')} HT held"
    )


def show_ledger(data: dict[str, Any]) -> str:
    return fields([(k, v) for k, v in data.items()])


# ----------------------------------------------------------------------------- commands
def run(args: argparse.Namespace, out: TextIO) -> int:
    """Run one admin command; expected failures raise AdminError."""
    server = check_server_url(args.server)
    token = args.token or os.environ.get(OPERATOR_TOKEN_ENV)
    if not token:
        raise AdminError(EXIT_USAGE, f"give the operator token with --token or {OPERATOR_TOKEN_ENV}")
    if not 0 < args.timeout <= 600:
        raise AdminError(EXIT_USAGE, f"--timeout {args.timeout:g}: give more than 0 and at most 600 seconds")

    import aiohttp

    from service.httpclient import Rest

    async def main() -> tuple[Any, str]:
        async with aiohttp.ClientSession() as session:
            return await command(args, Client(Rest(session, server, args.timeout), token))

    data, text = asyncio.run(main())
    if args.json:
        out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        out.write(text + "\n")
    out.flush()
    return EXIT_OK


async def command(args: argparse.Namespace, api: Client) -> tuple[Any, str]:
    """One command's answer: the server's JSON, and the text for a person."""
    cmd = args.admin_command
    page = {"limit": getattr(args, "limit", None), "offset": getattr(args, "offset", None)}
    text: str
    if cmd == "players":
        data = await api.call("GET", "/api/admin/players", query={"q": args.q, **page})
        text = show_players(data)
    elif cmd == "player":
        data = await api.call("GET", f"/api/admin/players/{_id(args.player_id)}")
        text = show_player(data)
    elif cmd == "tables":
        data = await api.call("GET", "/api/tables")
        text = show_tables(data)
    elif cmd == "table":
        data = await api.call("GET", f"/api/tables/{_id(args.table_id)}")
        text = show_table(data)
    elif cmd == "hands":
        query = {"table": args.table, "status": args.status, "player": args.player, **page}
        data = await api.call("GET", "/api/admin/hands", query=query)
        text = show_hands(data)
    elif cmd in ("deposit", "withdraw"):
        key = args.idempotency_key or new_idempotency_key()
        path = f"/api/players/{_id(args.player_id)}/{cmd}"
        data = await api.call("POST", path, body={"amount": args.amount}, key=key)
        text = show_balance(data, "deposited" if cmd == "deposit" else "withdrew", args.amount)
    elif cmd == "close":
        data = await api.call("POST", f"/api/tables/{_id(args.table_id)}/close", again=True)
        status = data.get("status")
        text = f"table {data.get('id')} is {status}" + (
            ": no new hand; the hand in progress finishes, then every seat stands up" if status == "closing" else ""
        )
    elif cmd == "stand":
        data = await api.call("POST", f"/api/tables/{_id(args.table_id)}/seats/{args.seat}/stand")
        when = "now" if data.get("now") else "as the hand in progress ends"
        text = f"table {data.get('table_id')} seat {data.get('seat')} (player {data.get('player_id')}) stands up {when}"
    elif cmd == "void":
        data = await api.call("POST", f"/api/hands/{args.hand_id}/void", body={"reason": args.reason}, again=True)
        text = f"hand {args.hand_id} voided: {data.get('reason', args.reason)}"
    elif cmd == "rotate-token":
        data = await api.call("POST", "/api/admin/operator-token")
        text = (
            f"new operator token (shown once, keep it): {data.get('token')}\n"
            f"the old token no longer works: update {OPERATOR_TOKEN_ENV} wherever it is set"
        )
    elif cmd == "audit":
        data = await api.call("GET", "/api/admin/audit", query=page)
        text = show_audit(data)
    elif cmd == "ledger":
        data = await api.call("GET", "/api/ledger")
        text = show_ledger(data)
    elif cmd == "create-table":
        rules = {name: getattr(args, name) for name in NEW_TABLE_FIELDS if getattr(args, name) is not None}
        data = await api.call("POST", "/api/tables", body=rules, key=args.idempotency_key or new_idempotency_key())
        text = show_created(data)
    else:  # pragma: no cover - argparse allows only the commands above
        raise AdminError(EXIT_USAGE, f"no admin command {cmd!r}")
    return data, text
