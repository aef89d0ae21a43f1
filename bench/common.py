"""What the benches that run real servers share: a free port, percentiles, the
``rummy-table serve`` command line, the operator's REST calls, waiting until no hand is
in progress, and the after-the-fact proof that nothing was lost (every hand ended or
voided by rule, every transcript and every bot's evidence verifies, each table's chain
has no gap and no fork, the ledger balances, no hand settled twice).

Used by bench/crash_drill.py, bench/cluster.py and bench/load.py.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import socket
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from service.bots import Bot  # noqa: E402
from service.wire import IDEMPOTENCY_HEADER, IDEMPOTENT_REPLAYED  # noqa: E402
from verifier.transcript import verify_transcript  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 ≤ q ≤ 1); NaN for no values."""
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, max(0, round(q * (len(v) - 1))))]


def serve_command(port: int, data_dir: Path, dsn: str | None, *extra: str, verbose: bool = False) -> list[str]:
    """One ``rummy-table serve`` worker with the fast clocks the drills use (``dsn``
    None: its embedded PostgreSQL in ``data_dir``)."""
    return [
        sys.executable,
        "-m",
        "service.cli",
        *(["-v"] if verbose else []),
        "serve",
        "--workers",
        "1",
        "--port",
        str(port),
        "--data-dir",
        str(data_dir),
        *(["--database-url", dsn] if dsn is not None else []),
        "--seed-seconds",
        "2",
        "--next-hand-delay",
        "0.3",
        "--resume-grace",
        "5",
        *extra,
    ]


async def operator_call(
    session: aiohttp.ClientSession, url: str, token: str, method: str, path: str, body: Any = None
) -> Any:
    """An operator's REST call; a 4xx or 5xx raises with the server's answer."""
    async with session.request(method, url + path, json=body, headers={"Authorization": f"Bearer {token}"}) as r:
        data = await r.json()
        if r.status >= 400:
            raise RuntimeError(f"{method} {path}: {r.status} {data}")
        return data


async def settle_down(dsn: str, timeout: float = 120) -> None:
    """Wait until no hand is in progress (every player left: the hands end)."""
    conn = await asyncpg.connect(dsn)
    try:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if not await conn.fetchval("SELECT COUNT(*) FROM hands WHERE status IN ('seeding', 'playing')"):
                return
            await asyncio.sleep(0.2)
        raise RuntimeError(f"hands are still in progress after {timeout} s")
    finally:
        await conn.close()


@dataclass
class Proof:
    """What :func:`prove_nothing_lost` found."""

    hands: list[asyncpg.Record] = field(default_factory=list)
    transcripts: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    evidence_items_checked: int = 0
    settled_twice: int = 0
    quarantined_records: int = 0
    ledger: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def voided(self) -> int:
        return sum(1 for h in self.hands if h["status"] == "void")

    @property
    def ended(self) -> int:
        return sum(1 for h in self.hands if h["status"] == "ended")


async def prove_nothing_lost(
    dsn: str, key: bytes, table_ids: Iterable[str], bots: Iterable[Bot], ledger: dict[str, Any]
) -> Proof:
    """Every hand ended or voided by rule (D33) with a transcript that verifies under
    the pinned ``key``; each table's hands numbered 1, 2, … and hand n+1 starting from
    hand n's head; every ack, signed head, header and player item a bot kept agrees with the
    published transcript; ``ledger`` (GET /api/ledger) balances; no hand settled twice."""
    proof = Proof(ledger=ledger)
    problems = proof.problems
    conn = await asyncpg.connect(dsn)
    try:
        proof.hands = await conn.fetch(
            "SELECT id, table_id, hand_no, status, started_at, ended_at, void_reason, transcript::text AS t "
            "FROM hands ORDER BY table_id, hand_no"
        )
        proof.settled_twice = int(
            await conn.fetchval(
                "SELECT COUNT(*) FROM (SELECT hand_id FROM ledger_tx WHERE kind = 'settle' "
                "GROUP BY hand_id HAVING COUNT(*) > 1) x"
            )
        )
        proof.quarantined_records = int(await conn.fetchval("SELECT COUNT(*) FROM hand_records_quarantine"))
    finally:
        await conn.close()
    for h in proof.hands:
        where = f"table {h['table_id']} hand {h['hand_no']}"
        if h["status"] not in ("ended", "void"):
            problems.append(f"{where} is still {h['status']}")
            continue
        if h["t"] is None:
            problems.append(f"{where} has no transcript")
            continue
        t = json.loads(h["t"])
        proof.transcripts[(h["table_id"], h["hand_no"])] = t
        report = verify_transcript(t, key)
        if report.failure is not None:
            problems.append(f"{where}: check {report.failure.check} failed: {report.failure.message}")
    for table in table_ids:
        numbers = sorted(n for (tid, n) in proof.transcripts if tid == table)
        if numbers != list(range(1, len(numbers) + 1)):
            problems.append(f"table {table}: hand numbers have a gap: {numbers}")
        for n in numbers[1:]:
            starts_from = proof.transcripts[(table, n)]["log"][0]["header"]["prev_head"]
            if starts_from != proof.transcripts[(table, n - 1)]["head"]:
                problems.append(f"table {table}: hand {n} does not start from hand {n - 1}'s head (a fork)")
    for b in bots:
        by_hand: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for item in b.evidence:
            body = item.get("body", {})
            by_hand.setdefault((body.get("table_id"), body.get("hand_no")), []).append(item)
        for hand, items in by_hand.items():
            t = proof.transcripts.get(hand)
            if t is None:
                problems.append(f"bot {b.player_id} holds evidence of {hand}, which has no transcript")
                continue
            report = verify_transcript(t, key, items)
            proof.evidence_items_checked += len(items)
            if report.failure is not None:
                problems.append(f"bot {b.player_id}, {hand}: {report.failure.check}: {report.failure.message}")
    if not ledger.get("ok"):
        problems.append(f"the ledger does not balance: {ledger}")
    if proof.settled_twice:
        problems.append(f"{proof.settled_twice} hands were settled twice")
    return proof


