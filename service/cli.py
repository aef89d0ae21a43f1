"""``rummy-table``: serve tables, seat bots, play a demo, operate the card room.

rummy-table serve [--host 127.0.0.1] [--port 8080] [--data-dir DIR] [--database-url URL] [--log-format text|json]
rummy-table bots --server URL --table ID --count N [--fast] [--hands N] [--deposit HT] [--operator-token T]
rummy-table demo [--seats 6] [--hands 3]
rummy-table admin [--server URL] [--token T] [--json] COMMAND …   (service/admin.py)
rummy-table --version

Everyday mistakes end in one line on stderr — what went wrong and what to do — and
the exit code of :data:`EXIT_CODES`; ``--debug`` adds the traceback.  Arguments, the
data directory, the database URL and the port are checked before anything is
created, and a data directory this run created is removed again when start-up fails.

Each command lives in its own module: ``serve`` in :mod:`service.servecmd`, ``bots``
in :mod:`service.botcmd`, ``demo`` in :mod:`service.demo`, ``admin`` in
:mod:`service.admin`; this one parses the arguments and turns every expected failure
(:class:`service.errors.ServiceError`) into its line and exit code.  It imports only
what parsing needs: a command loads its own modules when it runs, so ``--help``,
``--version`` and a mistaken argument answer without loading the server or aiohttp.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from service import admin
from service.envnames import OPERATOR_TOKEN_ENV
from service.errors import (
    EXIT_CAPACITY,
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_LOCKED,
    EXIT_OK,
    EXIT_PIPE,
    EXIT_REFUSED,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    CliError,
    ServiceError,
)
from service.logs import setup_logging
from service.servecmd import cmd_serve

__all__ = ["EXIT_CODES", "CliError", "main", "parse_args"]

PROG = "rummy-table"


EXIT_CODES = f"""\
exit codes:
  {EXIT_OK:<4} done (serve: stopped by SIGINT/SIGTERM)
  {EXIT_FAILED:<4} a check failed (demo: a transcript or the ledger)
  {EXIT_USAGE:<4} usage or bad input: an argument, --data-dir, DATABASE_URL, a key file
  {EXIT_UNREACHABLE:<4} cannot reach the server or the database
  {EXIT_REFUSED:<4} refused by the server or the database (token, login, not found, not allowed)
  {EXIT_LOCKED:<4} already running: the port, the data directory, the database or the node id is in use
  {EXIT_CAPACITY:<4} the database's max_connections cannot hold this server's workers and pools
  {EXIT_INTERNAL:<4} internal error: run again with --debug and report the traceback
  {EXIT_INTERRUPTED:<4} interrupted (Ctrl-C or SIGTERM); bots leave their seats first
Errors are one line on stderr; --debug adds the traceback."""


def version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("rummy-table")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


class _Version(argparse.Action):
    """``--version``: the installed package's version, read only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kw: Any) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, help=kw.get("help"))

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kw: Any) -> None:
        print(f"{PROG} {version()}", flush=True)
        parser.exit()


# ----------------------------------------------------------------------------- commands
# each loads its own module when it runs
def cmd_bots(args: argparse.Namespace) -> int:
    from service.botcmd import cmd_bots as run

    return run(args)


def cmd_demo(args: argparse.Namespace) -> int:
    from service.demo import cmd_demo as run

    return run(args)


# ----------------------------------------------------------------------------- admin
def cmd_admin(args: argparse.Namespace) -> int:
    if args.admin_command == "reset-token":  # local, without the API (service.tokenreset)
        from service import tokenreset

        return tokenreset.run(args.data_dir, args.database_url, sys.stdout)
    return admin.run(args, sys.stdout)


