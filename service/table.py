"""The shell around a table's core: it alone does the table's I/O.

The table's rules live in :class:`service.tablecore.core.TableCore`, a pure state
machine (``step(input, now) -> effects``).  This shell owns the table's input queue,
its timer, its store ops (:mod:`service.tablestore`, through the group commit) and its
sockets (:mod:`service.telling`), and feeds back what happened as inputs: a command,
a tick, a store op's outcome, a lease event, a player's connection coming or going.
Effects are carried out in the order the core gives them; a write's tells come only
after its outcome is fed back (stored before told).  Time comes from an injectable
clock: the core never reads one.  Store ops run in tasks of their own, so the table
keeps its beat while a write hangs (D37: a write unanswered for a while pauses the
table; its clock never runs while one is pending).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import asyncpg

from service import stallmeter
from service.cluster import Lease
from service.handrun import HandRun
from service.inbox import Inbox, Timeout
from service.keys import ServerKeys
from service.metrics import Metrics
from service.steadyclock import STEADY
from service.tablecore import io
from service.tablecore.core import TableCore
from service.tablecore.errors import ClientError, moved, shutting_down, unavailable
from service.tablecore.state import CoreConfig, TableFacts
from service.tablestore import Batched, TableStore, outcome
from service.telling import Connection, Route, Teller, answer
from service.writer import GroupCommit
from verifier.errors import RuleError
from verifier.schema import WINDOW_MS_MIN

__all__ = ["ClientError", "Settings", "TableActor", "moved", "unavailable"]

log = logging.getLogger("rummy.table")
FAILED: Final = "the table's task failed"  # why a table is let go after a step raised (TableActor._ended)


#: D37: the least reach after a fault.  A client of a node that stood still hears
#: nothing, not even `moved`: the page and the bots take up to about 10 s to give a
#: silent socket up and to ask another node (docs/api.md, "Silence"), then a handshake
#: and a join.  A grace set shorter (``--resume-grace``) must not make the reach
#: shorter than that, or the new owner's clock charges players still on their way.
REACH_FLOOR_SECONDS: Final = 12.0

#: D37: the turns of the loop a wake for the clock gives the sockets' moves first: a
#: frame read takes two (the drill's 64 ms stops all came in two), the rest is margin
READ_FIRST_HOPS: Final = 4


@dataclass
class Settings:
    commit_seconds: float = 10.0
    reveal_seconds: float = 10.0
    next_hand_delay: float = 2.0
    queue_size: int = 256
    resume_grace: float = 10.0  # D32, D37
    group_commit_seconds: float = 0.002  # writes that arrive this close go in one statement (an idle lane: at once)
    #: D37: how long a client may take to find the table again (default: the grace, and
    #: never less than REACH_FLOOR_SECONDS)
    reach_seconds: float | None = None
    away_seconds: float = 120.0  # D34: a seat away this long at a table too few are connected to deal at stands up
    write_hung_seconds: float = 2.0  # D37: a write unanswered this long pauses the table
    beat_seconds: float = 1.0  # the shell ticks its core at least this often (a longer gap: the node stood still)
    retry_max_seconds: float = 5.0  # the ceiling of the backoff between reloads
    # The tables' clock (seconds): the wall clock run on by the monotonic clock
    # (service.steadyclock: a step of the system clock moves no table), or a test's
    # (tests/skipclock.py), which skips ahead instead of waiting for a turn or a window.
    clock: Callable[[], float] = field(default=STEADY, compare=False, repr=False)

    def core(self) -> CoreConfig:
        def ms(s: float) -> int:
            return int(s * 1000)

        reach = max(self.resume_grace, REACH_FLOOR_SECONDS) if self.reach_seconds is None else self.reach_seconds
        for name, seconds in (("commit_seconds", self.commit_seconds), ("reveal_seconds", self.reveal_seconds)):
            if ms(seconds) < WINDOW_MS_MIN:  # D21: refused, never raised to the floor
                raise ValueError(f"{name} {seconds:g} is below the protocol's {WINDOW_MS_MIN / 1000:g} s (D21)")
        return CoreConfig(
            commit_ms=ms(self.commit_seconds),
            reveal_ms=ms(self.reveal_seconds),
            next_hand_ms=ms(self.next_hand_delay),
            grace_ms=ms(self.resume_grace),
            reach_ms=ms(reach),
            away_ms=ms(self.away_seconds),
            hung_ms=ms(self.write_hung_seconds),
            freeze_ms=ms(3 * self.beat_seconds),
            beat_ms=ms(self.beat_seconds),
            retry_max_ms=ms(self.retry_max_seconds),
        )


#: the note a command's unexpected failure carries once the table has logged it
LOGGED = "(logged by the table: a table command failed)"


def _refusal_read(fut: asyncio.Future[dict[str, Any]]) -> None:
    """A refusal is the client's answer, not the server's fault: a caller that stopped
    waiting for it (a REST call past its timeout, a socket that answered ``busy``, a
    reply the table sent itself) leaves nothing for asyncio to log as "never
    retrieved".  Anything else is logged now, with its traceback."""
    if fut.cancelled():
        return
    e = fut.exception()
    if e is not None and not isinstance(e, RuleError):
        log.error("a table command failed", exc_info=e)
        e.add_note(LOGGED)  # the socket that answers it does not log it again (api_ws)


