"""``rummy-table admin reset-token`` (issue 18 item 6): a lost operator token is
replaced on the server's machine, without the API — the new one printed once and
working at once, the old one refused, the reset in the audit log; with the embedded
database only while the server is stopped."""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp

from service.app import CONFIG
from service.startup import start_server
from tests.conftest import OPERATOR, server_of_its_own
from tests.test_cli_errors import arummy, clean_env

TOKEN = re.compile(r"new operator token \(shown once, keep it\): (\S+)")


async def status_with(url: str, token: str) -> tuple[int, dict]:
    async with (
        aiohttp.ClientSession() as s,
        s.get(url + "/api/admin/audit", headers={"Authorization": f"Bearer {token}"}) as r,
    ):
        return r.status, await r.json()


async def test_reset_token_on_a_running_server_of_database_url(pg_dsn: str, tmp_path: Path) -> None:
    async with server_of_its_own(pg_dsn, tmp_path / "data", "rt") as running:
        dsn = running.app[CONFIG].dsn
        done = await arummy("admin", "reset-token", "--database-url", dsn, cwd=tmp_path)
        assert done.code == 0, done.err
        found = TOKEN.search(done.out)
        assert found is not None, done.out
        new = found.group(1)
        assert new != OPERATOR
        old_status, old_body = await status_with(running.url, OPERATOR)
        assert old_status == 401 and old_body["error"]["code"] == "token_rotated"
        new_status, audit = await status_with(running.url, new)
        assert new_status == 200
        latest = audit["audit"][0]
        assert latest["action"] == "reset_operator_token" and latest["outcome"] == "done"
        assert latest["params"]["how"] == "admin reset-token"
        assert new not in str(audit)  # the token itself is never logged


async def test_reset_token_with_the_embedded_database(tmp_path: Path) -> None:
    data = tmp_path / "room"
    first = await start_server(host="127.0.0.1", port=0, data_dir=data, database_url=None, operator_token=OPERATOR)
    try:
        busy = await arummy("admin", "reset-token", "--data-dir", str(data), cwd=tmp_path, env=clean_env())
        assert busy.code == 5 and "already using the data directory" in busy.err, busy
        assert busy.err.count("\n") == 1  # one line
    finally:
        await first.stop()
    done = await arummy("admin", "reset-token", "--data-dir", str(data), cwd=tmp_path, env=clean_env())
    assert done.code == 0, done.err
    found = TOKEN.search(done.out)
    assert found is not None, done.out
    again = await start_server(host="127.0.0.1", port=0, data_dir=data, database_url=None, operator_token=None)
    try:
        assert (await status_with(again.url, found.group(1)))[0] == 200
        assert (await status_with(again.url, OPERATOR))[0] == 401
    finally:
        await again.stop()


async def test_reset_token_needs_a_card_room(tmp_path: Path) -> None:
    empty = await arummy("admin", "reset-token", "--data-dir", str(tmp_path / "none"), cwd=tmp_path)
    assert empty.code == 2 and "no card room's database" in empty.err and empty.err.count("\n") == 1, empty
