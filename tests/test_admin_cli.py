"""``rummy-table admin`` (issue 11, item 2): every command against a real server —
the session's ``server`` fixture, or, for rotating the operator token, a server of
its own on a database of its own.  Commands run in this process (in a thread, so the
server in this event loop keeps answering); a few run as real processes to check the
wiring, the exit codes and the one-line errors."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from service import admin
from service.bots import Bot
from service.cli import parse_args
from service.httpclient import Rest
from service.startup import Running, start_server
from service.store import new_token
from tests.conftest import OPERATOR, Api, fresh_database
from tests.test_cli_errors import Result, clean_env, free_port, one_line, rummy
from tests.wsclient import Client


def run_admin(url: str, *argv: str, token: str | None = OPERATOR) -> tuple[int, str, str]:
    """``rummy-table admin --server URL --token T ARGV…`` in this thread: (exit code,
    stdout, the error line)."""
    args = parse_args(["admin", "--server", url, *(["--token", token] if token else []), *argv])
    out = io.StringIO()
    try:
        return admin.run(args, out), out.getvalue(), ""
    except admin.AdminError as e:
        return e.exit_code, out.getvalue(), e.message


async def adm(url: str, *argv: str, token: str | None = OPERATOR, expect: int = 0) -> str:
    code, out, err = await asyncio.to_thread(run_admin, url, *argv, token=token)
    assert code == expect, (argv, code, out, err)
    return out if expect == 0 else err


async def adm_json(url: str, *argv: str, token: str = OPERATOR) -> Any:
    return json.loads(await adm(url, "--json", *argv, token=token))


def columns(text: str) -> list[str]:
    """The header of an aligned table: its column names."""
    return re.split(r"\s{2,}", text.splitlines()[0].strip())


# ----------------------------------------------------------------------------- tokens on the command line
def test_a_token_that_begins_with_a_dash_is_taken_as_the_value() -> None:
    """CI once rotated to a token beginning with "-" and ``--token -…`` failed with
    "expected one argument": any operator-chosen token must work after --token."""
    args = parse_args(["admin", "--server", "http://127.0.0.1:1", "--token", "-Ab_9", "players"])
    assert args.token == "-Ab_9"
    args = parse_args(["admin", "players", "--token", "--dash-dash"])
    assert args.token == "--dash-dash"
    args = parse_args(
        ["bots", "--server", "http://127.0.0.1:1", "--table", "t_x", "--count", "2", "--operator-token", "-x"]
    )
    assert args.operator_token == "-x"


def test_a_forgotten_token_is_still_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """The value is glued only when it is not one of our own options: ``--token --json``
    means the token was left out, and argparse says so."""
    with pytest.raises(SystemExit) as e:
        parse_args(["admin", "--token", "--json", "players"])
    assert e.value.code == 2
    assert "--token: expected one argument" in capsys.readouterr().err


def test_new_tokens_never_begin_with_a_dash() -> None:
    """2,000 draws: without the rule about 31 would begin with "-" (1 in 64)."""
    tokens = [new_token() for _ in range(2_000)]
    assert not [t for t in tokens if t.startswith("-")]
    assert len(set(tokens)) == 2_000 and {len(t) for t in tokens} == {43}


# ----------------------------------------------------------------------------- players and money
async def test_players_player_deposit_and_withdraw(server: Running, api: Api) -> None:
    name = "adm-" + secrets.token_hex(4)
    p = await api.player(name, deposit=5_000)
    url = server.url

    listed = await adm(url, "players", "--q", name)
    assert columns(listed) == ["ID", "NAME", "BOT", "AVAILABLE HT", "HELD HT", "SEATS", "CREATED"]
    row = next(line for line in listed.splitlines() if p["id"] in line)
    assert name in row and re.search(r"\b5000\b", row) and " no " in f" {row} "
    assert listed.strip().endswith("\n1 player")
    data = await adm_json(url, "players", "--q", name)
    assert [x["id"] for x in data["players"]] == [p["id"]] and data["total"] == 1

    out = await adm(url, "deposit", p["id"], "700")
    assert out.strip() == f"deposited 700 HT: player {p['id']} has 5700 HT available, 0 HT held"
    out = await adm(url, "withdraw", p["id"], "200")
    assert out.strip() == f"withdrew 200 HT: player {p['id']} has 5500 HT available, 0 HT held"
    assert (await adm_json(url, "withdraw", p["id"], "500"))["available"] == 5_000
    err = await adm(url, "withdraw", p["id"], "999999", expect=4)
    assert "(insufficient_balance)" in err

    shown = await adm(url, "player", p["id"])
    assert re.search(r"^available HT\s+5000$", shown, re.M) and re.search(rf"^name\s+{name}$", shown, re.M)
    detail = await adm_json(url, "player", p["id"])
    assert detail["id"] == p["id"] and detail["available"] == 5_000 and detail["holds"] == []

    err = await adm(url, "player", "p_nobody", expect=4)
    assert "(no_such_player)" in err
    err = await adm(url, "deposit", "p_nobody", "1", expect=4)
    assert "(no_such_player)" in err


# ----------------------------------------------------------------------------- tables, seats, hands
async def test_tables_table_and_standing_a_seat_up_now(server: Running, api: Api) -> None:
    url = server.url
    table = await api.table(seats=6, point_value=3, turn_seconds=40)
    listed = await adm(url, "tables")
    assert columns(listed)[:3] == ["ID", "STATUS", "SEATED"]
    row = next(line for line in listed.splitlines() if line.startswith(table))
    assert re.search(r"\bopen\s+0/6\s+3\b", row), row

    p = await api.player("sitter")
    await api.call("POST", f"/api/tables/{table}/sit", token=p["token"], body={"seat": 2}, expect=200)
    shown = await adm(url, "table", table)
    assert re.search(r"^status\s+open$", shown, re.M) and re.search(r"^seats\s+1/6$", shown, re.M)
    assert re.search(rf"^\s*2\s+{p['id']}\s+sitter$", shown, re.M), shown
    assert re.search(r"^hand in progress\s+none$", shown, re.M)

    out = await adm(url, "stand", table, "2")  # alone at the table: no hand, so now
    assert out.strip() == f"table {table} seat 2 (player {p['id']}) stands up now"
    assert (await adm_json(url, "table", table))["seated"] == []
    err = await adm(url, "stand", table, "2", expect=4)
    assert "(" in err and ")" in err  # the server's code
    err = await adm(url, "table", "t_nosuchtable", expect=4)
    assert "(no_such_table)" in err


async def test_hands_are_listed_and_filtered(server: Running, api: Api) -> None:
    url = server.url
    table = await api.table(seats=4, turn_seconds=20)
    bots = []
    for n in range(2):
        p = await api.call("POST", "/api/players", body={"name": f"adm-bot-{n}", "deposit": 10_000}, expect=201)
        bots.append(Bot(url, p["token"], table, fast=True, max_hands=1))
    await asyncio.wait_for(asyncio.gather(*(b.run() for b in bots)), 90)
    hand_id = bots[0].hands_seen[0]["hand_id"]
    player = bots[0].player_id
    assert player is not None

    listed = await adm(url, "hands", "--table", table)
    assert columns(listed)[:4] == ["HAND", "TABLE", "NO", "STATUS"]
    row = next(line for line in listed.splitlines() if re.match(rf"\s*{hand_id}\s+{table}\s", line))
    assert re.search(r"\s1\s+(ended|void)\s", row), row
    status = "void" if bots[0].hands_seen[0]["void"] else "ended"
    data = await adm_json(url, "hands", "--table", table, "--status", status, "--player", player, "--limit", "5")
    assert [h["hand_id"] for h in data["hands"]] == [hand_id]
    assert {x["player_id"] for x in data["hands"][0]["players"]} == {b.player_id for b in bots}
    other = "playing" if status == "ended" else "ended"
    assert (await adm_json(url, "hands", "--table", table, "--status", other))["hands"] == []
    out = await adm(url, "hands", "--table", table, "--status", other)
    assert out.strip().endswith("0 hands")

    detail = await adm_json(url, "player", player)
    assert hand_id in [h["hand_id"] for h in detail["hands"]]


async def test_stand_close_and_void_a_hand_in_progress(server: Running, api: Api) -> None:
    """A hand nobody plays: its seat is stood up as it ends, the table closes after it,
    and the operator voids it by D33; voiding it again is refused."""
    url = server.url
    table = await api.table(seats=4, turn_seconds=60)
    a, b = await api.player("adm-a"), await api.player("adm-b")
    async with Client(url, a["token"], a["signer"]) as ca, Client(url, b["token"], b["signer"]) as cb:
        for c in (ca, cb):
            await c.request({"type": "join", "table_id": table})
            assert (await c.request({"type": "sit", "table_id": table}))["type"] == "reply"
        frame = await ca.wait_frame(lambda f: f.get("type") == "hand" and f.get("phase") == "commit")
        seat_a = ca.seat_in(frame["record"])

        live = await adm_json(url, "hands", "--table", table)
        (hand,) = live["hands"]
        assert hand["status"] in ("seeding", "playing")
        out = await adm(url, "stand", table, str(seat_a))
        assert out.strip() == f"table {table} seat {seat_a} (player {a['id']}) stands up as the hand in progress ends"
        out = await adm(url, "close", table)
        assert out.startswith(f"table {table} is closing")
        told = await ca.wait_frame(lambda f: f.get("type") == "table" and f.get("status") == "closing")
        assert told["stood"] == []  # the players at the table are told: no hand after this one
        shown = await adm(url, "table", table)
        assert re.search(r"^status\s+closing$", shown, re.M)
        assert re.search(rf"^hand in progress\s+hand {hand['hand_id']} ", shown, re.M), shown

        out = await adm(url, "void", str(hand["hand_id"]), "--reason", "operator test: stuck")
        assert out.startswith(f"hand {hand['hand_id']} voided: ") and "operator test: stuck" in out, out
        err = await adm(url, "void", str(hand["hand_id"]), "--reason", "again", expect=4)
        assert "(hand_over)" in err

    async def closed() -> bool:
        t = await adm_json(url, "table", table)
        return bool(t["status"] == "closed" and t["seated"] == [])

    loop = asyncio.get_running_loop()
    end = loop.time() + 90  # a bound only a hang exceeds
    while not await closed():
        assert loop.time() < end, await adm_json(url, "table", table)
        await asyncio.sleep(0.2)
    voided = await adm(url, "hands", "--table", table, "--status", "void")
    assert "operator test: stuck" in voided
    err = await adm(url, "void", "999999999", "--reason", "x", expect=4)
    assert "(no_such_hand)" in err


async def test_audit_records_the_operators_actions(server: Running, api: Api) -> None:
    url = server.url
    p = await api.player("adm-audit")
    await adm(url, "deposit", p["id"], "42")
    data = await adm_json(url, "audit", "--limit", "500")
    mine = [e for e in data["audit"] if p["id"] in json.dumps(e)]
    assert mine, data["audit"][:5]
    assert any("deposit" in str(e["action"]) and "42" in json.dumps(e["params"]) for e in mine), mine
    out = await adm(url, "audit", "--limit", "5")
    assert columns(out) == ["ID", "AT", "ACTION", "TARGET", "OUTCOME", "PARAMS"]
    assert len(out.strip().splitlines()) == 1 + min(5, data["total"]) + 1


async def test_ledger(server: Running) -> None:
    out = await adm(server.url, "ledger")
    assert re.search(r"^ok\s+yes$", out, re.M), out
    assert (await adm_json(server.url, "ledger"))["ok"] is True


# ----------------------------------------------------------------------------- errors
async def test_errors_are_one_line_with_the_servers_code(server: Running) -> None:
    url = server.url
    err = await adm(url, "players", token="not-the-operator", expect=4)
    assert "(unauthorized)" in err and "--token" in err
    port = free_port()
    err = await adm(f"http://127.0.0.1:{port}", "players", expect=3)
    assert err.startswith(f"cannot reach http://127.0.0.1:{port}")
    err = await adm(url.removeprefix("http://"), "tables", expect=2)
    assert "http://" in err


async def test_as_a_process_exit_codes_and_one_line_errors(server: Running, tmp_path: Path) -> None:
    env = clean_env(RUMMY_OPERATOR_TOKEN=OPERATOR)
    r = await asyncio.to_thread(rummy, "admin", "--server", server.url, "--json", "tables", cwd=tmp_path, env=env)
    assert r.code == 0 and r.err == "" and isinstance(json.loads(r.out)["tables"], list)
    r = await asyncio.to_thread(rummy, "admin", "tables", "--server", server.url, cwd=tmp_path, env=env)
    assert r.code == 0 and columns(r.out)[0] == "ID"  # the options after the command too
    r = await asyncio.to_thread(rummy, "admin", "--server", server.url, "deposit", "p_x", "1.5", cwd=tmp_path, env=env)
    one_line(r, 2, "AMOUNT", "'1.5' is not a whole number")
    r = await asyncio.to_thread(rummy, "admin", "--server", server.url, "player", "p_nobody", cwd=tmp_path, env=env)
    one_line(r, 4, "(no_such_player)")
    r = await asyncio.to_thread(rummy, "admin", "--server", server.url, "tables", cwd=tmp_path, env=clean_env())
    one_line(r, 2, "--token", "RUMMY_OPERATOR_TOKEN")
    port = free_port()
    r = await asyncio.to_thread(rummy, "admin", "--server", f"http://127.0.0.1:{port}", "tables", cwd=tmp_path, env=env)
    one_line(r, 3, "cannot reach")


def test_amounts_are_checked_before_any_request(tmp_path: Path) -> None:
    for bad in ("0", "-3", "1e3", "12.5", str(10**15 + 1)):
        r = rummy("admin", "--token", "t", "--server", "http://127.0.0.1:9", "withdraw", "p_x", bad, cwd=tmp_path)
        one_line(r, 2, "AMOUNT")


# ----------------------------------------------------------------------------- rotating the token
async def test_rotate_token_on_a_server_of_its_own(pg_dsn: str, tmp_path: Path) -> None:
    """The fixture's operator token must keep working for the other tests: rotation
    runs against a server on a database of its own."""
    async with fresh_database(pg_dsn, "adm") as dsn:
        await rotate_then_serve_again(dsn, tmp_path)


async def rotate_then_serve_again(dsn: str, tmp_path: Path) -> None:
    def serve(data_dir: str, token: str) -> Result:
        return rummy(
            "serve", "--port", "0", "--data-dir", data_dir, "--database-url", dsn,
            cwd=tmp_path, env=clean_env(RUMMY_OPERATOR_TOKEN=token),
        )  # fmt: skip

    running = None
    old = "op-before-" + secrets.token_hex(4)
    try:
        running = await start_server(
            host="127.0.0.1", port=0, data_dir=tmp_path / "data", database_url=dsn, operator_token=old
        )
        url = running.url
        assert (await adm_json(url, "tables", token=old))["tables"] == []
        out = await adm(url, "rotate-token", token=old)
        m = re.fullmatch(r"new operator token \(shown once, keep it\): (\S+)\n.*RUMMY_OPERATOR_TOKEN.*\n", out, re.S)
        assert m, out
        new = m.group(1)
        assert new != old
        err = await adm(url, "players", token=old, expect=4)
        assert "(token_rotated)" in err
        assert (await adm_json(url, "players", token=new))["players"] == []
        rotated = await adm_json(url, "rotate-token", token=new)
        assert rotated["token"] not in (new, old)
        err = await adm(url, "players", token=new, expect=4)
        assert "(token_rotated)" in err
        audit = await adm_json(url, "audit", token=rotated["token"])
        assert sum("token" in str(e["action"]) for e in audit["audit"]) == 2
        assert rotated["token"] not in json.dumps(audit) and new not in json.dumps(audit), "a token in the audit log"
        await running.stop()
        running = None
        # Served again with the old token in RUMMY_OPERATOR_TOKEN: one line, exit 4.
        keys_before = sorted((p.name, p.read_bytes()) for p in (tmp_path / "data").glob("*.key"))
        r = await asyncio.to_thread(serve, "data", old)
        one_line(r, 4, "RUMMY_OPERATOR_TOKEN is not this server's operator token", "rotate-token")
        assert sorted((p.name, p.read_bytes()) for p in (tmp_path / "data").glob("*.key")) == keys_before
        # A data directory without the card room's keys, on its database: refused before
        # the token is looked at, told to restore the keys, and nothing is left behind.
        (tmp_path / "empty").mkdir()
        r = await asyncio.to_thread(serve, "again", rotated["token"])
        one_line(r, 2, "was missing, and this database belongs to a card room", "from your backup")
        assert not (tmp_path / "again").exists()
        r = await asyncio.to_thread(serve, "empty", rotated["token"])
        one_line(r, 2, "was missing, and this database belongs to a card room", "from your backup")
        # (serve.lock, the data directory's lock file, stays: it is never unlinked, see DataDirLock)
        assert [p.name for p in (tmp_path / "empty").iterdir()] == ["serve.lock"], "a refused start left keys behind"
    finally:
        if running is not None:
            await running.stop()


def test_human_tables_align_numbers_to_the_right() -> None:
    text = admin.table(("ID", "HT"), [["a", 5], ["bbbb", 12345], ["c", None]])
    assert text.splitlines() == ["ID       HT", "a         5", "bbbb  12345", "c         -"]


def test_the_cli_wiring_runs_admin_in_a_subprocess_without_a_server(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "service.cli", "admin", "--help"], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0
    for cmd in ("players", "player", "tables", "table", "hands", "deposit", "withdraw", "close", "stand", "void"):
        assert re.search(rf"^\s+{cmd}\s", r.stdout, re.M), cmd
    assert "rotate-token" in r.stdout and "audit" in r.stdout and "exit codes:" in r.stdout


@contextlib.asynccontextmanager
async def fake_server(routes: dict[str, Any]) -> AsyncIterator[str]:
    """A stand-in server on 127.0.0.1 answering POST ``routes``: its URL."""
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_post(path, handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


def paused_into(paused: list[float]) -> Callable[[float], Awaitable[None]]:
    """The admin client's ``pause``: the pauses recorded, not slept."""

    async def pause(seconds: float) -> None:
        paused.append(seconds)

    return pause


