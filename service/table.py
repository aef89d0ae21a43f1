"""One task per table: it alone changes the table, serialising every command and every
clock expiry through the verifier's recorder.

Every accepted move is committed to PostgreSQL before anything about it is sent to
anyone.  The table trusts its memory only as long as its writes succeed: when one
fails, or the database disagrees with it, the table pauses — no clock runs — and
reloads itself from the database by the path a restart takes (:meth:`_load`, D32),
answering the move that was in flight by what the database holds: stored and
announced, or refused with ``unavailable``.  A hand that cannot be rebuilt is voided
by rule (D33).  The hand itself lives in :class:`service.handrun.HandRun`; telling
players in :mod:`service.telling`; the rows in :mod:`service.handstore`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from service import handstore, ledger, store
from service.cluster import Fenced, Lease, fenced
from service.db import connection
from service.dealing import Dealer, NotEnough, Settled, TableState
from service.handrun import HandRun, restore
from service.keys import ServerKeys
from service.metrics import Metrics
from service.telling import Teller, iso
from service.writer import RecordWriter
from verifier.chain import commit_move, reveal_move
from verifier.errors import RuleError
from verifier.hand import Event, Leave, TimeOut, action_from_json, action_to_json, seat_view
from verifier.record import RestoreError
from verifier.settle import hold_amount

log = logging.getLogger("rummy.table")
RETRY_FIRST = 0.2  # seconds before the first reload attempt; doubles up to RETRY_MAX
RETRY_MAX = 2.0


class ClientError(RuleError):
    """A typed error for one client, from the server rather than the rules kernel
    (a seat taken, a message malformed…); nothing changed."""

    def __init__(self, code: str, message: str, rule: str | None = None) -> None:
        super().__init__(code, message, rule=rule)


def moved() -> ClientError:
    return ClientError("moved", "the table moved to another server; reconnect and join it again")


@contextlib.asynccontextmanager
async def _transaction(pool: asyncpg.Pool) -> Any:
    async with connection(pool) as conn, conn.transaction():
        yield conn


def unavailable() -> ClientError:
    return ClientError(
        "unavailable", "the table cannot reach its database right now; nothing was changed, try again", "D32"
    )


@dataclass
class Settings:
    commit_seconds: float = 10.0
    reveal_seconds: float = 10.0
    next_hand_delay: float = 2.0
    queue_size: int = 256
    resume_grace: float = 10.0  # D32
    group_commit_seconds: float = 0.002  # records of many tables that arrive this close go in one statement


@dataclass(frozen=True)
class Judged:
    """A move the table judged (docs/fairness.md §15): what its signed ack names,
    whichever way the move is answered."""

    hand: HandRun
    seat: int
    move: dict[str, Any]
    prev: str
    psig: str
    arrived: int  # the table's clock when it judged the move (ms)
    i: int  # the last record of the log then (a move refused after a failed write names it, not the lost one)
    clock: tuple[str, int]  # the window or turn that ran then (HandRun.clock)

    def ack(self, code: str | None = None) -> dict[str, Any]:
        """Accepted (``code`` None: a commit or a reveal, acknowledged at the last
        record) or refused with ``code``; an accepted action's ack is made with its
        record (:meth:`service.dealing.Dealer.apply`)."""
        rec = self.hand.recorder
        return rec.ack(self.seat, self.move, self.prev, self.psig, arrived=self.arrived, code=code, i=self.i)


@dataclass
class Command:
    kind: str
    player_id: str
    payload: dict[str, Any]
    reply: asyncio.Future[dict[str, Any]]
    #: after an unknown outcome: the reply if the command's effect is stored, else None
    settled: Settled | None = field(default=None)
    #: the move, once the table has judged it: every answer then carries an ack
    judged: Judged | None = field(default=None)


class TableActor:
    """The table task: commands in order, the clocks, reloading; the hand's steps are
    :class:`service.dealing.Dealer`'s, the messages :class:`service.telling.Teller`'s."""

    def __init__(
        self,
        table_id: str,
        pool: asyncpg.Pool,
        keys: ServerKeys,
        settings: Settings,
        metrics: Metrics | None = None,
        lease: Lease | None = None,
        on_lost: Callable[[str, bool], None] | None = None,
        writer: RecordWriter | None = None,
        loads: asyncio.Semaphore | None = None,
    ) -> None:
        self.table_id = table_id
        # Shared by the process's tables: how many load at once.  A node that takes
        # a thousand tables at once (a start, a takeover) loads them a few at a time
        # instead of having a thousand wait for the pool and time out together.
        self._loads = loads
        self.metrics = metrics
        self.lease = lease
        self._on_lost = on_lost
        self.handoff_requested = False
        self.pool = pool
        self.keys = keys
        self.settings = settings
        self.commands: asyncio.Queue[Command | None] = asyncio.Queue()
        self.watchers = Teller(table_id)
        self.t = TableState(table_id)
        self.dealing = Dealer(
            self.t,
            pool,
            keys,
            self.watchers,
            self.fence,
            commit_seconds=settings.commit_seconds,
            reveal_seconds=settings.reveal_seconds,
            metrics=metrics,
            writer=writer,
            lease=lease,
        )
        self.next_start: float | None = None
        self.paused = True  # until loaded
        self.task: asyncio.Task[None] | None = None
        self.loaded = asyncio.Event()
        self._stopping = False

    @property
    def hand(self) -> HandRun | None:
        return self.t.hand

    def fence(self) -> contextlib.AbstractAsyncContextManager[asyncpg.Connection]:
        """A transaction in which this node's lease on the table holds (service.cluster)."""
        if self.lease is None:
            return _transaction(self.pool)
        return fenced(self.pool, self.lease)

    async def _store_seed(self, kind: str, hand: HandRun, seat: int, value: bytes, psig: str) -> None:
        """A commitment or a seed, stored in one fenced statement."""
        lease = (self.table_id, self.lease.owner, self.lease.epoch) if self.lease else (self.table_id, "", -1)
        async with connection(self.pool) as conn:
            held = await handstore.store_seed(conn, kind, lease, hand.hand_id, seat, value, psig)
        if not held:
            raise Fenced(f"table {self.table_id}: this node's lease was taken over")

    def request_handoff(self) -> None:
        """Hand the table to another node as soon as its hand in progress is over."""
        self.handoff_requested = True
        self.commands.put_nowait(None)

    # -- life --------------------------------------------------------------------------
    def start(self) -> None:
        self.task = asyncio.create_task(self.run(), name=f"table-{self.table_id}")

    async def stop(self, timeout: float = 1.0) -> None:
        """Stop the clock and the task; the command in hand is finished first if it
        finishes within ``timeout`` (a write is never cut in half on purpose)."""
        self._stopping = True
        self.commands.put_nowait(None)
        if self.task is not None:
            done, _ = await asyncio.wait({self.task}, timeout=timeout)
            if not done:
                self.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self.task
        while not self.commands.empty():
            cmd = self.commands.get_nowait()
            if cmd is not None and not cmd.reply.done():
                cmd.reply.set_exception(ClientError("shutting_down", "the server is shutting down"))

    def enqueue(self, kind: str, player_id: str, payload: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        """The future answer to a command; the table task answers in order."""
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        if self._stopping:
            fut.set_exception(ClientError("shutting_down", "the server is shutting down"))
        else:
            self.commands.put_nowait(Command(kind, player_id, payload, fut))
        return fut

    async def submit(self, kind: str, player_id: str, payload: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
        return await asyncio.wait_for(asyncio.shield(self.enqueue(kind, player_id, payload)), timeout)

    async def run(self) -> None:
        await self._reload(None)
        while not self._stopping:
            wait = self._wait()
            try:
                cmd = await asyncio.wait_for(self.commands.get(), wait)
            except TimeoutError:
                cmd = None
            if self._stopping:
                break
            try:
                if cmd is None:
                    if wait is not None and (self._wait() or 0) <= 0:  # a clock ran out
                        await self._on_deadline()
                else:
                    await self._run_command(cmd)
                await self._advance()
                if self.handoff_requested and self.t.hand is None:
                    self._let_go("handed over between hands", release=True)
                    return
            except asyncio.CancelledError:
                raise
            except Fenced as e:  # another node holds the table now: never write for it again
                if cmd is not None:
                    _answer(cmd, error=moved())
                self._let_go(str(e))
                return
            except Exception as e:  # the database failed or disagrees: memory is no longer trusted
                log.warning("table %s: %s; reloading from the database", self.table_id, _describe(e))
                if self.metrics is not None:
                    self.metrics.reloads.labels("clock" if cmd is None else cmd.kind).inc()
                await self._forget_connections(e)
                await self._reload(cmd)

    def _wait(self) -> float | None:
        due = self.hand.deadline if self.hand is not None else self.next_start
        return None if due is None else max(0.0, due - time.time())

    async def _run_command(self, cmd: Command) -> None:
        try:
            result = await self._handle(cmd)
        except RuleError as e:  # the kernel's, or the server's own ClientError: nothing changed
            _answer(cmd, error=_refused(cmd, e))
        except ledger.LedgerError as e:
            _answer(cmd, error=ClientError(e.code, e.message, "D20"))
        else:
            _answer(cmd, result=result)

    # -- reloading (restart, outage, conflict) ----------------------------------------
    async def _reload(self, pending: Command | None) -> None:
        """Pause, reload the table from the database until that works, then answer the
        command that was in flight by what is stored, and tell everyone (D32)."""
        first = not self.loaded.is_set()
        old = self.hand
        self.paused = True
        if not first:
            self.watchers.broadcast(
                {
                    "type": "paused",
                    "table_id": self.table_id,
                    "message": "the table cannot store right now; no clock runs until it is back",
                }
            )
        delay = RETRY_FIRST
        while not self._stopping:
            try:
                async with self._loads or contextlib.nullcontext():
                    if self._stopping:
                        break
                    await self._load(trusted=old)
                break
            except asyncio.CancelledError:
                raise
            except Fenced as e:
                if pending is not None:
                    _answer(pending, error=moved())
                self._let_go(str(e))
                return
            except Exception as e:
                log.warning("table %s: cannot load (%s); retrying in %.1f s", self.table_id, _describe(e), delay)
                await self._forget_connections(e)
                self._refuse_queued()
                # with jitter: a thousand tables that failed together do not retry together
                await asyncio.sleep(delay * (0.5 + secrets.randbelow(1000) / 1000))
                delay = min(RETRY_MAX, delay * 2)
        if self._stopping:
            return
        self.paused = False
        self.loaded.set()
        if old is not None and self.hand is not None and self.hand.hand_id == old.hand_id and old.owed:
            self.hand.owed.update(old.owed)  # D35: what the house owed before this reload, it still owes
            self.hand.arm()
        if pending is not None and not pending.reply.done():
            result = pending.settled() if pending.settled is not None else None
            if result is not None:
                _answer(pending, result=result)
            else:
                _answer(pending, error=_refused(pending, unavailable()))
                self._owe(pending)
        if old is not None and (self.hand is None or self.hand.hand_id != old.hand_id):
            await self._tell_ended(old)
        if not first:
            for player_id, c in list(self.watchers.by_player.items()):
                c.push({"type": "resumed", "table_id": self.table_id, "snapshot": self.snapshot_for(player_id)})
        self._schedule_start()

    def _owe(self, cmd: Command) -> None:
        """D35: a move the table judged and could not store (``unavailable``) leaves
        its seat its whole window from the move's arrival — the turn, or the seed
        window — in the hand as reloaded, if that window is still the one running.
        (A move the rules refuse owes nothing: the verifier finds the refusal
        justified, docs/fairness.md §15.7.)"""
        j, hand = cmd.judged, self.hand
        if j is None or hand is None or hand.hand_id != j.hand.hand_id or hand.clock != j.clock:
            return  # another hand, or its window or turn is over: nothing is owed any more
        hand.owe(j.seat, j.arrived)

    def _let_go(self, why: str, *, release: bool = False) -> None:
        """This node no longer serves the table: tell its clients to reconnect (they
        are sent to the new owner), answer what is queued, and stop; ``release`` the
        lease when this node hands the table over (a fenced table's is already gone)."""
        log.warning("table %s: letting go (%s)", self.table_id, why)
        self._stopping = True
        self.paused = True
        self.watchers.broadcast(
            {"type": "moved", "table_id": self.table_id, "message": "the table moved to another server; reconnect"}
        )
        self.watchers.close_all()
        while not self.commands.empty():
            cmd = self.commands.get_nowait()
            if cmd is not None:
                _answer(cmd, error=moved())
        if self._on_lost is not None:
            self._on_lost(self.table_id, release)

    async def _forget_connections(self, e: BaseException) -> None:
        """After a lost connection every pooled connection is suspect (PostgreSQL may
        have restarted): have the pool replace them all, rather than meet each broken
        one in turn."""
        if isinstance(e, OSError | asyncpg.PostgresConnectionError | asyncpg.InterfaceError):
            await self.pool.expire_connections()

    def _refuse_queued(self) -> None:
        while not self.commands.empty():
            cmd = self.commands.get_nowait()
            if cmd is not None:
                _answer(cmd, error=unavailable())

    async def _load(self, trusted: HandRun | None = None) -> None:
        """The table as the database has it; an unfinished hand is rebuilt through the
        recorder, whatever its phase (D32), or voided by rule (D33).  ``trusted``: the
        hand as this process had it, whose checked signatures need no second check."""
        async with connection(self.pool) as conn:
            row = await store.table_row(conn, self.table_id)
            if row is None:
                raise RuntimeError(f"table {self.table_id} is not in the database")
            seats = await store.seats_of(conn, self.table_id)
            stored = await handstore.load_hand(conn, self.table_id)
        t = self.t
        t.rules = store.rules_of(row)
        t.max_away = int(row["max_away_hands"])
        t.head = str(row["head"])
        t.dealer = row["dealer"]
        t.next_hand_no = int(row["next_hand_no"])
        t.status = str(row["status"])
        t.seats = seats
        t.hand = None
        self.next_start = None
        if stored is None:
            return
        try:
            restored = restore(
                stored,
                self.keys,
                self.table_id,
                grace=self.settings.resume_grace,
                trusted=trusted.recorder if trusted is not None and trusted.hand_id == stored.hand_id else None,
            )
        except RestoreError as e:
            await self.dealing.void_unreadable(stored, f"the stored hand cannot be read: {e}")
            return
        t.hand = run = restored.run
        if restored.void_reason is not None and not run.recorder.voided:
            log.warning("table %s: hand %d is voided: %s", self.table_id, run.hand_no, restored.void_reason)
            if restored.keep < len(stored.records):
                async with self.fence() as conn:
                    moved = await handstore.quarantine_after(conn, run.hand_id, restored.keep)
                log.warning("table %s: hand %d: %d stored records set aside", self.table_id, run.hand_no, moved)
            await self.dealing.void(run, restored.void_reason)
        elif run.phase == "finishing":
            await self.dealing.finish(run)
        else:
            log.info("table %s: hand %d resumed in the %s phase", self.table_id, run.hand_no, run.phase)

    async def _tell_ended(self, old: HandRun) -> None:
        """A hand that ended while the table could not tell anyone (its end was stored,
        the reply was lost): tell its result now."""
        async with connection(self.pool) as conn:
            row = await handstore.ended_hand(conn, old.hand_id)
        if row is None or row["transcript"] is None:
            return
        self.watchers.tell_result(old, json.loads(row["transcript"]))

    # -- clocks ----------------------------------------------------------------------
    async def _close_if_closing(self) -> None:
        """A closing table closes once its hand is over: every seat is stood up."""
        t = self.t
        if t.status != "closing" or t.hand is not None:
            return
        async with self.fence() as conn:
            await conn.execute("DELETE FROM seats WHERE table_id = $1", self.table_id)
            await conn.execute("UPDATE tables SET status = 'closed' WHERE id = $1", self.table_id)
        t.status = "closed"
        t.seats = {}
        self.watchers.tell_seats(t.seats)
        self.watchers.broadcast({"type": "closed", "table_id": self.table_id, "message": "the table is closed"})

    def _schedule_start(self) -> None:
        t = self.t
        if t.status != "open":
            self.next_start = None
        elif t.hand is None and t.rules is not None and len(t.seats) >= t.rules.min_players:
            if self.next_start is None:
                self.next_start = time.time() + self.settings.next_hand_delay
        elif self.hand is None:
            self.next_start = None

    async def _on_deadline(self) -> None:
        hand = self.hand
        if hand is None:
            self.next_start = None
            try:
                await self.dealing.start(self.watchers.live())
            except NotEnough:
                self.next_start = time.time() + max(1.0, self.settings.next_hand_delay)
            return
        phase = hand.phase
        if phase == "commit":
            await self.dealing.close_commits(hand)
        elif phase == "reveal":
            await self.dealing.close_reveals(hand)
        elif phase == "deal":
            await self.dealing.deal(hand)
        elif phase == "play":
            state = hand.recorder.state
            assert state is not None
            await self.dealing.apply(hand, TimeOut(state.turn), None)  # D16: the clock moves for the seat
        else:
            await self.dealing.finish(hand)

    async def _advance(self) -> None:
        """Move the hand on when nobody needs to be waited for."""
        hand = self.hand
        if hand is not None and hand.phase == "commit" and set(hand.commits) == set(hand.players):
            await self.dealing.close_commits(hand)
        hand = self.hand
        if hand is not None and hand.phase == "reveal":
            rec = hand.recorder
            if all(rec.commit_of(s) is None or s in hand.seeds for s in hand.players):
                await self.dealing.close_reveals(hand)
        await self._close_if_closing()
        self._schedule_start()

    # -- commands ----------------------------------------------------------------------
    async def _handle(self, cmd: Command) -> dict[str, Any]:
        handler = {
            "sit": self._sit,
            "leave": self._leave,
            "commit": self._commit,
            "reveal": self._reveal,
            "action": self._action,
            "snapshot": self._snapshot,
            "void": self._operator_void,
            "close": self._operator_close,
            "stand": self._operator_stand,
        }.get(cmd.kind)
        if handler is None:
            raise ClientError("bad_message", f"unknown command {cmd.kind!r}")
        return await handler(cmd)

    async def _sit(self, cmd: Command) -> dict[str, Any]:
        t = self.t
        assert t.rules is not None
        player_id = cmd.player_id
        if t.status != "open":
            raise ClientError("table_closed", f"this table is {t.status}: it deals no new hand")
        if player_id in t.seats.values():
            raise ClientError("already_seated", "you already have a seat at this table")
        seat = cmd.payload.get("seat")
        free = [s for s in range(t.rules.seats) if s not in t.seats]
        if seat is None:
            if not free:
                raise ClientError("table_full", "every seat is taken")
            seat = free[0]
        if not isinstance(seat, int) or not 0 <= seat < t.rules.seats:
            raise ClientError("bad_message", f"seat must be an integer 0…{t.rules.seats - 1}")
        if seat in t.seats:
            raise ClientError("seat_taken", f"seat {seat} is taken")
        need = hold_amount(t.rules.point_value)
        result = {"seat": seat, "table_id": self.table_id}
        cmd.settled = lambda: result if t.seats.get(seat) == player_id else None
        async with self.fence() as conn:
            if await conn.fetchval("SELECT public_key FROM players WHERE id = $1", player_id) is None:
                raise ClientError(
                    "no_player_key", "register your public key (PUT /api/me/key) before you sit: you sign your moves"
                )
            bal = await ledger.balance(conn, player_id)
            if bal.available < need:
                raise ClientError(
                    "insufficient_balance",
                    f"sitting needs {need} HT available (130 × point value), you have {bal.available}",
                    "D20",
                )
            try:
                await conn.execute(
                    "INSERT INTO seats (table_id, seat, player_id) VALUES ($1, $2, $3)", self.table_id, seat, player_id
                )
            except asyncpg.UniqueViolationError:
                raise ClientError("seat_taken", f"seat {seat} is taken") from None
        t.seats[seat] = player_id
        self.watchers.tell_seats(t.seats)
        return result

    async def _leave(self, cmd: Command) -> dict[str, Any]:
        player_id = cmd.player_id
        t = self.t
        seat = next((s for s, p in t.seats.items() if p == player_id), None)
        if seat is None:
            raise ClientError("not_seated", "you have no seat at this table")
        hand = self.hand
        result: dict[str, Any] = {"left": seat, "charged": False}
        if hand is not None and hand.seat_of(player_id) is not None and not hand.recorder.ended:
            state = hand.recorder.state
            if state is None:  # D36: leaving in the seed phases is no move of the hand
                return await self._stand_after_hand(seat, result)
            if state.seat(seat).status.value == "playing":
                psig = _signed(cmd.payload, hand)
                cmd.judged = self._judged(hand, seat, {"kind": "leave", "seat": seat}, psig["prev"], psig["sig"])
                done = await self.dealing.apply(hand, Leave(seat), psig)  # D15: 40 points
                result = {"left": seat, "charged": True, "ack": done["ack"]}
        cmd.settled = lambda: result if seat not in t.seats else None
        async with self.fence() as conn:
            await conn.execute("DELETE FROM seats WHERE table_id = $1 AND player_id = $2", self.table_id, player_id)
        t.seats.pop(seat, None)
        self.watchers.tell_seats(t.seats)
        return result

    async def _stand_after_hand(self, seat: int, result: dict[str, Any]) -> dict[str, Any]:
        """D36: a player who leaves during the seed phases keeps the seat until the hand
        ends (its seeds missed, then the clock playing for it, D21, D29, D16); the seat
        is stood up as the hand ends."""
        async with self.fence() as conn:
            await conn.execute(
                "UPDATE seats SET stand_after_hand = true WHERE table_id = $1 AND seat = $2", self.table_id, seat
            )
        return {**result, "after_hand": True}

    def _hand_for(self, cmd: Command) -> tuple[HandRun, int]:
        """The hand a move is for, and the mover's seat in it; a move for no hand the
        table is dealing, or from no seat of it, is refused unjudged (no ack, §15)."""
        hand = self.hand
        if hand is None:
            raise ClientError("no_hand", "no hand is being dealt at this table")
        if cmd.payload.get("hand_no") != hand.hand_no:
            raise ClientError("wrong_hand", f"the hand being dealt is number {hand.hand_no}")
        seat = hand.seat_of(cmd.player_id)
        if seat is None:
            raise ClientError("not_in_hand", "you take no part in this hand")
        return hand, seat

    @staticmethod
    def _judged(hand: HandRun, seat: int, move: dict[str, Any], prev: str, psig: str) -> Judged:
        i = len(hand.recorder.records) - 1
        return Judged(hand, seat, move, prev, psig, arrived=hand.next_t(), i=i, clock=hand.clock)

    @staticmethod
    def _in_phase(hand: HandRun, phase: str) -> None:
        if hand.phase != phase:
            raise ClientError("wrong_phase", f"this needs the {phase} phase; the hand is in the {hand.phase} phase")

    async def _commit(self, cmd: Command) -> dict[str, Any]:
        hand, seat = self._hand_for(cmd)
        commit, psig = bytes.fromhex(cmd.payload["commit"]), str(cmd.payload["sig"])
        rec = hand.recorder
        judged = cmd.judged = self._judged(hand, seat, commit_move(seat, commit), str(rec.records[0]["h"]), psig)
        self._in_phase(hand, "commit")
        earlier = hand.commits.get(seat)
        if earlier is not None and earlier != (commit, psig):
            raise ClientError("already_committed", "your commitment is already in")
        rec.check_commit(seat, commit, psig)
        result = {"committed": seat, "ack": judged.ack()}
        if earlier is not None:
            return result  # the same commitment again: acknowledged again
        cmd.settled = lambda: result if self.hand is not None and seat in self.hand.commits else None
        await self._store_seed("commit", hand, seat, commit, psig)
        hand.commits[seat] = (commit, psig)
        return result

    async def _reveal(self, cmd: Command) -> dict[str, Any]:
        hand, seat = self._hand_for(cmd)
        seed, psig = bytes.fromhex(cmd.payload["seed"]), str(cmd.payload["sig"])
        rec = hand.recorder
        prev = str(rec.records[1]["h"]) if len(rec.records) > 1 else rec.head  # before record 1: no such prev
        judged = cmd.judged = self._judged(hand, seat, reveal_move(seat, seed), prev, psig)
        self._in_phase(hand, "reveal")
        earlier = hand.seeds.get(seat)
        if earlier is not None and earlier != (seed, psig):
            raise ClientError("already_revealed", "your seed is already in")
        rec.check_reveal(seat, seed, psig)
        result = {"revealed": seat, "ack": judged.ack()}
        if earlier is not None:
            return result
        cmd.settled = lambda: result if self.hand is not None and seat in self.hand.seeds else None
        await self._store_seed("reveal", hand, seat, seed, psig)
        hand.seeds[seat] = (seed, psig)
        return result

    async def _action(self, cmd: Command) -> dict[str, Any]:
        hand, seat = self._hand_for(cmd)
        action = action_from_json({**cmd.payload["action"], "seat": seat})
        psig = {"prev": cmd.payload["prev"], "sig": cmd.payload["sig"]}
        cmd.judged = self._judged(hand, seat, action_to_json(action), psig["prev"], psig["sig"])
        self._in_phase(hand, "play")
        return await self.dealing.apply(hand, action, psig, lambda settled: setattr(cmd, "settled", settled))

    async def _snapshot(self, cmd: Command) -> dict[str, Any]:
        since = cmd.payload.get("since")
        return self.snapshot_for(cmd.player_id, events_since=(since["hand_no"], since["i"]) if since else (0, -1))

    async def _operator_void(self, cmd: Command) -> dict[str, Any]:
        hand = self.hand
        if hand is None or hand.hand_id != cmd.payload.get("hand_id"):
            raise ClientError("no_such_hand", "that hand is not in progress at this table")
        if hand.phase == "finishing":
            raise ClientError("hand_over", "the hand has ended; it is being settled")
        reason = f"voided by the operator: {cmd.payload['reason']} (D33)"
        await self.dealing.void(hand, reason)
        return {"voided": hand.hand_id, "reason": reason}

    async def _operator_close(self, cmd: Command) -> dict[str, Any]:
        """No new hand; the hand in progress finishes; then the table closes."""
        t = self.t
        if t.status == "open":
            async with self.fence() as conn:
                await conn.execute("UPDATE tables SET status = 'closing' WHERE id = $1", self.table_id)
            t.status = "closing"
            cmd.settled = lambda: {"id": self.table_id, "status": t.status}
        await self._close_if_closing()
        return {"id": self.table_id, "status": t.status}

    async def _operator_stand(self, cmd: Command) -> dict[str, Any]:
        """Stand a seat up: now, or — its player being in the hand in progress — as
        that hand ends (the hand goes on; the clock moves for an absent seat)."""
        t = self.t
        seat = int(cmd.payload["seat"])
        player_id = t.seats.get(seat)
        if player_id is None:
            raise ClientError("not_seated", f"seat {seat} is empty")
        hand = t.hand
        later = hand is not None and hand.seat_of(player_id) is not None and not hand.recorder.ended
        async with self.fence() as conn:
            if later:
                await conn.execute(
                    "UPDATE seats SET stand_after_hand = true WHERE table_id = $1 AND seat = $2", self.table_id, seat
                )
            else:
                await conn.execute("DELETE FROM seats WHERE table_id = $1 AND seat = $2", self.table_id, seat)
        if not later:
            del t.seats[seat]
            self.watchers.tell_seats(t.seats)
        return {"table_id": self.table_id, "seat": seat, "player_id": player_id, "now": not later}

    def snapshot_for(self, player_id: str, events_since: tuple[int, int] | None = None) -> dict[str, Any]:
        """Everything a (re)connecting player may see now: the table, and the hand in
        progress from their seat's point of view.  With ``events_since`` (hand_no, i),
        the hand's events after record i — all of them when that is another hand — as
        the seat may see them, each with its record's ``i``: what happened while the
        client was away."""
        t = self.t
        assert t.rules is not None
        out: dict[str, Any] = {
            "table_id": self.table_id,
            "rules": t.rules.to_json(),
            "seats": {str(s): p for s, p in sorted(t.seats.items())},
            "paused": self.paused,
            "hand": None,
        }
        hand = self.hand
        if hand is not None and hand.recorder.records:
            rec = hand.recorder
            seat = hand.seat_of(player_id)
            i = len(rec.records) - 1
            out["hand"] = {
                "hand_no": hand.hand_no,
                "hand_id": hand.hand_id,
                "phase": hand.phase,
                "seat": seat,
                "deadline": iso(hand.deadline),
                "header": rec.records[0],
                "commitments": rec.records[1] if len(rec.records) > 1 else None,
                "committed": None if seat is None else (seat in hand.commits or rec.commit_of(seat) is not None),
                "revealed": seat in hand.seeds if seat is not None else None,
                "i": i,
                "h": rec.head,
                "head": rec.head_evidence(i),
                "view": None if rec.state is None else seat_view(rec.state, seat),
            }
            if events_since is not None:
                after = events_since[1] if events_since[0] == hand.hand_no else -1
                out["hand"]["events"] = [
                    {"i": r["i"], **Event.from_json(e).for_seat(seat)}
                    for r in rec.records[after + 1 :]
                    for e in r.get("events", ())
                ]
        return out


def _answer(cmd: Command, *, result: dict[str, Any] | None = None, error: Exception | None = None) -> None:
    if cmd.reply.done():
        return
    if error is not None:
        cmd.reply.set_exception(error)
    else:
        cmd.reply.set_result(result or {})


def _signed(payload: dict[str, Any], hand: HandRun) -> dict[str, Any]:
    """A leave from the deal on is a move: it carries the player's signature over the
    newest record (§9)."""
    if payload.get("hand_no") != hand.hand_no or "prev" not in payload or "sig" not in payload:
        raise ClientError(
            "signature_required",
            f"you are in hand {hand.hand_no}: leaving is a move, signed over the newest record of the hand "
            "(hand_no, prev, sig)",
        )
    return {"prev": payload["prev"], "sig": payload["sig"]}


def _refused(cmd: Command, error: RuleError) -> RuleError:
    """A refusal of a move the table judged carries the server's signed ack (§15)."""
    if cmd.judged is not None:
        error.ack = cmd.judged.ack(error.code)  # type: ignore[attr-defined]
    return error


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:300]
