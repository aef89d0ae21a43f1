"""Operator commands that store, told once (service.once; docs/api.md, "Sending a
command again"): a COMMIT whose answer is lost is ``outcome_unknown``, never "nothing
was changed"; a deposit or a withdrawal with an ``Idempotency-Key`` moves money once
however often it is sent.  The lost answers are real: a proxy between the server and
PostgreSQL lets the COMMIT through, waits for PostgreSQL's answer, drops it and cuts
the connection (tests/pgproxy.py)."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import aiohttp

from service.startup import Running
from tests.conftest import OPERATOR, Api
from tests.pgproxy import PgProxy
from tests.test_admin_cli import run_admin
from tests.test_recovery import proxied  # noqa: F401 - a fixture

MONEY = r"INSERT INTO ledger_tx"  # the ledger's statement that moves money (no table plays here)


async def send(
    session: aiohttp.ClientSession, server: Running, path: str, body: Any, key: str | None = None
) -> tuple[int, dict[str, Any], str | None]:
    headers = {"Authorization": f"Bearer {OPERATOR}"}
    if key is not None:
        headers["Idempotency-Key"] = key
    async with session.post(server.url + path, json=body, headers=headers) as r:
        return r.status, await r.json(), r.headers.get("Idempotent-Replayed")


async def available(api: Api, player_id: str) -> int:
    return int((await api.call("GET", f"/api/admin/players/{player_id}", expect=200))["available"])


async def audit_rows(api: Api, action: str, target: str) -> list[str]:
    rows = (await api.call("GET", "/api/admin/audit?limit=500", expect=200))["audit"]
    return [r["outcome"] for r in rows if r["action"] == action and r["target"] == target]


async def test_a_deposit_whose_commit_answer_is_lost_is_outcome_unknown_and_its_key_tells(
    proxied: tuple[Running, PgProxy],  # noqa: F811 - the fixture
) -> None:
    server, proxy = proxied
    async with aiohttp.ClientSession() as session:
        api = Api(server.url, session)
        p = await api.player("once", deposit=1_000)
        path = f"/api/players/{p['id']}/deposit"
        # Without a key: stored, but the server cannot know, and must not say "nothing was changed".
        proxy.drop_commit_reply(MONEY)
        status, body, _ = await send(session, server, path, {"amount": 50})
        assert proxy.dropped, "the trap fired"
        assert (status, body["error"]["code"]) == (503, "outcome_unknown"), body
        assert "nothing was changed" not in body["error"]["message"]
        assert await available(api, p["id"]) == 1_050  # it was stored
        # With a key: the same, and the key tells the truth when sent again.
        key = "k-" + secrets.token_hex(8)
        proxy.drop_commit_reply(MONEY)
        status, body, _ = await send(session, server, path, {"amount": 70}, key)
        assert (status, body["error"]["code"]) == (503, "outcome_unknown"), body
        assert await available(api, p["id"]) == 1_120
        for _ in range(3):
            status, body, replayed = await send(session, server, path, {"amount": 70}, key)
            assert (status, replayed) == (200, "true"), body
            assert body == {"id": p["id"], "available": 1_120, "held": 0}  # the first answer, as stored
        assert await available(api, p["id"]) == 1_120, "sent four times, moved once"
        outcomes = await audit_rows(api, "deposit", p["id"])
        assert sum(o == "done" for o in outcomes) == 2  # both stored, each once (its row in its transaction)
        assert sum(o.startswith("unknown: ") for o in outcomes) == 2
        assert (await api.call("GET", "/api/ledger"))["ok"] is True


async def test_a_key_is_one_commands_and_a_refusal_stores_no_key(
    proxied: tuple[Running, PgProxy],  # noqa: F811 - the fixture
) -> None:
    server, _ = proxied
    async with aiohttp.ClientSession() as session:
        api = Api(server.url, session)
        p = await api.player("keys", deposit=100)
        key = "k-" + secrets.token_hex(8)
        withdraw = f"/api/players/{p['id']}/withdraw"
        status, body, _ = await send(session, server, withdraw, {"amount": 300}, key)
        assert (status, body["error"]["code"]) == (409, "insufficient_balance")
        # another command with the key it carried: it was refused, so the key is free…
        status, body, replayed = await send(session, server, f"/api/players/{p['id']}/deposit", {"amount": 500}, key)
        assert (status, replayed, body["available"]) == (200, None, 600)
        # …and now it is the deposit's: a withdrawal with it is refused and moves nothing
        status, body, _ = await send(session, server, withdraw, {"amount": 300}, key)
        assert (status, body["error"]["code"]) == (409, "idempotency_key_reused"), body
        status, body, _ = await send(session, server, f"/api/players/{p['id']}/deposit", {"amount": 501}, key)
        assert (status, body["error"]["code"]) == (409, "idempotency_key_reused"), body
        assert await available(api, p["id"]) == 600
        for bad in ("short", "x" * 101, "has space!", "ключ-ключ-ключ"):
            status, body, _ = await send(session, server, withdraw, {"amount": 1}, bad)
            assert (status, body["error"]["code"]) == (400, "bad_idempotency_key"), (bad, body)
        assert await available(api, p["id"]) == 600
        outcomes = await audit_rows(api, "withdraw", p["id"])
        assert sum("bad_idempotency_key" in o for o in outcomes) == 4
        assert sum("idempotency_key_reused" in o for o in outcomes) == 1


async def test_the_same_key_sent_at_once_moves_the_money_once(
    proxied: tuple[Running, PgProxy],  # noqa: F811 - the fixture
) -> None:
    server, _ = proxied
    async with aiohttp.ClientSession() as session:
        api = Api(server.url, session)
        p = await api.player("race", deposit=1_000)
        key = "k-" + secrets.token_hex(8)
        path = f"/api/players/{p['id']}/withdraw"
        answers = await asyncio.gather(*(send(session, server, path, {"amount": 400}, key) for _ in range(6)))
        assert {(s, tuple(sorted(b.items()))) for s, b, _ in answers} == {
            (200, (("available", 600), ("held", 0), ("id", p["id"])))
        }, answers
        assert sum(r is None for _, _, r in answers) == 1, "one sending moved it, the others read its answer"
        assert await available(api, p["id"]) == 600
        assert (await api.call("GET", "/api/ledger"))["ok"] is True


async def test_with_the_database_away_a_keyed_deposit_is_unavailable_and_stores_nothing(
    proxied: tuple[Running, PgProxy],  # noqa: F811 - the fixture
) -> None:
    server, proxy = proxied
    async with aiohttp.ClientSession() as session:
        api = Api(server.url, session)
        p = await api.player("away", deposit=100)
        key = "k-" + secrets.token_hex(8)
        path = f"/api/players/{p['id']}/deposit"
        proxy.refuse = True
        proxy.cut()
        status, body, _ = await send(session, server, path, {"amount": 5}, key)
        assert (status, body["error"]["code"]) == (503, "unavailable"), body
        assert "not stored" in body["error"]["message"] or "nothing was changed" in body["error"]["message"]
        proxy.refuse = False
        status, body, replayed = await send(session, server, path, {"amount": 5}, key)
        assert (status, replayed, body["available"]) == (200, None, 105), body  # the first never happened


async def test_the_admin_command_sends_a_lost_deposit_again_with_its_key(
    proxied: tuple[Running, PgProxy],  # noqa: F811 - the fixture
) -> None:
    """``rummy-table admin deposit``: the first sending's COMMIT answer is lost; the
    client sends it again with the same key and reports the balance once moved."""
    server, proxy = proxied
    async with aiohttp.ClientSession() as session:
        api = Api(server.url, session)
        p = await api.player("cli", deposit=10)
        proxy.drop_commit_reply(MONEY)
        code, out, err = await asyncio.to_thread(run_admin, server.url, "deposit", p["id"], "25")
        assert proxy.dropped and code == 0, (code, out, err)
        assert "35" in out
        assert await available(api, p["id"]) == 35
        # a key given by hand: the command an earlier try could not finish, sent once more
        key = "k-" + secrets.token_hex(8)
        for _ in range(2):
            code, out, err = await asyncio.to_thread(
                run_admin, server.url, "deposit", p["id"], "5", "--idempotency-key", key
            )
            assert code == 0, err
        assert await available(api, p["id"]) == 40
        code, out, err = await asyncio.to_thread(
            run_admin, server.url, "withdraw", p["id"], "5", "--idempotency-key", key
        )
        assert (code, "idempotency_key_reused" in err) == (4, True), (code, err)


async def test_a_player_created_whose_commit_answer_is_lost_is_outcome_unknown_and_found_by_name(
    proxied: tuple[Running, PgProxy],  # noqa: F811 - the fixture
) -> None:
    """Creating a player takes no key (its answer holds the player's token, kept only
    as a hash): the answer says how to learn whether it was stored, and it was, once."""
    server, proxy = proxied
    async with aiohttp.ClientSession() as session:
        api = Api(server.url, session)
        name = "lost-" + secrets.token_hex(4)
        proxy.drop_commit_reply(r"INSERT INTO players")
        status, body, _ = await send(session, server, "/api/players", {"name": name, "deposit": 300})
        assert proxy.dropped
        assert (status, body["error"]["code"]) == (503, "outcome_unknown"), body
        assert "GET /api/admin/players?q=" in body["error"]["message"]
        found = (await api.call("GET", f"/api/admin/players?q={name}", expect=200))["players"]
        assert [(p["name"], p["available"]) for p in found] == [(name, 300)]
        assert (await api.call("GET", "/api/ledger"))["ok"] is True
