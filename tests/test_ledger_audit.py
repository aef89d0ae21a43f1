"""The ledger's audit (service.ledger.summary, run by every /metrics scrape): each of
its statements reads each table at most about once, however many accounts and
entries there are, and the audit still finds what it is for.

The balance check once ran a sum of the entries for every account (a subquery per
row, and no index leads with ``account_id``): reads that grow with accounts × entries,
hours a scrape for a card room with a long history.  The test counts the rows every
scan node of every audit statement reads (EXPLAIN ANALYZE: rows returned and
filtered out, times its loops) against the rows its table holds."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import asyncpg

from service import ledger
from tests.conftest import fresh_pool

PLAYERS = 40
DEPOSITS = 4  # each: one transaction, two entries


def rows_read(plan: dict[str, Any], out: Counter[str]) -> None:
    """The rows each table's scan nodes of ``plan`` read: returned or filtered out, per loop."""
    table = plan.get("Relation Name")
    if table is not None:
        per_loop = plan.get("Actual Rows", 0) + plan.get("Rows Removed by Filter", 0)
        out[table] += round(per_loop * plan.get("Actual Loops", 1))
    for child in plan.get("Plans", ()):
        rows_read(child, out)


async def fill(conn: asyncpg.Connection) -> None:
    for n in range(PLAYERS):
        player = f"p_audit{n:03d}"
        await conn.execute("INSERT INTO players (id, name, token_hash) VALUES ($1, $1, $2)", player, f"t{n}".encode())
        await ledger.open_accounts(conn, player)
        for k in range(DEPOSITS):
            await ledger.deposit(conn, player, 100 + k)
    await conn.execute("ANALYZE")


async def test_each_audit_statement_reads_each_table_about_once(pg_dsn: str) -> None:
    async with fresh_pool(pg_dsn, "audit") as (_, pool), pool.acquire() as conn:
        await fill(conn)
        sizes = {
            t: int(await conn.fetchval(f"SELECT count(*) FROM {t}"))
            for t in ("accounts", "ledger_entries", "hands", "hand_players", "settlements")
        }
        assert sizes["ledger_entries"] == 2 * PLAYERS * DEPOSITS
        over: dict[str, dict[str, tuple[int, int]]] = {}
        for name, sql in ledger.AUDIT.items():
            raw = await conn.fetchval("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
            read: Counter[str] = Counter()
            rows_read(json.loads(raw)[0]["Plan"], read)
            too_many = {t: (n, sizes.get(t, 0)) for t, n in read.items() if n > sizes.get(t, 0) + 1}
            if too_many:
                over[name] = too_many
        assert over == {}, f"rows read against the rows held: {over}"


async def test_the_audit_finds_a_balance_that_its_entries_do_not_explain(pg_dsn: str) -> None:
    # the two accounts the audit names in its SQL are the ledger's own
    assert f"id = '{ledger.EXTERNAL}'" in ledger.AUDIT["deposited"]
    assert f"id = '{ledger.HOUSE}'" in ledger.AUDIT["house_commission"]
    async with fresh_pool(pg_dsn, "auditdrift") as (_, pool), pool.acquire() as conn:
        await fill(conn)
        before = await ledger.summary(conn)
        assert before["ok"] and before["balances_not_matching_entries"] == 0, before
        assert before["deposited"] == before["players_available"] == PLAYERS * sum(100 + k for k in range(DEPOSITS))
        await conn.execute("UPDATE accounts SET balance = balance + 5 WHERE id = $1", ledger.available("p_audit007"))
        after = await ledger.summary(conn)
        assert after["balances_not_matching_entries"] == 1 and after["sum_of_accounts"] == 5, after
        assert not after["ok"]