#: a process's tables beat in this many groups a beat: together enough that a thousand
#: idle tables cost a few turns of the loop a second, not a thousand; apart enough that
#: no turn steps them all at once while a move waits
BEAT_SLOTS: Final = 8


def beat_offset(table_id: str, beat: float) -> float:
    """Where in each beat the table's beat falls (its slot, from its id: the same on
    every node and every run)."""
    return zlib.crc32(table_id.encode("utf-8")) % BEAT_SLOTS * beat / BEAT_SLOTS


class TableActor:
    """One table: its core, its queue of inputs, its timer, its store and sockets."""

    def __init__(
        self,
        table_id: str,
        pool: asyncpg.Pool,
        keys: ServerKeys,
        settings: Settings,
        metrics: Metrics | None = None,
        lease: Lease | None = None,
        on_lost: Callable[[str, bool, bool], None] | None = None,
        writer: GroupCommit[Batched] | None = None,
        loads: asyncio.Semaphore | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.table_id = table_id
        self.pool = pool
        self.keys = keys
        self.settings = settings
        self.metrics = metrics
        self.lease = lease
        self._on_lost = on_lost
        # Shared by the process's tables: how many load at once (a node that takes a
        # thousand tables at once loads them a few at a time).
        self._loads = loads
        self.clock = settings.clock if clock is None else clock
        self.core = TableCore(table_id, keys, settings.core())
        self.store = TableStore(table_id, pool, keys, lease, writer)
        self.watchers = Teller(table_id)
        self.inputs: Inbox[io.Input | None] = Inbox()
        self.replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.routes: dict[int, Route] = {}  # commands whose reply the table sends itself
        self._movers: dict[int, dict[str, Any]] = {}  # cmd id -> the mover's update, for its reply
        self._ids = itertools.count(1)
        self._ops: set[asyncio.Task[None]] = set()
        self.task: asyncio.Task[None] | None = None
        self.loaded = asyncio.Event()
        self._stopping = False
        self._moved_to: list[str] = []  # the other nodes a client told `moved` may ask (lose)
        self._stopped = False  # stop() is done: an op that ends after it is not stepped
        self._armed: int | None = None
        self._stepped = 0.0  # the loop's time of the last step (service.stallmeter)

    # -- what the rest of the server reads ---------------------------------------------
    @property
    def hand(self) -> HandRun | None:
        return self.core.hand

    @property
    def t(self) -> TableFacts:
        return self.core.facts or TableFacts()  # empty until loaded

    @property
    def paused(self) -> bool:
        return self.core.paused

    @property
    def refusing(self) -> bool:
        """Serving between reloads, but its store keeps refusing writes (D37)."""
        return self.core.refusing

    def now(self) -> int:
        """The tables' clock (ms); the core keeps its own time on it (``TableCore._time``)."""
        return int(self.clock() * 1000)

    def snapshot_for(self, player_id: str, events_since: tuple[int, int] | None = None) -> dict[str, Any]:
        return self.core.snapshot_for(player_id, events_since, self.core.time_at(self.now()))

    # -- inputs -------------------------------------------------------------------------
    def enqueue(
        self, kind: str, player_id: str, payload: dict[str, Any], route: Route | None = None
    ) -> asyncio.Future[dict[str, Any]]:
        """The future answer to a command; the table answers in order.  With a
        ``route`` the table also sends the reply to that socket itself, in order with
        its pushes (a move's reply carries the mover's update)."""
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        fut.add_done_callback(_refusal_read)
        if self._stopping:
            fut.set_exception(shutting_down() if not self.core.gone else moved())
            return fut
        cmd_id = next(self._ids)
        self.replies[cmd_id] = fut
        if route is not None:
            self.routes[cmd_id] = route
        self.inputs.put_nowait(io.Command(cmd_id, kind, player_id, payload))
        return fut

    async def submit(self, kind: str, player_id: str, payload: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
        return await asyncio.wait_for(asyncio.shield(self.enqueue(kind, player_id, payload)), timeout)

    def attach(self, conn: Connection) -> None:
        """A player's connection joins the table (one per player: a new one replaces the old)."""
        self.watchers.attach(conn)
        if not self._stopping:
            self.inputs.put_nowait(io.Reach(conn.player_id, True))

    def detach(self, conn: Connection) -> None:
        if self.watchers.by_player.get(conn.player_id) is conn:
            self.watchers.detach(conn)
            if not self._stopping:
                self.inputs.put_nowait(io.Reach(conn.player_id, False))

    def request_handoff(self) -> None:
        """Hand the table to another node as soon as its hand in progress is over."""
        self.inputs.put_nowait(io.LeaseEvent(io.Lease.HANDOFF))

    # -- life -----------------------------------------------------------------------------
    def start(self) -> None:
        self.task = asyncio.create_task(self.run(), name=f"table-{self.table_id}")
        self.task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        """The table's task ended.  Only a stop ends it on purpose; a step that raised
        (a bug) would otherwise leave a table that answers nothing and deals no more
        while this node keeps its lease.  Memory is no longer trusted: the table is
        let go as after a fenced write (its clients told ``moved``, what waits answered)
        and its lease released, so that a fresh actor — this node's or another's —
        takes it and rebuilds it from the store (D32)."""
        if task.cancelled() or self._stopping:
            return
        e = task.exception()
        log.error("table %s: its task stopped: %r; letting it go to be loaded afresh", self.table_id, e, exc_info=e)
        self._let_go(io.LetGo(True, FAILED, failed=True))

    async def lose(self, servers: Sequence[str] = (), timeout: float = 1.0) -> None:
        """The lease is gone (the heartbeat found it so, or could not renew it in time):
        tell every client ``moved`` — with ``servers``, the other live nodes, where it
        may ask for the table — close their sockets, answer what waits, stop (exactly as
        when a write is fenced)."""
        self._moved_to = list(servers)
        if not self._stopping:
            self._step(io.LeaseEvent(io.Lease.LOST))
        await self.stop(timeout)

    async def stop(self, timeout: float = 1.0) -> None:
        """Stop the clock and the task; a write in flight is let finish if it finishes
        within ``timeout`` (a write is never cut in half on purpose), else cancelled
        and waited for within ``timeout`` again.  Whatever is still waiting is refused;
        an op that ends later is not stepped: a stopped table tells nobody anything."""
        self._stopping = True
        self.inputs.put_nowait(None)
        running = set(self._ops) | ({self.task} if self.task is not None else set())
        if running:  # the loop and the ops in flight, within one bound
            await asyncio.wait(running, timeout=timeout)
        late = [task for task in running if not task.done()]
        for task in late:
            task.cancel()
        if late:
            # Within the same bound again: an op cancelled in the middle of a statement
            # the database holds (hung) waits, as its connection goes back to the pool,
            # for PostgreSQL to end the statement, up to the pool's acquire timeout.  It
            # ends in the background; what it answers is not stepped (below, _feed).
            await asyncio.wait(late, timeout=timeout)
        self._stopped = True
        self._do_all(self.core.refuse_all(shutting_down()))
        for fut in self.replies.values():
            if not fut.done():
                fut.set_exception(shutting_down())
        self.replies.clear()
        self.routes.clear()

    async def run(self) -> None:
        beat = self.settings.beat_seconds
        offset = beat_offset(self.table_id, beat)
        loop = asyncio.get_running_loop()
        self._step(io.Tick())
        while not self._stopping:
            # The beat falls on the loop clock's grid of ``beat`` seconds, shifted by the
            # table's slot, so that the process's idle tables wake a slot at a time, not
            # each on its own (a beat still comes at most ``beat`` seconds after the last
            # step).
            wait = beat - (loop.time() - offset) % beat
            if self._armed is not None:
                wait = min(wait, max(0.0, (self._armed - self.now()) / 1000))
            got = await self.inputs.get(wait)
            if isinstance(got, Timeout) and await self._read_first():
                continue  # what the sockets held as the clock ran out goes first
            inp = io.Tick() if isinstance(got, Timeout) else got
            if inp is None or self._stopping:
                break
            self._step(inp)

    async def _read_first(self) -> bool:
        """D37: at a wake for the clock (its deadline due), whether a move already in a
        socket reaches the inbox within ``READ_FIRST_HOPS`` turns of the loop.  After the
        loop stood still across a deadline, its wake and the socket's bytes are ready in
        the same turn, and the move takes two more turns (the socket's handler, then its
        frame) to reach the inbox: stepped first, the wake charged a seat whose move
        waited unread — a stop ending within ``jitter_ms`` of the deadline, too short for
        the core to see (bench/stall_drill.py: 10 of 10 charged, 64 ms stops ending 5 ms
        after the deadline)."""
        armed = self._armed
        if armed is None or self.now() < armed:
            return False  # a beat, not the clock
        for _ in range(READ_FIRST_HOPS):
            if len(self.inputs):
                return True
            await asyncio.sleep(0)
        return len(self.inputs) > 0

    def _step(self, inp: io.Input) -> None:
        loop = asyncio.get_running_loop()
        meter, at = stallmeter.of(loop), loop.time()
        stalled = 0 if meter is None else int(meter.longest_since(self._stepped) * 1000)
        self._stepped = at
        self._do_all(self.core.step(inp, self.now(), stalled))
        if not self.loaded.is_set() and self.core.ready:
            self.loaded.set()

    # -- effects --------------------------------------------------------------------------
    def _do_all(self, effects: list[io.Effect]) -> None:
        for e in effects:
            self._do(e)

    def _do(self, e: io.Effect) -> None:
        w = self.watchers
        if isinstance(e, io.Reply):
            fut = self.replies.pop(e.cmd_id, None)
            route = self.routes.pop(e.cmd_id, None)
            update = self._movers.pop(e.cmd_id, None)
            if fut is not None and not fut.done():
                result = None
                if e.error is None:
                    result = io.resolve(e.result)
                    fut.set_result(result)
                else:
                    ack = getattr(e.error, "ack", None)
                    if isinstance(ack, io.Signed):  # the refusal's ack, signed as it is sent
                        e.error.ack = ack.make()  # type: ignore[attr-defined]
                    fut.set_exception(e.error)
                if route is not None and route.open:  # in order with the pushes, one frame
                    message = answer(route.msg_id, result, e.error)
                    if update is not None:
                        message["update"] = update
                    route.conn.push(message)
                    route.sent = True
        elif isinstance(e, io.Write):
            if not self._stopping:  # stopping: the op is answered by refuse_all
                self._spawn(self._write(e))
        elif isinstance(e, io.Load) and not self._stopping:
            if self.loaded.is_set() and self.metrics is not None:
                self.metrics.reloads.labels("store").inc()
            self._spawn(self._load(e))
        elif isinstance(e, io.Arm):
            self._armed = e.at
        elif isinstance(e, io.TellUpdate):
            route = None if e.cmd_id is None else self.routes.get(e.cmd_id)
            mover = route.conn if route is not None and route.open and not route.conn.closed else None
            mine = w.tell_update(e, mover)
            if mine is not None and e.cmd_id is not None:
                self._movers[e.cmd_id] = mine
        elif isinstance(e, io.TellPhase):
            w.tell_phase(e.hand, e.deadline)
        elif isinstance(e, io.TellSeats):
            w.tell_seats(e.seats, e.status, e.stood)
        elif isinstance(e, io.TellAll):
            w.broadcast(e.message)
        elif isinstance(e, io.TellResult):
            w.tell_result(e.hand, e.end)
            if self.metrics is not None:
                self.metrics.hands.labels("void" if e.end.void else "ended").inc()
        elif isinstance(e, io.TellResumed):
            for player_id, c in list(w.by_player.items()):
                c.push({"type": "resumed", "table_id": self.table_id, "snapshot": self.snapshot_for(player_id)})
        elif isinstance(e, io.LetGo):
            self._let_go(e)

    def _let_go(self, e: io.LetGo) -> None:
        """This node no longer serves the table: tell its clients to reconnect (they
        are sent to the new owner), close their sockets, and stop."""
        self._stopping = True
        self.watchers.broadcast(
            {
                "type": "moved",
                "table_id": self.table_id,
                "message": "the table moved to another server; reconnect",
                "servers": self._moved_to,
            }
        )
        self.watchers.close_all()
        self.inputs.put_nowait(None)
        for fut in self.replies.values():
            if not fut.done():
                fut.set_exception(moved())
        self.replies.clear()
        self.routes.clear()
        if self._on_lost is not None:
            self._on_lost(self.table_id, e.release, e.failed)

    def _spawn(self, work: Any) -> None:
        task: asyncio.Task[None] = asyncio.create_task(work)
        self._ops.add(task)
        task.add_done_callback(self._ops.discard)

    async def _write(self, e: io.Write) -> None:
        started = time.perf_counter()
        try:
            data = await self.store.run(e.op)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            if not isinstance(err, ClientError):
                log.warning("table %s: %s failed: %s", self.table_id, type(e.op).__name__, _describe(err))
            await self._forget_connections(err)
            self._feed(outcome(e.op_id, err))
            return
        if self.metrics is not None:
            if isinstance(e.op, io.LogOp):
                self.metrics.log_reads.inc()
            else:
                self.metrics.store_seconds.observe(time.perf_counter() - started)
            if isinstance(e.op, io.RecordsOp):
                for r in e.op.records:
                    if r.get("type") == "action":
                        self.metrics.actions.labels(str(r["action"]["kind"])).inc()
        self._feed(outcome(e.op_id, None, data))

    async def _load(self, e: io.Load) -> None:
        try:
            async with self._loads or contextlib.nullcontext():
                data = await self.store.load(e.ended_of)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            log.warning("table %s: cannot load (%s)", self.table_id, _describe(err))
            await self._forget_connections(err)
            self._feed(io.Outcome(e.op_id, io.Result.FAILED))
            return
        self._feed(io.Outcome(e.op_id, io.Result.COMMITTED, data))

    def _feed(self, out: io.Outcome) -> None:
        if self._stopped:
            return  # stop() has refused what waited: a dead table tells nobody anything
        if self._stopping:
            self._step(out)  # answers the command it settles; nothing more is started
        else:
            self.inputs.put_nowait(out)

    async def _forget_connections(self, e: BaseException) -> None:
        """After a lost connection every pooled connection is suspect (PostgreSQL may
        have restarted): have the pool replace them all, rather than meet each broken
        one in turn."""
        if isinstance(e, OSError | asyncpg.PostgresConnectionError | asyncpg.InterfaceError):
            with contextlib.suppress(Exception):
                await self.pool.expire_connections()


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:300]