# ----------------------------------------------------------------------------- parser
class Parser(argparse.ArgumentParser):
    """Usage errors in one line (what is wrong, where to look), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message}; see {self.prog} --help\n")


def _common(parser: argparse.ArgumentParser, defaults: bool) -> None:
    """-v and --debug, before or after the command."""
    kw: dict[str, Any] = {} if defaults else {"default": argparse.SUPPRESS}
    parser.add_argument("-v", "--verbose", action="store_true", help="INFO logs of rummy-table on stderr", **kw)
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors", **kw)


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(
        prog=PROG,
        description="Provably-fair 13-card rummy tables.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--version", action=_Version, help="show the version and exit")
    _common(ap, defaults=True)
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    sp = sub.add_parser(
        "serve",
        help="serve tables (embedded PostgreSQL unless --database-url/DATABASE_URL)",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(sp, defaults=False)
    sp.add_argument("--host", default="127.0.0.1")
    sp.add_argument("--port", type=int, default=8080, help="1-65535, or 0 for any free port (default 8080)")
    sp.add_argument("--data-dir", default="./rummy-data", help="keys and the embedded database (default ./rummy-data)")
    sp.add_argument("--database-url", default=None, help="PostgreSQL URL (default: DATABASE_URL, else embedded)")
    sp.add_argument("--seed-seconds", type=float, default=10.0, help="seconds to commit, then reveal (2+, D21)")
    sp.add_argument("--next-hand-delay", type=float, default=2.0, help="seconds between a hand's end and the next")
    sp.add_argument(
        "--resume-grace",
        type=float,
        default=10.0,
        help="seconds added to a resumed hand's clock after a restart or a database outage (D32)",
    )
    sp.add_argument(
        "--away-seconds",
        type=float,
        default=120.0,
        help="how long a seat may be away at a table too few are connected to deal at before it stands up "
        "(D34; default 120)",
    )
    sp.add_argument(
        "--node-id",
        default=None,
        help="join a cluster of nodes on one PostgreSQL (DATABASE_URL) under this name (docs/deploy.md)",
    )
    sp.add_argument(
        "--public-url", default=None, help="where clients reach this server or node (default http://HOST:PORT)"
    )
    sp.add_argument(
        "--lease-seconds",
        type=float,
        default=None,
        help="how long table leases last without renewal (a node of a cluster, or a server of several workers; "
        "default 5)",
    )
    sp.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes on the one port, each owning a share of the tables "
        "(default: the number of cores; 1 with --node-id)",
    )
    sp.add_argument(
        "--metrics-listen",
        default=None,
        metavar="HOST:PORT",
        help="serve GET /metrics also on HOST:PORT, without a token (give a private address); "
        "on the public port it then needs the operator token from everyone",
    )
    sp.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="log lines on stderr: text, or one JSON a line"
    )
    sp.set_defaults(func=cmd_serve)
    bp = sub.add_parser(
        "bots",
        help="seat bots that play over the WebSocket",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(bp, defaults=False)
    bp.add_argument("--server", required=True, help="the server's URL, e.g. http://127.0.0.1:8080")
    bp.add_argument("--table", required=True)
    bp.add_argument("--count", type=int, required=True, help="how many bots (at most the table's free seats)")
    bp.add_argument("--fast", action="store_true", help="no think time")
    bp.add_argument("--deposit", type=int, default=100_000, help="HT minor units deposited for each bot")
    bp.add_argument("--hands", type=int, default=None, help="stop after this many hands")
    bp.add_argument(
        "--evidence",
        metavar="DIR",
        default=None,
        help="when the bots stop, write each one's evidence file (docs/fairness.md §15) to DIR/PLAYER_ID.json, "
        "for rummy-verify TRANSCRIPT --receipts FILE",
    )
    bp.add_argument(
        "--verify",
        action="store_true",
        help="verify each hand as it ends with each bot's own evidence (docs/fairness.md §15); exit 1 if one fails",
    )
    bp.add_argument(
        "--server-key",
        default=None,
        metavar="KEY",
        help="with --verify: the server key to pin (hex, base64 or PEM); default: the server's own at the start",
    )
    bp.add_argument("--operator-token", default=None, help=f"default: {OPERATOR_TOKEN_ENV}")
    bp.set_defaults(func=cmd_bots)
    dp = sub.add_parser(
        "demo",
        help="play a few hands with bots on a throw-away embedded stack",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(dp, defaults=False)
    dp.add_argument("--seats", type=int, default=6, choices=(4, 6, 8))
    dp.add_argument("--hands", type=int, default=3, help="at least 1")
    dp.set_defaults(func=cmd_demo)
    adm = sub.add_parser(
        "admin",
        help="operate the card room over the REST API with the operator token",
        description=admin.DESCRIPTION,
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(adm, defaults=False)
    admin.add_arguments(adm, common=lambda p: _common(p, defaults=False))
    adm.set_defaults(func=cmd_admin)
    return ap


# ----------------------------------------------------------------------------- main
def _fail(code: int, message: str, debug: bool) -> int:
    if debug:
        traceback.print_exc()
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)
    return code


# Options whose value is a secret token. A token may begin with "-" (RUMMY_OPERATOR_TOKEN
# is chosen by the operator, and tokens made before new tokens avoided it may), which
# argparse would read as the next option ("expected one argument"); such a value is glued
# to its option first, unless it is itself one of our options (then the token was
# forgotten, and argparse says so).  argparse has no public way to list a parser's
# options, hence ``_actions`` below.
SECRET_OPTIONS = ("--token", "--operator-token")


def option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of ``parser`` and of its sub-commands."""
    found: set[str] = set()
    for action in parser._actions:
        found.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= option_strings(sub)
    return found


def glue_secret_values(argv: Sequence[str], known: set[str]) -> list[str]:
    """``--token -abc`` -> ``--token=-abc`` for the options in SECRET_OPTIONS, when the
    value is not one of the ``known`` options."""
    out: list[str] = []
    items = list(argv)
    i = 0
    while i < len(items):
        item = items[i]
        if item in SECRET_OPTIONS and i + 1 < len(items):
            value = items[i + 1]
            if value.startswith("-") and value not in known:
                out.append(f"{item}={value}")
                i += 2
                continue
        out.append(item)
        i += 1
    return out


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = build_parser()
    given = sys.argv[1:] if argv is None else argv
    return parser.parse_args(glue_secret_values(given, option_strings(parser)))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    debug = bool(args.debug)
    setup_logging(bool(args.verbose), getattr(args, "log_format", "text"))
    try:
        code: int = args.func(args)
        return code
    except ServiceError as e:
        return _fail(e.exit_code, e.message, debug)
    except KeyboardInterrupt:
        return _fail(EXIT_INTERRUPTED, "interrupted", debug)
    except BrokenPipeError:
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE
    except Exception as e:
        return _fail(
            EXIT_INTERNAL,
            f"internal error ({type(e).__name__}: {str(e)[:200]}); run again with --debug and report the traceback",
            debug,
        )


if __name__ == "__main__":
    sys.exit(main())
