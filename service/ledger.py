"""The double-entry ledger (RULES.md D18–D20; PITFALLS.md "Money").

Every change is a ledger transaction whose entries sum to zero; account balances
move only through :func:`_post`, each change a single guarded ``UPDATE`` so no
balance can go below zero whatever the isolation level.  Deposits come from the
``external:deposits`` account, so at all times every account sums to zero and the
players and the house hold exactly what was deposited.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import asyncpg

from service.errors import ServiceError
from verifier.settle import Settlement

HOUSE = "house:commission"
EXTERNAL = "external:deposits"


class LedgerError(ServiceError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message, code=code)


def available(player_id: str) -> str:
    return f"player:{player_id}:available"


def held(player_id: str) -> str:
    return f"player:{player_id}:held"


async def open_accounts(conn: asyncpg.Connection, player_id: str) -> None:
    await conn.execute(
        "INSERT INTO accounts (id, kind, player_id) VALUES ($1, 'available', $3), ($2, 'held', $3) "
        "ON CONFLICT (id) DO NOTHING",
        available(player_id),
        held(player_id),
        player_id,
    )


POST_SQL = """
WITH tx AS (
    INSERT INTO ledger_tx (kind, hand_id, memo) VALUES ($1, $2, $3) RETURNING id
), e AS (
    SELECT * FROM unnest($4::text[], $5::bigint[]) AS e(account, amount)
), lk AS (
    -- the accounts locked in id order before any moves: two transactions that share
    -- accounts (a player at two tables, the house) never wait for each other in a circle
    SELECT id FROM accounts WHERE id = ANY($4::text[]) ORDER BY id FOR NO KEY UPDATE
), u AS (
    UPDATE accounts a SET balance = a.balance + e.amount FROM e
    WHERE a.id = e.account AND a.id IN (SELECT id FROM lk) AND (a.kind = 'external' OR a.balance + e.amount >= 0)
    RETURNING a.id
), ins AS (
    INSERT INTO ledger_entries (tx_id, account_id, amount)
    SELECT (SELECT id FROM tx), e.account, e.amount FROM e WHERE e.account IN (SELECT id FROM u)
    RETURNING 1
)
SELECT (SELECT id FROM tx) AS tx_id,
       COALESCE((SELECT array_agg(e.account) FROM e WHERE e.account NOT IN (SELECT id FROM u)), '{}') AS refused
