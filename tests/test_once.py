"""Operator commands that store, told once (service.once; docs/api.md, "Sending a
command again"): a COMMIT whose answer is lost is ``outcome_unknown``, never "nothing
was changed"; a deposit or a withdrawal with an ``Idempotency-Key`` moves money once
however often it is sent, and a new table with one is created once.  The lost answers
are real: a proxy between the server and PostgreSQL lets the COMMIT through, waits for
PostgreSQL's answer, drops it and cuts the connection (tests/pgproxy.py)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import asyncpg
import pytest
import pytest_asyncio

from service.appkeys import CONFIG
from service.db import NothingStored
from service.errors import OutcomeUnknown
from service.once import committing
from service.startup import Running
from tests.conftest import OPERATOR, Api
from tests.pgproxy import PgProxy
from tests.test_admin_cli import run_admin
from tests.test_recovery import proxied  # noqa: F401 - a fixture

MONEY = r"INSERT INTO ledger_tx"  # the ledger's statement that moves money (no table plays here)


@dataclass
class Rig:
    """A server of its own behind the proxy, a client session, and a player."""

    server: Running
    proxy: PgProxy
    session: aiohttp.ClientSession
    api: Api
    player: str = ""

    async def send(self, path: str, body: Any, key: str | None = None) -> tuple[int, dict[str, Any], str | None]:
        """POST with the operator token (and the key): status, body, Idempotent-Replayed."""
        headers = {"Authorization": f"Bearer {OPERATOR}"}
        if key is not None:
            headers["Idempotency-Key"] = key
        async with self.session.post(self.server.url + path, json=body, headers=headers) as r:
            return r.status, await r.json(), r.headers.get("Idempotent-Replayed")

    def path(self, action: str) -> str:
        return f"/api/players/{self.player}/{action}"

    async def available(self) -> int:
        return int((await self.api.call("GET", f"/api/admin/players/{self.player}", expect=200))["available"])

    async def audit(self, action: str) -> list[str]:
        rows = (await self.api.call("GET", "/api/admin/audit?limit=500", expect=200))["audit"]
        return [r["outcome"] for r in rows if r["action"] == action and r["target"] == self.player]

    async def ledger_ok(self) -> bool:
        return bool((await self.api.call("GET", "/api/ledger"))["ok"])


def new_key() -> str:
    return "k-" + secrets.token_hex(8)


@pytest_asyncio.fixture
async def rig(proxied: tuple[Running, PgProxy]) -> AsyncIterator[Rig]:  # noqa: F811 - the fixture
    server, proxy = proxied
    async with aiohttp.ClientSession() as session:
        yield Rig(server, proxy, session, Api(server.url, session))


async def with_player(rig: Rig, name: str, deposit: int) -> Rig:
    rig.player = (await rig.api.player(name, deposit=deposit))["id"]
    return rig


async def test_a_deposit_whose_commit_answer_is_lost_is_outcome_unknown_and_its_key_tells(rig: Rig) -> None:
    await with_player(rig, "once", 1_000)
    # Without a key: stored, but the server cannot know, and must not say "nothing was changed".
    rig.proxy.drop_commit_reply(MONEY)
    status, body, _ = await rig.send(rig.path("deposit"), {"amount": 50})
    assert rig.proxy.dropped, "the trap fired"
    assert (status, body["error"]["code"]) == (503, "outcome_unknown"), body
    assert "nothing was changed" not in body["error"]["message"]
    assert await rig.available() == 1_050  # it was stored
    # With a key: the same, and the key tells the truth when sent again.
    key = new_key()
    rig.proxy.drop_commit_reply(MONEY)
    status, body, _ = await rig.send(rig.path("deposit"), {"amount": 70}, key)
    assert (status, body["error"]["code"]) == (503, "outcome_unknown"), body
    assert await rig.available() == 1_120
    for _ in range(3):
        status, body, replayed = await rig.send(rig.path("deposit"), {"amount": 70}, key)
        assert (status, replayed) == (200, "true"), body
        assert body == {"id": rig.player, "available": 1_120, "held": 0}  # the first answer, as stored
    assert await rig.available() == 1_120, "sent four times, moved once"
    outcomes = await rig.audit("deposit")
    assert sum(o == "done" for o in outcomes) == 2  # both stored, each once (its row in its transaction)
    assert sum(o.startswith("unknown: ") for o in outcomes) == 2
    assert await rig.ledger_ok()


async def test_a_key_is_one_commands_and_a_refusal_stores_no_key(rig: Rig) -> None:
    await with_player(rig, "keys", 100)
    key = new_key()
    status, body, _ = await rig.send(rig.path("withdraw"), {"amount": 300}, key)
    assert (status, body["error"]["code"]) == (409, "insufficient_balance")
    # another command with the key it carried: it was refused, so the key is free…
    status, body, replayed = await rig.send(rig.path("deposit"), {"amount": 500}, key)
    assert (status, replayed, body["available"]) == (200, None, 600)
    # …and now it is the deposit's: another command with it is refused and moves nothing
    for action, amount in (("withdraw", 300), ("deposit", 501)):
        status, body, _ = await rig.send(rig.path(action), {"amount": amount}, key)
        assert (status, body["error"]["code"]) == (409, "idempotency_key_reused"), body
    assert await rig.available() == 600
    for bad in ("short", "x" * 101, "has space!", "ключ-ключ-ключ"):
        status, body, _ = await rig.send(rig.path("withdraw"), {"amount": 1}, bad)
        assert (status, body["error"]["code"]) == (400, "bad_idempotency_key"), (bad, body)
    assert await rig.available() == 600
    outcomes = await rig.audit("withdraw")
    assert sum("bad_idempotency_key" in o for o in outcomes) == 4
    assert sum("idempotency_key_reused" in o for o in outcomes) == 1


async def test_the_same_key_sent_at_once_moves_the_money_once(rig: Rig) -> None:
    await with_player(rig, "race", 1_000)
    key = new_key()
    answers = await asyncio.gather(*(rig.send(rig.path("withdraw"), {"amount": 400}, key) for _ in range(6)))
    assert {(s, tuple(sorted(b.items()))) for s, b, _ in answers} == {
        (200, (("available", 600), ("held", 0), ("id", rig.player)))
    }, answers
    assert sum(r is None for _, _, r in answers) == 1, "one sending moved it, the others read its answer"
    assert await rig.available() == 600
    assert await rig.ledger_ok()


async def test_with_the_database_away_a_keyed_deposit_is_unavailable_and_stores_nothing(rig: Rig) -> None:
    await with_player(rig, "away", 100)
    key = new_key()
    rig.proxy.refuse = True
    rig.proxy.cut()
    status, body, _ = await rig.send(rig.path("deposit"), {"amount": 5}, key)
    assert (status, body["error"]["code"]) == (503, "unavailable"), body
    assert "not stored" in body["error"]["message"] or "nothing was changed" in body["error"]["message"]
    rig.proxy.refuse = False
    status, body, replayed = await rig.send(rig.path("deposit"), {"amount": 5}, key)
    assert (status, replayed, body["available"]) == (200, None, 105), body  # the first never happened


async def test_the_admin_command_sends_a_lost_deposit_again_with_its_key(rig: Rig) -> None:
    """``rummy-table admin deposit``: the first sending's COMMIT answer is lost; the
    client sends it again with the same key and reports the balance once moved."""
    await with_player(rig, "cli", 10)

    async def admin(*argv: str) -> tuple[int, str, str]:
        return await asyncio.to_thread(run_admin, rig.server.url, *argv)

    rig.proxy.drop_commit_reply(MONEY)
    code, out, err = await admin("deposit", rig.player, "25")
    assert rig.proxy.dropped and code == 0, (code, out, err)
    assert "35" in out
    assert await rig.available() == 35
    # a key given by hand: the command an earlier try could not finish, sent once more
    key = new_key()
    for _ in range(2):
        code, out, err = await admin("deposit", rig.player, "5", "--idempotency-key", key)
        assert code == 0, err
    assert await rig.available() == 40
    code, out, err = await admin("withdraw", rig.player, "5", "--idempotency-key", key)
    assert (code, "idempotency_key_reused" in err) == (4, True), (code, err)


async def test_a_player_created_whose_commit_answer_is_lost_is_outcome_unknown_and_found_by_name(rig: Rig) -> None:
    """Creating a player takes no key (its answer holds the player's token, kept only
    as a hash): the answer says how to learn whether it was stored, and it was, once."""
    name = "lost-" + secrets.token_hex(4)
    rig.proxy.drop_commit_reply(r"INSERT INTO players")
    status, body, _ = await rig.send("/api/players", {"name": name, "deposit": 300})
    assert rig.proxy.dropped
    assert (status, body["error"]["code"]) == (503, "outcome_unknown"), body
    assert "GET /api/admin/players?q=" in body["error"]["message"]
    found = (await rig.api.call("GET", f"/api/admin/players?q={name}", expect=200))["players"]
    assert [(p["name"], p["available"]) for p in found] == [(name, 300)]
    assert await rig.ledger_ok()


async def audit_outcomes(dsn: str, action: str) -> list[str]:
    conn = await asyncpg.connect(dsn)
    try:
        return [r["outcome"] for r in await conn.fetch("SELECT outcome FROM audit_log WHERE action = $1", action)]
    finally:
        await conn.close()


async def test_a_commit_answered_too_late_is_outcome_unknown_and_a_statement_answered_too_late_stored_nothing(
    rig: Rig,
) -> None:
    """``once.committing`` on a connection of its own (a 0.5 s statement timeout)
    through the proxy, PostgreSQL hung as the client sees it: a COMMIT whose answer
    comes 10 s late was stored, and the answer is ``outcome_unknown``; a statement
    inside the transaction answered 10 s late leaves nothing stored (no COMMIT was
    ever sent), and the answer is ``unavailable``."""
    dsn = rig.server.app[CONFIG].dsn
    insert = "INSERT INTO audit_log (action, params, outcome) VALUES ($1, '{}', 'written')"
    Hold = Callable[[str, float], None]
    cases: tuple[tuple[Hold, type[Exception], str, list[str]], ...] = (  # how held, raised, its message, stored
        (rig.proxy.hold_commit_reply, OutcomeUnknown, "may have been stored", ["written"]),
        (rig.proxy.hold_reply, NothingStored, "nothing was changed", []),
    )
    for hold, raised, says, stored in cases:
        action = f"late-{hold.__name__}-{secrets.token_hex(4)}"
        conn = await asyncpg.connect(dsn, command_timeout=0.5)
        try:
            hold(r"INSERT INTO audit_log", 10.0)  # far past the 0.5 s timeout, on a busy machine too
            with pytest.raises(raised, match=says):
                async with committing(conn, "the test", "look"):
                    await conn.execute(insert, action)
        finally:
            conn.terminate()  # a transaction never committed ends with its connection
        assert await audit_outcomes(dsn, action) == stored, hold.__name__


async def test_a_refusal_whose_audit_row_meets_the_database_away_is_still_the_refusal(rig: Rig) -> None:
    """The refusal's own audit row is written after the command's transaction rolled
    back; the database gone at that moment (the proxy loses that row's answer) leaves
    the answer as it was — a refusal, nothing stored — not ``outcome_unknown``."""
    await with_player(rig, "refused", 100)
    # refused by the ledger inside the transaction; refused before it, its body unread
    for body, answer in (({"amount": 300}, (409, "insufficient_balance")), ({"amount": 0}, (400, "bad_amount"))):
        dropped = len(rig.proxy.dropped)
        rig.proxy.drop_commit_reply(r"INSERT INTO audit_log")
        status, got, _ = await rig.send(rig.path("withdraw"), body, new_key())
        assert len(rig.proxy.dropped) == dropped + 1, "the trap fired on the refusal's audit row"
        assert (status, got["error"]["code"]) == answer, got
    assert await rig.available() == 100


# ----------------------------------------------------------------------------- a new table
TABLE = {"seats": 4, "point_value": 2}


async def table_ids(rig: Rig) -> set[str]:
    return {t["id"] for t in (await rig.api.call("GET", "/api/tables", expect=200))["tables"]}


async def served(rig: Rig, table_id: str) -> None:
    """Until the table answers as served (its lease taken and the table loaded)."""
    deadline = asyncio.get_running_loop().time() + 60  # a bound only a hang exceeds
    while True:
        async with rig.session.get(f"{rig.server.url}/api/tables/{table_id}") as r:
            if r.status == 200 and (await r.json())["id"] == table_id:
                return
        assert asyncio.get_running_loop().time() < deadline, r.status
        await asyncio.sleep(0.1)


async def test_a_table_whose_commit_answer_is_lost_is_created_once_with_its_key_and_served(rig: Rig) -> None:
    """The table, its lease and its audit row are one transaction: its COMMIT's answer
    lost, the answer is ``outcome_unknown``; sent again with the key, the table the
    first sending stored (never a second one), and that table is served."""
    before = await table_ids(rig)
    key = new_key()
    rig.proxy.drop_commit_reply(r"INSERT INTO table_leases")
    status, body, _ = await rig.send("/api/tables", TABLE, key)
    assert rig.proxy.dropped, "the trap fired"
    assert (status, body["error"]["code"]) == (503, "outcome_unknown"), body
    assert "GET /api/tables" in body["error"]["message"] or "Idempotency-Key" in body["error"]["message"]
    answers = [await rig.send("/api/tables", TABLE, key) for _ in range(2)]
    assert {(s, r) for s, _, r in answers} == {(201, "true")}, answers
    table_id = answers[0][1]["id"]
    assert answers[0][1] == answers[1][1] and (answers[0][1]["seats"], answers[0][1]["point_value"]) == (4, 2)
    assert await table_ids(rig) - before == {table_id}, "sent three times, created once"
    await served(rig, table_id)  # stored though this worker never adopted it: the heartbeat takes it
    status, body, _ = await rig.send("/api/tables", {**TABLE, "seats": 6}, key)
    assert (status, body["error"]["code"]) == (409, "idempotency_key_reused"), body
    # sent at once with a key of their own: one table
    key = new_key()
    answers = await asyncio.gather(*(rig.send("/api/tables", TABLE, key) for _ in range(4)))
    assert {s for s, _, _ in answers} == {201} and len({b["id"] for _, b, _ in answers}) == 1, answers
    assert sum(r is None for _, _, r in answers) == 1, "one sending created it, the others read its answer"
    assert len(await table_ids(rig) - before) == 2
    assert (await audit_outcomes(rig.server.app[CONFIG].dsn, "create_table")).count("done") == 2


async def test_the_admin_command_creates_a_table_once_when_its_answer_is_lost(rig: Rig) -> None:
    before = await table_ids(rig)
    rig.proxy.drop_commit_reply(r"INSERT INTO table_leases")
    code, out, err = await asyncio.to_thread(run_admin, rig.server.url, "create-table", "--seats", "4")
    assert rig.proxy.dropped and code == 0, (code, out, err)
    (table_id,) = await table_ids(rig) - before
    assert table_id in out
    await served(rig, table_id)