async def test_a_command_answered_unavailable_is_sent_again_and_other_refusals_are_not() -> None:
    """``unavailable`` (a table between workers, the database away) changed nothing:
    the command is sent again after each of UNAVAILABLE_PAUSES (the pauses taken by
    the client's ``pause``, recorded here, not slept) and the answer that follows is
    the command's; every other refusal is reported at once, and so is ``unavailable``
    once the pauses are spent."""
    answers: list[tuple[int, str | None]] = []
    seen: list[str] = []

    async def close(request: web.Request) -> web.Response:
        seen.append(request.path)
        status, code = answers.pop(0) if answers else (200, None)
        if code is None:
            return web.json_response({"table_id": "t_x", "status": "closed"})
        return web.json_response({"error": {"code": code, "message": f"{code} here"}}, status=status)

    paused: list[float] = []
    async with fake_server({"/api/admin/tables/{t}/close": close}) as url, aiohttp.ClientSession() as session:
        client = admin.Client(Rest(session, url, 5.0), OPERATOR, paused_into(paused))
        path = "/api/admin/tables/t_x/close"
        answers[:] = [(503, "unavailable"), (503, "unavailable")]
        assert (await client.call("POST", path, again=True))["status"] == "closed"
        assert (len(seen), paused) == (3, list(admin.UNAVAILABLE_PAUSES[:2]))
        seen.clear()
        paused.clear()
        answers[:] = [(409, "table_closed")]
        with pytest.raises(admin.AdminError, match=r"table_closed here \(table_closed\)"):
            await client.call("POST", path, again=True)
        assert (len(seen), paused) == (1, [])
        seen.clear()
        answers[:] = [(503, "unavailable")] * (len(admin.UNAVAILABLE_PAUSES) + 1)
        with pytest.raises(admin.AdminError, match=r"unavailable here \(unavailable\)"):
            await client.call("POST", path, again=True)
        assert (len(seen), paused) == (len(admin.UNAVAILABLE_PAUSES) + 1, list(admin.UNAVAILABLE_PAUSES))
        # a command without ``again`` or a key (a stand-up: sent twice, it could stand
        # up whoever sat down meanwhile if the first was done) is reported at once
        seen.clear()
        paused.clear()
        answers[:] = [(503, "unavailable")]
        with pytest.raises(admin.AdminError, match=r"unavailable here \(unavailable\)"):
            await client.call("POST", path)
        assert (len(seen), paused) == (1, [])