@dataclass
class Cashier:
    """An operator depositing 1 HT to one player again and again all through the
    faults, each deposit sent with its own Idempotency-Key until it is answered 200
    (docs/api.md, "Sending a command again"): afterwards the player's balance must
    have moved by exactly the deposits answered — none lost, none twice — and no
    answer may be anything but 200 or 503."""

    url: str
    token: str
    answer_s: float = 45.0  # a deposit's answer waited for at most this long
    player: str = ""
    start: int = 0
    answered: int = 0
    replayed: int = 0  # answered from the store: the first sending's answer was lost
    codes: collections.Counter[str] = field(default_factory=collections.Counter)  # the answers sent again after
    problems: list[str] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    async def open(self, session: aiohttp.ClientSession) -> Cashier:
        p = await operator_call(
            session, self.url, self.token, "POST", "/api/players", {"name": "cashier", "deposit": 1}
        )
        self.player, self.start = p["id"], int(p["available"])
        self.task = asyncio.create_task(self.run(session))
        return self

    async def run(self, session: aiohttp.ClientSession) -> None:
        while not self.stop.is_set():
            key = "cashier-" + os.urandom(12).hex()
            while True:  # the same key until it is answered: the server moves it at most once
                status, code, replayed = await self.deposit(session, key)
                if status == 200:
                    self.answered += 1
                    self.replayed += replayed
                    break
                self.codes[code] += 1
                if status not in (0, 503):
                    self.problems.append(f"a deposit was answered {status} {code}")
                    break
                await asyncio.sleep(0.5)
            await asyncio.sleep(0.2)

    async def deposit(self, session: aiohttp.ClientSession, key: str) -> tuple[int, str, bool]:
        headers = {"Authorization": f"Bearer {self.token}", IDEMPOTENCY_HEADER: key}
        try:
            async with session.post(
                f"{self.url}/api/players/{self.player}/deposit",
                json={"amount": 1},
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=self.answer_s),
            ) as r:
                body = await r.json()
                code = str(body.get("error", {}).get("code", "")) if isinstance(body, dict) else ""
                return r.status, code or str(r.status), r.headers.get(IDEMPOTENT_REPLAYED) == "true"
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError):
            return 0, "no_answer", False

    async def close(self, session: aiohttp.ClientSession) -> dict[str, Any]:
        """Stop after the deposit in hand is answered; the balance against the count."""
        self.stop.set()
        if self.task is not None:
            await asyncio.wait_for(self.task, self.answer_s * 4)
        me = await operator_call(session, self.url, self.token, "GET", f"/api/admin/players/{self.player}")
        moved = int(me["available"]) - self.start
        if moved != self.answered:
            self.problems.append(f"the cashier's {self.answered} deposits answered moved the balance by {moved}")
        return {
            "deposits_answered": self.answered,
            "balance_moved": moved,
            "answered_from_the_store": self.replayed,
            "sent_again_after": dict(self.codes),
            "problems": self.problems,
        }