"""


LOCK_SQL = "SELECT id FROM accounts WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE"


async def lock(conn: asyncpg.Connection, accounts: list[str]) -> None:
    """Lock ``accounts`` in id order for the caller's transaction (the order every
    ledger statement takes them in, :data:`POST_SQL`): a transaction that moves money
    in several statements takes all its locks at once first, so it never waits in a
    circle with another (service.tablestore's batches)."""
    await conn.execute(LOCK_SQL, accounts)


async def _post(
    conn: asyncpg.Connection, kind: str, entries: Mapping[str, int], *, hand_id: int | None = None, memo: str = ""
) -> int:
    """One balanced transaction, in one statement: every balance moves by a guarded
    update (never below zero but the external account's) and gets its entry; if any
    cannot move, LedgerError — the caller's transaction (or savepoint) rolls it all
    back."""
    if sum(entries.values()) != 0:
        raise LedgerError("unbalanced", f"ledger entries must sum to zero: {dict(entries)}")
    moves = sorted((a, v) for a, v in entries.items() if v != 0)
    try:
        row = await conn.fetchrow(POST_SQL, kind, hand_id, memo, [a for a, _ in moves], [v for _, v in moves])
    except asyncpg.NumericValueOutOfRangeError:
        # a balance past bigint (the external account holds minus every HT ever deposited,
        # net: a card room's net deposits near 2⁶³ − 1): refused as the state of things,
        # the statement (and the caller's transaction or savepoint) having stored nothing
        # (before: an internal error, answered 500 as plain text; the audit h82)
        raise LedgerError(
            "ledger_full", "that would take a balance past what the ledger can hold (2⁶³ − 1 HT minor units)"
        ) from None
    assert row is not None
    if row["refused"]:
        raise LedgerError("insufficient_balance", f"that would take {_describe(row['refused'][0])} below zero")
    return int(row["tx_id"])


def _describe(account: str) -> str:
    """An account as a person reads it: ``player:p_1:available`` is "the available
    balance of player p_1"."""
    parts = account.split(":")
    if len(parts) == 3 and parts[0] == "player":
        return f"the {parts[2]} balance of player {parts[1]}"
    return f"the account {account}"


MAX_AMOUNT = 10**15  # HT minor units: far above any real deposit, far below bigint's limit (service.wire)


async def deposit(conn: asyncpg.Connection, player_id: str, amount: int) -> int:
    if not isinstance(amount, int) or isinstance(amount, bool) or not 0 < amount <= MAX_AMOUNT:
        raise LedgerError("bad_amount", f"a deposit is an integer of HT minor units, 1 to {MAX_AMOUNT} (D18)")
    async with conn.transaction():
        return await _post(conn, "deposit", {EXTERNAL: -amount, available(player_id): amount}, memo="deposit")


async def withdraw(conn: asyncpg.Connection, player_id: str, amount: int) -> int:
    """Money leaves the card room: from the player's available balance back to the
    external account; refused when it would go below zero (held amounts stay held)."""
    if not isinstance(amount, int) or isinstance(amount, bool) or not 0 < amount <= MAX_AMOUNT:
        raise LedgerError("bad_amount", f"a withdrawal is an integer of HT minor units, 1 to {MAX_AMOUNT} (D18)")
    async with conn.transaction():
        return await _post(conn, "withdraw", {available(player_id): -amount, EXTERNAL: amount}, memo="withdrawal")


async def hold(conn: asyncpg.Connection, player_id: str, amount: int, hand_id: int) -> None:
    """D20: move the most a hand can cost from available to held (caller's transaction)."""
    await hold_all(conn, {player_id: amount}, hand_id)


async def hold_all(conn: asyncpg.Connection, holds: Mapping[str, int], hand_id: int) -> None:
    """D20 for the players a hand deals in, as one ledger transaction: each amount from
    the player's available balance to held.  If any cannot move, LedgerError and the
    caller's transaction rolls it all back (the caller has checked each can)."""
    entries: dict[str, int] = {}
    for player_id, amount in holds.items():
        entries[available(player_id)] = -amount
        entries[held(player_id)] = amount
    await _post(conn, "hold", entries, hand_id=hand_id)


async def release(conn: asyncpg.Connection, holds: Mapping[str, int], hand_id: int) -> None:
    """Return holds untouched (a void hand)."""
    entries: dict[str, int] = {}
    for player_id, amount in holds.items():
        entries[held(player_id)] = -amount
        entries[available(player_id)] = amount
    await _post(conn, "release", entries, hand_id=hand_id, memo="void")


async def settle(
    conn: asyncpg.Connection, hand_id: int, holds: Mapping[int, tuple[str, int]], settlement: Settlement
) -> bool:
    """D19–D20, in the caller's transaction, once per hand: release every hold and
    pay the deltas and the commission.  False if the hand was already settled."""
    done = await conn.fetchval("SELECT 1 FROM settlements WHERE hand_id = $1", hand_id)
    if done:
        return False
    entries: dict[str, int] = {HOUSE: settlement.commission}
    for seat, (player_id, amount) in holds.items():
        entries[held(player_id)] = -amount
        entries[available(player_id)] = amount + settlement.deltas.get(seat, 0)
    tx_id = await _post(conn, "settle", entries, hand_id=hand_id, memo="hand settlement")
    await conn.execute(
        "INSERT INTO settlements (hand_id, tx_id, pot, commission) VALUES ($1, $2, $3, $4)",
        hand_id,
        tx_id,
        settlement.pot,
        settlement.commission,
    )
    return True


@dataclass(frozen=True)
class Balance:
    available: int
    held: int
    complete: bool = True  # both accounts are there


async def balance(conn: asyncpg.Connection, player_id: str) -> Balance:
    """The player's two balances (0 for an account that is not there)."""
    return (await balances(conn, [player_id]))[player_id]


async def balances(conn: asyncpg.Connection, player_ids: list[str]) -> dict[str, Balance]:
    """Each player's two balances, found by their accounts' ids (the primary key), in
    one statement: no query here reads every player's accounts.  ``complete`` is false
    for a player without both accounts (a hold could not move there)."""
    ids = [a for p in player_ids for a in (available(p), held(p))]
    rows = await conn.fetch("SELECT id, balance FROM accounts WHERE id = ANY($1::text[])", ids)
    by = {r["id"]: int(r["balance"]) for r in rows}
    return {
        p: Balance(by.get(available(p), 0), by.get(held(p), 0), available(p) in by and held(p) in by)
        for p in player_ids
    }


#: The operator's audit of the ledger (:func:`summary`): one statement per figure, each
#: a single scan or join of the tables it reads, never a subquery run again for every
#: row (``/metrics`` runs them all on every scrape; tests/test_ledger_audit.py counts
#: the rows each reads).  The totals first, then the invariants, each 0 when it holds.
AUDIT: dict[str, str] = {
    # less withdrawals; the ids are EXTERNAL's and HOUSE's (tests/test_ledger_audit.py checks the figures)
    "deposited": "SELECT -COALESCE(SUM(balance), 0) FROM accounts WHERE id = 'external:deposits'",
    "players_available": "SELECT COALESCE(SUM(balance), 0) FROM accounts WHERE kind = 'available'",
    "players_held": "SELECT COALESCE(SUM(balance), 0) FROM accounts WHERE kind = 'held'",
    "house_commission": "SELECT COALESCE(SUM(balance), 0) FROM accounts WHERE id = 'house:commission'",
    "sum_of_accounts": "SELECT COALESCE(SUM(balance), 0) FROM accounts",
    "negative_accounts": "SELECT COUNT(*) FROM accounts WHERE kind <> 'external' AND balance < 0",
    "unbalanced_transactions": (
        "SELECT COUNT(*) FROM (SELECT tx_id FROM ledger_entries GROUP BY tx_id HAVING SUM(amount) <> 0) t"
    ),
    # every balance is the sum of its account's entries: the entries summed once, by account
    "balances_not_matching_entries": (
        "SELECT COUNT(*) FROM accounts a LEFT JOIN ("
        " SELECT account_id, SUM(amount) AS total FROM ledger_entries GROUP BY account_id) e ON e.account_id = a.id"
        " WHERE a.balance <> COALESCE(e.total, 0)"
    ),
    # A held balance is exactly the holds of the hands still in progress: a hold whose
    # hand has ended (or that no hand explains) is a fault, never a silent pass.
    "holds_without_a_live_hand": (
        "SELECT COUNT(*) FROM accounts a LEFT JOIN ("
        " SELECT hp.player_id, SUM(hp.hold) AS held FROM hand_players hp JOIN hands h ON h.id = hp.hand_id"
        " WHERE h.status IN ('seeding', 'playing') GROUP BY hp.player_id) live ON live.player_id = a.player_id"
        " WHERE a.kind = 'held' AND a.balance <> COALESCE(live.held, 0)"
    ),
    "ended_hands_not_settled": (
        "SELECT COUNT(*) FROM hands h LEFT JOIN settlements s ON s.hand_id = h.id"
        " WHERE h.status = 'ended' AND s.hand_id IS NULL"
    ),
}
INVARIANTS = (
    "sum_of_accounts",
    "negative_accounts",
    "unbalanced_transactions",
    "balances_not_matching_entries",
    "holds_without_a_live_hand",
    "ended_hands_not_settled",
)


async def summary(conn: asyncpg.Connection) -> dict[str, int | bool]:
    """The invariants, for the operator: accounts sum to zero, nothing negative
    but the external account, every transaction balanced, every balance its
    entries' sum, every hold a live hand's, every ended hand settled; and the money
    deposited is what players and the house hold (:data:`AUDIT`)."""
    out: dict[str, int | bool] = {name: int(await conn.fetchval(sql)) for name, sql in AUDIT.items()}
    out["ok"] = all(out[name] == 0 for name in INVARIANTS) and out["deposited"] == (
        out["players_available"] + out["players_held"] + out["house_commission"]
    )
    return out