async def test_a_keyed_command_is_sent_again_with_its_key_and_a_failure_names_it() -> None:
    """A deposit carries an Idempotency-Key (service.once): it is sent again after
    ``outcome_unknown`` as after ``unavailable``, always with the same key, and when
    the pauses are spent the message names the key for the operator's next try."""
    keys: list[str | None] = []

    async def deposit(request: web.Request) -> web.Response:
        keys.append(request.headers.get("Idempotency-Key"))
        code = "outcome_unknown" if len(keys) % 2 else "unavailable"
        return web.json_response({"error": {"code": code, "message": f"{code} here"}}, status=503)

    hang = asyncio.Event()

    async def withdraw(request: web.Request) -> web.Response:
        await hang.wait()  # never answers while the client waits
        return web.json_response({})

    paused: list[float] = []
    routes = {"/api/players/{p}/deposit": deposit, "/api/players/{p}/withdraw": withdraw}
    async with fake_server(routes) as url, aiohttp.ClientSession() as session:
        try:
            client = admin.Client(Rest(session, url, 5.0), OPERATOR, paused_into(paused))
            key = admin.new_idempotency_key()
            with pytest.raises(admin.AdminError, match=rf"--idempotency-key {key}$"):
                await client.call("POST", "/api/players/p_x/deposit", {"amount": 5}, key=key)
            assert keys == [key] * (len(admin.UNAVAILABLE_PAUSES) + 1)
            assert paused == list(admin.UNAVAILABLE_PAUSES)
            # no answer at all (a server that died with the request): the key is named too
            silent = admin.Client(Rest(session, url, 0.3), OPERATOR, paused_into(paused))
            with pytest.raises(admin.AdminError, match=rf"did not answer.*--idempotency-key {key}$"):
                await silent.call("POST", "/api/players/p_x/withdraw", {"amount": 5}, key=key)
        finally:
            hang.set()  # before the server stops: its cleanup waits for the handler
